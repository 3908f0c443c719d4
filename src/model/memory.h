/* memory.h: the static part of a GPU's memory and the activation rules.
 *
 * Static memory of a rank = parameters of its stages x bytes_per_param
 * (mixed-precision Adam: 2 bytes BF16 weight + 2 gradient + 12 FP32 master
 * weight and two moments = 16 by default).  Activation memory follows the
 * ops (workload.h); the simulator's timeline gives when.
 */
#ifndef PG_MODEL_MEMORY_H
#define PG_MODEL_MEMORY_H

#include "model/workload.h"

/* Parameters of the listed stages (indices into w->stage) x bytes_per_param.
 * An index outside [0, w->nstages) is a caller bug: the result is then -1,
 * never a silently smaller number. */
double memory_static_bytes(const workload *w, const int *stages, int nstages_on_rank,
                           double bytes_per_param);

#endif
