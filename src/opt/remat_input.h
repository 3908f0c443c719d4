/* remat_input.h: what the rematerialization planner reads (remat_ilp.h
 * says what it plans from it): a plain type, its own module so that the
 * planner's parts (remat_internal.h: the model, greedy, covers, LNS) and
 * its entry point (remat_ilp.c) both depend on it and not on each other's
 * headers. */
#ifndef PG_OPT_REMAT_INPUT_H
#define PG_OPT_REMAT_INPUT_H

#include "model/workload.h"
#include "schedule/schedule.h"

typedef struct remat_input {
    const schedule *sched;
    const workload *wl;            /* sched->nstages stages */
    const double *time_scale;      /* [pp] seconds per reference second on each rank; NULL = 1 */
    const double *budget_bytes;    /* [pp] activation bytes allowed on each rank (capacity - static) */
    double comm_s;                 /* latency of a cross-rank dependency */
    int no_selective;              /* 1: never choose selective forward recomputation */
    double time_limit_s;           /* GLPK's time; 0 = greedy only */
    double gap;                    /* relative MIP gap at which GLPK stops */
    const char *lp_path;           /* write the ILP (CPLEX LP format) here when built; NULL = nowhere */
} remat_input;

#endif
