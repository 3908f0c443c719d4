/* gpu_params.c: read and write profiles/gpus/<type>.yaml (costmodel.h).
 *
 * File layout:
 *   name: a100-80g
 *   params:
 *     peak_flops: {value: 312Tf, source: "NVIDIA A100 datasheet ..."}
 *     ...
 *   host_link:
 *     measured_bw: {value: 15GBps, source: "measured: ..."}
 *   memory_headroom:
 *     cuda_context: {value: 600MiB, source: "..."}
 *     nccl_per_communicator: {value: 150MiB, source: "..."}
 *     fragmentation: {value: 0.05, source: "..."}
 *   kernel_queue: {host_waits: layer, source: "..."}
 *   layer_profiles:
 *     source: "fitted ... by 'pipegrid calibrate ...'"
 *     shapes:
 *       - {key: "h1024 ffn4096 ... s1024 b1 tp1 legacy mg4", factor: 1.03, rows: 23}
 * Every parameter of the table below is required and carries a source, so a
 * number without provenance cannot enter the cost model.  The host_link
 * block (last in the file, optional) is not a cost-model parameter: it is
 * the GPU type's measured effective host-memory copy rate that
 * cluster.host_link=measured puts on the generated platform's PCIe links
 * (gpu_params.host_link_bw); calibrate never fits it and writes it back
 * as it read it.  The kernel_queue block (optional, default op) says where
 * the host waits for the GPU within an op: at every layer's end (layer) or
 * at the op's end only (op); also never fitted, written back as read.
 * The memory_headroom block (optional) holds the GPU type's measured memory
 * besides a job's tensors (costmodel.h gpu_params.headroom); never fitted,
 * written back as read.
 * The layer_profiles block (optional, last) holds the measured layer
 * profiles calibrate fits (costmodel.h): one entry per layer shape, its
 * key costmodel_layer_key's text, its factor the measured / analytic time,
 * rows the measured jobs it rests on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "model/costmodel.h"
#include "util/datapath.h"
#include "util/strbuf.h"
#include "util/units.h"
#include "util/yamltree.h"

typedef enum { PK_SPEED, PK_BANDWIDTH, PK_DURATION, PK_RATIO, PK_NUMBER, PK_BYTES, PK_FRACTION } param_kind;

typedef struct param_def {
    const char *key;
    param_kind kind;
    int fitted;        /* FIT_NONE (datasheet), FIT_CALIBRATE (calibrate may change it) or FIT_OWN */
} param_def;

/* Who fits a parameter: nobody (a datasheet number), calibrate, or a fit of
 * its own on other measurements (tools/fit_flash_eff.py), which calibrate
 * writes back as read.  FIT_OWN parameters are optional: absent, 0. */
enum { FIT_NONE = 0, FIT_CALIBRATE = 1, FIT_OWN = 2 };

/* Order = gpu_param_id. */
static const param_def PARAMS[GP_COUNT] = {
    [GP_PEAK_FLOPS] = {"peak_flops", PK_SPEED, 0},
    [GP_HBM_BW] = {"hbm_bw", PK_BANDWIDTH, 0},
    [GP_NVLINK_BW] = {"nvlink_bw", PK_BANDWIDTH, 0},
    [GP_PCIE_BW] = {"pcie_bw", PK_BANDWIDTH, 0},
    [GP_GEMM_EFF] = {"gemm_eff", PK_RATIO, 1},
    [GP_GEMM_HALF_FLOPS] = {"gemm_half_flops", PK_NUMBER, 1},
    [GP_ATTN_EFF] = {"attn_eff", PK_RATIO, 1},
    [GP_FLASH_EFF] = {"flash_eff", PK_RATIO, 1},
    [GP_MEM_EFF] = {"mem_eff", PK_RATIO, 1},
    [GP_KERNEL_LAUNCH_S] = {"kernel_launch", PK_DURATION, 1},
    [GP_COLL_LATENCY_S] = {"coll_latency", PK_DURATION, 1},
    [GP_COLL_BW_EFF] = {"coll_bw_eff", PK_RATIO, 1},
    [GP_ITER_OVERHEAD_S] = {"iter_overhead", PK_DURATION, 1},
    [GP_OP_OVERHEAD_S] = {"op_overhead", PK_DURATION, 1},
    [GP_NET_BW_EFF] = {"net_bw_eff", PK_RATIO, 1},
    [GP_FP8_GEMM_EFF] = {"fp8_gemm_eff", PK_RATIO, 1},
    [GP_FLASH_HALF_KEYS] = {"flash_half_keys", PK_NUMBER, FIT_OWN},
    [GP_FLASH_HALF_HEAD_DIM] = {"flash_half_head_dim", PK_NUMBER, FIT_OWN},
};

/* Parameters a file written before them may lack: absent, a parameter takes
 * the value of the one it was split from (flash_eff: attn_eff timed both
 * attention kernels until flash attention got its own efficiency). */
static const struct {
    gpu_param_id param, split_from;
} SPLIT_FROM[] = {{GP_FLASH_EFF, GP_ATTN_EFF}};

/* A parameter of earlier models, named in the error so that an old file is
 * not met with a bare "unknown". */
#define RETIRED_TP_SYNC "tp_sync"

#define HOST_LINK_BLOCK "host_link"
#define HOST_LINK_MEASURED "measured_bw"
#define KERNEL_QUEUE_BLOCK "kernel_queue"
#define KERNEL_QUEUE_WAITS "host_waits"
#define WAITS_LAYER "layer"
#define WAITS_OP "op"
#define KERNEL_QUEUE_DEFAULT_SOURCE "not in the file: the default (the host waits at the op's end only)"

#define HEADROOM_BLOCK "memory_headroom"
static const struct {
    const char *key;
    param_kind kind;
} HEADROOM[GH_COUNT] = {
    [GH_CUDA_CONTEXT_BYTES] = {"cuda_context", PK_BYTES},
    [GH_NCCL_COMM_BYTES] = {"nccl_per_communicator", PK_BYTES},
    [GH_FRAGMENTATION] = {"fragmentation", PK_FRACTION},
};

#define LAYER_PROFILES_BLOCK "layer_profiles"
#define LAYER_PROFILES_SHAPES "shapes"
/* A factor outside this range is not a measurement of the same layer but a
 * broken file or fit (calibrate bounds its fits well inside it). */
#define LAYER_FACTOR_MIN 0.1
#define LAYER_FACTOR_MAX 10.0

#define GPU_DIR "profiles/gpus/"
#define YAML_SUFFIX ".yaml"

const char *gpu_param_name(gpu_param_id id)
{
    return id >= 0 && id < GP_COUNT ? PARAMS[id].key : "?";
}

const char *gpu_headroom_name(gpu_headroom_id id)
{
    return id >= 0 && id < GH_COUNT ? HEADROOM[id].key : "?";
}

int gpu_param_fitted(gpu_param_id id)
{
    return id >= 0 && id < GP_COUNT && PARAMS[id].fitted == FIT_CALIBRATE;
}

int gpu_param_measured(gpu_param_id id)
{
    return id >= 0 && id < GP_COUNT && PARAMS[id].fitted != FIT_NONE;
}

int gpu_param_absent(const gpu_params *g, gpu_param_id id)
{
    return g->source[id][0] == '\0' && g->v[id] == 0 && gpu_param_measured(id) && !gpu_param_fitted(id);
}

static int parse_value(param_kind kind, const char *text, double *v, const char **why)
{
    switch (kind) {
    case PK_SPEED:
        return units_parse_speed(text, v, why);
    case PK_BANDWIDTH:
        return units_parse_bandwidth(text, v, why);
    case PK_DURATION:
        return units_parse_duration(text, v, why);
    case PK_BYTES:
        return units_parse_bytes(text, v, why);
    case PK_RATIO:
    case PK_NUMBER:
    case PK_FRACTION:
        return units_parse_double(text, v, why);
    }
    *why = "unknown parameter kind";
    return -1;
}

/* Range check; NULL when fine. */
static const char *range_problem(param_kind kind, double v)
{
    if (kind == PK_RATIO && !(v > 0 && v <= 1))
        return "must be in (0, 1]";
    if (kind == PK_FRACTION && !(v >= 0 && v < 1))
        return "must be in [0, 1)";
    if ((kind == PK_SPEED || kind == PK_BANDWIDTH) && !(v > 0))
        return "must be positive";
    if (v < 0)
        return "must not be negative";
    return NULL;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* A source text into dst (len bytes): whole, or an error naming key full
 * at the text's line (a cut source would say less than the file does). */
static int copy_source(const char *file, const yt_node *src, const char *full, char *dst, size_t len,
                       pg_status *st)
{
    if (strlen(src->scalar) >= len)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, src->line}, full,
                          "source is %zu characters long, at most %zu", strlen(src->scalar), len - 1);
    snprintf(dst, len, "%s", src->scalar);
    return 0;
}

/* One {value: NUMBER, source: TEXT} entry, key full (for messages) at where. */
static int parse_entry(const char *file, const yt_node *item, pg_origin where, const char *full, param_kind kind,
                       double *v, char *source, size_t source_len, pg_status *st)
{
    const yt_node *val = item->kind == YT_MAP ? yt_get(item, "value") : NULL;
    const yt_node *src = item->kind == YT_MAP ? yt_get(item, "source") : NULL;
    if (item->kind != YT_MAP || item->count != 2 || val == NULL || src == NULL || val->kind != YT_SCALAR ||
        src->kind != YT_SCALAR)
        return pg_fail_at(st, PG_EXIT_INPUT, where, full, "expected {value: NUMBER, source: TEXT}");
    if (src->scalar[0] == '\0')
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, src->line}, full, "source must not be empty");
    const char *why = NULL;
    if (parse_value(kind, val->scalar, v, &why) != 0)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, val->line}, full, "'%s': %s", val->scalar,
                          why ? why : "invalid value");
    const char *bad = range_problem(kind, *v);
    if (bad)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, val->line}, full, "%s", bad);
    return copy_source(file, src, full, source, source_len, st);
}

/* The optional host_link block (header). */
static int load_host_link(const char *file, const yt_node *root, gpu_params *g, pg_status *st)
{
    const yt_node *hl = yt_get(root, HOST_LINK_BLOCK);
    if (hl == NULL)
        return 0;
    if (hl->kind != YT_MAP)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, hl->line}, HOST_LINK_BLOCK,
                          "expected a mapping with key " HOST_LINK_MEASURED);
    for (size_t i = 0; i < hl->count; i++) {
        pg_origin where = {file, hl->key_lines[i]};
        if (strcmp(hl->keys[i], HOST_LINK_MEASURED) != 0)
            return pg_fail_at(st, PG_EXIT_INPUT, where, HOST_LINK_BLOCK, "unknown key '%.60s' (expected "
                              HOST_LINK_MEASURED ")", hl->keys[i]);
        int rc = parse_entry(file, hl->items[i], where, HOST_LINK_BLOCK "." HOST_LINK_MEASURED, PK_BANDWIDTH,
                             &g->host_link_bw, g->host_link_source, sizeof g->host_link_source, st);
        if (rc)
            return rc;
    }
    return 0;
}

/* The optional memory_headroom block: every entry of HEADROOM, each
 * {value, source}, or no block at all (a headroom half given would be
 * counted as if the rest were nothing). */
static int load_headroom(const char *file, const yt_node *root, gpu_params *g, pg_status *st)
{
    const yt_node *hb = yt_get(root, HEADROOM_BLOCK);
    if (hb == NULL)
        return 0;
    if (hb->kind != YT_MAP)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, hb->line}, HEADROOM_BLOCK,
                          "expected a mapping of cuda_context, nccl_per_communicator and fragmentation");
    int seen[GH_COUNT] = {0};
    for (size_t i = 0; i < hb->count; i++) {
        pg_origin where = {file, hb->key_lines[i]};
        int id = 0;
        while (id < GH_COUNT && strcmp(hb->keys[i], HEADROOM[id].key) != 0)
            id++;
        if (id == GH_COUNT)
            return pg_fail_at(st, PG_EXIT_INPUT, where, HEADROOM_BLOCK, "unknown key '%.60s' (expected "
                              "cuda_context, nccl_per_communicator or fragmentation)", hb->keys[i]);
        char full[96];
        snprintf(full, sizeof full, HEADROOM_BLOCK ".%s", HEADROOM[id].key);
        int rc = parse_entry(file, hb->items[i], where, full, HEADROOM[id].kind, &g->headroom[id],
                             g->headroom_source[id], sizeof g->headroom_source[id], st);
        if (rc)
            return rc;
        seen[id] = 1;
    }
    for (int id = 0; id < GH_COUNT; id++)
        if (!seen[id])
            return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, hb->line}, HEADROOM_BLOCK, "missing %s",
                              HEADROOM[id].key);
    g->has_headroom = 1;
    return 0;
}

/* The optional kernel_queue block: {host_waits: layer|op, source: TEXT}. */
static int load_kernel_queue(const char *file, const yt_node *root, gpu_params *g, pg_status *st)
{
    g->host_waits_each_layer = 0;
    snprintf(g->kernel_queue_source, sizeof g->kernel_queue_source, "%s", KERNEL_QUEUE_DEFAULT_SOURCE);
    const yt_node *kq = yt_get(root, KERNEL_QUEUE_BLOCK);
    if (kq == NULL)
        return 0;
    const yt_node *waits = kq->kind == YT_MAP ? yt_get(kq, KERNEL_QUEUE_WAITS) : NULL;
    const yt_node *src = kq->kind == YT_MAP ? yt_get(kq, "source") : NULL;
    if (kq->kind != YT_MAP || kq->count != 2 || waits == NULL || src == NULL || waits->kind != YT_SCALAR ||
        src->kind != YT_SCALAR || src->scalar[0] == '\0')
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, kq->line}, KERNEL_QUEUE_BLOCK,
                          "expected {" KERNEL_QUEUE_WAITS ": " WAITS_LAYER "|" WAITS_OP ", source: TEXT}");
    if (strcmp(waits->scalar, WAITS_LAYER) != 0 && strcmp(waits->scalar, WAITS_OP) != 0)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, waits->line}, KERNEL_QUEUE_BLOCK "." KERNEL_QUEUE_WAITS,
                          "'%.60s': expected " WAITS_LAYER " (the host waits for the GPU at every layer's end) or "
                          WAITS_OP " (at the op's end only)", waits->scalar);
    g->host_waits_each_layer = strcmp(waits->scalar, WAITS_LAYER) == 0;
    return copy_source(file, src, KERNEL_QUEUE_BLOCK, g->kernel_queue_source, sizeof g->kernel_queue_source, st);
}

/* Index of key's profile in g, or g->nlayer_profiles when it has none. */
static int layer_profile_index(const gpu_params *g, const char *key)
{
    int i = 0;
    while (i < g->nlayer_profiles && strcmp(g->layer_profile[i].key, key) != 0)
        i++;
    return i;
}

const layer_profile *gpu_params_find_layer_profile(const gpu_params *g, const char *key)
{
    int i = layer_profile_index(g, key);
    return i < g->nlayer_profiles ? &g->layer_profile[i] : NULL;
}

int gpu_params_set_layer_profile(gpu_params *g, const char *key, double factor, int rows, pg_status *st)
{
    if (strlen(key) >= LAYER_KEY_MAX)
        return pg_fail(st, PG_EXIT_INPUT, "layer profile key is %zu characters long, at most %d", strlen(key),
                       LAYER_KEY_MAX - 1);
    int i = layer_profile_index(g, key);
    if (i == GP_MAX_LAYER_PROFILES)
        return pg_fail(st, PG_EXIT_INPUT, "more than %d layer profiles", GP_MAX_LAYER_PROFILES);
    if (i == g->nlayer_profiles)
        g->nlayer_profiles++;
    layer_profile *p = &g->layer_profile[i];
    snprintf(p->key, sizeof p->key, "%s", key);
    p->factor = factor;
    p->rows = rows;
    return 0;
}

/* One {key: TEXT, factor: NUMBER, rows: N} entry of layer_profiles.shapes. */
static int load_layer_profile(const char *file, const yt_node *item, gpu_params *g, pg_status *st)
{
    const char *full = LAYER_PROFILES_BLOCK "." LAYER_PROFILES_SHAPES;
    pg_origin at = {file, item->line};
    const yt_node *key = item->kind == YT_MAP ? yt_get(item, "key") : NULL;
    const yt_node *factor = item->kind == YT_MAP ? yt_get(item, "factor") : NULL;
    const yt_node *rows = item->kind == YT_MAP ? yt_get(item, "rows") : NULL;
    if (item->kind != YT_MAP || item->count != 3 || !key || !factor || !rows || key->kind != YT_SCALAR ||
        factor->kind != YT_SCALAR || rows->kind != YT_SCALAR || key->scalar[0] == '\0')
        return pg_fail_at(st, PG_EXIT_INPUT, at, full, "expected {key: TEXT, factor: NUMBER, rows: N}");
    double f, n;
    const char *why = NULL;
    if (units_parse_double(factor->scalar, &f, &why) != 0 || !(f >= LAYER_FACTOR_MIN && f <= LAYER_FACTOR_MAX))
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, factor->line}, full,
                          "factor '%.60s': expected a number in [%g, %g]", factor->scalar, LAYER_FACTOR_MIN,
                          LAYER_FACTOR_MAX);
    if (units_parse_double(rows->scalar, &n, &why) != 0 || !(n >= 1 && n <= 1e9) || n != (double)(int)n)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, rows->line}, full,
                          "rows '%.60s': expected a whole number of measured jobs", rows->scalar);
    if (strlen(key->scalar) >= LAYER_KEY_MAX)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, key->line}, full,
                          "key is %zu characters long, at most %d", strlen(key->scalar), LAYER_KEY_MAX - 1);
    if (gpu_params_find_layer_profile(g, key->scalar))
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, key->line}, full, "shape '%.120s' twice",
                          key->scalar);
    if (g->nlayer_profiles == GP_MAX_LAYER_PROFILES)
        return pg_fail_at(st, PG_EXIT_INPUT, at, full, "more than %d shapes", GP_MAX_LAYER_PROFILES);
    return gpu_params_set_layer_profile(g, key->scalar, f, (int)n, st);
}

/* The optional layer_profiles block: {source: TEXT, shapes: [entries]}. */
static int load_layer_profiles(const char *file, const yt_node *root, gpu_params *g, pg_status *st)
{
    const yt_node *lp = yt_get(root, LAYER_PROFILES_BLOCK);
    if (lp == NULL)
        return 0;
    const yt_node *src = lp->kind == YT_MAP ? yt_get(lp, "source") : NULL;
    const yt_node *shapes = lp->kind == YT_MAP ? yt_get(lp, LAYER_PROFILES_SHAPES) : NULL;
    int line = lp->line;   /* the block's key's */
    for (size_t i = 0; i < root->count; i++)
        if (root->items[i] == lp)
            line = root->key_lines[i];
    if (lp->kind != YT_MAP || lp->count != 2 || !src || !shapes || src->kind != YT_SCALAR ||
        src->scalar[0] == '\0' || shapes->kind != YT_SEQ)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, line}, LAYER_PROFILES_BLOCK,
                          "expected {source: TEXT, " LAYER_PROFILES_SHAPES ": [{key: TEXT, factor: NUMBER, "
                          "rows: N}, ...]}");
    int rc = copy_source(file, src, LAYER_PROFILES_BLOCK, g->layer_profiles_source, sizeof g->layer_profiles_source,
                         st);
    for (size_t i = 0; i < shapes->count && rc == 0; i++)
        rc = load_layer_profile(file, shapes->items[i], g, st);
    return rc;
}

static int load_doc(const char *file, const yt_node *root, gpu_params *g, pg_status *st)
{
    pg_origin at = {file, root ? root->line : 1};
    if (root == NULL || root->kind != YT_MAP)
        return pg_fail_at(st, PG_EXIT_INPUT, at, NULL, "expected a mapping with keys name and params");
    for (size_t i = 0; i < root->count; i++)
        if (strcmp(root->keys[i], "name") != 0 && strcmp(root->keys[i], "params") != 0 &&
            strcmp(root->keys[i], HOST_LINK_BLOCK) != 0 && strcmp(root->keys[i], HEADROOM_BLOCK) != 0 &&
            strcmp(root->keys[i], KERNEL_QUEUE_BLOCK) != 0 && strcmp(root->keys[i], LAYER_PROFILES_BLOCK) != 0)
            return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, root->key_lines[i]}, root->keys[i],
                              "unknown key (expected name, params, " HOST_LINK_BLOCK ", " HEADROOM_BLOCK ", "
                              KERNEL_QUEUE_BLOCK ", " LAYER_PROFILES_BLOCK ")");
    const yt_node *name = yt_get(root, "name");
    if (name == NULL || name->kind != YT_SCALAR || name->scalar[0] == '\0' || strlen(name->scalar) >= sizeof g->name)
        return pg_fail_at(st, PG_EXIT_INPUT, name ? (pg_origin){file, name->line} : at, "name",
                          "missing or not a short string");
    snprintf(g->name, sizeof g->name, "%s", name->scalar);
    const yt_node *params = yt_get(root, "params");
    if (params == NULL || params->kind != YT_MAP)
        return pg_fail_at(st, PG_EXIT_INPUT, params ? (pg_origin){file, params->line} : at, "params",
                          "missing or not a mapping");
    int seen[GP_COUNT] = {0};
    for (size_t i = 0; i < params->count; i++) {
        const char *key = params->keys[i];
        pg_origin where = {file, params->key_lines[i]};
        char full[96];
        snprintf(full, sizeof full, "params.%.60s", key);
        int id = -1;
        for (int k = 0; k < GP_COUNT && id < 0; k++)
            if (strcmp(PARAMS[k].key, key) == 0)
                id = k;
        if (id < 0 && strcmp(key, RETIRED_TP_SYNC) == 0)
            return pg_fail_at(st, PG_EXIT_INPUT, where, full,
                              "no longer part of the cost model (docs/validation.md): delete the line, or "
                              "re-run pipegrid calibrate");
        if (id < 0)
            return pg_fail_at(st, PG_EXIT_INPUT, where, full, "unknown GPU parameter");
        double v;
        int rc = parse_entry(file, params->items[i], where, full, PARAMS[id].kind, &v, g->source[id],
                             sizeof g->source[id], st);
        if (rc)
            return rc;
        g->v[id] = v;
        seen[id] = 1;
    }
    for (size_t i = 0; i < sizeof SPLIT_FROM / sizeof SPLIT_FROM[0]; i++) {
        gpu_param_id p = SPLIT_FROM[i].param, from = SPLIT_FROM[i].split_from;
        if (!seen[p] && seen[from]) {
            g->v[p] = g->v[from];
            snprintf(g->source[p], sizeof g->source[p], "not measured on %s: not in the file; %s's value (%.380s)",
                     g->name, PARAMS[from].key, g->source[from]);
            seen[p] = 1;
        }
    }
    for (int k = 0; k < GP_COUNT; k++)
        if (!seen[k] && PARAMS[k].fitted == FIT_OWN) {
            g->v[k] = 0;   /* optional: the term left out */
            g->source[k][0] = '\0';
            seen[k] = 1;
        }
    for (int k = 0; k < GP_COUNT; k++)
        if (!seen[k])
            return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){file, params->line}, PARAMS[k].key,
                              "missing GPU parameter");
    int rc = load_host_link(file, root, g, st);
    if (rc == 0)
        rc = load_headroom(file, root, g, st);
    if (rc == 0)
        rc = load_kernel_queue(file, root, g, st);
    return rc ? rc : load_layer_profiles(file, root, g, st);
}

/* load_doc on a parsed file, which it frees. */
static int load_loaded(const char *file, yt_doc *doc, gpu_params *g, pg_status *st)
{
    int rc = load_doc(file, doc->root, g, st);
    yt_free(doc);
    return rc;
}

/* gpu_params_override's copy (process-wide: SimGrid's one simulation per
 * process makes the simulator's callers fork, and the children inherit it). */
static gpu_params *override_params;

void gpu_params_override(const gpu_params *g)
{
    free(override_params);
    override_params = NULL;
    if (g != NULL) {
        override_params = pg_xmalloc(sizeof *override_params);
        *override_params = *g;
    }
}

#define GPU_PARAMS_CACHE_SLOTS 4
typedef struct params_cache_slot {
    gpu_params params;
    off_t size;
    struct timespec mtime;
    int used;
} params_cache_slot;
static params_cache_slot params_cache[GPU_PARAMS_CACHE_SLOTS];
static int params_cache_next;

int gpu_params_load(const char *type_or_path, gpu_params *g, pg_status *st)
{
    memset(g, 0, sizeof *g);
    if (type_or_path == NULL || type_or_path[0] == '\0')
        return pg_fail(st, PG_EXIT_INPUT, "no GPU type given (cluster.gpu)");
    if (override_params != NULL && strcmp(type_or_path, override_params->name) == 0) {
        *g = *override_params;
        return 0;
    }
    char rel[1024];
    if (strchr(type_or_path, '/') != NULL || ends_with(type_or_path, YAML_SUFFIX))
        snprintf(rel, sizeof rel, "%s", type_or_path);
    else
        snprintf(rel, sizeof rel, GPU_DIR "%.900s" YAML_SUFFIX, type_or_path);
    if (datapath_find(rel, g->path, sizeof g->path) != 0)
        return pg_fail(st, PG_EXIT_INPUT, "GPU type '%s': no parameter file %s (see profiles/gpus/)", type_or_path,
                       rel);
    /* A search builds hundreds of candidates per second, each loading its
     * GPU type: the parsed file is kept, keyed by its path, size and
     * modification time (a file rewritten since is read again). */
    struct stat sb;
    int known = stat(g->path, &sb) == 0;
    for (int i = 0; known && i < GPU_PARAMS_CACHE_SLOTS; i++) {
        const params_cache_slot *c = &params_cache[i];
        if (c->used && strcmp(c->params.path, g->path) == 0 && c->size == sb.st_size &&
            c->mtime.tv_sec == sb.st_mtim.tv_sec && c->mtime.tv_nsec == sb.st_mtim.tv_nsec) {
            *g = c->params;
            return 0;
        }
    }
    yt_doc doc;
    int rc = yt_load_file(g->path, &doc, st);
    rc = rc ? rc : load_loaded(g->path, &doc, g, st);
    if (rc == 0 && known) {
        params_cache_slot *c = &params_cache[params_cache_next];
        params_cache_next = (params_cache_next + 1) % GPU_PARAMS_CACHE_SLOTS;
        *c = (params_cache_slot){.params = *g, .size = sb.st_size, .mtime = sb.st_mtim, .used = 1};
    }
    return rc;
}

int gpu_params_load_buffer(const char *text, size_t len, const char *file_label, gpu_params *g, pg_status *st)
{
    memset(g, 0, sizeof *g);
    yt_doc doc;
    int rc = yt_load_buffer(text, len, file_label, &doc, st);
    return rc ? rc : load_loaded(file_label, &doc, g, st);
}

int gpu_host_link_load(const char *type, gpu_params *g, pg_status *st)
{
    int rc = gpu_params_load(type, g, st);
    if (rc == 0 && !(g->host_link_bw > 0))
        rc = pg_fail_key(st, PG_EXIT_INPUT, "cluster.host_link",
                         "measured: %.600s has no " HOST_LINK_BLOCK " block (" HOST_LINK_MEASURED ": {value: "
                         "BYTES_PER_S, source: TEXT}, the GPU type's measured host-memory copy rate)", g->path);
    return rc;
}

void gpu_params_write_yaml(const gpu_params *g, const char *header_comment, strbuf *out)
{
    if (header_comment && *header_comment) {
        const char *p = header_comment;
        while (*p) {
            const char *nl = strchr(p, '\n');
            size_t n = nl ? (size_t)(nl - p) : strlen(p);
            sb_append(out, "# ");
            sb_append_n(out, p, n);
            sb_append(out, "\n");
            p += n + (nl ? 1 : 0);
        }
    }
    sb_appendf(out, "name: %s\nparams:\n", g->name);
    for (int k = 0; k < GP_COUNT; k++) {
        if (g->source[k][0] == '\0')
            continue;   /* an optional parameter the file did not have */
        /* bare numbers: flop/s, bytes/s, seconds, ratios */
        sb_appendf(out, "  %s: {value: %.9g, source: ", PARAMS[k].key, g->v[k]);
        sb_append_json_string(out, g->source[k]);   /* JSON strings are valid YAML double-quoted scalars */
        sb_append(out, "}\n");
    }
    if (g->host_link_bw > 0) {   /* the measured host link, last, as read (header) */
        sb_appendf(out, "%s:\n  %s: {value: %.9g, source: ", HOST_LINK_BLOCK, HOST_LINK_MEASURED, g->host_link_bw);
        sb_append_json_string(out, g->host_link_source);
        sb_append(out, "}\n");
    }
    if (g->has_headroom) {   /* as read: measurements, never fitted */
        sb_appendf(out, "%s:\n", HEADROOM_BLOCK);
        for (int id = 0; id < GH_COUNT; id++) {
            sb_appendf(out, "  %s: {value: %.9g, source: ", HEADROOM[id].key, g->headroom[id]);
            sb_append_json_string(out, g->headroom_source[id]);
            sb_append(out, "}\n");
        }
    }
    sb_appendf(out, "%s: {%s: %s, source: ", KERNEL_QUEUE_BLOCK, KERNEL_QUEUE_WAITS,
               g->host_waits_each_layer ? WAITS_LAYER : WAITS_OP);
    sb_append_json_string(out, g->kernel_queue_source);
    sb_append(out, "}\n");
    if (g->nlayer_profiles > 0) {
        sb_appendf(out, "%s:\n  source: ", LAYER_PROFILES_BLOCK);
        sb_append_json_string(out, g->layer_profiles_source);
        sb_appendf(out, "\n  %s:\n", LAYER_PROFILES_SHAPES);
        for (int i = 0; i < g->nlayer_profiles; i++) {
            sb_append(out, "    - {key: ");
            sb_append_json_string(out, g->layer_profile[i].key);
            sb_appendf(out, ", factor: %.9g, rows: %d}\n", g->layer_profile[i].factor, g->layer_profile[i].rows);
        }
    }
}
