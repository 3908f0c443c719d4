/* cmd_schedule.c: `pipegrid schedule export|show|list` and `pipegrid keys`. */
#include <stdio.h>
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

static int schedule_emit(job *j, const cli_options *o, int show, pg_status *st)
{
    strbuf out;
    sb_init(&out);
    int rc = 0;
    if (!show) {
        sched_export_torch_csv(&j->sched, &out);
    } else {
        sched_times times;
        const stage_cost *c = &j->wl.stage[0];
        int v = j->sched.v;
        /* Ideal timing with the rank-share times (chunk ops cost t/v). */
        rc = sched_eval_ideal(&j->sched, c->f_s * v, c->b_s * v, c->w_s * v,
                              j->exp.network == NET_IDEAL ? j->exp.ideal_latency_s : 0.0, &times, st);
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
    int rc = job_start(argc, argv, 3, formats, 1, &o, &j, &st);
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
    for (size_t i = 0; i < n; i++)
        printf("%-*s  %-*s  %-*s  %s\n", wkey, docs[i].key, wtype, docs[i].type, wdef, docs[i].default_text,
               docs[i].help);
    return PG_EXIT_OK;
}
