/* draw.h: a schedule drawn in the terminal the way the papers draw it.
 *
 * One line per rank ("rank R |...|"), time running left to right over
 * width_cols columns; each op is a block as wide as its duration, starting
 * with its kind and microbatch (F3, B3 = input backward, W3, BW3 = fused
 * backward) and padded with a per-kind fill character so kinds stay
 * distinguishable without colour ('-' F, '=' B, '~' W, '#' BW); idle time is
 * '.'.  With use_color, blocks get ANSI background colours per kind
 * (brighter for later chunks of a rank).  A legend with the time scale ends
 * the drawing.  times may be NULL: the ideal times with F = B = W = 1 are
 * used.  Blocks narrower than one column still get one, so very small
 * widths can hide short ops; the drawing is for people, not for parsing.
 */
#ifndef PG_SCHEDULE_DRAW_H
#define PG_SCHEDULE_DRAW_H

#include "schedule/schedule.h"
#include "util/strbuf.h"

/* Used when width_cols <= 0. */
#define SCHED_DRAW_DEFAULT_COLS 100

void sched_draw(const schedule *s, const sched_times *times, int use_color, int width_cols, strbuf *out);

#endif
