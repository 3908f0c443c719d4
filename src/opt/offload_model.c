/* offload_model.c: the planner's instance, its greedy and its timing
 * (offload_internal.h).
 *
 * Bytes and seconds of each option come from the simulator's own accounting
 * (act_flow_of on a plan holding that one choice), and the copy windows from
 * the engine's rules (sim/engine.c's header), so the planner and the
 * simulation it is judged by disagree only where the model must approximate
 * (queueing of copies, idle time).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/costmodel.h"
#include "model/memory.h"
#include "opt/offload_internal.h"
#include "sim/actmem.h"

/* PCIe per direction when neither the experiment nor the GPU type says
 * (PCIe Gen4 x16: 32 GB/s). */
#define DEFAULT_PCIE_BW 32e9
/* GPU-to-GPU bandwidth when the GPU type is unknown (the ideal network's
 * messages carry no bytes anyway). */
#define DEFAULT_P2P_BW 100e9
/* GPUs behind one PCIe-switch uplink on the shipped platforms and the
 * generated clusters (model/cluster.c): 2k and 2k+1. */
#define GPUS_PER_UPLINK 2
/* PCIe latency of the generated platforms (model/cluster.c). */
#define PCIE_LATENCY_S 1e-6
/* The engine skips an offload whose window is under this many copy times. */
#define SKIP_WINDOW_COPIES 2.0
/* Greedy: an offload costs this fraction of its copy time (copies overlap
 * compute; the fraction makes longer copies a little dearer). */
#define GREEDY_COPY_WEIGHT 0.05
#define BYTES_EPS 1.0

static const plan_choice OPTION_CHOICE[OPT_COUNT] = {
    [OPT_KEEP] = {0, PLAN_FWD_KEEP, PLAN_BWD_KEEP},     [OPT_SEL] = {0, PLAN_FWD_SELECTIVE, PLAN_BWD_KEEP},
    [OPT_FULL] = {0, PLAN_FWD_FULL, PLAN_BWD_KEEP},     [OPT_OFF] = {1, PLAN_FWD_KEEP, PLAN_BWD_KEEP},
    [OPT_OFF_SEL] = {1, PLAN_FWD_SELECTIVE, PLAN_BWD_KEEP}, [OPT_OFF_FULL] = {1, PLAN_FWD_FULL, PLAN_BWD_KEEP},
};

/* The platform GPU a pipeline rank runs on. */
static const pg_gpu *rank_host_gpu(const offload_plan_input *in, int rank)
{
    return &in->plat->gpu[in->rank_gpu[rank]];
}

static const gpu_system *gpu_of(const offload_plan_input *in, int rank)
{
    const pg_gpu *g = rank_host_gpu(in, rank);
    return g->type[0] ? gpu_system_find(g->type) : NULL;
}

/* With cluster.host_link=measured (cluster.c): the GPU type's measured host
 * link from its profile, bytes/s; 0 where it does not apply. */
static int measured_link(const offload_plan_input *in, double *bw, pg_status *st)
{
    *bw = 0;
    if (in->exp->network != NET_CLUSTER || !in->exp->cluster_host_link_measured || in->exp->cluster_pcie_bw > 0)
        return 0;
    gpu_params prof;
    int rc = gpu_host_link_load(in->exp->cluster_gpu, &prof, st);
    if (rc == 0)
        *bw = prof.host_link_bw;
    return rc;
}

/* Route bandwidth GPU -> host memory, uncontended: the platform's where it
 * lists the route (what the engine's copies and its skip rule get, from
 * SimGrid's route: on network=ideal next to free); else what the
 * experiment or the GPU type says. */
static double route_bw(const offload_plan_input *in, const off_model *md, int rank)
{
    const pg_gpu *g = rank_host_gpu(in, rank);
    if (g->host_bw > 0)
        return g->host_bw;
    if (in->exp->network == NET_CLUSTER && in->exp->cluster_pcie_bw > 0)
        return in->exp->cluster_pcie_bw;
    if (md->host_link_bw > 0) return md->host_link_bw / HOST_LINK_SOLO_SHARE;
    const gpu_system *gs = gpu_of(in, rank);
    return gs != NULL ? gs->pcie_bw : DEFAULT_PCIE_BW;
}

/* Its latency: the platform route's, else the generated platforms' PCIe. */
static double route_latency_s(const offload_plan_input *in, int rank)
{
    const pg_gpu *g = rank_host_gpu(in, rank);
    return g->host_bw > 0 ? g->host_latency_s : PCIE_LATENCY_S;
}

/* The PCIe-switch uplink's bandwidth (cluster.c: the route's rate, or twice
 * the measured paired rate). */
static double uplink_bw(const offload_plan_input *in, const off_model *md, int rank)
{
    return md->host_link_bw > 0 ? md->host_link_bw * GPUS_PER_UPLINK : route_bw(in, md, rank);
}

/* The job's GPUs behind rank's PCIe-switch uplink: every GPU of the job
 * copies (each holds its tp x cp share, every data-parallel replica runs
 * the plan), and the job runs on the platform's first tp x cp x dp x pp
 * GPUs (Megatron order, job/job.c). */
static int uplink_sharers(const offload_plan_input *in, int rank)
{
    const pg_gpu *g = rank_host_gpu(in, rank);
    const experiment *e = in->exp;
    long job_gpus = (long)in->sched->pp * (e->tp > 1 ? e->tp : 1) * (e->cp > 1 ? e->cp : 1) * (e->dp > 1 ? e->dp : 1);
    int n = 0;
    for (long i = 0; i < job_gpus && i < in->plat->ngpus; i++) {
        const pg_gpu *h = &in->plat->gpu[i];
        if (h->node == g->node && h->local_rank / GPUS_PER_UPLINK == g->local_rank / GPUS_PER_UPLINK)
            n++;
    }
    return n > 0 ? n : 1;
}

static double edge_comm_s(const offload_plan_input *in, int stage)
{
    const schedule *s = in->sched;
    if (stage + 1 >= s->nstages || s->stage_rank[stage] == s->stage_rank[stage + 1])
        return 0.0;
    if (in->exp->network == NET_IDEAL)
        return in->exp->ideal_latency_s;
    int a = s->stage_rank[stage], b = s->stage_rank[stage + 1];
    const pg_gpu *ga = rank_host_gpu(in, a), *gb = rank_host_gpu(in, b);
    const gpu_system *gs = gpu_of(in, a);
    if (gs == NULL)
        return workload_p2p_bytes(in->wl, stage, in->exp->tp) / DEFAULT_P2P_BW;
    /* the generated cluster's link rates (cluster.links), else the datasheet's */
    double nvlink_bw = gs->nvlink_bw, nic_bw = gs->nic_bw;
    if (in->exp->network == NET_CLUSTER)
        platform_cluster_gpu_bandwidths(in->exp, &nvlink_bw, &nic_bw);
    return workload_p2p_bytes(in->wl, stage, in->exp->tp) / (ga->node == gb->node ? nvlink_bw : nic_bw);
}

double off_item_mem(const off_item *it, int o, int i)
{
    if (i < it->f_idx || i >= it->c_idx)
        return 0.0;   /* outside F..consumer every option holds what keep holds (counted in keep_mem) */
    double b = it->f_alloc[o];
    if (it->off_bytes[o] > 0 && i >= it->out_from[o] && i < it->in_from[o])
        b -= it->off_bytes[o];
    return b;
}

/* Options of one item: bytes, seconds, windows; the engine's skip rule. */
static void item_options(const offload_plan_input *in, off_model *md, off_item *it, const double *before_s,
                         double scale, memplan *one)
{
    int r = it->rank;
    double bw = route_bw(in, md, r);
    double attn = memory_selective_bytes(&in->wl->stage[it->stage]);
    for (int o = 0; o < OPT_COUNT; o++) {
        plan_set(one, it->stage, it->mb, OPTION_CHOICE[o]);
        act_flow fl;
        act_flow_of(in->wl, one, it->stage, it->mb, &fl);
        it->f_alloc[o] = fl.f_alloc;
        it->off_bytes[o] = fl.offload_bytes;
        it->r_s[o] = fl.has_r ? fl.r_ref_s * scale : 0.0;
        it->allowed[o] = 1;
        int fwd = OPTION_CHOICE[o].fwd, off = OPTION_CHOICE[o].offload;
        if (fwd != PLAN_FWD_KEEP && !in->allow_recompute) it->allowed[o] = 0;
        if (fwd == PLAN_FWD_SELECTIVE && attn <= BYTES_EPS) it->allowed[o] = 0;
        if (fwd == PLAN_FWD_FULL && in->allow_recompute < 2) it->allowed[o] = 0;
        if (fwd == PLAN_FWD_FULL && fl.f_alloc >= in->wl->stage[it->stage].act_b_bytes - BYTES_EPS)
            it->allowed[o] = 0;   /* full recompute would free nothing */
        if (off) {
            double need_s = md->copy_lat_s[r] + fl.offload_bytes / bw;
            double window_s = before_s[it->c_idx] - before_s[it->f_idx + 1];
            if (!in->allow_offload || fl.offload_bytes <= BYTES_EPS || window_s < SKIP_WINDOW_COPIES * need_s) {
                it->allowed[o] = 0;
                it->off_bytes[o] = 0;
                continue;
            }
            it->copy_s[o] = md->copy_lat_s[r] + fl.offload_bytes / md->copy_bw[r];
            /* off the GPU from the first op that starts after the D2H can have ended with the uplink shared,
             * whatever the copy model of the timing: memory stays safe if the neighbours do copy at once */
            double shared_s = md->copy_lat_s[r] + fl.offload_bytes / md->shared_bw[r];
            int i = it->f_idx + 1;
            double acc = 0;
            while (i < it->c_idx && acc < shared_s)
                acc += md->dur[r][i++];
            it->out_from[o] = i;
            /* back from the engine's trigger op (uncontended need, at least one op ahead) */
            int j = it->c_idx;
            double ahead = 0;
            while (j - 1 > it->f_idx && (j == it->c_idx || ahead < need_s))
                ahead += md->dur[r][--j];
            it->in_from[o] = j;
            if (it->out_from[o] >= it->in_from[o])
                it->allowed[o] = 0;   /* frees memory during no op */
        }
    }
    plan_set(one, it->stage, it->mb, OPTION_CHOICE[OPT_KEEP]);
    it->allowed[OPT_KEEP] = 1;
}

/* The engine moves an earlier consumer's trigger to a later consumer's when
 * that one is earlier: take the earliest over later consumers (as if all
 * were offloaded), which can only count a reload sooner (conservative). */
static void monotone_triggers(off_model *md, int r)
{
    const schedule *s = md->s;
    int low = INT32_MAX;
    for (int i = s->nops[r] - 1; i >= 0; i--) {
        sched_op op = s->ops[r][i];
        if (op.kind != OP_B && op.kind != OP_BW)
            continue;
        off_item *it = off_item_at(md, op.stage, op.mb);
        int mine = INT32_MAX;
        for (int o = OPT_OFF; o < OPT_COUNT; o++) {
            if (!it->allowed[o]) continue;
            if (low < it->in_from[o])
                it->in_from[o] = low > it->f_idx + 1 ? low : it->f_idx + 1;
            if (it->out_from[o] >= it->in_from[o]) { it->allowed[o] = 0; continue; }
            if (it->in_from[o] < mine) mine = it->in_from[o];
        }
        if (mine < low) low = mine;
    }
}

static double rank_static(const offload_plan_input *in, int r)
{
    const schedule *s = in->sched;
    int *stages = pg_xmalloc(((size_t)s->nstages + 1) * sizeof *stages);
    int n = 0;
    for (int st = 0; st < s->nstages; st++)
        if (s->stage_rank[st] == r) stages[n++] = st;
    const experiment *e = in->exp;
    memory_sharding sh = memory_sharding_of(e);
    double b = memory_static_bytes_sharded(in->wl, stages, n, e->bytes_per_param, &sh);
    free(stages);
    return b;
}

int off_model_build(const offload_plan_input *in, off_model *md, pg_status *st)
{
    const schedule *s = in->sched;
    memset(md, 0, sizeof *md);
    md->s = s;
    md->pp = s->pp;
    md->m = s->m;
    md->nitems = s->nstages * s->m;
    md->items = pg_xcalloc((size_t)md->nitems + 1, sizeof *md->items);
    md->dur = pg_xcalloc((size_t)s->pp, sizeof *md->dur);
    md->room = pg_xcalloc((size_t)s->pp, sizeof *md->room);
    md->keep_mem = pg_xcalloc((size_t)s->pp, sizeof *md->keep_mem);
    md->comm_s = pg_xcalloc((size_t)s->nstages + 1, sizeof *md->comm_s);
    md->copy_bw = pg_xcalloc((size_t)s->pp, sizeof *md->copy_bw);
    md->shared_bw = pg_xcalloc((size_t)s->pp, sizeof *md->shared_bw);
    md->copy_lat_s = pg_xcalloc((size_t)s->pp, sizeof *md->copy_lat_s);
    for (int stage = 0; stage < s->nstages; stage++)
        md->comm_s[stage] = edge_comm_s(in, stage);
    int rc = measured_link(in, &md->host_link_bw, st);
    if (rc) {
        off_model_free(md);
        return rc;
    }
    memplan one;
    plan_init(&one, s);
    double total_s = 0;
    for (int r = 0; r < s->pp; r++) {
        const pg_gpu *g = rank_host_gpu(in, r);
        double cap = in->exp->memory_capacity_bytes > 0 ? in->exp->memory_capacity_bytes : g->memory_bytes;
        if (!(cap > 0)) {
            plan_free(&one);
            return pg_fail(st, PG_EXIT_INPUT, "offload=plan: rank %d (GPU %s) has no memory capacity; set "
                           "memory.capacity", r, g->host);
        }
        double scale = experiment_tp_share(in->exp) *
                       (in->wl->ref_speed_flops > 0 && g->speed_flops > 0 ? in->wl->ref_speed_flops / g->speed_flops
                                                                          : 1.0);
        md->shared_bw[r] = uplink_bw(in, md, r) / uplink_sharers(in, r);
        if (md->shared_bw[r] > route_bw(in, md, r)) md->shared_bw[r] = route_bw(in, md, r);
        md->copy_bw[r] = in->copy_uncontended ? route_bw(in, md, r) : md->shared_bw[r];
        md->copy_lat_s[r] = route_latency_s(in, r);
        int n = s->nops[r];
        md->dur[r] = pg_xcalloc((size_t)n + 1, sizeof **md->dur);
        md->room[r] = pg_xcalloc((size_t)n + 1, sizeof **md->room);
        md->keep_mem[r] = pg_xcalloc((size_t)n + 1, sizeof **md->keep_mem);
        double *before_s = pg_xcalloc((size_t)n + 2, sizeof *before_s);
        double stat = rank_static(in, r);
        for (int i = 0; i < n; i++) {
            sched_op op = s->ops[r][i];
            const stage_cost *c = &in->wl->stage[op.stage];
            md->dur[r][i] = actmem_op_ref_s(c, op.kind) * scale;
            before_s[i + 1] = before_s[i] + md->dur[r][i];
            md->room[r][i] = memory_dynamic_room_bytes(in->wl, cap - stat) - c->workspace_bytes;
            off_item *it = off_item_at(md, op.stage, op.mb);
            it->stage = op.stage;
            it->mb = op.mb;
            it->rank = r;
            if (op.kind == OP_F) it->f_idx = i;
            else if (op.kind == OP_B || op.kind == OP_BW) it->c_idx = it->w_idx = i;
            else if (op.kind == OP_W) it->w_idx = i;
        }
        total_s += before_s[n];
        for (int i = 0; i < n; i++) {
            sched_op op = s->ops[r][i];
            if (op.kind != OP_B && op.kind != OP_BW) continue;
            off_item *it = off_item_at(md, op.stage, op.mb);
            item_options(in, md, it, before_s, scale, &one);
            for (int o = 0; o < OPT_COUNT; o++)
                total_s += it->r_s[o] + 2 * it->copy_s[o];
        }
        monotone_triggers(md, r);
        /* keep: +M_B from F through the consumer, then (split) M_W through W */
        for (int i = 0; i < n; i++) {
            sched_op op = s->ops[r][i];
            if (op.kind != OP_F) continue;
            const stage_cost *c = &in->wl->stage[op.stage];
            off_item *it = off_item_at(md, op.stage, op.mb);
            it->full_bytes = c->act_b_bytes;
            for (int k = it->f_idx; k <= it->c_idx; k++)
                md->keep_mem[r][k] += c->act_b_bytes;
            for (int k = it->c_idx + 1; k <= it->w_idx; k++)
                md->keep_mem[r][k] += c->act_w_bytes;
        }
        free(before_s);
    }
    plan_free(&one);
    md->horizon_s = total_s * 2 + 1.0;
    for (int stage = 0; stage < s->nstages; stage++)
        md->horizon_s += md->comm_s[stage] * s->m * 2;
    return 0;
}

void off_model_free(off_model *md)
{
    for (int r = 0; r < md->pp && md->dur; r++) {
        free(md->dur[r]);
        free(md->room[r]);
        free(md->keep_mem[r]);
    }
    free(md->dur);
    free(md->room);
    free(md->keep_mem);
    free(md->items);
    free(md->comm_s);
    free(md->copy_bw);
    free(md->shared_bw);
    free(md->copy_lat_s);
    memset(md, 0, sizeof *md);
}

static double option_cost_s(const off_item *it, int o)
{
    return it->r_s[o] + GREEDY_COPY_WEIGHT * 2 * it->copy_s[o];
}

int off_greedy(const off_model *md, int *choice)
{
    const schedule *s = md->s;
    for (int k = 0; k < md->nitems; k++)
        choice[k] = OPT_KEEP;
    int fits = 1;
    for (int r = 0; r < s->pp; r++) {
        int n = s->nops[r];
        double *mem = pg_xcalloc((size_t)n + 1, sizeof *mem);
        memcpy(mem, md->keep_mem[r], (size_t)n * sizeof *mem);
        for (int i = 0; i < n; i++) {
            while (mem[i] > md->room[r][i]) {
                off_item *best = NULL;
                int best_o = OPT_KEEP;
                double best_score = 0, best_window = 0;
                /* live items at op i on this rank: F at or before i, consumer after i */
                for (int j = 0; j <= i; j++) {
                    sched_op op = s->ops[r][j];
                    if (op.kind != OP_F) continue;
                    off_item *it = off_item_at(md, op.stage, op.mb);
                    if (it->c_idx <= i) continue;
                    int cur = choice[it - md->items];
                    double now = off_item_mem(it, cur, i);
                    for (int o = 0; o < OPT_COUNT; o++) {
                        if (!it->allowed[o] || o == cur) continue;
                        double gain = now - off_item_mem(it, o, i);
                        if (gain <= BYTES_EPS) continue;
                        double extra = option_cost_s(it, o) - option_cost_s(it, cur);
                        double score = (extra > 0 ? extra : 0) / gain;
                        double window = it->off_bytes[o] > 0 ? it->in_from[o] - it->out_from[o] : 0;
                        if (best == NULL || score < best_score ||
                            (score == best_score && window > best_window)) {
                            best = it;
                            best_o = o;
                            best_score = score;
                            best_window = window;
                        }
                    }
                }
                if (best == NULL) { fits = 0; break; }
                int cur = choice[best - md->items];
                for (int k = best->f_idx; k < best->c_idx; k++)
                    mem[k] += off_item_mem(best, best_o, k) - off_item_mem(best, cur, k);
                choice[best - md->items] = best_o;
            }
        }
        free(mem);
    }
    return fits;
}

/* As-soon-as-possible replay of the fixed orders with copy engines. */
double off_eval(const off_model *md, const int *choice)
{
    const schedule *s = md->s;
    int pp = s->pp;
    size_t n = (size_t)md->nitems;
    double *f_end = pg_xcalloc(n + 1, sizeof *f_end), *b_end = pg_xcalloc(n + 1, sizeof *b_end);
    double *d2h_end = pg_xcalloc(n + 1, sizeof *d2h_end);
    unsigned char *f_done = pg_xcalloc(n + 1, 1), *b_done = pg_xcalloc(n + 1, 1);
    int *next = pg_xcalloc((size_t)pp, sizeof *next);
    double *clock = pg_xcalloc((size_t)pp, sizeof *clock), *d2h_free = pg_xcalloc((size_t)pp, sizeof *d2h_free);
    double *h2d_free = pg_xcalloc((size_t)pp, sizeof *h2d_free);
    double **start = pg_xcalloc((size_t)pp, sizeof *start);
    for (int r = 0; r < pp; r++)
        start[r] = pg_xcalloc((size_t)s->nops[r] + 1, sizeof **start);
    double makespan = 0;
    int progress = 1;
    while (progress) {
        progress = 0;
        for (int r = 0; r < pp; r++) {
            while (next[r] < s->nops[r]) {
                int i = next[r];
                sched_op op = s->ops[r][i];
                size_t k = (size_t)op.stage * (size_t)s->m + (size_t)op.mb;
                const off_item *it = &md->items[k];
                int o = choice[k];
                double ready = clock[r], dur = md->dur[r][i];
                if (op.kind == OP_F) {
                    if (op.stage > 0) {
                        size_t p = k - (size_t)s->m;
                        if (!f_done[p]) break;
                        double t = f_end[p] + md->comm_s[op.stage - 1];
                        if (t > ready) ready = t;
                    }
                } else if (op.kind == OP_B || op.kind == OP_BW) {
                    double t;
                    if (op.stage + 1 < s->nstages) {
                        size_t p = k + (size_t)s->m;
                        if (!b_done[p]) break;
                        t = b_end[p] + md->comm_s[op.stage];
                    } else {
                        if (!f_done[k]) break;
                        t = f_end[k];
                    }
                    if (t > ready) ready = t;
                    if (it->off_bytes[o] > 0) {   /* H2D after its D2H and its trigger, in consumer order */
                        double h = d2h_end[k];
                        double trig = start[r][it->in_from[o]];
                        if (trig > h) h = trig;
                        if (h2d_free[r] > h) h = h2d_free[r];
                        h += it->copy_s[o];
                        h2d_free[r] = h;
                        if (h > ready) ready = h;
                    }
                    dur += it->r_s[o];
                } else if (op.kind == OP_W) {
                    if (!b_done[k]) break;
                }
                start[r][i] = ready;
                clock[r] = ready + dur;
                if (clock[r] > makespan) makespan = clock[r];
                if (op.kind == OP_F) {
                    f_end[k] = clock[r];
                    f_done[k] = 1;
                    if (it->off_bytes[o] > 0) {
                        double d = d2h_free[r] > clock[r] ? d2h_free[r] : clock[r];
                        d2h_end[k] = d2h_free[r] = d + it->copy_s[o];
                    }
                } else if (op.kind == OP_B || op.kind == OP_BW) {
                    b_end[k] = clock[r];
                    b_done[k] = 1;
                }
                next[r]++;
                progress = 1;
            }
        }
    }
    for (int r = 0; r < pp; r++)
        free(start[r]);
    free(start);
    free(f_end); free(b_end); free(d2h_end); free(f_done); free(b_done);
    free(next); free(clock); free(d2h_free); free(h2d_free);
    return makespan;
}

void off_to_plan(const off_model *md, const int *choice, memplan *out)
{
    plan_init(out, md->s);
    for (int k = 0; k < md->nitems; k++) {
        const off_item *it = &md->items[k];
        plan_set(out, it->stage, it->mb, OPTION_CHOICE[choice[k]]);
    }
}
