/* gen_vmin.c: V-Min (seed B): a third of 1F1B's activation memory,
 * (pp+4)//3 stage units per rank, bubble about 2/3 of 1F1B's when F, B and W
 * cost the same (it degrades when they differ, as the paper notes).
 *
 * Candidates: the paper's V-Min building block (every offset between
 * adjacent ranks 1 slot, plus a 2-slot gap when 3 divides pp so the passes of
 * a rank stay apart modulo the period), squeezed and reordered, and the
 * greedy list scheduler under the same limit.  The best span wins. */
#include <stdlib.h>
#include "schedule/generators.h"
#include "schedule/vfamily.h"

/* Extra slots between the forward and backward halves when 3 divides pp. */
#define VMIN_GAP 2
#define VMIN_GAP_MODULUS 3

int sched_gen_vmin(const sched_params *p, schedule *out, pg_status *st)
{
    int pp = p->pp, gap = pp % VMIN_GAP_MODULUS == 0 ? VMIN_GAP : 0;
    int (*slot)[VB_PASSES] = pg_xmalloc((size_t)pp * sizeof *slot);
    for (int i = 0; i < pp; i++) {
        slot[i][VB_F0] = i;
        slot[i][VB_F1] = 2 * pp - 1 - i;
        slot[i][VB_B1] = 2 * pp + gap + i;
        slot[i][VB_B0] = 4 * pp + gap - 1 - i;
    }
    int rc = vfamily_generate(p, "v-min", (double)((pp + 4) / 3), (const int (*)[VB_PASSES])slot, out, st);
    free(slot);
    return rc;
}
