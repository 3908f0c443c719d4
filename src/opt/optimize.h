/* optimize.h: the search space and the Pareto front of `pipegrid optimize`.
 *
 * Contract.  Pure functions (no simulation here: the CLI simulates every
 * candidate in a child process through the sweep machinery, and hands the
 * simulated numbers back):
 *   - opt_divisors: the pipeline depths of a job of G GPUs (every divisor);
 *   - opt_default_microbatches: m in {pp, 2pp, 4pp};
 *   - opt_pareto_front: the candidates that fit and that no other candidate
 *     that fits dominates (throughput at least as high and peak memory at
 *     most as high, one of them strictly), sorted by peak memory ascending
 *     (throughput then ascends too);
 *   - opt_best: the fitting candidate of highest throughput (ties: lower
 *     peak, then lower index), -1 when none fits;
 *   - opt_microbatches: the microbatch count of a fixed global batch at a
 *     data-parallel degree and micro batch size (0 when it does not divide);
 *   - opt_dominated_unsimulated: whether a candidate not simulated yet can be
 *     skipped because a simulated one dominates whatever it could achieve:
 *     its throughput can be at most ub_throughput (the samples of the global
 *     batch over the seed-000 lower bound of the pipeline makespan, which no
 *     iteration beats) and its peak memory at least lb_peak_bytes (its
 *     static memory: weights, gradients, optimizer state), so a fitting
 *     point that is faster than ub_throughput and needs no more than
 *     lb_peak_bytes beats it on both axes.  Sound for the front and the
 *     best alike: a skipped candidate could never be on either.
 * "Fits" is the simulation's verdict (run's exit code 0: completed and no
 * rank over its capacity).
 */
#ifndef PG_OPT_OPTIMIZE_H
#define PG_OPT_OPTIMIZE_H

typedef struct opt_point {
    double throughput;        /* samples per second of the whole job */
    double peak_bytes;        /* largest per-rank peak memory */
    int fits;                 /* simulated, completed, within capacity */
} opt_point;

/* Divisors of g in ascending order into out (room for at least g); returns
 * how many (0 for g < 1). */
int opt_divisors(int g, int *out);

/* The default microbatch counts for pp: out[0..2] = pp, 2pp, 4pp; returns 3. */
int opt_default_microbatches(int pp, int *out);

/* Indices of the front into front (room for n), sorted by peak ascending;
 * returns the front's size. */
int opt_pareto_front(const opt_point *pts, int n, int *front);

int opt_best(const opt_point *pts, int n);

/* global_batch / (dp x micro_batch_size) when that is a whole number >= 1,
 * else 0. */
int opt_microbatches(long global_batch, int dp, int micro_batch_size);

int opt_dominated_unsimulated(double ub_throughput, double lb_peak_bytes, const opt_point *simulated, int n);

/* Whether a fitting simulated point is strictly faster than ub_throughput:
 * the candidate can then never be the best (optimize's default pruning). */
int opt_slower_than_best(double ub_throughput, const opt_point *simulated, int n);

#endif
