/* gen_vzb.c: the V-ZB family of seed B (controllable memory): V placement,
 * split backward, activation limit memory.limit in stage units (<= 0: 1F1B's
 * pp, where the family is bubble-free).  Less memory trades for bubble; the
 * greedy list scheduler finds the order under the given limit. */
#include "schedule/generators.h"
#include "schedule/vfamily.h"

int sched_gen_vzb(const sched_params *p, schedule *out, pg_status *st)
{
    double limit = p->mem_limit > 0.0 ? p->mem_limit : (double)p->pp;
    return vfamily_generate(p, "v-zb", limit, NULL, out, st);
}
