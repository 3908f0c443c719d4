/* remat_ilp.c: seed 004's rematerialization ILP solved in GLPK, and the
 * planner's entry point (remat_ilp.h).
 *
 * The ILP's columns and rows are remat_ilp_model.c's (rm_ilp_build); this
 * file solves it, with the warm start, the polish and the large-neighbourhood
 * search (remat_lns.c) in GLPK's callback, and is the planner's entry point.
 */
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opt/glpk_guard.h"
#include "opt/glpk_start.h"
#include "opt/remat_ilp.h"
#include "opt/remat_internal.h"
#include "opt/workclock.h"

#define MS_PER_S 1000.0
/* Share of the search's time the large-neighbourhood search may take, the
 * time limit's share one of its steps may take, and how many times the
 * requested gap GLPK's gap must be for it to run (improve_incumbent). */
#define LNS_SHARE 0.5
#define LNS_STEP_SHARE 0.05
#define LNS_GAP_FACTOR 3.0

static double wall_s(void);

typedef struct cb_info {
    const rm_ilp *z;
    glpk_start start;         /* the warm start */
    double bound;             /* best bound seen */
    double polished;          /* objective of the last incumbent polished */
    double polish_s;          /* time one polish may take */
    plan_choice *c;           /* scratch [npairs] */
    double *end;              /* scratch [total] */
    rm_lns *lns;              /* the large-neighbourhood search */
    double t0_s, deadline_s;  /* the search's start and end (wall clock) */
    double lns_s;             /* seconds spent in it so far */
    double lns_step_s;        /* time one of its steps may take */
    double lns_gap;           /* it runs while GLPK's gap is above this */
} cb_info;

/* GLPK's new incumbents are often a swap or two away from a better plan
 * (rm_polish): polish each one and hand the result back as a heuristic
 * solution, which GLPK keeps if it is better. */
static void polish_incumbent(glp_tree *tree, cb_info *cb)
{
    const rm_ilp *z = cb->z;
    if (glp_mip_status(z->lp) != GLP_FEAS && glp_mip_status(z->lp) != GLP_OPT) return;
    double obj = glp_mip_obj_val(z->lp);
    if (obj >= cb->polished) return;
    cb->polished = obj;
    rm_ilp_plan(z, cb->c);
    if (rm_polish(z->md, cb->c, wall_s() + cb->polish_s, wall_s) == 0) return;
    double mk = rm_times(z->md, cb->c, NULL, cb->end, NULL);
    if (mk >= obj * (1.0 - REMAT_MIN_GAIN_REL)) return;
    double *x = rm_ilp_point(z, cb->c, cb->end, mk);
    glp_ios_heur_sol(tree, x);
    free(x);
}

/* While GLPK's gap is wide, which on these ILPs means its incumbent is
 * poor rather than its bound weak (remat_lns.c), spend up to LNS_SHARE of
 * the search's time on sub-MIPs around the incumbent, one window per call,
 * and hand any better plan back. */
static void improve_incumbent(glp_tree *tree, cb_info *cb)
{
    const rm_ilp *z = cb->z;
    if (rm_lns_exhausted(cb->lns) || glp_mip_status(z->lp) != GLP_FEAS) return;
    if (glp_ios_mip_gap(tree) <= cb->lns_gap) return;
    double now = wall_s();
    if (cb->lns_s > LNS_SHARE * (now - cb->t0_s)) return;
    double deadline = now + cb->lns_step_s < cb->deadline_s ? now + cb->lns_step_s : cb->deadline_s;
    rm_ilp_plan(z, cb->c);
    int better = rm_lns_step(cb->lns, cb->c, deadline, wall_s);
    cb->lns_s += wall_s() - now;
    if (!better) return;
    double mk = rm_times(z->md, cb->c, NULL, cb->end, NULL);
    double *x = rm_ilp_point(z, cb->c, cb->end, mk);
    glp_ios_heur_sol(tree, x);
    free(x);
}

static void callback(glp_tree *tree, void *info)
{
    cb_info *cb = info;
    int reason = glp_ios_reason(tree);
    if (!glpk_start_offer(tree, &cb->start) && reason == GLP_IHEUR) {
        polish_incumbent(tree, cb);
        improve_incumbent(tree, cb);
    }
    workclock_glpk_tick(tree, cb->deadline_s);
    if (reason == GLP_ISELECT || reason == GLP_IBINGO || reason == GLP_IHEUR) {
        int best = glp_ios_best_node(tree);
        if (best > 0) cb->bound = glp_ios_node_bound(tree, best);
    }
}

/* The planner's clock: wall time, or workclock.h's deterministic work clock. */
static double wall_s(void)
{
    return workclock_s();
}

/* Share of the time limit the per-rank covers may use. */
#define COVER_TIME_SHARE 0.25
/* Share each local search (before and after GLPK) may use at most; it
 * usually stops well before, when no move helps. */
#define POLISH_TIME_SHARE 0.05
/* Rounds of covers weighted by criticality, and the share of the time
 * limit they may use at most. */
#define CRITICAL_ROUNDS 300
#define CRITICAL_TIME_SHARE 0.1
/* Share one polish of a GLPK incumbent may use. */
#define POLISH_CB_SHARE 0.02

/* Solve; c holds the greedy plan on entry.  On success writes the ILP's
 * plan into c and returns 1 (2 if proven optimal within the gap). */
static int solve(const rm_model *md, const remat_input *in, const double *keep_mem, plan_choice *c,
                 remat_result *res)
{
    double *over = pg_xmalloc(((size_t)md->total + 1) * sizeof *over);
    for (int k = 0; k < md->total; k++) over[k] = keep_mem[k] - md->budget[md->rank[k]];
    rm_ilp z;
    int built = rm_ilp_build(&z, md, over);
    res->nbinaries = z.nbin;
    if (!built) {   /* the greedy plan stands */
        free(over);
        rm_ilp_free(&z);
        return 0;
    }
    double t0 = wall_s();
    /* The covers' plan replaces the greedy one as warm start if it is better. */
    size_t n = (size_t)md->total + 1;
    double *end = pg_xmalloc(n * sizeof *end);
    plan_choice *cc = pg_xmalloc(((size_t)md->npairs + 1) * sizeof *cc);
    memcpy(cc, c, (size_t)md->npairs * sizeof *cc);
    rm_cover_ranks(&z, in->time_limit_s * COVER_TIME_SHARE, cc, res->least_recompute_s);
    if (in->lp_path != NULL) {   /* the model as solved, cover cuts included; GLPK reports on stdout */
        int term = glp_term_out(GLP_OFF);
        glp_write_lp(z.lp, NULL, in->lp_path);
        glp_term_out(term);
    }
    /* Both are polished: the local search from the aligned covers usually
     * ends lower, but not always (1F1B, 20 GiB: the greedy's). */
    rm_polish(md, cc, wall_s() + in->time_limit_s * POLISH_TIME_SHARE, wall_s);
    rm_polish(md, c, wall_s() + in->time_limit_s * POLISH_TIME_SHARE, wall_s);
    double mk_cover = rm_times(md, cc, NULL, end, NULL);
    if (mk_cover < rm_times(md, c, NULL, end, NULL)) memcpy(c, cc, (size_t)md->npairs * sizeof *c);
    free(cc);
    if (rm_weighted_covers(&z, CRITICAL_ROUNDS, wall_s() + in->time_limit_s * CRITICAL_TIME_SHARE, wall_s, c))
        rm_polish(md, c, wall_s() + in->time_limit_s * POLISH_TIME_SHARE, wall_s);
    double warm_makespan = rm_times(md, c, NULL, end, NULL);
    res->nrows = glp_get_num_rows(z.lp);
    double *x0 = rm_ilp_point(&z, c, end, warm_makespan);
    free(end);
    int found = 0;
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    double left = in->time_limit_s - (wall_s() - t0);
    sm.tm_lim = workclock_tm_lim_ms(left);
    int src = glp_simplex(z.lp, &sm);
    if (src == 0 && glp_get_status(z.lp) == GLP_OPT) {
        cb_info cb = {&z, {x0, 0, 0}, glp_get_obj_val(z.lp), warm_makespan, in->time_limit_s * POLISH_CB_SHARE,
                      pg_xmalloc(((size_t)md->npairs + 1) * sizeof *cb.c),
                      pg_xmalloc(((size_t)md->total + 1) * sizeof *cb.end),
                      rm_lns_new(&z, in->gap), wall_s(), 0, 0, in->time_limit_s * LNS_STEP_SHARE,
                      in->gap * LNS_GAP_FACTOR};
        glp_iocp io;
        glp_init_iocp(&io);
        io.msg_lev = GLP_MSG_OFF;
        io.presolve = GLP_OFF;   /* the warm start is given in the original columns */
        io.cb_func = callback;
        io.cb_info = &cb;
        io.mip_gap = in->gap;
        io.mir_cuts = GLP_ON;
        left = in->time_limit_s * (1.0 - POLISH_TIME_SHARE) - (wall_s() - t0);
        io.tm_lim = workclock_tm_lim_ms(left);
        cb.deadline_s = cb.t0_s + (left > 0 ? left : 0);
        int rc = glp_intopt(z.lp, &io);
        rm_lns_free(cb.lns);
        free(cb.c);
        free(cb.end);
        int ms = glp_mip_status(z.lp);
        if (ms == GLP_OPT || ms == GLP_FEAS) {
            rm_ilp_plan(&z, c);
            /* Closed: 0 with GLP_OPT, or GLP_EMIPGAP (within mip_gap, status
             * GLP_FEAS); a time limit returns GLP_ETMLIM. */
            found = ((rc == 0 && ms == GLP_OPT) || rc == GLP_EMIPGAP) ? 2 : 1;
            res->ilp_bound_s = (rc == 0 && ms == GLP_OPT) ? glp_mip_obj_val(z.lp) : cb.bound;
            if (found == 1) {
                double now = wall_s();
                rm_polish(md, c, now + in->time_limit_s * POLISH_TIME_SHARE, wall_s);
            }
        }
    }
    res->solve_s = wall_s() - t0;
    free(x0);
    free(over);
    rm_ilp_free(&z);
    return found;
}

/* The op that needs the most memory with everything recomputed, if it is
 * over budget: a clear message instead of a plan. */
static int check_possible(const rm_model *md, pg_status *st)
{
    double *mem = pg_xmalloc(((size_t)md->total + 1) * sizeof *mem);
    rm_memory_min(md, mem);
    int worst = -1;
    double worst_over = 0;
    for (int k = 0; k < md->total; k++) {
        double over = mem[k] - md->budget[md->rank[k]];
        if (over > worst_over) worst_over = over, worst = k;
    }
    int rc = 0;
    if (worst >= 0) {
        char buf[64];
        int r = md->rank[worst];
        rc = pg_fail(st, PG_EXIT_INPUT,
                     "rank %d needs %.0f bytes of activations and workspace at %s even with every activation "
                     "recomputed, but only %.0f bytes are left after its static memory",
                     r, mem[worst], sched_op_str(md->op[worst], buf, sizeof buf), md->budget[r]);
    }
    free(mem);
    return rc;
}

static void fill_result(const rm_model *md, const plan_choice *c, remat_result *res)
{
    double *end = pg_xmalloc(((size_t)md->total + 1) * sizeof *end);
    double *mem = pg_xmalloc(((size_t)md->total + 1) * sizeof *mem);
    res->makespan_s = rm_times(md, c, NULL, end, &res->span_s);
    rm_memory(md, c, mem);
    res->pp = md->pp;
    res->peak_bytes = pg_xcalloc((size_t)md->pp, sizeof *res->peak_bytes);
    res->recompute_s = pg_xcalloc((size_t)md->pp, sizeof *res->recompute_s);
    for (int k = 0; k < md->total; k++) {
        int r = md->rank[k];
        if (mem[k] > res->peak_bytes[r]) res->peak_bytes[r] = mem[k];
        res->recompute_s[r] += rm_duration(md, c, k) - rm_duration(md, NULL, k);
    }
    res->nfull = res->nselective = res->nbackward = 0;
    for (int p = 0; p < md->npairs; p++) {
        res->nfull += c[p].fwd == PLAN_FWD_FULL;
        res->nselective += c[p].fwd == PLAN_FWD_SELECTIVE;
        res->nbackward += c[p].bwd == PLAN_BWD_RECOMPUTE;
    }
    free(end);
    free(mem);
}

/* Whether every op of c fits its rank's budget. */
static int fits(const rm_model *md, const plan_choice *c)
{
    double *mem = pg_xmalloc(((size_t)md->total + 1) * sizeof *mem);
    rm_memory(md, c, mem);
    int ok = 1;
    for (int k = 0; k < md->total && ok; k++)
        if (mem[k] > md->budget[md->rank[k]]) ok = 0;
    free(mem);
    return ok;
}

/* solve() run guarded (glpk_guard.h).  If GLPK fails inside, the greedy plan
 * stands (ci is the caller's copy) and the scratch solve() allocated is not
 * freed: its GLPK problems are gone with GLPK's environment, and the rest is
 * a one-off loss on a path GLPK's own checks take, never on a normal run. */
typedef struct remat_solve_ctx {
    const rm_model *md;
    const remat_input *in;
    const double *keep_mem;
    plan_choice *c;
    remat_result *res;
    int found;
} remat_solve_ctx;

static void remat_solve(void *arg)
{
    remat_solve_ctx *sc = arg;
    sc->found = solve(sc->md, sc->in, sc->keep_mem, sc->c, sc->res);
}

int remat_plan(const remat_input *in, memplan *out, remat_result *res, pg_status *st)
{
    memset(out, 0, sizeof *out);
    memset(res, 0, sizeof *res);
    if (in->time_limit_s < 0 || in->gap < 0)
        return pg_fail(st, PG_EXIT_INPUT, "remat planner: negative time limit or gap");
    rm_model md;
    int rc = rm_model_build(in, &md, st);
    int pp = in->sched != NULL ? in->sched->pp : 0;
    res->least_recompute_s = pg_xmalloc(((size_t)pp + 1) * sizeof *res->least_recompute_s);
    for (int r = 0; r < pp; r++) res->least_recompute_s[r] = -1;
    if (rc == 0) rc = check_possible(&md, st);
    if (rc != 0) {
        rm_model_free(&md);
        remat_result_free(res);
        return rc;
    }
    size_t n = (size_t)md.total + 1;
    double *start = pg_xmalloc(n * sizeof *start), *end = pg_xmalloc(n * sizeof *end);
    double *mem = pg_xmalloc(n * sizeof *mem);
    plan_choice *c = pg_xcalloc((size_t)md.npairs + 1, sizeof *c);
    res->keep_makespan_s = rm_times(&md, c, start, end, NULL);
    rm_memory(&md, c, mem);
    res->method = fits(&md, c) ? REMAT_NOTHING : REMAT_GREEDY;
    if (res->method == REMAT_NOTHING)
        for (int r = 0; r < pp; r++) res->least_recompute_s[r] = 0;
    if (res->method == REMAT_GREEDY) {
        /* Lifespans in the no-recomputation timing. */
        double *lf = pg_xcalloc((size_t)md.npairs + 1, sizeof *lf);
        double *lb = pg_xcalloc((size_t)md.npairs + 1, sizeof *lb);
        for (int p = 0; p < md.npairs; p++) {
            lf[p] = start[md.idB[p]] - start[md.idF[p]];
            lb[p] = md.idW[p] >= 0 ? start[md.idW[p]] - end[md.idB[p]] : 0.0;
        }
        rc = rm_greedy(&md, lf, lb, c, st);
        free(lf);
        free(lb);
        if (rc == 0) {
            res->greedy_makespan_s = rm_times(&md, c, NULL, end, NULL);
            if (in->time_limit_s > 0 && md.total <= REMAT_ILP_MAX_OPS) {
                plan_choice *ci = pg_xmalloc(((size_t)md.npairs + 1) * sizeof *ci);
                memcpy(ci, c, (size_t)md.npairs * sizeof *ci);
                remat_solve_ctx sc = {&md, in, mem, ci, res, 0};
                int found = glpk_guarded(remat_solve, &sc) == 0 ? sc.found : 0;
                if (found && fits(&md, ci)) {
                    double mk = rm_times(&md, ci, NULL, end, NULL);
                    if (mk <= res->greedy_makespan_s * (1.0 + REMAT_MIN_GAIN_REL)) {
                        memcpy(c, ci, (size_t)md.npairs * sizeof *c);
                        res->method = found == 2 ? REMAT_ILP_OPTIMAL : REMAT_ILP_FEASIBLE;
                    }
                }
                free(ci);
            }
        }
    }
    if (rc == 0) {
        fill_result(&md, c, res);
        plan_init(out, md.s);
        for (int p = 0; p < md.npairs; p++)
            if (c[p].fwd != PLAN_FWD_KEEP || c[p].bwd != PLAN_BWD_KEEP) plan_set(out, p / md.m, p % md.m, c[p]);
    }
    free(start);
    free(end);
    free(mem);
    free(c);
    rm_model_free(&md);
    return rc;
}

void remat_result_free(remat_result *res)
{
    free(res->least_recompute_s);
    free(res->peak_bytes);
    free(res->recompute_s);
    memset(res, 0, sizeof *res);
}

const char *remat_method_name(remat_method m)
{
    switch (m) {
    case REMAT_NOTHING: return "none needed";
    case REMAT_GREEDY: return "greedy";
    case REMAT_ILP_OPTIMAL: return "ilp optimal";
    case REMAT_ILP_FEASIBLE: return "ilp time limit";
    default: return "?";
    }
}
