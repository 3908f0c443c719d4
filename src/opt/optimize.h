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
 *     peak, then lower index), -1 when none fits.
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

#endif
