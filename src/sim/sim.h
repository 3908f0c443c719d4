/* sim.h: replay a schedule on a simulated cluster (the only SimGrid user).
 *
 * One SimGrid actor per pipeline rank replays that rank's op list on its
 * GPU host: each op is an execution of (time on the reference GPU x
 * reference speed) flops, so it lasts the profiled time scaled by the speed
 * ratio; an op starts once the messages it depends on have arrived.  After
 * an F the activation is sent to the next stage's rank, after a B (or BW)
 * the gradient to the previous stage's rank, as asynchronous transfers over
 * the platform's route that overlap with compute.  The network model is set
 * in code to SimGrid's exact one (CM02, no cross-traffic, no TCP window), so
 * a transfer takes route latency + bytes / bottleneck bandwidth, shared
 * fairly under contention.  A memory plan adds offload copies to host memory
 * (one D2H and one H2D copy engine per GPU) and recompute ops (engine.c).
 *
 * SimGrid allows one simulation per process: sim_run may be called once.
 */
#ifndef PG_SIM_SIM_H
#define PG_SIM_SIM_H

#include "model/platform.h"
#include "model/workload.h"
#include "schedule/plan.h"
#include "schedule/schedule.h"
#include "sim/timeline.h"
#include "util/error.h"

typedef struct sim_input {
    const schedule *sched;
    const workload *wl;
    const platform_desc *plat;
    const int *rank_gpu;       /* [pp] index into plat->gpu of each pipeline rank */
    int zero_byte_messages;    /* network=ideal: messages carry no bytes, only latency */
    const memplan *plan;          /* offload / recompute choices; NULL or empty: none (engine.c's header) */
} sim_input;

typedef struct sim_outcome {
    int completed;             /* 1 if every op ran */
    long ops_done, ops_total;
    char blocked[PG_MSG_MAX];  /* on deadlock: each blocked rank's next op and what it waits for */
    double wall_s;             /* host time spent in simgrid_run */
    long events;               /* executions + transfers simulated */
} sim_outcome;

/* Runs the simulation, filling tl.  Returns 0, PG_EXIT_DEADLOCK (with the
 * blocked ops in st and out->blocked), or PG_EXIT_INPUT for a platform SimGrid
 * refuses. */
int sim_run(const sim_input *in, timeline *tl, sim_outcome *out, pg_status *st);

#endif
