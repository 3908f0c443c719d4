/* measurements.h: what validate and calibrate both read.
 *
 * calib_measurements_load reads the measured rows of every file
 * (rows.h: any validation file; each row tagged with its file's index),
 * keeps those of the GPU type predicted (a->gpu, else the first row's type;
 * the others are listed in rows->skip), loads that type's parameters (a
 * type name or a file) and prepares the rows for prediction.  On failure
 * nothing is left allocated. */
#ifndef PG_CALIB_MEASUREMENTS_H
#define PG_CALIB_MEASUREMENTS_H

#include <stdio.h>

#include "calib/itermodel.h"
#include "calib/rows.h"
#include "util/error.h"

typedef struct calib_load_opts {
    const char *const *files;
    int nfiles;
    const char *gpu;            /* GPU type or parameter file; NULL: the first row's type */
    int keep_regressions;       /* predict the rows of documented software regressions too */
    int no_layer_profiles;      /* drop the parameter file's measured layer profiles */
    int surrogate_rows;         /* keep only the rows the surrogate models (calibrate, validate --surrogate);
                                 * the others go to skip with iter_row_unmodelled's reason */
} calib_load_opts;

int calib_measurements_load(const calib_load_opts *a, gpu_params *g, calib_rows *rows, iter_set *set,
                            pg_status *st);

/* The skipped rows, one line per reason with its count and first row, to f. */
void calib_rows_print_skipped(const calib_rows *rows, FILE *f);

#endif
