/* itermodel.c: one training iteration from the cost model; the fit
 * (itermodel.h). */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/itermodel.h"
#include "calib/nelder_mead.h"
#include "util/csv.h"
#include "util/pglimits.h"
#include "util/units.h"

#define MS_PER_S 1000.0
#define GPT2_VOCAB 50257            /* GPT-2 BPE (Megatron's gpt2-vocab.json) */
#define MEGATRON_VOCAB_MULTIPLE 128 /* --make-vocab-size-divisible-by default, times tp */
#define CSV_LINE_MAX 4096
#define NCOLS 12

void calib_row_defaults(train_row *r)
{
    snprintf(r->gpu, sizeof r->gpu, "a100-80g");
    r->first_layers = r->last_layers = -1;
    r->kind = ROW_ITERATION;
    r->vp = r->cp = r->ep = 1;
    r->recompute = ROW_RECOMPUTE_FULL;
    r->grad_bytes = 4.0;   /* fp32 gradient reduction (Megatron's main_grad) */
    r->gpus_per_node = DGX_GPUS_PER_NODE;
    r->nic_bw = VTRAIN_NIC_BW;
}

/* ---- CSV ----------------------------------------------------------------- */

enum { C_GPUS, C_GBS, C_MBS, C_HIDDEN, C_HEADS, C_LAYERS, C_SEQ, C_TP, C_DP, C_PP, C_TIME, C_VOCAB };
static const char *const COLS[NCOLS] = {
    "# GPUs", "global batch", "micro batch", "hidden size", "attention heads", "# layers",
    "sequence length", "tensor parallelism", "data parallelism", "pipeline parallelism", "iteration time (ms)",
    "vocab",
};

int megatron_padded_vocab(int vocab, int tp)
{
    int mult = MEGATRON_VOCAB_MULTIPLE * (tp > 0 ? tp : 1);
    return (vocab + mult - 1) / mult * mult;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* Fields of a line at most (the file has 12 columns). */
#define CSV_MAX_FIELDS 64

static int parse_header(const char *path, char *line, int *colpos, pg_status *st)
{
    char *field[CSV_MAX_FIELDS];
    if (strncmp(line, "\xEF\xBB\xBF", 3) == 0) /* UTF-8 byte-order mark */
        memmove(line, line + 3, strlen(line + 3) + 1);
    const char *why = NULL;
    int n = pg_csv_split(line, field, CSV_MAX_FIELDS, &why);
    if (n < 0)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){path, 1}, NULL, "%s", why);
    /* a column named twice: which holds the values is anyone's guess */
    int dup = pg_csv_duplicate(field, n);
    if (dup >= 0)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){path, 1}, field[dup],
                          "column named twice (which one holds the values?)");
    for (int c = 0; c < NCOLS; c++)
        colpos[c] = -1;
    for (int i = 0; i < n; i++)
        for (int c = 0; c < NCOLS; c++)
            if (strcmp(field[i], COLS[c]) == 0)
                colpos[c] = i;
    for (int c = 0; c < C_VOCAB; c++)
        if (colpos[c] < 0)
            return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){path, 1}, COLS[c], "missing column");
    return 0;
}

static int parse_row(const char *path, int lineno, char *line, const int *colpos, train_row *r, pg_status *st)
{
    char *field[CSV_MAX_FIELDS];
    const char *split_why = NULL;
    int n = pg_csv_split(line, field, CSV_MAX_FIELDS, &split_why);
    if (n < 0)
        return pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){path, lineno}, NULL, "%s", split_why);
    int iv[NCOLS] = {0};
    calib_row_defaults(r);
    for (int c = 0; c < NCOLS; c++) {
        if (colpos[c] < 0)
            continue;
        pg_origin at = {path, lineno};
        if (colpos[c] >= n)
            return pg_fail_at(st, PG_EXIT_INPUT, at, COLS[c], "missing value");
        const char *why = NULL;
        if (c == C_TIME) {
            if (units_parse_double(field[colpos[c]], &r->measured_s, &why) != 0 || !(r->measured_s > 0))
                return pg_fail_at(st, PG_EXIT_INPUT, at, COLS[c], "'%s': %s", field[colpos[c]],
                                  why ? why : "must be a positive time in ms");
            r->measured_s /= MS_PER_S;
            continue;
        }
        long v;
        /* the limits of the experiment's keys and hf configs (pglimits.h) */
        long max = c == C_LAYERS ? PG_MAX_LAYERS : PG_MAX_MODEL_DIM;
        if (units_parse_long(field[colpos[c]], &v, &why) != 0)
            return pg_fail_at(st, PG_EXIT_INPUT, at, COLS[c], "'%s': %s", field[colpos[c]], why);
        if (v < 1 || v > max)
            return pg_fail_at(st, PG_EXIT_INPUT, at, COLS[c], "'%s': expected an integer between 1 and %ld",
                              field[colpos[c]], max);
        iv[c] = (int)v;
    }
    r->line = lineno;
    r->gpus = iv[C_GPUS];
    r->global_batch = iv[C_GBS];
    r->micro_batch = iv[C_MBS];
    r->hidden = iv[C_HIDDEN];
    r->heads = iv[C_HEADS];
    r->layers = iv[C_LAYERS];
    r->seq = iv[C_SEQ];
    r->tp = iv[C_TP];
    r->dp = iv[C_DP];
    r->pp = iv[C_PP];
    r->vocab = colpos[C_VOCAB] >= 0 ? iv[C_VOCAB] : megatron_padded_vocab(GPT2_VOCAB, r->tp);
    pg_origin at = {path, lineno};
    if ((long)r->tp * r->dp * r->pp != r->gpus)
        return pg_fail_at(st, PG_EXIT_INPUT, at, COLS[C_GPUS], "%d GPUs but tp*dp*pp = %d", r->gpus,
                          r->tp * r->dp * r->pp);
    if (r->global_batch % (r->micro_batch * r->dp) != 0)
        return pg_fail_at(st, PG_EXIT_INPUT, at, COLS[C_GBS],
                          "global batch %d is not a multiple of micro batch x dp = %d", r->global_batch,
                          r->micro_batch * r->dp);
    if (r->layers % r->pp != 0)
        return pg_fail_at(st, PG_EXIT_INPUT, at, COLS[C_LAYERS], "%d layers do not split over pp=%d", r->layers,
                          r->pp);
    return 0;
}

int train_csv_load(const char *path, train_row **rows, int *nrows, pg_status *st)
{
    *rows = NULL;
    *nrows = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return pg_fail(st, PG_EXIT_INPUT, "%s: cannot open", path);
    char line[CSV_LINE_MAX];
    int colpos[NCOLS], lineno = 1, rc = 0;
    size_t cap = 0;
    int n = 0;
    train_row *r = NULL;
    char why_buf[64];
    const char *why = NULL;
    int got = pg_csv_read_line(f, line, sizeof line, why_buf, sizeof why_buf, &why);
    if (got <= 0) {
        rc = got < 0 ? pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){path, 1}, NULL, "%s", why)
                     : pg_fail(st, PG_EXIT_INPUT, "%s: empty file", path);
        goto out;
    }
    rc = parse_header(path, line, colpos, st);
    while (rc == 0 && (got = pg_csv_read_line(f, line, sizeof line, why_buf, sizeof why_buf, &why)) != 0) {
        lineno++;
        if (got < 0) {
            rc = pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){path, lineno}, NULL, "%s", why);
            break;
        }
        if (trim(line)[0] == '\0')
            continue;
        pg_grow((void **)&r, &cap, (size_t)n + 1, sizeof *r);
        memset(&r[n], 0, sizeof r[n]);
        rc = parse_row(path, lineno, line, colpos, &r[n], st);
        n++;
    }
    if (rc == 0 && n == 0)
        rc = pg_fail(st, PG_EXIT_INPUT, "%s: no data rows", path);
out:
    fclose(f);
    if (rc) {
        free(r);
        return rc;
    }
    *rows = r;
    *nrows = n;
    return 0;
}

/* ---- one iteration ------------------------------------------------------- */

int iter_set_prepare(iter_set *set, train_row *rows, int nrows, pg_status *st)
{
    memset(set, 0, sizeof *set);
    set->row = rows;
    set->sched = pg_xcalloc((size_t)(nrows > 0 ? nrows : 1), sizeof *set->sched);
    set->replay = pg_xcalloc((size_t)(nrows > 0 ? nrows : 1), sizeof *set->replay);
    for (int i = 0; i < nrows; i++) {
        const train_row *r = &rows[i];
        int layer_row = r->kind == ROW_LAYER;
        int vp = r->vp > 1 && !layer_row ? r->vp : 1;
        sched_params p = {.pp = layer_row ? 1 : r->pp, .m = layer_row ? 1 : r->global_batch / (r->micro_batch * r->dp),
                          .chunks = vp, .ep_overlap = !layer_row && r->ep_overlap && r->ep > 1};
        int rc = sched_generate(vp > 1 ? "interleaved" : "1f1b", &p, &set->sched[i], st);
        set->n = i + 1;
        if (rc) {
            pg_status_prefix(st, "line %d", r->line);
            iter_set_free(set);
            return rc;
        }
        /* every evaluation of the row replays this order: once here (a schedule that deadlocks keeps
         * none, and its evaluation reports the deadlock) */
        pg_status quiet;
        pg_status_clear(&quiet);
        sched_replay_build(&set->sched[i], &set->replay[i], &quiet);
    }
    set->n = nrows;
    return 0;
}

void iter_set_free(iter_set *set)
{
    for (int i = 0; i < set->n; i++) {
        sched_free(&set->sched[i]);
        sched_replay_free(&set->replay[i]);
    }
    free(set->sched);
    free(set->replay);
    memset(set, 0, sizeof *set);
}

/* Bytes/s a collective over n ranks `stride` apart achieves per rank:
 * NVLink x coll_bw_eff when one node holds the group; across nodes NCCL runs
 * as many rings as a node has NICs, so the group's members in one node share
 * that many NICs: min(NVLink x coll_bw_eff, members per node x NIC x
 * net_bw_eff). */
static double group_bw(const gpu_params *g, const train_row *r, int n, long stride)
{
    return costmodel_ring_bw(g->v[GP_NVLINK_BW] * g->v[GP_COLL_BW_EFF], r->nic_bw * g->v[GP_NET_BW_EFF],
                             r->gpus_per_node, n, stride);
}

/* Ring all-reduce of bytes over n ranks `stride` apart. */
/* Bytes of a parameter in the data-parallel all-gathers: bf16, or FP8 (experiment.h experiment_weight_bytes). */
static double param_gather_bytes(const train_row *r)
{
    return experiment_weight_bytes_of(r->fp8_params);
}

/* One pass of a ring over n ranks (a reduce-scatter or an all-gather of
 * bytes): n - 1 steps of bytes / n each. */
static double ring_pass_s(const gpu_params *g, const train_row *r, double bytes, int n, long stride)
{
    if (n <= 1)
        return 0.0;
    return (n - 1) * g->v[GP_COLL_LATENCY_S] + (double)(n - 1) / n * bytes / group_bw(g, r, n, stride);
}

/* A ring all-reduce: a reduce-scatter, then an all-gather. */
static double ring_allreduce_s(const gpu_params *g, const train_row *r, double bytes, int n, long stride)
{
    return 2.0 * ring_pass_s(g, r, bytes, n, stride);
}

/* An op of op_s in n equal per-layer pieces with its sharded collectives
 * on one stream, as src/sim/gradsync.c runs them, the stream free at the
 * op's start: the first layer's all-gather (t_ag; 0 = none) from the start,
 * piece j after its gather, layer j + 1's gather issued when piece j starts,
 * layer j's reduce-scatter (t_rs; 0 = none) when piece j ends.  The op's
 * time up to its compute's end or its stream's, whichever is later (the
 * next op's first gather queues behind this op's last reduce-scatter). */
static double layer_stream_s(double op_s, int n, double t_ag, double t_rs)
{
    double piece = op_s / n, stream = t_ag, gathered = t_ag, comp = 0.0;
    for (int j = 0; j < n; j++) {
        double start = comp > gathered ? comp : gathered;
        if (t_ag > 0 && j + 1 < n) {
            stream = (stream > start ? stream : start) + t_ag;
            gathered = stream;
        }
        comp = start + piece;
        if (t_rs > 0)
            stream = (stream > comp ? stream : comp) + t_rs;
    }
    return comp > stream ? comp : stream;
}

/* 1 for ZeRO-2 / FSDP rows whose collectives are per layer. */
static int row_sharded(const train_row *r)
{
    return r->dp > 1 && (r->sharding == DP_SHARD_GRADIENTS || r->sharding == DP_SHARD_FULL);
}

/* The overlapped gradient reduction as the simulator runs it
 * (src/sim/gradsync.c): each pipeline rank reduces on one stream, bucket
 * after bucket; a stage's gradient (bytes_per_param x its parameters) is
 * cut into buckets of at most bucket_bytes (0: one), which become ready
 * one by one at equal steps over the stage's last weight-gradient op on
 * the rank (window_s[stage][kind]: that op less its recomputation), each
 * starting once the stream is free and taking coll_s(its bytes).  Returns
 * how far the latest rank's stream runs past the pipeline's end: with
 * interleaved stages a rank's chunks end their backwards close together,
 * and their buckets queue. */
typedef double (*bucket_coll_fn)(const gpu_params *g, const train_row *r, double bytes, int n, long stride);

/* The row's experts' reduction group as the simulator forms it
 * (src/sim/gradsync.c, expert_rings): n GPUs holding the same experts
 * (parallel_expert_dp), `stride` GPUs apart; n 0 when the experts go with
 * the dense gradient (ep 1), 1 when no other GPU holds them. */
typedef struct expert_group {
    int n;
    long stride;
} expert_group;

static expert_group row_expert_group(const train_row *r)
{
    long tp_cp = (long)r->tp * r->cp;
    if (r->ep <= 1)
        return (expert_group){0, 0};
    return (expert_group){parallel_expert_dp((int)tp_cp, r->dp, r->ep, r->expert_tp1),
                          r->expert_tp1 ? r->ep : r->ep * tp_cp};
}

/* Trained parameters of stage c reduced with the replicas (all but the
 * experts when they go their own way) and with the experts' group. */
static double dense_params(const stage_cost *c, expert_group eg)
{
    return c->param_count - (eg.n > 0 ? c->expert_param_count : 0.0);
}

static double expert_params(const stage_cost *c, expert_group eg)
{
    return eg.n > 0 ? c->expert_param_count : 0.0;
}

static double reduction_exposed_s(const schedule *s, const sched_times *t, const workload *w,
                                  const double (*window_s)[OP_KIND_COUNT], double bytes_per_param, double bucket_bytes,
                                  bucket_coll_fn coll_s, const gpu_params *g, const train_row *r, long stride)
{
    double exposed_s = 0.0;
    expert_group eg = row_expert_group(r);
    int *last = pg_xmalloc((size_t)w->nstages * sizeof *last);
    for (int rank = 0; rank < s->pp; rank++) {
        for (int k = 0; k < w->nstages; k++)
            last[k] = -1;
        for (int i = 0; i < s->nops[rank]; i++)
            if (s->ops[rank][i].kind == OP_W || s->ops[rank][i].kind == OP_BW)
                last[s->ops[rank][i].stage] = i;
        double free_s = 0.0;
        for (int i = 0; i < s->nops[rank]; i++) {
            const sched_op *op = &s->ops[rank][i];
            if (last[op->stage] != i)
                continue;
            /* dense and expert buckets, the experts' spread evenly (gradsync.c's dp_buckets) */
            double bytes = bytes_per_param * dense_params(&w->stage[op->stage], eg);
            double ebytes = eg.n > 1 ? bytes_per_param * expert_params(&w->stage[op->stage], eg) : 0.0;
            int nd = bytes > 0 ? (bucket_bytes > 0 ? units_pieces(bytes, bucket_bytes) : 1) : 0;
            int ne = ebytes > 0 ? (bucket_bytes > 0 ? units_pieces(ebytes, bucket_bytes) : 1) : 0;
            int nb = nd + ne;
            double len_s = window_s[op->stage][op->kind];
            double each_s = nd ? coll_s(g, r, bytes / nd, r->dp, stride) : 0.0;
            double each_expert_s = ne ? coll_s(g, r, ebytes / ne, eg.n, eg.stride) : 0.0;
            for (int j = 0; j < nb; j++) {
                double ready_s = t->end[rank][i] - len_s + (j + 1) * len_s / nb;
                int expert = workload_bucket_is_expert(j, ne, nb);
                free_s = (free_s > ready_s ? free_s : ready_s) + (expert ? each_expert_s : each_s);
            }
        }
        if (free_s - t->makespan > exposed_s)
            exposed_s = free_s - t->makespan;
    }
    free(last);
    return exposed_s;
}

static gpt_shape row_shape(const train_row *r, int layers)
{
    return (gpt_shape){.layers = layers, .hidden = r->hidden, .heads = r->heads, .seq = r->seq, .vocab = r->vocab,
                       .micro_batch = r->micro_batch, .tp = r->tp, .arch = r->has_arch ? &r->arch : NULL,
                       .cp = r->cp, .ep = r->ep, .sequence_parallel = r->sequence_parallel, .flash = r->flash,
                       .doc_len = r->doc_len,
                       .fp8 = r->fp8, .tp_comm_overlap = r->tp_overlap, .expert_tp1 = r->expert_tp1,
                       .capacity_factor = r->capacity_factor, .main_grad_bytes = r->grad_bytes,
                       .recompute_modules = r->recompute_modules};
}

/* The cost model's view of the row's links: tensor parallelism over more
 * GPUs than a node has runs its all-reduces across nodes (group_bw before
 * the efficiency, which the cost model applies).  g itself when the row's
 * tp fits a node, else a copy in buf with that link rate (a prediction is
 * a fit's inner loop, and the parameters with their sources and layer
 * profiles are tens of kilobytes: copied only when they change). */
static const gpu_params *row_links(const gpu_params *g, const train_row *r, gpu_params *buf)
{
    if (!(r->tp > r->gpus_per_node && g->v[GP_COLL_BW_EFF] > 0))
        return g;
    *buf = *g;
    buf->v[GP_NVLINK_BW] = group_bw(g, r, r->tp, 1) / g->v[GP_COLL_BW_EFF];
    return buf;
}

void iter_row_layer_key(const iter_set *set, int i, char *out, size_t len)
{
    const train_row *r = &set->row[i];
    gpt_shape m = row_shape(r, r->layers);
    costmodel_layer_key(&m, out, len);
}

/* Table 4 rows: one layer's forward + backward (the backward with its
 * recompute), as the difference of one-stage workloads of 2 and 1 layers
 * (embedding, head and per-op overheads cancel). */
static int predict_layer(const gpu_params *g, const train_row *r, iter_breakdown *out, pg_status *st)
{
    gpu_params buf;
    const gpu_params *gl = row_links(g, r, &buf);
    workload w1, w2;
    gpt_shape m1 = row_shape(r, 1), m2 = row_shape(r, 2);
    arch a1, a2;
    if (r->has_arch) {
        a1 = a2 = r->arch;
        a1.layers = 1;
        a2.layers = 2;
        m1.arch = &a1;
        m2.arch = &a2;
    }
    int rc = costmodel_build_shape(gl, &m1, 1, &w1, st);
    if (rc)
        return rc;
    rc = costmodel_build_shape(gl, &m2, 1, &w2, st);
    if (rc) {
        workload_free(&w1);
        return rc;
    }
    const stage_cost *s1 = &w1.stage[0], *s2 = &w2.stage[0];
    double f = s2->f_s - s1->f_s, b = s2->b_s - s1->b_s, wg = s2->w_s - s1->w_s;
    double rec = r->recompute == ROW_RECOMPUTE_FULL        ? f
                 : r->recompute == ROW_RECOMPUTE_SELECTIVE ? s2->selective_s - s1->selective_s
                                                           : 0.0;
    out->pipeline_s = f + rec + b + wg;
    out->total_s = out->pipeline_s;
    workload_free(&w1);
    workload_free(&w2);
    return 0;
}

const char *iter_row_unmodelled(const train_row *r)
{
    if (r->schedule[0])
        return "the row names its own schedule; the surrogate runs Megatron's, 1F1B or interleaved by vp";
    if (r->offload_preset[0])
        return "the surrogate has no activation offload";
    if (r->recompute == ROW_RECOMPUTE_LGD)
        return "the surrogate has no LGD recomputation";
    if (r->first_layers >= 0 || r->last_layers >= 0)
        return "the surrogate spreads the layers evenly over the stages";
    if (r->lora_rank > 0)
        return "the surrogate trains every weight (no LoRA)";
    return NULL;
}

int iter_predict(const gpu_params *g, const iter_set *set, int i, iter_breakdown *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    const train_row *r = &set->row[i];
    if (iter_row_unmodelled(r)) {
        out->total_s = NAN;
        return 0;
    }
    if (r->kind == ROW_LAYER) {
        int rc = predict_layer(g, r, out, st);
        if (rc)
            pg_status_prefix(st, "line %d", r->line);
        return rc;
    }
    const schedule *s = &set->sched[i];
    gpu_params buf;
    const gpu_params *gl = row_links(g, r, &buf);
    gpt_shape m = row_shape(r, r->layers);
    workload w;
    int rc = costmodel_build_shape(gl, &m, s->nstages, &w, st);
    if (rc) {
        pg_status_prefix(st, "line %d", r->line);
        return rc;
    }
    /* Megatron's rank order: tp innermost, then cp, ep/dp, pp outermost */
    long tp_cp = (long)r->tp * r->cp;
    double lat = g->v[GP_COLL_LATENCY_S];
    /* an expert group's all-to-all as the simulator runs it (costmodel_alltoall_s); Megatron's expert ranks:
     * with expert tp 1, ep is innermost (consecutive ranks) */
    long ep_stride = r->expert_tp1 ? 1 : tp_cp;
    double nvl_rate = g->v[GP_NVLINK_BW] * g->v[GP_COLL_BW_EFF], nic_rate = r->nic_bw * g->v[GP_NET_BW_EFF];
    int ep_per_node = costmodel_group_per_node(r->gpus_per_node, r->ep, ep_stride);
    double (*dur)[OP_KIND_COUNT] = pg_xcalloc((size_t)w.nstages, sizeof *dur);
    /* with the combined 1F1B steps the all-to-alls are apart from the computes (sched_eval_combined) */
    int combined = r->ep_overlap && r->ep > 1;
    double (*comm)[OP_KIND_COUNT] = pg_xcalloc((size_t)w.nstages, sizeof *comm);
    double (*grad_window)[OP_KIND_COUNT] = pg_xcalloc((size_t)w.nstages, sizeof *grad_window);
    double max_params = 0.0, max_expert_params = 0.0;
    expert_group eg = row_expert_group(r);
    for (int k = 0; k < w.nstages; k++) {
        const stage_cost *sc = &w.stage[k];
        double f = sc->f_s, b = sc->b_s;
        if (r->ep > 1 && sc->moe_layers > 0) {   /* dispatch + combine in F, their gradients in B */
            a2a_scales scales = costmodel_a2a_scales(r->ep_hybrid, w.moe_experts, w.moe_top_k, r->ep, ep_per_node);
            double a2a = costmodel_alltoall_scaled_s(sc->a2a_bytes, r->ep, ep_per_node, nvl_rate, nic_rate, lat,
                                                     scales);
            if (combined)
                comm[k][OP_F] = comm[k][OP_B] = comm[k][OP_BW] = 2.0 * sc->moe_layers * a2a;
            else {
                f += 2.0 * sc->moe_layers * a2a;
                b += 2.0 * sc->moe_layers * a2a;
            }
        }
        if (r->cp > 1) {   /* key/value ring: cp - 1 steps in F, keys/values and their gradients in B */
            double t_kv = (r->cp - 1) * (lat + sc->cp_kv_bytes / group_bw(g, r, r->cp, r->tp));
            f += sc->attn_layers * t_kv;
            b += 2.0 * sc->attn_layers * t_kv;
        }
        double rec = r->recompute == ROW_RECOMPUTE_FULL        ? f
                     : r->recompute == ROW_RECOMPUTE_SELECTIVE ? sc->selective_s
                                                               : 0.0;
        dur[k][OP_F] = f;
        dur[k][OP_B] = rec + b;
        dur[k][OP_W] = sc->w_s;
        dur[k][OP_BW] = rec + b + sc->w_s;
        grad_window[k][OP_W] = sc->w_s;
        grad_window[k][OP_BW] = b + sc->w_s + comm[k][OP_BW];
        if (row_sharded(r)) {   /* per layer: FSDP gathers in F, B, BW; both modes reduce-scatter in W, BW */
            int n = sc->layers > 0 ? sc->layers : 1;
            double t_ag = r->sharding == DP_SHARD_FULL
                              ? ring_pass_s(g, r, param_gather_bytes(r) * sc->param_count / n, r->shard_group, tp_cp)
                              : 0.0;
            double t_rs = ring_pass_s(g, r, r->grad_bytes * sc->param_count / n, r->shard_group, tp_cp);
            dur[k][OP_F] = layer_stream_s(dur[k][OP_F], n, t_ag, 0.0);
            dur[k][OP_B] = layer_stream_s(dur[k][OP_B], n, t_ag, 0.0);
            dur[k][OP_W] = layer_stream_s(dur[k][OP_W], n, 0.0, t_rs);
            dur[k][OP_BW] = layer_stream_s(dur[k][OP_BW], n, t_ag, t_rs);
        }
        /* the rank's parameters: its vp chunks */
        double rank_params = 0.0, rank_experts = 0.0;
        for (int c = k % r->pp; c < w.nstages; c += r->pp) {
            rank_params += dense_params(&w.stage[c], eg);
            rank_experts += expert_params(&w.stage[c], eg);
        }
        if (rank_params + rank_experts > max_params + max_expert_params) {
            max_params = rank_params;
            max_expert_params = rank_experts;
        }
    }
    long dp_span = tp_cp * r->dp;
    /* Stage boundaries: pipeline rank a's GPUs are a x dp_span on; a send
     * to another rank crosses its NVLink port inside a node, its NIC across
     * nodes (each tp rank its 1/tp share at once). */
    double *t_comm = pg_xcalloc((size_t)r->pp * (size_t)r->pp, sizeof *t_comm);
    double *xfer = pg_xcalloc((size_t)r->pp * (size_t)r->pp, sizeof *xfer);
    int *port = pg_xcalloc((size_t)r->pp * (size_t)r->pp, sizeof *port);
    double p2p_bytes = workload_p2p_bytes(&w, 0, r->tp);
    for (int a = 0; a < r->pp; a++)
        for (int b = 0; b < r->pp; b++) {
            int same_node = (long)a * dp_span / r->gpus_per_node == (long)b * dp_span / r->gpus_per_node;
            int nvlink = same_node || !(nic_rate > 0);
            xfer[a * r->pp + b] = p2p_bytes / (nvlink ? nvl_rate : nic_rate);
            port[a * r->pp + b] = nvlink;   /* the GPU's NIC (0) or its NVLink port (1) */
            t_comm[a * r->pp + b] = lat + xfer[a * r->pp + b];
        }
    sched_step_sends sends = {.xfer_pair = xfer, .port_pair = port};
    double bucket = workload_dp_bucket_bytes(&w, 1.0, r->grad_bytes, row_bucket_bytes(r));
    /* A combined step's NIC carries, besides its all-to-alls, its outputs to the neighbouring stages
     * that sit on other nodes (each tp rank its share), which the simulator sends at the step's end,
     * under the next step's all-to-alls: where the all-to-alls bound the step, those bytes lengthen it. */
    double (*step_comm)[OP_KIND_COUNT] = pg_xcalloc((size_t)w.nstages, sizeof *step_comm);
    for (int k = 0; combined && k < w.nstages; k++)
        for (int kind = 0; kind < OP_KIND_COUNT; kind++) {
            int to = sched_output_stage(s, kind, k);
            size_t pair = to < 0 ? 0 : (size_t)s->stage_rank[k] * (size_t)r->pp + (size_t)s->stage_rank[to];
            step_comm[k][kind] = comm[k][kind] + (to >= 0 && !port[pair] ? xfer[pair] : 0.0);   /* its NIC */
        }
    sched_times t;
    if (combined) {
        rc = sched_eval_combined(s, (const double (*)[OP_KIND_COUNT])dur, (const double (*)[OP_KIND_COUNT])comm,
                                 (const double (*)[OP_KIND_COUNT])step_comm, t_comm, &sends, &t, st);
    } else if (set->replay[i].order) {   /* the row's replay order, built once (iter_set_prepare) */
        sched_eval_staged_pairs_replayed(s, &set->replay[i], (const double (*)[OP_KIND_COUNT])dur, t_comm, &t);
        rc = 0;
    } else {
        rc = sched_eval_staged_pairs(s, (const double (*)[OP_KIND_COUNT])dur, t_comm, &t, st);
    }
    free(t_comm);
    free(xfer);
    free(port);
    free(dur);
    free(comm);
    free(step_comm);
    int tied = r->has_arch ? r->arch.tied_embeddings : 1;
    double embed_params = (double)r->vocab * r->hidden / r->tp;
    if (rc) {
        free(grad_window);
        workload_free(&w);
        pg_status_prefix(st, "line %d", r->line);
        return rc;
    }
    out->pipeline_s = t.makespan;
    /* The distributed optimizer's overlapped gathers, as the simulator runs
     * them (src/sim/engine_internal.h): one per stage of each rank, the
     * first from the start, each next one once the previous stage's first
     * forward has started and the previous gather is done, each awaited by
     * its stage's first forward: the most any of them is late. */
    double gather_late_s = 0.0;
    if (r->zero1 && r->dp_overlap && r->dp > 1) {
        int *seen = pg_xcalloc((size_t)w.nstages, sizeof *seen);
        for (int rank = 0; rank < s->pp; rank++) {
            double gathered_s = 0.0, prev_start_s = 0.0;
            for (int k = 0; k < s->nops[rank]; k++) {
                const sched_op *op = &s->ops[rank][k];
                if (op->kind != OP_F || seen[op->stage])
                    continue;
                seen[op->stage] = 1;
                if (prev_start_s > gathered_s)
                    gathered_s = prev_start_s;
                prev_start_s = t.start[rank][k];
                const stage_cost *c = &w.stage[op->stage];
                gathered_s += ring_pass_s(g, r, param_gather_bytes(r) * dense_params(c, eg), r->dp, tp_cp) +
                              ring_pass_s(g, r, param_gather_bytes(r) * expert_params(c, eg), eg.n, eg.stride);
                if (gathered_s - t.end[rank][k] > gather_late_s)
                    gather_late_s = gathered_s - t.end[rank][k];
            }
        }
        free(seen);
    }
    /* Overlapped, as the simulator runs it: reduction_exposed_s */
    double overlap_exposed_s = 0.0;
    if (r->dp_overlap && !row_sharded(r))
        overlap_exposed_s = reduction_exposed_s(s, &t, &w, (const double (*)[OP_KIND_COUNT])grad_window,
                                                r->grad_bytes, bucket, r->zero1 ? ring_pass_s : ring_allreduce_s, g,
                                                r, tp_cp);
    free(grad_window);
    sched_times_free(s, &t);
    workload_free(&w);
    if (r->pp > 1 && tied)   /* first and last stage sum the tied embedding's gradient (across the pipeline) */
        out->embed_sync_s = ring_allreduce_s(g, r, r->grad_bytes * embed_params, 2, dp_span * (r->pp - 1));
    int nb = bucket > 0 ? units_pieces(r->grad_bytes * max_params, bucket) : 1;
    int ne = eg.n <= 1 || !(max_expert_params > 0) ? 0
             : bucket > 0                            ? units_pieces(r->grad_bytes * max_expert_params, bucket)
                                                     : 1;
    if (row_sharded(r)) {
        /* ZeRO-2 / FSDP: the per-layer collectives are in the ops; HSDP's
         * all-reduce of the sharded gradient across the shard groups, and
         * ZeRO-2's gather of the updated parameters after the step */
        int groups = r->dp / r->shard_group;
        double held = max_params + max_expert_params;   /* sharded whole, experts with the rest */
        out->dp_allreduce_s = ring_allreduce_s(g, r, r->grad_bytes * held / r->shard_group, groups,
                                               tp_cp * r->shard_group);
        if (r->sharding == DP_SHARD_GRADIENTS)
            out->dp_allreduce_s += ring_pass_s(g, r, param_gather_bytes(r) * held, r->shard_group, tp_cp);
    } else if (r->zero1) {
        /* Megatron's distributed optimizer: the gradients are reduce-
         * scattered bucket by bucket (in their reduction precision), each
         * rank updates its shard, and the bf16 parameters are all-gathered:
         * with overlap the reduce-scatters run under the last backward and
         * the gather under the first forward (overlap_param_gather). */
        double t_rs = nb * ring_pass_s(g, r, r->grad_bytes * max_params / nb, r->dp, tp_cp) +
                      (ne ? ne * ring_pass_s(g, r, r->grad_bytes * max_expert_params / ne, eg.n, eg.stride) : 0.0);
        double t_ag = ring_pass_s(g, r, param_gather_bytes(r) * max_params, r->dp, tp_cp) +
                      ring_pass_s(g, r, param_gather_bytes(r) * max_expert_params, eg.n, eg.stride);
        out->dp_allreduce_s = r->dp_overlap ? overlap_exposed_s + gather_late_s : t_rs + t_ag;
    } else {
        double t_dp = nb * ring_allreduce_s(g, r, r->grad_bytes * max_params / nb, r->dp, tp_cp) +
                      (ne ? ne * ring_allreduce_s(g, r, r->grad_bytes * max_expert_params / ne, eg.n, eg.stride) : 0.0);
        out->dp_allreduce_s = r->dp_overlap ? overlap_exposed_s : t_dp;
    }
    /* the distributed optimizer steps the replicas' dense shard and the experts' group's shard (job.c) */
    double stepped = row_sharded(r) ? (max_params + max_expert_params) / r->shard_group
                     : r->zero1     ? max_params / r->dp + max_expert_params / (eg.n > 0 ? eg.n : 1)
                                    : max_params + max_expert_params;
    out->optimizer_s = costmodel_optimizer_s(g, stepped);
    out->overhead_s = g->v[GP_ITER_OVERHEAD_S];
    out->total_s = out->pipeline_s + out->embed_sync_s + out->dp_allreduce_s + out->optimizer_s + out->overhead_s;
    return 0;
}

/* ---- split and errors ----------------------------------------------------- */

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

#define SPLIT_BUCKETS 1000000u

int iter_in_fit_part(int i, double fit_fraction)
{
    return (double)(splitmix64((uint64_t)i) % SPLIT_BUCKETS) < fit_fraction * SPLIT_BUCKETS;
}

int iter_row_in_fit_part(const train_row *r, double fit_fraction)
{
    return (double)(splitmix64((uint64_t)r->split_key) % SPLIT_BUCKETS) < fit_fraction * SPLIT_BUCKETS;
}

/* |pred / ref - 1| over the rows with mask[i] != 0 (mask NULL = all) where
 * pred is a number; ref NULL = the measured times. */
static error_stats relative_errors(const iter_set *set, const double *pred, const double *ref, const int *mask)
{
    error_stats e = {0, 0.0, 0.0, -1};
    double sum = 0.0;
    for (int i = 0; i < set->n; i++) {
        if ((mask && !mask[i]) || isnan(pred[i]) || (ref && isnan(ref[i])))
            continue;
        double r = ref ? ref[i] : set->row[i].measured_s;
        double err = fabs(pred[i] - r) / r;
        sum += err;
        if (e.worst < 0 || err > e.max_err) {
            e.max_err = err;
            e.worst = i;
        }
        e.n++;
    }
    e.mape = e.n ? sum / e.n : 0.0;
    return e;
}

error_stats iter_errors(const iter_set *set, const double *pred, const int *mask)
{
    return relative_errors(set, pred, NULL, mask);
}

error_stats iter_gap(const iter_set *set, const double *pred, const double *ref)
{
    return relative_errors(set, pred, ref, NULL);
}

/* What makes rows one job: every setting of the row the cost model reads,
 * and the prediction (the architecture is compared through it, a function
 * of it).  Without padding, so that two equal jobs are equal bytes. */
typedef struct job_id {
    char gpu[sizeof ((train_row *)0)->gpu];
    char schedule[sizeof ((train_row *)0)->schedule];
    char offload_preset[sizeof ((train_row *)0)->offload_preset];
    int kind, gpus, global_batch, micro_batch, hidden, heads, layers, seq, vocab, tp, dp, pp, vp, cp, ep;
    int sequence_parallel, flash, fp8, doc_len, tp_overlap, expert_tp1, recompute, dp_overlap, zero1, sharding,
        shard_group;
    int gpus_per_node, has_arch, first_layers, last_layers, host_link_measured, lora_rank, lora_qkv_only;
    double grad_bytes, nic_bw, capacity_factor, pred;
} job_id;

typedef struct job_row {
    job_id id;
    int row;
} job_row;

#define JOB_ID_INTS 33
#define JOB_ID_DOUBLES 4
/* compared as bytes: no padding may hide between the fields */
_Static_assert(sizeof(job_id) == sizeof ((job_id *)0)->gpu + sizeof ((job_id *)0)->schedule +
                                     sizeof ((job_id *)0)->offload_preset + JOB_ID_INTS * sizeof(int) +
                                     JOB_ID_DOUBLES * sizeof(double),
               "job_id has padding");

static void job_id_of(const train_row *r, double pred, job_id *out)
{
    *out = (job_id){.kind = (int)r->kind, .gpus = r->gpus, .global_batch = r->global_batch,
                    .micro_batch = r->micro_batch, .hidden = r->hidden, .heads = r->heads, .layers = r->layers,
                    .seq = r->seq, .vocab = r->vocab, .tp = r->tp, .dp = r->dp, .pp = r->pp, .vp = r->vp,
                    .cp = r->cp, .ep = r->ep, .sequence_parallel = r->sequence_parallel, .flash = r->flash,
                    .fp8 = r->fp8, .doc_len = r->doc_len, .tp_overlap = r->tp_overlap, .expert_tp1 = r->expert_tp1,
                    .recompute = (int)r->recompute, .dp_overlap = r->dp_overlap, .zero1 = r->zero1,
                    .sharding = (int)r->sharding, .shard_group = r->shard_group,
                    .gpus_per_node = r->gpus_per_node, .has_arch = r->has_arch, .first_layers = r->first_layers,
                    .last_layers = r->last_layers, .host_link_measured = r->host_link_measured,
                    .lora_rank = r->lora_rank, .lora_qkv_only = r->lora_qkv_only, .grad_bytes = r->grad_bytes, .nic_bw = r->nic_bw, .capacity_factor = r->capacity_factor,
                    .pred = pred};
    memcpy(out->gpu, r->gpu, sizeof out->gpu);
    memcpy(out->schedule, r->schedule, sizeof out->schedule);
    memcpy(out->offload_preset, r->offload_preset, sizeof out->offload_preset);
}

static int job_row_cmp(const void *a, const void *b)
{
    const job_row *x = a, *y = b;
    int c = memcmp(&x->id, &y->id, sizeof x->id);
    return c ? c : (x->row > y->row) - (x->row < y->row);
}

/* Rows sorted by job, so that each job's rows are consecutive (n log n: a
 * validate of many rows must not compare every pair).  The sum of
 * |t - m| / m over a job's measured times m is convex and piecewise linear
 * in t, so its minimum is at one of them. */
double iter_mape_floor(const iter_set *set, const double *pred, const int *mask)
{
    job_row *jr = pg_xcalloc((size_t)set->n + 1, sizeof *jr);
    int n = 0;
    for (int i = 0; i < set->n; i++)
        if (!mask || mask[i]) {
            job_id_of(&set->row[i], pred[i], &jr[n].id);
            jr[n++].row = i;
        }
    qsort(jr, (size_t)n, sizeof *jr, job_row_cmp);
    double sum = 0.0;
    for (int a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && memcmp(&jr[a].id, &jr[b].id, sizeof jr[a].id) == 0; b++)
            ;
        double best = HUGE_VAL;
        for (int c = a; c < b; c++) {
            double t = set->row[jr[c].row].measured_s, cost = 0.0;
            for (int k = a; k < b; k++)
                cost += fabs(t - set->row[jr[k].row].measured_s) / set->row[jr[k].row].measured_s;
            if (cost < best)
                best = cost;
        }
        sum += best;
    }
    free(jr);
    return n ? sum / n : 0.0;
}

#define ITER_MAX_FILES 64

/* Each file's MAPE over the rows of mask (mape[f], NaN-free: files without
 * a row get cnt[f] = 0). */
static void file_mapes(const iter_set *set, const double *pred, const int *mask, double mape[ITER_MAX_FILES],
                       int cnt[ITER_MAX_FILES])
{
    for (int f = 0; f < ITER_MAX_FILES; f++) {
        mape[f] = 0.0;
        cnt[f] = 0;
    }
    for (int i = 0; i < set->n; i++) {
        if (mask && !mask[i])
            continue;
        int f = set->row[i].file;
        f = f < 0 ? 0 : f >= ITER_MAX_FILES ? ITER_MAX_FILES - 1 : f;
        mape[f] += fabs(pred[i] - set->row[i].measured_s) / set->row[i].measured_s;
        cnt[f]++;
    }
    for (int f = 0; f < ITER_MAX_FILES; f++)
        if (cnt[f] > 0)
            mape[f] /= cnt[f];
}

error_stats iter_errors_by_file(const iter_set *set, const double *pred, const int *mask)
{
    error_stats e = iter_errors(set, pred, mask);
    double mape[ITER_MAX_FILES];
    int cnt[ITER_MAX_FILES], files = 0;
    file_mapes(set, pred, mask, mape, cnt);
    double mean = 0.0;
    for (int f = 0; f < ITER_MAX_FILES; f++)
        if (cnt[f] > 0) {
            mean += mape[f];
            files++;
        }
    e.mape = files ? mean / files : 0.0;
    return e;
}

double iter_worst_file_mape(const iter_set *set, const double *pred, const int *mask)
{
    double mape[ITER_MAX_FILES], worst = 0.0;
    int cnt[ITER_MAX_FILES];
    file_mapes(set, pred, mask, mape, cnt);
    for (int f = 0; f < ITER_MAX_FILES; f++)
        if (cnt[f] > 0 && mape[f] > worst)
            worst = mape[f];
    return worst;
}

/* ---- fit ------------------------------------------------------------------ */

typedef struct fit_ctx {
    gpu_params g;
    const iter_set *set;
    const int *mask;
    int ids[GP_COUNT], nvar;
    double *pred;
    int failed;
    fit_hyper h;
} fit_ctx;

#define FIT_MAX_EVALS 1500
#define FIT_RESTARTS 4        /* at least this many simplexes ... */
#define FIT_MAX_RESTARTS 16   /* ... and more while one still improves the objective, up to this */
#define FIT_TOL 1e-7
#define FIT_STEP 0.5      /* largest simplex step, in natural-log units (x1.65) */
#define FIT_STEP_SIZES 3  /* restart r steps FIT_STEP / (1 + r mod this) */
#define BAD_FIT 1e30


static int is_ratio(gpu_param_id id)
{
    return id == GP_GEMM_EFF || id == GP_ATTN_EFF || id == GP_FLASH_EFF || id == GP_MEM_EFF || id == GP_COLL_BW_EFF ||
           id == GP_NET_BW_EFF || id == GP_FP8_GEMM_EFF;
}

/* The physical lower bound of a fitted parameter (itermodel.h); 0 = none. */
static double fit_floor(gpu_param_id id)
{
    return id == GP_MEM_EFF ? FIT_MEM_EFF_FLOOR : id == GP_COLL_BW_EFF ? FIT_COLL_BW_EFF_FLOOR : 0.0;
}

/* The upper bound of a fitted parameter: an efficiency's (the hyper-
 * parameter, achieved <= peak), tighter for the GEMMs (itermodel.h). */
static double fit_ceiling(const fit_ctx *c, gpu_param_id id)
{
    if (id == GP_GEMM_EFF)
        return c->h.ratio_cap < FIT_GEMM_EFF_CAP ? c->h.ratio_cap : FIT_GEMM_EFF_CAP;
    return is_ratio(id) ? c->h.ratio_cap : HUGE_VAL;
}

static void apply(fit_ctx *c, const double *x)
{
    for (int k = 0; k < c->nvar; k++) {
        double v = exp(x[k]);
        double ceiling_v = fit_ceiling(c, (gpu_param_id)c->ids[k]);
        if (v > ceiling_v)
            v = ceiling_v;
        double floor_v = fit_floor((gpu_param_id)c->ids[k]);
        if (v < floor_v)
            v = floor_v;
        c->g.v[c->ids[k]] = v;
    }
}

static double objective(const double *x, void *vctx)
{
    fit_ctx *c = vctx;
    apply(c, x);
    pg_status st;
    for (int i = 0; i < c->set->n; i++) {
        if (c->mask && !c->mask[i])
            continue;
        iter_breakdown b;
        if (iter_predict(&c->g, c->set, i, &b, &st) != 0) {
            c->failed = 1;
            return BAD_FIT;
        }
        c->pred[i] = b.total_s;
    }
    error_stats e = iter_errors_by_file(c->set, c->pred, c->mask);
    return e.mape + c->h.max_weight * e.max_err;
}

#define TINY_PARAM 1e-12  /* log of 0 is not a start: parameters at 0 start here */

/* Starting values of a calibration: round, plausible numbers for a
 * datacenter GPU of the A100 class, fixed here so that no fit starts from a
 * point chosen with knowledge of any result. */
#define INIT_GEMM_EFF 0.7
#define INIT_GEMM_HALF_FLOPS 1e9
#define INIT_ATTN_EFF 0.5
#define INIT_FLASH_EFF 0.5
#define INIT_MEM_EFF 0.7
#define INIT_KERNEL_LAUNCH_S 10e-6
#define INIT_COLL_LATENCY_S 10e-6
#define INIT_COLL_BW_EFF 0.7
#define INIT_ITER_OVERHEAD_S 5e-3
#define INIT_OP_OVERHEAD_S 100e-6
#define INIT_NET_BW_EFF 0.7
#define INIT_FP8_GEMM_EFF 0.7

void iter_fit_initial(gpu_params *g)
{
    g->v[GP_GEMM_EFF] = INIT_GEMM_EFF;
    g->v[GP_GEMM_HALF_FLOPS] = INIT_GEMM_HALF_FLOPS;
    g->v[GP_ATTN_EFF] = INIT_ATTN_EFF;
    g->v[GP_FLASH_EFF] = INIT_FLASH_EFF;
    g->v[GP_MEM_EFF] = INIT_MEM_EFF;
    g->v[GP_KERNEL_LAUNCH_S] = INIT_KERNEL_LAUNCH_S;
    g->v[GP_COLL_LATENCY_S] = INIT_COLL_LATENCY_S;
    g->v[GP_COLL_BW_EFF] = INIT_COLL_BW_EFF;
    g->v[GP_ITER_OVERHEAD_S] = INIT_ITER_OVERHEAD_S;
    g->v[GP_OP_OVERHEAD_S] = INIT_OP_OVERHEAD_S;
    g->v[GP_NET_BW_EFF] = INIT_NET_BW_EFF;
    g->v[GP_FP8_GEMM_EFF] = INIT_FP8_GEMM_EFF;
    g->nlayer_profiles = 0;   /* measured layer profiles are fitted after these (layer_fit.h) */
    g->layer_profiles_source[0] = '\0';
}

int iter_fit(gpu_params *g, const iter_set *set, const int *mask, const fit_hyper *h, error_stats *fit_err,
             pg_status *st)
{
    fit_ctx c = {.g = *g, .set = set, .mask = mask, .h = *h};
    double x[NM_MAX_VARS], step[NM_MAX_VARS];
    /* only what some fit row depends on: a parameter none exercises keeps
     * its value (and would only slow the simplex down) */
    for (int k = 0; k < GP_COUNT; k++)
        if (gpu_param_fitted((gpu_param_id)k) && iter_param_exercised(g, set, mask, (gpu_param_id)k)) {
            c.ids[c.nvar] = k;
            x[c.nvar] = log(g->v[k] > TINY_PARAM ? g->v[k] : TINY_PARAM);
            step[c.nvar] = FIT_STEP;
            c.nvar++;
        }
    c.pred = pg_xcalloc((size_t)(set->n > 0 ? set->n : 1), sizeof *c.pred);
    /* Restart from the best point: a collapsed simplex is the usual way
     * Nelder-Mead stalls, and the objective (absolute errors, the host /
     * GPU max of the kernel queue) is full of kinks along which it
     * collapses.  A restart with the same simplex tends to collapse the same
     * way, so each one turns it: steps of alternating sign, parameter by
     * parameter and restart by restart, and of size cycling from FIT_STEP
     * down to a third of it.  (Restarting the same simplex left the A100
     * fit at 6.7 % MAPE on its fit part where the turned ones reach 4.0 %,
     * docs/validation.md.) */
    double best = HUGE_VAL;
    for (int r = 0; r < FIT_MAX_RESTARTS; r++) {
        double turned[NM_MAX_VARS];
        for (int k = 0; k < c.nvar; k++)
            turned[k] = ((r + k) % 2 ? -step[k] : step[k]) / (1.0 + r % FIT_STEP_SIZES);
        double v = nm_minimize(objective, &c, x, turned, c.nvar, FIT_MAX_EVALS, FIT_TOL);
        if (r >= FIT_RESTARTS && v > best - FIT_TOL)
            break;
        best = v;   /* never above the last: each simplex starts at the best point */
    }
    objective(x, &c);
    int rc = 0;
    if (c.failed)
        rc = pg_fail(st, PG_EXIT_INPUT, "calibration: some row cannot be predicted with the fitted parameters");
    else {
        *fit_err = iter_errors_by_file(set, c.pred, mask);
        int fitted[GP_COUNT] = {0};
        for (int k = 0; k < c.nvar; k++) {
            g->v[c.ids[k]] = c.g.v[c.ids[k]];
            fitted[c.ids[k]] = 1;
        }
        int tied = iter_attention_tied(fitted);
        if (tied >= 0)
            g->v[tied] = g->v[iter_attention_other(tied)];
    }
    free(c.pred);
    return rc;
}

int iter_attention_tied(const int exercised[GP_COUNT])
{
    if (exercised[GP_ATTN_EFF] && !exercised[GP_FLASH_EFF])
        return GP_FLASH_EFF;
    if (exercised[GP_FLASH_EFF] && !exercised[GP_ATTN_EFF])
        return GP_ATTN_EFF;
    return -1;
}

gpu_param_id iter_attention_other(gpu_param_id attention_eff)
{
    return attention_eff == GP_FLASH_EFF ? GP_ATTN_EFF : GP_FLASH_EFF;
}

#define EXERCISE_STEP 1.25   /* a parameter a fit can see changes some prediction when scaled by this */

int iter_param_exercised(const gpu_params *g, const iter_set *set, const int *mask, gpu_param_id id)
{
    gpu_params h = *g;
    h.v[id] = g->v[id] > 0 ? g->v[id] / EXERCISE_STEP : 1.0;
    for (int i = 0; i < set->n; i++) {
        if (mask && !mask[i])
            continue;
        iter_breakdown a, b;
        pg_status st;
        if (iter_predict(g, set, i, &a, &st) != 0 || iter_predict(&h, set, i, &b, &st) != 0)
            continue;
        if (a.total_s != b.total_s)
            return 1;
    }
    return 0;
}
