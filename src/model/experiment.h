/* experiment.h: the typed, validated experiment.
 *
 * experiment_from_config() checks every key against one schema table
 * (experiment.c): unknown keys, wrong types, bad units, out-of-range values
 * and impossible combinations are PG_EXIT_INPUT naming file, line and key.
 * Keys not given take the defaults of the table.  `pipegrid keys` prints the
 * table, so the documentation of keys cannot drift from the code.
 */
#ifndef PG_MODEL_EXPERIMENT_H
#define PG_MODEL_EXPERIMENT_H

#include "model/config.h"
#include "util/error.h"

/* Mixed-precision Adam as Megatron keeps it: a bf16 weight, the gradient
 * (fp32 by default, below), and 12 bytes of fp32 master weight and two
 * moments that ZeRO-1 (the distributed optimizer) shards.  The
 * experiment's defaults of bytes_per_param rest on them. */
#define MEMORY_BF16_WEIGHT_BYTES 2.0
#define MEMORY_FP8_WEIGHT_BYTES 1.0
#define MEMORY_ADAM_STATE_BYTES 12.0

#define PG_NAME_MAX 512
#define PG_DESC_MAX 2048
/* Room for one origin per schema key (experiment.c checks it has enough). */
#define EXP_MAX_KEYS 96
/* stage.first_layers / stage.last_layers not given: the even split's layers. */
#define STAGE_LAYERS_EVEN (-1)
/* A number key's `auto`: the value then comes from elsewhere (the key's help says where). */
#define EXPERIMENT_AUTO (-1)

/* WL_GPT and WL_HF are costed by the model (model/arch.h, model/costmodel.h):
 * their stage times are one GPU's share already. */
typedef enum { WL_UNIFORM, WL_PROFILE, WL_GPT, WL_HF } workload_kind;
/* Where the cost model's host waits for the GPU inside an op (costmodel.c,
 * queue_append): as the GPU type's profile says (its kernel_queue block), or
 * set by the experiment. */
typedef enum { HOST_WAITS_PROFILE = 0, HOST_WAITS_LAYER, HOST_WAITS_OP } host_waits_mode;
typedef enum { NET_IDEAL, NET_CLUSTER, NET_PLATFORM } network_kind;
typedef enum { OFFLOAD_NONE, OFFLOAD_FULL, OFFLOAD_SELECTIVE, OFFLOAD_PLAN } offload_policy;
/* offload.preset: PipeOffload's PO-H (half of each rank's chunks, from chunk 0)
 * and PO-F (all of them), each with its copy rules; they set offload=selective,
 * offload.chunks (ceil(v/2) or v, resolved against the schedule) and offload.rules. */
typedef enum { OFFLOAD_PRESET_NONE = 0, OFFLOAD_PRESET_PO_H, OFFLOAD_PRESET_PO_F } offload_preset_kind;
/* How a GPU's offload copies use its host link (src/sim/copyengine.c): two
 * independent engines (D2H, H2D), one stream alternating them, or one stream
 * shared by a pair of ranks in staggered slots (PipeOffload). */
typedef enum { COPY_MODEL_DUPLEX = 0, COPY_MODEL_SINGLE, COPY_MODEL_PAIRED } copy_model_kind;
/* RECOMPUTE_LGD: PipeOffload's --recompute-lgd (norms, activation function
 * and dropout recomputed in the backward, the GEMM inputs kept). */
/* The linear layers LoRA adapts (lora.targets): every linear layer of the
 * attention and the MLP (Megatron-Bridge's default: linear_qkv, linear_proj,
 * linear_fc1, linear_fc2), or the fused QKV projection alone (NeMo 1.0's
 * default, attention_qkv). */
typedef enum { LORA_TARGETS_ALL, LORA_TARGETS_QKV } lora_target;
typedef enum { RECOMPUTE_NONE, RECOMPUTE_FULL, RECOMPUTE_SELECTIVE, RECOMPUTE_PLAN, RECOMPUTE_LGD } recompute_policy;
/* The linear layers' GEMM recipe (docs/blackwell.md): bf16; fp8 with one
 * scale per tensor (Transformer Engine's delayed or current scaling); MXFP8
 * (an E8M0 scale per 32 elements); blockwise FP8 (an fp32 scale per 1x128
 * activation block and 128x128 weight block, DeepSeek-V3's); NVFP4 (an
 * E4M3 scale per 16 FP4 elements and one fp32 scale per tensor).  The cost
 * model's gpt_shape.fp8 holds one of these values (0 = bf16). */
typedef enum { PRECISION_BF16, PRECISION_FP8, PRECISION_MXFP8, PRECISION_FP8_BLOCK, PRECISION_NVFP4 } precision_kind;
/* The key's word for p ("bf16", "fp8", "mxfp8", "fp8-block", "nvfp4"). */
const char *experiment_precision_word(precision_kind p);
/* recompute.modules's bits (arch.h arch_recompute_module) as its words,
 * comma-separated, in buf. */
void experiment_recompute_modules_words(int bits, char *buf, size_t len);
typedef enum { ATTENTION_FLASH, ATTENTION_LEGACY } attention_kind;
typedef enum { GRAD_FP32, GRAD_BF16 } grad_precision_kind;
/* dp.sharding: what the data-parallel replicas shard among a shard group
 * (model/memory.h counts it, src/sim/gradsync.c runs its collectives):
 * nothing (plain data parallelism), the optimizer state (ZeRO-1, Megatron's
 * distributed optimizer, memory.zero1), the gradients too (ZeRO-2: each
 * layer's gradient reduce-scattered as the backward produces it), or the
 * parameters too (ZeRO-3 / PyTorch FSDP2 / Megatron-FSDP: each layer's
 * parameters all-gathered before its forward and again before its
 * backward). */
typedef enum { DP_SHARD_NONE = 0, DP_SHARD_OPTIMIZER, DP_SHARD_GRADIENTS, DP_SHARD_FULL } dp_shard_mode;
/* How MoE tokens cross nodes (ep.dispatcher; costmodel.h a2a_scales). */
typedef enum { EP_DISPATCH_ALLTOALL = 0, EP_DISPATCH_HYBRIDEP } ep_dispatch;

typedef struct experiment {
    /* schedule */
    char schedule[PG_NAME_MAX];     /* generator name or "file:PATH" */
    int pp;
    int microbatches;               /* 0 until derived from batch sizes */
    int chunks;                     /* stages per rank for interleaved / hanayo */

    /* parallelism and batch */
    int tp, dp;
    int ep;                         /* expert-parallel degree (MoE); divides dp, adds no GPUs */
    int etp;                        /* expert tensor parallelism: 0 = tp, or 1 (experiment_expert_tp1) */
    int dualpipe_overlap;           /* 1: DualPipeV's paired ops overlap one's compute with the other's all-to-alls */
    int ep_overlap;                 /* ep.overlap: Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm):
                                     * each steady-state forward and backward run as one step, the two ops'
                                     * all-to-alls under the two computes (schedule.h sched_params.ep_overlap) */
    int ep_dispatcher;              /* ep.dispatcher: EP_DISPATCH_ALLTOALL or _HYBRIDEP (costmodel.h a2a_scales) */
    int cp;                         /* context-parallel degree: GPUs = tp x cp x dp x pp */
    int tp_sequence_parallel;       /* 1: tp collectives as reduce-scatter + all-gather (Megatron SP) */
    int tp_comm_overlap;            /* 1: tp collectives overlap their GEMMs (Transformer Engine's userbuffers) */
    int host_waits;                 /* kernel_queue.host_waits: HOST_WAITS_PROFILE, _LAYER or _OP */
    int layer_profiles_analytic;    /* layer_profiles=analytic: the GPU type's measured layer profiles ignored */
    double dp_bucket_bytes;         /* gradient all-reduce bucket; 0 = one per stage */
    int dp_overlap;                 /* 1: buckets start during the last backward ops */
    int dp_algorithm;               /* sim.h dp_algo: 0 auto, 1 ring, 2 hierarchical */
    int collectives_stepwise;       /* 1: ring collectives step by step; 0: fused (collectives.h) */
    int dp_replicas;                /* sim.h sim_replicas: 0 auto (one for all when symmetric), 1 all */
    int sim_engine;                 /* sim.h sim_engine: 0 auto (without actors where it applies), 1 actors */
    int micro_batch_size;           /* samples; with a profile not given: the profile's */
    int global_batch_size;          /* samples; 0 = not given */

    /* workload */
    workload_kind workload;
    char profile_path[PG_NAME_MAX]; /* WL_PROFILE: the profile YAML; WL_HF: the config.json */
    double uniform_f_s, uniform_b_s, uniform_w_s;
    double uniform_w_fraction;      /* M_W / M_B */
    double uniform_activation_bytes;/* bytes of one M_B (whole rank share) */
    double uniform_boundary_bytes;  /* activation sent to the next stage (gradient back: same) */
    double uniform_params;          /* parameters of one rank's share */
    int gpt_layers, gpt_hidden, gpt_heads, gpt_seq, gpt_vocab;
    int gpt_doc_len;                /* gpt.doc_len: packed documents of this many tokens; 0 = one sequence */
    int lora_rank;                  /* lora.rank: LoRA fine-tuning with adapters of this rank; 0 = full training */
    int lora_targets;               /* lora.targets: lora_target (which linear layers carry adapters) */
    int stage_first_layers;         /* transformer layers of the first / last pipeline stage (workload=gpt, */
    int stage_last_layers;          /* hf); STAGE_LAYERS_EVEN = the even split's (costmodel.h: the layout) */
    precision_kind precision;       /* GEMM precision (fp8: the GPU's FP8 rate) */
    attention_kind attention;       /* flash (default) or Megatron's legacy fused-softmax path */
    double moe_capacity_factor;     /* 0 = dropless (tokens routed as the router says) */
    int moe_probs_on_outputs;       /* moe.probs: 1 = combine (arch.h arch_run.probs_on_outputs), 0 = activation */

    /* network / platform */
    network_kind network;
    char platform_path[PG_NAME_MAX];/* NET_PLATFORM */
    double ideal_latency_s;
    int cluster_nodes, cluster_gpus_per_node;
    char cluster_gpu[64];
    double cluster_nvlink_bw, cluster_ib_bw, cluster_pcie_bw;   /* bytes/s; 0 = GPU type default */
    int cluster_host_link_measured;  /* 1: PCIe links from the GPU type's measured host link (gpu_system) */
    int cluster_links_fitted;       /* 1: NVLink / NIC rates x the GPU type's fitted coll_bw_eff / net_bw_eff */
    int cluster_nvlink_domain;      /* GPUs per NVLink domain; 0 = the GPU system's (platform_cluster_domain_gpus) */
    double cluster_oversubscription;  /* the fabric above the domains: NIC bandwidth / uplink bandwidth, >= 1 */

    /* memory */
    double memory_limit;            /* M_B units; 0 = none */
    double zb_auto_time_limit_s;    /* zb-auto ILP refinement time limit; 0 = heuristic only */
    double memory_capacity_bytes;   /* 0 = each GPU's own */
    double memory_reserved_bytes;   /* per GPU: the user's margin (workload_types.h memory_headroom) */
    int memory_headroom;            /* 1 (auto): the GPU type's CUDA context, NCCL buffers, fragmentation */
    double memory_fragmentation;    /* fraction, or EXPERIMENT_AUTO: the GPU type's */
    double bytes_per_param;         /* weights + grads + optimizer, resolved: memory.bytes_per_param, or
                                     * 2 (bf16 weight) + gradient (4 fp32 / 2 bf16) + 12 (Adam) */
    double weight_grad_bytes_per_param; /* the part ZeRO-1 leaves whole: weight + gradient */
    grad_precision_kind grad_precision; /* gradients accumulated and reduced in fp32 (Megatron) or bf16 */
    offload_policy offload;
    double offload_ratio;
    int offload_order_search;       /* offload=plan: 1 = also plan other op orders (opt/offload_order.h) */
    int offload_chunks;             /* offload=selective: > 0 whole chunks per rank instead of offload.ratio */
    int offload_rules;              /* 1: PipeOffload's lifespan filter and reload rule (schedule/plan.h) */
    int offload_preset;             /* OFFLOAD_PRESET_*: PO-H / PO-F (docs/offload.md) */
    int offload_capacities;         /* offload=plan: grid capacities below memory.capacity also planned */
    double offload_time_limit_s;    /* offload=plan: GLPK time for each planning's MILP; 0 = greedy only */
    int offload_postpone;           /* offload.rules=pipeoffload: postpone warm-up forwards (schedule/plan.h) */
    copy_model_kind offload_copy_model; /* offload.copy_model */
    int offload_copy_slots;         /* offload.copy_slots: unfinished D2H copies a rank may have; 0 = any */
#define PIPEOFFLOAD_COPY_SLOTS 1    /* offload.preset's: PipeOffload's offload_release waits for the last copy */
    recompute_policy recompute;
    int recompute_modules;          /* recompute.modules: model/arch.h arch_recompute_module bits */
    int memory_zero1;
    int memory_fp8_params;          /* memory.fp8_params: weights kept and all-gathered in FP8 (experiment_weight_bytes) */               /* 1: optimizer state sharded over dp (ZeRO-1); resolved: the same as
                                     * dp_sharding == DP_SHARD_OPTIMIZER */
    dp_shard_mode dp_sharding;      /* dp.sharding, resolved with memory.zero1 */
    int dp_shard_group;             /* replicas a shard spans, resolved: dp.shard_group, or dp when not given
                                     * (< dp: HSDP, the shard groups replicated across dp / group groups) */
    int recompute_backward;         /* 1: after B keep only the stage input, recompute the forward before W */
    double recompute_time_limit_s;  /* recompute=plan: GLPK time for the remat ILP; 0 = greedy only */
    double recompute_gap;           /* recompute=plan: relative MIP gap */
    char recompute_lp_file[PG_NAME_MAX]; /* recompute=plan: write the ILP here ("none" = nowhere) */

    /* free text, for reports */
    char name[PG_NAME_MAX];
    char description[PG_DESC_MAX];

    /* where each value came from, for messages after validation; file == NULL
     * means the key was not given (the default applies).  Origins point into
     * the config's storage: valid while that config lives. */
    pg_origin origin_schedule, origin_pp, origin_microbatches, origin_workload, origin_network;
    pg_origin key_origins[EXP_MAX_KEYS];   /* all keys, in schema order: use experiment_origin() */
} experiment;

/* Tensor parallelism and stage times.  The uniform workload gives a
 * stage's times for its whole tp group, which the simulator splits over
 * the group's GPUs (sim.h's split_compute); the gpt cost model times one
 * GPU's share, and so does a profile once workload_build has divided it by
 * tp (model/workload.h).  experiment_tp_share is the part of a stage's
 * time one GPU of the group runs: what every model of op durations (the
 * bounds, the planners) must apply to agree with the simulator. */
static inline int experiment_workload_is_modelled(const experiment *e)
{
    return e->workload == WL_GPT || e->workload == WL_HF;
}

static inline int experiment_times_are_tp_groups(const experiment *e)
{
    return e->workload == WL_UNIFORM;
}

/* Bytes of one gradient element in the data-parallel reduction. */
static inline double experiment_grad_bytes(const experiment *e)
{
    return e->grad_precision == GRAD_FP32 ? 4.0 : 2.0;
}

/* The FP8 recipes that can keep FP8 weights (memory.fp8_params):
 * per-tensor, MXFP8 and blockwise FP8. */
static inline int experiment_precision_keeps_fp8_weights(precision_kind p)
{
    return p == PRECISION_FP8 || p == PRECISION_MXFP8 || p == PRECISION_FP8_BLOCK;
}

static inline int experiment_fp8_weights(const experiment *e)
{
    return e->memory_fp8_params && experiment_precision_keeps_fp8_weights(e->precision);
}

/* Bytes of one trained weight as the model keeps it and the data-parallel
 * all-gathers send it: bf16, or FP8 (memory.fp8_params). */
static inline double experiment_weight_bytes_of(int fp8_weights)
{
    return fp8_weights ? MEMORY_FP8_WEIGHT_BYTES : MEMORY_BF16_WEIGHT_BYTES;
}

static inline double experiment_weight_bytes(const experiment *e)
{
    return experiment_weight_bytes_of(experiment_fp8_weights(e));
}

/* Whole experts on each GPU (etp=1 with tp > 1): the expert-parallel groups
 * are then ep consecutive GPUs of tp x cp x dp. */
static inline int experiment_expert_tp1(const experiment *e)
{
    return e->etp == 1 && e->tp > 1 && e->ep > 1;
}

/* GPUs of one pipeline stage holding the same expert weights: Megatron's
 * expert-data-parallel group, over which the experts' gradients are
 * reduced and their optimizer state sharded.  With expert tensor
 * parallelism 1 the stage's tp x cp x dp GPUs are re-split into ep groups
 * of consecutive GPUs, the rest holding copies; otherwise each tp x cp rank
 * of dp replicas forms ep groups of replicas (sim/expert.c). */
static inline int parallel_expert_dp(int tp_cp, int dp, int ep, int expert_tp1)
{
    if (ep <= 1 && !expert_tp1)
        return dp;
    if (ep < 1)
        ep = 1;
    return expert_tp1 ? tp_cp * dp / ep : dp / ep;
}

static inline int experiment_expert_dp(const experiment *e)
{
    return parallel_expert_dp(e->tp * e->cp, e->dp, e->ep, experiment_expert_tp1(e));
}

static inline double experiment_tp_share(const experiment *e)
{
    return experiment_times_are_tp_groups(e) && e->tp > 1 ? 1.0 / e->tp : 1.0;
}

/* Defaults for every key (the bundled default experiment overrides some). */
void experiment_defaults(experiment *e);

int experiment_from_config(const config *c, experiment *e, pg_status *st);

/* Whether value is a valid value of key on its own (known key, right type,
 * range and choice), without the checks between keys: what a sweep can
 * refuse before running anything.  0, or PG_EXIT_INPUT naming at and key. */
int experiment_check_value(const char *key, const char *value, pg_origin at, pg_status *st);

/* Keys given in c (a file or --set) that e's settings make meaningless
 * (gpt.* without workload=gpt, cluster.* without network=cluster, chunks
 * with a schedule that has none, offload.ratio without offload=selective,
 * ...: the table in experiment.c).  For each, in the config's order,
 * report(msg, ctx) gets "FILE:LINE: key 'KEY': ignored: applies only with
 * SETTING"; returns how many.  They are warnings, not errors: the run goes on
 * without them. */
/* What the schedule registry says about schedules, handed in by the caller:
 * the model layer sits below the schedule layer and cannot ask it. */
typedef struct exp_schedule_info {
    int (*uses_chunks)(const char *schedule);   /* 1 if that schedule reads the chunks key */
    const char *chunk_schedules;                /* their names, for the message ("interleaved, hanayo or gis") */
} exp_schedule_info;

/* Settings that are valid but that few real jobs use, each reported as
 * report(msg, ctx) "FILE:LINE: key 'KEY': ..." (a warning: the run goes
 * on); returns how many.  Now: tp > 1 with tp.sequence_parallel=false given. */
int experiment_rare_settings(const config *c, const experiment *e, void (*report)(const char *msg, void *ctx),
                             void *ctx);

/* sched may be NULL: then chunks is taken to apply (nothing to say). */
int experiment_ignored_keys(const config *c, const experiment *e, const exp_schedule_info *sched,
                            void (*report)(const char *msg, void *ctx), void *ctx);

/* The schema, for `pipegrid keys` and the README. */
typedef struct exp_key_doc {
    const char *key;
    const char *type;        /* "int", "seconds", "bytes", "bytes/s", "enum", ... */
    const char *default_text;
    const char *help;
} exp_key_doc;
const exp_key_doc *experiment_key_docs(size_t *count);

/* Where key's value came from ({NULL, 0} if defaulted or not a schema key). */
pg_origin experiment_origin(const experiment *e, const char *key);

/* 1 if key is a schema key. */
int experiment_key_known(const char *key);

/* The schema key nearest to key by edit distance, or NULL if none is close
 * enough to be a plausible typo. */
const char *experiment_suggest_key(const char *key);

#endif
