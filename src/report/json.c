/* json.c: the machine-readable result, exactly one JSON object.
 *
 * Top level: what ran (schedule, pp, microbatches; with an experiment its
 * configuration: tp, dp, ep, cp, micro_batch_size, the effective
 * global_batch_size, recompute, offload, precision, attention), the
 * contract's fields (makespan, span, stage_span[], ..., offload_k: null
 * without an offload policy; offload_k_shared beside it, metrics.h),
 * each per-rank quantity also as a flat array indexed by rank (what scripts
 * plot), then "ranks" with one object per rank for everything else, and
 * "simulator" with the engine's statistics.  Numbers go through
 * sb_append_json_number (shortest round trip; non-finite becomes null).
 */
#include "report/report.h"

#include <stddef.h>

#include "report/report_util.h"

/* Members go through the report layer's one JSON object writer (rpt_json). */

/* An array of one double field of rank_metrics, by rank. */
static void rank_array(rpt_json *w, const char *k, const run_metrics *m, size_t offset)
{
    rpt_json_key(w, k);
    sb_append(w->sb, "[");
    for (int r = 0; r < m->pp; r++) {
        sb_append(w->sb, r ? "," : "");
        sb_append_json_number(w->sb, *(const double *)((const char *)&m->rank[r] + offset));
    }
    sb_append(w->sb, "]");
}

static int rank_is_oom(const run_metrics *m, int r)
{
    for (int i = 0; i < m->noom; i++)
        if (m->oom[i] == r) return 1;
    return 0;
}

static void rank_object(const report_input *in, int r, strbuf *sb)
{
    const rank_metrics *rm = &in->m->rank[r];
    rpt_json w = { sb, 1 };
    sb_append(sb, "{");
    rpt_json_int(&w, "rank", r);
    rpt_json_int(&w, "gpu", rm->gpu);
    rpt_json_str(&w, "host", rpt_rank_host(in, r));
    if (in->plat && rm->gpu >= 0) rpt_json_str(&w, "gpu_type", in->plat->gpu[rm->gpu].type);
    rpt_json_key(&w, "bubbles");
    {
        const bubble_breakdown *b = &rm->bubbles;
        rpt_json inner = {sb, 1};
        sb_append(sb, "{");
        rpt_json_num(&inner, "warmup_seconds", b->warmup_s);
        rpt_json_num(&inner, "cooldown_seconds", b->cooldown_s);
        rpt_json_num(&inner, "steady_seconds", b->steady_s);
        rpt_json_num(&inner, "comm_seconds", b->comm_s);
        rpt_json_num(&inner, "reload_seconds", b->reload_s);
        sb_append(sb, "}");
    }
    if (in->sched) {
        rpt_json_key(&w, "stages");
        sb_append(sb, "[");
        int n = 0;
        for (int s = 0; s < in->sched->nstages; s++)
            if (in->sched->stage_rank[s] == r) sb_appendf(sb, "%s%d", n++ ? "," : "", s);
        sb_append(sb, "]");
        if (in->sched->nops && r < in->sched->pp) rpt_json_int(&w, "ops", in->sched->nops[r]);
    }
    rpt_json_num(&w, "first_start", rm->first_start);
    rpt_json_num(&w, "last_end", rm->last_end);
    rpt_json_num(&w, "span", rm->span);
    rpt_json_num(&w, "busy_seconds", rm->busy_s);
    rpt_json_num(&w, "idle_seconds", rm->idle_s);
    rpt_json_num(&w, "bubble_ratio", rpt_rank_bubble(rm));
    rpt_json_num(&w, "peak_activations", rm->peak_activations);
    rpt_json_num(&w, "peak_memory_bytes", rm->peak_memory_bytes);
    rpt_json_num(&w, "peak_time", rm->peak_time_s);
    rpt_json_key(&w, "peak_breakdown");
    {
        rpt_json b = { sb, 1 };
        sb_append(sb, "{");
        rpt_json_num(&b, "static_bytes", rm->static_bytes);
        rpt_json_num(&b, "activation_bytes", rm->peak_activation_bytes);
        rpt_json_num(&b, "workspace_bytes", rm->peak_memory_bytes - rm->static_bytes - rm->peak_activation_bytes);
        sb_append(sb, "}");
    }
    /* the contract keeps peak_breakdown's three parts (their sum is the
     * peak): the headroom's context, NCCL and reserved bytes are in its
     * static_bytes, its fragmentation in workspace_bytes; said here */
    rpt_json_key(&w, "headroom");
    {
        rpt_json h = { sb, 1 };
        sb_append(sb, "{");
        rpt_json_num(&h, "cuda_context_bytes", rm->cuda_context_bytes);
        rpt_json_num(&h, "nccl_bytes", rm->nccl_bytes);
        rpt_json_num(&h, "fragmentation_bytes", rm->fragmentation_bytes);
        rpt_json_num(&h, "reserved_bytes", rm->reserved_bytes);
        sb_append(sb, "}");
    }
    rpt_json_num(&w, "reserved_bytes", rm->reserved_bytes);
    rpt_json_num(&w, "capacity_bytes", rm->capacity_bytes);
    rpt_json_bool(&w, "oom", rank_is_oom(in->m, r));
    rpt_json_num(&w, "recompute_seconds", rm->recompute_s);
    rpt_json_num(&w, "offload_bytes", rm->offload_bytes);
    rpt_json_num(&w, "reload_bytes", rm->reload_bytes);
    rpt_json_num(&w, "d2h_busy_seconds", rm->d2h_busy_s);
    rpt_json_num(&w, "h2d_busy_seconds", rm->h2d_busy_s);
    rpt_json_num(&w, "pcie_busy_seconds", rm->pcie_busy_s);
    rpt_json_num(&w, "offload_stall_seconds", rm->stall_s);
    sb_append(sb, "}");
}

/* The iteration's breakdown (metrics.h): pipeline + exposed dp all-reduce +
 * tied embedding's all-reduce + optimizer = iteration_seconds, plus the tp / dp collective totals. */
static void iteration(const run_metrics *m, rpt_json *w)
{
    rpt_json_key(w, "iteration");
    rpt_json it = { w->sb, 1 };
    sb_append(w->sb, "{");
    rpt_json_num(&it, "pipeline_seconds", m->pipeline_s);
    rpt_json_num(&it, "dp_allreduce_seconds", m->dp_allreduce_s);
    rpt_json_num(&it, "embedding_allreduce_seconds", m->embed_allreduce_s);
    rpt_json_num(&it, "optimizer_seconds", m->optimizer_s);
    rpt_json_num(&it, "overhead_seconds", m->overhead_s);
    rpt_json_num(&it, "dp_param_allgather_seconds", m->dp_allgather_busy_s);
    rpt_json_num(&it, "dp_allreduce_busy_seconds", m->dp_allreduce_busy_s);
    rpt_json_int(&it, "dp_buckets", m->dp_buckets);
    rpt_json_num(&it, "tp_comm_seconds", m->tp_comm_s);
    rpt_json_num(&it, "ep_alltoall_seconds", m->ep_comm_s);
    rpt_json_num(&it, "cp_kv_seconds", m->cp_comm_s);
    sb_append(w->sb, "}");
}

static void simulator(const report_input *in, rpt_json *w)
{
    const sim_outcome *o = in->outcome;
    rpt_json_key(w, "simulator");
    if (!o) {
        sb_append(w->sb, "null");
        return;
    }
    rpt_json s = { w->sb, 1 };
    sb_append(w->sb, "{");
    rpt_json_bool(&s, "completed", o->completed);
    rpt_json_int(&s, "ops_done", o->ops_done);
    rpt_json_int(&s, "ops_total", o->ops_total);
    rpt_json_int(&s, "events", o->events);
    rpt_json_num(&s, "wall_seconds", o->wall_s);
    rpt_json_int(&s, "replicas", o->replicas);
    rpt_json_int(&s, "replicas_simulated", o->replicas_simulated);
    rpt_json_str(&s, "replicas_reason", o->replicas_why);
    rpt_json_str(&s, "engine", o->actorless ? "without actors" : "actors");
    rpt_json_bool(&s, "judged_run", o->judged);
    if (in->tl) {
        rpt_json_int(&s, "timeline_ops", (long)in->tl->nops);
        rpt_json_int(&s, "timeline_transfers", (long)in->tl->nxfers);
    }
    if (!o->completed) rpt_json_str(&s, "blocked", o->blocked);
    sb_append(w->sb, "}");
}

static void metrics_fields(const report_input *in, rpt_json *w)
{
    const run_metrics *m = in->m;
    rpt_json_num(w, "makespan", m->makespan_s);
    rpt_json_num(w, "span", m->span);
    rpt_json_int(w, "span_rank", m->span_rank);
    rank_array(w, "stage_span", m, offsetof(rank_metrics, span));
    rpt_json_num(w, "bubble_ratio", m->bubble_ratio);
    rpt_json_num(w, "pipeline_bubble_ratio", m->pipeline_bubble_ratio);
    rpt_json_num(w, "total_busy_seconds", m->total_busy_s);
    rank_array(w, "peak_activations", m, offsetof(rank_metrics, peak_activations));
    rank_array(w, "peak_memory_bytes", m, offsetof(rank_metrics, peak_memory_bytes));
    rpt_json_num(w, "max_peak_memory_bytes", rpt_max_peak_memory(m));
    rank_array(w, "capacity_bytes", m, offsetof(rank_metrics, capacity_bytes));
    rpt_json_key(w, "oom");
    sb_append(w->sb, "[");
    for (int i = 0; i < m->noom; i++) sb_appendf(w->sb, "%s%d", i ? "," : "", m->oom[i]);
    sb_append(w->sb, "]");
    rank_array(w, "recompute_seconds", m, offsetof(rank_metrics, recompute_s));
    rank_array(w, "offload_bytes", m, offsetof(rank_metrics, offload_bytes));
    rank_array(w, "reload_bytes", m, offsetof(rank_metrics, reload_bytes));
    rank_array(w, "pcie_busy_seconds", m, offsetof(rank_metrics, pcie_busy_s));
    rank_array(w, "offload_stall_seconds", m, offsetof(rank_metrics, stall_s));
    rank_array(w, "peak_time", m, offsetof(rank_metrics, peak_time_s));
    rpt_json_key(w, "host_peak_memory_bytes");
    sb_append(w->sb, "[");
    for (int h = 0; h < m->nhosts; h++) {
        sb_append(w->sb, h ? "," : "");
        sb_append_json_number(w->sb, m->host_peak_bytes[h]);
    }
    sb_append(w->sb, "]");
    rpt_json_key(w, "host_oom");
    sb_append(w->sb, "[");
    for (int i = 0; i < m->nhost_oom; i++) sb_appendf(w->sb, "%s%d", i ? "," : "", m->host_oom[i]);
    sb_append(w->sb, "]");
    rpt_json_num(w, "iteration_seconds", m->iteration_s);
    iteration(m, w);
    rpt_json_key(w, "lower_bound");
    if (m->lower_bound > 0)
        sb_append_json_number(w->sb, m->lower_bound);
    else
        sb_append(w->sb, "null");
    /* makespan / lower_bound: 1 is optimal for this workload and placement. */
    rpt_json_key(w, "bound_ratio");
    if (m->lower_bound > 0)
        sb_append_json_number(w->sb, m->makespan_s / m->lower_bound);
    else
        sb_append(w->sb, "null");
    /* the bound's parts and the gap's (metrics.h); null without a bound */
    if (m->lower_bound > 0) {
        rpt_json_num(w, "lower_bound_compute", m->lower_bound_compute_s);
        rpt_json_num(w, "bound_gap_idle_seconds", m->gap_idle_s);
        rpt_json_num(w, "bound_gap_slow_ops_seconds", m->gap_slow_ops_s);
        rpt_json_num(w, "bound_gap_other_seconds", m->gap_other_s);
    } else {
        rpt_json_null(w, "lower_bound_compute");
        rpt_json_null(w, "bound_gap_idle_seconds");
        rpt_json_null(w, "bound_gap_slow_ops_seconds");
        rpt_json_null(w, "bound_gap_other_seconds");
    }
    rpt_json_num(w, "samples_per_second", m->samples_per_s);
    rpt_json_num(w, "tokens_per_second", m->tokens_per_s);
    rpt_json_num(w, "mfu", m->mfu);
    if (m->has_offload_k) {   /* null without an offload policy (or an unknown host route) */
        rpt_json_num(w, "offload_k", m->offload_k);
        rpt_json_num(w, "offload_k_shared", m->offload_k_shared);   /* at the shared rate (metrics.h) */
    } else {
        rpt_json_null(w, "offload_k");
        rpt_json_null(w, "offload_k_shared");
    }
    rpt_json_int(w, "offloads_chosen", m->offloads_chosen);   /* 0 without a memory plan */
    rpt_json_int(w, "offloads_copied", m->offloads_copied);
    rpt_json_key(w, "ranks");
    sb_append(w->sb, "[");
    for (int r = 0; r < m->pp; r++) {
        sb_append(w->sb, r ? "," : "");
        rank_object(in, r, w->sb);
    }
    sb_append(w->sb, "]");
}

/* The configuration simulated (pp is written above): parallel degrees,
 * batch (global_batch_size the effective one), the memory policies and the
 * numerics, as the experiment's keys spell them. */
static void configuration(const report_input *in, rpt_json *w)
{
    const experiment *e = in->exp;
    rpt_json_int(w, "tp", e->tp);
    rpt_json_int(w, "dp", e->dp);
    rpt_json_int(w, "ep", e->ep);
    rpt_json_int(w, "cp", e->cp);
    rpt_json_int(w, "micro_batch_size", e->micro_batch_size);
    rpt_json_int(w, "global_batch_size", rpt_global_batch_size(in));
    rpt_json_str(w, "recompute", rpt_recompute_word(e->recompute));
    rpt_json_str(w, "offload", rpt_offload_word(e->offload));
    rpt_json_str(w, "precision", rpt_precision_word(e->precision));
    rpt_json_str(w, "attention", rpt_attention_word(e->attention));
}

void report_json(const report_input *in, strbuf *sb)
{
    char label[RPT_LABEL_MAX];
    rpt_json w = { sb, 1 };
    sb_append(sb, "{");
    rpt_json_str(&w, "schedule", rpt_schedule_name(in));
    if (rpt_order_chosen(in)) rpt_json_str(&w, "order", rpt_order_chosen(in));
    rpt_json_int(&w, "pp", in->sched ? in->sched->pp : in->exp ? in->exp->pp : in->m ? in->m->pp : 0);
    rpt_json_int(&w, "microbatches", rpt_microbatches(in));
    rpt_json_int(&w, "stages_per_rank", rpt_stages_per_rank(in));
    if (in->exp) configuration(in, &w);
    rpt_json_str(&w, "workload", rpt_workload_label(in, label, sizeof label));
    if (in->wl) {   /* what every rank's headroom rests on (ranks[i].headroom: its bytes) */
        const memory_headroom *h = &in->wl->headroom;
        rpt_json_key(&w, "memory_headroom");
        rpt_json hr = rpt_json_open(sb);
        rpt_json_str(&hr, "gpu", h->gpu);
        rpt_json_num(&hr, "cuda_context_bytes", h->cuda_context_bytes);
        rpt_json_int(&hr, "nccl_communicators", h->nccl_communicators);
        rpt_json_num(&hr, "nccl_bytes", h->nccl_bytes);
        rpt_json_num(&hr, "fragmentation", h->fragmentation);
        rpt_json_num(&hr, "reserved_bytes", h->reserved_bytes);
        rpt_json_close(&hr);
    }
    if (in->wl && in->wl->cost_basis[0]) {
        rpt_json_str(&w, "cost_model", in->wl->cost_basis);
        rpt_json_str(&w, "cost_model_summary", in->wl->cost_summary);
        if (in->wl->layer_profile_factor > 0) {   /* the measured layer profile the layers ran at */
            rpt_json_key(&w, "layer_profile");
            rpt_json lp = rpt_json_open(sb);
            rpt_json_num(&lp, "factor", in->wl->layer_profile_factor);
            rpt_json_int(&lp, "measured_jobs", in->wl->layer_profile_rows);
            rpt_json_close(&lp);
        } else
            rpt_json_null(&w, "layer_profile");
    }
    rpt_json_str(&w, "network", rpt_network_label(in, label, sizeof label));
    if (in->plan_note && in->plan_note->kind) {   /* what the memory planner chose, or that nothing fits */
        const report_plan_note *pn = in->plan_note;
        rpt_json_key(&w, "plan");
        rpt_json p = rpt_json_open(sb);
        rpt_json_str(&p, "kind", pn->kind);
        rpt_json_bool(&p, "feasible", pn->feasible);
        rpt_json_int(&p, "candidates", pn->candidates);
        rpt_json_str(&p, "chosen", pn->chosen);
        if (pn->feasible) rpt_json_null(&p, "reason");
        else rpt_json_str(&p, "reason", pn->reason);
        rpt_json_close(&p);
    } else
        rpt_json_null(&w, "plan");
    rpt_json_int(&w, "exit_code", report_exit_code(in));
    if (in->m) metrics_fields(in, &w);
    simulator(in, &w);
    sb_append(sb, "}");
}
