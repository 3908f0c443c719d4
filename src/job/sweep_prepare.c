/* sweep_prepare.c: what a sweep checks before it runs (sweep.h): the
 * experiment, the --set options and every grid value on their own, and the
 * combinations a resume file (-o FILE) already holds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job/sweep.h"
#include "model/experiment.h"
#include "schedule/schedule.h"

/* schedule=file:PATH, as job.c reads it. */
#define SCHEDULE_FILE_PREFIX "file:"
/* Joins a row's key values into one string to look it up (a control
 * character no grid value holds). */
#define TUPLE_SEP '\x1f'

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

void sweep_done_free(sweep_done *d)
{
    for (long i = 0; i < d->count; i++)
        free(d->tuple[i]);
    free(d->tuple);
}

int sweep_read_done(const char *path, const sweep_grid *g, const char *header, sweep_done *d, pg_status *st)
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

int sweep_is_done(const sweep_done *d, const sweep_grid *g, long index, const char **values)
{
    if (d->count == 0)
        return 0;
    sweep_grid_combination(g, index, values);
    char *t = tuple_of(values, g->nkeys);
    int found = bsearch(&t, d->tuple, (size_t)d->count, sizeof *d->tuple, cmp_str) != NULL;
    free(t);
    return found;
}

int sweep_check_grid_value(const char *key, const char *value, pg_status *st)
{
    pg_origin at = {"--grid", 0};
    int rc = experiment_check_value(key, value, at, st);
    if (rc == 0 && strcmp(key, "schedule") == 0 &&
        strncmp(value, SCHEDULE_FILE_PREFIX, strlen(SCHEDULE_FILE_PREFIX)) != 0 && sched_find_generator(value) == NULL)
        rc = pg_fail_at(st, PG_EXIT_INPUT, at, key, "unknown schedule '%s' (`pipegrid schedule list` names them)",
                        value);
    return rc;
}

int sweep_preflight(const char *experiment_path, const char *const *sets, int nsets, const sweep_grid *g,
                    pg_status *st)
{
    config c;
    config_init(&c);
    int rc = 0;
    if (experiment_path)
        rc = config_load_file(&c, experiment_path, st);
    for (int i = 0; rc == 0 && i < nsets; i++)
        rc = config_apply_set(&c, sets[i], st);
    /* Every grid value on its own: an unknown key or a bad value would
     * otherwise only show as failed rows once everything has run. */
    for (int k = 0; rc == 0 && k < g->nkeys; k++)
        for (int v = 0; rc == 0 && v < g->keys[k].nvalues; v++)
            rc = sweep_check_grid_value(g->keys[k].name, g->keys[k].values[v], st);
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
