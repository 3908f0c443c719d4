/* test_calib.c: the calib layer -- measured-row loading, the iteration
 * predictor (src/calib/itermodel.h), the fit and its cross-validated
 * selection (fit_select.h), Nelder-Mead. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calib/fit_select.h"
#include "calib/itermodel.h"
#include "calib/layer_fit.h"
#include "calib/nelder_mead.h"
#include "calib/rows.h"
#include "util/datapath.h"
#include "model/costmodel.h"
#include "model/experiment.h"
#include "gpufixture.h"
#include "testutil.h"


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

static const char CSV_HEADER[] = "\xEF\xBB\xBF# GPUs,global batch,micro batch,hidden size,attention heads,# layers,"
                                 "sequence length,tensor parallelism,data parallelism,pipeline parallelism,"
                                 "iteration time (ms)\n";

START_TEST(test_csv_errors_and_vocab)
{
    ck_assert_int_eq(megatron_padded_vocab(50257, 1), 50304);
    ck_assert_int_eq(megatron_padded_vocab(50257, 8), 51200);
    pg_status st;
    train_row *rows;
    int n;
    char *path = write_temp("# GPUs,global batch\n2,16\n");
    ck_assert_int_eq(train_csv_load(path, &rows, &n, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, ":1: key 'micro batch': missing column"));
    unlink(path);
    free(path);
    char buf[1024];
    snprintf(buf, sizeof buf, "%s2,16,8,1024,16,24,1024,1,1,2,372.1\n4,16,8,1024,16,24,1024,1,1,2,300\n", CSV_HEADER);
    path = write_temp(buf);
    ck_assert_int_eq(train_csv_load(path, &rows, &n, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, ":3: key '# GPUs': 4 GPUs but tp*dp*pp = 2"));
    unlink(path);
    free(path);
    snprintf(buf, sizeof buf, "%s2,16,8,1024,16,24,1024,1,1,2,-3\n", CSV_HEADER);
    path = write_temp(buf);
    ck_assert_int_eq(train_csv_load(path, &rows, &n, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, ":2: key 'iteration time (ms)'"));
    unlink(path);
    free(path);
}
END_TEST

START_TEST(test_split_is_deterministic)
{
    int a = 0, b = 0;
    for (int i = 0; i < 1440; i++) {
        a += iter_in_fit_part(i, 0.3);
        b += iter_in_fit_part(i, 0.3);
    }
    ck_assert_int_eq(a, b);
    ck_assert(a > 0.25 * 1440 && a < 0.35 * 1440);
}
END_TEST

/* pp = 1: the 1F1B iteration is m x (F + recomputed F + B + W) + the rest. */
START_TEST(test_predict_pp1_closed_form)
{
    gpu_params g = pure_rates();
    g.v[GP_ITER_OVERHEAD_S] = 0.01;
    train_row r = {.line = 2, .gpus = 2, .global_batch = 16, .micro_batch = 2, .hidden = 1024, .heads = 16,
                   .layers = 12, .seq = 1024, .vocab = 50304, .tp = 1, .dp = 2, .pp = 1, .measured_s = 1};
    calib_row_defaults(&r);   /* vTrain's setup: full recompute, fp32 gradients, one node */
    iter_set set;
    pg_status st;
    ck_assert_int_eq(iter_set_prepare(&set, &r, 1, &st), 0);
    iter_breakdown bd;
    ck_assert_int_eq(iter_predict(&g, &set, 0, &bd, &st), 0);
    gpt_shape m = {.layers = 12, .hidden = 1024, .heads = 16, .seq = 1024, .vocab = 50304, .micro_batch = 2, .tp = 1,
                   .main_grad_bytes = r.grad_bytes};
    workload w;
    ck_assert_int_eq(costmodel_build_shape(&g, &m, 1, &w, &st), 0);
    const stage_cost *sc = &w.stage[0];
    ck_assert_rel(bd.pipeline_s, 4 * (2 * sc->f_s + sc->b_s + sc->w_s), 1e-9);
    ck_assert_rel(bd.dp_allreduce_s, costmodel_allreduce_s(&g, r.grad_bytes * sc->param_count, 2), 1e-9);
    ck_assert_rel(bd.optimizer_s, costmodel_optimizer_s(&g, sc->param_count), 1e-9);
    ck_assert_rel(bd.total_s, bd.pipeline_s + bd.dp_allreduce_s + bd.optimizer_s + 0.01, 1e-9);
    workload_free(&w);
    iter_set_free(&set);
}
END_TEST

/* The hyper-parameter selection and the final fit read only the fit part:
 * rewriting the measured times of the other rows (to anything) changes
 * neither the cross-validation scores, the choice, nor a single bit of the
 * calibrated parameters; rewriting a fit row does change them. */
static void select_and_fit(train_row *rows, int n, const int *mask, gpu_params *g, cv_result *res, int *best)
{
    iter_set set;
    pg_status st;
    ck_assert_int_eq(iter_set_prepare(&set, rows, n, &st), 0);
    const fit_hyper cand[] = {{.max_weight = 0.0, .ratio_cap = FIT_RATIO_CAP},
                              {.max_weight = 1.0, .ratio_cap = FIT_RATIO_CAP}};
    *g = load("a100-80g");
    iter_fit_initial(g);
    const cv_targets targets = {.file_mape = 0.08, .overall_mape = 0.05, .max_err = 0.25};
    ck_assert_int_eq(cv_select(g, &set, mask, cand, 2, 3, &targets, res, best, &st), 0);
    ck_assert(*best >= 0 && *best < 2);
    error_stats fe;
    ck_assert_int_eq(iter_fit(g, &set, mask, &cand[*best], &fe, &st), 0);
    iter_set_free(&set);
}

/* N synthetic rows made by the model with known parameters, perturbed by a
 * deterministic +-10 % so no fit is exact; mask: 2 of every 3 rows in the
 * fit part; returns how many. */
static int synthetic_rows(train_row *rows, int n, int *mask)
{
    gpu_params truth = load("a100-80g");
    iter_fit_initial(&truth);
    truth.v[GP_KERNEL_LAUNCH_S] = 30e-6;
    truth.v[GP_GEMM_EFF] = 0.6;
    int nfit = 0;
    for (int i = 0; i < n; i++) {
        int tp = 1 << (i % 3), pp = 1 << ((i / 3) % 2), mb = 1 << (i % 4);
        rows[i] = (train_row){.line = i + 2, .global_batch = 32, .micro_batch = mb, .hidden = 1024 << (i % 2),
                              .heads = 16, .layers = 12 + 4 * (i % 3), .seq = 1024,
                              .vocab = megatron_padded_vocab(50257, tp), .tp = tp, .dp = 8 / (tp * pp), .pp = pp,
                              .gpus = 8, .measured_s = 1};
        calib_row_defaults(&rows[i]);
        mask[i] = i % 3 != 1;
        nfit += mask[i];
    }
    iter_set set;
    pg_status st;
    ck_assert_int_eq(iter_set_prepare(&set, rows, n, &st), 0);
    for (int i = 0; i < n; i++) {
        iter_breakdown bd;
        ck_assert_int_eq(iter_predict(&truth, &set, i, &bd, &st), 0);
        rows[i].measured_s = bd.total_s * (1.0 + 0.1 * ((i * 7 % 5) - 2) / 2.0);
    }
    iter_set_free(&set);
    return nfit;
}

START_TEST(test_selection_uses_no_heldout_row)
{
    enum { N = 18 };
    train_row rows[N];
    int mask[N];
    int nfit = synthetic_rows(rows, N, mask);   /* 12 fit rows, 6 held out */
    gpu_params g1, g2, g3;
    cv_result r1[2], r2[2], r3[2];
    int b1, b2, b3;
    select_and_fit(rows, N, mask, &g1, r1, &b1);
    for (int k = 0; k < 2; k++)
        ck_assert_int_eq(r1[k].plain.n, nfit);       /* every fit row scored once, out of fold */
    train_row changed[N];
    memcpy(changed, rows, sizeof rows);
    for (int i = 0; i < N; i++)
        if (!mask[i])
            changed[i].measured_s = rows[i].measured_s * (i % 2 ? 3.0 : 0.2);
    select_and_fit(changed, N, mask, &g2, r2, &b2);
    ck_assert_int_eq(b1, b2);
    for (int k = 0; k < 2; k++) {
        ck_assert(r1[k].plain.mape == r2[k].plain.mape && r1[k].plain.max_err == r2[k].plain.max_err);
        ck_assert(r1[k].profiled.mape == r2[k].profiled.mape && r1[k].profiled.score == r2[k].profiled.score);
    }
    ck_assert(memcmp(g1.v, g2.v, sizeof g1.v) == 0);
    /* the check can fail: a fit row's measurement does move the result */
    memcpy(changed, rows, sizeof rows);
    changed[0].measured_s *= 2.0;
    select_and_fit(changed, N, mask, &g3, r3, &b3);
    ck_assert(memcmp(g1.v, g3.v, sizeof g1.v) != 0);
}
END_TEST

/* Measured layer profiles: rows measured at the model's time with one
 * shape's layers 1.3x slower give that shape the factor 1.3 (and its rows
 * are then predicted exactly); a shape run in one layout only gets no
 * profile, nor does a shape of fewer rows than LAYER_FIT_MIN_ROWS; rows
 * outside the mask are not read. */
START_TEST(test_layer_profiles_recover_a_shape_factor)
{
    enum { N = 10 };
    train_row rows[N];
    /* shape A (h1024 mb1 tp1) in 4 rows and 2 layouts; shape B (h2048 mb2 tp2) in 3 rows of one layout;
     * shape C (h1024 mb2 tp1) in 2 rows of 2 layouts; row 9: A again, outside the mask */
    const int hidden[N] = {1024, 1024, 1024, 1024, 2048, 2048, 2048, 1024, 1024, 1024};
    const int mb[N] = {1, 1, 1, 1, 2, 2, 2, 2, 2, 1}, tp[N] = {1, 1, 1, 1, 2, 2, 2, 1, 1, 1};
    const int pp[N] = {1, 1, 2, 2, 1, 1, 1, 1, 2, 4}, layers[N] = {12, 16, 12, 16, 12, 16, 20, 12, 12, 24};
    int mask[N];
    for (int i = 0; i < N; i++) {
        rows[i] = (train_row){.line = i + 2, .global_batch = 32, .micro_batch = mb[i], .hidden = hidden[i],
                              .heads = 16, .layers = layers[i], .seq = 1024,
                              .vocab = megatron_padded_vocab(50257, tp[i]), .tp = tp[i], .dp = 8 / (tp[i] * pp[i]),
                              .pp = pp[i], .gpus = 8, .measured_s = 1};
        calib_row_defaults(&rows[i]);
        mask[i] = i < 9;
    }
    iter_set set;
    pg_status st;
    ck_assert_int_eq(iter_set_prepare(&set, rows, N, &st), 0);
    char key_a[LAYER_KEY_MAX], key_b[LAYER_KEY_MAX];
    iter_row_layer_key(&set, 0, key_a, sizeof key_a);
    iter_row_layer_key(&set, 4, key_b, sizeof key_b);
    ck_assert_str_ne(key_a, key_b);
    gpu_params truth = load("a100-80g");
    truth.nlayer_profiles = 0;   /* only the two below */
    ck_assert_int_eq(gpu_params_set_layer_profile(&truth, key_a, 1.3, 4, &st), 0);
    ck_assert_int_eq(gpu_params_set_layer_profile(&truth, key_b, 0.7, 3, &st), 0);
    for (int i = 0; i < N; i++) {
        iter_breakdown bd;
        ck_assert_int_eq(iter_predict(&truth, &set, i, &bd, &st), 0);
        rows[i].measured_s = bd.total_s * (i == 9 ? 5.0 : 1.0);   /* the unread row: far off */
    }
    gpu_params g = load("a100-80g");
    layer_fit_stats ls;
    ck_assert_int_eq(layer_profiles_fit(&g, &set, mask, &ls, &st), 0);
    ck_assert_int_eq(ls.shapes, 1);
    ck_assert_int_eq(ls.rows, 4);
    ck_assert_int_eq(ls.bounded, 0);
    ck_assert_int_eq(g.nlayer_profiles, 1);
    ck_assert_str_eq(g.layer_profile[0].key, key_a);
    ck_assert_rel(g.layer_profile[0].factor, 1.3, 1e-6);
    ck_assert_int_eq(g.layer_profile[0].rows, 4);
    for (int i = 0; i < 4; i++) {
        iter_breakdown bd;
        ck_assert_int_eq(iter_predict(&g, &set, i, &bd, &st), 0);
        ck_assert_rel(bd.total_s, rows[i].measured_s, 1e-6);
    }
    /* a factor beyond the bounds ends at the bound, and says so */
    for (int i = 0; i < 4; i++)
        rows[i].measured_s *= 3.0;
    ck_assert_int_eq(layer_profiles_fit(&g, &set, mask, &ls, &st), 0);
    ck_assert_int_eq(ls.bounded, 1);
    ck_assert_rel(g.layer_profile[0].factor, LAYER_FIT_FACTOR_MAX, 1e-6);
    iter_set_free(&set);
}
END_TEST

/* Rows of one attention kind fit that kind's efficiency; the other kind's,
 * which no row exercises, gets the same fitted value (not the starting
 * value); rows of both kinds fit both. */
START_TEST(test_fit_ties_the_attention_kernel_no_row_ran)
{
    enum { N = 12 };
    train_row rows[N];
    int mask[N];
    synthetic_rows(rows, N, mask);   /* vTrain's setup: legacy attention */
    const fit_hyper h = {.max_weight = 0.0, .ratio_cap = FIT_RATIO_CAP};
    for (int kind = 0; kind < 3; kind++) {   /* legacy, flash, both */
        for (int i = 0; i < N; i++)
            rows[i].flash = kind == 1 || (kind == 2 && i % 2);
        iter_set set;
        pg_status st;
        ck_assert_int_eq(iter_set_prepare(&set, rows, N, &st), 0);
        gpu_params g = load("a100-80g");
        iter_fit_initial(&g);
        int exercised[GP_COUNT];
        for (int k = 0; k < GP_COUNT; k++)
            exercised[k] = iter_param_exercised(&g, &set, mask, (gpu_param_id)k);
        ck_assert_int_eq(exercised[GP_ATTN_EFF], kind != 1);
        ck_assert_int_eq(exercised[GP_FLASH_EFF], kind != 0);
        ck_assert_int_eq(iter_attention_tied(exercised), kind == 0 ? GP_FLASH_EFF : kind == 1 ? GP_ATTN_EFF : -1);
        error_stats e;
        ck_assert_int_eq(iter_fit(&g, &set, mask, &h, &e, &st), 0);
        if (kind < 2)
            ck_assert_exact(g.v[GP_FLASH_EFF], g.v[GP_ATTN_EFF]);
        ck_assert(g.v[kind == 1 ? GP_FLASH_EFF : GP_ATTN_EFF] != 0.5);   /* moved from the start */
        iter_set_free(&set);
    }
}
END_TEST

/* synthetic_rows in two files (row i in file i % 2), prepared as set. */
static void synthetic_two_file_set(iter_set *set, train_row *rows, int n, int *mask)
{
    synthetic_rows(rows, n, mask);
    for (int i = 0; i < n; i++)
        rows[i].file = i % 2;
    pg_status st;
    ck_assert_int_eq(iter_set_prepare(set, rows, n, &st), 0);
}

/* Each file's MAPE, worked by hand: file 0 has rows off by 10 % and 20 %,
 * file 1 one row off by 5 % and one masked out (off by 90 %). */
START_TEST(test_worst_file_mape)
{
    enum { N = 4 };
    train_row rows[N];
    int mask[N];
    iter_set set;
    synthetic_two_file_set(&set, rows, N, mask);   /* files 0, 1, 0, 1 */
    const int in[N] = {1, 1, 1, 0};
    const double off[N] = {0.10, 0.05, -0.20, 0.90};
    double pred[N];
    for (int i = 0; i < N; i++)
        pred[i] = rows[i].measured_s * (1.0 + off[i]);
    ck_assert_rel(iter_worst_file_mape(&set, pred, in), 0.15, 1e-12);          /* (10 + 20) / 2 */
    ck_assert_rel(iter_errors_by_file(&set, pred, in).mape, 0.10, 1e-12);      /* (15 + 5) / 2 */
    ck_assert_rel(iter_errors(&set, pred, in).mape, 0.35 / 3, 1e-12);          /* (10 + 20 + 5) / 3 */
    ck_assert_rel(iter_worst_file_mape(&set, pred, NULL), 0.475, 1e-12);       /* file 1: (5 + 90) / 2 */
    iter_set_free(&set);
}
END_TEST

/* The floor of the MAPE, worked by hand: one job measured at 10, 10 and
 * 20 s costs at least 0.5 (predicted 10 s), a job measured once nothing; a
 * row that differs in one setting (tp) is another job even when predicted
 * alike. */
START_TEST(test_mape_floor)
{
    enum { N = 5 };
    train_row rows[N];
    int mask[N];
    synthetic_rows(rows, N, mask);
    const double measured_s[N] = {10, 10, 20, 5, 20};
    for (int i = 1; i < N; i++) {
        int line = rows[i].line;
        rows[i] = rows[0];
        rows[i].line = line;
    }
    rows[3].tp *= 2;
    rows[4].capacity_factor = 1.0;        /* token dropping: another job, though the same prediction */
    for (int i = 0; i < N; i++)
        rows[i].measured_s = measured_s[i];
    iter_set set;
    pg_status st;
    ck_assert_int_eq(iter_set_prepare(&set, rows, N, &st), 0);
    const double pred[N] = {7, 7, 7, 7, 7};   /* the floor does not depend on the prediction's value */
    ck_assert_rel(iter_mape_floor(&set, pred, NULL), 0.5 / N, 1e-12);
    const int without_20s[N] = {1, 1, 0, 1, 1}, only_20s_and_another[N] = {0, 1, 1, 1, 0};
    ck_assert_rel(iter_mape_floor(&set, pred, without_20s), 0.0, 1e-12);
    ck_assert_rel(iter_mape_floor(&set, pred, only_20s_and_another), 0.5 / 3, 1e-12);   /* t 10: 0 + 1 / 2 */
    /* no model goes below it: the model's own MAPE here is above */
    ck_assert(iter_errors(&set, pred, NULL).mape >= iter_mape_floor(&set, pred, NULL));
    iter_set_free(&set);
}
END_TEST

/* The cross-validation score is the acceptance's: the worst file's MAPE
 * against the per-file target, all rows' against the overall one; the
 * largest error counts only when a target is given for it. */
START_TEST(test_cv_score_is_the_acceptance)
{
    enum { N = 18 };
    train_row rows[N];
    int mask[N];
    iter_set set;
    synthetic_two_file_set(&set, rows, N, mask);
    pg_status st;
    gpu_params g = load("a100-80g");
    iter_fit_initial(&g);
    const fit_hyper h = {.max_weight = 0.0, .ratio_cap = FIT_RATIO_CAP};
    cv_targets t = {.file_mape = 0.08, .overall_mape = 0.05};
    cv_result r;
    ck_assert_int_eq(cv_evaluate(&g, &set, mask, &h, 3, &t, &r, &st), 0);
    const cv_errors *p = &r.plain;
    ck_assert(p->worst_file_mape >= p->mape && p->max_err >= p->worst_file_mape && p->overall_mape > 0);
    ck_assert(p->score == fmax(p->worst_file_mape / 0.08, p->overall_mape / 0.05));
    t.max_err = p->max_err / 100.0;      /* a target the largest error misses by far: it sets the score */
    cv_result rm;
    ck_assert_int_eq(cv_evaluate(&g, &set, mask, &h, 3, &t, &rm, &st), 0);
    ck_assert(rm.plain.max_err == p->max_err);
    ck_assert_rel(rm.plain.score, 100.0, 1e-12);
    iter_set_free(&set);
}
END_TEST

START_TEST(test_folds_deterministic_and_balanced)
{
    int count[CV_DEFAULT_FOLDS] = {0};
    for (int i = 0; i < 1440; i++) {
        int k = cv_fold_of(i, CV_DEFAULT_FOLDS);
        ck_assert(k >= 0 && k < CV_DEFAULT_FOLDS);
        ck_assert_int_eq(k, cv_fold_of(i, CV_DEFAULT_FOLDS));
        count[k]++;
    }
    for (int k = 0; k < CV_DEFAULT_FOLDS; k++)
        ck_assert(count[k] > 0.8 * 1440 / CV_DEFAULT_FOLDS && count[k] < 1.2 * 1440 / CV_DEFAULT_FOLDS);
}
END_TEST


/* Calibration on a synthetic CSV made by the model itself recovers the
 * parameters that made it. */
START_TEST(test_calibrate_recovers_synthetic)
{
    gpu_params truth = load("a100-80g");
    truth.v[GP_GEMM_EFF] = 0.7;
    truth.v[GP_GEMM_HALF_FLOPS] = 2e9;
    truth.v[GP_ATTN_EFF] = 0.4;
    truth.v[GP_MEM_EFF] = 0.8;
    truth.v[GP_KERNEL_LAUNCH_S] = 20e-6;
    truth.v[GP_COLL_LATENCY_S] = 10e-6;
    truth.v[GP_COLL_BW_EFF] = 0.6;
    truth.v[GP_ITER_OVERHEAD_S] = 5e-3;
    truth.v[GP_OP_OVERHEAD_S] = 0.2e-3;
    const int cfg[][6] = {/* gbs, mb, h, L, tp, pp (dp = 8 / (tp pp)) */
                          {16, 1, 1024, 12, 1, 1}, {16, 4, 2048, 12, 1, 2}, {32, 8, 2048, 24, 2, 2},
                          {8, 1, 1024, 24, 8, 1},  {64, 2, 2048, 16, 4, 1}, {16, 2, 1024, 16, 2, 4},
                          {32, 1, 2048, 20, 1, 4}, {8, 8, 4096, 8, 8, 1},   {64, 4, 4096, 8, 4, 2},
                          {16, 2, 1024, 12, 1, 8}, {32, 8, 1024, 24, 2, 1}, {8, 1, 4096, 16, 2, 2}};
    int n = sizeof cfg / sizeof cfg[0];
    train_row rows[sizeof cfg / sizeof cfg[0]];
    for (int i = 0; i < n; i++) {
        rows[i] = (train_row){.line = i + 2, .global_batch = cfg[i][0], .micro_batch = cfg[i][1],
                              .hidden = cfg[i][2], .heads = 16, .layers = cfg[i][3], .seq = 1024,
                              .vocab = megatron_padded_vocab(50257, cfg[i][4]), .tp = cfg[i][4],
                              .dp = 8 / (cfg[i][4] * cfg[i][5]), .pp = cfg[i][5], .gpus = 8, .measured_s = 1};
        calib_row_defaults(&rows[i]);
    }
    iter_set set;
    pg_status st;
    ck_assert_int_eq(iter_set_prepare(&set, rows, n, &st), 0);
    for (int i = 0; i < n; i++) {
        iter_breakdown bd;
        ck_assert_int_eq(iter_predict(&truth, &set, i, &bd, &st), 0);
        rows[i].measured_s = bd.total_s;
    }
    gpu_params g = truth;
    for (int p = 0; p < GP_COUNT; p++)
        if (gpu_param_fitted((gpu_param_id)p))
            g.v[p] *= (p % 2) ? 1.3 : 0.75;   /* start away from the truth */
    error_stats fe;
    fit_hyper h = {.max_weight = 0.0, .ratio_cap = FIT_RATIO_CAP};
    ck_assert_int_eq(iter_fit(&g, &set, NULL, &h, &fe, &st), 0);
    ck_assert_msg(fe.mape < 0.005, "fit MAPE %g", fe.mape);
    /* the parameters the rows depend on strongly come back */
    ck_assert_rel(g.v[GP_KERNEL_LAUNCH_S], truth.v[GP_KERNEL_LAUNCH_S], 0.1);
    ck_assert_rel(g.v[GP_GEMM_EFF] * 1e3, truth.v[GP_GEMM_EFF] * 1e3, 0.1);
    /* rows made by a GPU whose memory kernels and collectives run far below
     * the physical bounds: the fit stops at the bounds, never below */
    truth.v[GP_MEM_EFF] = FIT_MEM_EFF_FLOOR / 4;
    truth.v[GP_COLL_BW_EFF] = FIT_COLL_BW_EFF_FLOOR / 4;
    for (int i = 0; i < n; i++) {
        iter_breakdown bd;
        ck_assert_int_eq(iter_predict(&truth, &set, i, &bd, &st), 0);
        rows[i].measured_s = bd.total_s;
    }
    ck_assert_int_eq(iter_fit(&g, &set, NULL, &h, &fe, &st), 0);
    ck_assert_exact(g.v[GP_MEM_EFF], FIT_MEM_EFF_FLOOR);
    ck_assert_exact(g.v[GP_COLL_BW_EFF], FIT_COLL_BW_EFF_FLOOR);
    iter_set_free(&set);
}
END_TEST

/* Nelder-Mead finds the minimum of a shifted quadratic bowl, and the same
 * start gives the same point (determinism is part of its contract). */
static double bowl(const double *x, void *ctx)
{
    const double *c = ctx;
    return (x[0] - c[0]) * (x[0] - c[0]) + 3.0 * (x[1] - c[1]) * (x[1] - c[1]);
}

START_TEST(test_nelder_mead_bowl)
{
    double centre[2] = {1.5, -0.75};
    double x[2] = {0, 0}, y[2] = {0, 0}, step[2] = {0.5, 0.5};
    double fx = nm_minimize(bowl, centre, x, step, 2, 2000, 1e-14);
    double fy = nm_minimize(bowl, centre, y, step, 2, 2000, 1e-14);
    ck_assert_double_le(fx, 1e-10);
    ck_assert(fabs(x[0] - centre[0]) < 1e-4 && fabs(x[1] - centre[1]) < 1e-4);
    ck_assert(x[0] == y[0] && x[1] == y[1] && fx == fy);
}
END_TEST

/* The predictor times its pipeline with the schedule layer's evaluator:
 * per-stage durations that are all equal give exactly sched_eval_ideal's
 * makespan; making one stage slower lengthens it, and by at most the
 * extra work (the makespan of a fixed op order is a longest path through
 * the ops, which holds each op once). */
START_TEST(test_staged_evaluator_matches_ideal)
{
    pg_status st;
    schedule s;
    sched_params p = {.pp = 4, .m = 8, .chunks = 1};
    ck_assert_int_eq(sched_generate("1f1b", &p, &s, &st), 0);
    double (*dur)[OP_KIND_COUNT] = pg_xcalloc((size_t)s.nstages, sizeof *dur);
    const double tf = 1.0, tb = 2.0, tw = 0.5, tc = 0.1;
    for (int k = 0; k < s.nstages; k++) {
        dur[k][OP_F] = tf;
        dur[k][OP_B] = tb;
        dur[k][OP_W] = tw;
        dur[k][OP_BW] = tb + tw;
    }
    sched_times a, b;
    ck_assert_int_eq(sched_eval_ideal(&s, tf, tb, tw, tc, &a, &st), 0);
    ck_assert_int_eq(sched_eval_staged(&s, (const double (*)[OP_KIND_COUNT])dur, tc, &b, &st), 0);
    ck_assert_double_eq_tol(a.makespan, b.makespan, 1e-9 * a.makespan);
    sched_times_free(&s, &b);
    dur[s.nstages - 1][OP_F] += 1.0;  /* a heavier last stage (the LM head) */
    ck_assert_int_eq(sched_eval_staged(&s, (const double (*)[OP_KIND_COUNT])dur, tc, &b, &st), 0);
    ck_assert_double_gt(b.makespan, a.makespan);
    ck_assert_double_le(b.makespan, a.makespan + p.m * 1.0 + 1e-9);
    sched_times_free(&s, &a);
    sched_times_free(&s, &b);
    free(dur);
    sched_free(&s);
}
END_TEST

/* ---- the shipped validation files (data/validation) ---- */

static calib_rows load_shipped(const char *rel)
{
    char path[4096];
    ck_assert_msg(datapath_find(rel, path, sizeof path) == 0, "%s not found", rel);
    calib_rows r;
    pg_status st;
    int rc = calib_rows_load(path, 0, &r, &st);
    ck_assert_msg(rc == 0, "%s", st.msg);
    return r;
}

static int skipped_with(const calib_rows *r, const char *reason_part)
{
    int n = 0;
    for (int i = 0; i < r->nskip; i++)
        n += strstr(r->skip[i].reason, reason_part) != NULL;
    return n;
}

/* Every row of every file is either a job to predict or listed with its
 * reason; the counts are the files' own (README of ../shared/validation). */
START_TEST(test_loaders_account_for_every_row)
{
    calib_rows r = load_shipped("data/validation/vtrain/ground_truth_single.csv");
    ck_assert_int_eq(r.n, 1440);
    ck_assert_int_eq(r.nskip, 0);
    ck_assert_str_eq(r.source, "vtrain_single");
    ck_assert_str_eq(r.row[0].gpu, "a100-80g");
    ck_assert_int_eq(r.row[0].recompute, ROW_RECOMPUTE_FULL);
    calib_rows_free(&r);

    r = load_shipped("data/validation/vtrain/ground_truth_multi_pp1.csv");
    ck_assert_int_eq(r.n + r.nskip, 28);
    ck_assert_str_eq(r.source, "vtrain_multi");
    ck_assert_double_eq(r.row[0].nic_bw, 100e9 / 8);   /* 8x 100 Gb/s per node: one NIC per GPU */
    calib_rows_free(&r);

    r = load_shipped("data/validation/megatron/korthikanti.csv");
    ck_assert_int_eq(r.n, 9);
    int interleaved = 0, selective = 0;
    for (int i = 0; i < r.n; i++) {
        interleaved += r.row[i].vp == 3;
        selective += r.row[i].recompute == ROW_RECOMPUTE_SELECTIVE && r.row[i].sequence_parallel;
    }
    ck_assert_int_eq(interleaved, 5);   /* 175B and 530B (x2 recompute modes) and 530B dp 8 */
    ck_assert_int_eq(selective, 5);
    calib_rows_free(&r);

    r = load_shipped("data/validation/megatron/korthikanti_table4_layer.csv");
    ck_assert_int_eq(r.n, 5);
    ck_assert_int_eq(r.row[0].kind, ROW_LAYER);
    ck_assert_double_eq_tol(r.row[0].measured_s, (7.7 + 11.9) / 1000.0, 1e-12);
    calib_rows_free(&r);

    r = load_shipped("data/validation/modern/nemo_perf_summary_2407.csv");
    ck_assert_int_eq(r.n + r.nskip, 54);
    /* LoRA rows are predicted: NeMo 1.0's default adapters, rank 32 on the QKV projection */
    ck_assert_int_eq(skipped_with(&r, "LoRA"), 0);
    int lora = 0;
    for (int i = 0; i < r.n; i++) {
        ck_assert_str_eq(r.row[i].gpu, "h100-sxm");
        ck_assert(r.row[i].has_arch && r.row[i].fp8);
        if (strstr(r.row[i].label, "LoRA")) {
            ck_assert_int_eq(r.row[i].lora_rank, 32);
            ck_assert_int_eq(r.row[i].lora_qkv_only, 1);
            ck_assert_ptr_nonnull(iter_row_unmodelled(&r.row[i]));   /* the surrogate trains every weight */
            lora++;
        } else
            ck_assert_int_eq(r.row[i].lora_rank, 0);
    }
    ck_assert_int_eq(lora, 9);
    calib_rows_free(&r);

    r = load_shipped("data/validation/modern/mbridge_perf_summary.csv");
    ck_assert_int_eq(r.n + r.nskip, 292);
    /* models.csv gives GPT-OSS's windows and DeepSeek-V3's MLA only in free text: GPT-OSS's rows take the
     * shipped config (row_model_profile) and are predicted; DeepSeek-V3's config is held back (named in the
     * reason); Nemotron-3 Nano, absent from models.csv, takes its shipped config too */
    ck_assert_int_eq(skipped_with(&r, "sliding-window"), 0);
    ck_assert_int_eq(skipped_with(&r, "MLA"), 0);
    ck_assert_int_eq(skipped_with(&r, "'deepseek-v3'"), 0);   /* no longer held back: 1-5 s per GPU type's rows */
    ck_assert_int_eq(skipped_with(&r, "'nemotron3-nano'"), 0);   /* its 20 rows, H100 to GB300, are predicted */
    ck_assert_int_eq(skipped_with(&r, "'nemotron3-super' not given"), 30);   /* no config shipped */
    int windowed = 0, mtp = 0, deepseek = 0;
    for (int i = 0; i < r.n; i++) {
        windowed += r.row[i].arch.sliding_window > 0;
        mtp += r.row[i].arch.mtp_layers > 0;
        deepseek += strncmp(r.row[i].label, "DeepSeekV3", 10) == 0;
    }
    ck_assert_int_gt(windowed, 0);
    /* every DeepSeek-V3 row, H100 to GB300, with its config's multi-token prediction module (the only
     * model of the summaries that has one), but one whose ep exceeds its GPUs (skipped, named) */
    ck_assert_int_eq(deepseek, 33);
    ck_assert_int_eq(mtp, deepseek);
    /* every system has its profile and every precision its recipe (docs/blackwell.md) */
    ck_assert_int_eq(skipped_with(&r, "no profile"), 0);
    ck_assert_int_eq(skipped_with(&r, "FP4"), 0);
    int h100 = 0, b200 = 0, b300 = 0, gb200 = 0, gb300 = 0, nvfp4 = 0, mxfp8 = 0, edge_chunks = 0,
        deepseek_layouts = 0;
    lora = 0;
    /* Megatron's layout with the embedding and the loss as chunks of their own (Llama-3.1-405B's 126 layers
     * at pp 16 x vp 8 on GB200): the first and last model chunks hold no layer */
    ck_assert_int_eq(skipped_with(&r, "model chunks"), 0);
    for (int i = 0; i < r.n; i++) {
        const train_row *t = &r.row[i];
        if ((long)t->pp * t->vp > t->layers) {
            ck_assert_int_eq((long)t->pp * t->vp, t->layers + 2);
            ck_assert(t->first_layers == 0 && t->last_layers == 0);
            edge_chunks++;
        } else if (strncmp(t->label, "DeepSeekV3", 10) == 0 && t->first_layers >= 0) {
            /* the recipes' layout: k layers a chunk, the embedding on the first, k - 3 and the MTP module
             * and the loss on the last (16 chunks: 4 and 1), or H100's "Et|(tt|)*30mL" (1 and 0) */
            int chunks = t->pp * t->vp;
            if (strcmp(t->gpu, "h100-sxm") == 0 && chunks == 32)
                ck_assert(t->first_layers == 1 && t->last_layers == 0);
            else
                ck_assert(t->first_layers == (t->layers + 3) / chunks && t->last_layers == t->first_layers - 3);
            deepseek_layouts++;
        } else
            ck_assert(t->first_layers < 0 && t->last_layers < 0);
        /* Megatron-Bridge's LoRA: rank 32 on every linear layer */
        if (strstr(t->label, "LoRA")) {
            ck_assert(t->lora_rank == 32 && !t->lora_qkv_only);
            lora++;
        }
        h100 += strcmp(t->gpu, "h100-sxm") == 0;
        b200 += strcmp(t->gpu, "b200") == 0;
        b300 += strcmp(t->gpu, "b300") == 0;
        gb200 += strcmp(t->gpu, "gb200") == 0;
        gb300 += strcmp(t->gpu, "gb300") == 0;
        /* a rack-scale row's "node" is the 64-GPU NVLink domain its job ran in, a DGX row's its node */
        ck_assert_int_eq(t->gpus_per_node, t->gpu[0] == 'g' ? 64 : DGX_GPUS_PER_NODE);
        if (strstr(t->label, "| NVFP4 ")) {
            ck_assert_int_eq(t->fp8, PRECISION_NVFP4);
            nvfp4++;
        }
        if (strstr(t->label, "| MXFP8 ") || strstr(t->label, "| FP8-MX ")) {
            ck_assert_int_eq(t->fp8, PRECISION_MXFP8);
            mxfp8++;
        }
        /* a label cut right after "FP8 " ("| FP8  pretrain": DeepSeek-V3's long 25.09 names) is either of
         * 25.09's two values: the recipe comes from the precision column, which the label cannot check */
        if (strstr(t->label, "| FP8-CS ") ||
            (strstr(t->label, "| FP8 ") && !strstr(t->label, "| FP8 blockwis") && !strstr(t->label, "| FP8  ")))
            ck_assert_msg(t->fp8 == PRECISION_FP8, "%s: recipe %d", t->label, t->fp8);
        /* 25.09's parenthesised values (labels cut at 40 characters): MXFP8 on Blackwell, blocks on Hopper */
        if (strstr(t->label, "| FP8 blockwis"))
            ck_assert_int_eq(t->fp8, strcmp(t->gpu, "h100-sxm") == 0 ? PRECISION_FP8_BLOCK : PRECISION_MXFP8);
        if (strstr(t->label, "| BF16 "))
            ck_assert_int_eq(t->fp8, PRECISION_BF16);
    }
    ck_assert_int_gt(h100, 20);
    ck_assert_int_gt(b200, 10);
    ck_assert_int_gt(b300, 5);
    ck_assert_int_gt(gb200, 40);
    ck_assert_int_gt(gb300, 40);
    ck_assert_int_gt(nvfp4, 5);
    ck_assert_int_gt(mxfp8, 20);
    ck_assert_int_eq(edge_chunks, 9);
    /* of the 33 DeepSeek-V3 rows, all but GB300's 2 at pp 2 x vp 4 and GB200's one at pp 8 x vp 4 (no layout
     * the recipes give) */
    ck_assert_int_eq(deepseek_layouts, 30);
    ck_assert_int_eq(lora, 5);
    calib_rows_free(&r);

    /* PipeOffload's Figure 15: the 16 bars with an MFU are jobs (the schedule, chunks, layers of the edge
     * stages, preset, LGD and host link of the figure's runs), the 6 out-of-memory bars are listed */
    r = load_shipped("data/validation/pipeoffload/fig15_10.5b.csv");
    ck_assert_str_eq(r.source, "pipeoffload_fig15");
    ck_assert_int_eq(r.n, 16);
    ck_assert_int_eq(skipped_with(&r, "out of memory in the paper's run"), 6);
    ck_assert_int_eq(r.nskip, 6);
    const train_row *one_f = &r.row[0], *po_h = NULL;
    for (int i = 0; i < r.n; i++)
        if (strcmp(r.row[i].label, "10.5B PO-H s16384") == 0)
            po_h = &r.row[i];
    ck_assert_ptr_nonnull(po_h);
    ck_assert_str_eq(one_f->schedule, "1f1b");
    ck_assert_int_eq(one_f->first_layers, 4);
    ck_assert_int_eq(one_f->vp, 1);
    ck_assert_str_eq(po_h->schedule, "gis-h");
    ck_assert_str_eq(po_h->offload_preset, "po-h");
    ck_assert_int_eq(po_h->vp, 5);
    ck_assert_int_eq(po_h->first_layers, 0);
    ck_assert_int_eq(po_h->last_layers, 0);
    ck_assert_int_eq(po_h->recompute, ROW_RECOMPUTE_LGD);
    ck_assert(po_h->host_link_measured && po_h->flash && po_h->has_arch);
    ck_assert_int_eq(po_h->pp * po_h->tp * po_h->dp, 8);
    ck_assert_int_eq(po_h->global_batch, 64);
    /* 63 % MFU on 8 A100s (312 TFLOP/s): Megatron's model FLOPs of 64 samples of 16384 tokens, by hand for
     * the 10.5B (38 layers, h 5120, 40 heads of 128, 8 key/value heads, GeLU MLP 4h, vocabulary 32000,
     * untied head): per token and layer 2 (h (q + 2 kv) + h o + 2 h 4h) + 2 x 2 s h (QK^T, AV over the whole
     * s x s), plus the head's 2 h V; x3 for forward and backward */
    double h = 5120, s_len = 16384, kv = 8 * 128, V = 32000;
    double layer = 2 * (h * (h + 2 * kv) + h * h + 2 * h * 4 * h) + 2 * 2 * s_len * h;
    double flops = 3 * 64 * s_len * (38 * layer + 2 * h * V);
    ck_assert_double_eq_tol(po_h->measured_mfu, 0.63, 1e-12);
    ck_assert_double_eq_tol(po_h->measured_s / (flops / (0.63 * 312e12 * 8)), 1.0, 1e-9);
    /* the surrogate models none of them: calibrate leaves them out, validate simulates them */
    ck_assert_ptr_nonnull(iter_row_unmodelled(po_h));
    ck_assert_ptr_nonnull(iter_row_unmodelled(one_f));   /* LGD and 4 layers on the edge stages */
    calib_rows_free(&r);
}
END_TEST

/* The releases NVIDIA documented as regressions of a configuration
 * (regressions.csv: Megatron-Bridge issue #1998, Qwen3-30B dropless in 25.11
 * and 26.02 on H100 and B200; PR #1760, Qwen3-235B on B200 in 25.11) are
 * listed as skipped with their source, only those rows (not the same
 * configuration's token-dropping twin, not another release's), and kept as
 * jobs with CALIB_KEEP_REGRESSIONS. */
START_TEST(test_documented_regressions_are_listed)
{
    static const int lines[] = {230, 231, 261, 262, 267};
    enum { NLINES = sizeof lines / sizeof lines[0] };
    calib_rows r = load_shipped("data/validation/modern/mbridge_perf_summary.csv");
    ck_assert_int_eq(skipped_with(&r, "documented software regression"), NLINES);
    int seen = 0;
    for (int i = 0; i < r.nskip; i++) {
        if (!strstr(r.skip[i].reason, "documented software regression"))
            continue;
        ck_assert_ptr_nonnull(strstr(r.skip[i].reason, "https://github.com/NVIDIA-NeMo/Megatron-Bridge/"));
        ck_assert_ptr_null(strstr(r.skip[i].label, "(tokendrop)"));
        for (int k = 0; k < NLINES; k++)
            seen += r.skip[i].line == lines[k];
    }
    ck_assert_int_eq(seen, NLINES);
    int n = r.n, nskip = r.nskip;
    calib_rows_free(&r);

    char path[4096];
    pg_status st;
    ck_assert(datapath_find("data/validation/modern/mbridge_perf_summary.csv", path, sizeof path) == 0);
    ck_assert_int_eq(calib_rows_load(path, CALIB_KEEP_REGRESSIONS, &r, &st), 0);
    ck_assert_int_eq(r.n, n + NLINES);
    ck_assert_int_eq(r.nskip, nskip - NLINES);
    ck_assert_int_eq(skipped_with(&r, "documented software regression"), 0);
    seen = 0;
    for (int i = 0; i < r.n; i++)
        for (int k = 0; k < NLINES; k++)
            seen += r.row[i].line == lines[k];
    ck_assert_int_eq(seen, NLINES);
    calib_rows_free(&r);
}
END_TEST

/* NeMo 24.07's table was published three times: every version of one
 * measurement has the same identity, hence the same side of the split. */
START_TEST(test_republished_measurements_share_a_side)
{
    calib_rows r = load_shipped("data/validation/modern/nemo_perf_summary_2407.csv");
    int distinct = 0;
    for (int i = 0; i < r.n; i++) {
        int copies = 0, first = 1;
        for (int j = 0; j < r.n; j++)
            if (r.row[j].split_key == r.row[i].split_key) {
                copies++;
                ck_assert_int_eq(iter_row_in_fit_part(&r.row[j], 0.3), iter_row_in_fit_part(&r.row[i], 0.3));
                if (j < i)
                    first = 0;
            }
        ck_assert_int_eq(copies, 3);
        distinct += first;
    }
    ck_assert_int_eq(distinct, r.n / 3);
    calib_rows_free(&r);
}
END_TEST

/* Megatron-Bridge's "(tokendrop)" rows run with an expert capacity factor
 * of 1 (its apply_moe_token_drop): another job than the dropless row of the
 * same configuration, so another measurement for the split. */
START_TEST(test_token_dropping_is_its_own_measurement)
{
    calib_rows r = load_shipped("data/validation/modern/mbridge_perf_summary.csv");
    int dropping = 0, twins = 0;
    for (int i = 0; i < r.n; i++) {
        const train_row *d = &r.row[i];
        int labelled = strstr(d->label, "(tokendrop)") != NULL;
        ck_assert(d->capacity_factor == (labelled ? 1.0 : 0.0));
        if (!labelled)
            continue;
        dropping++;
        for (int j = 0; j < r.n; j++) {
            const train_row *o = &r.row[j];
            if (o->capacity_factor == 0.0 && strcmp(o->gpu, d->gpu) == 0 && o->gpus == d->gpus &&
                o->global_batch == d->global_batch && o->micro_batch == d->micro_batch && o->tp == d->tp &&
                o->pp == d->pp && o->vp == d->vp && o->ep == d->ep && o->fp8 == d->fp8 && o->hidden == d->hidden &&
                o->layers == d->layers) {
                twins++;
                ck_assert(o->split_key != d->split_key);
            }
        }
    }
    ck_assert_int_gt(dropping, 0);
    ck_assert_int_gt(twins, 0);   /* the data hold dropless runs of the same configurations */
    calib_rows_free(&r);
}
END_TEST

/* Two files fitted together: changing the measured times of the held-out
 * rows leaves the fitted parameters exactly as they were. */
START_TEST(test_heldout_rows_do_not_move_a_multi_file_fit)
{
    calib_rows a = load_shipped("data/validation/vtrain/ground_truth_multi_pp1.csv");
    calib_rows b = load_shipped("data/validation/megatron/korthikanti_table4_layer.csv");
    int n = a.n + b.n;
    train_row *rows = pg_xcalloc((size_t)n, sizeof *rows);
    memcpy(rows, a.row, (size_t)a.n * sizeof *rows);
    memcpy(rows + a.n, b.row, (size_t)b.n * sizeof *rows);
    for (int i = a.n; i < n; i++)
        rows[i].file = 1;
    int *fit = pg_xcalloc((size_t)n, sizeof *fit), nfit[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        fit[i] = iter_row_in_fit_part(&rows[i], 0.5);
        nfit[rows[i].file] += fit[i];
    }
    ck_assert(nfit[0] > 0 && nfit[1] > 0);
    fit_hyper h = {.max_weight = 0.5, .ratio_cap = FIT_RATIO_CAP};
    gpu_params g1 = load("a100-80g"), g2;
    iter_fit_initial(&g1);
    g2 = g1;
    pg_status st;
    error_stats e1, e2;
    iter_set set;
    ck_assert_int_eq(iter_set_prepare(&set, rows, n, &st), 0);
    ck_assert_int_eq(iter_fit(&g1, &set, fit, &h, &e1, &st), 0);
    for (int i = 0; i < n; i++)
        if (!fit[i])
            rows[i].measured_s *= 3.0;
    ck_assert_int_eq(iter_fit(&g2, &set, fit, &h, &e2, &st), 0);
    for (int k = 0; k < GP_COUNT; k++)
        ck_assert_msg(g1.v[k] == g2.v[k], "%s moved", gpu_param_name((gpu_param_id)k));
    ck_assert(e1.mape == e2.mape);
    /* and the fit does see its own rows: changing one moves the parameters */
    for (int i = 0; i < n; i++)
        if (fit[i] && rows[i].file == 0) {
            rows[i].measured_s *= 3.0;
            break;
        }
    gpu_params g3 = load("a100-80g");
    iter_fit_initial(&g3);
    ck_assert_int_eq(iter_fit(&g3, &set, fit, &h, &e2, &st), 0);
    int moved = 0;
    for (int k = 0; k < GP_COUNT; k++)
        moved += g3.v[k] != g1.v[k];
    ck_assert_int_gt(moved, 0);
    iter_set_free(&set);
    free(rows);
    free(fit);
    calib_rows_free(&a);
    calib_rows_free(&b);
}
END_TEST

/* Write text to dir/name. */
static void write_in(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* Bad input names file, line and column. */
START_TEST(test_loader_errors)
{
    pg_status st;
    calib_rows r;
    char *path = write_temp("# SOURCE: x\nid,layers,hidden,heads,seq,vocab,mbs,gbs,tp,pp,dp,gpus,gpu,schedule,chunks,"
                            "recompute,seq_par,meas_iter_s\nk,48,6144,64,2048,51200,four,4,8,1,1,8,a100-80g,1f1b,1,"
                            "full,false,1.42\n");
    ck_assert_int_eq(calib_rows_load(path, 0, &r, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, ":3: key 'mbs': 'four'"));
    unlink(path);
    free(path);
    path = write_temp("a,b\n1,2\n");
    ck_assert_int_eq(calib_rows_load(path, 0, &r, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "not a known table of measurements"));
    unlink(path);
    free(path);

    /* a summary's regressions.csv: a missing column or an empty field is named with file and line */
    char dir[] = "/tmp/pg-regressions-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    write_in(dir, "summary.csv", "source_id,step_time_s\n");
    write_in(dir, "models.csv", "model_key,model_name\n");
    char summary[4096], file[4096];
    snprintf(summary, sizeof summary, "%s/summary.csv", dir);
    snprintf(file, sizeof file, "%s/regressions.csv", dir);
    write_in(dir, "regressions.csv", "# why\nsource_version,gpu_type,model_key,what\n");
    ck_assert_int_eq(calib_rows_load(summary, 0, &r, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "regressions.csv:2"));
    ck_assert_ptr_nonnull(strstr(st.msg, "source"));
    write_in(dir, "regressions.csv", "source_version,gpu_type,model_key,what,source\n25.11,DGX-H100,,slow,url\n");
    ck_assert_int_eq(calib_rows_load(summary, 0, &r, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "regressions.csv:2"));
    ck_assert_ptr_nonnull(strstr(st.msg, "model_key"));
    ck_assert_ptr_nonnull(strstr(st.msg, "empty"));
    /* ... and is not read when the regressions are kept */
    ck_assert_int_eq(calib_rows_load(summary, CALIB_KEEP_REGRESSIONS, &r, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "no data rows"));
    unlink(file);
    snprintf(file, sizeof file, "%s/models.csv", dir);
    unlink(file);
    unlink(summary);
    rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("calib");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_csv_errors_and_vocab);
    tcase_add_test(tc, test_split_is_deterministic);
    tcase_add_test(tc, test_predict_pp1_closed_form);
    tcase_add_test(tc, test_calibrate_recovers_synthetic);
    tcase_add_test(tc, test_layer_profiles_recover_a_shape_factor);
    tcase_add_test(tc, test_selection_uses_no_heldout_row);
    tcase_add_test(tc, test_folds_deterministic_and_balanced);
    tcase_add_test(tc, test_worst_file_mape);
    tcase_add_test(tc, test_mape_floor);
    tcase_add_test(tc, test_fit_ties_the_attention_kernel_no_row_ran);
    tcase_add_test(tc, test_cv_score_is_the_acceptance);
    tcase_add_test(tc, test_nelder_mead_bowl);
    tcase_add_test(tc, test_staged_evaluator_matches_ideal);
    tcase_add_test(tc, test_loaders_account_for_every_row);
    tcase_add_test(tc, test_republished_measurements_share_a_side);
    tcase_add_test(tc, test_token_dropping_is_its_own_measurement);
    tcase_add_test(tc, test_documented_regressions_are_listed);
    tcase_add_test(tc, test_heldout_rows_do_not_move_a_multi_file_fit);
    tcase_add_test(tc, test_loader_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pg_run_suite(suite());
}
