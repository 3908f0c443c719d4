/* group_interleaved.h: PipeOffload's group-interleaved 1F1B (GIS), the
 * schedule its offloading runs on (seed 003, arXiv 2503.01328).
 *
 * An interleaved 1F1B over v chunks (looping placement, stage c*p + r on
 * rank r) in which microbatches go in groups of G: the building block of one
 * group places, on rank d, each forward, input-gradient and weight-gradient
 * pass in a slot (F of chunk c, group member g at 3Gc + 3g + d; its B, the
 * chunks in reverse, 3(p - 1 - d) + 1 slots after the last chunk's first
 * forward, and W right after its B) and consecutive groups repeat it 3Gv
 * slots apart.  Each rank runs its ops in slot order; the simulator (or the
 * ideal evaluator) times them.  Rank 0 then holds at most G(v-1) + p chunk
 * activations (PipeOffload's Table 1): with G = p that is pv (GIS), with
 * G = ceil(p/2) (GIS-H) about (v+1)p/2, and its first chunk's activations
 * live longest, which is what selective offload moves to host memory.
 * With all passes of one slot, m = 2p, v = 2: 54 slots at p = 4, G = 4 and
 * 56 at G = 2 (the reference generator's counts).
 */
#ifndef PG_SCHEDULE_GROUP_INTERLEAVED_H
#define PG_SCHEDULE_GROUP_INTERLEAVED_H

#include "schedule/schedule.h"

/* The smallest group PipeOffload allows: ceil(p/2), raised until one rank's
 * F+B+W of a group covers the whole pipeline's forwards (and backwards):
 * G (t_f + t_b + t_w) >= max(p t_f, p t_b); never above p. */
int group_interleaved_min_group(const sched_params *p);

/* The schedule with group size g (1 <= g <= pp), named name. */
int group_interleaved_build(const sched_params *p, int g, const char *name, schedule *out, pg_status *st);

#endif
