/* bound_dp.c: a lower bound on the end of the data-parallel gradient
 * all-reduce (bound.h, bound_dp_input).
 *
 * Derivation, for one rank r whose buckets take a_s = bytes_s / n_s *
 * rank_s_per_byte[r] each (stage s cut into n_s buckets), its reducer
 * running them one after the other:
 *   - without overlap no bucket starts before the rank has run every op of
 *     its list, which is no earlier than C_r, the earliest end of all its
 *     ops from their heads (bound_rank_ops_done: the one-machine relaxation
 *     with no tails); then all its buckets follow:
 *         end_r >= C_r + sum_s bytes_s * rank_s_per_byte[r];
 *   - with overlap the rank's last op is a weight-gradient op X of some
 *     stage s (every F or B of a rank is followed on the same rank by its
 *     stage's W or BW), so every other op of the rank ends before X starts:
 *     start(X) >= C_r without one weight op of s.  X's compute runs in n_s
 *     equal pieces of at least its relaxed time d_s (w, or b + w fused less
 *     the collectives that follow the compute), bucket j
 *     is ready after piece j, and the buckets j..n_s-1 still run after it:
 *         end_r >= start(X) + max_j ((j + 1) d_s / n_s + (n_s - j) a_s),
 *     a maximum over j of a linear function, so at j = 0 or j = n_s - 1.
 *     Which stage's op is last is not known (a rank with several chunks),
 *     so the bound takes the least over the rank's stages.
 * Every time here is one the simulation can only exceed (ops take at least
 * their relaxed times, transfers at least their bytes over the route's
 * bandwidth in SimGrid's CM02 model with no TCP window), so the largest
 * end_r over the ranks never exceeds the simulated end of the last
 * reducer, which the optimizer step follows.
 */
#include <stdlib.h>

#include "opt/bound.h"
#include "opt/bound_internal.h"

/* The bound of rank r given that its last op is stage s's weight op. */
static double last_op_bound(const bound_input *in, const bound_chain *c, const bound_dp_input *dp, int r, int s)
{
    double start_s = bound_rank_ops_done(in, c, r, s);
    double d_s = in->split ? in->w[s] : in->b[s] + in->w[s] - (dp->stage_op_comm_s ? dp->stage_op_comm_s[s] : 0.0);
    int n = dp->stage_buckets[s] >= 1 ? dp->stage_buckets[s] : 1;
    double a_s = dp->stage_bytes[s] > 0 ? dp->stage_bytes[s] / n * dp->rank_s_per_byte[r] : 0.0;
    double first = d_s / n + n * a_s;      /* j = 0: every bucket after the first piece */
    double last = d_s + a_s;               /* j = n - 1: the last bucket after the whole op */
    return start_s + (first > last ? first : last);
}

double bound_dp_allreduce_end(const bound_input *in, const bound_dp_input *dp)
{
    if (in->pp < 1 || in->nstages < 1 || in->m < 1 || !dp->stage_bytes || !dp->stage_buckets || !dp->rank_s_per_byte)
        return 0.0;
    bound_chain c;
    bound_chain_build(in, &c);
    double best_s = 0.0;
    for (int r = 0; r < in->pp; r++) {
        double spb = dp->rank_s_per_byte[r];
        double total_bytes = 0.0;
        for (int s = 0; s < in->nstages; s++)
            if (in->stage_rank[s] == r && dp->stage_bytes[s] > 0)
                total_bytes += dp->stage_bytes[s];
        if (!(spb > 0) || !(total_bytes > 0))
            continue;
        double end_s;
        if (!dp->overlap) {
            end_s = bound_rank_ops_done(in, &c, r, -1) + total_bytes * spb;
        } else {
            end_s = -1.0;
            for (int s = 0; s < in->nstages; s++) {
                if (in->stage_rank[s] != r)
                    continue;
                double e = last_op_bound(in, &c, dp, r, s);
                if (end_s < 0 || e < end_s)
                    end_s = e;
            }
        }
        if (end_s > best_s)
            best_s = end_s;
    }
    bound_chain_free(&c);
    return best_s;
}
