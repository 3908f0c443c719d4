/* bound_internal.h: private to the bound module: one microbatch's chain of
 * ops, and the two per-rank relaxations built on it.
 *
 * Every microbatch has the same dependency graph:
 *   F(0) -> F(1) -> ... -> F(S-1) -> B(S-1) -> ... -> B(0),  B(s) -> W(s)
 * (B stands for the fused BW when the backward is fused).  Resource-free,
 * op x can start no earlier than its head h(x) (longest chain before it) and
 * the schedule lasts at least tail q(x) after x ends (longest chain after
 * it).  Both include comm_s on every edge between stages on different ranks.
 */
#ifndef PG_OPT_BOUND_INTERNAL_H
#define PG_OPT_BOUND_INTERNAL_H

#include "opt/bound_input.h"

typedef struct bound_chain {
    int nstages;
    double *bk;              /* [S] duration of the backward op on the chain: b (split) or b + w (fused) */
    double *head_f, *head_b, *head_w;   /* [S] earliest starts */
    double *tail_f, *tail_b, *tail_w;   /* [S] least time after the op ends */
} bound_chain;

void bound_chain_build(const bound_input *in, bound_chain *c);
void bound_chain_free(bound_chain *c);

/* Machine bound of rank r: optimal preemptive one-machine schedule of r's
 * ops with heads and tails (Jackson's rule), memory ignored. */
double bound_machine_rank(const bound_input *in, const bound_chain *c, int r);

/* The earliest time rank r can have run all its ops (preemptive, from their
 * heads: Jackson's rule with no tails), leaving out one weight-gradient op
 * (W, or BW fused) of stage skip_w_stage (-1: none).  When the left-out op
 * runs last, this is a lower bound on its start. */
double bound_rank_ops_done(const bound_input *in, const bound_chain *c, int r, int skip_w_stage);

/* Memory bound of rank r under in->mem_limit (> 0); *remat_ops receives the
 * recomputations the bound assumes (0 without remat). */
double bound_memory_rank(const bound_input *in, const bound_chain *c, int r, double *remat_ops);

/* Stage activations per rank (v) and K in chunk units (v * K). */
int bound_stages_per_rank(const bound_input *in);

#endif
