/* bench_schedules.c: wall time to generate every schedule at a large size.
 *
 * Usage: bench/bench_schedules [PP [MICROBATCHES [F B W COMM]]]
 * (default 64 1024 1 1.1 0.9 0.05)
 * Prints one line per generator: name, seconds to generate (validation and
 * the deadlock replay of sched_generate included), ops, ideal makespan. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "schedule/schedule.h"

#define BENCH_DEFAULT_PP 64
#define BENCH_DEFAULT_M 1024
#define BENCH_W_FRACTION 0.4324

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    sched_params p = {0};
    p.pp = argc > 1 ? atoi(argv[1]) : BENCH_DEFAULT_PP;
    p.m = argc > 2 ? atoi(argv[2]) : BENCH_DEFAULT_M;
    p.chunks = 2;
    p.t_f = argc > 3 ? atof(argv[3]) : 1.0;
    p.t_b = argc > 4 ? atof(argv[4]) : 1.1;
    p.t_w = argc > 5 ? atof(argv[5]) : 0.9;
    p.t_comm = argc > 6 ? atof(argv[6]) : 0.05;
    p.w_fraction = BENCH_W_FRACTION;
    int fails = 0;
    for (const sched_generator *g = sched_generators(); g->name; g++) {
        schedule s;
        pg_status st;
        pg_status_clear(&st);
        double t0 = now_s();
        int rc = sched_generate(g->name, &p, &s, &st);
        double dt = now_s() - t0;
        if (rc) {
            printf("%-12s failed (%d): %s\n", g->name, rc, st.msg);
            fails++;
            continue;
        }
        sched_times t;
        double mk = -1.0;
        if (sched_eval_ideal(&s, p.t_f, p.t_b, p.t_w, p.t_comm, &t, &st) == 0) {
            mk = t.makespan;
            sched_times_free(&s, &t);
        }
        printf("%-12s %8.3f s  %9d ops  makespan %.2f\n", g->name, dt, sched_total_ops(&s), mk);
        sched_free(&s);
    }
    return fails ? EXIT_FAILURE : EXIT_SUCCESS;
}
