/* gen_vzb.c: the V-ZB family of seed B (controllable memory): V placement,
 * split backward, activation limit memory.limit in stage units (<= 0: 1F1B's
 * pp, where the family is bubble-free).  Less memory trades for bubble.
 *
 * Candidates (vfamily.h): the greedy list scheduler, the ZB-V construction
 * and, below 1F1B's memory on instances small enough for the search, seed
 * B's building blocks: the first rank's pattern (slots of F, f, B, b within
 * one period), two uniform offsets [d, -1, d, -1] between adjacent ranks
 * (the first len0 ranks use d0, the others d1 <= d0) -- paper sec. 3.1 and
 * app. A -- each turned into an order by the slot-grid recipe (vgrid.h).
 * A block whose steady-state lifespans exceed the limit is skipped before
 * it is built. */
#include <stdlib.h>
#include <string.h>

#include "schedule/generators.h"
#include "schedule/vfamily.h"

/* Largest uniform offset of the search (the paper's 1..5 within a period of 6). */
#define VZB_MAX_OFFSET (VB_PERIOD - 1)
/* Slot-grid work (blocks x ranks x slots) allowed for the block search. */
#define VZB_SEARCH_BUDGET 4e7

static int mod6(int x)
{
    return ((x % VB_PERIOD) + VB_PERIOD) % VB_PERIOD;
}

/* Smallest slot > after congruent to pos modulo the period. */
static int next_at(int after, int pos)
{
    int s = after + 1;
    return s + mod6(pos - s);
}

/* Steady-state live activations of rank r's pattern, chunk units: a chunk
 * is live from its F to its W (the first free position after its B); at
 * slot t microbatch j is live when F + 6j <= t < W + 6j. */
static int block_peak(const int *sl)
{
    int used[VB_PERIOD] = {0};
    for (int k = 0; k < VB_PASSES; k++) used[mod6(sl[k])] = 1;
    int w[2];
    const int b_of[2] = {VB_B1, VB_B0}, f_of[2] = {VB_F1, VB_F0};
    for (int c = 0; c < 2; c++) {
        int s = sl[b_of[c]] + 1;
        while (used[mod6(s)]) s++;
        used[mod6(s)] = 1;
        w[c] = s;
    }
    int peak = 0;
    for (int t = 0; t < VB_PERIOD; t++) {
        int live = 0;
        for (int c = 0; c < 2; c++) {
            /* at a slot of phase t the live microbatches of this chunk are
             * those whose F was d, d + 6, ... slots ago, less than the lifespan */
            int life = w[c] - sl[f_of[c]];
            for (int age = mod6(t - sl[f_of[c]]); age < life; age += VB_PERIOD) live++;
        }
        if (live > peak) peak = live;
    }
    return peak;
}

/* The block of first-rank positions (f, B, b), offsets d0 for ranks
 * 1..len0 and d1 beyond; 0 if some rank's passes collide. */
static int make_block(int pp, int pf, int pb1, int pb0, int d0, int d1, int len0, int (*slot)[VB_PASSES])
{
    int pos[VB_PASSES] = {0, pf, pb1, pb0};
    slot[0][VB_F0] = 0;
    for (int i = 1; i < pp; i++) slot[i][VB_F0] = slot[i - 1][VB_F0] + (i <= len0 ? d0 : d1);
    /* each later pass is the first slot after its input at its position;
     * the flows toward rank 0 move one slot per rank */
    slot[pp - 1][VB_F1] = next_at(slot[pp - 1][VB_F0], pos[VB_F1] - (pp - 1));
    for (int i = pp - 2; i >= 0; i--) slot[i][VB_F1] = slot[i + 1][VB_F1] + 1;
    slot[0][VB_B1] = next_at(slot[0][VB_F1], pos[VB_B1]);
    for (int i = 1; i < pp; i++) slot[i][VB_B1] = slot[i - 1][VB_B1] + (i <= len0 ? d0 : d1);
    slot[pp - 1][VB_B0] = next_at(slot[pp - 1][VB_B1], pos[VB_B0] - (pp - 1));
    for (int i = pp - 2; i >= 0; i--) slot[i][VB_B0] = slot[i + 1][VB_B0] + 1;
    for (int i = 0; i < pp; i++)
        for (int a = 0; a < VB_PASSES; a++)
            for (int b = a + 1; b < VB_PASSES; b++)
                if (mod6(slot[i][a]) == mod6(slot[i][b])) return 0;
    return 1;
}

int sched_gen_vzb(const sched_params *p, schedule *out, pg_status *st)
{
    double limit = p->mem_limit > 0.0 ? p->mem_limit : (double)p->pp;
    int pp = p->pp;
    vf_blocks blocks = {0};
    double per_block = (double)pp * (VB_PERIOD * p->m + 4 * pp);
    if (limit < pp && pp > 1 && per_block * VB_PERIOD * VB_PERIOD * VB_PERIOD * pp <= VZB_SEARCH_BUDGET) {
        int max_chunks = (int)(2.0 * limit + 1e-9);
        int (*slot)[VB_PASSES] = pg_xmalloc((size_t)pp * sizeof *slot);
        for (int pf = 1; pf < VB_PERIOD; pf++)
            for (int pb1 = 1; pb1 < VB_PERIOD; pb1++)
                for (int pb0 = 1; pb0 < VB_PERIOD; pb0++) {
                    if (pf == pb1 || pf == pb0 || pb1 == pb0) continue;
                    for (int d0 = 1; d0 <= VZB_MAX_OFFSET; d0++)
                        for (int d1 = 1; d1 <= d0; d1++)
                            for (int len0 = 1; len0 < pp; len0++) {
                                if (d1 == d0 && len0 > 1) break;  /* same block for every len0 */
                                if (!make_block(pp, pf, pb1, pb0, d0, d1, len0, slot)) continue;
                                int pk = 0;
                                for (int i = 0; i < pp; i++) {
                                    int b = block_peak(slot[i]);
                                    if (b > pk) pk = b;
                                }
                                if (pk > max_chunks) continue;
                                vf_blocks_add(&blocks, (const int (*)[VB_PASSES])slot, pp);
                            }
                }
        free(slot);
    }
    int rc = vfamily_generate_blocks(p, "v-zb", limit, &blocks, out, st);
    vf_blocks_free(&blocks);
    return rc;
}
