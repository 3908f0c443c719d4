/* layer_fit.c: measured layer profiles from measured iteration times
 * (layer_fit.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib/layer_fit.h"

/* Golden-section steps: each keeps 0.618 of the interval, so 48 narrow
 * ln(4) to under 1e-9 (far below what the rows can tell apart). */
#define GOLDEN_STEPS 48
#define GOLDEN_RATIO 0.6180339887498949

typedef struct group {
    const char *key;
    int *rows;                      /* indices into the set */
    int n;
} group;

/* Sum over the group of |predicted / measured - 1| with the shape at
 * factor exp(x). */
static int group_error(gpu_params *g, const iter_set *set, const group *gr, double x, double *err, pg_status *st)
{
    int rc = gpu_params_set_layer_profile(g, gr->key, exp(x), gr->n, st);
    *err = 0.0;
    for (int k = 0; k < gr->n && rc == 0; k++) {
        iter_breakdown b;
        rc = iter_predict(g, set, gr->rows[k], &b, st);
        *err += fabs(b.total_s / set->row[gr->rows[k]].measured_s - 1.0);
    }
    return rc;
}

/* The factor of one shape: golden-section search on ln f. */
static int fit_group(gpu_params *g, const iter_set *set, const group *gr, double *factor, pg_status *st)
{
    double lo = log(LAYER_FIT_FACTOR_MIN), hi = log(LAYER_FIT_FACTOR_MAX);
    double x1 = hi - GOLDEN_RATIO * (hi - lo), x2 = lo + GOLDEN_RATIO * (hi - lo), e1 = 0.0, e2 = 0.0;
    int rc = group_error(g, set, gr, x1, &e1, st);
    if (rc == 0)
        rc = group_error(g, set, gr, x2, &e2, st);
    for (int s = 0; s < GOLDEN_STEPS && rc == 0; s++) {
        if (e1 <= e2) {   /* ties keep the lower interval: deterministic */
            hi = x2;
            x2 = x1;
            e2 = e1;
            x1 = hi - GOLDEN_RATIO * (hi - lo);
            rc = group_error(g, set, gr, x1, &e1, st);
        } else {
            lo = x1;
            x1 = x2;
            e1 = e2;
            x2 = lo + GOLDEN_RATIO * (hi - lo);
            rc = group_error(g, set, gr, x2, &e2, st);
        }
    }
    *factor = exp(e1 <= e2 ? x1 : x2);
    return rc;
}

/* Distinct (pp, dp, global batch) layouts among the group's rows. */
static int layouts_of(const iter_set *set, const group *gr)
{
    int distinct = 0;
    for (int k = 0; k < gr->n; k++) {
        const train_row *r = &set->row[gr->rows[k]];
        int seen = 0;
        for (int j = 0; j < k && !seen; j++) {
            const train_row *q = &set->row[gr->rows[j]];
            seen = q->pp == r->pp && q->dp == r->dp && q->global_batch == r->global_batch;
        }
        distinct += !seen;
    }
    return distinct;
}

int layer_profiles_fit(gpu_params *g, const iter_set *set, const int *mask, layer_fit_stats *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    g->nlayer_profiles = 0;
    int n = set->n;
    char (*key)[LAYER_KEY_MAX] = pg_xcalloc((size_t)(n > 0 ? n : 1), sizeof *key);
    int *done = pg_xcalloc((size_t)(n > 0 ? n : 1), sizeof *done);
    int *rows = pg_xcalloc((size_t)(n > 0 ? n : 1), sizeof *rows);
    for (int i = 0; i < n; i++)
        if (!mask || mask[i])
            iter_row_layer_key(set, i, key[i], sizeof key[i]);
    /* each shape's fit sets its own profile in g: the rows of other shapes
     * do not depend on it, so fitting one after the other is exact */
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        if ((mask && !mask[i]) || done[i])
            continue;
        group gr = {key[i], rows, 0};
        for (int j = i; j < n; j++)
            if ((!mask || mask[j]) && !done[j] && strcmp(key[j], key[i]) == 0) {
                done[j] = 1;
                rows[gr.n++] = j;
            }
        if (gr.n < LAYER_FIT_MIN_ROWS || layouts_of(set, &gr) < LAYER_FIT_MIN_LAYOUTS)
            continue;
        double factor = 1.0;
        rc = fit_group(g, set, &gr, &factor, st);
        if (rc == 0)
            rc = gpu_params_set_layer_profile(g, gr.key, factor, gr.n, st);
        out->shapes++;
        out->rows += gr.n;
        out->bounded += factor <= LAYER_FIT_FACTOR_MIN * (1 + 1e-6) || factor >= LAYER_FIT_FACTOR_MAX * (1 - 1e-6);
    }
    if (rc)
        *out = (layer_fit_stats){0};
    free(key);
    free(done);
    free(rows);
    return rc;
}
