/* fit_select.c: hyper-parameters by cross-validation (fit_select.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "calib/fit_select.h"

/* A different mixer constant from the fit/held-out split's, so that folds
 * do not line up with it. */
#define FOLD_SALT 0xD1B54A32D192ED03ull

static uint64_t mix64(uint64_t x)
{
    x ^= FOLD_SALT;
    x = (x ^ (x >> 33)) * 0xFF51AFD7ED558CCDull;
    x = (x ^ (x >> 33)) * 0xC4CEB9FE1A85EC53ull;
    return x ^ (x >> 33);
}

int cv_fold_of(int i, int folds)
{
    return folds > 0 ? (int)(mix64((uint64_t)i) % (uint64_t)folds) : 0;
}

/* max of value / target over the targets that are set (> 0). */
static double score_of(const cv_errors *r, const cv_targets *t)
{
    double score = 0.0;
    if (t->file_mape > 0)
        score = fmax(score, r->worst_file_mape / t->file_mape);
    if (t->overall_mape > 0)
        score = fmax(score, r->overall_mape / t->overall_mape);
    if (t->max_err > 0)
        score = fmax(score, r->max_err / t->max_err);
    return score;
}

static cv_errors errors_of(const iter_set *set, const double *pred, const int *scored, const cv_targets *t)
{
    error_stats e = iter_errors_by_file(set, pred, scored);
    cv_errors r = {.n = e.n, .mape = e.mape, .max_err = e.max_err};
    r.worst_file_mape = iter_worst_file_mape(set, pred, scored);
    r.overall_mape = iter_errors(set, pred, scored).mape;
    r.score = score_of(&r, t);
    return r;
}

int cv_evaluate(const gpu_params *start, const iter_set *set, const int *mask, const fit_hyper *h, int folds,
                const cv_targets *t, cv_result *out, pg_status *st)
{
    int n = set->n;
    int *train = pg_xcalloc((size_t)(n > 0 ? n : 1), sizeof *train);
    int *test = pg_xcalloc((size_t)(n > 0 ? n : 1), sizeof *test);
    int *scored = pg_xcalloc((size_t)(n > 0 ? n : 1), sizeof *scored);
    double *pred = pg_xcalloc((size_t)(n > 0 ? n : 1), sizeof *pred);
    double *pred_prof = pg_xcalloc((size_t)(n > 0 ? n : 1), sizeof *pred_prof);
    int rc = 0;
    memset(out, 0, sizeof *out);
    out->folds = folds;
    for (int k = 0; k < folds; k++)
        memcpy(out->fold_v[k], start->v, sizeof out->fold_v[k]);
    for (int k = 0; k < folds && rc == 0; k++) {
        int ntrain = 0, ntest = 0;
        for (int i = 0; i < n; i++) {
            int in = !mask || mask[i];
            test[i] = in && cv_fold_of(i, folds) == k;
            train[i] = in && !test[i];
            ntrain += train[i];
            ntest += test[i];
        }
        if (ntest == 0)
            continue;
        if (ntrain == 0) {
            rc = pg_fail(st, PG_EXIT_INPUT, "cross-validation: fold %d leaves no row to fit on", k);
            break;
        }
        gpu_params g = *start;
        error_stats fe;
        rc = iter_fit(&g, set, train, h, &fe, st);
        memcpy(out->fold_v[k], g.v, sizeof out->fold_v[k]);
        gpu_params gp = g;
        layer_fit_stats ls;
        if (rc == 0)
            rc = layer_profiles_fit(&gp, set, train, &ls, st);
        for (int i = 0; i < n && rc == 0; i++)
            if (test[i]) {
                iter_breakdown b;
                rc = iter_predict(&g, set, i, &b, st);
                pred[i] = b.total_s;
                if (rc == 0)
                    rc = iter_predict(&gp, set, i, &b, st);
                pred_prof[i] = b.total_s;
                scored[i] = 1;
            }
    }
    if (rc == 0) {
        out->h = *h;
        out->plain = errors_of(set, pred, scored, t);
        out->profiled = errors_of(set, pred_prof, scored, t);
    }
    free(train);
    free(test);
    free(scored);
    free(pred);
    free(pred_prof);
    return rc;
}

int cv_select(const gpu_params *start, const iter_set *set, const int *mask, const fit_hyper *cand, int ncand,
              int folds, const cv_targets *t, cv_result *res, int *best, pg_status *st)
{
    *best = -1;
    for (int k = 0; k < ncand; k++) {
        int rc = cv_evaluate(start, set, mask, &cand[k], folds, t, &res[k], st);
        if (rc)
            return rc;
        if (*best < 0 || res[k].plain.score < res[*best].plain.score)
            *best = k;
    }
    return *best < 0 ? pg_fail(st, PG_EXIT_INPUT, "cross-validation: no candidate setting") : 0;
}

/* ---- the calibration procedure -------------------------------------------- */

const double CALIB_WEIGHTS[CALIB_NWEIGHTS] = {0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0};

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

int calib_fit_procedure(gpu_params *g, const iter_set *set, const int *fit, double max_weight, int folds,
                        int profile_layers, const cv_targets *t, calib_result *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    out->best = -1;
    out->fit_err.worst = -1;
    out->h = (fit_hyper){.max_weight = max_weight, .ratio_cap = FIT_RATIO_CAP};
    int nfit = 0;
    for (int i = 0; i < set->n; i++)
        nfit += fit ? fit[i] != 0 : 1;
    if (nfit < folds)
        return pg_fail(st, PG_EXIT_INPUT, "calibrate: the fit part has %d rows, fewer than %d folds", nfit, folds);
    iter_fit_initial(g);
    if (max_weight < 0) {
        fit_hyper cand[CALIB_NWEIGHTS];
        for (int k = 0; k < CALIB_NWEIGHTS; k++)
            cand[k] = (fit_hyper){.max_weight = CALIB_WEIGHTS[k], .ratio_cap = FIT_RATIO_CAP};
        int rc = cv_select(g, set, fit, cand, CALIB_NWEIGHTS, folds, t, out->res, &out->best, st);
        if (rc)
            return rc;
        out->nres = CALIB_NWEIGHTS;
        out->h = cand[out->best];
    }
    int rc = final_fit(g, set, fit, &out->h, out->nres ? &out->res[out->best] : NULL, &out->fit_err, st);
    if (rc == 0 && profile_layers) {
        const cv_result *b = out->nres ? &out->res[out->best] : NULL;
        out->layer_profiles = !b || b->profiled.score < b->plain.score;
    }
    if (rc == 0 && out->layer_profiles)
        rc = layer_profiles_fit(g, set, fit, &out->layer_stats, st);
    return rc;
}
