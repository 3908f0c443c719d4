/* memory.c: static memory of a rank and the recomputation sizes (memory.h). */
#include "model/memory.h"

/* Zero-bubble model: M_B = sb(34h + 5as), M_W = 32 sbh (bytes, per layer). */
#define ZB_MB_H_COEFF 34.0
#define ZB_MW_H_COEFF 32.0
/* Attention core's share of F's FLOPs, 4s / (24h + 4s), at h 4096, s 1024. */
#define ZB_REF_HIDDEN 4096.0
#define ZB_REF_SEQ 1024.0
#define ATTN_CORE_FLOPS_S 4.0
#define DENSE_FLOPS_H 24.0

/* The trained parameters of the listed stages (-1: an index outside the
 * stages); *frozen_bytes, their frozen weights' bytes (LoRA's base, bf16);
 * *expert_params (NULL: not asked), the experts' part of them. */
static double stage_params_split(const workload *w, const int *stages, int n, double *frozen_bytes,
                                 double *expert_params)
{
    double params = 0, frozen = 0, experts = 0;
    for (int i = 0; i < n; i++) {
        int s = stages[i];
        if (s < 0 || s >= w->nstages)
            return -1;
        params += stage_trainable_params(&w->stage[s]);
        experts += stage_trainable_expert_params(&w->stage[s]);
        frozen += w->stage[s].frozen_param_count;
    }
    *frozen_bytes = frozen * MEMORY_BF16_WEIGHT_BYTES;
    if (expert_params)
        *expert_params = experts;
    return params;
}

static double stage_params(const workload *w, const int *stages, int n, double *frozen_bytes)
{
    return stage_params_split(w, stages, n, frozen_bytes, NULL);
}

double memory_static_bytes(const workload *w, const int *stages, int nstages_on_rank,
                           double bytes_per_param)
{
    double frozen_bytes, params = stage_params(w, stages, nstages_on_rank, &frozen_bytes);
    return params < 0 ? -1
                      : params * bytes_per_param + frozen_bytes + memory_headroom_static_bytes(w, nstages_on_rank);
}

double memory_headroom_static_bytes(const workload *w, int nstages_on_rank)
{
    const memory_headroom *h = &w->headroom;
    return nstages_on_rank > 0 ? h->cuda_context_bytes + h->nccl_bytes + h->reserved_bytes : 0.0;
}

double memory_dynamic_footprint_bytes(const workload *w, double live_bytes)
{
    return live_bytes * (1.0 + w->headroom.fragmentation);
}

double memory_dynamic_room_bytes(const workload *w, double room_bytes)
{
    return room_bytes / (1.0 + w->headroom.fragmentation);
}


double memory_static_bytes_zero1(const workload *w, const int *stages, int nstages_on_rank,
                                 double bytes_per_param, double whole_bytes_per_param, int dp, int expert_dp)
{
    double frozen_bytes, experts, params = stage_params_split(w, stages, nstages_on_rank, &frozen_bytes, &experts);
    if (params < 0)
        return -1;
    double reserved = memory_headroom_static_bytes(w, nstages_on_rank) + frozen_bytes;
    if (dp <= 1)
        return params * bytes_per_param + reserved;
    if (expert_dp < 1)
        expert_dp = 1;
    double whole = bytes_per_param < whole_bytes_per_param ? bytes_per_param : whole_bytes_per_param;
    return params * whole + (params - experts) * (bytes_per_param - whole) / dp +
           experts * (bytes_per_param - whole) / expert_dp + reserved;
}

memory_sharding memory_sharding_of(const experiment *e)
{
    int group = e->dp_shard_group > 0 ? e->dp_shard_group : e->dp;
    return (memory_sharding){.mode = e->dp_sharding, .group = group,
                             .expert_group = group == e->dp ? experiment_expert_dp(e) : group,
                             .weight_bytes_per_param = experiment_weight_bytes(e),
                             .grad_bytes_per_param = experiment_grad_bytes(e)};
}

/* The largest per-layer parameter share of the listed stages (header). */
static double largest_layer_params(const workload *w, const int *stages, int n)
{
    double most = 0.0;
    for (int i = 0; i < n; i++) {
        const stage_cost *c = &w->stage[stages[i]];
        double per_layer = c->param_count / (c->layers > 0 ? c->layers : 1);
        if (per_layer > most)
            most = per_layer;
    }
    return most;
}

double memory_static_bytes_sharded(const workload *w, const int *stages, int nstages_on_rank,
                                   double bytes_per_param, const memory_sharding *sh)
{
    double frozen_bytes, params = stage_params(w, stages, nstages_on_rank, &frozen_bytes);
    if (params < 0)
        return -1;
    int group = sh->group;
    double weight = sh->weight_bytes_per_param, grad = sh->grad_bytes_per_param;
    switch (group > 1 ? sh->mode : DP_SHARD_NONE) {
    case DP_SHARD_NONE:
        break;
    case DP_SHARD_OPTIMIZER:
        return memory_static_bytes_zero1(w, stages, nstages_on_rank, bytes_per_param, weight + grad, group,
                                         sh->expert_group);
    case DP_SHARD_GRADIENTS: {
        double whole = bytes_per_param < weight ? bytes_per_param : weight;
        return params * (whole + (bytes_per_param - whole) / group) + frozen_bytes +
               largest_layer_params(w, stages, nstages_on_rank) * grad + memory_headroom_static_bytes(w, nstages_on_rank);
    }
    case DP_SHARD_FULL:
        return (params * bytes_per_param + frozen_bytes) / group +
               largest_layer_params(w, stages, nstages_on_rank) * (MEMORY_FSDP_GATHERED_LAYERS * weight + grad) +
               memory_headroom_static_bytes(w, nstages_on_rank);
    }
    return memory_static_bytes(w, stages, nstages_on_rank, bytes_per_param);
}

double memory_input_bytes(const workload *w, int stage)
{
    if (stage <= 0 || stage >= w->nstages)
        return 0.0;
    return w->stage[stage - 1].boundary_bytes;
}

double memory_selective_bytes(const stage_cost *c)
{
    double bytes = c->has_selective ? c->selective_bytes
                                    : c->act_b_bytes - ZB_MB_H_COEFF / ZB_MW_H_COEFF * c->act_w_bytes;
    if (bytes < 0)
        return 0.0;
    return bytes < c->act_b_bytes ? bytes : c->act_b_bytes;
}

double memory_fwd_recompute_s(const stage_cost *c)
{
    return c->f_s + c->f_tp_coll_s;
}

double memory_selective_s(const stage_cost *c)
{
    if (c->has_selective)
        return c->selective_s;
    return c->f_s * ATTN_CORE_FLOPS_S * ZB_REF_SEQ / (DENSE_FLOPS_H * ZB_REF_HIDDEN + ATTN_CORE_FLOPS_S * ZB_REF_SEQ);
}

void memory_selective_in_backward(workload *w)
{
    for (int s = 0; s < w->nstages; s++) {
        stage_cost *c = &w->stage[s];
        double bytes = memory_selective_bytes(c), seconds = memory_selective_s(c);
        c->act_b_bytes -= bytes;
        if (c->act_w_bytes > c->act_b_bytes)
            c->act_w_bytes = c->act_b_bytes;
        c->b_s += seconds;
        c->has_selective = 1;
        c->selective_bytes = 0;
        c->selective_s = 0;
    }
}
