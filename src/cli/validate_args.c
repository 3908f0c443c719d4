/* validate_args.c: command line of calibrate / validate (validate_args.h). */
#include <stdlib.h>
#include <string.h>

#include "calib/fit_select.h"
#include "calib/itermodel.h"
#include "calib/measurements.h"
#include "cli/validate_args.h"
#include "util/units.h"

static int parse_fraction(const char *opt, const char *text, double lo_excl, double hi, double *out, pg_status *st)
{
    const char *why = NULL;
    if (units_parse_double(text, out, &why) != 0 || !(*out > lo_excl && *out <= hi))
        return pg_fail(st, PG_EXIT_INPUT, "option '%s': '%s' must be a number in (%g, %g]", opt, text, lo_excl, hi);
    return 0;
}

int validate_args_parse(int argc, char **argv, int calibrate, validate_args *a, pg_status *st)
{
    memset(a, 0, sizeof *a);
    a->gpu = NULL;
    a->output = "";
    a->fit_fraction = VALIDATE_DEFAULT_FIT_FRACTION;
    a->max_weight = -1.0;
    a->folds = CV_DEFAULT_FOLDS;
    if (calibrate) {
        a->max_mape = CV_DEFAULT_TARGET_MAPE;
        a->max_overall_mape = CV_DEFAULT_TARGET_OVERALL;
    }
    const char *cmd = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = strcmp(o, "--gpu") == 0 || strcmp(o, "--fit-fraction") == 0 || strcmp(o, "-o") == 0 ||
                    strcmp(o, "--format") == 0 || strcmp(o, "--emit") == 0 || strcmp(o, "-j") == 0 ||
                    strcmp(o, "--max-mape") == 0 ||
                    strcmp(o, "--max-error") == 0 ||
                    strcmp(o, "--max-overall-mape") == 0 ||
                    strcmp(o, "--max-weight") == 0 || strcmp(o, "--folds") == 0;
        if (takes && val == NULL)
            return pg_fail(st, PG_EXIT_INPUT, "%s: option '%s' needs a value", cmd, o);
        if (strcmp(o, "--with-regressions") == 0) {
            a->keep_regressions = 1;
            continue;
        }
        if (!calibrate && strcmp(o, "--surrogate") == 0) {
            a->surrogate_only = 1;
            continue;
        }
        if (strcmp(o, "--no-layer-profiles") == 0) {
            a->no_layer_profiles = 1;
            continue;
        }
        if (strcmp(o, "--gpu") == 0)
            a->gpu = val;
        else if (strcmp(o, "--fit-fraction") == 0) {
            if (parse_fraction(o, val, 0.0, 1.0, &a->fit_fraction, st))
                return st->code;
        } else if (calibrate && strcmp(o, "--max-weight") == 0) {
            const char *why = NULL;
            if (units_parse_double(val, &a->max_weight, &why) != 0 || a->max_weight < 0)
                return pg_fail(st, PG_EXIT_INPUT, "%s: option '--max-weight': '%s' must be a number >= 0", cmd, val);
        } else if (calibrate && strcmp(o, "--folds") == 0) {
            long k;
            const char *why = NULL;
            if (units_parse_long(val, &k, &why) != 0 || k < 2 || k > CV_MAX_FOLDS)
                return pg_fail(st, PG_EXIT_INPUT, "%s: option '--folds': '%s' must be an integer in [2, %d]", cmd,
                               val, CV_MAX_FOLDS);
            a->folds = (int)k;
        } else if (calibrate && strcmp(o, "-o") == 0)
            a->output = val;
        else if (!calibrate && strcmp(o, "--format") == 0) {
            if (strcmp(val, "csv") != 0 && strcmp(val, "text") != 0)
                return pg_fail(st, PG_EXIT_INPUT, "%s: option '--format': '%s' (expected text or csv)", cmd, val);
            a->csv_out = strcmp(val, "csv") == 0;
        } else if (!calibrate && strcmp(o, "--emit") == 0)
            a->emit_dir = val;
        else if (!calibrate && strcmp(o, "-j") == 0) {
            long j;
            const char *why = NULL;
            if (units_parse_long(val, &j, &why) != 0 || j < 1 || j > VALIDATE_MAX_JOBS)
                return pg_fail(st, PG_EXIT_INPUT, "%s: option '-j': '%s' must be an integer in [1, %d]", cmd, val,
                               VALIDATE_MAX_JOBS);
            a->jobs = (int)j;
        }
        else if (strcmp(o, "--max-mape") == 0) {
            if (parse_fraction(o, val, 0.0, 1e9, &a->max_mape, st))
                return st->code;
        } else if (calibrate && strcmp(o, "--max-overall-mape") == 0) {
            if (parse_fraction(o, val, 0.0, 1e9, &a->max_overall_mape, st))
                return st->code;
        } else if (strcmp(o, "--max-error") == 0) {
            if (parse_fraction(o, val, 0.0, 1e9, &a->max_error, st))
                return st->code;
        } else if (o[0] == '-' && o[1] != '\0')
            return pg_fail(st, PG_EXIT_INPUT, "%s: unknown option '%s'", cmd, o);
        else if (a->nfiles < VALIDATE_MAX_FILES) {
            a->files[a->nfiles++] = o;
            if (a->csv == NULL)
                a->csv = o;
            continue;
        } else
            return pg_fail(st, PG_EXIT_INPUT, "%s: more than %d files of measurements given", cmd,
                           VALIDATE_MAX_FILES);
        i++;
    }
    if (a->csv == NULL)
        return pg_fail(st, PG_EXIT_INPUT, "%s: no CSV of measured iteration times given", cmd);
    return 0;
}


int measurements_load(const validate_args *a, int surrogate_rows, gpu_params *g, calib_rows *rows, iter_set *set,
                      pg_status *st)
{
    calib_load_opts o = {.files = a->files, .nfiles = a->nfiles, .gpu = a->gpu,
                         .keep_regressions = a->keep_regressions, .no_layer_profiles = a->no_layer_profiles,
                         .surrogate_rows = surrogate_rows};
    return calib_measurements_load(&o, g, rows, set, st);
}
