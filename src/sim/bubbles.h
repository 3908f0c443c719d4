/* bubbles.h: why each GPU was idle (plain data, no SimGrid).
 *
 * Every idle gap of a rank (between the end of one op and the start of the
 * next, inside its span) is split by cause, from the timeline alone:
 *   reload     the op waited for its activation's H2D copy (a recorded stall);
 *   comm       its input was produced on another rank and was in flight
 *              (from the producer's end to the arrival of the transfer);
 *   warmup     waiting for another rank's compute before this rank's first
 *              backward: the pipeline filling;
 *   cooldown   the same after this rank's last forward: the pipeline draining;
 *   steady     the same in between (a schedule that does not keep the rank busy).
 * The five add up to the rank's idle time (span - busy).  The input of
 * the first op of a combined step (sim.h combined_pairs: it starts once both
 * ops' inputs are in) is the later of the two ops' inputs.
 */
#ifndef PG_SIM_BUBBLES_H
#define PG_SIM_BUBBLES_H

#include "schedule/schedule.h"
#include "sim/timeline.h"

typedef struct bubble_breakdown {
    double warmup_s;
    double cooldown_s;
    double steady_s;
    double comm_s;
    double reload_s;
} bubble_breakdown;

/* out[pp], filled for every rank. */
void bubbles_compute(const schedule *s, const timeline *tl, bubble_breakdown *out);

double bubble_total_s(const bubble_breakdown *b);

#endif
