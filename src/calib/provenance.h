/* provenance.h: the sources `calibrate` writes beside each fitted
 * parameter: the command, the rows it fitted on and how the weight was
 * chosen; a parameter no fit row exercises, or the attention kernel no fit
 * row ran, says so instead. */
#ifndef PG_CALIB_PROVENANCE_H
#define PG_CALIB_PROVENANCE_H

#include "calib/itermodel.h"
#include "model/costmodel.h"

/* Which fitted parameters some fit row (fit[i] != 0) depends on, judged as
 * the fit judges it: at calibrate's fixed starting values (a parameter the
 * fit drove to about 0 may no longer move any prediction, yet it was fitted). */
void calib_exercised_at_start(const gpu_params *g, const iter_set *set, const int *fit, int exercised[GP_COUNT]);

/* Every non-datasheet parameter's source: fitted on nfit of n rows of the
 * files with fit_fraction at h's weight (why: how it was chosen), on date. */
void calib_provenance(gpu_params *g, const char *const *files, int nfiles, double fit_fraction, const fit_hyper *h,
                      const char *why, int nfit, int n, const char *date, const int exercised[GP_COUNT]);

#endif
