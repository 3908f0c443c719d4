/* workload_types.h: the plain type of a workload (what one stage costs, per
 * microbatch; workload.h says what the fields mean and how a workload is
 * built) and what needs nothing but the type: its release and the bytes a
 * stage sends on.  Its own module so that the builders of a workload (the
 * cost model, costmodel.h; the profile reader, profile.h) and the readers
 * of one depend on the type, not on workload.c, which calls the builders.
 */
#ifndef PG_MODEL_WORKLOAD_TYPES_H
#define PG_MODEL_WORKLOAD_TYPES_H

typedef struct stage_cost {
    double f_s, b_s, w_s;        /* seconds on the reference GPU: the op's compute; the tensor-parallel
                                  * collectives the simulator runs on the links are not in them */
    double f_tp_coll_s;          /* the cost model's time of F's simulated tp collectives (uncontended, as
                                  * they sat in F's kernel queue): what recomputing F runs again with it */
    double act_b_bytes;          /* stored by F for B */
    double act_w_bytes;          /* still held after B, for W */
    double boundary_bytes;       /* output activation sent to the next stage; the gradient back is the same size */
    double tp_coll_bytes;        /* the whole hidden-state activation one tensor-parallel collective of the
                                  * stage's transformer layers carries (s x b x h elements); unlike
                                  * boundary_bytes it is not 0 on a stage that ends with the LM head (the
                                  * last stage, the only one at pp = 1), whose layers still run them */
    double param_count;          /* parameters held by the stage */
    double frozen_param_count;   /* of them, weights without gradients (LoRA's frozen base: held in bf16, never
                                  * reduced, sharded or stepped; stage_trainable_params is the rest) */
    double expert_param_count;   /* of param_count, the routed experts' weights (MoE, ep > 1 or not): their
                                  * gradients are reduced, and their optimizer state sharded and stepped, over
                                  * the GPUs holding the same experts (experiment.h parallel_expert_dp) */
    double fwd_flops;            /* model FLOPs of F on one GPU (B + W = 2x), for MFU */
    double workspace_bytes;      /* transient buffers while an op of this stage runs */
    int layers;                  /* transformer layers in the stage (informational) */
    /* Selective recomputation (Megatron's; named for its default module, the
     * attention core).  Set by profiles (given, or from the model shape) and
     * by the cost model for the modules recompute.modules names
     * (model/arch.h arch_recompute_module: the attention core, MLA's
     * up-projections, norms, a dense MLP, the experts' activation); when
     * has_selective is 0 memory_selective_bytes / memory_selective_s
     * (model/memory.h) derive them from the zero-bubble formulas. */
    int has_selective;
    double selective_bytes;      /* part of act_b_bytes the modules store (the attention core's: the 5as term of M_B) */
    double selective_s;          /* reference seconds to recompute it */
    /* Expert parallelism (MoE models, ep > 1): each of the stage's moe_layers
     * runs, per microbatch, a dispatch and a combine all-to-all among its ep
     * GPUs in F, and the same two again (the gradients) in B.  a2a_bytes is
     * what one GPU sends to the other ep - 1 GPUs in one of them, in total;
     * a2a_compute_s is the expert compute of one MoE layer in F (what
     * DualPipeV's overlap can hide the other chunk's all-to-alls under). */
    int moe_layers;
    double a2a_bytes;
    double a2a_compute_s;
    /* Context parallelism (cp > 1): in F each of the stage's attn_layers passes
     * its key/value block round the cp ring (cp - 1 steps of cp_kv_bytes per
     * GPU), in B the keys/values and their gradients (2 x cp_kv_bytes a step). */
    int attn_layers;
    double cp_kv_bytes;
    /* Full recomputation as Megatron runs it (model/arch.h): F keeps every
     * layer's input (full_keep_bytes); the backward recomputes one layer at a
     * time, so beyond what it keeps it needs at most one layer's activations
     * (layer_act_b_bytes, of which layer_act_w_bytes stay for W).  0 when the
     * workload has no layer structure (the stage input alone is kept, and the
     * whole stage recomputed at once). */
    double full_keep_bytes;
    double layer_act_b_bytes, layer_act_w_bytes;
} stage_cost;

/* What a rank holds on its GPU besides the model's tensors (memory.headroom,
 * memory.fragmentation, memory.reserved; the GPU type's measured numbers in
 * profiles/gpus/TYPE.yaml, costmodel.h gpu_params.headroom).  model/memory.h
 * adds them up: the context, NCCL's buffers and the user's margin are static
 * (memory_headroom_static_bytes), the fragmentation scales the dynamic bytes
 * (memory_dynamic_footprint_bytes). */
typedef struct memory_headroom {
    char gpu[64];                /* the GPU type the numbers are of ("" = no GPU type: none counted) */
    double cuda_context_bytes;   /* CUDA context and library workspaces, once per process */
    double nccl_bytes;           /* NCCL's buffers: nccl_communicators x the type's per-communicator bytes */
    int nccl_communicators;      /* the rank's communicators (model/memory.h memory_nccl_communicators) */
    double fragmentation;        /* allocator's reserved-but-unused / allocated, of activations and workspace */
    double reserved_bytes;       /* memory.reserved: the user's own margin */
} memory_headroom;

typedef struct workload {
    char name[128];
    char source[512];            /* provenance of the numbers */
    char cost_basis[2048];       /* modelled workloads: which GPU-type parameters were fitted, on what, and
                                  * which are borrowed from another type ("" for measured workloads) */
    char cost_summary[256];      /* the same in one short line (the text report's `cost model` line): the
                                  * GPU type, how many parameters rest on what, the layer profile factor */
    char ref_gpu[64];            /* GPU type the times were measured on ("" = absolute) */
    memory_headroom headroom;    /* per GPU besides the model's tensors (model/memory.h) */
    double iter_overhead_s;      /* workload=gpt / hf: the GPU type's fitted per-iteration overhead (the
                                  * framework's work outside the ops); 0 for measured and uniform times */
    double layer_profile_factor; /* modelled workloads: the measured layer profile the layers ran at
                                  * (costmodel.h); 0 = the analytic time */
    int layer_profile_rows;      /* the measured jobs it rests on */
    double ref_speed_flops;      /* 0 = absolute times */
    int nstages;
    stage_cost *stage;           /* [nstages] */
    int moe_experts, moe_top_k;  /* MoE models: routed experts and experts per token (0 = dense); HybridEP's
                                  * cross-node copies depend on them (costmodel_a2a_node_copies) */
    int seq_len;                 /* tokens per sample (0 = unknown) */
    int micro_batch_size;        /* samples per microbatch */
    double tied_embedding_params; /* per GPU: the word embedding the last stage holds again for an LM head tied
                                  * to it (nstages > 1); both copies' gradients are summed each iteration
                                  * (sim.h embed_sync_bytes); 0 = none (untied, one stage, measured profiles) */
} workload;

/* Parameters of a stage that are trained: with gradients to reduce, optimizer
 * state and an update (all of param_count but LoRA's frozen base). */
static inline double stage_trainable_params(const stage_cost *c) { return c->param_count - c->frozen_param_count; }
/* Of stage_trainable_params, the experts' (none under LoRA: the base is frozen). */
static inline double stage_trainable_expert_params(const stage_cost *c)
{
    return c->frozen_param_count > 0 ? 0.0 : c->expert_param_count;
}


/* Release w's stages (w itself is the caller's); NULL and a zeroed w are no-ops. */
void workload_free(workload *w);

/* Bytes ONE GPU of a tp group sends across stage boundary `stage`: its
 * 1/tp shard of the activation (Megatron sends the sequence-parallel shard,
 * or, without sequence parallelism, scatter_gather_tensors_in_pipeline's
 * 1/tp slice), each GPU on its own links at the same time -- so one shard
 * on one route takes the boundary's time. */
double workload_p2p_bytes(const workload *w, int stage, int tp);

/* The data-parallel gradient bucket the simulator uses for `requested`
 * bytes (dp.bucket_bytes; 0 = one bucket per stage, returned as 0), each
 * stage's gradient being param_count x share x grad_bytes_per_param: each
 * bucket is a collective of dp transfers per ring edge, so tiny buckets
 * (1KB: millions of them) would cost minutes of host time while modelling
 * nothing real (NCCL is latency-bound below about a MiB).  A bucket is at
 * least WORKLOAD_DP_BUCKET_MIN_BYTES, and big enough that no stage has more
 * than WORKLOAD_DP_MAX_BUCKETS_PER_STAGE buckets.  One rule for the
 * simulator (job.c) and the calibration's surrogate. */
#define WORKLOAD_DP_BUCKET_MIN_BYTES (1024.0 * 1024.0)
#define WORKLOAD_DP_MAX_BUCKETS_PER_STAGE 256
double workload_dp_bucket_bytes(const workload *w, double share, double grad_bytes_per_param, double requested);

/* Whether bucket j of a stage's nb, of which ne carry the routed experts'
 * gradient (the others the dense part's), is an expert one: the experts'
 * spread evenly, expert bucket k where the share of the buckets before it
 * reaches k / ne (the backward produces both kinds layer by layer).  One
 * rule for the simulator (sim/gradsync.c) and the surrogate. */
static inline int workload_bucket_is_expert(int j, int ne, int nb)
{
    return (long)(j + 1) * ne / nb > (long)j * ne / nb;
}

#endif
