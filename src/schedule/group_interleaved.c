/* group_interleaved.c: the group-interleaved 1F1B builder (group_interleaved.h). */
#include "schedule/group_interleaved.h"

#include <stdlib.h>

/* Slots of one pass in the building block: F, B and W of a chunk take one
 * slot each, so a group of G microbatches over v chunks spans 3Gv slots. */
#define PASSES_PER_CHUNK 3
/* PipeOffload's building block offsets: a rank's F starts one slot after the
 * previous rank's, a B two slots after the next rank's. */
#define F_OFFSET 1
#define B_OFFSET 2

typedef struct slot_op {
    long slot;
    sched_op op;
} slot_op;

static int by_slot(const void *a, const void *b)
{
    long x = ((const slot_op *)a)->slot, y = ((const slot_op *)b)->slot;
    return (x > y) - (x < y);
}

int group_interleaved_min_group(const sched_params *p)
{
    int g = (p->pp + 1) / 2;
    double fbw = p->t_f + p->t_b + p->t_w;
    double need = p->pp * (p->t_f > p->t_b ? p->t_f : p->t_b);
    while (g < p->pp && fbw * g < need)
        g++;
    return g;
}

int group_interleaved_build(const sched_params *p, int g, const char *name, schedule *out, pg_status *st)
{
    int pp = p->pp, v = p->chunks, m = p->m;
    if (v < 1)
        return pg_fail_key(st, PG_EXIT_INPUT, "chunks", "%s needs at least 1 stage per rank (got %d)", name, v);
    if (g < 1 || g > pp)
        return pg_fail_key(st, PG_EXIT_INPUT, "pp", "%s: group size %d outside 1..pp = %d", name, g, pp);
    sched_init(out, name, pp, v, m);
    sched_place_looping(out);
    long group_slots = (long)PASSES_PER_CHUNK * g * v;
    int groups = (m + g - 1) / g;
    size_t per_rank = (size_t)PASSES_PER_CHUNK * (size_t)v * (size_t)m;
    slot_op *ops = pg_xmalloc(per_rank * sizeof *ops);
    for (int d = 0; d < pp; d++) {
        size_t n = 0;
        long last_first_f = (long)PASSES_PER_CHUNK * g * (v - 1) + (long)d * F_OFFSET;
        long first_b = last_first_f + (long)(pp - 1 - d) * (F_OFFSET + B_OFFSET) + 1;
        for (int k = 0; k < groups; k++) {
            for (int c = 0; c < v; c++) {
                for (int i = 0; i < g; i++) {
                    int mb = k * g + i;
                    if (mb >= m)
                        continue;
                    long base = group_slots * k + (long)PASSES_PER_CHUNK * (g * c + i);
                    long f = base + (long)d * F_OFFSET, b = base + first_b;
                    int back_chunk = v - 1 - c;
                    ops[n++] = (slot_op){f, {.stage = c * pp + d, .mb = mb, .kind = OP_F}};
                    ops[n++] = (slot_op){b, {.stage = back_chunk * pp + d, .mb = mb, .kind = OP_B}};
                    ops[n++] = (slot_op){b + 1, {.stage = back_chunk * pp + d, .mb = mb, .kind = OP_W}};
                }
            }
        }
        qsort(ops, n, sizeof *ops, by_slot);
        for (size_t i = 0; i < n; i++)
            sched_push(out, d, (op_kind)ops[i].op.kind, ops[i].op.stage, ops[i].op.mb);
    }
    free(ops);
    return 0;
}
