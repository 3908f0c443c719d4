/* job_plan.c: the memory plan of a job and its simulation (job.h:
 * job_build_plan, job_simulate).  The plan dispatches to the planners
 * (job_offload.c, job_remat.c) or builds the keys' fixed policy; its own
 * file so that the planners, which use the job's pieces in job.c, are
 * called from here and never call back up into their caller. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "job/job.h"
#include "model/memory.h"
#include "sim/actmem.h"

/* Bytes one (stage, mb) of each stage would offload: what F keeps. */
static double *offload_bytes_per_stage(const job *j, plan_fwd fwd)
{
    double *bytes = pg_xcalloc((size_t)j->wl.nstages + 1, sizeof *bytes);
    for (int s = 0; s < j->wl.nstages; s++) {
        const stage_cost *c = &j->wl.stage[s];
        double in = memory_input_bytes(&j->wl, s);
        bytes[s] = fwd == PLAN_FWD_FULL        ? (in < c->act_b_bytes ? in : c->act_b_bytes)
                   : fwd == PLAN_FWD_SELECTIVE ? c->act_b_bytes - memory_selective_bytes(c)
                                               : c->act_b_bytes;
    }
    return bytes;
}

int job_build_plan(job *j, memplan *out, pg_status *st)
{
    const experiment *e = &j->exp;
    memset(out, 0, sizeof *out);
    if (e->offload == OFFLOAD_PLAN) {
        offload_plan_result pres;
        offload_order_result *ores = pg_xmalloc(sizeof *ores);
        int rc = job_plan_offload(j, out, &pres, ores, st);
        if (rc == 0)
            job_note_offload_plan(j, &pres, ores);
        free(ores);
        return rc;
    }
    if (e->recompute == RECOMPUTE_PLAN) {   /* seed 004's ILP under memory.capacity (job_remat.c) */
        remat_result res;
        int rc = job_plan_remat(j, out, &res, st);
        remat_result_free(&res);
        return rc;
    }
    plan_policy pol = {
        .offload = e->offload == OFFLOAD_FULL        ? PLAN_OFFLOAD_FULL
                   : e->offload == OFFLOAD_SELECTIVE ? PLAN_OFFLOAD_SELECTIVE
                                                     : PLAN_OFFLOAD_NONE,
        .offload_ratio = e->offload_ratio,
        .fwd = e->recompute == RECOMPUTE_FULL        ? PLAN_FWD_FULL
               : e->recompute == RECOMPUTE_SELECTIVE && !job_selective_in_backward(e) ? PLAN_FWD_SELECTIVE
                                                     : PLAN_FWD_KEEP,
        .bwd = e->recompute_backward ? PLAN_BWD_RECOMPUTE : PLAN_BWD_KEEP,
        .t_comm = e->network == NET_IDEAL ? e->ideal_latency_s : 0.0,
    };
    /* Lifespans are ranked under the generators' timing: rank-share times. */
    int v = j->sched.v > 0 ? j->sched.v : 1;
    for (int s = 0; s < j->wl.nstages; s++) {
        const stage_cost *c = &j->wl.stage[s];
        if (c->f_s * v > pol.t_f) pol.t_f = c->f_s * v;
        if (c->b_s * v > pol.t_b) pol.t_b = c->b_s * v;
        if (c->w_s * v > pol.t_w) pol.t_w = c->w_s * v;
    }
    double *bytes = offload_bytes_per_stage(j, pol.fwd);
    pol.offload_bytes = bytes;
    double *po = job_offload_policy(j, &pol);   /* offload branch: PipeOffload's chunks and rules (plan.h) */
    int rc = plan_build(&j->sched, &pol, out, st);
    free(bytes);
    free(po);
    return rc != 0 ? job_locate(e, "offload", st) : 0;
}

int job_simulate(job *j, memplan *plan, job_parallel *jpar, timeline *tl, sim_outcome *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    int rc = job_build_platform(j, st);
    if (rc == 0)
        rc = job_build_plan(j, plan, st);
    if (rc == 0)
        rc = job_simulate_plan(j, plan, jpar, tl, out, st);
    return rc;
}

/* What one (stage, mb) holds at its backward under plan (job.h's
 * job_least_planner_bytes). */
static double held_at_backward(const job *j, const memplan *plan, const sched_op *op)
{
    act_flow f;
    act_flow_of(&j->wl, plan, op->stage, op->mb, &f);
    if (!f.has_r)
        return f.f_alloc;
    return f.f_alloc + (op->kind == OP_BW ? f.r_alloc_fused : f.r_alloc);
}

void job_least_planner_bytes(const job *j, double *per_rank)
{
    static const uint8_t FWD[] = {PLAN_FWD_KEEP, PLAN_FWD_FULL, PLAN_FWD_SELECTIVE};
    enum { NPLANS = sizeof FWD / sizeof FWD[0] };
    const schedule *s = &j->sched;
    memplan plans[NPLANS];
    for (int k = 0; k < NPLANS; k++) {
        plan_init(&plans[k], s);
        for (int st = 0; st < s->nstages; st++)
            for (int mb = 0; mb < s->m; mb++)
                plan_set(&plans[k], st, mb, (plan_choice){.offload = 0, .fwd = FWD[k], .bwd = PLAN_BWD_KEEP});
    }
    for (int rank = 0; rank < s->pp; rank++) {   /* the plans once for every rank: a search asks for thousands */
        double most = 0.0;
        for (int i = 0; i < s->nops[rank]; i++) {
            const sched_op *op = &s->ops[rank][i];
            if (op->kind != OP_B && op->kind != OP_BW)
                continue;
            double least = INFINITY;
            for (int k = 0; k < NPLANS; k++) {
                double b = held_at_backward(j, &plans[k], op);
                if (b < least)
                    least = b;
            }
            if (least > most)
                most = least;
        }
        per_rank[rank] = most;
    }
    for (int k = 0; k < NPLANS; k++)
        plan_free(&plans[k]);
}

int job_rank_over_capacity(const job *j, int r, double least_activation_bytes)
{
    double cap = j->exp.memory_capacity_bytes > 0 ? j->exp.memory_capacity_bytes
                                                  : j->plat.gpu[j->rank_gpu[r]].memory_bytes;
    double bytes = job_rank_static_bytes(j, r) + memory_dynamic_footprint_bytes(&j->wl, least_activation_bytes);
    return cap > 0 && bytes > cap;
}

int job_plan_surely_oom(const job *j, const memplan *plan)
{
    for (int r = 0; r < j->sched.pp; r++)
        if (job_rank_over_capacity(j, r, job_least_peak_bytes(j, plan, r)))
            return 1;
    return 0;
}

/* The walk of job.h's job_least_peak_bytes: each rank's ops in their order,
 * allocations at an op's start, releases at its end. */
double job_least_peak_bytes(const job *j, const memplan *plan, int rank)
{
    const schedule *s = &j->sched;
    double cur = 0.0, peak = 0.0;
    for (int i = 0; i < s->nops[rank]; i++) {
        const sched_op *op = &s->ops[rank][i];
        act_flow f;
        act_flow_of(&j->wl, plan, op->stage, op->mb, &f);
        switch (op->kind) {
        case OP_F:
            cur += f.f_alloc;
            if (cur > peak) peak = cur;
            cur -= f.offload_bytes;   /* gone once its copy ends, no earlier than F's end */
            break;
        case OP_B:
            cur += f.offload_bytes + (f.has_r ? f.r_alloc : 0.0);   /* back no later than its consumer */
            if (cur > peak) peak = cur;
            cur -= f.b_release;
            break;
        case OP_W:
            cur += f.has_rw ? f.rw_alloc : 0.0;
            if (cur > peak) peak = cur;
            cur -= f.w_release;
            break;
        case OP_BW:
            cur += f.offload_bytes + (f.has_r ? f.r_alloc_fused : 0.0);
            if (cur > peak) peak = cur;
            cur -= f.bw_release;
            break;
        default:
            break;
        }
    }
    return peak;
}
