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
