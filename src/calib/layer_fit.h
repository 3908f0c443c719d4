/* layer_fit.h: measured layer profiles (costmodel.h) from measured
 * iteration times.
 *
 * After the GPU type's parameters are fitted, the rows of the fit part are
 * grouped by the layer shape they ran (iter_row_layer_key).  A shape run by
 * at least LAYER_FIT_MIN_ROWS rows in at least LAYER_FIT_MIN_LAYOUTS
 * different layouts (pipeline and data-parallel degrees, global batch) gets
 * a profile: the factor f on the layer's kernels that minimises the group's
 * MAPE, within [LAYER_FIT_FACTOR_MIN, LAYER_FIT_FACTOR_MAX].  Two layouts
 * at least, because a profile claims a property of the layer, which a
 * single job cannot separate from the job's own costs (its pipeline
 * bubbles, its gradient reduction); a shape measured once stays analytic.
 * Each group's rows depend on its own factor only, so each is a
 * one-dimensional fit: golden-section search on ln f (the iteration time
 * grows monotonically with f).  Rows outside the mask are never read.
 * Deterministic: profiles in the order of their shapes' first fit row.
 */
#ifndef PG_CALIB_LAYER_FIT_H
#define PG_CALIB_LAYER_FIT_H

#include "calib/itermodel.h"

#define LAYER_FIT_MIN_ROWS 3
#define LAYER_FIT_MIN_LAYOUTS 2
/* A measured layer within a factor of 2 of the analytic one: wider, and
 * the model is wrong about the shape, which a profile should not hide. */
#define LAYER_FIT_FACTOR_MIN 0.5
#define LAYER_FIT_FACTOR_MAX 2.0

typedef struct layer_fit_stats {
    int shapes;                     /* profiles fitted */
    int rows;                       /* fit rows they rest on */
    int bounded;                    /* profiles whose factor ended at a bound */
} layer_fit_stats;

/* Replace g's layer profiles by those fitted on the rows of mask (g's other
 * parameters as they are). */
int layer_profiles_fit(gpu_params *g, const iter_set *set, const int *mask, layer_fit_stats *out, pg_status *st);

#endif
