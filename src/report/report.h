/* report.h: what a run prints (text, JSON, CSV) and its Chrome trace.
 *
 * Writers are pure functions of a report_input: they read the experiment,
 * the schedule, the workload, the platform, the timeline and the metrics
 * already computed (sim/metrics.h), and append to a strbuf; only the trace
 * writes a file, because traces of big runs are too large to hold twice.
 * Nothing here recomputes a metric: every number comes from run_metrics (or
 * from metrics_memory_walk for the trace's memory counters), so the formats
 * cannot disagree with each other.
 *
 * Any pointer of report_input except m may be NULL (a deadlocked or partial
 * run, a unit test); the writers then leave the corresponding fields out or
 * write null.  JSON output is exactly one object; CSV is RFC 4180 (fields
 * quoted when they hold a comma, quote or newline).
 */
#ifndef PG_REPORT_REPORT_H
#define PG_REPORT_REPORT_H

#include "model/experiment.h"
#include "model/platform.h"
#include "model/workload.h"
#include "schedule/schedule.h"
#include "sim/metrics.h"
#include "sim/sim.h"
#include "sim/timeline.h"
#include "util/error.h"
#include "util/strbuf.h"
#include "report/plan_note.h"

typedef struct report_input {
    const experiment *exp;
    const schedule *sched;
    const workload *wl;
    const platform_desc *plat;
    const int *rank_gpu;        /* [pp] index into plat->gpu */
    const timeline *tl;
    const run_metrics *m;
    const sim_outcome *outcome;
    const memplan *plan;           /* memory plan (offload / recompute), NULL = none */
    int verbose;                   /* text: `run --verbose` (the cost model's whole provenance) */
    const report_plan_note *plan_note; /* NULL: no planner ran */
} report_input;

/* The exit code the run deserves under the contract: PG_EXIT_DEADLOCK if the
 * simulation did not complete, PG_EXIT_OOM if some rank is over capacity,
 * else 0.  The CLI and the CSV's exit_code column both use it. */
int report_exit_code(const report_input *in);

/* Human summary: header, per-rank table, totals. */
void report_text(const report_input *in, strbuf *sb);

/* Exactly one JSON object, no trailing newline (the caller ends the line). */
void report_json(const report_input *in, strbuf *sb);

/* CSV for sweeps: extra key columns first (the grid keys), then the fixed
 * result columns.  Header and row always have the same number of fields. */
void report_csv_header(const char *const *extra_keys, int nextra, strbuf *sb);
void report_csv_row(const report_input *in, const char *const *extra_values, int nextra, strbuf *sb);
/* A row for a combination that produced no result (bad input, crash): the
 * extra values, exit_code and error (its one-line message; NULL: empty)
 * filled, every result column empty. */
void report_csv_row_failed(const char *const *extra_values, int nextra, int exit_code, const char *error,
                           strbuf *sb);

/* Chrome trace-event JSON (Perfetto, chrome://tracing) written to path:
 * one process per GPU of the job (pid = its platform index, named by its
 * host name; pipeline rank, stages, replica, tp / cp rank in args), one
 * thread per stream (compute, send, recv, d2h, h2d, tp / cp / ep
 * collectives, dp reduction, optimizer step; overlapping slices get extra
 * lanes), an X event per op with args {stage, microbatch, kind}, "bubble"
 * slices for the idle gaps inside each rank's span, memory counters per
 * GPU, and flow events joining each send to its receive; it ends at the
 * iteration's end (the optimizer step).  Timestamps in microseconds.
 * Returns 0, PG_EXIT_INPUT if path cannot be opened, PG_EXIT_INTERNAL on a
 * write error. */
int report_trace(const report_input *in, const char *path, pg_status *st);

/* The pipeline drawn as the papers draw it, as an SVG file at path: ranks
 * down and time across, one rectangle per op coloured by kind (F, B, W, BW,
 * recompute R / RW; later chunks darker) with its microbatch number when it
 * fits, idle time as background, offload copies, reload stalls, tensor /
 * data-parallel collectives and optimizer steps, then a
 * device-memory step curve per rank (metrics_memory_walk) with its capacity;
 * title, legend, time axes with units.  Deterministic: the same input gives
 * a byte-identical file.  Returns 0, PG_EXIT_INPUT if path cannot be opened,
 * PG_EXIT_INTERNAL on a write error. */
int report_svg(const report_input *in, const char *path, pg_status *st);

#endif
