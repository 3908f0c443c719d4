/* search.h: optimize's search (search.c): the candidates of one job's
 * shape (its GPU count and global batch) over tp x pp x dp x microbatches x
 * schedules x recompute x offload (and any other grid key), each built and
 * bounded in this process, the promising ones simulated through the sweep
 * engine's process pool (sweep.h) best bound first, the rest pruned by
 * static memory or by the lower bound (search.c's header says how and why).
 *
 * Contract: search_run fills a search from a job loaded and built up to its
 * platform (job_build_platform) and the plain options below; whatever it
 * returns, search_free(s) is then safe and needed.  It prints nothing on
 * stdout (the children's messages and the candidates' are silenced; a
 * progress bar on stderr with progress); the command line prints the
 * outcome (search_outcome_of) and writes the best plan
 * (search_write_best). */
#ifndef PG_JOB_SEARCH_H
#define PG_JOB_SEARCH_H

#include <stdio.h>
#include <time.h>

#include "job/job.h"
#include "job/sweep.h"
#include "util/strbuf.h"

/* C_PRUNED_MEMORY: static memory alone over capacity; C_PRUNED_ACTIVATIONS:
 * static + reserved + the least activation peak of its ops' order over it
 * (job_least_peak_bytes); both out of memory whatever the simulation. */
typedef enum { C_PENDING, C_SIMULATED, C_PRUNED_MEMORY, C_PRUNED_BOUND, C_INVALID, C_PRUNED_ACTIVATIONS, C_NSTATUS } cand_status;

typedef struct candidate {
    long index;               /* combination of the grid */
    cand_status status;
    double ub_samples_per_s;  /* B / lower bound; INFINITY when unknown */
    double static_bytes;      /* the fullest rank's static memory */
    double capacity_bytes;    /* that rank's capacity */
    int noom;                 /* ranks whose static memory is over capacity */
    char *oom_ranks;          /* "r;r;..." */
    int exit_code;
    double samples_per_s, peak_bytes, iteration_s, makespan_s;
    char *row;                /* simulated: the sweep row (no '\n') */
    int resumed;              /* simulated by an earlier run (--resume) */
    int planner;              /* recompute=plan or offload=plan: simulated after fixed plans of the same bound */
    int sibling;              /* a planner keeping the op order: its keep-all sibling's position (search.c
                               * planner_ceiling), else -1 */
} candidate;

/* The planning budget optimize gives its offload=plan candidates, each
 * setting where the user gives none: `run`'s defaults plan for 60 s a
 * capacity (offload.time_limit), at the job's capacity and two below it
 * (offload.capacities, each plan judged by a simulation), which on the
 * largest orders (DualPipeV with hundreds of microbatches) is minutes a
 * candidate, and a search has hundreds.  With the budget a planner plans
 * once, at its capacity, the MILP (and under recompute=full the remat ILP
 * it weighs) for 2 s after its greedy start; the
 * greedy plan and PipeOffload's rules are planned whatever the budget.
 * Written into -o's experiment with the candidate, so that `run` replays
 * the plan found (docs/planners.md). */
#define SEARCH_NPLANNER_SETS 3
#define SEARCH_PLANNER_TIME_SET "offload.time_limit=2s"
#define SEARCH_PLANNER_CAPACITY_SET "offload.capacities=0"
#define SEARCH_PLANNER_REMAT_SET "recompute.time_limit=2s"   /* the remat ILP offload=plan weighs under
                                                               * recompute=full (20 s a planning in run) */
#define SEARCH_PLANNER_SETS {SEARCH_PLANNER_TIME_SET, SEARCH_PLANNER_CAPACITY_SET, SEARCH_PLANNER_REMAT_SET}

typedef struct search {
    sweep_grid g;
    candidate *c;             /* ascending index */
    int n;
    long global_batch;
    int gpus, cp, gpus_per_node;
    strbuf header;            /* sweep header, with its '\n' */
    char **cols;
    int ncols, col_exit, col_samples, col_peak, col_iter, col_makespan, col_index, col_total, col_oom,
        col_oom_ranks;
    FILE *resume;
    const char *resume_path;
    long nsimulated;
    int write_failed;
    const platform_desc *shared_plat;   /* the job's platform, when no grid key changes it (every candidate borrows it) */
    /* progress and --time-limit */
    struct timespec start;
    double time_limit_s;      /* 0: none */
    double last_line_s;       /* when the last progress line was printed */
    int progress_lines;       /* stderr is not a terminal: a line every PROGRESS_LINE_S */
    long assessed, sim_this_run;
    int cut;                  /* the time limit stopped the search: candidates are left pending */
    job_sched_cache sched_cache;   /* the candidates' schedules, generated once per generator and parameters */
    /* optimize's budget for its offload=plan candidates: the SEARCH_PLANNER_SETS the experiment, --set and
     * --grid leave unset */
    const char *planner_sets[SEARCH_NPLANNER_SETS];
    int nplanner_sets;
} search;

/* Whether candidate c ran (or would run) with s->planner_sets. */
int search_budgeted_planner(const search *s, const candidate *c);

/* What the search varies and how it runs (optimize's options). */
typedef struct search_options {
    const char *experiment_path;   /* NULL: the bundled default (job_load_experiment) */
    const char *const *sets;       /* "KEY=VALUE" common to every candidate */
    int nsets;
    const char *const *grids;      /* "KEY=V1,V2": tp, pp, micro_batch_size, schedule, recompute, offload, others */
    int ngrids;
    int jobs;                      /* simulations at a time */
    int full_front;                /* prune only what the simulated front dominates (the front exact too) */
    const char *resume_path;       /* NULL, or the CSV of simulated rows kept across runs */
    int progress;                  /* draw a progress bar on stderr (a terminal); else progress lines */
    const char *time_limit;        /* --time-limit SECONDS (NULL: none): then stop, keep what was simulated */
    sweep_child_fn child;          /* what a simulation runs (cmd_run, sweep.h) */
} search_options;

/* Build, bound, prune and simulate the candidates of j's shape (see the
 * header comment); bad options are PG_EXIT_INPUT naming the --grid key. */
int search_run(const search_options *o, const job *j, search *s, pg_status *st);
void search_free(search *s);

/* The outcome: how many candidates ended in each status, how many simulated
 * ones fit and how many ran out of memory, the best that fits (-1: none)
 * and the Pareto front (throughput against peak memory) of the simulated
 * ones that fit (with the default pruning, of those whose bound reaches the
 * best, so that the front does not depend on -j).  front[0..nfront) are
 * candidate positions; on_front[i] says whether candidate i is on it.  Free
 * with search_outcome_free. */
typedef struct search_outcome {
    int counts[C_NSTATUS];
    int nfit, nsimoom, best, nfront;
    int *front, *on_front;
} search_outcome;
void search_outcome_of(const search *s, int full_front, search_outcome *out);
void search_outcome_free(search_outcome *out);

/* The candidate's grid values as "key=value key=value ...". */
void search_settings(const search *s, const candidate *c, strbuf *sb);
/* --svg: the simulated plans that fit, throughput against peak memory, the
 * front joined and the best marked (report_opt.h's report_optimize_svg). */
int search_write_svg(const char *path, const search *s, const search_outcome *oc, pg_status *st);

/* "pending", "simulated", "pruned_memory", "pruned_bound", "invalid" or "pruned_activations". */
const char *search_status_name(cand_status status);
/* The candidate as a CSV row of the sweep header (no '\n'): a simulated row
 * as run gave it; the others with their verdict only. */
void search_candidate_row(const search *s, const candidate *c, strbuf *sb);
/* Write to path the experiment (cfg: file + --set) with the candidate's
 * values on top, as a YAML file that `pipegrid run` replays. */
int search_write_best(const char *path, const config *cfg, const search *s, const candidate *c, pg_status *st);

#endif
