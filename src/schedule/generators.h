/* generators.h: the schedule registry, private to the schedule layer.
 *
 * SCHED_REGISTRY has one row per schedule: its contract name, the suffix of
 * its generator function sched_gen_<fn> (defined in gen_<fn>.c), its flags
 * (schedule.h: SCHED_USES_CHUNKS, SCHED_OPTIMIZE_DEFAULT,
 * SCHED_REFINE_ZB_ILP, SCHED_EP_OVERLAP) and its one-line summary.  The row declares the
 * generator's prototype here and fills registry.c's table; everything else
 * that lists schedules (the `schedule` key's help, `pipegrid keys`,
 * `schedule list`, the unknown-schedule message, optimize's default
 * candidates, which keys apply) is derived from this table.  Adding a
 * schedule is its gen_<fn>.c (listed in local.am) and one row here.
 */
#ifndef PG_SCHEDULE_GENERATORS_H
#define PG_SCHEDULE_GENERATORS_H

#include "schedule/schedule.h"

#define SCHED_OPT SCHED_OPTIMIZE_DEFAULT
#define SCHED_REGISTRY(X) \
    X("gpipe", gpipe, SCHED_OPT, "GPipe: all forwards, then all fused backwards (peak m activations)") \
    X("1f1b", 1f1b, SCHED_OPT | SCHED_EP_OVERLAP, "1F1B (PipeDream-flush): warm-up forwards, one forward one backward, cool-down") \
    X("interleaved", interleaved, SCHED_OPT | SCHED_USES_CHUNKS | SCHED_EP_OVERLAP, \
      "Megatron interleaved 1F1B, chunks stages per rank (m a multiple of pp)") \
    X("zb-h1", zbh1, SCHED_OPT, "zero-bubble ZB-H1: split backward, W deferred, 1F1B memory") \
    X("zb-h2", zbh2, SCHED_OPT, "zero-bubble ZB-H2: split backward, extra warm-up forwards, 2p-1 activations") \
    X("zb-v", zbv, SCHED_OPT, "ZB-V: V placement, split backward, 1F1B memory (pp stage units), near-zero bubble") \
    X("v-half", vhalf, SCHED_OPT, "V-Half: V building block, (pp+2)//2 stage activations, about half 1F1B's bubble") \
    X("v-min", vmin, SCHED_OPT, "V-Min: V building block, (pp+4)//3 stage activations, about 2/3 of 1F1B's bubble") \
    X("v-zb", vzb, 0, "V-ZB family: V placement under memory.limit (default pp), less memory for more bubble") \
    X("zb-auto", zbauto, SCHED_REFINE_ZB_ILP, \
      "automatic zero-bubble schedule (greedy) under memory.limit in M_B (default pp = ZB-1p)") \
    X("hanayo", hanayo, SCHED_OPT | SCHED_USES_CHUNKS, "Hanayo: wave placement over chunks waves, fused backward, 1F1B memory") \
    X("gis", gis, SCHED_USES_CHUNKS, \
      "PipeOffload group-interleaved 1F1B, groups of pp microbatches, chunks stages per rank") \
    X("gis-h", gish, SCHED_USES_CHUNKS, \
      "PipeOffload group-interleaved 1F1B with its smallest group (~pp/2): less memory") \
    X("dualpipe-v", dualpipev, SCHED_OPT, "DeepSeek DualPipeV: V placement, bidirectional halves (m >= 2pp)")

#define SCHED_DECLARE(name, fn, flags, summary) int sched_gen_##fn(const sched_params *p, schedule *out, pg_status *st);
SCHED_REGISTRY(SCHED_DECLARE)
#undef SCHED_DECLARE

#endif
