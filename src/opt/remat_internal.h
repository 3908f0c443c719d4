/* remat_internal.h: private to the rematerialization planner (remat_ilp.h).
 *
 * The planner's view of a schedule: ops named by a global id (rank r's ops
 * are base[r] .. base[r+1]-1, in execution order), each op's predecessor,
 * a topological order for timing, where each (stage, mb)'s F, B and W sit,
 * and per stage what every option costs in bytes and seconds (from
 * sim/actmem.h).  remat_model.c builds it and holds the two evaluators
 * (memory at every op start, ideal timing); remat_greedy.c is the warm
 * start; remat_ilp.c the ILP and the entry point.
 */
#ifndef PG_OPT_REMAT_INTERNAL_H
#define PG_OPT_REMAT_INTERNAL_H

#include "opt/remat_input.h"
#include "schedule/plan.h"
#include "util/error.h"

/* Plans are compared with this much room under the budget, so that the
 * simulator's own summation order can never tip a plan that fits here over
 * the capacity there (1e-9 of 80 GB is 80 bytes). */
#define REMAT_BUDGET_SLACK_REL 1e-9
/* A plan must beat another by more than rounding to replace it. */
#define REMAT_MIN_GAIN_REL 1e-9

typedef struct rm_stage {
    double act_b, act_w;             /* bytes: F stores for B; still held after B for W */
    double f_alloc[3];               /* [plan_fwd] bytes F keeps until B */
    double r_s[3];                   /* [plan_fwd] seconds of the forward recompute before B */
    double after_b[2];               /* [plan_bwd] bytes held between B and W */
    double rw_s;                     /* seconds of the backward recompute before W */
    double f_s, b_s, w_s;            /* op seconds on the stage's rank */
    double workspace;                /* bytes while one of its ops runs */
    int fwd_ok[3];                   /* [plan_fwd] option available (KEEP always) */
    int bwd_ok;                      /* backward recompute available (split, saves bytes) */
} rm_stage;

typedef struct rm_model {
    const schedule *s;
    int pp, S, m, total, npairs;
    int *base;                       /* [pp + 1] */
    sched_op *op;                    /* [total] */
    int *rank;                       /* [total] */
    int *pred;                       /* [total] predecessor id, -1 if none */
    int *topo;                       /* [total] a topological order */
    int *idF, *idB, *idW;            /* [npairs] ids of F, B (or BW), W (-1 if fused) */
    rm_stage *st;                    /* [S] */
    double *budget;                  /* [pp] effective budget (slack removed) */
    double comm_s;
} rm_model;

/* Pair index of (stage, mb), as memplan indexes it. */
static inline int rm_pair(const rm_model *md, int stage, int mb)
{
    return stage * md->m + mb;
}

int rm_model_build(const remat_input *in, rm_model *md, pg_status *st);
void rm_model_free(rm_model *md);

/* Memory (bytes) at the start of every op under choices c [npairs]: mem[total]. */
void rm_memory(const rm_model *md, const plan_choice *c, double *mem);
/* The same with every pair at its most frugal option. */
void rm_memory_min(const rm_model *md, double *mem);

/* Duration of op id under choices c. */
double rm_duration(const rm_model *md, const plan_choice *c, int id);
/* Ideal timing: end[total] (start = end - duration); returns the makespan,
 * *span the largest per-rank span.  start may be NULL. */
double rm_times(const rm_model *md, const plan_choice *c, double *start, double *end, double *span);

/* Greedy plan into c (all keep on entry): 0, or PG_EXIT_INPUT if some op
 * cannot fit whatever is recomputed. */
int rm_greedy(const rm_model *md, const double *lifespan_f, const double *lifespan_b, plan_choice *c, pg_status *st);

/* Local search from a plan that fits: swap the choices of two microbatches
 * of a stage, or step one toward keep, whenever the plan still fits and its
 * makespan (then its sum of op ends) falls; until no move helps or clock_s()
 * passes deadline_s.  Returns the number of moves made. */
int rm_polish(const rm_model *md, plan_choice *c, double deadline_s, double (*clock_s)(void));

/* ---- the ILP (remat_ilp.c), shared with the per-rank covers (remat_cover.c) */

#include <glpk.h>

typedef struct rm_ilp {
    const rm_model *md;
    glp_prob *lp;
    int col_c;                /* the makespan */
    int *col_full, *col_sel, *col_bwd;   /* [npairs] column or 0 */
    int *col_pair;            /* [ncols + 1] pair of a binary column, -1 otherwise */
    int ncols, nbin;
    const double *over;       /* [total] bytes over budget without recomputation */
    /* scratch row */
    int *ind;
    double *val;
    int cap;
} rm_ilp;

static inline int rm_e_col(int k)
{
    return k + 1;   /* end time of op k */
}

/* Recompute seconds a binary column adds (0 for other columns). */
double rm_col_cost(const rm_ilp *z, int col);

/* 1 when col's option (or a more frugal one) is chosen in c for the same
 * microbatch on the stage before, held by an earlier rank (the covers'
 * tie-break: remat_cover.c; defined in remat_cover_dp.c). */
int rm_col_aligned(const rm_ilp *z, const plan_choice *c, int col);

/* Rank r's least-cost cover by a sweep over its ops over budget
 * (remat_cover_dp.c), forward (dir = 1) or backward (dir = -1): over[total]
 * are the bytes each op is over budget without recomputation.  Returns 1
 * with the rank's choices written into c (pairs with columns only) and the
 * least recompute seconds in *cost_out; 0 when the state space is too
 * large (nothing written); -1 when nothing fits.  running, if not NULL,
 * receives for each op i of the rank (base[r] + i) over budget the least
 * recompute seconds any plan that fits spends on the windows (F to B, B to
 * W) whose first op over budget in the sweep's direction is at or before
 * that op (0 at other ops).  weight, if not NULL, scales each option's
 * seconds by weight[its consumer op] (B or BW for the forward options, W
 * for the backward one): the cover then minimises weighted seconds
 * (rm_weighted_covers). */
int rm_cover_dp(const rm_ilp *z, const double *over, int r, int dir, const double *weight, plan_choice *c,
                double *cost_out, double *running);

/* Per-rank covers: for each rank with binaries, the fewest recompute seconds
 * that fit its memory (an ILP over its memory rows alone), within
 * time_limit_s in all.  Writes each solved rank's choices into c, adds to
 * z the cut  rank's recompute seconds >= that minimum (its proven bound),
 * and returns how many ranks were solved; least_s[pp] receives each rank's
 * minimum when proven (exactly), -1 otherwise, and 0 for ranks without
 * binaries. */
int rm_cover_ranks(rm_ilp *z, double time_limit_s, plan_choice *c, double *least_s);

/* Covers away from the critical path (remat_critical.c): up to rounds
 * rounds of per-rank covers weighted by how often each consumer op was
 * critical so far; c (a plan that fits) is replaced by the best plan found
 * if its makespan is lower.  Returns 1 if c changed. */
int rm_weighted_covers(const rm_ilp *z, int rounds, double deadline_s, double (*clock_s)(void), plan_choice *c);

/* The makespan ILP of md into z (remat_ilp.c: columns, time and memory
 * rows; the covers' cuts are added by rm_cover_ranks): over[total], the
 * bytes each op is over budget without recomputation, is kept by
 * reference.  Returns 0, with only the columns built, when there are more
 * than REMAT_ILP_MAX_BINARIES binaries.  Free with rm_ilp_free either way. */
int rm_ilp_build(rm_ilp *z, const rm_model *md, const double *over);
void rm_ilp_free(rm_ilp *z);

/* The ILP's binaries as a plan: GLPK's current integer solution of z->lp
 * (its incumbent, during the search) into c [npairs]. */
void rm_ilp_plan(const rm_ilp *z, plan_choice *c);
/* Plan c as a point of z's columns (1-based, [ncols + 1], caller frees):
 * the binaries, the op ends end[total] and the makespan (at least
 * makespan_s). */
double *rm_ilp_point(const rm_ilp *z, const plan_choice *c, const double *end, double makespan_s);

/* Large-neighbourhood search (remat_lns.c): sub-MIPs over windows of
 * consecutive microbatches, every other binary fixed at the incumbent's
 * value, on a copy of z->lp taken by rm_lns_new (so that steps can run
 * while GLPK searches z->lp itself).  rm_lns_step solves the next window
 * until deadline_s at the latest; when the plan it finds (polished by
 * rm_polish) beats c, it replaces c and the step returns 1.  The windows
 * widen after a pass without improvement; rm_lns_exhausted says when a
 * window as wide as the whole pipeline has stalled. */
typedef struct rm_lns rm_lns;
rm_lns *rm_lns_new(const rm_ilp *z, double gap);
int rm_lns_step(rm_lns *l, plan_choice *c, double deadline_s, double (*clock_s)(void));
int rm_lns_exhausted(const rm_lns *l);
void rm_lns_free(rm_lns *l);

#endif
