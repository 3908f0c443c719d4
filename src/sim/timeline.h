/* timeline.h: what a simulation records (plain data, no SimGrid).
 *
 * Every op executed on a GPU and every transfer between GPUs, with simulated
 * start and end times; with a memory plan (schedule/plan.h) also the
 * recompute ops the simulator inserted (kinds TL_OP_R, TL_OP_RW), every
 * offload copy between a GPU and host memory, and every wait of an op for
 * its activation to come back (a stall); with tensor / data parallelism the
 * collectives, optimizer steps and replica spans (tl_coll).  Metrics, reports and traces are
 * all computed from this record, never from SimGrid state.
 *
 * Ops and transfers are most of a run's memory (one of each per simulated
 * event), so they are stored packed: the times (and a transfer's bytes) as
 * the doubles they are, the small integers (rank, stage, microbatch, kind)
 * in one 64-bit key, 24 bytes an op and 32 a transfer instead of 32 and 48.
 * Nothing is rounded: a record whose integers do not fit the key's fields
 * (beyond pglimits.h's limits, or negative) is kept whole on the side and
 * the key points at it.  Producers pass tl_op / tl_xfer to timeline_add_*,
 * readers get them back, equal field for field, from timeline_op /
 * timeline_xfer; nothing else sees the packed form.
 */
#ifndef PG_SIM_TIMELINE_H
#define PG_SIM_TIMELINE_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "schedule/schedule.h"

/* tl_op kinds beyond op_kind: recomputations inserted from a plan. */
enum {
    TL_OP_R = OP_KIND_COUNT,   /* forward recompute before B / BW */
    TL_OP_RW,                  /* forward recompute before W (backward option) */
    TL_OP_KIND_COUNT
};

typedef struct tl_op {
    double start_s, end_s;   /* seconds */
    int32_t rank;
    int32_t stage;
    int32_t mb;
    uint8_t kind;            /* op_kind */
} tl_op;

typedef enum { XFER_ACTIVATION = 0, XFER_GRADIENT } xfer_kind;

typedef struct tl_xfer {
    double start_s, end_s;   /* send posted, data arrived */
    double bytes;
    int32_t src_rank, dst_rank;
    int32_t stage;           /* producing stage */
    int32_t mb;
    uint8_t kind;            /* xfer_kind */
} tl_xfer;

typedef enum { COPY_D2H = 0, COPY_H2D } copy_dir;

/* An activation copied between a GPU and its node's host memory. */
typedef struct tl_copy {
    double start_s, end_s;   /* copy engine started, copy ended */
    double bytes;
    int32_t rank;
    int32_t stage;
    int32_t mb;
    uint8_t dir;             /* copy_dir */
} tl_copy;

/* An op ready to run but waiting for its activation's H2D copy. */
typedef struct tl_stall {
    double start_s, end_s;
    int32_t rank;
    int32_t stage;
    int32_t mb;
} tl_stall;

/* Tensor / data parallelism (sim.h's sim_parallel): collectives, optimizer
 * steps, and each replica's pipeline span. */
typedef enum {
    TLC_TP_ALLREDUCE = 0,      /* an op's tp all-reduces (all of them, fused: count) */
    TLC_TP_REDUCE_SCATTER,     /* sequence parallelism */
    TLC_TP_ALLGATHER,
    TLC_DP_ALLREDUCE,          /* one gradient bucket of a rank, across the dp replicas */
    TLC_OPTIMIZER,             /* a rank's optimizer step */
    TLC_EMBED_ALLREDUCE,       /* the tied embedding's gradient, first and last stage (rank: the first's) */
    TLC_EP_ALLTOALL,           /* an op's expert-parallel all-to-alls (count of them, fused) */
    TLC_CP_KV,                 /* an op's context-parallel key/value ring exchanges (count: layers) */
    TLC_DP_REDUCE_SCATTER,     /* one gradient bucket of a rank (distributed optimizer) */
    TLC_DP_ALLGATHER,          /* a rank's updated parameters, across the dp replicas (distributed optimizer) */
    TLC_PIPELINE,              /* replica `replica`: first op start to last op end over its ranks */
    TLC_KIND_COUNT
} tl_coll_kind;

typedef struct tl_coll {
    double start_s, end_s;   /* seconds */
    double bytes;            /* per GPU, all collectives of the record together */
    int32_t rank;            /* pipeline rank (-1: TLC_PIPELINE) */
    int32_t replica;         /* data-parallel replica (-1: all of them) */
    int32_t stage, mb;       /* tp collectives: the op's; dp all-reduce: the bucket's stage, mb -1 */
    int32_t count;           /* collectives in the record (tp) / bucket index (dp) */
    uint8_t kind;            /* tl_coll_kind */
    uint8_t op_kind;         /* tp collectives: the op's op_kind */
} tl_coll;

/* Packed records (see the header); only timeline.c and the readers below
 * look inside. */
typedef struct tl_op_rec {
    double start_s, end_s;
    uint64_t key;            /* TL_KEY_WIDE | index into wide_ops, or the packed fields */
} tl_op_rec;

typedef struct tl_xfer_rec {
    double start_s, end_s, bytes;
    uint64_t key;            /* TL_KEY_WIDE | index into wide_xfers, or the packed fields */
} tl_xfer_rec;

#define TL_KEY_WIDE (UINT64_C(1) << 63)
/* Field widths of the packed keys, low bits first, 63 bits in all, wide
 * enough for pglimits.h's limits (pp <= 4096, stages <= 4096 x 64,
 * microbatches <= 10^6).  Ops: rank 16 bits, stage 20, microbatch 21, kind
 * 6, each holding value + 1 so that -1 fits.  Transfers: source and
 * destination rank 12 bits each, stage 18 (as they are: a transfer's are
 * never negative), microbatch 20 (+ 1), kind 1. */
#define TL_OP_RANK_BITS 16
#define TL_OP_STAGE_BITS 20
#define TL_OP_MB_BITS 21
#define TL_OP_KIND_BITS 6
#define TL_XFER_RANK_BITS 12
#define TL_XFER_STAGE_BITS 18
#define TL_XFER_MB_BITS 20
#define TL_XFER_KIND_BITS 1

typedef struct timeline {
    tl_op_rec *ops;     size_t nops, cap_ops;
    tl_xfer_rec *xfers; size_t nxfers, cap_xfers;
    tl_op *wide_ops;    size_t nwide_ops, cap_wide_ops;       /* records whose fields do not fit a key */
    tl_xfer *wide_xfers; size_t nwide_xfers, cap_wide_xfers;
    tl_copy *copies; size_t ncopies, cap_copies;
    tl_stall *stalls; size_t nstalls, cap_stalls;
    tl_coll *colls; size_t ncolls, cap_colls;
} timeline;

void timeline_init(timeline *t);
void timeline_free(timeline *t);
void timeline_add_op(timeline *t, const tl_op *op);
void timeline_add_xfer(timeline *t, const tl_xfer *x);
void timeline_add_copy(timeline *t, const tl_copy *c);
void timeline_add_stall(timeline *t, const tl_stall *s);
void timeline_add_coll(timeline *t, const tl_coll *c);
/* Room for nops ops and nxfers transfers in all, when they are known before
 * the run (the engine: exactly, so no growth leaves slack). */
void timeline_reserve(timeline *t, size_t nops, size_t nxfers);
/* The whole timeline to f, and back (into a timeline_init'ed t): the raw
 * records, for a process of the same binary (offload=plan's judge sends a
 * child's simulation to its parent through a pipe).  0 on success, -1 on a
 * short write or read (t then holds what was read: timeline_free it). */
int timeline_write(FILE *f, const timeline *t);
int timeline_read(FILE *f, timeline *t);

/* Field `bits` wide at `shift` of a packed key, less the stored offset. */
static inline int32_t tl_key_field(uint64_t key, int shift, int bits, int offset)
{
    return (int32_t)((key >> shift) & ((UINT64_C(1) << bits) - 1)) - offset;
}

/* Op i (< t->nops), as it was added. */
static inline tl_op timeline_op(const timeline *t, size_t i)
{
    const tl_op_rec *r = &t->ops[i];
    if (r->key & TL_KEY_WIDE)
        return t->wide_ops[r->key & ~TL_KEY_WIDE];
    int sh = 0;
    tl_op op = {.start_s = r->start_s, .end_s = r->end_s};
    op.rank = tl_key_field(r->key, sh, TL_OP_RANK_BITS, 1), sh += TL_OP_RANK_BITS;
    op.stage = tl_key_field(r->key, sh, TL_OP_STAGE_BITS, 1), sh += TL_OP_STAGE_BITS;
    op.mb = tl_key_field(r->key, sh, TL_OP_MB_BITS, 1), sh += TL_OP_MB_BITS;
    op.kind = (uint8_t)tl_key_field(r->key, sh, TL_OP_KIND_BITS, 1);
    return op;
}

/* Transfer i (< t->nxfers), as it was added. */
static inline tl_xfer timeline_xfer(const timeline *t, size_t i)
{
    const tl_xfer_rec *r = &t->xfers[i];
    if (r->key & TL_KEY_WIDE)
        return t->wide_xfers[r->key & ~TL_KEY_WIDE];
    int sh = 0;
    tl_xfer x = {.start_s = r->start_s, .end_s = r->end_s, .bytes = r->bytes};
    x.src_rank = tl_key_field(r->key, sh, TL_XFER_RANK_BITS, 0), sh += TL_XFER_RANK_BITS;
    x.dst_rank = tl_key_field(r->key, sh, TL_XFER_RANK_BITS, 0), sh += TL_XFER_RANK_BITS;
    x.stage = tl_key_field(r->key, sh, TL_XFER_STAGE_BITS, 0), sh += TL_XFER_STAGE_BITS;
    x.mb = tl_key_field(r->key, sh, TL_XFER_MB_BITS, 1), sh += TL_XFER_MB_BITS;
    x.kind = (uint8_t)tl_key_field(r->key, sh, TL_XFER_KIND_BITS, 0);
    return x;
}

#endif
