/* profile.c: read a profile YAML (profiles/NAME.yaml) and cut it into stages.
 *
 * The schema is documented in profiles/README.md and at the top of every
 * shipped profile.  In short:
 *
 *   name, source, gpu                     strings (gpu: a type of gpu_systems.c)
 *   model: {hidden, heads, seq, micro_batch_size, vocab}   positive integers
 *   layers:                               a non-empty list, in model order, of
 *     - kind: embedding|transformer|head
 *       count: N                          optional (default 1): N identical layers
 *       f, b, w: durations                one microbatch through ONE layer
 *       act_b, act_w: bytes               stored by F for B / still held after B for W
 *       boundary: bytes                   this layer's output (what a stage ending here sends)
 *       params: number                    parameters of one layer
 *       workspace: bytes                  optional: transient buffers while the layer runs
 *       flops: number                     optional: model FLOPs of F for one microbatch
 *       attn_core_act: bytes              optional: part of act_b the attention core stores
 *       attn_core_f: duration             optional: time to recompute the attention core
 *                                         (both default, for transformer layers, to the paper's
 *                                         formulas from model.*: 5as*s*b bytes, and f x the core's
 *                                         share 4s/(24h+4s) of F's FLOPs; 0 for other layers)
 *   stage_splits:                         optional explicit cuts
 *     - {stages: N, layers: [n1, ..., nN]}    layer counts per stage, in model order
 *
 * After expansion (count copies) the profile is a list of L layers.  Without
 * an explicit split for nstages, stage s gets L / nstages layers and the
 * last L % nstages stages get one more: activations of early stages live
 * longest in every pipeline schedule (stage 0 holds the most microbatches
 * in flight), so the extra layers go where memory pressure is lowest.
 *
 * A stage sums the times, activation bytes, parameters, FLOPs of its layers;
 * its boundary is its last layer's; its workspace is the largest of its
 * layers' (ops run layer after layer, buffers are reused).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/platform.h"
#include "model/profile.h"
#include "util/units.h"
#include "util/yamltree.h"

#define KEY_MAX 128
#define PREFIX_MAX 48 /* "stage_splits[N].": leaves room for the key name in KEY_MAX */

typedef enum { LAYER_EMBEDDING, LAYER_TRANSFORMER, LAYER_HEAD } layer_kind;

typedef struct layer_spec {
    layer_kind kind;
    long count;
    double f_s, b_s, w_s;
    double act_b_bytes, act_w_bytes, boundary_bytes;
    double params, workspace_bytes, fwd_flops;
    double attn_core_bytes, attn_core_s;   /* < 0: not given, derived from the model shape */
} layer_spec;

typedef struct parse_ctx {
    const char *file;
    pg_status *st;
} parse_ctx;

static int fail_node(parse_ctx *c, int line, const char *key, const char *problem)
{
    return pg_fail_at(c->st, PG_EXIT_INPUT, (pg_origin){c->file, line}, key, "%s", problem);
}

/* Every key of map must be one of allowed (NULL-terminated). */
static int check_keys(parse_ctx *c, const yt_node *map, const char *prefix, const char *const *allowed)
{
    for (size_t i = 0; i < map->count; i++) {
        int known = 0;
        for (const char *const *a = allowed; *a && !known; a++)
            known = strcmp(map->keys[i], *a) == 0;
        if (!known) {
            char key[KEY_MAX];
            snprintf(key, sizeof key, "%s%s", prefix, map->keys[i]);
            char why[PG_MSG_MAX / 2];
            size_t off = (size_t)snprintf(why, sizeof why, "unknown key (expected one of:");
            for (const char *const *a = allowed; *a && off < sizeof why; a++)
                off += (size_t)snprintf(why + off, sizeof why - off, " %s", *a);
            if (off < sizeof why)
                snprintf(why + off, sizeof why - off, ")");
            return pg_fail_at(c->st, PG_EXIT_INPUT, (pg_origin){c->file, map->key_lines[i]}, key, "%s", why);
        }
    }
    return 0;
}

static const char *kind_noun(yt_kind kind)
{
    return kind == YT_MAP ? "a mapping" : kind == YT_SEQ ? "a list" : "a scalar";
}

/* Child `name` of map as a node of the wanted kind; *out = NULL when absent
 * and optional. */
static int get_child(parse_ctx *c, const yt_node *map, const char *prefix, const char *name, yt_kind want,
                     int required, const yt_node **out)
{
    char key[KEY_MAX];
    snprintf(key, sizeof key, "%s%s", prefix, name);
    const yt_node *n = yt_get(map, name);
    *out = NULL;
    if (n == NULL) {
        if (required)
            return fail_node(c, map->line, key, "missing");
        return 0;
    }
    if (n->kind != want) {
        char why[128];
        snprintf(why, sizeof why, "expected %s, got %s", kind_noun(want), kind_noun(n->kind));
        return fail_node(c, n->line, key, why);
    }
    *out = n;
    return 0;
}

typedef int (*unit_parser)(const char *text, double *value, const char **why);

static int get_quantity(parse_ctx *c, const yt_node *map, const char *prefix, const char *name,
                        unit_parser parse, int required, double dflt, double *value)
{
    const yt_node *n;
    int rc = get_child(c, map, prefix, name, YT_SCALAR, required, &n);
    if (rc)
        return rc;
    if (n == NULL) {
        *value = dflt;
        return 0;
    }
    const char *why = NULL;
    if (parse(n->scalar, value, &why) != 0) {
        char key[KEY_MAX], msg[256];
        snprintf(key, sizeof key, "%s%s", prefix, name);
        snprintf(msg, sizeof msg, "'%s': %s", n->scalar, why ? why : "invalid value");
        return fail_node(c, n->line, key, msg);
    }
    if (*value < 0) { /* plain numbers may be negative; no quantity here may */
        char key[KEY_MAX];
        snprintf(key, sizeof key, "%s%s", prefix, name);
        return fail_node(c, n->line, key, "must not be negative");
    }
    return 0;
}

static int get_positive_int(parse_ctx *c, const yt_node *map, const char *prefix, const char *name,
                            int required, long dflt, long *value)
{
    const yt_node *n;
    int rc = get_child(c, map, prefix, name, YT_SCALAR, required, &n);
    if (rc)
        return rc;
    if (n == NULL) {
        *value = dflt;
        return 0;
    }
    const char *why = NULL;
    char key[KEY_MAX];
    snprintf(key, sizeof key, "%s%s", prefix, name);
    if (units_parse_long(n->scalar, value, &why) != 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "'%s': %s", n->scalar, why ? why : "not an integer");
        return fail_node(c, n->line, key, msg);
    }
    if (*value < 1 || *value > INT_MAX)
        return fail_node(c, n->line, key, "must be a positive integer");
    return 0;
}

static int get_string(parse_ctx *c, const yt_node *map, const char *name, char *dst, size_t cap)
{
    const yt_node *n;
    int rc = get_child(c, map, "", name, YT_SCALAR, 1, &n);
    if (rc)
        return rc;
    if (n->scalar[0] == '\0')
        return fail_node(c, n->line, name, "must not be empty");
    if (strlen(n->scalar) >= cap) {
        char why[64];
        snprintf(why, sizeof why, "too long (at most %zu characters)", cap - 1);
        return fail_node(c, n->line, name, why);
    }
    strcpy(dst, n->scalar);
    return 0;
}

static const char *const LAYER_KEYS[] = {"kind", "count", "f", "b", "w", "act_b", "act_w", "boundary",
                                         "params", "workspace", "flops", "attn_core_act", "attn_core_f",
                                         NULL};

static int parse_layer(parse_ctx *c, const yt_node *n, size_t index, layer_spec *ls)
{
    char prefix[PREFIX_MAX];
    snprintf(prefix, sizeof prefix, "layers[%zu].", index);
    if (n->kind != YT_MAP) {
        char key[KEY_MAX], why[64];
        snprintf(key, sizeof key, "layers[%zu]", index);
        snprintf(why, sizeof why, "expected a mapping, got %s", kind_noun(n->kind));
        return fail_node(c, n->line, key, why);
    }
    int rc = check_keys(c, n, prefix, LAYER_KEYS);
    const yt_node *kind;
    if (!rc)
        rc = get_child(c, n, prefix, "kind", YT_SCALAR, 1, &kind);
    if (rc)
        return rc;
    if (strcmp(kind->scalar, "embedding") == 0)
        ls->kind = LAYER_EMBEDDING;
    else if (strcmp(kind->scalar, "transformer") == 0)
        ls->kind = LAYER_TRANSFORMER;
    else if (strcmp(kind->scalar, "head") == 0)
        ls->kind = LAYER_HEAD;
    else {
        char key[KEY_MAX], why[160];
        snprintf(key, sizeof key, "%skind", prefix);
        snprintf(why, sizeof why, "unknown layer kind '%.60s' (expected embedding, transformer or head)",
                 kind->scalar);
        return fail_node(c, kind->line, key, why);
    }
    if ((rc = get_positive_int(c, n, prefix, "count", 0, 1, &ls->count)) ||
        (rc = get_quantity(c, n, prefix, "f", units_parse_duration, 1, 0, &ls->f_s)) ||
        (rc = get_quantity(c, n, prefix, "b", units_parse_duration, 1, 0, &ls->b_s)) ||
        (rc = get_quantity(c, n, prefix, "w", units_parse_duration, 1, 0, &ls->w_s)) ||
        (rc = get_quantity(c, n, prefix, "act_b", units_parse_bytes, 1, 0, &ls->act_b_bytes)) ||
        (rc = get_quantity(c, n, prefix, "act_w", units_parse_bytes, 1, 0, &ls->act_w_bytes)) ||
        (rc = get_quantity(c, n, prefix, "boundary", units_parse_bytes, 1, 0, &ls->boundary_bytes)) ||
        (rc = get_quantity(c, n, prefix, "params", units_parse_double, 1, 0, &ls->params)) ||
        (rc = get_quantity(c, n, prefix, "workspace", units_parse_bytes, 0, 0, &ls->workspace_bytes)) ||
        (rc = get_quantity(c, n, prefix, "flops", units_parse_double, 0, 0, &ls->fwd_flops)) ||
        (rc = get_quantity(c, n, prefix, "attn_core_act", units_parse_bytes, 0, -1, &ls->attn_core_bytes)) ||
        (rc = get_quantity(c, n, prefix, "attn_core_f", units_parse_duration, 0, -1, &ls->attn_core_s)))
        return rc;
    if (ls->attn_core_bytes > ls->act_b_bytes) {
        char key[KEY_MAX];
        snprintf(key, sizeof key, "%sattn_core_act", prefix);
        return fail_node(c, yt_get(n, "attn_core_act")->line, key, "larger than act_b (it is a part of it)");
    }
    if (ls->act_w_bytes > ls->act_b_bytes) {
        char key[KEY_MAX];
        snprintf(key, sizeof key, "%sact_w", prefix);
        return fail_node(c, yt_get(n, "act_w")->line, key,
                         "larger than act_b (W keeps part of what F stored for B, never more)");
    }
    return 0;
}

/* The explicit split for nstages, if the profile has one: fills counts[]
 * (nstages entries).  Every split is validated, used or not. */
static int parse_splits(parse_ctx *c, const yt_node *root, long total_layers, int nstages, int *counts,
                        int *found)
{
    const yt_node *splits;
    int rc = get_child(c, root, "", "stage_splits", YT_SEQ, 0, &splits);
    *found = 0;
    if (rc || splits == NULL)
        return rc;
    static const char *const SPLIT_KEYS[] = {"stages", "layers", NULL};
    for (size_t i = 0; i < splits->count; i++) {
        const yt_node *sp = splits->items[i];
        char prefix[PREFIX_MAX];
        snprintf(prefix, sizeof prefix, "stage_splits[%zu].", i);
        if (sp->kind != YT_MAP) {
            char key[KEY_MAX];
            snprintf(key, sizeof key, "stage_splits[%zu]", i);
            return fail_node(c, sp->line, key, "expected a mapping {stages: N, layers: [...]}");
        }
        long nst;
        const yt_node *list;
        if ((rc = check_keys(c, sp, prefix, SPLIT_KEYS)) ||
            (rc = get_positive_int(c, sp, prefix, "stages", 1, 0, &nst)) ||
            (rc = get_child(c, sp, prefix, "layers", YT_SEQ, 1, &list)))
            return rc;
        char key[KEY_MAX];
        snprintf(key, sizeof key, "%slayers", prefix);
        for (size_t j = 0; j < i; j++) {
            long prev = 0;
            units_parse_long(yt_get(splits->items[j], "stages")->scalar, &prev, NULL);
            if (prev == nst) {
                snprintf(key, sizeof key, "%sstages", prefix);
                return fail_node(c, yt_get(sp, "stages")->line, key,
                                 "a split for this stage count was already given");
            }
        }
        if ((long)list->count != nst) {
            char why[128];
            snprintf(why, sizeof why, "has %zu entries, expected %ld (one per stage)", list->count, nst);
            return fail_node(c, list->line, key, why);
        }
        long sum = 0;
        for (size_t j = 0; j < list->count; j++) {
            const yt_node *item = list->items[j];
            long v;
            const char *why = NULL;
            char ikey[KEY_MAX];
            snprintf(ikey, sizeof ikey, "%slayers[%zu]", prefix, j);
            if (item->kind != YT_SCALAR || units_parse_long(item->scalar, &v, &why) != 0 || v < 1 ||
                v > INT_MAX)
                return fail_node(c, item->line, ikey, "expected a positive layer count");
            sum += v;
            if (nst == nstages)
                counts[j] = (int)v;
        }
        if (sum != total_layers) {
            char why[160];
            snprintf(why, sizeof why, "layer counts sum to %ld, but the profile has %ld layers", sum,
                     total_layers);
            return fail_node(c, list->line, key, why);
        }
        if (nst == nstages)
            *found = 1;
    }
    return 0;
}

static void add_layer(stage_cost *sc, const layer_spec *ls)
{
    sc->f_s += ls->f_s;
    sc->b_s += ls->b_s;
    sc->w_s += ls->w_s;
    sc->act_b_bytes += ls->act_b_bytes;
    sc->act_w_bytes += ls->act_w_bytes;
    sc->boundary_bytes = ls->boundary_bytes;
    if (ls->kind == LAYER_TRANSFORMER && ls->boundary_bytes > sc->tp_coll_bytes)
        sc->tp_coll_bytes = ls->boundary_bytes;   /* the hidden state its collectives carry */
    sc->param_count += ls->params;
    sc->fwd_flops += ls->fwd_flops;
    sc->has_selective = 1;
    sc->selective_bytes += ls->attn_core_bytes;
    sc->selective_s += ls->attn_core_s;
    if (ls->workspace_bytes > sc->workspace_bytes)
        sc->workspace_bytes = ls->workspace_bytes;
    if (ls->kind == LAYER_TRANSFORMER)
        sc->layers++;
}

/* Megatron's selective recomputation drops the attention core (softmax,
 * its dropout, QK^T and AV): the 5as term of M_B = sb(34h + 5as) bytes per
 * transformer layer, whose FLOPs are 4bs^2h of F's 24bsh^2 + 4bs^2h
 * (Korthikanti et al. 2022; the zero-bubble paper's Table 1). */
#define ATTN_CORE_ACT_PER_AS 5.0
#define ATTN_CORE_FLOPS_S 4.0
#define DENSE_FLOPS_H 24.0
static void attn_core_defaults(layer_spec *ls, long h, long a, long s, long b)
{
    int transformer = ls->kind == LAYER_TRANSFORMER;
    if (ls->attn_core_bytes < 0) {
        double bytes = transformer ? ATTN_CORE_ACT_PER_AS * (double)a * (double)s * (double)s * (double)b : 0.0;
        ls->attn_core_bytes = bytes < ls->act_b_bytes ? bytes : ls->act_b_bytes;
    }
    if (ls->attn_core_s < 0)
        ls->attn_core_s = transformer ? ls->f_s * ATTN_CORE_FLOPS_S * (double)s /
                                            (DENSE_FLOPS_H * (double)h + ATTN_CORE_FLOPS_S * (double)s)
                                      : 0.0;
}

static const char *const TOP_KEYS[] = {"name", "source", "gpu", "model", "layers", "stage_splits", NULL};
static const char *const MODEL_KEYS[] = {"hidden", "heads", "seq", "micro_batch_size", "vocab", NULL};

static int load(parse_ctx *c, const yt_doc *doc, int nstages, workload *w)
{
    const yt_node *root = doc->root;
    if (root == NULL)
        return pg_fail_at(c->st, PG_EXIT_INPUT, (pg_origin){c->file, 1}, NULL, "empty profile");
    if (root->kind != YT_MAP)
        return fail_node(c, root->line, NULL, "a profile is a mapping (name, source, gpu, model, layers)");
    int rc = check_keys(c, root, "", TOP_KEYS);
    if (rc || (rc = get_string(c, root, "name", w->name, sizeof w->name)) ||
        (rc = get_string(c, root, "source", w->source, sizeof w->source)) ||
        (rc = get_string(c, root, "gpu", w->ref_gpu, sizeof w->ref_gpu)))
        return rc;
    const gpu_system *gs = gpu_system_find(w->ref_gpu);
    if (gs == NULL) {
        char why[PG_MSG_MAX / 2];
        size_t n, off = (size_t)snprintf(why, sizeof why, "unknown GPU type '%.64s' (known:", w->ref_gpu);
        const gpu_system *all = gpu_systems(&n);
        for (size_t i = 0; i < n && off < sizeof why; i++)
            off += (size_t)snprintf(why + off, sizeof why - off, " %s", all[i].name);
        if (off < sizeof why)
            snprintf(why + off, sizeof why - off, ")");
        return fail_node(c, yt_get(root, "gpu")->line, "gpu", why);
    }
    w->ref_speed_flops = gs->speed_flops;

    const yt_node *model;
    long hidden, heads, seq, mbs, vocab;
    if ((rc = get_child(c, root, "", "model", YT_MAP, 1, &model)) ||
        (rc = check_keys(c, model, "model.", MODEL_KEYS)) ||
        (rc = get_positive_int(c, model, "model.", "hidden", 1, 0, &hidden)) ||
        (rc = get_positive_int(c, model, "model.", "heads", 1, 0, &heads)) ||
        (rc = get_positive_int(c, model, "model.", "seq", 1, 0, &seq)) ||
        (rc = get_positive_int(c, model, "model.", "micro_batch_size", 1, 0, &mbs)) ||
        (rc = get_positive_int(c, model, "model.", "vocab", 1, 0, &vocab)))
        return rc;
    w->seq_len = (int)seq;
    w->micro_batch_size = (int)mbs;

    const yt_node *layers;
    if ((rc = get_child(c, root, "", "layers", YT_SEQ, 1, &layers)))
        return rc;
    if (layers->count == 0)
        return fail_node(c, layers->line, "layers", "must list at least one layer");
    layer_spec *spec = pg_xcalloc(layers->count, sizeof *spec);
    long total = 0;
    for (size_t i = 0; i < layers->count && !rc; i++) {
        rc = parse_layer(c, layers->items[i], i, &spec[i]);
        if (!rc && spec[i].count > INT_MAX - total)
            rc = fail_node(c, layers->items[i]->line, "layers", "too many layers");
        if (!rc)
            total += spec[i].count;
    }
    if (rc) {
        free(spec);
        return rc;
    }
    for (size_t i = 0; i < layers->count; i++)
        attn_core_defaults(&spec[i], hidden, heads, seq, mbs);

    if (nstages < 1 || nstages > total) {
        free(spec);
        return pg_fail_at(c->st, PG_EXIT_INPUT, (pg_origin){c->file, layers->line}, "layers",
                          "cannot cut %ld layers into %d stages (each stage needs at least one layer)",
                          total, nstages);
    }
    int *counts = pg_xcalloc((size_t)nstages, sizeof *counts);
    int explicit_split = 0;
    rc = parse_splits(c, root, total, nstages, counts, &explicit_split);
    if (rc) {
        free(counts);
        free(spec);
        return rc;
    }
    if (!explicit_split) {
        long base = total / nstages, extra = total % nstages;
        for (int s = 0; s < nstages; s++)
            counts[s] = (int)(base + (s >= nstages - extra ? 1 : 0));
    }

    w->nstages = nstages;
    w->stage = pg_xcalloc((size_t)nstages, sizeof *w->stage);
    size_t li = 0;     /* current layer_spec */
    long used = 0;     /* copies of spec[li] already placed */
    for (int s = 0; s < nstages; s++) {
        for (int k = 0; k < counts[s]; k++) {
            add_layer(&w->stage[s], &spec[li]);
            if (++used == spec[li].count) {
                li++;
                used = 0;
            }
        }
    }
    free(counts);
    free(spec);
    return 0;
}

int workload_load_profile(const char *path, int nstages, workload *w, pg_status *st)
{
    memset(w, 0, sizeof *w);
    yt_doc doc;
    memset(&doc, 0, sizeof doc);
    int rc = yt_load_file(path, &doc, st);
    if (rc)
        return rc;
    parse_ctx c = {doc.file ? doc.file : path, st};
    rc = load(&c, &doc, nstages, w);
    yt_free(&doc);
    if (rc)
        workload_free(w);
    return rc;
}
