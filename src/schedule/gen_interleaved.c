/* gen_interleaved.c: Megatron-LM's interleaved 1F1B (virtual pipeline).
 *
 * Each rank holds v = chunks stages, placed looping: stage c*p + r on rank r
 * (so the activation of every microbatch wraps from rank p-1 back to rank 0
 * between chunks, a message each time).  Ranks walk "virtual microbatches"
 * in groups of p: forward k is chunk (k/p) mod v of microbatch
 * (k/(p v)) p + k mod p; backwards visit the chunks in reverse.  Rank r runs
 * 2(p-r-1) + (v-1)p warm-up forwards (capped at m v), then one forward one
 * backward, then the remaining backwards; as in Megatron, m == p runs every
 * forward first.  Megatron needs m to be a multiple of p (its grouping of
 * microbatches assumes it); we refuse other m rather than invent a variant.
 * Makespan m(F+B+W) + (p-1)(F+B+W)/v at t_comm = 0; rank 0 peaks at
 * (vp + p - 1)/v activations.
 *
 * With p->ep_overlap (Megatron-Core's --overlap-moe-expert-parallel-comm,
 * its combined 1F1B) each rank runs one more warm-up forward, so that the
 * forward and the backward of every steady-state step are independent
 * (Megatron's get_pp_rank_microbatches adds the same one), and each
 * steady-state forward is marked overlap_next: it and the backward after it
 * run as one step. */
#include "schedule/generators.h"

/* Stage and microbatch of virtual forward (backward when backward != 0) k. */
static void virtual_op(const sched_params *p, int k, int backward, int rank, int *stage, int *mb)
{
    int v = p->chunks, group = k / (p->pp * v), chunk = (k / p->pp) % v;
    if (backward)
        chunk = v - 1 - chunk;
    *stage = chunk * p->pp + rank;
    *mb = group * p->pp + k % p->pp;
}

int sched_gen_interleaved(const sched_params *p, schedule *out, pg_status *st)
{
    if (p->chunks < 1)
        return pg_fail_key(st, PG_EXIT_INPUT, "chunks", "interleaved needs at least 1 stage per rank (got %d)",
                       p->chunks);
    if (p->m % p->pp != 0)
        return pg_fail_key(st, PG_EXIT_INPUT,
                       "microbatches", "interleaved (Megatron) needs a multiple of pp = %d, got %d", p->pp, p->m);
    sched_init(out, "interleaved", p->pp, p->chunks, p->m);
    sched_place_looping(out);
    int total = p->m * p->chunks;
    for (int r = 0; r < p->pp; r++) {
        int warmup = 2 * (p->pp - r - 1) + (p->chunks - 1) * p->pp + (p->ep_overlap ? 1 : 0);
        if (warmup > total || p->m == p->pp)
            warmup = total;
        int stage, mb;
        for (int k = 0; k < warmup; k++) {
            virtual_op(p, k, 0, r, &stage, &mb);
            sched_push(out, r, OP_F, stage, mb);
        }
        for (int k = 0; k < total - warmup; k++) {
            virtual_op(p, warmup + k, 0, r, &stage, &mb);
            sched_push(out, r, OP_F, stage, mb);
            if (p->ep_overlap)
                sched_mark_overlap_next(out, r);
            virtual_op(p, k, 1, r, &stage, &mb);
            sched_push(out, r, OP_BW, stage, mb);
        }
        for (int k = total - warmup; k < total; k++) {
            virtual_op(p, k, 1, r, &stage, &mb);
            sched_push(out, r, OP_BW, stage, mb);
        }
    }
    return 0;
}
