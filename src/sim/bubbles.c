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

/* When op's input message (from another rank) was sent and arrived, if it
 * has one in the timeline: 1, else 0. */
static int input_times(const schedule *s, const timeline *tl, const size_t *msgs, const tl_op *op, double *sent_s,
                       double *arrived_s)
{
    int dir, stage;
    if (!input_message(s, op, &dir, &stage) || s->stage_rank[stage] == op->rank)
        return 0;
    size_t m = msgs[msg_index(s, dir, stage, op->mb)];
    if (m == NO_XFER)
        return 0;
    tl_xfer x = timeline_xfer(tl, m);
    *sent_s = x.start_s;
    *arrived_s = x.end_s;
    return 1;
}

/* Split one idle gap [from, to) before op (on rank) by cause.  partner: the
 * op marked to run with it (schedule.h overlap_next), or NULL; a combined
 * step waits for both inputs, so the later of the two, if it came before
 * the gap's end, is what the gap waited for. */
static void split_gap(const schedule *s, const timeline *tl, const size_t *msgs, const tl_op *op, const tl_op *partner,
                      double from, double to, double first_backward_s, double last_forward_end_s, bubble_breakdown *b)
{
    double producer_done = from, arrived = from, sent_s, arrived_s;
    if (input_times(s, tl, msgs, op, &sent_s, &arrived_s)) {
        producer_done = sent_s;
        arrived = arrived_s;
    }
    if (partner && input_times(s, tl, msgs, partner, &sent_s, &arrived_s) && arrived_s > arrived && arrived_s <= to) {
        producer_done = sent_s;
        arrived = arrived_s;
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
    /* Ops marked overlap_next: the op after each, by (kind, stage, mb) (msg_index over every kind). */
    size_t npair = (size_t)OP_KIND_COUNT * (size_t)s->nstages * (size_t)s->m;
    sched_op *pair_next = NULL;
    /* A schedule given as a timeline alone (no op lists, as tests and hand-made reports build it) has no pairs. */
    for (int r = 0; s->ops && s->nops && r < s->pp; r++)
        for (int i = 0; i + 1 < s->nops[r]; i++) {
            const sched_op *a = &s->ops[r][i];
            if (!a->overlap_next)
                continue;
            if (!pair_next) {
                pair_next = pg_xmalloc(npair * sizeof *pair_next);
                for (size_t k = 0; k < npair; k++)
                    pair_next[k].stage = -1;
            }
            pair_next[msg_index(s, a->kind, a->stage, a->mb)] = s->ops[r][i + 1];
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
            if (mine[i]->start_s > mine[i - 1]->end_s) {
                const tl_op *partner = NULL;
                tl_op next;
                const sched_op *p = pair_next && mine[i]->kind < OP_KIND_COUNT && mine[i]->stage >= 0 &&
                                            mine[i]->stage < s->nstages && mine[i]->mb >= 0 && mine[i]->mb < s->m
                                        ? &pair_next[msg_index(s, mine[i]->kind, mine[i]->stage, mine[i]->mb)]
                                        : NULL;
                if (p && p->stage >= 0) {
                    next = (tl_op){.rank = mine[i]->rank, .stage = p->stage, .mb = p->mb, .kind = p->kind};
                    partner = &next;
                }
                split_gap(s, tl, msgs, mine[i], partner, mine[i - 1]->end_s, mine[i]->start_s, first_backward_s,
                          last_forward_end_s, &out[r]);
            }
    }
    free(pair_next);
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
