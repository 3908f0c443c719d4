/* cli.h: the pipegrid command line.
 *
 * Every subcommand that reads an experiment goes through the same job
 * pipeline (job.c): experiment file (or the bundled default) + --set
 * overrides -> typed experiment -> workload -> schedule -> platform.  Each
 * step reports bad input as exit 2 with file, line and key; the subcommand
 * only decides what to do with the result.
 */
#ifndef PG_CLI_CLI_H
#define PG_CLI_CLI_H

#include "model/config.h"
#include "model/experiment.h"
#include "model/platform.h"
#include "model/workload.h"
#include "opt/bound.h"
#include "opt/offload_order.h"
#include "opt/remat_ilp.h"
#include "schedule/plan.h"
#include "schedule/schedule.h"
#include "sim/metrics.h"
#include "sim/sim.h"
#include "util/error.h"

typedef enum { FORMAT_TEXT, FORMAT_JSON, FORMAT_CSV, FORMAT_TORCH_CSV } output_format;

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
};

/* Parse argv[first..]; allowed_formats is a bitmask of 1 << output_format,
 * accepted one of CLI_OPT_*. */
int cli_parse_options(int argc, char **argv, int first, unsigned allowed_formats, unsigned accepted, cli_options *o,
                      pg_status *st);
void cli_options_free(cli_options *o);

typedef struct job {
    config cfg;
    experiment exp;
    workload wl;
    schedule sched;
    platform_desc plat;
    int *rank_gpu;                 /* [pp] GPU index of each pipeline rank */
    int have_wl, have_sched, have_plat;
} job;

int job_load_experiment(job *j, const cli_options *o, pg_status *st);
int job_build_schedule(job *j, pg_status *st);   /* also builds the workload */
int job_build_platform(job *j, pg_status *st);
/* The memory plan of the offload / recompute keys (schedule/plan.h), after
 * job_build_schedule (and job_build_platform for recompute=plan, the
 * planner of job_remat.c).  The caller frees out with plan_free. */
int job_build_plan(job *j, memplan *out, pg_status *st);
/* offload=plan (job_offload.c): the plan the planner chooses among its
 * candidates (opt/offload_order.h: copy models and, with
 * offload.order=search, orders), each simulated in a forked child; the
 * chosen order replaces j->sched.  After job_build_schedule and
 * job_build_platform.  The caller frees out (plan_free). */
int job_plan_offload(job *j, memplan *out, offload_plan_result *res, offload_order_result *ores, pg_status *st);
/* offload=full|selective: PipeOffload's chunk count (offload.chunks, or the
 * preset's) and, with offload.rules=pipeoffload, what the plan's copy rules
 * need (schedule/plan.h: each rank's host link, each stage's op seconds, the
 * warm-up postponement); returns the memory pol then points into (free it
 * after plan_build), or NULL. */
double *job_offload_policy(const job *j, plan_policy *pol);
/* The generators' parameters for the experiment (per-rank-share times). */
int job_sched_params(const experiment *e, sched_params *p, pg_status *st);
/* recompute=plan (job_remat.c): the rematerialization plan (opt/remat_ilp.h)
 * of the job's schedule under each rank's capacity minus its static memory;
 * after job_build_schedule and job_build_platform.  The caller frees out
 * (plan_free) and res (remat_result_free), also on error. */
int job_plan_remat(const job *j, memplan *out, remat_result *res, pg_status *st);
/* Static bytes (weights, gradients, optimizer state) of rank r. */
double job_rank_static_bytes(const job *j, int r);
void job_free(job *j);

/* Tensor / data parallelism and the optimizer step for the simulator
 * (sim.h's sim_parallel), after job_build_platform: the GPU of every
 * (rank, replica, tp rank) in Megatron's order, the tp.* and dp.* keys, and
 * each rank's optimizer step from its GPU type's memory bandwidth
 * (costmodel_optimizer_s over the rank's parameters per GPU; 0 when the
 * type has no profiles/gpus file).  sim_par(jp) is NULL when there is
 * nothing to simulate beyond one pipeline (tp = dp = 1, no optimizer step).
 * Free with job_parallel_free. */
typedef struct job_parallel {
    sim_parallel par;
    int *gpu;                      /* [pp * dp * tp] */
    double *optimizer_s;           /* [pp] */
    int active;
} job_parallel;
int job_build_parallel(const job *j, job_parallel *jp, pg_status *st);
/* The dp all-reduce bucket the simulation uses: dp.bucket_bytes raised to
 * its floor (1 MiB, and at most 256 buckets per stage); 0 stays 0. */
double job_dp_bucket_bytes(const job *j);
const sim_parallel *job_sim_parallel(const job_parallel *jp);
void job_parallel_free(job_parallel *jp);

/* The lower bound of the job's workload, placement, latency and memory
 * limit: `any` over every schedule (split backward allowed), `cls` over the
 * chosen schedule's own backward kind.  Call after job_build_schedule (and
 * job_build_platform when the network is not ideal: GPU speeds scale times). */
typedef struct job_bound {
    bound_input in;
    bound_result any, cls;
    double *times;                 /* storage behind in.f/b/w/w_fraction */
} job_bound;
int job_compute_bound(const job *j, job_bound *jb, pg_status *st);
/* Communication the pipeline bound leaves out, for optimize's bound, where
 * the rates are known (the generated cluster; not with cp > 1).  jp is the job's parallelism (job_build_parallel).
 * job_tp_comm_bound: into stage_s[nstages], the least seconds of the
 * tensor-parallel collectives that follow the compute of each F and B (or
 * BW) of a stage (its ring at its links' rates, latencies left out); 0 when
 * there are none or the rates are unknown (stage_s then untouched).
 * job_dp_allreduce_bound: a lower bound on the end of the data-parallel
 * gradient all-reduce (opt/bound.h bound_dp_allreduce_end) for the
 * pipeline's bound input in, from the first op's start; tp_comm_s (or
 * NULL) is what was added to in's B times around their compute (tp
 * collectives, recomputation); 0 where dp is 1 or no rate is known. */
int job_tp_comm_bound(const job *j, const job_parallel *jp, double *stage_s);
/* Into stage_s[nstages]: the least seconds of the forward recomputation the
 * simulator runs before every B (or BW) of each stage (the R ops of
 * recompute=full or selective, sim/actmem.h: the stage's compute scale,
 * job_stage_time_scale); 0 with no recomputation or when a planner decides
 * it (recompute=plan, offload=plan). */
int job_recompute_bound(job *j, double *stage_s);
/* What multiplies a stage's profiled seconds on its rank's GPU: the tp
 * group's share and the reference speed over the GPU's (the bound's and the
 * simulator's op times). */
double job_stage_time_scale(const job *j, int stage);
double job_dp_allreduce_bound(const job *j, const job_parallel *jp, const bound_input *in, const double *tp_comm_s);
void job_bound_free(job_bound *jb);
/* The bound with every cost no schedule avoids, the one piece of code for
 * `run`'s and `optimize`'s: bound_lower over `in` (a job_compute_bound
 * input, the caller's memory limit and backward kind) with each F and B
 * (or BW) carrying its least tp collectives (job_tp_comm_bound) and each B
 * its recomputation (job_recompute_bound).  Fills:
 *   makespan_s      that bound on the pipeline (0: none could be computed)
 *   compute_s       the same bound on the ops' compute alone
 *   reduce_end_s    job_dp_allreduce_bound over the costed input (0: none)
 *   step_s          the shortest rank's optimizer step (0: unknown)
 *   rank_least_s    [pp], the least busy time of each rank: its ops, each
 *                   at its costed least (the bound's per-op times)
 * Returns 0, or non-zero when no bound can be stated (nothing filled but
 * zeros; rank_least_s is then NULL). */
typedef struct job_costed_bound {
    double makespan_s, compute_s, reduce_end_s, step_s;
    double *rank_least_s;
} job_costed_bound;
int job_costed_bound_compute(job *j, const bound_input *in, job_costed_bound *out);
void job_costed_bound_free(job_costed_bound *cb);

/* The start of every subcommand that reads an experiment: status cleared,
 * argv[first..] parsed (formats: bitmask of 1 << output_format; accepted:
 * the CLI_OPT_* it uses), the
 * experiment loaded and, with want_schedule, the workload and schedule
 * built.  Whatever it returns, job_finish(j, o) is then safe and needed. */
int job_start(int argc, char **argv, int first, unsigned formats, unsigned accepted, int want_schedule,
              cli_options *o, job *j, pg_status *st);
void job_finish(job *j, cli_options *o);

/* After job_start: the platform, the memory plan, the tp/dp set-up and the
 * simulation, as `run` does them.  plan, jpar and tl must be zeroed (or
 * initialised) by the caller, who frees them (plan_free, job_parallel_free,
 * timeline_free) whatever this returns. */
int job_simulate(job *j, memplan *plan, job_parallel *jpar, timeline *tl, sim_outcome *out, pg_status *st);
/* The simulation of an already planned job: its parallelism (job_build_parallel, jpar freed by the caller),
 * then one sim_run; what job_simulate does after the plan. */
int job_simulate_plan(const job *j, const memplan *plan, job_parallel *jpar, timeline *tl, sim_outcome *out,
                      pg_status *st);
/* The metrics of a simulated job (sim/metrics.h): its memory keys and plan (an empty plan as none). */
metrics_input job_metrics_input(const job *j, const timeline *tl, const memplan *plan);

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
int cmd_merge(int argc, char **argv);   /* cmd_merge.c */
int cmd_plan_offload(int argc, char **argv);   /* cmd_plan_offload.c: `plan offload` (argv[2] = "offload") */
int cmd_optimize(int argc, char **argv);       /* cmd_optimize.c: search + Pareto front + best plan */
int cmd_plan(int argc, char **argv);    /* cmd_plan.c: `plan remat`, and `plan offload` passed on */

/* Print st->msg to stderr as "pipegrid: <msg>" and return st->code. */
int cli_report_error(const pg_status *st);

#endif
