/* zbauto_heur.h: the microbatch-sweep heuristic of the zero-bubble paper's
 * automatic scheduler (ZB-1p / ZB-2p, Qi et al. ICLR 2024, sec. 3.1), as a
 * candidate order for zb-auto.
 *
 * Unlike the event-driven greedy list scheduler (greedy_list.h) it builds the
 * order microbatch by microbatch, every stage in a fixed order, which is what
 * lets it shape the warm-up the paper's way:
 *   1. warm-up: one forward per stage, then, from the last stage back, as
 *      many forwards as fit (memory) before the first backward can arrive
 *      (optionally one more that overruns it: "bubble before the first B"),
 *      trimmed so every stage has strictly fewer than the stage before it;
 *      then the first backward on every stage, last stage first;
 *   2. rounds, one per microbatch: every stage that may do so puts one
 *      forward (first stage to last), then every stage puts the round's
 *      backward (last stage to first).  Optionally ("prioritize B") a stage
 *      two or more forwards ahead of the next one skips its forward when it
 *      would delay the next stage's forward-and-backward beyond the bubble
 *      it may still take; a skipping stage makes every earlier stage skip;
 *   3. before each forward or backward, deferred W's go in when memory
 *      requires it or when they fit in the wait for the input; a W that
 *      would overrun the wait goes in when the wait exceeds the stage's
 *      bubble allowance (largest bubble any stage has minus its own), and
 *      otherwise only under "no-bubble greedy";
 *   4. the remaining W's.
 * The three binary options give the 8 variants; the caller keeps the best.
 *
 * Memory is counted per stage with the deltas mem[] (zero-bubble accounting
 * in M_B units: F +1, B -(1 - w_fraction), W -w_fraction) against limit.
 */
#ifndef PG_SCHEDULE_ZBAUTO_HEUR_H
#define PG_SCHEDULE_ZBAUTO_HEUR_H

#include "schedule/schedule.h"

/* Number of option combinations (variant indexes 0 .. ZBAUTO_VARIANTS-1). */
#define ZBAUTO_VARIANTS 8

/* Append variant `variant`'s order to out (sched_init'ed with v = 1,
 * contiguous placement, no ops) and set *span_s (largest per-rank span) and
 * *makespan_s as the ideal evaluator would compute them (so a caller can
 * rank the variants without evaluating each).  Returns 0, or -1 when the
 * variant cannot keep a stage within the limit (out may then hold a partial
 * order: the caller frees it). */
int zbauto_heur_build(const sched_params *p, const double mem[OP_KIND_COUNT], double limit, int variant,
                      schedule *out, double *span_s, double *makespan_s);

#endif
