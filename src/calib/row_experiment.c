/* row_experiment.c: a measured row as an experiment (row_experiment.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/row_experiment.h"
#include "model/hfconfig.h"
#include "model/experiment.h"
#include "model/platform.h"

#define SET_MAX 256
#define MS_PER_S 1000.0
#define PCT_PER_UNIT 100.0

static void add(row_experiment *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(row_experiment *x, const char *fmt, ...)
{
    char text[SET_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    x->sets = pg_xrealloc(x->sets, (size_t)(x->nsets + 1) * sizeof *x->sets);
    x->sets[x->nsets++] = pg_xstrdup(text);
}

static const char *on_off(int v)
{
    return v ? "true" : "false";
}

static const char *recompute_name(row_recompute r)
{
    return r == ROW_RECOMPUTE_FULL ? "full" : r == ROW_RECOMPUTE_SELECTIVE ? "selective" : r == ROW_RECOMPUTE_LGD ? "lgd" : "none";
}

/* The row's data-parallel sharding: Megatron's distributed optimizer
 * (memory.zero1) or FSDP's mode and shard group (itermodel.h). */
static void add_sharding(row_experiment *x, const train_row *r)
{
    static const char *const MODES[] = {"none", "optimizer", "gradients", "full"};
    if (r->sharding == DP_SHARD_GRADIENTS || r->sharding == DP_SHARD_FULL) {
        add(x, "dp.sharding=%s", MODES[r->sharding]);
        add(x, "dp.shard_group=%d", r->shard_group);
    } else {
        add(x, "memory.zero1=%s", on_off(r->zero1));
    }
}

int row_precision_recipe(const char *precision, const char *gpu)
{
    if (strstr(precision, "FP4"))
        return PRECISION_NVFP4;
    if (strstr(precision, "MXFP8") || strstr(precision, "FP8-MX"))
        return PRECISION_MXFP8;
    /* "FP8 blockwise/MX (...)": the GPU decides which; "FP8 (unlabelled; ... parenthesised =
     * blockwise/MX)" is the main value, the default recipe */
    if (strncmp(precision, "FP8 blockwise", strlen("FP8 blockwise")) == 0)
        return strncmp(gpu, "h100", 4) == 0 || strncmp(gpu, "h200", 4) == 0 ? PRECISION_FP8_BLOCK : PRECISION_MXFP8;
    if (strstr(precision, "FP8"))
        return PRECISION_FP8;
    return PRECISION_BF16;
}

/* A rack-scale system's row: its NVLink domain is the row's "node"
 * (rows.c: the GPUs of one NVLink domain the job ran on), which the key
 * says where it differs from the system's whole rack. */
static void rack_domain(row_experiment *x, const train_row *r)
{
    const gpu_system *gs = gpu_system_find(r->gpu);
    if (gs && gs->nvlink_domain_gpus > 0 && gs->nvlink_domain_gpus != r->gpus_per_node)
        add(x, "cluster.nvlink_domain=%d", r->gpus_per_node);
}

/* The recipe's combined 1F1B (rows.c A2A_OVERLAP_RECIPES). */
static void add_ep_overlap(row_experiment *x, const train_row *r)
{
    if (r->ep_overlap && r->ep > 1)
        add(x, "ep.overlap=true");
}

int row_experiment_make(const train_row *r, const char *hf_path, row_experiment *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    if (r->kind != ROW_ITERATION)
        return pg_fail(st, PG_EXIT_INPUT, "line %d: one layer's forward and backward, not a training iteration",
                       r->line);
    row_experiment *x = out;
    if (r->has_arch) {
        strbuf json;
        sb_init(&json);
        hfconfig_write(&r->arch, &json);
        x->hf_json = json.data;
        add(x, "workload=hf:%s", hf_path);
    } else {
        add(x, "workload=gpt");
        add(x, "gpt.layers=%d", r->layers);
        add(x, "gpt.hidden=%d", r->hidden);
        add(x, "gpt.heads=%d", r->heads);
        add(x, "gpt.vocab=%d", r->vocab);
    }
    add(x, "gpt.seq=%d", r->seq);
    if (r->doc_len > 0)
        add(x, "gpt.doc_len=%d", r->doc_len);
    add(x, "micro_batch_size=%d", r->micro_batch);
    add(x, "global_batch_size=%d", r->global_batch);
    add(x, "tp=%d", r->tp);
    add(x, "dp=%d", r->dp);
    add(x, "pp=%d", r->pp);
    add(x, "cp=%d", r->cp);
    add(x, "ep=%d", r->ep);
    /* the row's schedule, else Megatron's: interleaved 1F1B when a rank holds several model chunks */
    add(x, "schedule=%s", r->schedule[0] ? r->schedule : r->vp > 1 ? "interleaved" : "1f1b");
    if (r->vp > 1)
        add(x, "chunks=%d", r->vp);
    if (r->first_layers >= 0)
        add(x, "stage.first_layers=%d", r->first_layers);
    if (r->last_layers >= 0)
        add(x, "stage.last_layers=%d", r->last_layers);
    if (r->offload_preset[0])
        add(x, "offload.preset=%s", r->offload_preset);
    if (r->lora_rank > 0) {
        add(x, "lora.rank=%d", r->lora_rank);
        add(x, "lora.targets=%s", r->lora_qkv_only ? "qkv" : "all");
    }
    add(x, "attention=%s", r->flash ? "flash" : "legacy");
    add(x, "precision=%s", experiment_precision_word((precision_kind)r->fp8));
    add(x, "recompute=%s", recompute_name(r->recompute));
    if (r->recompute == ROW_RECOMPUTE_SELECTIVE && r->recompute_modules) {
        char words[128];
        experiment_recompute_modules_words((int)r->recompute_modules, words, sizeof words);
        add(x, "recompute.modules=%s", words);
    }
    add(x, "tp.sequence_parallel=%s", on_off(r->sequence_parallel));
    add(x, "tp.comm_overlap=%s", on_off(r->tp_overlap));
    if (r->capacity_factor > 0)
        add(x, "moe.capacity_factor=%.17g", r->capacity_factor);
    if (r->fp8_params)
        add(x, "memory.fp8_params=true");
    if (r->moe_probs_on_outputs && r->has_arch && r->arch.moe.experts > 0)
        add(x, "moe.probs=combine");
    add(x, "dp.grad_precision=%s", r->grad_bytes >= 4.0 ? "fp32" : "bf16");
    add(x, "dp.overlap=%s", on_off(r->dp_overlap));
    add(x, "dp.bucket_bytes=%.17g", row_bucket_bytes(r));
    add_sharding(x, r);
    add(x, "network=cluster");
    add(x, "cluster.gpu=%s", r->gpu);
    add(x, "cluster.gpus_per_node=%d", r->gpus_per_node);
    add(x, "cluster.nodes=%d", (r->gpus + r->gpus_per_node - 1) / r->gpus_per_node);
    rack_domain(x, r);
    if (r->host_link_measured)
        add(x, "cluster.host_link=measured");
    /* the NIC's datasheet rate, where the row's system differs from the GPU type's */
    const gpu_system *gs = gpu_system_find(r->gpu);
    if (r->nic_bw > 0 && (gs == NULL || gs->nic_bw != r->nic_bw))
        add(x, "cluster.ib_bw=%.17gBps", r->nic_bw);
    if (r->expert_tp1 && r->ep > 1 && r->tp > 1)   /* whole experts on each GPU, as the recipe ran */
        add(x, "etp=1");
    if (r->ep_hybrid && r->ep > 1)   /* the recipe's dispatcher (rows.c HYBRIDEP_RECIPES) */
        add(x, "ep.dispatcher=hybridep");
    add_ep_overlap(x, r);
    return 0;
}

/* models.csv keys -> shipped configs.  models.csv has columns for layers,
 * widths, heads and MoE sizes only; these models' other dimensions (MLA
 * ranks, window and per-layer attention kinds, Mamba sizes, the hybrid or
 * interleaved layer pattern) are in its arch_notes text, so the model comes
 * from its Hugging Face config instead (sources: profiles/models/README.md). */
static const struct {
    const char *model_key, *profile;
    const char *held_back;   /* why the rows do not take it yet, or NULL */
} ROW_PROFILES[] = {
    /* DeepSeek-V3's rows (expert parallelism 8 to 64 over 256 to 1,024 GPUs, every replica simulated)
     * take 1-3 s each since the expert exchange and the channel rings send 2 transfers per GPU
     * (expert.c, collectives.h); they took minutes before. */
    {"deepseek-v3", "profiles/models/deepseek-v3.json", NULL},
    {"kimi-k2", "profiles/models/kimi-k2.json", NULL},
    {"gpt-oss-120b", "profiles/models/gpt-oss-120b.json", NULL},
    {"gpt-oss-20b", "profiles/models/gpt-oss-20b.json", NULL},
    {"llama4-scout", "profiles/models/llama4-scout.json", NULL},
    {"llama4-maverick", "profiles/models/llama4-maverick.json", NULL},
    {"nemotronh-56b", "profiles/models/nemotron-h-56b.json", NULL},
    {"nemotron3-nano", "profiles/models/nemotron3-nano.json", NULL},
};

const char *row_model_profile(const char *model_key, const char **held_back)
{
    *held_back = NULL;
    for (size_t i = 0; i < sizeof ROW_PROFILES / sizeof ROW_PROFILES[0]; i++)
        if (strcmp(ROW_PROFILES[i].model_key, model_key) == 0) {
            *held_back = ROW_PROFILES[i].held_back;
            return ROW_PROFILES[i].profile;
        }
    return NULL;
}

void row_experiment_free(row_experiment *x)
{
    for (int i = 0; i < x->nsets; i++)
        free(x->sets[i]);
    free(x->sets);
    free(x->hf_json);
    memset(x, 0, sizeof *x);
}

void row_experiment_yaml(const row_experiment *x, const train_row *r, const char *source, strbuf *out)
{
    sb_appendf(out, "# %s line %d: %s\n# measured iteration: %.6g ms on %d GPUs (%s)", source, r->line, r->label,
               MS_PER_S * r->measured_s, r->gpus, r->gpu);
    if (r->measured_mfu > 0)
        sb_appendf(out, ", from the source's MFU of %.4g %%", PCT_PER_UNIT * r->measured_mfu);
    sb_append(out, "\n");
    if (x->unmodelled[0])
        sb_appendf(out, "# not simulated: %s\n", x->unmodelled);
    sb_appendf(out, "name: %s-line-%d\n", source, r->line);
    for (int i = 0; i < x->nsets; i++) {
        const char *eq = strchr(x->sets[i], '=');
        sb_appendf(out, "%.*s: %s\n", (int)(eq - x->sets[i]), x->sets[i], eq + 1);
    }
}
