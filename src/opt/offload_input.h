/* offload_input.h: what the offload / recompute planner reads
 * (offload_milp.h says what it plans from it): a plain type, its own
 * module so that the planner's model (offload_internal.h, offload_model.c)
 * and its entry point (offload_milp.c) both depend on it and not on each
 * other's headers. */
#ifndef PG_OPT_OFFLOAD_INPUT_H
#define PG_OPT_OFFLOAD_INPUT_H

#include "model/experiment.h"
#include "model/platform.h"
#include "model/workload.h"
#include "schedule/schedule.h"

/* What the planner may choose, and what it knows about the job. */
typedef struct offload_plan_input {
    const experiment *exp;      /* capacity, bytes per param, zero1, dp, network, pcie */
    const schedule *sched;
    const workload *wl;
    const platform_desc *plat;
    const int *rank_gpu;        /* [pp] */
    int allow_offload;          /* 0: recompute only */
    int allow_recompute;        /* 0: offload only; 1: also selective recompute; 2: also full */
    double milp_time_limit_s;   /* the MILP's time limit (work units under PIPEGRID_DETERMINISTIC, opt/workclock.h;
                                   offload.time_limit, OFFLOAD_MILP_TIME_LIMIT_S by default); 0: greedy only */
    int copy_uncontended;       /* 1: a copy gets its whole PCIe route; 0: the route divided among the pipeline
                                   ranks behind the same uplink (conservative: as if they always copied at once) */
} offload_plan_input;

#endif
