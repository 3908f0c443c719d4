/* offload_order.h: the microbatch order of offload=plan (seed C, OptPipe:
 * the order is decided together with what to offload and recompute).
 *
 * Why not order binaries.  OptPipe's MILP orders the ops of each device with
 * disjunctive binaries, O(ops^2) per device: for p = 8, m = 32 that is about
 * 36,000 binaries next to the offload plan's 700, far beyond what GLPK
 * closes.  The orders that matter under a memory budget differ in how many
 * microbatches a rank runs ahead (in flight) and where the weight-gradient
 * ops W go; the zero-bubble paper's heuristic (schedule zb-auto) builds, for
 * an activation limit of L microbatches per rank, the order with the least
 * bubble it can find.  Offload is what makes a deeper order fit: a rank
 * may run more microbatches ahead than its memory holds if it parks some
 * activations in host memory while they wait.
 *
 * So the search is a documented heuristic seeded by the MILP: the candidate
 * orders are the schedule's own and zb-auto's for L = pp, pp + 1, ..., 2 pp
 * (ZB-H1's memory to ZB-H2's); each gets its offload plan from the MILP
 * (offload_plan_build, with its node limit, so the search is deterministic);
 * a candidate whose plan does not fit is dropped; the one with the least
 * model makespan wins (ties: the earlier candidate, the given order first).
 * Every plan is still judged by the simulation of the chosen order.
 *
 * Scope: one stage per rank (the given order may be any v = 1 schedule);
 * a multi-stage schedule keeps its order (the result says so).
 */
#ifndef PG_OPT_OFFLOAD_ORDER_H
#define PG_OPT_OFFLOAD_ORDER_H

#include "opt/offload_milp.h"

/* Largest in-flight limit tried, in multiples of pp (ZB-H2's memory). */
#define OFFLOAD_ORDER_MAX_LIMIT_PP 2
#define OFFLOAD_ORDER_MAX_CANDIDATES 130   /* 1 + pp + 1 for pp <= 128 */

typedef struct offload_order_candidate {
    char name[48];                 /* "zb-h1 (given)", "zb-auto, 9 in flight" */
    double limit;                  /* in-flight limit in M_B units; 0 for the given order */
    offload_solve_status status;
    double model_makespan_s;       /* the MILP's estimate (meaningless when infeasible) */
    int fits;                      /* the plan fits the capacity */
} offload_order_candidate;

typedef struct offload_order_result {
    int n;                         /* candidates tried */
    int chosen;                    /* index into cand, -1 if none fits (the given order is kept) */
    int searched;                  /* 0: the schedule has several stages per rank, its order was kept */
    offload_order_candidate cand[OFFLOAD_ORDER_MAX_CANDIDATES];
} offload_order_result;

/* Plan the given order (in->sched) and, for one stage per rank, the zb-auto
 * orders from params (the job's generator parameters; its mem_limit is
 * overridden).  On success *best receives a copy of the chosen order
 * (sched_free it), *plan and *pres its offload plan, *ores the table.  When
 * no candidate fits, the given order and its plan are returned (the
 * simulation then reports the OOM, as offload=plan does).  Errors:
 * PG_EXIT_INPUT (as offload_plan_build). */
int offload_order_search(const offload_plan_input *in, const sched_params *params, schedule *best, memplan *plan,
                         offload_plan_result *pres, offload_order_result *ores, pg_status *st);

#endif
