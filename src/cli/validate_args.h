/* validate_args.h: the options shared by `pipegrid calibrate` and
 * `pipegrid validate` (both read a CSV of measured iteration times). */
#ifndef PG_CLI_VALIDATE_ARGS_H
#define PG_CLI_VALIDATE_ARGS_H

#include "calib/itermodel.h"
#include "calib/rows.h"
#include "util/error.h"

/* The part of the measurements calibration fits on. */
#define VALIDATE_DEFAULT_FIT_FRACTION 0.3

#define VALIDATE_MAX_FILES 8
#define VALIDATE_MAX_JOBS 1024

typedef struct validate_args {
    const char *csv;            /* the first file (messages) */
    const char *files[VALIDATE_MAX_FILES]; /* every file given: fitted / validated together */
    int nfiles;
    const char *gpu;            /* --gpu TYPE or FILE; NULL: the GPU type of the file's first row */
    const char *gpu_path;       /* resolved file (filled by the command) */
    const char *output;         /* calibrate -o FILE ("" = stdout) */
    double fit_fraction;        /* --fit-fraction */
    double max_weight;          /* calibrate --max-weight: weight of the largest error in the objective;
                                 * < 0 (default): chosen by cross-validation in the fit part */
    int folds;                  /* calibrate --folds: of that cross-validation */
    int csv_out;                /* validate --format csv */
    const char *emit_dir;       /* validate --emit DIR: each row written as an experiment file there */
    int surrogate_only;         /* validate --surrogate: the analytic surrogate alone, no simulation */
    int jobs;                   /* validate -j N: simulations at a time (0: one per CPU) */
    double max_mape, max_error; /* validate limits on the held-out rows, 0 = none; calibrate: the
                                 * targets the cross-validation scores against (fit_select.h: every
                                 * file's MAPE, 8 % by default; the largest error, off by default) */
    double max_overall_mape;    /* calibrate --max-overall-mape: the target of all rows' MAPE (5 %) */
    int keep_regressions;       /* --with-regressions: predict (and fit) the rows of documented software
                                 * regressions too (rows.h), which are otherwise listed as skipped */
    int no_layer_profiles;      /* --no-layer-profiles: validate predicts every layer analytically (the
                                 * file's measured layer profiles ignored); calibrate fits none */
} validate_args;

/* argv[first] is the subcommand; calibrate = 1 accepts -o, --max-weight,
 * --folds and --max-overall-mape, validate --format; both take the limits. */
int validate_args_parse(int argc, char **argv, int calibrate, validate_args *a, pg_status *st);

/* The measured rows, the GPU parameters and the prepared rows of a's
 * files (calib/measurements.h); surrogate_rows: only the rows the
 * surrogate models (calibrate, validate --surrogate). */
int measurements_load(const validate_args *a, int surrogate_rows, gpu_params *g, calib_rows *rows, iter_set *set,
                      pg_status *st);

#endif
