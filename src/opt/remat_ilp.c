/* remat_ilp.c: seed 004's rematerialization ILP in GLPK, and the planner's
 * entry point (remat_ilp.h).
 *
 * Columns: E[k] the end time of every op k (global ids, remat_internal.h),
 * C the makespan, then one binary per useful option of each (stage, mb):
 * x_full, x_sel (forward, at most one) and x_bwd (backward).  Rows:
 *   rank order     E[k] - E[k-1] - sum(overhead x) >= base duration of k
 *                  (first op of a rank: E[k] - sum(overhead x) >= base)
 *   dependency     E[k] - E[pred] - sum(overhead x) >= base + comm_s
 *                  (only across ranks: on one rank the order implies it)
 *   makespan       C - E[last op of r] >= 0
 *   choice         x_full + x_sel <= 1
 *   memory         for every op k over budget without recomputation:
 *                  sum over pairs alive at k of (bytes an option frees at k) x
 *                  >= memory at k without recomputation - budget
 *   counts         per such op: at least q of its alive activations
 *                  recomputed, and at least q' fully (add_count_row,
 *                  add_full_count_row)
 *   covers         per rank: its recompute seconds >= its exact cover's,
 *                  and the running minima of remat_cover.c
 * where an op's overhead is the recompute cost its options add to it (B or
 * BW: the forward's; W: the backward's).  Ops start at 0 at the earliest,
 * so C is the makespan of the as-soon-as-possible timing of the chosen
 * plan, the simulator's timing on an ideal network.  An option is useful
 * only if its window (F start to B start; B end to W start) holds an op
 * that is over budget: anywhere else it frees bytes nobody needs and only
 * costs time, so it is not a column at all.
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
/* A binary is taken as set above this value (GLPK returns 0/1 up to its
 * integrality tolerance). */
#define BINARY_ON 0.5
/* Rounding slack of a count that is integral up to floating error. */
#define FULL_COUNT_TOL 1e-9
/* Share of the search's time the large-neighbourhood search may take, the
 * time limit's share one of its steps may take, and how many times the
 * requested gap GLPK's gap must be for it to run (improve_incumbent). */
#define LNS_SHARE 0.5
#define LNS_STEP_SHARE 0.05
#define LNS_GAP_FACTOR 3.0


static void row_reserve(rm_ilp *z, int n)
{
    if (n + 1 <= z->cap) return;
    z->cap = 2 * (n + 1);
    z->ind = pg_xrealloc(z->ind, (size_t)z->cap * sizeof *z->ind);
    z->val = pg_xrealloc(z->val, (size_t)z->cap * sizeof *z->val);
}

static void push(rm_ilp *z, int *n, int col, double v)
{
    row_reserve(z, *n + 1);
    ++*n;
    z->ind[*n] = col;
    z->val[*n] = v;
}

static void add_row(rm_ilp *z, int n, int type, double lo, double hi)
{
    int r = glp_add_rows(z->lp, 1);
    glp_set_mat_row(z->lp, r, n, z->ind, z->val);
    glp_set_row_bnds(z->lp, r, type, lo, hi);
}

/* -overhead x terms of op k's duration. */
static void push_overheads(rm_ilp *z, int *n, int k)
{
    const rm_model *md = z->md;
    sched_op o = md->op[k];
    int p = rm_pair(md, o.stage, o.mb);
    const rm_stage *sc = &md->st[o.stage];
    if (o.kind == OP_B || o.kind == OP_BW) {
        if (z->col_full[p]) push(z, n, z->col_full[p], -sc->r_s[PLAN_FWD_FULL]);
        if (z->col_sel[p]) push(z, n, z->col_sel[p], -sc->r_s[PLAN_FWD_SELECTIVE]);
    } else if (o.kind == OP_W && z->col_bwd[p]) {
        push(z, n, z->col_bwd[p], -sc->rw_s);
    }
}

static int new_binary(rm_ilp *z)
{
    int c = glp_add_cols(z->lp, 1);
    glp_set_col_kind(z->lp, c, GLP_BV);
    z->nbin++;
    return c;
}

/* Whether some op in [from, to) is over budget. */
static int any_over(const double *over, int from, int to)
{
    for (int k = from; k < to; k++)
        if (over[k] > 0) return 1;
    return 0;
}

/* Decide the columns: E, C, then binaries of the useful options. */
static void build_columns(rm_ilp *z, const double *over)
{
    const rm_model *md = z->md;
    glp_add_cols(z->lp, md->total + 1);
    for (int k = 0; k < md->total; k++) glp_set_col_bnds(z->lp, rm_e_col(k), GLP_LO, 0.0, 0.0);
    z->col_c = md->total + 1;
    glp_set_col_bnds(z->lp, z->col_c, GLP_LO, 0.0, 0.0);
    glp_set_obj_coef(z->lp, z->col_c, 1.0);
    size_t np = (size_t)md->npairs + 1;
    z->col_full = pg_xcalloc(np, sizeof *z->col_full);
    z->col_sel = pg_xcalloc(np, sizeof *z->col_sel);
    z->col_bwd = pg_xcalloc(np, sizeof *z->col_bwd);
    for (int p = 0; p < md->npairs; p++) {
        const rm_stage *sc = &md->st[p / md->m];
        if (any_over(over, md->idF[p], md->idB[p])) {
            if (sc->fwd_ok[PLAN_FWD_FULL]) z->col_full[p] = new_binary(z);
            if (sc->fwd_ok[PLAN_FWD_SELECTIVE]) z->col_sel[p] = new_binary(z);
        }
        if (md->idW[p] >= 0 && sc->bwd_ok && any_over(over, md->idB[p] + 1, md->idW[p]))
            z->col_bwd[p] = new_binary(z);
    }
    z->ncols = glp_get_num_cols(z->lp);
    z->col_pair = pg_xmalloc(((size_t)z->ncols + 1) * sizeof *z->col_pair);
    for (int c = 0; c <= z->ncols; c++) z->col_pair[c] = -1;
    for (int p = 0; p < md->npairs; p++) {
        if (z->col_full[p]) z->col_pair[z->col_full[p]] = p;
        if (z->col_sel[p]) z->col_pair[z->col_sel[p]] = p;
        if (z->col_bwd[p]) z->col_pair[z->col_bwd[p]] = p;
    }
}

static void build_time_rows(rm_ilp *z)
{
    const rm_model *md = z->md;
    for (int k = 0; k < md->total; k++) {
        int r = md->rank[k];
        double base = rm_duration(md, NULL, k);
        int n = 0;
        push(z, &n, rm_e_col(k), 1.0);
        if (k > md->base[r]) push(z, &n, rm_e_col(k - 1), -1.0);
        push_overheads(z, &n, k);
        add_row(z, n, GLP_LO, base, 0.0);
        int p = md->pred[k];
        if (p >= 0 && md->rank[p] != r) {
            n = 0;
            push(z, &n, rm_e_col(k), 1.0);
            push(z, &n, rm_e_col(p), -1.0);
            push_overheads(z, &n, k);
            add_row(z, n, GLP_LO, base + md->comm_s, 0.0);
        }
    }
    for (int r = 0; r < md->pp; r++) {
        if (md->base[r + 1] == md->base[r]) continue;
        int n = 0;
        push(z, &n, z->col_c, 1.0);
        push(z, &n, rm_e_col(md->base[r + 1] - 1), -1.0);
        add_row(z, n, GLP_LO, 0.0, 0.0);
    }
}

static int desc_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* The memory row just built (z->ind/val[1..n]) needs at least q activations
 * recomputed, q the fewest whose largest savings reach the deficit: the
 * cardinality cut  sum of their binaries >= q  (valid: an activation is in
 * one window at op k, and its forward options exclude each other).  The LP
 * relaxation otherwise pays for a fraction of one recompute where the plan
 * needs a whole one; this cut is what brings GLPK's bound close to the
 * optimum. */
static void add_count_row(rm_ilp *z, int n, double deficit)
{
    double *best = pg_xmalloc(((size_t)n + 1) * sizeof *best);
    int np = 0;
    /* Terms of one pair are adjacent (full then selective): keep the larger. */
    for (int i = 1; i <= n; i++) {
        if (i > 1 && z->col_pair[z->ind[i]] == z->col_pair[z->ind[i - 1]]) {
            if (z->val[i] > best[np - 1]) best[np - 1] = z->val[i];
            continue;
        }
        best[np++] = z->val[i];
    }
    qsort(best, (size_t)np, sizeof *best, desc_cmp);
    int q = 0;
    double sum = 0;
    while (q < np && sum < deficit) sum += best[q++];
    for (int i = 1; i <= n; i++) z->val[i] = 1.0;
    if (q > 0) add_row(z, n, GLP_LO, (double)q, 0.0);
    free(best);
}

/* The memory row just built (z->ind/val[1..n]) may need more than the
 * cheaper options can free: with every selective and backward option on,
 * the row frees at most `cheap` units, and each full recompute adds at most
 * `step` more (its saving minus its pair's selective saving; the two
 * exclude each other).  So at least ceil((deficit - cheap) / step) full
 * recomputes are needed:  sum of the row's x_full >= that count.  This is
 * a rounding the LP relaxation cannot make: it meets the deficit with a
 * fraction of a full recompute per window, smeared over the microbatches,
 * where every real plan pays for whole ones (1F1B rank 0 at middle
 * budgets: "fk" in some windows, "sk" in others).  The full binaries of
 * consecutive windows form intervals, so these rows keep the relaxation
 * integral in the number of full recomputes per window. */
static void add_full_count_row(rm_ilp *z, int n, double deficit)
{
    double cheap = 0, step = 0;
    int nfull = 0;
    for (int i = 1; i <= n; i++) {
        int c = z->ind[i], p = z->col_pair[c];
        if (c == z->col_full[p]) {
            double sel = 0;
            if (i < n && z->ind[i + 1] == z->col_sel[p]) sel = z->val[i + 1];
            if (z->val[i] - sel > step) step = z->val[i] - sel;
            nfull++;
        } else {
            cheap += z->val[i];
        }
    }
    if (nfull == 0 || step <= 0 || deficit <= cheap) return;
    double need = ceil((deficit - cheap) / step - FULL_COUNT_TOL);
    if (need < 1) return;
    int *ind = pg_xmalloc(((size_t)nfull + 1) * sizeof *ind);
    double *val = pg_xmalloc(((size_t)nfull + 1) * sizeof *val);
    int m = 0;
    for (int i = 1; i <= n; i++) {
        int c = z->ind[i];
        if (c == z->col_full[z->col_pair[c]]) {
            ind[++m] = c;
            val[m] = 1.0;
        }
    }
    int r = glp_add_rows(z->lp, 1);
    glp_set_mat_row(z->lp, r, m, ind, val);
    glp_set_row_bnds(z->lp, r, GLP_LO, need, 0.0);
    free(ind);
    free(val);
}

/* One memory row per op over budget; pairs alive there are found by a sweep
 * over each rank's ops, as the greedy does. */
static void build_memory_rows(rm_ilp *z, const double *over)
{
    const rm_model *md = z->md;
    /* Rows in units of the largest activation: byte counts (1e9) next to
     * seconds (1e-2) make GLPK's simplex fail on scaling otherwise. */
    double unit = 0;
    for (int c = 0; c < md->S; c++)
        if (md->st[c].act_b > unit) unit = md->st[c].act_b;
    if (unit <= 0) unit = 1;
    int *live = pg_xmalloc(((size_t)md->npairs + 1) * sizeof *live);
    int *slot = pg_xmalloc(((size_t)md->npairs + 1) * sizeof *slot);
    for (int p = 0; p < md->npairs; p++)
        if (z->col_full[p] && z->col_sel[p]) {
            int n = 0;
            push(z, &n, z->col_full[p], 1.0);
            push(z, &n, z->col_sel[p], 1.0);
            add_row(z, n, GLP_UP, 0.0, 1.0);
        }
    for (int r = 0; r < md->pp; r++) {
        int nlive = 0;
        for (int k = md->base[r]; k < md->base[r + 1]; k++) {
            sched_op o = md->op[k];
            int q = rm_pair(md, o.stage, o.mb);
            if (o.kind == OP_F) {
                slot[q] = nlive;
                live[nlive++] = q;
            }
            if (over[k] > 0) {
                int n = 0;
                for (int i = 0; i < nlive; i++) {
                    int p = live[i];
                    const rm_stage *sc = &md->st[p / md->m];
                    if (k < md->idB[p]) {
                        if (z->col_full[p])
                            push(z, &n, z->col_full[p], (sc->act_b - sc->f_alloc[PLAN_FWD_FULL]) / unit);
                        if (z->col_sel[p])
                            push(z, &n, z->col_sel[p], (sc->act_b - sc->f_alloc[PLAN_FWD_SELECTIVE]) / unit);
                    } else if (k > md->idB[p] && md->idW[p] >= 0 && k < md->idW[p] && z->col_bwd[p]) {
                        push(z, &n, z->col_bwd[p],
                             (sc->after_b[PLAN_BWD_KEEP] - sc->after_b[PLAN_BWD_RECOMPUTE]) / unit);
                    }
                }
                add_row(z, n, GLP_LO, over[k] / unit, 0.0);
                add_full_count_row(z, n, over[k] / unit);
                add_count_row(z, n, over[k] / unit);
            }
            if (o.kind == OP_W || o.kind == OP_BW) {
                int i = slot[q], last = live[--nlive];
                live[i] = last;
                slot[last] = i;
            }
        }
    }
    free(live);
    free(slot);
}

void rm_ilp_plan(const rm_ilp *z, plan_choice *c)
{
    const rm_model *md = z->md;
    for (int p = 0; p < md->npairs; p++) {
        if (z->col_full[p] && glp_mip_col_val(z->lp, z->col_full[p]) > BINARY_ON)
            c[p].fwd = PLAN_FWD_FULL;
        else if (z->col_sel[p] && glp_mip_col_val(z->lp, z->col_sel[p]) > BINARY_ON)
            c[p].fwd = PLAN_FWD_SELECTIVE;
        else
            c[p].fwd = PLAN_FWD_KEEP;
        c[p].bwd = z->col_bwd[p] && glp_mip_col_val(z->lp, z->col_bwd[p]) > BINARY_ON ? PLAN_BWD_RECOMPUTE
                                                                                      : PLAN_BWD_KEEP;
    }
}

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

double *rm_ilp_point(const rm_ilp *z, const plan_choice *c, const double *end, double makespan_s)
{
    const rm_model *md = z->md;
    double *x = pg_xcalloc((size_t)z->ncols + 1, sizeof *x);
    for (int k = 0; k < md->total; k++) x[rm_e_col(k)] = end[k];
    double last = 0;
    for (int k = 0; k < md->total; k++)
        if (end[k] > last) last = end[k];
    x[z->col_c] = last > makespan_s ? last : makespan_s;
    for (int p = 0; p < md->npairs; p++) {
        if (z->col_full[p]) x[z->col_full[p]] = c[p].fwd == PLAN_FWD_FULL;
        if (z->col_sel[p]) x[z->col_sel[p]] = c[p].fwd == PLAN_FWD_SELECTIVE;
        if (z->col_bwd[p]) x[z->col_bwd[p]] = c[p].bwd == PLAN_BWD_RECOMPUTE;
    }
    return x;
}

int rm_ilp_build(rm_ilp *z, const rm_model *md, const double *over)
{
    memset(z, 0, sizeof *z);
    z->md = md;
    z->over = over;
    z->lp = glp_create_prob();
    glp_set_obj_dir(z->lp, GLP_MIN);
    build_columns(z, over);
    if (z->nbin > REMAT_ILP_MAX_BINARIES) return 0;
    build_time_rows(z);
    build_memory_rows(z, over);
    return 1;
}

void rm_ilp_free(rm_ilp *z)
{
    if (z->lp) glp_delete_prob(z->lp);
    free(z->col_full);
    free(z->col_sel);
    free(z->col_bwd);
    free(z->col_pair);
    free(z->ind);
    free(z->val);
    memset(z, 0, sizeof *z);
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
