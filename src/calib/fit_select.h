/* fit_select.h: choose the fit's hyper-parameters by k-fold
 * cross-validation inside the fit part, so the held-out rows judge a
 * procedure that never saw them.
 *
 * The fit part's rows (mask) are dealt into `folds` folds by a hash of the
 * row index.  For each candidate setting, each fold is predicted by a fit
 * on the other folds, started from the same fixed point; the pooled
 * out-of-fold errors score the candidate against the acceptance targets
 * (cv_targets): the worst file's MAPE against the per-file target, the
 * MAPE over all rows against the overall one and, when a target is set
 * for it, the largest error:
 *     score = max(worst_file_mape / per_file, overall_mape / overall
 *                 [, max_err / max_err target])
 * (below 1 = all met; the smaller, the wider the worst margin).  The
 * largest error is off by default: one row sets it in every fold, so it
 * scores the row and not the setting (docs/validation.md, fifth round).
 * The candidate with the smallest score wins; ties go to the earlier
 * candidate.  Each fold is scored twice: with the fitted parameters alone,
 * and with measured layer profiles (layer_fit.h) fitted on the same
 * training folds after them; the winner's two scores decide whether the
 * final fit profiles layers (only when they score strictly better).  Rows outside the mask are never read: changing their
 * measured times cannot change the choice.  Deterministic.
 */
#ifndef PG_CALIB_FIT_SELECT_H
#define PG_CALIB_FIT_SELECT_H

#include "calib/itermodel.h"
#include "calib/layer_fit.h"

#define CV_DEFAULT_FOLDS 5
#define CV_MAX_FOLDS 50
/* Issue 15's acceptance: every file under 8 %, all rows under 5 %. */
#define CV_DEFAULT_TARGET_MAPE 0.08
#define CV_DEFAULT_TARGET_OVERALL 0.05

/* What a candidate is scored against; a target <= 0 is not scored. */
typedef struct cv_targets {
    double file_mape;               /* every file's MAPE */
    double overall_mape;            /* the MAPE of all rows pooled */
    double max_err;                 /* the largest error (0 by default: off) */
} cv_targets;

/* Out-of-fold errors of one setting, and their score. */
typedef struct cv_errors {
    int n;                          /* out-of-fold rows scored */
    double mape;                    /* mean over files of each file's MAPE */
    double worst_file_mape;         /* the largest file MAPE */
    double overall_mape;            /* over all rows pooled */
    double max_err, score;
} cv_errors;

typedef struct cv_result {
    fit_hyper h;
    cv_errors plain;                /* each fold predicted with its fitted parameters */
    cv_errors profiled;             /* the same with layer profiles fitted on each fold's training rows */
    int folds;
    double fold_v[CV_MAX_FOLDS][GP_COUNT]; /* each fold's fitted parameters: further starting
                                            * points for the final fit (local optima) */
} cv_result;

/* Fold (0 .. folds-1) of data row i. */
int cv_fold_of(int i, int folds);

/* Out-of-fold errors of h over the rows of mask: each fold fitted on the
 * others from start's parameters. */
int cv_evaluate(const gpu_params *start, const iter_set *set, const int *mask, const fit_hyper *h, int folds,
                const cv_targets *t, cv_result *out, pg_status *st);

/* Score every candidate (res[k] for cand[k]) and set *best to the winner. */
int cv_select(const gpu_params *start, const iter_set *set, const int *mask, const fit_hyper *cand, int ncand,
              int folds, const cv_targets *t, cv_result *res, int *best, pg_status *st);

/* ---- the whole calibration procedure (pipegrid calibrate) -------------- */

/* Candidate weights of the largest error: from plain MAPE (0) to an
 * objective dominated by the worst row (2). */
#define CALIB_NWEIGHTS 7
extern const double CALIB_WEIGHTS[CALIB_NWEIGHTS];

typedef struct calib_result {
    fit_hyper h;                    /* the setting used for the final fit */
    int nres;                       /* candidates scored (0 when the weight was given) */
    int best;                       /* index of the chosen one in res, -1 if none */
    cv_result res[CALIB_NWEIGHTS];
    error_stats fit_err;            /* of the final fit, on the fit part */
    int layer_profiles;             /* 1: the final fit profiled layers (layer_stats) */
    layer_fit_stats layer_stats;
} calib_result;

/* Calibrate g on the rows of fit: reset the fitted parameters to the fixed
 * start (iter_fit_initial); if max_weight < 0, choose it among
 * CALIB_WEIGHTS by cv_select (folds, targets), else use it; then fit on the
 * whole fit part from the fixed start and, after a selection, also from each
 * fold's solution of the chosen setting (the objective has local optima;
 * these are fits to parts of the same rows); the lowest fit-part objective
 * wins, ties keep the earlier.  Then, with profile_layers, measured layer
 * profiles (layer_fit.h) on the fit part, when the selection's winner
 * scored strictly better with them, or always when the weight was given
 * (no selection).  Rows outside fit are never read.
 * PG_EXIT_INPUT when the fit part has fewer rows than folds. */
int calib_fit_procedure(gpu_params *g, const iter_set *set, const int *fit, double max_weight, int folds,
                        int profile_layers, const cv_targets *t, calib_result *out, pg_status *st);

#endif
