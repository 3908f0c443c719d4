/* cmd_run.c: `pipegrid run`: simulate one experiment and report it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "report/report.h"
#include "sim/metrics.h"
#include "sim/sim.h"

static int write_report(const report_input *ri, output_format format, pg_status *st)
{
    strbuf out;
    sb_init(&out);
    switch (format) {
    case FORMAT_JSON:
        report_json(ri, &out);
        sb_append(&out, "\n");
        break;
    case FORMAT_CSV:
        report_csv_header(NULL, 0, &out);
        report_csv_row(ri, NULL, 0, &out);
        break;
    default:
        report_text(ri, &out);
        break;
    }
    int rc = cli_write_stdout(&out, st);
    sb_free(&out);
    return rc;
}

/* A part of the bound gap smaller than this fraction of the makespan is the
 * rounding of summed op times (1e-9 of a second is far below any op). */
#define GAP_ROUNDING_REL 1e-9

int cmd_run(int argc, char **argv)
{
    cli_options o;
    pg_status st;
    job j;
    timeline tl;
    timeline_init(&tl);
    run_metrics m;
    memset(&m, 0, sizeof m);
    memplan mem_plan;
    memset(&mem_plan, 0, sizeof mem_plan);
    job_parallel jpar;
    memset(&jpar, 0, sizeof jpar);
    sim_outcome outcome;
    memset(&outcome, 0, sizeof outcome);
    int rc = job_start(argc, argv, 2, 1u << FORMAT_TEXT | 1u << FORMAT_JSON | 1u << FORMAT_CSV,
                       CLI_OPT_TRACE | CLI_OPT_SVG | CLI_OPT_VERBOSE, 1, &o, &j, &st);
    if (rc == 0)
        rc = job_simulate(&j, &mem_plan, &jpar, &tl, &outcome, &st);
    if (rc != 0) {
        rc = cli_report_error(&st);
        goto done;
    }

    metrics_input mi = job_metrics_input(&j, &tl, &mem_plan);
    metrics_compute(&mi, &m);
    job_bound jb;
    memset(&jb, 0, sizeof jb);
    job_costed_bound cb;
    memset(&cb, 0, sizeof cb);
    if (job_compute_bound(&j, &jb, &st) == 0 && job_costed_bound_compute(&j, &jb.in, &cb) == 0) {
        m.lower_bound = cb.makespan_s;
        m.lower_bound_compute_s = cb.compute_s;
        /* makespan - bound = (idle - the bound's own idle, bound - least)
         * + (busy - least) + (makespan - span) on the longest-span rank */
        const rank_metrics *span_rank = &m.rank[m.span_rank];
        double least_s = cb.rank_least_s[m.span_rank];
        m.gap_idle_s = span_rank->idle_s - (m.lower_bound - least_s);
        m.gap_slow_ops_s = span_rank->busy_s - least_s;
        m.gap_other_s = m.makespan_s - span_rank->span;
        double *parts[] = {&m.gap_idle_s, &m.gap_slow_ops_s, &m.gap_other_s};
        for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++)
            if (fabs(*parts[k]) < GAP_ROUNDING_REL * m.makespan_s)
                *parts[k] = 0.0;   /* sums of op times, not a real difference */
    } else { /* a bound the model cannot state is not a failed run */
        pg_status_clear(&st);
    }
    job_costed_bound_free(&cb);
    job_bound_free(&jb);
    report_input ri = {.exp = &j.exp, .sched = &j.sched, .wl = &j.wl, .plat = &j.plat, .rank_gpu = j.rank_gpu,
                       .tl = &tl, .m = &m, .outcome = &outcome, .plan = mi.plan, .verbose = o.verbose,
                       .plan_note = j.plan_note.kind ? &j.plan_note : NULL};
    /* Every output is attempted: one that fails loses no other, and the exit
     * code is the first failure's. */
    int out_rc = 0;
    if (write_report(&ri, o.format, &st) != 0)
        out_rc = cli_report_error(&st);
    pg_status_clear(&st);
    if (o.trace_path != NULL && report_trace(&ri, o.trace_path, &st) != 0) {
        int r = cli_report_error(&st);
        out_rc = out_rc ? out_rc : r;
    }
    pg_status_clear(&st);
    if (o.svg_path != NULL && report_svg(&ri, o.svg_path, &st) != 0) {
        int r = cli_report_error(&st);
        out_rc = out_rc ? out_rc : r;
    }
    if (out_rc != 0) {
        rc = out_rc;
        goto done;
    }
    if (m.offloads_chosen > 0 && m.offloads_copied == 0)   /* the policy asked for offload and got none */
        fprintf(stderr,
                "pipegrid: warning: none of the %d activations chosen for offload was offloaded: each F-to-B window "
                "is shorter than its copies (offloads_chosen, offloads_copied)\n",
                m.offloads_chosen);
    const char *in_order = job_pairs_in_order(&j, &mem_plan);
    if (in_order != NULL)
        fprintf(stderr,
                "pipegrid: warning: %s run in order under the memory plan (offload or recompute): their all-to-alls "
                "are not hidden under compute, as without the overlap (docs/parallelism.md)\n",
                in_order);
    if (j.plan_note.kind && !j.plan_note.feasible)   /* else the OOM below would read as if nothing were planned */
        fprintf(stderr, "pipegrid: %s is infeasible: %s\n", j.plan_note.kind, j.plan_note.reason);
    if (m.noom > 0) {
        fprintf(stderr, "pipegrid: out of memory predicted on %d rank%s (see oom)\n", m.noom, m.noom > 1 ? "s" : "");
        rc = PG_EXIT_OOM;
    }
done:
    job_parallel_free(&jpar);
    plan_free(&mem_plan);
    metrics_free(&m);
    timeline_free(&tl);
    job_finish(&j, &o);
    return rc;
}
