/* gen_1f1b.c: 1F1B (PipeDream-flush), fused backward.
 *
 * Rank s first runs min(p-s-1, m) warm-up forwards (enough to keep the
 * pipeline full until the first gradient comes back), then alternates one
 * forward and one backward, then drains the remaining backwards.  At most
 * min(p-s, m) activations are live on rank s; makespan (m+p-1)(F+B+W) at
 * t_comm = 0, the same as GPipe. */
#include "schedule/generators.h"

int sched_gen_1f1b(const sched_params *p, schedule *out, pg_status *st)
{
    (void)st;
    sched_init(out, "1f1b", p->pp, 1, p->m);
    sched_place_contiguous(out);
    for (int r = 0; r < p->pp; r++) {
        int warmup = p->pp - r - 1 < p->m ? p->pp - r - 1 : p->m;
        int f = 0, b = 0;
        while (f < warmup)
            sched_push(out, r, OP_F, r, f++);
        while (f < p->m) {
            sched_push(out, r, OP_F, r, f++);
            sched_push(out, r, OP_BW, r, b++);
        }
        while (b < p->m)
            sched_push(out, r, OP_BW, r, b++);
    }
    return 0;
}
