/* rows.c: one loader per validation file (rows.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/row_experiment.h"
#include "calib/rows.h"
#include "model/arch.h"
#include "model/hfconfig.h"
#include "model/platform.h"
#include "util/datapath.h"
#include "util/csv.h"
#include "util/pglimits.h"
#include "util/units.h"

#define LINE_MAX_BYTES 16384
#define MAX_FIELDS 96
#define MS_PER_S 1000.0
#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull
#define VTRAIN_FIRST_COLUMN "# GPUs"

/* ---- systems: datasheet numbers of the machines the rows ran on ----------- */

/* DGX H100 and DGX B200 datasheets: eight ConnectX-7 400 Gb/s ports for the
 * compute fabric, one per GPU. */
#define DGX_H100_NIC_BW (400.0 * GBIT / BITS_PER_BYTE)
#define DGX_B200_NIC_BW (400.0 * GBIT / BITS_PER_BYTE)
/* DGX B300: eight ConnectX-8 800 Gb/s SuperNICs, one per GPU; DGX GB200:
 * a ConnectX-7 400 Gb/s per GPU, DGX GB300 a ConnectX-8 800 Gb/s. */
#define DGX_B300_NIC_BW (800.0 * GBIT / BITS_PER_BYTE)
#define DGX_GB200_NIC_BW (400.0 * GBIT / BITS_PER_BYTE)
#define DGX_GB300_NIC_BW (800.0 * GBIT / BITS_PER_BYTE)
/* The NVLink domain a rack-scale row's job ran in: 64 GPUs, 16 of an NVL72
 * rack's 18 compute trays.  An assumption: the summaries do not say, but
 * the GB200 / GB300 rows run 8 to 256 GPUs, powers of two (a job of 64 or
 * more fills whole 64-GPU domains, none 72), and NVIDIA's recipes lay their
 * tensor / expert groups out in powers of two; docs/blackwell.md.  The row's "node" (gpus_per_node) is that domain. */
#define RACK_JOB_DOMAIN_GPUS 64
/* DGX A100 (Selene) datasheet: eight ConnectX-6 200 Gb/s HDR ports. */
#define DGX_A100_NIC_BW (200.0 * GBIT / BITS_PER_BYTE)
/* The summaries' gradient reduction precision, not stated: bf16, as NVIDIA's
 * recipes of these runs set it (NeMo-Framework-Launcher's H100 FP8 examples
 * pass optim.grad_sync_dtype=bf16; Megatron-Core's DistributedDataParallelConfig
 * defaults grad_reduce_in_fp32 to false). */
#define SUMMARY_GRAD_BYTES 2.0
/* NeMo's SFT rows pack SQuAD examples (a context paragraph, a question, a
 * short answer: a few hundred tokens each) into each sequence, and flash
 * attention's variable-length path attends within each example only.  The
 * examples' mean length is not in the data: 256 tokens assumed (attention
 * then costs 256/4096 of the unpacked sequence's; docs/validation.md gives
 * the errors at 128 and 512 too). */
#define SQUAD_PACKED_DOC_TOKENS 256
/* Megatron-Bridge labels its token-dropping runs "(tokendrop)"; its
 * apply_moe_token_drop sets an expert capacity factor of 1.0 and pads each
 * expert's input to that capacity (static shapes: no host synchronisation
 * on the token counts, unlike dropless routing).  With force-balanced
 * routing the FLOPs equal the dropless run's; the setting still makes it
 * another job, which the split and the MAPE floor must not merge with its
 * dropless twin. */
/* The summaries' LoRA rows ("finetune-LoRA"): the adapters' rank and
 * targets are not in the data; the frameworks' defaults.  Megatron-Bridge:
 * dim 32 on linear_qkv, linear_proj, linear_fc1 and linear_fc2 (its
 * src/megatron/bridge/peft/lora.py), lora.targets=all; NeMo 1.0 (the 24.07
 * rows): adapter_dim 32 on attention_qkv alone (NVIDIA/NeMo
 * examples/nlp/language_modeling/tuning/conf/megatron_gpt_finetuning_config.yaml),
 * lora.targets=qkv. */
#define LORA_RECIPE_RANK 32
/* Megatron's account_for_embedding_in_pipeline_split and
 * account_for_loss_in_pipeline_split each count one more layer in the
 * pipeline's split: the embedding's chunk and the loss's. */
#define MEGATRON_EDGE_CHUNKS 2
#define TOKEN_DROP_LABEL "(tokendrop)"
#define TOKEN_DROP_CAPACITY_FACTOR 1.0

int calib_system(const char *name, const char **gpu, int *gpus_per_node, double *nic_bw)
{
    /* Grace-Blackwell racks first: their names contain "B200"/"B300" too. */
    if (strstr(name, "GB200") || strstr(name, "GB300")) {
        int ultra = strstr(name, "GB300") != NULL;
        *gpu = ultra ? "gb300" : "gb200";
        *gpus_per_node = RACK_JOB_DOMAIN_GPUS;
        *nic_bw = ultra ? DGX_GB300_NIC_BW : DGX_GB200_NIC_BW;
        return 1;
    }
    if (strstr(name, "B300")) {
        *gpu = "b300";
        *gpus_per_node = DGX_GPUS_PER_NODE;
        *nic_bw = DGX_B300_NIC_BW;
        return 1;
    }
    if (strstr(name, "H100")) {
        *gpu = "h100-sxm";
        *gpus_per_node = DGX_GPUS_PER_NODE;
        *nic_bw = DGX_H100_NIC_BW;
        return 1;
    }
    if (strstr(name, "B200")) {
        *gpu = "b200";
        *gpus_per_node = DGX_GPUS_PER_NODE;
        *nic_bw = DGX_B200_NIC_BW;
        return 1;
    }
    if (strstr(name, "A100") || strcmp(name, "a100-80g") == 0) {
        *gpu = "a100-80g";
        *gpus_per_node = DGX_GPUS_PER_NODE;
        *nic_bw = DGX_A100_NIC_BW;
        return 1;
    }
    return 0;
}

static unsigned long long fnv1a(const char *s)
{
    unsigned long long h = FNV_OFFSET;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= FNV_PRIME;
    }
    return h;
}

/* ---- CSV with quotes and '#' header lines --------------------------------- */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

typedef struct csv {
    const char *path;
    FILE *f;
    int lineno;
    char line[LINE_MAX_BYTES];
    char raw[LINE_MAX_BYTES];       /* the last line before splitting */
    char *field[MAX_FIELDS];
    int nfield;
    char header_buf[LINE_MAX_BYTES];
    char *header[MAX_FIELDS];
    int nheader;
} csv;

/* Next non-comment, non-blank line into c->field; 0 at end, -1 on error. */
static int csv_next(csv *c, pg_status *st)
{
    int got;
    char why_buf[64];
    const char *why = NULL;
    while ((got = pg_csv_read_line(c->f, c->line, sizeof c->line, why_buf, sizeof why_buf, &why)) > 0) {
        c->lineno++;
        char *l = c->line;
        if (strncmp(l, "\xEF\xBB\xBF", 3) == 0) /* UTF-8 byte-order mark */
            l += 3;
        l = trim(l);
        /* '#' lines are the sources' notes, except vTrain's header, whose
         * first column is named "# GPUs" */
        if (l[0] == '\0' || (l[0] == '#' && strncmp(l, VTRAIN_FIRST_COLUMN ",", strlen(VTRAIN_FIRST_COLUMN) + 1) != 0))
            continue;
        snprintf(c->raw, sizeof c->raw, "%s", l);
        c->nfield = pg_csv_split(l, c->field, MAX_FIELDS, &why);
        if (c->nfield < 0) {
            pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){c->path, c->lineno}, NULL, "%s", why);
            return -1;
        }
        return 1;
    }
    if (got < 0) {
        pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){c->path, c->lineno + 1}, NULL, "%s", why);
        return -1;
    }
    return 0;
}

/* The first line as the header: 1, or 0 at end, -1 on error (csv_next, or
 * a column named twice: a reader going by name would use one silently). */
static int csv_header(csv *c, pg_status *st)
{
    int more = csv_next(c, st);
    if (more > 0) {
        memcpy(c->header_buf, c->raw, sizeof c->raw);
        const char *why = NULL;
        c->nheader = pg_csv_split(c->header_buf, c->header, MAX_FIELDS, &why);
        int dup = pg_csv_duplicate(c->header, c->nheader);
        if (dup >= 0) {
            pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){c->path, c->lineno}, c->header[dup],
                       "column named twice (which one holds the values?)");
            return -1;
        }
    }
    return more;
}

static int col(const csv *c, const char *name)
{
    for (int i = 0; i < c->nheader; i++)
        if (strcmp(c->header[i], name) == 0)
            return i;
    return -1;
}

static const char *get(const csv *c, int k)
{
    return k >= 0 && k < c->nfield ? c->field[k] : "";
}

/* The largest value of an integer column (util/pglimits.h: the limits of
 * experiment keys and hf configs): layer counts have their own. */
static long column_max(const char *name)
{
    static const char *const LAYER_COLUMNS[] = {"layers", "num_layers"};
    for (size_t i = 0; i < sizeof LAYER_COLUMNS / sizeof LAYER_COLUMNS[0]; i++)
        if (strcmp(name, LAYER_COLUMNS[i]) == 0)
            return PG_MAX_LAYERS;
    if (strcmp(name, "moe_num_experts") == 0)
        return PG_MAX_EXPERTS;
    return PG_MAX_MODEL_DIM;
}

/* Integer column: blank gives dflt; anything else must be an integer in
 * lo..column_max(name). */
static int get_int(const csv *c, const char *name, int dflt, int lo, int *out, pg_status *st)
{
    const char *v = get(c, col(c, name));
    if (v[0] == '\0') {
        *out = dflt;
        return 0;
    }
    long x;
    const char *why = NULL;
    long max = column_max(name);
    if (units_parse_long(v, &x, &why) != 0)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){c->path, c->lineno}, name, "'%s': %s", v, why);
    if (x < lo || x > max)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){c->path, c->lineno}, name,
                          "'%s': expected an integer between %d and %ld", v, lo, max);
    *out = (int)x;
    return 0;
}

static int get_double(const csv *c, const char *name, double *out, pg_status *st)
{
    const char *v = get(c, col(c, name));
    *out = 0.0;
    if (v[0] == '\0')
        return 0;
    const char *why = NULL;
    if (units_parse_double(v, out, &why) != 0 || !(*out > 0))
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){c->path, c->lineno}, name, "'%s': %s", v,
                          why ? why : "must be a positive number");
    return 0;
}

/* The sources' schedule column ("interleaved", "interleaved 1F1B", "1F1B",
 * "1f1b", "none") in their own words: only whether Megatron ran virtual
 * stages matters here (the generator is chosen from vp, itermodel.c). */
#define SOURCE_WORD_INTERLEAVED "interleaved"
static int source_runs_virtual_stages(const char *schedule_text)
{
    return strstr(schedule_text, SOURCE_WORD_INTERLEAVED) == schedule_text;
}

static int is_true(const char *v)
{
    return strcmp(v, "true") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "1") == 0;
}

/* ---- the collection ------------------------------------------------------------ */

typedef struct sink {
    calib_rows *out;
    size_t cap_row, cap_skip;
} sink;

static train_row *add_row(sink *k)
{
    pg_grow((void **)&k->out->row, &k->cap_row, (size_t)k->out->n + 1, sizeof *k->out->row);
    train_row *r = &k->out->row[k->out->n++];
    memset(r, 0, sizeof *r);
    calib_row_defaults(r);
    return r;
}

static void add_skip(calib_rows *out, size_t *cap, int line, const char *label, const char *reason)
{
    pg_grow((void **)&out->skip, cap, (size_t)out->nskip + 1, sizeof *out->skip);
    calib_skip *s = &out->skip[out->nskip++];
    s->line = line;
    snprintf(s->label, sizeof s->label, "%s", label);
    snprintf(s->reason, sizeof s->reason, "%s", reason);
}

/* Checks every loader applies: the batch splits into whole microbatches. */
static const char *batch_problem(const train_row *r, char *buf, size_t len)
{
    if (r->dp < 1 || r->global_batch % (r->micro_batch * r->dp) != 0) {
        snprintf(buf, len, "global batch %d is not a multiple of micro batch %d x dp %d", r->global_batch,
                 r->micro_batch, r->dp);
        return buf;
    }
    int m = r->global_batch / (r->micro_batch * r->dp);
    if (r->vp > 1 && m % r->pp != 0) {
        snprintf(buf, len, "interleaved schedule with %d microbatches, not a multiple of pp %d", m, r->pp);
        return buf;
    }
    return NULL;
}

/* ---- vTrain ------------------------------------------------------------------- */

static int load_vtrain(const char *path, calib_rows *out, pg_status *st)
{
    train_row *rows = NULL;
    int n = 0;
    int rc = train_csv_load(path, &rows, &n, st);
    if (rc)
        return rc;
    int multi = 0;
    for (int i = 0; i < n; i++)
        multi |= rows[i].gpus > DGX_GPUS_PER_NODE;
    snprintf(out->source, sizeof out->source, "%s", multi ? "vtrain_multi" : "vtrain_single");
    out->row = pg_xcalloc((size_t)n, sizeof *out->row);
    for (int i = 0; i < n; i++) {
        train_row *r = &out->row[i];
        *r = rows[i];
        calib_row_defaults(r);
        snprintf(r->label, sizeof r->label, "line %d", r->line);
        /* single node: the row index (the split calibrate has always used);
         * multi-node: salted, so its split is not the single-node file's */
        char key[64];
        snprintf(key, sizeof key, "vtrain_multi|%d", i);
        r->split_key = multi ? fnv1a(key) : (unsigned long long)i;
        /* single node: the gradient all-reduce runs under the backward.
         * Not stated by the source; its fit-part rows show it: dp 2 -> 8 at
         * the same tp, micro batch, layers and microbatches per replica
         * moves the iteration by -0.5 to +1.4 %, where an exposed fp32 ring
         * all-reduce at half the NVLink rate would add 24 ms to the 394 ms
         * of 24 layers of h 2048.  The multi-node file says its buckets are
         * off (not overlapped). */
        if (!multi)
            r->dp_overlap = 1;
    }
    out->n = n;
    free(rows);
    return 0;
}

/* ---- Korthikanti Table 5 and Table 4 --------------------------------------------- */

static int load_korthikanti(csv *c, int layer_table, calib_rows *out, pg_status *st)
{
    sink k = {out, 0, 0};
    snprintf(out->source, sizeof out->source, "%s", layer_table ? "korthikanti_t4" : "korthikanti_t5");
    int more;
    while ((more = csv_next(c, st)) > 0) {
        train_row *r = add_row(&k);
        r->line = c->lineno;
        snprintf(r->label, sizeof r->label, "%s", get(c, col(c, "id")));
        r->split_key = fnv1a(r->label);
        const char *sys_gpu;
        double nic;
        int per_node;
        if (!calib_system(get(c, col(c, "gpu")), &sys_gpu, &per_node, &nic)) {
            char why[200];
            snprintf(why, sizeof why, "GPU type '%s': no profile in profiles/gpus", get(c, col(c, "gpu")));
            add_skip(out, &k.cap_skip, r->line, r->label, why);
            out->n--;
            continue;
        }
        snprintf(r->gpu, sizeof r->gpu, "%s", sys_gpu);
        r->gpus_per_node = per_node;
        r->nic_bw = nic;
        if (get_int(c, "layers", 0, 1, &r->layers, st) || get_int(c, "hidden", 0, 1, &r->hidden, st) ||
            get_int(c, "heads", 0, 1, &r->heads, st) || get_int(c, "seq", 0, 1, &r->seq, st) ||
            get_int(c, "vocab", 0, 1, &r->vocab, st) || get_int(c, "mbs", 0, 1, &r->micro_batch, st) ||
            get_int(c, "tp", 1, 1, &r->tp, st))
            return st->code;
        const char *rec = get(c, col(c, "recompute"));
        r->recompute = strcmp(rec, "full") == 0        ? ROW_RECOMPUTE_FULL
                       : strcmp(rec, "selective") == 0 ? ROW_RECOMPUTE_SELECTIVE
                                                       : ROW_RECOMPUTE_NONE;
        r->sequence_parallel = is_true(get(c, col(c, "seq_par")));
        r->flash = 0;   /* 2022 Megatron-LM: its fused softmax, not flash attention */
        if (layer_table) {
            double f_ms, b_ms;
            if (get_double(c, "meas_fwd_ms", &f_ms, st) || get_double(c, "meas_bwd_ms", &b_ms, st))
                return st->code;
            r->kind = ROW_LAYER;
            r->pp = r->dp = 1;
            r->gpus = r->tp;
            r->global_batch = r->micro_batch;
            r->measured_s = (f_ms + b_ms) / MS_PER_S;
        } else {
            if (get_int(c, "gbs", 0, 1, &r->global_batch, st) || get_int(c, "pp", 1, 1, &r->pp, st) ||
                get_int(c, "dp", 1, 1, &r->dp, st) || get_int(c, "gpus", 0, 1, &r->gpus, st) ||
                get_int(c, "chunks", 1, 1, &r->vp, st) || get_double(c, "meas_iter_s", &r->measured_s, st))
                return st->code;
            r->dp_overlap = is_true(get(c, col(c, "dp_overlap")));
            r->zero1 = is_true(get(c, col(c, "zero1")));
            if (!source_runs_virtual_stages(get(c, col(c, "schedule"))))
                r->vp = 1;
        }
        char buf[200];
        const char *why = r->measured_s > 0 ? batch_problem(r, buf, sizeof buf) : "no measured time";
        if (why) {
            add_skip(out, &k.cap_skip, r->line, r->label, why);
            out->n--;
        }
    }
    return more < 0 ? st->code : 0;
}

/* ---- models.csv ------------------------------------------------------------------- */

typedef struct model_entry {
    char key[48];
    int ok;                         /* arch filled */
    char why[160];                  /* else: why not */
    arch a;
} model_entry;

/* "head_dim 128" in free text, or 0. */
static int note_int(const char *notes, const char *word)
{
    const char *p = strstr(notes, word);
    return p ? atoi(p + strlen(word)) : 0;
}

/* A shipped config.json (rel: a path under the data directory) into a:
 * 0; 1 when no data directory has it; -1 when it does not load (err:
 * hfconfig_load's message, which names the file and key). */
static int shipped_arch(const char *rel, arch *a, char *err, size_t len)
{
    char path[4096];
    if (datapath_find(rel, path, sizeof path) != 0)
        return 1;
    pg_status st;
    pg_status_clear(&st);
    if (hfconfig_load(path, a, &st) != 0) {
        size_t n = strlen(st.msg) < len ? strlen(st.msg) : len - 1;   /* as much of the message as fits */
        memcpy(err, st.msg, n);
        err[n] = '\0';
        return -1;
    }
    return 0;
}

/* A model whose architecture models.csv states only in free text, from its
 * shipped config (row_model_profile): m->ok, or m->why saying which file is
 * missing or disagrees with the structured columns models.csv does give. */
static int model_from_profile(const csv *c, model_entry *m, const char *profile, int layers, int hidden, int heads)
{
    char err[sizeof m->why];
    int rc = shipped_arch(profile, &m->a, err, sizeof err);
    if (rc > 0) {
        snprintf(m->why, sizeof m->why, "'%s': architecture only in models.csv's free text and %s not found",
                 m->key, profile);
        return 0;
    }
    if (rc < 0) {
        snprintf(m->why, sizeof m->why, "%.100s", err);
        return 0;
    }
    if ((layers > 0 && layers != m->a.layers) || (hidden > 0 && hidden != m->a.hidden) ||
        (heads > 0 && heads != m->a.heads)) {
        snprintf(m->why, sizeof m->why, "'%s': models.csv's layers/hidden/heads differ from %s", m->key, profile);
        return 0;
    }
    snprintf(m->a.name, sizeof m->a.name, "%s", get(c, col(c, "model_name")));
    m->ok = 1;
    return 0;
}

/* The MoE dispatcher of NVIDIA's performance recipes, which the summaries
 * do not state: Megatron-Bridge scripts/performance/configs/qwen/
 * qwen3_workload_base_configs.py (commit 01b2977) sets
 * moe_flex_dispatcher_backend="hybridep" for Qwen3-30B-A3B on every GPU type
 * and for Qwen3-235B-A22B on GB200 and GB300 (its B200, B300 and H100
 * presets use the alltoall dispatcher); configs/deepseek/
 * deepseek_workload_base_configs.py (commit 0426418) "hybridep" or "deepep"
 * (the same one copy per remote node) for DeepSeek-V3 on every type.  Other
 * models: the alltoall dispatcher (experiment.h ep.dispatcher's default). */
static const struct {
    const char *model_key, *gpu;   /* gpu NULL: every type */
} HYBRIDEP_RECIPES[] = {
    {"qwen3-30b-a3b", NULL},
    {"qwen3-235b-a22b", "gb200"},
    {"qwen3-235b-a22b", "gb300"},
    {"deepseek-v3", NULL},
};

/* The pipeline layout of Megatron-Bridge's DeepSeek-V3 recipes, which the
 * summaries do not state (their "recompute: per recipe" column), as
 * stage.first_layers / last_layers (the chunks between share the rest
 * evenly, as the layouts do).  Two sources, read 2026-11-29:
 *  - src/megatron/bridge/recipes/deepseek/deepseek_v3.py,
 *    _get_deepseek_v3_pipeline_layout (every GPU type: the perf recipes
 *    call set_deepseek_v3_pipeline_model_parallel_layout): pp x vp chunks of
 *    k decoder layers, the first with the embedding, the last k - 3 layers
 *    with the MTP module and the loss, for the six (pp, vp) it knows (any
 *    other: no layout, Megatron's even split, as here);
 *  - scripts/performance/configs/deepseek/deepseek_workload_base_configs.py,
 *    the explicit pp_layout of two presets: GB300 at pp 2 x vp 8
 *    "Et*4|(t*4|)*14tmL", H100 at pp 8 x vp 4 "Et|(tt|)*30mL" (the last
 *    chunk the MTP module and the loss alone). */
static const struct {
    const char *gpu;   /* NULL: every type */
    int pp, vp, first_layers, last_layers;
} DEEPSEEK_V3_LAYOUTS[] = {
    {NULL, 4, 1, 16, 13}, {NULL, 8, 1, 8, 5}, {NULL, 4, 2, 8, 5}, {NULL, 16, 1, 4, 1}, {NULL, 8, 2, 4, 1},
    {NULL, 4, 4, 4, 1},   {"gb300", 2, 8, 4, 1}, {"h100-sxm", 8, 4, 1, 0},
};
#define DEEPSEEK_V3_MODEL_KEY "deepseek-v3"

/* r's layout when r runs a Megatron-Bridge DeepSeek-V3 recipe (above). */
static void recipe_pipeline_layout(const char *model_key, const char *gpu, train_row *r)
{
    if (strcmp(model_key, DEEPSEEK_V3_MODEL_KEY) != 0)
        return;
    for (size_t i = 0; i < sizeof DEEPSEEK_V3_LAYOUTS / sizeof DEEPSEEK_V3_LAYOUTS[0]; i++)
        if (DEEPSEEK_V3_LAYOUTS[i].pp == r->pp && DEEPSEEK_V3_LAYOUTS[i].vp == r->vp &&
            (DEEPSEEK_V3_LAYOUTS[i].gpu == NULL || strcmp(DEEPSEEK_V3_LAYOUTS[i].gpu, gpu) == 0)) {
            r->first_layers = DEEPSEEK_V3_LAYOUTS[i].first_layers;
            r->last_layers = DEEPSEEK_V3_LAYOUTS[i].last_layers;
        }
}

/* The selective recomputation of Megatron-Bridge's performance recipes,
 * which the summaries do not state ("recompute: per recipe"): the presets'
 * recompute_modules, read 2026-11-29 from the release of each container
 * (25.11 v0.2.0, 26.02 and 26.02.01 v0.3.x, 26.04 and 26.04.01 v0.4.x,
 * 26.06 and 26.06.01 v0.5.x: scripts/performance/configs/<model>/
 * *workload_base_configs.py; 26.08 v0.6.0: src/megatron/bridge/perf_recipes/
 * <model>/<gpu>/).  The first entry that matches a row's model, GPU type,
 * release (versions: a space-separated list, NULL any) and recipe
 * (precision: a precision_kind, ANY_RECIPE any) gives its list; DeepSeek-V3's
 * changed between releases, the others' did not.  Rows of 25.09 (v0.1.0rc4,
 * whose run_script.py chooses by conditions not in the summary) take the
 * entries for any release. */
#define ANY_RECIPE (-1)
#define MLA ARCH_RC_MLA_UP_PROJ
static const struct {
    const char *model_key, *gpu, *versions;
    int precision, modules;
} RECOMPUTE_RECIPES[] = {
    {"deepseek-v3", "gb300", "25.11", ANY_RECIPE, ARCH_RC_MOE_ACT},
    {"deepseek-v3", "gb300", NULL, PRECISION_BF16, ARCH_RC_MOE_ACT},
    {"deepseek-v3", "gb300", "26.06 26.06.01 26.08", PRECISION_MXFP8, 0},
    {"deepseek-v3", "gb300", NULL, ANY_RECIPE, MLA},
    {"deepseek-v3", "gb200", "25.11 26.02 26.02.01", ANY_RECIPE, MLA},
    {"deepseek-v3", "gb200", NULL, PRECISION_BF16, MLA},
    {"deepseek-v3", "gb200", "26.06 26.06.01 26.08", PRECISION_MXFP8, MLA},
    {"deepseek-v3", "gb200", NULL, ANY_RECIPE, ARCH_RC_MLP},
    {"deepseek-v3", "b200", "26.08", PRECISION_MXFP8, MLA | ARCH_RC_MLP},
    {"deepseek-v3", "b200", "26.08", PRECISION_NVFP4, MLA | ARCH_RC_LAYERNORM | ARCH_RC_MOE_ACT},
    {"deepseek-v3", "b200", NULL, ANY_RECIPE, MLA},
    {"deepseek-v3", "b300", NULL, ANY_RECIPE, MLA},
    {"deepseek-v3", "h100-sxm", NULL, ANY_RECIPE, MLA | ARCH_RC_MLP},
    {"kimi-k2", "h100-sxm", NULL, ANY_RECIPE, MLA | ARCH_RC_MLP},
    {"kimi-k2", NULL, NULL, ANY_RECIPE, MLA},
    {"gpt-oss-120b", "gb200", NULL, ANY_RECIPE, ARCH_RC_LAYERNORM | ARCH_RC_MOE_ACT},
    {"gpt-oss-120b", "b200", NULL, ANY_RECIPE, ARCH_RC_LAYERNORM | ARCH_RC_MOE_ACT},
    {"gpt-oss-120b", "h100-sxm", NULL, ANY_RECIPE, ARCH_RC_LAYERNORM | ARCH_RC_MOE_ACT},
    {"nemotron3-nano", "h100-sxm", NULL, PRECISION_BF16, ARCH_RC_MOE | ARCH_RC_LAYERNORM},
    {"nemotron3-nano", "h100-sxm", NULL, ANY_RECIPE, ARCH_RC_MOE | ARCH_RC_LAYERNORM | ARCH_RC_CORE_ATTN | ARCH_RC_MOE_ACT},
};
#undef MLA

/* 1 if the space-separated list names version (NULL: any). */
static int names_version(const char *list, const char *version)
{
    if (list == NULL)
        return 1;
    size_t n = strlen(version);
    for (const char *p = list; (p = strstr(p, version)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    return 0;
}

/* The recipe's recompute_modules for a row (above), 0 for none. */
static unsigned recipe_recompute_modules(const char *model_key, const char *gpu, const char *version, int precision)
{
    for (size_t i = 0; i < sizeof RECOMPUTE_RECIPES / sizeof RECOMPUTE_RECIPES[0]; i++)
        if (strcmp(RECOMPUTE_RECIPES[i].model_key, model_key) == 0 &&
            (RECOMPUTE_RECIPES[i].gpu == NULL || strcmp(RECOMPUTE_RECIPES[i].gpu, gpu) == 0) &&
            names_version(RECOMPUTE_RECIPES[i].versions, version) &&
            (RECOMPUTE_RECIPES[i].precision == ANY_RECIPE || RECOMPUTE_RECIPES[i].precision == precision))
            return (unsigned)RECOMPUTE_RECIPES[i].modules;
    return 0;
}

static int recipe_dispatches_hybridep(const char *model_key, const char *gpu)
{
    for (size_t i = 0; i < sizeof HYBRIDEP_RECIPES / sizeof HYBRIDEP_RECIPES[0]; i++)
        if (strcmp(HYBRIDEP_RECIPES[i].model_key, model_key) == 0 &&
            (HYBRIDEP_RECIPES[i].gpu == NULL || strcmp(HYBRIDEP_RECIPES[i].gpu, gpu) == 0))
            return 1;
    return 0;
}

/* The releases whose performance recipe for a model on a GPU type runs
 * Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm,
 * experiment.h ep.overlap; Megatron-Bridge moe_a2a_overlap=True), which the
 * summaries do not state.  Read from the recipes of the Megatron-Bridge
 * release of each container (25.11 v0.2.0, 26.02 v0.3.0, 26.02.01 v0.3.1,
 * 26.04 v0.4.0, 26.04.01 v0.4.1, 26.06 v0.5.0, 26.06.01 v0.5.1:
 * scripts/performance/configs/<model>/..._workload_base_configs.py; 26.08
 * v0.6.0: src/megatron/bridge/perf_recipes/<model>/<gpu>/, through
 * _enable_hybridep_full_iteration_mxfp8 and
 * _apply_gpt_oss_120b_full_iter_fp8mx_configs), keeping a release only
 * where the recipe with the overlap has the row's GPUs, tp, pp, vp, ep and
 * global batch (a row measured with another layout ran another recipe).
 * Every other row: off, Megatron-Core's default.  The earliest release's
 * recipe (25.09, v0.1.0rc4: scripts/performance/run_script.py, A2A_1F1B)
 * overlaps DeepSeek-V3's all-to-alls on H100 only (with the row's tp 2, pp 8,
 * vp 4, ep 64 and global batch 8192, configs/deepseek/
 * deepseek_v3_llm_pretrain.yaml).
 * One row ran a recipe newer than its release's tag: DeepSeek-V3 on B200 at
 * 26.04.01 (pp 8 x vp 2, ep 32, global batch 4096, MXFP8), which v0.4.1's
 * presets do not have (they run pp 16, ep 8) and commit 5acef9309 ("b200
 * DSv3 better cfg", 2026-04-18, on the 26.04-alpha branch) introduced as
 * DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2: exactly that layout, with
 * moe_a2a_overlap=True and the deepep dispatcher (HYBRIDEP_RECIPES's one copy
 * per remote node). */
static const struct {
    const char *version, *gpu, *model_key;
} A2A_OVERLAP_RECIPES[] = {
    {"25.09", "h100-sxm", "deepseek-v3"},
    {"25.11", "h100-sxm", "qwen3-235b-a22b"},
    {"26.02", "h100-sxm", "qwen3-235b-a22b"},
    {"26.02", "h100-sxm", "qwen3-30b-a3b"},
    {"26.02", "b300", "qwen3-235b-a22b"},
    {"26.02.01", "h100-sxm", "qwen3-235b-a22b"},
    {"26.04", "h100-sxm", "qwen3-235b-a22b"},
    {"26.04", "gb200", "gpt-oss-120b"},
    {"26.04.01", "h100-sxm", "qwen3-235b-a22b"},
    {"26.04.01", "gb200", "gpt-oss-120b"},
    {"26.04.01", "b200", "deepseek-v3"},
    {"26.06", "gb200", "deepseek-v3"},
    {"26.06", "gb200", "gpt-oss-120b"},
    {"26.06", "gb200", "qwen3-30b-a3b"},
    {"26.06", "gb200", "qwen3-235b-a22b"},
    {"26.06", "gb300", "deepseek-v3"},
    {"26.06", "gb300", "gpt-oss-120b"},
    {"26.06", "gb300", "qwen3-30b-a3b"},
    {"26.06", "gb300", "qwen3-235b-a22b"},
    {"26.06", "b300", "qwen3-30b-a3b"},
    {"26.06.01", "gb200", "deepseek-v3"},
    {"26.06.01", "gb200", "gpt-oss-120b"},
    {"26.06.01", "gb200", "qwen3-30b-a3b"},
    {"26.06.01", "gb200", "qwen3-235b-a22b"},
    {"26.06.01", "gb300", "deepseek-v3"},
    {"26.06.01", "gb300", "gpt-oss-120b"},
    {"26.06.01", "gb300", "qwen3-30b-a3b"},
    {"26.06.01", "gb300", "qwen3-235b-a22b"},
    {"26.08", "gb200", "gpt-oss-120b"},
    {"26.08", "gb200", "qwen3-30b-a3b"},
    {"26.08", "gb200", "qwen3-235b-a22b"},
    {"26.08", "gb300", "gpt-oss-120b"},
    {"26.08", "gb300", "qwen3-30b-a3b"},
    {"26.08", "gb300", "qwen3-235b-a22b"},
};

static int recipe_overlaps_a2a(const char *version, const char *gpu, const char *model_key)
{
    for (size_t i = 0; i < sizeof A2A_OVERLAP_RECIPES / sizeof A2A_OVERLAP_RECIPES[0]; i++)
        if (strcmp(A2A_OVERLAP_RECIPES[i].version, version) == 0 && strcmp(A2A_OVERLAP_RECIPES[i].gpu, gpu) == 0 &&
            strcmp(A2A_OVERLAP_RECIPES[i].model_key, model_key) == 0)
            return 1;
    return 0;
}

/* models.csv's row c as m: 0 (m->ok, or m->why says why the model cannot
 * be costed), or PG_EXIT_INPUT for a value out of its limit. */
static int model_from(const csv *c, model_entry *m, pg_status *st)
{
    memset(m, 0, sizeof *m);
    snprintf(m->key, sizeof m->key, "%s", get(c, col(c, "model_key")));
    const char *notes = get(c, col(c, "arch_notes"));
    arch *a = &m->a;
    int layers, hidden, heads, vocab, kv_heads, ffn, experts, top_k, expert_ffn, shared_ffn;
    if (get_int(c, "num_layers", 0, 0, &layers, st) || get_int(c, "hidden_size", 0, 0, &hidden, st) ||
        get_int(c, "num_attention_heads", 0, 0, &heads, st) || get_int(c, "vocab_size", 0, 0, &vocab, st) ||
        get_int(c, "num_kv_heads", 0, 0, &kv_heads, st) || get_int(c, "ffn_hidden_size", 0, 0, &ffn, st) ||
        get_int(c, "moe_num_experts", 0, 0, &experts, st) || get_int(c, "moe_topk", 0, 0, &top_k, st) ||
        get_int(c, "moe_ffn_hidden_size", 0, 0, &expert_ffn, st) ||
        get_int(c, "moe_shared_expert_ffn", 0, 0, &shared_ffn, st))
        return st->code;
    int hd = note_int(notes, "head_dim ");
    if (hd > PG_MAX_HEAD_DIM)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){c->path, c->lineno}, "arch_notes",
                          "head_dim %d is more than any model's (at most %d)", hd, PG_MAX_HEAD_DIM);
    /* a shipped config stands for the model where models.csv gives its
     * shape only in free text, or not at all (Nemotron-3 Nano) */
    const char *held_back;
    const char *profile = row_model_profile(m->key, &held_back);
    if (profile && held_back) {
        snprintf(m->why, sizeof m->why, "'%.24s': %.84s (%.36s)", m->key, held_back, profile);
        return 0;
    }
    if (profile)
        return model_from_profile(c, m, profile, layers, hidden, heads);
    if (layers < 1 || hidden < 1 || heads < 1 || vocab < 1) {
        snprintf(m->why, sizeof m->why, "architecture of '%s' not given in models.csv", m->key);
        return 0;
    }
    if (strstr(notes, "MLA")) {
        snprintf(m->why, sizeof m->why, "'%s': MLA dimensions are only in models.csv's free text", m->key);
        return 0;
    }
    if (strstr(notes, "ybrid") || strstr(notes, "Mamba")) {
        snprintf(m->why, sizeof m->why, "'%s': hybrid Mamba layers (arch describes attention decoders)", m->key);
        return 0;
    }
    if (strstr(notes, "sliding") || strstr(notes, "SWA")) {
        snprintf(m->why, sizeof m->why, "'%s': sliding-window attention (not in arch)", m->key);
        return 0;
    }
    if (strstr(notes, "every other layer")) {
        snprintf(m->why, sizeof m->why, "'%s': MoE on alternate layers (not in arch)", m->key);
        return 0;
    }
    if (strncmp(m->key, "gpt3", 4) == 0) {
        arch_gpt(a, layers, hidden, heads, 0, vocab);   /* positions set per row (seq) */
    } else {
        /* Llama / Mixtral / Qwen / Nemotron / Grok: rotary, RMSNorm, untied, no biases, no dropout */
        memset(a, 0, sizeof *a);
        a->layers = layers;
        a->hidden = hidden;
        a->heads = heads;
        a->vocab = vocab;
        a->norm = ARCH_NORM_RMSNORM;
        a->attn = ARCH_ATTN_MHA;
        /* squared-ReLU (Nemotron) has GeLU's two matrices; the rest gate (SwiGLU) */
        a->mlp = strstr(notes, "squared-ReLU") || strstr(notes, "GELU") ? ARCH_MLP_GELU : ARCH_MLP_SWIGLU;
    }
    snprintf(a->name, sizeof a->name, "%s", get(c, col(c, "model_name")));
    a->kv_heads = kv_heads >= 1 ? kv_heads : heads;
    a->head_dim = hd > 0 ? hd : hidden / heads;
    if (ffn > 0)
        a->ffn = ffn;
    a->moe.experts = experts;
    a->moe.top_k = top_k;
    a->moe.expert_ffn = expert_ffn;
    a->moe.shared_ffn = shared_ffn;
    if (a->ffn < 1 || (a->moe.experts > 0 && (a->moe.top_k < 1 || a->moe.expert_ffn < 1))) {
        snprintf(m->why, sizeof m->why, "'%s': FFN / MoE sizes incomplete in models.csv", m->key);
        return 0;
    }
    m->ok = 1;
    return 0;
}

static int load_models(const char *path, model_entry **out, int *n, pg_status *st)
{
    *out = NULL;
    *n = 0;
    csv c = {.path = path};
    c.f = fopen(path, "r");
    if (!c.f)
        return pg_fail(st, PG_EXIT_INPUT, "%s: cannot open (the architectures of the summaries' models)", path);
    size_t cap = 0;
    int more = csv_header(&c, st);
    if (more <= 0) {
        fclose(c.f);
        return more < 0 ? st->code : pg_fail(st, PG_EXIT_INPUT, "%s: no header", path);
    }
    while ((more = csv_next(&c, st)) > 0) {
        pg_grow((void **)out, &cap, (size_t)*n + 1, sizeof **out);
        if (model_from(&c, &(*out)[(*n)++], st) != 0) {
            more = -1;
            break;
        }
    }
    fclose(c.f);
    return more < 0 ? st->code : 0;
}

/* ---- documented software regressions (regressions.csv) --------------------------------- */

/* A release whose published number NVIDIA itself documented as a software
 * regression of that configuration (an issue or the fixing pull request):
 * the row measures a defect of that release's recipe, not what the
 * configuration costs, so it is listed in skip (rows.h) unless the caller
 * keeps it (CALIB_KEEP_REGRESSIONS). */
typedef struct regression {
    char version[32], system[48], model_key[48];
    char what[72], source[72];   /* fit the skip reason (rows.h: 200 bytes) */
} regression;

/* regressions.csv beside the summary, if there is one (columns
 * source_version, gpu_type, model_key, what, source; every field given). */
static int load_regressions(const char *path, regression **out, int *n, pg_status *st)
{
    *out = NULL;
    *n = 0;
    csv c = {.path = path};
    c.f = fopen(path, "r");
    if (!c.f)
        return 0;   /* none documented */
    size_t cap = 0;
    int more = csv_header(&c, st);
    static const char *const cols[] = {"source_version", "gpu_type", "model_key", "what", "source"};
    for (size_t i = 0; more > 0 && i < sizeof cols / sizeof cols[0]; i++)
        if (col(&c, cols[i]) < 0) {
            pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){path, c.lineno}, cols[i], "column missing");
            more = -1;
        }
    while (more > 0 && (more = csv_next(&c, st)) > 0) {
        pg_grow((void **)out, &cap, (size_t)*n + 1, sizeof **out);
        regression *g = &(*out)[(*n)++];
        char *dst[] = {g->version, g->system, g->model_key, g->what, g->source};
        size_t len[] = {sizeof g->version, sizeof g->system, sizeof g->model_key, sizeof g->what, sizeof g->source};
        for (size_t i = 0; i < sizeof cols / sizeof cols[0] && more > 0; i++) {
            const char *v = get(&c, col(&c, cols[i]));
            if (v[0] == '\0' || strlen(v) >= len[i]) {
                pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){path, c.lineno}, cols[i],
                           v[0] ? "longer than %zu characters" : "empty (every field is needed)", len[i] - 1);
                more = -1;
            } else
                snprintf(dst[i], len[i], "%s", v);
        }
    }
    fclose(c.f);
    if (more < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
        return st->code;
    }
    return 0;
}

static const regression *find_regression(const regression *g, int n, const char *version, const char *system,
                                         const char *model_key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(g[i].version, version) == 0 && strcmp(g[i].system, system) == 0 &&
            strcmp(g[i].model_key, model_key) == 0)
            return &g[i];
    return NULL;
}

/* ---- Megatron-Bridge / NeMo summaries -------------------------------------------------- */

/* The file `name` in path's directory, into buf. */
static void sibling_path(const char *path, const char *name, char *buf, size_t len)
{
    const char *slash = strrchr(path, '/');
    snprintf(buf, len, "%.*s%s", slash ? (int)(slash - path + 1) : 0, path, name);
}

/* The summaries' fsdp column (the header comment of mbridge_perf_summary.csv):
 * empty or 0, Megatron's distributed optimizer (zero1, as the recipes run
 * it); > 0, Megatron-FSDP with a sharding group of that many replicas, but 1
 * in 25.09's original tables means on (the whole dp).  Megatron-FSDP's
 * default shards optimizer state, gradients and parameters (ZeRO-3:
 * DP_SHARD_FULL).  After r->dp; why says why the row cannot be predicted. */
#define SUMMARY_FSDP_ON_VERSION "25.09"
static int summary_sharding(const csv *c, train_row *r, char *why, size_t len, pg_status *st)
{
    int fsdp;
    if (get_int(c, "fsdp", 0, 0, &fsdp, st))
        return st->code;
    if (fsdp == 0)
        return 0;
    if (fsdp == 1 && strcmp(get(c, col(c, "source_version")), SUMMARY_FSDP_ON_VERSION) == 0)
        fsdp = r->dp;
    if (fsdp > r->dp || r->dp % fsdp != 0) {
        snprintf(why, len, "FSDP sharding group %d does not divide dp %d", fsdp, r->dp);
        return 0;
    }
    r->zero1 = 0;
    r->sharding = DP_SHARD_FULL;
    r->shard_group = fsdp;
    return 0;
}

static int load_summary(csv *c, const char *path, unsigned flags, calib_rows *out, pg_status *st)
{
    sink k = {out, 0, 0};
    char mpath[4096], gpath[4096];
    sibling_path(path, "models.csv", mpath, sizeof mpath);
    sibling_path(path, "regressions.csv", gpath, sizeof gpath);
    model_entry *models = NULL;
    int nmodels = 0;
    regression *regs = NULL;
    int nregs = 0;
    int rc = load_models(mpath, &models, &nmodels, st);
    if (rc == 0 && !(flags & CALIB_KEEP_REGRESSIONS))
        rc = load_regressions(gpath, &regs, &nregs, st);
    if (rc) {
        free(models);
        return rc;
    }
    int more;
    while ((more = csv_next(c, st)) > 0) {
        const char *src = get(c, col(c, "source_id"));
        if (out->source[0] == '\0')
            snprintf(out->source, sizeof out->source, "%s", strncmp(src, "nemo", 4) == 0 ? "nemo" : "mbridge");
        char label[96];
        snprintf(label, sizeof label, "%.40s %.14s @ %.36s", get(c, col(c, "row_label")), get(c, col(c, "task")),
                 get(c, col(c, "source_version")));
        char why[200] = "";
        const char *gpu;
        double nic;
        int per_node;
        const char *system = get(c, col(c, "gpu_type"));
        const char *prec = get(c, col(c, "precision"));
        const char *mkey = get(c, col(c, "model_key"));
        const model_entry *me = NULL;
        for (int i = 0; i < nmodels; i++)
            if (strcmp(models[i].key, mkey) == 0)
                me = &models[i];
        const char *task = get(c, col(c, "task"));
        const regression *reg = strstr(get(c, col(c, "row_label")), TOKEN_DROP_LABEL)
                                    ? NULL
                                    : find_regression(regs, nregs, get(c, col(c, "source_version")), system, mkey);
        if (!calib_system(system, &gpu, &per_node, &nic))
            snprintf(why, sizeof why, "GPU type '%s': no profile in profiles/gpus", system);
        else if (!me)
            snprintf(why, sizeof why, "model '%s' not in models.csv", mkey);
        else if (!me->ok)
            snprintf(why, sizeof why, "%s", me->why);
        else if (reg)
            snprintf(why, sizeof why, "documented software regression: %s (%s; regressions.csv)", reg->what,
                     reg->source);
        if (why[0]) {
            add_skip(out, &k.cap_skip, c->lineno, label, why);
            continue;
        }
        train_row *r = add_row(&k);
        r->line = c->lineno;
        snprintf(r->label, sizeof r->label, "%s", label);
        snprintf(r->gpu, sizeof r->gpu, "%s", gpu);
        r->gpus_per_node = per_node;
        r->nic_bw = nic;
        if (get_int(c, "num_gpus", 0, 1, &r->gpus, st) || get_int(c, "seq_len", 0, 1, &r->seq, st) ||
            get_int(c, "gbs", 0, 1, &r->global_batch, st) || get_int(c, "mbs", 1, 1, &r->micro_batch, st) ||
            get_int(c, "tp", 1, 1, &r->tp, st) || get_int(c, "pp", 1, 1, &r->pp, st) ||
            get_int(c, "vp", 1, 1, &r->vp, st) || get_int(c, "cp", 1, 1, &r->cp, st) ||
            get_int(c, "ep", 1, 1, &r->ep, st) || get_double(c, "step_time_s", &r->measured_s, st)) {
            more = -1;
            break;
        }
        if (!source_runs_virtual_stages(get(c, col(c, "schedule"))))
            r->vp = 1;
        r->has_arch = 1;
        r->arch = me->a;
        if (r->arch.learned_positions)
            r->arch.max_positions = r->seq;
        r->layers = r->arch.layers;
        r->hidden = r->arch.hidden;
        r->heads = r->arch.heads;
        /* Megatron pads the vocabulary to a multiple of 128 x tp */
        r->arch.vocab = r->vocab = megatron_padded_vocab(r->arch.vocab, r->tp);
        /* Not stated by the summaries; the settings of NVIDIA's performance
         * recipes: bf16/fp8 with flash attention, sequence parallelism with
         * tp and its collectives overlapped with the GEMMs (tp_comm_overlap),
         * gradient reduction overlapped with the backward, the distributed
         * optimizer, no recomputation; MoE experts with expert tensor
         * parallelism 1 (whole experts per rank, ep over consecutive ranks). */
        r->fp8 = row_precision_recipe(prec, gpu);
        r->flash = 1;
        if (strstr(task, "LoRA")) {
            r->lora_rank = LORA_RECIPE_RANK;
            r->lora_qkv_only = strcmp(out->source, "nemo") == 0;
        }
        if (strstr(task, "packed"))   /* "finetune-SFT (SQuAD packed)": short documents packed per sequence */
            r->doc_len = r->seq < SQUAD_PACKED_DOC_TOKENS ? r->seq : SQUAD_PACKED_DOC_TOKENS;
        r->sequence_parallel = r->tp > 1;
        r->tp_overlap = r->tp > 1;
        r->expert_tp1 = 1;
        r->ep_hybrid = recipe_dispatches_hybridep(mkey, gpu);
        if (strcmp(out->source, "mbridge") == 0)
            recipe_pipeline_layout(mkey, gpu, r);
        /* Megatron-Core runs the combined steps with pp = 1 or virtual stages only */
        r->ep_overlap = recipe_overlaps_a2a(get(c, col(c, "source_version")), gpu, mkey) && r->ep > 1 &&
                        (r->pp == 1 || r->vp > 1);
        r->dp_overlap = 1;
        r->zero1 = 1;
        r->grad_bytes = SUMMARY_GRAD_BYTES;
        r->recompute = ROW_RECOMPUTE_NONE;
        if (strcmp(out->source, "mbridge") == 0) {
            r->recompute_modules = recipe_recompute_modules(mkey, gpu, get(c, col(c, "source_version")), r->fp8);
            if (r->recompute_modules)
                r->recompute = ROW_RECOMPUTE_SELECTIVE;
        }
        /* Megatron-Bridge's per-tensor and MXFP8 recipes keep the weights in FP8 (mixed_precision.py
         * fp8_param_gather=True; not its blockwise and NVFP4 recipes), except Kimi-K2's MXFP8 preset
         * (kimi_llm_pretrain.py turns it off) */
        r->fp8_params = strcmp(out->source, "mbridge") == 0 &&
                        (r->fp8 == PRECISION_FP8 || (r->fp8 == PRECISION_MXFP8 && strcmp(mkey, "kimi-k2") != 0));
        /* NeMo 24.07's Megatron-Core weighs the experts' outputs in the combine (experiment.h moe.probs) */
        r->moe_probs_on_outputs = strcmp(out->source, "nemo") == 0;
        if (strstr(get(c, col(c, "row_label")), TOKEN_DROP_LABEL))
            r->capacity_factor = TOKEN_DROP_CAPACITY_FACTOR;
        long model_par = (long)r->tp * r->pp * r->cp;
        if (model_par < 1 || r->gpus % model_par != 0)
            snprintf(why, sizeof why, "%d GPUs do not split over tp %d x pp %d x cp %d", r->gpus, r->tp, r->pp,
                     r->cp);
        else {
            r->dp = (int)(r->gpus / model_par);
            const char *bp = batch_problem(r, why, sizeof why);
            if (!bp)
                why[0] = '\0';
            if (!bp && summary_sharding(c, r, why, sizeof why, st)) {
                more = -1;
                break;
            }
        }
        if (why[0] == '\0' && r->arch.moe.experts > 0 && r->arch.moe.experts % r->ep != 0)
            snprintf(why, sizeof why, "%d experts do not split over ep %d", r->arch.moe.experts, r->ep);
        /* More model chunks than transformer layers: Megatron's layout that counts the embedding and the
         * loss as a layer each (account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split),
         * layers + 2 chunks of one layer each, the first chunk the embedding alone, the last the loss alone
         * (Llama-3.1-405B's 126 layers at pp 16 x vp 8) */
        long model_chunks = (long)r->pp * (r->vp > 0 ? r->vp : 1);
        if (why[0] == '\0' && model_chunks == (long)r->layers + MEGATRON_EDGE_CHUNKS)
            r->first_layers = r->last_layers = 0;
        else if (why[0] == '\0' && model_chunks > r->layers)
            snprintf(why, sizeof why, "pp %d x vp %d = %ld model chunks for %d layers (neither one layer per chunk "
                     "nor Megatron's layout with the embedding and the loss as chunks of their own, %d chunks)",
                     r->pp, r->vp, model_chunks, r->layers, r->layers + MEGATRON_EDGE_CHUNKS);
        /* experts may be spread over the tensor-parallel ranks too (expert tensor parallelism 1) */
        if (why[0] == '\0' && r->ep > r->dp * r->cp * r->tp)
            snprintf(why, sizeof why, "ep %d exceeds dp x cp x tp = %d", r->ep, r->dp * r->cp * r->tp);
        if (why[0]) {
            add_skip(out, &k.cap_skip, r->line, r->label, why);
            out->n--;
            continue;
        }
        char key[256];
        snprintf(key, sizeof key, "%s|%.20s|%s|%d|%s|%d|%d|%d|%d|%d|%d|%d|%d%s", mkey, task, gpu, r->gpus,
                 r->fp8 ? "fp8" : "bf16" /* the recipes of one job: one side of the split */, r->seq, r->global_batch, r->micro_batch, r->tp, r->pp, r->vp, r->cp,
                 r->ep, r->capacity_factor > 0 ? "|token-drop" : "");
        r->split_key = fnv1a(key);
    }
    free(models);
    free(regs);
    return more < 0 ? st->code : 0;
}

/* ---- PipeOffload's Figure 15 ------------------------------------------------------------ */

/* The figure's setting (the file's header; arXiv 2503.01328v2 Table 2 and
 * Appendix B): pure pipeline parallelism over one node of 8 A100 80GB, micro
 * batch 1, 64 microbatches; the interleaved family with one transformer
 * layer a stage and the embedding and head on stages of their own (5 chunks
 * a rank for the 10.5B's 38 layers), 1F1B with 4 layers on the first and
 * last stages; LGD recomputation on every schedule (PipeOffload's script,
 * examples/pretrain_offload.sh, passes --recompute-lgd), flash attention,
 * the host link PipeOffload measured; PO-H and PO-F are the presets on
 * GIS-H.  docs/offload.md, "Figure 15's bars". */
#define FIG15_GPUS 8
#define FIG15_MICROBATCHES 64
#define FIG15_CHUNKS 5
#define FIG15_1F1B_EDGE_LAYERS 4
#define PCT_PER_UNIT 100.0
static const struct {
    const char *label, *schedule, *preset;
    int chunks, edge_layers;
} FIG15_SCHEDULES[] = {
    {"1F1B", "1f1b", "", 1, FIG15_1F1B_EDGE_LAYERS},
    {"1F1B-I", "interleaved", "", FIG15_CHUNKS, 0},
    {"GIS", "gis", "", FIG15_CHUNKS, 0},
    {"GIS-H", "gis-h", "", FIG15_CHUNKS, 0},
    {"PO-H", "gis-h", "po-h", FIG15_CHUNKS, 0},
    {"PO-F", "gis-h", "po-f", FIG15_CHUNKS, 0},
};

/* Row r's model from profiles/models/pipeoffload-MODEL.json (MODEL as the
 * file names it, lower case): 0, or why not in why. */
static int fig15_model(const char *model, train_row *r, char *why, size_t len)
{
    char name[96], rel[160];
    snprintf(name, sizeof name, "%s", model);
    for (char *p = name; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    snprintf(rel, sizeof rel, "profiles/models/pipeoffload-%s.json", name);
    int rc = shipped_arch(rel, &r->arch, why, len);
    if (rc > 0)
        snprintf(why, len, "model '%s': %s not found", model, rel);
    if (rc != 0)
        return -1;
    r->has_arch = 1;
    r->layers = r->arch.layers;
    r->hidden = r->arch.hidden;
    r->heads = r->arch.heads;
    r->vocab = r->arch.vocab;
    return 0;
}

/* The iteration time a row's MFU stands for: the model FLOPs of one
 * iteration (Megatron's count, the one pipegrid's own MFU uses: arch.h
 * arch_flops_per_sample) over MFU x the GPUs' dense peak. */
static double time_of_mfu(const train_row *r, double mfu)
{
    const gpu_system *sys = gpu_system_find(r->gpu);
    arch_run run = {.seq = r->seq, .micro_batch = r->micro_batch, .tp = r->tp, .cp = r->cp, .ep = r->ep,
                    .flash = r->flash};
    double flops = arch_flops_per_sample(&r->arch, &run) * r->global_batch;
    return sys && mfu > 0 ? flops / (mfu * sys->speed_flops * r->gpus) : 0.0;
}

static int load_fig15(csv *c, calib_rows *out, pg_status *st)
{
    sink k = {out, 0, 0};
    snprintf(out->source, sizeof out->source, "pipeoffload_fig15");
    int more;
    while ((more = csv_next(c, st)) > 0) {
        train_row *r = add_row(&k);
        r->line = c->lineno;
        const char *model = get(c, col(c, "model")), *sched = get(c, col(c, "schedule"));
        char why[200] = "";
        if (get_int(c, "seq", 0, 1, &r->seq, st))
            return st->code;
        snprintf(r->label, sizeof r->label, "%s %s s%d", model, sched, r->seq);
        r->split_key = fnv1a(r->label);
        size_t which = 0, nsched = sizeof FIG15_SCHEDULES / sizeof FIG15_SCHEDULES[0];
        while (which < nsched && strcmp(FIG15_SCHEDULES[which].label, sched) != 0)
            which++;
        const char *mfu_text = get(c, col(c, "mfu_pct"));
        double mfu_pct = 0.0;
        if (which == nsched)
            snprintf(why, sizeof why, "schedule '%s': not one of Figure 15's", sched);
        else if (strcmp(get(c, col(c, "activation_gb")), "OOM") == 0 || mfu_text[0] == '\0')
            snprintf(why, sizeof why, "out of memory in the paper's run: no time to compare "
                                      "(tests/offload_fig15.sh checks the simulated peak)");
        else if (get_double(c, "mfu_pct", &mfu_pct, st))
            return st->code;
        if (why[0] == '\0')
            fig15_model(model, r, why, sizeof why);
        if (why[0]) {
            add_skip(out, &k.cap_skip, r->line, r->label, why);
            out->n--;
            continue;
        }
        r->gpus = r->pp = r->gpus_per_node = FIG15_GPUS;
        r->nic_bw = 0.0;   /* one node: no NIC on the pipeline's path */
        r->tp = r->dp = r->micro_batch = 1;
        r->global_batch = FIG15_MICROBATCHES;
        r->vp = FIG15_SCHEDULES[which].chunks;
        snprintf(r->schedule, sizeof r->schedule, "%s", FIG15_SCHEDULES[which].schedule);
        snprintf(r->offload_preset, sizeof r->offload_preset, "%s", FIG15_SCHEDULES[which].preset);
        r->first_layers = r->last_layers = FIG15_SCHEDULES[which].edge_layers;
        r->recompute = ROW_RECOMPUTE_LGD;
        r->flash = 1;
        r->host_link_measured = 1;
        r->measured_mfu = mfu_pct / PCT_PER_UNIT;
        r->measured_s = time_of_mfu(r, r->measured_mfu);
    }
    return more < 0 ? st->code : 0;
}

/* ---- dispatch ------------------------------------------------------------------------ */

int calib_rows_load(const char *path, unsigned flags, calib_rows *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    csv c = {.path = path};
    c.f = fopen(path, "r");
    if (!c.f)
        return pg_fail(st, PG_EXIT_INPUT, "%s: cannot open", path);
    int more = csv_header(&c, st), rc = 0;
    if (more <= 0) {
        fclose(c.f);
        return more < 0 ? st->code : pg_fail(st, PG_EXIT_INPUT, "%s: empty file", path);
    }
    if (col(&c, "iteration time (ms)") >= 0 || col(&c, VTRAIN_FIRST_COLUMN) >= 0) {
        fclose(c.f);
        return load_vtrain(path, out, st);
    }
    if (col(&c, "meas_iter_s") >= 0)
        rc = load_korthikanti(&c, 0, out, st);
    else if (col(&c, "meas_fwd_ms") >= 0)
        rc = load_korthikanti(&c, 1, out, st);
    else if (col(&c, "step_time_s") >= 0)
        rc = load_summary(&c, path, flags, out, st);
    else if (col(&c, "mfu_pct") >= 0)
        rc = load_fig15(&c, out, st);
    else
        rc = pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){path, c.lineno}, NULL,
                        "not a known table of measurements (no 'iteration time (ms)', 'meas_iter_s', "
                        "'meas_fwd_ms', 'step_time_s' or 'mfu_pct' column)");
    fclose(c.f);
    if (rc == 0 && out->n == 0 && out->nskip == 0)
        rc = pg_fail(st, PG_EXIT_INPUT, "%s: no data rows", path);
    if (rc)
        calib_rows_free(out);
    return rc;
}

void calib_rows_free(calib_rows *r)
{
    free(r->row);
    free(r->skip);
    memset(r, 0, sizeof *r);
}

void calib_rows_keep(calib_rows *r, const int *keep, char (*why)[200])
{
    size_t cap = (size_t)r->nskip;
    int kept = 0;
    for (int i = 0; i < r->n; i++) {
        if (keep[i])
            r->row[kept++] = r->row[i];
        else
            add_skip(r, &cap, r->row[i].line, r->row[i].label, why[i]);
    }
    r->n = kept;
}

void calib_rows_keep_gpu(calib_rows *r, const char *gpu)
{
    if (!gpu)
        return;
    size_t cap = (size_t)r->nskip;
    int kept = 0;
    for (int i = 0; i < r->n; i++) {
        if (strcmp(r->row[i].gpu, gpu) == 0) {
            r->row[kept++] = r->row[i];
            continue;
        }
        char why[200];
        snprintf(why, sizeof why, "GPU type %s: this run predicts %s", r->row[i].gpu, gpu);
        add_skip(r, &cap, r->row[i].line, r->row[i].label, why);
    }
    r->n = kept;
}
