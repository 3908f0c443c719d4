/* timeline.c: append-only record of simulated ops and transfers. */
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
    memset(t, 0, sizeof *t);
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
