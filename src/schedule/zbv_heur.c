/* zbv_heur.c: see zbv_heur.h.
 *
 * Passes of rank i are indexed q = 2 * cat + chunk with cat 0 forward, 1
 * backward (input gradient), 2 weight gradient, and chunk in execution
 * order: the first backward chunk (q = 2) is the one of stage 2pp-1-i, whose
 * gradient flows from rank 0 up, the second (q = 3) that of stage i.
 * Forwards: q = 0 stage i (flows up), q = 1 stage 2pp-1-i (flows down).
 * A violated precondition of the construction (a pass whose input is not
 * placed, a count or memory overflow) ends the run as infeasible.
 */
#include "schedule/zbv_heur.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ZH_KINDS 6
/* Reruns with the previous bubbles as allowances, at most (the paper's
 * recursion stops when the largest bubble stops shrinking; this bounds it). */
#define ZH_MAX_RERUNS 32

typedef struct zh {
    int n, m;
    double cost[3], c;        /* F, B, W per chunk op; message latency */
    int mem[3], max_mem;      /* chunk units */
    int fill_f, fill_b;
    const double *approved;   /* [n] or NULL */
    double max_approved;
    /* run state */
    double *end;              /* [ZH_KINDS][n][m], < 0 while not placed */
    int *count;               /* [n][ZH_KINDS] */
    double *cur, *bubble;     /* [n] */
    double max_bubble;
    int *memc;                /* [n] */
    int *wq, *wq_head, *wq_tail;  /* [n][2m] pending W chunks (the microbatch is the chunk's W count) */
    int *order, *norder;      /* [n][6m] codes q * m + mb */
    int bad;
} zh;

static size_t id(const zh *z, int q, int i, int j)
{
    return ((size_t)q * z->n + i) * z->m + j;
}

static int *cnt(zh *z, int i)
{
    return z->count + (size_t)i * ZH_KINDS;
}

static double allowance(const zh *z, int i)
{
    double a = z->max_bubble;
    if (z->approved) {
        double b = z->max_approved - z->approved[i];
        if (b > a) a = b;
    } else if (a < 0.0) {
        a = 0.0;
    }
    return a;
}

static void put(zh *z, int cat, int chunk, int i)
{
    if (z->bad) return;
    int q = 2 * cat + chunk, j = cnt(z, i)[q];
    if (j >= z->m || z->memc[i] + z->mem[cat] > z->max_mem) {
        z->bad = 1;
        return;
    }
    if (cat < 2 && q > 0 && z->end[id(z, q - 1, i, j)] < 0.0) z->bad = 1;
    if (cat == 2 && z->end[id(z, 2 + chunk, i, j)] < 0.0) z->bad = 1;
    double no_bubble = z->cur[i] + z->cost[cat], e = no_bubble;
    int from = -1;
    if (cat < 2 && chunk == 1 && i < z->n - 1) from = i + 1;
    if (cat < 2 && chunk == 0 && i > 0) from = i - 1;
    if (from >= 0) {
        double d = z->end[id(z, q, from, j)];
        if (d < 0.0) z->bad = 1;
        if (d + z->c + z->cost[cat] > e) e = d + z->c + z->cost[cat];
    }
    if (z->bad) return;
    if (cnt(z, i)[0] > 0) {
        z->bubble[i] += e - no_bubble;
        if (z->bubble[i] > z->max_bubble) z->max_bubble = z->bubble[i];
    }
    z->end[id(z, q, i, j)] = e;
    z->cur[i] = e;
    z->memc[i] += z->mem[cat];
    z->order[(size_t)i * ZH_KINDS * z->m + z->norder[i]++] = q * z->m + j;
    if (cat == 1) z->wq[(size_t)i * 2 * z->m + z->wq_tail[i]++] = chunk;
    cnt(z, i)[q]++;
}

static int pending(const zh *z, int i)
{
    return z->wq_tail[i] > z->wq_head[i];
}

static void put_w(zh *z, int i)
{
    if (!pending(z, i)) {
        z->bad = 1;
        return;
    }
    put(z, 2, z->wq[(size_t)i * 2 * z->m + z->wq_head[i]++], i);
}

/* Before a pass on rank i that waits for end[dep] (dep < 0: nothing): fill
 * the wait with W's that fit, and put one more when the wait exceeds the
 * allowance and `fill` says so. */
static void fill_wait(zh *z, int i, long dep, int fill)
{
    if (dep < 0) return;
    while (!z->bad && pending(z, i) && z->end[dep] + z->c >= z->cur[i] + z->cost[2]) put_w(z, i);
    if (!z->bad && pending(z, i) && z->end[dep] + z->c - z->cur[i] > allowance(z, i) - z->bubble[i] && fill)
        put_w(z, i);
}

static void warm_up(zh *z)
{
    int n = z->n, m = z->m;
    for (int i = 0; i < n; i++) put(z, 0, 0, i);
    for (int i = n - 1; i >= 0 && !z->bad; i--) {
        if (i < n - 1) {
            double arrive = z->end[id(z, 1, i + 1, 0)] + z->c;
            while (!z->bad && z->memc[i] + z->mem[0] * (2 + 2 * i) <= z->max_mem &&
                   z->cur[i] + z->cost[0] <= arrive && cnt(z, i)[0] < m)
                for (int j = 0; j <= i; j++) put(z, 0, 0, j);
        }
        put(z, 0, 1, i);
    }
    int chunk = 0;
    for (int i = 1; i < n && !z->bad; i++) {
        /* each sweep puts at least one pass or the loop condition fails */
        for (int guard = 0; guard < 2 * m * n + 2 && !z->bad; guard++) {
            int *a = cnt(z, i), *b = cnt(z, i - 1);
            if (!(a[0] + a[1] < b[0] + b[1] || (a[1] <= b[1] && b[1] < m))) break;
            for (int j = n - 1; j >= i; j--)
                if (cnt(z, j)[chunk] < m) put(z, 0, chunk, j);
            chunk = 1 - chunk;
        }
    }
}

static void round_backward(zh *z, int *ranks, int *chunks)
{
    int n = z->n, nb = 0;
    /* second-chunk backwards from the last rank down, then first-chunk ones up */
    for (int i = n - 1; i >= 0; i--) {
        int *a = cnt(z, i);
        int second = 0;
        if (a[3] < a[2]) {
            if (i == n - 1) second = 1;
            else second = z->end[id(z, 3, i + 1, a[3])] >= 0.0 || a[2] >= z->m;
        }
        if (second) {
            ranks[nb] = i;
            chunks[nb++] = 1;
        }
    }
    for (int i = 0; i < n; i++) {
        int *a = cnt(z, i);
        int second = 0;
        if (a[3] < a[2]) {
            if (i == n - 1) second = 1;
            else second = z->end[id(z, 3, i + 1, a[3])] >= 0.0 || a[2] >= z->m;
        }
        if (!second) {
            ranks[nb] = i;
            chunks[nb++] = 0;
        }
    }
    for (int k = 0; k < nb && !z->bad; k++) {
        int i = ranks[k], ch = chunks[k];
        long dep = -1;
        if (ch == 1 && i < n - 1) dep = (long)id(z, 3, i + 1, cnt(z, i)[3]);
        if (ch == 0 && i > 0) dep = (long)id(z, 2, i - 1, cnt(z, i)[2]);
        if (dep >= 0 && z->end[dep] < 0.0) dep = -1;  /* not placed: put() rejects the run */
        fill_wait(z, i, dep, ch == 1 || z->fill_b);
        put(z, 1, ch, i);
    }
}

static void round_forward(zh *z)
{
    int n = z->n, m = z->m;
    for (int i = 0; i < n && !z->bad; i++) {
        int *a = cnt(z, i), item = -1;
        if (a[1] >= m) continue;
        if (a[1] >= a[0]) item = 0;
        else if (i == n - 1) item = 1;
        else if (z->end[id(z, 1, i + 1, a[1])] >= 0.0) item = 1;
        else if (a[0] < m && (i == 0 || z->end[id(z, 0, i - 1, a[0])] >= 0.0)) item = 0;
        if (item < 0) continue;
        while (!z->bad && z->memc[i] + z->mem[0] > z->max_mem) put_w(z, i);
        long dep = -1;
        if (item == 0 && i > 0) dep = (long)id(z, 0, i - 1, a[0]);
        if (item == 1 && i < n - 1) dep = (long)id(z, 1, i + 1, a[1]);
        if (dep >= 0 && z->end[dep] < 0.0) dep = -1;
        fill_wait(z, i, dep, z->fill_f);
        put(z, 0, item, i);
    }
}

static void reset(zh *z)
{
    size_t n = (size_t)z->n, m = (size_t)z->m;
    for (size_t k = 0; k < ZH_KINDS * n * m; k++) z->end[k] = -1.0;
    memset(z->count, 0, n * ZH_KINDS * sizeof *z->count);
    memset(z->cur, 0, n * sizeof *z->cur);
    memset(z->bubble, 0, n * sizeof *z->bubble);
    memset(z->memc, 0, n * sizeof *z->memc);
    memset(z->wq_head, 0, n * sizeof *z->wq_head);
    memset(z->wq_tail, 0, n * sizeof *z->wq_tail);
    memset(z->norder, 0, n * sizeof *z->norder);
    z->max_bubble = 0.0;
    z->bad = 0;
}

/* One run; returns its largest per-rank bubble or INFINITY if infeasible. */
static double run(zh *z)
{
    reset(z);
    int *ranks = pg_xmalloc((size_t)z->n * sizeof(int)), *chunks = pg_xmalloc((size_t)z->n * sizeof(int));
    warm_up(z);
    for (int k = 0; k < 2 * z->m && !z->bad; k++) {
        for (int i = 0; i < z->n && !z->bad; i++)
            while (!z->bad && z->memc[i] + z->mem[1] > z->max_mem) put_w(z, i);
        round_backward(z, ranks, chunks);
        round_forward(z);
    }
    for (int i = 0; i < z->n && !z->bad; i++)
        while (!z->bad && pending(z, i)) put_w(z, i);
    free(ranks);
    free(chunks);
    if (z->bad) return INFINITY;
    for (int i = 0; i < z->n; i++)
        if (z->norder[i] != ZH_KINDS * z->m) return INFINITY;
    return z->max_bubble;
}

static void emit(const zh *z, const int *order, schedule *out)
{
    int n = z->n;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < ZH_KINDS * z->m; k++) {
            int code = order[(size_t)i * ZH_KINDS * z->m + k], q = code / z->m, j = code % z->m;
            static const op_kind kind[ZH_KINDS] = {OP_F, OP_F, OP_B, OP_B, OP_W, OP_W};
            int stage = (q == 0 || q == 3 || q == 5) ? i : 2 * n - 1 - i;
            sched_push(out, i, kind[q], stage, j);
        }
}

int zbv_heur_build(const sched_params *p, double limit_stages, schedule *out)
{
    zh z;
    memset(&z, 0, sizeof z);
    z.n = p->pp;
    z.m = p->m;
    z.cost[0] = p->t_f / 2;
    z.cost[1] = p->t_b / 2;
    z.cost[2] = p->t_w / 2;
    z.c = p->t_comm;
    z.mem[0] = 1;
    z.mem[1] = 0;
    z.mem[2] = -1;
    z.max_mem = (int)floor(2.0 * limit_stages + 1e-9);
    size_t n = (size_t)z.n, m = (size_t)z.m;
    z.end = pg_xmalloc(ZH_KINDS * n * m * sizeof *z.end);
    z.count = pg_xmalloc(n * ZH_KINDS * sizeof *z.count);
    z.cur = pg_xmalloc(n * sizeof *z.cur);
    z.bubble = pg_xmalloc(n * sizeof *z.bubble);
    z.memc = pg_xmalloc(n * sizeof *z.memc);
    z.wq = pg_xmalloc(n * 2 * m * sizeof *z.wq);
    z.wq_head = pg_xmalloc(n * sizeof(int));
    z.wq_tail = pg_xmalloc(n * sizeof(int));
    z.order = pg_xmalloc(n * ZH_KINDS * m * sizeof(int));
    z.norder = pg_xmalloc(n * sizeof(int));
    int *best = pg_xmalloc(n * ZH_KINDS * m * sizeof(int));
    double *approved = pg_xmalloc(n * sizeof(double));
    double best_bubble = INFINITY;
    for (int fb = 0; fb < 2; fb++)
        for (int ff = 0; ff < 2; ff++) {
            z.fill_b = !fb;
            z.fill_f = !ff;
            z.approved = NULL;
            double prev = INFINITY;
            for (int rerun = 0; rerun < ZH_MAX_RERUNS; rerun++) {
                double b = run(&z);
                if (!(b < prev)) break;  /* the paper keeps the run only if it improved */
                if (b < best_bubble) {
                    best_bubble = b;
                    memcpy(best, z.order, n * ZH_KINDS * m * sizeof(int));
                }
                memcpy(approved, z.bubble, n * sizeof(double));
                z.approved = approved;
                z.max_approved = b;
                prev = b;
            }
        }
    int rc = -1;
    if (best_bubble < INFINITY) {
        emit(&z, best, out);
        rc = 0;
    }
    free(z.end);
    free(z.count);
    free(z.cur);
    free(z.bubble);
    free(z.memc);
    free(z.wq);
    free(z.wq_head);
    free(z.wq_tail);
    free(z.order);
    free(z.norder);
    free(best);
    free(approved);
    return rc;
}
