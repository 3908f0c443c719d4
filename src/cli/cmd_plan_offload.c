/* cmd_plan_offload.c: `pipegrid plan offload`: the offload / recompute plan of
 * offload=plan (opt/offload_milp.h) for the experiment's schedule under its
 * memory capacity, then its simulation, side by side: what the planner
 * chose (per rank: kept, offloaded, recomputed), how it solved (MILP optimal,
 * node limit, greedy), its own makespan estimate, and the simulated makespan
 * and peak memory that `run --set offload=plan` reports.  The plan is judged
 * by the simulation, never by its model: both are printed so the gap shows.
 *
 * The recompute key is the planner's ceiling (none: offload or keep;
 * selective: + selective recompute; full or plan: all six options).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "opt/offload_milp.h"
#include "sim/metrics.h"
#include "sim/sim.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static void rank_counts(const job *j, const memplan *p, int r, int *off, int *rec, int *keep)
{
    *off = *rec = *keep = 0;
    for (int s = 0; s < j->sched.nstages; s++) {
        if (j->sched.stage_rank[s] != r) continue;
        for (int mb = 0; mb < j->sched.m; mb++) {
            plan_choice c = plan_get(p, s, mb);
            *off += c.offload;
            *rec += c.fwd != PLAN_FWD_KEEP;
            *keep += !c.offload && c.fwd == PLAN_FWD_KEEP;
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
static void write_orders(const offload_order_result *ores, int search_asked)
{
    if (ores->n == 0) return;
    if (!ores->searched)
        printf("  order        the schedule's (%s)\n", search_asked ? "several stages per rank: no order search"
                                                                   : "offload.order=search tries others");
    printf("  plans        %d weighed (copies: uplink shared by its GPUs, whole to each copy, offload only\n"
           "               with the uplink shared, or none: recompute only):\n", ores->n);
    printf("    %-26s %-6s %12s %12s\n", "order", "copies", "model s", "simulated s");
    for (int i = 0; i < ores->n; i++) {
        const offload_order_candidate *c = &ores->cand[i];
        printf("  %c %-26s %-6s ", i == ores->chosen ? '*' : ' ', c->name, copy_model_name(c->copy_model));
        if (c->status == OFFLOAD_SOLVED_INFEASIBLE) printf("%12s %12s\n", "no fit", "-");
        else if (isnan(c->model_makespan_s)) {   /* not the MILP's (PipeOffload's rules): no model estimate */
            if (!c->fits) printf("%12s %12s\n", "-", "out of mem");
            else printf("%12s %12.6g\n", "-", c->judged_makespan_s);
        } else if (!c->fits) printf("%12.6g %12s\n", c->model_makespan_s, "out of mem");
        else printf("%12.6g %12.6g\n", c->model_makespan_s, c->judged_makespan_s);
    }
}

/* The job's capacity, as the ladder took it (job_offload.c). */
static double ladder_top_gib(const job *j)
{
    double cap = j->exp.memory_capacity_bytes;
    for (int r = 0; cap <= 0 && r < j->sched.pp; r++) {
        double g = j->plat.gpu[j->rank_gpu[r]].memory_bytes;
        if (g > 0 && (cap <= 0 || g < cap)) cap = g;
    }
    return cap / GIB;
}

static void write_text(const job *j, const memplan *p, const offload_plan_result *res,
                       const offload_order_result *ores, const run_metrics *m, const sim_outcome *out)
{
    printf("offload plan for %s: pp %d, %d microbatches, %d stage%s per rank\n", j->sched.name, j->sched.pp,
           j->sched.m, j->sched.v, j->sched.v > 1 ? "s" : "");
    if (ores->ladder_rungs > 1)
        printf("  capacity     plans made for %d capacities from %.3f GiB down (offload_ladder.h); the one that\n"
               "               runs was made for %.3f GiB\n",
               ores->ladder_rungs, ladder_top_gib(j), ores->planned_capacity_bytes / GIB);
    write_orders(ores, j->exp.offload_order_search);
    printf("  solver       %s (%d binaries, %d rows, %ld nodes)\n", offload_solve_status_name(res->status),
           res->nbinaries, res->nrows, res->nodes);
    printf("  activations  %d offloaded, %d recomputed of %d\n", res->noffload, res->nrecompute,
           j->sched.nstages * j->sched.m);
    if (isnan(res->model_makespan_s)) printf("  model        none (PipeOffload's rules, judged by simulation)\n");
    else printf("  model        makespan %.6g s\n", res->model_makespan_s);
    printf("  simulated    makespan %.6g s%s\n", out->completed ? m->makespan : 0.0,
           out->completed ? "" : " (did not complete)");
    printf("\nrank   kept  offloaded  recomputed  peak memory / capacity  offloaded GiB  recompute s  stalls s\n");
    for (int r = 0; r < j->sched.pp; r++) {
        int off, rec, keep;
        rank_counts(j, p, r, &off, &rec, &keep);
        const rank_metrics *rm = &m->rank[r];
        printf("%4d %6d %10d %11d  %9.3f / %-9.3f GiB  %13.3f %12.4f %9.4f\n", r, keep, off, rec,
               rm->peak_memory_bytes / GIB, rm->capacity_bytes / GIB, rm->offload_bytes / GIB, rm->recompute_s,
               rm->stall_s);
    }
    if (m->noom > 0)
        printf("\nout of memory on %d rank%s: nothing the planner may choose fits\n", m->noom, m->noom > 1 ? "s" : "");
}

static void write_json(const job *j, const offload_plan_result *res, const offload_order_result *ores,
                       const run_metrics *m)
{
    char model[32] = "null";   /* PipeOffload's plan has no model estimate */
    if (!isnan(res->model_makespan_s)) snprintf(model, sizeof model, "%.9g", res->model_makespan_s);
    double peak = 0;
    for (int r = 0; r < m->pp; r++)
        if (m->rank[r].peak_memory_bytes > peak) peak = m->rank[r].peak_memory_bytes;
    printf("{\"schedule\":\"%s\",\"pp\":%d,\"microbatches\":%d,\"solver\":\"%s\",\"binaries\":%d,\"rows\":%d,"
           "\"nodes\":%ld,\"offloaded\":%d,\"recomputed\":%d,\"model_makespan\":%s,\"makespan\":%.9g,"
           "\"max_peak_memory_bytes\":%.9g,\"oom_ranks\":%d,\"plans_weighed\":%d,\"orders_searched\":%d,\"chosen\":\"%s\","
           "\"copy_model\":\"%s\",\"planned_capacity_bytes\":%.17g,\"capacities_planned\":%d}\n",
           j->sched.name, j->sched.pp, j->sched.m, offload_solve_status_name(res->status), res->nbinaries,
           res->nrows, res->nodes, res->noffload, res->nrecompute, model, m->makespan, peak,
           m->noom, ores->n, ores->searched, ores->chosen >= 0 ? ores->cand[ores->chosen].name : "none fits",
           copy_model_name(ores->chosen >= 0 ? ores->cand[ores->chosen].copy_model : OFFLOAD_COPIES_SHARED),
           ores->planned_capacity_bytes, ores->ladder_rungs);
}

int cmd_plan_offload(int argc, char **argv)
{
    cli_options o;
    pg_status st;
    job j;
    memplan p;
    memset(&p, 0, sizeof p);
    timeline tl;
    timeline_init(&tl);
    run_metrics m;
    memset(&m, 0, sizeof m);
    offload_plan_result res;
    memset(&res, 0, sizeof res);
    sim_outcome out;
    memset(&out, 0, sizeof out);
    int rc = job_start(argc, argv, 3, 1u << FORMAT_TEXT | 1u << FORMAT_JSON, 0, 1, &o, &j, &st);
    if (rc == 0) rc = job_build_platform(&j, &st);
    offload_order_result *ores = pg_xcalloc(1, sizeof *ores);
    if (rc == 0) rc = job_plan_offload(&j, &p, &res, ores, &st);
    job_parallel jpar;
    memset(&jpar, 0, sizeof jpar);
    if (rc == 0) rc = job_simulate_plan(&j, &p, &jpar, &tl, &out, &st);
    if (rc != 0) {
        rc = cli_report_error(&st);
        goto done;
    }
    metrics_input mi = job_metrics_input(&j, &tl, &p);
    metrics_compute(&mi, &m);
    if (o.format == FORMAT_JSON) write_json(&j, &res, ores, &m);
    else write_text(&j, &p, &res, ores, &m, &out);
    if (m.noom > 0) rc = PG_EXIT_OOM;
done:
    job_parallel_free(&jpar);
    free(ores);
    metrics_free(&m);
    timeline_free(&tl);
    plan_free(&p);
    job_finish(&j, &o);
    return rc;
}
