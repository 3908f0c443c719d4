/* reorder.h: improve a planned order by letting ready ops overtake.
 *
 * The building-block schedules (vblock.h) fix each rank's order; executing it
 * as is leaves idle time whenever the planned next op waits for a message
 * while a later one is already ready.  reorder_ready replays the plan in the
 * ideal timing model and, when a rank is free, runs the first op of its
 * remaining plan (within a look-ahead window) that is ready, provided a
 * forward does not raise the rank's activation count (F +mem[F], W +mem[W],
 * B +mem[B]) above mem_limit.  This is the paper's "reorder without raising
 * the peak memory", done greedily in one pass.
 */
#ifndef PG_SCHEDULE_REORDER_H
#define PG_SCHEDULE_REORDER_H

#include "schedule/schedule.h"

typedef struct reorder_cost {
    double dur_s[OP_KIND_COUNT];   /* duration of one stage op */
    double t_comm_s;
    double mem[OP_KIND_COUNT];     /* activation delta, stage units */
    double mem_limit;              /* stage units per rank */
    int window;                    /* ops of the plan considered ahead of the first */
} reorder_cost;

/* Reads plan, writes the new order into out (sched_init'ed like plan, no
 * ops).  Returns 0, or PG_EXIT_DEADLOCK if the greedy replay got stuck (the
 * caller then keeps the plan). */
int reorder_ready(const schedule *plan, const reorder_cost *c, schedule *out, pg_status *st);

/* Peak activation count over ranks of an order (F/B/W/BW deltas of c). */
double reorder_peak(const schedule *s, const reorder_cost *c);

#endif
