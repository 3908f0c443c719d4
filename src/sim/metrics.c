/* metrics.c: run metrics from a timeline (see metrics.h for the definitions).
 *
 * Everything is one pass over the ops grouped by rank.  Memory and stored
 * activations are replayed as events: each op allocates at its start (F: its
 * activation; any op: its workspace) and releases at its end (B: what W does
 * not need, W: the rest, BW: all of it; any op: its workspace).  On one rank
 * the starts and the ends are each sorted by time (ops run one at a time, so
 * a timeline recorded in execution order is already sorted and the sort is
 * skipped), then merged instant by instant, releases before allocations.
 * That is O(ops) for a timeline in order and O(ops log ops) otherwise, which
 * matters on 4M-op timelines.
 *
 * Activations are counted in chunk units (integers) and divided by v at the
 * end, so the peak is exact however long the timeline.
 *
 * With a memory plan, the bytes of each event come from sim/actmem.h, and
 * the rank's offload copies join the replay: a D2H copy's end is one more
 * release, an H2D copy's start one more allocation (event indices with
 * COPY_BIT set name copies).  Without a plan the replay is the one above,
 * event for event.
 *
 * Megatron-Core's combined 1F1B steps (metrics_input.combined_pairs: a
 * forward and the backward after it, marked overlap_next in the schedule)
 * interleave the two ops layer by layer, the forward of layer l beside the
 * backward of the layer the other microbatch left last, so that the step
 * holds about one layer more than before it, not a whole forward more (the
 * timeline records the forward first, then the backward).  The replay says
 * so: the forward allocates its stage's largest layer at its start and the
 * rest at its end, where the backward (which starts there) releases what it
 * frees at its start instead of its end.
 */
#include "sim/metrics.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/memory.h"
#include "sim/actmem.h"
#include "util/error.h"

/* FLOPs of one microbatch through one stage: forward, plus backward for the
 * input gradient and for the weights, each about as costly as the forward. */
#define FLOPS_PER_FWD_FLOP 3.0
/* A stage of frozen weights (LoRA): forward and input gradient; its weights
 * have no gradient (the adapters' few FLOPs are not model FLOPs). */
#define FLOPS_PER_FWD_FLOP_FROZEN 2.0
/* An offload round trip: one D2H copy after F, one H2D copy before the backward. */
#define COPIES_PER_ROUND_TRIP 2.0

static int at_least_one(int n)
{
    return n > 1 ? n : 1;
}

/* The GPUs a pipeline rank stands for: its tp x cp group in each of the dp
 * replicas (Megatron order: contiguous from its GPU). */
static int rank_gpus(const metrics_input *in)
{
    return at_least_one(in->tp) * at_least_one(in->cp) * at_least_one(in->dp);
}

typedef struct ev {
    double t;
    size_t op;       /* op index, or COPY_BIT | copy index */
} ev;

#define COPY_BIT ((size_t)1 << (sizeof(size_t) * 8 - 1))

static int ev_cmp(const void *a, const void *b)
{
    const ev *x = a, *y = b;
    if (x->t < y->t) return -1;
    if (x->t > y->t) return 1;
    return (x->op > y->op) - (x->op < y->op);
}

static void ev_sort(ev *e, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        if (ev_cmp(&e[i - 1], &e[i]) > 0) {
            qsort(e, n, sizeof *e, ev_cmp);
            return;
        }
    }
}

static int rank_count(const metrics_input *in)
{
    if (in->sched) return in->sched->pp;
    int pp = 0;
    for (size_t i = 0; i < (in->tl ? in->tl->nops : 0); i++)
        if (timeline_op(in->tl, i).rank >= pp) pp = timeline_op(in->tl, i).rank + 1;
    return pp;
}

/* The workload's cost of an op's stage, or NULL if unknown (no workload or a
 * stage out of range: the op then only counts as time). */
static const stage_cost *op_cost(const metrics_input *in, const tl_op *op)
{
    if (!in->wl || op->stage < 0 || op->stage >= in->wl->nstages) return NULL;
    return &in->wl->stage[op->stage];
}

/* fused: the rank runs fused backwards (BW), which a recompute R precedes. */
static double alloc_bytes(const metrics_input *in, const stage_cost *c, const tl_op *op, int fused)
{
    if (!in->plan) return op->kind == OP_F ? c->act_b_bytes : 0.0;
    if (op->kind != OP_F && op->kind != TL_OP_R && op->kind != TL_OP_RW) return 0.0;
    if (op->mb < 0 || op->mb >= in->plan->m) return 0.0;
    act_flow f;
    act_flow_of(in->wl, in->plan, op->stage, op->mb, &f);
    if (op->kind == TL_OP_R)
        return fused ? f.r_alloc_fused : f.r_alloc;
    return op->kind == OP_F ? f.f_alloc : f.rw_alloc;
}

static double release_bytes(const metrics_input *in, const stage_cost *c, const tl_op *op)
{
    if (in->plan && op->mb >= 0 && op->mb < in->plan->m &&
        (op->kind == OP_B || op->kind == OP_W || op->kind == OP_BW)) {
        act_flow f;
        act_flow_of(in->wl, in->plan, op->stage, op->mb, &f);
        return op->kind == OP_B ? f.b_release : op->kind == OP_W ? f.w_release : f.bw_release;
    }
    switch (op->kind) {
    case OP_B: return c->act_b_bytes - c->act_w_bytes;
    case OP_W: return c->act_w_bytes;
    case OP_BW: return c->act_b_bytes;
    default: return 0.0;
    }
}

/* Op indices grouped by rank, each group in timeline order (a counting sort):
 * ops of rank r are idx[first[r] .. first[r+1]).  Ops on unknown ranks are
 * left out. */
typedef struct by_rank {
    size_t *idx;
    size_t *first;   /* [pp + 1] */
} by_rank;

/* rank_of(tl, i) for i < n: the rank of record i of some timeline array. */
typedef int (*rank_fn)(const timeline *tl, size_t i);
static int op_rank(const timeline *tl, size_t i) { return timeline_op(tl, i).rank; }
static int copy_rank(const timeline *tl, size_t i) { return tl->copies[i].rank; }

static void group_records(const timeline *tl, size_t n, rank_fn rank_of, int pp, by_rank *g)
{
    g->first = pg_xcalloc((size_t)pp + 1, sizeof *g->first);
    g->idx = pg_xmalloc((n ? n : 1) * sizeof *g->idx);
    for (size_t i = 0; i < n; i++) {
        int r = rank_of(tl, i);
        if (r >= 0 && r < pp) g->first[r + 1]++;
    }
    for (int r = 0; r < pp; r++) g->first[r + 1] += g->first[r];
    size_t *fill = pg_xmalloc(((size_t)pp + 1) * sizeof *fill);
    memcpy(fill, g->first, ((size_t)pp + 1) * sizeof *fill);
    for (size_t i = 0; i < n; i++) {
        int r = rank_of(tl, i);
        if (r >= 0 && r < pp) g->idx[fill[r]++] = i;
    }
    free(fill);
}

static void group_by_rank(const timeline *tl, int pp, by_rank *g)
{
    group_records(tl, tl ? tl->nops : 0, op_rank, pp, g);
}

static void by_rank_free(by_rank *g)
{
    free(g->idx);
    free(g->first);
}

/* One rank's records: ops idx[0..n), copies cidx[0..nc). */
typedef struct rank_records {
    const size_t *idx; size_t n;
    const size_t *cidx; size_t nc;
} rank_records;

/* The ops of one rank's combined steps (header): keys of the forwards and
 * of the backwards that follow them, each sorted. */
typedef struct combined_ops {
    uint64_t *first, *second;
    size_t nfirst, nsecond;
} combined_ops;

static uint64_t op_key(int kind, int stage, int mb)
{
    return ((uint64_t)(uint8_t)kind << 56) | ((uint64_t)(uint32_t)stage << 24) | (uint64_t)(uint32_t)mb;
}

static int key_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void combined_ops_of(const metrics_input *in, int rank, combined_ops *c)
{
    memset(c, 0, sizeof *c);
    if (!in->combined_pairs || in->plan || !in->sched || rank >= in->sched->pp)
        return;
    const sched_op *ops = in->sched->ops[rank];
    int n = in->sched->nops[rank];
    for (int j = 0; j + 1 < n; j++)
        c->nfirst += ops[j].overlap_next && ops[j].kind == OP_F;
    if (c->nfirst == 0)
        return;
    c->first = pg_xmalloc(c->nfirst * sizeof *c->first);
    c->second = pg_xmalloc(c->nfirst * sizeof *c->second);
    for (int j = 0; j + 1 < n; j++)
        if (ops[j].overlap_next && ops[j].kind == OP_F) {
            c->first[c->nsecond] = op_key(OP_F, ops[j].stage, ops[j].mb);
            c->second[c->nsecond++] = op_key(ops[j + 1].kind, ops[j + 1].stage, ops[j + 1].mb);
        }
    qsort(c->first, c->nfirst, sizeof *c->first, key_cmp);
    qsort(c->second, c->nsecond, sizeof *c->second, key_cmp);
}

static int combined_has(const uint64_t *keys, size_t n, const tl_op *op)
{
    uint64_t k = op_key(op->kind, op->stage, op->mb);
    return n > 0 && bsearch(&k, keys, n, sizeof k, key_cmp) != NULL;
}

/* A combined step's forward allocates at its start only its stage's
 * largest layer (header). */
static double combined_lead_bytes(const stage_cost *c, double alloc)
{
    return c->layer_act_b_bytes > 0 && c->layer_act_b_bytes < alloc ? c->layer_act_b_bytes : alloc;
}

/* Replays one rank's memory events, calling fn once per distinct instant.
 * starts/ends are scratch arrays of at least n + nc events. */
static void walk_rank(const metrics_input *in, int rank, const rank_records *rr, int v,
                      ev *starts, ev *ends, metrics_memory_fn fn, void *ctx)
{
    combined_ops comb;
    combined_ops_of(in, rank, &comb);
    const timeline *tl = in->tl;
    const tl_copy *copies = in->tl->copies;
    size_t ns = 0, ne = 0;
    int fused = 0;
    for (size_t i = 0; i < rr->n; i++)
        fused |= timeline_op(tl, rr->idx[i]).kind == OP_BW;
    for (size_t i = 0; i < rr->n; i++) {
        tl_op op = timeline_op(tl, rr->idx[i]);
        starts[ns++] = (ev){ op.start_s, rr->idx[i] };
        ends[ne++] = (ev){ op.end_s, rr->idx[i] };
    }
    for (size_t i = 0; i < rr->nc; i++) {
        const tl_copy *cp = &copies[rr->cidx[i]];
        if (cp->dir == COPY_D2H) ends[ne++] = (ev){ cp->end_s, COPY_BIT | rr->cidx[i] };
        else starts[ns++] = (ev){ cp->start_s, COPY_BIT | rr->cidx[i] };
    }
    ev_sort(starts, ns);
    ev_sort(ends, ne);

    double act_bytes = 0, ws_bytes = 0;
    int64_t act_chunks = 0;
    size_t i = 0, k = 0;
    while (i < ns || k < ne) {
        double t = (k < ne && (i >= ns || ends[k].t <= starts[i].t)) ? ends[k].t : starts[i].t;
        for (; k < ne && ends[k].t == t; k++) {
            if (ends[k].op & COPY_BIT) {
                act_bytes -= copies[ends[k].op & ~COPY_BIT].bytes;
                continue;
            }
            const tl_op op_rec = timeline_op(tl, ends[k].op), *op = &op_rec;
            const stage_cost *c = op_cost(in, op);
            int second = combined_has(comb.second, comb.nsecond, op);
            if ((op->kind == OP_W || op->kind == OP_BW) && !second) act_chunks--;
            if (combined_has(comb.first, comb.nfirst, op)) {
                act_chunks++;
                if (c) {
                    double alloc = alloc_bytes(in, c, op, fused);
                    act_bytes += alloc - combined_lead_bytes(c, alloc);
                }
            }
            if (!c) continue;
            if (!second) act_bytes -= release_bytes(in, c, op);
            ws_bytes -= c->workspace_bytes;
        }
        for (; i < ns && starts[i].t == t; i++) {
            if (starts[i].op & COPY_BIT) {
                act_bytes += copies[starts[i].op & ~COPY_BIT].bytes;
                continue;
            }
            const tl_op op_rec = timeline_op(tl, starts[i].op), *op = &op_rec;
            const stage_cost *c = op_cost(in, op);
            int first = combined_has(comb.first, comb.nfirst, op);
            int second = combined_has(comb.second, comb.nsecond, op);
            if (op->kind == OP_F && !first) act_chunks++;
            if (second && op->kind == OP_BW) act_chunks--;
            if (!c) continue;
            double alloc = alloc_bytes(in, c, op, fused);
            act_bytes += first ? combined_lead_bytes(c, alloc) : alloc;
            if (second) act_bytes -= release_bytes(in, c, op);
            ws_bytes += c->workspace_bytes;
        }
        fn(ctx, rank, t, act_bytes, ws_bytes, (double)act_chunks / v);
    }
    free(comb.first);
    free(comb.second);
}

static int stages_per_rank(const metrics_input *in)
{
    return (in->sched && in->sched->v > 0) ? in->sched->v : 1;
}

void metrics_memory_walk(const metrics_input *in, metrics_memory_fn fn, void *ctx)
{
    int pp = rank_count(in);
    if (pp <= 0 || !in->tl) return;
    by_rank g, gc;
    group_by_rank(in->tl, pp, &g);
    group_records(in->tl, in->tl->ncopies, copy_rank, pp, &gc);
    size_t most = 0;
    for (int r = 0; r < pp; r++) {
        size_t n = g.first[r + 1] - g.first[r] + gc.first[r + 1] - gc.first[r];
        if (n > most) most = n;
    }
    ev *starts = pg_xmalloc((most ? most : 1) * sizeof *starts);
    ev *ends = pg_xmalloc((most ? most : 1) * sizeof *ends);
    for (int r = 0; r < pp; r++) {
        rank_records rr = { g.idx + g.first[r], g.first[r + 1] - g.first[r],
                            gc.idx + gc.first[r], gc.first[r + 1] - gc.first[r] };
        walk_rank(in, r, &rr, stages_per_rank(in), starts, ends, fn, ctx);
    }
    free(starts);
    free(ends);
    by_rank_free(&g);
    by_rank_free(&gc);
}

/* Peak tracking for metrics_compute's walk: the metrics it fills, and the
 * workload whose headroom turns live bytes into device memory. */
typedef struct metrics_walk_ctx {
    run_metrics *m;
    const workload *wl;
} metrics_walk_ctx;

static void track_peak(void *ctx, int rank, double t_s, double activation_bytes,
                       double workspace_bytes, double activations)
{
    rank_metrics *rm = &((metrics_walk_ctx *)ctx)->m->rank[rank];
    if (activations > rm->peak_activations) rm->peak_activations = activations;
    const metrics_walk_ctx *mw = ctx;
    double live = activation_bytes + workspace_bytes;
    double footprint = mw->wl ? memory_dynamic_footprint_bytes(mw->wl, live) : live;
    double total = rm->static_bytes + footprint;
    if (total > rm->peak_memory_bytes) {
        rm->peak_memory_bytes = total;
        rm->peak_time_s = t_s;
        rm->peak_activation_bytes = activation_bytes;
        rm->fragmentation_bytes = footprint - live;
    }
}

static double rank_static_bytes(const metrics_input *in, int rank)
{
    if (!in->sched || !in->wl || in->bytes_per_param <= 0) return 0.0;
    int *stages = pg_xmalloc(((size_t)in->sched->nstages + 1) * sizeof *stages);
    int n = 0;
    for (int s = 0; s < in->sched->nstages && s < in->wl->nstages; s++)
        if (in->sched->stage_rank[s] == rank) stages[n++] = s;
    double bytes = memory_static_bytes_sharded(in->wl, stages, n, in->bytes_per_param, &in->sharding);
    free(stages);
    return bytes;
}

static int rank_gpu_index(const metrics_input *in, int rank)
{
    int g = in->rank_gpu ? in->rank_gpu[rank] : rank;
    return (in->plat && g >= 0 && g < in->plat->ngpus) ? g : -1;
}

/* Times per rank: first start, last end, busy. */
static void rank_times(const timeline *tl, const by_rank *g, int r, rank_metrics *rm)
{
    size_t n = g->first[r + 1] - g->first[r];
    const size_t *idx = g->idx + g->first[r];
    for (size_t i = 0; i < n; i++) {
        const tl_op op_rec = timeline_op(tl, idx[i]), *op = &op_rec;
        if (i == 0 || op->start_s < rm->first_start) rm->first_start = op->start_s;
        if (i == 0 || op->end_s > rm->last_end) rm->last_end = op->end_s;
        rm->busy_s += op->end_s - op->start_s;
        if (op->kind == TL_OP_R || op->kind == TL_OP_RW) rm->recompute_s += op->end_s - op->start_s;
    }
    rm->span = n ? rm->last_end - rm->first_start : 0.0;
    /* A rank that never waits has busy == span up to the rounding of summing
     * its n ops (at most n ulps of the span): report that as no idle time, not
     * as -0.000 ns or 0.000 ns. */
    double rounding_s = (double)n * DBL_EPSILON * rm->span;
    rm->idle_s = rm->span - rm->busy_s > rounding_s ? rm->span - rm->busy_s : 0.0;
}

/* Samples, tokens and MFU over the pipeline's makespan. */
static void throughput(const metrics_input *in, run_metrics *out)
{
    /* Per training iteration (pipeline, all-reduce, optimizer), over every
     * data-parallel replica: what a training log reports. */
    double iter_s = out->iteration_s > 0 ? out->iteration_s : out->makespan_s;
    if (iter_s <= 0 || !in->sched || !in->wl) return;
    double samples = (double)in->sched->m * in->wl->micro_batch_size * (in->dp > 1 ? in->dp : 1);
    out->samples_per_s = samples / iter_s;
    out->tokens_per_s = out->samples_per_s * in->wl->seq_len;

    /* Every GPU of the job counts: a pipeline rank's GPU stands for the
     * tp x cp GPUs of its group in each of the dp replicas, and a stage's
     * fwd_flops is one of those GPUs' share (workload.h). */
    double gpus_per_rank = rank_gpus(in);
    double model_flops = 0, peak_flops_per_s = 0;
    for (int s = 0; s < in->wl->nstages; s++)
        model_flops += in->wl->stage[s].fwd_flops * gpus_per_rank *
                       (in->wl->stage[s].frozen_param_count > 0 ? FLOPS_PER_FWD_FLOP_FROZEN : FLOPS_PER_FWD_FLOP) *
                       in->sched->m;
    for (int r = 0; r < out->pp; r++) {
        int g = out->rank[r].gpu;
        if (g < 0 || in->plat->gpu[g].speed_flops <= 0) return;   /* unknown peak: MFU 0 */
        peak_flops_per_s += in->plat->gpu[g].speed_flops * gpus_per_rank;
    }
    if (model_flops > 0 && peak_flops_per_s > 0)
        out->mfu = model_flops / (iter_s * peak_flops_per_s);
}

/* PipeOffload's k of rank 0 (metrics.h). */
static void offload_k(const metrics_input *in, run_metrics *out)
{
    if (!in->offload || !in->sched || !in->wl || !in->plat || out->pp < 1) return;
    int g = out->rank[0].gpu;
    if (g < 0 || in->plat->gpu[g].host_bw <= 0 || in->plat->gpu[g].speed_flops <= 0) return;
    const pg_gpu *gpu = &in->plat->gpu[g];
    /* One (stage, microbatch) per stage, offloaded under the plan's recompute
     * choice of microbatch 0 (memplan with m = 1: choice of stage s is c[s]). */
    int n = in->wl->nstages;
    memplan one = { .nstages = n, .m = 1, .c = pg_xcalloc((size_t)n, sizeof *one.c) };
    double bytes = 0, copies = 0, ref_s = 0;
    for (int s = 0; s < n && s < in->sched->nstages; s++) {
        if (in->sched->stage_rank[s] != 0) continue;
        if (in->plan && in->plan->m > 0) one.c[s] = plan_get(in->plan, s, 0);
        one.c[s].offload = 1;
        act_flow f;
        act_flow_of(in->wl, &one, s, 0, &f);
        if (f.offload_bytes > 0) {
            bytes += COPIES_PER_ROUND_TRIP * f.offload_bytes;
            copies += COPIES_PER_ROUND_TRIP;
        }
        const stage_cost *c = &in->wl->stage[s];
        ref_s += c->f_s + c->b_s + c->w_s;
    }
    free(one.c);
    double share = in->tp_time_share > 0 ? in->tp_time_share : 1.0;
    double speed = in->wl->ref_speed_flops > 0 ? in->wl->ref_speed_flops / gpu->speed_flops : 1.0;
    double compute_s = ref_s * share * speed;
    if (compute_s <= 0) return;
    double shared_bw = gpu->host_shared_bw > 0 ? gpu->host_shared_bw : gpu->host_bw;
    out->offload_k = (copies * gpu->host_latency_s + bytes / gpu->host_bw) / compute_s;
    out->offload_k_shared = (copies * gpu->host_latency_s + bytes / shared_bw) / compute_s;
    out->has_offload_k = 1;
}

static int interval_start_cmp(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Per rank: bytes each way, busy time of each engine and of the link
 * (union of both engines' intervals), stall time. */
static void copy_stats(const timeline *tl, run_metrics *out)
{
    by_rank gc;
    group_records(tl, tl->ncopies, copy_rank, out->pp, &gc);
    size_t most = 0;
    for (int r = 0; r < out->pp; r++)
        if (gc.first[r + 1] - gc.first[r] > most) most = gc.first[r + 1] - gc.first[r];
    double *iv = pg_xmalloc((2 * most + 2) * sizeof *iv);
    for (int r = 0; r < out->pp; r++) {
        rank_metrics *rm = &out->rank[r];
        size_t n = gc.first[r + 1] - gc.first[r];
        for (size_t i = 0; i < n; i++) {
            const tl_copy *cp = &tl->copies[gc.idx[gc.first[r] + i]];
            if (cp->dir == COPY_D2H) {
                rm->offload_bytes += cp->bytes;
                rm->d2h_busy_s += cp->end_s - cp->start_s;
            } else {
                rm->reload_bytes += cp->bytes;
                rm->h2d_busy_s += cp->end_s - cp->start_s;
            }
            iv[2 * i] = cp->start_s;
            iv[2 * i + 1] = cp->end_s;
        }
        qsort(iv, n, 2 * sizeof *iv, interval_start_cmp);
        double until = 0;
        for (size_t i = 0; i < n; i++) {
            double a = iv[2 * i], b = iv[2 * i + 1];
            if (i == 0 || a > until) {
                rm->pcie_busy_s += b - a;
                until = b;
            } else if (b > until) {
                rm->pcie_busy_s += b - until;
                until = b;
            }
        }
    }
    free(iv);
    by_rank_free(&gc);
    for (size_t i = 0; i < tl->nstalls; i++) {
        const tl_stall *sl = &tl->stalls[i];
        if (sl->rank >= 0 && sl->rank < out->pp) out->rank[sl->rank].stall_s += sl->end_s - sl->start_s;
    }
}

/* Host memory of each node: a D2H copy holds its bytes there from its start
 * to the end of the H2D copy that brings them back. */
/* The plan's chosen offloads against the copies that ran (metrics.h). */
static void offload_counts(const metrics_input *in, run_metrics *out)
{
    if (!in->plan) return;
    out->offloads_chosen = in->plan->noffload + in->plan->nlifespan_skipped;
    for (size_t i = 0; i < in->tl->ncopies; i++)
        out->offloads_copied += in->tl->copies[i].dir == COPY_D2H;
}

typedef struct host_ev {
    int host;
    double t;
    double delta;
} host_ev;

static int host_ev_cmp(const void *a, const void *b)
{
    const host_ev *x = a, *y = b;
    if (x->host != y->host) return x->host < y->host ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return (x->delta > y->delta) - (x->delta < y->delta);   /* releases first */
}

/* Host memory held over time, per node.  The timeline records one GPU of
 * each pipeline rank; every GPU of the rank's block (its tp x cp group in
 * each data-parallel replica: GPUs rank_gpu[r] .. + tp cp dp - 1, Megatron
 * order) offloads the same bytes at the same times (the simulator runs the
 * replicas alike), each into its own node's host memory. */
static void host_memory(const metrics_input *in, run_metrics *out)
{
    if (!in->plat || in->plat->ncpus <= 0) return;
    out->nhosts = in->plat->ncpus;
    out->host_peak_bytes = pg_xcalloc((size_t)out->nhosts, sizeof *out->host_peak_bytes);
    out->host_capacity_bytes = pg_xcalloc((size_t)out->nhosts, sizeof *out->host_capacity_bytes);
    out->host_oom = pg_xcalloc((size_t)out->nhosts, sizeof *out->host_oom);
    for (int h = 0; h < out->nhosts; h++) out->host_capacity_bytes[h] = in->plat->cpu_memory_bytes[h];
    const timeline *tl = in->tl;
    if (tl->ncopies == 0) return;
    int block = rank_gpus(in);
    host_ev *hev = pg_xmalloc(tl->ncopies * (size_t)block * sizeof *hev);
    size_t n = 0;
    for (size_t i = 0; i < tl->ncopies; i++) {
        const tl_copy *cp = &tl->copies[i];
        if (cp->rank < 0 || cp->rank >= out->pp || out->rank[cp->rank].gpu < 0) continue;
        for (int k = 0; k < block; k++) {
            int g = out->rank[cp->rank].gpu + k;
            int h = g < in->plat->ngpus ? in->plat->gpu[g].cpu_index : -1;
            if (h < 0 || h >= out->nhosts) continue;
            hev[n++] = cp->dir == COPY_D2H ? (host_ev){h, cp->start_s, cp->bytes} : (host_ev){h, cp->end_s, -cp->bytes};
        }
    }
    qsort(hev, n, sizeof *hev, host_ev_cmp);
    double held = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && hev[i].host != hev[i - 1].host) held = 0;
        held += hev[i].delta;
        if (held > out->host_peak_bytes[hev[i].host]) out->host_peak_bytes[hev[i].host] = held;
    }
    for (int h = 0; h < out->nhosts; h++)
        if (out->host_capacity_bytes[h] > 0 && out->host_peak_bytes[h] > out->host_capacity_bytes[h])
            out->host_oom[out->nhost_oom++] = h;
    free(hev);
}

static int rank_listed(const run_metrics *m, int r)
{
    for (int i = 0; i < m->noom; i++)
        if (m->oom[i] == r) return 1;
    return 0;
}

/* Ranks that offload to an over-full host memory are out of memory too. */
static void host_oom_ranks(const metrics_input *in, run_metrics *out)
{
    for (int i = 0; i < out->nhost_oom; i++) {
        for (int r = 0; r < out->pp; r++) {
            int g = out->rank[r].gpu;
            if (g >= 0 && in->plat->gpu[g].cpu_index == out->host_oom[i] && out->rank[r].offload_bytes > 0 &&
                !rank_listed(out, r))
                out->oom[out->noom++] = r;
        }
    }
}

/* Iteration time and its breakdown from the collective records (metrics.h). */
static void iteration_breakdown(const timeline *tl, double first_start, run_metrics *out)
{
    double pipeline_end = first_start + out->makespan_s, reduce_end = 0, embed_end = 0, opt_end = 0, gather_end = 0;
    double *busy = pg_xcalloc((size_t)out->pp + 1, sizeof *busy);
    double *tp_s = pg_xcalloc((size_t)out->pp + 1, sizeof *tp_s);
    double *ep_s = pg_xcalloc((size_t)out->pp + 1, sizeof *ep_s);
    double *cp_s = pg_xcalloc((size_t)out->pp + 1, sizeof *cp_s);
    double *gather = pg_xcalloc((size_t)out->pp + 1, sizeof *gather);
    for (size_t i = 0; i < tl->ncolls; i++) {
        const tl_coll *c = &tl->colls[i];
        int r = c->rank >= 0 && c->rank < out->pp ? c->rank : -1;
        switch (c->kind) {
        case TLC_PIPELINE:
            if (c->end_s > pipeline_end) pipeline_end = c->end_s;
            break;
        case TLC_DP_ALLREDUCE:
        case TLC_DP_REDUCE_SCATTER:
            if (c->end_s > reduce_end) reduce_end = c->end_s;
            if (r >= 0) busy[r] += c->end_s - c->start_s;
            out->dp_buckets++;
            break;
        case TLC_DP_ALLGATHER:
            if (c->end_s > gather_end) gather_end = c->end_s;
            if (r >= 0) gather[r] += c->end_s - c->start_s;
            break;
        case TLC_EMBED_ALLREDUCE:
            if (c->end_s > embed_end) embed_end = c->end_s;
            break;
        case TLC_OPTIMIZER:
            if (c->end_s > opt_end) opt_end = c->end_s;
            if (c->end_s - c->start_s > out->optimizer_s) out->optimizer_s = c->end_s - c->start_s;
            break;
        case TLC_EP_ALLTOALL:
            if (r >= 0 && c->replica == 0) ep_s[r] += c->end_s - c->start_s;
            break;
        case TLC_CP_KV:
            if (r >= 0 && c->replica == 0) cp_s[r] += c->end_s - c->start_s;
            break;
        default:
            if (r >= 0 && c->replica == 0) tp_s[r] += c->end_s - c->start_s;
            break;
        }
    }
    out->pipeline_s = pipeline_end - first_start;
    out->dp_allreduce_s = reduce_end > pipeline_end ? reduce_end - pipeline_end : 0.0;
    double reduced = pipeline_end + out->dp_allreduce_s;   /* the embedding's sum starts after the reduction */
    out->embed_allreduce_s = embed_end > reduced ? embed_end - reduced : 0.0;
    for (int r = 0; r < out->pp; r++) {
        if (busy[r] > out->dp_allreduce_busy_s) out->dp_allreduce_busy_s = busy[r];
        if (tp_s[r] > out->tp_comm_s) out->tp_comm_s = tp_s[r];
        if (ep_s[r] > out->ep_comm_s) out->ep_comm_s = ep_s[r];
        if (cp_s[r] > out->cp_comm_s) out->cp_comm_s = cp_s[r];
        if (gather[r] > out->dp_allgather_busy_s) out->dp_allgather_busy_s = gather[r];
    }
    free(gather);
    free(ep_s);
    free(cp_s);
    /* The optimizer starts at the synchronisation: its end is the
     * iteration's, or the parameter all-gather's after it. */
    double end = opt_end > 0 ? opt_end : reduced + out->embed_allreduce_s;
    if (gather_end > end) {
        out->optimizer_s += gather_end - end;
        end = gather_end;
    }
    out->iteration_s = end - first_start;
    free(busy);
    free(tp_s);
}

void metrics_compute(const metrics_input *in, run_metrics *out)
{
    memset(out, 0, sizeof *out);
    int pp = rank_count(in);
    out->pp = pp > 0 ? pp : 0;
    out->rank = pg_xcalloc(out->pp ? (size_t)out->pp : 1, sizeof *out->rank);
    out->oom = pg_xcalloc(out->pp ? (size_t)out->pp : 1, sizeof *out->oom);
    if (out->pp == 0 || !in->tl) return;

    const timeline *tl = in->tl;
    double first_start = 0, last_end = 0;
    for (size_t i = 0; i < tl->nops; i++) {
        tl_op op = timeline_op(tl, i);
        if (i == 0 || op.start_s < first_start) first_start = op.start_s;
        if (i == 0 || op.end_s > last_end) last_end = op.end_s;
    }
    out->makespan_s = last_end - first_start;

    by_rank g;
    group_by_rank(tl, out->pp, &g);
    for (int r = 0; r < out->pp; r++) {
        rank_metrics *rm = &out->rank[r];
        memset(rm, 0, sizeof *rm);
        rank_times(tl, &g, r, rm);
        out->total_busy_s += rm->busy_s;
        if (rm->span > out->span) {
            out->span = rm->span;
            out->span_rank = r;
        }
        rm->gpu = rank_gpu_index(in, r);
        rm->capacity_bytes = in->capacity_override_bytes > 0 ? in->capacity_override_bytes
                             : rm->gpu >= 0 ? in->plat->gpu[rm->gpu].memory_bytes : 0.0;
        rm->static_bytes = rank_static_bytes(in, r);
        if (in->wl && rm->static_bytes > 0) {   /* a rank that holds a stage holds the headroom */
            rm->cuda_context_bytes = in->wl->headroom.cuda_context_bytes;
            rm->nccl_bytes = in->wl->headroom.nccl_bytes;
            rm->reserved_bytes = in->wl->headroom.reserved_bytes;
        }
        rm->peak_memory_bytes = rm->static_bytes;
        rm->peak_time_s = rm->first_start;
    }
    by_rank_free(&g);
    if (in->sched != NULL && in->sched->pp == out->pp) {
        bubble_breakdown *why = pg_xcalloc((size_t)out->pp, sizeof *why);
        bubbles_compute(in->sched, tl, why);
        for (int r = 0; r < out->pp; r++)
            out->rank[r].bubbles = why[r];
        free(why);
    }

    metrics_walk_ctx walk = {out, in->wl};
    metrics_memory_walk(in, track_peak, &walk);

    for (int r = 0; r < out->pp; r++) {
        const rank_metrics *rm = &out->rank[r];
        if (rm->capacity_bytes > 0 && rm->peak_memory_bytes > rm->capacity_bytes) out->oom[out->noom++] = r;
    }
    copy_stats(tl, out);
    offload_counts(in, out);
    host_memory(in, out);
    host_oom_ranks(in, out);
    if (out->span > 0)
        out->bubble_ratio = out->rank[out->span_rank].idle_s / out->span;
    if (out->makespan_s > 0 && out->pp > 0) {
        double idle_s = 0.0;
        for (int r = 0; r < out->pp; r++)
            idle_s += out->makespan_s - out->rank[r].busy_s;
        out->pipeline_bubble_ratio = idle_s / (out->pp * out->makespan_s);
    }
    iteration_breakdown(tl, first_start, out);
    out->overhead_s = in->iter_overhead_s;
    out->iteration_s += out->overhead_s;
    throughput(in, out);
    offload_k(in, out);
}

void metrics_free(run_metrics *m)
{
    free(m->rank);
    free(m->oom);
    free(m->host_peak_bytes);
    free(m->host_capacity_bytes);
    free(m->host_oom);
    m->rank = NULL;
    m->oom = NULL;
    m->noom = 0;
    m->host_peak_bytes = m->host_capacity_bytes = NULL;
    m->host_oom = NULL;
    m->nhosts = m->nhost_oom = 0;
}
