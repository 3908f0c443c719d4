/* reorder.c: see reorder.h.
 *
 * Same event loop as greedy_list.c: the rank with the smallest free time
 * decides; a rank that can run nothing idles until its earliest known ready
 * op or until an op it waits for is placed.  Ops of the plan are marked done
 * in place, so each rank scans at most `window` pending entries. */
#include "schedule/reorder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RO_EPS 1e-9

typedef struct ro_state {
    const schedule *plan;
    const reorder_cost *c;
    schedule *out;
    int S, m;
    double *end;        /* [OP_KIND_COUNT][S*m], < 0 while not placed */
    char **done;        /* [pp][nops] */
    int *head;          /* [pp] first not-done plan index */
    int *left;          /* [pp] plan ops not placed yet */
    double *t_free, *idle_since, *mem;
} ro_state;

static double *end_of(ro_state *g, int kind, int stage, int mb)
{
    return &g->end[((size_t)kind * g->S + stage) * g->m + mb];
}

/* Ready time of op, INFINITY if its predecessor is not placed. */
static double ready(ro_state *g, sched_op op)
{
    sched_op pred;
    if (!sched_pred(g->plan, op, &pred)) return 0.0;
    double e = *end_of(g, pred.kind, pred.stage, pred.mb);
    if (e < 0.0) return INFINITY;
    int same = g->plan->stage_rank[pred.stage] == g->plan->stage_rank[op.stage];
    return e + (same ? 0.0 : g->c->t_comm_s);
}

static void wake_successors(ro_state *g, sched_op op, double e)
{
    int S = g->S;
    int succ_stage = -1;
    if (op.kind == OP_F) succ_stage = op.stage + 1 < S ? op.stage + 1 : op.stage;
    else if (op.kind == OP_B || op.kind == OP_BW) succ_stage = op.stage - 1;
    if (succ_stage < 0) return;
    int r = g->plan->stage_rank[succ_stage];
    double t = e + (r == g->plan->stage_rank[op.stage] ? 0.0 : g->c->t_comm_s);
    if (g->idle_since[r] >= 0.0 && g->t_free[r] > t)
        g->t_free[r] = t > g->idle_since[r] ? t : g->idle_since[r];
}

static void step(ro_state *g, int r)
{
    const reorder_cost *c = g->c;
    double t = g->t_free[r], next = INFINITY;
    int n = g->plan->nops[r], seen = 0;
    while (g->head[r] < n && g->done[r][g->head[r]]) g->head[r]++;
    for (int i = g->head[r]; i < n && seen <= c->window; i++) {
        if (g->done[r][i]) continue;
        seen++;
        sched_op op = g->plan->ops[r][i];
        double rt = ready(g, op);
        if (op.kind == OP_F && i != g->head[r] &&
            g->mem[r] + c->mem[OP_F] > c->mem_limit + RO_EPS)
            continue;  /* overtaking forward would raise the peak */
        if (rt > t + RO_EPS) {
            if (rt < next) next = rt;
            continue;
        }
        double e = t + c->dur_s[op.kind];
        *end_of(g, op.kind, op.stage, op.mb) = e;
        sched_push(g->out, r, (op_kind)op.kind, op.stage, op.mb);
        g->done[r][i] = 1;
        g->left[r]--;
        g->mem[r] += c->mem[op.kind];
        g->t_free[r] = e;
        g->idle_since[r] = -1.0;
        wake_successors(g, op, e);
        return;
    }
    g->idle_since[r] = t;
    g->t_free[r] = next;
}

int reorder_ready(const schedule *plan, const reorder_cost *c, schedule *out, pg_status *st)
{
    ro_state g;
    memset(&g, 0, sizeof g);
    g.plan = plan;
    g.c = c;
    g.out = out;
    g.S = plan->nstages;
    g.m = plan->m;
    size_t n = (size_t)OP_KIND_COUNT * g.S * g.m;
    g.end = pg_xmalloc(n * sizeof *g.end);
    for (size_t i = 0; i < n; i++) g.end[i] = -1.0;
    int pp = plan->pp;
    g.done = pg_xcalloc((size_t)pp, sizeof *g.done);
    g.head = pg_xcalloc((size_t)pp, sizeof *g.head);
    g.left = pg_xcalloc((size_t)pp, sizeof *g.left);
    g.t_free = pg_xcalloc((size_t)pp, sizeof *g.t_free);
    g.idle_since = pg_xmalloc((size_t)pp * sizeof *g.idle_since);
    g.mem = pg_xcalloc((size_t)pp, sizeof *g.mem);
    for (int r = 0; r < pp; r++) {
        g.done[r] = pg_xcalloc((size_t)plan->nops[r] + 1, 1);
        g.idle_since[r] = -1.0;
        g.left[r] = plan->nops[r];
    }
    int rc = 0;
    for (;;) {
        int r = -1;
        double best = INFINITY;
        for (int i = 0; i < pp; i++)
            if (g.left[i] > 0 && (r < 0 || g.t_free[i] < best)) {
                r = i;
                best = g.t_free[i];
            }
        if (r < 0) break;
        if (g.t_free[r] == INFINITY) {
            rc = pg_fail(st, PG_EXIT_DEADLOCK, "reorder: stuck at rank %d", r);
            break;
        }
        step(&g, r);
    }
    for (int r = 0; r < pp; r++) free(g.done[r]);
    free(g.done);
    free(g.head);
    free(g.left);
    free(g.t_free);
    free(g.idle_since);
    free(g.mem);
    free(g.end);
    return rc;
}

double reorder_peak(const schedule *s, const reorder_cost *c)
{
    double peak = 0.0;
    for (int r = 0; r < s->pp; r++) {
        double cur = 0.0;
        for (int i = 0; i < s->nops[r]; i++) {
            cur += c->mem[s->ops[r][i].kind];
            if (cur > peak) peak = cur;
        }
    }
    return peak;
}
