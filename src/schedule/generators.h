/* generators.h: private to the schedule layer: one prototype per generator
 * file gen_<name>.c.  Adding a schedule = one gen file, one line here and one
 * line in registry.c's table. */
#ifndef PG_SCHEDULE_GENERATORS_H
#define PG_SCHEDULE_GENERATORS_H

#include "schedule/schedule.h"

int sched_gen_gpipe(const sched_params *p, schedule *out, pg_status *st);
int sched_gen_1f1b(const sched_params *p, schedule *out, pg_status *st);
int sched_gen_interleaved(const sched_params *p, schedule *out, pg_status *st);
int sched_gen_zbh1(const sched_params *p, schedule *out, pg_status *st);
int sched_gen_zbh2(const sched_params *p, schedule *out, pg_status *st);
int sched_gen_zbv(const sched_params *p, schedule *out, pg_status *st);
int sched_gen_vhalf(const sched_params *p, schedule *out, pg_status *st);
int sched_gen_vmin(const sched_params *p, schedule *out, pg_status *st);
int sched_gen_vzb(const sched_params *p, schedule *out, pg_status *st);
int sched_gen_zbauto(const sched_params *p, schedule *out, pg_status *st);
int sched_gen_hanayo(const sched_params *p, schedule *out, pg_status *st);
int sched_gen_gis(const sched_params *p, schedule *out, pg_status *st);
int sched_gen_gish(const sched_params *p, schedule *out, pg_status *st);
int sched_gen_dualpipev(const sched_params *p, schedule *out, pg_status *st);

#endif
