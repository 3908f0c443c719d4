/* timeline.h: what a simulation records (plain data, no SimGrid).
 *
 * Every op executed on a GPU and every transfer between GPUs, with simulated
 * start and end times; with a memory plan (schedule/plan.h) also the
 * recompute ops the simulator inserted (kinds TL_OP_R, TL_OP_RW), every
 * offload copy between a GPU and host memory, and every wait of an op for
 * its activation to come back (a stall); with tensor / data parallelism the
 * collectives, optimizer steps and replica spans (tl_coll).  Metrics, reports and traces are
 * all computed from this record, never from SimGrid state.
 */
#ifndef PG_SIM_TIMELINE_H
#define PG_SIM_TIMELINE_H

#include <stddef.h>
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
    TLC_EP_ALLTOALL,           /* an op's expert-parallel all-to-alls (count of them, fused) */
    TLC_CP_KV,                 /* an op's context-parallel key/value ring exchanges (count: layers) */
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

typedef struct timeline {
    tl_op *ops;     size_t nops, cap_ops;
    tl_xfer *xfers; size_t nxfers, cap_xfers;
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

#endif
