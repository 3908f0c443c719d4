/* workload.h: what one stage costs, per microbatch.
 *
 * A workload is the model cut into nstages stages (pp * v), each with its
 * measured (or modelled) times and memory.  Times are on the reference GPU
 * the profile was measured on (ref_speed_flops); the simulator scales them
 * by ref_speed / speed of the GPU that runs the stage.  ref_speed_flops == 0
 * means the times are absolute and never scaled (workload=uniform).
 *
 * Memory per stage follows the zero-bubble accounting: F stores act_b_bytes
 * (what B needs), B releases act_b_bytes - act_w_bytes, W releases the rest.
 *
 * One GPU's share.  A stage's bytes (activations, workspace), parameters and
 * fwd_flops are what ONE GPU of its tensor-parallel group holds and runs;
 * so are its times, except workload=uniform's, which are the whole group's
 * and which the simulator splits over the group (experiment_tp_share,
 * sim.h's split_compute).  boundary_bytes is the whole activation sent on,
 * tp_coll_bytes the whole activation of the tp collectives.
 *
 * Profiles are measured once, for one GPU at one micro batch size;
 * workload_build adapts them, in one place, to the experiment:
 *   - micro_batch_size (experiment.c defaults it to the profile's
 *     model.micro_batch_size): times, activation, attention-core,
 *     workspace and boundary bytes, and FLOPs scale linearly by
 *     micro_batch_size / the profile's (an approximation: a GPU is less
 *     efficient at small batches, so times of a smaller batch are optimistic);
 *   - tp: times, FLOPs, parameters, activation, attention-core and workspace
 *     bytes are divided by tp.  Exact for the sharded GEMMs and for Megatron
 *     with sequence parallelism (tp.sequence_parallel=true); without it each
 *     GPU also keeps the replicated LayerNorm and dropout activations
 *     (10sbh of a layer's 34sbh + 5as^2b, Korthikanti et al. 2022), which
 *     /tp leaves out, and the replicated LayerNorm parameters are divided too.
 */
#ifndef PG_MODEL_WORKLOAD_H
#define PG_MODEL_WORKLOAD_H

#include "model/experiment.h"
#include "util/error.h"

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
    double fwd_flops;            /* model FLOPs of F on one GPU (B + W = 2x), for MFU */
    double workspace_bytes;      /* transient buffers while an op of this stage runs */
    int layers;                  /* transformer layers in the stage (informational) */
    /* Selective recomputation (Megatron's: the attention core only).  Set by
     * profiles (given, or from the model shape); when has_attn_core is 0
     * memory_attn_core_bytes / memory_attn_core_s (model/memory.h) derive
     * them from the zero-bubble formulas. */
    int has_attn_core;
    double attn_core_bytes;      /* part of act_b_bytes the attention core stores (the 5as term of M_B) */
    double attn_core_s;          /* reference seconds to recompute it */
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

typedef struct workload {
    char name[128];
    char source[512];            /* provenance of the numbers */
    char cost_basis[2048];       /* modelled workloads: which GPU-type parameters were fitted, on what, and
                                  * which are borrowed from another type ("" for measured workloads) */
    char ref_gpu[64];            /* GPU type the times were measured on ("" = absolute) */
    double layer_profile_factor; /* modelled workloads: the measured layer profile the layers ran at
                                  * (costmodel.h); 0 = the analytic time */
    int layer_profile_rows;      /* the measured jobs it rests on */
    double ref_speed_flops;      /* 0 = absolute times */
    int nstages;
    stage_cost *stage;           /* [nstages] */
    int seq_len;                 /* tokens per sample (0 = unknown) */
    int micro_batch_size;        /* samples per microbatch */
    double reserved_bytes;       /* per GPU besides the model's tensors (memory.reserved: CUDA context, NCCL
                                  * buffers, fragmentation): memory_static_bytes counts it once per rank */
    double tied_embedding_params; /* per GPU: the word embedding the last stage holds again for an LM head tied
                                  * to it (nstages > 1); both copies' gradients are summed each iteration
                                  * (sim.h embed_sync_bytes); 0 = none (untied, one stage, measured profiles) */
} workload;

/* Build the workload of experiment e cut into nstages stages (profiles
 * adapted to e's micro_batch_size and tp, above). */
int workload_build(const experiment *e, int nstages, workload *w, pg_status *st);
void workload_free(workload *w);

/* Bytes ONE GPU of a tp group sends across stage boundary `stage`: its
 * 1/tp shard of the activation (Megatron sends the sequence-parallel shard,
 * or, without sequence parallelism, scatter_gather_tensors_in_pipeline's
 * 1/tp slice), each GPU on its own links at the same time -- so one shard
 * on one route takes the boundary's time. */
double workload_p2p_bytes(const workload *w, int stage, int tp);

/* Load a profile YAML (profiles/NAME.yaml) and cut it into nstages stages
 * (evenly by layers, or by the profile's explicit split if it has one for
 * that count).  Errors name file, line and key. */
int workload_load_profile(const char *path, int nstages, workload *w, pg_status *st);

#endif
