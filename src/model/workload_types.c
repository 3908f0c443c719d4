/* workload_types.c: what needs nothing but a workload's type (workload_types.h). */
#include <stdlib.h>

#include "model/workload_types.h"

void workload_free(workload *w)
{
    if (w == NULL)
        return;
    free(w->stage);
    w->stage = NULL;
    w->nstages = 0;
}

double workload_p2p_bytes(const workload *w, int stage, int tp)
{
    return w->stage[stage].boundary_bytes / (tp > 1 ? tp : 1);
}

double workload_dp_bucket_bytes(const workload *w, double share, double grad_bytes_per_param, double requested)
{
    if (requested <= 0)
        return 0;   /* one bucket per stage */
    double largest = 0;
    for (int s = 0; s < w->nstages; s++) {
        double bytes = stage_trainable_params(&w->stage[s]) * share * grad_bytes_per_param;
        if (bytes > largest)
            largest = bytes;
    }
    double floor_bytes = largest / WORKLOAD_DP_MAX_BUCKETS_PER_STAGE;
    if (floor_bytes < WORKLOAD_DP_BUCKET_MIN_BYTES)
        floor_bytes = WORKLOAD_DP_BUCKET_MIN_BYTES;
    return requested > floor_bytes ? requested : floor_bytes;
}
