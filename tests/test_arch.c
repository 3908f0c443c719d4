/* test_arch.c: the architecture description (model/arch.h) and the cost
 * model's stages built on it: Korthikanti et al.'s activation equations in
 * every recompute mode, GQA's key/value bytes and FLOPs, MoE all-to-all
 * bytes, Megatron's full recomputation (layer inputs kept, one layer at a
 * time), and the memory of profile-free modern models. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "model/arch.h"
#include "model/costmodel.h"
#include "model/memory.h"
#include "sim/actmem.h"
#include "testutil.h"

#define REL 1e-12

static void assert_rel(double got, double want, double rel)
{
    ck_assert_msg(fabs(got - want) <= rel * fabs(want), "got %.17g, want %.17g (rel %.3g)", got, want,
                  fabs(got - want) / fabs(want));
}

/* GPT-3 175B as Korthikanti et al. train it (Table 3): s 2048, h 12288, a 96. */
static arch gpt175(void)
{
    arch a;
    arch_gpt(&a, 96, 12288, 96, 2048, 51200);
    return a;
}

static arch_run run_of(int b, int t, int sp, int flash)
{
    return (arch_run){.seq = 2048, .micro_batch = b, .tp = t, .cp = 1, .ep = 1, .sequence_parallel = sp,
                      .flash = flash};
}

/* Korthikanti et al. 2022, Table 2: activation bytes per layer. */
START_TEST(korthikanti_table2_every_mode)
{
    arch a = gpt175();
    const int tps[] = {1, 2, 8};
    for (size_t i = 0; i < sizeof tps / sizeof tps[0]; i++) {
        double s = 2048, b = 1, h = 12288, heads = 96, t = tps[i];
        double sbh = s * b * h, score = 5 * heads * s / h;
        arch_run tp = run_of(1, tps[i], 0, 0), sp = run_of(1, tps[i], 1, 0);
        /* tensor parallel: sbh(10 + 24/t + 5as/(ht)) */
        assert_rel(arch_layer_act_bytes(&a, &tp, 0, ARCH_ACT_NONE), sbh * (10 + 24 / t + score / t), REL);
        /* + sequence parallel: sbh/t (34 + 5as/h) */
        assert_rel(arch_layer_act_bytes(&a, &sp, 0, ARCH_ACT_NONE), sbh / t * (34 + score), REL);
        /* + selective recomputation: sbh(10 + 24/t), and 34 sbh/t with sequence parallelism */
        assert_rel(arch_layer_act_bytes(&a, &tp, 0, ARCH_ACT_SELECTIVE), sbh * (10 + 24 / t), REL);
        assert_rel(arch_layer_act_bytes(&a, &sp, 0, ARCH_ACT_SELECTIVE), sbh * 34 / t, REL);
        /* full recomputation: the layer input, 2sbh (2sbh/t with sequence parallelism) */
        assert_rel(arch_layer_act_bytes(&a, &tp, 0, ARCH_ACT_FULL), 2 * sbh, REL);
        assert_rel(arch_layer_act_bytes(&a, &sp, 0, ARCH_ACT_FULL), 2 * sbh / t, REL);
        /* the zero-bubble split: W keeps sbh(8 + 24/t) */
        assert_rel(arch_layer_act_w_bytes(&a, &tp, 0, ARCH_ACT_NONE), sbh * (8 + 24 / t), REL);
    }
}
END_TEST

/* PipeOffload's LGD with flash attention keeps ~20 sbh per layer (t = 1):
 * 34 sbh less the two norm outputs (4), the GeLU output (8), the masks (2),
 * plus flash's fp32 softmax statistics. */
START_TEST(lgd_and_flash_bytes)
{
    arch a = gpt175();
    arch_run r = run_of(1, 1, 0, 1);
    double s = 2048, h = 12288, heads = 96, sbh = s * h;
    double stats = 4 * heads * s;
    assert_rel(arch_layer_act_bytes(&a, &r, 0, ARCH_ACT_NONE), 34 * sbh + stats, REL);
    assert_rel(arch_layer_act_bytes(&a, &r, 0, ARCH_ACT_LGD), 20 * sbh + stats, REL);
    /* flash stores no scores: selective recomputation frees nothing */
    ck_assert(arch_layer_attn_core_bytes(&a, &r, 0) == 0);
    /* LGD's weight gradients recompute the inputs they need: W never holds more than F stored */
    ck_assert(arch_layer_act_w_bytes(&a, &r, 0, ARCH_ACT_LGD) <= arch_layer_act_bytes(&a, &r, 0, ARCH_ACT_LGD));
}
END_TEST

/* A low-precision recipe keeps each GEMM's input quantized, one byte an
 * element (GPT-3 175B, t = 1, flash attention, 34 sbh + stats in bf16): the
 * two norm outputs 4 sbh -> 2, the GeLU output (FC2's input) 8 sbh -> 4, the
 * attention output 2 sbh kept by the kernel plus 1 sbh by the projection;
 * the weight gradients (8 + 24 sbh in bf16) keep no bf16 attention output. */
START_TEST(quantized_gemm_inputs)
{
    arch a = gpt175();
    arch_run r = run_of(1, 1, 0, 1), q = r;
    q.quantized_inputs = 1;
    double s = 2048, h = 12288, heads = 96, sbh = s * h, stats = 4 * heads * s;
    assert_rel(arch_layer_act_bytes(&a, &q, 0, ARCH_ACT_NONE), (34 - 2 - 4 + 1) * sbh + stats, REL);
    assert_rel(arch_layer_act_w_bytes(&a, &r, 0, ARCH_ACT_NONE), 32 * sbh, REL);
    assert_rel(arch_layer_act_w_bytes(&a, &q, 0, ARCH_ACT_NONE), (32 - 2 - 1 - 4) * sbh, REL);
    /* the legacy attention's backward does not need its output: only the quantized copy stays */
    arch_run legacy = run_of(1, 1, 0, 0), lq = legacy;
    lq.quantized_inputs = 1;
    assert_rel(arch_layer_act_bytes(&a, &legacy, 0, ARCH_ACT_NONE) - arch_layer_act_bytes(&a, &lq, 0, ARCH_ACT_NONE),
               (2 + 4 + 1) * sbh, REL);
}
END_TEST

/* A Llama-3-8B-shaped layer: 32 heads, 8 KV heads of 128, SwiGLU 14336, RMSNorm. */
static arch llama8b(void)
{
    arch a;
    memset(&a, 0, sizeof a);
    snprintf(a.name, sizeof a.name, "llama-3-8b");
    a.layers = 32;
    a.hidden = 4096;
    a.heads = 32;
    a.kv_heads = 8;
    a.head_dim = 128;
    a.ffn = 14336;
    a.vocab = 128256;
    a.mlp = ARCH_MLP_SWIGLU;
    a.norm = ARCH_NORM_RMSNORM;
    return a;
}

START_TEST(gqa_bytes_params_and_flops)
{
    arch a = llama8b();
    pg_status st;
    ck_assert_int_eq(arch_check(&a, "test", &st), 0);
    /* K and V projections 4096 x 1024 each, Q and O 4096 x 4096 */
    assert_rel(arch_params_attention(&a), 2 * 4096.0 * 4096 + 2 * 4096.0 * 1024, REL);
    /* published: 8.03B parameters */
    ck_assert(fabs(arch_params_total(&a) - 8.03e9) < 0.005 * 8.03e9);
    arch_run r = {.seq = 8192, .micro_batch = 1, .tp = 2, .cp = 1, .ep = 1, .flash = 1};
    double T = 8192, h = 4096, t = 2;
    /* Q (4096 wide) + K, V (1024 wide each), bf16, split over tp: the GQA saving over MHA */
    double qkv = 2 * T * (4096 + 2 * 1024) / t;
    double mha_qkv = 2 * T * 3 * 4096 / t;
    arch mha = a;
    mha.kv_heads = 32;
    double diff = arch_layer_act_bytes(&mha, &r, 0, ARCH_ACT_NONE) - arch_layer_act_bytes(&a, &r, 0, ARCH_ACT_NONE);
    assert_rel(diff, mha_qkv - qkv, REL);
    /* forward FLOPs: 2 x tokens x linear weights + attention over the full s x s (QK^T and AV) */
    double linear = 4096.0 * (4096 + 2 * 1024) + 4096.0 * 4096 + 3 * 4096.0 * 14336;   /* QKV, O, MLP */
    (void)h;
    assert_rel(arch_layer_fwd_flops(&a, &r, 0), 2 * T * linear + 4 * T * T * 4096, REL);
    /* tp must divide the KV heads */
    arch_run bad = r;
    bad.tp = 16;
    ck_assert_int_eq(arch_run_check(&a, &bad, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "tp"));
}
END_TEST

/* A Mixtral-shaped MoE layer: 8 experts, top-2, expert FFN 14336. */
START_TEST(moe_params_and_all_to_all_bytes)
{
    arch a = llama8b();
    a.moe.experts = 8;
    a.moe.top_k = 2;
    a.moe.expert_ffn = 14336;
    a.vocab = 32000;
    a.layers = 32;
    /* Mixtral-8x7B: 46.7B total, 12.9B active */
    ck_assert(fabs(arch_params_total(&a) - 46.70e9) < 0.01 * 46.70e9);
    ck_assert(fabs(arch_params_active(&a) - 12.88e9) < 0.01 * 12.88e9);
    arch_run r = {.seq = 4096, .micro_batch = 2, .tp = 1, .cp = 1, .ep = 4, .flash = 1};
    /* each GPU sends its 4096 x 2 tokens' top-2 copies, 3/4 of them away, bf16 hidden vectors */
    assert_rel(arch_a2a_bytes(&a, &r), 2.0 * 4096 * 2 * 2 * 4096 * 3 / 4, REL);
    r.ep = 1;
    ck_assert(arch_a2a_bytes(&a, &r) == 0);
    /* experts spread over ep: a GPU holds experts / ep of them */
    arch_run r4 = r, r1 = r;
    r4.ep = 4;
    double per_expert = 3 * 4096.0 * 14336;
    assert_rel(arch_layer_params_gpu(&a, &r1, 0) - arch_layer_params_gpu(&a, &r4, 0), 6 * per_expert, REL);
    pg_status st;
    arch_run bad = r;
    bad.ep = 3;
    ck_assert_int_eq(arch_run_check(&a, &bad, &st), PG_EXIT_INPUT);
}
END_TEST

/* moe.probs=combine: the combine weighs the experts' outputs and keeps them
 * for the backward, one bf16 hidden vector per routed copy (4096 x 2 tokens,
 * top-2, h 4096, all experts on the GPU); weighted in the activation
 * (the default) it keeps nothing.  A dense layer is not concerned. */
START_TEST(moe_probs_on_outputs_bytes)
{
    arch a = llama8b();
    a.moe.experts = 8;
    a.moe.top_k = 2;
    a.moe.expert_ffn = 14336;
    arch_run r = {.seq = 4096, .micro_batch = 2, .tp = 1, .cp = 1, .ep = 1, .flash = 1}, c = r;
    c.probs_on_outputs = 1;
    assert_rel(arch_layer_act_bytes(&a, &c, 0, ARCH_ACT_NONE) - arch_layer_act_bytes(&a, &r, 0, ARCH_ACT_NONE),
               2.0 * 4096 * 2 * 2 * 4096, REL);
    arch d = llama8b();
    ck_assert(arch_layer_act_bytes(&d, &c, 0, ARCH_ACT_NONE) == arch_layer_act_bytes(&d, &r, 0, ARCH_ACT_NONE));
}
END_TEST

/* The cost model's stages: the first stage of 1F1B holds pp microbatches of
 * its L/pp layers, Korthikanti's sbhL(34 + 5as/h)/t for the whole pipeline,
 * plus the embedding's dropout mask (Section 4.2.2). */
START_TEST(stage_memory_as_korthikanti)
{
    gpu_params g;
    pg_status st;
    ck_assert_int_eq(gpu_params_load("a100-80g", &g, &st), 0);
    arch a = gpt175();
    gpt_shape m = {.seq = 2048, .micro_batch = 1, .tp = 8, .arch = &a, .sequence_parallel = 1};
    workload w;
    int pp = 8;
    ck_assert_int_eq(costmodel_build_shape(&g, &m, pp, &w, &st), 0);
    double s = 2048, h = 12288, t = 8, L = 96, sbh = s * h;
    double first_stage_in_flight = pp * w.stage[0].act_b_bytes;
    double want = sbh * L / t * (34 + 5 * 96 * s / h) + pp * s * h / t;   /* + the embedding masks */
    assert_rel(first_stage_in_flight, want, 1e-9);
    /* full recomputation keeps every layer's input: 2sbhL/t over the pipeline's first stage */
    assert_rel(pp * w.stage[0].full_keep_bytes, 2 * sbh * L / t, 1e-12);
    /* and the backward recomputes one layer at a time */
    memplan p;
    schedule sc;
    sched_init(&sc, "t", pp, 1, 1);
    plan_init(&p, &sc);
    plan_set(&p, 0, 0, (plan_choice){.fwd = PLAN_FWD_FULL});
    act_flow f;
    act_flow_of(&w, &p, 0, 0, &f);
    assert_rel(f.f_alloc, w.stage[0].full_keep_bytes, REL);
    assert_rel(f.r_alloc_fused, w.stage[0].layer_act_b_bytes, REL);
    ck_assert(f.f_alloc + f.r_alloc_fused < 0.2 * w.stage[0].act_b_bytes);
    /* every path returns what it took */
    assert_rel(f.f_alloc + f.r_alloc - f.b_release, f.w_release, 1e-9);
    assert_rel(f.bw_release, f.f_alloc + f.r_alloc_fused, REL);
    plan_free(&p);
    sched_free(&sc);
    workload_free(&w);
}
END_TEST

/* Korthikanti et al.'s 22B GPT (Table 3: 48 layers, h 6144, a 64, s 2048;
 * here micro batch 4, tp 8, no sequence parallelism, legacy attention) on
 * ONE pipeline stage: selective recomputation stores sbhL(10 + 24/t), the
 * 5as/h term gone, whatever the pipeline; the backward recomputes one
 * layer's attention core at a time, so the peak is that plus one layer's
 * core (not the whole stage's, which would undo the saving at pp = 1). */
START_TEST(selective_at_one_stage_as_korthikanti)
{
    gpu_params g;
    pg_status st;
    ck_assert_int_eq(gpu_params_load("a100-80g", &g, &st), 0);
    arch a;
    arch_gpt(&a, 48, 6144, 64, 2048, 51200);
    gpt_shape m = {.seq = 2048, .micro_batch = 4, .tp = 8, .arch = &a};
    workload w;
    ck_assert_int_eq(costmodel_build_shape(&g, &m, 1, &w, &st), 0);
    double s = 2048, b = 4, h = 6144, heads = 64, t = 8, L = 48, sbh = s * b * h;
    double score_layer = sbh * 5 * heads * s / h / t;   /* one layer's 5as/h term */
    double paper = sbh * L * (10 + 24 / t);
    memplan p;
    schedule sc;
    sched_init(&sc, "t", 1, 1, 1);
    plan_init(&p, &sc);
    plan_set(&p, 0, 0, (plan_choice){.fwd = PLAN_FWD_SELECTIVE});
    act_flow f;
    act_flow_of(&w, &p, 0, 0, &f);
    /* the embedding's and head's activations (Korthikanti's Section 4.2.2
     * terms, outside the per-layer equation) are the same in both modes and
     * small; the layers store exactly the paper's selective equation */
    double outside_layers = w.stage[0].act_b_bytes - L * (sbh * (10 + 24 / t) + score_layer);
    ck_assert(outside_layers >= 0 && outside_layers < 0.02 * paper);
    assert_rel(f.f_alloc - outside_layers, paper, 0.01);     /* stored: the paper's equation */
    assert_rel(f.r_alloc_fused, score_layer, 1e-9);           /* recomputed: one layer's core */
    assert_rel(f.r_alloc, score_layer, 1e-9);
    ck_assert(f.f_alloc + f.r_alloc_fused < 0.6 * w.stage[0].act_b_bytes);
    /* every path returns what it took; W keeps what it keeps without recomputation */
    assert_rel(f.f_alloc + f.r_alloc - f.b_release, f.w_release, 1e-9);
    assert_rel(f.w_release, w.stage[0].act_w_bytes, 1e-9);
    assert_rel(f.bw_release, f.f_alloc + f.r_alloc_fused, REL);
    plan_free(&p);
    sched_free(&sc);
    workload_free(&w);
}
END_TEST

/* tp shards the parameters; the GPT layer's closed form stays 12h^2/t + 7h/t + 6h. */
START_TEST(gpt_params_per_gpu)
{
    arch a = gpt175();
    arch_run r = run_of(1, 8, 0, 0);
    double h = 12288, t = 8;
    assert_rel(arch_layer_params_gpu(&a, &r, 0), 12 * h * h / t + 7 * h / t + 6 * h, REL);
    /* GPT-3: 175B */
    ck_assert(fabs(arch_params_total(&a) - 175e9) < 0.01 * 175e9);
    /* 24bsh^2 + 4bs^2h per layer forward */
    double s = 2048;
    assert_rel(arch_layer_fwd_flops(&a, &r, 0), 24 * s * h * h + 4 * s * s * h, REL);
}
END_TEST

/* precision=fp8 needs FP8 tensor cores. */
START_TEST(fp8_needs_hardware)
{
    gpu_params g;
    pg_status st;
    arch a = llama8b();
    gpt_shape m = {.seq = 4096, .micro_batch = 1, .tp = 1, .arch = &a, .flash = 1, .fp8 = 1};
    workload w;
    ck_assert_int_eq(gpu_params_load("a100-80g", &g, &st), 0);
    ck_assert_int_eq(costmodel_build_shape(&g, &m, 4, &w, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "precision"));
    ck_assert_int_eq(gpu_params_load("h100-sxm", &g, &st), 0);
    ck_assert_int_eq(costmodel_build_shape(&g, &m, 4, &w, &st), 0);
    double fp8_f = w.stage[1].f_s;
    workload_free(&w);
    m.fp8 = 0;
    ck_assert_int_eq(costmodel_build_shape(&g, &m, 4, &w, &st), 0);
    ck_assert(fp8_f < w.stage[1].f_s);
    workload_free(&w);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("arch");
    TCase *tc = tcase_create("arch");
    tcase_add_test(tc, korthikanti_table2_every_mode);
    tcase_add_test(tc, lgd_and_flash_bytes);
    tcase_add_test(tc, quantized_gemm_inputs);
    tcase_add_test(tc, gqa_bytes_params_and_flops);
    tcase_add_test(tc, moe_params_and_all_to_all_bytes);
    tcase_add_test(tc, moe_probs_on_outputs_bytes);
    tcase_add_test(tc, stage_memory_as_korthikanti);
    tcase_add_test(tc, selective_at_one_stage_as_korthikanti);
    tcase_add_test(tc, gpt_params_per_gpu);
    tcase_add_test(tc, fp8_needs_hardware);
    suite_add_tcase(s, tc);
    return pg_run_suite(s);
}
