/* bound.h: lower bounds on the makespan of any pipeline schedule (seed 000,
 * "Mind Bubbles and Memory: Bounds on Scheduling Pipeline Parallelism with
 * Rematerialization").
 *
 * Contract.  bound_lower() returns a time no schedule can beat in the
 * simulator's ideal model, for a fixed placement of S = pp * v stages on pp
 * ranks (single-wave v = 1, or multi-wave: looping, V, wave...):
 *   - stage s has op times f[s], b[s], w[s] (seconds, per microbatch, per
 *     stage: a chunk of a rank with v chunks costs t/v); a fused backward
 *     BW(s) costs b[s] + w[s];
 *   - every dependency between stages on different ranks costs comm_s
 *     (F(s-1)->F(s), B(s+1)->B(s)); on one rank it is free; a rank runs one
 *     op at a time, in any order the schedule likes;
 *   - memory per rank is counted as the contract's memory.limit, the
 *     zero-bubble way, in stage-activation units M_B: F(s) adds 1/v at its
 *     start, B(s) releases (1 - w_fraction[s])/v at its end, W(s) releases
 *     the rest at its end (a fused BW releases all at its end); a schedule
 *     respects K when that count never exceeds K on any rank;
 *   - split = 1: the backward may be split into B and W (every fused
 *     schedule is also a split one, so this bounds both); split = 0: the
 *     bound only for fused-backward schedules (tighter for them);
 *   - remat = 1: any forward may keep nothing and recompute its activation
 *     by an op R(s) of cost f[s] on the same rank before B(s), the
 *     activation being held from R's start (seed 000's rematerialization;
 *     full recompute of a stage's forward).
 * Makespan is first op start to last op end (the contract's `makespan`).
 *
 * The bound is the largest of three relaxations (bound.c derives each):
 *   critical path  one microbatch's chain of ops;
 *   machine        per rank, the optimal preemptive one-machine schedule of
 *                  its ops with release times (heads) and delivery times
 *                  (tails) taken from the chain, memory ignored;
 *   memory         per rank, the activation-time area every microbatch must
 *                  occupy versus K times the time available (with the
 *                  integrality of activations, the W ops that need room,
 *                  and for remat the cheapest trade of recomputation).
 * Exact (bound_result.exact) where it is proven: single wave, no remat,
 * K below two activations' worth so that microbatches are serialised
 * (seed 000's K = 1 result: m * (p*(F+B) + W) with split backward,
 * m * p * (F+B+W) fused, plus 2(p-1) latencies per microbatch).  At K >= m
 * the memory constraint is void and the machine bound is the unconstrained
 * bound; the tests show the shipped schedules reach it (GPipe fused,
 * ZB-H2 split) on uniform stages.
 */
#ifndef PG_OPT_BOUND_H
#define PG_OPT_BOUND_H

#include "opt/bound_input.h"
#include "util/error.h"


typedef enum bound_kind {
    BOUND_PATH = 0,            /* one microbatch's critical path */
    BOUND_MACHINE,             /* per-rank preemptive one-machine relaxation */
    BOUND_MEMORY,              /* per-rank memory-time relaxation */
    BOUND_KIND_COUNT
} bound_kind;

typedef struct bound_result {
    double lower_bound;        /* seconds: the max of the three below */
    bound_kind active;         /* which one gives lower_bound */
    int active_rank;           /* rank of the active bound (-1 for the path) */
    double path_s;             /* critical path */
    double machine_s;          /* max over ranks of the machine bound */
    int machine_rank;
    double memory_s;           /* max over ranks of the memory bound; 0 when K is unlimited */
    int memory_rank;
    double remat_ops;          /* recomputations the memory bound of memory_rank assumes (0 without remat) */
    int exact;                 /* 1: lower_bound is the optimum (see the header comment) */
    const char *exact_reason;  /* static text when exact, else "" */
} bound_result;

/* Fill out.  PG_EXIT_INPUT for impossible input (sizes, negative times) or a
 * limit K below one stage activation (1/v), under which nothing can run. */
int bound_lower(const bound_input *in, bound_result *out, pg_status *st);

/* The data-parallel gradient all-reduce after (or overlapping) the pipeline,
 * as sim/gradsync.c runs it: rank r's reducer all-reduces its stages'
 * gradients bucket after bucket (one stream); without overlap every bucket
 * is ready once the rank has run all its ops, with overlap stage s's
 * gradient is cut into buckets[s] equal buckets released one by one by the
 * equal pieces of the stage's last weight-gradient op (W, or the fused BW).
 * A bucket of x bytes takes at least x * rank_s_per_byte[r] (the all-reduce
 * at the best rate its links allow, latencies left out).
 * The lower bound (derivation in bound_dp.c), measured from the first op's
 * start like the makespan: no rank's reducer ends before it, so neither does
 * the iteration (the optimizer step follows the last reducer). */
typedef struct bound_dp_input {
    int overlap;                    /* 1: buckets ready during the last weight-gradient op */
    const double *stage_bytes;      /* [nstages] gradient bytes one GPU all-reduces for the stage */
    const int *stage_buckets;       /* [nstages] buckets of the stage (>= 1; units_pieces) */
    const double *rank_s_per_byte;  /* [pp] least seconds per byte of the rank's all-reduce; 0: unknown */
    const double *stage_op_comm_s;  /* [nstages] or NULL: seconds of the stage's B (BW fused) that in->b
                                     * counts but that follow its compute (tp collectives), so are no
                                     * part of the pieces that release buckets */
} bound_dp_input;

/* Seconds from the first op's start that the last reducer cannot beat; 0
 * when no rank has a known rate or any gradient. */
double bound_dp_allreduce_end(const bound_input *in, const bound_dp_input *dp);

const char *bound_kind_name(bound_kind k);   /* "critical_path", "machine", "memory" */

#endif
