/* vblock.h: V-shape schedules from a repeated building block (seed B, PPCM).
 *
 * A building block gives, for every rank i of a V placement (rank i holds
 * stages i and 2pp-1-i), the slot of the four passes of microbatch 0:
 *   slot[i][VB_F0]  F of stage i          (chunk 0, flows rank 0 -> pp-1)
 *   slot[i][VB_F1]  F of stage 2pp-1-i    (chunk 1, flows rank pp-1 -> 0)
 *   slot[i][VB_B1]  B of stage 2pp-1-i    (first backward, rank 0 -> pp-1)
 *   slot[i][VB_B0]  B of stage i          (rank pp-1 -> 0)
 * Slots are unit time steps; microbatch j repeats the block VB_PERIOD slots
 * later (six passes per rank per microbatch: F F B B W W).  Each deferred W
 * takes the first free slot after its B.  Sorting each rank's passes by slot
 * gives its order; executing that order as early as the dependencies allow
 * is the paper's "squeeze".  The block's lifespans (F start to W end) fix
 * the peak activation count, which is why the offsets between adjacent ranks
 * (the paper's delta) are the memory knob.
 */
#ifndef PG_SCHEDULE_VBLOCK_H
#define PG_SCHEDULE_VBLOCK_H

#include "schedule/schedule.h"

enum { VB_F0 = 0, VB_F1, VB_B1, VB_B0, VB_PASSES };

/* Slots per repetition: F, F, B, B, W, W of one microbatch on one rank. */
#define VB_PERIOD 6

/* Append to out (sched_init'ed with v = 2 and sched_place_v, no ops) the
 * order given by the block slot[pp][VB_PASSES].  Returns 0, or
 * PG_EXIT_INTERNAL if two passes of a rank share a slot modulo VB_PERIOD. */
int vblock_build(const int (*slot)[VB_PASSES], schedule *out, pg_status *st);

#endif
