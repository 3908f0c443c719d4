/* sweep.h: parameter sweeps (`pipegrid sweep`) and their chunk files
 * (`pipegrid merge`).
 *
 * A grid is an ordered list of keys, each with an ordered list of values
 * (`--grid KEY=V1,V2,...`, repeatable).  Its combinations are the cartesian
 * product in row-major order: the first key varies slowest, so combination
 * i has, for key k, the value of digit (i / stride_k) % nvalues_k where
 * stride_k is the product of the value counts of the keys after k.  Every
 * file a sweep writes carries that index (column `combination`) and the grid
 * size (column `combinations`), so chunk files written on different hosts
 * can be merged back into grid order and missing combinations named without
 * repeating the grid on the merge command line.
 *
 * Chunks (`--chunk K/N`, K = 1..N) take the combinations i with
 * i % N == K - 1: strided rather than contiguous, because the first grid key
 * is usually the one that changes the cost (pp, microbatches), and strides
 * give every chunk the same mix of cheap and expensive combinations.
 *
 * The CSV is RFC 4180: a field is quoted when it holds a comma, a quote or a
 * line break, and a quote inside is doubled.  Rows are one line each (no
 * field the simulator writes holds a line break), which lets resume and
 * merge read files line by line.
 */
#ifndef PG_JOB_SWEEP_H
#define PG_JOB_SWEEP_H

#include <stddef.h>
#include <stdio.h>

#include "util/error.h"
#include "util/strbuf.h"

/* ---- grid (sweep_grid.c) ------------------------------------------------ */

typedef struct sweep_key {
    char *name;
    char **values;          /* owned */
    int nvalues;
} sweep_key;

typedef struct sweep_grid {
    sweep_key *keys;
    int nkeys;
    long total;             /* number of combinations (product of nvalues) */
} sweep_grid;

/* The largest grid a sweep accepts: far beyond anything that can run, and
 * small enough that indices and products never overflow a long. */
#define SWEEP_MAX_COMBINATIONS 10000000L

/* Parse "KEY=V1,V2,..." options into a grid.  Bad input (no '=', an empty
 * key or value, a key given twice, a value repeated within a key, a grid
 * too large) returns PG_EXIT_INPUT naming the option. */
int sweep_grid_parse(sweep_grid *g, const char *const *specs, int nspecs, pg_status *st);
void sweep_grid_free(sweep_grid *g);

/* values[k] = the value of key k in combination index (borrowed pointers). */
void sweep_grid_combination(const sweep_grid *g, long index, const char **values);

/* The number of key k's value in combination index. */
int sweep_grid_value_at(const sweep_grid *g, long index, int k);
/* Combination index with key k's value replaced by its value number v. */
long sweep_grid_with_value(const sweep_grid *g, long index, int k, int v);
/* The number of key k's value `value`, or -1 when the grid does not have it. */
int sweep_grid_value_index(const sweep_grid *g, int k, const char *value);

/* "KEY=VALUE KEY=VALUE" for messages. */
void sweep_grid_describe(const sweep_grid *g, long index, strbuf *sb);

/* --chunk "K/N": 1 <= K <= N. */
int sweep_parse_chunk(const char *text, int *k, int *n, pg_status *st);
/* Does chunk k of n hold combination index? (n == 0: no chunking.) */
int sweep_in_chunk(long index, int k, int n);

/* ---- CSV (sweep_csv.c) -------------------------------------------------- */

/* Append text as one CSV field. */
void csv_field(strbuf *sb, const char *text);

/* Split one CSV line (no trailing newline) into fields, as pg_csv_split
 * (util/csv.h) does: blanks around an unquoted field are dropped.  *fields is an
 * owned array of owned strings; returns the number of fields, or -1 for a
 * malformed line (an unterminated quote, text after a closing quote, a
 * quote inside an unquoted field). */
int csv_split(const char *line, char ***fields);
void csv_fields_free(char **fields, int n);

/* Read a whole file into lines (without their '\n'; a trailing '\r' is
 * dropped).  A last line with no '\n' is returned in *partial (owned, or
 * NULL) instead of the lines, because it is a row cut by an interrupted
 * writer.  Returns 0 or PG_EXIT_INPUT when the file cannot be read. */
typedef struct csv_lines {
    char **line;
    int count;
    char *partial;
    size_t complete_bytes;  /* bytes up to and including the last '\n' */
} csv_lines;
int csv_read_lines(const char *path, csv_lines *out, pg_status *st);
void csv_lines_free(csv_lines *l);

/* The sweep's header: grid keys, the run columns (report_csv_header) but
 * those named like a grid key (the key's column stands for them), then
 * combination and combinations.  Ends with "\n". */
void sweep_csv_header(const sweep_grid *g, strbuf *sb);
/* The sweep's row for combination index from the run's CSV row (no '\n'),
 * with the header's columns; -1 when run_row does not have the run's
 * number of fields. */
int sweep_csv_row(const sweep_grid *g, long index, const char *run_row, strbuf *sb);
/* In a sweep header split into fields, how many leading fields are grid
 * keys; -1 when it is not a sweep header. */
int sweep_csv_key_count(char **fields, int nfields);
/* JSON lines (`--format jsonl`): the row as one JSON object (and "\n")
 * keyed by the header's column names.  A field that is a JSON number as it
 * stands is a number, an empty field null, anything else a string; -1 when
 * the row does not have the header's number of fields. */
int sweep_jsonl_row(const char *header_line, const char *row_line, strbuf *sb);
/* Column names of the trailing index columns. */
#define SWEEP_COL_INDEX "combination"
#define SWEEP_COL_TOTAL "combinations"

/* ---- before running (sweep_prepare.c) ----------------------------------- */

/* Bad experiment files and --set options fail the whole sweep at once
 * rather than once per combination: the experiment (NULL: none) with the
 * sets and the first value of every grid key applied, and every grid value
 * checked on its own (sweep_check_grid_value). */
int sweep_preflight(const char *experiment_path, const char *const *sets, int nsets, const sweep_grid *g,
                    pg_status *st);
/* One grid value on its own: the key's schema check, and for schedule a
 * known generator (the schema keeps it a free string for file:PATH); bad
 * input is PG_EXIT_INPUT at "--grid". */
int sweep_check_grid_value(const char *key, const char *value, pg_status *st);

/* The key tuples of the rows already in a resume file (sorted, for
 * bsearch).  A missing or empty file has none and needs the header
 * (need_header); a file whose header is not this sweep's (header, with its
 * '\n') is PG_EXIT_INPUT; a last row cut by an interrupted writer is
 * dropped from the file (with a message on stderr) so that appends start
 * on a fresh line.  Free with sweep_done_free, also after a failure. */
typedef struct sweep_done {
    char **tuple;
    long count;
    int need_header;
} sweep_done;
int sweep_read_done(const char *path, const sweep_grid *g, const char *header, sweep_done *d, pg_status *st);
/* Is combination index among them?  values: room for the grid's keys. */
int sweep_is_done(const sweep_done *d, const sweep_grid *g, long index, const char **values);
void sweep_done_free(sweep_done *d);

/* ---- running combinations (sweep_run.c) --------------------------------- */

/* A combination's exit_code when its process was killed by a signal:
 * 128 + the signal (the shell's convention). */
#define SWEEP_EXIT_SIGNAL_BASE 128

/* What a combination produced.  row is the complete CSV line for the sweep
 * file (grid values, run columns, index columns, "\n"). */
typedef struct sweep_result {
    long index;
    int exit_code;
    char *row;              /* owned */
} sweep_result;

/* Called in grid order (of the combinations run) as results become
 * available; returns 0 to go on, nonzero to stop (a write error). */
typedef int (*sweep_sink)(const sweep_result *r, void *ctx);

/* The program a child runs: the command line's `run` (cmd_run), handed
 * argv = {"pipegrid", "run", "--set", KEY=VALUE..., "--format", "csv"
 * [, EXPERIMENT]}; what it prints on stdout is the child's CSV, what it
 * returns its exit code.  A parameter, so that the pool below the command
 * line runs exactly what `pipegrid run` runs without calling up into it. */
typedef int (*sweep_child_fn)(int argc, char **argv);

typedef struct sweep_plan {
    const sweep_grid *grid;
    const char *experiment_path;    /* NULL: the bundled default */
    const char *const *sets;        /* --set options common to every combination */
    int nsets;
    const long *indices;            /* combinations to run, ascending */
    long count;
    int jobs;                       /* worker processes at a time */
    int progress;                   /* draw a progress bar on stderr */
    /* A caller that runs its combinations in several sweep_run calls
     * (optimize: batches between which it prunes) draws one bar over all of
     * them: the label (NULL: "sweep"), the runs done before this call (and
     * how many of them were out of memory or failed) and the total expected
     * (0: count).  quiet_children drops the children's stderr lines instead
     * of copying them (their exit codes stay in the rows). */
    const char *progress_label;
    long progress_done_before, progress_oom_before, progress_failed_before, progress_total;
    int quiet_children;
    sweep_child_fn child;           /* what each child runs (cmd_run) */
    /* Options of one combination beyond the grid's (NULL: none): the n
     * "KEY=VALUE" strings index_sets returns for combination index are set
     * after sets and the grid's keys (validate: each measured row's job). */
    const char *const *(*index_sets)(long index, int *n, void *ctx);
    void *index_ctx;
    /* Called (NULL: never) at least once a second while children run
     * (optimize: its progress lines and --time-limit); non-zero stops the
     * run: the running children are killed, the results already complete
     * are handed to the sink (in index order, the unfinished left out) and
     * sweep_run returns 0 with *stopped set. */
    int (*tick)(void *ctx);
    void *tick_ctx;
    int *stopped;
} sweep_plan;

/* Run every combination of the plan, `jobs` child processes at a time.  A
 * child forks from this process and runs `pipegrid run ... --format csv`
 * through plan->child, so a simulation always has a process of its own
 * (SimGrid holds one engine per process) and a crash only loses its row.
 * Children's stderr lines are copied to stderr prefixed by the combination.
 * Returns 0, or PG_EXIT_INTERNAL (fork/pipe failure, sink failure). */
int sweep_run(const sweep_plan *plan, sweep_sink sink, void *ctx, pg_status *st);

/* ---- merging chunk files (sweep_merge.c) -------------------------------- */

/* Join the parts[0..nparts) of one sweep into one CSV in grid order, written
 * to out_path (NULL: standard output).  Every part must have the same
 * header; a combination found twice is kept once (the first read), with a
 * warning on stderr when the rows differ; with given (the sweep's --grid,
 * or NULL) every row is checked against that grid.  Missing combinations
 * are listed on stderr, named by their key values when the rows or given
 * determine them, after the merged file is written, and counted in
 * *missing.  Returns 0 (also when some are missing) or PG_EXIT_INPUT /
 * PG_EXIT_INTERNAL in st. */
int sweep_merge(const char *const *parts, int nparts, const sweep_grid *given, const char *out_path, long *missing,
                pg_status *st);

/* ---- scale-out scripts (sweep_emit.c) ----------------------------------- */

typedef enum { EMIT_NONE, EMIT_SLURM, EMIT_PARALLEL } sweep_emit_kind;

typedef struct sweep_emit_spec {
    sweep_emit_kind kind;
    int chunks;                     /* number of chunks (array tasks, job lines) */
    int jobs;                       /* -j of each chunk's sweep */
    const char *experiment_path;    /* as given (made absolute in the script) */
    const char *const *sets;
    int nsets;
    const char *const *grids;       /* the --grid options, as given */
    int ngrids;
} sweep_emit_spec;

int sweep_emit_parse_kind(const char *text, sweep_emit_kind *kind, pg_status *st);
/* Write the script or job list to out.  Commands use absolute paths (the
 * binary, the experiment) and cd to the current directory, where each chunk
 * writes part-K.csv; `pipegrid merge part-*.csv` joins them afterwards. */
int sweep_emit(const sweep_emit_spec *spec, FILE *out, pg_status *st);

#endif
