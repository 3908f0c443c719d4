/* gen_gish.c: PipeOffload's group-interleaved 1F1B with its smallest group
 * (GIS-H): ceil(pp/2) microbatches, or more when the stage times need it;
 * rank 0 holds G(v-1) + pp chunk activations (group_interleaved.h). */
#include "schedule/generators.h"
#include "schedule/group_interleaved.h"

int sched_gen_gish(const sched_params *p, schedule *out, pg_status *st)
{
    return group_interleaved_build(p, group_interleaved_min_group(p), "gis-h", out, st);
}
