/* timeline.h: what a simulation records (plain data, no SimGrid).
 *
 * Every op executed on a GPU and every transfer between GPUs, with simulated
 * start and end times.  Metrics, reports and traces are all computed from
 * this record, never from SimGrid state.
 */
#ifndef PG_SIM_TIMELINE_H
#define PG_SIM_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tl_op {
    double start, end;       /* seconds */
    int32_t rank;
    int32_t stage;
    int32_t mb;
    uint8_t kind;            /* op_kind */
} tl_op;

typedef enum { XFER_ACTIVATION = 0, XFER_GRADIENT } xfer_kind;

typedef struct tl_xfer {
    double start, end;       /* send posted, data arrived */
    double bytes;
    int32_t src_rank, dst_rank;
    int32_t stage;           /* producing stage */
    int32_t mb;
    uint8_t kind;            /* xfer_kind */
} tl_xfer;

typedef struct timeline {
    tl_op *ops;     size_t nops, cap_ops;
    tl_xfer *xfers; size_t nxfers, cap_xfers;
} timeline;

void timeline_init(timeline *t);
void timeline_free(timeline *t);
void timeline_add_op(timeline *t, const tl_op *op);
void timeline_add_xfer(timeline *t, const tl_xfer *x);

#endif
