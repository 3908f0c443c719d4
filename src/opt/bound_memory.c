/* bound_memory.c: the per-rank memory relaxation under the limit K.
 *
 * Units.  Count in chunk activations: one F of a stage holds 1 (= 1/v of
 * M_B), so the rank's capacity is C = v K.  For an activation (s, j) of a
 * stage s on rank r call phase 1 the time from the start of its F (or of its
 * recomputation R) to the end of B(s, j) -- it holds 1 -- and phase 2 from
 * there to the end of W(s, j) -- it holds w_fraction[s] (fused: no phase 2).
 * N1(t), the number of activations of r in phase 1 at time t, is an integer
 * with N1 + sum of phase-2 fractions <= C, so
 *   (i)   N1(t) <= k = floor(C) at every moment;
 *   (ii)  while W(s, j) runs, (s, j) is in phase 2, so N1 <= k_s = floor(C - w_fraction[s]).
 * Lengths.  Phase 1 of (s, j) contains the whole chain from F(s, j) to
 * B(s, j): its F, every later F and backward down to stage s with their
 * latencies, so it lasts at least RT_s = head_b[s] + bk[s] - head_f[s] (the
 * round trip).  A recomputed activation is held from R(s, j) to the end of
 * B(s, j) and R and B run one after the other on r: at least f[s] + bk[s],
 * for f[s] more work on r.  Phase 2 lasts at least w[s] (W itself runs in it).
 * Window.  Nothing of r is stored before t0 = min over r's stages of
 * head_f, and every op of r ends by T, so all phases and ops of r lie in
 * [t0, T]; phase 1 of stage s even ends by T - tail_b[s].
 * Bounds, with x_s recomputed activations of stage s, G = sum x_s g_s,
 * g_s = RT_s - (f[s] + bk[s]) the phase-1 time a recomputation saves:
 *   (A)  by (i) and (ii):  k (T - t0) - sum_s m w[s] (k - k_s) >= integral of N1 >= sum_s m RT_s - G
 *   (B)  the area:         C (T - t0) >= sum_s m RT_s - G + sum_s m w_fraction[s] w[s]
 *   (C)  by (i), phase 1 ending by T - e, e = min_s tail_b[s]:
 *                          k (T - t0 - e) >= sum_s m RT_s - G
 *   (W)  the work of r:    T - t0 >= sum_s m (f + b + w)[s] + sum_s x_s f[s] + (least tail of r's ops)
 *   (D)  per stage, by (i): the m phase-1 intervals of s, at most k at a time,
 *        split into k chains of disjoint intervals (interval graphs are
 *        perfect), one with ceil(m / k) of them:
 *                          T >= head_f[s] + ceil(m / k) * L_s + tail_b[s],
 *        L_s = RT_s, or min(RT_s, f[s] + bk[s]) with remat.
 * Without remat x = 0 and the bound is the largest of them.  With remat the
 * schedule picks x; the bound is min over x in [0, m]^stages of the largest
 * of (A), (B), (C), (W): (A)-(C) ask for G at least some need N(T) falling
 * with T, (W) pays f[s] per recomputation, so for a given T the cheapest x
 * is the fractional knapsack (largest g_s / f[s] first), and the least
 * feasible T is found by bisection (feasibility is monotone in T).
 *
 * At K = 1 with one wave and w_fraction > 0, k = 1 and k_0 = 0, so (A) on
 * rank 0 reads T >= m (RT_0 + w[0]) = m (p(F+B) + W + 2(p-1)c): seed 000's
 * exact result (bound.c checks the serial schedule reaches it).
 */
#include <math.h>
#include <stdlib.h>

#include "opt/bound_internal.h"
#include "util/error.h"

#define MEM_SLACK 1e-9
/* Bisection stops at this relative width (far below any reported digit). */
#define MEM_BISECT_REL 1e-13
#define MEM_BISECT_MAX_ITERS 400

typedef struct mem_stage {
    double rt;      /* least phase-1 length when stored */
    double gain;    /* phase-1 time saved by recomputing (>= 0) */
    double cost;    /* extra work of one recomputation */
} mem_stage;

typedef struct mem_rank {
    int n;                      /* stages of the rank */
    mem_stage *st;
    double k, cap;              /* floor(C), C */
    double a0, b0, c0;          /* right-hand sides of (A), (B), (C) at x = 0 */
    double e;                   /* least tail after a B of the rank */
    double work, work_tail;     /* (W) at x = 0 */
    double m;
} mem_rank;

/* The G that (A), (B), (C) require for a window of length len = T - t0. */
static double need_at(const mem_rank *mr, double len)
{
    double n = mr->a0 - mr->k * len;
    double nb = mr->b0 - mr->cap * len;
    double nc = mr->c0 - mr->k * (len - mr->e);
    if (nb > n) n = nb;
    if (nc > n) n = nc;
    return n;
}

static int by_ratio_desc(const void *pa, const void *pb)
{
    const mem_stage *a = pa, *b = pb;
    /* gain / cost, compared without dividing (cost may be 0: free remat first) */
    double l = a->gain * b->cost, r = b->gain * a->cost;
    return l > r ? -1 : l < r ? 1 : 0;
}

/* Least extra work reaching G >= need with x_s in [0, m]; -1 if unreachable.
 * Stages are sorted by gain/cost, so filling in order is the fractional
 * knapsack optimum.  *ops receives sum x_s. */
static double cheapest_remat(const mem_rank *mr, double need, double *ops)
{
    double work = 0, x_total = 0;
    for (int i = 0; i < mr->n && need > 0; i++) {
        const mem_stage *s = &mr->st[i];
        if (s->gain <= 0)
            break;
        double x = need / s->gain;
        if (x > mr->m) x = mr->m;
        need -= x * s->gain;
        work += x * s->cost;
        x_total += x;
    }
    *ops = x_total;
    return need > MEM_SLACK * (mr->a0 + mr->b0 + mr->c0 + 1) ? -1 : work;
}

static int feasible(const mem_rank *mr, double len, double *ops)
{
    double need = need_at(mr, len);
    *ops = 0;
    double extra = 0;
    if (need > 0 && (extra = cheapest_remat(mr, need, ops)) < 0)
        return 0;
    return mr->work + extra + mr->work_tail <= len;
}

double bound_memory_rank(const bound_input *in, const bound_chain *c, int r, double *remat_ops)
{
    int v = bound_stages_per_rank(in);
    double m = in->m;
    mem_rank mr = {.m = m, .cap = v * in->mem_limit};
    mr.k = floor(mr.cap + MEM_SLACK);
    mr.st = pg_xcalloc((size_t)v, sizeof *mr.st);
    double t0 = INFINITY, per_stage = 0;
    mr.e = INFINITY;
    mr.work_tail = in->split ? 0.0 : INFINITY;   /* split: a W ends the rank's list with tail 0 */
    double sum_rt = 0;
    for (int s = 0; s < in->nstages; s++) {
        if (in->stage_rank[s] != r)
            continue;
        mem_stage *ms = &mr.st[mr.n++];
        ms->rt = c->head_b[s] + c->bk[s] - c->head_f[s];
        double remat_len = in->f[s] + c->bk[s];
        ms->gain = in->remat && ms->rt > remat_len ? ms->rt - remat_len : 0.0;
        ms->cost = in->f[s];
        sum_rt += m * ms->rt;
        if (c->head_f[s] < t0) t0 = c->head_f[s];
        if (c->tail_b[s] < mr.e) mr.e = c->tail_b[s];
        if (!in->split && c->tail_b[s] < mr.work_tail) mr.work_tail = c->tail_b[s];
        mr.work += m * (in->f[s] + c->bk[s] + (in->split ? in->w[s] : 0.0));
        double wf = in->split && in->w_fraction ? in->w_fraction[s] : 0.0;
        double k_w = floor(mr.cap - wf + MEM_SLACK);
        mr.a0 += in->split ? m * in->w[s] * (mr.k - k_w) : 0.0;
        mr.b0 += m * wf * in->w[s];
        /* (D): this stage's phase-1 intervals alone. */
        double len = in->remat && remat_len < ms->rt ? remat_len : ms->rt;
        double d = c->head_f[s] + ceil(m / mr.k - MEM_SLACK) * len + c->tail_b[s];
        if (d > per_stage) per_stage = d;
    }
    mr.a0 += sum_rt;
    mr.b0 += sum_rt;
    mr.c0 = sum_rt;

    double len;
    *remat_ops = 0;
    if (!in->remat) {
        len = mr.a0 / mr.k;
        if (mr.b0 / mr.cap > len) len = mr.b0 / mr.cap;
        if (mr.e + mr.c0 / mr.k > len) len = mr.e + mr.c0 / mr.k;
        if (mr.work + mr.work_tail > len) len = mr.work + mr.work_tail;
    } else {
        qsort(mr.st, (size_t)mr.n, sizeof *mr.st, by_ratio_desc);
        /* hi: feasible with x = 0; lo: infeasible (or 0). */
        double hi = mr.a0 / mr.k;
        if (mr.b0 / mr.cap > hi) hi = mr.b0 / mr.cap;
        if (mr.e + mr.c0 / mr.k > hi) hi = mr.e + mr.c0 / mr.k;
        if (mr.work + mr.work_tail > hi) hi = mr.work + mr.work_tail;
        double lo = 0, ops;
        for (int it = 0; it < MEM_BISECT_MAX_ITERS && hi - lo > MEM_BISECT_REL * hi; it++) {
            double mid = 0.5 * (lo + hi);
            if (feasible(&mr, mid, &ops))
                hi = mid;
            else
                lo = mid;
        }
        /* lo is infeasible, so lo is a valid bound; report hi's remat count. */
        len = lo;
        feasible(&mr, hi, remat_ops);
    }
    free(mr.st);
    double t = t0 + len;
    return per_stage > t ? per_stage : t;
}
