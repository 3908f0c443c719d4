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
#include "cli/sweep.h"
#include "model/experiment.h"
#include "schedule/schedule.h"
#include "util/outfile.h"
#include "util/units.h"

/* schedule=file:PATH, as job.c reads it. */
#define SCHEDULE_FILE_PREFIX "file:"

/* Chunks written by --emit when --chunks is not given: enough to keep a
 * few dozen workers busy, few enough that part files stay manageable. */
#define DEFAULT_EMIT_CHUNKS 64
#define MAX_EMIT_CHUNKS 100000
/* Joins a row's key values into one string to look it up (a control
 * character no grid value holds). */
#define TUPLE_SEP '\x1f'

typedef struct out_sink {
    FILE *f;
    int flush_each;     /* -o: every row reaches the file before the next starts */
    long failed;
    long oom;           /* completed rows predicting out of memory (exit 3): results, not failures */
    long crashed;       /* rows that are no result: killed by a signal or failed in their environment */
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
    if (fputs(r->row, o->f) == EOF)
        return -1;
    return o->flush_each ? fflush(o->f) : 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *tuple_of(const char *const *values, int n)
{
    strbuf sb;
    sb_init(&sb);
    for (int k = 0; k < n; k++) {
        if (k)
            sb_append_n(&sb, &(char){TUPLE_SEP}, 1);
        sb_append(&sb, values[k]);
    }
    if (!sb.data)
        sb_append(&sb, "");
    return sb.data;
}

/* The key tuples of the rows already in path (sorted, for bsearch).  A
 * missing or empty file has none and needs the header; *append_at is where
 * new rows go (after the last complete line). */
typedef struct done_set {
    char **tuple;
    long count;
    int need_header;
} done_set;

static void done_free(done_set *d)
{
    for (long i = 0; i < d->count; i++)
        free(d->tuple[i]);
    free(d->tuple);
}

static int read_done(const char *path, const sweep_grid *g, const char *header, done_set *d, pg_status *st)
{
    memset(d, 0, sizeof *d);
    struct stat sbuf;
    if (stat(path, &sbuf) != 0 || sbuf.st_size == 0) {
        d->need_header = 1;
        return 0;
    }
    csv_lines l;
    int rc = csv_read_lines(path, &l, st);
    if (rc != 0)
        return rc;
    size_t hlen = strlen(header) - 1;   /* without its '\n' */
    if (l.count == 0) {
        rc = pg_fail(st, PG_EXIT_INPUT, "%s:1: cannot resume: no complete header line", path);
        goto out;
    }
    if (strlen(l.line[0]) != hlen || strncmp(l.line[0], header, hlen) != 0) {
        rc = pg_fail(st, PG_EXIT_INPUT,
                     "%s:1: cannot resume: the header differs from this sweep's (other grid keys or columns); "
                     "use another -o file", path);
        goto out;
    }
    if (l.partial) {
        /* An interrupted writer left half a row: cut it so appends start
         * on a fresh line. */
        fprintf(stderr, "pipegrid: %s:%d: dropping an incomplete last row\n", path, l.count + 1);
        if (truncate(path, (off_t)l.complete_bytes) != 0) {
            rc = pg_fail(st, PG_EXIT_INPUT, "%s: cannot truncate: %s", path, strerror(errno));
            goto out;
        }
    }
    d->tuple = pg_xcalloc((size_t)l.count, sizeof *d->tuple);
    int nheader = 0;
    char **hf = NULL;
    nheader = csv_split(l.line[0], &hf);
    csv_fields_free(hf, nheader);
    for (int i = 1; i < l.count; i++) {
        char **f = NULL;
        int n = csv_split(l.line[i], &f);
        if (n != nheader) {
            csv_fields_free(f, n);
            rc = pg_fail(st, PG_EXIT_INPUT, "%s:%d: cannot resume: %s", path, i + 1,
                         n < 0 ? "malformed CSV row" : "the row does not have the header's number of fields");
            goto out;
        }
        d->tuple[d->count++] = tuple_of((const char *const *)f, g->nkeys);
        csv_fields_free(f, n);
    }
    qsort(d->tuple, (size_t)d->count, sizeof *d->tuple, cmp_str);
out:
    csv_lines_free(&l);
    return rc;
}

static int is_done(const done_set *d, const sweep_grid *g, long index, const char **values)
{
    if (d->count == 0)
        return 0;
    sweep_grid_combination(g, index, values);
    char *t = tuple_of(values, g->nkeys);
    int found = bsearch(&t, d->tuple, (size_t)d->count, sizeof *d->tuple, cmp_str) != NULL;
    free(t);
    return found;
}

/* One grid value on its own: the key's schema check, and for schedule a
 * known generator (the schema keeps it a free string for file:PATH). */
static int check_grid_value(const char *key, const char *value, pg_status *st)
{
    pg_origin at = {"--grid", 0};
    int rc = experiment_check_value(key, value, at, st);
    if (rc == 0 && strcmp(key, "schedule") == 0 &&
        strncmp(value, SCHEDULE_FILE_PREFIX, strlen(SCHEDULE_FILE_PREFIX)) != 0 && sched_find_generator(value) == NULL)
        rc = pg_fail_at(st, PG_EXIT_INPUT, at, key, "unknown schedule '%s' (`pipegrid schedule list` names them)",
                        value);
    return rc;
}

/* Bad experiment files and --set options fail the whole sweep at once
 * rather than once per combination. */
static int preflight(const cli_options *o, const sweep_grid *g, pg_status *st)
{
    config c;
    config_init(&c);
    int rc = 0;
    if (o->experiment_path)
        rc = config_load_file(&c, o->experiment_path, st);
    for (int i = 0; rc == 0 && i < o->nsets; i++)
        rc = config_apply_set(&c, o->sets[i], st);
    /* Every grid value on its own: an unknown key or a bad value would
     * otherwise only show as failed rows once everything has run. */
    for (int k = 0; rc == 0 && k < g->nkeys; k++)
        for (int v = 0; rc == 0 && v < g->keys[k].nvalues; v++)
            rc = check_grid_value(g->keys[k].name, g->keys[k].values[v], st);
    for (int k = 0; rc == 0 && k < g->nkeys; k++) {
        strbuf kv;
        sb_init(&kv);
        sb_appendf(&kv, "%s=%s", g->keys[k].name, g->keys[k].values[0]);
        rc = config_apply_set(&c, kv.data, st);
        sb_free(&kv);
    }
    config_free(&c);
    return rc;
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
    int rc = preflight(o, g, st);
    if (rc != 0)
        return rc;
    strbuf header;
    sb_init(&header);
    sweep_csv_header(g, &header);
    done_set done = {.need_header = 1};
    out_sink sink = {.f = stdout};
    /* -o: opened and locked before its rows are read, so a second sweep on
     * the same file is refused instead of running and appending every row
     * again (util/outfile.h). */
    if (o->output_path &&
        ((rc = pg_open_locked_append(o->output_path, "-o", "sweep -o", &sink.f, st)) != 0 ||
         (rc = read_done(o->output_path, g, header.data, &done, st)) != 0)) {
        if (sink.f)
            fclose(sink.f);
        done_free(&done);
        sb_free(&header);
        return rc;
    }
    long *indices = pg_xcalloc((size_t)g->total, sizeof *indices);
    const char **values = pg_xcalloc((size_t)g->nkeys, sizeof *values);
    long count = 0, skipped = 0;
    for (long i = 0; i < g->total; i++) {
        if (!sweep_in_chunk(i, chunk_k, chunk_n))
            continue;
        if (is_done(&done, g, i, values))
            skipped++;
        else
            indices[count++] = i;
    }
    free(values);
    done_free(&done);

    if (o->output_path) {
        sink.flush_each = 1;
        if (skipped > 0)
            fprintf(stderr, "pipegrid: %s: %ld combinations already there, %ld to run\n", o->output_path,
                    skipped, count);
    }
    if (done.need_header && (fputs(header.data, sink.f) == EOF || fflush(sink.f) != 0)) {
        rc = pg_fail(st, PG_EXIT_INTERNAL, "cannot write the CSV header");
        goto out;
    }
    sweep_plan plan = {.grid = g, .experiment_path = o->experiment_path, .sets = o->sets, .nsets = o->nsets,
                       .indices = indices, .count = count, .jobs = o->jobs,
                       .progress = isatty(STDERR_FILENO)};
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
    int rc = cli_parse_options(argc, argv, 2, 1u << FORMAT_CSV,
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
