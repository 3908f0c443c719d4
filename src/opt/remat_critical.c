/* remat_critical.c: covers that keep recomputation off the critical path
 * (remat_internal.h, rm_weighted_covers).
 *
 * Why.  Any union of per-rank covers fits (memory is per rank), and the
 * least-cost covers are the cheapest in recompute seconds, but a second
 * recomputed on an op with slack costs nothing while one on the critical
 * path costs a second of makespan.  Which ops are critical depends on the
 * plan, so this iterates: compute every rank's cover minimising recompute
 * seconds weighted by how often each consumer op (the B or W that runs the
 * recompute) was critical in the plans so far, time the plan, mark its
 * critical ops, repeat.  On zero-bubble schedules at middle budgets, where
 * ranks other than the bottleneck have slack, it finds plans GLPK's search
 * does not reach from the plain covers.  Deterministic: a fixed number of
 * rounds, no randomness; the time limit only cuts it short.
 */
#include <stdlib.h>
#include <string.h>

#include "opt/remat_internal.h"

/* Weight of an op never seen critical: small but not zero, so that among
 * covers that avoid the critical ops the cheaper one still wins. */
#define OFF_PATH_WEIGHT 0.2
/* An op is critical when its end plus its tail is within this share of
 * the makespan. */
#define CRITICAL_TOL_REL 1e-9

/* tail[k]: the longest chain of durations (and cross-rank latencies) after
 * op k ends, under choices c: end[k] + tail[k] = makespan on a critical op. */
static void tails(const rm_model *md, const plan_choice *c, double *tail)
{
    for (int k = 0; k < md->total; k++) tail[k] = 0;
    for (int i = md->total - 1; i >= 0; i--) {
        int j = md->topo[i], r = md->rank[j];
        double after = rm_duration(md, c, j) + tail[j];
        if (j > md->base[r] && after > tail[j - 1]) tail[j - 1] = after;
        int p = md->pred[j];
        if (p >= 0) {
            double lag = after + (md->rank[p] != r ? md->comm_s : 0.0);
            if (lag > tail[p]) tail[p] = lag;
        }
    }
}

int rm_weighted_covers(const rm_ilp *z, int rounds, double deadline_s, double (*clock_s)(void), plan_choice *c)
{
    const rm_model *md = z->md;
    size_t n = (size_t)md->total + 1, np = (size_t)md->npairs + 1;
    double *weight = pg_xmalloc(n * sizeof *weight), *hits = pg_xcalloc(n, sizeof *hits);
    double *end = pg_xmalloc(n * sizeof *end), *tail = pg_xmalloc(n * sizeof *tail);
    plan_choice *cur = pg_xmalloc(np * sizeof *cur);
    double best = rm_times(md, c, NULL, end, NULL);
    int improved = 0;
    for (int k = 0; k < md->total; k++) weight[k] = 1.0;
    for (int round = 0; round < rounds && clock_s() < deadline_s; round++) {
        memcpy(cur, c, (size_t)md->npairs * sizeof *cur);
        int ok = 1;
        for (int r = 0; r < md->pp && ok; r++) {
            double cost;
            int sv = rm_cover_dp(z, z->over, r, 1, weight, cur, &cost, NULL);
            ok = sv >= 0;   /* 0: too many windows, the rank keeps c's choices */
        }
        if (!ok) break;
        double mk = rm_times(md, cur, NULL, end, NULL);
        if (mk < best * (1.0 - CRITICAL_TOL_REL)) {
            best = mk;
            memcpy(c, cur, (size_t)md->npairs * sizeof *c);
            improved = 1;
        }
        tails(md, cur, tail);
        double last = 0;
        for (int k = 0; k < md->total; k++)
            if (end[k] > last) last = end[k];
        for (int k = 0; k < md->total; k++) {
            hits[k] += end[k] + tail[k] >= last * (1.0 - CRITICAL_TOL_REL);
            weight[k] = OFF_PATH_WEIGHT + hits[k] / (round + 1);
        }
    }
    free(weight);
    free(hits);
    free(end);
    free(tail);
    free(cur);
    return improved;
}
