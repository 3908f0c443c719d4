/* remat_lns.c: large-neighbourhood search, the primal side of the remat
 * ILP (remat_internal.h, rm_lns_*).
 *
 * Why.  GLPK's branch and bound is good at raising the bound and poor at
 * improving plans once its first incumbents are found: on ZB-H1 at middle
 * budgets its plans stall about 1 % above the best known (6.2B GPT, p=8,
 * m=32, 24 GiB: 3.2426 s after 60 s, where CBC found 3.2142 s after 600 s).
 * The better plans move the choices of many microbatches on several ranks
 * at once (more backward recompute on the ranks that wait for the
 * bottleneck rank, so that it is not delayed), which rm_polish's one- or
 * two-microbatch moves cannot reach.  A sub-MIP can: every binary outside
 * a window of consecutive microbatches (on all stages) is fixed at the
 * incumbent's value, and GLPK optimises the window, with the incumbent as
 * its first solution, for a short time.  Windows span all stages because
 * a recompute moved on one rank is paid for by the ranks that wait for it;
 * windows of ranks instead (all microbatches of two neighbouring ranks)
 * found nothing on that case.  Windows slide by half their width; after a
 * full pass without improvement the width doubles, and once a window as
 * wide as the pipeline's microbatches has stalled there is nothing left
 * to try (that window is the whole ILP, which the main search runs).
 *
 * The sub-MIPs run on a copy of the ILP taken before the main search
 * starts, so they can run from inside its callback: the main search's own
 * problem (and therefore its branching) is untouched.
 */
#include <stdlib.h>
#include <string.h>

#include "opt/glpk_start.h"
#include "opt/remat_internal.h"
#include "opt/workclock.h"

#define MS_PER_S 1000.0
/* Microbatches in the first windows. */
#define LNS_FIRST_WINDOW 8

struct rm_lns {
    rm_ilp sub;               /* z with lp = its own copy */
    double gap;               /* relative gap at which a sub-MIP stops */
    int width, start;         /* the next window: microbatches [start, start + width) */
    int improved_in_pass;
    int exhausted;
    plan_choice *cand;        /* scratch [npairs] */
    double *end;              /* scratch [total] */
};

rm_lns *rm_lns_new(const rm_ilp *z, double gap)
{
    rm_lns *l = pg_xcalloc(1, sizeof *l);
    l->sub = *z;
    l->sub.lp = glp_create_prob();
    glp_copy_prob(l->sub.lp, z->lp, GLP_OFF);
    l->gap = gap;
    l->width = z->md->m < LNS_FIRST_WINDOW ? z->md->m : LNS_FIRST_WINDOW;
    l->cand = pg_xmalloc(((size_t)z->md->npairs + 1) * sizeof *l->cand);
    l->end = pg_xmalloc(((size_t)z->md->total + 1) * sizeof *l->end);
    return l;
}

void rm_lns_free(rm_lns *l)
{
    if (l == NULL) return;
    glp_delete_prob(l->sub.lp);
    free(l->cand);
    free(l->end);
    free(l);
}

int rm_lns_exhausted(const rm_lns *l)
{
    return l->exhausted;
}

/* Fixes a binary at v, or frees it. */
static void bind(glp_prob *lp, int col, int free_it, int v)
{
    if (col == 0) return;
    if (free_it)
        glp_set_col_bnds(lp, col, GLP_DB, 0.0, 1.0);
    else
        glp_set_col_bnds(lp, col, GLP_FX, (double)v, (double)v);
}

/* The window after the one just solved: slide by half a width; at the end
 * of a pass, widen if the pass found nothing. */
static void advance(rm_lns *l)
{
    int m = l->sub.md->m, stride = l->width / 2 > 0 ? l->width / 2 : 1;
    if (l->start + l->width < m) {
        l->start += stride;
        return;
    }
    if (!l->improved_in_pass) {
        if (l->width >= m) l->exhausted = 1;
        l->width = 2 * l->width < m ? 2 * l->width : m;
    }
    l->start = 0;
    l->improved_in_pass = 0;
}

/* Solves the current window from c: 1 if it found a better plan (into c). */
static int solve_window(rm_lns *l, plan_choice *c, double deadline_s, double (*clock_s)(void))
{
    rm_ilp *z = &l->sub;
    const rm_model *md = z->md;
    for (int p = 0; p < md->npairs; p++) {
        int mb = p % md->m, in = mb >= l->start && mb < l->start + l->width;
        bind(z->lp, z->col_full[p], in, c[p].fwd == PLAN_FWD_FULL);
        bind(z->lp, z->col_sel[p], in, c[p].fwd == PLAN_FWD_SELECTIVE);
        bind(z->lp, z->col_bwd[p], in, c[p].bwd == PLAN_BWD_RECOMPUTE);
    }
    double best = rm_times(md, c, NULL, l->end, NULL);
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.tm_lim = workclock_tm_lim_ms(deadline_s - clock_s());
    if (glp_simplex(z->lp, &sm) != 0 || glp_get_status(z->lp) != GLP_OPT) return 0;
    double *x = rm_ilp_point(z, c, l->end, best);
    glpk_start cb = {x, 0, deadline_s};
    glp_iocp io;
    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.presolve = GLP_OFF;   /* the incumbent is given in the original columns */
    io.mir_cuts = GLP_ON;
    io.mip_gap = l->gap;
    io.cb_func = glpk_start_callback;
    io.cb_info = &cb;
    io.tm_lim = workclock_tm_lim_ms(deadline_s - clock_s());
    glp_intopt(z->lp, &io);
    free(x);
    int ms = glp_mip_status(z->lp);
    if (ms != GLP_OPT && ms != GLP_FEAS) return 0;
    rm_ilp_plan(z, l->cand);
    rm_polish(md, l->cand, deadline_s, clock_s);
    if (rm_times(md, l->cand, NULL, l->end, NULL) >= best * (1.0 - REMAT_MIN_GAIN_REL)) return 0;
    memcpy(c, l->cand, (size_t)md->npairs * sizeof *c);
    return 1;
}

int rm_lns_step(rm_lns *l, plan_choice *c, double deadline_s, double (*clock_s)(void))
{
    if (l->exhausted || clock_s() >= deadline_s) return 0;
    int better = solve_window(l, c, deadline_s, clock_s);
    l->improved_in_pass |= better;
    advance(l);
    return better;
}

