/* gen_zbh1.c: ZB-H1 (Qi et al., zero bubble pipeline parallelism, handcrafted 1).
 *
 * Same warm-up and memory as 1F1B (rank s holds at most p activations: p-s
 * from the warm-up, s more because its W's run s microbatches late); the
 * deferred W's fill the cool-down, leaving a bubble of (p-1)(F+B-W) instead
 * of 1F1B's (p-1)(F+B+W) at t_comm = 0. */
#include <stdlib.h>
#include "schedule/generators.h"
#include "schedule/zb_handcrafted.h"

int sched_gen_zbh1(const sched_params *p, schedule *out, pg_status *st)
{
    (void)st;
    int *warmup = pg_xmalloc((size_t)p->pp * sizeof *warmup);
    int *lag = pg_xmalloc((size_t)p->pp * sizeof *lag);
    for (int s = 0; s < p->pp; s++) {
        warmup[s] = p->pp - s;
        lag[s] = s;
    }
    sched_zb_handcrafted(p, "zb-h1", warmup, lag, out);
    free(warmup);
    free(lag);
    return 0;
}
