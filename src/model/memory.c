/* memory.c: static memory of a rank (memory.h). */
#include "model/memory.h"

double memory_static_bytes(const workload *w, const int *stages, int nstages_on_rank,
                           double bytes_per_param)
{
    double params = 0;
    for (int i = 0; i < nstages_on_rank; i++) {
        int s = stages[i];
        if (s < 0 || s >= w->nstages)
            return -1;
        params += w->stage[s].param_count;
    }
    return params * bytes_per_param;
}
