/* test_schedule.c: the schedule layer: container, placements, validation,
 * deadlock detection, the ideal evaluator and every fixed generator against
 * the closed forms and reference numbers of the seed papers
 * (/work/shared/notes/schedules-reference.md sections 3 and 5.1). */
#include <stdio.h>
#include <string.h>

#include <unistd.h>

#include "schedule/draw.h"
#include "schedule/sched_index.h"
#include "schedule/schedule.h"
#include "schedule/torch_csv.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------ */

static sched_params params(int pp, int m, int chunks)
{
    sched_params p;
    memset(&p, 0, sizeof p);
    p.pp = pp;
    p.m = m;
    p.chunks = chunks;
    p.t_f = 1.0;
    p.t_b = 1.0;
    p.t_w = 1.0;
    return p;
}

static void gen_ok(const char *name, int pp, int m, int chunks, schedule *s)
{
    sched_params p = params(pp, m, chunks);
    pg_status st;
    pg_status_clear(&st);
    int rc = sched_generate(name, &p, s, &st);
    ck_assert_msg(rc == 0, "%s pp=%d m=%d chunks=%d: rc %d: %s", name, pp, m, chunks, rc, st.msg);
}

typedef struct eval_result {
    double makespan, span, peak;
} eval_result;

/* Ideal times of schedule name; peak is the largest per-rank activation peak. */
static eval_result eval_gen(const char *name, int pp, int m, int chunks, double f, double b, double w, double c)
{
    schedule s;
    gen_ok(name, pp, m, chunks, &s);
    sched_times t;
    pg_status st;
    pg_status_clear(&st);
    int rc = sched_eval_ideal(&s, f, b, w, c, &t, &st);
    ck_assert_msg(rc == 0, "%s: eval rc %d: %s", name, rc, st.msg);
    eval_result r = {t.makespan, t.span, 0.0};
    for (int k = 0; k < s.pp; k++) {
        double pk = sched_peak_activations(&s, &t, k);
        if (pk > r.peak)
            r.peak = pk;
    }
    sched_times_free(&s, &t);
    sched_free(&s);
    return r;
}

/* Cost triples used by the closed-form sweeps; W <= min(F, B) in all of
 * them, which is the regime the zero-bubble closed forms are stated for. */
static const double costs[][3] = {
    {1.0, 1.0, 1.0}, {1.0, 1.1, 0.9}, {1.3, 1.7, 0.6}, {0.25, 0.5, 0.125}, {2.0, 3.0, 1.5},
};
#define NCOSTS ((int)(sizeof costs / sizeof costs[0]))

/* ---- container, placements, names --------------------------------------- */

START_TEST(test_container)
{
    schedule s, c;
    sched_init(&s, "t", 2, 2, 3);
    ck_assert_int_eq(s.nstages, 4);
    for (int i = 0; i < 100; i++)
        sched_push(&s, i % 2, OP_F, i % 2, i % 3);
    ck_assert_int_eq(s.nops[0], 50);
    ck_assert_int_eq(sched_total_ops(&s), 100);
    sched_copy(&c, &s);
    ck_assert_int_eq(sched_total_ops(&c), 100);
    ck_assert_str_eq(c.name, "t");
    ck_assert_int_eq(c.ops[1][49].stage, 1);
    ck_assert_int_eq(c.ops[1][49].mb, 99 % 3);
    /* equal: the same ops, whatever the name; one field of one op differs: not */
    snprintf(c.name, sizeof c.name, "other");
    ck_assert(sched_equal(&s, &c) && sched_equal(&c, &s));
    c.ops[1][49].overlap_next = 1;
    ck_assert(!sched_equal(&s, &c));
    c.ops[1][49].overlap_next = 0;
    c.ops[0][7].mb = (c.ops[0][7].mb + 1) % 3;
    ck_assert(!sched_equal(&s, &c));
    c.ops[0][7].mb = s.ops[0][7].mb;
    c.stage_rank[3] = s.stage_rank[3] + 1;
    ck_assert(!sched_equal(&s, &c));
    c.stage_rank[3] = s.stage_rank[3];
    sched_push(&c, 0, OP_F, 0, 0);
    ck_assert(!sched_equal(&s, &c));
    sched_free(&c);
    sched_free(&s);

    char buf[64];
    sched_op op = {.stage = 3, .mb = 7, .kind = OP_BW};
    ck_assert_str_eq(sched_op_str(op, buf, sizeof buf), "BW(stage 3, mb 7)");
    ck_assert_str_eq(op_kind_name(OP_F), "F");
    ck_assert_str_eq(op_kind_name(OP_B), "B");
    ck_assert_str_eq(op_kind_name(OP_W), "W");
}
END_TEST

START_TEST(test_placements)
{
    schedule s;
    sched_init(&s, "p", 4, 2, 1);
    sched_place_looping(&s);
    for (int st = 0; st < 8; st++)
        ck_assert_int_eq(s.stage_rank[st], st % 4);
    ck_assert_int_eq(sched_stage_chunk(&s, 5), 1);
    sched_place_v(&s);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(s.stage_rank[i], i);
        ck_assert_int_eq(s.stage_rank[2 * 4 - 1 - i], i);
        ck_assert_int_eq(sched_stage_chunk(&s, 2 * 4 - 1 - i), 1);
    }
    sched_place_contiguous(&s);
    ck_assert_int_eq(s.stage_rank[0], 0);
    ck_assert_int_eq(s.stage_rank[3], 1);
    ck_assert_int_eq(s.stage_rank[7], 3);
    sched_free(&s);

    sched_init(&s, "w", 3, 3, 1);
    sched_place_wave(&s);
    const int want[9] = {0, 1, 2, 2, 1, 0, 0, 1, 2};
    for (int st = 0; st < 9; st++)
        ck_assert_int_eq(s.stage_rank[st], want[st]);
    ck_assert_int_eq(sched_stage_chunk(&s, 6), 2);
    sched_free(&s);
}
END_TEST

START_TEST(test_pred)
{
    schedule s;
    gen_ok("1f1b", 3, 2, 1, &s);
    sched_op p, op = {.stage = 0, .mb = 1, .kind = OP_F};
    ck_assert_int_eq(sched_pred(&s, op, &p), 0);
    op.stage = 2;
    ck_assert_int_eq(sched_pred(&s, op, &p), 1);
    ck_assert(p.stage == 1 && p.mb == 1 && p.kind == OP_F);
    op.kind = OP_BW; /* the loss turn */
    ck_assert_int_eq(sched_pred(&s, op, &p), 1);
    ck_assert(p.stage == 2 && p.kind == OP_F);
    op.stage = 0;
    ck_assert_int_eq(sched_pred(&s, op, &p), 1);
    ck_assert(p.stage == 1 && p.kind == OP_BW);
    ck_assert(!sched_is_split(&s));
    sched_free(&s);

    gen_ok("zb-h1", 3, 4, 1, &s);
    ck_assert(sched_is_split(&s));
    op = (sched_op){.stage = 1, .mb = 2, .kind = OP_B};
    ck_assert_int_eq(sched_pred(&s, op, &p), 1);
    ck_assert(p.stage == 2 && p.mb == 2 && p.kind == OP_B);
    op.kind = OP_W;
    ck_assert_int_eq(sched_pred(&s, op, &p), 1);
    ck_assert(p.stage == 1 && p.mb == 2 && p.kind == OP_B);
    sched_free(&s);

    /* Mixed: stage 1 fuses microbatch 0 and splits microbatch 1; stage 0
     * must wait for whichever kind is present, also after the list changes. */
    sched_init(&s, "mixed", 2, 1, 2);
    sched_place_contiguous(&s);
    sched_push(&s, 0, OP_F, 0, 0);
    sched_push(&s, 0, OP_F, 0, 1);
    sched_push(&s, 0, OP_BW, 0, 0);
    sched_push(&s, 0, OP_BW, 0, 1);
    sched_push(&s, 1, OP_F, 1, 0);
    sched_push(&s, 1, OP_BW, 1, 0);
    sched_push(&s, 1, OP_F, 1, 1);
    sched_push(&s, 1, OP_B, 1, 1);
    sched_push(&s, 1, OP_W, 1, 1);
    pg_status st;
    ck_assert_int_eq(sched_validate(&s, &st), 0);
    op = (sched_op){.stage = 0, .mb = 0, .kind = OP_BW};
    ck_assert_int_eq(sched_pred(&s, op, &p), 1);
    ck_assert(p.stage == 1 && p.mb == 0 && p.kind == OP_BW);
    op.mb = 1;
    ck_assert_int_eq(sched_pred(&s, op, &p), 1);
    ck_assert(p.stage == 1 && p.mb == 1 && p.kind == OP_B);
    /* rewrite rank 1 in place: microbatch 0 split, microbatch 1 fused */
    s.nops[1] = 0;
    sched_push(&s, 1, OP_F, 1, 0);
    sched_push(&s, 1, OP_B, 1, 0);
    sched_push(&s, 1, OP_W, 1, 0);
    sched_push(&s, 1, OP_F, 1, 1);
    sched_push(&s, 1, OP_BW, 1, 1);
    ck_assert_int_eq(sched_pred(&s, op, &p), 1);
    ck_assert(p.mb == 1 && p.kind == OP_BW);
    op.mb = 0;
    ck_assert_int_eq(sched_pred(&s, op, &p), 1);
    ck_assert(p.mb == 0 && p.kind == OP_B);
    sched_times t;
    ck_assert_int_eq(sched_eval_ideal(&s, 1, 1, 1, 0, &t, &st), 0);
    /* rank 1: F0 B0 W0 F1 BW1 back to back from t=1; rank 0's BW1 waits for BW1 of stage 1 */
    ck_assert_rel(t.end[0][3], 1 + 1 + 1 + 1 + 1 + 2 + 2, PG_REL_TOL);
    sched_times_free(&s, &t);
    sched_free(&s);
}
END_TEST

/* ---- closed forms (section 3), t_comm = 0 --------------------------------- */

START_TEST(test_closed_gpipe_1f1b)
{
    const char *names[] = {"gpipe", "1f1b"};
    for (int n = 0; n < 2; n++)
        for (int p = 1; p <= 8; p++)
            for (int m = 1; m <= 20; m += 3)
                for (int k = 0; k < NCOSTS; k++) {
                    double f = costs[k][0], b = costs[k][1], w = costs[k][2];
                    eval_result r = eval_gen(names[n], p, m, 1, f, b, w, 0.0);
                    ck_assert_rel(r.makespan, (m + p - 1) * (f + b + w), PG_REL_TOL);
                    ck_assert_rel(r.span, (m + p - 1) * (f + b + w), PG_REL_TOL);
                    ck_assert_rel(r.peak, n == 0 ? m : (m < p ? m : p), PG_REL_TOL);
                }
}
END_TEST

START_TEST(test_closed_interleaved)
{
    for (int p = 1; p <= 8; p++)
        for (int v = 1; v <= 4; v++)
            for (int g = 1; g <= 4; g++)
                for (int k = 0; k < NCOSTS; k++) {
                    int m = g * p;
                    double f = costs[k][0], b = costs[k][1], w = costs[k][2], t = f + b + w;
                    eval_result r = eval_gen("interleaved", p, m, v, f, b, w, 0.0);
                    ck_assert_rel(r.makespan, m * t + (p - 1) * t / v, PG_REL_TOL);
                    ck_assert_rel(r.span, m * t + (p - 1) * t / v, PG_REL_TOL);
                }
}
END_TEST

START_TEST(test_interleaved_peak_rank0)
{
    /* Rank 0 holds (vp + p - 1)/v activations once m > p (PipeOffload: dv + d - 1 chunks). */
    for (int p = 2; p <= 8; p++)
        for (int v = 2; v <= 4; v++) {
            schedule s;
            gen_ok("interleaved", p, 4 * p, v, &s);
            sched_times t;
            pg_status st;
            ck_assert_int_eq(sched_eval_ideal(&s, 1, 1, 1, 0, &t, &st), 0);
            ck_assert_rel(sched_peak_activations(&s, &t, 0), (double)(v * p + p - 1) / v, PG_REL_TOL);
            sched_times_free(&s, &t);
            sched_free(&s);
        }
}
END_TEST

START_TEST(test_closed_zbh1)
{
    for (int p = 1; p <= 8; p++)
        for (int m = 1; m <= 24; m++)
            for (int k = 0; k < NCOSTS; k++) {
                double f = costs[k][0], b = costs[k][1], w = costs[k][2];
                eval_result r = eval_gen("zb-h1", p, m, 1, f, b, w, 0.0);
                if (m >= p)
                    ck_assert_rel(r.makespan, m * (f + b + w) + (p - 1) * (f + b - w), PG_REL_TOL);
                if (m <= p) /* ZB paper appendix H */
                    ck_assert_rel(r.makespan, (m + p - 1) * (f + b) + w, PG_REL_TOL);
                ck_assert_rel(r.peak, m < p ? m : p, PG_REL_TOL);
            }
}
END_TEST

START_TEST(test_closed_zbh2)
{
    const double comms[] = {0.0, 0.05, 0.2};
    for (int p = 1; p <= 8; p++)
        for (int m = 2 * p - 1; m <= 2 * p + 12; m += 2)
            for (int k = 0; k < NCOSTS; k++)
                for (int c = 0; c < 3; c++) {
                    double f = costs[k][0], b = costs[k][1], w = costs[k][2];
                    eval_result r = eval_gen("zb-h2", p, m, 1, f, b, w, comms[c]);
                    ck_assert_rel(r.span, m * (f + b + w) + (p - 1) * (f + b - 2 * w) + 2 * (p - 1) * comms[c],
                                  PG_REL_TOL);
                    ck_assert_rel(r.peak, 2 * p - 1, PG_REL_TOL);
                }
}
END_TEST

/* ---- section 5.1: p = 8, m = 32 ------------------------------------------ */

START_TEST(test_slice_p8_m32)
{
    static const struct {
        const char *name;
        int chunks;
        double global0, span0, global1, span1, peak;
    } rows[] = {
        {"gpipe", 1, 117.0, 117.0, 117.7, 117.7, 32},
        {"1f1b", 1, 117.0, 117.0, 120.4, 120.4, 8},
        {"interleaved", 2, 106.5, 106.5, 108.0, 108.0, 11.5},
        {"zb-h1", 1, 103.0, 103.0, 105.8, 105.8, 8},
        {"zb-h2", 1, 103.0, 96.0, 103.35, 98.8, 15},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        eval_result a = eval_gen(rows[i].name, 8, 32, rows[i].chunks, 1.0, 1.0, 1.0, 0.0);
        eval_result b = eval_gen(rows[i].name, 8, 32, rows[i].chunks, 1.0, 1.1, 0.9, 0.05);
        ck_assert_rel(a.makespan, rows[i].global0, PG_REL_TOL);
        ck_assert_rel(a.span, rows[i].span0, PG_REL_TOL);
        ck_assert_rel(b.makespan, rows[i].global1, PG_REL_TOL);
        ck_assert_rel(b.span, rows[i].span1, PG_REL_TOL);
        ck_assert_rel(a.peak, rows[i].peak, PG_REL_TOL);
        ck_assert_rel(b.peak, rows[i].peak, PG_REL_TOL);
    }
}
END_TEST

START_TEST(test_peaks_per_rank)
{
    /* 1F1B: rank s holds min(p-s, m); GPipe: m everywhere. */
    const int p = 6;
    for (int m = 1; m <= 10; m++) {
        schedule a, g;
        gen_ok("1f1b", p, m, 1, &a);
        gen_ok("gpipe", p, m, 1, &g);
        sched_times ta, tg;
        pg_status st;
        ck_assert_int_eq(sched_eval_ideal(&a, 1, 1.2, 0.7, 0.1, &ta, &st), 0);
        ck_assert_int_eq(sched_eval_ideal(&g, 1, 1.2, 0.7, 0.1, &tg, &st), 0);
        for (int s = 0; s < p; s++) {
            ck_assert_rel(sched_peak_activations(&a, &ta, s), p - s < m ? p - s : m, PG_REL_TOL);
            ck_assert_rel(sched_peak_activations(&g, &tg, s), m, PG_REL_TOL);
        }
        sched_times_free(&a, &ta);
        sched_times_free(&g, &tg);
        sched_free(&a);
        sched_free(&g);
    }
}
END_TEST

START_TEST(test_fused_bw_costs_b_plus_w)
{
    /* p = 1: one rank runs F then BW per microbatch: m (F + B + W) exactly. */
    eval_result r = eval_gen("1f1b", 1, 5, 1, 0.5, 2.0, 3.0, 0.0);
    ck_assert_rel(r.makespan, 5 * (0.5 + 2.0 + 3.0), PG_REL_TOL);
}
END_TEST

/* ---- validation ----------------------------------------------------------- */

/* A valid p = 2, m = 2 1F1B, to be broken in each test. */
static void small(schedule *s)
{
    gen_ok("1f1b", 2, 2, 1, s);
}

static void expect_invalid(schedule *s, const char *needle)
{
    pg_status st;
    pg_status_clear(&st);
    int rc = sched_validate(s, &st);
    ck_assert_int_eq(rc, PG_EXIT_INPUT);
    ck_assert_int_eq(st.code, PG_EXIT_INPUT);
    ck_assert_msg(strstr(st.msg, needle) != NULL, "message '%s' lacks '%s'", st.msg, needle);
    sched_free(s);
}

START_TEST(test_validate_rejects)
{
    schedule s;
    pg_status st;
    small(&s);
    ck_assert_int_eq(sched_validate(&s, &st), 0);
    sched_free(&s);

    small(&s); /* missing F: drop rank 1's first op F(1,0) */
    memmove(&s.ops[1][0], &s.ops[1][1], (size_t)(s.nops[1] - 1) * sizeof(sched_op));
    s.nops[1]--;
    expect_invalid(&s, "F(stage 1, mb 0) is missing");

    small(&s); /* duplicate */
    sched_push(&s, 0, OP_F, 0, 1);
    expect_invalid(&s, "F(stage 0, mb 1) appears twice");

    small(&s); /* wrong rank */
    sched_push(&s, 1, OP_F, 0, 5 - 5);
    expect_invalid(&s, "F(stage 0, mb 0) is on rank 1");

    small(&s); /* stage out of range */
    sched_push(&s, 0, OP_F, 7, 0);
    expect_invalid(&s, "F(stage 7, mb 0) has a stage outside");

    small(&s); /* microbatch out of range */
    sched_push(&s, 0, OP_F, 0, 2);
    expect_invalid(&s, "F(stage 0, mb 2) has a microbatch outside");

    small(&s);
    sched_push(&s, 0, OP_F, 0, -1);
    expect_invalid(&s, "mb -1");

    small(&s); /* fused and split for one op */
    sched_push(&s, 0, OP_B, 0, 1);
    expect_invalid(&s, "both present");

    small(&s); /* split with W missing: turn BW(0,1) into B */
    for (int i = 0; i < s.nops[0]; i++)
        if (s.ops[0][i].kind == OP_BW && s.ops[0][i].mb == 1)
            s.ops[0][i].kind = OP_B;
    expect_invalid(&s, "W(stage 0, mb 1) is missing");

    small(&s); /* no backward at all */
    s.nops[1]--;
    expect_invalid(&s, "backward (BW, or B and W) of BW(stage 1, mb 1) is missing");

    small(&s); /* bad kind */
    s.ops[0][0].kind = 9;
    expect_invalid(&s, "op kind 9 is unknown");

    small(&s); /* placement outside the ranks */
    s.stage_rank[1] = 5;
    expect_invalid(&s, "stage 1 placed on rank 5");
}
END_TEST

START_TEST(test_deadlock_named)
{
    schedule s;
    sched_init(&s, "dl", 2, 1, 1);
    sched_place_contiguous(&s);
    sched_push(&s, 0, OP_BW, 0, 0); /* backward before its own forward */
    sched_push(&s, 0, OP_F, 0, 0);
    sched_push(&s, 1, OP_F, 1, 0);
    sched_push(&s, 1, OP_BW, 1, 0);
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(sched_validate(&s, &st), 0);
    ck_assert_int_eq(sched_check_deadlock(&s, &st), PG_EXIT_DEADLOCK);
    ck_assert_msg(strstr(st.msg, "rank 0 blocked at BW(stage 0, mb 0) waiting for BW(stage 1, mb 0)"), "%s",
                  st.msg);
    ck_assert_msg(strstr(st.msg, "rank 1 blocked at F(stage 1, mb 0) waiting for F(stage 0, mb 0)"), "%s", st.msg);
    sched_times t;
    pg_status_clear(&st);
    ck_assert_int_eq(sched_eval_ideal(&s, 1, 1, 1, 0, &t, &st), PG_EXIT_DEADLOCK);
    ck_assert(strstr(st.msg, "deadlock") != NULL);
    sched_replay rp;   /* a replay of it cannot be built either, for the same reason */
    pg_status_clear(&st);
    ck_assert_int_eq(sched_replay_build(&s, &rp, &st), PG_EXIT_DEADLOCK);
    ck_assert_msg(strstr(st.msg, "rank 0 blocked at BW(stage 0, mb 0)"), "%s", st.msg);
    ck_assert_ptr_null(rp.order);
    sched_free(&s);

    /* W before its own B on one rank: blocked on a later op of the same rank. */
    gen_ok("zb-h1", 2, 2, 1, &s);
    int ib = -1, iw = -1;
    for (int i = 0; i < s.nops[1]; i++) {
        if (s.ops[1][i].kind == OP_B && s.ops[1][i].mb == 0)
            ib = i;
        if (s.ops[1][i].kind == OP_W && s.ops[1][i].mb == 0)
            iw = i;
    }
    ck_assert(ib >= 0 && iw > ib);
    sched_op tmp = s.ops[1][ib];
    s.ops[1][ib] = s.ops[1][iw];
    s.ops[1][iw] = tmp;
    ck_assert_int_eq(sched_check_deadlock(&s, &st), PG_EXIT_DEADLOCK);
    ck_assert_msg(strstr(st.msg, "rank 1 blocked at W(stage 1, mb 0) waiting for B(stage 1, mb 0)"), "%s", st.msg);
    sched_free(&s);
}
END_TEST

START_TEST(test_generate_rejects)
{
    schedule s;
    pg_status st;
    sched_params p = params(4, 6, 2);
    ck_assert_int_eq(sched_generate("interleaved", &p, &s, &st), PG_EXIT_INPUT);
    ck_assert(strstr(st.msg, "microbatches") != NULL);
    ck_assert_int_eq(sched_generate("no-such", &p, &s, &st), PG_EXIT_INPUT);
    ck_assert(strstr(st.msg, "no-such") != NULL);
    p = params(0, 4, 1);
    ck_assert_int_eq(sched_generate("1f1b", &p, &s, &st), PG_EXIT_INPUT);
    ck_assert(strstr(st.msg, "'pp'") != NULL);
    p = params(2, 0, 1);
    ck_assert_int_eq(sched_generate("gpipe", &p, &s, &st), PG_EXIT_INPUT);
    ck_assert(strstr(st.msg, "'microbatches'") != NULL);
    p = params(2, 2, 0);
    ck_assert_int_eq(sched_generate("interleaved", &p, &s, &st), PG_EXIT_INPUT);
    p = params(2, 2, 1);
    p.t_b = -1;
    ck_assert_int_eq(sched_generate("zb-h1", &p, &s, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(sched_find_generator("zb-h2"));
    ck_assert_ptr_null(sched_find_generator("file:x"));
    int n = 0;
    for (const sched_generator *g = sched_generators(); g->name; g++, n++)
        ck_assert(g->generate && g->summary);
    ck_assert_int_ge(n, 5);
}
END_TEST

/* The registry is the one list of schedules: every query is derived from its
 * rows and their flags. */
START_TEST(test_registry_derived)
{
    const unsigned known_flags = SCHED_USES_CHUNKS | SCHED_OPTIMIZE_DEFAULT | SCHED_REFINE_ZB_ILP | SCHED_EP_OVERLAP;
    strbuf all, opt, manual;
    sb_init(&all);
    sb_init(&opt);
    sb_init(&manual);
    sched_names(0, ",", ",", &all);
    sched_names(SCHED_OPTIMIZE_DEFAULT, ",", ",", &opt);
    int n = 0, nopt = 0;
    for (const sched_generator *g = sched_generators(); g->name; g++, n++) {
        ck_assert(g->generate != NULL && g->summary != NULL && g->summary[0] != '\0');
        ck_assert_uint_eq(g->flags & ~known_flags, 0);
        ck_assert_ptr_eq(sched_find_generator(g->name), g);   /* names are unique */
        ck_assert(sched_has_flags(g->name, g->flags));
        ck_assert(sched_has_flags(g->name, 0));
        sb_appendf(&manual, "%s%s", n ? "," : "", g->name);
        if (g->flags & SCHED_OPTIMIZE_DEFAULT)
            nopt++;
        /* Every row generates a valid schedule on a case all of them accept. */
        sched_params p = params(4, 8, 1);
        p.chunks = 2;
        schedule s;
        pg_status st;
        pg_status_clear(&st);
        ck_assert_msg(sched_generate(g->name, &p, &s, &st) == 0, "%s: %s", g->name, st.msg);
        sched_free(&s);
    }
    ck_assert_str_eq(all.data, manual.data);
    ck_assert_str_eq(sched_optimize_defaults(), opt.data);
    ck_assert_int_ge(nopt, 1);
    ck_assert_int_lt(nopt, n);   /* a flag that selects, not every row */
    ck_assert(!sched_has_flags("no-such-schedule", 0));
    /* "a, b or c" */
    strbuf chunked;
    sb_init(&chunked);
    sched_names(SCHED_USES_CHUNKS, ", ", " or ", &chunked);
    ck_assert_ptr_nonnull(strstr(chunked.data, " or "));
    ck_assert_ptr_null(strstr(chunked.data, ", or"));

    /* The unknown-schedule message lists every row, and names its key as a field. */
    sched_params p = params(2, 2, 1);
    schedule s;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(sched_generate("no-such-schedule", &p, &s, &st), PG_EXIT_INPUT);
    ck_assert_str_eq(st.key, "schedule");
    for (const sched_generator *g = sched_generators(); g->name; g++)
        ck_assert_ptr_nonnull(strstr(st.msg, g->name));
    /* A generator's own check names its key as a field too. */
    p = params(4, 7, 1);
    p.chunks = 2;
    ck_assert_int_eq(sched_generate("interleaved", &p, &s, &st), PG_EXIT_INPUT);
    ck_assert_str_eq(st.key, "microbatches");
    ck_assert_str_eq(st.file, "");
    /* error.h's rule: a failed call leaves its output zeroed, nothing to free. */
    ck_assert_ptr_null(s.stage_rank);
    ck_assert_ptr_null(s.nops);
    ck_assert_ptr_null(s.ops);
    /* ... also when the generator had built it (dualpipe-v's m >= 2pp is checked by the generator itself) */
    p = params(4, 5, 1);
    ck_assert_int_eq(sched_generate("dualpipe-v", &p, &s, &st), PG_EXIT_INPUT);
    ck_assert_str_eq(st.key, "microbatches");
    ck_assert_ptr_null(s.ops);
    sb_free(&all);
    sb_free(&opt);
    sb_free(&manual);
    sb_free(&chunked);
}
END_TEST

/* ---- properties over random small cases ---------------------------------- */

/* Deterministic generator so failures reproduce. */
static unsigned long long rng_state = 0x9e3779b97f4a7c15ULL;
static unsigned rnd(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng_state >> 33);
}
static double rnd_unit(void)
{
    return (rnd() % 1000000) / 1000000.0;
}

static double end_of(const schedule *s, const sched_times *t, sched_op want, int *rank)
{
    int r = s->stage_rank[want.stage];
    *rank = r;
    for (int i = 0; i < s->nops[r]; i++)
        if (s->ops[r][i].stage == want.stage && s->ops[r][i].mb == want.mb && s->ops[r][i].kind == want.kind)
            return t->end[r][i];
    ck_abort_msg("predecessor not found");
    return 0.0;
}

START_TEST(test_properties)
{
    int checked = 0;
    for (int trial = 0; trial < 300; trial++) {
        const sched_generator *g = &sched_generators()[rnd() % 5];
        int p = 1 + (int)(rnd() % 6), m = 1 + (int)(rnd() % 12), v = 1 + (int)(rnd() % 3);
        if (strcmp(g->name, "interleaved") == 0)
            m = p * (1 + (int)(rnd() % 3));
        double f = 0.1 + rnd_unit(), b = 0.1 + rnd_unit(), w = 0.1 + rnd_unit(), c = rnd_unit() * 0.3;
        sched_params sp = params(p, m, v);
        schedule s;
        pg_status st;
        ck_assert_msg(sched_generate(g->name, &sp, &s, &st) == 0, "%s: %s", g->name, st.msg);
        ck_assert_int_eq(sched_validate(&s, &st), 0);
        ck_assert_int_eq(sched_check_deadlock(&s, &st), 0);
        sched_times t;
        ck_assert_int_eq(sched_eval_ideal(&s, f, b, w, c, &t, &st), 0);
        ck_assert(t.makespan >= m * (f + b + w) * (1 - PG_REL_TOL));
        ck_assert(t.span <= t.makespan * (1 + PG_REL_TOL));
        for (int r = 0; r < s.pp; r++)
            for (int i = 0; i < s.nops[r]; i++) {
                ck_assert(t.end[r][i] > t.start[r][i]);
                if (i > 0)
                    ck_assert(t.start[r][i] >= t.end[r][i - 1] - 1e-12);
                sched_op pred;
                if (sched_pred(&s, s.ops[r][i], &pred)) {
                    int pr;
                    double e = end_of(&s, &t, pred, &pr);
                    ck_assert(t.start[r][i] >= e + (pr != r ? c : 0.0) - 1e-12);
                }
            }
        sched_times_free(&s, &t);
        sched_free(&s);
        checked++;
    }
    ck_assert_int_eq(checked, 300);
}
END_TEST


/* ---- PyTorch CSV ------------------------------------------------------------ */

static void assert_same_schedule(const schedule *a, const schedule *b)
{
    ck_assert_int_eq(a->pp, b->pp);
    ck_assert_int_eq(a->v, b->v);
    ck_assert_int_eq(a->nstages, b->nstages);
    ck_assert_int_eq(a->m, b->m);
    for (int st = 0; st < a->nstages; st++)
        ck_assert_int_eq(a->stage_rank[st], b->stage_rank[st]);
    for (int r = 0; r < a->pp; r++) {
        ck_assert_int_eq(a->nops[r], b->nops[r]);
        for (int i = 0; i < a->nops[r]; i++) {
            ck_assert_int_eq(a->ops[r][i].stage, b->ops[r][i].stage);
            ck_assert_int_eq(a->ops[r][i].mb, b->ops[r][i].mb);
            ck_assert_int_eq(a->ops[r][i].kind, b->ops[r][i].kind);
        }
    }
}

static int import_text(const char *text, schedule *s, pg_status *st)
{
    pg_status_clear(st);
    return sched_import_torch_csv_text(text, strlen(text), "t.csv", s, st);
}

START_TEST(test_csv_export_format)
{
    schedule s;
    strbuf sb;
    gen_ok("1f1b", 2, 2, 1, &s);
    sb_init(&sb);
    sched_export_torch_csv(&s, &sb);
    ck_assert_str_eq(sb.data, "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
    sched_free(&s);
    sb_reset(&sb);
    gen_ok("zb-h1", 2, 2, 1, &s); /* split backward: I (input) and W (weight) */
    sched_export_torch_csv(&s, &sb);
    /* rank 0 runs W right after its B (lag 0); rank 1 defers W by one microbatch (lag 1) */
    ck_assert_str_eq(sb.data, "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1F1,1I1,1W0,1W1\n");
    sched_free(&s);
    sb_free(&sb);
}
END_TEST

START_TEST(test_csv_roundtrip_every_generator)
{
    for (const sched_generator *g = sched_generators(); g->name; g++) {
        int done = 0;
        for (int p = 1; p <= 4; p++)
            for (int m = p; m <= 4 * p; m += p) {
                schedule a, b;
                sched_params sp = params(p, m, 2);
                pg_status st;
                int rc = sched_generate(g->name, &sp, &a, &st);
                if (rc == PG_EXIT_INPUT)
                    continue; /* parameters this generator refuses (e.g. m < 2pp for dualpipe-v) */
                ck_assert_msg(rc == 0, "%s: %s", g->name, st.msg);
                done++;
                strbuf sb;
                sb_init(&sb);
                sched_export_torch_csv(&a, &sb);
                ck_assert_msg(import_text(sb.data, &b, &st) == 0, "%s: %s", g->name, st.msg);
                assert_same_schedule(&a, &b);
                sched_free(&b);
                sb_free(&sb);
                sched_free(&a);
            }
        ck_assert_msg(done >= 4, "%s: only %d parameter sets generated", g->name, done);
    }
}
END_TEST

START_TEST(test_csv_file_roundtrip)
{
    schedule a, b;
    gen_ok("interleaved", 4, 8, 2, &a);
    strbuf sb;
    sb_init(&sb);
    sched_export_torch_csv(&a, &sb);
    char path[] = "/tmp/pg-test-sched-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq((int)write(fd, sb.data, sb.len), (int)sb.len);
    close(fd);
    pg_status st;
    ck_assert_msg(sched_import_torch_csv(path, &b, &st) == 0, "%s", st.msg);
    assert_same_schedule(&a, &b);
    ck_assert(strncmp(b.name, "file:", 5) == 0);
    sched_free(&b);
    unlink(path);
    ck_assert_int_eq(sched_import_torch_csv(path, &b, &st), PG_EXIT_INPUT);
    ck_assert(strstr(st.msg, path) != NULL);
    sb_free(&sb);
    sched_free(&a);
}
END_TEST

START_TEST(test_csv_tolerant_reader)
{
    /* Idle slots (empty cells), blanks, CRLF line ends, quoted cells, trailing blank lines. */
    schedule a, b;
    pg_status st;
    gen_ok("1f1b", 2, 2, 1, &a);
    ck_assert_msg(import_text("0F0,,0F1, 0B0 ,0B1\r\n,1F0,1B0,\"1F1\",1B1,\r\n\r\n", &b, &st) == 0, "%s", st.msg);
    assert_same_schedule(&a, &b);
    sched_free(&b);
    sched_free(&a);
}
END_TEST

static void expect_csv_error(const char *text, int code, const char *needle)
{
    schedule s;
    pg_status st;
    int rc = import_text(text, &s, &st);
    ck_assert_msg(rc == code, "'%s': rc %d (want %d): %s", text, rc, code, st.msg);
    ck_assert_msg(strstr(st.msg, needle) != NULL, "'%s': message '%s' lacks '%s'", text, st.msg, needle);
}

START_TEST(test_csv_errors)
{
    expect_csv_error("0F0,0X0\n", PG_EXIT_INPUT, "t.csv:1:2: action '0X0': unknown token");
    expect_csv_error("F0\n", PG_EXIT_INPUT, "t.csv:1:1: action 'F0': unknown token");
    expect_csv_error("0F\n", PG_EXIT_INPUT, "microbatch");
    expect_csv_error("0F0x\n", PG_EXIT_INPUT, "trailing");
    expect_csv_error("0F0,0SEND_F0\n", PG_EXIT_INPUT, "t.csv:1:2: action '0SEND_F0': communication");
    expect_csv_error("0F99999999999\n", PG_EXIT_INPUT, "too large");
    expect_csv_error("", PG_EXIT_INPUT, "empty");
    expect_csv_error(",,\n", PG_EXIT_INPUT, "no actions");
    /* stage 1 on rank 0 and rank 1 */
    expect_csv_error("0F0,1F0,1B0,0B0\n1F0\n", PG_EXIT_INPUT, "t.csv:2:1: action '1F0': stage 1 is on two ranks");
    /* a third row holding nothing: rank out of range for 2 stages */
    expect_csv_error("0F0,0B0\n1F0,1B0\n,,\n", PG_EXIT_INPUT, "t.csv:3: rank 2 has no actions");
    /* uneven stages per rank */
    expect_csv_error("0F0,1F0,1B0,0B0\n2F0,2B0\n", PG_EXIT_INPUT, "holds 1 stages but rank 0 holds 2");
    /* stage 1 never appears */
    expect_csv_error("0F0,2F0,2B0,0B0\n", PG_EXIT_INPUT, "stage 1 appears on no row");
    /* missing forward of microbatch 1 */
    expect_csv_error("0F0,0B0,0B1\n", PG_EXIT_INPUT, "t.csv:1: missing op '0F1'");
    /* missing backward */
    expect_csv_error("0F0,0F1,0B0\n", PG_EXIT_INPUT, "missing op '0B1'");
    /* I without W */
    expect_csv_error("0F0,0I0\n", PG_EXIT_INPUT, "missing op '0W0'");
    /* duplicated */
    expect_csv_error("0F0,0F0,0B0\n", PG_EXIT_INPUT, "t.csv:1:2: action '0F0': duplicated op (also at row 1, column 1)");
    /* mixed fused and split */
    expect_csv_error("0F0,0I0,0B0,0W0\n", PG_EXIT_INPUT, "t.csv:1:3: action '0B0': mixed fused and split");
    /* cannot complete: each rank waits for the other */
    expect_csv_error("0B0,0F0\n1F0,1B0\n", PG_EXIT_DEADLOCK,
                     "rank 0 blocked at BW(stage 0, mb 0) waiting for BW(stage 1, mb 0)");
    expect_csv_error("0B0,0F0\n1F0,1B0\n", PG_EXIT_DEADLOCK,
                     "rank 1 blocked at F(stage 1, mb 0) waiting for F(stage 0, mb 0)");
}
END_TEST

/* Swaps two cells of one line (two ops of one rank): the edit most likely
 * to give a well-formed order that cannot complete. */
static void swap_cells(char *text, size_t len)
{
    size_t nl = 0;
    for (size_t i = 0; i < len; i++)
        nl += text[i] == '\n';
    size_t want = nl ? rnd() % nl : 0, line = 0, a = 0;
    while (a < len && line < want)
        line += text[a++] == '\n';
    size_t b = a;
    while (b < len && text[b] != '\n')
        b++;
    size_t starts[256], ends[256];
    int n = 0;
    for (size_t i = a, st = a; i <= b && n < 256; i++)
        if (i == b || text[i] == ',') {
            starts[n] = st;
            ends[n++] = i;
            st = i + 1;
        }
    if (n < 2)
        return;
    int x = (int)(rnd() % (unsigned)n), y = (int)(rnd() % (unsigned)n);
    if (x == y)
        return;
    if (x > y) {
        int t = x;
        x = y;
        y = t;
    }
    /* rebuild the line: cells before x, y, between, x, after y */
    size_t cap = b - a + 1;
    char *tmp = pg_xmalloc(cap);
    size_t k = 0;
    memcpy(tmp + k, text + a, starts[x] - a);
    k += starts[x] - a;
    memcpy(tmp + k, text + starts[y], ends[y] - starts[y]);
    k += ends[y] - starts[y];
    memcpy(tmp + k, text + ends[x], starts[y] - ends[x]);
    k += starts[y] - ends[x];
    memcpy(tmp + k, text + starts[x], ends[x] - starts[x]);
    k += ends[x] - starts[x];
    memcpy(tmp + k, text + ends[y], b - ends[y]);
    k += b - ends[y];
    memcpy(text + a, tmp, k);
    free(tmp);
}

/* Thousands of seeded random edits of exported CSVs: the importer must never
 * crash and must answer 0 (and then a valid, completable schedule), 2 or 4. */
START_TEST(test_csv_mutation_fuzz)
{
    static const char alphabet[] = "0123456789FIWB,\n\r \"SX_-";
    const char *bases[] = {"1f1b", "zb-h2", "interleaved", "gpipe"};
    int counts[5] = {0};
    rng_state = 20240601ULL;
    for (int trial = 0; trial < 4000; trial++) {
        schedule a;
        gen_ok(bases[trial % 4], 3, 3, 2, &a);
        strbuf sb;
        sb_init(&sb);
        sched_export_torch_csv(&a, &sb);
        sched_free(&a);
        char *text = pg_xmalloc(sb.len * 2 + 64);
        size_t len = sb.len;
        memcpy(text, sb.data, len);
        sb_free(&sb);
        int edits = 1 + (int)(rnd() % 4);
        for (int e = 0; e < edits; e++) {
            size_t at = len ? rnd() % len : 0;
            switch (rnd() % 8) {
            case 6:
            case 7:
                swap_cells(text, len);
                break;
            case 0: /* delete a byte */
                if (len) {
                    memmove(text + at, text + at + 1, len - at - 1);
                    len--;
                }
                break;
            case 1: /* insert a byte */
                memmove(text + at + 1, text + at, len - at);
                text[at] = alphabet[rnd() % (sizeof alphabet - 1)];
                len++;
                break;
            case 2: /* replace a byte, sometimes with an arbitrary one */
                if (len)
                    text[at] = (rnd() % 4) ? alphabet[rnd() % (sizeof alphabet - 1)] : (char)(rnd() % 256);
                break;
            case 3: /* swap two bytes (often two ops) */
                if (len) {
                    size_t bt = rnd() % len;
                    char c = text[at];
                    text[at] = text[bt];
                    text[bt] = c;
                }
                break;
            case 4: /* truncate */
                len = at;
                break;
            default: /* duplicate a span */
                if (len && len < sb.len * 2) {
                    size_t n = 1 + rnd() % 6;
                    if (at + n > len)
                        n = len - at;
                    if (len + n <= sb.len * 2 + 32) {
                        memmove(text + at + n, text + at, len - at);
                        len += n;
                    }
                }
                break;
            }
        }
        schedule s;
        pg_status st;
        pg_status_clear(&st);
        int rc = sched_import_torch_csv_text(text, len, "fuzz.csv", &s, &st);
        ck_assert_msg(rc == 0 || rc == PG_EXIT_INPUT || rc == PG_EXIT_DEADLOCK, "trial %d: rc %d", trial, rc);
        ck_assert_int_eq(st.code, rc);
        counts[rc]++;
        if (rc == 0) {
            ck_assert_int_eq(sched_validate(&s, &st), 0);
            ck_assert_int_eq(sched_check_deadlock(&s, &st), 0);
            sched_free(&s);
        } else {
            ck_assert(strstr(st.msg, "fuzz.csv") != NULL);
        }
        free(text);
    }
    /* The mutations must exercise all three outcomes. */
    ck_assert_int_gt(counts[0], 0);
    ck_assert_int_gt(counts[PG_EXIT_INPUT], 0);
    ck_assert_int_gt(counts[PG_EXIT_DEADLOCK], 0);
}
END_TEST

/* ---- drawing ---------------------------------------------------------------- */

/* A large file whose backward chain runs against rank order (each rank:
 * F, B, F, B, ... so only one microbatch is in flight): the old sweep-based
 * replay advanced one rank per sweep (ranks x sweeps = quadratic).  The
 * replay must stay linear: at most 2 x ops + ranks readiness checks. */
#define BIG_CSV_RANKS 512
#define BIG_CSV_MICROBATCHES 48
START_TEST(test_csv_large_is_linear)
{
    strbuf sb;
    sb_init(&sb);
    for (int r = 0; r < BIG_CSV_RANKS; r++) {
        for (int j = 0; j < BIG_CSV_MICROBATCHES; j++)
            sb_appendf(&sb, "%s%dF%d,%dB%d", j ? "," : "", r, j, r, j);
        sb_append(&sb, "\n");
    }
    schedule s;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_msg(sched_import_torch_csv_text(sb.data, sb.len, "big.csv", &s, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(s.pp, BIG_CSV_RANKS);
    ck_assert_int_eq(s.m, BIG_CSV_MICROBATCHES);
    sched_index ix;
    ck_assert_int_eq(sched_index_build(&s, &ix, &st), 0);
    int *order = pg_xmalloc((size_t)ix.total * sizeof *order);
    int *next = pg_xmalloc((size_t)s.pp * sizeof *next);
    long checks = 0;
    ck_assert_int_eq(sched_index_replay_counted(&s, &ix, order, next, &checks), ix.total);
    ck_assert_int_eq(ix.total, 2 * BIG_CSV_RANKS * BIG_CSV_MICROBATCHES);
    ck_assert_int_le(checks, 2L * ix.total + s.pp);
    /* the order is topological: every op after its predecessor */
    int *pos = pg_xmalloc((size_t)ix.total * sizeof *pos);
    for (int k = 0; k < ix.total; k++)
        pos[order[k]] = k;
    for (int g = 0; g < ix.total; g++)
        if (ix.pred[g] >= 0)
            ck_assert_int_lt(pos[ix.pred[g]], pos[g]);
    free(pos);
    free(order);
    free(next);
    sched_index_free(&ix);
    sched_free(&s);
    sb_free(&sb);
}
END_TEST

START_TEST(test_draw)
{
    const char *names[] = {"1f1b", "zb-h1", "interleaved"};
    for (int n = 0; n < 3; n++) {
        schedule s;
        gen_ok(names[n], 4, 4, 2, &s);
        sched_times t;
        pg_status st;
        ck_assert_int_eq(sched_eval_ideal(&s, 1.0, 1.0, 1.0, 0.0, &t, &st), 0);
        strbuf sb;
        sb_init(&sb);
        /* Wide enough that every op (>= 0.5 s) gets >= 4 columns for its label. */
        int width = (int)ceil(t.makespan * 8) + 1;
        sched_draw(&s, &t, 0, width, &sb);
        ck_assert(strchr(sb.data, '\x1b') == NULL);
        int lines = 0;
        const char *line = sb.data;
        while (line && *line) {
            const char *eol = strchr(line, '\n');
            if (strncmp(line, "rank ", 5) == 0) {
                int r = lines++;
                ck_assert_int_lt(r, s.pp);
                /* the ops appear in execution order, each labelled kind + microbatch */
                const char *pos = strchr(line, '|');
                for (int i = 0; i < s.nops[r]; i++) {
                    char label[32];
                    snprintf(label, sizeof label, "%s%d", op_kind_name((op_kind)s.ops[r][i].kind),
                             (int)s.ops[r][i].mb);
                    const char *hit = strstr(pos, label);
                    ck_assert_msg(hit && hit < eol, "%s rank %d: op %d (%s) not found in order", names[n], r, i, label);
                    pos = hit + strlen(label);
                }
                /* idle shows as '.' where the rank waits (every rank but 0 starts late) */
                if (r > 0)
                    ck_assert(strchr(line, '.') && strchr(line, '.') < eol);
            }
            line = eol ? eol + 1 : NULL;
        }
        ck_assert_int_eq(lines, s.pp);
        ck_assert(strstr(sb.data, "legend:") != NULL);
        ck_assert(strstr(sb.data, "BW fused backward") != NULL);
        sb_reset(&sb);
        sched_draw(&s, &t, 1, width, &sb);
        ck_assert(strstr(sb.data, "\x1b[") != NULL);
        sb_reset(&sb);
        sched_draw(&s, NULL, 0, 0, &sb); /* default times and width */
        ck_assert(strstr(sb.data, "rank 3 |") != NULL);
        sb_free(&sb);
        sched_times_free(&s, &t);
        sched_free(&s);
    }
}
END_TEST

/* PipeOffload's group-interleaved 1F1B: with every pass one slot (F = B = W =
 * v per rank share), the reference generator's schedule lengths and rank-0
 * peaks (chunk units G(v-1) + p; Table 1 of the paper: GIS pv, GIS-H
 * g(v-1) + p). */
START_TEST(test_group_interleaved)
{
    static const struct { const char *name; int pp, m, v; double slots, peak_chunks; } ref[] = {
        {"gis", 4, 8, 2, 54, 8},    {"gis-h", 4, 8, 2, 56, 6},   {"gis", 8, 16, 2, 110, 16},
        {"gis-h", 8, 16, 2, 114, 12}, {"gis-h", 8, 32, 2, 210, 12}, {"gis-h", 8, 16, 3, 166, 16},
    };
    for (size_t i = 0; i < sizeof ref / sizeof ref[0]; i++) {
        double v = ref[i].v;
        eval_result r = eval_gen(ref[i].name, ref[i].pp, ref[i].m, ref[i].v, v, v, v, 0);
        ck_assert_msg(fabs(r.makespan - ref[i].slots) < 1e-9, "%s p=%d m=%d v=%d: %g slots, want %g", ref[i].name,
                      ref[i].pp, ref[i].m, ref[i].v, r.makespan, ref[i].slots);
        ck_assert_rel(r.peak * v, ref[i].peak_chunks, PG_REL_TOL);
    }
    /* Table 1's closed form of rank 0's peak over a grid of p and v */
    for (int pp = 2; pp <= 8; pp++)
        for (int v = 1; v <= 3; v++) {
            int g = (pp + 1) / 2;
            eval_result h = eval_gen("gis-h", pp, 4 * pp, v, v, v, v, 0);
            eval_result full = eval_gen("gis", pp, 4 * pp, v, v, v, v, 0);
            ck_assert_rel(h.peak * v, g * (v - 1) + pp, PG_REL_TOL);
            ck_assert_rel(full.peak * v, pp * v, PG_REL_TOL);
        }
}
END_TEST

/* Megatron-Core's combined 1F1B (sched_params.ep_overlap): interleaved runs
 * one more warm-up forward per rank (capped at every op), then marks each
 * steady-state forward, always followed by a backward; the same ops as
 * without; 1f1b does it with pp = 1 (F0, F1+B0, ..., B(m-1)) and refuses
 * pp > 1 naming ep.overlap. */
START_TEST(test_ep_overlap_generators)
{
    pg_status st;
    for (int pp = 2; pp <= 4; pp++) {
        sched_params p = {.pp = pp, .m = 2 * pp, .chunks = 2};
        schedule plain, comb;
        ck_assert(sched_generate("interleaved", &p, &plain, &st) == 0);
        p.ep_overlap = 1;
        ck_assert_msg(sched_generate("interleaved", &p, &comb, &st) == 0, "%s", st.msg);
        for (int r = 0; r < pp; r++) {
            ck_assert_int_eq(plain.nops[r], comb.nops[r]);
            /* the warm-up: the leading forwards, less the first steady-state one when there is one */
            int total = p.m * p.chunks, lead0 = 0, lead1 = 0, marked = 0;
            while (lead0 < total && plain.ops[r][lead0].kind == OP_F)
                lead0++;
            while (lead1 < total && comb.ops[r][lead1].kind == OP_F)
                lead1++;
            int warm0 = lead0 < total ? lead0 - 1 : total, warm1 = lead1 < total ? lead1 - 1 : total;
            ck_assert_int_eq(warm1, warm0 + 1 < total ? warm0 + 1 : total);
            for (int i = 0; i < comb.nops[r]; i++) {
                ck_assert(!plain.ops[r][i].overlap_next);
                if (!comb.ops[r][i].overlap_next)
                    continue;
                marked++;
                ck_assert_int_eq(comb.ops[r][i].kind, OP_F);
                ck_assert_int_eq(comb.ops[r][i + 1].kind, OP_BW);
            }
            ck_assert_int_eq(marked, total - warm1);
        }
        sched_free(&plain);
        sched_free(&comb);
    }
    sched_params one = {.pp = 1, .m = 4, .chunks = 1, .ep_overlap = 1};
    schedule s;
    ck_assert(sched_generate("1f1b", &one, &s, &st) == 0);
    static const struct { int kind, mb, marked; } want[] = {
        {OP_F, 0, 0}, {OP_F, 1, 1}, {OP_BW, 0, 0}, {OP_F, 2, 1}, {OP_BW, 1, 0}, {OP_F, 3, 1}, {OP_BW, 2, 0},
        {OP_BW, 3, 0}};
    ck_assert_int_eq(s.nops[0], 8);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(s.ops[0][i].kind, want[i].kind);
        ck_assert_int_eq(s.ops[0][i].mb, want[i].mb);
        ck_assert_int_eq(s.ops[0][i].overlap_next, want[i].marked);
    }
    sched_free(&s);
    sched_params two = {.pp = 2, .m = 4, .chunks = 1, .ep_overlap = 1};
    pg_status_clear(&st);
    ck_assert_int_eq(sched_generate("1f1b", &two, &s, &st), PG_EXIT_INPUT);
    ck_assert_str_eq(st.key, "ep.overlap");
}
END_TEST

/* sched_eval_combined against its closed form, pp = 1 (1f1b, combined):
 * F0 alone (compute + comm), m - 1 steps of max(F + BW computes, their
 * step comms), the last BW alone: in the compute-bound and the comm-bound
 * regime, and with step comms longer than the ops' own.  Without marks it is sched_eval_staged_pairs of compute + comm,
 * and on an interleaved pipeline each step's two ops start and end
 * together. */
START_TEST(test_eval_combined_closed_form)
{
    pg_status st;
    const int m = 6;
    const double cf = 1.0, cbw = 2.0, comms[3] = {0.5, 2.0, 0.5}, extras[3] = {0.0, 0.0, 1.5};
    for (int k = 0; k < 3; k++) {
        double a = comms[k], e = extras[k];
        sched_params p = {.pp = 1, .m = m, .chunks = 1, .ep_overlap = 1};
        schedule s;
        ck_assert(sched_generate("1f1b", &p, &s, &st) == 0);
        double compute[1][OP_KIND_COUNT] = {{0}}, comm[1][OP_KIND_COUNT] = {{0}}, t_pair[1] = {0.0};
        compute[0][OP_F] = cf;
        compute[0][OP_BW] = cbw;
        double step_comm[1][OP_KIND_COUNT] = {{0}};
        comm[0][OP_F] = comm[0][OP_BW] = a;
        step_comm[0][OP_F] = step_comm[0][OP_BW] = a + e;
        sched_times t;
        ck_assert_msg(sched_eval_combined(&s, (const double (*)[OP_KIND_COUNT])compute,
                                          (const double (*)[OP_KIND_COUNT])comm,
                                          e > 0 ? (const double (*)[OP_KIND_COUNT])step_comm : NULL, t_pair, NULL, &t, &st) == 0,
                      "%s", st.msg);
        double step = cf + cbw > 2 * (a + e) ? cf + cbw : 2 * (a + e);
        ck_assert_rel(t.makespan, (cf + a) + (m - 1) * step + (cbw + a), PG_REL_TOL);
        sched_times_free(&s, &t);
        sched_free(&s);
    }
    /* no marks: the plain evaluator of compute + comm */
    sched_params p = {.pp = 4, .m = 8, .chunks = 2};
    schedule s;
    ck_assert(sched_generate("interleaved", &p, &s, &st) == 0);
    double (*compute)[OP_KIND_COUNT] = calloc((size_t)s.nstages, sizeof *compute);
    double (*comm)[OP_KIND_COUNT] = calloc((size_t)s.nstages, sizeof *comm);
    double (*sum)[OP_KIND_COUNT] = calloc((size_t)s.nstages, sizeof *sum);
    double t_pair[16];
    for (int i = 0; i < 16; i++)
        t_pair[i] = 0.01 * (i % 5);
    for (int k = 0; k < s.nstages; k++)
        for (int kind = 0; kind < OP_KIND_COUNT; kind++) {
            compute[k][kind] = 1.0 + 0.1 * k + 0.3 * kind;
            comm[k][kind] = 0.2 + 0.05 * k;
            sum[k][kind] = compute[k][kind] + comm[k][kind];
        }
    sched_times a, b;
    ck_assert(sched_eval_combined(&s, (const double (*)[OP_KIND_COUNT])compute, (const double (*)[OP_KIND_COUNT])comm,
                                  NULL, t_pair, NULL, &a, &st) == 0);
    ck_assert(sched_eval_staged_pairs(&s, (const double (*)[OP_KIND_COUNT])sum, t_pair, &b, &st) == 0);
    ck_assert_rel(a.makespan, b.makespan, PG_REL_TOL);
    for (int r = 0; r < s.pp; r++)
        for (int i = 0; i < s.nops[r]; i++)
            ck_assert_rel(a.end[r][i], b.end[r][i], PG_REL_TOL);
    sched_times_free(&s, &a);
    /* the same evaluation on a replay built once (calibrate's surrogate): the same times, exactly, twice */
    sched_replay rp;
    ck_assert(sched_replay_build(&s, &rp, &st) == 0);
    ck_assert_int_eq(rp.ix.total, sched_total_ops(&s));
    for (int twice = 0; twice < 2; twice++) {
        sched_eval_staged_pairs_replayed(&s, &rp, (const double (*)[OP_KIND_COUNT])sum, t_pair, &a);
        ck_assert(a.makespan == b.makespan && a.span == b.span);
        for (int r = 0; r < s.pp; r++)
            for (int i = 0; i < s.nops[r]; i++)
                ck_assert(a.start[r][i] == b.start[r][i] && a.end[r][i] == b.end[r][i]);
        sched_times_free(&s, &a);
    }
    sched_replay_free(&rp);
    sched_times_free(&s, &b);
    sched_free(&s);
    /* marked: every step's two ops share their times, and the run completes */
    p.ep_overlap = 1;
    ck_assert(sched_generate("interleaved", &p, &s, &st) == 0);
    ck_assert_msg(sched_eval_combined(&s, (const double (*)[OP_KIND_COUNT])compute,
                                      (const double (*)[OP_KIND_COUNT])comm, NULL, t_pair, NULL, &a, &st) == 0,
                  "%s", st.msg);
    int steps = 0;
    for (int r = 0; r < s.pp; r++)
        for (int i = 0; i < s.nops[r]; i++)
            if (s.ops[r][i].overlap_next) {
                ck_assert(a.start[r][i] == a.start[r][i + 1] && a.end[r][i] == a.end[r][i + 1]);
                steps++;
            }
    ck_assert(steps > 0);
    /* a step's two sends: through one port they share it, and the transfer-bound pipeline takes longer;
     * through different ports, or of no time to share, nothing changes */
    for (int k = 0; k < s.nstages; k++)
        for (int kind = 0; kind < OP_KIND_COUNT; kind++) {
            compute[k][kind] = 0.01;
            comm[k][kind] = 0.0;
        }
    double big[16], none[16];
    int one_port[16], own_port[16];
    for (int i = 0; i < 16; i++) {
        t_pair[i] = big[i] = 1.0;
        none[i] = 0.0;
        one_port[i] = 0;
        own_port[i] = i % s.pp;   /* the destination rank's: two sends of a step go to two ranks */
    }
    sched_times base, shared, apart, empty;
    const sched_step_sends sh = {.xfer_pair = big, .port_pair = one_port}, ap = {.xfer_pair = big, .port_pair = own_port},
                           em = {.xfer_pair = none, .port_pair = one_port};
    ck_assert(sched_eval_combined(&s, (const double (*)[OP_KIND_COUNT])compute, (const double (*)[OP_KIND_COUNT])comm,
                                  NULL, t_pair, NULL, &base, &st) == 0);
    ck_assert(sched_eval_combined(&s, (const double (*)[OP_KIND_COUNT])compute, (const double (*)[OP_KIND_COUNT])comm,
                                  NULL, t_pair, &sh, &shared, &st) == 0);
    ck_assert(sched_eval_combined(&s, (const double (*)[OP_KIND_COUNT])compute, (const double (*)[OP_KIND_COUNT])comm,
                                  NULL, t_pair, &ap, &apart, &st) == 0);
    ck_assert(sched_eval_combined(&s, (const double (*)[OP_KIND_COUNT])compute, (const double (*)[OP_KIND_COUNT])comm,
                                  NULL, t_pair, &em, &empty, &st) == 0);
    ck_assert_msg(shared.makespan > base.makespan * 1.01, "shared %g, base %g", shared.makespan, base.makespan);
    ck_assert_rel(apart.makespan, base.makespan, PG_REL_TOL);
    ck_assert_rel(empty.makespan, base.makespan, PG_REL_TOL);
    sched_times_free(&s, &base);
    sched_times_free(&s, &shared);
    sched_times_free(&s, &apart);
    sched_times_free(&s, &empty);
    sched_times_free(&s, &a);
    sched_free(&s);
    free(compute);
    free(comm);
    free(sum);
}
END_TEST

static Suite *schedule_suite(void)
{
    Suite *s = suite_create("schedule");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_container);
    tcase_add_test(tc, test_registry_derived);
    tcase_add_test(tc, test_placements);
    tcase_add_test(tc, test_pred);
    tcase_add_test(tc, test_closed_gpipe_1f1b);
    tcase_add_test(tc, test_closed_interleaved);
    tcase_add_test(tc, test_interleaved_peak_rank0);
    tcase_add_test(tc, test_closed_zbh1);
    tcase_add_test(tc, test_closed_zbh2);
    tcase_add_test(tc, test_slice_p8_m32);
    tcase_add_test(tc, test_peaks_per_rank);
    tcase_add_test(tc, test_fused_bw_costs_b_plus_w);
    tcase_add_test(tc, test_validate_rejects);
    tcase_add_test(tc, test_deadlock_named);
    tcase_add_test(tc, test_generate_rejects);
    tcase_add_test(tc, test_ep_overlap_generators);
    tcase_add_test(tc, test_eval_combined_closed_form);
    tcase_add_test(tc, test_properties);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    TCase *io = tcase_create("io");
    tcase_add_test(io, test_csv_export_format);
    tcase_add_test(io, test_csv_roundtrip_every_generator);
    tcase_add_test(io, test_csv_file_roundtrip);
    tcase_add_test(io, test_csv_tolerant_reader);
    tcase_add_test(io, test_csv_errors);
    tcase_add_test(io, test_csv_mutation_fuzz);
    tcase_add_test(io, test_csv_large_is_linear);
    tcase_add_test(io, test_draw);
    tcase_add_test(io, test_group_interleaved);
    tcase_set_timeout(io, 30);
    suite_add_tcase(s, io);
    return s;
}

int main(void)
{
    return pg_run_suite(schedule_suite());
}
