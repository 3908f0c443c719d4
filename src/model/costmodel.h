/* costmodel.h: what a GPT-style decoder costs on a given GPU type.
 *
 * workload=gpt has no measured profile: its F, B (input gradient) and W
 * (weight gradient) times, activation bytes and parameters are computed here
 * from the model shape (gpt.* keys, micro_batch_size, tp) and a handful of
 * per-GPU-type parameters read from profiles/gpus/<type>.yaml.
 *
 * Model (one transformer layer, one microbatch of b samples, sequence s,
 * hidden h, heads a, tensor-parallel degree t):
 *   - Every op (F, B, W) is a short list of kernels: GEMMs (the linear
 *     layers), attention GEMMs (QK^T and AV, batched over heads),
 *     memory-bound kernels (LayerNorm, softmax, dropout, GeLU, residual
 *     adds, transposes) and, with t > 1, Megatron's tensor-parallel
 *     all-reduces (two in F, two in B).
 *   - The host launches the kernels one after another, kernel_launch apart,
 *     and the GPU runs each when it has been launched and the previous one
 *     has finished (a queue): an op of short kernels is host-bound, an op of
 *     long GEMMs GPU-bound (small models are host-bound; this is what makes
 *     time saturate instead of falling linearly with size).  A stage's op
 *     chains its layers in one queue; the host waits for the GPU at the
 *     op's end only, or at every layer's end where the GPU type's
 *     measurements say so (gpu_params.host_waits_each_layer).
 *   - GPU time of a linear layer's GEMM (M x N x K, f = 2MNK FLOPs):
 *     (f' + gemm_half_flops) / (peak * gemm_eff), f' >= f the FLOPs of the
 *     output tiles it occupies the SMs with, in whole waves over the SM
 *     count (split-K when the tiles do not fill them), with the tile shape
 *     of cuBLAS's kernels that finishes first, a tile smaller than 128 x 128
 *     at a rate lowered by its operand reuse (costmodel_gemm_busy_flops),
 *     or its operand traffic at the memory-kernel bandwidth if longer:
 *     efficiency rises with the GEMM's size and falls at shapes that leave
 *     SMs idle.  FP8 GEMMs first cast
 *     their input (forward) or output gradient (backward) with its
 *     transpose, a memory-bound kernel.  Attention GEMMs use the
 *     saturating curve (f + gemm_half_flops) / (peak * eff): eff = attn_eff
 *     for the legacy core's batched GEMMs, flash_eff for the fused flash
 *     kernel (two kernels of different efficiency; a GPU type whose rows ran
 *     one kind gives the other the same rate, said so in its source).  Memory-bound
 *     kernels move their bytes at hbm_bw * mem_eff.
 *   - Scale, causal mask and softmax are Megatron's one fused kernel when
 *     its launch constraints hold (costmodel_fused_softmax: the attention
 *     batches b * a/t a multiple of 4, 16 < s <= 4096, s a multiple of 4);
 *     otherwise Megatron runs them as five fp32 PyTorch kernels (cast,
 *     scale, masked_fill, softmax, cast back), and five in the backward:
 *     more launches and ~9x the bytes (e.g. tp=8 with 16 heads at micro
 *     batch 1).
 *   - Tensor-parallel all-reduce (ring, t ranks, n bytes): 2(t-1) steps,
 *     2(t-1) coll_latency + 2 (t-1)/t * n / (nvlink_bw * coll_bw_eff).  This is an
 *     analytic alpha-beta time over NVLink inside the op, used by the ideal
 *     evaluator (`pipegrid validate`) and network=ideal; with
 *     tp_comm_simulated the layers' all-reduces are left out of the op
 *     times and the simulator runs them over the platform's links instead
 *     (the embedding's and the head's small ones stay analytic).
 *   FLOPs per layer (the zero-bubble paper's Table 1, divided by t):
 *     F sbh(24h + 4s), B sbh(24h + 8s), W sbh(24h).
 *   Activations (bytes, fp16/bf16): M_B = sbh(10 + 24/t) + 5 a s^2 b / t
 *     (Korthikanti et al.; t = 1 gives the ZB paper's sb(34h + 5as)),
 *     M_W = sbh(8 + 24/t) (inputs of the four linear layers and their output
 *     gradients; t = 1 gives 32sbh).  Boundary 2sbh.  Parameters per layer
 *     12h^2/t + 7h/t + 6h (12h^2 + 13h at t = 1).
 *   The embedding (word + position lookup, vocab-parallel with t > 1) sits
 *   on the first stage, the final LayerNorm, LM head (tied) and
 *   cross-entropy loss on the last.
 *
 * Times are on the GPU type itself (ref_gpu = type, ref_speed_flops = its
 * peak), so the simulator never rescales them on that type.  Recomputation
 * is not folded in: F, B and W are the plain ops.
 */
#ifndef PG_MODEL_COSTMODEL_H
#define PG_MODEL_COSTMODEL_H

#include "model/arch.h"
#include "model/experiment.h"
#include "model/workload_types.h"
#include "util/error.h"

/* ---- GPU type parameters -------------------------------------------------- */

typedef enum {
    GP_PEAK_FLOPS = 0,    /* dense BF16/FP16 tensor peak, flop/s (datasheet) */
    GP_HBM_BW,            /* device memory bandwidth, bytes/s (datasheet) */
    GP_NVLINK_BW,         /* per GPU, each direction, bytes/s (datasheet) */
    GP_PCIE_BW,           /* host link per GPU, each direction, bytes/s */
    GP_GEMM_EFF,          /* ceiling of achieved/peak for large GEMMs */
    GP_GEMM_HALF_FLOPS,   /* GEMM size at which half the ceiling is reached */
    GP_ATTN_EFF,          /* ceiling of achieved/peak for the legacy attention core's batched GEMMs */
    GP_FLASH_EFF,         /* the same for the fused flash-attention kernel (its FLOPs: the causal half) */
    GP_MEM_EFF,           /* achieved/peak HBM bandwidth of memory-bound kernels */
    GP_KERNEL_LAUNCH_S,   /* host cost of one kernel launch (floor of every kernel) */
    GP_COLL_LATENCY_S,    /* alpha of one step of a ring collective (and of a p2p send) */
    GP_COLL_BW_EFF,       /* achieved/peak NVLink bandwidth of a collective (beta) */
    GP_ITER_OVERHEAD_S,   /* per training iteration: framework work outside the ops */
    GP_OP_OVERHEAD_S,     /* per op of a stage (F, B, W): framework work around its kernels */
    GP_NET_BW_EFF,        /* achieved/peak NIC bandwidth of a collective across nodes (calib's predictor;
                           * `run` simulates inter-node links on the platform instead) */
    GP_FP8_GEMM_EFF,      /* FP8 linear-layer GEMMs: fraction of the datasheet FP8/BF16 speed-up achieved
                           * (scaling and casts of FP8 recipes) */
    /* Flash attention's fixed work per query row and per score, fitted to
     * kernel measurements outside calibrate (tools/fit_flash_eff.py); both
     * optional, absent = 0 (the kernel's rate independent of them): */
    GP_FLASH_HALF_KEYS,   /* keys per query at which the kernel runs at half its rate (the work of each query
                           * row's prologue and epilogue: loading Q, writing O, the softmax statistics) */
    GP_FLASH_HALF_HEAD_DIM, /* head dim at which the kernel runs at half its rate (the softmax's exponentials
                             * per score, on the non-tensor units, against head_dim MACs per score) */
    GP_COUNT
} gpu_param_id;

/* Bytes of a parameter's source text, with its terminator: the loader
 * rejects a longer source (naming it) rather than cutting it. */
#define GP_SOURCE_MAX 512

/* Measured layer profiles.  The analytic model sees a layer through its
 * shape only, yet measured jobs carry, per layer shape, a bias that no
 * smooth function of the shape follows (cuBLAS's kernel choice for these
 * exact GEMMs, whether the host or the GPU bounds these kernels, ...):
 * vTrain's rows leave one bias per (tp, micro batch, hidden), the same for
 * every pipeline and data-parallel layout, batch and depth of the jobs
 * that ran the shape.  Where a GPU type's measurements ran a layer shape
 * in several jobs, calibrate records the ratio of measured to analytic
 * layer time for that shape (itermodel.h, iter_fit_layer_profiles), and
 * the cost model scales every kernel of that layer (host launches and GPU
 * time alike) by it: the simulator replays the layer at its measured cost.
 * Other shapes, embedding and head keep the analytic time.  The key is
 * costmodel_layer_key's text, so a profile applies to exactly the shape it
 * was measured on. */
#define GP_MAX_LAYER_PROFILES 128
#define LAYER_KEY_MAX 192

typedef struct layer_profile {
    char key[LAYER_KEY_MAX];        /* costmodel_layer_key of the shape */
    double factor;                  /* measured / analytic time of the layer's kernels */
    int rows;                       /* measured jobs it was fitted on */
} layer_profile;

/* The memory_headroom block's entries (gpu_params.headroom). */
typedef enum {
    GH_CUDA_CONTEXT_BYTES,   /* CUDA context, cuBLAS / cuDNN workspaces: per process */
    GH_NCCL_COMM_BYTES,      /* NCCL's buffers: per communicator of the process */
    GH_FRAGMENTATION,        /* allocator's reserved-but-unallocated / allocated, dynamic memory */
    GH_COUNT
} gpu_headroom_id;
const char *gpu_headroom_name(gpu_headroom_id id);

typedef struct gpu_params {
    char name[64];
    char path[4096];                 /* file read ("" when built in memory) */
    double v[GP_COUNT];
    char source[GP_COUNT][GP_SOURCE_MAX];   /* where each number comes from (a calibrate sentence is ~300 chars) */
    /* The measured effective host link (the file's host_link block; not a
     * cost-model parameter): bytes/s per GPU and direction while both GPUs
     * behind one PCIe switch copy at once (PipeOffload's B_o); a GPU copying
     * alone gets it / HOST_LINK_SOLO_SHARE (platform.h).  0 = not given. */
    double host_link_bw;
    char host_link_source[GP_SOURCE_MAX];
    /* Where the host waits for the GPU within an op (the file's kernel_queue
     * block, costmodel.c queue_append): 1 at every layer's end, 0 at the
     * op's end only (the default when the file has no block).  A property
     * of the training stack the type's measurements ran, chosen by
     * cross-validation, never fitted; calibrate writes it back as read. */
    int host_waits_each_layer;
    char kernel_queue_source[GP_SOURCE_MAX];
    /* What a training process holds on the GPU besides its tensors (the
     * file's memory_headroom block, optional; never fitted, written back as
     * read): the CUDA context with the libraries' workspaces, NCCL's buffers
     * per communicator, and the caching allocator's fragmentation as a
     * fraction of the dynamic allocations (workload.h memory_headroom says how
     * a job adds them up).  has_headroom 0: the file has no block, and the
     * GPU type's headroom is unknown (counted as 0, and said so). */
    int has_headroom;
    double headroom[GH_COUNT];
    char headroom_source[GH_COUNT][GP_SOURCE_MAX];
    /* The file's layer_profiles block (optional): how they were fitted, and
     * one entry per profiled shape, in the order written. */
    int nlayer_profiles;
    layer_profile layer_profile[GP_MAX_LAYER_PROFILES];
    char layer_profiles_source[GP_SOURCE_MAX];
} gpu_params;

/* Key in the YAML and whether `pipegrid calibrate` fits it (datasheet
 * numbers are never fitted); gpu_param_measured: fitted by calibrate or by
 * a fit of its own outside it (the flash kernel's terms), written back by
 * calibrate as read.  A parameter absent from the file (optional ones
 * only) has an empty source and is left out of descriptions and files. */
const char *gpu_param_name(gpu_param_id id);
int gpu_param_fitted(gpu_param_id id);
int gpu_param_measured(gpu_param_id id);
/* Whether g leaves out parameter id as an optional one may: no value, no
 * source, and a parameter that only its own fit writes. */
int gpu_param_absent(const gpu_params *g, gpu_param_id id);

/* Load profiles/gpus/<type>.yaml (type: "a100-80g", ...) or, when the
 * argument contains a '/' or ends in .yaml, that file.  Every parameter is
 * required, with a value and a source, but the optional ones (absent: 0).  Errors name file, line and key. */
int gpu_params_load(const char *type_or_path, gpu_params *g, pg_status *st);

/* From now on in this process, gpu_params_load of g's type (g->name) gives
 * a copy of g instead of its file (NULL: the files again).  What validate
 * and calibrate set before forking the simulations of measured rows, so
 * that the simulator runs the parameters being validated (a --gpu FILE, a
 * fit in progress).  g is copied. */
void gpu_params_override(const gpu_params *g);

/* The same from text in memory; errors name file_label and the line. */
int gpu_params_load_buffer(const char *text, size_t len, const char *file_label, gpu_params *g, pg_status *st);

/* Where a parameter's number comes from: the datasheet (never fitted), a
 * fit on this GPU type, or borrowed from another type's fit (its source
 * starts "not measured"). */
typedef enum { GPB_DATASHEET = 0, GPB_FITTED, GPB_BORROWED } gpu_param_basis;
gpu_param_basis gpu_param_basis_of(const gpu_params *g, gpu_param_id id);

/* What `run` says about the numbers its op times rest on (its `cost model`
 * line, JSON `cost_model`): the type, then each basis with its parameters,
 * fitted and borrowed ones grouped by source with the source once, e.g.
 *   "h100-sxm: datasheet peak_flops hbm_bw nvlink_bw pcie_bw; borrowed, NOT
 *    measured on this GPU type: gemm_eff ... op_overhead (not measured on
 *    h100-sxm: assumed equal to the a100-80g fit ...)".
 * Truncated to len - 1 characters. */
void gpu_params_describe(const gpu_params *g, char *out, size_t len);
/* The same in one short line, counts and the borrowed parameters' names
 * (`run`'s text report; the whole provenance is JSON's cost_model and
 * `run --verbose`), e.g. "a100-80g: 4 parameters from the datasheet, 10
 * fitted on it, 1 borrowed, NOT measured on a100-80g (fp8_gemm_eff)".  Truncated to len - 1 characters. */
void gpu_params_summarize(const gpu_params *g, char *out, size_t len);

/* The GPU type an experiment's ranks run on: a platform file's (its first
 * GPU's), else cluster.gpu (costmodel_build costs workload=gpt and hf on it). */
int costmodel_gpu_type(const experiment *e, char *type, size_t len, pg_status *st);

/* gpu_params_load, and fail naming cluster.host_link when the profile has
 * no host_link block (cluster.host_link=measured needs one). */
int gpu_host_link_load(const char *type, gpu_params *g, pg_status *st);

/* Write g as a loadable YAML (appended to out): the host_link block last. */
struct strbuf;
void gpu_params_write_yaml(const gpu_params *g, const char *header_comment, struct strbuf *out);

/* ---- model shape ------------------------------------------------------------ */

typedef struct gpt_shape {
    int layers, hidden, heads, seq, vocab;
    int micro_batch;     /* b, samples per microbatch */
    int tp;              /* tensor-parallel degree */
    int tp_comm_simulated; /* 1: the simulator runs the layers' tp all-reduces over the platform
                            * (sim.h), so layer ops leave them out of their times (their bytes are
                            * still counted); 0: analytic, inside the ops (the ideal evaluator of
                            * `pipegrid validate`, and network=ideal) */
    /* The rest is zero for the GPT-2/3 decoders the calibration data ran
     * (legacy attention, bf16, no cp / ep / sequence parallelism). */
    const arch *arch;    /* the architecture; NULL = arch_gpt() of the five numbers above, which
                          * must then agree with it (layers, hidden, heads, vocab are read from
                          * arch when it is given) */
    int cp, ep;          /* context / expert parallel degrees (0 = 1) */
    int expert_tp1;      /* 1: experts are not split over tp (expert tensor parallelism 1): each rank runs
                          * whole experts on its sequence shard's tokens; 0: split over tp like the MLP */
    int sequence_parallel;
    int tp_comm_overlap; /* 1: the layers' tp collectives overlap the GEMM next to them (Transformer Engine's
                          * userbuffer overlap): only what exceeds that GEMM's time is exposed */
    int flash;           /* 1: fused (flash) attention; 0: Megatron's legacy softmax path */
    int doc_len;         /* packed sequences: each token attends within its document of this many tokens
                          * (flash attention's variable-length path); 0 = the whole sequence */
    int fp8;             /* the linear layers' GEMM recipe, a precision_kind (experiment.h): 0 = bf16;
                          * FP8 recipes at the GPU's FP8 rate, nvfp4 at its FP4 rate, with their casts */
    double capacity_factor; /* MoE: 0 = dropless */
    int moe_probs_on_outputs; /* MoE: arch_run.probs_on_outputs (memory only) */
    int recompute_lgd;   /* 1: PipeOffload's LGD recomputation (arch.h ARCH_ACT_LGD) */
    unsigned recompute_modules; /* what selective recomputation recomputes (stage_cost.selective_bytes /
                                 * _s): arch.h arch_recompute_module bits; 0 = ARCH_RC_DEFAULT */
    double main_grad_bytes; /* bytes per weight of the gradient buffer the weight-gradient GEMMs accumulate
                             * into, microbatch after microbatch (Megatron's gradient_accumulation_fusion:
                             * 4 = fp32 main_grad); 0 = not charged */
    /* The first / last stage's layers when fixed (costmodel_stage_layers;
     * zero-initialised: not fixed, the even split's). */
    int first_fixed, last_fixed;
    int first_layers, last_layers;
    /* LoRA fine-tuning (experiment.h lora.rank): the base weights are
     * frozen -- no weight-gradient GEMMs, gradients or optimizer state for
     * them, nor for the embedding, norms and head -- and each adapted linear
     * layer (Y = X W + X A B) runs its adapter's rank-r GEMMs in bf16 beside
     * the base GEMM.  0 = full training. */
    int lora_rank;
    int lora_qkv_only;   /* 1: adapters on the QKV projection alone (lora.targets=qkv) */
} gpt_shape;

/* 0, or PG_EXIT_INPUT with a message naming the bad dimension. */
int gpt_shape_check(const gpt_shape *m, pg_status *st);

typedef enum { CM_F = 0, CM_B, CM_W, CM_OPS } cm_op;

/* What one op of one piece of the model costs on one TP rank. */
typedef struct op_cost {
    double time_s;           /* GPU finishes the op (host and GPU idle at its start) */
    double host_s;           /* host has issued its last kernel */
    double gpu_busy_s;       /* GPU time of its kernels: time_s less the waits for the host */
    double gemm_flops;       /* linear-layer GEMMs */
    double attn_flops;       /* attention GEMMs */
    double mem_bytes;        /* moved by memory-bound kernels */
    double comm_bytes;       /* tensor-parallel all-reduce payload */
    int kernels;             /* launches (all-reduces included) */
    double sim_coll_s;       /* of time_s, the uncontended time of the tp collectives the simulator runs
                              * itself (gpt_shape.tp_comm_simulated): they sit in the kernel queue like
                              * every kernel, so that a host-bound op hides them as it would, and the op's
                              * compute is time_s less this; the simulator adds them back as it runs them */
    double last_gemm_s;      /* GPU time of the op's latest linear-layer GEMM (what tp_comm_overlap hides under),
                              * before a measured layer profile's factor (which scales the exposed rest) */
    double adapter_params;   /* F only: the LoRA adapters' parameters its kernels use (gpt_shape.lora_rank) */
} op_cost;

/* One transformer layer / the embedding / the head + loss, ops F, B, W. */
void costmodel_layer(const gpu_params *g, const gpt_shape *m, op_cost out[CM_OPS]);
void costmodel_embedding(const gpu_params *g, const gpt_shape *m, op_cost out[CM_OPS]);
void costmodel_head(const gpu_params *g, const gpt_shape *m, op_cost out[CM_OPS]);

/* Closed forms (per TP rank). */
double costmodel_layer_flops(const gpt_shape *m, cm_op op);       /* sbh(24h+4s)/t, sbh(24h+8s)/t, 24sbh^2/t */
double costmodel_layer_act_b_bytes(const gpt_shape *m);
double costmodel_layer_act_w_bytes(const gpt_shape *m);
double costmodel_layer_params(const gpt_shape *m);
double costmodel_embedding_params(const gpt_shape *m);
double costmodel_head_params(const gpt_shape *m);                 /* final LayerNorm (tied weights live in the embedding) */

/* The text that names a layer's shape for measured layer profiles: every
 * dimension and setting the cost of one transformer layer of one
 * microbatch depends on (architecture, sequence, micro batch, tp / cp / ep,
 * sequence parallelism, attention kind, precision, MoE capacity,
 * recomputation, gradient accumulation, tp overlap), e.g.
 * "h1024 ffn4096 heads16 kv16 hd64 gelu layernorm bias dropout s1024 b1 tp1
 * legacy mg4".  Truncated to len - 1 characters (LAYER_KEY_MAX holds every
 * key). */
void costmodel_layer_key(const gpt_shape *m, char *out, size_t len);

/* The measured profile of m's layer shape in g, or NULL (analytic time). */
const layer_profile *costmodel_layer_profile(const gpu_params *g, const gpt_shape *m);
/* The same by key. */
const layer_profile *gpu_params_find_layer_profile(const gpu_params *g, const char *key);

/* Set (add or replace) the profile of key in g; PG_EXIT_INPUT when g holds
 * GP_MAX_LAYER_PROFILES others already. */
int gpu_params_set_layer_profile(gpu_params *g, const char *key, double factor, int rows, pg_status *st);

/* 1 if Megatron's fused causal softmax kernel runs for this shape (batch
 * micro_batch * heads/tp, sequence seq), 0 if it falls back to PyTorch. */
int costmodel_fused_softmax(const gpt_shape *m);

/* FLOPs a GEMM of groups x (m x n x k) keeps the GPU's sm_count SMs busy
 * for, at the rate of the 128 x 128 tile: for each of cuBLAS's tile shapes
 * (256 x 128, 128 x 256, 128 x 128, 128 x 64, 64 x 128, 64 x 64) the output
 * padded to whole tiles, split along k when the tiles do not fill the SMs,
 * in whole waves over the SMs (tile and wave quantization), divided by the
 * shape's rate (rows * cols / (rows + cols) / 64, at most 1: a tile that
 * reuses its operands less than 128 x 128 loads them slower than the tensor
 * cores multiply); the smallest of these.  2mnk x groups when
 * sm_count <= 0.  A linear layer's GEMM takes (this + gemm_half_flops) /
 * (peak * gemm_eff), or its operand traffic at hbm_bw * mem_eff if that is
 * longer. */
double costmodel_gemm_busy_flops(int sm_count, double m, double n, double k, double groups);

/* Ring all-reduce of bytes over n GPUs on NVLink (alpha-beta); 0 if n <= 1. */
double costmodel_allreduce_s(const gpu_params *g, double bytes, int n);
/* One mixed-precision Adam step over params parameters (memory-bound). */
double costmodel_optimizer_s(const gpu_params *g, double params);

/* Bytes/s per member that a ring collective over n GPUs `stride` ranks
 * apart achieves (Megatron's rank order: a group of stride 1 fills nodes of
 * gpus_per_node in turn), from the links' effective rates: NVLink inside a
 * node; across nodes NCCL runs one ring per member of a node, each through
 * its own NIC (src/sim/collectives.h), so the m members in one node share
 * as many NICs, and each member's NVLink port carries m - 1 of the m rings:
 * min(nvlink_bw x m / (m - 1), m x nic_bw) (nic_bw when m = 1).  What the
 * simulator runs uncontended, and what the calibration's surrogate uses. */
double costmodel_ring_bw(double nvlink_bw, double nic_bw, int gpus_per_node, int n, long stride);

/* Members per node of a group of n GPUs `stride` ranks apart (Megatron's
 * rank order, nodes of gpus_per_node). */
int costmodel_group_per_node(int gpus_per_node, int n, long stride);

/* Seconds of one all-to-all among n GPUs, per_node of them in each node,
 * each sending bytes in all (bytes / (n - 1) to each other member) at once,
 * as the simulator runs it (src/sim/expert.c): one route latency, then the
 * in-node sends share the GPU's NVLink port and the others its NIC:
 *   latency + bytes x max((per_node - 1) / nvlink_bw, (n - per_node) / nic_bw) / (n - 1). */
double costmodel_alltoall_s(double bytes, int n, int per_node, double nvlink_bw, double nic_bw, double latency_s);

/* How the MoE dispatcher moves tokens between nodes (experiment.h
 * ep.dispatcher): the all-to-all sends one copy per routed expert to the
 * expert's GPU; HybridEP (Megatron's flex dispatcher, DeepEP's layout) sends
 * a token once to each remote node holding one of its experts, to the GPU of
 * the same local rank, which forwards the copies over NVLink.  An all-to-all
 * among n GPUs, per_node in each node, each sending bytes in all, then moves
 * per GPU
 *   in-node pair (each of per_node - 1):  bytes / (n - 1) x local_scale
 *   cross-node pair (each of n - per_node): bytes / (n - 1) x remote_scale
 * with local_scale = 1 + (n - per_node) / per_node (the forwarded copies,
 * spread over the node's pairs) and remote_scale = costmodel_a2a_node_copies
 * (...) for HybridEP, both 1 for the all-to-all or a group in one node. */
typedef struct a2a_scales {
    double local_scale, remote_scale;
} a2a_scales;

/* A token routed to top_k of experts experts, spread evenly over nodes
 * nodes, crosses to the expected number of remote nodes holding at least
 * one of its experts, (nodes - 1) (1 - C(E - E/nodes, k) / C(E, k)), where
 * the all-to-all sends it top_k (nodes - 1) / nodes times: the ratio of the
 * two (1 for one node or a dense model). */
double costmodel_a2a_node_copies(int experts, int top_k, int nodes);

/* The scales above for n GPUs, per_node in each node; hybrid = 0: the
 * all-to-all. */
a2a_scales costmodel_a2a_scales(int hybrid, int experts, int top_k, int n, int per_node);

/* costmodel_alltoall_s with the dispatcher's scales:
 *   latency + bytes x max((per_node - 1) local / nvlink_bw, (n - per_node) remote / nic_bw) / (n - 1). */
double costmodel_alltoall_scaled_s(double bytes, int n, int per_node, double nvlink_bw, double nic_bw,
                                   double latency_s, a2a_scales sc);

/* ---- workload --------------------------------------------------------------- */

/* The stage layout: layers[s] transformer layers of stage s, s < nstages.
 * Evenly (the last gpt.layers % nstages stages take one more), except the
 * first and last stages where m->first_layers / m->last_layers fix them
 * (stage.first_layers / stage.last_layers): the stages not fixed then share
 * the rest evenly the same way.  This is how the zero-bubble and PipeOffload
 * papers balance a GPT's stages (one layer fewer on the first stage, which
 * holds the embedding, and on the last, which holds the LM head and the
 * loss).  Every stage holds at least one layer; a layout that cannot (more
 * fixed layers than the model has, nothing left for the other stages, a
 * fixed stage with one stage in all) fails naming the key. */
int costmodel_stage_layers(const gpt_shape *m, int nstages, int *layers, pg_status *st);

/* Fill w for e (workload=gpt) cut into nstages stages: transformer layers
 * as costmodel_stage_layers lays them out, embedding on stage 0, head + loss
 * on the last stage.  The GPU type is the platform's:
 * cluster.gpu for network=cluster (and ideal), the `gpu` property of the
 * platform file's first GPU for a platform file (cluster.gpu if it has
 * none).  On a real network (not ideal) the layers' tp all-reduces are
 * left to the simulator (tp_comm_simulated). */
int costmodel_build(const experiment *e, int nstages, workload *w, pg_status *st);

/* The same from explicit parts (used by costmodel_build and validation). */
int costmodel_build_shape(const gpu_params *g, const gpt_shape *m, int nstages, workload *w, pg_status *st);

#endif
