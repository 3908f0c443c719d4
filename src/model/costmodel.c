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
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/costmodel.h"
#include "model/hfconfig.h"
#include "model/platform.h"

#define HALF_BYTES 2.0              /* fp16 / bf16 element */
#define FLOAT_BYTES 4.0             /* fp32 element */
#define MASK_BYTES 1.0              /* dropout mask element */
#define FP8_BYTES 1.0               /* fp8 (e4m3 / e5m2) element */
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

/* Elementwise kernels of modern decoders. */
#define RESIDUAL_ADD_BYTES (3 * HALF_BYTES)                /* read x and residual, write y */
#define ADAPTER_SUM_BYTES (3 * HALF_BYTES)                 /* LoRA: read the base and adapter outputs, write the sum */
#define ROPE_BYTES (2 * HALF_BYTES)                        /* rotary embedding of q and k: read, write */
#define SWIGLU_FWD_BYTES (3 * HALF_BYTES)                  /* read gate and up, write out */
#define SWIGLU_BWD_BYTES (5 * HALF_BYTES)                  /* read dy, gate, up; write dgate, dup */
#define ROUTER_BYTES (3 * FLOAT_BYTES)                     /* softmax + top-k over fp32 logits */
#define PERMUTE_BYTES (2 * HALF_BYTES)                     /* gather token copies: read, write */
#define COMBINE_BYTES (3 * HALF_BYTES)                     /* unpermute, weight and sum: read, read, write */
/* Mamba-2: the causal conv with its SiLU over x, B, C (read, write), and
 * the gated RMSNorm of y by z (read y and z, write). */
#define MAMBA_CONV_FWD_BYTES (2 * HALF_BYTES)
#define MAMBA_CONV_BWD_BYTES (3 * HALF_BYTES)
#define MAMBA_GATED_NORM_FWD_BYTES (3 * HALF_BYTES)
#define MAMBA_GATED_NORM_BWD_BYTES (5 * HALF_BYTES)
/* The SSD scan's backward: the input gradients of each of its chunked GEMMs
 * and the states' reverse pass, twice the forward like a GEMM's. */
#define MAMBA_SCAN_BWD_FACTOR 2.0
/* A multi-token-prediction module's projection: [hidden; embedding] (2h) -> h. */
#define MTP_PROJ_IN_MULT 2.0
/* Flash attention: the backward recomputes the scores (one GEMM of QK^T's
 * size) and computes dV, dP, dQ, dK: five score-sized GEMMs against the
 * forward's two. */
#define FLASH_BWD_FLOPS_FACTOR 2.5
/* A causal mask halves the scores flash attention computes (blocks above
 * the diagonal are skipped; load-balanced context parallelism keeps each
 * GPU's share at half). */
#define CAUSAL_FRACTION 0.5

typedef struct kctx {
    const gpu_params *g;
    op_cost *c;
    double gemm_peak;    /* flop/s of the linear layers' GEMMs (bf16 or fp8) */
    int fp8;             /* the linear layers' recipe (gpt_shape.fp8): non-zero, low-precision GEMMs (cast their
                          * inputs first) */
    int sm_count;        /* of the GPU type (datasheet); 0 = unknown: no tile / wave quantization */
    double main_grad_bytes; /* gpt_shape.main_grad_bytes */
    double scale;        /* the layer's measured profile (costmodel.h), 1 elsewhere: every kernel's launch
                          * and GPU time are scaled by it */
    int frozen;          /* 1: the weights' gradients are not computed (gpt_shape.lora_rank: a weight-gradient
                          * GEMM and the norms', biases' and embedding's gradients are left out) */
    double lora_rank;    /* gpt_shape.lora_rank: rank of the adapters of the adapted linear layers; 0 = none */
    int lora_qkv_only;   /* gpt_shape.lora_qkv_only */
} kctx;

/* GEMM shape.  cuBLAS and CUTLASS split a GEMM's M x N output into thread-
 * block tiles and run one tile per SM at a time, in waves over the SMs: a
 * dimension that is not a multiple of the tile pays for the padded tile,
 * and the last wave leaves SMs idle (tile and wave quantization).  When the
 * output has fewer tiles than the GPU has SMs, cuBLAS splits the inner
 * dimension K (split-K) so that idle SMs share the work.  cuBLAS holds
 * kernels of several tile shapes and its heuristic picks, per shape, one
 * that finishes first: a large tile reuses each operand it loads the most,
 * a small one pads less and fills the last wave better.  A tile's main loop
 * loads rows + cols operand elements per rows x cols multiply-adds; the
 * 128 x 128 tile (rows * cols / (rows + cols) = 64 of them per element) is
 * the one whose operand loads keep the tensor cores busy -- the rate
 * gemm_eff is measured at -- and a smaller tile runs slower in proportion
 * to its reuse, a larger one no faster (the tensor cores bound it).  The
 * GEMM also has to read its operands and write its result once (the memory
 * roofline: skinny GEMMs, e.g. the MoE router, are memory-bound). */
#define GEMM_REF_TILE 128.0      /* the square tile whose operand reuse saturates the tensor cores (Ampere,
                                  * Hopper bf16/fp8 kernels) */
#define GEMM_MIN_SPLIT_K 256.0   /* split-K slices are at least this deep: a slice must amortise its partial-sum
                                  * write (a few 64-deep main-loop steps) */
/* The tile shapes of cuBLAS's tensor-core kernels a GEMM can run with. */
typedef struct gemm_tile {
    double rows, cols;   /* of the output */
} gemm_tile;
static const gemm_tile GEMM_TILES[] = {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}};
/* FP8 recipes (Transformer Engine, delayed scaling): before each FP8 GEMM
 * the bf16 input of the forward (and the output gradient of the backward)
 * is cast to FP8 with its transpose for the weight-gradient GEMM, recording
 * amax on the way -- one memory-bound kernel reading 2 bytes and writing
 * 1 + 1 per element.  Weights are cast once per iteration (not per
 * microbatch) and are left out.
 * Block-scaled recipes (docs/blackwell.md) cast the same way, a rowwise and
 * a columnwise copy (the transposed use scales along the other axis), and
 * write their scales too: MXFP8 one E8M0 byte per 32 elements of each copy,
 * blockwise FP8 one fp32 per 128 (1x128 activation blocks).  NVFP4 writes
 * half-byte elements with one E4M3 scale byte per 16 of each copy, and its
 * per-tensor fp32 scale needs the tensor's amax before it quantizes: one
 * more read of the bf16 input (its random Hadamard transform of the
 * weight-gradient inputs is applied in the cast kernel, on data it already
 * holds).  The GEMMs then read those operands: FP8 1 byte, NVFP4 a half
 * byte plus its scales. */
#define FP4_BYTES 0.5
#define MX_BLOCK 32.0               /* MXFP8: elements per E8M0 scale byte */
#define FP8_BLOCK 128.0             /* blockwise FP8: elements per fp32 scale (1x128) */
#define NVFP4_BLOCK 16.0            /* NVFP4: elements per E4M3 scale byte */
#define SCALE_BYTE 1.0              /* an E8M0 or E4M3 scale */

/* Bytes the cast before a low-precision GEMM moves per element of its bf16
 * input (the comment above), by recipe (precision_kind).  frozen: the
 * weight has no gradient (LoRA), so no weight-gradient GEMM reads the
 * transposed copy and the cast writes the GEMM's own copy alone
 * (Transformer Engine quantizes columnwise only when the weight requires a
 * gradient). */
static double cast_bytes(int recipe, int frozen)
{
    double copies = frozen ? 1.0 : 2.0;   /* the GEMM's copy, and the transpose a weight gradient reads */
    switch (recipe) {
    case PRECISION_MXFP8: return HALF_BYTES + copies * (FP8_BYTES + SCALE_BYTE / MX_BLOCK);
    case PRECISION_FP8_BLOCK: return HALF_BYTES + copies * (FP8_BYTES + FLOAT_BYTES / FP8_BLOCK);
    case PRECISION_NVFP4: return HALF_BYTES /* amax */ + HALF_BYTES + copies * (FP4_BYTES + SCALE_BYTE / NVFP4_BLOCK);
    default: return HALF_BYTES + copies * FP8_BYTES;
    }
}

/* Bytes per element of a low-precision GEMM's operands, by recipe. */
static double operand_bytes_of(int recipe)
{
    switch (recipe) {
    case PRECISION_BF16: return HALF_BYTES;
    case PRECISION_MXFP8: return FP8_BYTES + SCALE_BYTE / MX_BLOCK;
    case PRECISION_FP8_BLOCK: return FP8_BYTES + FLOAT_BYTES / FP8_BLOCK;
    case PRECISION_NVFP4: return FP4_BYTES + SCALE_BYTE / NVFP4_BLOCK;
    default: return FP8_BYTES;
    }
}

/* The datasheet rate of recipe's GEMMs over the bf16 rate (0: the GPU has
 * no tensor cores of that precision). */
static double recipe_rate_ratio(const gpu_system *sys, int recipe)
{
    if (!sys || !(sys->speed_flops > 0))
        return 0.0;
    if (recipe == PRECISION_BF16)
        return 1.0;
    return (recipe == PRECISION_NVFP4 ? sys->fp4_flops : sys->fp8_flops) / sys->speed_flops;
}
/* Accumulating into a gradient buffer reads it and writes it back. */
#define ACCUMULATE_PASSES 2.0

/* The host issues kernels one after another, launch seconds apart, and the
 * GPU runs them in order, each as soon as it is issued and the previous one
 * is done: a queue.  time_s is when the GPU finishes the last kernel, host_s
 * when the host issued it (from a standing start: both idle at 0).  Short
 * kernels leave the GPU waiting for the host (small models are host-bound);
 * a long GEMM lets the host run ahead, which hides the launches of the
 * kernels behind it. */
static void issue(kctx k, double gpu_s)
{
    gpu_s *= k.scale;
    k.c->host_s += k.scale * k.g->v[GP_KERNEL_LAUNCH_S];
    double start = k.c->time_s > k.c->host_s ? k.c->time_s : k.c->host_s;
    k.c->time_s = start + gpu_s;
    k.c->gpu_busy_s += gpu_s;
    k.c->kernels++;
}

/* One op of a stage (F, B or W over its layers, with the embedding or the
 * head) is one kernel queue: where the host waits for the GPU is a property
 * of the training stack the GPU type's measurements ran (gpu_params.
 * host_waits_each_layer, the profile's kernel_queue block):
 *   - at the op's end only (Megatron synchronizes the device around its
 *     pipeline sends and receives): the host issues the next layer's
 *     kernels while the GPU still runs this one's, so a layer of long GEMMs
 *     hides the launches of the short kernels after it.  The queue is
 *     linear in max-plus algebra, so appending c is exact: the GPU finishes
 *     either busy for all of c's kernels after its previous end, or as c
 *     would from a standing start at the host's clock;
 *   - at every layer's end: each layer starts standing, after the last. */
typedef struct op_queue {
    double host_s, gpu_s;
    double sim_coll_s;   /* of gpu_s, the collectives the simulator runs (op_cost.sim_coll_s) */
} op_queue;

static void queue_append(op_queue *q, const op_cost *c, int host_waits_each_layer)
{
    if (c->kernels == 0)
        return;
    q->sim_coll_s += c->sim_coll_s;
    if (host_waits_each_layer) {
        q->gpu_s += c->time_s;
        q->host_s = q->gpu_s;
        return;
    }
    double busy_end = q->gpu_s + c->gpu_busy_s, issue_end = q->host_s + c->time_s;
    q->gpu_s = busy_end > issue_end ? busy_end : issue_end;
    q->host_s += c->host_s;
}

/* FLOPs, at the reference tile's rate, that groups x (M x N x K) occupy the
 * SMs for with tile t: padded to whole tiles, split-K when the tiles do not
 * fill the SMs, whole waves, over t's rate (above). */
static double tile_busy_flops(double sms, double m, double n, double k, double groups, gemm_tile t)
{
    double tiles = ceil(m / t.rows) * ceil(n / t.cols) * groups;
    double split = 1.0;
    if (tiles < sms) {
        split = floor(sms / tiles);
        double deepest = floor(k / GEMM_MIN_SPLIT_K);
        if (split > deepest)
            split = deepest > 1.0 ? deepest : 1.0;
    }
    double waves = ceil(tiles * split / sms);
    double reuse = t.rows * t.cols / (t.rows + t.cols), ref_reuse = GEMM_REF_TILE / 2.0;
    double rate = reuse < ref_reuse ? reuse / ref_reuse : 1.0;
    return waves * sms * FLOPS_PER_MAC * t.rows * t.cols * ceil(k / split) / rate;
}

/* The tile search is a pure function of five numbers, and a fit or a
 * planner asks it for the same few hundred GEMM shapes millions of times
 * (calibrate re-times every row for each parameter vector it tries): the
 * last answers are remembered in a small direct-mapped table.  A hit
 * returns the number the search computed for exactly these inputs, so
 * results are the same bit for bit; the table is per process (SimGrid's
 * simulations and the process pool's children are single-threaded). */
#define GEMM_MEMO_SLOTS 1024   /* a power of two */
typedef struct gemm_memo {
    double sm_count, m, n, k, groups, busy;
} gemm_memo;
static gemm_memo gemm_memo_table[GEMM_MEMO_SLOTS];

static size_t gemm_memo_slot(double sm_count, double m, double n, double k, double groups)
{
    double in[] = {sm_count, m, n, k, groups};
    /* the inputs' bits folded with SplitMix64's finalizer: whole numbers as
     * doubles have all-zero low mantissa bits, which a plain FNV leaves
     * unmixed into the slot's bits */
    uint64_t h = 0;
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        uint64_t bits;
        memcpy(&bits, &in[i], sizeof bits);
        h += bits + UINT64_C(0x9e3779b97f4a7c15);
        h = (h ^ (h >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        h = (h ^ (h >> 27)) * UINT64_C(0x94d049bb133111eb);
        h ^= h >> 31;
    }
    return (size_t)h & (GEMM_MEMO_SLOTS - 1);
}

/* The busy FLOPs of the tile shape that finishes first (costmodel.h); the
 * plain 2MNK x groups when the SM count is unknown. */
double costmodel_gemm_busy_flops(int sm_count, double m, double n, double k, double groups)
{
    double flops = FLOPS_PER_MAC * m * n * k * groups;
    if (sm_count <= 0 || flops <= 0)
        return flops;
    gemm_memo *slot = &gemm_memo_table[gemm_memo_slot(sm_count, m, n, k, groups)];
    if (slot->busy > 0 && slot->sm_count == sm_count && slot->m == m && slot->n == n && slot->k == k &&
        slot->groups == groups)
        return slot->busy;
    double best = HUGE_VAL;
    for (size_t i = 0; i < sizeof GEMM_TILES / sizeof GEMM_TILES[0]; i++) {
        double busy = tile_busy_flops(sm_count, m, n, k, groups, GEMM_TILES[i]);
        if (busy < best)
            best = busy;
    }
    *slot = (gemm_memo){sm_count, m, n, k, groups, best};
    return best;
}

/* Bytes per second memory-bound kernels move (hbm_bw x mem_eff). */
static double mem_rate(const gpu_params *g)
{
    return g->v[GP_HBM_BW] * g->v[GP_MEM_EFF];
}

/* A memory-bound kernel moving bytes. */
static void k_mem(kctx k, double bytes)
{
    issue(k, bytes / mem_rate(k.g));
    k.c->mem_bytes += bytes;
}

/* A linear layer's GEMM in op which (F: Y = X W, B: dX = dY W^T, W: dW =
 * X^T dY) for rows tokens, in_f -> out_f features on this rank, as groups
 * equal GEMMs in one kernel (MoE experts; a grouped GEMM reaches the
 * efficiency of one group: small experts run at the low end of the
 * saturating curve).  GPU time: the busy FLOPs plus groups x
 * gemm_half_flops at peak x gemm_eff (half the ceiling at a GEMM of that
 * size), or the operand traffic at the memory-kernel rate, whichever is
 * longer.  lowp: at the linear layers' (FP8) rate with its input casts;
 * 0: bf16 whatever the recipe (router, LM head: FP8 recipes keep them in
 * bf16). */
static void k_linear_p(kctx k, cm_op which, double rows, double in_f, double out_f, double groups, int lowp)
{
    if (which == CM_W && k.frozen)
        return;
    const double *v = k.g->v;
    double m = which == CM_W ? in_f : rows, n = which == CM_B ? in_f : out_f;
    double kk = which == CM_F ? in_f : which == CM_B ? out_f : rows;
    int fp8 = lowp && k.fp8;
    double peak = lowp ? k.gemm_peak : v[GP_PEAK_FLOPS];
    if (fp8 && which != CM_W) {   /* the forward's input / the backward's output gradient to FP8 / FP4 */
        double elems = rows * (which == CM_F ? in_f : out_f) * groups;
        k_mem(k, cast_bytes(k.fp8, k.frozen) * elems);
    }
    double busy = costmodel_gemm_busy_flops(k.sm_count, m, n, kk, groups);
    double compute_s = (busy + groups * v[GP_GEMM_HALF_FLOPS]) / (peak * v[GP_GEMM_EFF]);
    double operand_bytes = operand_bytes_of(fp8 ? k.fp8 : PRECISION_BF16);   /* the result is bf16 either way */
    double traffic_s =
        (operand_bytes * (m * kk + kk * n) + HALF_BYTES * m * n) * groups / mem_rate(k.g);
    k.c->last_gemm_s = compute_s > traffic_s ? compute_s : traffic_s;
    double epilogue_s = 0.0;
    if (which == CM_W && k.main_grad_bytes > 0) {
        /* The weight gradient is added into the gradient buffer by the GEMM's
         * epilogue (beta = 1): each output element is read and written at the
         * buffer's precision after the tile's main loop.  An Ampere-class
         * kernel runs one large tile per SM, so the SM's tensor cores wait
         * while its epilogue streams: the traffic adds to the GEMM's time. */
        double accum_bytes = ACCUMULATE_PASSES * k.main_grad_bytes * m * n * groups;
        epilogue_s = accum_bytes / mem_rate(k.g);
        k.c->mem_bytes += accum_bytes;
    }
    issue(k, k.c->last_gemm_s + epilogue_s);
    k.c->gemm_flops += FLOPS_PER_MAC * m * n * kk * groups;
}

static void k_linear(kctx k, cm_op which, double rows, double in_f, double out_f)
{
    k_linear_p(k, which, rows, in_f, out_f, 1.0, 1);
}

/* A LoRA adapter beside a frozen linear layer (in_f -> out_f on this rank,
 * groups experts): Y += (X A) B with A in_f x r and B r x out_f, trained, in
 * bf16 (its GEMMs are skinny: their operand traffic bounds them).  F: X A,
 * then (X A) B, added to the base output; B: dY B^T, then its A^T, added to
 * the base's input gradient; W: the gradients of B and of A.  Issued before
 * the base GEMM, so that the base stays the op's last GEMM (what a tp
 * collective overlaps). */
static void k_adapter(kctx k, cm_op which, double rows, double in_f, double out_f, double groups)
{
    double r = k.lora_rank;
    kctx a = k;
    a.frozen = 0;
    if (which == CM_F) {
        k_linear_p(a, CM_F, rows, in_f, r, groups, 0);
        k_linear_p(a, CM_F, rows, r, out_f, groups, 0);
        k_mem(a, ADAPTER_SUM_BYTES * rows * out_f * groups);
        k.c->adapter_params += r * (in_f + out_f) * groups;
    } else if (which == CM_B) {
        k_linear_p(a, CM_B, rows, r, out_f, groups, 0);
        k_linear_p(a, CM_B, rows, in_f, r, groups, 0);
        k_mem(a, ADAPTER_SUM_BYTES * rows * in_f * groups);
    } else {
        k_linear_p(a, CM_W, rows, r, out_f, groups, 0);
        k_linear_p(a, CM_W, rows, in_f, r, groups, 0);
    }
}

/* A linear layer LoRA may adapt: qkv 1 for the QKV projection (adapted
 * under either lora.targets), 0 for the others (under targets=all). */
static void k_target_linear(kctx k, cm_op which, double rows, double in_f, double out_f, double groups, int qkv)
{
    if (k.lora_rank > 0 && (qkv || !k.lora_qkv_only))
        k_adapter(k, which, rows, in_f, out_f, groups);
    k_linear_p(k, which, rows, in_f, out_f, groups, 1);
}

/* One attention kernel of flops at efficiency eff (GP_ATTN_EFF for the
 * legacy core's GEMMs, GP_FLASH_EFF for the flash kernel). */
static void k_attn(kctx k, double flops, gpu_param_id eff)
{
    const double *v = k.g->v;
    issue(k, (flops + v[GP_GEMM_HALF_FLOPS]) / (v[GP_PEAK_FLOPS] * v[eff]));
    k.c->attn_flops += flops;
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
 * them (costmodel.h), its bytes still counted.  With tp_comm_overlap it
 * runs in chunks under the GEMM it follows (every layer all-reduce comes
 * right after one): only the excess is exposed. */
static void k_layer_allreduce(kctx k, double bytes, const gpt_shape *m)
{
    if (m->tp <= 1)
        return;
    if (!m->tp_comm_overlap) {
        /* A measured layer profile's factor is the layer's kernels' (its
         * collectives move the bytes the links carry: the simulator runs
         * them unscaled, and so does this queue, so that both agree). */
        kctx unscaled = k;
        unscaled.scale = 1.0;
        double coll_s = costmodel_allreduce_s(k.g, bytes, m->tp);
        issue(unscaled, coll_s);
        k.c->comm_bytes += bytes;
        /* In the queue at its uncontended time (op_cost.sim_coll_s): when
         * the simulator runs it on the links in its place, uncontended the
         * op costs what the queue says and contention adds to it. */
        if (m->tp_comm_simulated)
            k.c->sim_coll_s += coll_s;
        return;
    }
    double exposed_s = costmodel_allreduce_s(k.g, bytes, m->tp) - k.c->last_gemm_s;
    issue(k, exposed_s > 0.0 ? exposed_s : 0.0);
    k.c->comm_bytes += bytes;
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

int costmodel_group_per_node(int gpus_per_node, int n, long stride)
{
    long per_node = stride >= gpus_per_node ? 1 : gpus_per_node / stride;
    return (int)(per_node < n ? per_node : n);
}

double costmodel_alltoall_s(double bytes, int n, int per_node, double nvlink_bw, double nic_bw, double latency_s)
{
    return costmodel_alltoall_scaled_s(bytes, n, per_node, nvlink_bw, nic_bw, latency_s,
                                       costmodel_a2a_scales(0, 0, 0, n, per_node));
}

double costmodel_a2a_node_copies(int experts, int top_k, int nodes)
{
    if (nodes <= 1 || experts <= 0 || top_k <= 0)
        return 1.0;
    /* probability that none of the token's top_k experts (drawn without
     * replacement) lies on a given remote node of experts / nodes */
    double others = experts - (double)experts / nodes, none = 1.0;
    for (int i = 0; i < top_k; i++)
        none *= (others - i) > 0 ? (others - i) / (experts - i) : 0.0;
    return nodes * (1.0 - none) / top_k;
}

a2a_scales costmodel_a2a_scales(int hybrid, int experts, int top_k, int n, int per_node)
{
    a2a_scales sc = {1.0, 1.0};
    if (!hybrid || per_node >= n || per_node < 1)
        return sc;
    sc.local_scale = 1.0 + (double)(n - per_node) / per_node;
    sc.remote_scale = costmodel_a2a_node_copies(experts, top_k, n / per_node);
    return sc;
}

double costmodel_alltoall_scaled_s(double bytes, int n, int per_node, double nvlink_bw, double nic_bw,
                                   double latency_s, a2a_scales sc)
{
    if (n <= 1)
        return 0.0;
    double nvl_s = (per_node - 1) * bytes * sc.local_scale / (n - 1) / nvlink_bw;
    double nic_s = per_node < n ? (n - per_node) * bytes * sc.remote_scale / (n - 1) / nic_bw : 0.0;
    return latency_s + (nvl_s > nic_s ? nvl_s : nic_s);
}

double costmodel_ring_bw(double nvlink_bw, double nic_bw, int gpus_per_node, int n, long stride)
{
    long extent = (long)(n - 1) * stride + 1;   /* ranks from the group's first to its last */
    if (extent <= gpus_per_node || !(nic_bw > 0))
        return nvlink_bw;
    int per_node = costmodel_group_per_node(gpus_per_node, n, stride);
    double nics = (double)per_node * nic_bw;
    if (per_node <= 1)
        return nics;
    /* each member's NVLink port carries per_node - 1 of the per_node rings
     * (the last leaves through the NIC) */
    double ports = nvlink_bw * (double)per_node / (double)(per_node - 1);
    return nics < ports ? nics : ports;
}

double costmodel_optimizer_s(const gpu_params *g, double params)
{
    double gpu_s = params * ADAM_BYTES_PER_PARAM / mem_rate(g);
    double host_s = ADAM_KERNELS * g->v[GP_KERNEL_LAUNCH_S];
    return host_s > gpu_s ? host_s : gpu_s;
}

/* Dimensions as doubles, with the usual names, on one GPU of the tp x cp group. */
typedef struct dims {
    arch a;      /* the architecture (resolved) */
    double s, b, h, a_heads, t, V;
    double sl;   /* s / cp: this GPU's part of the sequence */
    double T;    /* sl * b: tokens on this GPU */
    double n;    /* T * h: elements of the hidden state */
    double rep;  /* divisor of norms, dropouts, residuals: t with sequence parallelism */
    double q, kv, o;   /* query, key (= value, MHA/GQA) and attention-output widths */
    double e;    /* b * (a/t) * sl * s: attention-score elements on one TP rank (legacy) */
    double c;    /* T * V/t: logits on one TP rank */
    double Tk;   /* routed token copies on this GPU (MoE) */
    double local_experts;
    double gate; /* 2 for a gated (SwiGLU) MLP's FC1, else 1 */
    double te;   /* the experts' tensor-parallel degree: t, or 1 (gpt_shape.expert_tp1) */
    double layer_scale; /* the layer's measured profile factor (costmodel.h), 1 without one: set by the
                         * callers that have the GPU's parameters (dims_of does not) */
    double keys; /* keys each query meets: s, or the window of a sliding-window layer (layer_ops sets it) */
} dims;

static dims dims_of(const gpt_shape *m)
{
    dims d;
    memset(&d, 0, sizeof d);
    if (m->arch)
        d.a = *m->arch;
    else
        arch_gpt_unnamed(&d.a, m->layers, m->hidden, m->heads, m->seq, m->vocab);
    const arch *a = &d.a;
    double cp = m->cp > 1 ? m->cp : 1, ep = m->ep > 1 ? m->ep : 1;
    d.s = m->seq;
    d.b = m->micro_batch;
    d.h = a->hidden;
    d.a_heads = a->heads;
    d.t = m->tp;
    d.V = a->vocab;
    d.sl = d.s / cp;
    d.T = d.sl * d.b;
    d.n = d.T * d.h;
    d.rep = m->sequence_parallel ? d.t : 1.0;
    d.q = arch_q_dim(a);
    d.kv = a->attn == ARCH_ATTN_MLA ? d.q : arch_kv_dim(a);
    d.o = arch_o_dim(a);
    d.e = d.b * (d.a_heads / d.t) * d.sl * d.s;
    d.c = d.T * d.V / d.t;
    d.Tk = d.T * a->moe.top_k * (m->capacity_factor > 0 ? m->capacity_factor : 1.0);
    d.local_experts = a->moe.experts > 0 ? a->moe.experts / ep : 0;
    d.gate = a->mlp == ARCH_MLP_SWIGLU ? 2.0 : 1.0;
    d.te = m->expert_tp1 ? 1.0 : d.t;
    d.layer_scale = 1.0;
    d.keys = d.s;
    return d;
}

/* Appends printf-style text at out + *used, never past len (snprintf's
 * truncation); *used stops at len. */
static void append(char *out, size_t len, size_t *used, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void append(char *out, size_t len, size_t *used, const char *fmt, ...)
{
    if (*used >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + *used, len - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used = *used + (size_t)n < len ? *used + (size_t)n : len;
}

/* ---- measured layer profiles (costmodel.h) ---------------------------------- */

void costmodel_layer_key(const gpt_shape *m, char *out, size_t len)
{
    if (len == 0)
        return;
    dims d = dims_of(m);
    const arch *a = &d.a;
    size_t used = 0;
    out[0] = '\0';
    append(out, len, &used, "h%d ffn%d heads%d kv%d hd%d %s %s", a->hidden, a->ffn, a->heads, a->kv_heads,
           a->head_dim, a->mlp == ARCH_MLP_SWIGLU ? "swiglu" : "gelu",
           a->norm == ARCH_NORM_RMSNORM ? "rmsnorm" : "layernorm");
    if (a->attn == ARCH_ATTN_MLA)
        append(out, len, &used, " mla%d/%d/%d/%d/%d", a->mla.q_lora_rank, a->mla.kv_lora_rank,
               a->mla.qk_nope_head_dim, a->mla.qk_rope_head_dim, a->mla.v_head_dim);
    if (a->linear_bias)
        append(out, len, &used, " bias");
    if (a->qkv_bias)
        append(out, len, &used, " qkvbias");
    if (a->dropout)
        append(out, len, &used, " dropout");
    if (!a->learned_positions)
        append(out, len, &used, " rope");
    if (a->moe.experts > 0)
        append(out, len, &used, " moe%d/top%d/effn%d/sffn%d%s/dense%d", a->moe.experts, a->moe.top_k,
               a->moe.expert_ffn, a->moe.shared_ffn, a->moe.shared_gate ? "/gate" : "", a->moe.dense_layers);
    append(out, len, &used, " s%d b%d tp%d", m->seq, m->micro_batch, m->tp);
    if (m->cp > 1)
        append(out, len, &used, " cp%d", m->cp);
    if (m->ep > 1)
        append(out, len, &used, " ep%d%s", m->ep, m->expert_tp1 ? "/etp1" : "");
    if (m->sequence_parallel)
        append(out, len, &used, " sp");
    if (m->tp_comm_overlap)
        append(out, len, &used, " tpoverlap");
    append(out, len, &used, " %s", m->flash ? "flash" : "legacy");
    if (m->doc_len > 0)
        append(out, len, &used, " doc%d", m->doc_len);
    if (m->fp8)
        append(out, len, &used, " %s", experiment_precision_word(m->fp8));
    if (m->capacity_factor > 0)
        append(out, len, &used, " cf%g", m->capacity_factor);
    if (m->recompute_lgd)
        append(out, len, &used, " lgd");
    if (m->main_grad_bytes > 0)
        append(out, len, &used, " mg%g", m->main_grad_bytes);
}

const layer_profile *costmodel_layer_profile(const gpu_params *g, const gpt_shape *m)
{
    if (g->nlayer_profiles == 0)
        return NULL;
    char key[LAYER_KEY_MAX];
    costmodel_layer_key(m, key, sizeof key);
    return gpu_params_find_layer_profile(g, key);
}

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

static kctx ctx_of(const gpu_params *g, const gpt_shape *m, op_cost *c)
{
    double peak = g->v[GP_PEAK_FLOPS];
    const gpu_system *sys = gpu_system_find(g->name);
    double ratio = recipe_rate_ratio(sys, m->fp8);
    if (m->fp8 && ratio > 0)
        /* the bf16 peak scaled by the datasheet ratio, of which the recipe achieves fp8_gemm_eff (the
         * low-precision GEMMs' one fitted efficiency: FP4's is not measured apart) */
        peak *= ratio * g->v[GP_FP8_GEMM_EFF];
    return (kctx){g, c, peak, m->fp8, sys ? sys->sm_count : 0, m->main_grad_bytes, 1.0, m->lora_rank > 0,
                  m->lora_rank, m->lora_qkv_only};
}

/* The context of a transformer layer's kernels: at its measured profile's
 * scale (d->layer_scale). */
static kctx layer_ctx_of(const gpu_params *g, const gpt_shape *m, const dims *d, op_cost *c)
{
    kctx k = ctx_of(g, m, c);
    k.scale = d->layer_scale;
    return k;
}

/* The factor of m's layer shape in g's measured profiles, 1 without one. */
static double layer_scale_of(const gpu_params *g, const gpt_shape *m)
{
    const layer_profile *p = costmodel_layer_profile(g, m);
    return p ? p->factor : 1.0;
}

/* ---- pieces of a layer, forward (F), input gradient (B), weight gradient (W) ---- */

static void norm_fwd(kctx k, const dims *d) { k_mem(k, LN_FWD_BYTES * d->n / d->rep); }
static void norm_bwd(kctx k, const dims *d) { k_mem(k, LN_BWD_BYTES * d->n / d->rep); }

/* Bias (if any), dropout (if any) and the residual add after a block. */
static void residual_fwd(kctx k, const dims *d)
{
    k_mem(k, (d->a.dropout ? DROPOUT_ADD_FWD_BYTES : RESIDUAL_ADD_BYTES) * d->n / d->rep);
}

static void residual_bwd(kctx k, const dims *d)
{
    if (d->a.dropout)
        k_mem(k, DROPOUT_BWD_BYTES * d->n / d->rep);
}

/* Linear-layer GEMM FLOPs of the attention block, per TP rank: the
 * projections into q/k/v (for MLA: replicated down-projections and split
 * up-projections) and the output projection. */
static double attn_in_flops(const dims *d)
{
    const arch *a = &d->a;
    if (a->attn == ARCH_ATTN_MLA) {
        const arch_mla *ml = &a->mla;
        double down = d->h * ((ml->q_lora_rank > 0 ? ml->q_lora_rank : 0) + ml->kv_lora_rank + ml->qk_rope_head_dim);
        double up = (ml->q_lora_rank > 0 ? (double)ml->q_lora_rank : d->h) * d->q / d->t +
                    (double)ml->kv_lora_rank * a->heads * (ml->qk_nope_head_dim + ml->v_head_dim) / d->t;
        return FLOPS_PER_MAC * d->T * (down + up);
    }
    return FLOPS_PER_MAC * d->T * d->h * (d->q + 2 * d->kv) / d->t;
}

/* The two linear layers of the attention block on this rank: QKV (h -> its
 * attn_in_flops / (2Th) outputs, exact for MHA/GQA, MLA's projections as
 * one GEMM of their total width) and the output projection (o/t -> h). */
static void qkv_linear(kctx k, cm_op which, const dims *d)
{
    k_target_linear(k, which, d->T, d->h, attn_in_flops(d) / (FLOPS_PER_MAC * d->T * d->h), 1.0, 1);
}

static void proj_linear(kctx k, cm_op which, const dims *d)
{
    k_target_linear(k, which, d->T, d->o / d->t, d->h, 1.0, 0);
}

/* The attention core: legacy (scores materialised) or flash. */
/* Keys each query of flash attention meets: the sequence, or its document
 * when sequences are packed (gpt_shape.doc_len): the score blocks of other
 * documents are skipped, so a packed sequence costs s x doc_len, not s^2. */
static double flash_keys(const gpt_shape *m, const dims *d)
{
    return m->doc_len > 0 && m->doc_len < d->s ? m->doc_len : d->s;
}

/* The part of the s x s scores flash attention computes: causal, the
 * packed documents' blocks only, and under a sliding window w < keys a band
 * below the diagonal (each query meets at most w keys: (w/s)(1 - w/(2 keys))
 * of s^2, which is the causal half at w = keys). */
static double flash_fraction(const gpt_shape *m, const dims *d)
{
    double keys = flash_keys(m, d);
    if (d->keys < keys)
        return d->keys / d->s * (1.0 - CAUSAL_FRACTION * d->keys / keys);
    return CAUSAL_FRACTION * keys / d->s;
}

/* One flash-attention kernel of flops (the causal half of the scores'
 * MACs).  Beyond them the kernel pays, per query row, a prologue and an
 * epilogue worth flash_half_keys keys of its loop, and per score the
 * softmax's exponentials, worth flash_half_head_dim of the head dim's MACs
 * (costmodel.h; both 0 when the profile has no such terms): its rate is
 * flash_eff / ((1 + half_keys / keys) (1 + half_head_dim / head_dim)). */
static void k_flash(kctx k, double flops, const dims *d, double keys)
{
    const double *v = k.g->v;
    double head_dim = d->a_heads > 0 ? d->q / d->a_heads : 0;
    double work = 1.0;
    if (keys > 0)
        work *= 1.0 + v[GP_FLASH_HALF_KEYS] / keys;
    if (head_dim > 0)
        work *= 1.0 + v[GP_FLASH_HALF_HEAD_DIM] / head_dim;
    issue(k, (flops * work + v[GP_GEMM_HALF_FLOPS]) / (v[GP_PEAK_FLOPS] * v[GP_FLASH_EFF]));
    k.c->attn_flops += flops;
}

static void core_fwd(kctx k, const gpt_shape *m, const dims *d)
{
    if (m->flash) {
        double qk = FLOPS_PER_MAC * d->b * d->sl * d->s * d->q / d->t;
        double av = FLOPS_PER_MAC * d->b * d->sl * d->s * d->o / d->t;
        double part = flash_fraction(m, d);   /* the keys a query meets, on average: part x s */
        k_flash(k, part * (qk + av), d, part * d->s);
        return;
    }
    /* legacy: the scores over the keys (a sliding window's band) */
    double qk = FLOPS_PER_MAC * d->b * d->sl * d->keys * d->q / d->t;
    double av = FLOPS_PER_MAC * d->b * d->sl * d->keys * d->o / d->t;
    k_mem(k, COPY_BYTES * d->T * (d->q + 2 * d->kv) / d->t);   /* split heads */
    k_attn(k, qk, GP_ATTN_EFF);                               /* QK^T */
    k_softmax(k, m, d->e, 0);                                 /* scale, mask, softmax */
    if (d->a.dropout)
        k_mem(k, ATTN_DROPOUT_FWD_BYTES * d->e);              /* attention dropout */
    k_attn(k, av, GP_ATTN_EFF);                               /* AV */
    k_mem(k, COPY_BYTES * d->T * d->o / d->t);                /* merge heads */
}

static void core_bwd(kctx k, const gpt_shape *m, const dims *d)
{
    if (m->flash) {
        double qk = FLOPS_PER_MAC * d->b * d->sl * d->s * d->q / d->t;
        double av = FLOPS_PER_MAC * d->b * d->sl * d->s * d->o / d->t;
        double part = flash_fraction(m, d);   /* the keys a query meets, on average: part x s */
        k_flash(k, FLASH_BWD_FLOPS_FACTOR * part * (qk + av), d, part * d->s);
        return;
    }
    double qk = FLOPS_PER_MAC * d->b * d->sl * d->keys * d->q / d->t;
    double av = FLOPS_PER_MAC * d->b * d->sl * d->keys * d->o / d->t;
    k_mem(k, COPY_BYTES * d->T * d->o / d->t);
    k_attn(k, av, GP_ATTN_EFF);                               /* dP = dO V^T */
    k_attn(k, av, GP_ATTN_EFF);                               /* dV = P^T dO */
    if (d->a.dropout)
        k_mem(k, DROPOUT_BWD_BYTES * d->e);
    k_softmax(k, m, d->e, 1);
    k_attn(k, qk, GP_ATTN_EFF);                               /* dQ */
    k_attn(k, qk, GP_ATTN_EFF);                               /* dK */
    k_mem(k, COPY_BYTES * d->T * (d->q + 2 * d->kv) / d->t);
}

static void rope(kctx k, const dims *d)
{
    if (!d->a.learned_positions)
        k_mem(k, ROPE_BYTES * d->T * (d->q + d->kv) / d->t);
}

static void act_fwd(kctx k, const dims *d, double elems)       /* elems: activation outputs */
{
    k_mem(k, (d->gate > 1 ? SWIGLU_FWD_BYTES : GELU_FWD_BYTES) * elems);
}

static void act_bwd(kctx k, const dims *d, double elems)
{
    k_mem(k, (d->gate > 1 ? SWIGLU_BWD_BYTES : GELU_BWD_BYTES) * elems);
}

/* An MLP's two linear layers on this rank for rows tokens (over groups
 * experts, rows / groups each) and intermediate width f split tpd ways; the
 * MoE router (h -> experts, bf16).  Experts: the rank's Tk token copies
 * through f / t of each expert's width, or (expert_tp1) its Tk / t copies
 * through whole experts -- the same FLOPs, other GEMM shapes. */
static void fc1_linear(kctx k, cm_op which, const dims *d, double rows, double f, double groups, double tpd)
{
    k_target_linear(k, which, rows / groups, d->h, d->gate * f / tpd, groups, 0);
}

static void fc2_linear(kctx k, cm_op which, const dims *d, double rows, double f, double groups, double tpd)
{
    k_target_linear(k, which, rows / groups, f / tpd, d->h, groups, 0);
}

static void router_linear(kctx k, cm_op which, const dims *d)
{
    k_linear_p(k, which, d->T, d->h, d->a.moe.experts, 1.0, 0);
}

/* The MLP part of a layer, one of F (0), B (1), W (2).  MoE layers route
 * token copies to grouped expert GEMMs (the all-to-alls themselves are the
 * simulator's, workload.h) and run the shared expert densely. */
static void mlp_op(kctx k, const dims *d, int moe, int which)
{
    const arch_moe *mo = &d->a.moe;
    double dense_f = moe ? mo->shared_ffn : d->a.ffn;
    double experts = d->local_experts > 0 ? d->local_experts : 1;
    if (which == 0) {
        if (moe) {
            router_linear(k, CM_F, d);
            k_mem(k, ROUTER_BYTES * d->T * mo->experts);
            k_mem(k, PERMUTE_BYTES * d->Tk * d->h);
            fc1_linear(k, CM_F, d, d->Tk * d->te / d->t, mo->expert_ffn, experts, d->te);
            act_fwd(k, d, d->Tk * mo->expert_ffn / d->t);
            fc2_linear(k, CM_F, d, d->Tk * d->te / d->t, mo->expert_ffn, experts, d->te);
            k_mem(k, COMBINE_BYTES * d->Tk * d->h);
        }
        if (dense_f > 0) {
            fc1_linear(k, CM_F, d, d->T, dense_f, 1.0, d->t);
            act_fwd(k, d, d->T * dense_f / d->t);
            fc2_linear(k, CM_F, d, d->T, dense_f, 1.0, d->t);
        }
    } else if (which == 1) {
        if (dense_f > 0) {
            fc2_linear(k, CM_B, d, d->T, dense_f, 1.0, d->t);
            act_bwd(k, d, d->T * dense_f / d->t);
            fc1_linear(k, CM_B, d, d->T, dense_f, 1.0, d->t);
        }
        if (moe) {
            k_mem(k, COMBINE_BYTES * d->Tk * d->h);
            fc2_linear(k, CM_B, d, d->Tk * d->te / d->t, mo->expert_ffn, experts, d->te);
            act_bwd(k, d, d->Tk * mo->expert_ffn / d->t);
            fc1_linear(k, CM_B, d, d->Tk * d->te / d->t, mo->expert_ffn, experts, d->te);
            k_mem(k, PERMUTE_BYTES * d->Tk * d->h);
            k_mem(k, ROUTER_BYTES * d->T * mo->experts);
            router_linear(k, CM_B, d);
        }
    } else {
        if (dense_f > 0) {
            fc2_linear(k, CM_W, d, d->T, dense_f, 1.0, d->t);
            fc1_linear(k, CM_W, d, d->T, dense_f, 1.0, d->t);
        }
        if (moe) {
            fc2_linear(k, CM_W, d, d->Tk * d->te / d->t, mo->expert_ffn, experts, d->te);
            fc1_linear(k, CM_W, d, d->Tk * d->te / d->t, mo->expert_ffn, experts, d->te);
            router_linear(k, CM_W, d);
        }
    }
}

/* What LGD recomputes (norm outputs, activation function, dropout masks):
 * run before the backward and again before the weight gradients. */
static void lgd_recompute(kctx k, const dims *d, arch_mixer mixer, arch_ffn ffn)
{
    int moe = ffn == ARCH_FFN_MOE;
    if (mixer != ARCH_MIX_NONE)
        norm_fwd(k, d);
    if (ffn == ARCH_FFN_NONE)
        return;
    norm_fwd(k, d);
    double f = moe ? d->a.moe.shared_ffn : d->a.ffn;
    if (f > 0)
        act_fwd(k, d, d->T * f / d->t);
    if (moe)
        act_fwd(k, d, d->Tk * d->a.moe.expert_ffn / d->t);
}

/* A Mamba-2 block's kernels after its norm, one of F (0), B (1), W (2):
 * in_proj and out_proj as GEMMs split over tp by heads, the conv and the
 * gated norm as memory passes, the SSD scan as the layer's time-mixing core
 * (arch_mamba_scan_flops, at the fused attention kernel's efficiency). */
static void mamba_op(kctx k, const dims *d, int which)
{
    const arch *a = &d->a;
    double in_w = arch_mamba_in_width(a) / d->t, inner = arch_mamba_inner(a) / d->t;
    double conv = d->T * arch_mamba_conv_width(a) / d->t;
    double scan = arch_mamba_scan_flops(a, d->T) / d->t;
    if (which == 0) {
        k_linear(k, CM_F, d->T, d->h, in_w);
        k_mem(k, MAMBA_CONV_FWD_BYTES * conv);
        k_attn(k, scan, GP_FLASH_EFF);
        k_mem(k, MAMBA_GATED_NORM_FWD_BYTES * d->T * inner);
        k_linear(k, CM_F, d->T, inner, d->h);
    } else if (which == 1) {
        k_linear(k, CM_B, d->T, inner, d->h);
        k_mem(k, MAMBA_GATED_NORM_BWD_BYTES * d->T * inner);
        k_attn(k, MAMBA_SCAN_BWD_FACTOR * scan, GP_FLASH_EFF);
        k_mem(k, MAMBA_CONV_BWD_BYTES * conv);
        k_linear(k, CM_B, d->T, d->h, in_w);
    } else {
        k_linear(k, CM_W, d->T, inner, d->h);
        k_linear(k, CM_W, d->T, d->h, in_w);
    }
}

/* One layer's F, B and W kernels: its mixer (attention, windowed attention,
 * Mamba-2 or none) and its FFN (dense, MoE or none), each behind its norm
 * and closed by its tensor-parallel all-reduce and residual. */
static void layer_ops(const gpu_params *g, const gpt_shape *m, const dims *d_in, arch_mixer mixer, arch_ffn ffn,
                      op_cost out[CM_OPS])
{
    memset(out, 0, CM_OPS * sizeof *out);
    dims dw = *d_in;
    const dims *d = &dw;
    dw.keys = arch_attn_keys(&dw.a, mixer, dw.s);
    if (dw.keys > 0)
        dw.e = dw.b * (dw.a_heads / dw.t) * dw.sl * dw.keys;
    double hidden_bytes = HALF_BYTES * d->n;
    int bias = d->a.linear_bias;
    int moe = ffn == ARCH_FFN_MOE, attn = mixer == ARCH_MIX_ATTN || mixer == ARCH_MIX_SWA;
    int mamba = mixer == ARCH_MIX_MAMBA, has_ffn = ffn != ARCH_FFN_NONE;

    kctx f = layer_ctx_of(g, m, d, &out[CM_F]);
    if (attn || mamba)
        norm_fwd(f, d);                                /* norm 1 */
    if (attn) {
        qkv_linear(f, CM_F, d);                        /* QKV */
        rope(f, d);
        core_fwd(f, m, d);
        proj_linear(f, CM_F, d);                       /* output projection */
    } else if (mamba) {
        mamba_op(f, d, 0);
    }
    if (attn || mamba) {
        k_layer_allreduce(f, hidden_bytes, m);
        residual_fwd(f, d);                            /* bias, dropout, residual */
    }
    if (has_ffn) {
        norm_fwd(f, d);                                /* norm 2 */
        mlp_op(f, d, moe, 0);
        k_layer_allreduce(f, hidden_bytes, m);
        residual_fwd(f, d);
    }

    kctx b = layer_ctx_of(g, m, d, &out[CM_B]);        /* input gradient, in reverse order */
    if (m->recompute_lgd)
        lgd_recompute(b, d, mixer, ffn);
    if (has_ffn) {
        residual_bwd(b, d);
        mlp_op(b, d, moe, 1);
        k_layer_allreduce(b, hidden_bytes, m);         /* column-parallel input gradient */
        norm_bwd(b, d);
    }
    if (attn || mamba)
        residual_bwd(b, d);
    if (attn) {
        proj_linear(b, CM_B, d);                       /* proj dgrad */
        core_bwd(b, m, d);
        rope(b, d);
        qkv_linear(b, CM_B, d);                        /* QKV dgrad */
    } else if (mamba) {
        mamba_op(b, d, 1);
    }
    if (attn || mamba) {
        k_layer_allreduce(b, hidden_bytes, m);
        norm_bwd(b, d);
    }

    kctx w = layer_ctx_of(g, m, d, &out[CM_W]);        /* weight gradients */
    if (m->recompute_lgd)
        lgd_recompute(w, d, mixer, ffn);
    if (has_ffn)
        mlp_op(w, d, moe, 2);
    if (attn) {
        proj_linear(w, CM_W, d);                       /* proj */
        qkv_linear(w, CM_W, d);                        /* QKV */
    } else if (mamba) {
        mamba_op(w, d, 2);
    }
    if (w.frozen)
        return;                                        /* LoRA: norms and biases are frozen too */
    double f_width = moe ? d->a.moe.shared_ffn : d->a.ffn;
    if (bias) {
        if (has_ffn)
            k_mem(w, BIAS_GRAD_BYTES * (d->n + d->gate * f_width * d->T / d->t)); /* FC2, FC1 bias grads */
        if (attn)
            k_mem(w, BIAS_GRAD_BYTES * (d->n + (d->q + 2 * d->kv) * d->T / d->t)); /* proj, QKV bias grads */
    }
    if (has_ffn)
        k_mem(w, LN_WGRAD_BYTES * d->n / d->rep);      /* norm 2 weights */
    if (attn || mamba)
        k_mem(w, LN_WGRAD_BYTES * d->n / d->rep);      /* norm 1 */
}

void costmodel_layer(const gpu_params *g, const gpt_shape *m, op_cost out[CM_OPS])
{
    dims d = dims_of(m);
    d.layer_scale = layer_scale_of(g, m);
    int last = d.a.layers - 1;
    layer_ops(g, m, &d, arch_layer_mixer(&d.a, last), arch_layer_ffn(&d.a, last), out);
}

void costmodel_embedding(const gpu_params *g, const gpt_shape *m, op_cost out[CM_OPS])
{
    memset(out, 0, CM_OPS * sizeof *out);
    dims d = dims_of(m);
    kctx f = ctx_of(g, m, &out[CM_F]);
    k_mem(f, EMBED_LOOKUP_BYTES * d.n);                /* word embedding (vocab-parallel: masked) */
    k_allreduce(f, HALF_BYTES * d.n, m->tp);           /* sum of the vocab shards */
    if (d.a.learned_positions)
        k_mem(f, POS_ADD_BYTES * d.n);                 /* + position embedding */
    if (d.a.dropout)
        k_mem(f, DROPOUT_ADD_FWD_BYTES * d.n);         /* embedding dropout */
    kctx b = ctx_of(g, m, &out[CM_B]);
    if (d.a.dropout)
        k_mem(b, DROPOUT_BWD_BYTES * d.n);             /* the input is token ids: nothing further */
    kctx w = ctx_of(g, m, &out[CM_W]);
    if (w.frozen)
        return;                                        /* LoRA: the embedding is frozen */
    k_mem(w, EMBED_GRAD_BYTES * d.n);                  /* word embedding grad (scatter-add) */
    if (d.a.learned_positions)
        k_mem(w, EMBED_GRAD_BYTES * d.n);              /* position embedding grad */
}

void costmodel_head(const gpu_params *g, const gpt_shape *m, op_cost out[CM_OPS])
{
    memset(out, 0, CM_OPS * sizeof *out);
    dims d = dims_of(m);
    double row_stat_bytes = FLOAT_BYTES * d.T;         /* one fp32 per token */
    kctx f = ctx_of(g, m, &out[CM_F]);
    k_mem(f, LN_FWD_BYTES * d.n);                      /* final norm */
    k_linear_p(f, CM_F, d.T, d.h, d.V / d.t, 1.0, 0);  /* logits (bf16 under FP8 recipes) */
    for (int i = 0; i < CE_FWD_KERNELS; i++)
        k_mem(f, CE_FWD_BYTES * d.c / CE_FWD_KERNELS);
    for (int i = 0; i < CE_REDUCTIONS; i++)
        k_allreduce(f, row_stat_bytes, m->tp);
    kctx b = ctx_of(g, m, &out[CM_B]);
    k_mem(b, CE_BWD_BYTES * d.c);
    k_linear_p(b, CM_B, d.T, d.h, d.V / d.t, 1.0, 0);  /* dgrad */
    k_allreduce(b, HALF_BYTES * d.n, m->tp);           /* input was copied to the TP region */
    k_mem(b, LN_BWD_BYTES * d.n);
    kctx w = ctx_of(g, m, &out[CM_W]);
    if (w.frozen)
        return;                                        /* LoRA: the head and the final norm are frozen */
    k_linear_p(w, CM_W, d.T, d.h, d.V / d.t, 1.0, 0);  /* wgrad of the (tied or own) output embedding */
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

static arch_run run_of(const gpt_shape *m)
{
    return (arch_run){.seq = m->seq, .micro_batch = m->micro_batch, .tp = m->tp, .cp = m->cp > 1 ? m->cp : 1,
                      .ep = m->ep > 1 ? m->ep : 1, .expert_tp1 = m->expert_tp1,
                      .sequence_parallel = m->sequence_parallel, .flash = m->flash,
                      .capacity_factor = m->capacity_factor, .quantized_inputs = m->fp8 != 0,
                      .probs_on_outputs = m->moe_probs_on_outputs};
}

double costmodel_layer_act_b_bytes(const gpt_shape *m)
{
    dims d = dims_of(m);
    arch_run r = run_of(m);
    return arch_layer_act_bytes(&d.a, &r, d.a.layers - 1, m->recompute_lgd ? ARCH_ACT_LGD : ARCH_ACT_NONE);
}

double costmodel_layer_act_w_bytes(const gpt_shape *m)
{
    dims d = dims_of(m);
    arch_run r = run_of(m);
    return arch_layer_act_w_bytes(&d.a, &r, d.a.layers - 1, m->recompute_lgd ? ARCH_ACT_LGD : ARCH_ACT_NONE);
}

double costmodel_layer_params(const gpt_shape *m)
{
    dims d = dims_of(m);
    arch_run r = run_of(m);
    return arch_layer_params_gpu(&d.a, &r, d.a.layers - 1);
}

double costmodel_embedding_params(const gpt_shape *m)
{
    dims d = dims_of(m);
    arch_run r = run_of(m);
    return arch_embedding_params_gpu(&d.a, &r);
}

double costmodel_head_params(const gpt_shape *m)
{
    dims d = dims_of(m);
    arch_run r = run_of(m);
    return arch_head_params_gpu(&d.a, &r);
}

int gpt_shape_check(const gpt_shape *m, pg_status *st)
{
    struct { const char *key; int v; } dim[] = {
        {"gpt.layers", m->layers}, {"gpt.hidden", m->hidden}, {"gpt.heads", m->heads}, {"gpt.seq", m->seq},
        {"gpt.vocab", m->vocab},   {"micro_batch_size", m->micro_batch}, {"tp", m->tp},
    };
    for (size_t i = 0; i < sizeof dim / sizeof dim[0]; i++)
        if (dim[i].v < 1)
            return pg_fail_key(st, PG_EXIT_INPUT, dim[i].key, "must be a positive integer for workload=gpt (got %d)",
                               dim[i].v);
    if (m->hidden % m->heads != 0)
        return pg_fail_key(st, PG_EXIT_INPUT, "gpt.heads", "%d heads do not divide gpt.hidden=%d", m->heads,
                       m->hidden);
    dims d = dims_of(m);
    arch_run r = run_of(m);
    int rc = arch_check(&d.a, d.a.name, st);
    if (rc && !m->arch) {   /* again with the name arch_gpt gives it, for the message */
        arch_gpt_name(&d.a);
        pg_status_clear(st);
        rc = arch_check(&d.a, d.a.name, st);
    }
    return rc ? rc : arch_run_check(&d.a, &r, st);
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

/* Seconds of the attention core's forward (what selective recomputation
 * re-runs) and of one MoE layer's expert compute in F. */
static double core_fwd_s(const gpu_params *g, const gpt_shape *m, const dims *d, arch_mixer mixer)
{
    op_cost c;
    memset(&c, 0, sizeof c);
    dims dw = *d;
    dw.keys = arch_attn_keys(&dw.a, mixer, dw.s);
    if (dw.keys <= 0)
        return 0.0;
    dw.e = dw.b * (dw.a_heads / dw.t) * dw.sl * dw.keys;
    core_fwd(layer_ctx_of(g, m, &dw, &c), m, &dw);
    return c.time_s;
}

/* Seconds of what the selective recomputation modules (gpt_shape
 * .recompute_modules, arch.h arch_recompute_module) run again before a
 * layer of this kind's backward: the forward kernels of what
 * arch_layer_selective_bytes frees. */
static double selective_s(const gpu_params *g, const gpt_shape *m, const dims *d, arch_mixer mixer, arch_ffn ffn,
                          unsigned modules)
{
    op_cost c;
    memset(&c, 0, sizeof c);
    kctx k = layer_ctx_of(g, m, d, &c);
    double s = 0;
    if (modules & ARCH_RC_CORE_ATTN)
        s += core_fwd_s(g, m, d, mixer);
    if (modules & ARCH_RC_LAYERNORM)
        for (int n = arch_separate_norms(&d->a, mixer, ffn); n > 0; n--)
            norm_fwd(k, d);
    if ((modules & ARCH_RC_MLA_UP_PROJ) && arch_mixer_is_mla(&d->a, mixer)) {
        const arch_mla *ml = &d->a.mla;
        double q_in = ml->q_lora_rank > 0 ? (double)ml->q_lora_rank : d->h;
        k_linear(k, CM_F, d->T, q_in, d->q / d->t);
        k_linear(k, CM_F, d->T, ml->kv_lora_rank, d->a.heads * ((double)ml->qk_nope_head_dim + ml->v_head_dim) / d->t);
        rope(k, d);
    }
    if ((modules & ARCH_RC_MLP) && ffn == ARCH_FFN_DENSE) {
        norm_fwd(k, d);
        mlp_op(k, d, 0, 0);
    }
    if ((modules & ARCH_RC_MOE) && ffn == ARCH_FFN_MOE)
        mlp_op(k, d, 1, 0);                            /* router, permutation, experts, combine, shared expert */
    else if ((modules & ARCH_RC_MOE_ACT) && ffn == ARCH_FFN_MOE)
        act_fwd(k, d, d->Tk * d->a.moe.expert_ffn / d->t);
    return s + c.time_s;
}

static double expert_fwd_s(const gpu_params *g, const gpt_shape *m, const dims *d)
{
    op_cost c;
    memset(&c, 0, sizeof c);
    dims routed = *d;
    routed.a.moe.shared_ffn = 0;
    mlp_op(layer_ctx_of(g, m, d, &c), &routed, 1, 0);
    return c.time_s;
}

int costmodel_stage_layers(const gpt_shape *m, int nstages, int *layers, pg_status *st)
{
    struct { const char *key; int fixed, n; } edge[] = {
        {"stage.first_layers", m->first_fixed, m->first_layers},
        {"stage.last_layers", m->last_fixed, m->last_layers},
    };
    int nfixed = 0, fixed_layers = 0;
    const char *key = "gpt.layers";   /* the key a layout that does not fit is blamed on */
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        if (!edge[i].fixed)
            continue;
        if (edge[i].n < 0)
            return pg_fail_key(st, PG_EXIT_INPUT, edge[i].key, "%d layers: must be 0 or more", edge[i].n);
        if (nstages < 2)
            return pg_fail_key(st, PG_EXIT_INPUT, edge[i].key,
                               "needs at least 2 pipeline stages (with one, the first stage is the last and holds "
                               "all %d layers)", m->layers);
        nfixed++;
        fixed_layers += edge[i].n;
        key = edge[i].key;
    }
    int rest = m->layers - fixed_layers, free_stages = nstages - nfixed;
    if (rest < free_stages || (free_stages == 0 && rest != 0)) {
        if (nfixed == 0)
            return pg_fail_key(st, PG_EXIT_INPUT, key, "%d layers cannot fill %d pipeline stages", m->layers,
                               nstages);
        return pg_fail_key(st, PG_EXIT_INPUT, key,
                           "stage.first_layers and stage.last_layers fix %d layers, leaving %d of the model's %d "
                           "for the other %d stages (each needs at least one%s)", fixed_layers, rest, m->layers,
                           free_stages,
                           free_stages == 0 ? "; with none, the two must hold every layer" : "");
    }
    int base = free_stages > 0 ? rest / free_stages : 0, extra = free_stages > 0 ? rest % free_stages : 0;
    int lo = m->first_fixed ? 1 : 0, hi = m->last_fixed ? nstages - 1 : nstages;   /* the free stages [lo, hi) */
    for (int s = 0; s < nstages; s++)
        layers[s] = s < lo ? m->first_layers : s >= hi ? m->last_layers : base + (s >= hi - extra ? 1 : 0);
    return 0;
}

/* DeepSeek-V3's multi-token-prediction modules on the last stage (where
 * Megatron places them): each runs its 2h -> h projection, one more layer
 * like the model's last and the shared LM head again, and keeps their
 * activations and its own parameters (arch_params_mtp). */
static void add_mtp(const gpu_params *g, const gpt_shape *m, const dims *d, const arch_run *r, arch_act_mode mode,
                    const op_cost layer[CM_OPS], const op_cost head[CM_OPS], int sync, double model_share,
                    op_queue q[CM_OPS], stage_cost *sc)
{
    const arch *a = &d->a;
    int last = a->layers - 1;
    op_cost proj[CM_OPS];
    memset(proj, 0, sizeof proj);
    for (int op = CM_F; op < CM_OPS; op++)
        k_linear(layer_ctx_of(g, m, d, &proj[op]), (cm_op)op, d->T, MTP_PROJ_IN_MULT * d->h, d->h / d->t);
    for (int i = 0; i < a->mtp_layers; i++) {
        for (int op = CM_F; op < CM_OPS; op++) {
            queue_append(&q[op], &proj[op], sync);
            queue_append(&q[op], &layer[op], sync);
            queue_append(&q[op], &head[op], sync);
        }
        sc->act_b_bytes += arch_layer_act_bytes(a, r, last, mode) + HALF_BYTES * d->n + FLOAT_BYTES * d->c;
        sc->act_w_bytes += arch_layer_act_w_bytes(a, r, last, mode) + HALF_BYTES * d->n + HALF_BYTES * d->c;
        sc->fwd_flops += (arch_layer_fwd_flops(a, r, last) + arch_head_fwd_flops(a, r) +
                          FLOPS_PER_MAC * (double)r->seq * r->micro_batch * MTP_PROJ_IN_MULT * d->h * d->h) / model_share;
        sc->moe_layers += arch_is_moe_layer(a, last);
    }
    sc->param_count += arch_params_mtp(a) / d->t;
}

/* One layer's activations, parameters and forward FLOPs on a GPU (arch.h). */
typedef struct layer_numbers {
    double act_b_bytes, act_w_bytes, selective_bytes, params, expert_params, fwd_flops;
} layer_numbers;

static layer_numbers layer_numbers_of(const arch *a, const arch_run *r, int layer, arch_act_mode mode,
                                      unsigned modules)
{
    return (layer_numbers){.act_b_bytes = arch_layer_act_bytes(a, r, layer, mode),
                           .act_w_bytes = arch_layer_act_w_bytes(a, r, layer, mode),
                           .selective_bytes = arch_layer_selective_bytes(a, r, layer, modules),
                           .params = arch_layer_params_gpu(a, r, layer),
                           .expert_params = arch_layer_expert_params_gpu(a, r, layer),
                           .fwd_flops = arch_layer_fwd_flops(a, r, layer)};
}

int costmodel_build_shape(const gpu_params *g, const gpt_shape *m_in, int nstages, workload *w, pg_status *st)
{
    memset(w, 0, sizeof *w);
    gpt_shape shape = *m_in;
    gpt_shape *m = &shape;
    if (m->arch) {                        /* the five GPT numbers follow the architecture */
        m->layers = m->arch->layers;
        m->hidden = m->arch->hidden;
        m->heads = m->arch->heads;
        m->vocab = m->arch->vocab;
    }
    int rc = gpt_shape_check(m, st);
    if (rc)
        return rc;
    if (nstages < 1)
        return pg_fail_key(st, PG_EXIT_INPUT, "gpt.layers", "%d layers cannot fill %d pipeline stages", m->layers,
                       nstages);
    int *stage_layers = pg_xcalloc((size_t)nstages, sizeof *stage_layers);
    if ((rc = costmodel_stage_layers(m, nstages, stage_layers, st)) != 0) {
        free(stage_layers);
        return rc;
    }
    dims d = dims_of(m);
    arch_run r = run_of(m);
    const arch *a = &d.a;
    const gpu_system *sys = gpu_system_find(g->name);
    if (m->fp8 && !(recipe_rate_ratio(sys, m->fp8) > 0)) {
        free(stage_layers);
        return pg_fail_key(st, PG_EXIT_INPUT, "precision", "%s needs a GPU with %s tensor cores (%s has none)",
                           experiment_precision_word(m->fp8), m->fp8 == PRECISION_NVFP4 ? "FP4" : "FP8", g->name);
    }
    if (!m->arch)
        arch_gpt_name(&d.a);
    snprintf(w->name, sizeof w->name, "%.60s L%d h%d s%d b%d tp%d", a->name, a->layers, a->hidden, m->seq,
             m->micro_batch, m->tp);
    snprintf(w->source, sizeof w->source, "pipegrid cost model (src/model/costmodel.c) with %.400s",
             g->path[0] ? g->path : g->name);
    snprintf(w->ref_gpu, sizeof w->ref_gpu, "%s", g->name);
    /* The simulator rescales by ref_speed / speed of the running GPU: use
     * exactly the speed the platform gives this type, so no rescaling. */
    w->ref_speed_flops = sys ? sys->speed_flops : g->v[GP_PEAK_FLOPS];
    w->seq_len = m->seq;
    w->micro_batch_size = m->micro_batch;
    w->moe_experts = a->moe.experts;
    w->moe_top_k = a->moe.top_k;
    w->nstages = nstages;
    w->stage = pg_xcalloc((size_t)nstages, sizeof *w->stage);

    const layer_profile *profile = costmodel_layer_profile(g, m);   /* once: the key is text */
    if (profile) {
        d.layer_scale = profile->factor;
        w->layer_profile_factor = profile->factor;
        w->layer_profile_rows = profile->rows;
    }
    /* the kernels of each kind of layer the model has (mixer x FFN), and its
     * activations, parameters and FLOPs (arch.c's per-layer numbers are
     * functions of the kind: computed once per kind, not per layer and call,
     * which calibrate's inner loop repeats thousands of times) */
    op_cost kinds[ARCH_MIX_KINDS][ARCH_FFN_KINDS][CM_OPS], emb[CM_OPS], head[CM_OPS];
    layer_numbers per_kind[ARCH_MIX_KINDS][ARCH_FFN_KINDS];
    int have[ARCH_MIX_KINDS][ARCH_FFN_KINDS] = {{0}};
    double sel_s[ARCH_MIX_KINDS][ARCH_FFN_KINDS];
    arch_act_mode mode = m->recompute_lgd ? ARCH_ACT_LGD : ARCH_ACT_NONE;
    unsigned modules = m->recompute_modules ? m->recompute_modules : ARCH_RC_DEFAULT;
    for (int l = 0; l < a->layers; l++) {
        arch_mixer mx = arch_layer_mixer(a, l);
        arch_ffn ff = arch_layer_ffn(a, l);
        if (!have[mx][ff]) {
            layer_ops(g, m, &d, mx, ff, kinds[mx][ff]);
            per_kind[mx][ff] = layer_numbers_of(a, &r, l, mode, modules);
            sel_s[mx][ff] = selective_s(g, m, &d, mx, ff, modules);
        }
        have[mx][ff] = 1;
    }
    costmodel_embedding(g, m, emb);
    costmodel_head(g, m, head);
    double a2a_compute_s = a->moe.experts > 0 ? expert_fwd_s(g, m, &d) : 0.0;
    double layer_ws = m->flash ? 0.0 : HALF_BYTES * d.e;   /* legacy: the attention scores */
    double head_ws = FLOAT_BYTES * d.c;                    /* fp32 logits */
    double hidden = arch_hidden_bytes(a, &r);
    double model_share = d.t * (m->cp > 1 ? m->cp : 1);     /* GPUs sharing one layer's model FLOPs */
    int sync = g->host_waits_each_layer;
    int layer = 0;
    for (int s = 0; s < nstages; s++) {
        stage_cost *sc = &w->stage[s];
        int nl = stage_layers[s];
        sc->layers = nl;
        sc->has_selective = 1;
        double max_layer_b = 0, max_layer_w = 0;
        /* each op one kernel queue (queue_append): the forward runs the embedding, the layers in order and
         * the head; the input and weight gradients the other way round */
        int first_layer = layer;
        double adapter_params = 0;
        op_queue q[CM_OPS] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
        if (s == 0)
            queue_append(&q[CM_F], &emb[CM_F], sync);
        for (int i = 0; i < nl; i++, layer++) {
            int is_moe = arch_is_moe_layer(a, layer);
            arch_mixer mx = arch_layer_mixer(a, layer);
            queue_append(&q[CM_F], &kinds[mx][arch_layer_ffn(a, layer)][CM_F], sync);
            sc->attn_layers += mx == ARCH_MIX_ATTN || mx == ARCH_MIX_SWA;
            const layer_numbers *ln = &per_kind[mx][arch_layer_ffn(a, layer)];
            double lb = ln->act_b_bytes;
            double lw = ln->act_w_bytes;
            if (lw > lb)
                lw = lb;
            sc->act_b_bytes += lb;
            sc->act_w_bytes += lw;
            if (lb > max_layer_b) {
                max_layer_b = lb;
                max_layer_w = lw;
            }
            sc->selective_bytes += ln->selective_bytes;
            sc->selective_s += sel_s[mx][arch_layer_ffn(a, layer)];
            sc->param_count += ln->params;
            sc->expert_param_count += ln->expert_params;
            adapter_params += kinds[mx][arch_layer_ffn(a, layer)][CM_F].adapter_params;
            sc->fwd_flops += ln->fwd_flops / model_share;
            sc->moe_layers += is_moe;
        }
        sc->full_keep_bytes = nl * hidden;
        sc->layer_act_b_bytes = max_layer_b;
        sc->layer_act_w_bytes = max_layer_w;
        sc->boundary_bytes = HALF_BYTES * d.n;
        sc->tp_coll_bytes = sc->boundary_bytes;
        sc->workspace_bytes = layer_ws;
        if (sc->moe_layers > 0) {
            sc->a2a_bytes = arch_a2a_bytes(a, &r);
            sc->a2a_compute_s = a2a_compute_s;
        }
        sc->cp_kv_bytes = arch_cp_kv_bytes(a, &r);
        if (s == nstages - 1)
            for (int op = CM_F; op < CM_OPS; op++)
                queue_append(&q[op], &head[op], sync);
        if (s == nstages - 1 && a->mtp_layers > 0) {
            const op_cost *mtp_layer = kinds[arch_layer_mixer(a, a->layers - 1)][arch_layer_ffn(a, a->layers - 1)];
            add_mtp(g, m, &d, &r, mode, mtp_layer, head, sync, model_share, q, sc);
            adapter_params += a->mtp_layers * mtp_layer[CM_F].adapter_params;
        }
        for (int op = CM_B; op < CM_OPS; op++) {   /* the gradients run the layers backwards */
            for (int l = layer - 1; l >= first_layer; l--)
                queue_append(&q[op], &kinds[arch_layer_mixer(a, l)][arch_layer_ffn(a, l)][op], sync);
            if (s == 0)
                queue_append(&q[op], &emb[op], sync);
        }
        sc->f_s = q[CM_F].gpu_s - q[CM_F].sim_coll_s;
        sc->b_s = q[CM_B].gpu_s - q[CM_B].sim_coll_s;
        sc->w_s = q[CM_W].gpu_s - q[CM_W].sim_coll_s;
        sc->f_tp_coll_s = q[CM_F].sim_coll_s;
        add_op_overhead(sc, g);
        if (s == 0) {
            sc->act_b_bytes += arch_embedding_act_bytes(a, &r);   /* embedding dropout mask */
            sc->param_count += arch_embedding_params_gpu(a, &r);
        }
        if (s == nstages - 1) {
            /* kept for B: the final norm's input, the fp32 softmax; for W: norm output + logits gradient */
            sc->act_b_bytes += HALF_BYTES * d.n + FLOAT_BYTES * d.c;
            sc->act_w_bytes += HALF_BYTES * d.n + HALF_BYTES * d.c;
            sc->param_count += arch_head_params_gpu(a, &r);
            if (nstages > 1 && a->tied_embeddings) {    /* the tied word embedding is held again */
                sc->param_count += d.V * d.h / d.t;
                w->tied_embedding_params = d.V * d.h / d.t;
            }
            sc->fwd_flops += arch_head_fwd_flops(a, &r) / model_share;
            if (head_ws > sc->workspace_bytes)
                sc->workspace_bytes = head_ws;
        }
        if (m->lora_rank > 0) {   /* every weight counted so far is frozen; the adapters are trained */
            sc->frozen_param_count = sc->param_count;
            sc->param_count += adapter_params;
        }
    }
    free(stage_layers);
    return 0;
}

int costmodel_gpu_type(const experiment *e, char *type, size_t len, pg_status *st)
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

#define NOT_MEASURED_PREFIX "not measured"

gpu_param_basis gpu_param_basis_of(const gpu_params *g, gpu_param_id id)
{
    if (!gpu_param_measured(id))
        return GPB_DATASHEET;
    if (strncmp(g->source[id], NOT_MEASURED_PREFIX, strlen(NOT_MEASURED_PREFIX)) == 0)
        return GPB_BORROWED;
    return GPB_FITTED;
}

/* Appends to out[len] as far as it fits (snprintf semantics, never past len). */
/* Groups of parameters of one basis and one source, in parameter order,
 * each source said once: "datasheet a b; fitted c d (SOURCE); borrowed e
 * (SOURCE)".  Datasheet sources are long citations and stay in the file. */
void gpu_params_describe(const gpu_params *g, char *out, size_t len)
{
    static const char *const WORD[] = {"datasheet", "fitted", "borrowed, NOT measured on this GPU type:"};
    size_t used = 0;
    int done[GP_COUNT] = {0};
    if (len == 0)
        return;
    out[0] = '\0';
    append(out, len, &used, "%s:", g->name);
    const char *sep = " ";
    for (int basis = GPB_DATASHEET; basis <= GPB_BORROWED; basis++)
        for (int i = 0; i < GP_COUNT; i++) {
            if (done[i] || g->source[i][0] == '\0' || gpu_param_basis_of(g, (gpu_param_id)i) != (gpu_param_basis)basis)
                continue;
            append(out, len, &used, "%s%s", sep, WORD[basis]);
            for (int j = i; j < GP_COUNT; j++)
                if (!done[j] && gpu_param_basis_of(g, (gpu_param_id)j) == (gpu_param_basis)basis &&
                    (basis == GPB_DATASHEET || strcmp(g->source[j], g->source[i]) == 0)) {
                    append(out, len, &used, " %s", gpu_param_name((gpu_param_id)j));
                    done[j] = 1;
                }
            if (basis != GPB_DATASHEET)
                append(out, len, &used, " (%s)", g->source[i]);
            sep = "; ";
        }
    append(out, len, &used, "; the host waits for the GPU at %s (kernel_queue: %s)",
           g->host_waits_each_layer ? "every layer's end" : "each op's end only", g->kernel_queue_source);
}

/* Borrowed parameters are named in the short line up to this many (they are
 * the ones a reader must know about); beyond, the count alone. */
#define SUMMARY_NAMED_BORROWED_MAX 3

#define PROFILE_DIR_TEXT "profiles/gpus/"
#define PROFILE_EXT_TEXT ".yaml"

/* The GPU type g's borrowed parameters come from, when their sources all
 * name one profile (tools/borrow_fit.py writes "assumed equal to the TYPE
 * fit (profiles/gpus/TYPE.yaml)"); "" otherwise. */
static void borrowed_from(const gpu_params *g, char *type, size_t len)
{
    type[0] = '\0';
    for (int i = 0; i < GP_COUNT; i++) {
        if (gpu_param_basis_of(g, (gpu_param_id)i) != GPB_BORROWED)
            continue;
        const char *at = strstr(g->source[i], PROFILE_DIR_TEXT), *end = at ? strstr(at, PROFILE_EXT_TEXT) : NULL;
        char here[sizeof g->name];
        if (!end || end - at - strlen(PROFILE_DIR_TEXT) >= sizeof here) {
            type[0] = '\0';
            return;
        }
        snprintf(here, sizeof here, "%.*s", (int)(end - at - strlen(PROFILE_DIR_TEXT)), at + strlen(PROFILE_DIR_TEXT));
        if (type[0] && strcmp(type, here) != 0) {
            type[0] = '\0';
            return;
        }
        snprintf(type, len, "%s", here);
    }
}

void gpu_params_summarize(const gpu_params *g, char *out, size_t len)
{
    static const char *const WORD[] = {"from the datasheet", "fitted on it", "borrowed, NOT measured on"};
    int count[GPB_BORROWED + 1] = {0};
    size_t used = 0;
    if (len == 0)
        return;
    out[0] = '\0';
    for (int i = 0; i < GP_COUNT; i++)
        if (g->source[i][0] != '\0')   /* an optional parameter the file lacks is no parameter of it */
            count[gpu_param_basis_of(g, (gpu_param_id)i)]++;
    append(out, len, &used, "%s:", g->name);
    const char *sep = " ";
    for (int basis = GPB_DATASHEET; basis <= GPB_BORROWED; basis++) {
        if (count[basis] == 0)
            continue;
        char donor[sizeof g->name] = "";
        if (basis == GPB_BORROWED)
            borrowed_from(g, donor, sizeof donor);
        if (donor[0])   /* what the numbers rest on: another type's fit */
            append(out, len, &used, "%s%d borrowed from the %s fit, NOT measured on", sep, count[basis], donor);
        else
            append(out, len, &used, "%s%d %s%s", sep, count[basis], basis == GPB_DATASHEET ? "parameters " : "",
                   WORD[basis]);
        sep = ", ";
        if (basis != GPB_BORROWED)
            continue;
        append(out, len, &used, " %s", g->name);
        if (count[basis] > SUMMARY_NAMED_BORROWED_MAX)
            continue;
        const char *lead = " (";
        for (int i = 0; i < GP_COUNT; i++)
            if (g->source[i][0] != '\0' && gpu_param_basis_of(g, (gpu_param_id)i) == GPB_BORROWED) {
                append(out, len, &used, "%s%s", lead, gpu_param_name((gpu_param_id)i));
                lead = " ";
            }
        append(out, len, &used, ")");
    }
}

/* Appended to the cost model's description: whether the job's layer runs
 * at a measured profile, and on what it was measured. */
static void describe_layer_profile(const gpu_params *g, const workload *w, int analytic, char *out, size_t len)
{
    size_t used = strlen(out);
    if (analytic)
        append(out, len, &used, "; every layer at the analytic time (layer_profiles=analytic)");
    else if (w->layer_profile_factor > 0)
        append(out, len, &used, "; the layer's kernels at its measured profile, x%.4f the analytic time (%d measured "
               "jobs of this shape: %s)", w->layer_profile_factor, w->layer_profile_rows, g->layer_profiles_source);
    else if (g->nlayer_profiles > 0)
        append(out, len, &used, "; the layer at the analytic time (%d measured layer profiles, none of this shape)",
               g->nlayer_profiles);
}

int costmodel_build(const experiment *e, int nstages, workload *w, pg_status *st)
{
    memset(w, 0, sizeof *w);
    char type[sizeof e->cluster_gpu];
    int rc = costmodel_gpu_type(e, type, sizeof type, st);
    if (rc)
        return rc;
    gpu_params g;
    if ((rc = gpu_params_load(type, &g, st)) != 0)
        return rc;
    if (e->host_waits != HOST_WAITS_PROFILE) {
        g.host_waits_each_layer = e->host_waits == HOST_WAITS_LAYER;
        snprintf(g.kernel_queue_source, sizeof g.kernel_queue_source, "set by kernel_queue.host_waits=%s",
                 e->host_waits == HOST_WAITS_LAYER ? "layer" : "op");
    }
    if (e->layer_profiles_analytic)
        g.nlayer_profiles = 0;
    /* The tensor-parallel collectives the cost model times (in the kernel
     * queue, where the simulated ones also sit uncontended: op_cost) run at
     * the rate of the platform's links, across nodes when tp spans them. */
    double nvlink_bw, nic_bw;
    if (e->network == NET_CLUSTER && g.v[GP_COLL_BW_EFF] > 0 && platform_cluster_gpu_bandwidths(e, &nvlink_bw, &nic_bw))
        g.v[GP_NVLINK_BW] =
            costmodel_ring_bw(nvlink_bw, nic_bw, platform_cluster_domain_gpus(e), e->tp, 1) / g.v[GP_COLL_BW_EFF];
    arch model;
    int have_arch = 0;
    if (e->workload == WL_HF) {
        if ((rc = hfconfig_load(e->profile_path, &model, st)) != 0)
            return rc;
        have_arch = 1;
    }
    gpt_shape m = {
        .layers = e->gpt_layers, .hidden = e->gpt_hidden, .heads = e->gpt_heads, .seq = e->gpt_seq,
        .vocab = e->gpt_vocab, .micro_batch = e->micro_batch_size, .tp = e->tp > 0 ? e->tp : 1,
        .tp_comm_simulated = e->network != NET_IDEAL && !e->tp_comm_overlap,
        .tp_comm_overlap = e->tp_comm_overlap,
        .arch = have_arch ? &model : NULL,
        .cp = e->cp, .ep = e->ep, .expert_tp1 = experiment_expert_tp1(e), .sequence_parallel = e->tp_sequence_parallel,
        .flash = e->attention == ATTENTION_FLASH, .doc_len = e->gpt_doc_len, .fp8 = (int)e->precision,
        .capacity_factor = e->moe_capacity_factor, .moe_probs_on_outputs = e->moe_probs_on_outputs,
        .recompute_lgd = e->recompute == RECOMPUTE_LGD, .recompute_modules = (unsigned)e->recompute_modules,
        .main_grad_bytes = experiment_grad_bytes(e),
        .first_fixed = e->stage_first_layers != STAGE_LAYERS_EVEN, .first_layers = e->stage_first_layers,
        .last_fixed = e->stage_last_layers != STAGE_LAYERS_EVEN, .last_layers = e->stage_last_layers,
        .lora_rank = e->lora_rank, .lora_qkv_only = e->lora_targets == LORA_TARGETS_QKV,
    };
    rc = costmodel_build_shape(&g, &m, nstages, w, st);
    if (rc == 0) {
        w->iter_overhead_s = g.v[GP_ITER_OVERHEAD_S];
        gpu_params_describe(&g, w->cost_basis, sizeof w->cost_basis);
        describe_layer_profile(&g, w, e->layer_profiles_analytic, w->cost_basis, sizeof w->cost_basis);
        gpu_params_summarize(&g, w->cost_summary, sizeof w->cost_summary);
        size_t used = strlen(w->cost_summary);
        if (e->layer_profiles_analytic)
            append(w->cost_summary, sizeof w->cost_summary, &used, "; layers analytic");
        else if (w->layer_profile_factor > 0)
            append(w->cost_summary, sizeof w->cost_summary, &used, "; layer profile x%.4f (%d measured jobs)",
                   w->layer_profile_factor, w->layer_profile_rows);
        else if (g.nlayer_profiles > 0)
            append(w->cost_summary, sizeof w->cost_summary, &used, "; no layer profile of this shape");
    }
    return rc;
}
