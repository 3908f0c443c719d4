/* vblock.c: see vblock.h.
 *
 * Per rank the repeated block is walked slot by slot: a slot holding a pass
 * emits it; a free slot emits the oldest deferred W (W of the first backward
 * chunk before the second, as the block leaves them), and the W still
 * deferred at the end follow in order.  Linear in the number of slots. */
#include "schedule/vblock.h"

#include <stdlib.h>
#include <string.h>

typedef struct wfifo {
    int *stage, *mb;
    int head, tail;
} wfifo;

static void rank_order(const int *slot, int r, schedule *out)
{
    int pp = out->pp, m = out->m;
    int stage_of[VB_PASSES] = {r, 2 * pp - 1 - r, 2 * pp - 1 - r, r};
    op_kind kind_of[VB_PASSES] = {OP_F, OP_F, OP_B, OP_B};
    int lo = slot[0], hi = slot[0];
    for (int k = 1; k < VB_PASSES; k++) {
        if (slot[k] < lo) lo = slot[k];
        if (slot[k] > hi) hi = slot[k];
    }
    /* The W queues: index 0 for the first backward (chunk 1), 1 for chunk 0. */
    wfifo q[2];
    for (int c = 0; c < 2; c++) {
        q[c].stage = pg_xmalloc((size_t)m * sizeof(int));
        q[c].mb = pg_xmalloc((size_t)m * sizeof(int));
        q[c].head = q[c].tail = 0;
    }
    int last = hi + VB_PERIOD * (m - 1);
    for (int t = lo; t <= last; t++) {
        int emitted = 0;
        for (int k = 0; k < VB_PASSES && !emitted; k++) {
            int d = t - slot[k];
            if (d < 0 || d % VB_PERIOD != 0 || d / VB_PERIOD >= m) continue;
            int mb = d / VB_PERIOD;
            sched_push(out, r, kind_of[k], stage_of[k], mb);
            if (kind_of[k] == OP_B) {
                wfifo *w = &q[k == VB_B1 ? 0 : 1];
                w->stage[w->tail] = stage_of[k];
                w->mb[w->tail++] = mb;
            }
            emitted = 1;
        }
        for (int c = 0; c < 2 && !emitted; c++) {
            if (q[c].head < q[c].tail) {
                sched_push(out, r, OP_W, q[c].stage[q[c].head], q[c].mb[q[c].head]);
                q[c].head++;
                emitted = 1;
            }
        }
    }
    for (int c = 0; c < 2; c++) {
        for (; q[c].head < q[c].tail; q[c].head++) sched_push(out, r, OP_W, q[c].stage[q[c].head], q[c].mb[q[c].head]);
        free(q[c].stage);
        free(q[c].mb);
    }
}

int vblock_build(const int (*slot)[VB_PASSES], schedule *out, pg_status *st)
{
    for (int r = 0; r < out->pp; r++) {
        for (int a = 0; a < VB_PASSES; a++)
            for (int b = a + 1; b < VB_PASSES; b++) {
                int d = slot[r][a] - slot[r][b];
                if (((d % VB_PERIOD) + VB_PERIOD) % VB_PERIOD == 0)
                    return pg_fail(st, PG_EXIT_INTERNAL, "building block: rank %d passes %d and %d collide", r, a, b);
            }
    }
    for (int r = 0; r < out->pp; r++) rank_order(slot[r], r, out);
    return 0;
}
