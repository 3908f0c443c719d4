/* gen_zbh2.c: ZB-H2 (Qi et al., zero bubble pipeline parallelism, handcrafted 2).
 *
 * Rank s runs 2(p-s)-1 warm-up forwards, enough to stay busy until its first
 * gradient arrives, and defers its W's by 2s microbatches so the tail is
 * filled too: every rank is busy from its first op to its last (per-rank span
 * m(F+B+W) + (p-1)(F+B-2W) at t_comm = 0, zero bubble when F = B = W), at the
 * price of 2p-1 live activations. */
#include <stdlib.h>
#include "schedule/generators.h"
#include "schedule/zb_handcrafted.h"

int sched_gen_zbh2(const sched_params *p, schedule *out, pg_status *st)
{
    (void)st;
    int *warmup = pg_xmalloc((size_t)p->pp * sizeof *warmup);
    int *lag = pg_xmalloc((size_t)p->pp * sizeof *lag);
    for (int s = 0; s < p->pp; s++) {
        warmup[s] = 2 * (p->pp - s) - 1;
        lag[s] = 2 * s;
    }
    sched_zb_handcrafted(p, "zb-h2", warmup, lag, out);
    free(warmup);
    free(lag);
    return 0;
}
