/* gen_dualpipev.c: DeepSeek's DualPipeV (the V-shape "cut-in-half" DualPipe).
 *
 * V placement: rank r holds stage r (phase 0) and stage 2pp-1-r (phase 1).
 * Each rank runs eight steps (counts from DualPipeV's published design):
 *   1. 2(pp-r-1) forwards of phase 0;            2. r+1 pairs F0, F1;
 *   3. pp-r-1 times B1 (W deferred), W, F1;       4. m-2pp+r+1 times F0+B1, F1+B0;
 *   5. pp-r-1 times B1, F1+B0;                    6. r+1 pairs B1, B0, deferring W
 *      from the middle of the step on;            7. pp-r-1 times W, B0 (W deferred);
 *   8. r+1 deferred W.
 * An overlapped "F and B" pair of DualPipeV is two ops, F first, the F
 * marked overlap_next: the simulator runs their computes back to back while
 * each one's expert-parallel all-to-alls proceed under the other's compute
 * (sim.h).  Simplifications of our op model (documented in the report): a backward that does
 * not defer its W is B immediately followed by its W (our schedules never mix
 * fused and split backwards).  Deferred W's run oldest first, as DualPipeV's
 * weight-gradient queue does.  DualPipeV needs m >= 2pp. */
#include <stdlib.h>
#include "schedule/dualpipev.h"
#include "schedule/generators.h"

typedef struct dpv {
    schedule *s;
    int r, stage[2];
    int nf[2], nb[2];       /* next microbatch per phase */
    int *wq_stage, *wq_mb;  /* deferred W queue */
    int wq_head, wq_tail;
    int b_first;            /* overlapped pairs as B then F */
} dpv;

static void fwd(dpv *d, int ph)
{
    sched_push(d->s, d->r, OP_F, d->stage[ph], d->nf[ph]++);
}

static void bwd(dpv *d, int ph, int defer_w)
{
    int mb = d->nb[ph]++;
    sched_push(d->s, d->r, OP_B, d->stage[ph], mb);
    if (defer_w) {
        d->wq_stage[d->wq_tail] = d->stage[ph];
        d->wq_mb[d->wq_tail++] = mb;
    } else {
        sched_push(d->s, d->r, OP_W, d->stage[ph], mb);
    }
}

static void wpop(dpv *d)
{
    if (d->wq_head >= d->wq_tail) return;
    sched_push(d->s, d->r, OP_W, d->wq_stage[d->wq_head], d->wq_mb[d->wq_head]);
    d->wq_head++;
}

/* DualPipeV's overlapped "forward of phase f, backward of phase b". */
static void pair(dpv *d, int f, int b)
{
    if (d->b_first) {
        bwd(d, b, 0);
        fwd(d, f);
    } else {
        fwd(d, f);
        sched_mark_overlap_next(d->s, d->r);   /* F and the B pushed next run as one overlapped pair */
        bwd(d, b, 0);
    }
}

static void rank_ops(dpv *d, int pp, int m)
{
    int r = d->r;
    for (int i = 0; i < 2 * (pp - r - 1); i++) fwd(d, 0);
    for (int i = 0; i < r + 1; i++) {
        fwd(d, 0);
        fwd(d, 1);
    }
    for (int i = 0; i < pp - r - 1; i++) {
        bwd(d, 1, 1);
        wpop(d);
        fwd(d, 1);
    }
    for (int i = 0; i < m - 2 * pp + r + 1; i++) {
        pair(d, 0, 1);
        pair(d, 1, 0);
    }
    for (int i = 0; i < pp - r - 1; i++) {
        bwd(d, 1, 0);
        pair(d, 1, 0);
    }
    int defer = 0, n6 = r + 1;
    for (int i = 0; i < n6; i++) {
        if (i == n6 / 2 && r % 2 == 1) defer = 1;
        bwd(d, 1, defer);
        if (i == n6 / 2 && r % 2 == 0) defer = 1;
        bwd(d, 0, defer);
    }
    for (int i = 0; i < pp - r - 1; i++) {
        wpop(d);
        bwd(d, 0, 1);
    }
    while (d->wq_head < d->wq_tail) wpop(d);
}

int sched_gen_dualpipev(const sched_params *p, schedule *out, pg_status *st)
{
    return dualpipev_build(p, 0, "dualpipe-v", out, st);
}

int dualpipev_build(const sched_params *p, int b_first, const char *name, schedule *out, pg_status *st)
{
    int pp = p->pp, m = p->m;
    if (m < 2 * pp)
        return pg_fail_key(st, PG_EXIT_INPUT, "microbatches", "dualpipe-v needs at least 2*pp = %d (got %d)",
                       2 * pp, m);
    sched_init(out, name, pp, 2, m);
    sched_place_v(out);
    dpv d;
    d.s = out;
    d.b_first = b_first;
    d.wq_stage = pg_xmalloc((size_t)2 * m * sizeof(int));
    d.wq_mb = pg_xmalloc((size_t)2 * m * sizeof(int));
    for (int r = 0; r < pp; r++) {
        d.r = r;
        d.stage[0] = r;
        d.stage[1] = 2 * pp - 1 - r;
        d.nf[0] = d.nf[1] = d.nb[0] = d.nb[1] = 0;
        d.wq_head = d.wq_tail = 0;
        rank_ops(&d, pp, m);
    }
    free(d.wq_stage);
    free(d.wq_mb);
    return 0;
}
