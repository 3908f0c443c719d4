/* zb_ilp.c: see zb_ilp.h.
 *
 * Column layout: the start time of op (kind, stage s, microbatch j) is
 * column (kind * pp + s) * m + j + 1 (kinds F, B, W), then C, then one
 * binary per unfixed pair of ops of a stage.  Precedence already fixes most
 * pairs: F(s,j) before B(s,k) and W(s,k) when j <= k, B(s,j) before W(s,k)
 * when j <= k, forwards and input backwards run in microbatch order (as the
 * heuristic runs them).  What is left is which earlier-microbatch B or W a
 * later forward overtakes, the same for B and W, and the order of W's. */
#include "opt/zb_ilp.h"

#include <glpk.h>
#include <stdlib.h>
#include <string.h>

#include "opt/glpk_guard.h"
#include "opt/glpk_start.h"
#include "opt/workclock.h"

/* Tolerance for spans and memory counts. */
#define ZB_EPS 1e-9
/* GLPK takes its time limit in milliseconds. */
#define MS_PER_S 1000.0
/* Relative improvement below which a refined order is not worth keeping. */
#define ZB_MIN_GAIN 1e-9
enum { K_F = 0, K_B = 1, K_W = 2, K_N = 3 };

typedef struct zb_model {
    glp_prob *lp;
    int pp, m;
    double dur[K_N], dmem[K_N], comm_s, limit, horizon;
    double *x0;      /* [ncols + 1] the heuristic's solution (GLPK is 1-based) */
    int x0_cap;
} zb_model;

static int col(const zb_model *z, int kind, int s, int j)
{
    return (kind * z->pp + s) * z->m + j + 1;
}

static void add_row(zb_model *z, int n, const int *ind, const double *val, int type, double lo, double hi)
{
    /* GLPK reads ind[1..n], val[1..n] */
    int *ind1 = pg_xmalloc((size_t)(n + 1) * sizeof *ind1);
    double *val1 = pg_xmalloc((size_t)(n + 1) * sizeof *val1);
    ind1[0] = 0;
    val1[0] = 0.0;
    memcpy(ind1 + 1, ind, (size_t)n * sizeof *ind);
    memcpy(val1 + 1, val, (size_t)n * sizeof *val);
    int r = glp_add_rows(z->lp, 1);
    glp_set_mat_row(z->lp, r, n, ind1, val1);
    glp_set_row_bnds(z->lp, r, type, lo, hi);
    free(ind1);
    free(val1);
}

/* start(b) >= start(a) + gap */
static void add_prec(zb_model *z, int a, int b, double gap)
{
    int ind[2] = {b, a};
    double val[2] = {1.0, -1.0};
    add_row(z, 2, ind, val, GLP_LO, gap, 0.0);
}

static void x0_set(zb_model *z, int c, double v)
{
    if (c >= z->x0_cap) {
        int cap = z->x0_cap ? z->x0_cap : 64;
        while (cap <= c) cap *= 2;
        z->x0 = pg_xrealloc(z->x0, (size_t)cap * sizeof *z->x0);
        memset(z->x0 + z->x0_cap, 0, (size_t)(cap - z->x0_cap) * sizeof *z->x0);
        z->x0_cap = cap;
    }
    z->x0[c] = v;
}

/* Binary y: 1 = a runs before b.  Returns its column. */
static int add_pair(zb_model *z, int a, double da, int b, double db, int a_first)
{
    int y = glp_add_cols(z->lp, 1);
    glp_set_col_kind(z->lp, y, GLP_BV);
    x0_set(z, y, a_first ? 1.0 : 0.0);
    double M = z->horizon;
    int ind[3] = {a, b, y};
    double v1[3] = {1.0, -1.0, M};    /* y = 1: end(a) <= start(b) */
    add_row(z, 3, ind, v1, GLP_UP, 0.0, M - da);
    double v2[3] = {-1.0, 1.0, -M};   /* y = 0: end(b) <= start(a) */
    add_row(z, 3, ind, v2, GLP_UP, 0.0, -db);
    return y;
}

static int kind_of(uint8_t k)
{
    return k == OP_F ? K_F : k == OP_B ? K_B : k == OP_W ? K_W : -1;
}

static void build(zb_model *z, const schedule *s, const sched_times *t, const int *pos)
{
    int pp = z->pp, m = z->m, nstart = K_N * pp * m, ccol = nstart + 1;
    z->lp = glp_create_prob();
    glp_set_obj_dir(z->lp, GLP_MIN);
    glp_add_cols(z->lp, ccol);
    for (int c = 1; c <= ccol; c++) glp_set_col_bnds(z->lp, c, GLP_DB, 0.0, z->horizon);
    glp_set_obj_coef(z->lp, ccol, 1.0);
    for (int r = 0; r < pp; r++)
        for (int i = 0; i < s->nops[r]; i++) {
            sched_op o = s->ops[r][i];
            x0_set(z, col(z, kind_of(o.kind), o.stage, o.mb), t->start[r][i]);
        }
    x0_set(z, ccol, t->span);
    double c = z->comm_s;
    for (int st = 0; st < pp; st++) {
        for (int j = 0; j < m; j++) {
            int f = col(z, K_F, st, j), b = col(z, K_B, st, j), w = col(z, K_W, st, j);
            if (st > 0) add_prec(z, col(z, K_F, st - 1, j), f, z->dur[K_F] + c);
            if (st < pp - 1) add_prec(z, col(z, K_B, st + 1, j), b, z->dur[K_B] + c);
            else add_prec(z, f, b, z->dur[K_F]);
            add_prec(z, b, w, z->dur[K_B]);
            if (j > 0) {
                add_prec(z, col(z, K_F, st, j - 1), f, z->dur[K_F]);
                add_prec(z, col(z, K_B, st, j - 1), b, z->dur[K_B]);
            }
            /* C >= end(W(st,j)) - start(F(st,0)) */
            int ind[3] = {ccol, w, col(z, K_F, st, 0)};
            double val[3] = {1.0, -1.0, 1.0};
            add_row(z, 3, ind, val, GLP_LO, z->dur[K_W], 0.0);
        }
        /* unfixed pairs, and memory just after each forward starts: the
         * forwards before it (fixed), and every B / W it does not precede */
        int *mi = pg_xmalloc((size_t)(2 * m + 1) * sizeof *mi);
        double *mv = pg_xmalloc((size_t)(2 * m + 1) * sizeof *mv);
        for (int j = 0; j < m; j++) {
            int f = col(z, K_F, st, j), n = 0;
            double base = (j + 1) * z->dmem[K_F];
            for (int k = 0; k < j; k++) {
                int b = col(z, K_B, st, k), w = col(z, K_W, st, k);
                /* y = 1: F(st,j) before B(st,k), so B's release has not happened */
                int yb = add_pair(z, f, z->dur[K_F], b, z->dur[K_B], pos[f] < pos[b]);
                int yw = add_pair(z, f, z->dur[K_F], w, z->dur[K_W], pos[f] < pos[w]);
                base += z->dmem[K_B] + z->dmem[K_W];
                mi[n] = yb, mv[n++] = -z->dmem[K_B];
                mi[n] = yw, mv[n++] = -z->dmem[K_W];
                /* B(st,j) against W(st,k), k < j */
                int bj = col(z, K_B, st, j);
                add_pair(z, bj, z->dur[K_B], w, z->dur[K_W], pos[bj] < pos[w]);
            }
            if (n > 0) add_row(z, n, mi, mv, GLP_UP, 0.0, z->limit - base);
            else if (base > z->limit + ZB_EPS) {
                int ind[1] = {f};   /* infeasible limit: say so to GLPK */
                double val[1] = {0.0};
                add_row(z, 1, ind, val, GLP_UP, 0.0, z->limit - base);
            }
        }
        free(mi);
        free(mv);
        for (int j = 0; j < m; j++)
            for (int k = j + 1; k < m; k++) {
                int a = col(z, K_W, st, j), b = col(z, K_W, st, k);
                add_pair(z, a, z->dur[K_W], b, z->dur[K_W], pos[a] < pos[b]);
            }
    }
}

typedef struct zb_slot {
    double t;
    int pos;
    sched_op op;
} zb_slot;

static int slot_cmp(const void *a, const void *b)
{
    const zb_slot *x = a, *y = b;
    if (x->t < y->t - ZB_EPS) return -1;
    if (x->t > y->t + ZB_EPS) return 1;
    return x->pos - y->pos;
}

/* The order of the ILP's solution: each rank's ops by start time. */
static void order_from(const zb_model *z, const schedule *h, const int *pos, schedule *out)
{
    sched_init(out, h->name, h->pp, h->v, h->m);
    memcpy(out->stage_rank, h->stage_rank, (size_t)h->nstages * sizeof *out->stage_rank);
    zb_slot *sl = pg_xmalloc((size_t)K_N * z->m * sizeof *sl);
    for (int r = 0; r < h->pp; r++) {
        int n = 0;
        for (int k = 0; k < K_N; k++)
            for (int j = 0; j < z->m; j++) {
                int c = col(z, k, r, j);
                sl[n].t = glp_mip_col_val(z->lp, c);
                sl[n].pos = pos[c];
                sl[n].op = (sched_op){.stage = r, .mb = j, .kind = (uint8_t)(k == K_F ? OP_F : k == K_B ? OP_B : OP_W)};
                n++;
            }
        qsort(sl, (size_t)n, sizeof *sl, slot_cmp);
        for (int i = 0; i < n; i++) sched_push(out, r, (op_kind)sl[i].op.kind, sl[i].op.stage, sl[i].op.mb);
    }
    free(sl);
}

static double order_peak(const schedule *s, const double dmem[K_N])
{
    double peak = 0.0;
    for (int r = 0; r < s->pp; r++) {
        double cur = 0.0;
        for (int i = 0; i < s->nops[r]; i++) {
            int k = kind_of(s->ops[r][i].kind);
            cur += k >= 0 ? dmem[k] : 0.0;
            if (cur > peak) peak = cur;
        }
    }
    return peak;
}

/* One refinement's solve, run guarded (glpk_guard.h): GLPK's LP and branch
 * and bound, and the order it finds replacing *inout if it is better. */
typedef struct zb_solve_ctx {
    zb_model *z;
    const sched_params *p;
    schedule *inout;
    const int *pos;
    double span0;
    double time_limit_s;
    int improved;
} zb_solve_ctx;

static void zb_solve(void *arg)
{
    zb_solve_ctx *c = arg;
    zb_model *z = c->z;
    const sched_params *p = c->p;
    schedule *inout = c->inout;
    const int *pos = c->pos;
    double span0 = c->span0, time_limit_s = c->time_limit_s;
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    int lp_rc = glp_simplex(z->lp, &sm);
    if (lp_rc == 0 && glp_get_status(z->lp) == GLP_OPT) {
        glpk_start cb = {z->x0, 0, workclock_s() + time_limit_s};
        glp_iocp io;
        glp_init_iocp(&io);
        io.msg_lev = GLP_MSG_OFF;
        io.presolve = GLP_OFF;   /* the warm start is given in the original columns */
        io.cb_func = glpk_start_callback;
        io.cb_info = &cb;
        io.tm_lim = workclock_tm_lim_ms(time_limit_s);
        glp_intopt(z->lp, &io);
        int ms = glp_mip_status(z->lp);
        if ((ms == GLP_OPT || ms == GLP_FEAS) && glp_mip_obj_val(z->lp) < span0 * (1.0 - ZB_MIN_GAIN)) {
            schedule cand;
            order_from(z, inout, pos, &cand);
            pg_status inner;
            sched_times t2;
            if (sched_validate(&cand, &inner) == 0 && order_peak(&cand, z->dmem) <= z->limit + ZB_EPS &&
                sched_eval_ideal(&cand, p->t_f, p->t_b, p->t_w, p->t_comm, &t2, &inner) == 0) {
                if (t2.span < span0 * (1.0 - ZB_MIN_GAIN)) c->improved = 1;
                sched_times_free(&cand, &t2);
            }
            if (c->improved) {
                sched_free(inout);
                *inout = cand;
            } else {
                sched_free(&cand);
            }
        }
    }
}

int zb_ilp_refine(const sched_params *p, schedule *inout, double time_limit_s, pg_status *st)
{
    if (inout->v != 1 || inout->pp != p->pp || inout->m != p->m || !sched_is_split(inout))
        return pg_fail_key(st, PG_EXIT_INPUT, "schedule", "ILP refinement needs a zb-auto schedule (one stage per "
                                          "rank, split backward)");
    int nops = sched_total_ops(inout);
    if (nops > ZB_ILP_MAX_OPS || time_limit_s <= 0.0) return 0;

    zb_model z;
    memset(&z, 0, sizeof z);
    z.pp = p->pp;
    z.m = p->m;
    z.dur[K_F] = p->t_f;
    z.dur[K_B] = p->t_b;
    z.dur[K_W] = p->t_w;
    z.comm_s = p->pp > 1 ? p->t_comm : 0.0;
    z.dmem[K_F] = 1.0;
    z.dmem[K_B] = -(1.0 - p->w_fraction);
    z.dmem[K_W] = -p->w_fraction;
    z.limit = p->mem_limit > 0.0 ? p->mem_limit : (double)p->pp;

    sched_times t;
    int rc = sched_eval_ideal(inout, p->t_f, p->t_b, p->t_w, p->t_comm, &t, st);
    if (rc) return rc;
    double span0 = t.span;
    /* every op fits before the heuristic's makespan plus its span: an order
     * that needs more is worse anyway */
    z.horizon = t.makespan + t.span;
    int *pos = pg_xcalloc((size_t)K_N * z.pp * z.m + 2, sizeof *pos);
    for (int r = 0; r < inout->pp; r++)
        for (int i = 0; i < inout->nops[r]; i++) {
            sched_op o = inout->ops[r][i];
            int k = kind_of(o.kind);
            if (k < 0 || o.stage != r) {
                free(pos);
                sched_times_free(inout, &t);
                return pg_fail_key(st, PG_EXIT_INPUT, "schedule", "ILP refinement needs a zb-auto schedule");
            }
            pos[col(&z, k, o.stage, o.mb)] = i;
        }
    build(&z, inout, &t, pos);
    sched_times_free(inout, &t);

    zb_solve_ctx c = {&z, p, inout, pos, span0, time_limit_s, 0};
    if (glpk_guarded(zb_solve, &c) != 0)
        z.lp = NULL;   /* GLPK failed inside: its environment, z.lp with it, is gone; the order stands */
    if (z.lp) glp_delete_prob(z.lp);
    free(z.x0);
    free(pos);
    return 0;
}
