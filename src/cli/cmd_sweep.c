/* cmd_sweep.c: `pipegrid sweep`: every combination of the --grid values,
 * one CSV row each (see sweep.h for the grid order, chunks and the file).
 *
 * The sweep itself only fails for bad sweep options or an unreadable
 * experiment file/--set: a combination that fails is a row with its exit
 * code, and its message goes to stderr prefixed by the combination.
 *
 * Resume (-o FILE): rows already in FILE, identified by their grid-key
 * values, are not run again, and new rows are appended; FILE must have this
 * sweep's header, so a file of another grid is never silently extended.  A
 * last row cut short by an interruption is dropped before appending.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "job/sweep.h"
#include "util/outfile.h"
#include "util/units.h"

/* Chunks written by --emit when --chunks is not given: enough to keep a
 * few dozen workers busy, few enough that part files stay manageable. */
#define DEFAULT_EMIT_CHUNKS 64
#define MAX_EMIT_CHUNKS 100000

typedef struct out_sink {
    FILE *f;
    int flush_each;     /* -o: every row reaches the file before the next starts */
    long failed;
    long oom;           /* completed rows predicting out of memory (exit 3): results, not failures */
    long crashed;       /* rows that are no result: killed by a signal or failed in their environment */
    const char *jsonl_header; /* --format jsonl: the CSV header the rows are keyed by; NULL: CSV */
} out_sink;

/* A row's exit code that is no answer about its combination: the run was
 * killed by a signal (128 + the signal, a crash) or its environment failed
 * (1: out of memory, an unwritable file).  The row is still written, and the
 * sweep then exits 1 (README, Sweeps), so a script never takes a sweep of
 * crashes for a finished one. */
static int row_is_no_result(int exit_code)
{
    return exit_code == PG_EXIT_INTERNAL || exit_code >= SWEEP_EXIT_SIGNAL_BASE;
}

static int write_row(const sweep_result *r, void *ctx)
{
    out_sink *o = ctx;
    if (r->exit_code == PG_EXIT_OOM)
        o->oom++;
    else if (r->exit_code != 0)
        o->failed++;
    if (row_is_no_result(r->exit_code))
        o->crashed++;
    if (o->jsonl_header) {
        strbuf line;
        sb_init(&line);
        int bad = sweep_jsonl_row(o->jsonl_header, r->row, &line) != 0 || fputs(line.data, o->f) == EOF;
        sb_free(&line);
        if (bad)
            return -1;
    } else if (fputs(r->row, o->f) == EOF) {
        return -1;
    }
    return o->flush_each ? fflush(o->f) : 0;
}

static int emit(const cli_options *o, const sweep_grid *g, pg_status *st)
{
    sweep_emit_spec spec = {.jobs = o->jobs, .experiment_path = o->experiment_path, .sets = o->sets,
                            .nsets = o->nsets, .grids = o->grids, .ngrids = o->ngrids};
    if (sweep_emit_parse_kind(o->emit, &spec.kind, st) != 0)
        return st->code;
    if (o->chunk)
        return pg_fail(st, PG_EXIT_INPUT, "--emit: --chunk is for the emitted commands; use --chunks N");
    long n = g->total < DEFAULT_EMIT_CHUNKS ? g->total : DEFAULT_EMIT_CHUNKS;
    const char *why = NULL;
    if (o->chunks && (units_parse_long(o->chunks, &n, &why) != 0 || n < 1 || n > MAX_EMIT_CHUNKS))
        return pg_fail(st, PG_EXIT_INPUT, "--chunks: '%s' is not a count between 1 and %d", o->chunks,
                       MAX_EMIT_CHUNKS);
    spec.chunks = (int)n;
    if (!o->output_path)
        return sweep_emit(&spec, stdout, st);
    pg_outfile of;
    int rc = pg_outfile_open(&of, o->output_path, "-o", st);
    if (rc != 0)
        return rc;
    rc = sweep_emit(&spec, of.f, st);
    /* a script: runnable once in place (the mode moves with the rename; a
     * device or link written in place keeps its own) */
    if (rc == 0 && of.tmp_path && fchmod(fileno(of.f), 0755) != 0)
        rc = pg_fail(st, PG_EXIT_INTERNAL, "%s: chmod: %s", o->output_path, strerror(errno));
    if (rc != 0) {
        pg_outfile_discard(&of);
        return rc;
    }
    return pg_outfile_commit(&of, 0, st);
}

static int sweep(const cli_options *o, const sweep_grid *g, pg_status *st)
{
    int chunk_k = 0, chunk_n = 0;
    if (o->chunk && sweep_parse_chunk(o->chunk, &chunk_k, &chunk_n, st) != 0)
        return st->code;
    if (o->chunks)
        return pg_fail(st, PG_EXIT_INPUT, "--chunks is for --emit; a sweep runs one chunk with --chunk K/N");
    if (o->format == FORMAT_JSONL && o->output_path)
        return pg_fail(st, PG_EXIT_INPUT, "--format jsonl: -o files are CSV (what --resume and merge read); "
                       "print JSON lines to stdout");
    int rc = sweep_preflight(o->experiment_path, o->sets, o->nsets, g, st);
    if (rc != 0)
        return rc;
    strbuf header;
    sb_init(&header);
    sweep_csv_header(g, &header);
    sweep_done done = {.need_header = 1};
    out_sink sink = {.f = stdout, .jsonl_header = o->format == FORMAT_JSONL ? header.data : NULL};
    /* -o: opened and locked before its rows are read, so a second sweep on
     * the same file is refused instead of running and appending every row
     * again (util/outfile.h). */
    if (o->output_path &&
        ((rc = pg_open_locked_append(o->output_path, "-o", "sweep -o", &sink.f, st)) != 0 ||
         (rc = sweep_read_done(o->output_path, g, header.data, &done, st)) != 0)) {
        if (sink.f)
            fclose(sink.f);
        sweep_done_free(&done);
        sb_free(&header);
        return rc;
    }
    long *indices = pg_xcalloc((size_t)g->total, sizeof *indices);
    const char **values = pg_xcalloc((size_t)g->nkeys, sizeof *values);
    long count = 0, skipped = 0;
    for (long i = 0; i < g->total; i++) {
        if (!sweep_in_chunk(i, chunk_k, chunk_n))
            continue;
        if (sweep_is_done(&done, g, i, values))
            skipped++;
        else
            indices[count++] = i;
    }
    free(values);
    sweep_done_free(&done);

    if (o->output_path) {
        sink.flush_each = 1;
        if (skipped > 0)
            fprintf(stderr, "pipegrid: %s: %ld combinations already there, %ld to run\n", o->output_path,
                    skipped, count);
    }
    if (done.need_header && !sink.jsonl_header && (fputs(header.data, sink.f) == EOF || fflush(sink.f) != 0)) {
        rc = pg_fail(st, PG_EXIT_INTERNAL, "cannot write the CSV header");
        goto out;
    }
    sweep_plan plan = {.grid = g, .experiment_path = o->experiment_path, .sets = o->sets, .nsets = o->nsets,
                       .indices = indices, .count = count, .jobs = o->jobs,
                       .progress = isatty(STDERR_FILENO), .child = cmd_run};
    rc = sweep_run(&plan, write_row, &sink, st);
    if (rc == 0 && fflush(sink.f) != 0)
        rc = pg_fail(st, PG_EXIT_INTERNAL, "cannot write the results");
    if (rc == 0 && sink.failed > 0)
        fprintf(stderr, "pipegrid: sweep: %ld of %ld combinations failed (see exit_code)\n", sink.failed, count);
    if (rc == 0 && sink.oom > 0)
        fprintf(stderr, "pipegrid: sweep: %ld of %ld combinations predict out of memory (exit_code 3, oom)\n",
                sink.oom, count);
    if (rc == 0 && sink.crashed > 0)
        rc = pg_fail(st, PG_EXIT_INTERNAL,
                     "sweep: %ld of %ld combinations crashed or failed in their environment (exit_code 1 or "
                     "128 + a signal, messages above): their rows are written, the sweep is not a result",
                     sink.crashed, count);
out:
    if (sink.f && sink.f != stdout && fclose(sink.f) != 0 && rc == 0)
        rc = pg_fail(st, PG_EXIT_INTERNAL, "%s: write error", o->output_path);
    free(indices);
    sb_free(&header);
    return rc;
}

int cmd_sweep(int argc, char **argv)
{
    cli_options o;
    pg_status st;
    pg_status_clear(&st);
    sweep_grid g;
    memset(&g, 0, sizeof g);
    int rc = cli_parse_options(argc, argv, 2, 1u << FORMAT_CSV | 1u << FORMAT_JSONL,
                               CLI_OPT_GRID | CLI_OPT_JOBS | CLI_OPT_OUTPUT | CLI_OPT_EMIT | CLI_OPT_CHUNKS |
                                   CLI_OPT_CHUNK,
                               &o, &st);
    if (rc == 0 && o.trace_path)
        rc = pg_fail(&st, PG_EXIT_INPUT, "sweep: --trace is for run (one trace per simulation)");
    if (rc == 0)
        rc = sweep_grid_parse(&g, o.grids, o.ngrids, &st);
    if (rc == 0)
        rc = o.emit ? emit(&o, &g, &st) : sweep(&o, &g, &st);
    if (rc != 0)
        rc = cli_report_error(&st);
    sweep_grid_free(&g);
    cli_options_free(&o);
    return rc;
}
