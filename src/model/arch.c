/* arch.c: parameters, FLOPs and stored activations of a transformer (arch.h).
 *
 * Activation bytes, term by term (Korthikanti et al. 2022, Section 4; the
 * GPT numbers in brackets are theirs, per layer, in units of sbh bytes at
 * t = 1): with T the tokens on one GPU (s b / cp) and "rep" a hidden-sized
 * tensor outside the tensor-parallel region (divided by t only with
 * sequence parallelism), one layer's forward stores
 *   the two norms' inputs                               rep 2 x 2Th        [4]
 *   attention: the QKV GEMM's input (norm output)        rep 2Th            [2]
 *              Q, K, V                                   2T(q+k+v)/t        [6]
 *              legacy: softmax output, dropout mask and
 *              output: (2 + 1 + 2) b (a/t) (s/cp) s      (2 without dropout) [5as/h]
 *              flash: the softmax statistics, fp32       4 b (a/t) (s/cp)
 *              the output projection's input             2T o/t             [2]
 *              dropout mask                              rep Th             [1]
 *   MLP:       FC1 input (norm output)                   rep 2Th            [2]
 *              activation input (SwiGLU: gate and up)    2T f (x2)/t        [8]
 *              FC2 input                                 2T f/t             [8]
 *              dropout mask                              rep Th             [1]
 * = sbh(34 + 5as/h) for GPT at t = 1.  A MoE MLP stores instead the router's
 * input and fp32 probabilities, and per routed token copy (T k of them,
 * x capacity factor when padded) the expert's input, its FC1 output and
 * activation and its output (needed to weight the combine), plus a shared
 * expert's FC1 output and activation.  Multi-head latent attention stores
 * its low-rank projections' outputs and norm inputs (replicated, as Megatron
 * does not split the down-projections).
 * Selective recomputation drops the legacy attention core (the score terms;
 * flash attention stores none, so it frees nothing).  LGD drops the norm
 * outputs (QKV and FC1 inputs), the activation function's output (FC2 input)
 * and the dropout masks.  Full recomputation keeps the layer input only.
 */
#include "model/arch.h"

#include <stdio.h>
#include <string.h>

#define BF16_BYTES 2.0
#define QUANTIZED_INPUT_BYTES 1.0   /* a GEMM input kept quantized for the backward (arch_run.quantized_inputs) */
#define FP32_BYTES 4.0
#define MASK_BYTES 1.0
#define FLOPS_PER_MAC 2.0
#define BACKWARD_FLOPS_FACTOR 2.0   /* a backward is twice its forward's FLOPs */
#define TRAIN_FLOPS_FACTOR 3.0      /* forward + backward */
#define GELU_MATRICES 2.0           /* FC1, FC2 */
#define SWIGLU_MATRICES 3.0         /* gate, up, down */
#define LAYERNORM_PARAMS_PER_H 2.0  /* gain and bias */
#define RMSNORM_PARAMS_PER_H 1.0
#define NORMS_PER_LAYER 2.0
/* Legacy attention core, bytes per score element: softmax output (bf16),
 * dropout mask and dropout output. */
#define SCORE_SOFTMAX_BYTES BF16_BYTES
#define SCORE_DROPOUT_BYTES (MASK_BYTES + BF16_BYTES)
/* GPT's MLP is 4h wide. */
#define GPT_FFN_MULT 4
/* Mamba-2 per-head vectors: dt bias, A (log) and the skip D. */
#define MAMBA_HEAD_VECTORS 3.0
/* Mamba-2's in_proj carries z and x (d_inner each) and B and C (groups x state each). */
#define MAMBA_ZX 2.0
#define MAMBA_BC 2.0
/* The SSD scan's state terms per chunk and head: B^T x (the chunk's state) and C h (its output). */
#define MAMBA_STATE_GEMMS 2.0
/* One multi-token-prediction module: norms of the hidden state, of the next
 * token's embedding and of its shared head's input; its projection is 2h -> h. */
#define MTP_NORMS 3.0
#define MTP_PROJ_IN_MULT 2.0

void arch_gpt(arch *a, int layers, int hidden, int heads, int seq, int vocab)
{
    arch_gpt_unnamed(a, layers, hidden, heads, seq, vocab);
    arch_gpt_name(a);
}

void arch_gpt_name(arch *a)
{
    snprintf(a->name, sizeof a->name, "gpt L%d h%d a%d", a->layers, a->hidden, a->heads);
}

void arch_gpt_unnamed(arch *a, int layers, int hidden, int heads, int seq, int vocab)
{
    memset(a, 0, sizeof *a);
    a->layers = layers;
    a->hidden = hidden;
    a->heads = heads;
    a->kv_heads = heads;
    a->head_dim = heads > 0 ? hidden / heads : 0;
    a->ffn = GPT_FFN_MULT * hidden;
    a->vocab = vocab;
    a->mlp = ARCH_MLP_GELU;
    a->norm = ARCH_NORM_LAYERNORM;
    a->attn = ARCH_ATTN_MHA;
    a->tied_embeddings = 1;
    a->learned_positions = 1;
    a->max_positions = seq;
    a->linear_bias = 1;
    a->dropout = 1;
}

int arch_check(const arch *a, const char *what, pg_status *st)
{
    struct { const char *name; int v; } dim[] = {
        {"layers", a->layers}, {"hidden size", a->hidden}, {"attention heads", a->heads},
        {"key/value heads", a->kv_heads}, {"head dimension", a->head_dim}, {"vocabulary", a->vocab},
    };
    for (size_t i = 0; i < sizeof dim / sizeof dim[0]; i++)
        if (dim[i].v < 1)
            return pg_fail(st, PG_EXIT_INPUT, "%s: %s must be a positive integer (got %d)", what, dim[i].name,
                           dim[i].v);
    if (a->heads % a->kv_heads != 0)
        return pg_fail(st, PG_EXIT_INPUT, "%s: %d key/value heads do not divide %d attention heads", what,
                       a->kv_heads, a->heads);
    int needs_dense = (a->moe.experts == 0 || a->moe.dense_layers > 0) && strchr(a->ffns, 'D') == NULL &&
                      a->ffns[0] == '\0';
    needs_dense |= strchr(a->ffns, 'D') != NULL;
    if (needs_dense && a->ffn < 1)
        return pg_fail(st, PG_EXIT_INPUT, "%s: the MLP intermediate size must be positive (got %d)", what, a->ffn);
    if (a->moe.experts < 0 || (a->moe.experts > 0 && (a->moe.top_k < 1 || a->moe.top_k > a->moe.experts ||
                                                       a->moe.expert_ffn < 1)))
        return pg_fail(st, PG_EXIT_INPUT,
                       "%s: a mixture of experts needs 1 <= top_k <= experts and a positive expert size "
                       "(got %d experts, top_k %d, expert size %d)",
                       what, a->moe.experts, a->moe.top_k, a->moe.expert_ffn);
    if (a->moe.dense_layers < 0 || a->moe.dense_layers > a->layers || a->moe.shared_ffn < 0)
        return pg_fail(st, PG_EXIT_INPUT, "%s: dense first layers %d outside 0..%d layers", what,
                       a->moe.dense_layers, a->layers);
    if (a->attn == ARCH_ATTN_MLA &&
        (a->mla.kv_lora_rank < 1 || a->mla.qk_nope_head_dim < 0 || a->mla.qk_rope_head_dim < 1 ||
         a->mla.v_head_dim < 1 || a->mla.q_lora_rank < 0))
        return pg_fail(st, PG_EXIT_INPUT, "%s: latent attention needs positive kv_lora_rank, qk_rope_head_dim and "
                       "v_head_dim", what);
    if (a->learned_positions && a->max_positions < 1)
        return pg_fail(st, PG_EXIT_INPUT, "%s: learned positions need a positive table size", what);
    size_t nm = strlen(a->mixers), nf = strlen(a->ffns);
    if ((nm > 0 && nm != (size_t)a->layers) || (nf > 0 && nf != (size_t)a->layers))
        return pg_fail(st, PG_EXIT_INPUT, "%s: a per-layer pattern has %zu letters for %d layers", what,
                       nm > 0 && nm != (size_t)a->layers ? nm : nf, a->layers);
    if (strspn(a->mixers, ARCH_MIXER_LETTERS) != nm || strspn(a->ffns, ARCH_FFN_LETTERS) != nf)
        return pg_fail(st, PG_EXIT_INPUT, "%s: per-layer letters must be of %s (mixers) and %s (ffns)", what,
                       ARCH_MIXER_LETTERS, ARCH_FFN_LETTERS);
    int swa = 0, mamba = 0, moe = 0;
    for (int l = 0; l < a->layers; l++) {
        swa |= arch_layer_mixer(a, l) == ARCH_MIX_SWA;
        mamba |= arch_layer_mixer(a, l) == ARCH_MIX_MAMBA;
        moe |= arch_layer_ffn(a, l) == ARCH_FFN_MOE;
    }
    if (swa && a->sliding_window < 1)
        return pg_fail(st, PG_EXIT_INPUT, "%s: sliding-window layers need a positive window (got %d)", what,
                       a->sliding_window);
    const arch_mamba *mb = &a->mamba;
    if (mamba && (mb->heads < 1 || mb->head_dim < 1 || mb->state < 1 || mb->groups < 1 || mb->conv_kernel < 1 ||
                  mb->chunk < 1 || mb->heads % mb->groups != 0))
        return pg_fail(st, PG_EXIT_INPUT, "%s: Mamba layers need positive heads, head dim, state, groups (dividing "
                       "the heads), conv kernel and chunk size", what);
    if (moe && a->moe.experts < 1)
        return pg_fail(st, PG_EXIT_INPUT, "%s: MoE layers need experts", what);
    if (a->mtp_layers < 0)
        return pg_fail(st, PG_EXIT_INPUT, "%s: %d multi-token-prediction layers", what, a->mtp_layers);
    return 0;
}

arch_mixer arch_layer_mixer(const arch *a, int layer)
{
    if (a->mixers[0] == '\0' || layer < 0 || layer >= (int)sizeof a->mixers - 1)
        return ARCH_MIX_ATTN;
    const char *p = strchr(ARCH_MIXER_LETTERS, a->mixers[layer]);
    return p && *p ? (arch_mixer)(p - ARCH_MIXER_LETTERS) : ARCH_MIX_ATTN;
}

arch_ffn arch_layer_ffn(const arch *a, int layer)
{
    if (a->ffns[0] == '\0' || layer < 0 || layer >= (int)sizeof a->ffns - 1)
        return a->moe.experts > 0 && layer >= a->moe.dense_layers ? ARCH_FFN_MOE : ARCH_FFN_DENSE;
    const char *p = strchr(ARCH_FFN_LETTERS, a->ffns[layer]);
    return p && *p ? (arch_ffn)(p - ARCH_FFN_LETTERS) : ARCH_FFN_DENSE;
}

int arch_run_check(const arch *a, const arch_run *r, pg_status *st)
{
    if (r->seq < 1 || r->micro_batch < 1 || r->tp < 1 || r->cp < 1 || r->ep < 1)
        return pg_fail_key(st, PG_EXIT_INPUT, "gpt.seq", "sequence %d, micro batch %d, tp %d, cp %d, ep %d must "
                       "all be positive", r->seq, r->micro_batch, r->tp, r->cp, r->ep);
    if (a->heads % r->tp != 0)
        return pg_fail_key(st, PG_EXIT_INPUT, "tp", "tp=%d does not divide the %d attention heads (Megatron "
                       "splits heads)", r->tp, a->heads);
    if (a->attn == ARCH_ATTN_MHA && a->kv_heads % r->tp != 0)
        return pg_fail_key(st, PG_EXIT_INPUT, "tp", "tp=%d does not divide the %d key/value heads (Megatron "
                       "splits query groups)", r->tp, a->kv_heads);
    if (r->seq % (2 * r->cp) != 0 && r->cp > 1)
        return pg_fail_key(st, PG_EXIT_INPUT, "cp", "the sequence %d does not split into 2 x cp = %d chunks "
                       "(load-balanced causal context parallelism)", r->seq, 2 * r->cp);
    if (r->ep > 1 && a->moe.experts == 0)
        return pg_fail_key(st, PG_EXIT_INPUT, "ep", "ep=%d needs a mixture-of-experts model (%s is dense)", r->ep,
                       a->name);
    if (a->moe.experts > 0 && a->moe.experts % r->ep != 0)
        return pg_fail_key(st, PG_EXIT_INPUT, "ep", "ep=%d does not divide the %d experts", r->ep,
                       a->moe.experts);
    return 0;
}

/* ---- dimensions ------------------------------------------------------------ */

double arch_q_dim(const arch *a)       /* query width (all heads) */
{
    if (a->attn == ARCH_ATTN_MLA)
        return (double)a->heads * (a->mla.qk_nope_head_dim + a->mla.qk_rope_head_dim);
    return (double)a->heads * a->head_dim;
}

double arch_kv_dim(const arch *a)      /* key width, value width alike for MHA/GQA */
{
    return (double)a->kv_heads * a->head_dim;
}

double arch_o_dim(const arch *a)       /* attention output width (values of all heads) */
{
    if (a->attn == ARCH_ATTN_MLA)
        return (double)a->heads * a->mla.v_head_dim;
    return (double)a->heads * a->head_dim;
}

static double mlp_matrices(const arch *a)
{
    return a->mlp == ARCH_MLP_SWIGLU ? SWIGLU_MATRICES : GELU_MATRICES;
}

static double norm_params(const arch *a)
{
    return (a->norm == ARCH_NORM_LAYERNORM ? LAYERNORM_PARAMS_PER_H : RMSNORM_PARAMS_PER_H) * a->hidden;
}

/* ---- parameters -------------------------------------------------------------- */

/* Attention weights (matrices only) and biases, whole layer. */
static double attn_weights(const arch *a)
{
    double h = a->hidden;
    if (a->attn == ARCH_ATTN_MLA) {
        const arch_mla *m = &a->mla;
        double qk_head = m->qk_nope_head_dim + m->qk_rope_head_dim;
        double q = m->q_lora_rank > 0 ? h * m->q_lora_rank + (double)m->q_lora_rank * a->heads * qk_head
                                      : h * a->heads * qk_head;
        double kv = h * (m->kv_lora_rank + m->qk_rope_head_dim) +
                    (double)m->kv_lora_rank * a->heads * (m->qk_nope_head_dim + m->v_head_dim);
        return q + kv + arch_o_dim(a) * h;
    }
    return h * (arch_q_dim(a) + 2 * arch_kv_dim(a)) + arch_o_dim(a) * h;
}

static double attn_biases(const arch *a)
{
    double qkv = arch_q_dim(a) + 2 * arch_kv_dim(a);
    if (a->linear_bias)
        return qkv + a->hidden;
    return a->qkv_bias ? qkv : 0.0;
}

static double mla_norms(const arch *a)   /* RMSNorms on the latent projections */
{
    if (a->attn != ARCH_ATTN_MLA)
        return 0.0;
    return (double)a->mla.q_lora_rank + a->mla.kv_lora_rank;
}

double arch_params_attention(const arch *a)
{
    return attn_weights(a) + attn_biases(a) + mla_norms(a) + (a->attn_sinks ? (double)a->heads : 0.0);
}

/* ---- Mamba-2 ------------------------------------------------------------------ */

double arch_mamba_inner(const arch *a)
{
    return (double)a->mamba.heads * a->mamba.head_dim;
}

double arch_mamba_in_width(const arch *a)
{
    return MAMBA_ZX * arch_mamba_inner(a) + MAMBA_BC * a->mamba.groups * a->mamba.state + a->mamba.heads;
}

double arch_mamba_conv_width(const arch *a)
{
    return arch_mamba_inner(a) + MAMBA_BC * a->mamba.groups * a->mamba.state;
}

/* in_proj and out_proj matrices */
static double mamba_weights(const arch *a)
{
    return (double)a->hidden * arch_mamba_in_width(a) + arch_mamba_inner(a) * a->hidden;
}

double arch_params_mamba(const arch *a)
{
    double conv = arch_mamba_conv_width(a) * (a->mamba.conv_kernel + 1.0);   /* depthwise weights + bias */
    return mamba_weights(a) + conv + MAMBA_HEAD_VECTORS * a->mamba.heads + arch_mamba_inner(a) /* gated norm */;
}

double arch_mamba_scan_flops(const arch *a, double tokens)
{
    const arch_mamba *m = &a->mamba;
    double q = m->chunk, n = m->state, p = m->head_dim;
    double macs = m->groups * q * n + m->heads * q * p + MAMBA_STATE_GEMMS * m->heads * n * p +
                  arch_mamba_conv_width(a) * m->conv_kernel;
    return FLOPS_PER_MAC * tokens * macs;
}

double arch_attn_keys(const arch *a, arch_mixer mixer, double seq)
{
    if (mixer == ARCH_MIX_SWA)
        return a->sliding_window < seq ? a->sliding_window : seq;
    return mixer == ARCH_MIX_ATTN ? seq : 0.0;
}

static double ffn_params(const arch *a, double width)   /* one MLP of that intermediate width */
{
    double p = mlp_matrices(a) * a->hidden * width;
    if (a->linear_bias)
        p += (a->mlp == ARCH_MLP_SWIGLU ? 2.0 : 1.0) * width + a->hidden;
    return p;
}

double arch_params_mlp(const arch *a, int moe_layer)
{
    if (!moe_layer)
        return ffn_params(a, a->ffn);
    const arch_moe *m = &a->moe;
    double p = (double)a->hidden * m->experts;                      /* router */
    p += m->experts * ffn_params(a, m->expert_ffn);
    if (m->shared_ffn > 0)
        p += ffn_params(a, m->shared_ffn) + (m->shared_gate ? a->hidden : 0.0);
    return p;
}

double arch_params_norms(const arch *a)
{
    return NORMS_PER_LAYER * norm_params(a);
}

double arch_params_embedding(const arch *a)
{
    double p = (double)a->vocab * a->hidden;
    if (a->learned_positions)
        p += (double)a->max_positions * a->hidden;
    return p;
}

double arch_params_head(const arch *a)
{
    return norm_params(a) + (a->tied_embeddings ? 0.0 : (double)a->vocab * a->hidden);
}

static double mixer_params(const arch *a, arch_mixer mixer)
{
    switch (mixer) {
    case ARCH_MIX_ATTN:
    case ARCH_MIX_SWA: return arch_params_attention(a);
    case ARCH_MIX_MAMBA: return arch_params_mamba(a);
    default: return 0.0;
    }
}

/* Norms of a layer: one before each of its parts. */
static double layer_norms(const arch *a, int layer)
{
    return norm_params(a) * ((arch_layer_mixer(a, layer) != ARCH_MIX_NONE) + (arch_layer_ffn(a, layer) != ARCH_FFN_NONE));
}

double arch_params_layer(const arch *a, int layer)
{
    arch_ffn f = arch_layer_ffn(a, layer);
    return mixer_params(a, arch_layer_mixer(a, layer)) + (f == ARCH_FFN_NONE ? 0.0 : arch_params_mlp(a, f == ARCH_FFN_MOE)) +
           layer_norms(a, layer);
}

static double params_of(const arch *a, int active)
{
    double p = arch_params_embedding(a) + arch_params_head(a);
    for (int l = 0; l < a->layers; l++) {
        p += arch_params_layer(a, l);
        if (arch_is_moe_layer(a, l) && active)
            p -= (double)(a->moe.experts - a->moe.top_k) * ffn_params(a, a->moe.expert_ffn);
    }
    return p;
}

double arch_params_mtp(const arch *a)
{
    double h = a->hidden;
    double module = MTP_NORMS * norm_params(a) + MTP_PROJ_IN_MULT * h * h + arch_params_layer(a, a->layers - 1);
    return a->mtp_layers * module;
}

double arch_params_total(const arch *a)
{
    return params_of(a, 0);
}

double arch_params_active(const arch *a)
{
    return params_of(a, 1);
}

/* Replicated over tp unless sequence parallel shards it: norms, the
 * row-parallel biases, MLA's down-projections, the router. */
double arch_layer_params_gpu(const arch *a, const arch_run *r, int layer)
{
    double t = r->tp;
    arch_mixer mixer = arch_layer_mixer(a, layer);
    arch_ffn ffn = arch_layer_ffn(a, layer);
    /* row-parallel layers (output projection, FC2) keep their bias whole on every GPU */
    double row_bias = a->linear_bias ? (double)a->hidden : 0.0;
    double attn = attn_weights(a) / t + (attn_biases(a) - row_bias) / t + row_bias + mla_norms(a);
    if (a->attn == ARCH_ATTN_MLA) {
        /* the down-projections are replicated, the up- and output projections split */
        const arch_mla *m = &a->mla;
        double h = a->hidden;
        double down = (m->q_lora_rank > 0 ? h * m->q_lora_rank : 0.0) + h * (m->kv_lora_rank + m->qk_rope_head_dim);
        attn = down + (attn_weights(a) - down) / t + (attn_biases(a) - row_bias) / t + row_bias + mla_norms(a);
    }
    if (a->attn_sinks)
        attn += (double)a->heads / t;
    if (mixer == ARCH_MIX_MAMBA)   /* heads split over tp; the conv and norm with them */
        attn = arch_params_mamba(a) / t;
    else if (mixer == ARCH_MIX_NONE)
        attn = 0.0;
    double mlp;
    if (ffn == ARCH_FFN_NONE) {
        mlp = 0.0;
    } else if (ffn == ARCH_FFN_DENSE) {
        mlp = (ffn_params(a, a->ffn) - row_bias) / t + row_bias;
    } else {
        const arch_moe *m = &a->moe;
        mlp = (double)a->hidden * m->experts + arch_layer_expert_params_gpu(a, r, layer);
        if (m->shared_ffn > 0)
            mlp += (ffn_params(a, m->shared_ffn) - row_bias) / t + row_bias + (m->shared_gate ? a->hidden : 0.0);
    }
    return attn + mlp + layer_norms(a, layer);
}

double arch_layer_expert_params_gpu(const arch *a, const arch_run *r, int layer)
{
    if (arch_layer_ffn(a, layer) != ARCH_FFN_MOE)
        return 0.0;
    const arch_moe *m = &a->moe;
    double row_bias = a->linear_bias ? (double)a->hidden : 0.0;
    double local_experts = (double)m->experts / r->ep, te = r->expert_tp1 ? 1.0 : r->tp;
    return local_experts * ((ffn_params(a, m->expert_ffn) - row_bias) / te + row_bias);
}

double arch_embedding_params_gpu(const arch *a, const arch_run *r)
{
    double p = (double)a->vocab * a->hidden / r->tp;
    if (a->learned_positions)
        p += (double)a->max_positions * a->hidden;
    return p;
}

double arch_head_params_gpu(const arch *a, const arch_run *r)
{
    return norm_params(a) + (a->tied_embeddings ? 0.0 : (double)a->vocab * a->hidden / r->tp);
}

/* ---- FLOPs ---------------------------------------------------------------------- */

/* Linear-layer weights a token multiplies by in one layer (routed experts:
 * top_k of them; capacity-factor padding is not model FLOPs). */
static double linear_weights_per_token(const arch *a, int layer)
{
    arch_mixer mixer = arch_layer_mixer(a, layer);
    arch_ffn ffn = arch_layer_ffn(a, layer);
    double w = mixer == ARCH_MIX_MAMBA ? mamba_weights(a) : mixer == ARCH_MIX_NONE ? 0.0 : attn_weights(a);
    if (ffn == ARCH_FFN_NONE)
        return w;
    if (ffn == ARCH_FFN_DENSE)
        return w + mlp_matrices(a) * a->hidden * a->ffn;
    const arch_moe *m = &a->moe;
    w += (double)a->hidden * m->experts + (double)m->top_k * mlp_matrices(a) * a->hidden * m->expert_ffn;
    if (m->shared_ffn > 0)
        w += mlp_matrices(a) * a->hidden * m->shared_ffn;
    return w;
}

double arch_layer_fwd_flops(const arch *a, const arch_run *r, int layer)
{
    double tokens = (double)r->seq * r->micro_batch;
    double linear = FLOPS_PER_MAC * tokens * linear_weights_per_token(a, layer);
    /* QK^T over q_dim and AV over o_dim, s x keys (full s x s without a window) */
    arch_mixer mixer = arch_layer_mixer(a, layer);
    double keys = arch_attn_keys(a, mixer, r->seq);
    double core = FLOPS_PER_MAC * (double)r->micro_batch * r->seq * keys * (arch_q_dim(a) + arch_o_dim(a));
    if (mixer == ARCH_MIX_MAMBA)
        core = arch_mamba_scan_flops(a, tokens);
    return linear + core;
}

double arch_head_fwd_flops(const arch *a, const arch_run *r)
{
    return FLOPS_PER_MAC * (double)r->seq * r->micro_batch * a->hidden * a->vocab;
}

double arch_flops_per_sample(const arch *a, const arch_run *r)
{
    double fwd = arch_head_fwd_flops(a, r);
    for (int l = 0; l < a->layers; l++)
        fwd += arch_layer_fwd_flops(a, r, l);
    return TRAIN_FLOPS_FACTOR * fwd / r->micro_batch;
}

/* ---- activations ------------------------------------------------------------------ */

typedef struct act_terms {
    double tokens;      /* T on this GPU */
    double rep;         /* divisor of hidden-sized tensors outside the tp region */
    double t;
    double hid;         /* 2 T h / rep: one bf16 hidden tensor */
    double mask;        /* T h / rep with dropout, else 0 */
} act_terms;

static act_terms terms_of(const arch *a, const arch_run *r)
{
    act_terms x;
    x.tokens = (double)r->seq / r->cp * r->micro_batch;
    x.t = r->tp;
    x.rep = r->sequence_parallel ? x.t : 1.0;
    x.hid = BF16_BYTES * x.tokens * a->hidden / x.rep;
    x.mask = a->dropout ? MASK_BYTES * x.tokens * a->hidden / x.rep : 0.0;
    return x;
}

/* Routed token copies on one GPU (every GPU receives its even share). */
static double routed_tokens(const arch *a, const arch_run *r, const act_terms *x)
{
    double cf = r->capacity_factor > 0 ? r->capacity_factor : 1.0;
    return x->tokens * a->moe.top_k * cf;
}

double arch_layer_attn_core_bytes(const arch *a, const arch_run *r, int layer)
{
    double keys = arch_attn_keys(a, arch_layer_mixer(a, layer), r->seq);
    if (r->flash || keys <= 0)
        return 0.0;
    double scores = (double)r->micro_batch * a->heads / r->tp * ((double)r->seq / r->cp) * keys;
    return scores * (SCORE_SOFTMAX_BYTES + (a->dropout ? SCORE_DROPOUT_BYTES : 0.0));
}

/* The parts, so that the modes and M_W share one list. */
typedef struct layer_acts {
    double norm_inputs;      /* both norms' inputs */
    double gemm_inputs_norm; /* QKV (or latent down-projection) and FC1 / router inputs: norm outputs */
    double qkv;              /* Q, K, V for the core */
    double core_extra;       /* legacy scores or flash statistics (quantized: and the flash output) */
    double proj_in;          /* output projection input */
    double masks;            /* dropout masks (attention output and MLP output) */
    double act_in;           /* activation function inputs (FC1 outputs) */
    double fc2_in;           /* activation function outputs */
    double fc2_in_routed;    /* of fc2_in, the routed experts' */
    double moe_other;        /* of other, the MoE layer's (router probabilities, permuted tokens, expert outputs) */
    double other;            /* MoE router probabilities, expert outputs, MLA latents */
    double out_grads;        /* for M_W: the linear layers' output gradients */
} layer_acts;

/* A low-precision recipe (arch_run.quantized_inputs): the norms' outputs
 * (QKV and FC1 inputs), the output projection's and FC2's inputs are kept
 * quantized, one byte instead of two.  The fused attention kernel's
 * backward still needs its bf16 output: with flash attention that copy
 * stays too, as the core's (core_extra: the backward's, not the weight
 * gradients'); the legacy attention's backward and a Mamba mixer's do not. */
static void quantize_gemm_inputs(const arch_run *r, arch_mixer mixer, layer_acts *L)
{
    if (!r->quantized_inputs)
        return;
    double q = QUANTIZED_INPUT_BYTES / BF16_BYTES;
    if ((mixer == ARCH_MIX_ATTN || mixer == ARCH_MIX_SWA) && r->flash)
        L->core_extra += L->proj_in;
    L->gemm_inputs_norm *= q;
    L->proj_in *= q;
    L->fc2_in *= q;
    L->fc2_in_routed *= q;
}

static layer_acts layer_acts_of(const arch *a, const arch_run *r, int layer)
{
    act_terms x = terms_of(a, r);
    layer_acts L;
    memset(&L, 0, sizeof L);
    double T = x.tokens, t = x.t;
    double gate = a->mlp == ARCH_MLP_SWIGLU ? 2.0 : 1.0;
    arch_mixer mixer = arch_layer_mixer(a, layer);
    arch_ffn ffn = arch_layer_ffn(a, layer);
    /* each part: its norm's input and output (the part's first GEMM input), its dropout mask */
    int parts = (mixer != ARCH_MIX_NONE) + (ffn != ARCH_FFN_NONE);
    L.norm_inputs = parts * x.hid;
    L.gemm_inputs_norm = parts * x.hid;
    L.masks = parts * x.mask;
    if (mixer == ARCH_MIX_MAMBA) {
        /* in_proj output (z, x, B, C, dt), conv output, the scan's output y and
         * fp32 chunk states (heads x head_dim x state per chunk), the gated
         * norm's output (out_proj input) */
        const arch_mamba *m = &a->mamba;
        L.qkv = BF16_BYTES * T * arch_mamba_in_width(a) / t;
        L.other += BF16_BYTES * T * arch_mamba_conv_width(a) / t + BF16_BYTES * T * arch_mamba_inner(a) / t;
        L.other += FP32_BYTES * (T / m->chunk) * arch_mamba_inner(a) * m->state / t;
        L.proj_in = BF16_BYTES * T * arch_mamba_inner(a) / t;
        L.out_grads = L.qkv + x.hid;                                    /* in_proj, out_proj output grads */
    } else if (mixer != ARCH_MIX_NONE) {
        double k_width = a->attn == ARCH_ATTN_MLA ? arch_q_dim(a) : arch_kv_dim(a);
        double qkv_width = arch_q_dim(a) + k_width + (a->attn == ARCH_ATTN_MLA ? arch_o_dim(a) : arch_kv_dim(a));
        L.qkv = BF16_BYTES * T * qkv_width / t;
        if (r->flash)
            L.core_extra = FP32_BYTES * (double)r->micro_batch * a->heads / t * ((double)r->seq / r->cp);
        else
            L.core_extra = arch_layer_attn_core_bytes(a, r, layer);
        L.proj_in = BF16_BYTES * T * arch_o_dim(a) / t;
        L.out_grads = BF16_BYTES * T * qkv_width / t + x.hid;           /* QKV output grad, proj output grad */
        if (a->attn == ARCH_ATTN_MLA) {
            /* latents: q_a output and its norm's output, kv_a output and its norm's output (replicated) */
            double lat = (double)a->mla.q_lora_rank + a->mla.kv_lora_rank;
            L.other += 2 * BF16_BYTES * T * lat + BF16_BYTES * T * a->mla.qk_rope_head_dim;
        }
    }
    if (ffn == ARCH_FFN_NONE) {
        quantize_gemm_inputs(r, mixer, &L);
        return L;
    }
    if (ffn == ARCH_FFN_DENSE) {
        L.act_in = BF16_BYTES * T * gate * a->ffn / t;
        L.fc2_in = BF16_BYTES * T * a->ffn / t;
        L.out_grads += L.act_in + x.hid;                              /* FC1 output grad, FC2 output grad */
        quantize_gemm_inputs(r, mixer, &L);
        return L;
    }
    const arch_moe *m = &a->moe;
    double other_before_moe = L.other;
    double Tk = routed_tokens(a, r, &x);
    double expert_in = BF16_BYTES * Tk * a->hidden;
    L.other += FP32_BYTES * T * m->experts / x.rep;                  /* router probabilities */
    L.other += expert_in;                                              /* permuted expert inputs */
    if (r->probs_on_outputs)
        L.other += BF16_BYTES * Tk * a->hidden;                        /* expert outputs (combine weights) */
    L.act_in = BF16_BYTES * Tk * gate * m->expert_ffn / t;
    L.fc2_in = BF16_BYTES * Tk * m->expert_ffn / t;
    L.fc2_in_routed = L.fc2_in;
    L.out_grads += L.act_in + BF16_BYTES * Tk * a->hidden;
    if (m->shared_ffn > 0) {
        double sh_act = BF16_BYTES * T * gate * m->shared_ffn / t;
        L.act_in += sh_act;
        L.fc2_in += BF16_BYTES * T * m->shared_ffn / t;
        L.out_grads += sh_act + x.hid;
    }
    if (r->quantized_inputs)   /* the experts' first GEMM keeps its quantized copy of the permuted tokens */
        L.other -= (BF16_BYTES - QUANTIZED_INPUT_BYTES) / BF16_BYTES * expert_in;
    L.moe_other = L.other - other_before_moe;
    quantize_gemm_inputs(r, mixer, &L);
    return L;
}

double arch_layer_act_bytes(const arch *a, const arch_run *r, int layer, arch_act_mode mode)
{
    if (mode == ARCH_ACT_FULL)
        return arch_hidden_bytes(a, r);
    layer_acts L = layer_acts_of(a, r, layer);
    double all = L.norm_inputs + L.gemm_inputs_norm + L.qkv + L.core_extra + L.proj_in + L.masks + L.act_in +
                 L.fc2_in + L.other;
    switch (mode) {
    case ARCH_ACT_SELECTIVE:
        return all - arch_layer_attn_core_bytes(a, r, layer);
    case ARCH_ACT_LGD:
        return all - L.gemm_inputs_norm - L.fc2_in - L.masks;
    default:
        return all;
    }
}

double arch_layer_selective_bytes(const arch *a, const arch_run *r, int layer, unsigned modules)
{
    layer_acts L = layer_acts_of(a, r, layer);
    arch_mixer mixer = arch_layer_mixer(a, layer);
    arch_ffn ffn = arch_layer_ffn(a, layer);
    int parts = (mixer != ARCH_MIX_NONE) + (ffn != ARCH_FFN_NONE);
    double norm_out = parts > 0 ? L.gemm_inputs_norm / parts : 0.0;   /* one part's norm output */
    double bytes = 0;
    if (modules & ARCH_RC_CORE_ATTN)
        bytes += arch_layer_attn_core_bytes(a, r, layer);
    if (modules & ARCH_RC_LAYERNORM)
        bytes += arch_separate_norms(a, mixer, ffn) * norm_out;
    if ((modules & ARCH_RC_MLA_UP_PROJ) && arch_mixer_is_mla(a, mixer))
        bytes += L.qkv;
    if ((modules & ARCH_RC_MLP) && ffn == ARCH_FFN_DENSE)
        bytes += norm_out + L.act_in + L.fc2_in;
    if ((modules & ARCH_RC_MOE) && ffn == ARCH_FFN_MOE)   /* moe_act's bytes are among these */
        bytes += L.act_in + L.fc2_in + L.moe_other;
    else if ((modules & ARCH_RC_MOE_ACT) && ffn == ARCH_FFN_MOE)
        bytes += L.fc2_in_routed;
    return bytes;
}

double arch_layer_act_w_bytes(const arch *a, const arch_run *r, int layer, arch_act_mode mode)
{
    layer_acts L = layer_acts_of(a, r, layer);
    /* linear-layer inputs: norm outputs (QKV, FC1), projection input, FC2 input (and MoE expert inputs) */
    double inputs = L.gemm_inputs_norm + L.proj_in + L.fc2_in;
    if (arch_is_moe_layer(a, layer)) {
        act_terms x = terms_of(a, r);
        inputs += (r->quantized_inputs ? QUANTIZED_INPUT_BYTES : BF16_BYTES) * routed_tokens(a, r, &x) * a->hidden;
    }
    if (mode == ARCH_ACT_LGD)                /* recomputed again before the weight gradients */
        inputs -= L.gemm_inputs_norm + L.fc2_in;
    return inputs + L.out_grads;
}

double arch_hidden_bytes(const arch *a, const arch_run *r)
{
    return terms_of(a, r).hid;
}

double arch_embedding_act_bytes(const arch *a, const arch_run *r)
{
    return terms_of(a, r).mask;
}

/* ---- communication ------------------------------------------------------------------ */

double arch_a2a_bytes(const arch *a, const arch_run *r)
{
    if (a->moe.experts == 0 || r->ep <= 1)
        return 0.0;
    act_terms x = terms_of(a, r);
    /* the GPU's tokens (sequence-parallel shard), top_k copies, all but 1/ep of them leave it */
    double tokens = x.tokens / x.rep * a->moe.top_k * (r->capacity_factor > 0 ? r->capacity_factor : 1.0);
    return BF16_BYTES * tokens * a->hidden * (r->ep - 1) / r->ep;
}

double arch_cp_kv_bytes(const arch *a, const arch_run *r)
{
    if (r->cp <= 1)
        return 0.0;
    double T = (double)r->seq / r->cp * r->micro_batch;
    double width = a->attn == ARCH_ATTN_MLA ? arch_q_dim(a) + arch_o_dim(a) : 2 * arch_kv_dim(a);
    return BF16_BYTES * T * width / r->tp;
}
