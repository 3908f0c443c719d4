/* job_offload.c: offload=plan: the job's input to the offload planner and
 * its choice of plan (opt/offload_order.h), shared by `run` (through
 * job_build_plan) and `plan offload`.
 *
 * The planner makes two plans per candidate order (two copy models) and
 * asks this file which runs faster: each is simulated in a forked child
 * (SimGrid runs one simulation per process, and the parent still has its
 * own to run), which sends back its makespan, or infinity when it ran out
 * of memory or did not complete.  The child simulates exactly what `run`
 * would (same platform, tp/dp collectives, optimizer step), so the plan
 * `run` replays is the one that was judged.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

/* The simulated makespan of schedule s with plan p, or INFINITY. */
static double simulate_makespan(const job *j, const schedule *s, const memplan *p)
{
    job jj = *j;   /* shallow: the child reads it, with the candidate order */
    jj.sched = *s;
    job_parallel jpar;
    memset(&jpar, 0, sizeof jpar);
    timeline tl;
    timeline_init(&tl);
    sim_outcome out;
    pg_status st;
    pg_status_clear(&st);
    double makespan = INFINITY;
    if (job_simulate_plan(&jj, p, &jpar, &tl, &out, &st) == 0 && out.completed) {
        metrics_input mi = job_metrics_input(&jj, &tl, p);
        run_metrics m;
        metrics_compute(&mi, &m);
        if (m.noom == 0) makespan = m.makespan_s;
        metrics_free(&m);
    }
    timeline_free(&tl);
    job_parallel_free(&jpar);
    return makespan;
}

/* offload_judge_fn: simulate in a child; INFINITY if anything fails. */
static double judge_by_simulation(void *ctx, const schedule *s, const memplan *p)
{
    const job *j = ctx;
    int fd[2];
    if (pipe(fd) != 0) return INFINITY;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return INFINITY;
    }
    if (pid == 0) {
        close(fd[0]);
        double makespan = simulate_makespan(j, s, p);
        ssize_t n = write(fd[1], &makespan, sizeof makespan);
        _exit(n == (ssize_t)sizeof makespan ? 0 : 1);
    }
    close(fd[1]);
    double makespan = INFINITY;
    ssize_t n;
    do {
        n = read(fd[0], &makespan, sizeof makespan);
    } while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof makespan) makespan = INFINITY;
    close(fd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return makespan;
}

int job_plan_offload(job *j, memplan *out, offload_plan_result *res, offload_order_result *ores, pg_status *st)
{
    const experiment *e = &j->exp;
    sched_params params;
    int rc = job_sched_params(e, &params, st);
    if (rc != 0) return rc;
    /* recompute is the planner's ceiling (opt/offload_milp.h) */
    offload_order_input in = {
        .plan = {.exp = e, .sched = &j->sched, .wl = &j->wl, .plat = &j->plat, .rank_gpu = j->rank_gpu,
                 .allow_offload = 1, .use_milp = 1,
                 .allow_recompute = e->recompute == RECOMPUTE_NONE        ? 0
                                    : e->recompute == RECOMPUTE_SELECTIVE ? 1
                                                                          : 2},
        .params = &params, .search = e->offload_order_search, .judge = judge_by_simulation, .judge_ctx = j};
    schedule best;
    rc = offload_order_choose(&in, &best, out, res, ores, st);
    if (rc == 0) {   /* the chosen order replaces the schedule: every report shows what ran */
        sched_free(&j->sched);
        j->sched = best;
    }
    return rc;
}
