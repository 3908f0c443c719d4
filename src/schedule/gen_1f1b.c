/* gen_1f1b.c: 1F1B (PipeDream-flush), fused backward.
 *
 * Rank s first runs min(p-s-1, m) warm-up forwards (enough to keep the
 * pipeline full until the first gradient comes back), then alternates one
 * forward and one backward, then drains the remaining backwards.  At most
 * min(p-s, m) activations are live on rank s; makespan (m+p-1)(F+B+W) at
 * t_comm = 0, the same as GPipe.
 *
 * With p->ep_overlap (Megatron-Core's combined 1F1B, which it runs without
 * a pipeline or with virtual stages only: pp = 1 here) the one rank runs one
 * warm-up forward, then each forward marked overlap_next with the backward
 * of the microbatch before it (combined_1f1b_schedule_for_no_pipelining:
 * F0, F1+B0, ..., B(m-1)). */
#include "schedule/generators.h"

int sched_gen_1f1b(const sched_params *p, schedule *out, pg_status *st)
{
    if (p->ep_overlap && p->pp > 1)
        return pg_fail_key(st, PG_EXIT_INPUT, "ep.overlap",
                           "Megatron-Core overlaps the all-to-alls with pp > 1 only in its interleaved schedule "
                           "(schedule=interleaved), not in 1f1b with pp = %d", p->pp);
    sched_init(out, "1f1b", p->pp, 1, p->m);
    sched_place_contiguous(out);
    for (int r = 0; r < p->pp; r++) {
        int want = p->pp - r - 1 + (p->ep_overlap ? 1 : 0);
        int warmup = want < p->m ? want : p->m;
        int f = 0, b = 0;
        while (f < warmup)
            sched_push(out, r, OP_F, r, f++);
        while (f < p->m) {
            sched_push(out, r, OP_F, r, f++);
            if (p->ep_overlap)
                sched_mark_overlap_next(out, r);
            sched_push(out, r, OP_BW, r, b++);
        }
        while (b < p->m)
            sched_push(out, r, OP_BW, r, b++);
    }
    return 0;
}
