/* sched_index.h: private to the schedule layer.
 *
 * Locates every op of a schedule by (kind, stage, mb) and derives each op's
 * predecessor, so validation, the deadlock replay and the ideal evaluator
 * share one definition of "which op does this one wait for".  Ops are named
 * by a global id: rank_base[r] + position in rank r's list. */
#ifndef PG_SCHEDULE_SCHED_INDEX_H
#define PG_SCHEDULE_SCHED_INDEX_H

#include "schedule/schedule.h"

typedef struct sched_index {
    int nstages, m, total;
    int *rank_base;             /* [pp + 1] */
    int *id[OP_KIND_COUNT];     /* [nstages * m] global id of that op, or -1 */
    int *pred;                  /* [total] global id of the predecessor, or -1 */
    int *op_rank;               /* [total] rank of each op */
} sched_index;

/* Builds the index and checks the structure (what sched_validate promises).
 * On failure returns PG_EXIT_INPUT with the message naming the op; the index
 * is then already freed. */
int sched_index_build(const schedule *s, sched_index *ix, pg_status *st);
void sched_index_free(sched_index *ix);

/* The op with global id g. */
sched_op sched_index_op(const schedule *s, const sched_index *ix, int g);

/* Abstract replay: each rank runs its list in order, an op runs once its
 * predecessor has.  Fills order[] (size total) with a topological order of the
 * ops that can run and next[r] with the position where rank r stopped; returns
 * how many ran (total when the schedule completes). */
int sched_index_replay(const schedule *s, const sched_index *ix, int *order, int *next);
/* The same, counting in *checks how many times an op was tested for
 * readiness: at most 2 x ops + ranks (linear; tests hold it to that). */
int sched_index_replay_counted(const schedule *s, const sched_index *ix, int *order, int *next, long *checks);

/* "deadlock: rank R blocked at OP waiting for PRED; ..." from a replay's next[]. */
int sched_index_deadlock_msg(const schedule *s, const sched_index *ix, const int *next, pg_status *st);

/* A schedule's index and the order its replay runs the ops in: what
 * eval_ideal.h's evaluations compute first on every call, kept by a caller
 * that evaluates one schedule under many durations (calibrate's surrogate:
 * thousands of evaluations per row).  Build fails as the replay does: a
 * deadlock, PG_EXIT_INPUT with the blocked ops named. */
typedef struct sched_replay {
    sched_index ix;
    int *order;   /* [ix.total] global op ids, in replay order */
} sched_replay;
int sched_replay_build(const schedule *s, sched_replay *out, pg_status *st);
void sched_replay_free(sched_replay *r);
/* schedule.h's sched_eval_staged_pairs on a replay built for s: the same
 * times, without indexing and replaying the schedule again. */
void sched_eval_staged_pairs_replayed(const schedule *s, const sched_replay *rp, const double (*dur)[OP_KIND_COUNT],
                                      const double *t_comm_pair, sched_times *out);

#endif
