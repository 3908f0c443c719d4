/* actmem.h: how one (stage, microbatch)'s activation moves, under a plan.
 *
 * The one place that turns a plan's choices (schedule/plan.h) and a stage's
 * costs (model/workload.h, model/memory.h) into bytes and seconds, so that
 * the engine (which runs the copies and recomputes) and the metrics (which
 * replay memory) cannot disagree.  Events of one (stage, mb), in order:
 *
 *   F start    +f_alloc            (M_B; only the input with full recompute;
 *                                   M_B minus the attention core with selective)
 *   D2H end    -offload_bytes      (offloaded: all that F kept)
 *   H2D start  +offload_bytes      (before the first consumer: R, else B / BW)
 *   R start    +r_alloc            (what F did not keep), lasting r_ref_s; before a
 *                                   fused BW, r_alloc_fused.  Full recomputation of a
 *                                   layered stage (workload.h full_keep_bytes) runs
 *                                   one layer at a time: R then holds one layer's
 *                                   activations (and, before a split B, what W keeps);
 *                                   selective recomputation of a layered stage, one
 *                                   layer's attention core
 *   B end      -b_release          (M_B - M_W; with the backward recompute
 *                                   all but the input)
 *   RW start   +rw_alloc           (M_W - input), lasting rw_ref_s
 *   W end      -w_release          (M_W)
 *   BW end     -bw_release         (all F and R allocated)
 * Every path sums to zero.  Seconds are on the reference GPU (workload.h).
 */
#ifndef PG_SIM_ACTMEM_H
#define PG_SIM_ACTMEM_H

#include "model/workload.h"
#include "schedule/plan.h"

typedef struct act_flow {
    double f_alloc;
    double offload_bytes;     /* 0: not offloaded */
    double r_alloc, r_ref_s;  /* r_ref_s 0 with r_alloc 0: no R */
    double r_alloc_fused;     /* R's allocation when its consumer is a fused BW */
    int has_r;
    double b_release;
    double rw_alloc, rw_ref_s;
    int has_rw;
    double w_release;
    double bw_release;
} act_flow;

/* p may be NULL (no plan: the zero-bubble accounting). */
void act_flow_of(const workload *w, const memplan *p, int stage, int mb, act_flow *out);

/* Seconds of one op (F, B, W or fused BW = B + W) of a stage on the
 * reference GPU, before any recomputation the plan adds. */
double actmem_op_ref_s(const stage_cost *c, int kind);

#endif
