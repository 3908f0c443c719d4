/* bound_input.h: what the lower bound of a pipeline iteration reads
 * (bound.h says what it computes from it): a plain type, its own module so
 * that the bound's parts (bound_internal.h: the chain, the machine and the
 * memory bounds) and the bound's entry point (bound.c) both depend on it
 * and not on each other's headers. */
#ifndef PG_OPT_BOUND_INPUT_H
#define PG_OPT_BOUND_INPUT_H

typedef struct bound_input {
    int pp;                    /* ranks, >= 1 */
    int nstages;               /* S = pp * v, every rank holding v stages */
    int m;                     /* microbatches, >= 1 */
    const int *stage_rank;     /* [nstages] rank of each stage, model order */
    const double *f, *b, *w;   /* [nstages] seconds per op of that stage */
    const double *w_fraction;  /* [nstages] part of a stage's activation W still needs after B; NULL = 0 */
    double comm_s;             /* latency of a cross-rank dependency */
    double mem_limit;          /* K, M_B units per rank; <= 0: unlimited */
    int split;                 /* 1: B/W may be split; 0: fused backward only */
    int remat;                 /* 1: recomputation allowed */
} bound_input;

#endif
