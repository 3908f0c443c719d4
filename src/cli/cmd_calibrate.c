/* cmd_calibrate.c: `pipegrid calibrate CSV` -- fit the cost model's GPU
 * parameters to measured iteration times.
 *
 *   pipegrid calibrate CSV [--gpu TYPE|FILE] [--fit-fraction F] [--folds K]
 *                          [--max-weight W] [--max-mape X] [--max-error Y] [-o FILE]
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
 * K-fold cross-validation inside the fit part against the targets X and Y
 * (fit_select.h), and the winner is used for the final fit on the whole fit
 * part (final_fit).  The held-out rows are not read by any of this, and calibrate does
 * not report on them: `pipegrid validate` evaluates the result on them once.
 * The file written (stdout, or FILE) records what was chosen and why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/fit_select.h"
#include "cli/itermodel.h"
#include "cli/validate_args.h"
#include "util/strbuf.h"

#define PCT 100.0

/* Candidate weights of the largest error: from plain MAPE (0) to an
 * objective dominated by the worst row (2). */
static const double FIT_WEIGHTS[] = {0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0};
#define NWEIGHTS ((int)(sizeof FIT_WEIGHTS / sizeof FIT_WEIGHTS[0]))

static void provenance(gpu_params *g, const validate_args *a, const fit_hyper *h, const char *why, int nfit,
                       int n, const char *date)
{
    const char *base = strrchr(a->csv, '/');
    base = base ? base + 1 : a->csv;
    for (int k = 0; k < GP_COUNT; k++)
        if (gpu_param_fitted((gpu_param_id)k))
            snprintf(g->source[k], sizeof g->source[k],
                     "fitted %.16s by 'pipegrid calibrate %.48s --fit-fraction %g' on %d of %d measured rows; "
                     "max-weight %g %.80s", date, base, a->fit_fraction, nfit, n, h->max_weight, why);
}

/* The header comment: the procedure, the cross-validation table, the fit. */
static void header_text(strbuf *sb, const gpu_params *g, const validate_args *a, const cv_result *res, int nres,
                        int best, const error_stats *fe)
{
    sb_appendf(sb, "GPU type parameters of the pipegrid cost model (src/model/costmodel.h), %s.\n", g->name);
    sb_appendf(sb, "Written by pipegrid calibrate on the %.0f %% fit part (%d rows); the held-out rows were not read.\n",
               PCT * a->fit_fraction, fe->n);
    if (nres > 0) {
        sb_appendf(sb, "max-weight chosen by %d-fold cross-validation inside the fit part, score =\n", a->folds);
        sb_appendf(sb, "max(CV MAPE / %g, CV max error / %g), smallest wins:\n", a->max_mape, a->max_error);
        for (int k = 0; k < nres; k++)
            sb_appendf(sb, "  max-weight %-5g CV MAPE %6.2f %%  CV max %6.2f %%  score %.4f%s\n", res[k].h.max_weight,
                       PCT * res[k].mape, PCT * res[k].max_err, res[k].score, k == best ? "  <- chosen" : "");
    } else
        sb_appendf(sb, "max-weight %g given on the command line (no selection).\n", a->max_weight);
    sb_appendf(sb, "Final fit on the whole fit part: MAPE %.2f %%, max %.2f %%.", PCT * fe->mape, PCT * fe->max_err);
}

/* The fit on the whole fit part, from the fixed start and, after a
 * selection, also from each fold's solution of the chosen setting (the
 * objective has local optima; these points are fits to parts of the same
 * rows).  The best objective on the fit part wins; ties keep the earlier. */
static int final_fit(gpu_params *g, const iter_set *set, const int *fit, const fit_hyper *h, const cv_result *cv,
                     error_stats *fe, pg_status *st)
{
    gpu_params best = *g;
    int nstart = 1 + (cv ? cv->folds : 0), have = 0;
    double best_obj = 0.0;
    for (int s = 0; s < nstart; s++) {
        gpu_params t = *g;
        if (s > 0)
            memcpy(t.v, cv->fold_v[s - 1], sizeof t.v);
        error_stats e;
        int rc = iter_fit(&t, set, fit, h, &e, st);
        if (rc)
            return rc;
        double obj = e.mape + h->max_weight * e.max_err;
        if (!have || obj < best_obj) {
            best = t;
            best_obj = obj;
            *fe = e;
            have = 1;
        }
    }
    *g = best;
    return 0;
}

static int write_file(const gpu_params *g, const char *header, const char *path, pg_status *st)
{
    strbuf sb;
    sb_init(&sb);
    gpu_params_write_yaml(g, header, &sb);
    FILE *out = path[0] ? fopen(path, "w") : stdout;
    int rc = 0;
    if (!out || sb_write(&sb, out) != 0)
        rc = pg_fail(st, PG_EXIT_INTERNAL, "calibrate: cannot write %s", path[0] ? path : "stdout");
    if (out && out != stdout && fclose(out) != 0 && rc == 0)
        rc = pg_fail(st, PG_EXIT_INTERNAL, "calibrate: cannot write %s", path);
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
    train_row *rows = NULL;
    int n = 0;
    iter_set set = {0};
    if (measurements_load(&a, &g, &rows, &n, &set, &st))
        return cli_report_error(&st);
    int *fit = pg_xcalloc((size_t)n, sizeof *fit);
    int nfit = 0;
    for (int i = 0; i < n; i++) {
        fit[i] = iter_in_fit_part(i, a.fit_fraction);
        nfit += fit[i];
    }
    iter_fit_initial(&g);
    fit_hyper h = {.max_weight = a.max_weight, .ratio_cap = FIT_RATIO_CAP};
    cv_result res[NWEIGHTS];
    int nres = 0, best = -1, rc = 0;
    char why[128];
    snprintf(why, sizeof why, "given on the command line");
    if (nfit < a.folds)
        rc = pg_fail(&st, PG_EXIT_INPUT, "calibrate: the fit part of %s has %d rows, fewer than %d folds", a.csv,
                     nfit, a.folds);
    else if (a.max_weight < 0) {
        fit_hyper cand[NWEIGHTS];
        for (int k = 0; k < NWEIGHTS; k++)
            cand[k] = (fit_hyper){.max_weight = FIT_WEIGHTS[k], .ratio_cap = FIT_RATIO_CAP};
        rc = cv_select(&g, &set, fit, cand, NWEIGHTS, a.folds, a.max_mape, a.max_error, res, &best, &st);
        if (rc == 0) {
            nres = NWEIGHTS;
            h = cand[best];
            snprintf(why, sizeof why, "chosen by %d-fold CV in the fit part (CV MAPE %.2f %%, max %.2f %%)", a.folds,
                     PCT * res[best].mape, PCT * res[best].max_err);
            for (int k = 0; k < nres; k++)
                fprintf(stderr, "calibrate: CV max-weight %-5g MAPE %6.2f %% max %6.2f %% score %.4f%s\n",
                        res[k].h.max_weight, PCT * res[k].mape, PCT * res[k].max_err, res[k].score,
                        k == best ? "  <- chosen" : "");
        }
    }
    error_stats fe = {0, 0.0, 0.0, -1};
    if (rc == 0)
        rc = final_fit(&g, &set, fit, &h, nres ? &res[best] : NULL, &fe, &st);
    if (rc == 0) {
        fprintf(stderr, "calibrate: max-weight %g %s; fit part %d rows MAPE %.2f %% max %.2f %%\n", h.max_weight, why,
                fe.n, PCT * fe.mape, PCT * fe.max_err);
        char date[32];
        time_t now = time(NULL);
        strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
        provenance(&g, &a, &h, why, nfit, n, date);
        strbuf hdr;
        sb_init(&hdr);
        header_text(&hdr, &g, &a, res, nres, best, &fe);
        rc = write_file(&g, hdr.data, a.output, &st);
        sb_free(&hdr);
    }
    if (rc)
        cli_report_error(&st);
    free(fit);
    iter_set_free(&set);
    free(rows);
    return rc;
}
