/* test_hfconfig.c: the Hugging Face config.json reader (model/hfconfig.h)
 * and the shipped models of profiles/models/: published parameter counts,
 * GQA shapes, FLOPs against closed forms, every bad input's message, and
 * robustness against truncated and corrupted files. */
#include <stdint.h>

#include "model/hfconfig.h"
#include "testutil.h"
#include "util/datapath.h"

/* Published counts are rounded; 1 % separates a right model from a wrong
 * one (a missing bias or norm is far below it, a wrong width far above). */
#define PUBLISHED_REL_TOL 0.01
/* FLOPs closed forms are exact sums of products: only rounding remains. */
#define FLOPS_REL_TOL 1e-12
#define BILLION 1e9
#define PATH_LEN 4096

static void load_model(const char *file, arch *a)
{
    char path[PATH_LEN], rel[PATH_LEN];
    snprintf(rel, sizeof rel, "profiles/models/%s", file);
    ck_assert_msg(datapath_find(rel, path, sizeof path) == 0, "%s not found", rel);
    pg_status st;
    pg_status_clear(&st);
    int rc = hfconfig_load(path, a, &st);
    ck_assert_msg(rc == 0, "%s: %s", file, st.msg);
}

/* ------------------------------------------------------------ shipped models */

/* Published totals and, for MoE, active counts (0: dense, active = total),
 * and the tolerance on the total: PUBLISHED_REL_TOL unless the card counts
 * something a text config.json does not hold (named at the row).
 * Sources: profiles/models/README.md. */
#define MULTIMODAL_REL_TOL 0.015
/* Llama 4's card gives "17B" active: to the whole billion. */
#define HALF_BILLION (0.5 * BILLION)
#define WHOLE_BILLIONS_FROM (10 * BILLION)
static const struct {
    const char *file, *name;
    double total, active, tol;
} MODELS[] = {
    {"llama2-7b.json", "llama2-7b", 6.74 * BILLION, 0, PUBLISHED_REL_TOL},
    {"llama2-70b.json", "llama2-70b", 68.98 * BILLION, 0, PUBLISHED_REL_TOL},
    {"llama3-8b.json", "llama3-8b", 8.03 * BILLION, 0, PUBLISHED_REL_TOL},
    {"llama3-70b.json", "llama3-70b", 70.55 * BILLION, 0, PUBLISHED_REL_TOL},
    {"llama3.1-405b.json", "llama3.1-405b", 405.85 * BILLION, 0, PUBLISHED_REL_TOL},
    {"mixtral-8x7b.json", "mixtral-8x7b", 46.70 * BILLION, 12.88 * BILLION, PUBLISHED_REL_TOL},
    {"qwen-moe-a2.7b.json", "qwen-moe-a2.7b", 14.3 * BILLION, 2.7 * BILLION, PUBLISHED_REL_TOL},
    {"deepseek-v3.json", "deepseek-v3", 671 * BILLION, 0 /* its own convention: deepseek_v3_active */,
     PUBLISHED_REL_TOL},
    {"gpt3-175b.json", "gpt3-175b", 175 * BILLION, 0, PUBLISHED_REL_TOL},
    /* GPT-OSS model card (arXiv 2508.10925, Table 1): active without the input embedding, hf_card_active */
    {"gpt-oss-120b.json", "gpt-oss-120b", 116.83 * BILLION, 0, PUBLISHED_REL_TOL},
    {"gpt-oss-20b.json", "gpt-oss-20b", 20.91 * BILLION, 0, PUBLISHED_REL_TOL},
    /* Meta's Llama 4 model card: 109B / 400B total, 17B active, of the multimodal model; the text
     * config leaves out the vision encoder and projector (about 1B), so Scout's text part is 1.1 %
     * under its card's total; "17B" active is given to the whole billion (so +-0.5B) */
    {"llama4-scout.json", "llama4-scout", 109 * BILLION, 17 * BILLION, MULTIMODAL_REL_TOL},
    {"llama4-maverick.json", "llama4-maverick", 400 * BILLION, 17 * BILLION, PUBLISHED_REL_TOL},
    /* Nemotron-H paper (arXiv 2504.03624): 56B */
    {"nemotron-h-56b.json", "nemotron-h-56b", 56 * BILLION, 0, PUBLISHED_REL_TOL},
    /* Kimi K2 technical report (arXiv 2507.20534): 1.04T total, 32.6B active (hf_card_active); the
     * config's count is 1.026T, 1.3 % under: the report does not say what else it counts; its active
     * count has both tables, like Mixtral's */
    {"kimi-k2.json", "kimi-k2", 1040 * BILLION, 32.6 * BILLION, MULTIMODAL_REL_TOL},
    /* NVIDIA's Nemotron 3 Nano model card: 31.6B total, 3.2B active without the input embedding
     * (hf_card_active) */
    {"nemotron3-nano.json", "nemotron3-nano", 31.6 * BILLION, 0, PUBLISHED_REL_TOL},
};
#define NMODELS (sizeof MODELS / sizeof MODELS[0])

START_TEST(hf_models_load_and_match_published_counts)
{
    for (size_t i = 0; i < NMODELS; i++) {
        arch a;
        load_model(MODELS[i].file, &a);
        ck_assert_str_eq(a.name, MODELS[i].name);
        double total = arch_params_total(&a), active = arch_params_active(&a);
        ck_assert_msg(fabs(total / MODELS[i].total - 1) <= MODELS[i].tol, "%s: %.4gB total, published %.4gB",
                      MODELS[i].file, total / BILLION, MODELS[i].total / BILLION);
        /* a count published to the whole billion is known to half of one */
        double active_tol = MODELS[i].active >= WHOLE_BILLIONS_FROM && fmod(MODELS[i].active, BILLION) == 0
                                ? HALF_BILLION / MODELS[i].active
                                : PUBLISHED_REL_TOL;
        if (active_tol < PUBLISHED_REL_TOL)
            active_tol = PUBLISHED_REL_TOL;
        if (MODELS[i].active > 0)
            ck_assert_msg(fabs(active / MODELS[i].active - 1) <= active_tol,
                          "%s: %.4gB active, published %.4gB", MODELS[i].file, active / BILLION,
                          MODELS[i].active / BILLION);
        else if (a.moe.experts == 0)
            ck_assert_exact(active, total);
    }
}
END_TEST

/* DeepSeek's "37B activated" is 36.6B in its weight notes, counting the
 * output head but not the input embedding (a table lookup, no FLOPs);
 * arch_params_active counts both tables, like Mixtral's and Qwen's cards. */
START_TEST(hf_deepseek_v3_active)
{
    arch a;
    load_model("deepseek-v3.json", &a);
    double published = 36.6 * BILLION;
    double input_embedding = (double)a.vocab * a.hidden;
    ck_assert_msg(fabs((arch_params_active(&a) - input_embedding) / published - 1) <= PUBLISHED_REL_TOL,
                  "%.4gB", (arch_params_active(&a) - input_embedding) / BILLION);
    ck_assert_int_eq(a.attn, ARCH_ATTN_MLA);
    ck_assert_int_eq(a.moe.shared_ffn, 2048);   /* one shared expert of moe_intermediate_size */
    ck_assert_int_eq(a.moe.dense_layers, 3);
    ck_assert_int_eq(a.mla.q_lora_rank, 1536);
}
END_TEST

/* Cards that count active parameters without the input embedding (a
 * lookup): GPT-OSS 5.13B / 3.61B.  DeepSeek-V3's checkpoint
 * of 685B is the main model, its MTP module's own 11.6B and the module's
 * copies of the embedding and LM head. */
START_TEST(hf_card_active)
{
    static const struct { const char *file; double active; } CARDS[] = {
        {"gpt-oss-120b.json", 5.13 * BILLION}, {"gpt-oss-20b.json", 3.61 * BILLION},
        {"nemotron3-nano.json", 3.2 * BILLION}};
    for (size_t i = 0; i < sizeof CARDS / sizeof CARDS[0]; i++) {
        arch a;
        load_model(CARDS[i].file, &a);
        double active = arch_params_active(&a) - (double)a.vocab * a.hidden;
        ck_assert_msg(fabs(active / CARDS[i].active - 1) <= PUBLISHED_REL_TOL, "%s: %.4gB", CARDS[i].file,
                      active / BILLION);
    }
    arch d;
    load_model("deepseek-v3.json", &d);
    ck_assert_int_eq(d.mtp_layers, 1);
    double checkpoint = arch_params_total(&d) + arch_params_mtp(&d) + 2.0 * d.vocab * d.hidden;
    ck_assert_msg(fabs(checkpoint / (685 * BILLION) - 1) <= PUBLISHED_REL_TOL, "%.4gB", checkpoint / BILLION);
}
END_TEST

/* Megatron's recompute modules on DeepSeek-V3 (arch.h arch_recompute_module),
 * by hand: s 4096, b 1, tp 1, ep 8, flash, bf16 (T = 4096 tokens).  Its MLA
 * has 128 heads of 128 + 64 (query and key) and 128 (value) dims; layer 0
 * is dense (FFN 18432, SwiGLU), layer 3 MoE (top 8 of experts of 2048). */
START_TEST(hf_deepseek_v3_recompute_modules)
{
    arch a;
    load_model("deepseek-v3.json", &a);
    arch_run r = {.seq = 4096, .micro_batch = 1, .tp = 1, .cp = 1, .ep = 8, .flash = 1};
    double T = 4096, h = 7168, bf16 = 2;
    double up_proj = bf16 * T * (128 * 192 + 128 * 192 + 128 * 128);   /* queries, keys, values */
    double moe_act = bf16 * T * 8 * 2048;                              /* the experts' FC2 inputs */
    double norm_out = bf16 * T * h;                                     /* one norm's output */
    double mlp = norm_out + bf16 * T * 2 * 18432 + bf16 * T * 18432;   /* norm, FC1 output, FC2 input */
    ck_assert_exact(arch_layer_selective_bytes(&a, &r, 3, ARCH_RC_MLA_UP_PROJ), up_proj);
    ck_assert_exact(arch_layer_selective_bytes(&a, &r, 3, ARCH_RC_MOE_ACT), moe_act);
    ck_assert_exact(arch_layer_selective_bytes(&a, &r, 0, ARCH_RC_MOE_ACT), 0);
    ck_assert_exact(arch_layer_selective_bytes(&a, &r, 3, ARCH_RC_LAYERNORM), 2 * norm_out);   /* MLA's and MoE's */
    ck_assert_exact(arch_layer_selective_bytes(&a, &r, 0, ARCH_RC_LAYERNORM), norm_out);       /* fused into FC1 */
    ck_assert_exact(arch_layer_selective_bytes(&a, &r, 0, ARCH_RC_MLP), mlp);
    ck_assert_exact(arch_layer_selective_bytes(&a, &r, 3, ARCH_RC_MLP), 0);
    ck_assert_exact(arch_layer_selective_bytes(&a, &r, 3, ARCH_RC_CORE_ATTN), 0);               /* flash */
    /* moe: the layer from its input: the fp32 router probabilities (256 experts), the permuted tokens and
     * the routed experts' FC1 outputs and FC2 inputs, the shared expert's (2048 wide) likewise; moe_act's
     * bytes among them */
    double routed = T * 8, moe = 4 * T * 256 + bf16 * routed * h + bf16 * routed * 2 * 2048 + bf16 * routed * 2048 +
                                 bf16 * T * 2 * 2048 + bf16 * T * 2048;
    ck_assert_exact(arch_layer_selective_bytes(&a, &r, 3, ARCH_RC_MOE), moe);
    ck_assert_exact(arch_layer_selective_bytes(&a, &r, 3, ARCH_RC_MOE | ARCH_RC_MOE_ACT), moe);
    ck_assert_exact(arch_layer_selective_bytes(&a, &r, 0, ARCH_RC_MOE), 0);
    unsigned all = ARCH_RC_MLA_UP_PROJ | ARCH_RC_MOE_ACT | ARCH_RC_LAYERNORM | ARCH_RC_CORE_ATTN;
    ck_assert_exact(arch_layer_selective_bytes(&a, &r, 3, all), up_proj + moe_act + 2 * norm_out);
    ck_assert(arch_layer_selective_bytes(&a, &r, 3, all) < arch_layer_act_bytes(&a, &r, 3, ARCH_ACT_NONE));
}
END_TEST

START_TEST(hf_llama3_8b_gqa_shapes)
{
    arch a;
    load_model("llama3-8b.json", &a);
    ck_assert_int_eq(a.kv_heads, 8);
    ck_assert_int_eq(a.head_dim, 128);
    ck_assert_int_eq(a.mlp, ARCH_MLP_SWIGLU);
    ck_assert_int_eq(a.norm, ARCH_NORM_RMSNORM);
    ck_assert_int_eq(a.tied_embeddings, 0);
    ck_assert_int_eq(a.learned_positions, 0);
    /* q and o: 4096 x 4096; k and v: 4096 x 1024 each (8 heads of 128) */
    double h = 4096, kv = 1024;
    ck_assert_exact(arch_params_attention(&a), 2 * h * h + 2 * h * kv);
    ck_assert_exact(arch_params_mlp(&a, 0), 3 * h * 14336);
}
END_TEST

/* The GPT-3 file is exactly the arch of the gpt.* keys (arch_gpt). */
START_TEST(hf_gpt3_equals_arch_gpt)
{
    arch a, g;
    load_model("gpt3-175b.json", &a);
    arch_gpt(&g, 96, 12288, 96, 2048, 50257);
    ck_assert_int_eq(a.layers, g.layers);
    ck_assert_int_eq(a.hidden, g.hidden);
    ck_assert_int_eq(a.heads, g.heads);
    ck_assert_int_eq(a.kv_heads, g.kv_heads);
    ck_assert_int_eq(a.head_dim, g.head_dim);
    ck_assert_int_eq(a.ffn, g.ffn);
    ck_assert_int_eq(a.vocab, g.vocab);
    ck_assert_int_eq(a.mlp, g.mlp);
    ck_assert_int_eq(a.norm, g.norm);
    ck_assert_int_eq(a.attn, g.attn);
    ck_assert_int_eq(a.tied_embeddings, g.tied_embeddings);
    ck_assert_int_eq(a.learned_positions, g.learned_positions);
    ck_assert_int_eq(a.max_positions, g.max_positions);
    ck_assert_int_eq(a.linear_bias, g.linear_bias);
    ck_assert_int_eq(a.qkv_bias, g.qkv_bias);
    ck_assert_int_eq(a.dropout, g.dropout);
    ck_assert_int_eq(a.moe.experts, 0);
    ck_assert_exact(arch_params_total(&a), arch_params_total(&g));
}
END_TEST

START_TEST(hf_gpt_layer_flops_closed_form)
{
    arch a;
    load_model("gpt3-175b.json", &a);
    const int shapes[][2] = {{2048, 1}, {1024, 4}};   /* s, b */
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        arch_run r = {.seq = shapes[i][0], .micro_batch = shapes[i][1], .tp = 1, .cp = 1, .ep = 1};
        double s = r.seq, b = r.micro_batch, h = a.hidden;
        ck_assert_rel(arch_layer_fwd_flops(&a, &r, 0), 24 * b * s * h * h + 4 * b * s * s * h, FLOPS_REL_TOL);
    }
}
END_TEST

START_TEST(hf_llama3_8b_layer_flops_by_hand)
{
    arch a;
    load_model("llama3-8b.json", &a);
    arch_run r = {.seq = 8192, .micro_batch = 2, .tp = 1, .cp = 1, .ep = 1, .flash = 1};
    double tokens = 8192.0 * 2, h = 4096, kv = 1024, ffn = 14336;
    double weights = h * h /* q */ + 2 * h * kv /* k, v */ + h * h /* o */ + 3 * h * ffn /* gate, up, down */;
    /* QK^T and AV: 2 b s^2 (heads x head_dim) each */
    double attention = 2 * 2 * (2.0 * 8192 * 8192) * h;
    ck_assert_rel(arch_layer_fwd_flops(&a, &r, 0), 2 * tokens * weights + attention, FLOPS_REL_TOL);
}
END_TEST

/* ---- the layers of 2026's models, FLOPs and parameters by hand ---- */

#define TRAIN_SEQ 4096.0

/* GPT-OSS-120B: sliding (128 keys) and full attention in turn, every
 * layer's MLP 128 experts of 2880, top 4, with biases. */
START_TEST(hf_gpt_oss_sliding_window_flops)
{
    arch a;
    load_model("gpt-oss-120b.json", &a);
    ck_assert_int_eq(a.sliding_window, 128);
    ck_assert_int_eq(arch_layer_mixer(&a, 0), ARCH_MIX_SWA);
    ck_assert_int_eq(arch_layer_mixer(&a, 1), ARCH_MIX_ATTN);
    ck_assert_int_eq(arch_layer_mixer(&a, 35), ARCH_MIX_ATTN);
    ck_assert_int_eq(a.attn_sinks, 1);
    arch_run r = {.seq = (int)TRAIN_SEQ, .micro_batch = 1, .tp = 1, .cp = 1, .ep = 1, .flash = 1};
    double h = 2880, q = 64 * 64, kv = 8 * 64, f = 2880, s = TRAIN_SEQ, w = 128;
    double weights = h * (q + 2 * kv) + q * h + h * 128 /* router */ + 4 * 3 * h * f;
    double linear = 2 * s * weights;
    ck_assert_rel(arch_layer_fwd_flops(&a, &r, 0), linear + 2 * s * w * (q + q), FLOPS_REL_TOL);
    ck_assert_rel(arch_layer_fwd_flops(&a, &r, 1), linear + 2 * s * s * (q + q), FLOPS_REL_TOL);
    /* a window longer than the sequence is the full layer */
    r.seq = 64;
    ck_assert_rel(arch_layer_fwd_flops(&a, &r, 0), arch_layer_fwd_flops(&a, &r, 1), FLOPS_REL_TOL);
    /* legacy attention stores the window's scores, not the sequence's */
    r.seq = (int)TRAIN_SEQ;
    r.flash = 0;
    ck_assert_rel(arch_layer_attn_core_bytes(&a, &r, 0) * s, arch_layer_attn_core_bytes(&a, &r, 1) * w,
                  FLOPS_REL_TOL);
    /* parameters of one layer: q, k, v, o with biases, 64 sinks, 128 experts with biases, router, 2 norms */
    double attn = h * (q + 2 * kv) + q * h + (q + 2 * kv) + h + 64;
    double experts = 128 * (3 * h * f + 2 * f + h) + h * 128;
    ck_assert_rel(arch_params_layer(&a, 0), attn + experts + 2 * h, FLOPS_REL_TOL);
}
END_TEST

/* Nemotron-H-56B: M (Mamba-2), - (MLP) and * (attention) layers of one
 * norm each.  Mamba: 256 heads of 64, state 256, 8 groups, conv 4, chunks
 * of 128. */
START_TEST(hf_nemotron_h_mamba_flops)
{
    arch a;
    load_model("nemotron-h-56b.json", &a);
    ck_assert_int_eq(arch_layer_mixer(&a, 0), ARCH_MIX_MAMBA);
    ck_assert_int_eq(arch_layer_ffn(&a, 0), ARCH_FFN_NONE);
    ck_assert_int_eq(arch_layer_mixer(&a, 1), ARCH_MIX_NONE);
    ck_assert_int_eq(arch_layer_ffn(&a, 1), ARCH_FFN_DENSE);
    ck_assert_int_eq(arch_layer_mixer(&a, 7), ARCH_MIX_ATTN);
    ck_assert_int_eq(arch_layer_ffn(&a, 7), ARCH_FFN_NONE);
    int counts[ARCH_MIX_KINDS] = {0};
    for (int l = 0; l < a.layers; l++)
        counts[arch_layer_mixer(&a, l)]++;
    ck_assert_int_eq(counts[ARCH_MIX_ATTN], 10);
    ck_assert_int_eq(counts[ARCH_MIX_MAMBA], 54);
    ck_assert_int_eq(counts[ARCH_MIX_NONE], 54);
    arch_run r = {.seq = (int)TRAIN_SEQ, .micro_batch = 2, .tp = 1, .cp = 1, .ep = 1, .flash = 1};
    double h = 8192, s = TRAIN_SEQ, T = 2 * s;
    double inner = 256 * 64, in_w = 2 * inner + 2 * 8 * 256 + 256, conv_w = inner + 2 * 8 * 256;
    double scan_per_token = 8 * 128 * 256.0 /* C B^T */ + 256 * 128 * 64.0 /* (C B^T o L) x */ +
                            2 * 256 * 256 * 64.0 /* B^T x, C h */ + conv_w * 4 /* conv */;
    ck_assert_rel(arch_layer_fwd_flops(&a, &r, 0), 2 * T * (h * in_w + inner * h) + 2 * T * scan_per_token,
                  FLOPS_REL_TOL);
    ck_assert_rel(arch_layer_fwd_flops(&a, &r, 1), 2 * T * 2 * h * 32768, FLOPS_REL_TOL);   /* squared ReLU */
    double q = 64 * 128, kv = 8 * 128;
    ck_assert_rel(arch_layer_fwd_flops(&a, &r, 7), 2 * T * (h * (q + 2 * kv) + q * h) + 2 * 2 * s * s * (q + q),
                  FLOPS_REL_TOL);
    ck_assert_rel(arch_params_layer(&a, 0), h * in_w + inner * h + conv_w * 5 + 3 * 256 + inner + h, FLOPS_REL_TOL);
    ck_assert_rel(arch_params_layer(&a, 1), 2 * h * 32768 + h, FLOPS_REL_TOL);
    /* tensor parallelism splits the Mamba heads */
    arch_run r8 = r;
    r8.tp = 8;
    ck_assert_rel(arch_layer_params_gpu(&a, &r8, 0), arch_params_mamba(&a) / 8 + h, FLOPS_REL_TOL);
}
END_TEST

/* Nemotron-3 Nano: Mamba-2 (M), MoE (E) and attention (*) layers of one
 * norm each; the experts (128 of 1856, top 6) and the shared expert (3712)
 * are squared-ReLU MLPs of two matrices, routed by a linear router. */
START_TEST(hf_nemotron3_nano_hybrid_moe)
{
    arch a;
    load_model("nemotron3-nano.json", &a);
    int counts[ARCH_MIX_KINDS] = {0}, moe = 0;
    for (int l = 0; l < a.layers; l++) {
        counts[arch_layer_mixer(&a, l)]++;
        moe += arch_is_moe_layer(&a, l);
    }
    ck_assert_int_eq(counts[ARCH_MIX_MAMBA], 23);
    ck_assert_int_eq(counts[ARCH_MIX_ATTN], 6);
    ck_assert_int_eq(moe, 23);
    ck_assert_int_eq(arch_layer_mixer(&a, 1), ARCH_MIX_NONE);
    ck_assert_int_eq(arch_layer_ffn(&a, 1), ARCH_FFN_MOE);
    arch_run r = {.seq = (int)TRAIN_SEQ, .micro_batch = 1, .tp = 1, .cp = 1, .ep = 1, .flash = 1};
    double h = 2688, s = TRAIN_SEQ, expert = 2 * h * 1856, shared = 2 * h * 3712, router = h * 128;
    ck_assert_rel(arch_params_layer(&a, 1), 128 * expert + shared + router + h, FLOPS_REL_TOL);
    ck_assert_rel(arch_layer_fwd_flops(&a, &r, 1), 2 * s * (router + 6 * expert + shared), FLOPS_REL_TOL);
    double q = 32 * 128, kv = 2 * 128;
    ck_assert_rel(arch_params_layer(&a, 5), h * (q + 2 * kv) + q * h + h, FLOPS_REL_TOL);
}
END_TEST

/* Llama-4-Maverick: MoE on odd layers (interleave_moe_layer_step 2), 128
 * experts of 8192 top 1 and a shared expert of 8192; dense layers 16384. */
START_TEST(hf_llama4_alternating_moe_flops)
{
    arch a, sc;
    load_model("llama4-maverick.json", &a);
    load_model("llama4-scout.json", &sc);
    for (int l = 0; l < a.layers; l++)
        ck_assert_int_eq(arch_is_moe_layer(&a, l), l % 2 == 1);
    for (int l = 0; l < sc.layers; l++)
        ck_assert(arch_is_moe_layer(&sc, l));
    ck_assert_int_eq(a.moe.shared_ffn, 8192);
    arch_run r = {.seq = (int)TRAIN_SEQ, .micro_batch = 1, .tp = 1, .cp = 1, .ep = 1, .flash = 1};
    double h = 5120, q = 40 * 128, kv = 8 * 128, s = TRAIN_SEQ;
    double attn = h * (q + 2 * kv) + q * h, core = 2 * s * s * (q + q);
    ck_assert_rel(arch_layer_fwd_flops(&a, &r, 0), 2 * s * (attn + 3 * h * 16384) + core, FLOPS_REL_TOL);
    ck_assert_rel(arch_layer_fwd_flops(&a, &r, 1), 2 * s * (attn + h * 128 + 3 * h * 8192 + 3 * h * 8192) + core,
                  FLOPS_REL_TOL);
    ck_assert_rel(arch_params_layer(&a, 1), attn + h * 128 + 129 * 3 * h * 8192 + 2 * h, FLOPS_REL_TOL);
}
END_TEST

/* Qwen's decoder_sparse_step and mlp_only_layers in any order, DeepSeek's
 * moe_layer_freq: spelled per layer. */
START_TEST(hf_moe_layer_steps)
{
    const char *path = pg_write_file("qstep.json",
                                     "{\"model_type\": \"qwen2_moe\", \"hidden_size\": 256, \"num_hidden_layers\": 6,"
                                     " \"num_attention_heads\": 8, \"intermediate_size\": 688, \"vocab_size\": 1000,"
                                     " \"num_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 64,"
                                     " \"decoder_sparse_step\": 2, \"mlp_only_layers\": [3]}");
    arch a;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_msg(hfconfig_load(path, &a, &st) == 0, "%s", st.msg);
    ck_assert_str_eq(a.ffns, "DEDDDE");
    path = pg_write_file("dsfreq.json",
                         "{\"model_type\": \"deepseek_v3\", \"hidden_size\": 256, \"num_hidden_layers\": 6,"
                         " \"num_attention_heads\": 8, \"intermediate_size\": 688, \"vocab_size\": 1000,"
                         " \"n_routed_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 64,"
                         " \"first_k_dense_replace\": 1, \"moe_layer_freq\": 2}");
    ck_assert_msg(hfconfig_load(path, &a, &st) == 0, "%s", st.msg);
    ck_assert_str_eq(a.ffns, "DDEDED");
}
END_TEST

START_TEST(hf_moe_fields)
{
    arch m, q;
    load_model("mixtral-8x7b.json", &m);
    ck_assert_int_eq(m.moe.experts, 8);
    ck_assert_int_eq(m.moe.top_k, 2);
    ck_assert_int_eq(m.moe.expert_ffn, 14336);   /* Mixtral's expert size is intermediate_size */
    ck_assert_int_eq(m.moe.shared_ffn, 0);
    load_model("qwen-moe-a2.7b.json", &q);
    ck_assert_int_eq(q.moe.experts, 60);
    ck_assert_int_eq(q.moe.top_k, 4);
    ck_assert_int_eq(q.moe.expert_ffn, 1408);
    ck_assert_int_eq(q.moe.shared_ffn, 5632);
    ck_assert_int_eq(q.moe.shared_gate, 1);
    ck_assert_int_eq(q.qkv_bias, 1);
    ck_assert_int_eq(q.moe.dense_layers, 0);
}
END_TEST

/* ------------------------------------------------------------ bad inputs */

/* A small Llama; line 4 is hidden_size, line 5 num_hidden_layers. */
#define LLAMA_HEAD "{\n  \"model_type\": \"llama\",\n  \"hidden_act\": \"silu\",\n"
#define LLAMA_HIDDEN "  \"hidden_size\": 256,\n"
#define LLAMA_LAYERS "  \"num_hidden_layers\": 4,\n"
#define LLAMA_REST                                                                      \
    "  \"num_attention_heads\": 8,\n  \"num_key_value_heads\": 2,\n"                     \
    "  \"intermediate_size\": 688,\n  \"vocab_size\": 1000\n}\n"
#define LLAMA_OK LLAMA_HEAD LLAMA_HIDDEN LLAMA_LAYERS LLAMA_REST

/* Load text from a file; expect PG_EXIT_INPUT naming the file, the key (NULL:
 * none) and the line (0: none). */
static void expect_bad(const char *text, const char *key, int line, const char *words)
{
    const char *path = pg_write_file("bad.json", text);
    arch a;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(hfconfig_load(path, &a, &st), PG_EXIT_INPUT);
    ck_assert_int_eq(st.code, PG_EXIT_INPUT);
    char want[PATH_LEN];
    if (line > 0)
        snprintf(want, sizeof want, "%s:%d: ", path, line);
    else
        snprintf(want, sizeof want, "%s: ", path);
    ck_assert_msg(strncmp(st.msg, want, strlen(want)) == 0, "'%s' does not start with '%s'", st.msg, want);
    if (key) {
        snprintf(want, sizeof want, "key '%s': ", key);
        ck_assert_msg(strstr(st.msg, want) != NULL, "'%s' does not name %s", st.msg, want);
    }
    if (words)
        ck_assert_msg(strstr(st.msg, words) != NULL, "'%s' does not say '%s'", st.msg, words);
}

START_TEST(hf_good_small_llama)
{
    const char *path = pg_write_file("config.json", LLAMA_OK);
    arch a;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_msg(hfconfig_load(path, &a, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(a.head_dim, 32);
    ck_assert_int_eq(a.kv_heads, 2);
    /* DIR/config.json is named by its directory */
    ck_assert_str_eq(a.name, strrchr(pg_tmpdir(), '/') + 1);
}
END_TEST

START_TEST(hf_missing_file)
{
    char path[PATH_LEN];
    snprintf(path, sizeof path, "%s/absent.json", pg_tmpdir());
    arch a;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(hfconfig_load(path, &a, &st), PG_EXIT_INPUT);
    ck_assert_msg(strncmp(st.msg, path, strlen(path)) == 0, "%s", st.msg);
}
END_TEST

START_TEST(hf_malformed_json_line)
{
    /* line 5: a missing comma before it */
    expect_bad(LLAMA_HEAD "  \"hidden_size\": 256\n" LLAMA_LAYERS LLAMA_REST, NULL, 5, "malformed JSON");
}
END_TEST

START_TEST(hf_missing_hidden_size)
{
    expect_bad(LLAMA_HEAD LLAMA_LAYERS LLAMA_REST, "hidden_size", 0, "missing");
}
END_TEST

START_TEST(hf_string_for_int)
{
    expect_bad(LLAMA_HEAD "  \"hidden_size\": \"256\",\n" LLAMA_LAYERS LLAMA_REST, "hidden_size", 4, "a string");
    expect_bad(LLAMA_HEAD "  \"hidden_size\": 256.0,\n" LLAMA_LAYERS LLAMA_REST, "hidden_size", 4, "a real");
}
END_TEST

START_TEST(hf_kv_heads_not_dividing)
{
    expect_bad(LLAMA_HEAD LLAMA_HIDDEN LLAMA_LAYERS
               "  \"num_attention_heads\": 8,\n  \"num_key_value_heads\": 3,\n"
               "  \"intermediate_size\": 688,\n  \"vocab_size\": 1000\n}\n",
               "num_key_value_heads", 7, "do not divide");
}
END_TEST

START_TEST(hf_unknown_activation)
{
    expect_bad("{\n  \"model_type\": \"llama\",\n  \"hidden_act\": \"relu6\",\n" LLAMA_HIDDEN LLAMA_LAYERS LLAMA_REST,
               "hidden_act", 3, "relu6");
}
END_TEST

START_TEST(hf_negative_layers)
{
    expect_bad(LLAMA_HEAD LLAMA_HIDDEN "  \"num_hidden_layers\": -4,\n" LLAMA_REST, "num_hidden_layers", 5,
               "at least 1");
}
END_TEST

START_TEST(hf_absurd_and_unsupported)
{
    expect_bad(LLAMA_HEAD "  \"hidden_size\": 4294967296,\n" LLAMA_LAYERS LLAMA_REST, "hidden_size", 4,
               "larger than");
    expect_bad("[1, 2]", NULL, 0, "JSON object");
    expect_bad("{\"model_type\": \"gemma\"}", "model_type", 1, "GeGLU");
    /* a Qwen-MoE layout arch cannot express */
    expect_bad("{\n  \"model_type\": \"qwen2_moe\",\n" LLAMA_HIDDEN LLAMA_LAYERS
               "  \"num_attention_heads\": 8,\n  \"intermediate_size\": 688,\n  \"vocab_size\": 1000,\n"
               "  \"num_experts\": 4,\n  \"num_experts_per_tok\": 2,\n  \"moe_intermediate_size\": 64,\n"
               "  \"decoder_sparse_step\": 9\n}\n",
               "decoder_sparse_step", 11, "leaves none");
    expect_bad("{\n  \"model_type\": \"qwen2_moe\",\n" LLAMA_HIDDEN LLAMA_LAYERS
               "  \"num_attention_heads\": 8,\n  \"intermediate_size\": 688,\n  \"vocab_size\": 1000,\n"
               "  \"num_experts\": 4,\n  \"num_experts_per_tok\": 2,\n  \"moe_intermediate_size\": 64,\n"
               "  \"mlp_only_layers\": [1, 7]\n}\n",
               "mlp_only_layers", 11, "not a layer index");
    expect_bad("{\"hidden_size\": 256, \"hidden_size\": 512}", NULL, 1, "duplicate");
}
END_TEST

/* mlp_only_layers as a prefix is DeepSeek's dense first layers. */
START_TEST(hf_mlp_only_prefix)
{
    const char *path = pg_write_file("qmoe.json",
                                     "{\"model_type\": \"qwen2_moe\", \"hidden_size\": 256, \"num_hidden_layers\": 4,"
                                     " \"num_attention_heads\": 8, \"intermediate_size\": 688, \"vocab_size\": 1000,"
                                     " \"num_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 64,"
                                     " \"mlp_only_layers\": [0, 1]}");
    arch a;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_msg(hfconfig_load(path, &a, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(a.moe.dense_layers, 2);
    ck_assert_int_eq(a.moe.shared_ffn, 0);
    ck_assert_int_eq(a.moe.shared_gate, 0);   /* no shared expert, no gate */
    ck_assert_str_eq(a.name, "qmoe");
}
END_TEST

/* ------------------------------------------------------------ robustness */

#define ROBUST_LABEL "robust.json"
#define FLIPS_PER_FILE 400
#define FLIP_SEED 20240601u

static char *read_model_text(const char *file, size_t *len)
{
    char path[PATH_LEN], rel[PATH_LEN];
    snprintf(rel, sizeof rel, "profiles/models/%s", file);
    ck_assert_int_eq(datapath_find(rel, path, sizeof path), 0);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert_int_gt(n, 0);
    rewind(f);
    char *text = malloc((size_t)n);
    ck_assert_int_eq((long)fread(text, 1, (size_t)n, f), n);
    fclose(f);
    *len = (size_t)n;
    return text;
}

/* 0, or PG_EXIT_INPUT with the label in front; never anything else. */
static void expect_clean_outcome(const char *text, size_t len, const char *what, size_t at)
{
    arch a;
    pg_status st;
    pg_status_clear(&st);
    int rc = hfconfig_load_buffer(text, len, ROBUST_LABEL, &a, &st);
    ck_assert_msg(rc == 0 || rc == PG_EXIT_INPUT, "%s %zu: rc %d (%s)", what, at, rc, st.msg);
    if (rc != 0)
        ck_assert_msg(strncmp(st.msg, ROBUST_LABEL, strlen(ROBUST_LABEL)) == 0, "%s %zu: %s", what, at, st.msg);
}

/* A deterministic generator, so that a failure reproduces. */
static uint32_t next_random(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

START_TEST(hf_truncations_and_flips)
{
    const char *files[] = {"llama3-8b.json", "deepseek-v3.json", "gpt3-175b.json"};
    uint32_t rng = FLIP_SEED;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        size_t len;
        char *text = read_model_text(files[f], &len);
        for (size_t n = 0; n <= len; n++)
            expect_clean_outcome(text, n, "prefix of length", n);
        char *copy = malloc(len);
        for (int i = 0; i < FLIPS_PER_FILE; i++) {
            memcpy(copy, text, len);
            size_t at = next_random(&rng) % len;
            copy[at] = (char)(next_random(&rng) & 0xff);
            expect_clean_outcome(copy, len, "byte changed at", at);
        }
        free(copy);
        free(text);
    }
}
END_TEST


/* ------------------------------------------------------------ writing */

/* arch a written as a config.json and read back equals a but for its name
 * (and max_positions of rotary models, which nothing costs). */
static void assert_round_trip(const arch *a)
{
    strbuf sb;
    sb_init(&sb);
    hfconfig_write(a, &sb);
    arch back;
    pg_status st;
    pg_status_clear(&st);
    int rc = hfconfig_load_buffer(sb.data, sb.len, "written", &back, &st);
    ck_assert_msg(rc == 0, "%s: %s\n%s", a->name, st.msg, sb.data);
    arch want = *a;
    memcpy(want.name, back.name, sizeof want.name);
    if (!want.learned_positions)
        want.max_positions = back.max_positions;
    ck_assert_msg(memcmp(&want, &back, sizeof want) == 0, "%s does not read back equal:\n%s", a->name, sb.data);
    sb_free(&sb);
}

START_TEST(hf_write_round_trips)
{
    const char *files[] = {"llama2-7b.json", "llama3-70b.json", "mixtral-8x7b.json", "qwen-moe-a2.7b.json",
                           "deepseek-v3.json", "gpt3-175b.json", "pipeoffload-10.5b.json", "gpt-oss-120b.json",
                           "llama4-maverick.json", "nemotron-h-56b.json", "kimi-k2.json", "nemotron3-nano.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        arch a;
        load_model(files[i], &a);
        assert_round_trip(&a);
    }
    arch g;
    arch_gpt(&g, 24, 2048, 16, 2048, 51200);   /* learned positions, biases, dropout, LayerNorm */
    assert_round_trip(&g);
}
END_TEST

static Suite *hfconfig_suite(void)
{
    Suite *s = suite_create("hfconfig");
    TCase *tc = tcase_create("models");
    tcase_add_test(tc, hf_models_load_and_match_published_counts);
    tcase_add_test(tc, hf_deepseek_v3_active);
    tcase_add_test(tc, hf_card_active);
    tcase_add_test(tc, hf_deepseek_v3_recompute_modules);
    tcase_add_test(tc, hf_llama3_8b_gqa_shapes);
    tcase_add_test(tc, hf_gpt3_equals_arch_gpt);
    tcase_add_test(tc, hf_gpt_layer_flops_closed_form);
    tcase_add_test(tc, hf_llama3_8b_layer_flops_by_hand);
    tcase_add_test(tc, hf_moe_fields);
    tcase_add_test(tc, hf_gpt_oss_sliding_window_flops);
    tcase_add_test(tc, hf_nemotron_h_mamba_flops);
    tcase_add_test(tc, hf_llama4_alternating_moe_flops);
    tcase_add_test(tc, hf_nemotron3_nano_hybrid_moe);
    tcase_add_test(tc, hf_truncations_and_flips);
    tcase_add_test(tc, hf_write_round_trips);
    suite_add_tcase(s, tc);
    TCase *bad = tcase_create("inputs");
    tcase_add_checked_fixture(bad, pg_tmpdir_setup, pg_tmpdir_teardown);
    tcase_add_test(bad, hf_good_small_llama);
    tcase_add_test(bad, hf_missing_file);
    tcase_add_test(bad, hf_malformed_json_line);
    tcase_add_test(bad, hf_missing_hidden_size);
    tcase_add_test(bad, hf_string_for_int);
    tcase_add_test(bad, hf_kv_heads_not_dividing);
    tcase_add_test(bad, hf_unknown_activation);
    tcase_add_test(bad, hf_negative_layers);
    tcase_add_test(bad, hf_absurd_and_unsupported);
    tcase_add_test(bad, hf_mlp_only_prefix);
    tcase_add_test(bad, hf_moe_layer_steps);
    suite_add_tcase(s, bad);
    return s;
}

int main(void)
{
    return pg_run_suite(hfconfig_suite());
}
