/* arch.h: a decoder-only transformer's architecture, and what follows from it.
 *
 * One description covers the models people train now and the GPT-2/3 family
 * the older measurements ran: attention with heads and key/value heads
 * (MHA when kv_heads == heads, GQA when fewer, MQA at 1) or DeepSeek's
 * multi-head latent attention (MLA); an MLP that is GeLU (two matrices, the
 * 4h of GPT) or gated SwiGLU (three matrices, its own intermediate size);
 * LayerNorm or RMSNorm; tied or untied embeddings; learned or rotary
 * positions; and mixture-of-experts MLPs (routed experts, top-k, expert FFN
 * size, shared experts, dense first layers).  Parameters, FLOPs and the
 * bytes a layer stores for its backward are functions of this description
 * and of how one microbatch is run (arch_run): nothing else in pipegrid
 * knows a model's shape.  Readers fill it: arch_gpt (the gpt.* keys) and
 * hfconfig.h (a Hugging Face config.json).
 *
 * Conventions.  "Per GPU" quantities are one GPU's share under tensor (t),
 * context (c) and expert (e) parallelism; counts of the whole model say
 * "total".  FLOPs count a multiply-add as 2.  Activation bytes follow
 * Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
 * Transformer Models", arXiv 2205.05198), generalised term by term (see
 * arch.c): for a GPT layer without recomputation they give sbh(34 + 5as/h)
 * at t = 1, sbh(10 + 24/t + 5as/(ht)) with tensor parallelism and
 * sbh(34 + 5as/h)/t with sequence parallelism.
 */
#ifndef PG_MODEL_ARCH_H
#define PG_MODEL_ARCH_H

#include "util/error.h"

typedef enum { ARCH_MLP_GELU = 0, ARCH_MLP_SWIGLU } arch_mlp_kind;
typedef enum { ARCH_NORM_LAYERNORM = 0, ARCH_NORM_RMSNORM } arch_norm_kind;
typedef enum { ARCH_ATTN_MHA = 0, ARCH_ATTN_MLA } arch_attn_kind;

/* What mixes tokens in one layer: full causal attention, sliding-window
 * attention (each query sees the last sliding_window keys: GPT-OSS), a
 * Mamba-2 state-space block (Nemotron-H), or nothing (an MLP-only layer of
 * a hybrid model).  Letters of arch.mixers: A, S, M, -. */
typedef enum { ARCH_MIX_ATTN = 0, ARCH_MIX_SWA, ARCH_MIX_MAMBA, ARCH_MIX_NONE, ARCH_MIX_KINDS } arch_mixer;
/* The layer's feed-forward part: dense MLP, mixture of experts, or none (a
 * mixer-only layer of a hybrid model).  Letters of arch.ffns: D, E, -. */
typedef enum { ARCH_FFN_DENSE = 0, ARCH_FFN_MOE, ARCH_FFN_NONE, ARCH_FFN_KINDS } arch_ffn;
/* Longest per-layer pattern (arch.mixers, arch.ffns): the deepest hybrid
 * or interleaved model has ~120 layers; a longer model is uniform. */
#define ARCH_MAX_PATTERN 1024
#define ARCH_MIXER_LETTERS "ASM-"
#define ARCH_FFN_LETTERS "DE-"

/* A Mamba-2 block (Dao & Gu 2024, "Transformers are SSMs", arXiv 2405.21060):
 * in_proj h -> [z, x, B, C, dt] = 2 d_inner + 2 groups state + heads, a
 * depthwise causal conv of conv_kernel over x, B, C, the chunked SSD scan
 * (chunk tokens per chunk), a gated RMSNorm and out_proj d_inner -> h, with
 * d_inner = heads x head_dim. */
typedef struct arch_mamba {
    int heads, head_dim, state, groups, conv_kernel, chunk;
} arch_mamba;

/* Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values go
 * through low-rank projections; q_lora_rank 0 = queries projected directly. */
typedef struct arch_mla {
    int q_lora_rank, kv_lora_rank;
    int qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
} arch_mla;

typedef struct arch_moe {
    int experts;          /* routed experts; 0 = a dense model */
    int top_k;            /* experts each token is routed to */
    int expert_ffn;       /* intermediate size of one routed expert */
    int shared_ffn;       /* intermediate size of the shared expert(s) together; 0 = none */
    int shared_gate;      /* a sigmoid gate on the shared expert's output (Qwen-MoE) */
    int dense_layers;     /* the first layers keep a dense MLP (DeepSeek's first_k_dense_replace) */
} arch_moe;

typedef struct arch {
    char name[128];
    int layers, hidden, heads, kv_heads, head_dim;
    int ffn;                   /* dense MLP intermediate size */
    int vocab;
    arch_mlp_kind mlp;
    arch_norm_kind norm;
    arch_attn_kind attn;
    arch_mla mla;              /* attn == ARCH_ATTN_MLA */
    int tied_embeddings;       /* the LM head reuses the word embedding */
    int learned_positions;     /* a learned position table of max_positions rows (GPT); 0 = rotary */
    int max_positions;
    int linear_bias;           /* biases on every linear layer (GPT) */
    int qkv_bias;              /* biases on the query/key/value projections only (Qwen) */
    int dropout;               /* dropout after attention and MLP and on the attention probabilities
                                * (GPT training); modern configs train without */
    arch_moe moe;
    int sliding_window;        /* keys a windowed layer attends to (mixer S) */
    int attn_sinks;            /* a learned sink logit per head (GPT-OSS): heads parameters per attention layer */
    arch_mamba mamba;          /* layers of mixer M */
    int mtp_layers;            /* DeepSeek-V3's multi-token-prediction modules, run after the last layer */
    /* Per-layer kinds, one letter per layer ("" = uniform: every layer full
     * attention; its FFN MoE from moe.dense_layers on when moe.experts > 0). */
    char mixers[ARCH_MAX_PATTERN + 1];
    char ffns[ARCH_MAX_PATTERN + 1];
} arch;

/* How one microbatch runs. */
typedef struct arch_run {
    int seq, micro_batch;      /* s, b */
    int tp, cp, ep;            /* tensor, context, expert parallel degrees (>= 1) */
    int expert_tp1;            /* 1: experts whole on each GPU (etp=1), not split over tp */
    int sequence_parallel;     /* Megatron's: norms, dropouts and residuals sharded over tp */
    int flash;                 /* 1: fused (flash) attention; 0: Megatron's legacy softmax path */
    double capacity_factor;    /* MoE: 0 = dropless */
    int quantized_inputs;      /* 1: a low-precision GEMM recipe (FP8, MXFP8, blockwise FP8, NVFP4), whose
                                * linear layers keep their own quantized copy of their input for the backward
                                * (Transformer Engine: one byte an element, column-wise) instead of the bf16 one */
    int probs_on_outputs;      /* MoE: 1 = the router's probabilities weigh the experts' outputs as they are
                                * combined, which keeps those outputs for the backward (Megatron-Core of NeMo
                                * 24.07); 0 = they weigh the experts' activation function (Megatron-Core's
                                * weighted SwiGLU, its 2025-26 releases): the combine keeps nothing */
} arch_run;

/* A GPT-2/3 decoder of the gpt.* keys: MHA, GeLU 4h MLP, LayerNorm, learned
 * positions (seq rows), tied embeddings, biases and dropout. */
void arch_gpt(arch *a, int layers, int hidden, int heads, int seq, int vocab);
/* The same without its display name (a->name empty), for the cost model's
 * inner loops, which rebuild the architecture per evaluation and never
 * print it; arch_gpt_name gives it the name arch_gpt does. */
void arch_gpt_unnamed(arch *a, int layers, int hidden, int heads, int seq, int vocab);
void arch_gpt_name(arch *a);

/* 0, or PG_EXIT_INPUT naming what is inconsistent (what = a file or key
 * prefix for the message, e.g. "hf:llama.json"). */
int arch_check(const arch *a, const char *what, pg_status *st);
/* 0, or PG_EXIT_INPUT when the run cannot split this model (heads over tp,
 * experts over ep, sequence over cp); messages name the key. */
int arch_run_check(const arch *a, const arch_run *r, pg_status *st);

/* The layer's kinds (arch.mixers / arch.ffns, or the uniform default). */
arch_mixer arch_layer_mixer(const arch *a, int layer);
arch_ffn arch_layer_ffn(const arch *a, int layer);

static inline int arch_is_moe_layer(const arch *a, int layer)
{
    return arch_layer_ffn(a, layer) == ARCH_FFN_MOE;
}

/* 1 for multi-head latent attention in a layer of this mixer. */
static inline int arch_mixer_is_mla(const arch *a, arch_mixer mixer)
{
    return a->attn == ARCH_ATTN_MLA && (mixer == ARCH_MIX_ATTN || mixer == ARCH_MIX_SWA);
}

/* Norms of a layer of these kinds that Transformer Engine does not fuse into
 * the next linear layer (what recompute.modules' layernorm recomputes): an
 * MLA mixer's (its down-projections are plain linear layers) and a MoE
 * FFN's (the router and the permutation come first). */
static inline int arch_separate_norms(const arch *a, arch_mixer mixer, arch_ffn ffn)
{
    return arch_mixer_is_mla(a, mixer) + (ffn == ARCH_FFN_MOE);
}

/* Mamba-2 widths: d_inner (heads x head_dim), the in_proj output and the
 * conv's channels (x, B, C). */
double arch_mamba_inner(const arch *a);
double arch_mamba_in_width(const arch *a);
double arch_mamba_conv_width(const arch *a);
/* Parameters of one Mamba-2 mixer (without the layer's norm), whole. */
double arch_params_mamba(const arch *a);
/* The SSD scan's FLOPs of one forward for `tokens` tokens (all heads), its
 * chunked form: per chunk of Q tokens, C B^T within the chunk (per group),
 * its masked product with x (per head), the chunk's state B^T x and the
 * output's state term C h (per head); plus the causal conv.  The time-mixing
 * core, as attention's QK^T and AV. */
double arch_mamba_scan_flops(const arch *a, double tokens);
/* Keys each query of a layer with this mixer meets at sequence length seq:
 * seq, or min(window, seq) for a sliding window; 0 without attention. */
double arch_attn_keys(const arch *a, arch_mixer mixer, double seq);
/* Unique parameters of the multi-token-prediction modules (each: two
 * norms, the 2h -> h projection and one MoE/dense layer like the last; the
 * embedding and LM head are shared with the main model). */
double arch_params_mtp(const arch *a);

/* Attention widths (all heads): queries, keys (= values for MHA/GQA; MLA's
 * keys are per head, as wide as its queries), and the attention output. */
double arch_q_dim(const arch *a);
double arch_kv_dim(const arch *a);
double arch_o_dim(const arch *a);

/* ---- parameters ------------------------------------------------------------ */

/* Whole model (every expert counted once): the number model cards publish. */
double arch_params_total(const arch *a);
/* Parameters a token activates: routed experts counted top_k times out of
 * experts (the "active parameters" of MoE cards). */
double arch_params_active(const arch *a);
/* Parts, whole model. */
double arch_params_attention(const arch *a);
double arch_params_mlp(const arch *a, int moe_layer);      /* dense MLP, or all experts + router + shared */
double arch_params_norms(const arch *a);                   /* the two norms of one (attention + MLP) layer */
double arch_params_layer(const arch *a, int layer);        /* one layer: its mixer, its FFN and their norms */
double arch_params_embedding(const arch *a);               /* word (+ position) table */
double arch_params_head(const arch *a);                    /* final norm + untied LM head */

/* One GPU's parameters of one layer (tensor-parallel shards; experts spread
 * over ep, each expert's matrices over tp), of the embedding (vocab-parallel)
 * and of the head (the LM head's shard; tied: only the final norm). */
double arch_layer_params_gpu(const arch *a, const arch_run *r, int layer);
double arch_embedding_params_gpu(const arch *a, const arch_run *r);
/* Of arch_layer_params_gpu, the routed experts' weights (0 for a layer
 * without them): what Megatron keeps in its expert-parallel buffers and
 * reduces, shards and steps over the expert-data-parallel group. */
double arch_layer_expert_params_gpu(const arch *a, const arch_run *r, int layer);
double arch_head_params_gpu(const arch *a, const arch_run *r);

/* ---- FLOPs ------------------------------------------------------------------- */

/* Model FLOPs of one layer's forward for one microbatch, whole layer (all
 * GPUs of the tp x cp group together): the linear layers (routed experts:
 * top_k of them per token) and the attention's two batched GEMMs over the
 * full s x s score matrix, as Megatron and the MFU literature count them
 * (no causal halving).  The backward is 2x. */
double arch_layer_fwd_flops(const arch *a, const arch_run *r, int layer);
/* LM head (logits) forward FLOPs, whole. */
double arch_head_fwd_flops(const arch *a, const arch_run *r);
/* Model FLOPs of one training step of one sample (forward + backward over
 * every layer, the head included): 3x the forward. */
double arch_flops_per_sample(const arch *a, const arch_run *r);

/* ---- activations --------------------------------------------------------------- */

/* What one layer's forward stores for its backward, bytes on one GPU, for one
 * microbatch.  Modes: */
typedef enum {
    ARCH_ACT_NONE = 0,    /* everything (no recomputation) */
    ARCH_ACT_SELECTIVE,   /* Megatron's selective: the attention core (scores, softmax, dropout) recomputed */
    ARCH_ACT_LGD,         /* PipeOffload's: norm outputs, activation function, dropout masks recomputed */
    ARCH_ACT_FULL,        /* full: only the layer's input */
    ARCH_ACT_MODES
} arch_act_mode;

double arch_layer_act_bytes(const arch *a, const arch_run *r, int layer, arch_act_mode mode);

/* Megatron-Core's selective recomputation modules (--recompute-modules,
 * its default core_attn), a set of bits: what each recomputes in the
 * backward instead of keeping from the forward. */
typedef enum {
    ARCH_RC_CORE_ATTN = 1u << 0,   /* the attention core: arch_layer_attn_core_bytes (legacy scores; 0 with flash) */
    ARCH_RC_LAYERNORM = 1u << 1,   /* the norms not fused into the next linear layer (an MLA mixer's, a MoE FFN's):
                                    * their outputs */
    ARCH_RC_MLA_UP_PROJ = 1u << 2, /* MLA's query and key/value up-projections and rope: the queries, keys and
                                    * values the attention core keeps */
    ARCH_RC_MLP = 1u << 3,         /* a dense MLP (not MoE) from its input: its norm's output, FC1's output and
                                    * FC2's input */
    ARCH_RC_MOE_ACT = 1u << 4,     /* the routed experts' activation function: FC2's input */
    ARCH_RC_MOE = 1u << 5,         /* a MoE layer from its input (its norm's output): the router's probabilities,
                                    * the permuted tokens, every expert's (and the shared expert's) FC1 output and
                                    * FC2 input; the recomputed dispatch is not sent again (pipegrid's all-to-alls
                                    * are the forward's and the backward's) */
} arch_recompute_module;
#define ARCH_RC_DEFAULT ARCH_RC_CORE_ATTN
/* Bytes of arch_layer_act_bytes(.., ARCH_ACT_NONE) that the modules
 * recompute (what selective recomputation frees), one GPU, one microbatch. */
double arch_layer_selective_bytes(const arch *a, const arch_run *r, int layer, unsigned modules);
/* Of the above (mode NONE or LGD), what the weight-gradient pass still needs
 * after the input-gradient pass: the linear layers' inputs and their output
 * gradients (zero-bubble's M_W). */
double arch_layer_act_w_bytes(const arch *a, const arch_run *r, int layer, arch_act_mode mode);
/* The attention core's stored bytes of that layer (what selective
 * recomputation frees): the legacy path's scores over the keys the layer's
 * queries meet (min(window, s) for a sliding window); 0 for flash and for
 * layers without attention. */
double arch_layer_attn_core_bytes(const arch *a, const arch_run *r, int layer);
/* Bytes of the hidden state between layers on one GPU (a layer's input; what
 * one pipeline stage sends the next): 2sbh / cp, / tp with sequence parallelism. */
double arch_hidden_bytes(const arch *a, const arch_run *r);
/* Korthikanti's first-stage extras: embedding dropout mask (with dropout). */
double arch_embedding_act_bytes(const arch *a, const arch_run *r);

/* ---- communication -------------------------------------------------------------- */

/* Bytes one GPU sends in one expert-parallel all-to-all (dispatch or combine)
 * of one MoE layer: its tokens' top_k copies bound for the other ep - 1 GPUs. */
double arch_a2a_bytes(const arch *a, const arch_run *r);
/* Bytes of one GPU's key/value block passed round the context-parallel ring. */
double arch_cp_kv_bytes(const arch *a, const arch_run *r);

#endif
