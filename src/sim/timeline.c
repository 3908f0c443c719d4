/* timeline.c: append-only record of simulated ops, transfers, copies, stalls and collectives. */
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

void timeline_add_op(timeline *t, const tl_op *op)
{
    pg_grow((void **)&t->ops, &t->cap_ops, t->nops + 1, sizeof *t->ops);
    t->ops[t->nops++] = *op;
}

void timeline_add_xfer(timeline *t, const tl_xfer *x)
{
    pg_grow((void **)&t->xfers, &t->cap_xfers, t->nxfers + 1, sizeof *t->xfers);
    t->xfers[t->nxfers++] = *x;
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
