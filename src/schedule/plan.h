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
 * timing, as PipeOffload ranks them); recompute none | full | selective for
 * every (stage, mb); the backward option for every (stage, mb).  Planners
 * (the rematerialization ILP) fill per-(stage, mb) choices with plan_set.
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
} memplan;

typedef struct plan_policy {
    plan_offload_policy offload;
    double offload_ratio;        /* selective: 0..1 of each rank's activation bytes */
    plan_fwd fwd;                /* for every (stage, mb) */
    plan_bwd bwd;
    /* Ideal timing used to rank lifespans (rank-share seconds, as generators take). */
    double t_f, t_b, t_w, t_comm;
    const double *offload_bytes; /* [nstages] bytes one (stage, mb) would offload; NULL = all equal */
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
/* Set one choice, keeping the counts right. */
void plan_set(memplan *p, int stage, int mb, plan_choice c);

/* 1 if nothing is offloaded or recomputed (the simulator then adds no work). */
int plan_is_empty(const memplan *p);

#endif
