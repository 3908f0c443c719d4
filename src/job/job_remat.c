/* job_remat.c: recompute=plan: the job's input to the rematerialization
 * planner (opt/remat_ilp.h), shared by `run` (through job_build_plan) and
 * `plan remat`.
 *
 * The budget of a rank is what the simulator's metrics will hold it to:
 * the GPU's capacity (memory.capacity when given, else the platform's) minus
 * the rank's static memory (memory.h, ZeRO-1 when set), so that a plan that
 * fits here is not reported out of memory by `run`.  Times are the stages'
 * reference times scaled to the rank's GPU, as job_bound.c does; the ILP's
 * dependency latency is network=ideal's (a real network's transfers are
 * left to the simulation: the plan's memory does not depend on timing). */
#include <stdlib.h>
#include <string.h>

#include "job/job.h"
#include "model/memory.h"

static double rank_capacity(const job *j, int r)
{
    if (j->exp.memory_capacity_bytes > 0) return j->exp.memory_capacity_bytes;
    return j->plat.gpu[j->rank_gpu[r]].memory_bytes;
}

double job_rank_static_bytes(const job *j, int r)
{
    const schedule *s = &j->sched;
    int *stages = pg_xmalloc(((size_t)s->nstages + 1) * sizeof *stages);
    int n = 0;
    for (int c = 0; c < s->nstages; c++)
        if (s->stage_rank[c] == r) stages[n++] = c;
    memory_sharding sh = memory_sharding_of(&j->exp);
    double bytes = memory_static_bytes_sharded(&j->wl, stages, n, j->exp.bytes_per_param, &sh);
    free(stages);
    return bytes;
}

int job_plan_remat(const job *j, memplan *out, remat_result *res, pg_status *st)
{
    const experiment *e = &j->exp;
    memset(out, 0, sizeof *out);
    memset(res, 0, sizeof *res);
    if (!j->have_plat || !j->have_sched)
        return pg_fail(st, PG_EXIT_INTERNAL, "recompute=plan needs the schedule and the platform first");
    if (e->offload != OFFLOAD_NONE)
        return pg_fail_at(st, PG_EXIT_INPUT, experiment_origin(e, "offload"), "offload",
                          "recompute=plan chooses recomputation only: use offload=none with it");
    int pp = j->sched.pp;
    double *scale = pg_xcalloc((size_t)pp, sizeof *scale);
    double *budget = pg_xcalloc((size_t)pp, sizeof *budget);
    for (int r = 0; r < pp; r++) {
        double speed = j->plat.gpu[j->rank_gpu[r]].speed_flops;
        scale[r] = experiment_tp_share(e) * ((j->wl.ref_speed_flops > 0 && speed > 0) ? j->wl.ref_speed_flops / speed
                                                                                        : 1.0);
        budget[r] = memory_dynamic_room_bytes(&j->wl, rank_capacity(j, r) - job_rank_static_bytes(j, r));
    }
    remat_input in = {.sched = &j->sched, .wl = &j->wl, .time_scale = scale, .budget_bytes = budget,
                      .comm_s = e->network == NET_IDEAL ? e->ideal_latency_s : 0.0,
                      .time_limit_s = e->recompute_time_limit_s, .gap = e->recompute_gap};
    if (strcmp(e->recompute_lp_file, "none") != 0) {
        /* Checked here, where the key's file and line are known; the planner
         * writes it only once the ILP is built. */
        FILE *f = fopen(e->recompute_lp_file, "w");
        if (f == NULL) {
            free(scale);
            free(budget);
            return pg_fail_at(st, PG_EXIT_INPUT, experiment_origin(e, "recompute.lp_file"), "recompute.lp_file",
                              "cannot write %s", e->recompute_lp_file);
        }
        fclose(f);
        in.lp_path = e->recompute_lp_file;
    }
    pg_status inner;
    pg_status_clear(&inner);
    int rc = remat_plan(&in, out, res, &inner);
    if (rc != 0) {
        pg_origin at = experiment_origin(e, "memory.capacity");
        rc = pg_fail_at(st, rc, at, "memory.capacity", "recompute=plan: %s", inner.msg);
    }
    free(scale);
    free(budget);
    return rc;
}
