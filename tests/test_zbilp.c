/* test_zbilp.c: the zb-auto ILP refinement (opt/zb_ilp.h) and Hanayo's
 * bubble against 1F1B (schedule/gen_hanayo.c).
 *
 * ILP: on tiny instances (pp <= 4, m <= 6) the refined order validates,
 * respects the memory limit in the zero-bubble accounting, never has a larger
 * span than the heuristic, and is strictly better on at least one instance;
 * above the size cutoff the schedule is left untouched.
 * Hanayo: with F = B = W and no latency its makespan is below 1F1B's at
 * pp 4 and 8, m 2pp and 4pp, chunks 2, with at most pp stage activations. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "opt/zb_ilp.h"
#include "testutil.h"

/* Seconds GLPK may spend per tiny instance (keeps the binary fast). */
#define ILP_TEST_LIMIT_S 0.4
#define EPS 1e-9

static sched_params zb_params(int pp, int m, double f, double b, double w, double c, double limit, double wf)
{
    sched_params p;
    memset(&p, 0, sizeof p);
    p.pp = pp;
    p.m = m;
    p.chunks = 1;
    p.t_f = f;
    p.t_b = b;
    p.t_w = w;
    p.t_comm = c;
    p.mem_limit = limit;
    p.w_fraction = wf;
    return p;
}

static double span_of(const schedule *s, const sched_params *p)
{
    sched_times t;
    pg_status st;
    ck_assert_int_eq(sched_eval_ideal(s, p->t_f, p->t_b, p->t_w, p->t_comm, &t, &st), 0);
    double span = t.span;
    sched_times_free(s, &t);
    return span;
}

/* Peak along each rank's order, zero-bubble accounting. */
static double zb_peak(const schedule *s, double wf)
{
    double peak = 0.0;
    for (int r = 0; r < s->pp; r++) {
        double cur = 0.0;
        for (int i = 0; i < s->nops[r]; i++) {
            uint8_t k = s->ops[r][i].kind;
            cur += k == OP_F ? 1.0 : k == OP_B ? -(1.0 - wf) : k == OP_W ? -wf : -1.0;
            if (cur > peak) peak = cur;
        }
    }
    return peak;
}

typedef struct tiny_case {
    int pp, m;
    double f, b, w, c, limit_factor;
    double ilp_limit_s;          /* 0: ILP_TEST_LIMIT_S */
} tiny_case;

/* GLPK reaches the last row's optimum (heuristic 17.8, optimum 17.0: the one
 * instance left that zb-auto's heuristic does not solve optimally, found by a
 * grid over pp 2-4, m 3-6, six cost sets and four limits) in about 0.2 s: it
 * gets 150x that, so a slow or sanitized build still finds it, and so does the
 * deterministic mode of make check (PIPEGRID_DETERMINISTIC: 5 ms of this limit
 * per GLPK callback, src/opt/workclock.h). */
#define ILP_IMPROVING_LIMIT_S 30.0
static const tiny_case TINY[] = {
    {2, 3, 1.0, 0.5, 2.0, 0.1, 1.0, 0},  {2, 4, 1.0, 1.0, 1.0, 0.0, 1.0, 0},  {3, 4, 1.0, 1.1, 0.9, 0.05, 1.0, 0},
    {3, 5, 1.0, 1.0, 0.5, 0.1, 1.0, 0},  {4, 4, 1.0, 1.0, 1.0, 0.0, 1.0, 0},  {4, 6, 1.0, 1.1, 0.9, 0.05, 1.0, 0},
    {4, 5, 1.0, 0.8, 1.2, 0.1, 2.0, 0},  {3, 6, 2.0, 1.0, 1.0, 0.3, 0.75, 0},
    {3, 4, 1.0, 0.8, 1.2, 0.1, 0.75, ILP_IMPROVING_LIMIT_S},
};
#define NTINY ((int)(sizeof TINY / sizeof TINY[0]))

START_TEST(ilp_never_worse_sometimes_better)
{
    int better = 0;
    for (int i = 0; i < NTINY; i++) {
        const tiny_case *c = &TINY[i];
        double wf = 0.4324;
        sched_params p = zb_params(c->pp, c->m, c->f, c->b, c->w, c->c, c->limit_factor * c->pp, wf);
        schedule s;
        pg_status st;
        ck_assert_msg(sched_generate("zb-auto", &p, &s, &st) == 0, "%s", st.msg);
        double before = span_of(&s, &p);
        ck_assert_int_eq(zb_ilp_refine(&p, &s, c->ilp_limit_s > 0 ? c->ilp_limit_s : ILP_TEST_LIMIT_S, &st), 0);
        ck_assert_msg(sched_validate(&s, &st) == 0, "%s", st.msg);
        ck_assert_msg(sched_check_deadlock(&s, &st) == 0, "%s", st.msg);
        double after = span_of(&s, &p);
        ck_assert_msg(after <= before + EPS, "case %d: span %g after, %g before", i, after, before);
        ck_assert_msg(zb_peak(&s, wf) <= p.mem_limit + EPS, "case %d: peak %g > limit %g", i, zb_peak(&s, wf),
                      p.mem_limit);
        if (after < before - EPS) better++;
        sched_free(&s);
    }
    ck_assert_msg(better > 0, "the ILP improved none of %d tiny instances", NTINY);
}
END_TEST

START_TEST(ilp_skips_large)
{
    sched_params p = zb_params(8, 24, 1.0, 1.1, 0.9, 0.05, 8.0, 0.4324);
    ck_assert_int_gt(3 * p.pp * p.m, ZB_ILP_MAX_OPS);
    schedule s, copy;
    pg_status st;
    ck_assert_int_eq(sched_generate("zb-auto", &p, &s, &st), 0);
    sched_copy(&copy, &s);
    ck_assert_int_eq(zb_ilp_refine(&p, &s, 1.0, &st), 0);
    for (int r = 0; r < s.pp; r++) {
        ck_assert_int_eq(s.nops[r], copy.nops[r]);
        for (int i = 0; i < s.nops[r]; i++) {
            ck_assert_int_eq(s.ops[r][i].kind, copy.ops[r][i].kind);
            ck_assert_int_eq(s.ops[r][i].stage, copy.ops[r][i].stage);
            ck_assert_int_eq(s.ops[r][i].mb, copy.ops[r][i].mb);
        }
    }
    sched_free(&s);
    sched_free(&copy);
}
END_TEST

START_TEST(ilp_rejects_wrong_shape)
{
    sched_params p = zb_params(4, 4, 1.0, 1.0, 1.0, 0.0, 4.0, 0.4);
    schedule s;
    pg_status st;
    ck_assert_int_eq(sched_generate("1f1b", &p, &s, &st), 0);
    ck_assert_int_eq(zb_ilp_refine(&p, &s, 1.0, &st), PG_EXIT_INPUT);
    sched_free(&s);
}
END_TEST

static double makespan_peak(const char *name, const sched_params *p, double *peak)
{
    schedule s;
    pg_status st;
    ck_assert_msg(sched_generate(name, p, &s, &st) == 0, "%s: %s", name, st.msg);
    sched_times t;
    ck_assert_int_eq(sched_eval_ideal(&s, p->t_f, p->t_b, p->t_w, p->t_comm, &t, &st), 0);
    *peak = 0.0;
    for (int r = 0; r < s.pp; r++) {
        double q = sched_peak_activations(&s, &t, r);
        if (q > *peak) *peak = q;
    }
    double mk = t.makespan;
    sched_times_free(&s, &t);
    sched_free(&s);
    return mk;
}

START_TEST(hanayo_below_1f1b)
{
    static const int PPS[] = {4, 8};
    int pp = PPS[_i / 2], m = (_i % 2 ? 4 : 2) * pp;
    sched_params p = zb_params(pp, m, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0);
    p.chunks = 2;
    double pk_h, pk_1;
    double h = makespan_peak("hanayo", &p, &pk_h);
    double one = makespan_peak("1f1b", &p, &pk_1);
    ck_assert_msg(h < one - EPS, "pp %d m %d: hanayo %g, 1f1b %g", pp, m, h, one);
    ck_assert_msg(pk_h <= pp + EPS, "pp %d m %d: hanayo peak %g > %d", pp, m, pk_h, pp);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("zbilp");
    TCase *tc = tcase_create("ilp");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, ilp_never_worse_sometimes_better);
    tcase_add_test(tc, ilp_skips_large);
    tcase_add_test(tc, ilp_rejects_wrong_shape);
    suite_add_tcase(s, tc);
    TCase *th = tcase_create("hanayo");
    tcase_add_loop_test(th, hanayo_below_1f1b, 0, 4);
    suite_add_tcase(s, th);
    return s;
}

int main(void)
{
    return pg_run_suite(suite());
}
