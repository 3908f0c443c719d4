/* vshape_common.c: see vshape_common.h. */
#include "schedule/vshape_common.h"

#include <math.h>
#include <string.h>

#include "schedule/greedy_list.h"

/* Tolerance for fractional memory counts and accumulated times. */
#define VS_EPS 1e-9
/* Greedy work allowed per generator call, in (op decisions x ranks scanned):
 * a few tens of ms of the engine on one core, so the largest instances try a few
 * policies and small ones try them all. */
#define VS_WORK_BUDGET 2e7
/* Warm-up headroom values tried (greedy_list.h: gl_policy.headroom). */
#define VS_MAX_HEADROOM 2

/* Policies that won on the reference cases (p = 8, m = 32, balanced and
 * unbalanced costs), tried first; encoded as gl_all_policies' bit index. */
static const int vs_preferred[] = {5, 0, 15, 7, 13, 32, 2, 4, 8, 1};

void vs_durations(const sched_params *p, int v, double dur_s[OP_KIND_COUNT])
{
    dur_s[OP_F] = p->t_f / v;
    dur_s[OP_B] = p->t_b / v;
    dur_s[OP_W] = p->t_w / v;
    dur_s[OP_BW] = (p->t_b + p->t_w) / v;
}

void vs_empty(const sched_params *p, const vs_spec *spec, schedule *s)
{
    sched_init(s, spec->name, p->pp, spec->v, p->m);
    spec->place(s);
}

double vs_peak(const schedule *s, const double mem[OP_KIND_COUNT])
{
    double peak = 0.0;
    for (int r = 0; r < s->pp; r++) {
        double cur = 0.0;
        for (int i = 0; i < s->nops[r]; i++) {
            cur += mem[s->ops[r][i].kind];
            if (cur > peak) peak = cur;
        }
    }
    return peak;
}

static int better(const vs_spec *spec, const vs_best *best, double span, double makespan)
{
    if (!best->have) return 1;
    if (spec->by_makespan) {
        if (makespan < best->makespan_s - VS_EPS) return 1;
        return makespan <= best->makespan_s + VS_EPS && span < best->span_s - VS_EPS;
    }
    if (span < best->span_s - VS_EPS) return 1;
    return span <= best->span_s + VS_EPS && makespan < best->makespan_s - VS_EPS;
}

static void adopt(vs_best *best, schedule *cand, double span, double makespan, double peak)
{
    if (best->have) sched_free(&best->s);
    best->s = *cand;
    memset(cand, 0, sizeof *cand);
    best->span_s = span;
    best->makespan_s = makespan;
    best->peak = peak;
    best->have = 1;
}

int vs_greedy(const sched_params *p, const vs_spec *spec, vs_best *best, pg_status *st)
{
    gl_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.split = spec->split;
    vs_durations(p, spec->v, pb.dur_s);
    pb.t_comm_s = p->t_comm;
    memcpy(pb.mem, spec->mem, sizeof pb.mem);
    pb.mem_limit = spec->limit;

    gl_policy all[GL_ALL_POLICIES];
    int nall = gl_all_policies(all);
    int npref = (int)(sizeof vs_preferred / sizeof vs_preferred[0]);
    /* Trial order: preferred bit patterns, then the rest; each with every
     * headroom and both W disciplines. */
    int order[GL_ALL_POLICIES], n = 0;
    char used[GL_ALL_POLICIES] = {0};
    for (int i = 0; i < npref; i++) {
        order[n++] = vs_preferred[i];
        used[vs_preferred[i]] = 1;
    }
    for (int i = 0; i < nall; i++)
        if (!used[i]) order[n++] = i;

    double per_run = (double)p->m * spec->v * p->pp * (spec->split ? 3 : 2) * (p->pp + spec->v);
    long runs_left = (long)(VS_WORK_BUDGET / per_run);
    if (runs_left < 1) runs_left = 1;
    for (int i = 0; i < n && runs_left > 0; i++)
        for (int hr = 0; hr <= VS_MAX_HEADROOM && runs_left > 0; hr++)
            for (int lifo = 0; lifo < 2 && runs_left > 0; lifo++, runs_left--) {
                gl_policy pol = all[order[i]];
                pol.headroom = hr;
                pb.w_lifo = lifo;
                schedule cand;
                gl_result res;
                vs_empty(p, spec, &cand);
                int rc = gl_run(&pb, &pol, &cand, &res, st);
                if (rc == PG_EXIT_INPUT) {
                    sched_free(&cand);
                    return rc;
                }
                if (rc == 0 && better(spec, best, res.span_s, res.makespan_s))
                    adopt(best, &cand, res.span_s, res.makespan_s, vs_peak(&cand, spec->mem));
                else
                    sched_free(&cand);
            }
    pg_status_clear(st);
    return 0;
}

void vs_keep(const sched_params *p, const vs_spec *spec, vs_best *best, schedule *cand)
{
    pg_status st;
    sched_times t;
    double peak = vs_peak(cand, spec->mem);
    if (peak > spec->limit + VS_EPS || sched_validate(cand, &st) != 0 ||
        sched_eval_ideal(cand, p->t_f, p->t_b, p->t_w, p->t_comm, &t, &st) != 0) {
        sched_free(cand);
        return;
    }
    double span = t.span, makespan = t.makespan;
    sched_times_free(cand, &t);
    if (better(spec, best, span, makespan)) adopt(best, cand, span, makespan, peak);
    else sched_free(cand);
}

int vs_finish(vs_best *best, schedule *out, pg_status *st)
{
    if (!best->have) return pg_fail(st, PG_EXIT_INTERNAL, "no schedule found");
    *out = best->s;
    memset(best, 0, sizeof *best);
    return 0;
}
