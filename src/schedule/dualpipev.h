/* dualpipev.h: DualPipeV's order (gen_dualpipev.c), private to the schedule
 * layer so the V-family generators can offer it as a candidate.
 *
 * b_first: run each of DualPipeV's overlapped forward+backward pairs as B
 * then F (else F then B); both are sequentialisations of one overlapped
 * step, the first keeps one chunk activation less alive.  Fills out (which
 * must be zeroed/unused) and names it `name`; PG_EXIT_INPUT if m < 2pp. */
#ifndef PG_SCHEDULE_DUALPIPEV_H
#define PG_SCHEDULE_DUALPIPEV_H

#include "schedule/schedule.h"

int dualpipev_build(const sched_params *p, int b_first, const char *name, schedule *out, pg_status *st);

#endif
