/* timeline.c: append-only record of simulated ops, transfers, copies, stalls
 * and collectives; ops and transfers packed (timeline.h). */
#include "sim/timeline.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

void timeline_init(timeline *t)
{
    memset(t, 0, sizeof *t);
}

void timeline_free(timeline *t)
{
    free(t->ops);
    free(t->xfers);
    free(t->wide_ops);
    free(t->wide_xfers);
    free(t->copies);
    free(t->stalls);
    free(t->colls);
    memset(t, 0, sizeof *t);
}

void timeline_reserve(timeline *t, size_t nops, size_t nxfers)
{
    if (nops > t->cap_ops) {
        t->ops = pg_xrealloc(t->ops, nops * sizeof *t->ops);
        t->cap_ops = nops;
    }
    if (nxfers > t->cap_xfers) {
        t->xfers = pg_xrealloc(t->xfers, nxfers * sizeof *t->xfers);
        t->cap_xfers = nxfers;
    }
}

/* Put v + offset into the field `bits` wide at *shift of *key (advancing
 * *shift); 0 when it does not fit. */
static int put_field(uint64_t *key, int *shift, int bits, int offset, long v)
{
    long stored = v + offset;
    if (stored < 0 || stored >= (1L << bits))
        return 0;
    *key |= (uint64_t)stored << *shift;
    *shift += bits;
    return 1;
}

void timeline_add_op(timeline *t, const tl_op *op)
{
    pg_grow((void **)&t->ops, &t->cap_ops, t->nops + 1, sizeof *t->ops);
    uint64_t key = 0;
    int sh = 0;
    if (!(put_field(&key, &sh, TL_OP_RANK_BITS, 1, op->rank) && put_field(&key, &sh, TL_OP_STAGE_BITS, 1, op->stage) &&
          put_field(&key, &sh, TL_OP_MB_BITS, 1, op->mb) && put_field(&key, &sh, TL_OP_KIND_BITS, 1, op->kind))) {
        pg_grow((void **)&t->wide_ops, &t->cap_wide_ops, t->nwide_ops + 1, sizeof *t->wide_ops);
        key = TL_KEY_WIDE | (uint64_t)t->nwide_ops;
        t->wide_ops[t->nwide_ops++] = *op;
    }
    t->ops[t->nops++] = (tl_op_rec){.start_s = op->start_s, .end_s = op->end_s, .key = key};
}

void timeline_add_xfer(timeline *t, const tl_xfer *x)
{
    pg_grow((void **)&t->xfers, &t->cap_xfers, t->nxfers + 1, sizeof *t->xfers);
    uint64_t key = 0;
    int sh = 0;
    if (!(put_field(&key, &sh, TL_XFER_RANK_BITS, 0, x->src_rank) &&
          put_field(&key, &sh, TL_XFER_RANK_BITS, 0, x->dst_rank) &&
          put_field(&key, &sh, TL_XFER_STAGE_BITS, 0, x->stage) && put_field(&key, &sh, TL_XFER_MB_BITS, 1, x->mb) &&
          put_field(&key, &sh, TL_XFER_KIND_BITS, 0, x->kind))) {
        pg_grow((void **)&t->wide_xfers, &t->cap_wide_xfers, t->nwide_xfers + 1, sizeof *t->wide_xfers);
        key = TL_KEY_WIDE | (uint64_t)t->nwide_xfers;
        t->wide_xfers[t->nwide_xfers++] = *x;
    }
    t->xfers[t->nxfers++] = (tl_xfer_rec){.start_s = x->start_s, .end_s = x->end_s, .bytes = x->bytes, .key = key};
}

void timeline_add_copy(timeline *t, const tl_copy *c)
{
    pg_grow((void **)&t->copies, &t->cap_copies, t->ncopies + 1, sizeof *t->copies);
    t->copies[t->ncopies++] = *c;
}

void timeline_add_stall(timeline *t, const tl_stall *s)
{
    pg_grow((void **)&t->stalls, &t->cap_stalls, t->nstalls + 1, sizeof *t->stalls);
    t->stalls[t->nstalls++] = *s;
}

void timeline_add_coll(timeline *t, const tl_coll *c)
{
    pg_grow((void **)&t->colls, &t->cap_colls, t->ncolls + 1, sizeof *t->colls);
    t->colls[t->ncolls++] = *c;
}
