/* test_optpipe.c: the offload / recompute planner (opt/offload_milp.h) and
 * the optimize search helpers (opt/optimize.h).
 *
 * Plans are judged by the simulator: each test that simulates runs in its
 * own forked process (check's default), as SimGrid allows one run per
 * process.  Workload: uniform, 1F1B, fused backward, f = 1 s, b + w = 2 s,
 * M_B = 1 GiB, no parameters, on the ideal network (copies cost nothing
 * there, so offloading can hide everything a capacity asks for).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"
#include "model/experiment.h"
#include "model/platform.h"
#include "model/workload.h"
#include "opt/offload_milp.h"
#include "opt/offload_order.h"
#include "opt/optimize.h"
#include "schedule/plan.h"
#include "schedule/schedule.h"
#include "sim/metrics.h"
#include "sim/sim.h"
#include "testutil.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define PP 4
#define M 8
#define T_F 1.0
#define T_BW 2.0   /* b + w */

typedef struct fixture {
    config cfg;
    experiment e;
    workload wl;
    schedule s;
    platform_desc plat;
    int rank_gpu[PP];
} fixture;

static void setup_job(fixture *fx, double capacity_bytes)
{
    static const char yaml[] = "schedule: 1f1b\npp: 4\nmicrobatches: 8\nworkload: uniform\nuniform.f: 1\n"
                               "uniform.b: 1\nuniform.w: 1\nuniform.activation: 1GiB\nnetwork: ideal\n";
    pg_status st;
    pg_status_clear(&st);
    memset(fx, 0, sizeof *fx);
    config_init(&fx->cfg);
    ck_assert_int_eq(config_load_buffer(&fx->cfg, yaml, strlen(yaml), "test", &st), 0);
    ck_assert_int_eq(experiment_from_config(&fx->cfg, &fx->e, &st), 0);
    fx->e.memory_capacity_bytes = capacity_bytes;
    ck_assert_int_eq(workload_build(&fx->e, PP, &fx->wl, &st), 0);
    sched_params p = {.pp = PP, .m = M, .chunks = 1, .t_f = T_F, .t_b = 1, .t_w = 1};
    ck_assert_int_eq(sched_generate("1f1b", &p, &fx->s, &st), 0);
    ck_assert_int_eq(platform_make_ideal(PP, 0.0, 1e12, capacity_bytes, &fx->plat, &st), 0);
    for (int r = 0; r < PP; r++) fx->rank_gpu[r] = r;
}

static void free_job(fixture *fx)
{
    sched_free(&fx->s);
    workload_free(&fx->wl);
    platform_free(&fx->plat);
    config_free(&fx->cfg);
}

static int plan_job(fixture *fx, int allow_recompute, int use_milp, memplan *p, offload_plan_result *res)
{
    offload_plan_input in = {.exp = &fx->e, .sched = &fx->s, .wl = &fx->wl, .plat = &fx->plat,
                             .rank_gpu = fx->rank_gpu, .allow_offload = 1, .allow_recompute = allow_recompute,
                             .milp_time_limit_s = use_milp ? OFFLOAD_MILP_TIME_LIMIT_S : 0.0};
    pg_status st;
    pg_status_clear(&st);
    return offload_plan_build(&in, p, res, &st);
}

/* Simulate fx with plan p: makespan and the largest per-rank peak. */
static void simulate(fixture *fx, const memplan *p, double *makespan, double *peak, int *noom)
{
    timeline tl;
    timeline_init(&tl);
    sim_outcome out;
    pg_status st;
    pg_status_clear(&st);
    sim_input in = {.sched = &fx->s, .wl = &fx->wl, .plat = &fx->plat, .rank_gpu = fx->rank_gpu,
                    .zero_byte_messages = 1, .plan = p};
    ck_assert_int_eq(sim_run(&in, &tl, &out, &st), 0);
    run_metrics m;
    metrics_input mi = {.sched = &fx->s, .wl = &fx->wl, .plat = &fx->plat, .rank_gpu = fx->rank_gpu, .tl = &tl,
                        .bytes_per_param = fx->e.bytes_per_param,
                        .capacity_override_bytes = fx->e.memory_capacity_bytes,
                        .plan = plan_is_empty(p) ? NULL : p, .dp = 1};
    metrics_compute(&mi, &m);
    *makespan = m.makespan_s;
    *peak = 0;
    for (int r = 0; r < m.pp; r++)
        if (m.rank[r].peak_memory_bytes > *peak) *peak = m.rank[r].peak_memory_bytes;
    *noom = m.noom;
    metrics_free(&m);
    timeline_free(&tl);
}

/* 1F1B without anything: (m + p - 1)(f + b + w); rank 0 holds p activations. */
static double plain_makespan(void)
{
    return (M + PP - 1) * (T_F + T_BW);
}

START_TEST(plan_empty_when_everything_fits)
{
    fixture fx;
    setup_job(&fx, 80 * GIB);
    memplan p;
    offload_plan_result res;
    ck_assert_int_eq(plan_job(&fx, 2, 1, &p, &res), 0);
    ck_assert_int_eq(res.status, OFFLOAD_SOLVED_NOTHING);
    ck_assert(plan_is_empty(&p));
    plan_free(&p);
    free_job(&fx);
}
END_TEST

/* Rank 0 needs 4 GiB kept; at 2.5 GiB the plan must fit in the simulation
 * and, offloads being free on this network, beat full recomputation
 * ((m + p - 1)(2f + b + w)) while never beating the unconstrained 1F1B. */
START_TEST(plan_fits_in_simulation_and_beats_full_recompute)
{
    fixture fx;
    double cap = 2.5 * GIB;
    setup_job(&fx, cap);
    memplan p;
    offload_plan_result res;
    ck_assert_int_eq(plan_job(&fx, 2, 1, &p, &res), 0);
    ck_assert_int_ne(res.status, OFFLOAD_SOLVED_INFEASIBLE);
    ck_assert_int_ne(res.status, OFFLOAD_SOLVED_NOTHING);
    ck_assert_int_gt(p.noffload, 0);
    double makespan, peak;
    int noom;
    simulate(&fx, &p, &makespan, &peak, &noom);
    ck_assert_int_eq(noom, 0);
    ck_assert(peak <= cap);
    ck_assert(makespan < (M + PP - 1) * (2 * T_F + T_BW));
    ck_assert(makespan >= plain_makespan() * (1 - PG_REL_TOL));
    plan_free(&p);
    free_job(&fx);
}
END_TEST

/* Offload only (recompute ceiling none) at a capacity below what one F
 * holds: nothing can fit, and the planner says so. */
START_TEST(plan_reports_infeasible)
{
    fixture fx;
    setup_job(&fx, 0.5 * GIB);
    memplan p;
    offload_plan_result res;
    ck_assert_int_eq(plan_job(&fx, 0, 1, &p, &res), 0);
    ck_assert_int_eq(res.status, OFFLOAD_SOLVED_INFEASIBLE);
    for (int s = 0; s < fx.s.nstages; s++)
        for (int mb = 0; mb < M; mb++)
            ck_assert_int_eq(plan_get(&p, s, mb).fwd, PLAN_FWD_KEEP);   /* ceiling respected */
    plan_free(&p);
    free_job(&fx);
}
END_TEST

/* The MILP starts from the greedy plan: its own estimate is never worse. */
START_TEST(milp_never_worse_than_greedy)
{
    static const double caps[] = {1.5, 2.0, 2.5, 3.5};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        fixture fx;
        setup_job(&fx, caps[i] * GIB);
        memplan pg, pm;
        offload_plan_result rg, rm;
        ck_assert_int_eq(plan_job(&fx, 2, 0, &pg, &rg), 0);
        ck_assert_int_eq(plan_job(&fx, 2, 1, &pm, &rm), 0);
        ck_assert(rm.model_makespan_s <= rg.model_makespan_s * (1 + PG_REL_TOL));
        ck_assert(rm.model_makespan_s >= plain_makespan() * (1 - PG_REL_TOL));
        plan_free(&pg);
        plan_free(&pm);
        free_job(&fx);
    }
}
END_TEST

/* The order search (opt/offload_order.h) at 2.5 GiB, where 1F1B itself
 * needs its plan, ranked by the MILP's estimate (no judge): it must weigh
 * the given order and zb-auto's orders for 4 to 8 microbatches in flight
 * under the three copy models, keep one that fits, choose the least model
 * makespan among those that fit, beat the given order (offloads are free
 * here, so a zero-bubble order with more in flight pays), and the chosen
 * order with its plan must replay in the simulator without running out of
 * memory, at the model's makespan. */
START_TEST(order_search_beats_the_given_order)
{
    fixture fx;
    double cap = 2.5 * GIB;
    setup_job(&fx, cap);
    sched_params params = {.pp = PP, .m = M, .chunks = 1, .t_f = T_F, .t_b = 1, .t_w = 1, .w_fraction = 0.4324};
    offload_order_input in = {.plan = {.exp = &fx.e, .sched = &fx.s, .wl = &fx.wl, .plat = &fx.plat,
                                       .rank_gpu = fx.rank_gpu, .allow_offload = 1, .allow_recompute = 2,
                                       .milp_time_limit_s = OFFLOAD_MILP_TIME_LIMIT_S},
                              .params = &params, .search = 1};
    schedule best;
    memplan p;
    offload_plan_result res;
    offload_order_result *ores = malloc(sizeof *ores);
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(offload_order_choose(&in, &best, &p, &res, ores, &st), 0);
    ck_assert(ores->searched);
    ck_assert_int_eq(ores->n, (1 + PP + 1) * OFFLOAD_COPY_MODELS);
    ck_assert_int_ge(ores->chosen, OFFLOAD_COPY_MODELS);   /* not one of the given order's plans */
    const offload_order_candidate *c = &ores->cand[ores->chosen];
    ck_assert(c->fits && ores->cand[0].fits);
    for (int i = 0; i < ores->n; i++) {
        ck_assert(isnan(ores->cand[i].judged_makespan_s));
        if (ores->cand[i].fits) ck_assert(c->model_makespan_s <= ores->cand[i].model_makespan_s);
    }
    ck_assert(c->model_makespan_s < ores->cand[0].model_makespan_s);
    ck_assert_str_eq(best.name, "zb-auto");
    ck_assert_rel(res.model_makespan_s, c->model_makespan_s, PG_REL_TOL);

    /* One simulation per process (SimGrid): the chosen order's.  On this
     * network the MILP's model is the simulator's timing, so the replay
     * lands on the model makespan, below the given order's. */
    double chosen_makespan, peak;
    int noom;
    schedule given = fx.s;
    fx.s = best;
    simulate(&fx, &p, &chosen_makespan, &peak, &noom);
    fx.s = given;
    ck_assert_int_eq(noom, 0);
    ck_assert(peak <= cap);
    ck_assert_rel(chosen_makespan, c->model_makespan_s, 1e-6);
    ck_assert_msg(chosen_makespan < ores->cand[0].model_makespan_s, "chosen %g s, given %g s", chosen_makespan,
                  ores->cand[0].model_makespan_s);
    plan_free(&p);
    sched_free(&best);
    free(ores);
    free_job(&fx);
}
END_TEST

/* Same input, same plan (run replays what optimize chose). */
START_TEST(plan_is_deterministic)
{
    fixture fx;
    setup_job(&fx, 2.0 * GIB);
    memplan a, b;
    offload_plan_result ra, rb;
    ck_assert_int_eq(plan_job(&fx, 2, 1, &a, &ra), 0);
    ck_assert_int_eq(plan_job(&fx, 2, 1, &b, &rb), 0);
    ck_assert_int_eq(memcmp(a.c, b.c, (size_t)a.nstages * (size_t)a.m * sizeof *a.c), 0);
    plan_free(&a);
    plan_free(&b);
    free_job(&fx);
}
END_TEST

START_TEST(divisors_and_microbatches)
{
    int d[12], m[3];
    ck_assert_int_eq(opt_divisors(12, d), 6);
    static const int want[] = {1, 2, 3, 4, 6, 12};
    for (int i = 0; i < 6; i++) ck_assert_int_eq(d[i], want[i]);
    ck_assert_int_eq(opt_divisors(0, d), 0);
    ck_assert_int_eq(opt_default_microbatches(4, m), 3);
    ck_assert_int_eq(m[0], 4);
    ck_assert_int_eq(m[1], 8);
    ck_assert_int_eq(m[2], 16);
}
END_TEST

static int dominated_by(const opt_point *a, const opt_point *b)
{
    return b->throughput >= a->throughput && b->peak_bytes <= a->peak_bytes &&
           (b->throughput > a->throughput || b->peak_bytes < a->peak_bytes);
}

/* Random clouds: the front fits, is non-dominated, covers every fitting
 * point (each is on it or dominated by or equal to one of it), is sorted by
 * peak with throughput rising, and holds the best. */
START_TEST(front_is_non_dominated_and_complete)
{
    enum { N = 60, ROUNDS = 50 };
    srand(7);
    for (int round = 0; round < ROUNDS; round++) {
        opt_point pts[N];
        int front[N];
        for (int i = 0; i < N; i++)
            pts[i] = (opt_point){(double)(rand() % 20), (double)(rand() % 20), rand() % 4 != 0};
        int n = opt_pareto_front(pts, N, front);
        int best = opt_best(pts, N);
        int has_best = 0;
        for (int i = 0; i < n; i++) {
            ck_assert(pts[front[i]].fits);
            has_best |= best >= 0 && pts[front[i]].throughput == pts[best].throughput &&
                        pts[front[i]].peak_bytes == pts[best].peak_bytes;
            for (int j = 0; j < N; j++)
                if (pts[j].fits) ck_assert(!dominated_by(&pts[front[i]], &pts[j]));
            if (i > 0) {
                ck_assert(pts[front[i]].peak_bytes > pts[front[i - 1]].peak_bytes);
                ck_assert(pts[front[i]].throughput > pts[front[i - 1]].throughput);
            }
        }
        for (int j = 0; j < N; j++) {
            if (!pts[j].fits) continue;
            int covered = 0;
            for (int i = 0; i < n && !covered; i++)
                covered = (pts[front[i]].throughput >= pts[j].throughput && pts[front[i]].peak_bytes <= pts[j].peak_bytes);
            ck_assert(covered);
        }
        ck_assert(best < 0 || has_best);
        ck_assert_int_eq(best < 0, n == 0);
    }
}
END_TEST

/* The two prunings against brute force on random clouds: a candidate
 * skipped by opt_dominated_unsimulated, whatever it achieves within its
 * bounds (throughput <= ub, peak >= lb), is never on the front of the
 * simulated points plus itself, nor the best; one skipped by
 * opt_slower_than_best is never the best. */
START_TEST(pruning_is_sound)
{
    enum { N = 40, ROUNDS = 200 };
    srand(11);
    for (int round = 0; round < ROUNDS; round++) {
        opt_point pts[N + 1];
        int front[N + 1];
        for (int i = 0; i < N; i++)
            pts[i] = (opt_point){(double)(rand() % 20), (double)(rand() % 20), rand() % 4 != 0};
        double ub = (double)(rand() % 22), lb = (double)(rand() % 22);
        /* the candidate's worst case for the test: as fast and as small as its bounds allow */
        pts[N] = (opt_point){ub, lb, 1};
        int dominated = opt_dominated_unsimulated(ub, lb, pts, N);
        int slower = opt_slower_than_best(ub, pts, N);
        int n = opt_pareto_front(pts, N + 1, front);
        int on_front = 0;
        for (int i = 0; i < n; i++) on_front |= front[i] == N;
        int best = opt_best(pts, N + 1);
        if (dominated) ck_assert(!on_front && best != N);
        if (slower) ck_assert(best != N);
        /* and neither prunes what it must keep: the slower test fires exactly
         * when a fitting point is strictly faster */
        int faster = 0;
        for (int i = 0; i < N; i++) faster |= pts[i].fits && pts[i].throughput > ub;
        ck_assert_int_eq(slower, faster);
        if (dominated) ck_assert(slower);
    }
    /* ties are kept: an equal point may belong on the front */
    opt_point one = {10.0, 5.0, 1};
    ck_assert(!opt_dominated_unsimulated(10.0, 5.0, &one, 1));
    ck_assert(!opt_slower_than_best(10.0, &one, 1));
    ck_assert(opt_dominated_unsimulated(9.0, 5.0, &one, 1));
    ck_assert(!opt_dominated_unsimulated(9.0, 4.0, &one, 1));
    one.fits = 0;
    ck_assert(!opt_slower_than_best(1.0, &one, 1));
}
END_TEST

/* Microbatches of a fixed global batch: B / (dp x micro batch), whole only. */
START_TEST(microbatches_of_a_global_batch)
{
    ck_assert_int_eq(opt_microbatches(72, 1, 3), 24);
    ck_assert_int_eq(opt_microbatches(72, 2, 3), 12);
    ck_assert_int_eq(opt_microbatches(72, 8, 3), 3);
    ck_assert_int_eq(opt_microbatches(72, 16, 3), 0);   /* 72 / 48 is not whole */
    ck_assert_int_eq(opt_microbatches(72, 5, 1), 0);
    ck_assert_int_eq(opt_microbatches(0, 1, 1), 0);
    ck_assert_int_eq(opt_microbatches(8, 0, 1), 0);
    for (int dp = 1; dp <= 12; dp++)
        for (int mbs = 1; mbs <= 4; mbs++) {
            int m = opt_microbatches(96, dp, mbs);
            if (m) ck_assert_int_eq((long)m * dp * mbs, 96);
            else ck_assert(96 % (dp * mbs) != 0);
        }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("optpipe");
    TCase *tp = tcase_create("planner");
    tcase_set_timeout(tp, 30);
    tcase_add_test(tp, plan_empty_when_everything_fits);
    tcase_add_test(tp, plan_fits_in_simulation_and_beats_full_recompute);
    tcase_add_test(tp, plan_reports_infeasible);
    tcase_add_test(tp, milp_never_worse_than_greedy);
    tcase_add_test(tp, plan_is_deterministic);
    tcase_add_test(tp, order_search_beats_the_given_order);
    suite_add_tcase(s, tp);
    TCase *to = tcase_create("optimize");
    tcase_add_test(to, divisors_and_microbatches);
    tcase_add_test(to, front_is_non_dominated_and_complete);
    tcase_add_test(to, pruning_is_sound);
    tcase_add_test(to, microbatches_of_a_global_batch);
    suite_add_tcase(s, to);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
