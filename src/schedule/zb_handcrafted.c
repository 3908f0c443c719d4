/* zb_handcrafted.c: see zb_handcrafted.h. */
#include <stdlib.h>
#include "schedule/zb_handcrafted.h"

void sched_zb_handcrafted(const sched_params *p, const char *name, const int *warmup, const int *lag, schedule *out)
{
    sched_init(out, name, p->pp, 1, p->m);
    sched_place_contiguous(out);
    for (int s = 0; s < p->pp; s++) {
        int f = 0, w = 0, n_warm = warmup[s] < p->m ? warmup[s] : p->m;
        while (f < n_warm)
            sched_push(out, s, OP_F, s, f++);
        for (int b = 0; b < p->m; b++) {
            sched_push(out, s, OP_B, s, b);
            if (b - w >= lag[s])
                sched_push(out, s, OP_W, s, w++);
            if (f < p->m)
                sched_push(out, s, OP_F, s, f++);
        }
        while (w < p->m)
            sched_push(out, s, OP_W, s, w++);
    }
}
