/* offload_order.h: which plan offload=plan runs: its copy model and, with
 * offload.order=search, its op order (seed C, OptPipe: the order is decided
 * together with what to offload and recompute).
 *
 * Copy model.  The MILP (offload_milp.h) cannot know how often the copies
 * of two GPUs behind one PCIe uplink will overlap: it either divides the
 * uplink among them (as if they always copied at once; often pessimistic)
 * or gives each copy the whole route (as if they never did).  Nor does its
 * memory model see a copy wait behind earlier ones on its engine, so a plan
 * with many copies can run out of memory in the simulation.  Each candidate
 * order is therefore planned up to four ways (uplink shared, whole, offload
 * alone, which a pessimistic copy model would otherwise trade for
 * recomputation, and no offload at all: recomputation alone, whose memory
 * the model gets exactly right), and the caller's judge (the CLI simulates
 * each plan in a forked process) says which fit and which runs fastest.
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
 * So the search is a documented heuristic around the MILP: the candidate
 * orders are the schedule's own and, with search, zb-auto's for L = pp,
 * pp + 1, ..., 2 pp (ZB-H1's memory to ZB-H2's); each gets its plans
 * from the MILP (node-limited, so deterministic); a plan that does
 * not fit is dropped (by the MILP's status, or by the judge: out of memory
 * in the simulation); the least makespan wins (the judge's when given,
 * else the MILP's estimate; ties: the earlier candidate, the given order's
 * conservative plan first).  Scope of the order search: one stage per rank
 * (the given order may be any v = 1 schedule); a multi-stage schedule keeps
 * its order (the result says so).
 */
#ifndef PG_OPT_OFFLOAD_ORDER_H
#define PG_OPT_OFFLOAD_ORDER_H

#include <math.h>

#include "opt/offload_milp.h"

/* Largest in-flight limit tried, in multiples of pp (ZB-H2's memory). */
#define OFFLOAD_ORDER_MAX_LIMIT_PP 2
#define OFFLOAD_ORDER_MAX_ORDERS 130      /* 1 + pp + 1 for pp <= 128 */
#define OFFLOAD_ORDER_MAX_CANDIDATES (OFFLOAD_COPY_MODELS * OFFLOAD_ORDER_MAX_ORDERS)

/* How the MILP sees copies (offload_milp.h's copy_uncontended), or none. */
typedef enum {
    OFFLOAD_COPIES_SHARED,         /* the uplink divided among the GPUs behind it */
    OFFLOAD_COPIES_WHOLE,          /* each copy has the whole route */
    OFFLOAD_COPIES_ONLY,           /* uplink shared, offload alone (no recompute; when recompute is allowed) */
    OFFLOAD_COPIES_NONE,           /* no offload: recomputation alone (when allowed) */
    OFFLOAD_COPY_MODELS
} offload_copy_model;

/* The makespan a plan runs at (simulated), or INFINITY when it runs out of
 * memory or cannot complete. */
typedef double (*offload_judge_fn)(void *ctx, const schedule *s, const memplan *plan);

typedef struct offload_order_candidate {
    char name[48];                 /* "zb-h1 (given)", "zb-auto, 9 in flight" */
    double limit;                  /* in-flight limit in M_B units; 0 for the given order */
    int copy_model;                /* offload_copy_model */
    offload_solve_status status;
    double model_makespan_s;       /* the MILP's estimate */
    double judged_makespan_s;      /* the judge's; INFINITY: does not fit; NAN: not judged */
    int fits;                      /* the plan fits the capacity (the judge's word when given) */
} offload_order_candidate;

typedef struct offload_order_result {
    int n;                         /* candidates tried */
    int chosen;                    /* index into cand, -1 if none fits (the given order's first plan is kept) */
    int searched;                  /* orders were searched (search asked and one stage per rank) */
    offload_order_candidate cand[OFFLOAD_ORDER_MAX_CANDIDATES];
    /* offload_ladder.h: the capacity the chosen plan was made for (0: the
     * job's; no ladder ran) and how many capacities were planned */
    double planned_capacity_bytes;
    double job_capacity_bytes;     /* the capacity the ladder started from */
    int ladder_rungs;
} offload_order_result;

typedef struct offload_order_input {
    offload_plan_input plan;       /* plan.sched = the given order; plan.copy_uncontended is set per candidate */
    const sched_params *params;    /* the job's generator parameters (mem_limit is overridden); NULL: no search */
    int search;                    /* 1: also zb-auto's orders (offload.order=search) */
    offload_judge_fn judge;        /* NULL: rank by the MILP's estimate */
    void *judge_ctx;
} offload_order_input;

/* On success *best receives a copy of the chosen order (sched_free it),
 * *plan and *pres its offload plan, *ores the table.  When no candidate
 * fits, the given order and its first plan are returned (the simulation
 * then reports the OOM, as offload=plan does).  Errors: PG_EXIT_INPUT (as
 * offload_plan_build). */
int offload_order_choose(const offload_order_input *in, schedule *best, memplan *plan, offload_plan_result *pres,
                         offload_order_result *ores, pg_status *st);

#endif
