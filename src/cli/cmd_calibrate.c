/* cmd_calibrate.c: `pipegrid calibrate CSV...` -- fit the cost model's GPU
 * parameters to measured iteration times (a thin wrapper: the procedure is
 * calib_fit_procedure, src/calib/fit_select.h; the rows, src/calib/rows.h).
 *
 *   pipegrid calibrate CSV... [--gpu TYPE|FILE] [--fit-fraction F] [--folds K]
 *                          [--max-weight W] [--max-mape X] [--max-overall-mape Z]
 *                          [--max-error Y] [--with-regressions] [--no-layer-profiles] [-o FILE]
 *
 * Takes the GPU type's datasheet numbers from its parameter file
 * (profiles/gpus/TYPE.yaml) and fits the efficiency parameters globally --
 * one set for every row, no per-row tuning -- on the deterministic fit part
 * of the rows (a fraction F, 0.3 by default; itermodel.h), starting from
 * fixed values (iter_fit_initial), so the result does not depend on the
 * fitted numbers already in the file.
 *
 * The weight of the largest error in the objective is a hyper-parameter:
 * unless --max-weight fixes it, each candidate of FIT_WEIGHTS is scored by
 * K-fold cross-validation inside the fit part against the targets (every
 * file's MAPE under X, 8 %; all rows' under Z, 5 %; the largest error under
 * Y only when Y is given: fit_select.h), and the winner is used for the
 * final fit on the whole fit part (final_fit).  The held-out rows are not
 * read by any of this, and calibrate does not report on them: `pipegrid
 * validate` evaluates the result on them once.
 * Then measured layer profiles (src/calib/layer_fit.h): when the
 * cross-validation scored them better (each fold profiled on its training
 * rows), or always when --max-weight fixed the weight; never with
 * --no-layer-profiles.
 * The file written (stdout, or FILE) records what was chosen and why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "util/outfile.h"
#include "calib/fit_select.h"
#include "calib/itermodel.h"
#include "calib/measurements.h"
#include "calib/provenance.h"
#include "cli/validate_args.h"
#include "util/strbuf.h"

#define PCT 100.0

/* The layer_profiles block's source: how the profiles were fitted and why. */
static void layer_provenance(gpu_params *g, const validate_args *a, const calib_result *cr, const char *date)
{
    char why[160];
    if (cr->nres) {
        const cv_result *b = &cr->res[cr->best];
        snprintf(why, sizeof why, "chosen by %d-fold CV in the fit part (score %.4f with them, %.4f without)",
                 a->folds, b->profiled.score, b->plain.score);
    } else
        snprintf(why, sizeof why, "fitted without selection (--max-weight given)");
    snprintf(g->layer_profiles_source, sizeof g->layer_profiles_source,
             "fitted %.16s by 'pipegrid calibrate --fit-fraction %g' after the parameters above: each layer shape "
             "that at least %d fit rows ran in at least %d layouts (pp, dp, global batch), %d shapes from %d rows; %s",
             date, a->fit_fraction, LAYER_FIT_MIN_ROWS, LAYER_FIT_MIN_LAYOUTS, cr->layer_stats.shapes,
             cr->layer_stats.rows, why);
}

#define CV_LINE_MAX 160

/* One candidate's cross-validation errors and score, in out. */
static const char *cv_line(const cv_errors *r, char *out, size_t size)
{
    snprintf(out, size, "CV MAPE worst file %6.2f %%  all rows %6.2f %%  max %6.2f %%  score %.4f",
             PCT * r->worst_file_mape, PCT * r->overall_mape, PCT * r->max_err, r->score);
    return out;
}

/* The header comment: the procedure, the cross-validation table, the fit. */
static void header_text(strbuf *sb, const gpu_params *g, const validate_args *a, const cv_result *res, int nres,
                        int best, const error_stats *fe)
{
    char cvl[CV_LINE_MAX];
    sb_appendf(sb, "GPU type parameters of the pipegrid cost model (src/model/costmodel.h), %s.\n", g->name);
    sb_appendf(sb, "Written by pipegrid calibrate on the %.0f %% fit part (%d rows); the held-out rows were not read.\n",
               PCT * a->fit_fraction, fe->n);
    sb_appendf(sb, "Measurements:");
    for (int k = 0; k < a->nfiles; k++) {
        const char *b = strrchr(a->files[k], '/');
        sb_appendf(sb, " %s", b ? b + 1 : a->files[k]);
    }
    sb_appendf(sb, " (split by measurement: republished versions on one side).\n");
    if (nres > 0) {
        sb_appendf(sb, "max-weight chosen by %d-fold cross-validation inside the fit part, score =\n", a->folds);
        sb_appendf(sb, "max(worst file's CV MAPE / %g, all rows' CV MAPE / %g", a->max_mape, a->max_overall_mape);
        if (a->max_error > 0)
            sb_appendf(sb, ", CV max error / %g", a->max_error);
        sb_appendf(sb, "), smallest wins:\n");
        for (int k = 0; k < nres; k++)
            sb_appendf(sb, "  max-weight %-5g %s%s\n", res[k].h.max_weight, cv_line(&res[k].plain, cvl, sizeof cvl),
                       k == best ? "  <- chosen" : "");
    } else
        sb_appendf(sb, "max-weight %g given on the command line (no selection).\n", a->max_weight);
    sb_appendf(sb, "Final fit on the whole fit part: MAPE %.2f %% (mean of the files'), max %.2f %%.", PCT * fe->mape,
               PCT * fe->max_err);
}

/* What the header says of the layer profiles: what CV scored, what was done. */
static void header_layers(strbuf *sb, const calib_result *cr, int asked)
{
    if (!asked) {
        sb_appendf(sb, "\nMeasured layer profiles: none (--no-layer-profiles).");
        return;
    }
    if (cr->nres) {
        const cv_result *b = &cr->res[cr->best];
        char cvl[CV_LINE_MAX];
        sb_appendf(sb, "\nMeasured layer profiles (src/calib/layer_fit.h), max-weight %g, each fold's profiles fitted "
                   "on its training rows:\n  with profiles    %s%s", b->h.max_weight, cv_line(&b->profiled, cvl, sizeof cvl),
                   cr->layer_profiles ? "  <- chosen" : "");
    }
    if (cr->layer_profiles)
        sb_appendf(sb, "\nLayer profiles fitted: %d shapes on %d fit rows (%d at a bound of [%g, %g]).",
                   cr->layer_stats.shapes, cr->layer_stats.rows, cr->layer_stats.bounded, LAYER_FIT_FACTOR_MIN,
                   LAYER_FIT_FACTOR_MAX);
    else
        sb_appendf(sb, "\nNo layer profiles: the cross-validation scored them no better.");
}

static int write_file(const gpu_params *g, const char *header, const char *path, pg_status *st)
{
    strbuf sb;
    sb_init(&sb);
    gpu_params_write_yaml(g, header, &sb);
    int rc = 0;
    if (path[0]) {
        pg_outfile of;
        if ((rc = pg_outfile_open(&of, path, "-o", st)) == 0)
            rc = pg_outfile_commit(&of, sb_write(&sb, of.f) != 0, st);
    } else if (sb_write(&sb, stdout) != 0) {
        rc = pg_fail(st, PG_EXIT_INTERNAL, "calibrate: cannot write stdout");
    }
    sb_free(&sb);
    return rc;
}

int cmd_calibrate(int argc, char **argv)
{
    validate_args a;
    pg_status st;
    pg_status_clear(&st);
    if (validate_args_parse(argc, argv, 1, &a, &st))
        return cli_report_error(&st);
    gpu_params g;
    calib_rows rows;
    iter_set set = {0};
    if (measurements_load(&a, 1, &g, &rows, &set, &st))
        return cli_report_error(&st);
    int n = rows.n;
    if (rows.nskip > 0)
        calib_rows_print_skipped(&rows, stderr);
    int *fit = pg_xcalloc((size_t)n, sizeof *fit);
    int nfit = 0;
    for (int i = 0; i < n; i++) {
        fit[i] = iter_row_in_fit_part(&rows.row[i], a.fit_fraction);
        nfit += fit[i];
    }
    int exercised[GP_COUNT];
    calib_exercised_at_start(&g, &set, fit, exercised);
    calib_result *cr = pg_xcalloc(1, sizeof *cr);
    const cv_targets targets = {.file_mape = a.max_mape, .overall_mape = a.max_overall_mape, .max_err = a.max_error};
    int rc = calib_fit_procedure(&g, &set, fit, a.max_weight, a.folds, !a.no_layer_profiles, &targets, cr, &st);
    if (rc == 0) {
        char why[128];
        if (cr->nres) {
            const cv_result *b = &cr->res[cr->best];
            snprintf(why, sizeof why, "chosen by %d-fold CV in the fit part (CV MAPE worst file %.2f %%, all rows %.2f %%)",
                     a.folds, PCT * b->plain.worst_file_mape, PCT * b->plain.overall_mape);
            char cvl[CV_LINE_MAX];
            for (int k = 0; k < cr->nres; k++)
                fprintf(stderr, "calibrate: CV max-weight %-5g %s%s\n", cr->res[k].h.max_weight,
                        cv_line(&cr->res[k].plain, cvl, sizeof cvl), k == cr->best ? "  <- chosen" : "");
        } else
            snprintf(why, sizeof why, "given on the command line");
        const error_stats *fe = &cr->fit_err;
        fprintf(stderr, "calibrate: max-weight %g %s; fit part %d rows MAPE %.2f %% max %.2f %%\n",
                cr->h.max_weight, why, fe->n, PCT * fe->mape, PCT * fe->max_err);
        char date[32];
        time_t now = time(NULL);
        strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
        calib_provenance(&g, a.files, a.nfiles, a.fit_fraction, &cr->h, why, nfit, n, date, exercised);
        if (cr->layer_profiles)
            layer_provenance(&g, &a, cr, date);
        fprintf(stderr, "calibrate: layer profiles: %s\n",
                cr->layer_profiles ? g.layer_profiles_source : "none");
        strbuf hdr;
        sb_init(&hdr);
        header_text(&hdr, &g, &a, cr->res, cr->nres, cr->best, fe);
        header_layers(&hdr, cr, !a.no_layer_profiles);
        rc = write_file(&g, hdr.data, a.output, &st);
        sb_free(&hdr);
    } else
        pg_status_prefix(&st, "%s", a.csv);
    free(cr);
    if (rc)
        cli_report_error(&st);
    free(fit);
    iter_set_free(&set);
    calib_rows_free(&rows);
    return rc;
}
