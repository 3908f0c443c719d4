/* costmodel.c: kernel-level cost of a GPT decoder (costmodel.h).
 *
 * Each op is accumulated kernel by kernel into an op_cost: the kernel's GPU
 * time is computed from its FLOPs or bytes and queued behind the host's
 * launches (issue() below).  Byte counts are for fp16/bf16 tensors (2 bytes
 * per element, 1 byte per dropout-mask element, fp32 where Megatron keeps
 * fp32: the loss).  Tensors of Megatron's tensor-parallel layers split by t
 * are divided by t; LayerNorms, dropouts and residual adds run on the full
 * hidden state on every TP rank (no sequence parallelism) and are not.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/costmodel.h"
#include "model/platform.h"

#define HALF_BYTES 2.0              /* fp16 / bf16 element */
#define FLOAT_BYTES 4.0             /* fp32 element */
#define MASK_BYTES 1.0              /* dropout mask element */
#define FLOPS_PER_MAC 2.0

/* Memory-bound kernels, bytes moved per element of the tensor they act on. */
#define LN_FWD_BYTES (2 * HALF_BYTES)                      /* read x, write y */
#define LN_BWD_BYTES (3 * HALF_BYTES)                      /* read dy and x, write dx */
#define LN_WGRAD_BYTES (2 * HALF_BYTES)                    /* read dy and x-hat for gamma/beta */
#define DROPOUT_ADD_FWD_BYTES (3 * HALF_BYTES + MASK_BYTES) /* read x and residual, write y and mask */
#define DROPOUT_BWD_BYTES (2 * HALF_BYTES + MASK_BYTES)    /* read dy and mask, write dx */
#define SOFTMAX_FWD_BYTES (2 * HALF_BYTES)                 /* fused scale-mask-softmax: read, write */
#define SOFTMAX_BWD_BYTES (3 * HALF_BYTES)                 /* read dy and y, write dx */
#define ATTN_DROPOUT_FWD_BYTES (2 * HALF_BYTES + MASK_BYTES)
/* Megatron's fused causal softmax (scaled_upper_triang_masked_softmax) runs
 * only when 16 < sk <= 4096, sq and sk are multiples of 4 and the attention
 * batches b * a/t fill its thread blocks: a block is four warps of one
 * attention row each (two rows per warp when sk <= 128), so b * a/t must be
 * a multiple of that.  Otherwise Megatron falls back to plain PyTorch in
 * fp32 (softmax_in_fp32): cast to fp32, scale, masked_fill (reads the byte
 * mask), softmax, cast back -- five kernels for one, and five in the
 * backward. */
#define FUSED_SOFTMAX_MIN_SK 16      /* exclusive */
#define FUSED_SOFTMAX_MAX_SK 4096
#define FUSED_SOFTMAX_ALIGN 4        /* sq, sk and the attention batches */
#define FUSED_SOFTMAX_WARPS_PER_BLOCK 4
#define FUSED_SOFTMAX_SMALL_SK 128   /* up to this, two rows per warp */
#define FUSED_SOFTMAX_SMALL_ROWS_PER_WARP 2
#define UNFUSED_SOFTMAX_KERNELS 5
static const double UNFUSED_SOFTMAX_FWD_BYTES[UNFUSED_SOFTMAX_KERNELS] = {
    HALF_BYTES + FLOAT_BYTES,        /* .float() */
    2 * FLOAT_BYTES,                 /* * scale */
    2 * FLOAT_BYTES + MASK_BYTES,    /* masked_fill_ (in place, reads the mask) */
    2 * FLOAT_BYTES,                 /* softmax */
    FLOAT_BYTES + HALF_BYTES,        /* .half() */
};
static const double UNFUSED_SOFTMAX_BWD_BYTES[UNFUSED_SOFTMAX_KERNELS] = {
    HALF_BYTES + FLOAT_BYTES,        /* gradient of .half(): to fp32 */
    3 * FLOAT_BYTES,                 /* softmax backward: read y and dy, write dx */
    2 * FLOAT_BYTES + MASK_BYTES,    /* masked_fill backward */
    2 * FLOAT_BYTES,                 /* * scale */
    FLOAT_BYTES + HALF_BYTES,        /* gradient of .float(): to fp16 */
};
#define GELU_FWD_BYTES (2 * HALF_BYTES)                    /* fused bias-GeLU: read, write */
#define GELU_BWD_BYTES (3 * HALF_BYTES)
#define COPY_BYTES (2 * HALF_BYTES)                        /* transpose / contiguous: read, write */
#define BIAS_GRAD_BYTES HALF_BYTES                         /* a reduction reads its input once */
#define EMBED_LOOKUP_BYTES (2 * HALF_BYTES)                /* gather rows, write */
#define POS_ADD_BYTES (3 * HALF_BYTES)
#define EMBED_GRAD_BYTES (2 * HALF_BYTES + FLOAT_BYTES)    /* read dy, scatter-add into fp32 grad */
/* Vocab-parallel cross entropy over c = s*b*V/t logits (Megatron): fp32
 * copy (read 2, write 4), max (read 4), subtract (read 4, write 4), exp
 * (4 + 4), sum (4), normalise to the softmax kept for backward (4 + 4). */
#define CE_FWD_BYTES (HALF_BYTES + 9 * FLOAT_BYTES)
#define CE_FWD_KERNELS 6
#define CE_BWD_BYTES (2 * FLOAT_BYTES + HALF_BYTES)        /* read softmax, subtract one-hot, write fp16 grad */
#define CE_REDUCTIONS 3                                    /* all-reduces of max, target logit, sum (t > 1) */
/* Mixed-precision Adam per parameter: fp32 master, m, v read and written
 * (24), fp32 gradient read (4), fp16 weight written (2), plus the gradient
 * norm / overflow check reading the gradient again (4). */
#define ADAM_BYTES_PER_PARAM 34.0
#define ADAM_KERNELS 4
/* Parameters of one transformer layer: QKV, proj, FC1, FC2 weights = 12h^2
 * (split by t); biases QKV 3h + FC1 4h split, proj h + FC2 h replicated;
 * two LayerNorms 2h each replicated. */
#define LAYER_WEIGHT_H2 12.0
#define LAYER_SPLIT_BIAS_H 7.0
#define LAYER_REPL_BIAS_H 6.0
/* Activation bytes per layer (Korthikanti et al. 2022, Table 2 without
 * sequence parallelism): sbh(10 + 24/t) + 5as^2b/t. */
#define ACT_B_REPL_SBH 10.0
#define ACT_B_SPLIT_SBH 24.0
#define ACT_B_SCORE_AS2B 5.0
/* Still held after B for W: inputs of QKV and FC1 (replicated LayerNorm
 * outputs) and the output gradients of proj and FC2 (replicated) = 8sbh;
 * proj and FC2 inputs and QKV / FC1 output gradients = 24sbh/t. */
#define ACT_W_REPL_SBH 8.0
#define ACT_W_SPLIT_SBH 24.0
#define LN_PARAMS_PER_H 2.0

typedef struct kctx {
    const gpu_params *g;
    op_cost *c;
} kctx;

/* The host issues kernels one after another, launch seconds apart, and the
 * GPU runs them in order, each as soon as it is issued and the previous one
 * is done: a queue.  time_s is when the GPU finishes the last kernel, host_s
 * when the host issued it.  Short kernels leave the GPU waiting for the host
 * (small models are host-bound); a long GEMM lets the host run ahead, which
 * hides the launches of the kernels behind it. */
static void issue(kctx k, double gpu_s)
{
    k.c->host_s += k.g->v[GP_KERNEL_LAUNCH_S];
    double start = k.c->time_s > k.c->host_s ? k.c->time_s : k.c->host_s;
    k.c->time_s = start + gpu_s;
    k.c->kernels++;
}

static void k_gemm(kctx k, double flops)
{
    const double *v = k.g->v;
    issue(k, (flops + v[GP_GEMM_HALF_FLOPS]) / (v[GP_PEAK_FLOPS] * v[GP_GEMM_EFF]));
    k.c->gemm_flops += flops;
}

static void k_attn(kctx k, double flops)
{
    const double *v = k.g->v;
    issue(k, (flops + v[GP_GEMM_HALF_FLOPS]) / (v[GP_PEAK_FLOPS] * v[GP_ATTN_EFF]));
    k.c->attn_flops += flops;
}

static void k_mem(kctx k, double bytes)
{
    const double *v = k.g->v;
    issue(k, bytes / (v[GP_HBM_BW] * v[GP_MEM_EFF]));
    k.c->mem_bytes += bytes;
}

/* Tensor-parallel all-reduce inside an op (no-op when t = 1). */
static void k_allreduce(kctx k, double bytes, int tp)
{
    if (tp <= 1)
        return;
    issue(k, costmodel_allreduce_s(k.g, bytes, tp));
    k.c->comm_bytes += bytes;
}

/* A transformer layer's tp all-reduce: left to the simulator when it runs
 * them (costmodel.h), its bytes still counted. */
static void k_layer_allreduce(kctx k, double bytes, const gpt_shape *m)
{
    if (m->tp_comm_simulated) {
        if (m->tp > 1)
            k.c->comm_bytes += bytes;
        return;
    }
    k_allreduce(k, bytes, m->tp);
}

double costmodel_allreduce_s(const gpu_params *g, double bytes, int n)
{
    if (n <= 1)
        return 0.0;
    /* ring: 2(n-1) steps (reduce-scatter, then all-gather), each paying the
     * latency once; each GPU sends and receives 2(n-1)/n of the payload */
    double steps = 2.0 * (n - 1);
    double wire = steps / n * bytes;
    return steps * g->v[GP_COLL_LATENCY_S] + wire / (g->v[GP_NVLINK_BW] * g->v[GP_COLL_BW_EFF]);
}

double costmodel_optimizer_s(const gpu_params *g, double params)
{
    double gpu_s = params * ADAM_BYTES_PER_PARAM / (g->v[GP_HBM_BW] * g->v[GP_MEM_EFF]);
    double host_s = ADAM_KERNELS * g->v[GP_KERNEL_LAUNCH_S];
    return host_s > gpu_s ? host_s : gpu_s;
}

/* Dimensions as doubles, with the usual names. */
typedef struct dims {
    double s, b, h, a, t, V;
    double n;    /* s*b*h: elements of the hidden state */
    double e;    /* b*(a/t)*s*s: attention-score elements on one TP rank */
    double c;    /* s*b*V/t: logits on one TP rank */
} dims;

int costmodel_fused_softmax(const gpt_shape *m)
{
    int sk = m->seq, attn_batches = m->micro_batch * (m->heads / m->tp);
    int rows_per_warp = sk <= FUSED_SOFTMAX_SMALL_SK ? FUSED_SOFTMAX_SMALL_ROWS_PER_WARP : 1;
    int batch_per_block = FUSED_SOFTMAX_WARPS_PER_BLOCK * rows_per_warp;
    return sk > FUSED_SOFTMAX_MIN_SK && sk <= FUSED_SOFTMAX_MAX_SK && sk % FUSED_SOFTMAX_ALIGN == 0 &&
           attn_batches % FUSED_SOFTMAX_ALIGN == 0 && attn_batches % batch_per_block == 0;
}

/* Scale, causal mask and softmax over elems attention scores (or its
 * backward): one fused kernel, or PyTorch's five fp32 kernels. */
static void k_softmax(kctx k, const gpt_shape *m, double elems, int backward)
{
    if (costmodel_fused_softmax(m)) {
        k_mem(k, (backward ? SOFTMAX_BWD_BYTES : SOFTMAX_FWD_BYTES) * elems);
        return;
    }
    const double *bytes = backward ? UNFUSED_SOFTMAX_BWD_BYTES : UNFUSED_SOFTMAX_FWD_BYTES;
    for (int i = 0; i < UNFUSED_SOFTMAX_KERNELS; i++)
        k_mem(k, bytes[i] * elems);
}

static dims dims_of(const gpt_shape *m)
{
    dims d = {.s = m->seq, .b = m->micro_batch, .h = m->hidden, .a = m->heads, .t = m->tp, .V = m->vocab};
    d.n = d.s * d.b * d.h;
    d.e = d.b * (d.a / d.t) * d.s * d.s;
    d.c = d.s * d.b * d.V / d.t;
    return d;
}

void costmodel_layer(const gpu_params *g, const gpt_shape *m, op_cost out[CM_OPS])
{
    memset(out, 0, CM_OPS * sizeof *out);
    dims d = dims_of(m);
    double nh_t = d.n * d.h / d.t;                     /* MACs of an h x h GEMM, per TP rank */
    double attn_gemm = FLOPS_PER_MAC * d.b * d.s * d.s * d.h / d.t;   /* one of QK^T, AV */
    double hidden_bytes = HALF_BYTES * d.n;

    kctx f = {g, &out[CM_F]};
    k_mem(f, LN_FWD_BYTES * d.n);                      /* LayerNorm 1 */
    k_gemm(f, FLOPS_PER_MAC * 3 * nh_t);               /* QKV */
    k_mem(f, COPY_BYTES * 3 * d.n / d.t);              /* split heads */
    k_attn(f, attn_gemm);                              /* QK^T */
    k_softmax(f, m, d.e, 0);                           /* scale, mask, softmax */
    k_mem(f, ATTN_DROPOUT_FWD_BYTES * d.e);            /* attention dropout */
    k_attn(f, attn_gemm);                              /* AV */
    k_mem(f, COPY_BYTES * d.n / d.t);                  /* merge heads */
    k_gemm(f, FLOPS_PER_MAC * nh_t);                   /* output projection */
    k_layer_allreduce(f, hidden_bytes, m);
    k_mem(f, DROPOUT_ADD_FWD_BYTES * d.n);             /* bias, dropout, residual */
    k_mem(f, LN_FWD_BYTES * d.n);                      /* LayerNorm 2 */
    k_gemm(f, FLOPS_PER_MAC * 4 * nh_t);               /* FC1 */
    k_mem(f, GELU_FWD_BYTES * 4 * d.n / d.t);          /* bias + GeLU */
    k_gemm(f, FLOPS_PER_MAC * 4 * nh_t);               /* FC2 */
    k_layer_allreduce(f, hidden_bytes, m);
    k_mem(f, DROPOUT_ADD_FWD_BYTES * d.n);

    kctx b = {g, &out[CM_B]};                          /* input gradient, in reverse order */
    k_mem(b, DROPOUT_BWD_BYTES * d.n);
    k_gemm(b, FLOPS_PER_MAC * 4 * nh_t);               /* FC2 dgrad */
    k_mem(b, GELU_BWD_BYTES * 4 * d.n / d.t);
    k_gemm(b, FLOPS_PER_MAC * 4 * nh_t);               /* FC1 dgrad */
    k_layer_allreduce(b, hidden_bytes, m);               /* column-parallel input gradient */
    k_mem(b, LN_BWD_BYTES * d.n);
    k_mem(b, DROPOUT_BWD_BYTES * d.n);
    k_gemm(b, FLOPS_PER_MAC * nh_t);                   /* proj dgrad */
    k_mem(b, COPY_BYTES * d.n / d.t);
    k_attn(b, attn_gemm);                              /* dP = dO V^T */
    k_attn(b, attn_gemm);                              /* dV = P^T dO */
    k_mem(b, DROPOUT_BWD_BYTES * d.e);
    k_softmax(b, m, d.e, 1);
    k_attn(b, attn_gemm);                              /* dQ */
    k_attn(b, attn_gemm);                              /* dK */
    k_mem(b, COPY_BYTES * 3 * d.n / d.t);
    k_gemm(b, FLOPS_PER_MAC * 3 * nh_t);               /* QKV dgrad */
    k_layer_allreduce(b, hidden_bytes, m);
    k_mem(b, LN_BWD_BYTES * d.n);

    kctx w = {g, &out[CM_W]};                          /* weight gradients */
    k_gemm(w, FLOPS_PER_MAC * 4 * nh_t);               /* FC2 */
    k_gemm(w, FLOPS_PER_MAC * 4 * nh_t);               /* FC1 */
    k_gemm(w, FLOPS_PER_MAC * nh_t);                   /* proj */
    k_gemm(w, FLOPS_PER_MAC * 3 * nh_t);               /* QKV */
    k_mem(w, BIAS_GRAD_BYTES * (d.n + 4 * d.n / d.t)); /* FC2, FC1 bias grads */
    k_mem(w, BIAS_GRAD_BYTES * (d.n + 3 * d.n / d.t)); /* proj, QKV bias grads */
    k_mem(w, LN_WGRAD_BYTES * d.n);                    /* LayerNorm 2 gamma, beta */
    k_mem(w, LN_WGRAD_BYTES * d.n);                    /* LayerNorm 1 */
}

void costmodel_embedding(const gpu_params *g, const gpt_shape *m, op_cost out[CM_OPS])
{
    memset(out, 0, CM_OPS * sizeof *out);
    dims d = dims_of(m);
    kctx f = {g, &out[CM_F]};
    k_mem(f, EMBED_LOOKUP_BYTES * d.n);                /* word embedding (vocab-parallel: masked) */
    k_allreduce(f, HALF_BYTES * d.n, m->tp);           /* sum of the vocab shards */
    k_mem(f, POS_ADD_BYTES * d.n);                     /* + position embedding */
    k_mem(f, DROPOUT_ADD_FWD_BYTES * d.n);             /* embedding dropout */
    kctx b = {g, &out[CM_B]};
    k_mem(b, DROPOUT_BWD_BYTES * d.n);                 /* the input is token ids: nothing further */
    kctx w = {g, &out[CM_W]};
    k_mem(w, EMBED_GRAD_BYTES * d.n);                  /* word embedding grad (scatter-add) */
    k_mem(w, EMBED_GRAD_BYTES * d.n);                  /* position embedding grad */
}

void costmodel_head(const gpu_params *g, const gpt_shape *m, op_cost out[CM_OPS])
{
    memset(out, 0, CM_OPS * sizeof *out);
    dims d = dims_of(m);
    double logits_flops = FLOPS_PER_MAC * d.n * d.V / d.t;
    double row_stat_bytes = FLOAT_BYTES * d.s * d.b;   /* one fp32 per token */
    kctx f = {g, &out[CM_F]};
    k_mem(f, LN_FWD_BYTES * d.n);                      /* final LayerNorm */
    k_gemm(f, logits_flops);                           /* logits (tied embedding) */
    for (int i = 0; i < CE_FWD_KERNELS; i++)
        k_mem(f, CE_FWD_BYTES * d.c / CE_FWD_KERNELS);
    for (int i = 0; i < CE_REDUCTIONS; i++)
        k_allreduce(f, row_stat_bytes, m->tp);
    kctx b = {g, &out[CM_B]};
    k_mem(b, CE_BWD_BYTES * d.c);
    k_gemm(b, logits_flops);                           /* dgrad */
    k_allreduce(b, HALF_BYTES * d.n, m->tp);           /* input was copied to the TP region */
    k_mem(b, LN_BWD_BYTES * d.n);
    kctx w = {g, &out[CM_W]};
    k_gemm(w, logits_flops);                           /* wgrad of the tied embedding */
    k_mem(w, LN_WGRAD_BYTES * d.n);
}

/* ---- closed forms -------------------------------------------------------- */

double costmodel_layer_flops(const gpt_shape *m, cm_op op)
{
    dims d = dims_of(m);
    double sbh = d.s * d.b * d.h;
    switch (op) {
    case CM_F:
        return sbh * (24 * d.h + 4 * d.s) / d.t;
    case CM_B:
        return sbh * (24 * d.h + 8 * d.s) / d.t;
    case CM_W:
        return sbh * 24 * d.h / d.t;
    default:
        return 0.0;
    }
}

double costmodel_layer_act_b_bytes(const gpt_shape *m)
{
    dims d = dims_of(m);
    return d.s * d.b * d.h * (ACT_B_REPL_SBH + ACT_B_SPLIT_SBH / d.t) + ACT_B_SCORE_AS2B * d.a * d.s * d.s * d.b / d.t;
}

double costmodel_layer_act_w_bytes(const gpt_shape *m)
{
    dims d = dims_of(m);
    return d.s * d.b * d.h * (ACT_W_REPL_SBH + ACT_W_SPLIT_SBH / d.t);
}

double costmodel_layer_params(const gpt_shape *m)
{
    dims d = dims_of(m);
    return LAYER_WEIGHT_H2 * d.h * d.h / d.t + LAYER_SPLIT_BIAS_H * d.h / d.t + LAYER_REPL_BIAS_H * d.h;
}

double costmodel_embedding_params(const gpt_shape *m)
{
    dims d = dims_of(m);
    return d.V * d.h / d.t + d.s * d.h;    /* word shard + learned positions */
}

double costmodel_head_params(const gpt_shape *m)
{
    return LN_PARAMS_PER_H * m->hidden;
}

int gpt_shape_check(const gpt_shape *m, pg_status *st)
{
    struct { const char *key; int v; } dim[] = {
        {"gpt.layers", m->layers}, {"gpt.hidden", m->hidden}, {"gpt.heads", m->heads}, {"gpt.seq", m->seq},
        {"gpt.vocab", m->vocab},   {"micro_batch_size", m->micro_batch}, {"tp", m->tp},
    };
    for (size_t i = 0; i < sizeof dim / sizeof dim[0]; i++)
        if (dim[i].v < 1)
            return pg_fail(st, PG_EXIT_INPUT, "key '%s': must be a positive integer for workload=gpt (got %d)",
                           dim[i].key, dim[i].v);
    if (m->hidden % m->heads != 0)
        return pg_fail(st, PG_EXIT_INPUT, "key 'gpt.heads': %d heads do not divide gpt.hidden=%d", m->heads,
                       m->hidden);
    if (m->heads % m->tp != 0)
        return pg_fail(st, PG_EXIT_INPUT, "key 'tp': tp=%d does not divide gpt.heads=%d (Megatron splits heads)",
                       m->tp, m->heads);
    return 0;
}

/* ---- workload ------------------------------------------------------------ */

/* Every op of a stage pays the framework's per-op overhead once, however
 * many layers it spans. */
static void add_op_overhead(stage_cost *sc, const gpu_params *g)
{
    sc->f_s += g->v[GP_OP_OVERHEAD_S];
    sc->b_s += g->v[GP_OP_OVERHEAD_S];
    sc->w_s += g->v[GP_OP_OVERHEAD_S];
}

static void add_ops(stage_cost *sc, const op_cost c[CM_OPS])
{
    sc->f_s += c[CM_F].time_s;
    sc->b_s += c[CM_B].time_s;
    sc->w_s += c[CM_W].time_s;
}

int costmodel_build_shape(const gpu_params *g, const gpt_shape *m, int nstages, workload *w, pg_status *st)
{
    memset(w, 0, sizeof *w);
    int rc = gpt_shape_check(m, st);
    if (rc)
        return rc;
    if (nstages < 1 || nstages > m->layers)
        return pg_fail(st, PG_EXIT_INPUT, "key 'gpt.layers': %d layers cannot fill %d pipeline stages", m->layers,
                       nstages);
    const gpu_system *sys = gpu_system_find(g->name);
    snprintf(w->name, sizeof w->name, "gpt L%d h%d a%d s%d b%d tp%d", m->layers, m->hidden, m->heads, m->seq,
             m->micro_batch, m->tp);
    snprintf(w->source, sizeof w->source, "pipegrid cost model (src/model/costmodel.c) with %.400s",
             g->path[0] ? g->path : g->name);
    snprintf(w->ref_gpu, sizeof w->ref_gpu, "%s", g->name);
    /* The simulator rescales by ref_speed / speed of the running GPU: use
     * exactly the speed the platform gives this type, so no rescaling. */
    w->ref_speed_flops = sys ? sys->speed_flops : g->v[GP_PEAK_FLOPS];
    w->seq_len = m->seq;
    w->micro_batch_size = m->micro_batch;
    w->nstages = nstages;
    w->stage = pg_xcalloc((size_t)nstages, sizeof *w->stage);

    op_cost layer[CM_OPS], emb[CM_OPS], head[CM_OPS];
    costmodel_layer(g, m, layer);
    costmodel_embedding(g, m, emb);
    costmodel_head(g, m, head);
    dims d = dims_of(m);
    double layer_ws = HALF_BYTES * d.e;                 /* attention scores */
    double head_ws = FLOAT_BYTES * d.c;                 /* fp32 logits */
    int base = m->layers / nstages, extra = m->layers % nstages;
    for (int s = 0; s < nstages; s++) {
        stage_cost *sc = &w->stage[s];
        int nl = base + (s >= nstages - extra ? 1 : 0);
        sc->layers = nl;
        sc->f_s = nl * layer[CM_F].time_s;
        sc->b_s = nl * layer[CM_B].time_s;
        sc->w_s = nl * layer[CM_W].time_s;
        sc->act_b_bytes = nl * costmodel_layer_act_b_bytes(m);
        sc->act_w_bytes = nl * costmodel_layer_act_w_bytes(m);
        sc->boundary_bytes = HALF_BYTES * d.n;
        sc->param_count = nl * costmodel_layer_params(m);
        sc->fwd_flops = nl * costmodel_layer_flops(m, CM_F);
        sc->workspace_bytes = layer_ws;
        add_op_overhead(sc, g);
        if (s == 0) {
            add_ops(sc, emb);
            sc->act_b_bytes += MASK_BYTES * d.n;        /* embedding dropout mask */
            sc->param_count += costmodel_embedding_params(m);
        }
        if (s == nstages - 1) {
            add_ops(sc, head);
            /* kept for B: LayerNorm input, the fp32 softmax; for W: LN output + logits gradient */
            sc->act_b_bytes += HALF_BYTES * d.n + FLOAT_BYTES * d.c;
            sc->act_w_bytes += HALF_BYTES * d.n + HALF_BYTES * d.c;
            sc->param_count += costmodel_head_params(m);
            if (nstages > 1)                            /* the tied word embedding is held again */
                sc->param_count += d.V * d.h / d.t;
            sc->fwd_flops += head[CM_F].gemm_flops;
            if (head_ws > sc->workspace_bytes)
                sc->workspace_bytes = head_ws;
        }
    }
    return 0;
}

/* The GPU type workload=gpt is costed on (costmodel_build's comment). */
static int platform_gpu_type(const experiment *e, char *type, size_t len, pg_status *st)
{
    snprintf(type, len, "%s", e->cluster_gpu);
    if (e->network != NET_PLATFORM)
        return 0;
    platform_desc p;
    int rc = platform_load(e->platform_path, &p, st);
    if (rc)
        return rc;
    if (p.ngpus > 0 && p.gpu[0].type[0])
        snprintf(type, len, "%s", p.gpu[0].type);
    platform_free(&p);
    return 0;
}

int costmodel_build(const experiment *e, int nstages, workload *w, pg_status *st)
{
    memset(w, 0, sizeof *w);
    char type[sizeof e->cluster_gpu];
    int rc = platform_gpu_type(e, type, sizeof type, st);
    if (rc)
        return rc;
    gpu_params g;
    if ((rc = gpu_params_load(type, &g, st)) != 0)
        return rc;
    gpt_shape m = {
        .layers = e->gpt_layers, .hidden = e->gpt_hidden, .heads = e->gpt_heads, .seq = e->gpt_seq,
        .vocab = e->gpt_vocab, .micro_batch = e->micro_batch_size, .tp = e->tp > 0 ? e->tp : 1,
        .tp_comm_simulated = e->network != NET_IDEAL,
    };
    return costmodel_build_shape(&g, &m, nstages, w, st);
}
