/* gen_zbv.c: ZB-V (Qi et al., zero bubble PP, arXiv version).
 *
 * V placement, split backward, at most 1F1B's activation memory: pp stage
 * units per rank (2pp chunk activations), or memory.limit when one is given.
 * The order comes from the greedy list scheduler (greedy_list.h), which like
 * the paper's ZB-V heuristic runs B as soon as it is ready, F while memory
 * allows, and uses the deferred W to fill what would be idle time. */
#include "schedule/generators.h"
#include "schedule/vfamily.h"

int sched_gen_zbv(const sched_params *p, schedule *out, pg_status *st)
{
    double limit = p->mem_limit > 0.0 ? p->mem_limit : (double)p->pp;
    return vfamily_generate(p, "zb-v", limit, NULL, out, st);
}
