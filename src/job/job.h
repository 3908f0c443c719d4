/* job.h: the job layer: one experiment turned into a simulated, measured
 * iteration, many of them run in parallel processes, and a space of them
 * searched.
 *
 * The pipeline of one job (job.c, job_bound.c, job_offload.c, job_remat.c):
 *   experiment file + "KEY=VALUE" sets -> typed experiment (job_load_experiment)
 *   -> workload and schedule (job_build_schedule) -> platform
 *   (job_build_platform) -> memory plan (job_build_plan: the offload and
 *   recompute keys, with the planners of opt/) -> simulation (job_simulate,
 *   sim/sim.h) -> metrics (job_metrics_input, sim/metrics.h).
 * Each step reports bad input as PG_EXIT_INPUT in st with the key at fault
 * (pg_status_locate places it where the experiment set it); nothing here
 * calls exit() or parses a command line, and nothing prints a result: the
 * caller (src/cli, later src/calib) decides what to do with it.  The only
 * output of the layer is on stderr: warnings about keys that do not apply,
 * and the progress bars and children's messages of the process pool.
 *
 * Many jobs (job/sweep.h): a grid of "KEY=V1,V2" options run combination by
 * combination in forked child processes, N at a time (SimGrid holds one
 * engine per process, so every simulation gets a process of its own), their
 * CSV rows handed back in grid order; the rows' files resumed, split into
 * chunks, merged, and the scripts that run the chunks on a cluster written.
 *
 * A space of jobs (job/search.h): optimize's search over tp x pp x dp x
 * schedules x memory plans under one GPU count and global batch, pruned by
 * static memory and by the lower bound before anything is simulated.
 *
 * Layers: job uses util, model, schedule, opt, sim and report; it never
 * includes src/cli or src/calib headers (calib may call the job layer).
 * Ownership: a job is freed once by its owner with job_free, also after a
 * failure (the one exception to "a failed call leaves its output zeroed").
 */
#ifndef PG_JOB_JOB_H
#define PG_JOB_JOB_H

#include "model/config.h"
#include "model/experiment.h"
#include "model/platform.h"
#include "model/workload.h"
#include "opt/bound.h"
#include "opt/offload_order.h"
#include "opt/remat_ilp.h"
#include "report/plan_note.h"
#include "schedule/plan.h"
#include "schedule/schedule.h"
#include "sim/metrics.h"
#include "sim/sim.h"
#include "util/error.h"

typedef struct job {
    config cfg;
    experiment exp;
    workload wl;
    schedule sched;
    platform_desc plat;
    int *rank_gpu;                 /* [pp] GPU index of each pipeline rank */
    int have_wl, have_sched, have_plat;
    int plat_borrowed;             /* plat is another job's (job_borrow_platform): job_free leaves it */
    report_plan_note plan_note;    /* what offload=plan chose (job_build_plan), for the report */
    struct job_judged *judged;     /* offload=plan: the fastest fitting run its judge simulated
                                    * (job_offload.c), which job_simulate_plan takes instead of
                                    * simulating that plan again; NULL: none */
} job;

/* The experiment file (experiment_path; NULL: the bundled default
 * experiments/default.yaml, found like any data file) with the "KEY=VALUE"
 * sets[0..nsets) applied in order, typed into j->exp.  Keys that do not
 * apply are warned about on stderr (the exit code is unchanged).  j is
 * zeroed first; job_free(j) is safe and needed whatever this returns. */
int job_load_experiment(job *j, const char *experiment_path, const char *const *sets, int nsets, pg_status *st);
int job_build_schedule(job *j, pg_status *st);   /* also builds the workload */
/* job_build_schedule with a cache of generated schedules (optimize: the
 * candidates that differ only in memory keys generate the same schedule,
 * and a V-shaped or wave schedule of hundreds of microbatches costs 0.1 s):
 * a generator called with the parameters of a cached schedule is not called
 * again, the copy is the same schedule.  cache (zeroed by the caller; NULL:
 * none) is freed with job_sched_cache_free. */
#define JOB_SCHED_CACHE_SLOTS 16
typedef struct job_sched_cache_slot {
    char name[64];
    sched_params params;
    schedule sched;
    int used;
} job_sched_cache_slot;
typedef struct job_sched_cache {
    job_sched_cache_slot slot[JOB_SCHED_CACHE_SLOTS];
    int next;
    long hits;
} job_sched_cache;
int job_build_schedule_cached(job *j, job_sched_cache *cache, pg_status *st);
void job_sched_cache_free(job_sched_cache *cache);
int job_build_platform(job *j, pg_status *st);
/* What job_build_platform does with a platform already built for the same
 * network keys and GPU count (optimize's candidates share one: building a
 * cluster's XML is most of a candidate's set-up): plat is borrowed, its owner
 * frees it after j (job_free leaves it). */
int job_borrow_platform(job *j, const platform_desc *plat, pg_status *st);
/* The memory plan of the offload / recompute keys (schedule/plan.h), after
 * job_build_schedule (and job_build_platform for recompute=plan, the
 * planner of job_remat.c).  The caller frees out with plan_free. */
int job_build_plan(job *j, memplan *out, pg_status *st);
/* The least activation bytes rank r holds at its fullest under a fixed plan
 * (recompute none / full / selective, offload none / full / selective; not
 * the planners'), from its ops' order alone (sim/actmem.h's events, no
 * simulation): ops on a rank run one after another, allocations at their
 * start and releases at their end, and an offloaded activation is counted
 * gone from F's end until its consumer (its copies take longer), so the
 * simulation's activation peak is never below it.  Static + reserved + this
 * over the capacity is out of memory whatever the timing (optimize's
 * pre-screen).  Microseconds per op. */
double job_least_peak_bytes(const job *j, const memplan *plan, int rank);
/* The least activation bytes each rank r holds (per_rank[r], pp of them) at some moment under any plan a
 * planner (recompute=plan, offload=plan) may choose: each backward needs
 * its activation on the GPU, kept, reloaded or recomputed, whatever was
 * done with it in between; the most of the rank's backwards of the least
 * of those three (job_least_peak_bytes's accounting of one (stage, mb)
 * at its B: F's allocation plus any recomputation's, under keep, full and
 * selective recomputation; offloading reloads what keep holds).  Below
 * every plan's activation peak: optimize's pre-screen for planners. */
void job_least_planner_bytes(const job *j, double *per_rank);
/* 1 when rank r would be out of memory holding least_activation_bytes of
 * activations: its static memory (headroom included) and their footprint
 * (model/memory.h: fragmentation added) over its capacity (memory.capacity,
 * else its GPU's).  With a lower bound of the rank's activations (the two
 * functions above), out of memory whatever the timing. */
int job_rank_over_capacity(const job *j, int r, double least_activation_bytes);
/* 1 when some rank of j is out of memory under plan (NULL: none) whatever
 * the timing: job_least_peak_bytes over its capacity (job_rank_over_capacity).
 * What the simulation of that plan would report as out of memory, known
 * without it (offload=plan's judge skips such plans). */
int job_plan_surely_oom(const job *j, const memplan *plan);
/* offload=plan (job_offload.c): the plan the planner chooses among its
 * candidates (opt/offload_order.h: copy models and, with
 * offload.order=search, orders), each simulated in a forked child; the
 * chosen order replaces j->sched.  After job_build_schedule and
 * job_build_platform.  The caller frees out (plan_free). */
int job_plan_offload(job *j, memplan *out, offload_plan_result *res, offload_order_result *ores, pg_status *st);
/* 1 when j's judge simulated exactly this run (j's experiment and schedule,
 * this plan) and it fit: its timeline and outcome are moved into tl (empty,
 * timeline_init'ed) and out, which says so (sim_outcome.judged); 0 (tl and
 * out untouched) otherwise.  A simulation is deterministic: the run taken is
 * the run sim_run would make. */
int job_judged_take(const job *j, const memplan *plan, timeline *tl, sim_outcome *out);
void job_judged_free(struct job_judged *jd);
/* j->plan_note from job_plan_offload's outcome: which plan won, or that
 * none fits and why (run's report says so: JSON `plan`, stderr). */
void job_note_offload_plan(job *j, const offload_plan_result *res, const offload_order_result *ores);
/* offload=full|selective: PipeOffload's chunk count (offload.chunks, or the
 * preset's) and, with offload.rules=pipeoffload, what the plan's copy rules
 * need (schedule/plan.h: each rank's host link, each stage's op seconds, the
 * warm-up postponement); returns the memory pol then points into (free it
 * after plan_build), or NULL. */
double *job_offload_policy(const job *j, plan_policy *pol);
/* Place an error of a lower layer where the user set the key at fault:
 * the key the layer named (st->key, pg_fail_key), else `fallback`, the key
 * whose value the failing step was working from (the whole message is then
 * the problem).  An error already located, or about a key left at its
 * default, is left as it is.  Returns st->code. */
int job_locate(const experiment *e, const char *fallback, pg_status *st);
/* The generators' parameters for the experiment (per-rank-share times). */
int job_sched_params(const experiment *e, sched_params *p, pg_status *st);
/* 1 when the job runs Megatron-Core's combined 1F1B steps: ep.overlap with
 * ep > 1 (sched_params.ep_overlap, sim_parallel.combined_pairs). */
int job_ep_overlap(const experiment *e);
/* 1: recompute=selective runs inside each backward (model/memory.h
 * memory_selective_in_backward), not as a memory plan's recompute ops:
 * with ep.overlap's combined steps, which a memory plan would run in order
 * (Megatron-Core runs its recompute modules inside the combined steps), and
 * nothing else that needs a plan (no offload, no recompute.backward). */
int job_selective_in_backward(const experiment *e);
/* What the simulator runs in order although the experiment overlaps it,
 * under a memory plan (plan non-empty: offload or recomputation chosen):
 * Megatron-Core's combined steps (ep.overlap) or DualPipeV's overlapped
 * pairs (dualpipe.overlap) hide no communication there, in either replay
 * (sim/expert.c); NULL when nothing is lost.  `run` warns with it. */
const char *job_pairs_in_order(const job *j, const memplan *plan);
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

/* After job_load_experiment: the platform, the memory plan, the tp/dp set-up and the
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

#endif
