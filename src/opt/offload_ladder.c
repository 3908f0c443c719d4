/* offload_ladder.c: offload=plan over a ladder of capacities (offload_ladder.h). */
#include "opt/offload_ladder.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A capacity equal to a rung within this relative margin is that rung (a
 * capacity typed as 32GiB must not plan at 32 GiB twice). */
#define RUNG_REL_EPS 1e-9

int offload_ladder_rungs(double capacity_bytes, double *rungs, int max)
{
    int n = 0;
    if (!(capacity_bytes > 0)) return 0;
    double octaves = log2(capacity_bytes / OFFLOAD_LADDER_ANCHOR_BYTES);
    int i = (int)ceil(octaves * OFFLOAD_LADDER_RUNGS_PER_OCTAVE);
    for (; n < max; i--) {
        double c = OFFLOAD_LADDER_ANCHOR_BYTES * exp2((double)i / OFFLOAD_LADDER_RUNGS_PER_OCTAVE);
        if (c >= capacity_bytes * (1 - RUNG_REL_EPS)) continue;
        if (c < 1.0) break;   /* below a byte: nothing left to plan for */
        rungs[n++] = c;
    }
    return n;
}

/* The chosen plan's makespan as the ranking sees it. */
static double chosen_makespan(const offload_order_result *r)
{
    if (r->chosen < 0) return INFINITY;
    const offload_order_candidate *c = &r->cand[r->chosen];
    if (!c->fits) return INFINITY;
    return isnan(c->judged_makespan_s) ? c->model_makespan_s : c->judged_makespan_s;
}

/* The floor is reached: the best so far, or the caller's incumbent, is at
 * most it (comparisons with NAN are false: no stop). */
static int at_floor(const offload_ladder_stop *stop, double best_s)
{
    if (stop == NULL || !isfinite(stop->floor_s)) return 0;
    return best_s <= stop->floor_s || stop->incumbent_s <= stop->floor_s;
}

int offload_ladder_choose(const offload_order_input *in, double capacity_bytes, int max_rungs,
                          const offload_ladder_stop *stop, schedule *best, memplan *plan, offload_plan_result *pres,
                          offload_order_result *ores, offload_ladder_result *lres, pg_status *st)
{
    memset(lres, 0, sizeof *lres);
    int rc = offload_order_choose(in, best, plan, pres, ores, st);
    if (rc != 0) return rc;
    lres->nrungs = 1;
    lres->capacity_bytes[0] = capacity_bytes;
    lres->makespan_s[0] = chosen_makespan(ores);
    lres->chosen = 0;
    double rungs[OFFLOAD_LADDER_MAX_RUNGS];
    if (max_rungs > OFFLOAD_LADDER_MAX_RUNGS) max_rungs = OFFLOAD_LADDER_MAX_RUNGS;
    int nr = offload_ladder_rungs(capacity_bytes, rungs, max_rungs);
    offload_order_result *tr = pg_xmalloc(sizeof *tr);
    for (int k = 0; k < nr; k++) {
        if (at_floor(stop, lres->makespan_s[lres->chosen])) {
            lres->stopped_at_floor = 1;
            break;
        }
        experiment e = *in->plan.exp;   /* the planner sees the rung; the judge still the job's capacity */
        e.memory_capacity_bytes = rungs[k];
        offload_order_input rin = *in;
        rin.plan.exp = &e;
        schedule tb;
        memplan tp;
        offload_plan_result tpres;
        rc = offload_order_choose(&rin, &tb, &tp, &tpres, tr, st);
        if (rc != 0) {   /* a rung the planner refuses ends the ladder; the plans so far stand */
            rc = 0;
            pg_status_clear(st);
            break;
        }
        double ms = chosen_makespan(tr);
        lres->capacity_bytes[lres->nrungs] = rungs[k];
        lres->makespan_s[lres->nrungs] = ms;
        lres->nrungs++;
        if (ms < lres->makespan_s[lres->chosen]) {   /* strictly faster: ties keep the larger capacity */
            lres->chosen = lres->nrungs - 1;
            sched_free(best);
            plan_free(plan);
            *best = tb;
            *plan = tp;
            *pres = tpres;
            memcpy(ores, tr, sizeof *ores);
        } else {
            sched_free(&tb);
            plan_free(&tp);
        }
        if (isinf(ms)) break;   /* nothing fits this rung: less room fits even less */
    }
    free(tr);
    ores->planned_capacity_bytes = lres->capacity_bytes[lres->chosen];
    ores->job_capacity_bytes = capacity_bytes;
    ores->ladder_rungs = lres->nrungs;
    return rc;
}
