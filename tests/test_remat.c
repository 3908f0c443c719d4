/* test_remat.c: the rematerialization planner (opt/remat_ilp.h), seed 004.
 *
 * What a plan must do, checked against oracles that are not the planner:
 *   - it replays in the simulator (sim_run, one per forked test, as
 *     test_sim does) without going over the budget, and the simulator's
 *     makespan on an ideal network is the one the planner predicted;
 *   - it is never below seed 000's lower bound with recomputation;
 *   - on an instance small enough to enumerate, its makespan is the optimum
 *     found by brute force with this file's own evaluator (memory from
 *     sim/actmem.h walked along each rank's order, ASAP timing);
 *   - an impossible budget is an input error, an ample one plans nothing;
 *   - seed 004's finding: with ample memory ZB-H1 beats 1F1B, under a tight
 *     budget 1F1B with its plan beats any plan of ZB-H1 (its ILP's proven
 *     lower bound), on the 6.2B profile, p 8, m 24;
 *   - the CLI: `run --set recompute=plan` exits 0 when it fits, 2 when
 *     nothing can fit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "model/experiment.h"
#include "model/memory.h"
#include "model/profile.h"
#include "model/platform.h"
#include "model/workload.h"
#include "opt/bound.h"
#include "opt/remat_ilp.h"
#include "opt/remat_internal.h"
#include "schedule/plan.h"
#include "schedule/schedule.h"
#include "sim/actmem.h"
#include "sim/metrics.h"
#include "sim/sim.h"
#include "util/datapath.h"
#include "testutil.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MAX_PP 16
/* The planner's own slack under the budget, plus summation noise. */
#define BUDGET_TOL_REL 1e-6

typedef struct fixture {
    schedule s;
    workload w;
    double budget[MAX_PP];
} fixture;

/* Uniform workload (F = B = W = 1 s, M_B = 1 GiB, W keeps 0.4324 of it, the
 * stage input is 1/16 of M_B), schedule name, pp, m; every rank gets
 * budget_units x M_B. */
static void uniform_fixture(fixture *fx, const char *name, int pp, int m, double budget_units)
{
    pg_status st;
    pg_status_clear(&st);
    experiment e;
    experiment_defaults(&e);
    e.pp = pp;
    e.microbatches = m;
    e.workload = WL_UNIFORM;
    e.uniform_f_s = e.uniform_b_s = e.uniform_w_s = 1.0;
    e.uniform_activation_bytes = GIB;
    e.uniform_boundary_bytes = GIB / 16;
    sched_params p = {.pp = pp, .m = m, .chunks = 2, .t_f = 1, .t_b = 1, .t_w = 1, .w_fraction = 0.4324};
    ck_assert_msg(sched_generate(name, &p, &fx->s, &st) == 0, "%s", st.msg);
    ck_assert_msg(workload_build(&e, fx->s.nstages, &fx->w, &st) == 0, "%s", st.msg);
    for (int r = 0; r < pp; r++) fx->budget[r] = budget_units * GIB;
}

static void fixture_free(fixture *fx)
{
    sched_free(&fx->s);
    workload_free(&fx->w);
}

static remat_input input_of(const fixture *fx, double time_limit_s)
{
    return (remat_input){.sched = &fx->s, .wl = &fx->w, .budget_bytes = fx->budget, .time_limit_s = time_limit_s,
                         .gap = 1e-6};
}

/* ---- this file's evaluator (the oracle of the brute force) -------------- */

/* Peak activation bytes of rank r under plan p, walking its order with the
 * simulator's per-(stage, mb) flows: allocations at op starts, releases at
 * op ends, the workspace of the running op. */
static double oracle_peak(const fixture *fx, const memplan *p, int r)
{
    double held = 0, peak = 0;
    for (int i = 0; i < fx->s.nops[r]; i++) {
        sched_op o = fx->s.ops[r][i];
        act_flow f;
        act_flow_of(&fx->w, p, o.stage, o.mb, &f);
        double alloc = o.kind == OP_F ? f.f_alloc : (o.kind == OP_B || o.kind == OP_BW) ? f.r_alloc : f.rw_alloc;
        double now = held + alloc + fx->w.stage[o.stage].workspace_bytes;
        if (now > peak) peak = now;
        held += alloc;
        held -= o.kind == OP_F ? 0 : o.kind == OP_B ? f.b_release : o.kind == OP_W ? f.w_release : f.bw_release;
    }
    return peak;
}

/* ASAP makespan under plan p (zero latency): rounds over the ranks until
 * every op ran. */
static double oracle_makespan(const fixture *fx, const memplan *p)
{
    const schedule *s = &fx->s;
    int S = s->nstages, m = s->m;
    double *done[OP_KIND_COUNT];
    for (int k = 0; k < OP_KIND_COUNT; k++) {
        done[k] = malloc(sizeof(double) * (size_t)(S * m));
        for (int i = 0; i < S * m; i++) done[k][i] = -1;
    }
    int next[MAX_PP] = {0};
    double free_at[MAX_PP] = {0}, makespan = 0;
    for (int progress = 1; progress;) {
        progress = 0;
        for (int r = 0; r < s->pp; r++)
            while (next[r] < s->nops[r]) {
                sched_op o = s->ops[r][next[r]], pr;
                double ready = free_at[r];
                if (sched_pred(s, o, &pr)) {
                    double t = done[pr.kind][pr.stage * m + pr.mb];
                    if (t < 0) break;
                    if (t > ready) ready = t;
                }
                const stage_cost *c = &fx->w.stage[o.stage];
                act_flow f;
                act_flow_of(&fx->w, p, o.stage, o.mb, &f);
                double d = o.kind == OP_F ? c->f_s
                           : o.kind == OP_B ? c->b_s + f.r_ref_s
                           : o.kind == OP_W ? c->w_s + f.rw_ref_s
                                            : c->b_s + c->w_s + f.r_ref_s;
                free_at[r] = done[o.kind][o.stage * m + o.mb] = ready + d;
                if (free_at[r] > makespan) makespan = free_at[r];
                next[r]++;
                progress = 1;
            }
    }
    for (int k = 0; k < OP_KIND_COUNT; k++) free(done[k]);
    return makespan;
}

/* ---- replay in the simulator ---------------------------------------------- */

/* Speed of the ideal platform's GPUs for workloads with absolute times (the
 * uniform fixtures): any value works, ops take their given time. */
#define IDEAL_SPEED_FLOPS 1e12

/* Simulates fx under plan p on an ideal platform whose GPUs hold
 * capacity_bytes (simulate: exactly the budget, static memory 0 as in the
 * uniform fixtures); checks no OOM and returns the simulated makespan.  The
 * GPUs run at the workload's reference speed, as `run` does on
 * network=ideal, so a profile's times are not rescaled. */
static double simulate_at(const fixture *fx, const memplan *p, double capacity_bytes, double *recompute_s)
{
    pg_status st;
    pg_status_clear(&st);
    platform_desc plat;
    double speed = fx->w.ref_speed_flops > 0 ? fx->w.ref_speed_flops : IDEAL_SPEED_FLOPS;
    ck_assert(platform_make_ideal(fx->s.pp, 0.0, speed, capacity_bytes, &plat, &st) == 0);
    int rank_gpu[MAX_PP];
    for (int r = 0; r < fx->s.pp; r++) rank_gpu[r] = r;
    timeline tl;
    timeline_init(&tl);
    sim_input in = {.sched = &fx->s, .wl = &fx->w, .plat = &plat, .rank_gpu = rank_gpu, .zero_byte_messages = 1,
                    .plan = p};
    sim_outcome o;
    ck_assert_msg(sim_run(&in, &tl, &o, &st) == 0, "%s", st.msg);
    ck_assert(o.completed);
    metrics_input mi = {.sched = &fx->s, .wl = &fx->w, .plat = &plat, .rank_gpu = rank_gpu, .tl = &tl,
                        .bytes_per_param = 16, .plan = plan_is_empty(p) ? NULL : p};
    run_metrics m;
    metrics_compute(&mi, &m);
    ck_assert_msg(m.noom == 0, "plan runs out of memory on %d ranks (rank 0 peak %.0f, capacity %.0f)", m.noom,
                  m.rank[0].peak_memory_bytes, m.rank[0].capacity_bytes);
    double makespan = m.makespan_s;
    for (int r = 0; r < fx->s.pp && recompute_s; r++) recompute_s[r] = m.rank[r].recompute_s;
    metrics_free(&m);
    timeline_free(&tl);
    platform_free(&plat);
    return makespan;
}

static double simulate(const fixture *fx, const memplan *p, double *recompute_s)
{
    return simulate_at(fx, p, fx->budget[0], recompute_s);
}

/* seed 000's bound with recomputation for the fixture's times and K. */
static double seed000_bound(const fixture *fx, double budget_units)
{
    int S = fx->s.nstages;
    double f[64], b[64], w[64], wf[64];
    for (int c = 0; c < S; c++) {
        f[c] = fx->w.stage[c].f_s;
        b[c] = fx->w.stage[c].b_s;
        w[c] = fx->w.stage[c].w_s;
        wf[c] = fx->w.stage[c].act_w_bytes / fx->w.stage[c].act_b_bytes;
    }
    bound_input in = {.pp = fx->s.pp, .nstages = S, .m = fx->s.m, .stage_rank = fx->s.stage_rank, .f = f, .b = b,
                      .w = w, .w_fraction = wf, .mem_limit = budget_units, .split = 1, .remat = 1};
    bound_result res;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_msg(bound_lower(&in, &res, &st) == 0, "%s", st.msg);
    return res.lower_bound;
}

/* The common checks of a plan of fixture fx under budget_units. */
static void check_replay(const char *name, int pp, int m, double budget_units)
{
    fixture fx;
    uniform_fixture(&fx, name, pp, m, budget_units);
    remat_input in = input_of(&fx, 5.0);
    memplan p;
    remat_result res;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_msg(remat_plan(&in, &p, &res, &st) == 0, "%s", st.msg);
    ck_assert(res.method != REMAT_NOTHING);
    ck_assert_int_gt(p.nrecompute, 0);
    for (int r = 0; r < pp; r++) {
        ck_assert(oracle_peak(&fx, &p, r) <= fx.budget[r]);
        ck_assert_rel(res.peak_bytes[r], oracle_peak(&fx, &p, r), PG_REL_TOL);
    }
    ck_assert_rel(res.makespan_s, oracle_makespan(&fx, &p), PG_REL_TOL);
    ck_assert(res.makespan_s > res.keep_makespan_s);
    ck_assert(res.makespan_s <= res.greedy_makespan_s * (1 + PG_REL_TOL));
    ck_assert(res.makespan_s >= seed000_bound(&fx, budget_units) * (1 - PG_REL_TOL));
    double rec[MAX_PP];
    double sim = simulate(&fx, &p, rec);
    ck_assert_rel(sim, res.makespan_s, PG_REL_TOL);
    for (int r = 0; r < pp; r++) ck_assert_rel(rec[r], res.recompute_s[r], PG_REL_TOL);
    plan_free(&p);
    remat_result_free(&res);
    fixture_free(&fx);
}

/* 1F1B (fused BW), p 4, m 8: rank 0 holds 4 M_B without recomputation. */
START_TEST(test_1f1b_replays_within_budget)
{
    check_replay("1f1b", 4, 8, 2.5);
}
END_TEST

/* ZB-H1 (split B / W, backward recompute possible), p 4, m 8. */
START_TEST(test_zbh1_replays_within_budget)
{
    check_replay("zb-h1", 4, 8, 2.2);
}
END_TEST

/* GPipe holds every microbatch: a tight budget needs many recomputes. */
START_TEST(test_gpipe_replays_within_budget)
{
    check_replay("gpipe", 4, 8, 3.0);
}
END_TEST

/* Every combination of choices on p 2, m 2 (4 pairs, 3 forward x 2
 * backward options each): the planner's makespan is the best that fits. */
START_TEST(test_optimal_by_enumeration)
{
    const double budgets[] = {1.3, 1.6, 1.9};
    for (size_t bi = 0; bi < sizeof budgets / sizeof budgets[0]; bi++) {
        fixture fx;
        uniform_fixture(&fx, "zb-h1", 2, 2, budgets[bi]);
        int npairs = fx.s.nstages * fx.s.m, combos = 1;
        for (int i = 0; i < npairs; i++) combos *= 6;
        memplan q;
        plan_init(&q, &fx.s);
        double best = -1;
        for (int code = 0; code < combos; code++) {
            int x = code;
            for (int i = 0; i < npairs; i++, x /= 6)
                plan_set(&q, i / fx.s.m, i % fx.s.m, (plan_choice){.fwd = (uint8_t)(x % 3), .bwd = (uint8_t)(x % 6 / 3)});
            int ok = 1;
            for (int r = 0; r < fx.s.pp; r++) ok = ok && oracle_peak(&fx, &q, r) <= fx.budget[r] * (1 - BUDGET_TOL_REL);
            if (!ok) continue;
            double mk = oracle_makespan(&fx, &q);
            if (best < 0 || mk < best) best = mk;
        }
        plan_free(&q);
        ck_assert_msg(best > 0, "budget %g: nothing fits", budgets[bi]);
        remat_input in = input_of(&fx, 5.0);
        memplan p;
        remat_result res;
        pg_status st;
        pg_status_clear(&st);
        ck_assert_msg(remat_plan(&in, &p, &res, &st) == 0, "%s", st.msg);
        ck_assert_rel(res.makespan_s, best, PG_REL_TOL);
        ck_assert_rel(oracle_makespan(&fx, &p), best, PG_REL_TOL);
        plan_free(&p);
        remat_result_free(&res);
        fixture_free(&fx);
    }
}
END_TEST

/* Each rank's least recompute seconds (the exact per-rank cover, swept
 * over the rank's windows) against enumeration of every choice of the
 * rank's pairs: split and fused backward, one and two stages per rank. */
static double brute_least_recompute(const fixture *fx, int r)
{
    const schedule *s = &fx->s;
    int pairs[64], n = 0;
    for (int c = 0; c < s->nstages; c++)
        if (s->stage_rank[c] == r)
            for (int mb = 0; mb < s->m; mb++) pairs[n++] = c * s->m + mb;
    long combos = 1;
    for (int i = 0; i < n; i++) combos *= 6;
    memplan q;
    plan_init(&q, s);
    double best = -1;
    for (long code = 0; code < combos; code++) {
        long x = code;
        double cost = 0;
        for (int i = 0; i < n; i++, x /= 6) {
            plan_choice ch = {.fwd = (uint8_t)(x % 3), .bwd = (uint8_t)(x % 6 / 3)};
            plan_set(&q, pairs[i] / s->m, pairs[i] % s->m, ch);
            act_flow f;
            act_flow_of(&fx->w, &q, pairs[i] / s->m, pairs[i] % s->m, &f);
            cost += f.r_ref_s + (sched_is_split(s) ? f.rw_ref_s : 0);
        }
        if (best >= 0 && cost >= best) continue;
        if (oracle_peak(fx, &q, r) <= fx->budget[r] * (1 - BUDGET_TOL_REL)) best = cost;
    }
    plan_free(&q);
    return best;
}

START_TEST(test_least_recompute_by_enumeration)
{
    struct {
        const char *name;
        int m;
        double budget;
    } cases[] = {{"zb-h1", 4, 1.3}, {"zb-h1", 4, 1.7}, {"1f1b", 4, 1.2}, {"v-half", 3, 1.4}, {"zb-v", 3, 1.9}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fixture fx;
        uniform_fixture(&fx, cases[i].name, 2, cases[i].m, cases[i].budget);
        remat_input in = input_of(&fx, 5.0);
        memplan p;
        remat_result res;
        pg_status st;
        pg_status_clear(&st);
        ck_assert_msg(remat_plan(&in, &p, &res, &st) == 0, "%s: %s", cases[i].name, st.msg);
        ck_assert_msg(res.method != REMAT_NOTHING, "%s fits without recomputation", cases[i].name);
        for (int r = 0; r < fx.s.pp; r++) {
            double brute = brute_least_recompute(&fx, r);
            ck_assert_msg(brute >= 0, "%s rank %d: nothing fits", cases[i].name, r);
            ck_assert_msg(res.least_recompute_s[r] >= 0, "%s rank %d: not computed", cases[i].name, r);
            ck_assert_msg(fabs(res.least_recompute_s[r] - brute) <= PG_REL_TOL * (1 + brute),
                          "%s rank %d: least %.9g, enumeration %.9g", cases[i].name, r, res.least_recompute_s[r],
                          brute);
            /* and the plan, which fits, spends at least that */
            ck_assert(res.recompute_s[r] >= brute * (1 - PG_REL_TOL));
        }
        plan_free(&p);
        remat_result_free(&res);
        fixture_free(&fx);
    }
}
END_TEST

/* Below what recomputing everything needs (one whole M_B at a B, plus the
 * inputs kept): an input error naming the rank; ample memory: no plan. */
START_TEST(test_infeasible_and_ample)
{
    fixture fx;
    uniform_fixture(&fx, "1f1b", 4, 8, 0.9);
    remat_input in = input_of(&fx, 1.0);
    memplan p;
    remat_result res;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(remat_plan(&in, &p, &res, &st), PG_EXIT_INPUT);
    ck_assert_msg(strstr(st.msg, "even with every activation recomputed") != NULL, "%s", st.msg);
    ck_assert_msg(strstr(st.msg, "rank ") != NULL, "%s", st.msg);
    fixture_free(&fx);

    uniform_fixture(&fx, "zb-h1", 4, 8, 8.0);
    in = input_of(&fx, 1.0);
    pg_status_clear(&st);
    ck_assert_msg(remat_plan(&in, &p, &res, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(res.method, REMAT_NOTHING);
    ck_assert(plan_is_empty(&p));
    sched_times t;
    ck_assert(sched_eval_ideal(&fx.s, 1, 1, 1, 0, &t, &st) == 0);
    ck_assert_rel(res.makespan_s, t.makespan, PG_REL_TOL);
    sched_times_free(&fx.s, &t);
    plan_free(&p);
    remat_result_free(&res);
    fixture_free(&fx);
}
END_TEST

/* time_limit 0 is the greedy plan, which fits; the ILP is never worse. */
START_TEST(test_greedy_fallback)
{
    fixture fx;
    uniform_fixture(&fx, "zb-h1", 4, 12, 2.0);
    remat_input in = input_of(&fx, 0.0);
    memplan p;
    remat_result g, res;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_msg(remat_plan(&in, &p, &g, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(g.method, REMAT_GREEDY);
    ck_assert_int_eq(g.nbinaries, 0);
    for (int r = 0; r < fx.s.pp; r++) ck_assert(oracle_peak(&fx, &p, r) <= fx.budget[r]);
    plan_free(&p);
    in.time_limit_s = 5.0;
    ck_assert_msg(remat_plan(&in, &p, &res, &st) == 0, "%s", st.msg);
    ck_assert(res.makespan_s <= g.makespan_s * (1 + PG_REL_TOL));
    ck_assert(res.nbinaries > 0);
    plan_free(&p);
    remat_result_free(&g);
    remat_result_free(&res);
    fixture_free(&fx);
}
END_TEST

/* ---- the large-neighbourhood search on its own (remat_lns.c) --------------- */

static double monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void memplan_of(const fixture *fx, const plan_choice *c, memplan *q)
{
    plan_init(q, &fx->s);
    for (int p = 0; p < fx->s.nstages * fx->s.m; p++) plan_set(q, p / fx->s.m, p % fx->s.m, c[p]);
}

/* From the most frugal plan (everything recomputed), every step keeps the
 * plan within the budget (by this file's oracle) and never makes it
 * slower; m = 12 is wider than the first windows (8), so the windows must
 * widen, and once a window as wide as the pipeline has stalled the plan is
 * the ILP's optimum, the one remat_plan proves. */
#define LNS_M 12
#define LNS_STEP_S 30.0
#define LNS_MAX_STEPS 200
#define LNS_GAP 1e-7

START_TEST(test_lns_reaches_the_optimum)
{
    fixture fx;
    uniform_fixture(&fx, "zb-h1", 4, LNS_M, 1.6);
    remat_input in = input_of(&fx, LNS_STEP_S);
    in.gap = LNS_GAP;
    memplan best;
    remat_result res;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_msg(remat_plan(&in, &best, &res, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(res.method, REMAT_ILP_OPTIMAL);

    rm_model md;
    ck_assert_msg(rm_model_build(&in, &md, &st) == 0, "%s", st.msg);
    size_t n = (size_t)md.total + 1;
    double *over = malloc(n * sizeof *over), *end = malloc(n * sizeof *end);
    plan_choice *c = calloc((size_t)md.npairs + 1, sizeof *c);
    rm_memory(&md, c, over);
    for (int k = 0; k < md.total; k++) over[k] -= md.budget[md.rank[k]];
    for (int p = 0; p < md.npairs; p++) {
        const rm_stage *sc = &md.st[p / md.m];
        c[p].fwd = sc->fwd_ok[PLAN_FWD_FULL] ? PLAN_FWD_FULL : PLAN_FWD_KEEP;
        c[p].bwd = sc->bwd_ok ? PLAN_BWD_RECOMPUTE : PLAN_BWD_KEEP;
    }
    rm_ilp z;
    ck_assert(rm_ilp_build(&z, &md, over));
    rm_lns *l = rm_lns_new(&z, LNS_GAP);
    double prev = rm_times(&md, c, NULL, end, NULL);
    int steps = 0, better = 0;
    while (!rm_lns_exhausted(l) && steps < LNS_MAX_STEPS) {
        better += rm_lns_step(l, c, monotonic_s() + LNS_STEP_S, monotonic_s);
        steps++;
        double mk = rm_times(&md, c, NULL, end, NULL);
        ck_assert(mk <= prev * (1 + PG_REL_TOL));
        memplan q;
        memplan_of(&fx, c, &q);
        for (int r = 0; r < fx.s.pp; r++) ck_assert(oracle_peak(&fx, &q, r) <= fx.budget[r]);
        ck_assert_rel(oracle_makespan(&fx, &q), mk, PG_REL_TOL);
        plan_free(&q);
        prev = mk;
    }
    ck_assert_msg(rm_lns_exhausted(l), "still searching after %d steps", steps);
    ck_assert(better > 0);
    ck_assert_msg(fabs(prev - res.makespan_s) <= 2 * LNS_GAP * res.makespan_s, "search %.9f, optimum %.9f", prev,
                  res.makespan_s);
    rm_lns_free(l);
    rm_ilp_free(&z);
    rm_model_free(&md);
    free(over);
    free(end);
    free(c);
    plan_free(&best);
    remat_result_free(&res);
    fixture_free(&fx);
}
END_TEST

/* ---- seed 004's finding on the 6.2B profile -------------------------------- */

/* The capacity (bytes, static memory included) under which 1F1B with its
 * plan beats every plan of ZB-H1: p 8, m 24 (see the README). */
#define TIGHT_CAPACITY (FINDING_TIGHT_GIB * GIB)
#ifndef FINDING_TIGHT_GIB
#define FINDING_TIGHT_GIB 17.0
#endif
#define FINDING_TIME_LIMIT_S 2.0

/* The 6.2B profile on 8 ranks, m microbatches, capacity_bytes per GPU
 * (static memory at 16 bytes per parameter, the experiment's default). */
static void load_62b_at(const char *name, int m, double capacity_bytes, fixture *fx)
{
    pg_status st;
    pg_status_clear(&st);
    char path[4096];
    ck_assert(datapath_find("profiles/zb-gpt-6.2b.yaml", path, sizeof path) == 0);
    sched_params p = {.pp = 8, .m = m, .chunks = 1};
    ck_assert_msg(sched_generate(name, &p, &fx->s, &st) == 0, "%s", st.msg);
    ck_assert_msg(workload_load_profile(path, 8, &fx->w, &st) == 0, "%s", st.msg);
    for (int r = 0; r < 8; r++) {
        int stage = r;
        fx->budget[r] = capacity_bytes - memory_static_bytes(&fx->w, &stage, 1, 16);
    }
}

static void load_62b(const char *name, fixture *fx)
{
    load_62b_at(name, 24, TIGHT_CAPACITY, fx);
}

START_TEST(test_finding_best_schedule_depends_on_budget)
{
    fixture a, z;
    load_62b("1f1b", &a);
    load_62b("zb-h1", &z);
    memplan pa, pz;
    remat_result ra, rz;
    pg_status st;
    pg_status_clear(&st);
    remat_input ia = input_of(&a, FINDING_TIME_LIMIT_S), iz = input_of(&z, FINDING_TIME_LIMIT_S);
    ck_assert_msg(remat_plan(&ia, &pa, &ra, &st) == 0, "%s", st.msg);
    ck_assert_msg(remat_plan(&iz, &pz, &rz, &st) == 0, "%s", st.msg);
    /* Ample memory: ZB-H1 is the faster schedule. */
    ck_assert(rz.keep_makespan_s < ra.keep_makespan_s);
    /* Tight: 1F1B's plan is faster than what ZB-H1 can reach with any plan. */
    ck_assert(rz.method != REMAT_NOTHING && ra.method != REMAT_NOTHING);
    double zb_best = rz.method == REMAT_ILP_OPTIMAL || rz.method == REMAT_ILP_FEASIBLE ? rz.ilp_bound_s : rz.makespan_s;
    ck_assert_msg(ra.makespan_s < zb_best, "1F1B %.6g s, ZB-H1 at least %.6g s", ra.makespan_s, zb_best);
    plan_free(&pa);
    plan_free(&pz);
    remat_result_free(&ra);
    remat_result_free(&rz);
    fixture_free(&a);
    fixture_free(&z);
}
END_TEST

/* Issue 5's size, p 8 and m 32, at a middle budget the ILP closes (ZB-H1,
 * 30 GiB: about 700 binaries' worth of schedule, 2 to 4 s in GLPK on a
 * 2-core machine): optimality within the default gap must be proven, and
 * the proven bound must sit under the plan's makespan. */
#define CLOSED_CAPACITY (30.0 * GIB)
#define CLOSED_M 32
#define CLOSED_TIME_LIMIT_S 30.0
#define DEFAULT_GAP 1e-3

/* Plans ZB-H1 on the 6.2B profile, p 8, m 32, at capacity_bytes, and
 * asserts that the ILP proved its plan within gap of its bound. */
static void plan_proven_p8_m32(double capacity_bytes, double time_limit_s, double gap, fixture *fx, memplan *p,
                               remat_result *res)
{
    load_62b_at("zb-h1", CLOSED_M, capacity_bytes, fx);
    pg_status st;
    pg_status_clear(&st);
    remat_input in = input_of(fx, time_limit_s);
    in.gap = gap;
    ck_assert_msg(remat_plan(&in, p, res, &st) == 0, "%s", st.msg);
    ck_assert_msg(res->method == REMAT_ILP_OPTIMAL, "method %s after %.1f s", remat_method_name(res->method),
                  res->solve_s);
    ck_assert(res->nbinaries > 0);
    ck_assert(res->ilp_bound_s <= res->makespan_s * (1 + 1e-9));
    ck_assert_msg(res->makespan_s <= res->ilp_bound_s * (1 + gap) + 1e-9, "makespan %.6f bound %.6f",
                  res->makespan_s, res->ilp_bound_s);
}

START_TEST(test_middle_budget_p8_m32_proven)
{
    fixture fx;
    memplan p;
    remat_result res;
    plan_proven_p8_m32(CLOSED_CAPACITY, CLOSED_TIME_LIMIT_S, DEFAULT_GAP, &fx, &p, &res);
    ck_assert(res.makespan_s > res.keep_makespan_s);
    plan_free(&p);
    remat_result_free(&res);
    fixture_free(&fx);
}
END_TEST

/* A middle budget the ILP does not close within a minute (1F1B, p 8, m 32,
 * 24 GiB: 0.15 % left after 60 s; the gap is between ranks).  The exact
 * per-rank covers make the bound strong from the root on, and the covers,
 * weighted covers and local search must find, within a few seconds, a plan
 * that fits (in the oracle and, without running out of memory, in the
 * simulator) within 0.5 % of the proven bound: 0.19 % at 3 s on a quiet
 * machine and under ASan alike; the greedy plan is 6 % above it. */
#define MIDDLE_CAPACITY (24.0 * GIB)
#define MIDDLE_TIME_LIMIT_S 3.0
#define MIDDLE_GAP_MAX 0.005

START_TEST(test_middle_budget_p8_m32_near_bound)
{
    fixture fx;
    load_62b_at("1f1b", CLOSED_M, MIDDLE_CAPACITY, &fx);
    memplan p;
    remat_result res;
    pg_status st;
    pg_status_clear(&st);
    remat_input in = input_of(&fx, MIDDLE_TIME_LIMIT_S);
    in.gap = DEFAULT_GAP;
    ck_assert_msg(remat_plan(&in, &p, &res, &st) == 0, "%s", st.msg);
    ck_assert(res.method == REMAT_ILP_OPTIMAL || res.method == REMAT_ILP_FEASIBLE);
    ck_assert(res.ilp_bound_s > res.keep_makespan_s);
    ck_assert(res.ilp_bound_s <= res.makespan_s * (1 + 1e-9));
    ck_assert_msg(res.makespan_s <= res.ilp_bound_s * (1 + MIDDLE_GAP_MAX), "makespan %.6f bound %.6f",
                  res.makespan_s, res.ilp_bound_s);
    for (int r = 0; r < 8; r++) ck_assert(oracle_peak(&fx, &p, r) <= fx.budget[r]);
    ck_assert_rel(res.makespan_s, oracle_makespan(&fx, &p), PG_REL_TOL);
    /* The replay fits and takes exactly the predicted time. */
    ck_assert_rel(simulate_at(&fx, &p, MIDDLE_CAPACITY, NULL), res.makespan_s, PG_REL_TOL);
    plan_free(&p);
    remat_result_free(&res);
    fixture_free(&fx);
}
END_TEST

/* Issue 5's criterion at seed 004's own stopping rule (its ILP, in CBC,
 * stops at a 3 % relative gap or after 60 s): the hardest middle budget
 * (ZB-H1, p 8, m 32, 20 GiB, 1.07 % from the bound after 60 s at the
 * default 0.1 %) must be proven within 3 %, and well before the limit
 * (about 3 s on a 2-core machine); the plan must fit and replay exactly. */
#define SEED_GAP 0.03
#define SEED_TIME_LIMIT_S 60.0
#define HARD_CAPACITY (20.0 * GIB)

START_TEST(test_hardest_budget_within_seed_gap)
{
    fixture fx;
    memplan p;
    remat_result res;
    plan_proven_p8_m32(HARD_CAPACITY, SEED_TIME_LIMIT_S, SEED_GAP, &fx, &p, &res);
    for (int r = 0; r < 8; r++) ck_assert(oracle_peak(&fx, &p, r) <= fx.budget[r]);
    ck_assert_rel(simulate_at(&fx, &p, HARD_CAPACITY, NULL), res.makespan_s, PG_REL_TOL);
    plan_free(&p);
    remat_result_free(&res);
    fixture_free(&fx);
}
END_TEST

/* ---- the CLI ---------------------------------------------------------------- */

#define PIPEGRID "src/pipegrid"

static int run_cli(const char *args)
{
    ck_assert_msg(access(PIPEGRID, X_OK) == 0, "run from the build directory (%s not found)", PIPEGRID);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s >/dev/null 2>&1", PIPEGRID, args);
    int rc = system(cmd);
    ck_assert(WIFEXITED(rc));
    return WEXITSTATUS(rc);
}

START_TEST(test_cli_run_plan)
{
    const char *base = "run --set workload=profiles/zb-gpt-6.2b.yaml --set pp=8 --set microbatches=24 "
                       "--set network=ideal --set schedule=zb-h1 --set recompute.time_limit=1";
    char args[512];
    /* Without a plan the 6.2B ZB-H1 needs 39.9 GiB on rank 0: 30 GiB is OOM. */
    snprintf(args, sizeof args, "%s --set memory.capacity=30GiB", base);
    ck_assert_int_eq(run_cli(args), 3);
    snprintf(args, sizeof args, "%s --set memory.capacity=30GiB --set recompute=plan", base);
    ck_assert_int_eq(run_cli(args), 0);
    snprintf(args, sizeof args, "%s --set memory.capacity=14GiB --set recompute=plan", base);
    ck_assert_int_eq(run_cli(args), 2);
    snprintf(args, sizeof args, "plan remat %s --set memory.capacity=30GiB --format json", base + strlen("run "));
    ck_assert_int_eq(run_cli(args), 0);
}
END_TEST

static Suite *remat_suite(void)
{
    Suite *s = suite_create("remat");
    TCase *tc = tcase_create("plan");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_1f1b_replays_within_budget);
    tcase_add_test(tc, test_zbh1_replays_within_budget);
    tcase_add_test(tc, test_gpipe_replays_within_budget);
    tcase_add_test(tc, test_optimal_by_enumeration);
    tcase_add_test(tc, test_least_recompute_by_enumeration);
    tcase_add_test(tc, test_infeasible_and_ample);
    tcase_add_test(tc, test_greedy_fallback);
    tcase_add_test(tc, test_lns_reaches_the_optimum);
    tcase_add_test(tc, test_finding_best_schedule_depends_on_budget);
    tcase_add_test(tc, test_middle_budget_p8_m32_proven);
    tcase_add_test(tc, test_middle_budget_p8_m32_near_bound);
    tcase_add_test(tc, test_hardest_budget_within_seed_gap);
    tcase_add_test(tc, test_cli_run_plan);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pg_run_suite(remat_suite());
}
