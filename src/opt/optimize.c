/* optimize.c: search space and Pareto front (optimize.h). */
#include "opt/optimize.h"

#include <limits.h>
#include <stdlib.h>

/* The default microbatch counts, as multiples of pp. */
static const int MICROBATCH_MULTIPLES[] = {1, 2, 4};
#define NMULTIPLES ((int)(sizeof MICROBATCH_MULTIPLES / sizeof MICROBATCH_MULTIPLES[0]))

int opt_divisors(int g, int *out)
{
    int n = 0;
    for (int d = 1; d <= g; d++)
        if (g % d == 0) out[n++] = d;
    return n;
}

int opt_default_microbatches(int pp, int *out)
{
    for (int i = 0; i < NMULTIPLES; i++)
        out[i] = MICROBATCH_MULTIPLES[i] * pp;
    return NMULTIPLES;
}

static int dominates(const opt_point *a, const opt_point *b)
{
    return a->throughput >= b->throughput && a->peak_bytes <= b->peak_bytes &&
           (a->throughput > b->throughput || a->peak_bytes < b->peak_bytes);
}

static const opt_point *sort_base;

static int by_peak(const void *x, const void *y)
{
    const opt_point *a = &sort_base[*(const int *)x], *b = &sort_base[*(const int *)y];
    if (a->peak_bytes != b->peak_bytes) return a->peak_bytes < b->peak_bytes ? -1 : 1;
    if (a->throughput != b->throughput) return a->throughput > b->throughput ? -1 : 1;
    return *(const int *)x - *(const int *)y;
}

int opt_pareto_front(const opt_point *pts, int n, int *front)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!pts[i].fits) continue;
        int dominated = 0;
        for (int j = 0; j < n && !dominated; j++) {
            if (j == i || !pts[j].fits) continue;
            /* equal points: keep the first only, so the front has no duplicates */
            if (dominates(&pts[j], &pts[i]) ||
                (j < i && pts[j].throughput == pts[i].throughput && pts[j].peak_bytes == pts[i].peak_bytes))
                dominated = 1;
        }
        if (!dominated) front[k++] = i;
    }
    sort_base = pts;
    qsort(front, (size_t)k, sizeof *front, by_peak);
    sort_base = NULL;
    return k;
}

int opt_best(const opt_point *pts, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (!pts[i].fits) continue;
        if (best < 0 || pts[i].throughput > pts[best].throughput ||
            (pts[i].throughput == pts[best].throughput && pts[i].peak_bytes < pts[best].peak_bytes))
            best = i;
    }
    return best;
}

int opt_microbatches(long global_batch, int dp, int micro_batch_size)
{
    long per_step = (long)dp * micro_batch_size;
    if (global_batch < 1 || per_step < 1 || global_batch % per_step != 0) return 0;
    long m = global_batch / per_step;
    return m > INT_MAX ? 0 : (int)m;
}

int opt_dominated_unsimulated(double ub_throughput, double lb_peak_bytes, const opt_point *simulated, int n)
{
    /* Strictly faster than the bound: a candidate that might tie is kept
     * (it could be an equal point of the front, or the best by peak). */
    for (int i = 0; i < n; i++)
        if (simulated[i].fits && simulated[i].throughput > ub_throughput && simulated[i].peak_bytes <= lb_peak_bytes)
            return 1;
    return 0;
}

int opt_slower_than_best(double ub_throughput, const opt_point *simulated, int n)
{
    for (int i = 0; i < n; i++)
        if (simulated[i].fits && simulated[i].throughput > ub_throughput) return 1;
    return 0;
}
