/* cmd_bound.c: `pipegrid bound`: the makespan no schedule can beat (seed 000).
 *
 * Same input as `run` (job pipeline: experiment + --set, workload, the
 * schedule's placement), but no simulation: the bound is computed from the
 * per-stage op times, the latency of network=ideal and memory.limit by
 * bound_lower (src/opt/bound.h).  `lower_bound` is over every schedule with
 * the experiment's placement (one wave, looping, V or wave, with its chunks),
 * split backward allowed (it includes every fused schedule), recomputation
 * allowed when recompute != none.  `schedule_class_lower_bound` restricts to
 * the chosen schedule's own backward kind (fused or split): the gap between
 * it and `run`'s makespan is what that schedule leaves on the table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "opt/bound.h"
#include "report/report_opt.h"

int cmd_bound(int argc, char **argv)
{
    cli_options o;
    pg_status st;
    job j;
    job_bound jb;
    memset(&jb, 0, sizeof jb);
    int rc = job_start(argc, argv, 2, 1u << FORMAT_TEXT | 1u << FORMAT_JSON, 0, 1, &o, &j, &st);
    /* Other networks: the GPUs' speeds scale the op times. */
    if (rc == 0 && j.exp.network != NET_IDEAL)
        rc = job_build_platform(&j, &st);
    if (rc == 0)
        rc = job_compute_bound(&j, &jb, &st);
    if (rc != 0) {
        rc = cli_report_error(&st);
    } else {
        strbuf out;
        sb_init(&out);
        report_bound_input b = {.schedule = j.sched.name, .own_split = sched_is_split(&j.sched), .in = &jb.in,
                                .any = &jb.any, .cls = &jb.cls};
        if (o.format == FORMAT_JSON)
            report_bound_json(&b, &out);
        else
            report_bound_text(&b, &out);
        if (cli_write_stdout(&out, &st) != 0)
            rc = cli_report_error(&st);
        sb_free(&out);
    }
    job_bound_free(&jb);
    job_finish(&j, &o);
    return rc;
}
