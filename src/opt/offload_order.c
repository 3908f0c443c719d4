/* offload_order.c: the order search of offload=plan (offload_order.h). */
#include <stdio.h>
#include <string.h>

#include "opt/offload_order.h"

/* Plan one order; fills the candidate row.  Keeps plan and pres. */
static int plan_candidate(const offload_plan_input *base, const schedule *s, offload_order_candidate *c,
                          memplan *plan, offload_plan_result *pres, pg_status *st)
{
    offload_plan_input in = *base;
    in.sched = s;
    int rc = offload_plan_build(&in, plan, pres, st);
    if (rc != 0) return rc;
    c->status = pres->status;
    c->model_makespan_s = pres->model_makespan_s;
    c->fits = pres->status != OFFLOAD_SOLVED_INFEASIBLE;
    return 0;
}

static int better(const offload_order_candidate *a, const offload_order_candidate *b)
{
    return a->fits && (!b->fits || a->model_makespan_s < b->model_makespan_s);
}

int offload_order_search(const offload_plan_input *in, const sched_params *params, schedule *best, memplan *plan,
                         offload_plan_result *pres, offload_order_result *ores, pg_status *st)
{
    memset(ores, 0, sizeof *ores);
    memset(best, 0, sizeof *best);
    const schedule *given = in->sched;
    offload_order_candidate *c0 = &ores->cand[0];
    snprintf(c0->name, sizeof c0->name, "%.39s (given)", given->name);
    int rc = plan_candidate(in, given, c0, plan, pres, st);
    if (rc != 0) return rc;
    ores->n = 1;
    ores->chosen = c0->fits ? 0 : -1;
    sched_copy(best, given);
    ores->searched = given->v == 1 && given->nstages == given->pp;
    int max_limit = OFFLOAD_ORDER_MAX_LIMIT_PP * given->pp;
    for (int limit = given->pp; ores->searched && limit <= max_limit && ores->n < OFFLOAD_ORDER_MAX_CANDIDATES;
         limit++) {
        sched_params p = *params;
        p.mem_limit = limit;
        schedule s;
        pg_status inner;
        pg_status_clear(&inner);
        if (sched_generate("zb-auto", &p, &s, &inner) != 0) continue;   /* no order at this limit */
        offload_order_candidate *c = &ores->cand[ores->n];
        snprintf(c->name, sizeof c->name, "zb-auto, %d in flight", limit);
        c->limit = limit;
        memplan cp;
        offload_plan_result cr;
        rc = plan_candidate(in, &s, c, &cp, &cr, st);
        if (rc != 0) {
            sched_free(&s);
            return rc;
        }
        ores->n++;
        if (better(c, ores->chosen >= 0 ? &ores->cand[ores->chosen] : c0)) {
            ores->chosen = ores->n - 1;
            sched_free(best);
            *best = s;
            plan_free(plan);
            *plan = cp;
            *pres = cr;
        } else {
            sched_free(&s);
            plan_free(&cp);
        }
    }
    return 0;
}
