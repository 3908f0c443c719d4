/* gen_vhalf.c: V-Half (seed B): half of 1F1B's activation memory,
 * (pp+2)//2 stage units per rank, bubble about half of 1F1B's.
 *
 * Candidates: the paper's V-Half building block (offsets between adjacent
 * ranks: 2 slots for the chunk-0 forward and the first backward, 1 for the
 * others; an extra gap of 3 slots for even pp keeps the passes of a rank
 * apart modulo the period), squeezed and reordered, and the greedy list
 * scheduler under the same limit.  The best span wins. */
#include <stdlib.h>
#include "schedule/generators.h"
#include "schedule/vfamily.h"

/* Extra slots between the forward and backward halves of the block for even
 * pp (seed B's offset table), so no two passes of a rank collide. */
#define VHALF_EVEN_GAP 3

int sched_gen_vhalf(const sched_params *p, schedule *out, pg_status *st)
{
    int pp = p->pp, gap = pp % 2 == 0 ? VHALF_EVEN_GAP : 0;
    int (*slot)[VB_PASSES] = pg_xmalloc((size_t)pp * sizeof *slot);
    for (int i = 0; i < pp; i++) {
        slot[i][VB_F0] = 2 * i;
        slot[i][VB_F1] = 3 * pp - 2 - i;
        slot[i][VB_B1] = 3 * pp + gap + 2 * i - 1;
        slot[i][VB_B0] = 6 * pp + gap - 2 - i;
    }
    int rc = vfamily_generate(p, "v-half", (double)((pp + 2) / 2), (const int (*)[VB_PASSES])slot, out, st);
    free(slot);
    return rc;
}
