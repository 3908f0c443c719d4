/* sweep_csv.c: the little CSV a sweep needs: quoting a field, splitting a
 * line, reading a file line by line (resume and merge), and the header. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "job/sweep.h"
#include "report/report.h"
#include "util/csv.h"

void csv_field(strbuf *sb, const char *text)
{
    /* Blanks at either end are quoted too: the splitter drops them from an
     * unquoted field, as the hand-written validation files need. */
    size_t len = strlen(text);
    int edge_blank = len > 0 && (strchr(" \t", text[0]) || strchr(" \t", text[len - 1]));
    if (!strpbrk(text, ",\"\r\n") && !edge_blank) {
        sb_append(sb, text);
        return;
    }
    sb_append(sb, "\"");
    for (const char *p = text; *p; p++) {
        if (*p == '"')
            sb_append(sb, "\"");   /* doubled inside quotes */
        sb_append_n(sb, p, 1);
    }
    sb_append(sb, "\"");
}

int csv_split(const char *line, char ***fields)
{
    /* util/csv.c is the one splitter; this owns copies of its fields.  A
     * line has at most one field more than it has commas. */
    int max = 1;
    for (const char *p = line; *p; p++)
        max += *p == ',';
    char *copy = pg_xstrdup(line);
    char **in_place = pg_xmalloc((size_t)max * sizeof *in_place);
    const char *why;
    int n = pg_csv_split(copy, in_place, max, &why);
    char **out = NULL;
    if (n >= 0) {
        out = pg_xmalloc((size_t)n * sizeof *out);
        for (int i = 0; i < n; i++)
            out[i] = pg_xstrdup(in_place[i]);
    }
    free(in_place);
    free(copy);
    *fields = out;
    return n;
}

void csv_fields_free(char **fields, int n)
{
    for (int i = 0; i < n; i++)
        free(fields[i]);
    free(fields);
}

int csv_read_lines(const char *path, csv_lines *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return pg_fail(st, PG_EXIT_INPUT, "%s: cannot open: %s", path, strerror(errno));
    strbuf all;
    sb_init(&all);
    char buf[1 << 16];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        sb_append_n(&all, buf, got);
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        sb_free(&all);
        return pg_fail(st, PG_EXIT_INPUT, "%s: read error", path);
    }
    size_t cap = 0, start = 0;
    for (size_t i = 0; i < all.len; i++) {
        if (all.data[i] != '\n')
            continue;
        size_t len = i - start;
        if (len > 0 && all.data[start + len - 1] == '\r')
            len--;
        pg_grow((void **)&out->line, &cap, (size_t)out->count + 1, sizeof *out->line);
        char *l = pg_xmalloc(len + 1);
        memcpy(l, all.data + start, len);
        l[len] = '\0';
        out->line[out->count++] = l;
        start = i + 1;
    }
    out->complete_bytes = start;
    if (start < all.len) {
        size_t len = all.len - start;
        out->partial = pg_xmalloc(len + 1);
        memcpy(out->partial, all.data + start, len);
        out->partial[len] = '\0';
    }
    sb_free(&all);
    return 0;
}

void csv_lines_free(csv_lines *l)
{
    for (int i = 0; i < l->count; i++)
        free(l->line[i]);
    free(l->line);
    free(l->partial);
    memset(l, 0, sizeof *l);
}

/* The run's column names (report_csv_header with no extra keys). */
static int run_columns(char ***names)
{
    strbuf h;
    sb_init(&h);
    report_csv_header(NULL, 0, &h);
    if (h.len > 0 && h.data[h.len - 1] == '\n')
        h.data[--h.len] = '\0';
    int n = csv_split(h.data ? h.data : "", names);
    sb_free(&h);
    return n;
}

/* A run column named like a grid key (schedule, pp, ...) would repeat the
 * key's column; a reader going by name would then see the run's copy, which
 * is empty in a failed row.  The key's column is the one kept. */
static int is_key(const char *const *keys, int nkeys, const char *name)
{
    for (int k = 0; k < nkeys; k++)
        if (strcmp(keys[k], name) == 0)
            return 1;
    return 0;
}

/* Append the run fields not shadowed by a key, each preceded by ','. */
static void kept_fields(const char *const *keys, int nkeys, char **names, int nnames, char **fields, int nfields,
                        strbuf *sb)
{
    for (int c = 0; c < nnames && c < nfields; c++) {
        if (is_key(keys, nkeys, names[c]))
            continue;
        sb_append(sb, ",");
        csv_field(sb, fields[c]);
    }
}

static const char **key_names(const sweep_grid *g)
{
    const char **names = pg_xcalloc((size_t)g->nkeys + 1, sizeof *names);
    for (int k = 0; k < g->nkeys; k++)
        names[k] = g->keys[k].name;
    return names;
}

void sweep_csv_header(const sweep_grid *g, strbuf *sb)
{
    const char **keys = key_names(g);
    char **names = NULL;
    int n = run_columns(&names);
    for (int k = 0; k < g->nkeys; k++) {
        sb_append(sb, k ? "," : "");
        csv_field(sb, keys[k]);
    }
    kept_fields(keys, g->nkeys, names, n, names, n, sb);
    sb_append(sb, "," SWEEP_COL_INDEX "," SWEEP_COL_TOTAL "\n");
    csv_fields_free(names, n);
    free(keys);
}

int sweep_csv_row(const sweep_grid *g, long index, const char *run_row, strbuf *sb)
{
    const char **keys = key_names(g);
    const char **values = pg_xcalloc((size_t)g->nkeys + 1, sizeof *values);
    sweep_grid_combination(g, index, values);
    char **names = NULL, **fields = NULL;
    int n = run_columns(&names);
    int nf = csv_split(run_row, &fields);
    int ok = nf == n;
    if (ok) {
        for (int k = 0; k < g->nkeys; k++) {
            sb_append(sb, k ? "," : "");
            csv_field(sb, values[k]);
        }
        kept_fields(keys, g->nkeys, names, n, fields, nf, sb);
        sb_appendf(sb, ",%ld,%ld\n", index, g->total);
    }
    csv_fields_free(fields, nf);
    csv_fields_free(names, n);
    free(values);
    free(keys);
    return ok ? 0 : -1;
}

int sweep_csv_key_count(char **fields, int nfields)
{
    char **names = NULL;
    int n = run_columns(&names);
    int found = -1;
    for (int nkeys = 1; found < 0 && nkeys + 2 < nfields; nkeys++) {
        const char *const *keys = (const char *const *)fields;
        int f = nkeys, ok = 1;
        for (int c = 0; ok && c < n; c++) {
            if (is_key(keys, nkeys, names[c]))
                continue;
            ok = f < nfields && strcmp(fields[f++], names[c]) == 0;
        }
        ok = ok && f + 2 == nfields && strcmp(fields[f], SWEEP_COL_INDEX) == 0 &&
             strcmp(fields[f + 1], SWEEP_COL_TOTAL) == 0;
        if (ok)
            found = nkeys;
    }
    csv_fields_free(names, n);
    return found;
}

/* JSON's number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
 * strtod alone would also take "inf", "0x1p3" or " 7", which JSON does not. */
static int is_json_number(const char *t)
{
    const char *p = t;
    if (*p == '-') p++;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (*p >= '0' && *p <= '9') p++;
    else return 0;
    if (*p == '.') {
        if (!(*++p >= '0' && *p <= '9')) return 0;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return 0;
        while (*p >= '0' && *p <= '9') p++;
    }
    return *p == '\0';
}

int sweep_jsonl_row(const char *header_line, const char *row_line, strbuf *sb)
{
    char **names = NULL, **fields = NULL;
    size_t hlen = strlen(header_line), rlen = strlen(row_line);
    char *h = pg_xstrdup(header_line), *r = pg_xstrdup(row_line);
    if (hlen > 0 && h[hlen - 1] == '\n') h[hlen - 1] = '\0';
    if (rlen > 0 && r[rlen - 1] == '\n') r[rlen - 1] = '\0';
    int n = csv_split(h, &names), nf = csv_split(r, &fields);
    int ok = n > 0 && nf == n;
    for (int c = 0; ok && c < n; c++) {
        sb_append(sb, c ? "," : "{");
        sb_append_json_string(sb, names[c]);
        sb_append(sb, ":");
        if (fields[c][0] == '\0') sb_append(sb, "null");
        else if (is_json_number(fields[c])) sb_append(sb, fields[c]);
        else sb_append_json_string(sb, fields[c]);
    }
    if (ok) sb_append(sb, "}\n");
    csv_fields_free(names, n);
    csv_fields_free(fields, nf);
    free(h);
    free(r);
    return ok ? 0 : -1;
}
