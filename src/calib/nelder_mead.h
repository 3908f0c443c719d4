/* nelder_mead.h: derivative-free minimisation of a function of a few
 * variables (the simplex method of Nelder and Mead, 1965).
 *
 * Used to fit the cost model's handful of GPU parameters, whose objective
 * (a mean relative error through max() and a pipeline replay) has no useful
 * gradient.  Deterministic: same start, same result.
 */
#ifndef PG_CALIB_NELDER_MEAD_H
#define PG_CALIB_NELDER_MEAD_H

typedef double (*nm_objective)(const double *x, void *ctx);

/* Minimise f from x (n variables, n <= NM_MAX_VARS) with initial steps
 * step[i]; stops after max_evals evaluations or when the simplex's values
 * differ by less than tol.  x receives the best point; returns its value. */
#define NM_MAX_VARS 16
double nm_minimize(nm_objective f, void *ctx, double *x, const double *step, int n, int max_evals, double tol);

#endif
