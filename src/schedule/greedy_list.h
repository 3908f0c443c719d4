/* greedy_list.h: memory-bounded greedy list scheduling of F/B/W ops.
 *
 * The shared engine behind the cost-aware generators (zb-v, v-half, v-min,
 * v-zb, zb-auto, hanayo).  It simulates the papers' ideal timing model
 * (schedule.h: an op starts at max(rank free, predecessor end + t_comm if the
 * predecessor is on another rank)) and, every time a rank becomes free, picks
 * the next op for that rank among the ready ones by a small policy: B before
 * F (or not), which stage first, when to fill idle time with a deferred W.
 * Because the simulated times are exactly the ideal evaluator's, the order it
 * emits evaluates to the span/makespan it reports.
 *
 * Memory is counted per rank in stage-activation units with per-op deltas
 * (F +, B -, W -: the zero-bubble accounting, or F +, W - for the "F until W"
 * count).  An F is admitted only if the rank stays within mem_limit *and*
 * keeps room for the later-chunk forwards of every microbatch it has
 * started: that reservation is what makes every limit >= v * mem[F] free of
 * memory deadlock (the earliest unfinished microbatch can always advance).
 *
 * The caller owns `out`: it must be sched_init'ed with its placement filled
 * and no ops; the engine appends ops.  Nothing here allocates anything that
 * outlives a call.
 */
#ifndef PG_SCHEDULE_GREEDY_LIST_H
#define PG_SCHEDULE_GREEDY_LIST_H

#include "schedule/schedule.h"

typedef struct gl_problem {
    int split;                     /* 1: B and W ops; 0: fused BW */
    double dur_s[OP_KIND_COUNT];   /* duration of one stage op (rank time / v) */
    double t_comm_s;               /* latency of a cross-rank dependency */
    double mem[OP_KIND_COUNT];     /* activation delta of one stage op, stage units */
    double mem_limit;              /* per rank, stage units; <= 0: unlimited */
    int w_lifo;                    /* deferred W taken newest first (else oldest first) */
} gl_problem;

typedef struct gl_policy {
    int f_first;     /* a ready, admitted F goes before a ready B */
    int b_high;      /* among ready B: highest stage first (else lowest) */
    int f_high;      /* among ready F: highest stage first (else lowest) */
    int w_eager;     /* fill any idle time with a deferred W, even past the next known ready op */
    int b_balance;   /* among ready B: the stage with fewer backwards done first (V: keep chunks in step) */
    int rhythm;      /* alternate F and B (one F, one B) when both are ready */
    int headroom;    /* warm-up: rank r keeps room for headroom * r extra forwards (see f_admitted) */
    int f_window;    /* > 0: at most this many microbatches in flight per rank (started F, BW/B not done on the first chunk) */
} gl_policy;

typedef struct gl_result {
    double span_s;      /* max over ranks of last end - first start */
    double makespan_s;  /* last end - first start over all ranks */
    double peak;        /* max over ranks of the peak of the counted memory */
} gl_result;

/* Run one policy.  0 on success, PG_EXIT_DEADLOCK if it got stuck (a bug or
 * an infeasible limit), PG_EXIT_INPUT if the limit cannot hold one
 * microbatch (limit < v * mem[F]). */
int gl_run(const gl_problem *pb, const gl_policy *pol, schedule *out, gl_result *res, pg_status *st);

/* Run every policy of pols[0..npol-1] and keep in `out` the one with the
 * smallest span, ties broken by makespan.  `out` is initialised as for
 * gl_run (placement filled, no ops). */
int gl_best(const gl_problem *pb, const gl_policy *pols, int npol, schedule *out, gl_result *res,
            pg_status *st);

/* The 2^6 combinations of the boolean knobs of gl_policy (headroom and
 * f_window 0), written into pols (which must hold GL_ALL_POLICIES); returns
 * the count. */
#define GL_ALL_POLICIES 64
int gl_all_policies(gl_policy *pols);

/* Move the ops of src into dst (dst freed first); src is left empty-initialised. */
void gl_take(schedule *dst, schedule *src);

#endif
