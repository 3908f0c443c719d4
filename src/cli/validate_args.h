/* validate_args.h: the options shared by `pipegrid calibrate` and
 * `pipegrid validate` (both read a CSV of measured iteration times). */
#ifndef PG_CLI_VALIDATE_ARGS_H
#define PG_CLI_VALIDATE_ARGS_H

#include "calib/itermodel.h"
#include "util/error.h"

/* Default GPU type of the measurements (vTrain's data: one node of 8 A100s)
 * and the part of the rows calibration fits on. */
#define VALIDATE_DEFAULT_GPU "a100-80g"
#define VALIDATE_DEFAULT_FIT_FRACTION 0.3

typedef struct validate_args {
    const char *csv;
    const char *gpu;            /* --gpu TYPE or FILE */
    const char *gpu_path;       /* resolved file (filled by the command) */
    const char *output;         /* calibrate -o FILE ("" = stdout) */
    double fit_fraction;        /* --fit-fraction */
    double max_weight;          /* calibrate --max-weight: weight of the largest error in the objective;
                                 * < 0 (default): chosen by cross-validation in the fit part */
    int folds;                  /* calibrate --folds: of that cross-validation */
    int csv_out;                /* validate --format csv */
    double max_mape, max_error; /* validate limits, 0 = none; calibrate: the targets the
                                 * cross-validation scores against (default issue 7's) */
} validate_args;

/* argv[first] is the subcommand; calibrate = 1 accepts -o, --max-weight and
 * --folds, validate --format; both take the limits. */
int validate_args_parse(int argc, char **argv, int calibrate, validate_args *a, pg_status *st);

/* Load what both commands read: the GPU parameters (a.gpu) and the measured
 * rows of a.csv, prepared for prediction.  On failure nothing is left
 * allocated. */
int measurements_load(const validate_args *a, gpu_params *g, train_row **rows, int *n, iter_set *set,
                      pg_status *st);

#endif
