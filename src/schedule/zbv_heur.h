/* zbv_heur.h: the ZB-V construction heuristic of the zero-bubble paper
 * (arXiv version, sec. on ZB-V), as a candidate order for the V generators.
 *
 * Unlike the event-driven greedy list scheduler (greedy_list.h) it builds the
 * schedule round by round in a fixed rank order, which is what lets it shape
 * the warm-up the paper's way:
 *   1. one chunk-0 forward per rank, then, from the last rank back to the
 *      first, as many chunk-0 forwards as fit before the chunk-1 forward
 *      arrives (leaving room for the 2i+2 activations rank i still needs),
 *      then that chunk-1 forward;
 *   2. forwards of both chunks, alternately, until every rank has at least
 *      the forwards of the rank before it;
 *   3. rounds: every rank puts one backward (the chunk whose gradient is
 *      there, second chunk first), then one forward; a deferred W is put
 *      before either when it fits in the wait for its input, or when the
 *      wait is longer than the rank's allowance of bubble (the largest bubble
 *      any rank already has, or was approved in an earlier run), and
 *      whenever the memory limit requires it;
 *   4. the remaining W's.
 * The run is repeated with the bubbles of the previous run as allowances
 * while the largest per-rank bubble shrinks, for the four combinations of
 * "fill the wait before a forward / before a first-chunk backward with a W".
 *
 * Memory is the F-until-W count in chunk units: F +1, W -1, limit given in
 * stage units (two chunks).
 */
#ifndef PG_SCHEDULE_ZBV_HEUR_H
#define PG_SCHEDULE_ZBV_HEUR_H

#include "schedule/schedule.h"

/* Append the best order found to out (sched_init'ed with v = 2, placement
 * sched_place_v, no ops), durations per chunk op.  Returns 0, or -1 when no
 * combination completes within the limit (out then has no ops). */
int zbv_heur_build(const sched_params *p, double limit_stages, schedule *out);

#endif
