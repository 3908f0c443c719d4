/* test_costmodel.c: the workload=gpt cost model and the GPU parameter files
 * (the calibrate / validate predictor built on them: tests/test_calib.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/costmodel.h"
#include "model/platform.h"
#include "gpufixture.h"
#include "testutil.h"
#include "util/strbuf.h"

static const char *const TYPES[] = {"a100-80g", "h100-sxm", "h200", "b200", "b300", "gb200", "gb300"};

static gpt_shape shape(int h, int a, int s, int b, int tp)
{
    return (gpt_shape){.layers = 8, .hidden = h, .heads = a, .seq = s, .vocab = 51200, .micro_batch = b, .tp = tp};
}


START_TEST(test_layer_flops_closed_forms)
{
    gpu_params g = load("a100-80g");
    const int tps[] = {1, 2, 4, 8};
    for (size_t k = 0; k < 4; k++) {
        gpt_shape m = shape(4096, 32, 1024, 3, tps[k]);
        double s = 1024, b = 3, h = 4096, t = tps[k], sbh = s * b * h;
        double want[CM_OPS] = {sbh * (24 * h + 4 * s) / t, sbh * (24 * h + 8 * s) / t, sbh * 24 * h / t};
        op_cost c[CM_OPS];
        costmodel_layer(&g, &m, c);
        for (int op = 0; op < CM_OPS; op++) {
            ck_assert_exact(costmodel_layer_flops(&m, (cm_op)op), want[op]);
            ck_assert_exact(c[op].gemm_flops + c[op].attn_flops, want[op]);
        }
        /* attention GEMMs: 4bs^2h/t in F, twice that in B, none in W */
        ck_assert_exact(c[CM_F].attn_flops, 4 * b * s * s * h / t);
        ck_assert_exact(c[CM_B].attn_flops, 8 * b * s * s * h / t);
        ck_assert_exact(c[CM_W].attn_flops, 0);
    }
}
END_TEST

START_TEST(test_memory_and_params_closed_forms)
{
    gpt_shape m = shape(4096, 32, 1024, 3, 1);
    double s = 1024, b = 3, h = 4096, a = 32;
    ck_assert_exact(costmodel_layer_act_b_bytes(&m), s * b * (34 * h + 5 * a * s));   /* ZB paper M_B */
    ck_assert_exact(costmodel_layer_act_w_bytes(&m), 32 * s * b * h);                 /* M_W */
    ck_assert_exact(costmodel_layer_params(&m), 12 * h * h + 13 * h);
    m.tp = 4;
    ck_assert_exact(costmodel_layer_act_b_bytes(&m), s * b * h * (10 + 24.0 / 4) + 5 * a * s * s * b / 4);
    ck_assert_exact(costmodel_layer_params(&m), 12 * h * h / 4 + 7 * h / 4 + 6 * h);
}
END_TEST

START_TEST(test_times_monotone_in_size)
{
    for (size_t k = 0; k < sizeof TYPES / sizeof TYPES[0]; k++) {
        gpu_params g = load(TYPES[k]);
        const int hs[] = {512, 1024, 2048, 4096, 8192}, ss[] = {256, 512, 1024, 2048, 4096}, bs[] = {1, 2, 4, 8, 16};
        op_cost prev[CM_OPS], cur[CM_OPS];
        for (int dim = 0; dim < 3; dim++)
            for (int i = 0; i < 5; i++) {
                gpt_shape m = shape(dim == 0 ? hs[i] : 2048, 16, dim == 1 ? ss[i] : 1024, dim == 2 ? bs[i] : 2, 2);
                costmodel_layer(&g, &m, cur);
                if (i > 0)
                    for (int op = 0; op < CM_OPS; op++)
                        ck_assert_msg(cur[op].time_s >= prev[op].time_s, "%s: op %d time falls with dim %d",
                                      TYPES[k], op, dim);
                memcpy(prev, cur, sizeof prev);
            }
        /* a large layer is GPU-bound: doubling the batch nearly doubles F */
        gpt_shape m1 = shape(8192, 64, 4096, 8, 1), m2 = m1;
        m2.micro_batch = 16;
        op_cost c1[CM_OPS], c2[CM_OPS];
        costmodel_layer(&g, &m1, c1);
        costmodel_layer(&g, &m2, c2);
        ck_assert(c2[CM_F].time_s > 1.9 * c1[CM_F].time_s);
    }
}
END_TEST

/* Legacy and flash attention are two kernels with an efficiency each: the
 * legacy core's batched GEMMs move with attn_eff only, the flash kernel
 * with flash_eff only, each by exactly its attention FLOPs' time. */
START_TEST(test_attention_kernels_have_their_own_efficiency)
{
    gpu_params g = pure_rates();
    for (int flash = 0; flash < 2; flash++) {
        gpt_shape m = shape(4096, 32, 2048, 2, 1);
        m.flash = flash;
        op_cost base[CM_OPS], slow_legacy[CM_OPS], slow_flash[CM_OPS];
        costmodel_layer(&g, &m, base);
        gpu_params gl = g, gf = g;
        gl.v[GP_ATTN_EFF] = g.v[GP_ATTN_EFF] / 2;
        gf.v[GP_FLASH_EFF] = g.v[GP_FLASH_EFF] / 2;
        costmodel_layer(&gl, &m, slow_legacy);
        costmodel_layer(&gf, &m, slow_flash);
        for (int op = 0; op < CM_OPS; op++) {
            const op_cost *moved = flash ? slow_flash : slow_legacy, *kept = flash ? slow_legacy : slow_flash;
            double eff = flash ? g.v[GP_FLASH_EFF] : g.v[GP_ATTN_EFF];
            ck_assert_exact(kept[op].time_s, base[op].time_s);
            ck_assert_rel(moved[op].time_s - base[op].time_s, base[op].attn_flops / (g.v[GP_PEAK_FLOPS] * eff), 1e-9);
        }
        ck_assert(base[CM_F].attn_flops > 0);
    }
}
END_TEST

/* The flash kernel's fixed work per query row and its softmax per score
 * (flash_half_keys, flash_half_head_dim): the attention part of F and of B
 * grows by exactly (1 + half_keys / keys) (1 + half_head_dim / head_dim),
 * keys the causal half of the sequence; nothing else moves. */
START_TEST(test_flash_terms_scale_the_attention_kernel)
{
    gpu_params g = pure_rates();
    const double seq = 4096, heads = 32, hidden = 4096, half_keys = 256, half_dim = 16;
    gpt_shape m = shape((int)hidden, (int)heads, (int)seq, 1, 1);
    m.flash = 1;
    op_cost base[CM_OPS], slow[CM_OPS];
    costmodel_layer(&g, &m, base);
    gpu_params gs = g;
    gs.v[GP_FLASH_HALF_KEYS] = half_keys;
    gs.v[GP_FLASH_HALF_HEAD_DIM] = half_dim;
    costmodel_layer(&gs, &m, slow);
    double work = (1 + half_keys / (0.5 * seq)) * (1 + half_dim / (hidden / heads));
    for (int op = 0; op < CM_OPS; op++) {
        double attn_s = base[op].attn_flops / (g.v[GP_PEAK_FLOPS] * g.v[GP_FLASH_EFF]);
        ck_assert_rel(slow[op].time_s - base[op].time_s, (work - 1) * attn_s, 1e-9);
        ck_assert_exact(slow[op].attn_flops, base[op].attn_flops);
    }
    ck_assert(base[CM_F].attn_flops > 0);
}
END_TEST

static char *write_temp(const char *text);

/* A profile written before flash_eff existed: flash attention keeps the
 * rate attn_eff gave it, and the source says so. */
START_TEST(test_flash_eff_absent_takes_attn_eff)
{
    gpu_params g = load("a100-80g");
    strbuf sb;
    sb_init(&sb);
    gpu_params_write_yaml(&g, "no flash_eff", &sb);
    char *flash_line = strstr(sb.data, "  flash_eff:");
    ck_assert_ptr_nonnull(flash_line);
    char *end = strchr(flash_line, '\n');
    memmove(flash_line, end + 1, strlen(end + 1) + 1);
    char *path = write_temp(sb.data);
    gpu_params back;
    pg_status st;
    ck_assert_int_eq(gpu_params_load(path, &back, &st), 0);
    ck_assert_exact(back.v[GP_FLASH_EFF], g.v[GP_ATTN_EFF]);
    ck_assert_ptr_nonnull(strstr(back.source[GP_FLASH_EFF], "not in the file; attn_eff's value"));
    ck_assert_int_eq(gpu_param_basis_of(&back, GP_FLASH_EFF), GPB_BORROWED);
    unlink(path);
    free(path);
    sb_free(&sb);
}
END_TEST

START_TEST(test_tp_divides_compute_adds_allreduce)
{
    gpu_params g = pure_rates();
    gpt_shape m1 = shape(4096, 32, 2048, 2, 1);
    op_cost c1[CM_OPS];
    costmodel_layer(&g, &m1, c1);
    const int tps[] = {2, 4, 8};
    for (size_t k = 0; k < 3; k++) {
        int t = tps[k];
        gpt_shape mt = m1;
        mt.tp = t;
        op_cost ct[CM_OPS];
        costmodel_layer(&g, &mt, ct);
        double gemm_rate = g.v[GP_PEAK_FLOPS] * g.v[GP_GEMM_EFF], attn_rate = g.v[GP_PEAK_FLOPS] * g.v[GP_ATTN_EFF];
        double mem_rate = g.v[GP_HBM_BW] * g.v[GP_MEM_EFF];
        double hidden_bytes = 2.0 * 2048 * 2 * 4096;
        double ar = 2.0 * (t - 1) * g.v[GP_COLL_LATENCY_S] +
                    2.0 * (t - 1) / t * hidden_bytes / (g.v[GP_NVLINK_BW] * g.v[GP_COLL_BW_EFF]);
        ck_assert_exact(costmodel_allreduce_s(&g, hidden_bytes, t), ar);
        const int nar[CM_OPS] = {2, 2, 0};   /* Megatron: two all-reduces in F, two in B */
        for (int op = 0; op < CM_OPS; op++) {
            ck_assert_exact(ct[op].gemm_flops, c1[op].gemm_flops / t);
            ck_assert_exact(ct[op].attn_flops, c1[op].attn_flops / t);
            ck_assert_exact(ct[op].comm_bytes, nar[op] * hidden_bytes);
            double want = ct[op].gemm_flops / gemm_rate + ct[op].attn_flops / attn_rate +
                          ct[op].mem_bytes / mem_rate + nar[op] * ar;
            ck_assert_rel(ct[op].time_s, want, 1e-9);
        }
        ck_assert(ct[CM_F].time_s < c1[CM_F].time_s);
    }
    ck_assert_exact(costmodel_allreduce_s(&g, 1e9, 1), 0.0);
}
END_TEST

/* Megatron's fused causal softmax needs b * a/t to fill its blocks (a
 * multiple of 4; of 8 when s <= 128) and 16 < s <= 4096, s a multiple of 4;
 * otherwise five fp32 PyTorch kernels each way, with their bytes. */
START_TEST(test_softmax_fallback)
{
    struct { int heads, seq, mb, tp, fused; } c[] = {
        {16, 1024, 1, 1, 1}, {16, 1024, 1, 4, 1}, {16, 1024, 1, 8, 0}, {16, 1024, 2, 8, 1},
        {16, 1024, 3, 8, 0}, {16, 8192, 4, 1, 0}, {16, 16, 4, 1, 0},   {16, 1022, 4, 1, 0},
        {4, 128, 1, 1, 0},   {4, 128, 2, 1, 1},   {4, 256, 1, 1, 1},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        gpt_shape m = shape(64 * c[k].heads, c[k].heads, c[k].seq, c[k].mb, c[k].tp);
        ck_assert_msg(costmodel_fused_softmax(&m) == c[k].fused, "case %zu", k);
    }
    /* the same layer with 16 heads (b * a/t = 2: PyTorch) and 32 (4: fused)
     * at tp=8: only the attention-score tensors depend on the heads, so the
     * bytes differ by the softmax (fp32 path 37 / 41 bytes per score each
     * way, fused 4 / 6) and the attention dropout (5 each way) */
    gpu_params g = pure_rates();
    gpt_shape unf = shape(2048, 16, 1024, 1, 8), fus = shape(2048, 32, 1024, 1, 8);
    ck_assert(!costmodel_fused_softmax(&unf) && costmodel_fused_softmax(&fus));
    op_cost cu[CM_OPS], cf[CM_OPS];
    costmodel_layer(&g, &unf, cu);
    costmodel_layer(&g, &fus, cf);
    double e_u = 1.0 * (16 / 8) * 1024.0 * 1024.0, e_f = 2 * e_u;   /* attention scores per rank */
    ck_assert_rel(cu[CM_F].mem_bytes - cf[CM_F].mem_bytes, (37 + 5) * e_u - (4 + 5) * e_f, 1e-12);
    ck_assert_rel(cu[CM_B].mem_bytes - cf[CM_B].mem_bytes, (41 + 5) * e_u - (6 + 5) * e_f, 1e-12);
    ck_assert_exact(cu[CM_W].mem_bytes, cf[CM_W].mem_bytes);
    for (int op = 0; op < CM_OPS; op++)
        ck_assert_exact(cu[op].gemm_flops + cu[op].attn_flops, cf[op].gemm_flops + cf[op].attn_flops);
    ck_assert_int_eq(cu[CM_F].kernels, cf[CM_F].kernels + 4);
    ck_assert_int_eq(cu[CM_B].kernels, cf[CM_B].kernels + 4);
    ck_assert_int_eq(cu[CM_W].kernels, cf[CM_W].kernels);
}
END_TEST

/* Tile and wave quantization of a GEMM's busy FLOPs (costmodel.h): for each
 * of cuBLAS's tile shapes, whole tiles, whole waves over the SMs, split-K
 * when the tiles do not fill them, over the shape's rate; the least of
 * them.  No SM count, no quantization. */
START_TEST(test_gemm_busy_flops)
{
    const double tile = 128, sms = 108;
    ck_assert_exact(costmodel_gemm_busy_flops(0, 1000, 300, 77, 3), 2.0 * 1000 * 300 * 77 * 3);
    /* 12 x 9 = 108 tiles of 128 x 128: one full wave, no padding (256 x 128 ties: 54 tiles split in 2) */
    ck_assert_exact(costmodel_gemm_busy_flops(108, 12 * tile, 9 * tile, 4096, 1), 2.0 * 12 * tile * 9 * tile * 4096);
    /* one row more: 13 x 9 = 117 tiles of 128 x 128, two waves; 256 x 128 (7 x 9 = 63 tiles, one wave
     * of twice the tile) ties; 128 x 64 needs 3 waves at 2/3 the rate, 64 x 64 5 at half */
    ck_assert_exact(costmodel_gemm_busy_flops(108, 12 * tile + 1, 9 * tile, 4096, 1),
                    2.0 * sms * 2 * tile * tile * 4096);
    /* 4 x 4 = 16 tiles of 128 x 128 split-K 6 ways (slices of 683) lose to 2 x 4 = 8 tiles of 256 x 128
     * split 13 ways (slices of 316), one wave either way */
    ck_assert_exact(costmodel_gemm_busy_flops(108, 4 * tile, 4 * tile, 4096, 1),
                    2.0 * sms * 2 * tile * tile * ceil(4096 / 13.0));
    /* a shallow K limits the split to K / 256 slices: 2 of 300; then 4 tiles of 64 x 64 (half the rate)
     * beat one of 128 x 128 */
    ck_assert_exact(costmodel_gemm_busy_flops(108, tile, tile, 600, 1), 2.0 * sms * 64 * 64 * 300 / 0.5);
    /* groups (experts) add their tiles: 8 groups of 4 x 4 = 128 tiles, two waves (or one of 256 x 128) */
    ck_assert_exact(costmodel_gemm_busy_flops(108, 4 * tile, 4 * tile, 512, 8), 2.0 * sms * 2 * tile * tile * 512);
    /* never less than the GEMM's own FLOPs */
    const double dims[][3] = {{1, 1, 1}, {100, 3000, 50}, {8192, 1536, 4096}, {333, 777, 12345}};
    for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++)
        ck_assert(costmodel_gemm_busy_flops(132, dims[k][0], dims[k][1], dims[k][2], 1) >=
                  2.0 * dims[k][0] * dims[k][1] * dims[k][2]);
}
END_TEST

/* With tp_comm_overlap each layer all-reduce hides under the GEMM before it
 * (proj and FC2 in F, FC1 and QKV dgrad in B): the op is shorter by the
 * hidden part, exactly. */
START_TEST(test_tp_comm_overlap_hides_under_gemm)
{
    gpu_params g = pure_rates();
    g.v[GP_MEM_EFF] = 1e6;     /* memory kernels free: no roofline on the GEMMs */
    const double h = 4096, T = 2048 * 2, t = 4;
    gpt_shape m = shape(4096, 32, 2048, 2, 4), mo = m;
    mo.tp_comm_overlap = 1;
    op_cost c[CM_OPS], co[CM_OPS];
    costmodel_layer(&g, &m, c);
    costmodel_layer(&g, &mo, co);
    double rate = g.v[GP_PEAK_FLOPS] * g.v[GP_GEMM_EFF];
    double ar = costmodel_allreduce_s(&g, 2.0 * T * h, 4);
    double proj = 2 * T * h * h / t / rate, fc1 = 2 * T * h * 4 * h / t / rate, fc2 = fc1, qkv = 3 * proj;
    double before[2][2] = {{proj, fc2}, {fc1, qkv}};   /* F, B */
    for (int op = 0; op < 2; op++) {
        double hidden = 0;
        for (int i = 0; i < 2; i++)
            hidden += ar < before[op][i] ? ar : before[op][i];
        ck_assert_rel(co[op].time_s, c[op].time_s - hidden, 1e-9);
        ck_assert_exact(co[op].comm_bytes, c[op].comm_bytes);
    }
    ck_assert_exact(co[CM_W].time_s, c[CM_W].time_s);
}
END_TEST

/* Weight gradients accumulated into an fp32 main_grad (main_grad_bytes 4)
 * read and write 8 bytes per weight of the rank's linear layers (QKV 3h^2,
 * proj h^2, fc1 and fc2 4h^2 each, over tp) after their GEMMs, at the memory
 * kernels' rate, in W only; the LM head's wgrad does the same for its h x V/t. */
START_TEST(test_main_grad_accumulation)
{
    gpu_params g = pure_rates();
    const double h = 4096, t = 2, V = 51200;
    gpt_shape m = shape(4096, 32, 2048, 2, 2), ma = m;
    ma.main_grad_bytes = 4.0;
    op_cost c[CM_OPS], ca[CM_OPS];
    costmodel_layer(&g, &m, c);
    costmodel_layer(&g, &ma, ca);
    double bytes = 2 * 4.0 * 12 * h * h / t, rate = g.v[GP_HBM_BW] * g.v[GP_MEM_EFF];
    ck_assert_rel(ca[CM_W].mem_bytes - c[CM_W].mem_bytes, bytes, 1e-12);
    ck_assert_rel(ca[CM_W].time_s - c[CM_W].time_s, bytes / rate, 1e-9);
    ck_assert_int_eq(ca[CM_W].kernels, c[CM_W].kernels);   /* the GEMM's epilogue: no kernel of its own */
    for (int op = CM_F; op <= CM_B; op++)
        ck_assert_exact(ca[op].time_s, c[op].time_s);
    op_cost hd[CM_OPS], hda[CM_OPS];
    costmodel_head(&g, &m, hd);
    costmodel_head(&g, &ma, hda);
    ck_assert_rel(hda[CM_W].mem_bytes - hd[CM_W].mem_bytes, 2 * 4.0 * h * V / t, 1e-12);
}
END_TEST

/* FP8 layers cast each linear layer's input (F) and output gradient (B)
 * with its transpose, 4 bytes per element; W and the LM head cast nothing. */
START_TEST(test_fp8_casts)
{
    gpu_params g = load("h100-sxm");
    const double h = 4096, T = 2048 * 2, t = 2;
    gpt_shape m = shape(4096, 32, 2048, 2, 2), m8 = m;
    m8.fp8 = 1;
    op_cost c[CM_OPS], c8[CM_OPS];
    costmodel_layer(&g, &m, c);
    costmodel_layer(&g, &m8, c8);
    double cast = 2.0 + 2.0;   /* read bf16, write fp8 and its transpose */
    ck_assert_rel(c8[CM_F].mem_bytes - c[CM_F].mem_bytes, cast * T * (h + h / t + h + 4 * h / t), 1e-9);
    ck_assert_rel(c8[CM_B].mem_bytes - c[CM_B].mem_bytes, cast * T * (3 * h / t + h + 4 * h / t + h), 1e-9);
    ck_assert_exact(c8[CM_W].mem_bytes, c[CM_W].mem_bytes);
    ck_assert_int_eq(c8[CM_F].kernels, c[CM_F].kernels + 4);
    ck_assert_int_eq(c8[CM_B].kernels, c[CM_B].kernels + 4);
    op_cost hd[CM_OPS], hd8[CM_OPS];
    costmodel_head(&g, &m, hd);
    costmodel_head(&g, &m8, hd8);
    for (int op = 0; op < CM_OPS; op++)
        ck_assert_exact(hd8[op].time_s, hd[op].time_s);
}
END_TEST

/* LoRA (gpt_shape.lora_rank): every adapted linear layer (in -> out on the
 * rank) adds its adapter's two GEMMs, 2 T r (in + out) FLOPs, to F, B and
 * W; W loses the base weights' gradients (its GEMMs, the norms' and
 * biases'), so it is the adapters' GEMMs alone; FP8 casts write one copy
 * (no transposed copy for a weight gradient); the head's and embedding's W
 * is empty; a stage's weights are frozen but its adapters. */
START_TEST(test_lora_adapters_and_frozen_weights)
{
    gpu_params g = load("h100-sxm");
    const double h = 4096, T = 2048 * 2, t = 2, r = 16;
    gpt_shape m = shape(4096, 32, 2048, 2, 2), ml = m, mq;
    ml.lora_rank = (int)r;
    mq = ml;
    mq.lora_qkv_only = 1;
    op_cost c[CM_OPS], cl[CM_OPS], cq[CM_OPS];
    costmodel_layer(&g, &m, c);
    costmodel_layer(&g, &ml, cl);
    costmodel_layer(&g, &mq, cq);
    double in_out_all = (h + 3 * h / t) + (h / t + h) + (h + 4 * h / t) + (4 * h / t + h);   /* QKV, proj, FC1, FC2 */
    double in_out_qkv = h + 3 * h / t;
    for (int op = CM_F; op <= CM_B; op++) {
        ck_assert_rel(cl[op].gemm_flops - c[op].gemm_flops, 2 * T * r * in_out_all, 1e-12);
        ck_assert_rel(cq[op].gemm_flops - c[op].gemm_flops, 2 * T * r * in_out_qkv, 1e-12);
        ck_assert_exact(cl[op].attn_flops, c[op].attn_flops);
    }
    ck_assert_rel(cl[CM_W].gemm_flops, 2 * T * r * in_out_all, 1e-12);
    ck_assert_rel(cq[CM_W].gemm_flops, 2 * T * r * in_out_qkv, 1e-12);
    ck_assert_exact(cl[CM_W].mem_bytes, 0.0);   /* no norm or bias gradient */
    ck_assert(cq[CM_W].time_s < c[CM_W].time_s / 10);
    ck_assert_rel(cl[CM_F].adapter_params, r * in_out_all, 1e-12);
    ck_assert_rel(cq[CM_F].adapter_params, r * in_out_qkv, 1e-12);
    ck_assert_exact(c[CM_F].adapter_params, 0.0);

    /* FP8: the cast before each base GEMM reads bf16 and writes one FP8 copy, 3 bytes an element */
    gpt_shape m8 = ml;
    m8.fp8 = 1;
    op_cost c8[CM_OPS];
    costmodel_layer(&g, &m8, c8);
    ck_assert_rel(c8[CM_F].mem_bytes - cl[CM_F].mem_bytes, 3.0 * T * (h + h / t + h + 4 * h / t), 1e-9);
    ck_assert_rel(c8[CM_B].mem_bytes - cl[CM_B].mem_bytes, 3.0 * T * (3 * h / t + h + 4 * h / t + h), 1e-9);

    op_cost hd[CM_OPS], emb[CM_OPS];
    costmodel_head(&g, &ml, hd);
    costmodel_embedding(&g, &ml, emb);
    ck_assert_int_eq(hd[CM_W].kernels, 0);
    ck_assert_int_eq(emb[CM_W].kernels, 0);

    workload w, wl;
    pg_status st;
    m.layers = ml.layers = 8;
    ck_assert_int_eq(costmodel_build_shape(&g, &m, 2, &w, &st), 0);
    ck_assert_int_eq(costmodel_build_shape(&g, &ml, 2, &wl, &st), 0);
    for (int s = 0; s < 2; s++) {
        ck_assert_exact(w.stage[s].frozen_param_count, 0.0);
        ck_assert_exact(wl.stage[s].frozen_param_count, w.stage[s].param_count);
        ck_assert_rel(stage_trainable_params(&wl.stage[s]), 4 * r * in_out_all, 1e-12);
        ck_assert_exact(wl.stage[s].act_b_bytes, w.stage[s].act_b_bytes);   /* the adapters need X kept too */
    }
    workload_free(&w);
    workload_free(&wl);
}
END_TEST

/* Packed documents (gpt.doc_len): flash attention attends within each
 * document, so the attention core's FLOPs are doc_len / seq of the whole
 * sequence's, in F and B; the linear layers are unchanged. */
START_TEST(test_packed_documents_scale_attention)
{
    gpu_params g = load("h100-sxm");
    gpt_shape m = shape(4096, 32, 4096, 1, 2), p = m;
    m.flash = p.flash = 1;
    p.doc_len = 256;
    op_cost c[CM_OPS], cp[CM_OPS];
    costmodel_layer(&g, &m, c);
    costmodel_layer(&g, &p, cp);
    for (int op = 0; op < CM_OPS; op++) {
        ck_assert_rel(cp[op].attn_flops, c[op].attn_flops * 256.0 / 4096.0, 1e-12);
        ck_assert_exact(cp[op].gemm_flops, c[op].gemm_flops);
    }
    ck_assert(cp[CM_F].attn_flops > 0 && cp[CM_F].time_s < c[CM_F].time_s);
    p.doc_len = 4096;   /* one document per sequence: as unpacked */
    costmodel_layer(&g, &p, cp);
    ck_assert_exact(cp[CM_B].time_s, c[CM_B].time_s);
}
END_TEST

/* Experts with expert tensor parallelism 1 run whole experts on the rank's
 * share of the token copies: the same FLOPs as experts split over tp, so
 * the same time at pure rates; other GEMM shapes, so another time once the
 * SM count quantizes them. */
START_TEST(test_expert_tp1_same_flops_other_shapes)
{
    arch a;
    arch_gpt(&a, 8, 4096, 32, 2048, 51200);
    a.moe.experts = 8;
    a.moe.top_k = 2;
    a.moe.expert_ffn = 4 * 4096;
    gpt_shape m = shape(4096, 32, 2048, 2, 2), m1;
    m.arch = &a;
    m.ep = 4;
    m.sequence_parallel = 1;
    m1 = m;
    m1.expert_tp1 = 1;
    gpu_params pure = pure_rates(), real = load("a100-80g");
    pure.v[GP_MEM_EFF] = 1e6;   /* no operand-traffic roofline */
    op_cost c[CM_OPS], c1[CM_OPS];
    costmodel_layer(&pure, &m, c);
    costmodel_layer(&pure, &m1, c1);
    for (int op = 0; op < CM_OPS; op++) {
        ck_assert_rel(c1[op].gemm_flops, c[op].gemm_flops, 1e-12);
        ck_assert_rel(c1[op].time_s, c[op].time_s, 1e-9);
    }
    costmodel_layer(&real, &m, c);
    costmodel_layer(&real, &m1, c1);
    ck_assert(c1[CM_F].time_s != c[CM_F].time_s);
}
END_TEST

START_TEST(test_build_fills_workload)
{
    gpu_params g = load("h100-sxm");
    gpt_shape m = shape(4096, 32, 1024, 2, 2);
    m.layers = 30;
    workload w;
    pg_status st;
    ck_assert_int_eq(costmodel_build_shape(&g, &m, 4, &w, &st), 0);
    ck_assert_int_eq(w.nstages, 4);
    ck_assert_str_eq(w.ref_gpu, "h100-sxm");
    ck_assert_exact(w.ref_speed_flops, gpu_system_find("h100-sxm")->speed_flops);
    int layers = 0;
    op_cost lay[CM_OPS];
    costmodel_layer(&g, &m, lay);
    for (int s = 0; s < 4; s++) {
        layers += w.stage[s].layers;
        ck_assert_exact(w.stage[s].boundary_bytes, 2.0 * 1024 * 2 * 4096);
        /* one queue over the layers: at least their GPU time, at most separate starts */
        ck_assert(w.stage[s].f_s >= w.stage[s].layers * lay[CM_F].gpu_busy_s);
        if (s > 0 && s < 3)   /* no embedding, no head */
            ck_assert(w.stage[s].f_s - g.v[GP_OP_OVERHEAD_S] <= w.stage[s].layers * lay[CM_F].time_s);
        ck_assert(w.stage[s].act_w_bytes <= w.stage[s].act_b_bytes);
    }
    ck_assert_int_eq(layers, 30);
    ck_assert_int_eq(w.stage[0].layers, 7);   /* 30 = 7 + 7 + 8 + 8: the later stages take the extra */
    ck_assert_int_eq(w.stage[3].layers, 8);
    /* the embedding sits on stage 0, the head on the last: params beyond the layers */
    ck_assert(w.stage[0].param_count > 7 * costmodel_layer_params(&m));
    ck_assert(w.stage[3].param_count > 8 * costmodel_layer_params(&m));
    ck_assert_exact(w.stage[1].param_count, 7 * costmodel_layer_params(&m));
    workload_free(&w);
    m.layers = 3;
    ck_assert_int_eq(costmodel_build_shape(&g, &m, 4, &w, &st), PG_EXIT_INPUT);
    m.layers = 8;
    m.tp = 3;
    ck_assert_int_eq(costmodel_build_shape(&g, &m, 2, &w, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "'tp'"));
}
END_TEST

/* A stage's op is one kernel queue over its layers (costmodel.c,
 * queue_append).  Where the host waits for the GPU only at the op's end, it
 * issues the next layer while the GPU runs this one: L equal layers of
 * standing-start time T, GPU time G and host time H end at exactly
 * T + (L - 1) max(G, H) (a host-bound layer costs its launches from the
 * second on, a GPU-bound one its kernels).  Where it waits at every layer's
 * end (kernel_queue: layer), each layer starts standing: exactly L T. */
START_TEST(test_stage_op_is_one_kernel_queue)
{
    const int layers_per_stage = 5, nstages = 3;
    struct { int h, b; } cases[] = {{1024, 1}, {8192, 8}};   /* host-bound, GPU-bound */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double per_layer_s[CM_OPS] = {0, 0, 0};
        for (int waits_each_layer = 1; waits_each_layer >= 0; waits_each_layer--) {
            gpu_params g = load("a100-80g");
            g.host_waits_each_layer = waits_each_layer;
            gpt_shape m = shape(cases[i].h, 16, 1024, cases[i].b, 1);
            m.layers = layers_per_stage * nstages;
            op_cost lay[CM_OPS];
            costmodel_layer(&g, &m, lay);
            workload w;
            pg_status st;
            ck_assert_int_eq(costmodel_build_shape(&g, &m, nstages, &w, &st), 0);
            const stage_cost *mid = &w.stage[1];   /* no embedding, no head */
            ck_assert_int_eq(mid->layers, layers_per_stage);
            double op_s[CM_OPS] = {mid->f_s, mid->b_s, mid->w_s};
            for (int op = 0; op < CM_OPS; op++) {
                const op_cost *c = &lay[op];
                double overhead_s = g.v[GP_OP_OVERHEAD_S];
                double step = c->gpu_busy_s > c->host_s ? c->gpu_busy_s : c->host_s;
                double want = waits_each_layer ? layers_per_stage * c->time_s + overhead_s
                                               : c->time_s + (layers_per_stage - 1) * step + overhead_s;
                ck_assert_double_eq_tol(op_s[op], want, 1e-12 * want);
                if (waits_each_layer)
                    per_layer_s[op] = op_s[op];
                else
                    ck_assert(op_s[op] < per_layer_s[op]);   /* the ramp is paid once */
            }
            if (i == 0)
                ck_assert(lay[CM_F].host_s > lay[CM_F].gpu_busy_s);   /* the cases are what they say */
            else
                ck_assert(lay[CM_F].gpu_busy_s > 2 * lay[CM_F].host_s);
            workload_free(&w);
        }
    }
}
END_TEST

/* stage.first_layers / stage.last_layers: the fixed stages hold what they
 * are given, the others share the rest as the even split does, and a head-
 * alone last stage (0 layers) costs the head only. */
START_TEST(test_stage_layout)
{
    pg_status st;
    int lay[8];
    gpt_shape m = shape(4096, 32, 1024, 1, 1);
    m.layers = 30;
    ck_assert_int_eq(costmodel_stage_layers(&m, 4, lay, &st), 0);   /* even: 7 7 8 8 */
    ck_assert_int_eq(lay[0] + lay[1] * 10 + lay[2] * 100 + lay[3] * 1000, 7 + 70 + 800 + 8000);
    m.first_fixed = m.last_fixed = 1;
    m.first_layers = 6;
    m.last_layers = 5;                                                  /* 6 | 19 over 2: 9 10 | 5 */
    ck_assert_int_eq(costmodel_stage_layers(&m, 4, lay, &st), 0);
    ck_assert_int_eq(lay[0] + lay[1] * 10 + lay[2] * 100 + lay[3] * 1000, 6 + 90 + 1000 + 5000);
    m.first_fixed = 0;                                                  /* last alone: 25 over 3: 8 8 9 | 5 */
    ck_assert_int_eq(costmodel_stage_layers(&m, 4, lay, &st), 0);
    ck_assert_int_eq(lay[0] + lay[1] * 10 + lay[2] * 100 + lay[3] * 1000, 8 + 80 + 900 + 5000);
    m.last_layers = 0;                                                  /* the head alone: 30 over 3 */
    ck_assert_int_eq(costmodel_stage_layers(&m, 4, lay, &st), 0);
    ck_assert_int_eq(lay[0] + lay[1] * 10 + lay[2] * 100 + lay[3] * 1000, 10 + 100 + 1000 + 0);
    /* bad layouts name the key */
    m.last_layers = 28;                                                 /* 2 left for 3 stages */
    ck_assert_int_eq(costmodel_stage_layers(&m, 4, lay, &st), PG_EXIT_INPUT);
    ck_assert_str_eq(st.key, "stage.last_layers");
    m.last_layers = 0;
    m.first_fixed = 1;
    m.first_layers = 20;                                                /* two stages: both fixed, 10 lost */
    ck_assert_int_eq(costmodel_stage_layers(&m, 2, lay, &st), PG_EXIT_INPUT);
    m.last_layers = 10;
    ck_assert_int_eq(costmodel_stage_layers(&m, 2, lay, &st), 0);
    ck_assert_int_eq(lay[0] * 100 + lay[1], 2010);
    ck_assert_int_eq(costmodel_stage_layers(&m, 1, lay, &st), PG_EXIT_INPUT);   /* one stage: both ends */
    ck_assert_str_eq(st.key, "stage.first_layers");

    /* the built workload follows the layout: a head-alone last stage has no layer's time or params */
    gpu_params g = load("a100-80g");
    m = shape(4096, 32, 1024, 1, 1);
    m.layers = 6;
    m.last_fixed = 1;
    m.last_layers = 0;
    workload w, even;
    ck_assert_int_eq(costmodel_build_shape(&g, &m, 4, &w, &st), 0);
    m.last_fixed = 0;
    m.layers = 8;
    ck_assert_int_eq(costmodel_build_shape(&g, &m, 4, &even, &st), 0);
    ck_assert_int_eq(w.stage[3].layers, 0);
    for (int s = 0; s < 3; s++) {
        ck_assert_int_eq(w.stage[s].layers, 2);
        ck_assert_exact(w.stage[s].f_s, even.stage[s].f_s);
        ck_assert_exact(w.stage[s].param_count, even.stage[s].param_count);
    }
    op_cost head_cost[CM_OPS];
    costmodel_head(&g, &m, head_cost);
    ck_assert_rel(w.stage[3].f_s, head_cost[CM_F].time_s + g.v[GP_OP_OVERHEAD_S], 1e-9);
    ck_assert(even.stage[3].f_s > w.stage[3].f_s);
    ck_assert_rel(w.stage[3].param_count, even.stage[3].param_count - 2 * costmodel_layer_params(&m), 1e-9);
    workload_free(&w);
    workload_free(&even);
}
END_TEST

START_TEST(test_gpu_files_match_systems_and_have_sources)
{
    for (size_t k = 0; k < sizeof TYPES / sizeof TYPES[0]; k++) {
        gpu_params g = load(TYPES[k]);
        const gpu_system *sys = gpu_system_find(TYPES[k]);
        ck_assert_ptr_nonnull(sys);
        ck_assert_str_eq(g.name, TYPES[k]);
        ck_assert_exact(g.v[GP_PEAK_FLOPS], sys->speed_flops);
        ck_assert_exact(g.v[GP_NVLINK_BW], sys->nvlink_bw);
        ck_assert_exact(g.v[GP_PCIE_BW], sys->pcie_bw);
        for (int p = 0; p < GP_COUNT; p++)   /* an optional parameter may be absent: no value, no source */
            ck_assert_msg(strlen(g.source[p]) > 10 || gpu_param_absent(&g, (gpu_param_id)p),
                          "%s: %s has no source", TYPES[k], gpu_param_name((gpu_param_id)p));
        /* where the host waits: stated in every shipped file, never the loader's default */
        ck_assert_msg(strstr(g.kernel_queue_source, "not in the file") == NULL, "%s: no kernel_queue", TYPES[k]);
        /* the measured host link: every shipped type on PCIe has one with its source, never above the
         * datasheet PCIe rate; measured (PipeOffload: A100, H100) or saying it is borrowed.  Grace-Blackwell's
         * NVLink-C2C has no published measurement and borrows none (a PCIe measurement says nothing of it) */
        if (strncmp(sys->host_link, "PCIe", 4) != 0) {
            ck_assert_msg(!(g.host_link_bw > 0), "%s: a measured host link on %s", TYPES[k], sys->host_link);
            continue;
        }
        ck_assert_msg(g.host_link_bw > 0 && g.host_link_bw <= sys->pcie_bw, "%s: host link %g", TYPES[k],
                      g.host_link_bw);
        ck_assert(strncmp(g.host_link_source, "measured: PipeOffload", 21) == 0 ||
                  strncmp(g.host_link_source, "borrowed from ", 14) == 0);
    }
    /* Every fit chose a wait at every layer's end: A100's rows (Megatron-LM 2021-22, ninth round) and the
     * modern stack's (H100, and H200 / B200 that borrow its fit) once the documented regressions left the
     * fit (docs/validation.md, tenth round; with them the op's end won) */
    ck_assert_int_eq(load("a100-80g").host_waits_each_layer, 1);
    ck_assert_int_eq(load("h100-sxm").host_waits_each_layer, 1);
    ck_assert_int_eq(load("h200").host_waits_each_layer, 1);
    ck_assert_int_eq(load("b200").host_waits_each_layer, 1);
    /* PipeOffload's measured constants (its paper: B_o = 15 GB/s on A100, 21 GB/s on H100) */
    ck_assert_exact(load("a100-80g").host_link_bw, 15e9);
    ck_assert_exact(load("h100-sxm").host_link_bw, 21e9);
    /* H200 and B200 have no fit of their own: every parameter that is not a datasheet number is the H100
     * fit's, said to be borrowed (tools/borrow_fit.py writes them; a refit of the H100 must be copied).
     * Borrowed as the fit measured it, a fraction of peak or a time: gemm_half_flops is the GEMM's fixed
     * time at peak, so its FLOPs scale with the peak (B200 x 2250 / 989.4) */
    gpu_params h100 = load("h100-sxm");
    static const char *const BORROWERS[] = {"h200", "b200", "b300", "gb200", "gb300"};
    for (size_t t = 0; t < sizeof BORROWERS / sizeof BORROWERS[0]; t++) {
        gpu_params g = load(BORROWERS[t]);
        char line[512];
        gpu_params_summarize(&g, line, sizeof line);   /* run's cost model line names the fit they rest on */
        ck_assert_msg(strstr(line, "borrowed from the h100-sxm fit, NOT measured on") != NULL, "%s", line);
        for (int p = 0; p < GP_COUNT; p++) {
            if (gpu_param_basis_of(&g, (gpu_param_id)p) == GPB_DATASHEET || g.source[p][0] == '\0')
                continue;   /* a datasheet number, or an optional term neither file has */
            ck_assert_int_eq(gpu_param_basis_of(&g, (gpu_param_id)p), GPB_BORROWED);
            if (p == GP_GEMM_HALF_FLOPS) {
                ck_assert_rel(g.v[p] / g.v[GP_PEAK_FLOPS], h100.v[p] / h100.v[GP_PEAK_FLOPS], 1e-8);
                ck_assert_ptr_nonnull(strstr(g.source[p], "the same time per GEMM as the h100-sxm fit"));
                continue;
            }
            ck_assert_msg(g.v[p] == h100.v[p], "%s: %s %g is not the h100-sxm fit's %g", g.name,
                          gpu_param_name((gpu_param_id)p), g.v[p], h100.v[p]);
            ck_assert_ptr_nonnull(strstr(g.source[p], "assumed equal to the h100-sxm fit"));
        }
    }
    ck_assert(load("b200").v[GP_GEMM_HALF_FLOPS] > 2 * h100.v[GP_GEMM_HALF_FLOPS]);
}
END_TEST

static char *write_temp(const char *text)
{
    char *path = pg_xstrdup("/tmp/pg-costmodel-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* A GPU file made of good, then the block bad, fails to load with want in
 * the message, at line. */
static void expect_bad_block(const char *good, const char *bad, const char *want, int line)
{
    strbuf doc;
    sb_init(&doc);
    sb_appendf(&doc, "%s%s", good, bad);
    char *path = write_temp(doc.data);
    gpu_params back;
    pg_status st;
    ck_assert_int_eq(gpu_params_load(path, &back, &st), PG_EXIT_INPUT);
    ck_assert_msg(strstr(st.msg, want) != NULL, "%s", st.msg);
    char at[32];
    snprintf(at, sizeof at, ":%d: ", line);
    ck_assert_msg(strstr(st.msg, at) != NULL, "%s: want %s", st.msg, at);
    unlink(path);
    free(path);
    sb_free(&doc);
}

START_TEST(test_gpu_file_errors)
{
    gpu_params g = load("a100-80g"), back;
    strbuf sb;
    sb_init(&sb);
    gpu_params_write_yaml(&g, "round trip", &sb);
    char *path = write_temp(sb.data);
    pg_status st;
    ck_assert_int_eq(gpu_params_load(path, &back, &st), 0);
    for (int p = 0; p < GP_COUNT; p++) {
        ck_assert_rel(back.v[p], g.v[p], 1e-8);
        ck_assert_str_eq(back.source[p], g.source[p]);
    }
    ck_assert_rel(back.host_link_bw, g.host_link_bw, 1e-8);   /* calibrate writes the host link back */
    ck_assert_str_eq(back.host_link_source, g.host_link_source);
    ck_assert_ptr_nonnull(strstr(sb.data, "\nhost_link:\n  measured_bw: {value: 1.5e+10, source: \"measured:"));
    ck_assert_int_eq(back.host_waits_each_layer, 1);   /* and the kernel queue: a100-80g's host waits each layer */
    ck_assert_int_eq(back.host_waits_each_layer, g.host_waits_each_layer);
    ck_assert_str_eq(back.kernel_queue_source, g.kernel_queue_source);
    unlink(path);
    free(path);
    /* the kernel_queue block: optional (the host waits at the op's end), bad ones named with their line */
    char *queue = strstr(sb.data, "kernel_queue:");
    ck_assert_ptr_nonnull(queue);
    *queue = '\0';
    int queue_line = 1;
    for (const char *c = sb.data; *c; c++)
        queue_line += *c == '\n';
    path = write_temp(sb.data);
    ck_assert_int_eq(gpu_params_load(path, &back, &st), 0);
    ck_assert_int_eq(back.host_waits_each_layer, 0);
    ck_assert_ptr_nonnull(strstr(back.kernel_queue_source, "not in the file"));
    unlink(path);
    free(path);
    const char *bad_queue[][2] = {
        {"kernel_queue: {host_waits: always, source: s}\n", "key 'kernel_queue.host_waits': 'always': expected layer"},
        {"kernel_queue: {host_waits: op}\n", "key 'kernel_queue': expected {host_waits: layer|op, source: TEXT}"},
        {"kernel_queue: {host_waits: op, source: \"\"}\n", "key 'kernel_queue': expected {host_waits"},
        {"kernel_queue: layer\n", "key 'kernel_queue': expected {host_waits"},
        {NULL, "key 'kernel_queue': source is 600 characters long, at most 511"},   /* never cut */
    };
    char long_source[700];
    snprintf(long_source, sizeof long_source, "kernel_queue: {host_waits: op, source: %0600d}\n", 0);
    bad_queue[sizeof bad_queue / sizeof bad_queue[0] - 1][0] = long_source;
    for (size_t i = 0; i < sizeof bad_queue / sizeof bad_queue[0]; i++)
        expect_bad_block(sb.data, bad_queue[i][0], bad_queue[i][1], queue_line);
    sb_free(&sb);
    /* the host_link block: optional for the cost model, required by cluster.host_link=measured; bad ones named */
    g.host_link_bw = 0;
    sb_init(&sb);
    gpu_params_write_yaml(&g, NULL, &sb);
    ck_assert_ptr_null(strstr(sb.data, "host_link"));
    int params_lines = 0;
    for (const char *c = sb.data; *c; c++)
        params_lines += *c == '\n';
    path = write_temp(sb.data);
    ck_assert_int_eq(gpu_params_load(path, &back, &st), 0);
    ck_assert_exact(back.host_link_bw + 1, 1);
    ck_assert_int_eq(gpu_host_link_load(path, &back, &st), PG_EXIT_INPUT);
    ck_assert_str_eq(st.key, "cluster.host_link");
    ck_assert_ptr_nonnull(strstr(st.msg, "has no host_link block"));
    unlink(path);
    free(path);
    const char *bad[][2] = {
        {"host_link:\n  measured_bw: {value: 0, source: s}\n", "key 'host_link.measured_bw': must be positive"},
        {"host_link:\n  measured_bw: {value: 15GBps}\n", "key 'host_link.measured_bw': expected {value"},
        {"host_link:\n  rate: {value: 15GBps, source: s}\n", "key 'host_link': unknown key 'rate'"},
        {"host_link: 15GBps\n", "key 'host_link': expected a mapping"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)   /* the entry's (the block's) line */
        expect_bad_block(sb.data, bad[i][0], bad[i][1], params_lines + (i < 3 ? 2 : 1));
    sb_free(&sb);
    path = write_temp("name: x\nparams:\n  peak_flops: {value: 1Tf, source: \"\"}\n");
    ck_assert_int_eq(gpu_params_load(path, &back, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, ":3: key 'params.peak_flops': source must not be empty"));
    unlink(path);
    free(path);
    path = write_temp("name: x\nparams:\n  gemm_eff: {value: 1.5, source: s}\n");
    ck_assert_int_eq(gpu_params_load(path, &back, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "must be in (0, 1]"));
    unlink(path);
    free(path);
    path = write_temp("name: x\nparams:\n  tp_sync: {value: 1e-5, source: s}\n");
    ck_assert_int_eq(gpu_params_load(path, &back, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, ":3: key 'params.tp_sync': no longer part of the cost model"));
    unlink(path);
    free(path);
    path = write_temp("name: x\nparams:\n  warp_speed: {value: 9, source: s}\n");
    ck_assert_int_eq(gpu_params_load(path, &back, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "unknown GPU parameter"));
    unlink(path);
    free(path);
    ck_assert_int_eq(gpu_params_load("no-such-gpu", &back, &st), PG_EXIT_INPUT);
}
END_TEST

/* Measured layer profiles: the key names the layer's shape (not the
 * model's depth or vocabulary), a profile scales exactly the layer's
 * kernels, host and GPU alike, and nothing else. */
START_TEST(test_layer_profile_scales_the_layer_only)
{
    gpt_shape m = {.layers = 12, .hidden = 1024, .heads = 16, .seq = 1024, .vocab = 50304, .micro_batch = 2, .tp = 2,
                   .main_grad_bytes = 4};
    char key[LAYER_KEY_MAX], other[LAYER_KEY_MAX];
    costmodel_layer_key(&m, key, sizeof key);
    ck_assert_str_eq(key, "h1024 ffn4096 heads16 kv16 hd64 gelu layernorm bias dropout s1024 b2 tp2 legacy mg4");
    gpt_shape same = m;
    same.layers = 24;
    same.vocab = 51200;
    costmodel_layer_key(&same, other, sizeof other);
    ck_assert_str_eq(other, key);
    gpt_shape diff[5] = {m, m, m, m, m};
    diff[0].micro_batch = 4;
    diff[1].tp = 4;
    diff[2].flash = 1;
    diff[3].seq = 2048;
    diff[4].sequence_parallel = 1;
    for (int i = 0; i < 5; i++) {
        costmodel_layer_key(&diff[i], other, sizeof other);
        ck_assert_str_ne(other, key);
    }
    gpu_params g = load("a100-80g");
    g.nlayer_profiles = 0;   /* the shipped file profiles vTrain's shapes, this one among them */
    ck_assert_ptr_null(costmodel_layer_profile(&g, &m));
    op_cost plain[CM_OPS], scaled[CM_OPS], emb0[CM_OPS], emb1[CM_OPS], head0[CM_OPS], head1[CM_OPS];
    costmodel_layer(&g, &m, plain);
    costmodel_embedding(&g, &m, emb0);
    costmodel_head(&g, &m, head0);
    workload w0, w1;
    pg_status st;
    ck_assert_int_eq(costmodel_build_shape(&g, &m, 2, &w0, &st), 0);
    const double factor = 1.37;
    ck_assert_int_eq(gpu_params_set_layer_profile(&g, key, factor, 9, &st), 0);
    ck_assert_ptr_nonnull(costmodel_layer_profile(&g, &same));
    ck_assert_ptr_null(costmodel_layer_profile(&g, &diff[0]));
    costmodel_layer(&g, &m, scaled);
    costmodel_embedding(&g, &m, emb1);
    costmodel_head(&g, &m, head1);
    /* every kernel but the tensor-parallel all-reduces, whose bytes the links
     * carry at their own rate (the simulator runs them unscaled: op_cost) */
    gpt_shape sim = m;
    sim.tp_comm_simulated = 1;
    op_cost coll[CM_OPS];
    costmodel_layer(&g, &sim, coll);
    ck_assert(coll[CM_F].sim_coll_s > 0);
    for (int op = CM_F; op < CM_OPS; op++) {
        double comm_s = coll[op].sim_coll_s;
        ck_assert_rel(scaled[op].gpu_busy_s, factor * (plain[op].gpu_busy_s - comm_s) + comm_s, 1e-12);
        ck_assert_exact(scaled[op].gemm_flops, plain[op].gemm_flops);   /* the work is the same */
        ck_assert_exact(emb1[op].time_s, emb0[op].time_s);
        ck_assert_exact(head1[op].time_s, head0[op].time_s);
    }
    /* without tensor parallelism, the layer's whole queue scales */
    gpt_shape t1 = m;
    t1.tp = 1;
    costmodel_layer_key(&t1, other, sizeof other);
    ck_assert_int_eq(gpu_params_set_layer_profile(&g, other, 1.0, 9, &st), 0);
    costmodel_layer(&g, &t1, plain);
    g.layer_profile[g.nlayer_profiles - 1].factor = factor;
    costmodel_layer(&g, &t1, scaled);
    for (int op = CM_F; op < CM_OPS; op++) {
        ck_assert_rel(scaled[op].time_s, factor * plain[op].time_s, 1e-12);
        ck_assert_rel(scaled[op].host_s, factor * plain[op].host_s, 1e-12);
        ck_assert_rel(scaled[op].gpu_busy_s, factor * plain[op].gpu_busy_s, 1e-12);
    }
    g.nlayer_profiles--;
    /* the stages: their layers scaled, the first's embedding and the last's head not */
    ck_assert_int_eq(costmodel_build_shape(&g, &m, 2, &w1, &st), 0);
    for (int s = 0; s < 2; s++) {
        ck_assert(w1.stage[s].f_s > w0.stage[s].f_s * 1.2 && w1.stage[s].f_s < w0.stage[s].f_s * factor);
        ck_assert_rel(w1.stage[s].selective_s, factor * w0.stage[s].selective_s, 1e-12);
    }
    workload_free(&w0);
    workload_free(&w1);
    /* with the tp collectives overlapping their GEMMs, the exposed rest scales with the layer */
    gpt_shape ov = m;
    ov.tp_comm_overlap = 1;
    costmodel_layer_key(&ov, other, sizeof other);
    ck_assert_int_eq(gpu_params_set_layer_profile(&g, other, factor, 9, &st), 0);
    g.layer_profile[g.nlayer_profiles - 1].factor = 1.0;
    costmodel_layer(&g, &ov, plain);
    g.layer_profile[g.nlayer_profiles - 1].factor = factor;
    costmodel_layer(&g, &ov, scaled);
    for (int op = CM_F; op < CM_OPS; op++)
        ck_assert_rel(scaled[op].time_s, factor * plain[op].time_s, 1e-12);
    g.nlayer_profiles--;
    /* set replaces a key's profile; a key too long is refused */
    ck_assert_int_eq(gpu_params_set_layer_profile(&g, key, 0.9, 3, &st), 0);
    ck_assert_int_eq(g.nlayer_profiles, 1);
    ck_assert_exact(costmodel_layer_profile(&g, &m)->factor, 0.9);
    char longkey[LAYER_KEY_MAX + 8];
    memset(longkey, 'x', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    ck_assert_int_eq(gpu_params_set_layer_profile(&g, longkey, 1.0, 3, &st), PG_EXIT_INPUT);
}
END_TEST

/* The layer_profiles block: written and read back; bad entries named with
 * their line and key. */
START_TEST(test_layer_profiles_block)
{
    gpu_params g = load("a100-80g"), back;
    pg_status st;
    g.nlayer_profiles = 0;
    ck_assert_int_eq(gpu_params_set_layer_profile(&g, "h1024 s1024 b1 tp1", 1.25, 7, &st), 0);
    ck_assert_int_eq(gpu_params_set_layer_profile(&g, "h2048 s1024 b1 tp1", 0.8, 4, &st), 0);
    snprintf(g.layer_profiles_source, sizeof g.layer_profiles_source, "%s", "fitted on the test's rows");
    strbuf sb;
    sb_init(&sb);
    gpu_params_write_yaml(&g, NULL, &sb);
    char *path = write_temp(sb.data);
    ck_assert_int_eq(gpu_params_load(path, &back, &st), 0);
    ck_assert_int_eq(back.nlayer_profiles, 2);
    for (int i = 0; i < 2; i++) {
        ck_assert_str_eq(back.layer_profile[i].key, g.layer_profile[i].key);
        ck_assert_rel(back.layer_profile[i].factor, g.layer_profile[i].factor, 1e-9);
        ck_assert_int_eq(back.layer_profile[i].rows, g.layer_profile[i].rows);
    }
    ck_assert_str_eq(back.layer_profiles_source, g.layer_profiles_source);
    unlink(path);
    free(path);
    sb_free(&sb);
    g.nlayer_profiles = 0;   /* no profiles: no block */
    sb_init(&sb);
    gpu_params_write_yaml(&g, NULL, &sb);
    ck_assert_ptr_null(strstr(sb.data, "layer_profiles"));
    int lines = 0;
    for (const char *c = sb.data; *c; c++)
        lines += *c == '\n';
    const char *bad[][2] = {
        {"layer_profiles:\n  source: s\n  shapes:\n    - {key: a, factor: 0, rows: 3}\n",
         "key 'layer_profiles.shapes': factor '0': expected a number in [0.1, 10]"},
        {"layer_profiles:\n  source: s\n  shapes:\n    - {key: a, factor: 1.1, rows: 2.5}\n",
         "key 'layer_profiles.shapes': rows '2.5': expected a whole number"},
        {"layer_profiles:\n  source: s\n  shapes:\n    - {key: a, factor: 1.1}\n",
         "key 'layer_profiles.shapes': expected {key: TEXT, factor: NUMBER, rows: N}"},
        {"layer_profiles:\n  source: s\n  shapes:\n    - {key: a, factor: 1.1, rows: 3}\n"
         "    - {key: a, factor: 1.2, rows: 3}\n", "key 'layer_profiles.shapes': shape 'a' twice"},
        {"layer_profiles:\n  shapes: []\n", "key 'layer_profiles': expected {source: TEXT, shapes: [{key"},
        {"layer_profiles:\n  source: s\n  shapes: a\n", "key 'layer_profiles': expected {source"},
    };
    const int line_of[] = {4, 4, 4, 5, 1, 1};   /* counted from the block's first line */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_bad_block(sb.data, bad[i][0], bad[i][1], lines + line_of[i]);
    char long_key[LAYER_KEY_MAX + 96];   /* never cut: a cut key would name another shape */
    snprintf(long_key, sizeof long_key, "layer_profiles:\n  source: s\n  shapes:\n    - {key: %0*d, factor: 1, rows: 3}\n",
             LAYER_KEY_MAX, 0);
    expect_bad_block(sb.data, long_key, "key 'layer_profiles.shapes': key is 192 characters long, at most 191",
                     lines + 4);
    sb_free(&sb);
}
END_TEST

/* run's cost-model line: every parameter named exactly once, under the
 * basis its source gives it, each source said once. */
START_TEST(test_describe_names_each_parameter_and_its_basis)
{
    for (size_t t = 0; t < sizeof TYPES / sizeof TYPES[0]; t++) {
        gpu_params g = load(TYPES[t]);
        char out[2048];
        gpu_params_describe(&g, out, sizeof out);
        ck_assert_msg(strncmp(out, g.name, strlen(g.name)) == 0, "%s", out);
        ck_assert_ptr_nonnull(strstr(out, "datasheet peak_flops hbm_bw nvlink_bw pcie_bw"));
        for (int i = 0; i < GP_COUNT; i++) {
            char word[80];
            snprintf(word, sizeof word, " %s ", gpu_param_name((gpu_param_id)i));
            if (g.source[i][0] == '\0') {   /* an optional parameter the file lacks: not named */
                ck_assert_msg(strstr(out, word) == NULL, "%s: absent %s named in %s", TYPES[t], word, out);
                continue;
            }
            char padded[2100];
            snprintf(padded, sizeof padded, "%s ", out);
            for (char *c = padded; *c; c++)
                if (*c == ';' || *c == ':')
                    *c = ' ';
            const char *first = strstr(padded, word);
            ck_assert_msg(first != NULL, "%s: %s missing in %s", TYPES[t], word, out);
            const char *again = strstr(first + 1, word);
            /* a later hit may only be inside a quoted source, after '(' */
            ck_assert_msg(again == NULL || memchr(first, '(', (size_t)(again - first)) != NULL, "%s twice", word);
        }
        int borrowed = 0;
        for (int i = 0; i < GP_COUNT; i++)
            borrowed += gpu_param_basis_of(&g, (gpu_param_id)i) == GPB_BORROWED;
        ck_assert_int_eq(borrowed > 0, strstr(out, "NOT measured on this GPU type") != NULL);
        ck_assert_ptr_nonnull(strstr(out, g.host_waits_each_layer ? "; the host waits for the GPU at every layer's end"
                                                                  : "; the host waits for the GPU at each op's end only"));
    }
    /* two sources among the fitted parameters: two groups, each with its own source */
    gpu_params g = load("a100-80g");
    snprintf(g.source[GP_OP_OVERHEAD_S], sizeof g.source[0], "fitted on file B");
    snprintf(g.source[GP_GEMM_EFF], sizeof g.source[0], "not measured here: borrowed from x");
    char out[2048];
    gpu_params_describe(&g, out, sizeof out);
    ck_assert_ptr_nonnull(strstr(out, "; fitted op_overhead (fitted on file B)"));
    ck_assert_ptr_nonnull(strstr(out, "; borrowed, NOT measured on this GPU type: gemm_eff (not measured here: borrowed from x)"));
    char small[16];
    gpu_params_describe(&g, small, sizeof small);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("costmodel");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_layer_flops_closed_forms);
    tcase_add_test(tc, test_attention_kernels_have_their_own_efficiency);
    tcase_add_test(tc, test_flash_eff_absent_takes_attn_eff);
    tcase_add_test(tc, test_flash_terms_scale_the_attention_kernel);
    tcase_add_test(tc, test_memory_and_params_closed_forms);
    tcase_add_test(tc, test_times_monotone_in_size);
    tcase_add_test(tc, test_tp_divides_compute_adds_allreduce);
    tcase_add_test(tc, test_softmax_fallback);
    tcase_add_test(tc, test_gemm_busy_flops);
    tcase_add_test(tc, test_tp_comm_overlap_hides_under_gemm);
    tcase_add_test(tc, test_main_grad_accumulation);
    tcase_add_test(tc, test_fp8_casts);
    tcase_add_test(tc, test_packed_documents_scale_attention);
    tcase_add_test(tc, test_expert_tp1_same_flops_other_shapes);
    tcase_add_test(tc, test_build_fills_workload);
    tcase_add_test(tc, test_stage_op_is_one_kernel_queue);
    tcase_add_test(tc, test_stage_layout);
    tcase_add_test(tc, test_gpu_files_match_systems_and_have_sources);
    tcase_add_test(tc, test_gpu_file_errors);
    tcase_add_test(tc, test_describe_names_each_parameter_and_its_basis);
    tcase_add_test(tc, test_layer_profile_scales_the_layer_only);
    tcase_add_test(tc, test_layer_profiles_block);
    tcase_add_test(tc, test_lora_adapters_and_frozen_weights);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pg_run_suite(suite());
}
