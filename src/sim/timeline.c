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

/* The timeline's arrays, for timeline_write and timeline_read. */
enum { TL_PARTS = 7 };
typedef struct tl_part {
    void **data;
    size_t *n, *cap, size;
} tl_part;

static void parts_of(timeline *t, tl_part p[TL_PARTS])
{
    p[0] = (tl_part){(void **)&t->ops, &t->nops, &t->cap_ops, sizeof *t->ops};
    p[1] = (tl_part){(void **)&t->xfers, &t->nxfers, &t->cap_xfers, sizeof *t->xfers};
    p[2] = (tl_part){(void **)&t->wide_ops, &t->nwide_ops, &t->cap_wide_ops, sizeof *t->wide_ops};
    p[3] = (tl_part){(void **)&t->wide_xfers, &t->nwide_xfers, &t->cap_wide_xfers, sizeof *t->wide_xfers};
    p[4] = (tl_part){(void **)&t->copies, &t->ncopies, &t->cap_copies, sizeof *t->copies};
    p[5] = (tl_part){(void **)&t->stalls, &t->nstalls, &t->cap_stalls, sizeof *t->stalls};
    p[6] = (tl_part){(void **)&t->colls, &t->ncolls, &t->cap_colls, sizeof *t->colls};
}

int timeline_write(FILE *f, const timeline *t)
{
    tl_part p[TL_PARTS];
    parts_of((timeline *)t, p);   /* read only */
    for (int i = 0; i < TL_PARTS; i++)
        if (fwrite(p[i].n, sizeof *p[i].n, 1, f) != 1 ||
            (*p[i].n > 0 && fwrite(*p[i].data, p[i].size, *p[i].n, f) != *p[i].n))
            return -1;
    return 0;
}

int timeline_read(FILE *f, timeline *t)
{
    tl_part p[TL_PARTS];
    parts_of(t, p);
    for (int i = 0; i < TL_PARTS; i++) {
        size_t n;
        if (fread(&n, sizeof n, 1, f) != 1)
            return -1;
        *p[i].data = pg_xcalloc(n + 1, p[i].size);
        *p[i].cap = n + 1;
        if (fread(*p[i].data, p[i].size, n, f) != n)
            return -1;
        *p[i].n = n;
    }
    return 0;
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
