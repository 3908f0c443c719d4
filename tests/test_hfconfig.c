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

/* Published totals and, for MoE, active counts (0: dense, active = total).
 * Sources: profiles/models/README.md. */
static const struct {
    const char *file, *name;
    double total, active;
} MODELS[] = {
    {"llama2-7b.json", "llama2-7b", 6.74 * BILLION, 0},
    {"llama2-70b.json", "llama2-70b", 68.98 * BILLION, 0},
    {"llama3-8b.json", "llama3-8b", 8.03 * BILLION, 0},
    {"llama3-70b.json", "llama3-70b", 70.55 * BILLION, 0},
    {"llama3.1-405b.json", "llama3.1-405b", 405.85 * BILLION, 0},
    {"mixtral-8x7b.json", "mixtral-8x7b", 46.70 * BILLION, 12.88 * BILLION},
    {"qwen-moe-a2.7b.json", "qwen-moe-a2.7b", 14.3 * BILLION, 2.7 * BILLION},
    {"deepseek-v3.json", "deepseek-v3", 671 * BILLION, 0 /* its own convention: deepseek_v3_active */},
    {"gpt3-175b.json", "gpt3-175b", 175 * BILLION, 0},
};
#define NMODELS (sizeof MODELS / sizeof MODELS[0])

START_TEST(hf_models_load_and_match_published_counts)
{
    for (size_t i = 0; i < NMODELS; i++) {
        arch a;
        load_model(MODELS[i].file, &a);
        ck_assert_str_eq(a.name, MODELS[i].name);
        double total = arch_params_total(&a), active = arch_params_active(&a);
        ck_assert_msg(fabs(total / MODELS[i].total - 1) <= PUBLISHED_REL_TOL, "%s: %.4gB total, published %.4gB",
                      MODELS[i].file, total / BILLION, MODELS[i].total / BILLION);
        if (MODELS[i].active > 0)
            ck_assert_msg(fabs(active / MODELS[i].active - 1) <= PUBLISHED_REL_TOL,
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
               "  \"decoder_sparse_step\": 2\n}\n",
               "decoder_sparse_step", 11, "only 1");
    expect_bad("{\n  \"model_type\": \"qwen2_moe\",\n" LLAMA_HIDDEN LLAMA_LAYERS
               "  \"num_attention_heads\": 8,\n  \"intermediate_size\": 688,\n  \"vocab_size\": 1000,\n"
               "  \"num_experts\": 4,\n  \"num_experts_per_tok\": 2,\n  \"moe_intermediate_size\": 64,\n"
               "  \"mlp_only_layers\": [1, 3]\n}\n",
               "mlp_only_layers", 11, "prefix");
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
                           "deepseek-v3.json", "gpt3-175b.json", "pipeoffload-10.5b.json"};
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
    tcase_add_test(tc, hf_llama3_8b_gqa_shapes);
    tcase_add_test(tc, hf_gpt3_equals_arch_gpt);
    tcase_add_test(tc, hf_gpt_layer_flops_closed_form);
    tcase_add_test(tc, hf_llama3_8b_layer_flops_by_hand);
    tcase_add_test(tc, hf_moe_fields);
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
    suite_add_tcase(s, bad);
    return s;
}

int main(void)
{
    return pg_run_suite(hfconfig_suite());
}
