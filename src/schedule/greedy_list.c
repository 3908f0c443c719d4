/* greedy_list.c: see greedy_list.h.
 *
 * Event loop: the rank with the smallest "free at" time decides next (ties:
 * lowest rank).  Every op not yet placed will start no earlier than that
 * time, so the ready times the deciding rank sees are final, and an unplaced
 * predecessor can only finish later.  A rank with nothing to do idles until
 * its earliest known ready time; placing an op wakes the rank holding its
 * successor earlier if the successor becomes ready before that.
 */
#include "schedule/greedy_list.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Tolerance for comparing accumulated times and fractional memory counts. */
#define GL_EPS 1e-9

typedef struct wq {         /* per-rank deque of deferred W ops */
    int *stage, *mb;
    int head, tail, cap;
} wq;

typedef struct gl_state {
    const gl_problem *pb;
    const gl_policy *pol;
    schedule *s;
    int S, m, pp, v;
    double *end_f, *end_b;  /* [S*m], < 0 while not placed */
    int *nf, *nb;           /* [S] next microbatch to run F / B on stage s */
    int **loc;              /* [pp][v] local stages in model order */
    double *t_free;         /* [pp] */
    double *idle_since;     /* [pp] >= 0 while idling */
    double *first, *last;   /* [pp] first start / last end, -1 before any op */
    double *mem, *peak;     /* [pp] */
    int *left;              /* [pp] ops still to place */
    int *last_fb;           /* [pp] kind of the last F or B placed, -1 before */
    wq *w;                  /* [pp] */
} gl_state;

static double comm(const gl_state *g, int s_from, int s_to)
{
    return g->s->stage_rank[s_from] == g->s->stage_rank[s_to] ? 0.0 : g->pb->t_comm_s;
}

/* Ready time of the next F of stage s, or INFINITY if its predecessor is not
 * placed yet (then *lb, if given, gets a lower bound); -1 if none left. */
static double ready_f(const gl_state *g, int s, double *lb)
{
    int j = g->nf[s];
    if (j >= g->m) return -1.0;
    if (s == 0) return 0.0;
    double e = g->end_f[(size_t)(s - 1) * g->m + j];
    if (e >= 0.0) return e + comm(g, s - 1, s);
    if (lb) {
        int pr = g->s->stage_rank[s - 1];
        *lb = g->t_free[pr] + g->pb->dur_s[OP_F] + comm(g, s - 1, s);
    }
    return INFINITY;
}

static double ready_b(const gl_state *g, int s, double *lb)
{
    int j = g->nb[s];
    op_kind bk = g->pb->split ? OP_B : OP_BW;
    if (j >= g->m || j >= g->nf[s]) return -1.0;  /* none left, or own F not run yet */
    if (s == g->S - 1) return g->end_f[(size_t)s * g->m + j];
    double e = g->end_b[(size_t)(s + 1) * g->m + j];
    if (e >= 0.0) return e + comm(g, s + 1, s);
    if (lb) {
        int pr = g->s->stage_rank[s + 1];
        *lb = g->t_free[pr] + g->pb->dur_s[bk] + comm(g, s + 1, s);
    }
    return INFINITY;
}

/* Memory the rank must keep for the later-chunk forwards of microbatches it
 * has started (see the header: this is what rules out memory deadlock). */
static double reserve(const gl_state *g, int r)
{
    int n = 0;
    for (int k = 1; k < g->v; k++) n += g->nf[g->loc[r][0]] - g->nf[g->loc[r][k]];
    return n * g->pb->mem[OP_F];
}

static int f_admitted(const gl_state *g, int r, int s)
{
    if (s != g->loc[r][0]) return 1;  /* later chunk: already reserved */
    if (g->pol->f_window > 0) {
        int s0 = g->loc[r][0];
        if (g->nf[s0] - g->nb[s0] >= g->pol->f_window) return 0;
    }
    if (g->pb->mem_limit <= 0.0) return 1;
    double need = g->mem[r] + reserve(g, r) + g->v * g->pb->mem[OP_F];
    /* Warm-up headroom: before its first backward, rank r leaves room for
     * headroom * r more forwards, so upstream ranks do not fill their memory
     * with early forwards that the steady state then has to drain. */
    if (g->nb[s] == 0 && g->pol->headroom > 0) need += g->pol->headroom * r * g->pb->mem[OP_F];
    return need <= g->pb->mem_limit + GL_EPS;
}

static void wq_push(wq *q, int stage, int mb)
{
    q->stage[q->tail] = stage;
    q->mb[q->tail] = mb;
    q->tail++;
}

static void wake(gl_state *g, int r, double t)
{
    if (g->idle_since[r] >= 0.0 && g->t_free[r] > t) {
        g->t_free[r] = t > g->idle_since[r] ? t : g->idle_since[r];
    }
}

/* Place op (kind, stage, mb) on rank r starting at t. */
static void place(gl_state *g, int r, op_kind kind, int stage, int mb, double t)
{
    const gl_problem *pb = g->pb;
    double e = t + pb->dur_s[kind];
    size_t idx = (size_t)stage * g->m + mb;
    sched_push(g->s, r, kind, stage, mb);
    if (g->first[r] < 0.0) g->first[r] = t;
    g->last[r] = e;
    g->t_free[r] = e;
    g->idle_since[r] = -1.0;
    g->left[r]--;
    if (kind != OP_W) g->last_fb[r] = kind == OP_F ? OP_F : OP_B;
    g->mem[r] += pb->mem[kind];
    if (g->mem[r] > g->peak[r]) g->peak[r] = g->mem[r];
    if (kind == OP_F) {
        g->end_f[idx] = e;
        g->nf[stage]++;
        if (stage + 1 < g->S) wake(g, g->s->stage_rank[stage + 1], e + comm(g, stage, stage + 1));
    } else if (kind == OP_B || kind == OP_BW) {
        g->end_b[idx] = e;
        g->nb[stage]++;
        if (kind == OP_B) wq_push(&g->w[r], stage, mb);
        if (stage > 0) wake(g, g->s->stage_rank[stage - 1], e + comm(g, stage, stage - 1));
    }
}

static void place_w(gl_state *g, int r, double t)
{
    wq *q = &g->w[r];
    int i;
    if (g->pb->w_lifo) i = --q->tail;
    else i = q->head++;
    place(g, r, OP_W, q->stage[i], q->mb[i], t);
}

/* Whether stage s is a better next backward than stage cur. */
static int b_better(const gl_state *g, int s, int cur)
{
    if (g->pol->b_balance && g->nb[s] != g->nb[cur]) return g->nb[s] < g->nb[cur];
    return g->pol->b_high ? s > cur : s < cur;
}

/* Decide and place (or idle) for rank r at its free time. */
static void step(gl_state *g, int r)
{
    const gl_policy *pol = g->pol;
    double t = g->t_free[r];
    int best_b = -1, best_f = -1, f_blocked = 0;
    double next_known = INFINITY, next_lb = INFINITY;
    for (int k = 0; k < g->v; k++) {
        int s = g->loc[r][k];
        double lb = INFINITY;
        double rb = ready_b(g, s, &lb);
        if (rb >= 0.0) {
            if (rb <= t + GL_EPS) {
                if (best_b < 0 || b_better(g, s, best_b)) best_b = s;
            } else if (rb < next_known) {
                next_known = rb;
            }
            if (lb < next_lb) next_lb = lb;
        }
        lb = INFINITY;
        double rf = ready_f(g, s, &lb);
        if (rf >= 0.0) {
            int ok = f_admitted(g, r, s);
            if (rf <= t + GL_EPS) {
                if (!ok) f_blocked = 1;
                else if (best_f < 0 || (pol->f_high ? s > best_f : s < best_f)) best_f = s;
            } else if (ok) {
                if (rf < next_known) next_known = rf;
                if (lb < next_lb) next_lb = lb;
            }
        }
    }
    int f_first = pol->f_first;
    if (pol->rhythm && g->last_fb[r] >= 0) f_first = g->last_fb[r] != OP_F;
    if (best_b >= 0 && (!f_first || best_f < 0)) {
        place(g, r, g->pb->split ? OP_B : OP_BW, best_b, g->nb[best_b], t);
        return;
    }
    if (best_f >= 0) {
        place(g, r, OP_F, best_f, g->nf[best_f], t);
        return;
    }
    wq *q = &g->w[r];
    if (q->tail > q->head) {
        double next = next_known < next_lb ? next_known : next_lb;
        if (f_blocked || pol->w_eager || t + g->pb->dur_s[OP_W] <= next + GL_EPS ||
            (next_known == INFINITY && next_lb == INFINITY)) {
            place_w(g, r, t);
            return;
        }
    }
    /* Idle until the earliest known ready op (or until woken). */
    g->idle_since[r] = t;
    g->t_free[r] = next_known;
}

static void state_free(gl_state *g)
{
    free(g->end_f);
    free(g->end_b);
    free(g->nf);
    free(g->nb);
    if (g->loc)
        for (int r = 0; r < g->pp; r++) free(g->loc[r]);
    free(g->loc);
    free(g->t_free);
    free(g->idle_since);
    free(g->first);
    free(g->last);
    free(g->mem);
    free(g->peak);
    free(g->left);
    free(g->last_fb);
    if (g->w)
        for (int r = 0; r < g->pp; r++) {
            free(g->w[r].stage);
            free(g->w[r].mb);
        }
    free(g->w);
}

static void state_init(gl_state *g, const gl_problem *pb, const gl_policy *pol, schedule *s)
{
    memset(g, 0, sizeof *g);
    g->pb = pb;
    g->pol = pol;
    g->s = s;
    g->S = s->nstages;
    g->m = s->m;
    g->pp = s->pp;
    g->v = s->v;
    size_t n = (size_t)g->S * g->m;
    g->end_f = pg_xmalloc(n * sizeof *g->end_f);
    g->end_b = pg_xmalloc(n * sizeof *g->end_b);
    for (size_t i = 0; i < n; i++) g->end_f[i] = g->end_b[i] = -1.0;
    g->nf = pg_xcalloc((size_t)g->S, sizeof *g->nf);
    g->nb = pg_xcalloc((size_t)g->S, sizeof *g->nb);
    g->loc = pg_xcalloc((size_t)g->pp, sizeof *g->loc);
    int *cnt = pg_xcalloc((size_t)g->pp, sizeof *cnt);
    for (int r = 0; r < g->pp; r++) g->loc[r] = pg_xcalloc((size_t)g->v, sizeof **g->loc);
    for (int st = 0; st < g->S; st++) {
        int r = s->stage_rank[st];
        if (cnt[r] < g->v) g->loc[r][cnt[r]++] = st;
    }
    free(cnt);
    g->t_free = pg_xcalloc((size_t)g->pp, sizeof *g->t_free);
    g->idle_since = pg_xmalloc((size_t)g->pp * sizeof *g->idle_since);
    g->first = pg_xmalloc((size_t)g->pp * sizeof *g->first);
    g->last = pg_xmalloc((size_t)g->pp * sizeof *g->last);
    g->mem = pg_xcalloc((size_t)g->pp, sizeof *g->mem);
    g->peak = pg_xcalloc((size_t)g->pp, sizeof *g->peak);
    g->left = pg_xcalloc((size_t)g->pp, sizeof *g->left);
    g->last_fb = pg_xcalloc((size_t)g->pp, sizeof *g->last_fb);
    g->w = pg_xcalloc((size_t)g->pp, sizeof *g->w);
    int per_stage = pb->split ? 3 : 2;
    for (int r = 0; r < g->pp; r++) {
        g->idle_since[r] = g->first[r] = g->last[r] = -1.0;
        g->last_fb[r] = -1;
        g->left[r] = per_stage * g->v * g->m;
        g->w[r].cap = g->v * g->m;
        g->w[r].stage = pg_xmalloc((size_t)g->w[r].cap * sizeof(int));
        g->w[r].mb = pg_xmalloc((size_t)g->w[r].cap * sizeof(int));
    }
}

int gl_run(const gl_problem *pb, const gl_policy *pol, schedule *out, gl_result *res, pg_status *st)
{
    if (pb->mem_limit > 0.0 && pb->mem_limit + GL_EPS < out->v * pb->mem[OP_F])
        return pg_fail_key(st, PG_EXIT_INPUT, "memory.limit",
                       "%g stage activations cannot hold one microbatch (needs %g)",
                       pb->mem_limit, out->v * pb->mem[OP_F]);
    gl_state g;
    state_init(&g, pb, pol, out);
    int rc = 0;
    for (;;) {
        int r = -1;
        double best = INFINITY;
        for (int i = 0; i < g.pp; i++)
            if (g.left[i] > 0 && (r < 0 || g.t_free[i] < best)) {
                r = i;
                best = g.t_free[i];
            }
        if (r < 0) break;
        if (g.t_free[r] == INFINITY) {
            rc = pg_fail(st, PG_EXIT_DEADLOCK, "greedy scheduler stuck (rank %d, limit %g)", r,
                         pb->mem_limit);
            break;
        }
        step(&g, r);
    }
    if (rc == 0 && res) {
        double lo = INFINITY, hi = -INFINITY, span = 0.0, peak = 0.0;
        for (int i = 0; i < g.pp; i++) {
            if (g.first[i] < 0.0) continue;
            if (g.first[i] < lo) lo = g.first[i];
            if (g.last[i] > hi) hi = g.last[i];
            if (g.last[i] - g.first[i] > span) span = g.last[i] - g.first[i];
            if (g.peak[i] > peak) peak = g.peak[i];
        }
        res->span_s = span;
        res->makespan_s = hi - lo;
        res->peak = peak;
    }
    state_free(&g);
    return rc;
}

void gl_take(schedule *dst, schedule *src)
{
    sched_free(dst);
    *dst = *src;
    memset(src, 0, sizeof *src);
}

static void empty_like(schedule *dst, const schedule *proto)
{
    sched_init(dst, proto->name, proto->pp, proto->v, proto->m);
    memcpy(dst->stage_rank, proto->stage_rank, (size_t)proto->nstages * sizeof *dst->stage_rank);
}

int gl_best(const gl_problem *pb, const gl_policy *pols, int npol, schedule *out, gl_result *res,
            pg_status *st)
{
    gl_result best = {INFINITY, INFINITY, 0.0};
    int have = 0, rc = 0;
    schedule cand;
    for (int i = 0; i < npol; i++) {
        gl_result r;
        empty_like(&cand, out);
        rc = gl_run(pb, &pols[i], &cand, &r, st);
        if (rc == PG_EXIT_INPUT) {
            sched_free(&cand);
            return rc;
        }
        if (rc == 0 && (r.span_s < best.span_s - GL_EPS ||
                        (r.span_s <= best.span_s + GL_EPS && r.makespan_s < best.makespan_s - GL_EPS))) {
            best = r;
            gl_take(out, &cand);
            have = 1;
        } else {
            sched_free(&cand);
        }
    }
    if (!have) return rc ? rc : pg_fail(st, PG_EXIT_INTERNAL, "no greedy policy given");
    if (st) pg_status_clear(st);
    if (res) *res = best;
    return 0;
}

int gl_all_policies(gl_policy *pols)
{
    int n = 0;
    for (int bits = 0; bits < GL_ALL_POLICIES; bits++) {
        gl_policy p = {0};
        p.f_first = bits & 1;
        p.b_high = (bits >> 1) & 1;
        p.f_high = (bits >> 2) & 1;
        p.w_eager = (bits >> 3) & 1;
        p.b_balance = (bits >> 4) & 1;
        p.rhythm = (bits >> 5) & 1;
        pols[n++] = p;
    }
    return n;
}
