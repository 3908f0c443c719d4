/* offload_ladder.h: offload=plan never does worse with more memory (seed C,
 * OptPipe; issue 16).
 *
 * Why.  The planner (offload_order.h over offload_milp.h) plans against a
 * capacity and its judge simulates what it planned; but the MILP is
 * node-limited and its copy model approximate, so a plan made for a larger
 * capacity, which uses the room it is given, can simulate slower than one
 * made for less room that would also fit (the case: 33.25 s at
 * 40 GiB where the 32 GiB plan runs 31.75 s at 31.3 GiB).  More memory must
 * never cost time.
 *
 * Contract.  offload_ladder_choose plans at the job's capacity C and at
 * every rung of a fixed capacity grid below it (OFFLOAD_LADDER_RUNGS_PER_
 * OCTAVE rungs per doubling, anchored at 1 GiB: 2^(i/4) GiB), from the
 * largest down, stopping at the first rung where nothing fits (less room
 * fits even less, the planner's own verdict) or after max_rungs rungs (at
 * most OFFLOAD_LADDER_MAX_RUNGS; the key offload.capacities).  Every rung's
 * chosen plan is judged at C (the judge is the caller's: the job's
 * capacity), and the least judged makespan runs; ties go to the larger
 * capacity (C's own plan first).  So the plan that runs is never slower
 * than any plan considered at a smaller capacity, in particular than the
 * plans made for the max_rungs grid capacities just below C.  With enough
 * rungs to reach the capacity where nothing fits, the run at C considers
 * every rung the run at a smaller grid capacity C' considers, and C' itself:
 * offload=plan is then monotone over the grid.  Each rung costs a full
 * planning (the MILP is slowest where memory is tightest), so the default
 * is a few rungs: the guarantee is then over those.  Without a judge rungs
 * are ranked by the MILP's estimate.
 *
 * Early stop.  A caller that knows a floor, a makespan no plan on this
 * order can beat (the order simulated with no memory plan and no capacity
 * limit: a plan only adds copies, stalls and recomputation to a fixed
 * order), passes it in stop->floor_s, with the makespan of a plan it will
 * weigh beside the ladder's (stop->incumbent_s, e.g. PipeOffload's rules).
 * Once the best judged makespan so far, or the incumbent, is at most the
 * floor, no rung below can run faster, and the ladder plans no more rungs
 * (stopped_at_floor): the guarantee above still holds, at no planning cost
 * for the tight rungs where the MILP is slowest.
 */
#ifndef PG_OPT_OFFLOAD_LADDER_H
#define PG_OPT_OFFLOAD_LADDER_H

#include "opt/offload_order.h"

#define OFFLOAD_LADDER_RUNGS_PER_OCTAVE 4
#define OFFLOAD_LADDER_MAX_RUNGS 12
#define OFFLOAD_LADDER_ANCHOR_BYTES (1024.0 * 1024.0 * 1024.0)

typedef struct offload_ladder_result {
    int nrungs;                                          /* capacities planned, the job's first */
    double capacity_bytes[OFFLOAD_LADDER_MAX_RUNGS + 1];
    double makespan_s[OFFLOAD_LADDER_MAX_RUNGS + 1];     /* the rung's chosen plan, judged at the job's capacity;
                                                            INFINITY: nothing fits */
    int chosen;                                          /* the rung whose plan runs */
    int stopped_at_floor;                                /* 1: rungs left unplanned, the floor reached */
} offload_ladder_result;

/* The early stop (header); NAN or INFINITY fields: none. */
typedef struct offload_ladder_stop {
    double floor_s;       /* no plan on this order runs faster */
    double incumbent_s;   /* a plan the caller weighs beside the ladder's */
} offload_ladder_stop;

/* The grid rungs strictly below capacity_bytes, largest first, at most max:
 * returns how many were written to rungs. */
int offload_ladder_rungs(double capacity_bytes, double *rungs, int max);

/* As offload_order_choose (same outputs, *ores being the chosen rung's
 * table), over the ladder; capacity_bytes is the job's capacity (> 0);
 * stop may be NULL (no early stop). */
int offload_ladder_choose(const offload_order_input *in, double capacity_bytes, int max_rungs,
                          const offload_ladder_stop *stop, schedule *best, memplan *plan, offload_plan_result *pres,
                          offload_order_result *ores, offload_ladder_result *lres, pg_status *st);

#endif
