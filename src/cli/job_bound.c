/* job_bound.c: the lower bound of a job (seed 000), as `bound` prints it
 * and `run` reports it next to the simulated makespan. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* Per-stage times as the simulator runs them: profiled times scaled by the
 * reference speed over the speed of the GPU of the stage's rank (absolute
 * times when the workload has no reference speed, or no platform yet), and
 * by the share of a tp group's work one GPU runs (its tp collectives only
 * add time, so leaving them out keeps the bound valid). */
static void stage_times(const job *j, job_bound *jb)
{
    const schedule *s = &j->sched;
    int S = s->nstages;
    jb->times = pg_xcalloc((size_t)S * 4, sizeof(double));
    double *f = jb->times, *b = f + S, *w = f + 2 * S, *wf = f + 3 * S;
    for (int i = 0; i < S; i++) {
        const stage_cost *c = &j->wl.stage[i];
        double scale = experiment_tp_share(&j->exp);
        if (j->have_plat && j->wl.ref_speed_flops > 0) {
            double speed = j->plat.gpu[j->rank_gpu[s->stage_rank[i]]].speed_flops;
            if (speed > 0)
                scale *= j->wl.ref_speed_flops / speed;
        }
        f[i] = c->f_s * scale;
        b[i] = c->b_s * scale;
        w[i] = c->w_s * scale;
        wf[i] = c->act_b_bytes > 0 ? c->act_w_bytes / c->act_b_bytes : 0.0;
    }
    const experiment *e = &j->exp;
    /* A real network only adds time to a dependency: latency 0 keeps the
     * bound valid there; network=ideal charges exactly its latency. */
    jb->in = (bound_input){.pp = s->pp, .nstages = S, .m = s->m, .stage_rank = s->stage_rank, .f = f, .b = b,
                           .w = w, .w_fraction = wf, .comm_s = e->network == NET_IDEAL ? e->ideal_latency_s : 0.0,
                           .mem_limit = e->memory_limit, .split = 1, .remat = e->recompute != RECOMPUTE_NONE};
}

int job_compute_bound(const job *j, job_bound *jb, pg_status *st)
{
    stage_times(j, jb);
    int rc = bound_lower(&jb->in, &jb->any, st);
    if (rc == 0) {
        bound_input own = jb->in;
        own.split = sched_is_split(&j->sched);
        rc = bound_lower(&own, &jb->cls, st);
    }
    /* bound_lower names the key (st->key); the experiment knows where it was set. */
    if (rc != 0)
        pg_status_locate(st, experiment_origin(&j->exp, st->key));
    return rc;
}

void job_bound_free(job_bound *jb)
{
    free(jb->times);
    memset(jb, 0, sizeof *jb);
}
