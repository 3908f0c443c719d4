/* schedule.h: a pipeline schedule as pure data.
 *
 * The model is the one of the seed papers.  A model of S = pp * v stages is
 * placed on pp ranks (GPUs); stage_rank[s] says which rank runs stage s.
 * For every stage s and microbatch j there is one forward F(s,j) and either a
 * fused backward BW(s,j) or the split pair B(s,j) (input gradient) and
 * W(s,j) (weight gradient).  Each rank executes its own op list in order,
 * one op at a time.  Dependencies:
 *     F(s,j)      <- F(s-1,j)                      (activation from stage s-1)
 *     B|BW(s,j)   <- B|BW(s+1,j)  for s < S-1      (gradient from stage s+1)
 *     B|BW(S-1,j) <- F(S-1,j)                      (the loss turn)
 *     W(s,j)      <- B(s,j)
 * A dependency between stages on different ranks is a message (activation
 * forward, gradient backward); on the same rank it is free.
 *
 * This layer never touches SimGrid: generators are pure functions of their
 * parameters, which is what lets schedules be tested, exported and planned
 * without a simulation.
 */
#ifndef PG_SCHEDULE_SCHEDULE_H
#define PG_SCHEDULE_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>
#include "util/error.h"
#include "util/strbuf.h"

typedef enum op_kind {
    OP_F = 0,   /* forward */
    OP_B,       /* backward for the input gradient (split backward) */
    OP_W,       /* backward for the weight gradient (split backward) */
    OP_BW,      /* fused backward: B then W in one op */
    OP_KIND_COUNT
} op_kind;

typedef struct sched_op {
    int32_t stage;       /* 0 .. nstages-1, model order */
    int32_t mb;          /* microbatch 0 .. m-1 */
    uint8_t kind;        /* op_kind */
    uint8_t overlap_next;/* 1: this op and the next one of the rank form an overlapped pair (DualPipeV's
                          * forward and backward chunks of different microbatches: one's compute hides
                          * the other's communication; or Megatron's combined 1F1B step, sched_params
                          * .ep_overlap); the order is unchanged, only the simulator and
                          * sched_eval_combined read it */
} sched_op;

typedef struct schedule {
    char name[48];       /* generator name ("1f1b", "file:x.csv", ...) */
    int pp;              /* ranks */
    int v;               /* stages per rank */
    int nstages;         /* pp * v */
    int m;               /* microbatches */
    int *stage_rank;     /* [nstages] rank of each stage */
    int *nops;           /* [pp] length of each rank's list */
    size_t *cap;         /* [pp] allocated length */
    sched_op **ops;      /* [pp][nops[r]] execution order of rank r */
} schedule;

/* What generators receive.  Times are for one microbatch of one whole rank's
 * share of the model (a rank with v stages spends t/v per stage op); the
 * cost-aware generators (zb-auto, zb-v, v-*) use them, the fixed ones do not. */
typedef struct sched_params {
    int pp;
    int m;
    int chunks;            /* stages per rank for interleaved / hanayo; V schedules force 2 */
    double t_f, t_b, t_w;  /* seconds, per rank share */
    double t_comm;         /* seconds added to every cross-rank dependency */
    double mem_limit;      /* activation limit per rank in M_B units (contract's memory.limit); <= 0: none given */
    double w_fraction;     /* M_W / M_B: what W still holds after B */
    int ep_overlap;        /* 1: Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm): one more
                            * warm-up forward, then each steady-state forward marked overlap_next with the
                            * backward after it (the generators flagged SCHED_EP_OVERLAP read it) */
} sched_params;

/* ---- container ---------------------------------------------------------- */

/* Allocate an empty schedule of pp ranks and nstages = pp * v stages. */
void sched_init(schedule *s, const char *name, int pp, int v, int m);
void sched_free(schedule *s);
void sched_push(schedule *s, int rank, op_kind kind, int stage, int mb);
/* Mark the last op pushed on rank as overlapped with the next one pushed. */
void sched_mark_overlap_next(schedule *s, int rank);
int sched_total_ops(const schedule *s);
/* Deep copy. */
void sched_copy(schedule *dst, const schedule *src);
/* 1 when a and b run the same ops: ranks, stages per rank, microbatches,
 * stage placement and every rank's list (kinds, stages, microbatches,
 * overlapped pairs) equal; the names are not compared. */
int sched_equal(const schedule *a, const schedule *b);

/* ---- placements (fill stage_rank) ------------------------------------- */
void sched_place_contiguous(schedule *s);  /* v = 1: stage s on rank s */
void sched_place_looping(schedule *s);     /* interleaved: stage s on rank s mod pp */
void sched_place_v(schedule *s);           /* v = 2: rank i holds stages i and 2pp-1-i */
void sched_place_wave(schedule *s);        /* hanayo: 0..pp-1, pp-1..0, 0..pp-1, ... */

/* Local chunk index of stage s on its rank (0 .. v-1), in model order. */
int sched_stage_chunk(const schedule *s, int stage);

/* ---- dependencies -------------------------------------------------------- */

/* Whether the schedule splits backward (any B or W op) or fuses it (BW). */
int sched_is_split(const schedule *s);

/* The op op depends on, if any: returns 1 and fills *pred, or 0 for an op
 * with no predecessor (F of stage 0).  For a backward of stage s < S-1 the
 * predecessor is the backward of s+1, of kind B or BW as the schedule uses. */
int sched_pred(const schedule *s, sched_op op, sched_op *pred);

/* ---- generators ------------------------------------------------------- */

typedef int (*sched_gen_fn)(const sched_params *p, schedule *out, pg_status *st);

/* What the rest of pipegrid needs to know about a schedule, as flags of its
 * registry row (generators.h), so that no caller names a schedule. */
enum {
    SCHED_USES_CHUNKS = 1u << 0,      /* reads sched_params.chunks (else the key does not apply) */
    SCHED_OPTIMIZE_DEFAULT = 1u << 1, /* in `optimize`'s default candidate list */
    SCHED_REFINE_ZB_ILP = 1u << 2,    /* the CLI may refine it with the ZB paper's ILP (opt/zb_ilp.h) */
    SCHED_EP_OVERLAP = 1u << 3,       /* reads sched_params.ep_overlap (Megatron's combined 1F1B steps) */
};

typedef struct sched_generator {
    const char *name;       /* contract name: "gpipe", "1f1b", ... */
    sched_gen_fn generate;
    unsigned flags;         /* SCHED_* above */
    const char *summary;    /* one line for --help, `schedule list` and the README */
} sched_generator;

/* NULL if unknown. */
const sched_generator *sched_find_generator(const char *name);
/* Table terminated by an entry with name == NULL. */
const sched_generator *sched_generators(void);
/* 1 if name is a registered schedule whose row has every bit of flags. */
int sched_has_flags(const char *name, unsigned flags);
/* Append the names of the rows that have every bit of flags (0: every row),
 * in registry order, separated by sep, the last two by last_sep
 * ("gpipe,1f1b,..." or "interleaved, hanayo, gis or gis-h"). */
void sched_names(unsigned flags, const char *sep, const char *last_sep, strbuf *out);
/* `optimize`'s default candidate list, "gpipe,1f1b,...": the rows flagged
 * SCHED_OPTIMIZE_DEFAULT.  A static string built on the first call (call it
 * once before starting threads). */
const char *sched_optimize_defaults(void);

/* Generate by name (not "file:"): validates p first (pp >= 1, m >= 1, ...),
 * then validates the result.  Errors are PG_EXIT_INPUT. */
int sched_generate(const char *name, const sched_params *p, schedule *out, pg_status *st);

/* ---- validation ------------------------------------------------------- */

/* Structure: every (stage, mb) has exactly one F and exactly one BW or one
 * B and one W (never a mix), each op sits on the rank holding its stage,
 * indices in range.  PG_EXIT_INPUT naming the first offending op. */
int sched_validate(const schedule *s, pg_status *st);

/* Can the order complete?  Replays the dependency graph abstractly; if some
 * rank's next op can never become ready, returns PG_EXIT_DEADLOCK and lists
 * every blocked rank's next op and what it waits for, e.g.
 *   "deadlock: rank 0 blocked at B(stage 0, mb 3) waiting for B(stage 1, mb 3); ..." */
int sched_check_deadlock(const schedule *s, pg_status *st);

/* ---- ideal timing (the papers' model, no SimGrid) ----------------------- */

/* Times per op in the papers' evaluator model: op ends at
 * max(end of previous op on the rank, end of predecessor + t_comm if it is
 * on another rank) + duration; duration of a stage op is t/v (BW = (b+w)/v).
 * start/end arrays are indexed like ops ([rank][i]), allocated by the callee
 * (free with sched_times_free).  Returns PG_EXIT_DEADLOCK if it cannot complete. */
typedef struct sched_times {
    double **start, **end;   /* [pp][nops] */
    double makespan;         /* max end - min start over all ranks */
    double span;             /* max over ranks of (last end - first start) */
} sched_times;
int sched_eval_ideal(const schedule *s, double t_f, double t_b, double t_w, double t_comm,
                     sched_times *out, pg_status *st);
/* The same evaluator with a duration per stage and kind: an op of stage k
 * and kind K lasts dur[k][K] (the stage's own time, not divided by v; BW is
 * dur[k][OP_BW], whatever the caller makes it).  For stages of unequal cost
 * (embedding on the first, LM head on the last) and for callers whose B
 * includes a recomputed forward.  dur has s->nstages rows. */
int sched_eval_staged(const schedule *s, const double (*dur)[OP_KIND_COUNT], double t_comm, sched_times *out,
                      pg_status *st);
/* The same with a transfer time per pair of ranks: an op whose predecessor
 * ran on rank a, itself on rank b != a, starts t_comm_pair[a * pp + b]
 * after it (stage boundaries inside a node and across nodes cost what
 * their links do). */
int sched_eval_staged_pairs(const schedule *s, const double (*dur)[OP_KIND_COUNT], const double *t_comm_pair,
                            sched_times *out, pg_status *st);
/* sched_eval_staged_pairs for Megatron-Core's combined 1F1B steps (sched_params.ep_overlap): an op marked
 * overlap_next and the next op of its rank are one step, which starts when the rank is free and both
 * inputs are in and lasts max(compute_1 + compute_2, step_comm_1 + step_comm_2) (the two ops'
 * expert-parallel all-to-alls on their own stream under the two computes, and whatever else shares their
 * links while they run), both ops ending with it; every other op lasts compute + comm.  compute, comm and
 * step_comm have s->nstages rows; step_comm NULL: comm; sends NULL: a step's sends do not share.  Without marked ops it is sched_eval_staged_pairs
 * of compute + comm.  PG_EXIT_DEADLOCK when a step's second op waits, through other ranks, on its first. */
/* A combined step's two ops send their outputs at its end, at once: where both go to other ranks through
 * one port of their rank (port_pair[a * pp + b]: the port a send from rank a to rank b leaves by), they
 * share it, and each arrives the other's transfer time later (xfer_pair[a * pp + b]: a send's time less
 * its latency, the part that shares). */
typedef struct sched_step_sends {
    const double *xfer_pair;
    const int *port_pair;
} sched_step_sends;
int sched_eval_combined(const schedule *s, const double (*compute)[OP_KIND_COUNT], const double (*comm)[OP_KIND_COUNT],
                        const double (*step_comm)[OP_KIND_COUNT], const double *t_comm_pair,
                        const sched_step_sends *sends, sched_times *out, pg_status *st);
void sched_times_free(const schedule *s, sched_times *t);
/* The stage that takes the output of an op of `kind` on `stage` (F: the next
 * stage's input, B and BW: the previous stage's gradient), or -1: none. */
int sched_output_stage(const schedule *s, int kind, int stage);

/* Peak number of live activations on a rank under times t, in units of one
 * whole rank's share (M_B): +1/v when an F starts, -1/v when the W or BW of
 * that (stage, mb) ends; at equal times releases count first.  This is the
 * simple "F until W" count of the papers' memory tables. */
double sched_peak_activations(const schedule *s, const sched_times *t, int rank);

/* ---- names ------------------------------------------------------------ */
const char *op_kind_name(op_kind k);     /* "F", "B", "W", "BW" */
/* "F(stage 3, mb 7)" into buf. */
char *sched_op_str(sched_op op, char *buf, int len);

#endif
