/* main.c: pipegrid's entry point: dispatch to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "config.h"

static const char USAGE[] =
    "pipegrid " PACKAGE_VERSION ": simulate pipeline-parallel training schedules on a simulated GPU cluster\n"
    "\n"
    "usage:\n"
    "  pipegrid run [EXPERIMENT.yaml] [--set KEY=VALUE]... [--format text|json|csv] [--trace FILE] [--svg FILE]\n"
    "      simulate one experiment (the bundled default when no file is given)\n"
    "  pipegrid schedule export [EXPERIMENT.yaml] [--set KEY=VALUE]... --format torch-csv\n"
    "      print the schedule as PyTorch pipelining's compute-only CSV (replay it with schedule=file:PATH)\n"
    "  pipegrid schedule show [EXPERIMENT.yaml] [--set KEY=VALUE]... [--simulated] [--color[=always|never]]\n"
    "      draw the schedule in the terminal (ideal timing, or simulated with --simulated)\n"
    "  pipegrid schedule list\n"
    "      list the schedule generators\n"
    "  pipegrid sweep [EXPERIMENT.yaml] --grid KEY=V1,V2,... [--grid ...]... [--set KEY=VALUE]... [-j N]\n"
    "                 [--format csv] [-o FILE] [--chunk K/N]\n"
    "      run every combination of the grid values, N processes at a time, one CSV row each;\n"
    "      with -o FILE, rows already in FILE are kept and only the missing ones run (resume)\n"
    "  pipegrid sweep ... --emit slurm|parallel [--chunks N] [-o FILE]\n"
    "      write a Slurm job-array script or a GNU parallel job list running the sweep in N chunks\n"
    "  pipegrid merge [--grid KEY=V1,V2,...]... [-o FILE] PART.csv...\n"
    "      join chunk CSVs in grid order; names the missing combinations (exit 2)\n"
    "  pipegrid calibrate CSV [--gpu TYPE|FILE] [--fit-fraction F] [--max-weight W] [-o FILE]\n"
    "      fit the cost model's GPU parameters (workload=gpt) to measured iteration times\n"
    "  pipegrid validate CSV [--gpu TYPE|FILE] [--fit-fraction F] [--format text|csv]\n"
    "      predict measured iteration times with the cost model: MAPE, max error, per parallelism\n"
    "  pipegrid bound [EXPERIMENT.yaml] [--set KEY=VALUE]... [--format text|json]\n"
    "      lower bound on makespan for the workload, pp, microbatches and memory.limit (no simulation)\n"
    "  pipegrid plan remat [EXPERIMENT.yaml] [--set KEY=VALUE]... [--format text|json]\n"
    "      the rematerialization plan (seed 004 ILP) of the schedule under memory.capacity: per rank, stage\n"
    "      and microbatch, with its predicted makespan and peak memory (no simulation)\n"
    "  pipegrid plan offload [EXPERIMENT.yaml] [--set KEY=VALUE]... [--format text|json]\n"
    "      the offload / recompute plan of offload=plan (OptPipe-style MILP) under memory.capacity, and its simulation\n"
    "  pipegrid optimize [EXPERIMENT.yaml] [--set KEY=VALUE]... [--grid KEY=V1,V2,...]... [-j N] [--format text|csv]\n"
    "                    [-o BEST.yaml]\n"
    "      simulate schedules x pp x microbatches x recompute / offload plans; print the Pareto front (throughput\n"
    "      against peak memory); write the fastest plan that fits as an experiment file\n"
    "  pipegrid keys\n"
    "      list every experiment key, its type, default and meaning\n"
    "  pipegrid --help | --version\n"
    "\n"
    "Exit codes: 0 ok, 2 bad input, 3 out of memory predicted, 4 deadlock.\n"
    "Quantities take SimGrid units: 80GiB, 34MiB, 150GBps, 100Gbps, 2us, 1.5ms.\n";

int cli_report_error(const pg_status *st)
{
    fprintf(stderr, "pipegrid: %s\n", st->msg);
    return st->code ? st->code : PG_EXIT_INTERNAL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(USAGE, stderr);
        return PG_EXIT_INPUT;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(USAGE, stdout);
        return PG_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("pipegrid %s\n", PACKAGE_VERSION);
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
