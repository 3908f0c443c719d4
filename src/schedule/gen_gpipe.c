/* gen_gpipe.c: GPipe.
 *
 * Every rank runs all m forwards, then all m fused backwards in microbatch
 * order 0..m-1 (the order of PyTorch's ScheduleGPipe).  The last stage starts
 * backward 0 as soon as its last forward ends, so the backward wave pipelines
 * like the forward one: makespan (m+p-1)(F+B+W) at t_comm = 0, and every rank
 * holds all m activations at its peak.  Descending backward order would give
 * the same makespan; ascending keeps the first-in first-out memory release. */
#include "schedule/generators.h"

int sched_gen_gpipe(const sched_params *p, schedule *out, pg_status *st)
{
    (void)st;
    sched_init(out, "gpipe", p->pp, 1, p->m);
    sched_place_contiguous(out);
    for (int r = 0; r < p->pp; r++) {
        for (int j = 0; j < p->m; j++)
            sched_push(out, r, OP_F, r, j);
        for (int j = 0; j < p->m; j++)
            sched_push(out, r, OP_BW, r, j);
    }
    return 0;
}
