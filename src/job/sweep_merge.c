/* sweep_merge.c: join the chunk files of a sweep into one CSV in grid order
 * (`pipegrid merge [--grid KEY=V1,...]... [-o FILE] PART.csv...`, cli/merge_cli.c).
 *
 * Every part must have the same header (the same grid keys and columns).
 * Rows are put back in order by their `combination` column; a combination
 * found twice is kept once (a re-run chunk), with a warning when the two
 * rows differ.  The grid size comes from the `combinations` column, so the
 * merge knows what is missing without being told the grid: missing
 * combinations are listed on stderr and the exit code is 2, after the
 * merged CSV is written all the same, since a partial result is still worth
 * having.  A missing combination is named by its key values when the rows
 * present determine them or when the sweep's --grid options are given to
 * merge too (then every row is checked against that grid).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "job/sweep.h"
#include "util/outfile.h"
#include "util/units.h"

/* How many missing combinations are named one by one. */
#define MISSING_LISTED_MAX 20

typedef struct merge_row {
    long index;
    long seq;               /* reading order: the first of duplicates wins */
    char *line;             /* owned */
    char **keys;            /* owned, nkeys values */
    const char *file;
    int lineno;
} merge_row;

typedef struct merge_state {
    char *header;           /* of the first file (owned) */
    const char *header_file;
    int nfields, nkeys;
    char **key_names;       /* the header's first nkeys fields (owned) */
    long total;             /* -1 until a row says */
    merge_row *rows;
    size_t nrows, cap;
} merge_state;

static int cmp_row(const void *a, const void *b)
{
    const merge_row *x = a, *y = b;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The header must be KEYS..., the run columns, combination, combinations. */
static int check_header(merge_state *m, const char *path, const char *line, pg_status *st)
{
    if (m->header) {
        if (strcmp(line, m->header) != 0)
            return pg_fail(st, PG_EXIT_INPUT, "%s:1: the header differs from %s's (parts of different sweeps?)",
                           path, m->header_file);
        return 0;
    }
    char **f = NULL;
    int n = csv_split(line, &f);
    int nkeys = n > 0 ? sweep_csv_key_count(f, n) : -1;
    if (nkeys >= 0) {
        m->key_names = pg_xcalloc((size_t)nkeys + 1, sizeof *m->key_names);
        for (int k = 0; k < nkeys; k++)
            m->key_names[k] = pg_xstrdup(f[k]);
    }
    csv_fields_free(f, n);
    if (nkeys < 0)
        return pg_fail(st, PG_EXIT_INPUT, "%s:1: not a sweep CSV header (grid keys, the run columns, "
                       SWEEP_COL_INDEX ", " SWEEP_COL_TOTAL ")", path);
    m->header = pg_xstrdup(line);
    m->header_file = path;
    m->nfields = n;
    m->nkeys = nkeys;
    return 0;
}

static int parse_count(const char *text, long *v)
{
    const char *why = NULL;
    return units_parse_long(text, v, &why) == 0 && *v >= 0;
}

static int read_part(merge_state *m, const char *path, pg_status *st)
{
    csv_lines l;
    int rc = csv_read_lines(path, &l, st);
    if (rc != 0)
        return rc;
    if (l.count == 0) {
        rc = pg_fail(st, PG_EXIT_INPUT, "%s:1: empty file (no header)", path);
        goto out;
    }
    if (l.partial)
        fprintf(stderr, "pipegrid: %s:%d: ignoring an incomplete last row\n", path, l.count + 1);
    if ((rc = check_header(m, path, l.line[0], st)) != 0)
        goto out;
    for (int i = 1; i < l.count; i++) {
        char **f = NULL;
        int n = csv_split(l.line[i], &f);
        long index = 0, total = 0;
        if (n != m->nfields || !parse_count(f[n - 2], &index) || !parse_count(f[n - 1], &total) ||
            index >= total || total > SWEEP_MAX_COMBINATIONS) {
            csv_fields_free(f, n);
            rc = pg_fail(st, PG_EXIT_INPUT, "%s:%d: %s", path, i + 1,
                         n < 0 ? "malformed CSV row"
                         : n != m->nfields ? "the row does not have the header's number of fields"
                                           : "bad " SWEEP_COL_INDEX "/" SWEEP_COL_TOTAL " values");
            goto out;
        }
        if (m->total >= 0 && total != m->total) {
            csv_fields_free(f, n);
            rc = pg_fail(st, PG_EXIT_INPUT, "%s:%d: " SWEEP_COL_TOTAL " is %ld, other rows say %ld", path, i + 1,
                         total, m->total);
            goto out;
        }
        m->total = total;
        pg_grow((void **)&m->rows, &m->cap, m->nrows + 1, sizeof *m->rows);
        merge_row *r = &m->rows[m->nrows];
        *r = (merge_row){.index = index, .seq = (long)m->nrows, .line = pg_xstrdup(l.line[i]),
                         .keys = pg_xcalloc((size_t)m->nkeys + 1, sizeof *r->keys), .file = path,
                         .lineno = i + 1};
        m->nrows++;
        for (int k = 0; k < m->nkeys; k++)
            r->keys[k] = pg_xstrdup(f[k]);
        csv_fields_free(f, n);
    }
out:
    csv_lines_free(&l);
    return rc;
}

/* Sorted rows; duplicates dropped (the same combination must have the
 * same key values, else the parts are of different grids). */
static int dedupe(merge_state *m, pg_status *st)
{
    qsort(m->rows, m->nrows, sizeof *m->rows, cmp_row);
    size_t kept = 0;
    for (size_t i = 0; i < m->nrows; i++) {
        merge_row *r = &m->rows[i];
        if (kept > 0 && m->rows[kept - 1].index == r->index) {
            merge_row *first = &m->rows[kept - 1];
            for (int k = 0; k < m->nkeys; k++)
                if (strcmp(first->keys[k], r->keys[k]) != 0)
                    return pg_fail(st, PG_EXIT_INPUT, "%s:%d: combination %ld has %s, but %s:%d has %s",
                                   r->file, r->lineno, r->index, r->keys[k], first->file, first->lineno,
                                   first->keys[k]);
            if (strcmp(first->line, r->line) != 0)
                fprintf(stderr, "pipegrid: %s:%d: combination %ld differs from %s:%d; keeping the first\n",
                        r->file, r->lineno, r->index, first->file, first->lineno);
            free(r->line);
            for (int k = 0; k < m->nkeys; k++)
                free(r->keys[k]);
            free(r->keys);
            continue;
        }
        m->rows[kept++] = *r;
    }
    m->nrows = kept;
    return 0;
}

/* Without --grid, rebuild the grid from the rows present: in row-major
 * order key k's digit of combination i is (i / stride_k) % n_k.  When every
 * value of every key shows up in some row, n_k is the number of distinct
 * values and the digits name them; returns 0 and fills g then, -1 when the
 * rows do not determine the grid (a value none of the rows has). */
static int grid_from_rows(const merge_state *m, sweep_grid *g)
{
    memset(g, 0, sizeof *g);
    g->keys = pg_xcalloc((size_t)m->nkeys, sizeof *g->keys);
    g->nkeys = m->nkeys;
    g->total = m->total;
    long product = 1;
    int ok = 1;
    for (int k = 0; ok && k < m->nkeys; k++) {
        sweep_key *key = &g->keys[k];
        key->name = pg_xstrdup(m->key_names[k]);
        size_t cap = 0;
        for (size_t i = 0; i < m->nrows && key->nvalues <= m->total; i++) {
            int j = 0;
            while (j < key->nvalues && strcmp(key->values[j], m->rows[i].keys[k]) != 0)
                j++;
            if (j == key->nvalues) {
                pg_grow((void **)&key->values, &cap, (size_t)key->nvalues + 1, sizeof *key->values);
                key->values[key->nvalues++] = NULL;   /* its digit is not known yet */
                key->values[j] = pg_xstrdup(m->rows[i].keys[k]);
            }
        }
        product *= key->nvalues;
        ok = key->nvalues > 0 && product <= m->total;
    }
    ok = ok && product == m->total;
    /* Put each value at its digit, checking that the rows agree. */
    char ***at = pg_xcalloc((size_t)m->nkeys, sizeof *at);
    for (int k = 0; k < m->nkeys; k++)
        at[k] = pg_xcalloc((size_t)g->keys[k].nvalues + 1, sizeof **at);
    for (size_t i = 0; ok && i < m->nrows; i++) {
        long rest = m->rows[i].index;
        for (int k = m->nkeys - 1; ok && k >= 0; k--) {
            long d = rest % g->keys[k].nvalues;
            rest /= g->keys[k].nvalues;
            if (!at[k][d])
                at[k][d] = m->rows[i].keys[k];
            else
                ok = strcmp(at[k][d], m->rows[i].keys[k]) == 0;
        }
    }
    for (int k = 0; k < m->nkeys; k++) {
        for (int v = 0; ok && v < g->keys[k].nvalues; v++) {
            free(g->keys[k].values[v]);
            g->keys[k].values[v] = pg_xstrdup(at[k][v]);
        }
        free(at[k]);
    }
    free(at);
    if (!ok)
        sweep_grid_free(g);
    return ok ? 0 : -1;
}

/* With --grid: the grid must be the parts' (same keys, same size, and each
 * row's key values those of its combination). */
static int check_grid(const merge_state *m, const sweep_grid *g, pg_status *st)
{
    int same = g->nkeys == m->nkeys && (m->total < 0 || g->total == m->total);
    for (int k = 0; same && k < g->nkeys; k++)
        same = strcmp(g->keys[k].name, m->key_names[k]) == 0;
    if (!same)
        return pg_fail(st, PG_EXIT_INPUT, "merge: the --grid options do not describe the parts' grid "
                       "(%d keys and %ld combinations there)", m->nkeys, m->total);
    const char **values = pg_xcalloc((size_t)g->nkeys, sizeof *values);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < m->nrows; i++) {
        const merge_row *r = &m->rows[i];
        sweep_grid_combination(g, r->index, values);
        for (int k = 0; rc == 0 && k < g->nkeys; k++)
            if (strcmp(values[k], r->keys[k]) != 0)
                rc = pg_fail(st, PG_EXIT_INPUT, "%s:%d: " SWEEP_COL_INDEX " %ld has %s=%s, the --grid says %s",
                             r->file, r->lineno, r->index, g->keys[k].name, r->keys[k], values[k]);
    }
    free(values);
    return rc;
}

static long report_missing(const merge_state *m, const sweep_grid *given)
{
    if (m->total < 0)
        return 0;
    long missing = m->total - (long)m->nrows;
    if (missing == 0)
        return 0;
    sweep_grid rebuilt;
    const sweep_grid *g = given;
    if (!g && grid_from_rows(m, &rebuilt) == 0)
        g = &rebuilt;
    fprintf(stderr, "pipegrid: merge: %ld of %ld combinations missing%s:\n", missing, m->total,
            g ? "" : " (give the sweep's --grid options to name their values)");
    long listed = 0;
    size_t r = 0;
    strbuf kv;
    sb_init(&kv);
    for (long i = 0; i < m->total && listed < MISSING_LISTED_MAX; i++) {
        while (r < m->nrows && m->rows[r].index < i)
            r++;
        if (r < m->nrows && m->rows[r].index == i)
            continue;
        sb_reset(&kv);
        if (g) {
            sb_append(&kv, ": ");
            sweep_grid_describe(g, i, &kv);
        }
        fprintf(stderr, "  " SWEEP_COL_INDEX " %ld%s\n", i, kv.data ? kv.data : "");
        listed++;
    }
    sb_free(&kv);
    if (missing > listed)
        fprintf(stderr, "  ... and %ld more\n", missing - listed);
    if (g == &rebuilt)
        sweep_grid_free(&rebuilt);
    return missing;
}

static void merge_free(merge_state *m)
{
    for (size_t i = 0; i < m->nrows; i++) {
        free(m->rows[i].line);
        for (int k = 0; k < m->nkeys; k++)
            free(m->rows[i].keys[k]);
        free(m->rows[i].keys);
    }
    free(m->rows);
    free(m->header);
    csv_fields_free(m->key_names, m->nkeys);
}

static int write_merged(const merge_state *m, const char *path, pg_status *st)
{
    FILE *out = stdout;
    pg_outfile of = {0};
    if (path) {
        int rc = pg_outfile_open(&of, path, "-o", st);
        if (rc != 0)
            return rc;
        out = of.f;
    }
    fprintf(out, "%s\n", m->header);
    for (size_t i = 0; i < m->nrows; i++)
        fprintf(out, "%s\n", m->rows[i].line);
    if (path)
        return pg_outfile_commit(&of, 0, st);
    return fflush(out) != 0 || ferror(out) ? pg_fail(st, PG_EXIT_INTERNAL, "standard output: write error") : 0;
}

int sweep_merge(const char *const *parts, int nparts, const sweep_grid *given, const char *out_path, long *missing,
                pg_status *st)
{
    merge_state m = {.total = -1};
    int rc = 0;
    *missing = 0;
    for (int i = 0; rc == 0 && i < nparts; i++)
        rc = read_part(&m, parts[i], st);
    if (rc == 0 && given)
        rc = check_grid(&m, given, st);
    if (rc == 0)
        rc = dedupe(&m, st);
    if (rc == 0 && given && m.total < 0)
        m.total = given->total;     /* parts with headers only: the grid says what is missing */
    if (rc == 0)
        rc = write_merged(&m, out_path, st);
    if (rc == 0)
        *missing = report_missing(&m, given);
    merge_free(&m);
    return rc;
}
