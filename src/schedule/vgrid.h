/* vgrid.h: a V building block turned into an order on the unit slot grid,
 * the way seed B (PPCM) describes it: repeat, reorder warm-up and cool-down
 * inside the grid, squeeze, then fill the weight gradients.
 *
 * Every pass costs one slot and messages are free while the grid is being
 * arranged; only the final order is timed with the real costs (by the
 * caller).  Steps, on slot times per rank and pass kind:
 *   1. repeat the block every VB_PERIOD slots for each microbatch and put
 *      each W in the first free slot after its B (W's of the first backward
 *      chunk first);
 *   2. warm-up and cool-down reorder: visiting passes in slot order, move a
 *      pass to the earliest free slot after everything it waits for, unless
 *      that would raise the rank's live-activation count (F +1, W -1) above
 *      the largest peak any rank had before; the steady state (from the first
 *      microbatch's last backward on rank 0 to the first last forward) stays;
 *   3. squeeze (every pass as early as its order allows, unit costs);
 *   4. drop the W's and reorder the cool-down again, now counting W's as
 *      filling free slots; squeeze again;
 *   5. put the W's of each chunk back in free slots.
 * The result keeps the block's peak (or the largest one over ranks) and
 * loses the idle slots the repeated block leaves in warm-up and cool-down.
 * Time and memory are linear in the number of slots plus the moves, each
 * move costing the distance it travels.
 */
#ifndef PG_SCHEDULE_VGRID_H
#define PG_SCHEDULE_VGRID_H

#include "schedule/schedule.h"
#include "schedule/vblock.h"

/* Append the order to out (sched_init'ed with v = 2, sched_place_v, no ops).
 * Returns 0, or PG_EXIT_INTERNAL if the block collides or a pass would wait
 * for one placed after it (a malformed block). */
int vgrid_build(const int (*slot)[VB_PASSES], schedule *out, pg_status *st);

#endif
