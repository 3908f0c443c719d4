/* remat_cover_dp.c: a rank's least-cost cover by dynamic programming over
 * its op order (remat_internal.h, rm_cover_dp).
 *
 * Why.  The per-rank covers (remat_cover.c) are the planner's best warm
 * start and its strongest cut, but as ILPs they are hard for GLPK at middle
 * budgets: the memory rows are knapsack rows (full and selective free
 * different bytes), and a zero-bubble rank with 95 binaries was not solved
 * in 9 s.  Its structure is simple, though: an option only matters while
 * its window (F to B for the forward options, B to W for the backward one)
 * is open, and a rank has few windows open at once (about p - r for 1F1B,
 * a few more for zero-bubble schedules).  Sweeping the ops in order with the
 * choices of the open windows as the state solves the cover exactly, in
 * milliseconds where the state space is small.
 *
 * The sweep.  Only ops over budget (rows) matter, and only windows that
 * hold one have columns.  A "digit" is one such window while it matters:
 * it opens at its first row and closes right after its last, when its
 * choice can no longer help any row; closing merges states that differ
 * only in that digit (keeping the cheaper, and among equal costs the one
 * aligned with the stage before, as remat_cover.c does).  A state is the
 * choices of the open digits, two bits each; at every row, states whose
 * open digits free less than the deficit are dropped.  The cost of a state
 * is the recompute seconds chosen so far (optionally weighted per consumer
 * op, rm_weighted_covers).  Windows of one rank are intervals of its order,
 * so the open digits at a row are exactly the windows that contain it and
 * still matter.  The sweep runs forward or backward (the same cover; the
 * running minima differ, and both are cuts, remat_cover.c).
 *
 * Bounds on the work: at most DP_MAX_DIGITS digits open at once, and at
 * most DP_MAX_STORED states stored over the whole sweep (each open and
 * close keeps its table for the trace back).  Beyond either, the rank is
 * left to the ILP cover.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opt/remat_internal.h"

#define DP_MAX_DIGITS 31          /* two bits each in a 64-bit code */
#define DP_MAX_STORED (4L << 20)  /* states kept for the trace back, all tables */
#define DIGIT_BITS 2
#define DIGIT_MASK 3u
#define COST_TIE_REL 1e-12        /* costs this close are equal (then alignment decides) */

enum { WIN_FWD, WIN_BWD };

typedef struct digit {
    int pair, win;                /* WIN_FWD: values plan_fwd; WIN_BWD: plan_bwd */
    int first, last;              /* its first and last op over budget */
    double freed[3];              /* bytes the value frees inside the window */
    double cost[3];               /* recompute seconds of the value */
    int aligned[3];               /* the value is aligned with the stage before */
    int ok[3];                    /* the value has a column (keep always) */
} digit;

typedef struct table {            /* one stored step of the sweep */
    uint64_t *code;
    int32_t *back;                /* index in the previous table */
    int n;
    int open_pair, open_win, open_pos;   /* an open step: which digit, at which position; -1 for a close */
} table;

typedef struct dp {
    table *t;
    int nt, capt;
    long stored;
    double *cost;                 /* [n of the last table] */
    int *align;
    digit *dig;                   /* open digits, by position */
    int ndig;
} dp;

static int better(double c1, int a1, double c2, int a2)
{
    double tol = COST_TIE_REL * (fabs(c1) > fabs(c2) ? fabs(c1) : fabs(c2));
    if (c1 < c2 - tol) return 1;
    if (c1 > c2 + tol) return 0;
    return a1 > a2;
}

static table *push_table(dp *d, int n)
{
    if (d->nt == d->capt) {
        d->capt = d->capt ? 2 * d->capt : 64;
        d->t = pg_xrealloc(d->t, (size_t)d->capt * sizeof *d->t);
    }
    table *t = &d->t[d->nt++];
    t->code = pg_xmalloc(((size_t)n + 1) * sizeof *t->code);
    t->back = pg_xmalloc(((size_t)n + 1) * sizeof *t->back);
    t->n = 0;
    t->open_pair = t->open_win = t->open_pos = -1;
    d->stored += n;
    return t;
}

/* Open digit g at the next position: every live state times every value. */
static int open_digit(dp *d, const digit *g)
{
    if (d->ndig >= DP_MAX_DIGITS) return 0;
    const table *old = &d->t[d->nt - 1];
    int nopt = 0;
    for (int v = 0; v < 3; v++) nopt += g->ok[v];
    long n = (long)old->n * nopt;
    if (d->stored + n > DP_MAX_STORED) return 0;
    table *t = push_table(d, (int)n);
    old = &d->t[d->nt - 2];
    double *cost = pg_xmalloc(((size_t)n + 1) * sizeof *cost);
    int *align = pg_xmalloc(((size_t)n + 1) * sizeof *align);
    int pos = d->ndig;
    for (int i = 0; i < old->n; i++) {
        if (isinf(d->cost[i])) continue;
        for (int v = 0; v < 3; v++) {
            if (!g->ok[v]) continue;
            int j = t->n++;
            t->code[j] = old->code[i] | ((uint64_t)v << (DIGIT_BITS * pos));
            t->back[j] = i;
            cost[j] = d->cost[i] + g->cost[v];
            align[j] = d->align[i] + g->aligned[v];
        }
    }
    t->open_pair = g->pair;
    t->open_win = g->win;
    t->open_pos = pos;
    free(d->cost);
    free(d->align);
    d->cost = cost;
    d->align = align;
    d->dig[d->ndig++] = *g;
    return 1;
}

typedef struct keyed {
    uint64_t code;
    int32_t idx;
} keyed;

/* Sorts key[0..n) by code, equal codes keeping their order (tmp: room for
 * n more): a least-significant-byte-first radix sort, each pass stable, the
 * passes only over the bytes some code sets.  close_digit fills key in
 * ascending idx, so the result is the order of (code, idx), the same on
 * every platform and as fast as the merge needs (a comparison sort of the
 * tables was a third of the remat planner's time). */
enum { RADIX_BITS = 8, RADIX_BUCKETS = 1 << RADIX_BITS };

static void sort_by_code(keyed *key, keyed *tmp, int n)
{
    uint64_t any = 0;
    for (int i = 0; i < n; i++) any |= key[i].code;
    for (int shift = 0; shift < 64 && (any >> shift) != 0; shift += RADIX_BITS) {
        int start[RADIX_BUCKETS + 1] = {0};
        for (int i = 0; i < n; i++) start[((key[i].code >> shift) & (RADIX_BUCKETS - 1)) + 1]++;
        for (int b = 0; b < RADIX_BUCKETS; b++) start[b + 1] += start[b];
        for (int i = 0; i < n; i++) tmp[start[(key[i].code >> shift) & (RADIX_BUCKETS - 1)]++] = key[i];
        memcpy(key, tmp, (size_t)n * sizeof *key);
    }
}

/* Close the digit at position pos: drop its bits, merge equal codes. */
static int close_digit(dp *d, int pos)
{
    const table *old = &d->t[d->nt - 1];
    int n = old->n;
    keyed *key = pg_xmalloc((2 * (size_t)n + 1) * sizeof *key);   /* and the sort's room */
    int live = 0;
    uint64_t low = ((uint64_t)1 << (DIGIT_BITS * pos)) - 1;
    for (int i = 0; i < n; i++) {
        if (isinf(d->cost[i])) continue;
        uint64_t c = old->code[i];
        key[live].code = (c & low) | ((c >> (DIGIT_BITS * (pos + 1))) << (DIGIT_BITS * pos));
        key[live++].idx = i;
    }
    sort_by_code(key, key + live, live);
    int ok = d->stored + live <= DP_MAX_STORED;
    if (ok) {
        table *t = push_table(d, live);
        double *cost = pg_xmalloc(((size_t)live + 1) * sizeof *cost);
        int *align = pg_xmalloc(((size_t)live + 1) * sizeof *align);
        for (int a = 0; a < live;) {
            int best = key[a].idx, b = a + 1;
            for (; b < live && key[b].code == key[a].code; b++)
                if (better(d->cost[key[b].idx], d->align[key[b].idx], d->cost[best], d->align[best]))
                    best = key[b].idx;
            int j = t->n++;
            t->code[j] = key[a].code;
            t->back[j] = best;
            cost[j] = d->cost[best];
            align[j] = d->align[best];
            a = b;
        }
        free(d->cost);
        free(d->align);
        d->cost = cost;
        d->align = align;
        memmove(&d->dig[pos], &d->dig[pos + 1], (size_t)(d->ndig - pos - 1) * sizeof *d->dig);
        d->ndig--;
    }
    free(key);
    return ok;
}

/* Drop the states that free less than deficit bytes at this op. */
static void check_row(dp *d, double deficit)
{
    const table *t = &d->t[d->nt - 1];
    for (int i = 0; i < t->n; i++) {
        if (isinf(d->cost[i])) continue;
        double freed = 0;
        for (int g = 0; g < d->ndig; g++) freed += d->dig[g].freed[(t->code[i] >> (DIGIT_BITS * g)) & DIGIT_MASK];
        if (freed < deficit) d->cost[i] = INFINITY;
    }
}

/* First and last op over budget in [from, to) (-1 if none). */
static void over_span(const double *over, int from, int to, int *first, int *last)
{
    *first = *last = -1;
    for (int k = from; k < to; k++)
        if (over[k] > 0) {
            if (*first < 0) *first = k;
            *last = k;
        }
}

static int col_aligned(const rm_ilp *z, const plan_choice *c, int col)
{
    return col > 0 && rm_col_aligned(z, c, col);
}

/* The digit of pair p's window win (forward: F to B, its options
 * plan_fwd; backward: B to W, plan_bwd), for the options with a column. */
static void window_digit(const rm_ilp *z, const plan_choice *c, const double *over, const double *weight, int p,
                         int win, digit *g)
{
    const rm_model *md = z->md;
    const rm_stage *sc = &md->st[p / md->m];
    memset(g, 0, sizeof *g);
    g->pair = p;
    g->win = win;
    if (win == WIN_FWD) {
        over_span(over, md->idF[p], md->idB[p], &g->first, &g->last);
        int col[3] = {0, z->col_full[p], z->col_sel[p]};   /* indexed by plan_fwd */
        for (int v = 0; v < 3; v++) {
            g->ok[v] = v == PLAN_FWD_KEEP || col[v] > 0;
            if (!g->ok[v]) continue;
            g->freed[v] = sc->act_b - sc->f_alloc[v];
            g->cost[v] = sc->r_s[v] * (weight ? weight[md->idB[p]] : 1.0);
            g->aligned[v] = col_aligned(z, c, col[v]);
        }
    } else {
        over_span(over, md->idB[p] + 1, md->idW[p], &g->first, &g->last);
        g->ok[PLAN_BWD_KEEP] = g->ok[PLAN_BWD_RECOMPUTE] = 1;
        g->freed[PLAN_BWD_RECOMPUTE] = sc->after_b[PLAN_BWD_KEEP] - sc->after_b[PLAN_BWD_RECOMPUTE];
        g->cost[PLAN_BWD_RECOMPUTE] = sc->rw_s * (weight ? weight[md->idW[p]] : 1.0);
        g->aligned[PLAN_BWD_RECOMPUTE] = col_aligned(z, c, z->col_bwd[p]);
    }
}

static void dp_free(dp *d)
{
    for (int i = 0; i < d->nt; i++) {
        free(d->t[i].code);
        free(d->t[i].back);
    }
    free(d->t);
    free(d->cost);
    free(d->align);
    free(d->dig);
}

/* Close every open digit whose window ends (in the sweep's direction) at
 * op k: highest position first, so that positions below stay valid. */
static int close_done(dp *d, int k, int dir)
{
    for (int g = d->ndig - 1; g >= 0; g--)
        if ((dir > 0 ? d->dig[g].last : d->dig[g].first) == k && !close_digit(d, g)) return 0;
    return 1;
}

/* Least cost over the live states. */
static double min_cost(const dp *d)
{
    const table *t = &d->t[d->nt - 1];
    double best = INFINITY;
    for (int i = 0; i < t->n; i++)
        if (d->cost[i] < best) best = d->cost[i];
    return best;
}

/* The windows of rank r that have columns, as digits. */
static digit *rank_digits(const rm_ilp *z, const plan_choice *c, const double *over, const double *weight, int r,
                          int *n)
{
    const rm_model *md = z->md;
    digit *w = pg_xmalloc(((size_t)2 * (md->base[r + 1] - md->base[r]) + 1) * sizeof *w);
    *n = 0;
    for (int k = md->base[r]; k < md->base[r + 1]; k++) {
        sched_op o = md->op[k];
        int p = rm_pair(md, o.stage, o.mb);
        if (o.kind == OP_F && (z->col_full[p] || z->col_sel[p])) window_digit(z, c, over, weight, p, WIN_FWD, &w[(*n)++]);
        if ((o.kind == OP_B || o.kind == OP_BW) && z->col_bwd[p]) window_digit(z, c, over, weight, p, WIN_BWD, &w[(*n)++]);
    }
    return w;
}

int rm_cover_dp(const rm_ilp *z, const double *over, int r, int dir, const double *weight, plan_choice *c,
                double *cost_out, double *running)
{
    const rm_model *md = z->md;
    int nw;
    digit *w = rank_digits(z, c, over, weight, r, &nw);
    dp d;
    memset(&d, 0, sizeof d);
    d.dig = pg_xmalloc((DP_MAX_DIGITS + 1) * sizeof *d.dig);
    table *t0 = push_table(&d, 1);
    t0->code[0] = 0;
    t0->back[0] = -1;
    t0->n = 1;
    d.cost = pg_xcalloc(2, sizeof *d.cost);
    d.align = pg_xcalloc(2, sizeof *d.align);
    int ok = 1;
    int k0 = dir > 0 ? md->base[r] : md->base[r + 1] - 1, k1 = dir > 0 ? md->base[r + 1] : md->base[r] - 1;
    for (int k = k0; k != k1 && ok; k += dir) {
        if (running) running[k - md->base[r]] = 0;
        if (!(over[k] > 0)) continue;
        /* Windows are listed in order of their F (or B); a window opens at its
         * first row in the sweep's direction. */
        for (int i = 0; i < nw && ok; i++)
            if ((dir > 0 ? w[i].first : w[i].last) == k) ok = open_digit(&d, &w[i]);
        if (!ok) break;
        check_row(&d, over[k]);
        if (running) running[k - md->base[r]] = min_cost(&d);
        ok = close_done(&d, k, dir);
    }
    int solved = 0;
    if (ok && d.ndig == 0) {
        const table *t = &d.t[d.nt - 1];
        int best = -1;
        for (int i = 0; i < t->n; i++)
            if (!isinf(d.cost[i]) && (best < 0 || better(d.cost[i], d.align[i], d.cost[best], d.align[best])))
                best = i;
        if (best >= 0) {
            solved = 1;
            *cost_out = d.cost[best];
            for (int e = d.nt - 1, i = best; e > 0; i = d.t[e].back[i], e--) {
                const table *s = &d.t[e];
                if (s->open_pos < 0) continue;
                int v = (int)((s->code[i] >> (DIGIT_BITS * s->open_pos)) & DIGIT_MASK);
                if (s->open_win == WIN_FWD) c[s->open_pair].fwd = (plan_fwd)v;
                else c[s->open_pair].bwd = (plan_bwd)v;
            }
        } else {
            solved = -1;   /* no choice fits: check_possible rules this out */
        }
    }
    free(w);
    dp_free(&d);
    return solved;
}

/* The covers' tie-break (remat_internal.h; here, below remat_cover.c, which
 * calls this file, so that no call goes back up).  rm_cover_ranks goes by
 * rank, so the stage before is decided already. */
int rm_col_aligned(const rm_ilp *z, const plan_choice *c, int col)
{
    const rm_model *md = z->md;
    int p = z->col_pair[col];
    int stage = p / md->m, mb = p % md->m;
    if (stage == 0 || md->s->stage_rank[stage - 1] >= md->s->stage_rank[stage]) return 0.0;
    plan_choice prev = c[rm_pair(md, stage - 1, mb)];
    if (col == z->col_bwd[p]) return prev.bwd == PLAN_BWD_RECOMPUTE;
    if (col == z->col_sel[p]) return prev.fwd != PLAN_FWD_KEEP;
    return prev.fwd == PLAN_FWD_FULL;
}
