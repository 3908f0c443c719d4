/* memory.h: the static part of a GPU's memory and the activation rules.
 *
 * Static memory of a rank = parameters of its stages x bytes_per_param
 * (mixed-precision Adam: 2 bytes BF16 weight + 2 gradient + 12 FP32 master
 * weight and two moments = 16 by default).  With ZeRO-1 the optimizer part
 * (everything beyond the BF16 weight and gradient) is sharded over the dp
 * data-parallel replicas.  Frozen weights (LoRA's base, stage_cost's
 * frozen_param_count) hold their bf16 weight alone (MEMORY_BF16_WEIGHT_BYTES),
 * whole but under full sharding; "parameters" below are the trained ones.
 * Activation memory follows the ops (workload.h);
 * the simulator's timeline gives when.
 *
 * Recomputation needs two more numbers per stage: what the stage's input
 * weighs (what full recomputation keeps: the previous stage's boundary
 * tensor; the first stage's input is token ids, counted as 0) and what
 * selective recomputation (the attention core, or the modules
 * recompute.modules names: model/arch.h arch_recompute_module) frees and
 * costs.
 */
#ifndef PG_MODEL_MEMORY_H
#define PG_MODEL_MEMORY_H

#include "model/workload.h"

/* The headroom (workload_types.h memory_headroom).  Its static part, once
 * per rank that holds a stage (0 otherwise): CUDA context + NCCL buffers +
 * memory.reserved. */
double memory_headroom_static_bytes(const workload *w, int nstages_on_rank);
/* The device memory `live_bytes` of activations and workspace take once the
 * caching allocator's fragmentation is added: live x (1 + fragmentation).
 * Why a fraction of the dynamic bytes only: weights, gradients and optimizer
 * state are allocated once, in a few large buffers (Megatron's contiguous
 * gradient buffer), while activations come and go in every size. */
double memory_dynamic_footprint_bytes(const workload *w, double live_bytes);
/* The inverse, for planners: the live activation and workspace bytes that
 * fit in room_bytes of device memory (room / (1 + fragmentation)). */
double memory_dynamic_room_bytes(const workload *w, double room_bytes);

/* Parameters of the listed stages (indices into w->stage) x bytes_per_param,
 * plus the headroom's static part (memory_headroom_static_bytes) when the
 * rank holds a stage: what every planner and the metrics count as static.
 * An index outside [0, w->nstages) is a caller bug: the result is then -1,
 * never a silently smaller number. */
double memory_static_bytes(const workload *w, const int *stages, int nstages_on_rank,
                           double bytes_per_param);

/* The same with ZeRO-1 over dp replicas (dp <= 1: no sharding): the
 * weight and gradient (whole_bytes_per_param) stay whole, the rest is
 * sharded: params x (min(bpp, whole) + max(bpp - whole, 0) / dp), the
 * experts' over the expert_dp GPUs holding the same experts
 * (parallel_expert_dp) instead of dp. */
double memory_static_bytes_zero1(const workload *w, const int *stages, int nstages_on_rank,
                                 double bytes_per_param, double whole_bytes_per_param, int dp, int expert_dp);

/* Data-parallel sharding as memory sees it (experiment.h dp_shard_mode):
 * the mode, the replicas a shard spans, and the bytes per parameter of the
 * bf16 weight and of the gradient. */
typedef struct memory_sharding {
    dp_shard_mode mode;
    int group;                      /* replicas a shard spans (dp, or dp.shard_group); <= 1: no sharding */
    int expert_group;               /* the same for the experts' weights: the GPUs holding the same experts
                                     * (parallel_expert_dp) when the shard spans dp; ZeRO-1 only */
    double weight_bytes_per_param;  /* the working weight (bf16: 2) */
    double grad_bytes_per_param;    /* the gradient (fp32 4, bf16 2) */
} memory_sharding;

/* Layers whose whole parameters a rank holds at once with full sharding:
 * the one running and the next, prefetched (FSDP2's default prefetch of one
 * layer).  Layer-sized buffers beyond the shards: these weights, plus one
 * layer's whole gradient before its reduce-scatter (gradients and full). */
#define MEMORY_FSDP_GATHERED_LAYERS 2

/* The experiment's sharding (its resolved dp.sharding, dp.shard_group,
 * the weight's and gradient's bytes). */
memory_sharding memory_sharding_of(const experiment *e);

/* Static bytes of the listed stages under sh, with S = sh->group replicas
 * a shard spans and P their parameters, W the weight's and G the gradient's
 * bytes per parameter, B = bytes_per_param, U the largest per-layer share
 * of a listed stage (its param_count / its layers, 1 layer without any):
 *   none       P B                                        (memory_static_bytes)
 *   optimizer  P (min(B, W + G) + max(B - W - G, 0) / S)  (memory_static_bytes_zero1; the experts'
 *                                                          part of P over sh->expert_group, not S)
 *   gradients  P (min(B, W) + max(B - W, 0) / S) + U G
 *   full       P B / S + U (MEMORY_FSDP_GATHERED_LAYERS W + G)
 * plus memory_headroom_static_bytes; S <= 1 is none.  -1 for an index outside
 * [0, w->nstages) (a caller bug). */
double memory_static_bytes_sharded(const workload *w, const int *stages, int nstages_on_rank,
                                   double bytes_per_param, const memory_sharding *sh);

/* Bytes of stage's input (what full recomputation keeps after F). */
double memory_input_bytes(const workload *w, int stage);

/* Selective recomputation of stage c: bytes F no longer stores (at most
 * act_b) and reference seconds of the recompute.  From the profile or the
 * cost model when they give them (has_selective), else from the zero-bubble model: the 5as term
 * of M_B = sb(34h+5as) is act_b - (34/32) act_w since M_W = 32sbh, and the
 * attention core's share of F's FLOPs, 4s/(24h+4s), is taken at the
 * zero-bubble reference shape (h 4096, s 1024) as the uniform workload is. */
double memory_selective_bytes(const stage_cost *c);
double memory_selective_s(const stage_cost *c);
/* Reference seconds to recompute the stage's whole forward: F again with
 * the tensor-parallel collectives in it (f_s + f_tp_coll_s; Megatron's full
 * recomputation reruns the layer's all-reduces too). */
double memory_fwd_recompute_s(const stage_cost *c);

/* Selective recomputation run inside each stage's backward, as Megatron
 * runs it, instead of as a recompute op of a memory plan: every stage keeps
 * act_b_bytes less what its modules store (memory_selective_bytes), its
 * backward lasts their recomputation (memory_selective_s) longer, and its
 * selective fields are then zero (nothing is left to recompute).  For jobs
 * whose schedule cannot run under a memory plan (Megatron-Core's combined
 * 1F1B steps). */
void memory_selective_in_backward(workload *w);

#endif
