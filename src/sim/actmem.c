/* actmem.c: bytes and seconds of one activation's path (actmem.h). */
#include "sim/actmem.h"

#include <string.h>

#include "model/memory.h"

static double at_most(double x, double cap)
{
    return x < cap ? x : cap;
}

void act_flow_of(const workload *w, const memplan *p, int stage, int mb, act_flow *out)
{
    const stage_cost *c = &w->stage[stage];
    memset(out, 0, sizeof *out);
    out->f_alloc = c->act_b_bytes;
    out->b_release = c->act_b_bytes - c->act_w_bytes;
    out->w_release = c->act_w_bytes;
    out->bw_release = c->act_b_bytes;
    if (p == NULL)
        return;
    plan_choice ch = plan_get(p, stage, mb);
    double input = memory_input_bytes(w, stage);
    if (ch.fwd == PLAN_FWD_FULL) {
        out->f_alloc = at_most(c->full_keep_bytes > 0 ? c->full_keep_bytes : input, c->act_b_bytes);
        out->has_r = 1;
        out->r_ref_s = memory_fwd_recompute_s(c);
    } else if (ch.fwd == PLAN_FWD_SELECTIVE) {
        out->f_alloc = c->act_b_bytes - memory_selective_bytes(c);
        out->has_r = 1;
        out->r_ref_s = memory_selective_s(c);
    }
    out->r_alloc = c->act_b_bytes - out->f_alloc;
    out->r_alloc_fused = out->r_alloc;
    if (ch.fwd == PLAN_FWD_FULL && c->full_keep_bytes > 0 && ch.bwd != PLAN_BWD_RECOMPUTE) {
        /* layer by layer: one layer's activations at a time, plus, before a
         * split B, the weight-gradient inputs of the layers already done */
        double one_layer = c->layer_act_b_bytes - c->layer_act_w_bytes;
        out->r_alloc = at_most(c->act_w_bytes + one_layer, out->r_alloc);
        out->r_alloc_fused = at_most(c->layer_act_b_bytes, out->r_alloc_fused);
        out->b_release = out->f_alloc + out->r_alloc - c->act_w_bytes;
    }
    if (ch.fwd == PLAN_FWD_SELECTIVE && c->layers > 1 && ch.bwd != PLAN_BWD_RECOMPUTE) {
        /* Megatron recomputes a layer's attention core inside that layer's
         * backward and frees it after: one layer's core at a time, whatever
         * the pipeline (Korthikanti et al. 2022, Section 5), so the stage's
         * stored bytes are sbh(34/t...) without the 5as/h term.  B keeps
         * what W needs, as without recomputation. */
        out->r_alloc = out->r_alloc / c->layers;
        out->r_alloc_fused = out->r_alloc;
        double held = out->f_alloc + out->r_alloc;
        double kept_for_w = at_most(c->act_w_bytes, held);
        out->b_release = held - kept_for_w;
        out->w_release = kept_for_w;
    }
    if (ch.bwd == PLAN_BWD_RECOMPUTE) {
        double kept = at_most(input, c->act_w_bytes);
        out->b_release = out->f_alloc + out->r_alloc - kept;
        out->has_rw = 1;
        out->rw_alloc = c->act_w_bytes - kept;
        out->rw_ref_s = memory_fwd_recompute_s(c);
    }
    if (ch.offload)
        out->offload_bytes = out->f_alloc;
    out->bw_release = out->f_alloc + out->r_alloc_fused;
}

double actmem_op_ref_s(const stage_cost *c, int kind)
{
    switch (kind) {
    case OP_F: return c->f_s;
    case OP_B: return c->b_s;
    case OP_W: return c->w_s;
    case OP_BW: return c->b_s + c->w_s;
    default: return 0.0;
    }
}
