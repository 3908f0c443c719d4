/* offload_milp.c: the offload / recompute MILP in GLPK (offload_milp.h).
 *
 * Columns: one binary per (item, option other than keep), then the end time
 * of every op of every rank, the D2H and H2D end times of every item that
 * may be offloaded, and C.  Big-M is the model's horizon (every op, copy and
 * recompute in series, twice).  The greedy plan, timed by an LP with its
 * binaries fixed, is GLPK's first incumbent, so branch and bound only looks
 * for better; the node limit (not a time limit) keeps the result the same
 * on every machine.
 */
#include <glpk.h>
#include <stdlib.h>
#include <string.h>

#include "opt/glpk_guard.h"
#include "opt/glpk_start.h"
#include "opt/workclock.h"
#include "opt/offload_internal.h"
#include "opt/offload_milp.h"

/* Objective weight of the seconds an option spends (tie-break only). */
#define TIE_WEIGHT 1e-3
/* Memory rows are written only where keeping everything would not fit. */
#define ROOM_EPS_BYTES 1.0
#define MS_PER_S 1000
/* Memory rows in GiB: byte coefficients next to second-scale times and a
 * big-M make the simplex fail numerically. */
#define MEM_UNIT_BYTES (1024.0 * 1024.0 * 1024.0)

typedef struct milp {
    glp_prob *lp;
    const off_model *md;
    int **ecol;          /* [pp][nops] end-time columns */
    int ccol;
    /* row buffer */
    int *ind;
    double *val;
    int n, cap;
} milp;

static void row_begin(milp *z)
{
    z->n = 0;
}

/* A column met twice in one row (a consumer's recompute and offload terms
 * on the same binary) is merged: GLPK refuses duplicate indices. */
static void row_add(milp *z, int col, double v)
{
    if (col <= 0 || v == 0.0) return;
    for (int k = 1; k <= z->n; k++)
        if (z->ind[k] == col) {
            z->val[k] += v;
            return;
        }
    if (z->n + 2 > z->cap) {
        z->cap = z->cap ? 2 * z->cap : 64;
        z->ind = pg_xrealloc(z->ind, (size_t)z->cap * sizeof *z->ind);
        z->val = pg_xrealloc(z->val, (size_t)z->cap * sizeof *z->val);
    }
    z->n++;
    z->ind[z->n] = col;   /* GLPK reads ind[1..n] */
    z->val[z->n] = v;
}

static void row_end(milp *z, int type, double lo, double hi)
{
    if (z->n == 0) return;
    int r = glp_add_rows(z->lp, 1);
    glp_set_mat_row(z->lp, r, z->n, z->ind, z->val);
    glp_set_row_bnds(z->lp, r, type, lo, hi);
}

static int add_col(milp *z, int kind, double lo, double hi, double obj)
{
    int c = glp_add_cols(z->lp, 1);
    glp_set_col_kind(z->lp, c, kind);
    if (kind == GLP_BV) {
        glp_set_col_bnds(z->lp, c, GLP_DB, 0.0, 1.0);
    } else {
        glp_set_col_bnds(z->lp, c, GLP_DB, lo, hi);
    }
    glp_set_obj_coef(z->lp, c, obj);
    return c;
}

static int has_offload(const off_item *it)
{
    for (int o = OPT_OFF; o < OPT_COUNT; o++)
        if (it->allowed[o]) return 1;
    return 0;
}

/* - sum of the recompute seconds of the consumer op (r, i), if it is one */
static void add_recompute_terms(milp *z, const off_item *it, double sign)
{
    for (int o = 1; o < OPT_COUNT; o++)
        if (it->col[o]) row_add(z, it->col[o], sign * it->r_s[o]);
}

/* start of op (r, i) = e - dur - recompute: adds its terms with coefficient sign */
static double add_start_terms(milp *z, int r, int i, double sign)
{
    const off_model *md = z->md;
    sched_op op = md->s->ops[r][i];
    row_add(z, z->ecol[r][i], sign);
    if (op.kind == OP_B || op.kind == OP_BW)
        add_recompute_terms(z, off_item_at(md, op.stage, op.mb), -sign);
    return -sign * md->dur[r][i];   /* constant part, moved to the bound by the caller */
}

static int op_index(const schedule *s, int r, int kind, int stage, int mb, int **pos)
{
    (void)s;
    (void)r;
    return pos[kind][(size_t)stage * (size_t)s->m + (size_t)mb];
}

/* Columns: one binary per allowed option of every item, an end time per op,
 * a D2H and an H2D time per offloadable item, and the makespan. */
static void add_columns(milp *z)
{
    const off_model *md = z->md;
    const schedule *s = md->s;
    double M = md->horizon_s;
    for (int k = 0; k < md->nitems; k++) {
        off_item *it = &md->items[k];
        for (int o = 1; o < OPT_COUNT; o++)
            if (it->allowed[o])
                it->col[o] = add_col(z, GLP_BV, 0, 1, TIE_WEIGHT * (it->r_s[o] + 2 * it->copy_s[o]));
    }
    z->ecol = pg_xcalloc((size_t)s->pp, sizeof *z->ecol);
    for (int r = 0; r < s->pp; r++) {
        z->ecol[r] = pg_xcalloc((size_t)s->nops[r] + 1, sizeof **z->ecol);
        for (int i = 0; i < s->nops[r]; i++)
            z->ecol[r][i] = add_col(z, GLP_CV, 0, M, 0);
    }
    for (int k = 0; k < md->nitems; k++) {
        off_item *it = &md->items[k];
        if (has_offload(it)) {
            it->col_d2h = add_col(z, GLP_CV, 0, M, 0);
            it->col_h2d = add_col(z, GLP_CV, 0, M, 0);
        }
    }
    z->ccol = add_col(z, GLP_CV, 0, M, 1.0);
    /* one option per item */
    for (int k = 0; k < md->nitems; k++) {
        row_begin(z);
        for (int o = 1; o < OPT_COUNT; o++)
            row_add(z, md->items[k].col[o], 1.0);
        if (z->n > 1) row_end(z, GLP_UP, 0, 1);
    }
}

/* Op i of rank r starts after op i-1 ends, and after its cross-rank
 * predecessor ends plus the boundary's communication. */
static void order_rows(milp *z, int r, int i, int **pos)
{
    const off_model *md = z->md;
    const schedule *s = md->s;
    sched_op op = s->ops[r][i];
    row_begin(z);
    double c = add_start_terms(z, r, i, 1.0);
    if (i > 0) row_add(z, z->ecol[r][i - 1], -1.0);
    row_end(z, GLP_LO, -c, 0);
    sched_op pred;
    if (!sched_pred(s, op, &pred)) return;
    int pr = s->stage_rank[pred.stage];
    if (pr == r) return;
    int pi = op_index(s, pr, pred.kind, pred.stage, pred.mb, pos);
    double comm = op.kind == OP_F ? md->comm_s[pred.stage] : md->comm_s[op.stage];
    row_begin(z);
    c = add_start_terms(z, r, i, 1.0);
    row_add(z, z->ecol[pr][pi], -1.0);
    row_end(z, GLP_LO, -c + comm, 0);
}

/* The copies of op i's item: D2H after its F; H2D after the D2H and after
 * its trigger op starts; the consumer (its R first) after the H2D. */
static void copy_rows(milp *z, int r, int i)
{
    const off_model *md = z->md;
    double M = md->horizon_s;
    sched_op op = md->s->ops[r][i];
    off_item *it = off_item_at(md, op.stage, op.mb);
    if (!has_offload(it)) return;
    if (op.kind == OP_F) {
        row_begin(z);
        row_add(z, it->col_d2h, 1.0);
        row_add(z, z->ecol[r][i], -1.0);
        for (int o = OPT_OFF; o < OPT_COUNT; o++)
            row_add(z, it->col[o], -it->copy_s[o]);
        row_end(z, GLP_LO, 0, 0);
        return;
    }
    if (op.kind != OP_B && op.kind != OP_BW) return;
    for (int o = OPT_OFF; o < OPT_COUNT; o++) {
        if (!it->col[o]) continue;
        row_begin(z);
        row_add(z, it->col_h2d, 1.0);
        row_add(z, it->col_d2h, -1.0);
        row_add(z, it->col[o], -(it->copy_s[o] + M));
        row_end(z, GLP_LO, -M, 0);
        row_begin(z);
        row_add(z, it->col_h2d, 1.0);
        double c = add_start_terms(z, r, it->in_from[o], -1.0);
        row_add(z, it->col[o], -(it->copy_s[o] + M));
        row_end(z, GLP_LO, -M - c, 0);
    }
    row_begin(z);
    double c = add_start_terms(z, r, i, 1.0);
    row_add(z, it->col_h2d, -1.0);
    for (int o = OPT_OFF; o < OPT_COUNT; o++)
        row_add(z, it->col[o], -M);
    row_end(z, GLP_LO, -M - c, 0);
}

/* Copy engines of rank r: D2H copies in F order, H2D copies in consumer
 * order, each after the previous one of its engine. */
static void engine_rows(milp *z, int r)
{
    const off_model *md = z->md;
    const schedule *s = md->s;
    const off_item *prev_d = NULL, *prev_h = NULL;
    for (int i = 0; i < s->nops[r]; i++) {
        sched_op op = s->ops[r][i];
        const off_item *it = off_item_at(md, op.stage, op.mb);
        if (!has_offload(it)) continue;
        const off_item **prev = op.kind == OP_F ? &prev_d : (op.kind == OP_B || op.kind == OP_BW) ? &prev_h : NULL;
        if (prev == NULL) continue;
        int mine = op.kind == OP_F ? it->col_d2h : it->col_h2d;
        if (*prev != NULL) {
            row_begin(z);
            row_add(z, mine, 1.0);
            row_add(z, op.kind == OP_F ? (*prev)->col_d2h : (*prev)->col_h2d, -1.0);
            for (int o = OPT_OFF; o < OPT_COUNT; o++)
                row_add(z, it->col[o], -it->copy_s[o]);
            row_end(z, GLP_LO, 0, 0);
        }
        *prev = it;
    }
}

/* Memory of rank r at each op where keeping everything does not fit: the
 * options chosen must save at least the excess. */
static void memory_rows(milp *z, int r)
{
    const off_model *md = z->md;
    const schedule *s = md->s;
    for (int i = 0; i < s->nops[r]; i++) {
        double slack = md->room[r][i] - md->keep_mem[r][i];
        if (slack >= -ROOM_EPS_BYTES) continue;
        row_begin(z);
        for (int j = 0; j <= i; j++) {
            sched_op op = s->ops[r][j];
            if (op.kind != OP_F) continue;
            const off_item *it = off_item_at(md, op.stage, op.mb);
            if (it->c_idx <= i) continue;
            for (int o = 1; o < OPT_COUNT; o++)
                if (it->col[o])
                    row_add(z, it->col[o], (off_item_mem(it, o, i) - off_item_mem(it, OPT_KEEP, i)) / MEM_UNIT_BYTES);
        }
        if (z->n == 0) {   /* nothing can help: an empty row cannot say so; an infeasible bound can */
            int c0 = z->ccol;
            row_add(z, c0, 0.0);
            int rr = glp_add_rows(z->lp, 1);
            glp_set_row_bnds(z->lp, rr, GLP_FX, 1.0, 1.0);
            continue;
        }
        row_end(z, GLP_UP, 0, slack / MEM_UNIT_BYTES);
    }
}

static void build(milp *z)
{
    const off_model *md = z->md;
    const schedule *s = md->s;
    add_columns(z);
    /* positions of ops: pos[kind][item] */
    int *pos[OP_KIND_COUNT];
    for (int kd = 0; kd < OP_KIND_COUNT; kd++)
        pos[kd] = pg_xcalloc((size_t)md->nitems + 1, sizeof *pos[kd]);
    for (int r = 0; r < s->pp; r++)
        for (int i = 0; i < s->nops[r]; i++) {
            sched_op op = s->ops[r][i];
            pos[op.kind][(size_t)op.stage * (size_t)s->m + (size_t)op.mb] = i;
        }
    for (int r = 0; r < s->pp; r++) {
        for (int i = 0; i < s->nops[r]; i++) {
            order_rows(z, r, i, pos);
            copy_rows(z, r, i);
        }
        engine_rows(z, r);
        memory_rows(z, r);
        /* the makespan: after every rank's last op */
        row_begin(z);
        row_add(z, z->ccol, 1.0);
        if (s->nops[r] > 0) row_add(z, z->ecol[r][s->nops[r] - 1], -1.0);
        row_end(z, GLP_LO, 0, 0);
    }
    for (int kd = 0; kd < OP_KIND_COUNT; kd++)
        free(pos[kd]);
}

typedef struct cb_info {
    glpk_start start;   /* the greedy plan, if it fits */
    long node_limit;
    long nodes;
} cb_info;

static void callback(glp_tree *tree, void *info)
{
    cb_info *cb = info;
    int reason = glp_ios_reason(tree);
    glpk_start_offer(tree, &cb->start);
    workclock_glpk_tick(tree, cb->start.deadline_s);
    if (reason == GLP_ISELECT) {
        int a, n, t;
        glp_ios_tree_size(tree, &a, &n, &t);
        cb->nodes = t;
        if (t > cb->node_limit) glp_ios_terminate(tree);
    }
}

/* Seconds left of the planning's time limit (workclock.h). */
static double left_s(double deadline_s)
{
    double left = deadline_s - workclock_s();
    return left > 0 ? left : 0;
}

/* Time the greedy choices with an LP (binaries fixed): the first incumbent;
 * NULL if the LP does not solve before deadline_s. */
static double *warm_start(milp *z, const int *choice, double deadline_s)
{
    const off_model *md = z->md;
    int ncols = glp_get_num_cols(z->lp);
    for (int k = 0; k < md->nitems; k++)
        for (int o = 1; o < OPT_COUNT; o++)
            if (md->items[k].col[o]) {
                double v = choice[k] == o ? 1.0 : 0.0;
                glp_set_col_bnds(z->lp, md->items[k].col[o], GLP_FX, v, v);
            }
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.tm_lim = workclock_tm_lim_ms(left_s(deadline_s));
    double *x0 = NULL;
    if (glp_simplex(z->lp, &sm) == 0 && glp_get_status(z->lp) == GLP_OPT) {
        x0 = pg_xcalloc((size_t)ncols + 1, sizeof *x0);
        for (int c = 1; c <= ncols; c++)
            x0[c] = glp_get_col_prim(z->lp, c);
    }
    for (int k = 0; k < md->nitems; k++)
        for (int o = 1; o < OPT_COUNT; o++)
            if (md->items[k].col[o]) glp_set_col_bnds(z->lp, md->items[k].col[o], GLP_DB, 0.0, 1.0);
    return x0;
}

/* One solve's state, kept behind a pointer so that a GLPK failure in the
 * middle (glpk_guard.h) leaves it readable: what to free, and no glp_prob. */
typedef struct solve_ctx {
    milp z;
    const int *greedy;
    int greedy_fits;
    int *choice;
    offload_plan_result *res;
    double time_limit_s;
    double *x0;
    cb_info cb;
    int ok;
} solve_ctx;

/* The GLPK part of solve (run guarded): on success sets ok and choice. */
static void solve_glpk(void *arg)
{
    solve_ctx *c = arg;
    milp *z = &c->z;
    const off_model *md = z->md;
    z->lp = glp_create_prob();
    glp_set_obj_dir(z->lp, GLP_MIN);
    build(z);
    c->res->nbinaries = glp_get_num_int(z->lp);
    c->res->nrows = glp_get_num_rows(z->lp);
    /* GLPK reports scaling and basis construction on stdout whatever msg_lev
     * says (the warm start's simplex builds a basis when it has none): off for
     * the whole solve, so that --format json stays JSON */
    int term = glp_term_out(GLP_OFF);
    /* the time limit covers the LPs too: on the largest instances (DualPipeV
     * with hundreds of microbatches) the root relaxation alone took minutes */
    double deadline_s = workclock_s() + c->time_limit_s;
    c->x0 = c->greedy_fits ? warm_start(z, c->greedy, deadline_s) : NULL;
    c->cb = (cb_info){{c->x0, 0, deadline_s}, OFFLOAD_MILP_MAX_NODES, 0};
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.tm_lim = workclock_tm_lim_ms(left_s(deadline_s));
    glp_scale_prob(z->lp, GLP_SF_AUTO);
    glp_std_basis(z->lp);
    int lprc = glp_simplex(z->lp, &sm);
    if (lprc == 0 && glp_get_status(z->lp) == GLP_OPT) {
        glp_iocp io;
        glp_init_iocp(&io);
        io.msg_lev = GLP_MSG_OFF;
        io.presolve = GLP_OFF;   /* the warm start is in the original columns */
        io.cb_func = callback;
        io.cb_info = &c->cb;
        io.tm_lim = workclock_tm_lim_ms(left_s(deadline_s));
        io.mip_gap = 1e-4;
        int rc = glp_intopt(z->lp, &io);
        int ms = glp_mip_status(z->lp);
        if (ms == GLP_OPT || ms == GLP_FEAS) {
            c->ok = 1;
            c->res->status = (rc == 0 && ms == GLP_OPT) ? OFFLOAD_SOLVED_OPTIMAL : OFFLOAD_SOLVED_NODE_LIMIT;
            for (int k = 0; k < md->nitems; k++) {
                c->choice[k] = OPT_KEEP;
                for (int o = 1; o < OPT_COUNT; o++)
                    if (md->items[k].col[o] && glp_mip_col_val(z->lp, md->items[k].col[o]) > 0.5)
                        c->choice[k] = o;
            }
        }
    }
    glp_term_out(term);
}

/* Solve; on success choice holds the MILP's plan and 1 is returned.  If GLPK
 * fails inside (it aborts on some numerically hard instances), 0: the
 * caller's greedy plan stands, as when the MILP finds nothing. */
static int solve(const off_model *md, const int *greedy, int greedy_fits, int *choice, double time_limit_s,
                 offload_plan_result *res)
{
    solve_ctx c;
    memset(&c, 0, sizeof c);
    c.z.md = md;
    c.greedy = greedy;
    c.greedy_fits = greedy_fits;
    c.choice = choice;
    c.res = res;
    c.time_limit_s = time_limit_s;
    if (glpk_guarded(solve_glpk, &c) != 0) {
        c.z.lp = NULL;   /* freed with GLPK's environment */
        c.ok = 0;
        res->status = OFFLOAD_SOLVED_HEURISTIC;
        memcpy(choice, greedy, (size_t)md->nitems * sizeof *choice);
    }
    res->nodes = c.cb.nodes;
    free(c.x0);
    for (int r = 0; r < md->pp && c.z.ecol; r++)
        free(c.z.ecol[r]);
    free(c.z.ecol);
    free(c.z.ind);
    free(c.z.val);
    if (c.z.lp) glp_delete_prob(c.z.lp);
    return c.ok;
}

const char *offload_solve_status_name(offload_solve_status s)
{
    switch (s) {
    case OFFLOAD_SOLVED_OPTIMAL: return "milp-optimal";
    case OFFLOAD_SOLVED_NODE_LIMIT: return "milp-node-limit";
    case OFFLOAD_SOLVED_HEURISTIC: return "greedy";
    case OFFLOAD_SOLVED_NOTHING: return "fits-as-is";
    case OFFLOAD_SOLVED_INFEASIBLE: return "infeasible";
    case OFFLOAD_SOLVED_PIPEOFFLOAD: return "pipeoffload-rules";
    case OFFLOAD_SOLVED_REMAT: return "remat-ilp";
    }
    return "?";
}

static int count_binaries(const off_model *md)
{
    int n = 0;
    for (int k = 0; k < md->nitems; k++)
        for (int o = 1; o < OPT_COUNT; o++)
            n += md->items[k].allowed[o];
    return n;
}

int offload_plan_build(const offload_plan_input *in, memplan *out, offload_plan_result *res, pg_status *st)
{
    memset(res, 0, sizeof *res);
    memset(out, 0, sizeof *out);
    off_model md;
    int rc = off_model_build(in, &md, st);
    if (rc != 0) {
        off_model_free(&md);
        return rc;
    }
    int *greedy = pg_xcalloc((size_t)md.nitems + 1, sizeof *greedy);
    int *choice = pg_xcalloc((size_t)md.nitems + 1, sizeof *choice);
    int fits = off_greedy(&md, greedy);
    int changed = 0;
    for (int k = 0; k < md.nitems; k++)
        changed |= greedy[k] != OPT_KEEP;
    memcpy(choice, greedy, (size_t)md.nitems * sizeof *choice);
    if (!changed && fits) {
        res->status = OFFLOAD_SOLVED_NOTHING;
    } else if (!fits) {
        res->status = OFFLOAD_SOLVED_INFEASIBLE;
    } else {
        res->status = OFFLOAD_SOLVED_HEURISTIC;
        res->nbinaries = count_binaries(&md);
        if (in->milp_time_limit_s > 0 && res->nbinaries <= OFFLOAD_MILP_MAX_BINARIES &&
            solve(&md, greedy, fits, choice, in->milp_time_limit_s, res)) {
            /* keep the MILP's plan unless the greedy one times better (model gaps) */
            if (off_eval(&md, greedy) < off_eval(&md, choice)) memcpy(choice, greedy, (size_t)md.nitems * sizeof *choice);
        }
    }
    res->model_makespan_s = off_eval(&md, choice);
    off_to_plan(&md, choice, out);
    res->noffload = out->noffload;
    res->nrecompute = out->nrecompute;
    free(greedy);
    free(choice);
    off_model_free(&md);
    return 0;
}
