/* vshape_common.h: what the V-shape, wave and zero-bubble generators share.
 *
 * vs_greedy runs the greedy list scheduler (greedy_list.h) under a list of
 * policies and keeps the order with the smallest span (ties: makespan), or
 * the other way round when spec->by_makespan.  The
 * number of policies tried shrinks with the instance size so that generating
 * any schedule stays well under a second at pp = 64, m = 1024: the policies
 * that won on the reference cases come first.
 *
 * vs_keep offers a candidate schedule built some other way (a building block,
 * a reordering) and keeps it if it is valid, within the memory limit and
 * better.  Memory in both is counted per rank in stage-activation units with
 * the deltas of spec->mem.
 */
#ifndef PG_SCHEDULE_VSHAPE_COMMON_H
#define PG_SCHEDULE_VSHAPE_COMMON_H

#include "schedule/schedule.h"

typedef struct vs_spec {
    const char *name;
    int v;                          /* stages per rank */
    void (*place)(schedule *);      /* placement */
    int split;                      /* B/W (1) or fused BW (0) */
    double mem[OP_KIND_COUNT];      /* activation delta of one stage op, stage units */
    double limit;                   /* per rank, stage units */
    int by_makespan;                /* rank candidates by makespan first (else by span) */
} vs_spec;

/* The running best of one generator call. */
typedef struct vs_best {
    schedule s;          /* valid once have != 0 */
    double span_s, makespan_s, peak;
    int have;
} vs_best;

/* Per-op durations of sched_params p for a rank holding v stages. */
void vs_durations(const sched_params *p, int v, double dur_s[OP_KIND_COUNT]);

/* An empty schedule with spec's shape and placement. */
void vs_empty(const sched_params *p, const vs_spec *spec, schedule *s);

/* Peak over ranks of the running sum of mem[kind] along each rank's order. */
double vs_peak(const schedule *s, const double mem[OP_KIND_COUNT]);

/* Greedy candidates into best.  PG_EXIT_INPUT if the limit cannot hold one
 * microbatch. */
int vs_greedy(const sched_params *p, const vs_spec *spec, vs_best *best, pg_status *st);

/* Offer cand (ownership passes to the callee: kept or freed). */
void vs_keep(const sched_params *p, const vs_spec *spec, vs_best *best, schedule *cand);

/* Move the best into out (or fail if there is none) and reset best. */
int vs_finish(vs_best *best, schedule *out, pg_status *st);

#endif
