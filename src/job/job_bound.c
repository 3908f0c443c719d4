/* job_bound.c: the lower bound of a job (seed 000), as `bound` prints it
 * and `run` reports it next to the simulated makespan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "job/job.h"
#include "model/costmodel.h"
#include "sim/actmem.h"
#include "util/units.h"

/* Per-stage times as the simulator runs them: profiled times scaled by the
 * reference speed over the speed of the GPU of the stage's rank (absolute
 * times when the workload has no reference speed, or no platform yet), and
 * by the share of a tp group's work one GPU runs (its tp collectives only
 * add time, so leaving them out keeps the bound valid). */
double job_stage_time_scale(const job *j, int stage)
{
    double scale = experiment_tp_share(&j->exp);
    if (j->have_plat && j->wl.ref_speed_flops > 0) {
        double speed = j->plat.gpu[j->rank_gpu[j->sched.stage_rank[stage]]].speed_flops;
        if (speed > 0)
            scale *= j->wl.ref_speed_flops / speed;
    }
    return scale;
}

static void stage_times(const job *j, job_bound *jb)
{
    const schedule *s = &j->sched;
    int S = s->nstages;
    jb->times = pg_xcalloc((size_t)S * 4, sizeof(double));
    double *f = jb->times, *b = f + S, *w = f + 2 * S, *wf = f + 3 * S;
    for (int i = 0; i < S; i++) {
        const stage_cost *c = &j->wl.stage[i];
        double scale = job_stage_time_scale(j, i);
        f[i] = c->f_s * scale;
        b[i] = c->b_s * scale;
        w[i] = c->w_s * scale;
        wf[i] = c->act_b_bytes > 0 ? c->act_w_bytes / c->act_b_bytes : 0.0;
    }
    const experiment *e = &j->exp;
    /* A real network only adds time to a dependency: latency 0 keeps the
     * bound valid there; network=ideal charges exactly its latency. */
    jb->in = (bound_input){.pp = s->pp, .nstages = S, .m = s->m, .stage_rank = s->stage_rank, .f = f, .b = b,
                           .w = w, .w_fraction = wf, .comm_s = e->network == NET_IDEAL ? e->ideal_latency_s : 0.0,
                           .mem_limit = e->memory_limit, .split = 1, .remat = e->recompute != RECOMPUTE_NONE};
}

int job_compute_bound(const job *j, job_bound *jb, pg_status *st)
{
    stage_times(j, jb);
    int rc = bound_lower(&jb->in, &jb->any, st);
    if (rc == 0) {
        bound_input own = jb->in;
        own.split = sched_is_split(&j->sched);
        rc = bound_lower(&own, &jb->cls, st);
    }
    /* bound_lower names the key (st->key); the experiment knows where it was set. */
    if (rc != 0)
        pg_status_locate(st, experiment_origin(&j->exp, st->key));
    return rc;
}

void job_bound_free(job_bound *jb)
{
    free(jb->times);
    memset(jb, 0, sizeof *jb);
}

/* The least of a per-route quantity over the edges of a ring over GPUs
 * g[0..n) of a generated cluster: `in_node` for an edge within a node
 * (NVLink), `across` between nodes (the NICs).  With the routes' bandwidths
 * it is the ring's slowest edge; with their latencies, what every step of
 * the ring lasts at least (a step ends when all its edges' transfers have). */
static double ring_min(const job *j, const int *g, int n, double in_node, double across)
{
    const platform_desc *p = &j->plat;
    double least = 0.0;
    for (int d = 0; d < n; d++) {
        double v = p->gpu[g[d]].node == p->gpu[g[(d + 1) % n]].node ? in_node : across;
        if (d == 0 || v < least)
            least = v;
    }
    return least;
}

/* Least seconds per byte of one all-reduce on the dp group of GPUs g[0..dp)
 * (dp order) of a generated cluster.  The ring's: every edge carries 2(n-1)/n
 * of the bytes, at most at its route's bandwidth; when the group has the same
 * number L > 1 of its GPUs on each of its nn > 1 nodes the simulator runs L
 * channel rings, one per NIC (collectives.h), at costmodel_ring_bw's rate.
 * With dp.algorithm=hierarchical also the hierarchical one's (a
 * reduce-scatter and an all-gather over NVLink, (L-1)/L of the bytes each,
 * around an all-reduce of bytes/L across nodes); whichever is less, so that
 * it holds whichever the simulation runs.  Latencies are left out. */
static double group_s_per_byte(const job *j, const int *g, int dp, double nvl_bw, double nic_bw)
{
    const platform_desc *p = &j->plat;
    int nn = 0, local = -1, even = 1;
    for (int d = 0; d < dp && even; d++) {
        int first = 1, count = 0;
        for (int k = 0; k < dp; k++) {
            if (p->gpu[g[k]].node != p->gpu[g[d]].node)
                continue;
            first = first && k >= d;
            count++;
        }
        if (!first)
            continue;   /* node counted at its first GPU */
        nn++;
        if (local < 0)
            local = count;
        even = count == local;
    }
    int channels = even && nn >= 2 && local >= 2;
    double rate = channels ? costmodel_ring_bw(nvl_bw, nic_bw, local, dp, 1) : ring_min(j, g, dp, nvl_bw, nic_bw);
    double ring = 2.0 * (dp - 1) / dp / rate;
    if ((dp_algo)j->exp.dp_algorithm != DP_ALGO_HIERARCHICAL || !channels)
        return ring;
    double hier = 2.0 * (local - 1) / local / nvl_bw + 2.0 * (nn - 1) / nn / local / nic_bw;
    return hier < ring ? hier : ring;
}

/* The generated cluster's NVLink and NIC rates, when the communication
 * bounds may use them: rates are known for network=cluster only (a platform
 * file's routes are SimGrid's to resolve); context parallelism is left to
 * the pipeline bound.  (DualPipeV's overlapped pairs still run each op's
 * compute and tp collectives one after the other, sim/expert.c: only the
 * expert all-to-alls, which no bound here counts, overlap.)  Returns 1 when
 * known. */
static int known_rates(const job *j, const job_parallel *jp, double *nvl_bw, double *nic_bw)
{
    const experiment *e = &j->exp;
    const sim_parallel *par = &jp->par;
    return jp->active && e->network == NET_CLUSTER && par->cp <= 1 && j->have_plat &&
           platform_cluster_gpu_bandwidths(e, nvl_bw, nic_bw) && *nvl_bw > 0 && *nic_bw > 0;
}

int job_tp_comm_bound(const job *j, const job_parallel *jp, double *stage_s)
{
    const sim_parallel *par = &jp->par;
    const schedule *s = &j->sched;
    double nvl_bw, nic_bw, nvl_lat_s, nic_lat_s;
    if (par->tp < 2 || !par->tp_comm || par->tp_in_ops || !known_rates(j, jp, &nvl_bw, &nic_bw) ||
        !platform_cluster_gpu_latencies(&j->exp, &nvl_lat_s, &nic_lat_s))
        return 0;
    int tp = par->tp, any = 0;
    int *group = pg_xcalloc((size_t)tp, sizeof *group);
    for (int st = 0; st < s->nstages; st++) {
        const stage_cost *c = &j->wl.stage[st];
        stage_s[st] = 0.0;
        if (!(c->tp_coll_bytes > 0))
            continue;
        int r = s->stage_rank[st];
        for (int t = 0; t < tp; t++)   /* replica 0's group of the rank */
            group[t] = par->gpu[(size_t)r * par->dp * tp + t];
        /* an all-reduce (or reduce-scatter + all-gather: the same bytes and
         * steps) puts 2(tp-1)/tp of its bytes on every ring edge, in
         * 2(tp-1) steps of at least the least route latency each */
        int count = SIM_TP_COLLS_PER_LAYER * (c->layers > 0 ? c->layers : 1);
        double steps = 2.0 * (tp - 1);
        stage_s[st] = count * (steps * ring_min(j, group, tp, nvl_lat_s, nic_lat_s) +
                               steps / tp * c->tp_coll_bytes / ring_min(j, group, tp, nvl_bw, nic_bw));
        any = 1;
    }
    free(group);
    return any;
}

double job_dp_allreduce_bound(const job *j, const job_parallel *jp, const bound_input *in, const double *tp_comm_s)
{
    const sim_parallel *par = &jp->par;
    double nvl_bw, nic_bw;
    if (par->dp < 2 || !(par->grad_bytes_per_param > 0) || !known_rates(j, jp, &nvl_bw, &nic_bw))
        return 0.0;
    const schedule *s = &j->sched;
    int S = s->nstages, dp = par->dp, tp = par->tp;
    double *stage_bytes = pg_xcalloc((size_t)S + 1, sizeof *stage_bytes);
    int *buckets = pg_xcalloc((size_t)S + 1, sizeof *buckets);
    double *spb = pg_xcalloc((size_t)s->pp + 1, sizeof *spb);
    int *group = pg_xcalloc((size_t)dp, sizeof *group);
    double share = par->split_compute ? 1.0 / tp : 1.0;   /* gradsync.c: a stage's gradient per GPU */
    for (int st = 0; st < S; st++) {
        stage_bytes[st] = stage_trainable_params(&j->wl.stage[st]) * share * par->grad_bytes_per_param;
        buckets[st] = units_pieces(stage_bytes[st], par->bucket_bytes);
    }
    /* all tp groups of a rank reduce each bucket at once: the slowest bounds it */
    for (int r = 0; r < s->pp; r++)
        for (int t = 0; t < tp; t++) {
            for (int d = 0; d < dp; d++)
                group[d] = par->gpu[((size_t)r * dp + d) * tp + t];
            double x = group_s_per_byte(j, group, dp, nvl_bw, nic_bw);
            if (x > spb[r])
                spb[r] = x;
        }
    bound_dp_input in_dp = {.overlap = par->overlap, .stage_bytes = stage_bytes, .stage_buckets = buckets,
                            .rank_s_per_byte = spb, .stage_op_comm_s = tp_comm_s};
    double end_s = bound_dp_allreduce_end(in, &in_dp);
    free(group);
    free(spb);
    free(buckets);
    free(stage_bytes);
    return end_s;
}

int job_recompute_bound(job *j, double *stage_s)
{
    const experiment *e = &j->exp;
    /* the planners choose per activation (and take long to ask) */
    if (e->recompute == RECOMPUTE_NONE || e->recompute == RECOMPUTE_PLAN || e->offload == OFFLOAD_PLAN)
        return 0;
    memplan plan;
    pg_status st;
    pg_status_clear(&st);
    if (job_build_plan(j, &plan, &st) != 0)
        return 0;
    const schedule *s = &j->sched;
    int any = 0;
    for (int stage = 0; stage < s->nstages; stage++) {
        double least_ref_s = -1.0;
        for (int mb = 0; mb < s->m; mb++) {
            act_flow fl;
            act_flow_of(&j->wl, plan_is_empty(&plan) ? NULL : &plan, stage, mb, &fl);
            double r_ref_s = fl.has_r ? fl.r_ref_s : 0.0;
            if (least_ref_s < 0 || r_ref_s < least_ref_s)
                least_ref_s = r_ref_s;
        }
        stage_s[stage] = least_ref_s > 0 ? least_ref_s * job_stage_time_scale(j, stage) : 0.0;
        any |= stage_s[stage] > 0;
    }
    plan_free(&plan);
    return any;
}

int job_costed_bound_compute(job *j, const bound_input *in0, job_costed_bound *out)
{
    memset(out, 0, sizeof *out);
    bound_input in = *in0;
    pg_status bst;
    pg_status_clear(&bst);
    job_parallel jp;
    memset(&jp, 0, sizeof jp);
    int have_par = job_build_parallel(j, &jp, &bst) == 0;
    /* The optimizer step starts at the synchronisation after the pipeline
     * and the all-reduce (sim/metrics.c): the shortest rank's step. */
    if (have_par && jp.optimizer_s != NULL) {
        double step_s = INFINITY;
        for (int r = 0; r < j->sched.pp; r++)
            if (jp.optimizer_s[r] < step_s)
                step_s = jp.optimizer_s[r];
        out->step_s = step_s >= 0.0 && isfinite(step_s) ? step_s : 0.0;
    }
    /* On top of the ops' compute: the tp collectives every F and B runs
     * after it, at the least their links allow, and the recomputation every
     * B (BW) runs before it. */
    int S = in.nstages;
    double *tp_s = pg_xcalloc((size_t)S * 5 + 1, sizeof *tp_s), *r_s = tp_s + S, *f_s = tp_s + 2 * S,
           *b_s = tp_s + 3 * S, *around_b_s = tp_s + 4 * S;
    int with_tp = have_par && job_tp_comm_bound(j, &jp, tp_s);
    int with_r = job_recompute_bound(j, r_s);
    for (int k = 0; k < S; k++) {
        f_s[k] = in.f[k] + tp_s[k];
        around_b_s[k] = tp_s[k] + r_s[k];
        b_s[k] = in.b[k] + around_b_s[k];
    }
    bound_result res;
    int rc = bound_lower(&in, &res, &bst);   /* compute alone */
    double compute_s = rc == 0 ? res.lower_bound : 0.0;
    in.f = f_s;
    in.b = b_s;
    pg_status_clear(&bst);
    if (rc == 0)
        rc = bound_lower(&in, &res, &bst);
    if (rc == 0 && res.lower_bound > 0) {
        out->makespan_s = res.lower_bound;
        out->compute_s = compute_s;
        if (have_par)
            out->reduce_end_s = job_dp_allreduce_bound(j, &jp, &in, with_tp || with_r ? around_b_s : NULL);
        out->rank_least_s = pg_xcalloc((size_t)j->sched.pp, sizeof *out->rank_least_s);
        for (int k = 0; k < S; k++)
            out->rank_least_s[j->sched.stage_rank[k]] += in.m * (f_s[k] + b_s[k] + in.w[k]);
    } else {
        out->step_s = 0.0;
        rc = rc != 0 ? rc : PG_EXIT_INTERNAL;
    }
    job_parallel_free(&jp);
    free(tp_s);
    return rc;
}

void job_costed_bound_free(job_costed_bound *cb)
{
    free(cb->rank_least_s);
    memset(cb, 0, sizeof *cb);
}
