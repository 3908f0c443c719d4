/* remat_ilp_model.c: seed 004's rematerialization ILP as a GLPK problem
 * (remat_internal.h: rm_ilp_build, rm_ilp_free, rm_ilp_plan, rm_ilp_point),
 * which remat_ilp.c solves and remat_lns.c searches around.  Its own file so
 * that both call down into it and the solver's callback, which calls the
 * large-neighbourhood search, is never called back.
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

#include "opt/remat_ilp.h"   /* the size limits of the exact model */
#include "opt/remat_internal.h"
#include "util/error.h"

/* A binary is taken as set above this value (GLPK returns 0/1 up to its
 * integrality tolerance). */
#define BINARY_ON 0.5
/* Rounding slack of a count that is integral up to floating error. */
#define FULL_COUNT_TOL 1e-9

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
