/* test_model.c: profiles, workloads, platforms, cluster generation, GPU table. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "model/costmodel.h"
#include "model/memory.h"
#include "model/platform.h"
#include "model/profile.h"
#include "model/workload.h"
#include "testutil.h"
#include "util/datapath.h"
#include "util/strbuf.h"

/* ------------------------------------------------------------ fixtures */

/* A 6-layer profile: embedding, 4 transformer layers, head.  Line numbers
 * matter to the error tests below: line 1 is "name". */
#define PROFILE_HEAD                                                                    \
    "name: tiny\n"                                                                      \
    "source: hand-written test profile\n"                                               \
    "gpu: a100-80g\n"                                                                   \
    "model: {hidden: 64, heads: 4, seq: 128, micro_batch_size: 2, vocab: 1000}\n"       \
    "layers:\n"
#define EMB_LAYER                                                                       \
    "  - {kind: embedding, f: 1ms, b: 2ms, w: 0.5ms, act_b: 10MiB, act_w: 1MiB,\n"      \
    "     boundary: 1MiB, params: 1000, flops: 0}\n"
#define TF_LAYERS                                                                       \
    "  - kind: transformer\n"                                                           \
    "    count: 4\n"                                                                    \
    "    f: 3ms\n"                                                                      \
    "    b: 4ms\n"                                                                      \
    "    w: 2ms\n"                                                                      \
    "    act_b: 20MiB\n"                                                                \
    "    act_w: 8MiB\n"                                                                 \
    "    boundary: 2MiB\n"                                                              \
    "    params: 5000\n"                                                                \
    "    workspace: 64MiB\n"                                                            \
    "    flops: 1e9\n"
#define HEAD_LAYER                                                                      \
    "  - {kind: head, f: 5ms, b: 6ms, w: 1ms, act_b: 30MiB, act_w: 3MiB, boundary: 0,\n" \
    "     params: 2000, flops: 2e9, workspace: 128MiB}\n"
#define GOOD_PROFILE PROFILE_HEAD EMB_LAYER TF_LAYERS HEAD_LAYER

#define MIB 1048576.0

typedef struct totals {
    double f, b, w, act_b, act_w, params, flops;
    int layers;
} totals;

static totals sum_stages(const workload *w)
{
    totals t = {0};
    for (int s = 0; s < w->nstages; s++) {
        t.f += w->stage[s].f_s;
        t.b += w->stage[s].b_s;
        t.w += w->stage[s].w_s;
        t.act_b += w->stage[s].act_b_bytes;
        t.act_w += w->stage[s].act_w_bytes;
        t.params += w->stage[s].param_count;
        t.flops += w->stage[s].fwd_flops;
        t.layers += w->stage[s].layers;
    }
    return t;
}

/* The tiny profile's totals, computed from its text above. */
static void check_tiny_totals(const workload *w)
{
    totals t = sum_stages(w);
    ck_assert_exact(t.f, 1e-3 + 4 * 3e-3 + 5e-3);
    ck_assert_exact(t.b, 2e-3 + 4 * 4e-3 + 6e-3);
    ck_assert_exact(t.w, 0.5e-3 + 4 * 2e-3 + 1e-3);
    ck_assert_exact(t.act_b, (10 + 4 * 20 + 30) * MIB);
    ck_assert_exact(t.act_w, (1 + 4 * 8 + 3) * MIB);
    ck_assert_exact(t.params, 1000 + 4 * 5000 + 2000);
    ck_assert_exact(t.flops, 4 * 1e9 + 2e9);
    ck_assert_int_eq(t.layers, 4);
}

/* ------------------------------------------------------------ profiles */

START_TEST(profile_even_split)
{
    pg_status st;
    pg_status_clear(&st);
    workload w;
    const char *path = pg_write_file("tiny.yaml", GOOD_PROFILE);
    ck_assert_int_eq(workload_load_profile(path, 2, &w, &st), 0);
    ck_assert_str_eq(w.name, "tiny");
    ck_assert_str_eq(w.source, "hand-written test profile");
    ck_assert_str_eq(w.ref_gpu, "a100-80g");
    ck_assert_exact(w.ref_speed_flops, gpu_system_find("a100-80g")->speed_flops);
    ck_assert_int_eq(w.seq_len, 128);
    ck_assert_int_eq(w.micro_batch_size, 2);
    ck_assert_int_eq(w.nstages, 2);
    /* 6 layers, 3 per stage: [emb, t, t] [t, t, head] */
    ck_assert_exact(w.stage[0].f_s, 1e-3 + 2 * 3e-3);
    ck_assert_exact(w.stage[1].f_s, 2 * 3e-3 + 5e-3);
    ck_assert_exact(w.stage[0].act_b_bytes, (10 + 2 * 20) * MIB);
    ck_assert_exact(w.stage[0].boundary_bytes, 2 * MIB);   /* its last layer's output */
    ck_assert_exact(w.stage[1].boundary_bytes, 0);
    /* the tp collectives carry the transformer layers' hidden state on every
     * stage, the one ending with the head (boundary 0) included */
    ck_assert_exact(w.stage[0].tp_coll_bytes, 2 * MIB);
    ck_assert_exact(w.stage[1].tp_coll_bytes, 2 * MIB);
    ck_assert_exact(w.stage[0].workspace_bytes, 64 * MIB); /* the largest, not the sum */
    ck_assert_exact(w.stage[1].workspace_bytes, 128 * MIB);
    ck_assert_int_eq(w.stage[0].layers, 2);
    ck_assert_int_eq(w.stage[1].layers, 2);
    check_tiny_totals(&w);
    workload_free(&w);
}
END_TEST

START_TEST(profile_even_split_remainder)
{
    pg_status st;
    pg_status_clear(&st);
    workload w;
    const char *path = pg_write_file("tiny.yaml", GOOD_PROFILE);
    /* 6 layers into 4 stages: 1, 1, 2, 2 (the extra layers go last) */
    ck_assert_int_eq(workload_load_profile(path, 4, &w, &st), 0);
    ck_assert_int_eq(w.nstages, 4);
    ck_assert_exact(w.stage[0].f_s, 1e-3);
    ck_assert_exact(w.stage[1].f_s, 3e-3);
    ck_assert_exact(w.stage[2].f_s, 2 * 3e-3);
    ck_assert_exact(w.stage[3].f_s, 3e-3 + 5e-3);
    check_tiny_totals(&w);
    workload_free(&w);
    /* one stage: everything */
    ck_assert_int_eq(workload_load_profile(path, 1, &w, &st), 0);
    check_tiny_totals(&w);
    workload_free(&w);
    /* 7 stages for 6 layers is impossible */
    ck_assert_int_eq(workload_load_profile(path, 7, &w, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "cannot cut 6 layers into 7 stages"));
}
END_TEST

START_TEST(profile_explicit_split)
{
    pg_status st;
    pg_status_clear(&st);
    workload w;
    const char *path = pg_write_file("split.yaml", GOOD_PROFILE
                                  "stage_splits:\n"
                                  "  - {stages: 2, layers: [2, 4]}\n"
                                  "  - {stages: 3, layers: [1, 4, 1]}\n");
    ck_assert_int_eq(workload_load_profile(path, 2, &w, &st), 0);
    ck_assert_exact(w.stage[0].f_s, 1e-3 + 3e-3);
    ck_assert_exact(w.stage[1].f_s, 3 * 3e-3 + 5e-3);
    ck_assert_int_eq(w.stage[0].layers, 1);
    ck_assert_int_eq(w.stage[1].layers, 3);
    check_tiny_totals(&w);
    workload_free(&w);
    ck_assert_int_eq(workload_load_profile(path, 3, &w, &st), 0);
    ck_assert_exact(w.stage[0].act_b_bytes, 10 * MIB);
    ck_assert_exact(w.stage[1].act_b_bytes, 4 * 20 * MIB);
    ck_assert_exact(w.stage[2].act_b_bytes, 30 * MIB);
    check_tiny_totals(&w);
    workload_free(&w);
    /* no split for 4 stages: the even one */
    ck_assert_int_eq(workload_load_profile(path, 4, &w, &st), 0);
    ck_assert_exact(w.stage[0].f_s, 1e-3);
    ck_assert_exact(w.stage[3].f_s, 3e-3 + 5e-3);
    workload_free(&w);
}
END_TEST

/* Load text, expect PG_EXIT_INPUT with every needle in the message. */
static void expect_bad_profile(const char *text, int nstages, const char *needle1, const char *needle2)
{
    pg_status st;
    pg_status_clear(&st);
    workload w;
    const char *path = pg_write_file("bad.yaml", text);
    int rc = workload_load_profile(path, nstages, &w, &st);
    ck_assert_msg(rc == PG_EXIT_INPUT, "rc %d for: %s", rc, st.msg);
    ck_assert_msg(strstr(st.msg, path) != NULL, "no file name in: %s", st.msg);
    ck_assert_msg(strstr(st.msg, needle1) != NULL, "'%s' not in: %s", needle1, st.msg);
    if (needle2)
        ck_assert_msg(strstr(st.msg, needle2) != NULL, "'%s' not in: %s", needle2, st.msg);
    ck_assert_ptr_null(w.stage);
}

START_TEST(profile_missing_field)
{
    /* f of the transformer layer removed: layers[1] starts on line 8 */
    expect_bad_profile(PROFILE_HEAD EMB_LAYER "  - kind: transformer\n    count: 4\n    b: 4ms\n    w: 2ms\n"
                       "    act_b: 1MiB\n    act_w: 0\n    boundary: 0\n    params: 1\n" HEAD_LAYER,
                       2, ":8: key 'layers[1].f'", "missing");
    expect_bad_profile("source: x\ngpu: a100-80g\n", 1, "key 'name'", "missing");
    expect_bad_profile(PROFILE_HEAD, 1, "key 'layers'", NULL);
    expect_bad_profile("name: x\nsource: y\ngpu: a100-80g\nmodel: {hidden: 1, heads: 1, seq: 1, vocab: 1}\n"
                       "layers: []\n",
                       1, ":4: key 'model.micro_batch_size'", "missing");
}
END_TEST

START_TEST(profile_bad_unit)
{
    expect_bad_profile(PROFILE_HEAD "  - {kind: head, f: 3 parsecs, b: 1ms, w: 1ms, act_b: 0, act_w: 0,\n"
                                    "     boundary: 0, params: 0}\n",
                       1, ":6: key 'layers[0].f'", "3 parsecs");
    expect_bad_profile(PROFILE_HEAD "  - {kind: head, f: 3ms, b: 1ms, w: 1ms, act_b: 12 bananas, act_w: 0,\n"
                                    "     boundary: 0, params: 0}\n",
                       1, "key 'layers[0].act_b'", NULL);
    expect_bad_profile(PROFILE_HEAD "  - {kind: head, f: 3ms, b: 1ms, w: 1ms, act_b: 0, act_w: 0,\n"
                                    "     boundary: 0, params: lots}\n",
                       1, "key 'layers[0].params'", NULL);
}
END_TEST

START_TEST(profile_negative_time)
{
    expect_bad_profile(PROFILE_HEAD "  - {kind: head, f: 1ms, b: -2ms, w: 1ms, act_b: 0, act_w: 0,\n"
                                    "     boundary: 0, params: 0}\n",
                       1, ":6: key 'layers[0].b'", NULL);
    expect_bad_profile(PROFILE_HEAD "  - {kind: head, f: 1ms, b: 2ms, w: 1ms, act_b: 0, act_w: 0,\n"
                                    "     boundary: 0, params: -5}\n",
                       1, "key 'layers[0].params'", "negative");
}
END_TEST

START_TEST(profile_unknown_key)
{
    expect_bad_profile(GOOD_PROFILE "colour: blue\n", 1, ":21: key 'colour'", "unknown key");
    expect_bad_profile(PROFILE_HEAD "  - {kind: head, f: 1ms, b: 2ms, w: 1ms, act_b: 0, act_w: 0,\n"
                                    "     boundary: 0, params: 0, fudge: 2}\n",
                       1, ":7: key 'layers[0].fudge'", "unknown key");
    expect_bad_profile(PROFILE_HEAD "  - {kind: decoder, f: 1ms, b: 2ms, w: 1ms, act_b: 0, act_w: 0,\n"
                                    "     boundary: 0, params: 0}\n",
                       1, "key 'layers[0].kind'", "decoder");
    expect_bad_profile("name: x\nsource: y\ngpu: tpu-v9\nmodel: {hidden: 1, heads: 1, seq: 1, micro_batch_size: 1,"
                       " vocab: 1}\nlayers: []\n",
                       1, ":3: key 'gpu'", "tpu-v9");
}
END_TEST

START_TEST(profile_wrong_type)
{
    expect_bad_profile("name: x\nsource: y\ngpu: a100-80g\nmodel: 7\nlayers: []\n", 1, ":4: key 'model'",
                       "expected a mapping");
    expect_bad_profile(PROFILE_HEAD "  - {kind: head, f: [1, 2], b: 2ms, w: 1ms, act_b: 0, act_w: 0,\n"
                                    "     boundary: 0, params: 0}\n",
                       1, "key 'layers[0].f'", "expected a scalar");
    expect_bad_profile("name: x\nsource: y\ngpu: a100-80g\n"
                       "model: {hidden: 1.5, heads: 1, seq: 1, micro_batch_size: 1, vocab: 1}\nlayers: []\n",
                       1, "key 'model.hidden'", NULL);
    expect_bad_profile("- just\n- a list\n", 1, "mapping", NULL);
    /* act_w larger than act_b makes no sense */
    expect_bad_profile(PROFILE_HEAD "  - {kind: head, f: 1ms, b: 2ms, w: 1ms, act_b: 1MiB, act_w: 2MiB,\n"
                                    "     boundary: 0, params: 0}\n",
                       1, "key 'layers[0].act_w'", "larger than act_b");
}
END_TEST

START_TEST(profile_bad_split)
{
    expect_bad_profile(GOOD_PROFILE "stage_splits:\n  - {stages: 2, layers: [2, 3]}\n", 2,
                       ":22: key 'stage_splits[0].layers'", "sum to 5");
    expect_bad_profile(GOOD_PROFILE "stage_splits:\n  - {stages: 3, layers: [2, 4]}\n", 2, "has 2 entries", NULL);
    expect_bad_profile(GOOD_PROFILE "stage_splits:\n  - {stages: 2, layers: [0, 6]}\n", 2, "positive layer count",
                       NULL);
    expect_bad_profile(GOOD_PROFILE "stage_splits:\n  - {stages: 2, layers: [2, 4]}\n"
                                    "  - {stages: 2, layers: [3, 3]}\n",
                       2, "already given", NULL);
}
END_TEST

/* The four zero-bubble GPT profiles reproduce Table 9 per stage at their
 * pipeline size, and the paper's memory formulas. */
START_TEST(profile_zero_bubble_models)
{
    static const struct {
        const char *file;
        int layers, heads, hidden, mbs, p;
        double f_ms, b_ms, w_ms;
    } M[] = {
        {"profiles/zb-gpt-1.5b.yaml", 22, 24, 2304, 6, 8, 18.522, 18.086, 9.337},
        {"profiles/zb-gpt-6.2b.yaml", 30, 32, 4096, 3, 8, 29.718, 29.444, 19.927},
        {"profiles/zb-gpt-14.6b.yaml", 46, 40, 5120, 1, 16, 11.347, 11.248, 8.132},
        {"profiles/zb-gpt-28.3b.yaml", 62, 48, 6144, 1, 32, 10.419, 10.207, 7.715},
    };
    const double s = 1024;
    for (size_t i = 0; i < sizeof M / sizeof M[0]; i++) {
        char path[4096];
        ck_assert_msg(datapath_find(M[i].file, path, sizeof path) == 0, "%s not found", M[i].file);
        pg_status st;
        pg_status_clear(&st);
        workload w;
        ck_assert_msg(workload_load_profile(path, M[i].p, &w, &st) == 0, "%s", st.msg);
        double h = M[i].hidden, a = M[i].heads, b = M[i].mbs;
        int units = (M[i].layers + 2) / M[i].p;
        double mb = s * b * (34 * h + 5 * a * s), mw = 32 * s * b * h;
        totals t = sum_stages(&w);
        ck_assert_int_eq(t.layers, M[i].layers);
        for (int k = 0; k < w.nstages; k++) {
            ck_assert_exact(w.stage[k].f_s, M[i].f_ms * 1e-3);
            ck_assert_exact(w.stage[k].b_s, M[i].b_ms * 1e-3);
            ck_assert_exact(w.stage[k].w_s, M[i].w_ms * 1e-3);
            ck_assert_exact(w.stage[k].act_b_bytes, units * mb);
            ck_assert_exact(w.stage[k].act_w_bytes, units * mw);
            /* first and last stage have one transformer layer fewer */
            int expect = units - (k == 0) - (k == w.nstages - 1);
            ck_assert_int_eq(w.stage[k].layers, expect);
            if (k < w.nstages - 1)
                ck_assert_exact(w.stage[k].boundary_bytes, 2 * s * b * h);
        }
        ck_assert_exact(t.params - w.stage[0].param_count + (12 * h * h + 13 * h) * (units - 1) -
                            w.stage[w.nstages - 1].param_count + (12 * h * h + 13 * h) * (units - 1),
                        (12 * h * h + 13 * h) * M[i].layers);
        workload_free(&w);
    }
}
END_TEST

/* ------------------------------------------------------------ workloads */

static experiment uniform_experiment(void)
{
    experiment e;
    memset(&e, 0, sizeof e);
    e.workload = WL_UNIFORM;
    e.stage_first_layers = e.stage_last_layers = STAGE_LAYERS_EVEN;   /* the keys' default, `even` */
    e.pp = 4;
    e.micro_batch_size = 1;
    e.uniform_f_s = 1.0;
    e.uniform_b_s = 1.5;
    e.uniform_w_s = 0.75;
    e.uniform_w_fraction = 0.4324;
    e.uniform_activation_bytes = 3e9;
    e.uniform_params = 1e9;
    return e;
}

START_TEST(uniform_v1_v2)
{
    experiment e = uniform_experiment();
    pg_status st;
    pg_status_clear(&st);
    workload w;
    ck_assert_int_eq(workload_build(&e, 4, &w, &st), 0);
    ck_assert_int_eq(w.nstages, 4);
    ck_assert_exact(w.ref_speed_flops, 0);
    for (int s = 0; s < 4; s++) {
        ck_assert_exact(w.stage[s].f_s, 1.0);
        ck_assert_exact(w.stage[s].b_s, 1.5);
        ck_assert_exact(w.stage[s].w_s, 0.75);
        ck_assert_exact(w.stage[s].act_b_bytes, 3e9);
        ck_assert_exact(w.stage[s].act_w_bytes, 0.4324 * 3e9);
        ck_assert_exact(w.stage[s].boundary_bytes, 0);
        ck_assert_exact(w.stage[s].param_count, 1e9);
    }
    int rank0[] = {0};
    ck_assert_exact(memory_static_bytes(&w, rank0, 1, 16), 16e9);
    workload_free(&w);

    ck_assert_int_eq(workload_build(&e, 8, &w, &st), 0); /* v = 2 chunks per rank */
    ck_assert_int_eq(w.nstages, 8);
    for (int s = 0; s < 8; s++) {
        ck_assert_exact(w.stage[s].f_s, 0.5);
        ck_assert_exact(w.stage[s].b_s, 0.75);
        ck_assert_exact(w.stage[s].w_s, 0.375);
        ck_assert_exact(w.stage[s].act_b_bytes, 1.5e9);
        ck_assert_exact(w.stage[s].act_w_bytes, 0.4324 * 1.5e9);
        ck_assert_exact(w.stage[s].param_count, 0.5e9);
    }
    /* a rank's static memory does not depend on chunking */
    int rank0_v2[] = {0, 7};
    ck_assert_exact(memory_static_bytes(&w, rank0_v2, 2, 16), 16e9);
    int bad[] = {8};
    ck_assert_exact(memory_static_bytes(&w, bad, 1, 16), -1);
    workload_free(&w);

    ck_assert_int_eq(workload_build(&e, 6, &w, &st), PG_EXIT_INPUT); /* 6 stages over pp=4 */
}
END_TEST

START_TEST(workload_profile_and_gpt)
{
    experiment e = uniform_experiment();
    pg_status st;
    pg_status_clear(&st);
    workload w;
    e.workload = WL_PROFILE;
    e.micro_batch_size = 2;   /* the profile's, as experiment_from_config defaults it */
    snprintf(e.profile_path, sizeof e.profile_path, "%s", pg_write_file("tiny.yaml", GOOD_PROFILE));
    ck_assert_int_eq(workload_build(&e, 2, &w, &st), 0);
    check_tiny_totals(&w);
    workload_free(&w);
    /* workload=gpt goes to the calibrated cost model (its own tests are
     * test_costmodel): here, only that the model layer routes it there and
     * returns a workload of the requested shape. */
    e.workload = WL_GPT;
    e.gpt_layers = 4;
    e.gpt_hidden = 1024;
    e.gpt_heads = 16;
    e.gpt_seq = 512;
    e.gpt_vocab = 51200;
    e.tp = 1;
    e.dp = 1;
    snprintf(e.cluster_gpu, sizeof e.cluster_gpu, "a100-80g");
    ck_assert_msg(workload_build(&e, 2, &w, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(w.nstages, 2);
    for (int s = 0; s < w.nstages; s++)
        ck_assert(w.stage[s].f_s > 0 && w.stage[s].b_s > 0 && w.stage[s].w_s > 0 && w.stage[s].act_b_bytes > 0);
    workload_free(&w);
}
END_TEST

/* A profile adapted to the experiment (workload.h): micro_batch_size 6 of
 * the tiny profile's 2 (x3) at tp = 4 (/4): times, FLOPs, activation,
 * attention-core and workspace bytes x 3/4, boundary x 3, parameters / 4;
 * uniform times stay the tp group's, profile times become one GPU's. */
START_TEST(workload_profile_batch_and_tp)
{
    const double batch = 6.0 / 2.0, tp = 4.0, per_gpu = batch / tp;
    experiment e = uniform_experiment();
    pg_status st;
    pg_status_clear(&st);
    e.workload = WL_PROFILE;
    e.micro_batch_size = 6;
    e.tp = 4;
    snprintf(e.profile_path, sizeof e.profile_path, "%s", pg_write_file("tiny.yaml", GOOD_PROFILE));
    workload raw, w;
    ck_assert_msg(workload_load_profile(e.profile_path, 2, &raw, &st) == 0, "%s", st.msg);
    ck_assert_msg(workload_build(&e, 2, &w, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(w.micro_batch_size, 6);
    ck_assert_int_eq(w.nstages, 2);
    for (int s = 0; s < 2; s++) {
        const stage_cost *a = &w.stage[s], *r = &raw.stage[s];
        ck_assert_exact(a->f_s, r->f_s * per_gpu);
        ck_assert_exact(a->b_s, r->b_s * per_gpu);
        ck_assert_exact(a->w_s, r->w_s * per_gpu);
        ck_assert_exact(a->fwd_flops, r->fwd_flops * per_gpu);
        ck_assert_exact(a->act_b_bytes, r->act_b_bytes * per_gpu);
        ck_assert_exact(a->act_w_bytes, r->act_w_bytes * per_gpu);
        ck_assert_exact(a->selective_bytes, r->selective_bytes * per_gpu);
        ck_assert_exact(a->selective_s, r->selective_s * per_gpu);
        ck_assert_exact(a->workspace_bytes, r->workspace_bytes * per_gpu);
        ck_assert_exact(a->boundary_bytes, r->boundary_bytes * batch);
        ck_assert_exact(a->tp_coll_bytes, r->tp_coll_bytes * batch);
        ck_assert_exact(a->param_count, r->param_count / tp);
    }
    /* Stage 0 by hand: [emb, t, t] at 2 samples, f = 1 + 2 x 3 ms. */
    ck_assert_exact(w.stage[0].f_s, (1e-3 + 2 * 3e-3) * 0.75);
    ck_assert_exact(w.stage[0].param_count, (1000 + 2 * 5000) / 4.0);
    ck_assert_int_eq(experiment_times_are_tp_groups(&e), 0);
    ck_assert_exact(experiment_tp_share(&e), 1.0);
    workload_free(&w);
    workload_free(&raw);
    e.workload = WL_UNIFORM;
    ck_assert_int_eq(experiment_times_are_tp_groups(&e), 1);
    ck_assert_exact(experiment_tp_share(&e), 1.0 / 4);
}
END_TEST

static int experiment_of(const char *sets[], experiment *e, pg_status *st)
{
    config c;
    config_init(&c);
    int rc = 0;
    for (int i = 0; rc == 0 && sets[i]; i++)
        rc = config_apply_set(&c, sets[i], st);
    if (rc == 0)
        rc = experiment_from_config(&c, e, st);
    config_free(&c);
    return rc;
}

/* With a profile, micro_batch_size defaults to the profile's measured one,
 * so global_batch_size counts the samples that run. */
START_TEST(experiment_profile_micro_batch)
{
    char wl[512];
    snprintf(wl, sizeof wl, "workload=%s", pg_write_file("tiny.yaml", GOOD_PROFILE));
    experiment e;
    pg_status st;
    pg_status_clear(&st);
    const char *deflt[] = {wl, "dp=2", "global_batch_size=16", NULL};
    ck_assert_msg(experiment_of(deflt, &e, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(e.micro_batch_size, 2);
    ck_assert_int_eq(e.microbatches, 16 / (2 * 2));
    const char *given[] = {wl, "dp=2", "global_batch_size=16", "micro_batch_size=1", NULL};
    ck_assert_msg(experiment_of(given, &e, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(e.micro_batch_size, 1);
    ck_assert_int_eq(e.microbatches, 16 / (1 * 2));
    /* 16 samples are not a whole number of 3 x 2. */
    const char *bad[] = {wl, "dp=2", "global_batch_size=16", "micro_batch_size=3", NULL};
    ck_assert_int_eq(experiment_of(bad, &e, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "key 'global_batch_size'"));
    /* A profile that cannot be read leaves the default; the workload says why. */
    snprintf(wl, sizeof wl, "workload=%s", pg_write_file("broken.yaml", "layers: []\n"));
    const char *broken[] = {wl, NULL};
    ck_assert_msg(experiment_of(broken, &e, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(e.micro_batch_size, 1);
}
END_TEST

/* ------------------------------------------------------------ platforms */

#define PLAT_HEAD "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n" \
                  "<platform version=\"4.1\">\n  <zone id=\"z\" routing=\"Full\">\n"
#define PLAT_HEAD_ROUTING(r) "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n" \
                             "<platform version=\"4.1\">\n  <zone id=\"z\" routing=\"" r "\">\n"
#define PLAT_TAIL "  </zone>\n</platform>\n"
#define GPU_HOST(name, node, rank, extra)                                                             \
    "    <host id=\"" name "\" speed=\"312Tf\"><prop id=\"kind\" value=\"gpu\"/>"                       \
    "<prop id=\"node\" value=\"" node "\"/><prop id=\"local_rank\" value=\"" rank "\"/>" extra "</host>\n"
#define MEM80 "<prop id=\"memory\" value=\"80GiB\"/>"

START_TEST(platform_good_and_ordering)
{
    const char *path = pg_write_file("p.xml", PLAT_HEAD
                                  GPU_HOST("b1", "1", "1", MEM80 "<prop id=\"gpu\" value=\"a100-80g\"/>")
                                  GPU_HOST("a0", "1", "0", MEM80)
                                  GPU_HOST("z0", "0", "1", MEM80)
                                  GPU_HOST("y0", "0", "0", "<prop id=\"memory\" value=\"40GiB\"/>")
                                  "    <host id=\"mem1\" speed=\"1Gf\"><prop id=\"kind\" value=\"cpu\"/>"
                                  "<prop id=\"node\" value=\"1\"/><prop id=\"memory\" value=\"2TB\"/></host>\n"
                                  "    <host id=\"other\" speed=\"1Gf,0.5Gf\"/>\n" PLAT_TAIL);
    pg_status st;
    pg_status_clear(&st);
    platform_desc p;
    ck_assert_msg(platform_load(path, &p, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(p.ngpus, 4);
    ck_assert_int_eq(p.is_temporary, 0);
    ck_assert_str_eq(p.xml_path, path);
    const char *order[] = {"y0", "z0", "a0", "b1"};
    for (int i = 0; i < 4; i++) {
        ck_assert_str_eq(p.gpu[i].host, order[i]);
        ck_assert_int_eq(p.gpu[i].node, i / 2);
        ck_assert_int_eq(p.gpu[i].local_rank, i % 2);
        ck_assert_exact(p.gpu[i].speed_flops, 312e12);
    }
    ck_assert_exact(p.gpu[0].memory_bytes, 40 * 1073741824.0);
    ck_assert_exact(p.gpu[1].memory_bytes, 80 * 1073741824.0);
    ck_assert_str_eq(p.gpu[3].type, "a100-80g");
    ck_assert_str_eq(p.gpu[0].type, "");
    ck_assert_int_eq(p.ncpus, 1);
    ck_assert_str_eq(p.cpu_host[0], "mem1");
    ck_assert_exact(p.cpu_memory_bytes[0], 2e12);
    ck_assert_int_eq(p.gpu[0].cpu_index, -1);
    ck_assert_int_eq(p.gpu[2].cpu_index, 0);
    platform_free(&p);
    ck_assert_int_eq(access(path, F_OK), 0); /* a user's file is never removed */
}
END_TEST

/* Host routes read back: three GPUs behind one 30 GB/s link (their own
 * links 20 / 8 / 20 GB/s) and a FATPIPE link on every route: alone each
 * gets its narrowest link; with all three copying the shared link gives
 * each 10 GB/s (g1 keeps its own 8); the FATPIPE link is shared by nobody. */
START_TEST(platform_host_shared_rate)
{
    const char *path = pg_write_file("shared.xml", PLAT_HEAD
        GPU_HOST("g0", "0", "0", MEM80) GPU_HOST("g1", "0", "1", MEM80) GPU_HOST("g2", "0", "2", MEM80)
        "    <host id=\"mem\" speed=\"1Gf\"><prop id=\"kind\" value=\"cpu\"/>"
        "<prop id=\"node\" value=\"0\"/><prop id=\"memory\" value=\"1TB\"/></host>\n"
        "    <link id=\"l0\" bandwidth=\"20GBps\" latency=\"1us\"/>\n"
        "    <link id=\"l1\" bandwidth=\"8GBps\" latency=\"1us\"/>\n"
        "    <link id=\"l2\" bandwidth=\"20GBps\" latency=\"1us\"/>\n"
        "    <link id=\"up\" bandwidth=\"30GBps\" latency=\"0s\"/>\n"
        "    <link id=\"fat\" bandwidth=\"25GBps\" latency=\"0s\" sharing_policy=\"FATPIPE\"/>\n"
        "    <route src=\"g0\" dst=\"mem\"><link_ctn id=\"l0\"/><link_ctn id=\"up\"/><link_ctn id=\"fat\"/></route>\n"
        "    <route src=\"mem\" dst=\"g1\"><link_ctn id=\"fat\"/><link_ctn id=\"up\"/><link_ctn id=\"l1\"/></route>\n"
        "    <route src=\"g2\" dst=\"mem\"><link_ctn id=\"l2\"/><link_ctn id=\"up\"/><link_ctn id=\"fat\"/></route>\n"
        PLAT_TAIL);
    pg_status st;
    pg_status_clear(&st);
    platform_desc p;
    ck_assert_msg(platform_load(path, &p, &st) == 0, "%s", st.msg);
    const double alone[] = {20e9, 8e9, 20e9}, shared[] = {10e9, 8e9, 10e9};
    for (int g = 0; g < 3; g++) {
        ck_assert_exact(p.gpu[g].host_bw, alone[g]);
        ck_assert_exact(p.gpu[g].host_shared_bw, shared[g]);
        ck_assert_exact(p.gpu[g].host_latency_s, 1e-6);
    }
    platform_free(&p);
}
END_TEST

static void expect_bad_platform(const char *text, const char *needle1, const char *needle2)
{
    const char *path = pg_write_file("bad.xml", text);
    pg_status st;
    pg_status_clear(&st);
    platform_desc p;
    int rc = platform_load(path, &p, &st);
    ck_assert_msg(rc == PG_EXIT_INPUT, "rc %d: %s", rc, st.msg);
    ck_assert_msg(strstr(st.msg, path) != NULL, "no file in: %s", st.msg);
    ck_assert_msg(strstr(st.msg, needle1) != NULL, "'%s' not in: %s", needle1, st.msg);
    if (needle2)
        ck_assert_msg(strstr(st.msg, needle2) != NULL, "'%s' not in: %s", needle2, st.msg);
    ck_assert_ptr_null(p.gpu);
}

START_TEST(platform_malformed)
{
    /* line 5 opens a host that line 6 never closes */
    expect_bad_platform(PLAT_HEAD "    <host id=\"a\" speed=\"1f\">\n  </zone>\n</platform>\n", ":6:", "malformed XML");
    expect_bad_platform("<?xml version='1.0'?>\n<platform version=\"4.1\">\n<zone id=\"a\" routing=\"Full\"\n",
                        ":", "malformed XML");
    expect_bad_platform("<?xml version='1.0'?>\n<notaplatform/>\n", ":2:", "<platform>");
    pg_status st;
    platform_desc p;
    ck_assert_int_eq(platform_load("/nonexistent/dir/x.xml", &p, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "/nonexistent/dir/x.xml"));
}
END_TEST

START_TEST(platform_missing_props)
{
    expect_bad_platform(PLAT_HEAD GPU_HOST("g0", "0", "0", "") PLAT_TAIL, ":5: key 'memory'", "'g0'");
    expect_bad_platform(PLAT_HEAD
                        "    <host id=\"g0\" speed=\"1Tf\"><prop id=\"kind\" value=\"gpu\"/>\n"
                        "      <prop id=\"local_rank\" value=\"0\"/>" MEM80 "</host>\n" PLAT_TAIL,
                        ":5: key 'node'", "missing");
    expect_bad_platform(PLAT_HEAD GPU_HOST("g0", "0", "first", MEM80) PLAT_TAIL, ":5: key 'local_rank'",
                        "integer");
    expect_bad_platform(PLAT_HEAD GPU_HOST("g0", "0", "0", "<prop id=\"memory\" value=\"lots\"/>") PLAT_TAIL,
                        "key 'memory'", "lots");
    expect_bad_platform(PLAT_HEAD "    <host id=\"g0\" speed=\"fast\"><prop id=\"kind\" value=\"gpu\"/></host>\n"
                        PLAT_TAIL, "key 'speed'", NULL);
    expect_bad_platform(PLAT_HEAD "    <host id=\"g0\" speed=\"1f\"><prop id=\"kind\" value=\"tpu\"/></host>\n"
                        PLAT_TAIL, "key 'kind'", NULL);
    expect_bad_platform(PLAT_HEAD "    <host id=\"c\" speed=\"1f\"/>\n" PLAT_TAIL, "no GPU", NULL);
    expect_bad_platform(PLAT_HEAD GPU_HOST("g0", "0", "0", MEM80) GPU_HOST("g1", "0", "0", MEM80) PLAT_TAIL,
                        "both node 0 local_rank 0", NULL);
}
END_TEST

START_TEST(platform_shipped_files)
{
    static const struct {
        const char *file;
        int ngpus, nnodes;
        const char *type;
    } F[] = {
        {"platforms/dgx-h100-1node.xml", 8, 1, "h100-sxm"},
        {"platforms/dgx-h100-4node-ndr.xml", 32, 4, "h100-sxm"},
        {"platforms/dgx-a100-4node-hdr.xml", 32, 4, "a100-80g"},
    };
    for (size_t i = 0; i < sizeof F / sizeof F[0]; i++) {
        char path[4096];
        ck_assert_msg(datapath_find(F[i].file, path, sizeof path) == 0, "%s not found", F[i].file);
        pg_status st;
        pg_status_clear(&st);
        platform_desc p;
        ck_assert_msg(platform_load(path, &p, &st) == 0, "%s", st.msg);
        ck_assert_int_eq(p.ngpus, F[i].ngpus);
        ck_assert_int_eq(p.ncpus, F[i].nnodes);
        const gpu_system *gs = gpu_system_find(F[i].type);
        for (int g = 0; g < p.ngpus; g++) {
            ck_assert_str_eq(p.gpu[g].type, F[i].type);
            ck_assert_exact(p.gpu[g].speed_flops, gs->speed_flops);
            ck_assert_exact(p.gpu[g].memory_bytes, gs->memory_bytes);
            ck_assert_int_eq(p.gpu[g].node, g / 8);
            ck_assert_int_eq(p.gpu[g].cpu_index, g / 8);
            /* The listed route to host memory: [its PCIe link, the switch
             * uplink], both at the system's PCIe rate, latencies 1 us + 0
             * (cluster.c's modelling choices). */
            ck_assert_exact(p.gpu[g].host_bw, gs->pcie_bw);
            ck_assert_exact(p.gpu[g].host_shared_bw, gs->pcie_bw / 2);   /* the uplink, 2 GPUs' routes */
            ck_assert_exact(p.gpu[g].host_latency_s, 1e-6);
        }
        platform_free(&p);
        /* the shipped file is exactly what network=cluster generates */
        experiment e;
        memset(&e, 0, sizeof e);
        e.cluster_nodes = F[i].nnodes;
        e.cluster_gpus_per_node = 8;
        snprintf(e.cluster_gpu, sizeof e.cluster_gpu, "%s", F[i].type);
        strbuf want;
        sb_init(&want);
        ck_assert_int_eq(platform_cluster_xml(&e, &want, &st), 0);
        FILE *f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        char *have = calloc(1, want.len + 2);
        size_t got = fread(have, 1, want.len + 1, f);
        fclose(f);
        ck_assert_msg(got == want.len && memcmp(have, want.data, want.len) == 0,
                      "%s differs from platform_cluster_xml(): regenerate it (platforms/README.md)", F[i].file);
        free(have);
        sb_free(&want);
    }
}
END_TEST

/* Every latency="...s" value in file, in order (at most cap). */
static int latencies(const char *path, double *out, int cap)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f))
        for (char *q = strstr(line, "latency=\""); q && n < cap; q = strstr(q + 1, "latency=\""))
            out[n++] = strtod(q + strlen("latency=\""), NULL);
    fclose(f);
    return n;
}

START_TEST(platform_ideal)
{
    pg_status st;
    pg_status_clear(&st);
    platform_desc p;
    const double lat = 7.3e-6; /* not a power of two: halving must still be exact */
    ck_assert_msg(platform_make_ideal(12, lat, 1e12, 80 * 1073741824.0, &p, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(p.ngpus, 12);
    ck_assert_int_eq(p.is_temporary, 1);
    ck_assert_int_eq(p.ncpus, 1);
    for (int i = 0; i < 12; i++) {
        char name[16];
        snprintf(name, sizeof name, "gpu%02d", i);
        ck_assert_str_eq(p.gpu[i].host, name);
        ck_assert_int_eq(p.gpu[i].local_rank, i);
        ck_assert_exact(p.gpu[i].speed_flops, 1e12);
        ck_assert_exact(p.gpu[i].memory_bytes, 80 * 1073741824.0);
        ck_assert_int_eq(p.gpu[i].cpu_index, 0);
        ck_assert(p.gpu[i].host_latency_s == lat);   /* two half links, exactly */
        ck_assert(p.gpu[i].host_bw >= 1e18);           /* "no bandwidth limit worth the name" */
    }
    double l[64];
    int n = latencies(p.xml_path, l, 64);
    ck_assert_int_eq(n, 13); /* one private link per host */
    for (int i = 0; i < n; i++)
        ck_assert(l[i] + l[i] == lat); /* exactly, not within a tolerance */
    char path[sizeof p.xml_path];
    strcpy(path, p.xml_path);
    platform_free(&p);
    ck_assert_int_ne(access(path, F_OK), 0); /* the temporary file is gone */
    ck_assert_int_eq(platform_make_ideal(0, lat, 1e12, 1, &p, &st), PG_EXIT_INPUT);
    /* many GPUs: the linear star layout, same latencies */
    ck_assert_msg(platform_make_ideal(300, lat, 1e12, 1e9, &p, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(p.ngpus, 300);
    ck_assert_str_eq(p.gpu[299].host, "gpu299");
    double l2[400];
    n = latencies(p.xml_path, l2, 400);
    ck_assert_int_eq(n, 301);
    for (int i = 0; i < n; i++)
        ck_assert(l2[i] + l2[i] == lat);
    platform_free(&p);
}
END_TEST

/* ------------------------------------------------------------ clusters */

static experiment cluster_experiment(int nodes, int gpus, const char *type)
{
    experiment e = uniform_experiment();
    e.network = NET_CLUSTER;
    e.cluster_nodes = nodes;
    e.cluster_gpus_per_node = gpus;
    snprintf(e.cluster_gpu, sizeof e.cluster_gpu, "%s", type);
    return e;
}

START_TEST(cluster_generation)
{
    experiment e = cluster_experiment(12, 8, "h100-sxm");
    pg_status st;
    pg_status_clear(&st);
    platform_desc p;
    ck_assert_msg(platform_make_cluster(&e, &p, &st) == 0, "%s", st.msg);
    const gpu_system *gs = gpu_system_find("h100-sxm");
    ck_assert_int_eq(p.ngpus, 96);
    ck_assert_int_eq(p.ncpus, 12);
    ck_assert_str_eq(p.gpu[0].host, "n00-gpu0");
    ck_assert_str_eq(p.gpu[95].host, "n11-gpu7");
    for (int i = 0; i < p.ngpus; i++) {
        ck_assert_int_eq(p.gpu[i].node, i / 8);
        ck_assert_int_eq(p.gpu[i].local_rank, i % 8);
        ck_assert_str_eq(p.gpu[i].type, "h100-sxm");
        ck_assert_exact(p.gpu[i].speed_flops, gs->speed_flops);
        ck_assert_exact(p.gpu[i].memory_bytes, gs->memory_bytes);
        char cpu[16];
        snprintf(cpu, sizeof cpu, "n%02d-cpu", i / 8);
        ck_assert_str_eq(p.cpu_host[p.gpu[i].cpu_index], cpu);
        if (i > 0) /* name order is rank order (SimGrid sorts hosts by name) */
            ck_assert_int_lt(strcmp(p.gpu[i - 1].host, p.gpu[i].host), 0);
    }
    ck_assert_exact(p.cpu_memory_bytes[0], gs->host_memory_bytes);
    platform_free(&p);
}
END_TEST

/* The generated XML of e into a fresh sb (the caller frees it). */
static void cluster_xml_of(const experiment *e, strbuf *sb)
{
    pg_status st;
    pg_status_clear(&st);
    sb_init(sb);
    ck_assert_msg(platform_cluster_xml(e, sb, &st) == 0, "%s", st.msg);
}

/* The latency, in seconds, of link `id` in a generated platform's XML. */
static double link_latency_s(const char *xml, const char *id)
{
    char key[64];
    snprintf(key, sizeof key, "<link id=\"%s\"", id);
    const char *at = strstr(xml, key);
    ck_assert_msg(at != NULL, "no link %s", id);
    at = strstr(at, "latency=\"");
    ck_assert_ptr_nonnull(at);
    return strtod(at + strlen("latency=\""), NULL);
}

START_TEST(cluster_xml_content)
{
    experiment e = cluster_experiment(2, 4, "a100-80g");
    e.cluster_nvlink_bw = 123e9;
    pg_status st;
    pg_status_clear(&st);
    strbuf sb;
    cluster_xml_of(&e, &sb);
    ck_assert_ptr_nonnull(strstr(sb.data, "bandwidth=\"1.23e+11Bps\""));            /* override */
    ck_assert_ptr_nonnull(strstr(sb.data, "bandwidth=\"3.2e+10Bps\""));             /* a100 PCIe */
    ck_assert_ptr_nonnull(strstr(sb.data, "bandwidth=\"2.5e+10Bps\""));             /* HDR NIC */
    ck_assert_ptr_nonnull(strstr(sb.data, gpu_system_find("a100-80g")->source));    /* provenance */
    ck_assert_ptr_nonnull(strstr(sb.data, "<zoneRoute src=\"node0\" dst=\"node1\""));
    ck_assert_ptr_nonnull(strstr(sb.data, "n1-sw1-up"));  /* 4 GPUs: 2 PCIe switches */
    ck_assert_ptr_null(strstr(sb.data, "n1-sw2-up"));
    ck_assert_ptr_null(strstr(sb.data + strlen("<!--"), "--\n")); /* no "--" inside the comment */
    sb_free(&sb);

    /* cluster.links=fitted (the default of a parsed experiment): NVLink and NIC at the datasheet rate times the
     * profile's fitted coll_bw_eff / net_bw_eff, said in the header; a key given is a datasheet rate too.  Over the
     * A100 and H100 fits, some efficiency of each kind is below 1 (else the check could not fail). */
    const char *const fitted_types[] = {"a100-80g", "h100-sxm"};
    int coll_below = 0, net_below = 0;
    for (size_t t = 0; t < sizeof fitted_types / sizeof fitted_types[0]; t++) {
        gpu_params prof;
        ck_assert_int_eq(gpu_params_load(fitted_types[t], &prof, &st), 0);
        const gpu_system *gs = gpu_system_find(fitted_types[t]);
        e = cluster_experiment(2, 4, fitted_types[t]);
        e.cluster_links_fitted = 1;
        double nvl, nic;
        ck_assert_int_eq(platform_cluster_gpu_bandwidths(&e, &nvl, &nic), 1);
        ck_assert_exact(nvl, gs->nvlink_bw * prof.v[GP_COLL_BW_EFF]);
        ck_assert_exact(nic, gs->nic_bw * prof.v[GP_NET_BW_EFF]);
        sb_init(&sb);
        ck_assert_int_eq(platform_cluster_xml(&e, &sb, &st), 0);
        /* the header names a fitted efficiency below 1 (at 1 the datasheet rate is the fitted one) */
        ck_assert((strstr(sb.data, "x fitted coll_bw_eff") != NULL) == (prof.v[GP_COLL_BW_EFF] < 1));
        ck_assert((strstr(sb.data, "x fitted net_bw_eff") != NULL) == (prof.v[GP_NET_BW_EFF] < 1));
        char datasheet_nic[64];
        snprintf(datasheet_nic, sizeof datasheet_nic, "bandwidth=\"%gBps\"", gs->nic_bw);
        if (prof.v[GP_NET_BW_EFF] < 1)
            ck_assert_ptr_null(strstr(sb.data, datasheet_nic));   /* no NIC at the datasheet rate */
        sb_free(&sb);
        coll_below += prof.v[GP_COLL_BW_EFF] < 1;
        net_below += prof.v[GP_NET_BW_EFF] < 1;
    }
    ck_assert(coll_below > 0 && net_below > 0);

    /* ... and the fitted coll_latency on the links: a route between two GPUs, inside a node (two NVLink ports)
     * or across nodes (two NICs and the core), has the latency of one ring step of the iteration model, which
     * the simulated rings then pay per step (before: 1 us and 2.6 us of modelled wire); datasheet links keep
     * the wire's. */
    for (size_t t = 0; t < sizeof fitted_types / sizeof fitted_types[0]; t++) {
        gpu_params prof;
        ck_assert_int_eq(gpu_params_load(fitted_types[t], &prof, &st), 0);
        double step_s = prof.v[GP_COLL_LATENCY_S];
        ck_assert(step_s > 2.6e-6);   /* both fits: above the wire latencies, so the fitted one applies */
        for (int fitted = 0; fitted <= 1; fitted++) {
            e = cluster_experiment(2, 4, fitted_types[t]);
            e.cluster_links_fitted = fitted;
            sb_init(&sb);
            ck_assert_int_eq(platform_cluster_xml(&e, &sb, &st), 0);
            double nvl_s = link_latency_s(sb.data, "n0-g0-nvl"), nic_s = link_latency_s(sb.data, "n1-g3-nic");
            double core_s = link_latency_s(sb.data, "ib-core-n0");
            ck_assert_double_eq_tol(2 * nvl_s, fitted ? step_s : 1e-6, 1e-18);
            ck_assert_double_eq_tol(2 * nic_s + core_s, fitted ? step_s : 2.6e-6, 1e-18);
            ck_assert((strstr(sb.data, "fitted coll_latency") != NULL) == fitted);
            sb_free(&sb);
        }
    }
    e = cluster_experiment(2, 4, "h100-sxm");   /* its NIC fit is below 1 */
    e.cluster_links_fitted = 1;
    double nvl, nic;
    e.cluster_ib_bw = 2.5e10;
    ck_assert_int_eq(platform_cluster_gpu_bandwidths(&e, &nvl, &nic), 1);
    {   /* a user's NIC rate is a datasheet rate: it runs at the fitted efficiency, as the default's */
        gpu_params prof;
        ck_assert_int_eq(gpu_params_load("h100-sxm", &prof, &st), 0);
        ck_assert(prof.v[GP_NET_BW_EFF] < 1);
        ck_assert_exact(nic, 2.5e10 * prof.v[GP_NET_BW_EFF]);
        double nvl_sheet, nic_sheet;
        ck_assert_int_eq(platform_cluster_datasheet_bandwidths(&e, &nvl_sheet, &nic_sheet), 1);
        ck_assert_exact(nic_sheet, 2.5e10);
        ck_assert_exact(nvl_sheet, gpu_system_find("h100-sxm")->nvlink_bw);
        e.cluster_links_fitted = 0;   /* datasheet links: as given */
        ck_assert_int_eq(platform_cluster_gpu_bandwidths(&e, &nvl, &nic), 1);
        ck_assert_exact(nic, 2.5e10);
    }

    /* many nodes: the star layout, linear in the node count */
    e = cluster_experiment(65, 1, "b200");
    sb_init(&sb);
    ck_assert_int_eq(platform_cluster_xml(&e, &sb, &st), 0);
    ck_assert_ptr_nonnull(strstr(sb.data, "routing=\"DijkstraCache\""));
    ck_assert_ptr_nonnull(strstr(sb.data, "<zoneRoute src=\"node64\" dst=\"fabric\""));
    ck_assert_ptr_null(strstr(sb.data, "dst=\"node01\""));
    sb_free(&sb);
    platform_desc p;
    ck_assert_msg(platform_make_cluster(&e, &p, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(p.ngpus, 65);
    ck_assert_str_eq(p.gpu[64].host, "n64-gpu0");
    platform_free(&p);

    e = cluster_experiment(2, 8, "voodoo5");
    ck_assert_int_eq(platform_make_cluster(&e, &p, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "cluster.gpu"));
    ck_assert_ptr_nonnull(strstr(st.msg, "voodoo5"));
    e = cluster_experiment(0, 8, "h100-sxm");
    ck_assert_int_eq(platform_make_cluster(&e, &p, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "cluster.nodes"));
}
END_TEST

/* cluster.host_link=measured: each GPU's own PCIe link at the profile's
 * measured rate / 0.7 (a copy alone), the PCIe-switch uplink at twice the
 * measured rate and SHARED by both directions: PipeOffload measured its
 * 15 GB/s (A100) with the two GPUs of a pair copying in opposite directions
 * at once (staggered slots), so the directions contend.  The platform reads
 * it back as the solo rate (host_bw) and the rate while both GPUs of the
 * switch copy (host_shared_bw, the k of PipeOffload).  The datasheet host
 * link keeps independent directions. */
START_TEST(cluster_host_link_measured)
{
    experiment e = cluster_experiment(1, 8, "a100-80g");
    e.cluster_host_link_measured = 1;
    strbuf sb;
    cluster_xml_of(&e, &sb);
    ck_assert_ptr_nonnull(strstr(sb.data, "<link id=\"n0-sw3-up\" bandwidth=\"3e+10Bps\" latency=\"0s\" "
                                          "sharing_policy=\"SHARED\"/>"));
    ck_assert_ptr_nonnull(strstr(sb.data, "<link_ctn id=\"n0-sw3-up\"/>"));
    ck_assert_ptr_null(strstr(sb.data, "sw3-up\" direction"));
    sb_free(&sb);
    pg_status st;
    pg_status_clear(&st);
    platform_desc p;
    ck_assert_msg(platform_make_cluster(&e, &p, &st) == 0, "%s", st.msg);
    for (int g = 0; g < p.ngpus; g++) {
        ck_assert_rel(p.gpu[g].host_bw, 15e9 / 0.7, 1e-12);
        ck_assert_exact(p.gpu[g].host_shared_bw, 15e9);
    }
    platform_free(&p);

    e.cluster_host_link_measured = 0;
    cluster_xml_of(&e, &sb);
    ck_assert_ptr_nonnull(strstr(sb.data, "<link_ctn id=\"n0-sw3-up\" direction=\"UP\"/>"));
    ck_assert_ptr_null(strstr(sb.data, "SHARED"));
    sb_free(&sb);
    ck_assert_msg(platform_make_cluster(&e, &p, &st) == 0, "%s", st.msg);
    ck_assert_exact(p.gpu[7].host_bw, gpu_system_find("a100-80g")->pcie_bw);
    ck_assert_exact(p.gpu[7].host_shared_bw, gpu_system_find("a100-80g")->pcie_bw / 2);
    platform_free(&p);
}
END_TEST

/* A job's cluster holds only the nodes it uses, named as in the whole cluster. */
START_TEST(cluster_only_used_nodes)
{
    experiment e = cluster_experiment(4000, 8, "h100-sxm");
    pg_status st;
    pg_status_clear(&st);
    platform_desc p;
    ck_assert_msg(platform_make_cluster_for(&e, 20, &p, &st) == 0, "%s", st.msg);   /* 20 GPUs: 3 nodes */
    ck_assert_int_eq(p.ngpus, 24);
    ck_assert_int_eq(p.ncpus, 3);
    ck_assert_str_eq(p.gpu[0].host, "n0000-gpu0");   /* padded for 4000 nodes, as the whole cluster */
    ck_assert_str_eq(p.gpu[23].host, "n0002-gpu7");
    platform_free(&p);
    /* more GPUs than the cluster has, or none given: every node (the job's check then refuses) */
    e = cluster_experiment(3, 8, "h100-sxm");
    ck_assert_msg(platform_make_cluster_for(&e, 25, &p, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(p.ngpus, 24);
    platform_free(&p);
    ck_assert_msg(platform_make_cluster_for(&e, 0, &p, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(p.ngpus, 24);
    platform_free(&p);
}
END_TEST

/* Bad platforms SimGrid would abort on are refused with file, line and key. */
START_TEST(platform_refused_before_simgrid)
{
    expect_bad_platform(PLAT_HEAD_ROUTING("Bogus") GPU_HOST("g0", "0", "0", MEM80) PLAT_TAIL,
                        ":4: key 'routing'", "'Bogus'");
    expect_bad_platform(PLAT_HEAD GPU_HOST("g0", "0", "0", MEM80)
                        "    <link id=\"l\" bandwidth=\"0Bps\" latency=\"1us\"/>\n" PLAT_TAIL,
                        ":6: key 'bandwidth'", "must be positive");
    expect_bad_platform(PLAT_HEAD GPU_HOST("g0", "0", "0", MEM80)
                        "    <link id=\"l\" bandwidth=\"-1GBps\" latency=\"1us\"/>\n" PLAT_TAIL,
                        ":6: key 'bandwidth'", "must be positive");
    expect_bad_platform(PLAT_HEAD GPU_HOST("g0", "0", "0", MEM80)
                        "    <backbone id=\"b\" bandwidth=\"fast\" latency=\"1us\"/>\n" PLAT_TAIL,
                        ":6: key 'bandwidth'", "'fast'");
    /* SimGrid compares routings ignoring case: so do we */
    const char *path = pg_write_file("case.xml", PLAT_HEAD_ROUTING("dijkstracache") GPU_HOST("g0", "0", "0", MEM80)
                                                     PLAT_TAIL);
    pg_status st;
    pg_status_clear(&st);
    platform_desc p;
    ck_assert_msg(platform_load(path, &p, &st) == 0, "%s", st.msg);
    platform_free(&p);
}
END_TEST

/* ------------------------------------------------------------ GPU table */

START_TEST(gpu_table)
{
    size_t n;
    const gpu_system *all = gpu_systems(&n);
    const char *names[] = {"a100-80g", "h100-sxm", "h200", "b200", "b300", "gb200", "gb300"};
    ck_assert_uint_eq(n, sizeof names / sizeof names[0]);
    for (size_t i = 0; i < n; i++) {
        const gpu_system *g = gpu_system_find(names[i]);
        ck_assert_ptr_nonnull(g);
        ck_assert_ptr_eq(g, &all[i]);
        ck_assert(g->speed_flops > 0 && g->memory_bytes > 0 && g->nvlink_bw > 0 && g->pcie_bw > 0 &&
                  g->nic_bw > 0 && g->host_memory_bytes > 0);
        ck_assert(strlen(g->source) > 20);
    }
    ck_assert_exact(gpu_system_find("a100-80g")->speed_flops, 312e12);
    ck_assert_exact(gpu_system_find("a100-80g")->nic_bw, 200e9 / 8); /* HDR 200 Gb/s */
    ck_assert_exact(gpu_system_find("h100-sxm")->nic_bw, 400e9 / 8); /* NDR 400 Gb/s */
    ck_assert_exact(gpu_system_find("h100-sxm")->nvlink_bw, 450e9);  /* 900 GB/s both ways */
    /* FP4 only on Blackwell; rack-scale NVLink domains only on the NVL72 systems */
    ck_assert(gpu_system_find("h100-sxm")->fp4_flops == 0 && gpu_system_find("b200")->fp4_flops > 0);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(all[i].nvlink_domain_gpus, names[i][0] == 'g' ? 72 : 0);
    ck_assert_exact(gpu_system_find("gb300")->nic_bw, 800e9 / 8);   /* ConnectX-8 800 Gb/s */
    ck_assert_exact(gpu_system_find("gb200")->pcie_bw, 450e9);      /* NVLink-C2C 900 GB/s both ways */
    ck_assert_ptr_null(gpu_system_find("h100"));
    ck_assert_ptr_null(gpu_system_find(""));
    ck_assert_ptr_null(gpu_system_find(NULL));
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("profiles");
    tcase_add_checked_fixture(tc, pg_tmpdir_setup, pg_tmpdir_teardown);
    tcase_add_test(tc, profile_even_split);
    tcase_add_test(tc, profile_even_split_remainder);
    tcase_add_test(tc, profile_explicit_split);
    tcase_add_test(tc, profile_missing_field);
    tcase_add_test(tc, profile_bad_unit);
    tcase_add_test(tc, profile_negative_time);
    tcase_add_test(tc, profile_unknown_key);
    tcase_add_test(tc, profile_wrong_type);
    tcase_add_test(tc, profile_bad_split);
    tcase_add_test(tc, profile_zero_bubble_models);
    suite_add_tcase(s, tc);

    tc = tcase_create("workloads");
    tcase_add_checked_fixture(tc, pg_tmpdir_setup, pg_tmpdir_teardown);
    tcase_add_test(tc, uniform_v1_v2);
    tcase_add_test(tc, workload_profile_and_gpt);
    tcase_add_test(tc, workload_profile_batch_and_tp);
    tcase_add_test(tc, experiment_profile_micro_batch);
    suite_add_tcase(s, tc);

    tc = tcase_create("platforms");
    tcase_add_checked_fixture(tc, pg_tmpdir_setup, pg_tmpdir_teardown);
    tcase_add_test(tc, platform_good_and_ordering);
    tcase_add_test(tc, platform_malformed);
    tcase_add_test(tc, platform_missing_props);
    tcase_add_test(tc, platform_shipped_files);
    tcase_add_test(tc, platform_ideal);
    tcase_add_test(tc, cluster_generation);
    tcase_add_test(tc, cluster_xml_content);
    tcase_add_test(tc, cluster_host_link_measured);
    tcase_add_test(tc, platform_host_shared_rate);
    tcase_add_test(tc, cluster_only_used_nodes);
    tcase_add_test(tc, platform_refused_before_simgrid);
    tcase_add_test(tc, gpu_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pg_run_suite(model_suite());
}
