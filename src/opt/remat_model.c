/* remat_model.c: the planner's model of a schedule, its memory and its
 * timing (remat_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "model/memory.h"
#include "opt/remat_internal.h"
#include "sim/actmem.h"

/* Per-stage option costs, taken from the simulator's own accounting: a
 * one-microbatch plan is set to each option and act_flow_of says what F
 * keeps, what the recomputes cost and what B leaves for W. */
static void stage_costs(const remat_input *in, const rm_model *md, int stage, rm_stage *c)
{
    const workload *w = in->wl;
    const stage_cost *sc = &w->stage[stage];
    int r = md->s->stage_rank[stage];
    double scale = in->time_scale ? in->time_scale[r] : 1.0;
    plan_choice *one = pg_xcalloc((size_t)w->nstages, sizeof *one);
    memplan probe = {.nstages = w->nstages, .m = 1, .c = one};
    act_flow fl;
    memset(c, 0, sizeof *c);
    c->act_b = sc->act_b_bytes;
    c->act_w = sc->act_w_bytes;
    for (int f = PLAN_FWD_KEEP; f <= PLAN_FWD_SELECTIVE; f++) {
        one[stage] = (plan_choice){.fwd = (uint8_t)f};
        act_flow_of(w, &probe, stage, 0, &fl);
        c->f_alloc[f] = fl.f_alloc;
        c->r_s[f] = fl.has_r ? fl.r_ref_s * scale : 0.0;
        c->fwd_ok[f] = f == PLAN_FWD_KEEP || fl.f_alloc < sc->act_b_bytes;
        if (f == PLAN_FWD_KEEP)
            c->after_b[PLAN_BWD_KEEP] = sc->act_b_bytes - fl.b_release;
    }
    one[stage] = (plan_choice){.bwd = PLAN_BWD_RECOMPUTE};
    act_flow_of(w, &probe, stage, 0, &fl);
    c->after_b[PLAN_BWD_RECOMPUTE] = sc->act_b_bytes - fl.b_release;
    c->rw_s = fl.rw_ref_s * scale;
    c->bwd_ok = sched_is_split(md->s) && c->after_b[PLAN_BWD_RECOMPUTE] < c->after_b[PLAN_BWD_KEEP];
    free(one);
    if (in->no_selective)
        c->fwd_ok[PLAN_FWD_SELECTIVE] = 0;
    /* Selective is the cheap first step before full; when it frees at least
     * as much as full, one of them is dominated. */
    if (c->fwd_ok[PLAN_FWD_SELECTIVE] && c->fwd_ok[PLAN_FWD_FULL] &&
        c->f_alloc[PLAN_FWD_SELECTIVE] <= c->f_alloc[PLAN_FWD_FULL]) {
        if (c->r_s[PLAN_FWD_SELECTIVE] <= c->r_s[PLAN_FWD_FULL])
            c->fwd_ok[PLAN_FWD_FULL] = 0;
        else
            c->fwd_ok[PLAN_FWD_SELECTIVE] = 0;
    }
    c->f_s = sc->f_s * scale;
    c->b_s = sc->b_s * scale;
    c->w_s = sc->w_s * scale;
    c->workspace = sc->workspace_bytes;
}

/* Kahn's algorithm over the rank chains and the predecessor edges. */
static int topo_order(rm_model *md, pg_status *st)
{
    int n = md->total;
    int *indeg = pg_xcalloc((size_t)n + 1, sizeof *indeg);
    int *nsucc = pg_xcalloc((size_t)n + 1, sizeof *nsucc);
    int *succ = pg_xmalloc(((size_t)n + 1) * sizeof *succ);   /* at most one cross edge into each op */
    int *first = pg_xcalloc((size_t)n + 2, sizeof *first);
    for (int k = 0; k < n; k++)
        if (md->pred[k] >= 0) first[md->pred[k] + 1]++;
    for (int k = 0; k < n; k++) first[k + 1] += first[k];
    for (int k = 0; k < n; k++) {
        int p = md->pred[k];
        if (p >= 0) {
            succ[first[p] + nsucc[p]++] = k;
            indeg[k]++;
        }
        if (k != md->base[md->rank[k]]) indeg[k]++;
    }
    int head = 0, tail = 0;
    for (int k = 0; k < n; k++)
        if (indeg[k] == 0) md->topo[tail++] = k;
    while (head < tail) {
        int k = md->topo[head++];
        for (int i = first[k]; i < first[k] + nsucc[k]; i++)
            if (--indeg[succ[i]] == 0) md->topo[tail++] = succ[i];
        int r = md->rank[k];
        if (k + 1 < md->base[r + 1] && --indeg[k + 1] == 0) md->topo[tail++] = k + 1;
    }
    free(indeg);
    free(nsucc);
    free(succ);
    free(first);
    if (tail != n)
        return pg_fail(st, PG_EXIT_DEADLOCK, "deadlock: the schedule cannot complete (%d of %d ops can run)", tail, n);
    return 0;
}

int rm_model_build(const remat_input *in, rm_model *md, pg_status *st)
{
    memset(md, 0, sizeof *md);
    const schedule *s = in->sched;
    if (s == NULL || in->wl == NULL || in->budget_bytes == NULL)
        return pg_fail(st, PG_EXIT_INPUT, "remat planner: missing schedule, workload or budget");
    if (in->wl->nstages != s->nstages)
        return pg_fail(st, PG_EXIT_INPUT, "remat planner: workload has %d stages, schedule %d", in->wl->nstages,
                       s->nstages);
    md->s = s;
    md->pp = s->pp;
    md->S = s->nstages;
    md->m = s->m;
    md->npairs = s->nstages * s->m;
    md->comm_s = in->comm_s;
    md->base = pg_xcalloc((size_t)md->pp + 1, sizeof *md->base);
    for (int r = 0; r < md->pp; r++) md->base[r + 1] = md->base[r] + s->nops[r];
    int n = md->total = md->base[md->pp];
    md->op = pg_xmalloc(((size_t)n + 1) * sizeof *md->op);
    md->rank = pg_xmalloc(((size_t)n + 1) * sizeof *md->rank);
    md->pred = pg_xmalloc(((size_t)n + 1) * sizeof *md->pred);
    md->topo = pg_xmalloc(((size_t)n + 1) * sizeof *md->topo);
    size_t np = (size_t)md->npairs + 1;
    md->idF = pg_xmalloc(np * sizeof *md->idF);
    md->idB = pg_xmalloc(np * sizeof *md->idB);
    md->idW = pg_xmalloc(np * sizeof *md->idW);
    for (int i = 0; i < md->npairs; i++) md->idF[i] = md->idB[i] = md->idW[i] = -1;
    for (int r = 0; r < md->pp; r++)
        for (int i = 0; i < s->nops[r]; i++) {
            int k = md->base[r] + i;
            sched_op o = s->ops[r][i];
            md->op[k] = o;
            md->rank[k] = r;
            if (o.stage < 0 || o.stage >= md->S || o.mb < 0 || o.mb >= md->m)
                return pg_fail(st, PG_EXIT_INPUT, "remat planner: op out of range on rank %d", r);
            int p = rm_pair(md, o.stage, o.mb);
            int *slot = o.kind == OP_F ? md->idF : o.kind == OP_W ? md->idW : md->idB;
            if (slot[p] >= 0)
                return pg_fail(st, PG_EXIT_INPUT, "remat planner: op of stage %d, mb %d listed twice", o.stage,
                               o.mb);
            slot[p] = k;
        }
    int split = sched_is_split(s);
    for (int p = 0; p < md->npairs; p++)
        if (md->idF[p] < 0 || md->idB[p] < 0 || (split && md->idW[p] < 0))
            return pg_fail(st, PG_EXIT_INPUT, "remat planner: stage %d, mb %d lacks an op", p / md->m, p % md->m);
    for (int k = 0; k < n; k++) {
        sched_op pr;
        md->pred[k] = -1;
        if (sched_pred(s, md->op[k], &pr)) {
            int p = rm_pair(md, pr.stage, pr.mb);
            md->pred[k] = pr.kind == OP_F ? md->idF[p] : pr.kind == OP_W ? md->idW[p] : md->idB[p];
        }
    }
    int rc = topo_order(md, st);
    if (rc != 0)
        return rc;
    md->st = pg_xcalloc((size_t)md->S, sizeof *md->st);
    for (int c = 0; c < md->S; c++) stage_costs(in, md, c, &md->st[c]);
    md->budget = pg_xcalloc((size_t)md->pp, sizeof *md->budget);
    for (int r = 0; r < md->pp; r++)
        md->budget[r] = in->budget_bytes[r] - REMAT_BUDGET_SLACK_REL * (in->budget_bytes[r] > 0 ? in->budget_bytes[r] : 0);
    return 0;
}

void rm_model_free(rm_model *md)
{
    free(md->base);
    free(md->op);
    free(md->rank);
    free(md->pred);
    free(md->topo);
    free(md->idF);
    free(md->idB);
    free(md->idW);
    free(md->st);
    free(md->budget);
    memset(md, 0, sizeof *md);
}

/* Memory as a sum of per-pair step functions over op ids (each pair's ops
 * sit on one rank, so its steps never cross into another rank's ids). */
static void add_span(double *diff, int from, int to, double bytes)
{
    if (from >= to) return;
    diff[from] += bytes;
    diff[to] -= bytes;
}

static void memory_of(const rm_model *md, const plan_choice *c, int frugal, double *mem)
{
    int n = md->total;
    double *diff = pg_xcalloc((size_t)n + 1, sizeof *diff);
    for (int p = 0; p < md->npairs; p++) {
        const rm_stage *sc = &md->st[p / md->m];
        int fwd = PLAN_FWD_KEEP, bwd = PLAN_BWD_KEEP;
        if (frugal) {
            for (int f = PLAN_FWD_FULL; f <= PLAN_FWD_SELECTIVE; f++)
                if (sc->fwd_ok[f] && sc->f_alloc[f] < sc->f_alloc[fwd]) fwd = f;
            if (sc->bwd_ok) bwd = PLAN_BWD_RECOMPUTE;
        } else if (c != NULL) {
            fwd = c[p].fwd;
            bwd = c[p].bwd;
        }
        int f = md->idF[p], b = md->idB[p], w = md->idW[p];
        add_span(diff, f, b, sc->f_alloc[fwd]);
        if (w < 0) {
            add_span(diff, b, b + 1, sc->act_b);
        } else {
            add_span(diff, b, b + 1, sc->act_b);
            add_span(diff, b + 1, w, sc->after_b[bwd]);
            add_span(diff, w, w + 1, sc->act_w);
        }
    }
    double run = 0;
    for (int k = 0; k < n; k++) {
        run += diff[k];
        mem[k] = run + md->st[md->op[k].stage].workspace;
    }
    free(diff);
}

void rm_memory(const rm_model *md, const plan_choice *c, double *mem)
{
    memory_of(md, c, 0, mem);
}

void rm_memory_min(const rm_model *md, double *mem)
{
    memory_of(md, NULL, 1, mem);
}

double rm_duration(const rm_model *md, const plan_choice *c, int id)
{
    sched_op o = md->op[id];
    const rm_stage *sc = &md->st[o.stage];
    plan_choice ch = c ? c[rm_pair(md, o.stage, o.mb)] : (plan_choice){0};
    switch (o.kind) {
    case OP_F: return sc->f_s;
    case OP_B: return sc->b_s + sc->r_s[ch.fwd];
    case OP_W: return sc->w_s + (ch.bwd == PLAN_BWD_RECOMPUTE ? sc->rw_s : 0.0);
    case OP_BW: return sc->b_s + sc->w_s + sc->r_s[ch.fwd];
    default: return 0.0;
    }
}

double rm_times(const rm_model *md, const plan_choice *c, double *start, double *end, double *span)
{
    double makespan = 0, first_start = -1;
    for (int i = 0; i < md->total; i++) {
        int k = md->topo[i];
        int r = md->rank[k];
        double t = k > md->base[r] ? end[k - 1] : 0.0;
        int p = md->pred[k];
        if (p >= 0) {
            double ready = end[p] + (md->rank[p] != r ? md->comm_s : 0.0);
            if (ready > t) t = ready;
        }
        end[k] = t + rm_duration(md, c, k);
        if (start) start[k] = t;
        if (end[k] > makespan) makespan = end[k];
    }
    double worst = 0;
    for (int r = 0; r < md->pp; r++) {
        if (md->base[r + 1] == md->base[r]) continue;
        int k0 = md->base[r], k1 = md->base[r + 1] - 1;
        double s0 = end[k0] - rm_duration(md, c, k0);
        if (first_start < 0 || s0 < first_start) first_start = s0;
        if (end[k1] - s0 > worst) worst = end[k1] - s0;
    }
    if (span) *span = worst;
    return makespan - (first_start > 0 ? first_start : 0.0);
}
