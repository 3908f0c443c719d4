/* report_opt.h: what `bound`, `plan remat`, `plan offload` and `optimize` print, in the
 * report layer like `run`'s report (report.h), with the same helpers: one
 * emitter per command and format, each a pure function appending to a
 * strbuf; JSON through the one object writer (report_util.h), exactly one
 * object ended by a newline; memory in GiB (util/units.h).
 *
 * The inputs are the planners' and the bound's plain result types
 * (bound.h, remat_ilp.h, offload_milp.h, offload_order.h: read only; the report layer calls no solver) and what the
 * CLI's job computed around them (capacities, static memory, metrics of the
 * simulated plan).  Nothing here recomputes a result.
 */
#ifndef PG_REPORT_REPORT_OPT_H
#define PG_REPORT_REPORT_OPT_H

#include "opt/bound.h"
#include "opt/offload_milp.h"
#include "opt/offload_order.h"
#include "opt/remat_ilp.h"
#include "schedule/plan.h"
#include "schedule/schedule.h"
#include "sim/metrics.h"
#include "sim/sim.h"
#include "util/strbuf.h"

/* `pipegrid bound`: the makespan no schedule with the placement beats. */
typedef struct report_bound_input {
    const char *schedule;       /* the schedule whose placement the bound is for */
    int own_split;              /* its backward kind: 1 split (B, W), 0 fused (BW) */
    const bound_input *in;
    const bound_result *any;    /* over every schedule with the placement */
    const bound_result *cls;    /* over the schedules of the schedule's own backward kind */
} report_bound_input;

void report_bound_text(const report_bound_input *b, strbuf *sb);
void report_bound_json(const report_bound_input *b, strbuf *sb);

/* `pipegrid plan remat`: the rematerialization plan under memory.capacity. */
typedef struct report_remat_input {
    const schedule *sched;
    const memplan *plan;
    const remat_result *res;
    const double *capacity_bytes;   /* [pp] each rank's GPU memory */
    const double *static_bytes;     /* [pp] its weights, gradients, optimizer state */
} report_remat_input;

void report_remat_text(const report_remat_input *r, strbuf *sb);
void report_remat_json(const report_remat_input *r, strbuf *sb);

/* `pipegrid plan offload`: offload=plan's plan and its simulation. */
typedef struct report_offload_input {
    const schedule *sched;
    const memplan *plan;
    const offload_plan_result *res;
    const offload_order_result *orders;   /* every plan weighed (order x copy model) */
    int order_search_asked;               /* offload.order=search */
    const run_metrics *m;                 /* of the simulated plan */
    const sim_outcome *outcome;
} report_offload_input;

void report_offload_text(const report_offload_input *o, strbuf *sb);
void report_offload_json(const report_offload_input *o, strbuf *sb);

/* `pipegrid optimize`: the Pareto front (text) or every candidate (CSV). */
typedef struct report_optimize_point {
    double samples_per_s, iteration_s, makespan_s, peak_bytes;
    const char *settings;        /* "key=value key=value ...": the candidate's grid values */
    int best;                    /* the fastest plan that fits */
    int on_front;                /* on the Pareto front (report_optimize_svg) */
} report_optimize_point;

typedef struct report_optimize_row {
    const char *run_columns;     /* the sweep's CSV columns of the candidate, without a newline */
    const char *status;          /* simulated, pruned_memory, pruned_bound, invalid */
    double samples_per_s_bound;  /* not finite: none (printed empty) */
    double static_bytes;         /* not finite: none (printed empty) */
    int on_front, best;
} report_optimize_row;

typedef struct report_optimize_input {
    long global_batch;
    int gpus;
    int full_front;              /* --full-front: the front of every candidate */
    int nfront;
    const report_optimize_point *front;   /* [nfront], in the order printed */
    const char *csv_header;      /* the sweep's CSV header, without a newline */
    int ncandidates;
    const report_optimize_row *rows;      /* [ncandidates] */
} report_optimize_input;

void report_optimize_text(const report_optimize_input *o, strbuf *sb);
void report_optimize_csv(const report_optimize_input *o, strbuf *sb);
/* optimize --svg: points[0..n) (the simulated plans that fit) as peak memory
 * (x, GiB) against samples/s (y), the front joined in a line, the best
 * circled and labelled (its circle has id "chosen"); written through
 * rpt_file like run's picture. */
int report_optimize_svg(const report_optimize_point *points, int n, long global_batch, int gpus, const char *path,
                        pg_status *st);

#endif
