/* cmd_plan.c: `pipegrid plan remat` (and the dispatch of `plan offload`): the rematerialization plan
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
#include "report/report_opt.h"

static double capacity_of(const job *j, int r)
{
    return j->exp.memory_capacity_bytes > 0 ? j->exp.memory_capacity_bytes : j->plat.gpu[j->rank_gpu[r]].memory_bytes;
}

/* The report (report/report_opt.h) with each rank's capacity and static memory. */
static void write_report(const job *j, const memplan *p, const remat_result *res, int json, strbuf *out)
{
    int pp = j->sched.pp;
    double *cap = pg_xcalloc((size_t)pp, sizeof *cap), *stat = pg_xcalloc((size_t)pp, sizeof *stat);
    for (int r = 0; r < pp; r++) {
        cap[r] = capacity_of(j, r);
        stat[r] = job_rank_static_bytes(j, r);
    }
    report_remat_input in = {.sched = &j->sched, .plan = p, .res = res, .capacity_bytes = cap, .static_bytes = stat};
    if (json)
        report_remat_json(&in, out);
    else
        report_remat_text(&in, out);
    free(cap);
    free(stat);
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
        write_report(&j, &p, &res, o.format == FORMAT_JSON, &out);
        if (cli_write_stdout(&out, &st) != 0)
            rc = cli_report_error(&st);
        sb_free(&out);
    }
    plan_free(&p);
    remat_result_free(&res);
    job_finish(&j, &o);
    return rc;
}
