/* cli.h: the pipegrid command line.
 *
 * The command line parses arguments and prints; everything else is the job
 * layer's (job/job.h): every subcommand that reads an experiment goes through
 * the same job pipeline there: experiment file (or the bundled default) +
 * --set overrides -> typed experiment -> workload -> schedule -> platform.
 * Each step reports bad input as exit 2 with file, line and key; the
 * subcommand only decides what to do with the result and prints it.
 */
#ifndef PG_CLI_CLI_H
#define PG_CLI_CLI_H

#include "job/job.h"
#include "util/error.h"

typedef enum { FORMAT_TEXT, FORMAT_JSON, FORMAT_CSV, FORMAT_TORCH_CSV, FORMAT_JSONL } output_format;

/* Options shared by run, schedule, bound and sweep. */
typedef struct cli_options {
    const char *experiment_path;   /* NULL: the bundled default experiment */
    const char **sets;             /* "KEY=VALUE" in command-line order */
    int nsets;
    output_format format;
    const char *trace_path;        /* --trace */
    const char *svg_path;          /* --svg: the pipeline picture */
    int color;                     /* schedule show: -1 auto, 0 never, 1 always */
    int simulated;                 /* schedule show --simulated */
    const char **grids;            /* sweep --grid KEY=V1,V2 */
    int ngrids;
    int jobs;                      /* sweep -j */
    const char *output_path;       /* sweep -o: resume file */
    const char *emit;              /* sweep --emit slurm|parallel */
    const char *chunks;            /* sweep --chunks N (with --emit) */
    const char *chunk;             /* sweep --chunk K/N */
    const char *resume_path;       /* optimize --resume FILE: simulated candidates, kept across runs */
    int full_front;                /* optimize --full-front: skip only what the simulated front dominates */
    int verbose;                   /* run --verbose: the text report's long provenance */
    const char *time_limit;        /* optimize --time-limit SECONDS (checked by the search) */
} cli_options;

/* Options beyond --set and --format, which every such command takes.  A
 * command names the ones it uses; any other is an input error, never
 * silently ignored. */
enum {
    CLI_OPT_TRACE = 1u << 0,
    CLI_OPT_SVG = 1u << 1,
    CLI_OPT_COLOR = 1u << 2,
    CLI_OPT_SIMULATED = 1u << 3,
    CLI_OPT_GRID = 1u << 4,
    CLI_OPT_JOBS = 1u << 5,
    CLI_OPT_OUTPUT = 1u << 6,
    CLI_OPT_EMIT = 1u << 7,
    CLI_OPT_CHUNKS = 1u << 8,
    CLI_OPT_CHUNK = 1u << 9,
    CLI_OPT_RESUME = 1u << 10,
    CLI_OPT_FULL_FRONT = 1u << 11,
    CLI_OPT_VERBOSE = 1u << 12,
    CLI_OPT_TIME_LIMIT = 1u << 13,
};

/* Parse argv[first..]; allowed_formats is a bitmask of 1 << output_format,
 * accepted one of CLI_OPT_*. */
int cli_parse_options(int argc, char **argv, int first, unsigned allowed_formats, unsigned accepted, cli_options *o,
                      pg_status *st);
void cli_options_free(cli_options *o);

/* The start of every subcommand that reads an experiment: status cleared,
 * argv[first..] parsed (formats: bitmask of 1 << output_format; accepted:
 * the CLI_OPT_* it uses), the
 * experiment loaded and, with want_schedule, the workload and schedule
 * built.  Whatever it returns, job_finish(j, o) is then safe and needed. */
int job_start(int argc, char **argv, int first, unsigned formats, unsigned accepted, int want_schedule,
              cli_options *o, job *j, pg_status *st);
void job_finish(job *j, cli_options *o);

/* Write out to standard output: 0, or PG_EXIT_INTERNAL in st. */
int cli_write_stdout(const strbuf *out, pg_status *st);

/* Subcommands: return the process exit code. */
int cmd_run(int argc, char **argv);
int cmd_schedule(int argc, char **argv);
int cmd_bound(int argc, char **argv);      /* cmd_bound.c: seed 000 lower bound */
int cmd_keys(int argc, char **argv);
int cmd_calibrate(int argc, char **argv); /* cmd_calibrate.c */
int cmd_validate(int argc, char **argv);  /* cmd_validate.c */
int cmd_sweep(int argc, char **argv);   /* cmd_sweep.c, see sweep.h */
int cmd_merge(int argc, char **argv);   /* merge_cli.c; the merge is job/sweep.h's */
int cmd_plan_offload(int argc, char **argv);   /* cmd_plan_offload.c: `plan offload` (argv[2] = "offload") */
int cmd_optimize(int argc, char **argv);       /* optimize_cli.c: prints job/search.h's outcome */
int cmd_plan(int argc, char **argv);    /* cmd_plan.c: `plan remat`, and `plan offload` passed on */

/* Print st->msg to stderr as "pipegrid: <msg>" and return st->code. */
int cli_report_error(const pg_status *st);

#endif
