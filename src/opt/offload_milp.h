/* offload_milp.h: the offload / recompute planner (offload=plan), an
 * OptPipe-style MILP (seed C) in GLPK over a fixed schedule.
 *
 * Contract.  offload_plan_build() decides, for every (stage, microbatch) of
 * a schedule, one of six options: keep, recompute (selective | full),
 * offload, offload + recompute (selective | full), so that every rank's
 * memory (static + activations + the running op's workspace) stays within
 * its capacity, minimising the makespan.  Bytes and seconds of an option
 * are the simulator's (sim/actmem.h's act_flow_of on a one-entry plan), and
 * the copy rules are the engine's (sim/engine.c's header): a D2H copy starts
 * after F on the rank's D2H engine, the H2D copy on its H2D engine at the
 * engine's prefetch trigger, the consumer (R, else B / BW) waits for it,
 * and an activation whose window is shorter than twice the copy time is
 * never offloaded (the engine would skip it).
 *
 * Model (a MILP, the skeleton of seeds.md's seed C with the order fixed):
 *   - binaries x[item, option] (one option per item; keep is the slack);
 *   - continuous end time of every op in its rank's fixed order, D2H and H2D
 *     end times per offloadable item, makespan C;
 *   - durations: B / BW gain the recompute of the chosen option;
 *   - precedences of schedule.h, plus a transfer time on cross-rank edges;
 *   - copy engines: one D2H and one H2D chain per rank, served in F order and
 *     consumer order; PCIe bandwidth as a resource: a copy lasts bytes /
 *     (route bandwidth / pipeline ranks sharing the PCIe-switch uplink), or
 *     bytes / route bandwidth with copy_uncontended (the simulator shares an
 *     uplink only while copies overlap, so neither is exact: offload=plan
 *     plans both and keeps the one the simulation finds faster,
 *     offload_order.h);
 *   - memory, in op-index space (linear): an offloaded activation is off the
 *     GPU from the first op that starts after its D2H can have ended (back-
 *     to-back compute after F) to the engine's trigger op of its reload;
 *     every op's memory <= capacity - static - workspace;
 *   - objective: min C, plus a tie-break of 1e-3 of the time each option
 *     spends (so nothing is offloaded or recomputed for nothing).
 * What may be chosen: offload (allow_offload) and recompute up to
 * allow_recompute; `offload=plan` passes the recompute key as that ceiling
 * (none: offload or keep; selective: + selective; full: all six).
 * The order (microbatch order) is the schedule's: the choice among orders
 * is offload_order.h's.
 *
 * Scale.  A greedy heuristic (longest-window offloads first, then
 * selective, then full recompute, at the first op over budget) gives the
 * first incumbent.  Instances above OFFLOAD_MILP_MAX_BINARIES binaries keep
 * the greedy plan; others run GLPK's branch and bound for at most
 * OFFLOAD_MILP_MAX_NODES nodes (a node count, not a time, so that `run`
 * replays the same plan on any machine).  If nothing fits, the plan saves
 * all it can (the simulation then reports the OOM).
 *
 * Every plan is judged by the simulation: the model is conservative where
 * it can be and approximate where it must be (copy queueing shifts when
 * memory is freed), so the reported numbers are always the simulator's.
 */
#ifndef PG_OPT_OFFLOAD_MILP_H
#define PG_OPT_OFFLOAD_MILP_H

#include "opt/offload_input.h"
#include "schedule/plan.h"
#include "util/error.h"

#define OFFLOAD_MILP_MAX_BINARIES 2000
#define OFFLOAD_MILP_MAX_NODES 40
/* The default time limit of a planning's MILP, its LPs included (the key
 * offload.time_limit's 60s): on most instances the size cutoff lets through
 * the node limit ends it first; on the largest (DualPipeV's hundreds of
 * microbatches) each LP is slow and this ends it. */
#define OFFLOAD_MILP_TIME_LIMIT_S 60.0

typedef enum {
    OFFLOAD_SOLVED_OPTIMAL,     /* the MILP proved its plan optimal (in its model) */
    OFFLOAD_SOLVED_NODE_LIMIT,  /* best MILP incumbent at the node limit */
    OFFLOAD_SOLVED_HEURISTIC,   /* too large for the MILP: the greedy plan */
    OFFLOAD_SOLVED_NOTHING,     /* everything fits without any option */
    OFFLOAD_SOLVED_INFEASIBLE,  /* nothing fits: the plan saves all it can */
    OFFLOAD_SOLVED_PIPEOFFLOAD, /* not the MILP's: PipeOffload's rules on the given order (job/job_offload.c) */
    OFFLOAD_SOLVED_REMAT        /* not the MILP's: recompute=plan's rematerialization ILP alone (job/job_offload.c) */
} offload_solve_status;


typedef struct offload_plan_result {
    offload_solve_status status;
    double model_makespan_s;    /* the MILP's (or the greedy's) own estimate */
    int nbinaries, nrows;
    long nodes;
    int noffload, nrecompute;
} offload_plan_result;

/* Fill out (plan_init'ed inside; free with plan_free).  Returns 0, or
 * PG_EXIT_INPUT when the job has no capacity to plan against. */
int offload_plan_build(const offload_plan_input *in, memplan *out, offload_plan_result *res, pg_status *st);

const char *offload_solve_status_name(offload_solve_status s);

#endif
