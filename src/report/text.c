/* text.c: the human summary of a run.
 *
 * Three blocks: what ran (schedule, pipeline shape, parallel degrees, batch,
 * memory and numeric policies, workload, platform), one
 * line per rank, then the totals.  Columns are right-aligned to the widest
 * cell so that the table stays straight whatever the units come out as.
 */
#include "report/report.h"

#include <stdio.h>
#include <string.h>

#include "model/arch.h"
#include "report/report_util.h"
#include "util/units.h"

#define CELL_MAX 64          /* one formatted table cell */
#define QTY_MAX 30           /* one formatted quantity: two fit in a cell with " / " */
#define PERCENT 100.0
#define NCOLS 8

static const char *const col_title[NCOLS] = {
    "rank", "GPU", "busy", "idle", "span", "bubble", "peak act", "peak memory / capacity",
};

/* Formats one rank's cells. */
static void rank_cells(const report_input *in, int r, char cell[NCOLS][CELL_MAX])
{
    const rank_metrics *rm = &in->m->rank[r];
    char cap[QTY_MAX], mem[QTY_MAX];
    snprintf(cell[0], CELL_MAX, "%d", r);
    const char *host = rpt_rank_host(in, r);
    snprintf(cell[1], CELL_MAX, "%s", host[0] ? host : "-");
    units_format_duration(rm->busy_s, cell[2], CELL_MAX);
    units_format_duration(rm->idle_s, cell[3], CELL_MAX);
    units_format_duration(rm->span, cell[4], CELL_MAX);
    snprintf(cell[5], CELL_MAX, "%.1f %%", rpt_rank_bubble(rm) * PERCENT);
    snprintf(cell[6], CELL_MAX, "%.2f", rm->peak_activations);
    units_format_bytes(rm->peak_memory_bytes, mem, QTY_MAX);
    if (rm->capacity_bytes > 0)
        units_format_bytes(rm->capacity_bytes, cap, QTY_MAX);
    else
        snprintf(cap, QTY_MAX, "?");
    snprintf(cell[7], CELL_MAX, "%s / %s", mem, cap);
}

static int rank_is_oom(const run_metrics *m, int r)
{
    for (int i = 0; i < m->noom; i++)
        if (m->oom[i] == r) return 1;
    return 0;
}

static void append_padded(strbuf *sb, const char *text, int width, int left)
{
    sb_appendf(sb, left ? "%-*s" : "%*s", width, text);
}

static void rank_table(const report_input *in, strbuf *sb)
{
    const run_metrics *m = in->m;
    int width[NCOLS];
    for (int c = 0; c < NCOLS; c++) width[c] = (int)strlen(col_title[c]);
    char cell[NCOLS][CELL_MAX];
    for (int r = 0; r < m->pp; r++) {
        rank_cells(in, r, cell);
        for (int c = 0; c < NCOLS; c++)
            if ((int)strlen(cell[c]) > width[c]) width[c] = (int)strlen(cell[c]);
    }
    /* The host column reads best left-aligned, numbers right-aligned. */
    for (int c = 0; c < NCOLS; c++) {
        sb_append(sb, c ? "  " : "");
        append_padded(sb, col_title[c], width[c], c == 1);
    }
    sb_append(sb, "\n");
    for (int c = 0; c < NCOLS; c++) {
        sb_append(sb, c ? "  " : "");
        for (int i = 0; i < width[c]; i++) sb_append(sb, "-");
    }
    sb_append(sb, "\n");
    for (int r = 0; r < m->pp; r++) {
        rank_cells(in, r, cell);
        for (int c = 0; c < NCOLS; c++) {
            sb_append(sb, c ? "  " : "");
            append_padded(sb, cell[c], width[c], c == 1);
        }
        sb_append(sb, rank_is_oom(m, r) ? "  OOM\n" : "\n");
    }
}

static void header(const report_input *in, strbuf *sb)
{
    char label[RPT_LABEL_MAX];
    int pp = in->sched ? in->sched->pp : in->exp ? in->exp->pp : in->m ? in->m->pp : 0;
    int v = rpt_stages_per_rank(in);
    sb_appendf(sb, "schedule   %s: pp %d, %d microbatches, %d stage%s per rank\n", rpt_schedule_name(in), pp,
               rpt_microbatches(in), v, v == 1 ? "" : "s");
    if (rpt_order_chosen(in))
        sb_appendf(sb, "order      %s's, chosen by offload.order=search (pipegrid plan offload lists the orders)\n",
                   rpt_order_chosen(in));
    if (in->exp) {
        const experiment *e = in->exp;
        sb_appendf(sb, "parallel   tp %d, cp %d, dp %d, pp %d (ep %d)\n", e->tp, e->cp, e->dp, pp, e->ep);
        sb_appendf(sb, "batch      %d per microbatch, %ld per iteration\n", e->micro_batch_size,
                   rpt_global_batch_size(in));
        char modules[128] = "";
        if ((e->recompute == RECOMPUTE_SELECTIVE || e->recompute == RECOMPUTE_PLAN) &&
            e->recompute_modules != ARCH_RC_DEFAULT) {
            char words[120];
            experiment_recompute_modules_words(e->recompute_modules, words, sizeof words);
            snprintf(modules, sizeof modules, " (%s)", words);
        }
        sb_appendf(sb, "policies   recompute %s%s, offload %s, %s, %s attention\n", rpt_recompute_word(e->recompute),
                   modules, rpt_offload_word(e->offload), rpt_precision_word(e->precision),
                   rpt_attention_word(e->attention));
    }
    if (in->plan_note && in->plan_note->kind) {
        const report_plan_note *pn = in->plan_note;
        if (pn->feasible)
            sb_appendf(sb, "plan       %s: %s, the fastest that fits of %d plans tried\n", pn->kind, pn->chosen,
                       pn->candidates);
        else
            sb_appendf(sb, "plan       %s: INFEASIBLE: %s\n", pn->kind, pn->reason);
    }
    sb_appendf(sb, "workload   %s\n", rpt_workload_label(in, label, sizeof label));
    /* The whole provenance is a paragraph (every parameter and its source):
     * one short line unless asked, the rest in JSON's cost_model. */
    if (in->wl && in->wl->cost_basis[0])
        sb_appendf(sb, "cost model %s\n", in->verbose || !in->wl->cost_summary[0] ? in->wl->cost_basis
                                                                                 : in->wl->cost_summary);
    sb_appendf(sb, "platform   %s", rpt_network_label(in, label, sizeof label));
    if (in->plat) sb_appendf(sb, " (%d GPU%s)", in->plat->ngpus, in->plat->ngpus == 1 ? "" : "s");
    double nvlink_bw, nic_bw, nvl_sheet_bw, nic_sheet_bw;
    const experiment *e = in->exp;
    if (e && e->network == NET_CLUSTER && platform_cluster_gpu_bandwidths(e, &nvlink_bw, &nic_bw) &&
        platform_cluster_datasheet_bandwidths(e, &nvl_sheet_bw, &nic_sheet_bw)) {
        char nvl[32], nic[32], nvl_sheet[32], nic_sheet[32];
        sb_appendf(sb, ", NVLink %s and NIC %s per GPU", units_format_bandwidth(nvlink_bw, nvl, sizeof nvl),
                   units_format_bandwidth(nic_bw, nic, sizeof nic));
        if (e->cluster_links_fitted)   /* which rate ran: the datasheet's (a key's or the GPU's) x the fit */
            sb_appendf(sb, " (cluster.links=fitted: NCCL's rates from datasheet %s and %s%s)",
                       units_format_bandwidth(nvl_sheet_bw, nvl_sheet, sizeof nvl_sheet),
                       units_format_bandwidth(nic_sheet_bw, nic_sheet, sizeof nic_sheet),
                       e->cluster_nvlink_bw > 0 || e->cluster_ib_bw > 0 ? ", set by cluster.*_bw" : "");
        else
            sb_appendf(sb, " (cluster.links=datasheet%s)",
                       e->cluster_nvlink_bw > 0 || e->cluster_ib_bw > 0 ? ", set by cluster.*_bw" : "");
    }
    sb_append(sb, "\n\n");
}

/* "label  value" lines of the totals block. */
static void total_line(strbuf *sb, const char *label, const char *value)
{
    sb_appendf(sb, "%-14s %s\n", label, value);
}

/* Rates read best as plain numbers: whole units from RATE_WHOLE_MIN on
 * (33860, not 3.386e+04), four significant digits below. */
#define RATE_WHOLE_MIN 1000.0
static const char *format_rate(double per_s, char *buf, size_t len)
{
    snprintf(buf, len, per_s >= RATE_WHOLE_MIN ? "%.0f" : "%.4g", per_s);
    return buf;
}

/* Where the largest peak is, when, and what it is made of: static (the
 * model's weights, gradients, optimizer state), the headroom, activations,
 * workspace; then the headroom's parts and what they rest on. */
static void peak_breakdown(const report_input *in, strbuf *sb)
{
    const run_metrics *m = in->m;
    int top = 0;
    for (int r = 1; r < m->pp; r++)
        if (m->rank[r].peak_memory_bytes > m->rank[top].peak_memory_bytes) top = r;
    const rank_metrics *rm = &m->rank[top];
    double headroom = rm->cuda_context_bytes + rm->nccl_bytes + rm->reserved_bytes + rm->fragmentation_bytes;
    char t[QTY_MAX], st[QTY_MAX], act[QTY_MAX], ws[QTY_MAX], hr[QTY_MAX], line[6 * QTY_MAX + 160];
    units_format_duration(rm->peak_time_s, t, sizeof t);
    units_format_bytes(rm->static_bytes - rm->cuda_context_bytes - rm->nccl_bytes - rm->reserved_bytes, st,
                       sizeof st);
    units_format_bytes(headroom, hr, sizeof hr);
    units_format_bytes(rm->peak_activation_bytes, act, sizeof act);
    double workspace = rm->peak_memory_bytes - rm->static_bytes - rm->peak_activation_bytes - rm->fragmentation_bytes;
    units_format_bytes(workspace > 0 ? workspace : 0.0, ws, sizeof ws);   /* 0, not a rounding's -0 */
    snprintf(line, sizeof line, "rank %d at %s: static %s + headroom %s + activations %s + workspace %s", top, t, st,
             hr, act, ws);
    total_line(sb, "  made of", line);
    const memory_headroom *h = in->wl ? &in->wl->headroom : NULL;
    if (h == NULL) return;
    char ctx[QTY_MAX], nccl[QTY_MAX], frag[QTY_MAX], res[QTY_MAX];
    units_format_bytes(rm->cuda_context_bytes, ctx, sizeof ctx);
    units_format_bytes(rm->nccl_bytes, nccl, sizeof nccl);
    units_format_bytes(rm->fragmentation_bytes, frag, sizeof frag);
    units_format_bytes(rm->reserved_bytes, res, sizeof res);
    if (h->gpu[0])
        snprintf(line, sizeof line, "CUDA context %s + NCCL %s (%d communicators) + fragmentation %s (%.3g %% of "
                 "activations and workspace) + reserved %s (profiles/gpus/%s.yaml)", ctx, nccl,
                 h->nccl_communicators, frag, h->fragmentation * PERCENT, res, h->gpu);
    else
        snprintf(line, sizeof line, "reserved %s (memory.headroom=%s%s)", res,
                 in->exp && !in->exp->memory_headroom ? "none" : "auto, but the job names no GPU type with a "
                 "memory_headroom profile", "");
    total_line(sb, "  headroom", line);
}

/* Offload and recompute totals, only when a memory plan did something. */
static void memory_plan_lines(const run_metrics *m, strbuf *sb)
{
    double off = 0, pcie = 0, stall = 0, rec = 0;
    for (int r = 0; r < m->pp; r++) {
        off += m->rank[r].offload_bytes;
        if (m->rank[r].pcie_busy_s > pcie) pcie = m->rank[r].pcie_busy_s;
        stall += m->rank[r].stall_s;
        rec += m->rank[r].recompute_s;
    }
    char a[QTY_MAX], b[QTY_MAX], c[QTY_MAX], line[3 * QTY_MAX + 160];
    if (off > 0) {
        units_format_bytes(off, a, sizeof a);
        units_format_duration(pcie, b, sizeof b);
        units_format_duration(stall, c, sizeof c);
        snprintf(line, sizeof line, "%s (PCIe busy up to %s per GPU, stalls %s in all)", a, b, c);
        total_line(sb, "offloaded", line);
    }
    if (m->offloads_copied < m->offloads_chosen) {
        snprintf(line, sizeof line,
                 "%d of the %d activations chosen for offload stay on the GPU: their F-to-B window is shorter "
                 "than their copies",
                 m->offloads_chosen - m->offloads_copied, m->offloads_chosen);
        total_line(sb, "not offloaded", line);
    }
    if (m->has_offload_k) {
        snprintf(line, sizeof line,
                 "%.3g (rank 0: one microbatch's round-trip copy / its F + B + W); %.3g with the other GPU of its "
                 "PCIe switch copying too (PipeOffload's k)",
                 m->offload_k, m->offload_k_shared);
        total_line(sb, "offload k", line);
    }
    if (rec > 0) {
        units_format_duration(rec, a, sizeof a);
        snprintf(line, sizeof line, "%s in all ranks", a);
        total_line(sb, "recompute", line);
    }
    for (int h = 0; h < m->nhosts; h++) {
        if (m->host_peak_bytes[h] <= 0) continue;
        units_format_bytes(m->host_peak_bytes[h], a, sizeof a);
        if (m->host_capacity_bytes[h] > 0)
            units_format_bytes(m->host_capacity_bytes[h], b, sizeof b);
        else
            snprintf(b, sizeof b, "?");
        snprintf(line, sizeof line, "node %d: %s / %s", h, a, b);
        total_line(sb, "host memory", line);
    }
}

/* Idle time of each rank by cause (sim/bubbles.h): what to fix first. */
static void bubble_table(const report_input *in, strbuf *sb)
{
    static const char *const HEAD[] = {"rank", "idle", "warm-up", "cool-down", "steady", "comm", "reload"};
    enum { NCOL = sizeof HEAD / sizeof HEAD[0] };
    const run_metrics *m = in->m;
    sb_append(sb, "\nidle time by cause\n");
    sb_appendf(sb, "%4s  %10s  %10s  %10s  %10s  %10s  %10s\n", HEAD[0], HEAD[1], HEAD[2], HEAD[3], HEAD[4], HEAD[5],
               HEAD[6]);
    for (int r = 0; r < m->pp; r++) {
        const bubble_breakdown *b = &m->rank[r].bubbles;
        double cells[NCOL - 1] = {m->rank[r].idle_s, b->warmup_s, b->cooldown_s, b->steady_s, b->comm_s,
                                  b->reload_s};
        sb_appendf(sb, "%4d", r);
        for (int c = 0; c < NCOL - 1; c++) {
            char cell[CELL_MAX];
            sb_appendf(sb, "  %10s", units_format_duration(cells[c], cell, sizeof cell));
        }
        sb_append(sb, "\n");
    }
}

static void totals(const report_input *in, strbuf *sb)
{
    const run_metrics *m = in->m;
    char a[CELL_MAX], b[CELL_MAX];
    total_line(sb, "makespan", units_format_duration(m->makespan_s, a, sizeof a));
    snprintf(b, sizeof b, "%s (rank %d)", units_format_duration(m->span, a, sizeof a), m->span_rank);
    total_line(sb, "span", b);
    char bubble[2 * CELL_MAX];
    snprintf(bubble, sizeof bubble, "%.2f %% of all ranks' time (longest-span rank %d: %.2f %%)",
             m->pipeline_bubble_ratio * PERCENT, m->span_rank, m->bubble_ratio * PERCENT);
    total_line(sb, "bubble", bubble);
    if (m->lower_bound > 0) {
        char lb[CELL_MAX];
        char comp[CELL_MAX], rest[CELL_MAX], line[6 * CELL_MAX];
        snprintf(line, sizeof line, "%s = compute %s + unavoidable tp collectives and recomputation %s",
                 units_format_duration(m->lower_bound, lb, sizeof lb),
                 units_format_duration(m->lower_bound_compute_s, comp, sizeof comp),
                 units_format_duration(m->lower_bound - m->lower_bound_compute_s, rest, sizeof rest));
        total_line(sb, "lower bound", line);
        char idle[CELL_MAX], slow[CELL_MAX], other[CELL_MAX];
        snprintf(line, sizeof line, "makespan is %.2f %% above: bubbles %s, ops above their least %s, late start %s "
                 "(rank %d)", (m->makespan_s / m->lower_bound - 1.0) * PERCENT,
                 units_format_duration(m->gap_idle_s, idle, sizeof idle),
                 units_format_duration(m->gap_slow_ops_s, slow, sizeof slow),
                 units_format_duration(m->gap_other_s, other, sizeof other), m->span_rank);
        total_line(sb, "  gap", line);
    }
    if (m->iteration_s != m->makespan_s) {
        char c[CELL_MAX], d[CELL_MAX], e[CELL_MAX], o[CELL_MAX], embed[2 * CELL_MAX] = "",
            overhead[2 * CELL_MAX] = "", line[8 * CELL_MAX];
        if (m->embed_allreduce_s > 0)
            snprintf(embed, sizeof embed, " + embedding all-reduce %s",
                     units_format_duration(m->embed_allreduce_s, e, sizeof e));
        if (m->overhead_s > 0)
            snprintf(overhead, sizeof overhead, " + overhead %s", units_format_duration(m->overhead_s, o, sizeof o));
        snprintf(line, sizeof line, "%s = pipeline %s + dp %s %s%s + optimizer %s%s",
                 units_format_duration(m->iteration_s, a, sizeof a), units_format_duration(m->pipeline_s, b, sizeof b),
                 m->dp_allgather_busy_s > 0 ? "reduce-scatter" : "all-reduce",
                 units_format_duration(m->dp_allreduce_s, c, sizeof c), embed,
                 units_format_duration(m->optimizer_s, d, sizeof d), overhead);
        total_line(sb, "iteration", line);
    }
    /* ZeRO-2 / ZeRO-3: the collectives are per layer (sim.h sharding) */
    int per_layer = in->exp && in->exp->dp > 1 &&
                    (in->exp->dp_sharding == DP_SHARD_GRADIENTS || in->exp->dp_sharding == DP_SHARD_FULL);
    if (m->dp_buckets > 0) {
        char line[2 * CELL_MAX];
        snprintf(line, sizeof line, "%s in %d %s (exposed: above)",
                 units_format_duration(m->dp_allreduce_busy_s, a, sizeof a), m->dp_buckets,
                 per_layer ? "collectives, per layer and microbatch" : "buckets");
        total_line(sb, m->dp_allgather_busy_s > 0 ? "dp reduce-scatter" : "dp all-reduce", line);
    }
    if (m->dp_allgather_busy_s > 0) {
        char line[2 * CELL_MAX];
        snprintf(line, sizeof line, "%s (%s)", units_format_duration(m->dp_allgather_busy_s, a, sizeof a),
                 !per_layer                                   ? "the distributed optimizer's updated parameters"
                 : in->exp->dp_sharding == DP_SHARD_GRADIENTS ? "the updated parameters, over the shard group"
                                                              : "each layer's parameters, before its F and its B");
        total_line(sb, "dp all-gather", line);
    }
    if (m->tp_comm_s > 0) total_line(sb, "tp collectives", units_format_duration(m->tp_comm_s, a, sizeof a));
    if (m->ep_comm_s > 0) total_line(sb, "ep all-to-all", units_format_duration(m->ep_comm_s, a, sizeof a));
    if (m->cp_comm_s > 0) total_line(sb, "cp exchange", units_format_duration(m->cp_comm_s, a, sizeof a));
    if (m->samples_per_s > 0) total_line(sb, "samples/s", format_rate(m->samples_per_s, a, sizeof a));
    if (m->tokens_per_s > 0) total_line(sb, "tokens/s", format_rate(m->tokens_per_s, a, sizeof a));
    if (m->mfu > 0) {
        snprintf(a, sizeof a, "%.1f %%", m->mfu * PERCENT);
        total_line(sb, "MFU", a);
    }
    units_format_bytes(rpt_max_peak_memory(m), a, sizeof a);
    total_line(sb, "peak memory", a);
    peak_breakdown(in, sb);
    memory_plan_lines(m, sb);
    if (m->noom == 0) {
        total_line(sb, "OOM ranks", "none");
    } else {
        strbuf list;
        sb_init(&list);
        for (int i = 0; i < m->noom; i++) sb_appendf(&list, "%s%d", i ? ", " : "", m->oom[i]);
        total_line(sb, "OOM ranks", list.data);
        sb_free(&list);
    }
}

static void outcome(const report_input *in, strbuf *sb)
{
    const sim_outcome *o = in->outcome;
    if (!o) return;
    char a[CELL_MAX];
    sb_appendf(sb, "%-14s %ld events in %s of host time%s\n", "simulated", o->events,
               units_format_duration(o->wall_s, a, sizeof a),
               o->judged ? " (offload=plan's judging run of this plan, not simulated again)" : "");
    if (o->replicas > 1)
        sb_appendf(sb, "%-14s simulated %d of %d (%s)\n", "replicas", o->replicas_simulated, o->replicas,
                   o->replicas_why);
    if (!o->completed)
        sb_appendf(sb, "DEADLOCK       %ld of %ld ops ran; %s\n", o->ops_done, o->ops_total, o->blocked);
}

void report_text(const report_input *in, strbuf *sb)
{
    header(in, sb);
    if (in->m && in->m->pp > 0) {
        rank_table(in, sb);
        bubble_table(in, sb);
        sb_append(sb, "\n");
        totals(in, sb);
    }
    outcome(in, sb);
}
