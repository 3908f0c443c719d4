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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "opt/offload_milp.h"
#include "report/report_opt.h"
#include "sim/metrics.h"
#include "sim/sim.h"

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
    report_offload_input ri = {.sched = &j.sched, .plan = &p, .res = &res, .orders = ores,
                               .order_search_asked = j.exp.offload_order_search, .m = &m, .outcome = &out};
    strbuf text;
    sb_init(&text);
    if (o.format == FORMAT_JSON) report_offload_json(&ri, &text);
    else report_offload_text(&ri, &text);
    if (cli_write_stdout(&text, &st) != 0) rc = cli_report_error(&st);
    else if (m.noom > 0) rc = PG_EXIT_OOM;
    sb_free(&text);
done:
    job_parallel_free(&jpar);
    free(ores);
    metrics_free(&m);
    timeline_free(&tl);
    plan_free(&p);
    job_finish(&j, &o);
    return rc;
}
