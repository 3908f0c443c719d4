/* optimize_cli.c: `pipegrid optimize`: its options, and the printing of
 * the search's outcome (report_opt.h) and summary; the search itself (the
 * candidates, their bounds, pruning and simulation) is the job layer's
 * (job/search.h, search.c, whose header comment says what is searched and
 * how). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "job/search.h"
#include "report/report_opt.h"

static int explicit_jobs(int argc, char **argv)
{
    for (int i = 2; i < argc; i++)
        if (strncmp(argv[i], "-j", 2) == 0 || strncmp(argv[i], "--jobs", 6) == 0) return 1;
    return 0;
}

/* Pack the search's outcome into the report layer's plain rows and print it
 * (report_opt.h). */
static int print_result(const search *s, const int *on_front, const int *front, int nfront, int best,
                        output_format fmt, int full_front, pg_status *st)
{
    strbuf *text = pg_xcalloc((size_t)s->n + 1, sizeof *text);
    report_optimize_point *pt = pg_xcalloc((size_t)nfront + 1, sizeof *pt);
    report_optimize_row *rows = pg_xcalloc((size_t)s->n + 1, sizeof *rows);
    strbuf header;
    sb_init(&header);
    sb_append_n(&header, s->header.data, s->header.len - 1);
    report_optimize_input in = {.global_batch = s->global_batch, .gpus = s->gpus, .full_front = full_front,
                                .nfront = nfront, .front = pt, .csv_header = header.data ? header.data : "", .ncandidates = s->n,
                                .rows = rows};
    for (int i = 0; i < s->n; i++) {
        const candidate *c = &s->c[i];
        sb_init(&text[i]);
        if (fmt == FORMAT_CSV || fmt == FORMAT_JSONL) {
            search_candidate_row(s, c, &text[i]);
            rows[i] = (report_optimize_row){.run_columns = text[i].data ? text[i].data : "", .status = search_status_name(c->status),
                                            .samples_per_s_bound = c->ub_samples_per_s,
                                            .static_bytes = c->status != C_INVALID ? c->static_bytes : NAN,
                                            .on_front = on_front[i], .best = i == best};
        } else {
            search_settings(s, c, &text[i]);
        }
    }
    for (int i = 0; i < nfront; i++) {
        const candidate *c = &s->c[front[i]];
        pt[i] = (report_optimize_point){.samples_per_s = c->samples_per_s, .iteration_s = c->iteration_s,
                                        .makespan_s = c->makespan_s, .peak_bytes = c->peak_bytes,
                                        .settings = text[front[i]].data ? text[front[i]].data : "", .best = front[i] == best};
    }
    strbuf out;
    sb_init(&out);
    if (fmt == FORMAT_CSV || fmt == FORMAT_JSONL) report_optimize_csv(&in, &out);
    else report_optimize_text(&in, &out);
    if (fmt == FORMAT_JSONL) {   /* the CSV's rows as JSON objects, keyed by its header */
        strbuf lines;
        sb_init(&lines);
        char *row = strchr(out.data, '\n');
        *row = '\0';   /* the header line alone; every row ends with '\n' */
        for (char *next; row[1]; row = next) {
            next = strchr(row + 1, '\n');
            *next = '\0';
            sweep_jsonl_row(out.data, row + 1, &lines);
        }
        sb_free(&out);
        out = lines;
    }
    int rc = cli_write_stdout(&out, st);
    sb_free(&out);
    sb_free(&header);
    for (int i = 0; i < s->n; i++) sb_free(&text[i]);
    free(text);
    free(pt);
    free(rows);
    return rc;
}

int cmd_optimize(int argc, char **argv)
{
    cli_options o;
    pg_status st;
    job j;
    search s;
    memset(&s, 0, sizeof s);
    int rc = job_start(argc, argv, 2, 1u << FORMAT_TEXT | 1u << FORMAT_CSV | 1u << FORMAT_JSONL,
                       CLI_OPT_GRID | CLI_OPT_JOBS | CLI_OPT_OUTPUT | CLI_OPT_RESUME | CLI_OPT_FULL_FRONT | CLI_OPT_SVG | CLI_OPT_TIME_LIMIT, 0, &o, &j, &st);
    if (rc == 0 && !explicit_jobs(argc, argv)) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        o.jobs = cpus > 0 ? (int)cpus : 1;
    }
    if (rc == 0) rc = job_build_schedule(&j, &st);
    if (rc == 0) rc = job_build_platform(&j, &st);
    if (rc == 0) {
        search_options so = {.experiment_path = o.experiment_path, .sets = o.sets, .nsets = o.nsets,
                             .grids = o.grids, .ngrids = o.ngrids, .jobs = o.jobs, .full_front = o.full_front,
                             .resume_path = o.resume_path, .progress = isatty(STDERR_FILENO), .child = cmd_run, .time_limit = o.time_limit};
        rc = search_run(&so, &j, &s, &st);
    }
    if (rc != 0) {
        rc = cli_report_error(&st);
        goto done;
    }
    search_outcome oc;
    search_outcome_of(&s, o.full_front, &oc);
    const int *counts = oc.counts;
    int nfit = oc.nfit, nsimoom = oc.nsimoom, best = oc.best;
    fprintf(stderr, "pipegrid: optimize: %d candidates (global batch %ld samples on %d GPUs): %d simulated (%d fit, "
                    "%d out of memory, %d failed); skipped before simulation: %d by static memory over capacity, %d by static "
                    "memory and least activations over it, %d "
                    "by the lower bound (%s); %d refused by the job's checks\n",
            s.n, s.global_batch, s.gpus, counts[C_SIMULATED], nfit, nsimoom, counts[C_SIMULATED] - nfit - nsimoom,
            counts[C_PRUNED_MEMORY], counts[C_PRUNED_ACTIVATIONS], counts[C_PRUNED_BOUND],
            o.full_front ? "a simulated plan beats them on both axes" : "slower than the best simulated plan",
            counts[C_INVALID]);
    int nbudgeted = 0;
    for (int i = 0; i < s.n; i++) nbudgeted += s.c[i].status == C_SIMULATED && search_budgeted_planner(&s, &s.c[i]);
    if (nbudgeted) {
        fprintf(stderr, "pipegrid: optimize: its %d offload=plan candidates planned with", nbudgeted);
        for (int i = 0; i < s.nplanner_sets; i++) fprintf(stderr, " %s", s.planner_sets[i]);
        fprintf(stderr, " (optimize's budget; give these keys to change it)\n");
    }
    if (best < 0) {
        int noom = nsimoom + counts[C_PRUNED_MEMORY] + counts[C_PRUNED_ACTIVATIONS];
        fprintf(stderr, "pipegrid: optimize: no candidate fits in memory%s; raise memory.capacity or widen the "
                        "search (--grid)\n", noom ? " (every one that ran is out of memory)" : "");
        rc = s.cut ? PG_EXIT_CUT : noom ? PG_EXIT_OOM : PG_EXIT_INPUT;
    } else {
        rc = print_result(&s, oc.on_front, oc.front, oc.nfront, best, o.format, o.full_front, &st);
        if (rc == 0 && o.output_path) {
            rc = search_write_best(o.output_path, &j.cfg, &s, &s.c[best], &st);
            if (rc == 0) fprintf(stderr, "pipegrid: optimize: best plan written to %s\n", o.output_path);
        }
        if (rc == 0 && o.svg_path) rc = search_write_svg(o.svg_path, &s, &oc, &st);
        rc = rc != 0 ? cli_report_error(&st) : s.cut ? PG_EXIT_CUT : 0;
    }
    search_outcome_free(&oc);
done:
    search_free(&s);
    job_finish(&j, &o);
    return rc;
}
