/* remat_cover.c: per-rank covers, the ILP's second warm start and its
 * strongest cut (remat_internal.h).
 *
 * Why.  The makespan ILP's relaxation pays for fractions of recomputes: a
 * memory row short by a third of an activation costs a third of a
 * recompute there, where a plan pays a whole one.  On a bottleneck rank
 * with no idle time every recompute second is a makespan second, so GLPK's
 * bound stays well below the optimum and branch and bound does not close
 * the gap (6.2B, ZB-H1, p 8, m 32: 4 % after 300 s).  Each rank's memory
 * rows alone form a small covering problem (minimise the rank's recompute
 * seconds; windows are intervals of the rank's order), solved exactly by
 * the sweep of remat_cover_dp.c in milliseconds, or, when too many windows
 * are open at once for it, as an ILP in GLPK here (which needed more than
 * 9 s for some zero-bubble ranks at middle budgets).  Its optimum R_r is a
 * valid lower bound on that rank's recompute seconds in ANY plan, so
 *     sum over the rank's binaries of (seconds x)  >=  R_r
 * is a valid cut for the makespan ILP, and the union of the rank optima is a
 * plan that fits (often better than the greedy one).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opt/remat_internal.h"
#include "opt/workclock.h"

#define MS_PER_S 1000.0
/* The cut's right-hand side is lowered by this much so that GLPK's own
 * tolerances never make the optimum look infeasible. */
#define CUT_SLACK_REL 1e-7
/* A running cut is added where the running minimum rises by more than this. */
#define RUNNING_RISE_REL 1e-9

double rm_col_cost(const rm_ilp *z, int col)
{
    int p = col >= 0 && col <= z->ncols ? z->col_pair[col] : -1;
    if (p < 0) return 0.0;
    const rm_stage *sc = &z->md->st[p / z->md->m];
    if (col == z->col_full[p]) return sc->r_s[PLAN_FWD_FULL];
    if (col == z->col_sel[p]) return sc->r_s[PLAN_FWD_SELECTIVE];
    return sc->rw_s;
}

typedef struct cover_cb {
    double bound;
    double deadline_s;   /* workclock.h: the search's work limit in deterministic mode */
} cover_cb;

static void cover_callback(glp_tree *tree, void *info)
{
    cover_cb *cb = info;
    int best = glp_ios_best_node(tree);
    if (best > 0) {
        double b = glp_ios_node_bound(tree, best);
        if (b > cb->bound) cb->bound = b;
    }
    workclock_glpk_tick(tree, cb->deadline_s);
}

/* Among a rank's many covers of least cost (its microbatches are largely
 * interchangeable for memory), prefer the one that recomputes the same
 * microbatches as the stage before: a path through the pipeline then meets
 * the recomputes of one microbatch on each rank at the same point, instead
 * of collecting different rank's recomputes one after the other.  The
 * bonus is a tie-break: it lowers the objective by at most this share, so
 * the cover's optimum stays a valid (slightly lowered) bound. */
#define ALIGN_BONUS_REL 1e-4

/* Rank r's cover: its binaries (map: main column -> local, 0 if not r's),
 * every main row made of r's binaries only (memory, count and choice rows).
 * Returns 1 with *bound and the choices in c when solved to optimality;
 * 0 with the best proven bound otherwise (c untouched). */
static int cover_rank(const rm_ilp *z, int tm_ms, const int *map, int ncols, plan_choice *c, double *bound)
{
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, ncols);
    int *back = pg_xcalloc((size_t)ncols + 1, sizeof *back);
    for (int col = 1; col <= z->ncols; col++)
        if (map[col] > 0) {
            back[map[col]] = col;
            glp_set_col_kind(lp, map[col], GLP_BV);
            glp_set_obj_coef(lp, map[col], rm_col_cost(z, col) * (1.0 - ALIGN_BONUS_REL * rm_col_aligned(z, c, col)));
        }
    int *ind = pg_xmalloc(((size_t)z->ncols + 1) * sizeof *ind);
    double *val = pg_xmalloc(((size_t)z->ncols + 1) * sizeof *val);
    int nrows = glp_get_num_rows(z->lp);
    for (int i = 1; i <= nrows; i++) {
        int n = glp_get_mat_row(z->lp, i, ind, val);
        int mine = n > 0;
        for (int t = 1; t <= n && mine; t++) {
            if (map[ind[t]] <= 0) mine = 0;
            else ind[t] = map[ind[t]];
        }
        if (!mine) continue;
        int row = glp_add_rows(lp, 1);
        glp_set_mat_row(lp, row, n, ind, val);
        glp_set_row_bnds(lp, row, glp_get_row_type(z->lp, i), glp_get_row_lb(z->lp, i), glp_get_row_ub(z->lp, i));
    }
    int solved = 0;
    *bound = 0;
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.tm_lim = workclock_tm_lim_ms(tm_ms / MS_PER_S);
    if (glp_simplex(lp, &sm) == 0 && glp_get_status(lp) == GLP_OPT) {
        cover_cb cb = {glp_get_obj_val(lp), workclock_s() + tm_ms / MS_PER_S};
        glp_iocp io;
        glp_init_iocp(&io);
        io.msg_lev = GLP_MSG_OFF;
        io.mir_cuts = GLP_ON;
        io.cb_func = cover_callback;
        io.cb_info = &cb;
        io.tm_lim = workclock_tm_lim_ms(tm_ms / MS_PER_S);
        int rc = glp_intopt(lp, &io);
        *bound = cb.bound;
        if (rc == 0 && glp_mip_status(lp) == GLP_OPT) {
            solved = 1;
            *bound = glp_mip_obj_val(lp);
            for (int l = 1; l <= ncols; l++) {
                int p = z->col_pair[back[l]];
                int full = z->col_full[p] && glp_mip_col_val(lp, map[z->col_full[p]]) > 0.5;
                int sel = z->col_sel[p] && glp_mip_col_val(lp, map[z->col_sel[p]]) > 0.5;
                if (z->col_full[p] || z->col_sel[p])
                    c[p].fwd = full ? PLAN_FWD_FULL : sel ? PLAN_FWD_SELECTIVE : PLAN_FWD_KEEP;
                if (z->col_bwd[p])
                    c[p].bwd = glp_mip_col_val(lp, map[z->col_bwd[p]]) > 0.5 ? PLAN_BWD_RECOMPUTE : PLAN_BWD_KEEP;
            }
        }
    }
    free(back);
    free(ind);
    free(val);
    glp_delete_prob(lp);
    return solved;
}

/* The cut  sum of the recompute seconds of columns ind[1..n] >= need
 * (lowered by CUT_SLACK_REL); val is scratch of the same size. */
static void add_seconds_cut(rm_ilp *z, int n, const int *ind, double *val, double need)
{
    for (int i = 1; i <= n; i++) val[i] = rm_col_cost(z, ind[i]);
    int row = glp_add_rows(z->lp, 1);
    glp_set_mat_row(z->lp, row, n, ind, val);
    glp_set_row_bnds(z->lp, row, GLP_LO, need * (1.0 - CUT_SLACK_REL), 0.0);
}

/* First (dir 1) or last (dir -1) op over budget in col's window. */
static int window_edge(const rm_ilp *z, int col, int dir)
{
    const rm_model *md = z->md;
    int p = z->col_pair[col];
    int from = col == z->col_bwd[p] ? md->idB[p] + 1 : md->idF[p];
    int to = col == z->col_bwd[p] ? md->idW[p] : md->idB[p];
    int edge = -1;
    for (int k = from; k < to; k++)
        if (z->over[k] > 0) {
            edge = k;
            if (dir > 0) break;
        }
    return edge;
}

/* Running cuts of rank r: wherever the least recompute spent on the
 * windows met so far in the sweep's direction rises (rm_cover_dp's
 * running), that much must be spent on those windows' options.  Forward,
 * they keep the relaxation from spending its recompute late in a rank,
 * where a bubble may hide it; backward, early. */
static void add_running_cuts(rm_ilp *z, int r, int dir, const double *running, int *ind, double *val)
{
    const rm_model *md = z->md;
    int *edge = pg_xcalloc((size_t)z->ncols + 1, sizeof *edge);
    for (int col = 1; col <= z->ncols; col++) {
        int p = z->col_pair[col];
        edge[col] = p >= 0 && md->s->stage_rank[p / md->m] == r ? window_edge(z, col, dir) : -1;
    }
    double last = 0;
    int k0 = dir > 0 ? md->base[r] : md->base[r + 1] - 1, k1 = dir > 0 ? md->base[r + 1] : md->base[r] - 1;
    for (int k = k0; k != k1; k += dir) {
        double need = running[k - md->base[r]];
        if (!(need > last * (1.0 + RUNNING_RISE_REL))) continue;
        last = need;
        int n = 0;
        for (int col = 1; col <= z->ncols; col++)
            if (edge[col] >= 0 && (dir > 0 ? edge[col] <= k : edge[col] >= k)) ind[++n] = col;
        add_seconds_cut(z, n, ind, val, need);
    }
    free(edge);
}

int rm_cover_ranks(rm_ilp *z, double time_limit_s, plan_choice *c, double *least_s)
{
    const rm_model *md = z->md;
    int *map = pg_xcalloc((size_t)z->ncols + 1, sizeof *map);
    int *count = pg_xcalloc((size_t)md->pp, sizeof *count);
    int *ind = pg_xmalloc(((size_t)z->ncols + 1) * sizeof *ind);
    double *val = pg_xmalloc(((size_t)z->ncols + 1) * sizeof *val);
    int busy = 0;
    for (int col = 1; col <= z->ncols; col++)
        if (z->col_pair[col] >= 0) count[md->s->stage_rank[z->col_pair[col] / md->m]]++;
    for (int r = 0; r < md->pp; r++) busy += count[r] > 0;
    int tm_ms = busy > 0 ? (int)(time_limit_s * MS_PER_S / busy) : 0;
    if (tm_ms < 1) tm_ms = 1;
    int solved = 0;
    for (int r = 0; r < md->pp; r++) {
        least_s[r] = 0;
        if (count[r] == 0) continue;
        int n = 0;
        for (int col = 1; col <= z->ncols; col++) {
            int p = z->col_pair[col];
            map[col] = (p >= 0 && md->s->stage_rank[p / md->m] == r) ? ++n : 0;
        }
        double bound = 0;
        size_t nops = (size_t)(md->base[r + 1] - md->base[r]) + 1;
        double *running = pg_xmalloc(nops * sizeof *running);
        int sv = rm_cover_dp(z, z->over, r, 1, NULL, c, &bound, running);
        /* exact; the ILP cover's optimum below carries the tie-break */
        least_s[r] = sv > 0 ? bound : -1;
        if (sv > 0) {
            add_running_cuts(z, r, 1, running, ind, val);
            /* the backward sweep's choices are a second least-cost cover: not used */
            plan_choice *scratch = pg_xmalloc(((size_t)md->npairs + 1) * sizeof *scratch);
            memcpy(scratch, c, (size_t)md->npairs * sizeof *scratch);
            double again;
            if (rm_cover_dp(z, z->over, r, -1, NULL, scratch, &again, running) > 0)
                add_running_cuts(z, r, -1, running, ind, val);
            free(scratch);
        }
        free(running);
        if (sv == 0) sv = cover_rank(z, tm_ms, map, n, c, &bound);
        solved += sv > 0;
        if (bound <= 0) continue;
        int k = 0;
        for (int col = 1; col <= z->ncols; col++)
            if (map[col] > 0) ind[++k] = col;
        add_seconds_cut(z, k, ind, val, bound);
    }
    free(map);
    free(count);
    free(ind);
    free(val);
    return solved;
}
