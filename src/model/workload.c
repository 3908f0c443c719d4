/* workload.c: build the per-stage costs of an experiment (workload.h).
 *
 * workload=uniform describes one whole rank's share of the model; a rank
 * holding v = nstages / pp stages (chunks) spends t / v per chunk op and
 * keeps 1/v of the rank's activation and parameters per chunk, so that the
 * rank's totals do not depend on how it is chunked.  Times are absolute
 * (ref_speed_flops = 0: never rescaled by the GPU's speed).
 * Profiles are adapted to the experiment's micro batch size and tp here and
 * nowhere else (workload.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/costmodel.h"
#include "model/profile.h"
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
        sc->tp_coll_bytes = e->uniform_boundary_bytes;
        sc->param_count = e->uniform_params / v;
        sc->fwd_flops = 0;
        sc->workspace_bytes = 0;
        sc->layers = 0;
    }
    return 0;
}

/* A measured profile at e's micro batch size, one GPU's share of its tp
 * group (workload.h gives the rules and their approximations). */
static int adapt_profile(const experiment *e, workload *w, pg_status *st)
{
    if (w->micro_batch_size < 1 || e->micro_batch_size < 1)
        return pg_fail_key(st, PG_EXIT_INPUT, "micro_batch_size", "%d with profile %s measured at %d",
                       e->micro_batch_size, e->profile_path, w->micro_batch_size);
    double batch = (double)e->micro_batch_size / w->micro_batch_size;
    double tp = e->tp > 1 ? e->tp : 1;
    double per_gpu = batch / tp;
    for (int s = 0; s < w->nstages; s++) {
        stage_cost *c = &w->stage[s];
        c->f_s *= per_gpu;
        c->b_s *= per_gpu;
        c->w_s *= per_gpu;
        c->selective_s *= per_gpu;
        c->fwd_flops *= per_gpu;
        c->act_b_bytes *= per_gpu;
        c->act_w_bytes *= per_gpu;
        c->selective_bytes *= per_gpu;
        c->workspace_bytes *= per_gpu;
        c->boundary_bytes *= batch;   /* the whole activation: sent on, and the tp collectives' size */
        c->tp_coll_bytes *= batch;
        c->param_count /= tp;
    }
    w->micro_batch_size = e->micro_batch_size;
    return 0;
}

static int build_kind(const experiment *e, int nstages, workload *w, pg_status *st)
{
    switch (e->workload) {
    case WL_UNIFORM:
        return build_uniform(e, nstages, w, st);
    case WL_PROFILE: {
        int rc = workload_load_profile(e->profile_path, nstages, w, st);
        if (rc == 0 && (rc = adapt_profile(e, w, st)) != 0)
            workload_free(w);
        return rc;
    }
    case WL_GPT:
    case WL_HF:
        return costmodel_build(e, nstages, w, st);
    }
    return pg_fail(st, PG_EXIT_INTERNAL, "workload_build: unknown workload kind %d", (int)e->workload);
}

int workload_nccl_communicators(int tp, int cp, int dp, int ep, int pp)
{
    const int p2p_one_neighbour = 1, p2p_two_neighbours = 2;
    int n = (tp > 1) + (cp > 1) + (dp * cp > 1) + (ep > 1);
    if (pp == 2)
        n += p2p_one_neighbour;
    else if (pp > 2)
        n += p2p_two_neighbours;
    return n;
}

/* The headroom of the GPU type the ranks run on (workload_types.h).  A job
 * names no GPU type when measured or uniform times run on the ideal network:
 * then only memory.reserved is counted (the report says no type was named). */
static int headroom_fill(const experiment *e, workload *w, pg_status *st)
{
    memory_headroom *h = &w->headroom;
    memset(h, 0, sizeof *h);
    h->reserved_bytes = e->memory_reserved_bytes;
    if (!e->memory_headroom || (e->network == NET_IDEAL && !experiment_workload_is_modelled(e)))
        return 0;
    char type[sizeof h->gpu];
    int rc = costmodel_gpu_type(e, type, sizeof type, st);
    if (rc)
        return rc;
    gpu_params *g = pg_xmalloc(sizeof *g);
    rc = gpu_params_load(type, g, st);
    if (rc == 0 && g->has_headroom) {
        snprintf(h->gpu, sizeof h->gpu, "%s", type);
        h->cuda_context_bytes = g->headroom[GH_CUDA_CONTEXT_BYTES];
        h->nccl_communicators = workload_nccl_communicators(e->tp, e->cp, e->dp, e->ep, e->pp);
        h->nccl_bytes = h->nccl_communicators * g->headroom[GH_NCCL_COMM_BYTES];
        h->fragmentation = e->memory_fragmentation != EXPERIMENT_AUTO ? e->memory_fragmentation
                                                                       : g->headroom[GH_FRAGMENTATION];
    }
    free(g);
    /* A platform file's own GPU type need not have a profile: its jobs run
     * on measured or uniform times, and keep the user's margin alone. */
    if (rc && !experiment_workload_is_modelled(e)) {
        pg_status_clear(st);
        rc = 0;
    }
    return rc;
}

int workload_build(const experiment *e, int nstages, workload *w, pg_status *st)
{
    memset(w, 0, sizeof *w);
    int rc = build_kind(e, nstages, w, st);
    if (rc == 0 && (rc = headroom_fill(e, w, st)) != 0)
        workload_free(w);
    return rc;
}
