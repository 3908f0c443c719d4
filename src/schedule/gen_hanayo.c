/* gen_hanayo.c: Hanayo (Liu et al., SC'23): wave placement (chunks waves,
 * stage s on rank s mod pp going down for even waves and back up for odd
 * ones), fused backward as in the paper, within 1F1B's activation memory
 * (pp stage activations, counted F until BW).
 *
 * Hanayo runs a 1F1B over the wave: a warm-up of forwards on each rank, a
 * steady phase alternating forward and backward, a drain of backwards.  The
 * warm-up depth is what decides its bubble.  On the wave a rank's first
 * chunk lives for the whole round trip of the microbatch while its later
 * chunks live briefly (the turn is local), so a warm-up sized by whole
 * microbatches (what the list scheduler's admission rule reserves, see
 * greedy_list.h) stops rank 0 long before its memory is really full: with
 * pp = 8, m = 32, F = B = W it idles and ends at 118 against 1F1B's 117.
 * We therefore let the warm-up run deeper: the list scheduler admits
 * forwards under admission limits from pp up to 2 pp stage units (steps of
 * one chunk), under every policy, and a candidate is kept only if its real
 * peak, F until BW along each rank's order, stays within pp.  The best
 * makespan wins (ties: span).  That gives 114 at the case above (1F1B 117),
 * and the warm-up/steady/drain shape comes out of the list scheduler: BW as
 * soon as one is ready in the steady phase, forwards while memory allows.
 *
 * Not done: Hanayo's hand-drawn multi-wave figure order itself; with unequal
 * F/B/W and latency the result can still trail 1F1B slightly (p = 8, m = 32,
 * F=1, B=1.1, W=0.9, c=0.05: 120.8 vs 120.4).
 */
#include <string.h>

#include "schedule/generators.h"
#include "schedule/greedy_list.h"
#include "schedule/vshape_common.h"

/* Admission limits tried go up to this multiple of the memory budget. */
#define HANAYO_MAX_ADMIT_FACTOR 2.0
/* Warm-up headroom values tried (greedy_list.h: gl_policy.headroom). */
#define HANAYO_MAX_HEADROOM 2
/* Greedy work allowed per call, in op decisions x ranks scanned: the
 * largest instances try a few runs, small ones all of them. */
#define HANAYO_WORK_BUDGET 4e7
/* Policies (gl_all_policies bit index) that won on the reference cases
 * (pp 4 and 8, m 2pp to 4pp, balanced and unbalanced costs), tried first. */
static const int hanayo_preferred[] = {36, 38, 5, 1};

int sched_gen_hanayo(const sched_params *p, schedule *out, pg_status *st)
{
    int v = p->chunks;
    vs_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.name = "hanayo";
    spec.v = v;
    spec.place = sched_place_wave;
    spec.split = 0;
    spec.mem[OP_F] = 1.0 / v;
    spec.mem[OP_BW] = -1.0 / v;
    spec.mem[OP_W] = -1.0 / v;
    spec.limit = (double)p->pp;
    spec.by_makespan = 1;

    gl_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.split = 0;
    vs_durations(p, v, pb.dur_s);
    pb.t_comm_s = p->t_comm;
    memcpy(pb.mem, spec.mem, sizeof pb.mem);

    gl_policy all[GL_ALL_POLICIES];
    int nall = gl_all_policies(all), order[GL_ALL_POLICIES], n = 0;
    char used[GL_ALL_POLICIES] = {0};
    for (size_t i = 0; i < sizeof hanayo_preferred / sizeof hanayo_preferred[0]; i++) {
        order[n++] = hanayo_preferred[i];
        used[hanayo_preferred[i]] = 1;
    }
    for (int i = 0; i < nall; i++)
        if (!used[i]) order[n++] = i;

    double per_run = (double)p->m * v * p->pp * 2 * (p->pp + v);
    long runs_left = (long)(HANAYO_WORK_BUDGET / per_run);
    if (runs_left < 1) runs_left = 1;
    int steps = (int)((HANAYO_MAX_ADMIT_FACTOR - 1.0) * p->pp * v + 0.5);

    vs_best best;
    memset(&best, 0, sizeof best);
    for (int i = 0; i < n && runs_left > 0; i++)
        for (int hr = 0; hr <= HANAYO_MAX_HEADROOM && runs_left > 0; hr++)
            for (int k = 0; k <= steps && runs_left > 0; k++, runs_left--) {
                gl_policy pol = all[order[i]];
                pol.headroom = hr;
                pb.mem_limit = p->pp + (double)k / v;
                schedule cand;
                gl_result res;
                vs_empty(p, &spec, &cand);
                int rc = gl_run(&pb, &pol, &cand, &res, st);
                if (rc == PG_EXIT_INPUT) {
                    sched_free(&cand);
                    return rc;
                }
                if (rc == 0) vs_keep(p, &spec, &best, &cand);   /* drops peaks above pp */
                else sched_free(&cand);
            }
    pg_status_clear(st);
    return vs_finish(&best, out, st);
}
