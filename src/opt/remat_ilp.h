/* remat_ilp.h: the rematerialization planner of seed 004 (Aguila-Multner,
 * Beaumont, Eyraud-Dubois, Gusak, "Optimized Forward-Backward
 * Rematerialization for Memory-Efficient Pipeline Parallel Training").
 *
 * Contract.  For a GIVEN schedule (each rank's op order is fixed) and a
 * per-rank activation budget in bytes, remat_plan() chooses, for every
 * (stage, microbatch), one of the memory options the simulator can replay
 * (schedule/plan.h):
 *   forward   keep | selective (attention core recomputed before B) |
 *             full (only the stage input kept, F recomputed before B);
 *   backward  keep (after B hold what W needs) | recompute (after B hold
 *             only the input, F recomputed before W; split schedules only);
 * so that the memory on every rank, checked at the start of every op, never
 * exceeds the budget, and the predicted makespan is as small as possible.
 *
 * Accounting.  Bytes and seconds of each option come from sim/actmem.h, the
 * one place the simulator and its metrics take them from, so a plan that
 * fits here fits in the replay:
 *   at the start of op k of rank r the rank holds
 *     workspace of op k's stage
 *   + for each (stage, mb) of r:  F alloc (keep: M_B, selective: M_B minus
 *     the attention core, full: the input) from F's start until B starts;
 *     M_B at B's start (R re-allocates what F dropped); after B what the
 *     backward option keeps (M_W, or the input) until W starts; M_W at W's
 *     start (RW re-allocates); nothing after W (or after a fused BW);
 * since a rank runs one op at a time and releases happen at op ends, that
 * amount does not depend on timing: memory is a linear function of the
 * choices alone.  The budget is capacity - static bytes (the caller's).
 *
 * Timing is the papers' ideal model (schedule.h's sched_eval_ideal): an op
 * ends at max(previous op on its rank, predecessor + comm_s across ranks) +
 * its duration; a forward recompute lengthens B (or BW) by its cost, a
 * backward recompute lengthens W by F's cost, exactly where the simulator
 * runs them (right before the consumer, after its input arrived).  Durations
 * are the stage's reference seconds times time_scale of the stage's rank.
 *
 * Objective: the makespan (first op start to last op end), the contract's
 * headline number and the quantity seed 000's bounds bound; seed 004 uses
 * the largest per-rank span instead, which differs only by the ranks' first
 * start offsets (fixed by the forward chain, untouched by recomputation).
 *
 * Method.  A greedy warm start (at the first op where a rank is over its
 * budget, step down the activation alive there with the fewest recompute
 * seconds per byte freed, the longest-lived among equals, until it fits;
 * then undo whatever is not needed, shortest lived first).  Then each
 * rank's exact cover: the fewest recompute seconds that fit its memory
 * rows alone, by a sweep over the rank's ops whose state is the choices of
 * the windows open there (remat_cover_dp.c; an ILP when too many windows
 * are open at once, remat_cover.c).  A cover's optimum is a lower bound on
 * that rank's recompute seconds in any plan, reported per rank
 * (least_recompute_s) and added to the ILP as a cut, with the running
 * minima of the forward and backward sweeps (recompute spent on the
 * windows met so far) as further cuts; among a rank's least-cost covers it
 * takes the one that recomputes the same microbatches as the stage before
 * (a path through the pipeline then meets them at one point).  Then covers
 * weighted by how often each op was on the critical path
 * (remat_critical.c), a local search (change the choices of one or two
 * microbatches of a stage while the rank still fits and the makespan,
 * then the sum of op ends, falls: rm_polish), and the makespan ILP in
 * GLPK: one binary per useful option of each (stage, mb) (an option is
 * useful only if its window covers an op that is over budget without
 * recomputation), end-time variables per op with the fixed per-rank order
 * (no ordering binaries), per op over budget a memory row and two count
 * rows (at least q activations recomputed; at least q' of them fully,
 * when the cheaper options cannot free enough); the best warm start is
 * GLPK's first incumbent, and every later incumbent is polished by the
 * same local search and handed back.  While GLPK's gap is above three
 * times the one asked for, up to half of its time goes to a
 * large-neighbourhood search (remat_lns.c): sub-MIPs that re-optimise a
 * window of consecutive microbatches on every stage with all other
 * choices fixed at the incumbent's, whose better plans are handed back
 * too.  The best plan, re-timed by the
 * evaluator, is returned, with GLPK's proven bound when it ran.  Beyond
 * REMAT_ILP_MAX_BINARIES binaries or REMAT_ILP_MAX_OPS ops, or with
 * time_limit_s = 0, the greedy plan is the answer.
 *
 * Errors: PG_EXIT_INPUT when even recomputing everything does not fit (the
 * message names the rank, the op and the bytes needed), or for malformed
 * input.  Nothing is allocated in *out on error.
 */
#ifndef PG_OPT_REMAT_ILP_H
#define PG_OPT_REMAT_ILP_H

#include "opt/remat_input.h"
#include "schedule/plan.h"
#include "util/error.h"

/* Size limits of the exact model.  8 ranks x 32 microbatches of a split
 * schedule is 768 ops and, on the 6.2B profile, 130 to 700 binaries; GLPK's
 * LP over 12000 ops still takes about a second, beyond that the time limit
 * would be spent before branching starts. */
#define REMAT_ILP_MAX_BINARIES 6000
#define REMAT_ILP_MAX_OPS 12000


typedef enum {
    REMAT_NOTHING = 0,             /* everything fits without recomputation */
    REMAT_GREEDY,                  /* the heuristic's plan (ILP off, too big, or not better) */
    REMAT_ILP_OPTIMAL,             /* the ILP's plan, optimal within the gap */
    REMAT_ILP_FEASIBLE             /* the ILP's plan, time limit reached */
} remat_method;

typedef struct remat_result {
    remat_method method;
    double makespan_s;             /* predicted (ideal model) */
    double span_s;                 /* largest per-rank span */
    double keep_makespan_s;        /* no recomputation (memory ignored) */
    double greedy_makespan_s;      /* the warm start */
    double ilp_bound_s;            /* GLPK's best bound (0: no ILP solved) */
    double solve_s;                /* wall seconds in GLPK */
    int nbinaries, nrows;          /* size of the ILP (0: not built) */
    int nfull, nselective, nbackward;
    int pp;
    double *peak_bytes;            /* [pp] predicted activation + workspace peak (static excluded) */
    double *recompute_s;           /* [pp] seconds of R / RW ops */
    double *least_recompute_s;     /* [pp] proven least recompute seconds of any plan that fits the rank's
                                      budget (its exact cover); -1 where not computed (no ILP, or too many
                                      windows open at once for the exact cover) */
} remat_result;

/* Fills *out (plan_init'ed here; free with plan_free) and *res (free with
 * remat_result_free). */
int remat_plan(const remat_input *in, memplan *out, remat_result *res, pg_status *st);
void remat_result_free(remat_result *res);

const char *remat_method_name(remat_method m);   /* "none needed", "greedy", "ilp optimal", "ilp time limit" */

#endif
