/* remat_cover.c: per-rank covers, the ILP's second warm start and its
 * strongest cut (remat_internal.h).
 *
 * Why.  The makespan ILP's relaxation pays for fractions of recomputes: a
 * memory row short by a third of an activation costs a third of a
 * recompute there, where a plan pays a whole one.  On a bottleneck rank
 * with no idle time every recompute second is a makespan second, so GLPK's
 * bound stays well below the optimum and branch and bound does not close
 * the gap (6.2B, ZB-H1, p 8, m 32: 4 % after 300 s).  Each rank's memory
 * rows alone form a small covering ILP (minimise the rank's recompute
 * seconds; windows are intervals of the rank's order), which GLPK solves in
 * a fraction of a second.  Its optimum R_r is a valid lower bound on that
 * rank's recompute seconds in ANY plan, so
 *     sum over the rank's binaries of (seconds x)  >=  R_r
 * is a valid cut for the makespan ILP, and the union of the rank optima is a
 * plan that fits (often better than the greedy one).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opt/remat_internal.h"

#define MS_PER_S 1000.0
/* The cut's right-hand side is lowered by this much so that GLPK's own
 * tolerances never make the optimum look infeasible. */
#define CUT_SLACK_REL 1e-7

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
} cover_cb;

static void cover_callback(glp_tree *tree, void *info)
{
    cover_cb *cb = info;
    int best = glp_ios_best_node(tree);
    if (best > 0) {
        double b = glp_ios_node_bound(tree, best);
        if (b > cb->bound) cb->bound = b;
    }
}

/* Among a rank's many covers of least cost (its microbatches are largely
 * interchangeable for memory), prefer the one that recomputes the same
 * microbatches as the stage before: a path through the pipeline then meets
 * the recomputes of one microbatch on each rank at the same point, instead
 * of collecting different rank's recomputes one after the other.  The
 * bonus is a tie-break: it lowers the objective by at most this share, so
 * the cover's optimum stays a valid (slightly lowered) bound. */
#define ALIGN_BONUS_REL 1e-4

/* 1 when col's option (or a more frugal one) is chosen in c for the same
 * microbatch on the previous stage, which a rank earlier in the order
 * (rm_cover_ranks goes by rank) has already decided. */
static double aligned(const rm_ilp *z, const plan_choice *c, int col)
{
    const rm_model *md = z->md;
    int p = z->col_pair[col];
    int stage = p / md->m, mb = p % md->m;
    if (stage == 0 || md->s->stage_rank[stage - 1] >= md->s->stage_rank[stage]) return 0.0;
    plan_choice prev = c[rm_pair(md, stage - 1, mb)];
    if (col == z->col_bwd[p]) return prev.bwd == PLAN_BWD_RECOMPUTE;
    if (col == z->col_sel[p]) return prev.fwd != PLAN_FWD_KEEP;
    return prev.fwd == PLAN_FWD_FULL;
}

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
            glp_set_obj_coef(lp, map[col], rm_col_cost(z, col) * (1.0 - ALIGN_BONUS_REL * aligned(z, c, col)));
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
    sm.tm_lim = tm_ms;
    if (glp_simplex(lp, &sm) == 0 && glp_get_status(lp) == GLP_OPT) {
        cover_cb cb = {glp_get_obj_val(lp)};
        glp_iocp io;
        glp_init_iocp(&io);
        io.msg_lev = GLP_MSG_OFF;
        io.mir_cuts = GLP_ON;
        io.cb_func = cover_callback;
        io.cb_info = &cb;
        io.tm_lim = tm_ms;
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

int rm_cover_ranks(rm_ilp *z, double time_limit_s, plan_choice *c)
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
        if (count[r] == 0) continue;
        int n = 0;
        for (int col = 1; col <= z->ncols; col++) {
            int p = z->col_pair[col];
            map[col] = (p >= 0 && md->s->stage_rank[p / md->m] == r) ? ++n : 0;
        }
        double bound;
        solved += cover_rank(z, tm_ms, map, n, c, &bound);
        if (bound <= 0) continue;
        int k = 0;
        for (int col = 1; col <= z->ncols; col++)
            if (map[col] > 0) {
                ind[++k] = col;
                val[k] = rm_col_cost(z, col);
            }
        int row = glp_add_rows(z->lp, 1);
        glp_set_mat_row(z->lp, row, k, ind, val);
        glp_set_row_bnds(z->lp, row, GLP_LO, bound * (1.0 - CUT_SLACK_REL), 0.0);
    }
    free(map);
    free(count);
    free(ind);
    free(val);
    return solved;
}
