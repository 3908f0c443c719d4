/* bubbles.c: idle time of each rank split by cause (see bubbles.h). */
#include "sim/bubbles.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

/* The messages carrying a stage's output for one microbatch, indexed by
 * (direction, stage, mb): the index of its transfer in the timeline (read
 * there for its send and arrival), NO_XFER for none.  An index, not the
 * two times, because this array is as long as the run has messages. */
#define NO_XFER SIZE_MAX

static size_t msg_index(const schedule *s, int kind, int stage, int mb)
{
    return ((size_t)kind * (size_t)s->nstages + (size_t)stage) * (size_t)s->m + (size_t)mb;
}

static int by_start(const void *a, const void *b)
{
    const tl_op *x = *(const tl_op *const *)a, *y = *(const tl_op *const *)b;
    return (x->start_s > y->start_s) - (x->start_s < y->start_s);
}

/* The message an executed op waited for, if its input comes from another
 * stage: F(s) needs stage s-1's activation, a backward of s < S-1 (and a
 * recompute before it) needs stage s+1's gradient; the loss turn and W are
 * local.  Returns 0 when the input is local or the op is not in range. */
static int input_message(const schedule *s, const tl_op *op, int *dir, int *stage)
{
    if (op->stage < 0 || op->stage >= s->nstages || op->mb < 0 || op->mb >= s->m)
        return 0;
    switch (op->kind) {
    case OP_F:
        *dir = XFER_ACTIVATION;
        *stage = op->stage - 1;
        return op->stage > 0;
    case OP_B:
    case OP_BW:
    case TL_OP_R:
        *dir = XFER_GRADIENT;
        *stage = op->stage + 1;
        return op->stage < s->nstages - 1;
    default:
        return 0;
    }
}

static int is_forward(uint8_t kind)
{
    return kind == OP_F;
}

static int is_backward(uint8_t kind)
{
    return kind == OP_B || kind == OP_BW || kind == TL_OP_R;
}

/* Split one idle gap [from, to) before op (on rank) by cause. */
static void split_gap(const schedule *s, const timeline *tl, const size_t *msgs, const tl_op *op, double from,
                      double to, double first_backward_s, double last_forward_end_s, bubble_breakdown *b)
{
    double producer_done = from, arrived = from;
    int dir, stage;
    if (input_message(s, op, &dir, &stage) && s->stage_rank[stage] != op->rank) {
        size_t m = msgs[msg_index(s, dir, stage, op->mb)];
        tl_xfer x = m != NO_XFER ? timeline_xfer(tl, m) : (tl_xfer){.end_s = -1};
        if (x.end_s >= 0) {
            producer_done = x.start_s;
            arrived = x.end_s;
        }
    }
    /* [from, producer_done): another rank was still computing the input;
     * [producer_done, arrived): the input was in flight; the rest: the
     * op was ready but its activation was still being reloaded. */
    double dep_end = producer_done < from ? from : producer_done > to ? to : producer_done;
    double comm_end = arrived < dep_end ? dep_end : arrived > to ? to : arrived;
    double dep = dep_end - from, comm = comm_end - dep_end, reload = to - comm_end;
    if (from < first_backward_s)
        b->warmup_s += dep;
    else if (from >= last_forward_end_s)
        b->cooldown_s += dep;
    else
        b->steady_s += dep;
    b->comm_s += comm;
    b->reload_s += reload;
}

void bubbles_compute(const schedule *s, const timeline *tl, bubble_breakdown *out)
{
    memset(out, 0, (size_t)s->pp * sizeof *out);
    if (s->pp <= 0 || s->nstages <= 0 || s->m <= 0 || s->stage_rank == NULL)
        return;
    size_t nmsg = 2 * (size_t)s->nstages * (size_t)s->m;
    size_t *msgs = pg_xmalloc(nmsg * sizeof *msgs);
    for (size_t i = 0; i < nmsg; i++)
        msgs[i] = NO_XFER;
    for (size_t i = 0; i < tl->nxfers; i++) {
        const tl_xfer x_rec = timeline_xfer(tl, i), *x = &x_rec;
        if (x->stage >= 0 && x->stage < s->nstages && x->mb >= 0 && x->mb < s->m && x->kind <= XFER_GRADIENT)
            msgs[msg_index(s, x->kind, x->stage, x->mb)] = i;
    }

    /* Group the ops by rank (indices, in record order), then each rank's,
     * unpacked, in time order. */
    size_t *idx = pg_xmalloc((tl->nops ? tl->nops : 1) * sizeof *idx);
    size_t *count = pg_xcalloc((size_t)s->pp + 1, sizeof *count);
    for (size_t i = 0; i < tl->nops; i++) {
        int r = timeline_op(tl, i).rank;
        if (r >= 0 && r < s->pp)
            count[r + 1]++;
    }
    size_t most = 0;
    for (int r = 0; r < s->pp; r++) {
        if (count[r + 1] > most)
            most = count[r + 1];
        count[r + 1] += count[r];
    }
    size_t *fill = pg_xcalloc((size_t)s->pp, sizeof *fill);
    for (size_t i = 0; i < tl->nops; i++) {
        int r = timeline_op(tl, i).rank;
        if (r >= 0 && r < s->pp)
            idx[count[r] + fill[r]++] = i;
    }
    tl_op *vals = pg_xmalloc((most ? most : 1) * sizeof *vals);
    const tl_op **mine = pg_xmalloc((most ? most : 1) * sizeof *mine);

    for (int r = 0; r < s->pp; r++) {
        size_t n = count[r + 1] - count[r];
        for (size_t i = 0; i < n; i++) {
            vals[i] = timeline_op(tl, idx[count[r] + i]);
            mine[i] = &vals[i];
        }
        qsort(mine, n, sizeof *mine, by_start);
        double first_backward_s = -1, last_forward_end_s = -1;
        for (size_t i = 0; i < n; i++) {
            if (is_backward(mine[i]->kind) && first_backward_s < 0)
                first_backward_s = mine[i]->start_s;
            if (is_forward(mine[i]->kind))
                last_forward_end_s = mine[i]->end_s;
        }
        for (size_t i = 1; i < n; i++)
            if (mine[i]->start_s > mine[i - 1]->end_s)
                split_gap(s, tl, msgs, mine[i], mine[i - 1]->end_s, mine[i]->start_s, first_backward_s,
                          last_forward_end_s, &out[r]);
    }
    free(mine);
    free(vals);
    free(fill);
    free(count);
    free(idx);
    free(msgs);
}

double bubble_total_s(const bubble_breakdown *b)
{
    return b->warmup_s + b->cooldown_s + b->steady_s + b->comm_s + b->reload_s;
}
