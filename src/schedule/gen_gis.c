/* gen_gis.c: PipeOffload's group-interleaved 1F1B with groups of pp
 * microbatches (GIS): rank 0 holds pv chunk activations (group_interleaved.h). */
#include "schedule/generators.h"
#include "schedule/group_interleaved.h"

int sched_gen_gis(const sched_params *p, schedule *out, pg_status *st)
{
    return group_interleaved_build(p, p->pp, "gis", out, st);
}
