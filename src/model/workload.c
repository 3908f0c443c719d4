/* workload.c: build the per-stage costs of an experiment (workload.h).
 *
 * workload=uniform describes one whole rank's share of the model; a rank
 * holding v = nstages / pp stages (chunks) spends t / v per chunk op and
 * keeps 1/v of the rank's activation and parameters per chunk, so that the
 * rank's totals do not depend on how it is chunked.  Times are absolute
 * (ref_speed_flops = 0: never rescaled by the GPU's speed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/costmodel.h"
#include "model/workload.h"

static int build_uniform(const experiment *e, int nstages, workload *w, pg_status *st)
{
    if (e->pp < 1 || nstages < e->pp || nstages % e->pp != 0)
        return pg_fail(st, PG_EXIT_INPUT, "workload=uniform: %d stages cannot be spread evenly over pp=%d ranks",
                       nstages, e->pp);
    double v = (double)(nstages / e->pp);
    snprintf(w->name, sizeof w->name, "uniform");
    snprintf(w->source, sizeof w->source, "uniform.* keys of the experiment");
    w->ref_gpu[0] = '\0';
    w->ref_speed_flops = 0;
    w->seq_len = 0;
    w->micro_batch_size = e->micro_batch_size;
    w->nstages = nstages;
    w->stage = pg_xcalloc((size_t)nstages, sizeof *w->stage);
    for (int s = 0; s < nstages; s++) {
        stage_cost *sc = &w->stage[s];
        sc->f_s = e->uniform_f_s / v;
        sc->b_s = e->uniform_b_s / v;
        sc->w_s = e->uniform_w_s / v;
        sc->act_b_bytes = e->uniform_activation_bytes / v;
        sc->act_w_bytes = e->uniform_w_fraction * sc->act_b_bytes;
        sc->boundary_bytes = e->uniform_boundary_bytes;
        sc->param_count = e->uniform_params / v;
        sc->fwd_flops = 0;
        sc->workspace_bytes = 0;
        sc->layers = 0;
    }
    return 0;
}

int workload_build(const experiment *e, int nstages, workload *w, pg_status *st)
{
    memset(w, 0, sizeof *w);
    switch (e->workload) {
    case WL_UNIFORM:
        return build_uniform(e, nstages, w, st);
    case WL_PROFILE:
        return workload_load_profile(e->profile_path, nstages, w, st);
    case WL_GPT:
    case WL_HF:
        return costmodel_build(e, nstages, w, st);
    }
    return pg_fail(st, PG_EXIT_INTERNAL, "workload_build: unknown workload kind %d", (int)e->workload);
}

void workload_free(workload *w)
{
    if (w == NULL)
        return;
    free(w->stage);
    w->stage = NULL;
    w->nstages = 0;
}
