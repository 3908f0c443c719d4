/* rpt_plans.c: `pipegrid plan remat` and `pipegrid plan offload`, text and
 * JSON (report_opt.h). */
#include <math.h>

#include "report/report_opt.h"

#include "report/report_util.h"
#include "util/units.h"

static const char *fwd_name(int f)
{
    return f == PLAN_FWD_FULL ? "full" : f == PLAN_FWD_SELECTIVE ? "selective" : "keep";
}

static const char *bwd_name(int b)
{
    return b == PLAN_BWD_RECOMPUTE ? "recompute" : "keep";
}

/* Two letters per microbatch in the text table: forward k|s|f, backward k|r. */
static char fwd_letter(int f)
{
    return f == PLAN_FWD_FULL ? 'f' : f == PLAN_FWD_SELECTIVE ? 's' : 'k';
}

/* ---- plan remat ------------------------------------------------------------ */

void report_remat_json(const report_remat_input *in, strbuf *sb)
{
    const schedule *s = in->sched;
    const remat_result *res = in->res;
    rpt_json w = rpt_json_open(sb);
    rpt_json_str(&w, "schedule", s->name);
    rpt_json_int(&w, "pp", s->pp);
    rpt_json_int(&w, "microbatches", s->m);
    rpt_json_int(&w, "stages_per_rank", s->v);
    rpt_json_str(&w, "method", remat_method_name(res->method));
    rpt_json_num(&w, "makespan", res->makespan_s);
    rpt_json_num(&w, "span", res->span_s);
    rpt_json_num(&w, "no_recompute_makespan", res->keep_makespan_s);
    rpt_json_num(&w, "greedy_makespan", res->greedy_makespan_s);
    rpt_json_num(&w, "ilp_bound", res->ilp_bound_s);
    rpt_json_num(&w, "solve_seconds", res->solve_s);
    rpt_json_int(&w, "binaries", res->nbinaries);
    rpt_json_int(&w, "rows", res->nrows);
    rpt_json_int(&w, "full", res->nfull);
    rpt_json_int(&w, "selective", res->nselective);
    rpt_json_int(&w, "backward", res->nbackward);
    rpt_json_key(&w, "ranks");
    sb_append(sb, "[");
    for (int r = 0; r < s->pp; r++) {
        rpt_json_sep(sb, r);
        rpt_json o = rpt_json_open(sb);
        rpt_json_int(&o, "rank", r);
        rpt_json_num(&o, "capacity_bytes", in->capacity_bytes[r]);
        rpt_json_num(&o, "static_bytes", in->static_bytes[r]);
        rpt_json_num(&o, "budget_bytes", in->capacity_bytes[r] - in->static_bytes[r]);
        rpt_json_num(&o, "peak_memory_bytes", in->static_bytes[r] + res->peak_bytes[r]);
        rpt_json_num(&o, "recompute_seconds", res->recompute_s[r]);
        if (res->least_recompute_s[r] >= 0)
            rpt_json_num(&o, "least_recompute_seconds", res->least_recompute_s[r]);
        else
            rpt_json_null(&o, "least_recompute_seconds");
        rpt_json_close(&o);
    }
    sb_append(sb, "]");
    rpt_json_key(&w, "plan");
    sb_append(sb, "[");
    int n = 0;
    for (int c = 0; c < s->nstages; c++)
        for (int mb = 0; mb < s->m; mb++) {
            plan_choice ch = plan_get(in->plan, c, mb);
            rpt_json_sep(sb, n++);
            rpt_json o = rpt_json_open(sb);
            rpt_json_int(&o, "rank", s->stage_rank[c]);
            rpt_json_int(&o, "stage", c);
            rpt_json_int(&o, "mb", mb);
            rpt_json_str(&o, "forward", fwd_name(ch.fwd));
            rpt_json_str(&o, "backward", bwd_name(ch.bwd));
            rpt_json_close(&o);
        }
    sb_append(sb, "]");
    rpt_json_close(&w);
    sb_append(sb, "\n");
}

void report_remat_text(const report_remat_input *in, strbuf *o)
{
    const schedule *s = in->sched;
    const remat_result *res = in->res;
    sb_appendf(o, "rematerialization plan for %s: pp %d, %d microbatches, %d stage%s per rank\n", s->name, s->pp, s->m,
               s->v, s->v > 1 ? "s" : "");
    sb_appendf(o, "  method: %s", remat_method_name(res->method));
    if (res->nbinaries > 0)
        sb_appendf(o, " (ILP: %d binaries, %d rows, %.2f s in GLPK, bound %.6g s)", res->nbinaries, res->nrows,
                   res->solve_s, res->ilp_bound_s);
    sb_append(o, "\n");
    sb_appendf(o, "  predicted makespan %.6g s (span %.6g s); without recomputation %.6g s", res->makespan_s,
               res->span_s, res->keep_makespan_s);
    if (res->greedy_makespan_s > 0)
        sb_appendf(o, "; greedy warm start %.6g s", res->greedy_makespan_s);
    sb_appendf(o, "\n  recomputed: %d full, %d selective forwards, %d backwards\n", res->nfull, res->nselective,
               res->nbackward);
    sb_append(o, "  rank  capacity GiB  static GiB  budget GiB  peak GiB  recompute s  least possible s\n");
    for (int r = 0; r < s->pp; r++) {
        double stat = in->static_bytes[r], cap = in->capacity_bytes[r];
        sb_appendf(o, "  %4d  %12.3f  %10.3f  %10.3f  %8.3f  %11.6g", r, cap / GIB, stat / GIB, (cap - stat) / GIB,
                   (stat + res->peak_bytes[r]) / GIB, res->recompute_s[r]);
        if (res->least_recompute_s[r] >= 0)
            sb_appendf(o, "  %16.6g\n", res->least_recompute_s[r]);
        else
            sb_append(o, "                 -\n");
    }
    sb_append(o, "  per microbatch, forward k(eep) s(elective) f(ull) + backward k(eep) r(ecompute):\n");
    for (int r = 0; r < s->pp; r++)
        for (int c = 0; c < s->nstages; c++) {
            if (s->stage_rank[c] != r)
                continue;
            sb_appendf(o, "  rank %d stage %d:", r, c);
            for (int mb = 0; mb < s->m; mb++) {
                plan_choice ch = plan_get(in->plan, c, mb);
                sb_appendf(o, " %c%c", fwd_letter(ch.fwd), ch.bwd == PLAN_BWD_RECOMPUTE ? 'r' : 'k');
            }
            sb_append(o, "\n");
        }
}

/* ---- plan offload ---------------------------------------------------------- */

static void rank_counts(const report_offload_input *in, int r, int *off, int *rec, int *keep)
{
    const schedule *s = in->sched;
    *off = *rec = *keep = 0;
    for (int c = 0; c < s->nstages; c++) {
        if (s->stage_rank[c] != r)
            continue;
        for (int mb = 0; mb < s->m; mb++) {
            plan_choice ch = plan_get(in->plan, c, mb);
            *off += ch.offload;
            *rec += ch.fwd != PLAN_FWD_KEEP;
            *keep += !ch.offload && ch.fwd == PLAN_FWD_KEEP;
        }
    }
}

static const char *copy_model_name(int model)
{
    return model == OFFLOAD_COPIES_WHOLE  ? "whole"
           : model == OFFLOAD_COPIES_ONLY ? "only"
           : model == OFFLOAD_COPIES_NONE ? "none"
                                          : "shared";
}

/* Every plan the planner weighed (order x copy model), the chosen one
 * marked: the MILP's estimate and the simulation's makespan. */
static void orders_text(const offload_order_result *ores, int search_asked, strbuf *o)
{
    if (ores->n == 0)
        return;
    if (!ores->searched)
        sb_appendf(o, "  order        the schedule's (%s)\n",
                   search_asked ? "several stages per rank: no order search" : "offload.order=search tries others");
    sb_appendf(o, "  plans        %d weighed (copies: uplink shared by its GPUs, whole to each copy, offload only\n"
                  "               with the uplink shared, or none: recompute only):\n",
               ores->n);
    sb_appendf(o, "    %-26s %-6s %12s %12s\n", "order", "copies", "model s", "simulated s");
    for (int i = 0; i < ores->n; i++) {
        const offload_order_candidate *c = &ores->cand[i];
        sb_appendf(o, "  %c %-26s %-6s ", i == ores->chosen ? '*' : ' ', c->name, copy_model_name(c->copy_model));
        if (c->status == OFFLOAD_SOLVED_INFEASIBLE)
            sb_appendf(o, "%12s %12s\n", "no fit", "-");
        else if (isnan(c->model_makespan_s) && !c->fits)   /* PipeOffload's rules (job_offload.c): no model */
            sb_appendf(o, "%12s %12s\n", "-", "out of mem");
        else if (isnan(c->model_makespan_s))
            sb_appendf(o, "%12s %12.6g\n", "-", c->judged_makespan_s);
        else if (!c->fits)
            sb_appendf(o, "%12.6g %12s\n", c->model_makespan_s, "out of mem");
        else
            sb_appendf(o, "%12.6g %12.6g\n", c->model_makespan_s, c->judged_makespan_s);
    }
}

void report_offload_text(const report_offload_input *in, strbuf *o)
{
    const schedule *s = in->sched;
    const offload_plan_result *res = in->res;
    const run_metrics *m = in->m;
    int completed = in->outcome->completed;
    sb_appendf(o, "offload plan for %s: pp %d, %d microbatches, %d stage%s per rank\n", s->name, s->pp, s->m, s->v,
               s->v > 1 ? "s" : "");
    if (in->orders->ladder_rungs > 1)   /* offload=plan's capacity ladder (opt/offload_ladder.h) */
        sb_appendf(o, "  capacity     plans made for %d capacities from %.3f GiB down (offload_ladder.h); the one that\n"
                      "               runs was made for %.3f GiB\n",
                   in->orders->ladder_rungs, in->orders->job_capacity_bytes / GIB,
                   in->orders->planned_capacity_bytes / GIB);
    orders_text(in->orders, in->order_search_asked, o);
    sb_appendf(o, "  solver       %s (%d binaries, %d rows, %ld nodes)\n", offload_solve_status_name(res->status),
               res->nbinaries, res->nrows, res->nodes);
    sb_appendf(o, "  activations  %d offloaded, %d recomputed of %d\n", res->noffload, res->nrecompute,
               s->nstages * s->m);
    if (isnan(res->model_makespan_s))
        sb_appendf(o, "  model        none (%s, judged by simulation)\n",
                   res->status == OFFLOAD_SOLVED_REMAT ? "recompute=plan's remat ILP on the given order"
                                                       : "PipeOffload's rules");
    else
        sb_appendf(o, "  model        makespan %.6g s\n", res->model_makespan_s);
    sb_appendf(o, "  simulated    makespan %.6g s%s\n", completed ? m->makespan_s : 0.0,
               completed ? "" : " (did not complete)");
    sb_append(o, "\nrank   kept  offloaded  recomputed  peak memory / capacity  offloaded GiB  recompute s  stalls s\n");
    for (int r = 0; r < s->pp; r++) {
        int off, rec, keep;
        rank_counts(in, r, &off, &rec, &keep);
        const rank_metrics *rm = &m->rank[r];
        sb_appendf(o, "%4d %6d %10d %11d  %9.3f / %-9.3f GiB  %13.3f %12.4f %9.4f\n", r, keep, off, rec,
                   rm->peak_memory_bytes / GIB, rm->capacity_bytes / GIB, rm->offload_bytes / GIB, rm->recompute_s,
                   rm->stall_s);
    }
    if (m->noom > 0)
        sb_appendf(o, "\nout of memory on %d rank%s: nothing the planner may choose fits\n", m->noom,
                   m->noom > 1 ? "s" : "");
}

void report_offload_json(const report_offload_input *in, strbuf *sb)
{
    const offload_plan_result *res = in->res;
    const offload_order_result *ores = in->orders;
    const run_metrics *m = in->m;
    int chosen = ores->chosen;
    rpt_json w = rpt_json_open(sb);
    rpt_json_str(&w, "schedule", in->sched->name);
    rpt_json_int(&w, "pp", in->sched->pp);
    rpt_json_int(&w, "microbatches", in->sched->m);
    rpt_json_str(&w, "solver", offload_solve_status_name(res->status));
    rpt_json_int(&w, "binaries", res->nbinaries);
    rpt_json_int(&w, "rows", res->nrows);
    rpt_json_int(&w, "nodes", res->nodes);
    rpt_json_int(&w, "offloaded", res->noffload);
    rpt_json_int(&w, "recomputed", res->nrecompute);
    rpt_json_num(&w, "model_makespan", res->model_makespan_s);
    rpt_json_num(&w, "makespan", m->makespan_s);
    rpt_json_num(&w, "max_peak_memory_bytes", rpt_max_peak_memory(m));
    rpt_json_int(&w, "oom_ranks", m->noom);
    rpt_json_int(&w, "plans_weighed", ores->n);
    rpt_json_int(&w, "orders_searched", ores->searched);
    rpt_json_str(&w, "chosen", chosen >= 0 ? ores->cand[chosen].name : "none fits");
    rpt_json_str(&w, "copy_model", copy_model_name(chosen >= 0 ? ores->cand[chosen].copy_model : OFFLOAD_COPIES_SHARED));
    rpt_json_num(&w, "planned_capacity_bytes", ores->planned_capacity_bytes);   /* offload_ladder.h */
    rpt_json_int(&w, "capacities_planned", ores->ladder_rungs);
    rpt_json_close(&w);
    sb_append(sb, "\n");
}
