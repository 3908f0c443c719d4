/* cmd_schedule.c: `pipegrid schedule export|show|list` and `pipegrid keys`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "schedule/draw.h"
#include "schedule/torch_csv.h"

/* Width of `schedule show` when stdout is not a terminal. */
#define DRAW_DEFAULT_COLUMNS 120

static int schedule_list(void)
{
    for (const sched_generator *g = sched_generators(); g->name != NULL; g++)
        printf("%-12s %s\n", g->name, g->summary);
    printf("%-12s %s\n", "file:PATH", "a schedule read from a PyTorch pipelining compute-only CSV");
    return PG_EXIT_OK;
}

/* The schedule's op times in the papers' ideal model: rank-share times
 * (one GPU's share with tp, experiment.h), chunk ops t/v, the
 * network=ideal latency on every cross-rank dependency. */
static int ideal_times(const job *j, sched_times *times, pg_status *st)
{
    const stage_cost *c = &j->wl.stage[0];
    double scale = j->sched.v * experiment_tp_share(&j->exp);
    return sched_eval_ideal(&j->sched, c->f_s * scale, c->b_s * scale, c->w_s * scale,
                            j->exp.network == NET_IDEAL ? j->exp.ideal_latency_s : 0.0, times, st);
}

/* The schedule's op times as simulated (on the experiment's platform, with
 * its memory plan and parallelism): each rank's ops run in list order, so
 * its k-th recorded schedule op is its k-th op.  Recomputations inserted by
 * a plan are not schedule ops: their time shows as idle before the B. */
static int simulated_times(job *j, sched_times *times, pg_status *st)
{
    memplan plan;
    memset(&plan, 0, sizeof plan);
    job_parallel jpar;
    memset(&jpar, 0, sizeof jpar);
    timeline tl;
    timeline_init(&tl);
    sim_outcome outcome;
    int rc = job_simulate(j, &plan, &jpar, &tl, &outcome, st);
    if (rc == 0) {
        const schedule *s = &j->sched;
        memset(times, 0, sizeof *times);
        times->start = pg_xcalloc((size_t)s->pp, sizeof *times->start);
        times->end = pg_xcalloc((size_t)s->pp, sizeof *times->end);
        int *next = pg_xcalloc((size_t)s->pp, sizeof *next);
        for (int r = 0; r < s->pp; r++) {
            times->start[r] = pg_xcalloc((size_t)s->nops[r] + 1, sizeof **times->start);
            times->end[r] = pg_xcalloc((size_t)s->nops[r] + 1, sizeof **times->end);
        }
        double first = 0, last = 0;
        for (size_t i = 0; i < tl.nops; i++) {
            const tl_op op_rec = timeline_op(&tl, i), *op = &op_rec;
            if (op->kind >= OP_KIND_COUNT || op->rank < 0 || op->rank >= s->pp || next[op->rank] >= s->nops[op->rank])
                continue;
            times->start[op->rank][next[op->rank]] = op->start_s;
            times->end[op->rank][next[op->rank]++] = op->end_s;
            if (i == 0 || op->start_s < first) first = op->start_s;
            if (i == 0 || op->end_s > last) last = op->end_s;
        }
        for (int r = 0; r < s->pp; r++) {
            if (s->nops[r] == 0) continue;
            double span = times->end[r][s->nops[r] - 1] - times->start[r][0];
            if (span > times->span) times->span = span;
        }
        times->makespan = last - first;
        free(next);
    }
    job_parallel_free(&jpar);
    plan_free(&plan);
    timeline_free(&tl);
    return rc;
}

static int schedule_emit(job *j, const cli_options *o, int show, pg_status *st)
{
    strbuf out;
    sb_init(&out);
    int rc = 0;
    if (!show) {
        sched_export_torch_csv(&j->sched, &out);
    } else {
        sched_times times;
        rc = o->simulated ? simulated_times(j, &times, st) : ideal_times(j, &times, st);
        if (rc == 0) {
            int color = o->color >= 0 ? o->color : isatty(STDOUT_FILENO);
            sched_draw(&j->sched, &times, color, DRAW_DEFAULT_COLUMNS, &out);
            sched_times_free(&j->sched, &times);
        }
    }
    if (rc == 0)
        rc = cli_write_stdout(&out, st);
    sb_free(&out);
    return rc;
}

int cmd_schedule(int argc, char **argv)
{
    if (argc < 3) {
        fputs("usage: pipegrid schedule export|show|list [EXPERIMENT.yaml] [--set KEY=VALUE]...\n", stderr);
        return PG_EXIT_INPUT;
    }
    const char *verb = argv[2];
    if (strcmp(verb, "list") == 0)
        return schedule_list();
    int show = strcmp(verb, "show") == 0;
    if (!show && strcmp(verb, "export") != 0) {
        fprintf(stderr, "pipegrid: unknown schedule command '%s' (export, show, list)\n", verb);
        return PG_EXIT_INPUT;
    }
    cli_options o;
    pg_status st;
    job j;
    unsigned formats = show ? 1u << FORMAT_TEXT : 1u << FORMAT_TORCH_CSV;
    unsigned accepted = show ? CLI_OPT_COLOR | CLI_OPT_SIMULATED : 0;
    int rc = job_start(argc, argv, 3, formats, accepted, 1, &o, &j, &st);
    if (rc == 0 && !show && o.format != FORMAT_TORCH_CSV)
        rc = pg_fail(&st, PG_EXIT_INPUT, "schedule export: --format torch-csv is required");
    if (rc == 0)
        rc = schedule_emit(&j, &o, show, &st);
    if (rc != 0)
        rc = cli_report_error(&st);
    job_finish(&j, &o);
    return rc;
}

int cmd_keys(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    size_t n;
    const exp_key_doc *docs = experiment_key_docs(&n);
    int wkey = (int)strlen("KEY"), wtype = (int)strlen("TYPE"), wdef = (int)strlen("DEFAULT");
    for (size_t i = 0; i < n; i++) {
        if ((int)strlen(docs[i].key) > wkey) wkey = (int)strlen(docs[i].key);
        if ((int)strlen(docs[i].type) > wtype) wtype = (int)strlen(docs[i].type);
        if ((int)strlen(docs[i].default_text) > wdef) wdef = (int)strlen(docs[i].default_text);
    }
    printf("%-*s  %-*s  %-*s  %s\n", wkey, "KEY", wtype, "TYPE", wdef, "DEFAULT", "MEANING");
    strbuf names;
    sb_init(&names);
    sched_names(0, ", ", ", ", &names);
    for (size_t i = 0; i < n; i++) {
        printf("%-*s  %-*s  %-*s  %s", wkey, docs[i].key, wtype, docs[i].type, wdef, docs[i].default_text,
               docs[i].help);
        /* The schema cannot list the schedules (it sits below the schedule
         * layer): the registry's names follow the key's help. */
        if (strcmp(docs[i].key, "schedule") == 0)
            printf(": %s", names.data ? names.data : "");
        printf("\n");
    }
    sb_free(&names);
    return PG_EXIT_OK;
}
