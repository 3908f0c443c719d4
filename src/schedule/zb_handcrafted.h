/* zb_handcrafted.h: private: the common shape of ZB-H1 and ZB-H2.
 *
 * Rank s runs `warmup(s)` forwards, then repeats: B of the oldest waiting
 * microbatch, a W if more than `lag(s)` weight gradients are pending, a
 * forward if any is left; the pending W's close the list.  Splitting B from W
 * lets the gradient travel up the pipeline at B speed while W fills what
 * would otherwise be bubbles. */
#ifndef PG_SCHEDULE_ZB_HANDCRAFTED_H
#define PG_SCHEDULE_ZB_HANDCRAFTED_H

#include "schedule/schedule.h"

/* warmup[s] and lag[s] for every rank s of p->pp; out is initialised here. */
void sched_zb_handcrafted(const sched_params *p, const char *name, const int *warmup, const int *lag, schedule *out);

#endif
