/* main.c: pipegrid's entry point: dispatch to a subcommand. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "config.h"
#include "job/search.h"

/* One entry per subcommand: its usage lines, printed by `pipegrid --help`
 * (all of them, in this order) and by `pipegrid COMMAND --help` (its own). */
typedef struct command_usage {
    const char *name;
    const char *text;
} command_usage;

static const command_usage USAGES[] = {
    {"run",
     "  pipegrid run [EXPERIMENT.yaml] [--set KEY=VALUE]... [--format text|json|csv] [--trace FILE] [--svg FILE]\n"
     "                    [--verbose]\n"
     "      simulate one experiment (the bundled default when no file is given); --verbose: the cost model's\n"
     "      whole provenance in the text report\n"},
    {"schedule",
     "  pipegrid schedule export [EXPERIMENT.yaml] [--set KEY=VALUE]... --format torch-csv\n"
     "      print the schedule as PyTorch pipelining's compute-only CSV (replay it with schedule=file:PATH)\n"
     "  pipegrid schedule show [EXPERIMENT.yaml] [--set KEY=VALUE]... [--simulated] [--color[=always|never]]\n"
     "      draw the schedule in the terminal (ideal timing, or simulated with --simulated)\n"
     "  pipegrid schedule list\n"
     "      list the schedule generators\n"},
    {"sweep",
     "  pipegrid sweep [EXPERIMENT.yaml] --grid KEY=V1,V2,... [--grid ...]... [--set KEY=VALUE]... [-j N]\n"
     "                 [--format csv|jsonl] [-o FILE] [--chunk K/N]\n"
     "      run every combination of the grid values, N processes at a time, one CSV row (or JSON line) each,\n"
     "      a failed one with its exit_code and error;\n"
     "      with -o FILE, rows already in FILE are kept and only the missing ones run (resume)\n"
     "  pipegrid sweep ... --emit slurm|parallel [--chunks N] [-o FILE]\n"
     "      write a Slurm job-array script or a GNU parallel job list running the sweep in N chunks\n"},
    {"merge",
     "  pipegrid merge [--grid KEY=V1,V2,...]... [-o FILE] PART.csv...\n"
     "      join chunk CSVs in grid order; names the missing combinations (exit 2)\n"},
    {"calibrate",
     "  pipegrid calibrate CSV... [--gpu TYPE|FILE] [--fit-fraction F] [--max-weight W] [--folds K]\n"
     "                     [--max-mape X] [--max-overall-mape Z] [--max-error Y] [--with-regressions] [-o FILE]\n"
     "      fit the cost model's GPU parameters (workload=gpt) to measured iteration times\n"
     "      (any file of data/validation/; rows of other GPU types are listed as skipped, and so are\n"
     "      rows of documented software regressions, regressions.csv, unless --with-regressions)\n"},
    {"validate",
     "  pipegrid validate CSV... [--gpu TYPE|FILE] [--fit-fraction F] [--format text|csv] [--with-regressions]\n"
     "                    [--max-mape X] [--max-error Y] [--emit DIR] [-j N] [--surrogate] [--no-layer-profiles]\n"
     "      predict measured iteration times by simulating every row as `run` does: MAPE, max error, per file\n"
     "      and parallelism, with the calibration surrogate's error and its gap beside them; --emit DIR writes\n"
     "      each row as an experiment file; -j N simulations at a time; --surrogate: the surrogate alone\n"},
    {"bound",
     "  pipegrid bound [EXPERIMENT.yaml] [--set KEY=VALUE]... [--format text|json]\n"
     "      lower bound on makespan for the workload, pp, microbatches and memory.limit (no simulation)\n"},
    {"plan",
     "  pipegrid plan remat [EXPERIMENT.yaml] [--set KEY=VALUE]... [--format text|json]\n"
     "      the rematerialization plan (forward-backward rematerialization ILP) of the schedule under\n"
     "      memory.capacity: per rank, stage and microbatch, with its predicted makespan and peak memory\n"
     "      (no simulation)\n"
     "  pipegrid plan offload [EXPERIMENT.yaml] [--set KEY=VALUE]... [--format text|json]\n"
     "      the offload / recompute plan of offload=plan (OptPipe-style MILP) under memory.capacity, and its simulation\n"},
    {"optimize",
     "  pipegrid optimize [EXPERIMENT.yaml] [--set KEY=VALUE]... [--grid KEY=V1,V2,...]... [-j N]\n"
     "                    [--format text|csv|jsonl] [-o BEST.yaml] [--resume FILE] [--full-front]\n"
     "                    [--time-limit SECONDS] [--svg FRONT.svg]\n"
     "      search tp x pp x dp (same GPUs, same global batch) x schedules x recompute / offload plans, skipping\n"
     "      what memory (static, least activations) or the lower bound rules out; print the Pareto front\n"
     "      (throughput against peak memory); write the fastest plan that fits as an experiment file; past\n"
     "      --time-limit, print the best so far and exit 5; offload=plan candidates plan with\n"
     "      " SEARCH_PLANNER_TIME_SET " " SEARCH_PLANNER_CAPACITY_SET " " SEARCH_PLANNER_REMAT_SET "\n"
     "      unless those keys are given\n"},
    {"keys",
     "  pipegrid keys\n"
     "      list every experiment key, its type, default and meaning\n"},
};
#define NCOMMANDS (sizeof USAGES / sizeof USAGES[0])

static const char USAGE_HEAD[] =
    "pipegrid " PACKAGE_VERSION ": simulate pipeline-parallel training schedules on a simulated GPU cluster\n"
    "\n"
    "usage:\n";
static const char USAGE_TAIL[] =
    "  pipegrid --help | --version | COMMAND --help\n"
    "\n"
    "Exit codes: 0 ok, 1 environment failure (output not written), 2 bad input, 3 out of memory predicted,\n"
    "4 deadlock.\n"
    "Quantities take SimGrid units: 80GiB, 34MiB, 150GBps, 100Gbps, 2us, 1.5ms.\n";

static void print_usage(FILE *f)
{
    fputs(USAGE_HEAD, f);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fputs(USAGES[i].text, f);
    fputs(USAGE_TAIL, f);
}

/* The registry's schedules, for `schedule --help` (nothing else lists them). */
static void print_schedule_names(void)
{
    strbuf names;
    sb_init(&names);
    sched_names(0, ", ", ", ", &names);
    printf("schedules (schedule=NAME): %s, file:PATH\n", names.data ? names.data : "");
    sb_free(&names);
}

static const command_usage *find_usage(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(USAGES[i].name, name) == 0)
            return &USAGES[i];
    return NULL;
}

static int is_help(const char *arg)
{
    return arg && (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0);
}

/* `pipegrid COMMAND --help` and `pipegrid schedule|plan VERB --help`. */
static int wants_command_help(int argc, char **argv)
{
    if (argc > 2 && is_help(argv[2]))
        return 1;
    return argc > 3 && is_help(argv[3]) && (strcmp(argv[1], "schedule") == 0 || strcmp(argv[1], "plan") == 0);
}

/* Whatever a command printed must have reached standard output: a full disk
 * or a closed pipe (`pipegrid keys > /dev/full`) is an environment failure,
 * never a silent success. */
static int finish_stdout(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "pipegrid: cannot write to standard output: %s\n", strerror(errno));
        return rc == PG_EXIT_OK ? PG_EXIT_INTERNAL : rc;
    }
    return rc;
}

static int dispatch(int argc, char **argv)
{
    const char *cmd = argv[1];
    if (is_help(cmd) || strcmp(cmd, "help") == 0) {
        print_usage(stdout);
        return PG_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("pipegrid %s\n", PACKAGE_VERSION);
        return PG_EXIT_OK;
    }
    const command_usage *u = find_usage(cmd);
    if (u && wants_command_help(argc, argv)) {
        printf("usage:\n%s", u->text);
        if (strcmp(u->name, "schedule") == 0)
            print_schedule_names();
        return PG_EXIT_OK;
    }
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc, argv);
    if (strcmp(cmd, "schedule") == 0)
        return cmd_schedule(argc, argv);
    if (strcmp(cmd, "bound") == 0)
        return cmd_bound(argc, argv);
    if (strcmp(cmd, "plan") == 0)
        return cmd_plan(argc, argv);
    if (strcmp(cmd, "sweep") == 0)
        return cmd_sweep(argc, argv);
    if (strcmp(cmd, "optimize") == 0)
        return cmd_optimize(argc, argv);
    if (strcmp(cmd, "merge") == 0)
        return cmd_merge(argc, argv);
    if (strcmp(cmd, "calibrate") == 0)
        return cmd_calibrate(argc, argv);
    if (strcmp(cmd, "validate") == 0)
        return cmd_validate(argc, argv);
    if (strcmp(cmd, "keys") == 0)
        return cmd_keys(argc, argv);
    fprintf(stderr, "pipegrid: unknown command '%s' (see pipegrid --help)\n", cmd);
    return PG_EXIT_INPUT;
}

int main(int argc, char **argv)
{
    pg_alloc_keep_freed_memory();
    /* A closed pipe (`pipegrid run | head -1`) must not kill the process
     * with SIGPIPE (exit 141): writes fail with EPIPE instead, and
     * finish_stdout reports it as the environment failure it is (exit 1).
     * Sweep and optimize workers inherit this, so a worker whose parent died
     * exits 1 the same way. */
    signal(SIGPIPE, SIG_IGN);
    /* Likewise a file-size limit (`ulimit -f`): the write fails with EFBIG
     * and the output is reported as not written (exit 1), not SIGXFSZ. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        print_usage(stderr);
        return PG_EXIT_INPUT;
    }
    return finish_stdout(dispatch(argc, argv));
}
