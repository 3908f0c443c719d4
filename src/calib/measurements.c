/* measurements.c: the measured rows of several files, for the GPU type
 * predicted (measurements.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/measurements.h"

/* Append src's rows (tagged with file index k) and skipped rows to dst. */
static void append_rows(calib_rows *dst, calib_rows *src, int k)
{
    dst->row = pg_xrealloc(dst->row, ((size_t)dst->n + (size_t)src->n + 1) * sizeof *dst->row);
    for (int i = 0; i < src->n; i++) {
        dst->row[dst->n] = src->row[i];
        dst->row[dst->n++].file = k;
    }
    dst->skip = pg_xrealloc(dst->skip, ((size_t)dst->nskip + (size_t)src->nskip + 1) * sizeof *dst->skip);
    for (int i = 0; i < src->nskip; i++)
        dst->skip[dst->nskip++] = src->skip[i];
    if (dst->source[0] == '\0')
        snprintf(dst->source, sizeof dst->source, "%s", src->source);
    else if (strlen(dst->source) + strlen(src->source) + 2 < sizeof dst->source) {
        strcat(dst->source, "+");
        strcat(dst->source, src->source);
    }
}

/* The rows the surrogate models; the others to skip with the reason. */
static void keep_surrogate_rows(calib_rows *rows)
{
    int *keep = pg_xcalloc((size_t)rows->n + 1, sizeof *keep);
    char(*why)[200] = pg_xcalloc((size_t)rows->n + 1, sizeof *why);
    for (int i = 0; i < rows->n; i++) {
        const char *no = iter_row_unmodelled(&rows->row[i]);
        keep[i] = no == NULL;
        if (no)
            snprintf(why[i], sizeof why[i], "%s", no);
    }
    calib_rows_keep(rows, keep, why);
    free(keep);
    free(why);
}

int calib_measurements_load(const calib_load_opts *a, gpu_params *g, calib_rows *rows, iter_set *set, pg_status *st)
{
    int rc = 0;
    memset(rows, 0, sizeof *rows);
    for (int k = 0; k < a->nfiles && rc == 0; k++) {
        calib_rows one;
        rc = calib_rows_load(a->files[k], a->keep_regressions ? CALIB_KEEP_REGRESSIONS : 0, &one, st);
        if (rc == 0) {
            append_rows(rows, &one, k);
            calib_rows_free(&one);
        }
    }
    if (rc) {
        calib_rows_free(rows);
        return rc;
    }
    const char *gpu = a->gpu;
    if (!gpu)
        gpu = rows->n > 0 ? rows->row[0].gpu : "a100-80g";
    rc = gpu_params_load(gpu, g, st);
    if (rc == 0 && a->no_layer_profiles)
        g->nlayer_profiles = 0;
    if (rc == 0) {
        calib_rows_keep_gpu(rows, g->name);
        if (a->surrogate_rows)
            keep_surrogate_rows(rows);
        if (rows->n == 0)
            rc = pg_fail(st, PG_EXIT_INPUT, "%s: no row to predict on GPU type %s%s (%d rows skipped; line %d: %s)",
                         a->files[0], g->name, a->surrogate_rows ? " with the surrogate" : "", rows->nskip,
                         rows->nskip ? rows->skip[0].line : 0, rows->nskip ? rows->skip[0].reason : "none");
    }
    if (rc == 0)
        rc = iter_set_prepare(set, rows->row, rows->n, st);
    if (rc != 0)
        calib_rows_free(rows);
    return rc;
}

void calib_rows_print_skipped(const calib_rows *rows, FILE *f)
{
    if (rows->nskip == 0)
        return;
    fprintf(f, "skipped rows: %d (not predicted, not in any error below)\n", rows->nskip);
    int *done = pg_xcalloc((size_t)rows->nskip, sizeof *done);
    for (int i = 0; i < rows->nskip; i++) {
        if (done[i])
            continue;
        int count = 0;
        for (int j = i; j < rows->nskip; j++)
            if (!done[j] && strcmp(rows->skip[j].reason, rows->skip[i].reason) == 0) {
                done[j] = 1;
                count++;
            }
        fprintf(f, "  %3d x %s (e.g. line %d, %s)\n", count, rows->skip[i].reason, rows->skip[i].line,
                rows->skip[i].label);
    }
    free(done);
}
