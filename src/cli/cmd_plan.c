/* cmd_plan.c: `pipegrid plan remat` (and the dispatch of `plan offload`): the rematerialization plan of seed 004
 * (opt/remat_ilp.h) for the experiment's schedule under memory.capacity,
 * without simulating it.
 *
 * Same input as `run` (experiment + --set, workload, schedule, platform);
 * prints, per rank, its budget (capacity - static memory) and the predicted
 * peak, then, per rank, stage and microbatch, what the plan does with the
 * activation, and the predicted makespan in the papers' ideal timing
 * (network=ideal: exactly what `run --set recompute=plan` simulates).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

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

static double capacity_of(const job *j, int r)
{
    return j->exp.memory_capacity_bytes > 0 ? j->exp.memory_capacity_bytes : j->plat.gpu[j->rank_gpu[r]].memory_bytes;
}

static void json_num(strbuf *o, const char *key, double v)
{
    sb_appendf(o, ", \"%s\": ", key);
    sb_append_json_number(o, v);
}

static void write_json(const job *j, const memplan *p, const remat_result *res, strbuf *o)
{
    const schedule *s = &j->sched;
    sb_append(o, "{\"schedule\": ");
    sb_append_json_string(o, s->name);
    sb_appendf(o, ", \"pp\": %d, \"microbatches\": %d, \"stages_per_rank\": %d, \"method\": ", s->pp, s->m, s->v);
    sb_append_json_string(o, remat_method_name(res->method));
    json_num(o, "makespan", res->makespan_s);
    json_num(o, "span", res->span_s);
    json_num(o, "no_recompute_makespan", res->keep_makespan_s);
    json_num(o, "greedy_makespan", res->greedy_makespan_s);
    json_num(o, "ilp_bound", res->ilp_bound_s);
    json_num(o, "solve_seconds", res->solve_s);
    sb_appendf(o, ", \"binaries\": %d, \"rows\": %d, \"full\": %d, \"selective\": %d, \"backward\": %d", res->nbinaries,
               res->nrows, res->nfull, res->nselective, res->nbackward);
    sb_append(o, ", \"ranks\": [");
    for (int r = 0; r < s->pp; r++) {
        double stat = job_rank_static_bytes(j, r);
        sb_appendf(o, "%s{\"rank\": %d", r ? ", " : "", r);
        json_num(o, "capacity_bytes", capacity_of(j, r));
        json_num(o, "static_bytes", stat);
        json_num(o, "budget_bytes", capacity_of(j, r) - stat);
        json_num(o, "peak_memory_bytes", stat + res->peak_bytes[r]);
        json_num(o, "recompute_seconds", res->recompute_s[r]);
        if (res->least_recompute_s[r] >= 0) json_num(o, "least_recompute_seconds", res->least_recompute_s[r]);
        else sb_append(o, ", \"least_recompute_seconds\": null");
        sb_append(o, "}");
    }
    sb_append(o, "], \"plan\": [");
    int first = 1;
    for (int c = 0; c < s->nstages; c++)
        for (int mb = 0; mb < s->m; mb++) {
            plan_choice ch = plan_get(p, c, mb);
            sb_appendf(o, "%s{\"rank\": %d, \"stage\": %d, \"mb\": %d, \"forward\": \"%s\", \"backward\": \"%s\"}",
                       first ? "" : ", ", s->stage_rank[c], c, mb, fwd_name(ch.fwd), bwd_name(ch.bwd));
            first = 0;
        }
    sb_append(o, "]}\n");
}

#define GIB (1024.0 * 1024.0 * 1024.0)

static void write_text(const job *j, const memplan *p, const remat_result *res, strbuf *o)
{
    const schedule *s = &j->sched;
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
        double stat = job_rank_static_bytes(j, r), cap = capacity_of(j, r);
        sb_appendf(o, "  %4d  %12.3f  %10.3f  %10.3f  %8.3f  %11.6g", r, cap / GIB, stat / GIB, (cap - stat) / GIB,
                   (stat + res->peak_bytes[r]) / GIB, res->recompute_s[r]);
        if (res->least_recompute_s[r] >= 0) sb_appendf(o, "  %16.6g\n", res->least_recompute_s[r]);
        else sb_append(o, "                 -\n");
    }
    sb_append(o, "  per microbatch, forward k(eep) s(elective) f(ull) + backward k(eep) r(ecompute):\n");
    for (int r = 0; r < s->pp; r++)
        for (int c = 0; c < s->nstages; c++) {
            if (s->stage_rank[c] != r) continue;
            sb_appendf(o, "  rank %d stage %d:", r, c);
            for (int mb = 0; mb < s->m; mb++) {
                plan_choice ch = plan_get(p, c, mb);
                sb_appendf(o, " %c%c", fwd_letter(ch.fwd), ch.bwd == PLAN_BWD_RECOMPUTE ? 'r' : 'k');
            }
            sb_append(o, "\n");
        }
}

int cmd_plan(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[2], "offload") == 0)   /* offload=plan's planner: cmd_plan_offload.c */
        return cmd_plan_offload(argc, argv);
    if (argc < 3 || strcmp(argv[2], "remat") != 0) {
        fputs("usage: pipegrid plan remat|offload [EXPERIMENT.yaml] [--set KEY=VALUE]... [--format text|json]\n",
              stderr);
        return PG_EXIT_INPUT;
    }
    cli_options o;
    pg_status st;
    job j;
    memplan p;
    memset(&p, 0, sizeof p);
    remat_result res;
    memset(&res, 0, sizeof res);
    int rc = job_start(argc, argv, 3, 1u << FORMAT_TEXT | 1u << FORMAT_JSON, 0, 1, &o, &j, &st);
    if (rc == 0)
        rc = job_build_platform(&j, &st);
    if (rc == 0)
        rc = job_plan_remat(&j, &p, &res, &st);
    if (rc != 0) {
        rc = cli_report_error(&st);
    } else {
        strbuf out;
        sb_init(&out);
        if (o.format == FORMAT_JSON)
            write_json(&j, &p, &res, &out);
        else
            write_text(&j, &p, &res, &out);
        if (cli_write_stdout(&out, &st) != 0)
            rc = cli_report_error(&st);
        sb_free(&out);
    }
    plan_free(&p);
    remat_result_free(&res);
    job_finish(&j, &o);
    return rc;
}
