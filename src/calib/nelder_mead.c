/* nelder_mead.c: the simplex method (nelder_mead.h), standard coefficients. */
#include <string.h>

#include "calib/nelder_mead.h"

#define NM_REFLECT 1.0
#define NM_EXPAND 2.0
#define NM_CONTRACT 0.5
#define NM_SHRINK 0.5

static void order(double pts[][NM_MAX_VARS], double *val, int n)
{
    /* insertion sort of n+1 vertices by value */
    for (int i = 1; i <= n; i++) {
        double v = val[i], p[NM_MAX_VARS];
        memcpy(p, pts[i], sizeof p);
        int j = i - 1;
        while (j >= 0 && val[j] > v) {
            val[j + 1] = val[j];
            memcpy(pts[j + 1], pts[j], sizeof p);
            j--;
        }
        val[j + 1] = v;
        memcpy(pts[j + 1], p, sizeof p);
    }
}

/* p = c + coef * (c - worst) */
static void along(const double *c, const double *worst, double coef, double *p, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = c[i] + coef * (c[i] - worst[i]);
}

double nm_minimize(nm_objective f, void *ctx, double *x, const double *step, int n, int max_evals, double tol)
{
    if (n < 1 || n > NM_MAX_VARS)
        return f(x, ctx);
    double pts[NM_MAX_VARS + 1][NM_MAX_VARS], val[NM_MAX_VARS + 1];
    for (int i = 0; i <= n; i++) {
        memcpy(pts[i], x, (size_t)n * sizeof *x);
        if (i > 0)
            pts[i][i - 1] += step[i - 1];
        val[i] = f(pts[i], ctx);
    }
    int evals = n + 1;
    while (evals < max_evals) {
        order(pts, val, n);
        if (val[n] - val[0] <= tol)
            break;
        double c[NM_MAX_VARS] = {0}, r[NM_MAX_VARS], e[NM_MAX_VARS], k[NM_MAX_VARS];
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                c[j] += pts[i][j] / n;
        along(c, pts[n], NM_REFLECT, r, n);
        double fr = f(r, ctx);
        evals++;
        if (fr < val[0]) {
            along(c, pts[n], NM_EXPAND, e, n);
            double fe = f(e, ctx);
            evals++;
            if (fe < fr) {
                memcpy(pts[n], e, (size_t)n * sizeof *e);
                val[n] = fe;
            } else {
                memcpy(pts[n], r, (size_t)n * sizeof *r);
                val[n] = fr;
            }
            continue;
        }
        if (fr < val[n - 1]) {
            memcpy(pts[n], r, (size_t)n * sizeof *r);
            val[n] = fr;
            continue;
        }
        /* contraction: outside if the reflection helped a little, else inside */
        int outside = fr < val[n];
        along(c, pts[n], outside ? NM_CONTRACT : -NM_CONTRACT, k, n);
        double fk = f(k, ctx);
        evals++;
        if (fk < (outside ? fr : val[n])) {
            memcpy(pts[n], k, (size_t)n * sizeof *k);
            val[n] = fk;
            continue;
        }
        for (int i = 1; i <= n; i++) {
            for (int j = 0; j < n; j++)
                pts[i][j] = pts[0][j] + NM_SHRINK * (pts[i][j] - pts[0][j]);
            val[i] = f(pts[i], ctx);
            evals++;
        }
    }
    order(pts, val, n);
    memcpy(x, pts[0], (size_t)n * sizeof *x);
    return val[0];
}
