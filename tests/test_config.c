/* test_config.c: experiment files -> flat keys -> typed experiment.
 * Every YAML input is written to a temporary file, as a user's would be. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/config.h"
#include "model/experiment.h"
#include "model/memory.h"
#include "testutil.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* Load YAML text (NULL = no file) plus --set assignments into e. */
static int load(const char *yaml, const char *const *sets, config *c, experiment *e, pg_status *st)
{
    config_init(c);
    pg_status_clear(st);
    int rc = 0;
    if (yaml)
        rc = config_load_file(c, pg_write_file("exp.yaml", yaml), st);
    for (int i = 0; rc == 0 && sets && sets[i]; i++)
        rc = config_apply_set(c, sets[i], st);
    if (rc == 0)
        rc = experiment_from_config(c, e, st);
    return rc;
}

/* Expect failure with a message that starts with prefix and contains needle. */
static void expect_fail(const char *yaml, const char *const *sets, const char *prefix, const char *needle)
{
    config c;
    experiment e;
    pg_status st;
    int rc = load(yaml, sets, &c, &e, &st);
    ck_assert_msg(rc == PG_EXIT_INPUT, "accepted (rc %d): %s", rc, yaml ? yaml : sets[0]);
    ck_assert_int_eq(st.code, PG_EXIT_INPUT);
    if (prefix) {
        char full[512];
        if (prefix[0] == ':')
            snprintf(full, sizeof full, "%s/exp.yaml%s", pg_tmpdir(), prefix);
        else
            snprintf(full, sizeof full, "%s", prefix);
        ck_assert_msg(strncmp(st.msg, full, strlen(full)) == 0, "'%s' does not start with '%s'", st.msg, full);
    }
    if (needle)
        ck_assert_msg(strstr(st.msg, needle) != NULL, "'%s' lacks '%s'", st.msg, needle);
    config_free(&c);
}

/* ---------------------------------------------------------------- config */

START_TEST(test_flatten)
{
    config c;
    config_init(&c);
    pg_status st;
    const char *path = pg_write_file("f.yaml", "schedule: zb-h1\n"
                                            "uniform:\n"
                                            "  f: 1ms\n"
                                            "  b: 2ms\n"
                                            "offload: selective\n"
                                            "offload.ratio: 0.25\n"
                                            "memory: {limit: 3}\n"
                                            "grid: [1, 2, 3]\n"
                                            "deep:\n"
                                            "  a:\n"
                                            "    b.c: x\n"
                                            "empty_list: []\n");
    ck_assert_int_eq(config_load_file(&c, path, &st), 0);
    ck_assert_uint_eq(c.count, 9);
    const cfg_entry *en = config_find(&c, "uniform.b");
    ck_assert_ptr_nonnull(en);
    ck_assert_str_eq(en->value, "2ms");
    ck_assert_int_eq(en->origin.line, 4);
    ck_assert_str_eq(en->origin.file, path);
    ck_assert_str_eq(config_find(&c, "offload")->value, "selective");
    ck_assert_str_eq(config_find(&c, "offload.ratio")->value, "0.25");
    ck_assert_int_eq(config_find(&c, "offload.ratio")->origin.line, 6);
    ck_assert_str_eq(config_find(&c, "memory.limit")->value, "3");
    ck_assert_str_eq(config_find(&c, "grid")->value, "1,2,3");
    ck_assert_str_eq(config_find(&c, "deep.a.b.c")->value, "x");
    ck_assert_int_eq(config_find(&c, "deep.a.b.c")->origin.line, 11);
    ck_assert_str_eq(config_find(&c, "empty_list")->value, "");
    ck_assert_ptr_null(config_find(&c, "uniform"));
    ck_assert_ptr_null(config_find(&c, "memory"));
    /* The origin's file name is owned by the config, not by the caller's string. */
    ck_assert_ptr_ne(en->origin.file, path);
    config_free(&c);
    ck_assert_uint_eq(c.count, 0);
    config_free(&c);
}
END_TEST

START_TEST(test_flatten_errors)
{
    static const struct {
        const char *yaml;
        const char *prefix;
        const char *needle;
    } cases[] = {
        {"grid:\n  - {a: 1}\n", ":2: key 'grid': ", "list items must be plain values, not a mapping"},
        {"grid: [[1, 2]]\n", ":1: key 'grid': ", "not a sequence"},
        {"uniform: {f: 1}\nuniform.f: 2\n", ":2: key 'uniform.f': ", "given twice in this file (first at line 1)"},
        {"pp: 1\npp: 2\n", ":2: key 'pp': ", "duplicate key"},
        {"- a\n- b\n", ":1: ", "must be a mapping of keys to values, not a sequence"},
        {"just text\n", ":1: ", "not a scalar"},
        {"'': 1\n", ":1: key '': ", "non-empty name"},
        {"a..b: 1\n", ":1: key 'a..b': ", "dots only between parts"},
        {".a: 1\n", ":1: ", "dots only between parts"},
        {"m: {'b.': 1}\n", ":1: key 'm.b.': ", "dots only between parts"},
        {"pp: [1\n", ":2: ", "malformed YAML"},
        {"a: &x 1\n", ":1: ", "anchors and aliases are not supported"},
        {"a: 1\n---\nb: 1\n", ":2: ", "more than one YAML document"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_fail(cases[i].yaml, NULL, cases[i].prefix, cases[i].needle);
}
END_TEST

START_TEST(test_missing_file)
{
    config c;
    config_init(&c);
    pg_status st;
    char path[256];
    snprintf(path, sizeof path, "%s/nope.yaml", pg_tmpdir());
    ck_assert_int_eq(config_load_file(&c, path, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, path));
    config_free(&c);
}
END_TEST

START_TEST(test_empty_file_gives_defaults)
{
    config c;
    experiment e, d;
    pg_status st;
    ck_assert_int_eq(load("# nothing here\n", NULL, &c, &e, &st), 0);
    ck_assert_uint_eq(c.count, 0);
    experiment_defaults(&d);
    /* The derived defaults: memory.bytes_per_param = 0 resolves to
     * Megatron's 2 (bf16 weight) + 4 (fp32 gradient) + 12 (Adam) = 18. */
    d.weight_grad_bytes_per_param = MEMORY_BF16_WEIGHT_BYTES + 4.0;
    d.bytes_per_param = d.weight_grad_bytes_per_param + MEMORY_ADAM_STATE_BYTES;
    /* and dp.shard_group "dp" resolves to dp */
    d.dp_shard_group = d.dp;
    ck_assert_int_eq(memcmp(&e, &d, sizeof e), 0);
    config_free(&c);
    ck_assert_int_eq(load("", NULL, &c, &e, &st), 0);
    config_free(&c);
}
END_TEST

START_TEST(test_set)
{
    config c;
    config_init(&c);
    pg_status st;
    ck_assert_int_eq(config_load_file(&c, pg_write_file("s.yaml", "pp: 2\nname: file\n"), &st), 0);
    ck_assert_int_eq(config_apply_set(&c, "pp=8", &st), 0);
    ck_assert_int_eq(config_apply_set(&c, "pp=16", &st), 0);  /* later wins */
    ck_assert_int_eq(config_apply_set(&c, " uniform.f = 2ms ", &st), 0);
    ck_assert_int_eq(config_apply_set(&c, "description=a=b", &st), 0);
    ck_assert_int_eq(config_apply_set(&c, "name=", &st), 0);
    const cfg_entry *pp = config_find(&c, "pp");
    ck_assert_str_eq(pp->value, "16");
    ck_assert_str_eq(pp->origin.file, "--set");
    ck_assert_int_eq(pp->origin.line, 0);
    ck_assert_str_eq(config_find(&c, "uniform.f")->value, "2ms");
    ck_assert_str_eq(config_find(&c, "description")->value, "a=b");
    ck_assert_str_eq(config_find(&c, "name")->value, "");
    ck_assert_uint_eq(c.count, 4);

    ck_assert_int_eq(config_apply_set(&c, "pp", &st), PG_EXIT_INPUT);
    ck_assert_str_eq(st.msg, "--set 'pp': expected KEY=VALUE");
    ck_assert_int_eq(config_apply_set(&c, "=4", &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "--set '=4'"));
    ck_assert_ptr_nonnull(strstr(st.msg, "empty key"));
    ck_assert_int_eq(config_apply_set(&c, "  =4", &st), PG_EXIT_INPUT);
    ck_assert_int_eq(config_apply_set(&c, "", &st), PG_EXIT_INPUT);
    ck_assert_str_eq(config_find(&c, "pp")->value, "16");

    /* config_put replaces in place and keeps one entry per key. */
    pg_origin o = {"x", 3};
    config_put(&c, "pp", "5", o);
    ck_assert_str_eq(config_find(&c, "pp")->value, "5");
    ck_assert_int_eq(config_find(&c, "pp")->origin.line, 3);
    ck_assert_uint_eq(c.count, 4);
    config_free(&c);
}
END_TEST

START_TEST(test_two_files)
{
    config c;
    config_init(&c);
    pg_status st;
    const char *a = pg_write_file("a.yaml", "pp: 2\nchunks: 3\n");
    const char *b = pg_write_file("b.yaml", "\npp: 6\n");
    ck_assert_int_eq(config_load_file(&c, a, &st), 0);
    ck_assert_int_eq(config_load_file(&c, b, &st), 0);
    ck_assert_str_eq(config_find(&c, "pp")->value, "6");
    ck_assert_str_eq(config_find(&c, "pp")->origin.file, b);
    ck_assert_int_eq(config_find(&c, "pp")->origin.line, 2);
    ck_assert_str_eq(config_find(&c, "chunks")->origin.file, a);
    ck_assert_uint_eq(c.nfiles, 2);
    config_free(&c);
}
END_TEST

/* ---------------------------------------------------------------- experiment */

START_TEST(test_defaults)
{
    experiment e;
    experiment_defaults(&e);
    ck_assert_str_eq(e.schedule, "1f1b");
    ck_assert_int_eq(e.pp, 4);
    ck_assert_int_eq(e.microbatches, 8);
    ck_assert_int_eq(e.chunks, 2);
    ck_assert_int_eq(e.tp, 1);
    ck_assert_int_eq(e.dp, 1);
    ck_assert_int_eq(e.micro_batch_size, 1);
    ck_assert_int_eq(e.global_batch_size, 0);
    ck_assert_int_eq(e.workload, WL_UNIFORM);
    ck_assert_exact(e.uniform_f_s, 1.0);
    ck_assert_exact(e.uniform_b_s, 1.0);
    ck_assert_exact(e.uniform_w_s, 1.0);
    ck_assert_exact(e.uniform_w_fraction, 0.4324);
    ck_assert_exact(e.uniform_activation_bytes, GIB);
    ck_assert_exact(e.uniform_params, 0);
    ck_assert_int_eq(e.gpt_layers, 0);
    ck_assert_int_eq(e.gpt_vocab, 51200);
    ck_assert_int_eq(e.network, NET_IDEAL);
    ck_assert_exact(e.ideal_latency_s, 0);
    ck_assert_int_eq(e.cluster_nodes, 1);
    ck_assert_int_eq(e.cluster_gpus_per_node, 8);
    ck_assert_str_eq(e.cluster_gpu, "h100-sxm");
    ck_assert_exact(e.cluster_nvlink_bw, 0);
    ck_assert_exact(e.cluster_ib_bw, 0);
    ck_assert_exact(e.cluster_pcie_bw, 0);
    ck_assert_exact(e.memory_limit, 0);
    ck_assert_exact(e.memory_capacity_bytes, 0);
    ck_assert_exact(e.bytes_per_param, 18);   /* Megatron: bf16 weight, fp32 gradient, Adam */
    ck_assert_exact(e.weight_grad_bytes_per_param, 6);
    ck_assert_int_eq(e.offload, OFFLOAD_NONE);
    ck_assert_exact(e.offload_ratio, 0.5);
    ck_assert_int_eq(e.recompute, RECOMPUTE_NONE);
    ck_assert_str_eq(e.name, "");
    ck_assert_str_eq(e.description, "");
    ck_assert_ptr_null(e.origin_pp.file);
    ck_assert_ptr_null(experiment_origin(&e, "pp").file);
}
END_TEST

START_TEST(test_every_key)
{
    const char *yaml = "name: big run\n"
                       "description: \"all keys, once\"\n"
                       "schedule: zb-v\n"
                       "pp: 8\n"
                       "microbatches: 32\n"
                       "chunks: 3\n"
                       "tp: 2\n"
                       "dp: 4\n"
                       "micro_batch_size: 2\n"
                       "global_batch_size: 256\n"
                       "workload: gpt\n"
                       "uniform:\n"
                       "  f: 1.5ms\n"
                       "  b: 3ms\n"
                       "  w: 2us\n"
                       "  w_fraction: 0.25\n"
                       "  activation: 34MiB\n"
                       "  params: 1.5e9\n"
                       "gpt: {layers: 24, hidden: 4096, heads: 32, seq: 2048, vocab: 50257}\n"
                       "network: cluster\n"
                       "ideal.latency: 10us\n"
                       "cluster:\n"
                       "  nodes: 4\n"
                       "  gpus_per_node: 4\n"
                       "  gpu: a100-80g\n"
                       "  nvlink_bw: 300GBps\n"
                       "  ib_bw: 200Gbps\n"
                       "  pcie_bw: 32GiBps\n"
                       "memory:\n"
                       "  limit: 2.5\n"
                       "  capacity: 40GiB\n"
                       "  bytes_per_param: 18\n"
                       "offload: selective\n"
                       "offload.ratio: 0.75\n"
                       "recompute: plan\n";
    config c;
    experiment e;
    pg_status st;
    ck_assert_msg(load(yaml, NULL, &c, &e, &st) == 0, "%s", st.msg);
    ck_assert_str_eq(e.name, "big run");
    ck_assert_str_eq(e.description, "all keys, once");
    ck_assert_str_eq(e.schedule, "zb-v");
    ck_assert_int_eq(e.pp, 8);
    ck_assert_int_eq(e.microbatches, 32);
    ck_assert_int_eq(e.chunks, 3);
    ck_assert_int_eq(e.tp, 2);
    ck_assert_int_eq(e.dp, 4);
    ck_assert_int_eq(e.micro_batch_size, 2);
    ck_assert_int_eq(e.global_batch_size, 256);
    ck_assert_int_eq(e.workload, WL_GPT);
    ck_assert_exact(e.uniform_f_s, 1.5e-3);
    ck_assert_exact(e.uniform_b_s, 3e-3);
    ck_assert_exact(e.uniform_w_s, 2e-6);
    ck_assert_exact(e.uniform_w_fraction, 0.25);
    ck_assert_exact(e.uniform_activation_bytes, 34.0 * 1024 * 1024);
    ck_assert_exact(e.uniform_params, 1.5e9);
    ck_assert_int_eq(e.gpt_layers, 24);
    ck_assert_int_eq(e.gpt_hidden, 4096);
    ck_assert_int_eq(e.gpt_heads, 32);
    ck_assert_int_eq(e.gpt_seq, 2048);
    ck_assert_int_eq(e.gpt_vocab, 50257);
    ck_assert_int_eq(e.network, NET_CLUSTER);
    ck_assert_exact(e.ideal_latency_s, 10e-6);
    ck_assert_int_eq(e.cluster_nodes, 4);
    ck_assert_int_eq(e.cluster_gpus_per_node, 4);
    ck_assert_str_eq(e.cluster_gpu, "a100-80g");
    ck_assert_exact(e.cluster_nvlink_bw, 300e9);
    ck_assert_exact(e.cluster_ib_bw, 25e9);
    ck_assert_exact(e.cluster_pcie_bw, 32 * GIB);
    ck_assert_exact(e.memory_limit, 2.5);
    ck_assert_exact(e.memory_capacity_bytes, 40 * GIB);
    ck_assert_exact(e.bytes_per_param, 18);
    ck_assert_int_eq(e.offload, OFFLOAD_SELECTIVE);
    ck_assert_exact(e.offload_ratio, 0.75);
    ck_assert_int_eq(e.recompute, RECOMPUTE_PLAN);
    /* Origins: the file and the line of each key. */
    ck_assert_int_eq(e.origin_schedule.line, 3);
    ck_assert_int_eq(e.origin_pp.line, 4);
    ck_assert_int_eq(e.origin_microbatches.line, 5);
    ck_assert_int_eq(e.origin_workload.line, 11);
    ck_assert_int_eq(e.origin_network.line, 20);
    ck_assert_int_eq(experiment_origin(&e, "uniform.w").line, 15);
    ck_assert_int_eq(experiment_origin(&e, "gpt.heads").line, 19);
    ck_assert_int_eq(experiment_origin(&e, "cluster.pcie_bw").line, 28);
    ck_assert_int_eq(experiment_origin(&e, "recompute").line, 35);
    ck_assert_ptr_nonnull(strstr(experiment_origin(&e, "recompute").file, "exp.yaml"));
    ck_assert_ptr_null(experiment_origin(&e, "no.such.key").file);
    config_free(&c);

    /* Every choice word of every enum key. */
    static const struct {
        const char *set;
        size_t offset;
        int value;
    } words[] = {
        {"offload=none", offsetof(experiment, offload), OFFLOAD_NONE},
        {"offload=full", offsetof(experiment, offload), OFFLOAD_FULL},
        {"offload=selective", offsetof(experiment, offload), OFFLOAD_SELECTIVE},
        {"recompute=none", offsetof(experiment, recompute), RECOMPUTE_NONE},
        {"recompute=full", offsetof(experiment, recompute), RECOMPUTE_FULL},
        {"recompute=selective", offsetof(experiment, recompute), RECOMPUTE_SELECTIVE},
        {"recompute=plan", offsetof(experiment, recompute), RECOMPUTE_PLAN},
        {"network=ideal", offsetof(experiment, network), NET_IDEAL},
        {"network=cluster", offsetof(experiment, network), NET_CLUSTER},
        {"workload=uniform", offsetof(experiment, workload), WL_UNIFORM},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        const char *sets[] = {words[i].set, NULL};
        ck_assert_msg(load(NULL, sets, &c, &e, &st) == 0, "%s: %s", words[i].set, st.msg);
        ck_assert_int_eq(*(const int *)((const char *)&e + words[i].offset), words[i].value);
        config_free(&c);
    }
}
END_TEST

START_TEST(test_set_overrides_file)
{
    const char *sets[] = {"pp=6", "uniform.f=250us", "schedule=file:/tmp/x.csv", NULL};
    config c;
    experiment e;
    pg_status st;
    ck_assert_int_eq(load("pp: 2\nuniform: {f: 1ms}\n", sets, &c, &e, &st), 0);
    ck_assert_int_eq(e.pp, 6);
    ck_assert_str_eq(e.origin_pp.file, "--set");
    ck_assert_exact(e.uniform_f_s, 250e-6);
    ck_assert_str_eq(e.schedule, "file:/tmp/x.csv");
    config_free(&c);
}
END_TEST

typedef struct bad_value {
    const char *yaml;
    const char *key;
    const char *needle;
} bad_value;

START_TEST(test_bad_values)
{
    static const bad_value cases[] = {
        {"pp: 0\n", "pp", "expected an integer between 1 and 4096, got '0'"},
        {"pp: -2\n", "pp", "negative values are not allowed"},
        {"pp: 2.5\n", "pp", "not an integer"},
        {"pp: four\n", "pp", "got 'four'"},
        {"pp:\n", "pp", "empty value"},
        {"pp: 99999999999\n", "pp", "between 1 and"},
        {"microbatches: 0\n", "microbatches", "an integer"},
        {"chunks: 0\n", "chunks", "an integer"},
        {"tp: 0\n", "tp", "an integer"},
        {"dp: x\n", "dp", "an integer"},
        {"micro_batch_size: 0\n", "micro_batch_size", "an integer"},
        {"global_batch_size: -1\n", "global_batch_size", "an integer"},
        {"schedule: ''\n", "schedule", "empty"},
        {"schedule: 'file:'\n", "schedule", "file: needs a path"},
        {"workload: nosuch\n", "workload", "one of uniform, gpt, or the path of an existing file"},
        {"uniform.f: 0\n", "uniform.f", "a duration > 0"},
        {"uniform.f: 1sec\n", "uniform.f", "unknown unit"},
        {"uniform.b: -1ms\n", "uniform.b", "negative"},
        {"uniform.w: nan\n", "uniform.w", "got 'nan'"},
        {"uniform.w_fraction: 1.5\n", "uniform.w_fraction", "a number between 0 and 1"},
        {"uniform.activation: 1GiBB\n", "uniform.activation", "a size >= 0 such as 80GiB"},
        {"uniform.params: lots\n", "uniform.params", "a number >= 0"},
        {"gpt.layers: 0\n", "gpt.layers", "an integer"},
        {"gpt.hidden: 1k\n", "gpt.hidden", "an integer"},
        {"gpt.heads: -3\n", "gpt.heads", "an integer"},
        {"gpt.seq: 1.5\n", "gpt.seq", "an integer"},
        {"gpt.vocab: 0\n", "gpt.vocab", "an integer"},
        {"network: torus\n", "network", "one of ideal, cluster, or the path"},
        {"ideal.latency: 1parsec\n", "ideal.latency", "a duration between 0 and 1000000"},
        {"cluster.nodes: 0\n", "cluster.nodes", "an integer"},
        {"cluster.gpus_per_node: 0\n", "cluster.gpus_per_node", "an integer"},
        {"cluster.nvlink_bw: 300GB\n", "cluster.nvlink_bw", "a bandwidth >= 0 such as 150GBps"},
        {"cluster.ib_bw: fast\n", "cluster.ib_bw", "a bandwidth"},
        {"cluster.pcie_bw: -1Gbps\n", "cluster.pcie_bw", "a bandwidth"},
        {"memory.limit: -1\n", "memory.limit", "a number >= 0"},
        {"memory.capacity: 80GiBs\n", "memory.capacity", "a size"},
        {"memory.bytes_per_param: inf\n", "memory.bytes_per_param", "a number"},
        {"offload: some\n", "offload", "one of none, full, selective, plan, got 'some'"},
        {"offload.ratio: 2\n", "offload.ratio", "a number between 0 and 1"},
        {"recompute: always\n", "recompute", "one of none, full, selective, plan"},
        {"moe.probs: outputs\n", "moe.probs", "one of activation, combine"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char prefix[128];
        snprintf(prefix, sizeof prefix, ":1: key '%s': ", cases[i].key);
        expect_fail(cases[i].yaml, NULL, prefix, cases[i].needle);
    }
    /* Too-long text. */
    char *long_name = malloc(PG_NAME_MAX + 16);
    strcpy(long_name, "name: ");
    memset(long_name + 6, 'n', PG_NAME_MAX);
    strcpy(long_name + 6 + PG_NAME_MAX, "\n");
    expect_fail(long_name, NULL, ":1: key 'name': ", "too long");
    free(long_name);
    /* Bad values from --set name the option. */
    const char *sets[] = {"pp=zero", NULL};
    expect_fail(NULL, sets, "--set: key 'pp': ", "expected an integer");
}
END_TEST

START_TEST(test_unknown_keys)
{
    expect_fail("pp: 4\nmicrobatch: 8\n", NULL, ":2: key 'microbatch': ", "unknown key (did you mean 'microbatches'?)");
    expect_fail("uniform:\n  wfraction: 0.3\n", NULL, ":2: key 'uniform.wfraction': ",
                "did you mean 'uniform.w_fraction'?");
    expect_fail("latency: 1us\n", NULL, ":1: key 'latency': ", "did you mean 'ideal.latency'?");
    expect_fail("memory: {capacty: 1GiB}\n", NULL, ":1: key 'memory.capacty': ", "did you mean 'memory.capacity'?");
    expect_fail("completely_unrelated_words: 1\n", NULL, ":1: key 'completely_unrelated_words': ", "unknown key");
    config c;
    experiment e;
    pg_status st;
    ck_assert_int_eq(load("zzzzzzzzzzzzzzzz: 1\n", NULL, &c, &e, &st), PG_EXIT_INPUT);
    ck_assert_ptr_null(strstr(st.msg, "did you mean"));
    config_free(&c);
    const char *sets[] = {"shedule=1f1b", NULL};
    expect_fail(NULL, sets, "--set: key 'shedule': ", "did you mean 'schedule'?");
    ck_assert_str_eq(experiment_suggest_key("chunk"), "chunks");
    ck_assert_ptr_null(experiment_suggest_key("x"));
    ck_assert(experiment_key_known("offload.ratio"));
    ck_assert(!experiment_key_known("offload.rate"));
}
END_TEST

START_TEST(test_batch_derivation)
{
    config c;
    experiment e;
    pg_status st;
    ck_assert_int_eq(load("global_batch_size: 64\nmicro_batch_size: 2\ndp: 4\n", NULL, &c, &e, &st), 0);
    ck_assert_int_eq(e.microbatches, 8);
    config_free(&c);
    ck_assert_int_eq(load("global_batch_size: 96\n", NULL, &c, &e, &st), 0);
    ck_assert_int_eq(e.microbatches, 96);
    config_free(&c);
    /* Consistent explicit value is fine. */
    ck_assert_int_eq(load("global_batch_size: 64\nmicro_batch_size: 2\ndp: 4\nmicrobatches: 8\n", NULL, &c, &e, &st),
                     0);
    config_free(&c);
    expect_fail("global_batch_size: 100\nmicro_batch_size: 3\n", NULL, ":1: key 'global_batch_size': ",
                "100 is not a multiple of micro_batch_size x dp = 3 x 1 = 3");
    expect_fail("global_batch_size: 2\ndp: 4\n", NULL, ":1: key 'global_batch_size': ", "not a multiple");
    expect_fail("global_batch_size: 64\nmicro_batch_size: 2\ndp: 4\nmicrobatches: 16\n", NULL,
                ":4: key 'microbatches': ", "16 contradicts global_batch_size");
    const char *sets[] = {"dp=3", NULL};
    expect_fail("global_batch_size: 64\n", sets, ":1: key 'global_batch_size': ", "x dp = 1 x 3");
}
END_TEST

START_TEST(test_paths)
{
    config c;
    experiment e;
    pg_status st;
    char abs_profile[128];
    pg_write_file("prof.yaml", "layers: []\n");
    snprintf(abs_profile, sizeof abs_profile, "%s/prof.yaml", pg_tmpdir());
    char yaml[512];
    snprintf(yaml, sizeof yaml, "workload: %s\nnetwork: %s\n", abs_profile, abs_profile);
    ck_assert_msg(load(yaml, NULL, &c, &e, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(e.workload, WL_PROFILE);
    ck_assert_str_eq(e.profile_path, abs_profile);
    ck_assert_int_eq(e.network, NET_PLATFORM);
    ck_assert_str_eq(e.platform_path, abs_profile);
    config_free(&c);
    /* A relative path next to the experiment file. */
    ck_assert_msg(load("workload: prof.yaml\n", NULL, &c, &e, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(e.workload, WL_PROFILE);
    ck_assert_str_eq(e.profile_path, abs_profile);
    config_free(&c);
    /* Missing files name file, line and key. */
    expect_fail("pp: 2\nworkload: profiles/none-such.yaml\n", NULL, ":2: key 'workload': ",
                "got 'profiles/none-such.yaml' (no such file");
    expect_fail("network: platforms/none-such.xml\n", NULL, ":1: key 'network': ", "no such file");
    /* A directory is not a profile. */
    snprintf(yaml, sizeof yaml, "workload: %s\n", pg_tmpdir());
    expect_fail(yaml, NULL, ":1: key 'workload': ", "no such file");
}
END_TEST

START_TEST(test_gpt_requirements)
{
    config c;
    experiment e;
    pg_status st;
    ck_assert_int_eq(load("workload: gpt\ngpt: {layers: 2, hidden: 64, heads: 4, seq: 16}\n", NULL, &c, &e, &st), 0);
    ck_assert_int_eq(e.gpt_vocab, 51200);
    config_free(&c);
    expect_fail("workload: gpt\ngpt: {hidden: 64, heads: 4, seq: 16}\n", NULL, ":1: key 'workload': ",
                "gpt needs gpt.layers");
    expect_fail("workload: gpt\ngpt: {layers: 2, hidden: 64, heads: 4}\n", NULL, ":1: key 'workload': ",
                "gpt needs gpt.seq");
    expect_fail("workload: gpt\ngpt: {layers: 2, hidden: 64, heads: 5, seq: 16}\n", NULL, ":2: key 'gpt.heads': ",
                "5 does not divide gpt.hidden = 64");
    /* gpt.* keys are harmless with another workload. */
    ck_assert_int_eq(load("gpt.layers: 3\n", NULL, &c, &e, &st), 0);
    config_free(&c);
}
END_TEST

START_TEST(test_key_docs)
{
    size_t n = 0;
    const exp_key_doc *docs = experiment_key_docs(&n);
    ck_assert_uint_ge(n, 30);
    ck_assert_uint_le(n, EXP_MAX_KEYS);
    /* Every key the command-line contract names is in the schema. */
    static const char *const contract[] = {
        "schedule", "pp", "microbatches", "chunks", "workload", "uniform.f", "uniform.b", "uniform.w", "network",
        "ideal.latency", "memory.limit", "uniform.w_fraction", "memory.capacity", "offload", "offload.ratio",
        "recompute", "gpt.layers", "gpt.hidden", "gpt.heads", "gpt.seq", "gpt.vocab", "micro_batch_size",
        "global_batch_size", "tp", "dp", "cluster.nodes", "cluster.gpus_per_node", "cluster.gpu",
        "cluster.nvlink_bw", "cluster.ib_bw", "cluster.pcie_bw",
    };
    for (size_t i = 0; i < sizeof contract / sizeof contract[0]; i++) {
        int found = 0;
        for (size_t j = 0; j < n; j++)
            found |= strcmp(docs[j].key, contract[i]) == 0;
        ck_assert_msg(found, "contract key '%s' missing", contract[i]);
        ck_assert(experiment_key_known(contract[i]));
    }
    /* Each documented default, given explicitly, is accepted and changes
     * nothing: the same experiment as an empty configuration's (derived
     * defaults such as memory.bytes_per_param resolved). */
    experiment d;
    {
        config c0;
        pg_status st0;
        ck_assert_msg(load(NULL, NULL, &c0, &d, &st0) == 0, "%s", st0.msg);
        config_free(&c0);
    }
    for (size_t j = 0; j < n; j++) {
        ck_assert_ptr_nonnull(docs[j].type);
        ck_assert_ptr_nonnull(docs[j].help);
        ck_assert_msg(strlen(docs[j].help) > 10, "key %s lacks help", docs[j].key);
        if (strcmp(docs[j].default_text, "none") == 0 && strncmp(docs[j].key, "gpt.", 4) == 0)
            continue;
        if (strcmp(docs[j].key, "global_batch_size") == 0 || strcmp(docs[j].key, "name") == 0 ||
            strcmp(docs[j].key, "description") == 0)
            continue;
        char set[256];
        snprintf(set, sizeof set, "%s=%s", docs[j].key, docs[j].default_text);
        const char *sets[] = {set, NULL};
        config c;
        experiment e;
        pg_status st;
        ck_assert_msg(load(NULL, sets, &c, &e, &st) == 0, "%s: %s", set, st.msg);
        /* Compare everything but the origins. */
        ck_assert_msg(memcmp(&e, &d, offsetof(experiment, origin_schedule)) == 0, "%s changed a value", set);
        config_free(&c);
    }
}
END_TEST

/* A batch size given on the command line replaces the experiment file's
 * microbatch count; contradicting values at one level are an error. */
START_TEST(test_batch_size_precedence)
{
    config c;
    experiment e;
    pg_status st;
    const char *file = "microbatches: 24\nmicro_batch_size: 2\n";
    const char *const override[] = {"global_batch_size=64", NULL};
    ck_assert_int_eq(load(file, override, &c, &e, &st), 0);
    ck_assert_int_eq(e.microbatches, 32);
    config_free(&c);

    const char *const both[] = {"microbatches=8", "global_batch_size=64", NULL};
    expect_fail(file, both, NULL, "contradicts global_batch_size");

    expect_fail("microbatches: 24\nmicro_batch_size: 2\nglobal_batch_size: 64\n", NULL, NULL,
                "contradicts global_batch_size");
}
END_TEST

/* The keys of modern jobs: bytes per parameter follow the gradient
 * precision unless given; ep must divide dp x cp; hf: needs a file and a
 * sequence length; bad words name their key. */
START_TEST(test_modern_keys)
{
    config c;
    experiment e;
    pg_status st;
    const char *bf16[] = {"dp.grad_precision=bf16", NULL};
    ck_assert_int_eq(load(NULL, bf16, &c, &e, &st), 0);
    ck_assert_exact(e.bytes_per_param, 16);
    ck_assert_exact(e.weight_grad_bytes_per_param, 4);
    config_free(&c);
    /* memory.fp8_params: one byte a weight with an FP8 recipe (1 + 2 + 12; ZeRO-1 keeps 3 whole), the
     * all-gathers' bytes too; nothing with NVFP4 (the key does not apply) */
    const char *fp8w[] = {"dp.grad_precision=bf16", "precision=mxfp8", "memory.fp8_params=true", NULL};
    ck_assert_int_eq(load(NULL, fp8w, &c, &e, &st), 0);
    ck_assert_exact(e.bytes_per_param, 15);
    ck_assert_exact(e.weight_grad_bytes_per_param, 3);
    ck_assert_exact(experiment_weight_bytes(&e), 1);
    config_free(&c);
    const char *fp4w[] = {"dp.grad_precision=bf16", "precision=nvfp4", "memory.fp8_params=true", NULL};
    ck_assert_int_eq(load(NULL, fp4w, &c, &e, &st), 0);
    ck_assert_exact(e.bytes_per_param, 16);
    ck_assert_exact(experiment_weight_bytes(&e), 2);
    config_free(&c);
    const char *given[] = {"memory.bytes_per_param=20", NULL};
    ck_assert_int_eq(load(NULL, given, &c, &e, &st), 0);
    ck_assert_exact(e.bytes_per_param, 20);
    config_free(&c);
    const char *ep_ok[] = {"dp=8", "cp=2", "ep=8", NULL};
    ck_assert_int_eq(load(NULL, ep_ok, &c, &e, &st), 0);
    ck_assert_int_eq(e.ep, 8);
    ck_assert_int_eq(e.cp, 2);
    config_free(&c);
    struct { const char *set[3]; const char *key; } bad[] = {
        {{"dp=4", "ep=3", NULL}, "'ep'"},
        {{"dp=2", "cp=4", "ep=4"}, "'ep'"},
        {{"dualpipe.overlap=maybe", NULL, NULL}, "'dualpipe.overlap'"},
        {{"precision=fp4", NULL, NULL}, "'precision'"},
        {{"attention=paged", NULL, NULL}, "'attention'"},
        {{"dp.grad_precision=fp16", NULL, NULL}, "'dp.grad_precision'"},
        {{"workload=hf:no/such/config.json", "gpt.seq=4096", NULL}, "'workload'"},
        {{"workload=hf:", "gpt.seq=4096", NULL}, "'workload'"},
        {{"moe.capacity_factor=-1", NULL, NULL}, "'moe.capacity_factor'"},
        {{"memory.fp8_params=half", NULL, NULL}, "'memory.fp8_params'"},
        {{"cp=0", NULL, NULL}, "'cp'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(load(NULL, bad[i].set, &c, &e, &st), PG_EXIT_INPUT);
        ck_assert_msg(strstr(st.msg, bad[i].key) != NULL, "%s: %s", bad[i].set[0], st.msg);
        config_free(&c);
    }
    /* hf: without gpt.seq names the workload and gpt.seq */
    const char *cfg = pg_write_file("config.json", "{}");
    char wl[512];
    snprintf(wl, sizeof wl, "workload=hf:%s", cfg);
    const char *noseq[] = {wl, NULL};
    ck_assert_int_eq(load(NULL, noseq, &c, &e, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "gpt.seq"));
    config_free(&c);
    const char *withseq[] = {wl, "gpt.seq=4096", NULL};
    ck_assert_int_eq(load(NULL, withseq, &c, &e, &st), 0);
    ck_assert_int_eq(e.workload, WL_HF);
    ck_assert_ptr_nonnull(strstr(e.profile_path, "config.json"));
    config_free(&c);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_checked_fixture(tc, pg_tmpdir_setup, pg_tmpdir_teardown);
    tcase_add_test(tc, test_flatten);
    tcase_add_test(tc, test_flatten_errors);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_empty_file_gives_defaults);
    tcase_add_test(tc, test_set);
    tcase_add_test(tc, test_two_files);
    suite_add_tcase(s, tc);
    tc = tcase_create("experiment");
    tcase_add_checked_fixture(tc, pg_tmpdir_setup, pg_tmpdir_teardown);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_every_key);
    tcase_add_test(tc, test_set_overrides_file);
    tcase_add_test(tc, test_bad_values);
    tcase_add_test(tc, test_batch_size_precedence);
    tcase_add_test(tc, test_unknown_keys);
    tcase_add_test(tc, test_batch_derivation);
    tcase_add_test(tc, test_paths);
    tcase_add_test(tc, test_gpt_requirements);
    tcase_add_test(tc, test_key_docs);
    tcase_add_test(tc, test_modern_keys);
    suite_add_tcase(s, tc);
    return s;
}


int main(void)
{
    return pg_run_suite(config_suite());
}
