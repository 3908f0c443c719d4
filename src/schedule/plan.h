/* plan.h: memory decisions that decorate a schedule (pure data, no SimGrid).
 *
 * A schedule says in which order each rank runs F, B, W (or BW).  A plan
 * says, for every (stage, microbatch), what happens to the activation that F
 * stores:
 *   offload   after F, copy it to host memory (D2H) and free it on the GPU
 *             when the copy ends; copy it back (H2D) before the op that
 *             consumes it first (the forward recompute if any, else B / BW);
 *   fwd       PLAN_FWD_KEEP: F stores everything B needs (M_B);
 *             PLAN_FWD_FULL: F keeps only the stage input, and a recompute
 *             op R of the forward's cost runs right before B;
 *             PLAN_FWD_SELECTIVE: F drops the attention core only, which an
 *             R of the attention core's cost recomputes before B;
 *   bwd       PLAN_BWD_KEEP: after B keep what W needs (the zero-bubble
 *             accounting); PLAN_BWD_RECOMPUTE: after B keep only the stage
 *             input and recompute the forward right before W (seed 004's
 *             backward option).  Ignored for fused BW.
 * R ops are never written into the schedule's op lists (every generator and
 * every switch over op_kind stays as it is): the simulator inserts them from
 * the plan.  The plan only chooses; bytes and seconds come from the workload
 * at simulation time.
 *
 * Policies (plan_build): offload none | full | selective with a ratio (the
 * fraction of a rank's activation bytes offloaded, longest-lived first, the
 * lifespan being F's end to the consumer's start under the papers' ideal
 * timing, as PipeOffload ranks them) or with a chunk count (whole chunks:
 * every activation of each rank's first offload_chunks local chunks, chunk 0
 * living longest, as PipeOffload's `offload_chunk_num` selects); recompute
 * none | full | selective for every (stage, mb); the backward option for
 * every (stage, mb).  Planners (the rematerialization ILP) fill
 * per-(stage, mb) choices with plan_set.
 *
 * PipeOffload's copy rules (plan_policy.copy_bw given; its repository's
 * zerobubble/scheduler/offloading.py, read, not copied), decided here from
 * the ideal timing so that the engine only executes them:
 *   - lifespan filter: an activation is not offloaded when the time from
 *     its F's end to (its consumer's start - the consumer's duration) is at
 *     most PLAN_PO_LIFESPAN_ROUND_TRIPS round trips (D2H + H2D); idle time
 *     in that gap counts, as it does in the repository;
 *   - reload rule: the H2D copy must end one consumer duration before the
 *     consumer starts (the repository's "buffer for robustness"), so it is
 *     queued (reload_at) at the start of the last op of the rank that starts
 *     no later than consumer start - consumer duration - H2D time, and never
 *     before the op after its F; triggers are non-decreasing in consumer
 *     order, as the single H2D queue serves them; and it does not start
 *     before that latest start (reload_release_s), as the repository's
 *     slots are placed backwards from the B;
 *   - warm-up postponement (policy.postpone_warmup; plan_postpone.c):
 *     warm-up forwards as late as they can go (f_release_s).
 * Times come from plan_eval_times (each stage's own seconds), postponed
 * first when asked, as the repository does before placing its copies.
 */
#ifndef PG_SCHEDULE_PLAN_H
#define PG_SCHEDULE_PLAN_H

#include <stdint.h>

#include "schedule/schedule.h"
#include "util/error.h"

typedef enum { PLAN_FWD_KEEP = 0, PLAN_FWD_FULL, PLAN_FWD_SELECTIVE } plan_fwd;
typedef enum { PLAN_BWD_KEEP = 0, PLAN_BWD_RECOMPUTE } plan_bwd;
typedef enum { PLAN_OFFLOAD_NONE = 0, PLAN_OFFLOAD_FULL, PLAN_OFFLOAD_SELECTIVE } plan_offload_policy;

typedef struct plan_choice {
    uint8_t offload;   /* 0 / 1 */
    uint8_t fwd;       /* plan_fwd */
    uint8_t bwd;       /* plan_bwd */
} plan_choice;

typedef struct plan {
    int nstages, m;
    plan_choice *c;    /* [nstages * m], index stage * m + mb */
    int noffload;      /* (stage, mb) pairs offloaded */
    int nrecompute;    /* (stage, mb) pairs with a forward or backward recompute */
    /* PipeOffload's reload rule (NULL: the engine's own prefetch rule): for an
     * offloaded (stage, mb), the index in its rank's op list of the op at whose
     * start the H2D copy is queued; -1 for an item that is not offloaded. */
    int *reload_at;    /* [nstages * m] or NULL */
    /* PipeOffload's copy slots, in simulated seconds from the start of the run
     * (NULL: as soon as possible).  reload_release_s: the H2D copy of an
     * offloaded (stage, mb) starts no earlier (its slot ends one consumer
     * duration before the consumer); f_release_s: the F of a (stage, mb)
     * starts no earlier (warm-up postponement; 0 for forwards not moved). */
    double *reload_release_s;  /* [nstages * m] or NULL */
    double *f_release_s;       /* [nstages * m] or NULL */
    int nlifespan_skipped; /* offloads the lifespan filter dropped */
    int npostponed;        /* warm-up forwards postponed */
} memplan;

/* PipeOffload's lifespan filter: round trips a gap must exceed. */
#define PLAN_PO_LIFESPAN_ROUND_TRIPS 3.0

typedef struct plan_policy {
    plan_offload_policy offload;
    double offload_ratio;        /* selective: 0..1 of each rank's activation bytes */
    plan_fwd fwd;                /* for every (stage, mb) */
    plan_bwd bwd;
    /* Ideal timing used to rank lifespans (rank-share seconds, as generators take). */
    double t_f, t_b, t_w, t_comm;
    const double *offload_bytes; /* [nstages] bytes one (stage, mb) would offload; NULL = all equal */
    int offload_chunks;          /* selective by whole chunks: > 0 offloads each rank's first offload_chunks
                                    local chunks (every microbatch), instead of offload_ratio; at most v */
    /* PipeOffload's copy rules (header): NULL = none (the engine's rules alone).
     * Per rank: uncontended host-link bandwidth (bytes/s) and latency (s), in the
     * same time base as t_f, t_b, t_w. */
    const double *copy_bw;       /* [pp] */
    const double *copy_lat_s;    /* [pp] */
    /* With the rules: each stage's own op seconds (NULL: t_f, t_b, t_w / v for
     * every stage), the warm-up postponement (plan_postpone_warmup), and the
     * simulated seconds one second of that timing lasts (0 = 1). */
    const double *stage_f_s, *stage_b_s, *stage_w_s;   /* [nstages] */
    int postpone_warmup;
    double sim_s_per_plan_s;
} plan_policy;

/* An empty plan (nothing offloaded, nothing recomputed) for s. */
void plan_init(memplan *p, const schedule *s);
void plan_free(memplan *p);

/* The plan of a policy.  PG_EXIT_INPUT for a ratio outside [0, 1];
 * PG_EXIT_DEADLOCK if the schedule cannot be timed (it cannot run either). */
int plan_build(const schedule *s, const plan_policy *pol, memplan *out, pg_status *st);

static inline plan_choice plan_get(const memplan *p, int stage, int mb)
{
    return p->c[(size_t)stage * (size_t)p->m + (size_t)mb];
}
/* The fixed orders replayed as soon as possible with each stage's own
 * seconds (f_s, b_s, w_s [nstages]; BW = b + w) and t_comm on every
 * cross-rank dependency; PG_EXIT_DEADLOCK if the schedule cannot complete.
 * Free with sched_times_free. */
int plan_eval_times(const schedule *s, const double *f_s, const double *b_s, const double *w_s, double t_comm,
                    sched_times *out, pg_status *st);
/* PipeOffload's warm-up postponement (plan_postpone.c's header) on times t
 * of s: returns how many forwards moved. */
int plan_postpone_warmup(const schedule *s, sched_times *t, double t_comm);

/* Set one choice, keeping the counts right. */
void plan_set(memplan *p, int stage, int mb, plan_choice c);

/* 1 if nothing is offloaded or recomputed (the simulator then adds no work). */
int plan_is_empty(const memplan *p);
/* dst (uninitialised) becomes a copy of src, with arrays of its own. */
void plan_copy(memplan *dst, const memplan *src);
/* 1 when a and b make the same choices with the same copy rules: every
 * (stage, mb)'s choice, reload op and release dates equal (NULL arrays only
 * equal NULL arrays). */
int plan_equal(const memplan *a, const memplan *b);

#endif
