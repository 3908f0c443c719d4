/* bound_machine.c: the per-rank one-machine relaxation.
 *
 * Derivation.  Take any schedule and one rank r.  Each op x of r starts no
 * earlier than its head h(x) (its chain predecessors must run first, each
 * for its full time, with the latency of every cross-rank edge), and the
 * schedule goes on for at least the tail q(x) after x ends (its chain
 * successors).  So the makespan is at least max over x of (end(x) + q(x)),
 * where the ops of r run one at a time after their heads: a schedule of the
 * classic one-machine problem 1 | r_j, q_j | max(C_j + q_j).  Allowing
 * preemption only lowers its optimum, and the preemptive optimum is given
 * exactly by Jackson's rule (at every moment run the released op with the
 * largest tail; Horn 1974, Carlier 1982).  Memory is ignored here.
 *
 * The m copies of one (stage, kind) have the same head and tail, so they are
 * merged into one job of m times the work: with equal heads and tails the
 * last copy to finish is the only one that matters, and the merged job
 * finishes exactly when the last copy would under Jackson's rule.
 *
 * With remat the recomputations only add work and lengthen chains, so the
 * bound without them stays valid.  At K >= m (or no limit) this is the
 * unconstrained bound: for one wave it gives (p-1)(F+c) + m(F+B+W) on the
 * last rank, and the fused (m+p-1)(F+B+W) + 2(p-1)c that GPipe reaches.
 */
#include <float.h>
#include <stdlib.h>

#include "opt/bound_internal.h"
#include "util/error.h"

typedef struct mjob {
    double release, work, tail;
} mjob;

/* Preemptive Jackson's rule over n jobs; returns max(C_j + q_j). */
static double jackson(mjob *j, int n)
{
    double t = DBL_MAX, best = 0.0;
    for (int i = 0; i < n; i++)
        if (j[i].release < t)
            t = j[i].release;
    int left = 0;
    for (int i = 0; i < n; i++)
        if (j[i].work > 0)
            left++;
        else if (j[i].release + j[i].tail > best)
            best = j[i].release + j[i].tail;   /* an empty job still ends after its head */
    while (left > 0) {
        int pick = -1;
        double next = DBL_MAX;
        for (int i = 0; i < n; i++) {
            if (j[i].work <= 0)
                continue;
            if (j[i].release <= t) {
                if (pick < 0 || j[i].tail > j[pick].tail)
                    pick = i;
            } else if (j[i].release < next) {
                next = j[i].release;
            }
        }
        if (pick < 0) {   /* idle until the next release */
            t = next;
            continue;
        }
        double run = j[pick].work;
        if (next < t + run && next - t < run) {   /* preempted by a release that may carry a larger tail */
            /* (both tests: next < t + run can hold in floating point while
             * next - t >= run, which left the job at work <= 0 but still
             * counted in left, and the loop waiting forever at DBL_MAX) */
            run = next - t;
            j[pick].work -= run;
            t = next;
            continue;
        }
        t += run;
        j[pick].work = 0;
        left--;
        if (t + j[pick].tail > best)
            best = t + j[pick].tail;
    }
    return best;
}

/* Rank r's merged jobs; with_tails 0 sets every tail to 0 (then Jackson's
 * rule gives the earliest end of them all); one weight-gradient op of stage
 * skip_w_stage is left out (-1: none). */
static double rank_jackson(const bound_input *in, const bound_chain *c, int r, int with_tails, int skip_w_stage)
{
    mjob *jobs = pg_xcalloc((size_t)in->nstages * 3, sizeof *jobs);
    int n = 0;
    for (int s = 0; s < in->nstages; s++) {
        if (in->stage_rank[s] != r)
            continue;
        /* the fused BW is the weight-gradient op when the backward is fused */
        int mb = in->m, mw = in->m;
        if (s == skip_w_stage)
            *(in->split ? &mw : &mb) -= 1;
        jobs[n++] = (mjob){c->head_f[s], in->m * in->f[s], with_tails ? c->tail_f[s] : 0.0};
        jobs[n++] = (mjob){c->head_b[s], mb * c->bk[s], with_tails ? c->tail_b[s] : 0.0};
        if (in->split)
            jobs[n++] = (mjob){c->head_w[s], mw * in->w[s], with_tails ? c->tail_w[s] : 0.0};
    }
    double t = jackson(jobs, n);
    free(jobs);
    return t;
}

double bound_machine_rank(const bound_input *in, const bound_chain *c, int r)
{
    return rank_jackson(in, c, r, 1, -1);
}

double bound_rank_ops_done(const bound_input *in, const bound_chain *c, int r, int skip_w_stage)
{
    return rank_jackson(in, c, r, 0, skip_w_stage);
}
