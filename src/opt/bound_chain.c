/* bound_chain.c: one microbatch's chain (heads and tails), which every part
 * of the bound reads (bound_internal.h): the critical path and the per-rank
 * relaxations (bound.c, bound_machine.c, bound_memory.c) and the
 * all-reduce's bound (bound_dp.c).  Its own file so that those parts call
 * down into it and never back into bound.c. */
#include <math.h>
#include <stdlib.h>

#include "opt/bound_internal.h"
#include "util/error.h"

int bound_stages_per_rank(const bound_input *in)
{
    return in->nstages / in->pp;
}

/* Latency of the edge between stages a and b. */
static double edge(const bound_input *in, int a, int b)
{
    return in->stage_rank[a] != in->stage_rank[b] ? in->comm_s : 0.0;
}

void bound_chain_build(const bound_input *in, bound_chain *c)
{
    int S = in->nstages;
    c->nstages = S;
    double *all = pg_xcalloc((size_t)S * 7, sizeof *all);
    c->bk = all;
    c->head_f = all + S;
    c->head_b = all + 2 * S;
    c->head_w = all + 3 * S;
    c->tail_f = all + 4 * S;
    c->tail_b = all + 5 * S;
    c->tail_w = all + 6 * S;
    for (int s = 0; s < S; s++)
        c->bk[s] = in->split ? in->b[s] : in->b[s] + in->w[s];
    /* Heads, forward along the chain: F(s) waits for F(s-1); B(S-1) for
     * F(S-1) (same stage, so same rank: no latency); B(s) for B(s+1). */
    c->head_f[0] = 0.0;
    for (int s = 1; s < S; s++)
        c->head_f[s] = c->head_f[s - 1] + in->f[s - 1] + edge(in, s - 1, s);
    c->head_b[S - 1] = c->head_f[S - 1] + in->f[S - 1];
    for (int s = S - 2; s >= 0; s--)
        c->head_b[s] = c->head_b[s + 1] + c->bk[s + 1] + edge(in, s + 1, s);
    for (int s = 0; s < S; s++)
        c->head_w[s] = c->head_b[s] + c->bk[s];
    /* Tails, backward along the chain.  After W nothing needs to follow.
     * After B(s): its own W (split), and B(s-1) with everything after it. */
    for (int s = 0; s < S; s++) {
        c->tail_w[s] = 0.0;
        double own_w = in->split ? in->w[s] : 0.0;
        double rest = s > 0 ? edge(in, s, s - 1) + c->bk[s - 1] + c->tail_b[s - 1] : 0.0;
        c->tail_b[s] = own_w > rest ? own_w : rest;
    }
    /* After F(s): F(s+1) and its tail; after F(S-1) the loss turn B(S-1). */
    c->tail_f[S - 1] = c->bk[S - 1] + c->tail_b[S - 1];
    for (int s = S - 2; s >= 0; s--)
        c->tail_f[s] = edge(in, s, s + 1) + in->f[s + 1] + c->tail_f[s + 1];
}

void bound_chain_free(bound_chain *c)
{
    free(c->bk);
    c->bk = NULL;
}
