/* offload_order.c: the plan offload=plan runs (offload_order.h). */
#include <stdio.h>
#include <string.h>

#include "opt/offload_order.h"

/* The makespan a candidate is ranked by. */
static double rank_key(const offload_order_candidate *c)
{
    return isnan(c->judged_makespan_s) ? c->model_makespan_s : c->judged_makespan_s;
}

/* Plan order s under each copy model; each plan that beats the current
 * choice replaces it (s is copied into *best then).  Returns 0 or an error. */
static int try_order(const offload_order_input *in, const schedule *s, const char *name, double limit,
                     schedule *best, memplan *plan, offload_plan_result *pres, offload_order_result *ores,
                     pg_status *st)
{
    for (int model = 0; model < OFFLOAD_COPY_MODELS && ores->n < OFFLOAD_ORDER_MAX_CANDIDATES; model++) {
        offload_plan_input pin = in->plan;
        pin.sched = s;
        pin.copy_uncontended = model == OFFLOAD_COPIES_WHOLE;
        if (model == OFFLOAD_COPIES_ONLY) {   /* offload alone: no recompute for a pessimistic copy model to prefer */
            if (!pin.allow_recompute || !pin.allow_offload) continue;
            pin.allow_recompute = 0;
        }
        if (model == OFFLOAD_COPIES_NONE) {   /* recomputation alone: no copy to misjudge */
            if (!pin.allow_recompute || !pin.allow_offload) continue;
            pin.allow_offload = 0;
        }
        memplan cp;
        offload_plan_result cr;
        int rc = offload_plan_build(&pin, &cp, &cr, st);
        if (rc != 0) return rc;
        offload_order_candidate *c = &ores->cand[ores->n++];
        snprintf(c->name, sizeof c->name, "%s", name);
        c->limit = limit;
        c->copy_model = model;
        c->status = cr.status;
        c->model_makespan_s = cr.model_makespan_s;
        c->judged_makespan_s = NAN;
        c->fits = cr.status != OFFLOAD_SOLVED_INFEASIBLE;
        if (c->fits && in->judge) {
            c->judged_makespan_s = in->judge(in->judge_ctx, s, &cp);
            c->fits = isfinite(c->judged_makespan_s);
        }
        int first = ores->n == 1;
        int wins = c->fits && (ores->chosen < 0 || rank_key(c) < rank_key(&ores->cand[ores->chosen]));
        if (first || wins) {   /* the first plan stands in until one fits */
            if (wins) ores->chosen = ores->n - 1;
            if (!first) plan_free(plan);
            *plan = cp;
            *pres = cr;
            sched_free(best);
            sched_copy(best, s);
        } else {
            plan_free(&cp);
        }
    }
    return 0;
}

int offload_order_choose(const offload_order_input *in, schedule *best, memplan *plan, offload_plan_result *pres,
                         offload_order_result *ores, pg_status *st)
{
    memset(ores, 0, sizeof *ores);
    memset(best, 0, sizeof *best);
    memset(plan, 0, sizeof *plan);
    ores->chosen = -1;
    const schedule *given = in->plan.sched;
    char name[sizeof ores->cand[0].name];
    snprintf(name, sizeof name, "%.39s (given)", given->name);
    int rc = try_order(in, given, name, 0, best, plan, pres, ores, st);
    ores->searched = in->search && in->params != NULL && given->v == 1 && given->nstages == given->pp;
    int max_limit = OFFLOAD_ORDER_MAX_LIMIT_PP * given->pp;
    for (int limit = given->pp; rc == 0 && ores->searched && limit <= max_limit; limit++) {
        sched_params p = *in->params;
        p.mem_limit = limit;
        schedule s;
        pg_status inner;
        pg_status_clear(&inner);
        if (sched_generate("zb-auto", &p, &s, &inner) != 0) continue;   /* no order at this limit */
        snprintf(name, sizeof name, "zb-auto, %d in flight", limit);
        rc = try_order(in, &s, name, limit, best, plan, pres, ores, st);
        sched_free(&s);
    }
    if (rc != 0) {
        sched_free(best);
        plan_free(plan);
    }
    return rc;
}
