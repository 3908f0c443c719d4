/* test_opt.c: the lower bound on makespan (src/opt/bound.h).
 *
 * The bound is checked against schedules timed by the schedule layer's ideal
 * evaluator (the simulator's model): it must never exceed the makespan of a
 * schedule that respects the limit, must equal seed 000's closed form and
 * the optimum at K = 1, and must be close to the best shipped schedule. */
#include <check.h>
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt/bound.h"
#include "opt/glpk_guard.h"
#include "schedule/schedule.h"
#include "testutil.h"
#include "util/units.h"

/* The zero-bubble paper's M_W / M_B (the contract's default w_fraction). */
#define WF 0.4324
/* Bound <= makespan, up to float rounding of sums of op times. */
#define LE_TOL 1e-9
/* The tightness acceptance: best schedule within 10 % of the bound. */
#define TIGHT_RATIO 1.10

/* ---- helpers ------------------------------------------------------------ */

/* Per-stage arrays of a uniform workload for schedule s (chunk ops t/v). */
typedef struct uniform_in {
    double *f, *b, *w, *wf;
    bound_input in;
} uniform_in;

static void uniform_make(uniform_in *u, const schedule *s, double tf, double tb, double tw, double c,
                         double wf, double K, int split, int remat)
{
    int S = s->nstages;
    u->f = calloc((size_t)S, sizeof(double));
    u->b = calloc((size_t)S, sizeof(double));
    u->w = calloc((size_t)S, sizeof(double));
    u->wf = calloc((size_t)S, sizeof(double));
    for (int i = 0; i < S; i++) {
        u->f[i] = tf / s->v;
        u->b[i] = tb / s->v;
        u->w[i] = tw / s->v;
        u->wf[i] = wf;
    }
    u->in = (bound_input){.pp = s->pp, .nstages = S, .m = s->m, .stage_rank = s->stage_rank, .f = u->f,
                          .b = u->b, .w = u->w, .w_fraction = u->wf, .comm_s = c, .mem_limit = K,
                          .split = split, .remat = remat};
}

static void uniform_free(uniform_in *u)
{
    free(u->f);
    free(u->b);
    free(u->w);
    free(u->wf);
}

static double lb(const schedule *s, double tf, double tb, double tw, double c, double wf, double K, int split,
                 int remat, bound_result *res)
{
    uniform_in u;
    uniform_make(&u, s, tf, tb, tw, c, wf, K, split, remat);
    bound_result r;
    pg_status st;
    pg_status_clear(&st);
    int rc = bound_lower(&u.in, &r, &st);
    ck_assert_msg(rc == 0, "bound_lower failed: %s", st.msg);
    uniform_free(&u);
    if (res)
        *res = r;
    return r.lower_bound;
}

typedef struct mem_event {
    double t;
    int release;      /* 1: release (sorts first at equal times) */
    double delta;
} mem_event;

static int ev_cmp(const void *pa, const void *pb)
{
    const mem_event *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return b->release - a->release;
}

/* The contract's memory.limit count on the worst rank: F start +1/v, B end
 * -(1-wf)/v, W end -wf/v, BW end -1/v; releases first at equal times. */
static double zb_peak(const schedule *s, const sched_times *t, double wf)
{
    double worst = 0;
    for (int r = 0; r < s->pp; r++) {
        int n = s->nops[r];
        mem_event *ev = calloc((size_t)n + 1, sizeof *ev);
        for (int i = 0; i < n; i++) {
            double u = 1.0 / s->v;
            switch (s->ops[r][i].kind) {
            case OP_F: ev[i] = (mem_event){t->start[r][i], 0, u}; break;
            case OP_B: ev[i] = (mem_event){t->end[r][i], 1, -(1 - wf) * u}; break;
            case OP_W: ev[i] = (mem_event){t->end[r][i], 1, -wf * u}; break;
            default: ev[i] = (mem_event){t->end[r][i], 1, -u}; break;
            }
        }
        qsort(ev, (size_t)n, sizeof *ev, ev_cmp);
        double cur = 0;
        for (int i = 0; i < n; i++) {
            cur += ev[i].delta;
            if (cur > worst)
                worst = cur;
        }
        free(ev);
    }
    return worst;
}

static double frand(double lo, double hi)
{
    return lo + (hi - lo) * (double)rand() / RAND_MAX;
}

/* ---- seed 000's K = 1 result -------------------------------------------- */

/* One microbatch at a time: each rank runs F, B (, W) of mb j, then mb j+1. */
static void serial_schedule(schedule *s, int p, int m, int split)
{
    sched_init(s, "serial", p, 1, m);
    sched_place_contiguous(s);
    for (int j = 0; j < m; j++)
        for (int r = 0; r < p; r++) {
            sched_push(s, r, OP_F, r, j);
            if (split) {
                sched_push(s, r, OP_B, r, j);
                sched_push(s, r, OP_W, r, j);
            } else {
                sched_push(s, r, OP_BW, r, j);
            }
        }
}

START_TEST(k1_exact_closed_form)
{
    srand(1);
    for (int p = 1; p <= 6; p++)
        for (int m = 1; m <= 6; m++)
            for (int split = 0; split <= 1; split++) {
                double F = frand(0.2, 2), B = frand(0.2, 2), W = frand(0.2, 2), c = (p + m) % 2 ? 0 : frand(0, 0.3);
                schedule s;
                serial_schedule(&s, p, m, split);
                bound_result r;
                double bound = lb(&s, F, B, W, c, WF, 1.0, split, 0, &r);
                /* Seed 000: m (p (F+B) + W) split, m p (F+B+W) fused, + 2(p-1) latencies per microbatch. */
                double closed = split ? m * (p * (F + B) + W + 2 * (p - 1) * c) : m * (p * (F + B + W) + 2 * (p - 1) * c);
                ck_assert_rel(bound, closed, PG_REL_TOL);
                ck_assert_msg(r.exact == 1 && (fabs(r.memory_s - bound) <= PG_REL_TOL * bound || m == 1),
                              "p %d m %d split %d F %g B %g W %g c %g: exact %d active %s",
                              p, m, split, F, B, W, c, r.exact, bound_kind_name(r.active));
                /* ... and the one-at-a-time schedule reaches it within K = 1. */
                sched_times t;
                pg_status st;
                ck_assert_int_eq(sched_eval_ideal(&s, F, B, W, c, &t, &st), 0);
                ck_assert_rel(t.makespan, closed, PG_REL_TOL);
                ck_assert(zb_peak(&s, &t, WF) <= 1.0 + LE_TOL);
                sched_times_free(&s, &t);
                sched_free(&s);
            }
}
END_TEST

/* ---- brute force over every order on tiny pipelines -------------------- */

/* Enumerate every interleaving of the per-microbatch op sequences on each
 * rank (F < B < W of one microbatch on a rank is forced by the chain), time
 * each with the ideal evaluator, and keep the best makespan per limit. */
#define BF_NK 4
static const double bf_limits[BF_NK] = {0, 1.0, 1.5, 2.0};

typedef struct bf_state {
    int p, m, split, per_mb;
    double F, B, W, c;
    int *seq[8];       /* per rank: microbatch index at each position */
    double best[BF_NK];
    long tried;
} bf_state;

static void bf_eval(bf_state *bs)
{
    schedule s;
    sched_init(&s, "bf", bs->p, 1, bs->m);
    sched_place_contiguous(&s);
    int n = bs->m * bs->per_mb;
    for (int r = 0; r < bs->p; r++) {
        int next[16] = {0};
        for (int i = 0; i < n; i++) {
            int j = bs->seq[r][i];
            int k = next[j]++;
            op_kind kind = !bs->split ? (k == 0 ? OP_F : OP_BW) : (k == 0 ? OP_F : k == 1 ? OP_B : OP_W);
            sched_push(&s, r, kind, r, j);
        }
    }
    sched_times t;
    pg_status st;
    if (sched_eval_ideal(&s, bs->F, bs->B, bs->W, bs->c, &t, &st) == 0) {
        bs->tried++;
        double peak = zb_peak(&s, &t, WF);
        for (int k = 0; k < BF_NK; k++)
            if ((bf_limits[k] <= 0 || peak <= bf_limits[k] + LE_TOL) && t.makespan < bs->best[k])
                bs->best[k] = t.makespan;
        sched_times_free(&s, &t);
    }
    sched_free(&s);
}

/* Fill rank r's sequence from position pos with counts left per microbatch. */
static void bf_rank(bf_state *bs, int r, int pos, int *left)
{
    int n = bs->m * bs->per_mb;
    if (r == bs->p) {
        bf_eval(bs);
        return;
    }
    if (pos == n) {
        int fresh[16];
        for (int j = 0; j < bs->m; j++)
            fresh[j] = bs->per_mb;
        bf_rank(bs, r + 1, 0, fresh);
        return;
    }
    for (int j = 0; j < bs->m; j++) {
        if (left[j] == 0)
            continue;
        left[j]--;
        bs->seq[r][pos] = j;
        bf_rank(bs, r, pos + 1, left);
        left[j]++;
    }
}

START_TEST(brute_force_tiny)
{
    const int cases[][3] = {{2, 2, 1}, {2, 2, 0}, {3, 2, 1}, {3, 2, 0}, {2, 3, 0}};
    srand(2);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        bf_state bs = {.p = cases[ci][0], .m = cases[ci][1], .split = cases[ci][2]};
        bs.per_mb = bs.split ? 3 : 2;
        bs.F = frand(0.5, 1.5);
        bs.B = frand(0.5, 1.5);
        bs.W = frand(0.5, 1.5);
        bs.c = ci % 2 ? 0.0 : 0.1;
        for (int r = 0; r < bs.p; r++)
            bs.seq[r] = calloc((size_t)bs.m * bs.per_mb, sizeof(int));
        for (int k = 0; k < BF_NK; k++)
            bs.best[k] = INFINITY;
        int left[16];
        for (int j = 0; j < bs.m; j++)
            left[j] = bs.per_mb;
        bf_rank(&bs, 0, 0, left);
        ck_assert(bs.tried > 0);
        schedule s;
        serial_schedule(&s, bs.p, bs.m, bs.split);
        for (int k = 0; k < BF_NK; k++) {
            bound_result r;
            double bound = lb(&s, bs.F, bs.B, bs.W, bs.c, WF, bf_limits[k], bs.split, 0, &r);
            ck_assert_msg(bound <= bs.best[k] + LE_TOL, "p %d m %d split %d K %g: bound %.9g > best order %.9g",
                          bs.p, bs.m, bs.split, bf_limits[k], bound, bs.best[k]);
            /* With remat allowed the class only grows: never above the no-remat bound. */
            ck_assert(lb(&s, bs.F, bs.B, bs.W, bs.c, WF, bf_limits[k], bs.split, 1, NULL) <= bound + LE_TOL);
            if (bf_limits[k] == 1.0) {   /* seed 000: exact at K = 1 */
                ck_assert_int_eq(r.exact, 1);
                ck_assert_rel(bound, bs.best[k], PG_REL_TOL);
            }
        }
        sched_free(&s);
        for (int r = 0; r < bs.p; r++)
            free(bs.seq[r]);
    }
}
END_TEST

/* ---- never above any generated schedule --------------------------------- */

START_TEST(never_above_generated)
{
    srand(3);
    long checked = 0;
    for (int trial = 0; trial < 40; trial++) {
        int p = 1 + rand() % 6, m = 1 + rand() % 12, chunks = 1 + rand() % 3;
        double F = frand(0.2, 2), B = frand(0.2, 2), W = frand(0.2, 2), c = trial % 3 ? frand(0, 0.2) : 0.0;
        double gen_limit = trial % 2 ? 0.0 : 1 + rand() % (2 * p);
        for (const sched_generator *g = sched_generators(); g->name != NULL; g++) {
            sched_params sp = {.pp = p, .m = m, .chunks = chunks, .t_f = F, .t_b = B, .t_w = W, .t_comm = c,
                               .mem_limit = gen_limit, .w_fraction = WF};
            schedule s;
            pg_status st;
            pg_status_clear(&st);
            if (sched_generate(g->name, &sp, &s, &st) != 0)
                continue;   /* parameters this generator does not take */
            sched_times t;
            if (sched_eval_ideal(&s, F, B, W, c, &t, &st) != 0) {
                sched_free(&s);
                continue;
            }
            double peak = zb_peak(&s, &t, WF);
            int split = sched_is_split(&s);
            /* Limits: none, exactly the schedule's peak, and a random one. */
            double limits[] = {0.0, peak, frand(1.0 / s.v, 2.0 * m)};
            for (int k = 0; k < 3; k++) {
                if (limits[k] > 0 && peak > limits[k] + LE_TOL)
                    continue;   /* the bound under K only speaks of schedules within K */
                if (limits[k] > 0 && limits[k] * s.v < 1.0)
                    continue;
                for (int remat = 0; remat <= 1; remat++) {
                    double any = lb(&s, F, B, W, c, WF, limits[k], 1, remat, NULL);
                    double cls = lb(&s, F, B, W, c, WF, limits[k], split, remat, NULL);
                    ck_assert_msg(any <= t.makespan * (1 + LE_TOL) && cls <= t.makespan * (1 + LE_TOL),
                                  "%s p %d m %d v %d F %g B %g W %g c %g K %g remat %d: bound %.12g / %.12g > "
                                  "makespan %.12g (peak %g)",
                                  g->name, p, m, s.v, F, B, W, c, limits[k], remat, any, cls, t.makespan, peak);
                    ck_assert(any <= cls + LE_TOL);   /* split allows every fused schedule */
                    checked++;
                }
            }
            sched_times_free(&s, &t);
            sched_free(&s);
        }
    }
    ck_assert_int_gt(checked, 200);
}
END_TEST

/* ---- tight on the headline slice ---------------------------------------- */

typedef struct tight_case {
    double F, B, W, c;
} tight_case;

/* Every shipped schedule for one case and limit, timed once. */
typedef struct shipped {
    int n;
    schedule s[64];
    double makespan[64], peak[64];
} shipped;

static void shipped_generate(shipped *sh, int p, int m, const tight_case *tc, double K)
{
    sh->n = 0;
    for (const sched_generator *g = sched_generators(); g->name != NULL; g++) {
        for (int chunks = 1; chunks <= 2 && sh->n < 64; chunks++) {
            sched_params sp = {.pp = p, .m = m, .chunks = chunks, .t_f = tc->F, .t_b = tc->B, .t_w = tc->W,
                               .t_comm = tc->c, .mem_limit = K, .w_fraction = WF};
            schedule *s = &sh->s[sh->n];
            pg_status st;
            if (sched_generate(g->name, &sp, s, &st) != 0)
                continue;
            sched_times t;
            if (sched_eval_ideal(s, tc->F, tc->B, tc->W, tc->c, &t, &st) != 0) {
                sched_free(s);
                continue;
            }
            sh->makespan[sh->n] = t.makespan;
            sh->peak[sh->n] = zb_peak(s, &t, WF);
            sched_times_free(s, &t);
            int v = s->v;
            sh->n++;
            if (v != 1)
                break;   /* chunks only matters to generators that take it */
        }
    }
}

static void shipped_free(shipped *sh)
{
    for (int i = 0; i < sh->n; i++)
        sched_free(&sh->s[i]);
}

/* Best makespan over the shipped schedules whose placement is the one of
 * `like` (same v and stage_rank) and whose peak is within K. */
static double best_of_placement(const shipped *sh, const schedule *like, double K, const char **who)
{
    double best = INFINITY;
    for (int i = 0; i < sh->n; i++) {
        const schedule *s = &sh->s[i];
        int same = s->v == like->v && s->nstages == like->nstages &&
                   memcmp(s->stage_rank, like->stage_rank, sizeof(int) * (size_t)s->nstages) == 0;
        if (same && (K <= 0 || sh->peak[i] <= K + LE_TOL) && sh->makespan[i] < best) {
            best = sh->makespan[i];
            *who = s->name;
        }
    }
    return best;
}

START_TEST(tight_headline_slice)
{
    const int p = 8, m = 32;
    const tight_case cases[] = {{1, 1, 1, 0}, {1, 1.1, 0.9, 0.05}};
    const double limits[] = {0, 8};
    for (size_t ci = 0; ci < 2; ci++)
        for (size_t ki = 0; ki < 2; ki++) {
            const tight_case *tc = &cases[ci];
            shipped *sh = malloc(sizeof *sh);
            shipped_generate(sh, p, m, tc, limits[ki]);
            for (int place = 0; place < 2; place++) {   /* one wave; V (two chunks) */
                schedule like;
                sched_init(&like, "like", p, place ? 2 : 1, m);
                if (place) sched_place_v(&like); else sched_place_contiguous(&like);
                bound_result r;
                double bound = lb(&like, tc->F, tc->B, tc->W, tc->c, WF, limits[ki], 1, 0, &r);
                const char *who = "none";
                double best = best_of_placement(sh, &like, limits[ki], &who);
                printf("tight p=%d m=%d F=%g B=%g W=%g c=%g K=%g %s: bound %.6g (%s, rank %d) best %s %.6g "
                       "ratio %.4f\n", p, m, tc->F, tc->B, tc->W, tc->c, limits[ki], place ? "V" : "single-wave",
                       bound, bound_kind_name(r.active), r.active_rank, who, best, best / bound);
                /* Both placements have shipped schedules within K = 8 = p. */
                ck_assert_msg(isfinite(best), "no shipped schedule of this placement within K");
                ck_assert(bound <= best * (1 + LE_TOL));
                ck_assert_msg(best <= TIGHT_RATIO * bound, "best %s %.6g not within 10%% of bound %.6g", who,
                              best, bound);
                sched_free(&like);
            }
            shipped_free(sh);
            free(sh);
        }
}
END_TEST

/* ---- structure ------------------------------------------------------------ */

START_TEST(unlimited_closed_forms)
{
    /* One wave, K unlimited, c = 0: fused (m+p-1)(F+B+W), reached by GPipe;
     * split (p-1)F + m(F+B+W) when the last rank is the bottleneck. */
    schedule s;
    sched_init(&s, "x", 8, 1, 32);
    sched_place_contiguous(&s);
    ck_assert_rel(lb(&s, 1, 1, 1, 0, WF, 0, 0, 0, NULL), 39 * 3, PG_REL_TOL);
    ck_assert_rel(lb(&s, 1, 1, 1, 0, WF, 0, 1, 0, NULL), 7 + 96, PG_REL_TOL);
    /* K >= m cannot bind: the same as unlimited. */
    ck_assert_rel(lb(&s, 1, 1.1, 0.9, 0.05, WF, 32, 1, 0, NULL), lb(&s, 1, 1.1, 0.9, 0.05, WF, 0, 1, 0, NULL),
                  PG_REL_TOL);
    /* Less memory never makes the bound smaller; remat never larger. */
    double prev = 0;
    for (double K = 32; K >= 1; K -= 0.5) {
        double b = lb(&s, 1, 1.1, 0.9, 0.05, WF, K, 1, 0, NULL);
        ck_assert(b >= prev - LE_TOL);
        ck_assert(lb(&s, 1, 1.1, 0.9, 0.05, WF, K, 1, 1, NULL) <= b + LE_TOL);
        prev = b;
    }
    sched_free(&s);
}
END_TEST

START_TEST(bad_input)
{
    schedule s;
    sched_init(&s, "x", 4, 2, 8);
    sched_place_v(&s);
    uniform_in u;
    uniform_make(&u, &s, 1, 1, 1, 0, WF, 0.4, 1, 0);   /* below one chunk (1/2) */
    bound_result r;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(bound_lower(&u.in, &r, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "memory.limit"));
    u.in.mem_limit = 0.5;   /* exactly one chunk: fine */
    ck_assert_int_eq(bound_lower(&u.in, &r, &st), 0);
    u.f[3] = -1;
    ck_assert_int_eq(bound_lower(&u.in, &r, &st), PG_EXIT_INPUT);
    u.f[3] = 0.5;
    int bad_rank[8] = {0, 0, 0, 1, 2, 3, 3, 2};   /* rank 0 holds three stages */
    u.in.stage_rank = bad_rank;
    ck_assert_int_eq(bound_lower(&u.in, &r, &st), PG_EXIT_INPUT);
    uniform_free(&u);
    sched_free(&s);
}
END_TEST

START_TEST(dp_allreduce_closed_forms)
{
    /* One rank, one stage, m = 4, F = B = W = 1 fused (BW = 2): the rank's
     * ops end at 4 F + 4 BW = 12 at the earliest. */
    schedule s;
    sched_init(&s, "x", 1, 1, 4);
    sched_place_contiguous(&s);
    uniform_in u;
    uniform_make(&u, &s, 1, 1, 1, 0, WF, 0, 0, 0);
    double bytes[1] = {10}, spb[1] = {0.5};
    int nb[1] = {1};
    bound_dp_input dp = {.overlap = 0, .stage_bytes = bytes, .stage_buckets = nb, .rank_s_per_byte = spb};
    /* no overlap: every bucket after the last op, 10 bytes at 0.5 s/byte */
    ck_assert_rel(bound_dp_allreduce_end(&u.in, &dp), 12 + 5, PG_REL_TOL);
    /* overlap, one bucket: ready when the last BW (starting at 10 at the
     * earliest) ends, then all of it */
    dp.overlap = 1;
    ck_assert_rel(bound_dp_allreduce_end(&u.in, &dp), 10 + 2 + 5, PG_REL_TOL);
    /* five buckets of 1 s: the first is ready after a fifth of the BW, and
     * the five run back to back */
    nb[0] = 5;
    ck_assert_rel(bound_dp_allreduce_end(&u.in, &dp), 10 + 0.4 + 5, PG_REL_TOL);
    /* buckets faster than the BW's pieces: only the last one is exposed */
    spb[0] = 0.05;
    ck_assert_rel(bound_dp_allreduce_end(&u.in, &dp), 10 + 2 + 0.1, PG_REL_TOL);
    /* no known rate or no gradient: nothing to bound */
    spb[0] = 0;
    ck_assert_rel(bound_dp_allreduce_end(&u.in, &dp), 0, PG_REL_TOL);
    uniform_free(&u);
    sched_free(&s);
    ck_assert_int_eq(units_pieces(10, 0), 1);
    ck_assert_int_eq(units_pieces(10, 5), 2);
    ck_assert_int_eq(units_pieces(10, 3), 4);
    ck_assert_int_eq(units_pieces(0, 3), 1);

    /* Two ranks, split backward, c = 0: rank 0's F (head 0), B (head 3) and
     * W (head 4) end at 12; rank 1's F (1), B (2), W (3) at 13. */
    schedule s2;
    sched_init(&s2, "x", 2, 1, 4);
    sched_place_contiguous(&s2);
    uniform_make(&u, &s2, 1, 1, 1, 0, WF, 0, 1, 0);
    double bytes2[2] = {10, 10}, spb2[2] = {1, 0};
    int nb2[2] = {1, 1};
    bound_dp_input dp2 = {.overlap = 0, .stage_bytes = bytes2, .stage_buckets = nb2, .rank_s_per_byte = spb2};
    ck_assert_rel(bound_dp_allreduce_end(&u.in, &dp2), 12 + 10, PG_REL_TOL);
    spb2[1] = 1;
    ck_assert_rel(bound_dp_allreduce_end(&u.in, &dp2), 13 + 10, PG_REL_TOL);
    uniform_free(&u);
    sched_free(&s2);
}
END_TEST

/* glpk_guard: a failure inside GLPK (here its error on an invalid argument,
 * the same path as an internal check failing in the simplex) comes back as
 * -1 instead of ending the process, and GLPK works again afterwards. */
typedef struct guard_lp {
    glp_prob *lp;
    int bad_call;
    double objective;
} guard_lp;

static void guard_solve(void *arg)
{
    guard_lp *g = arg;
    g->lp = glp_create_prob();
    /* max x, 0 <= x <= 2: objective 2 */
    glp_set_obj_dir(g->lp, g->bad_call ? 12345 : GLP_MAX);
    glp_add_cols(g->lp, 1);
    glp_set_col_bnds(g->lp, 1, GLP_DB, 0.0, 2.0);
    glp_set_obj_coef(g->lp, 1, 1.0);
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    if (glp_simplex(g->lp, &sm) == 0) g->objective = glp_get_obj_val(g->lp);
}

START_TEST(glpk_guard_returns)
{
    guard_lp bad = {NULL, 1, -1.0};
    ck_assert_int_eq(glpk_guarded(guard_solve, &bad), -1);
    ck_assert_double_eq(bad.objective, -1.0);   /* it never reached the solve */
    for (int round = 0; round < 2; round++) {   /* GLPK usable again, twice */
        guard_lp good = {NULL, 0, -1.0};
        ck_assert_int_eq(glpk_guarded(guard_solve, &good), 0);
        ck_assert_double_eq_tol(good.objective, 2.0, 1e-12);
        glp_delete_prob(good.lp);
    }
}
END_TEST

static Suite *opt_suite(void)
{
    Suite *s = suite_create("opt");
    struct {
        const char *name;
        const TTest *test;
    } cases[] = {{"k1_exact", k1_exact_closed_form},     {"brute_force", brute_force_tiny},
                 {"generated", never_above_generated},   {"tight", tight_headline_slice},
                 {"closed_forms", unlimited_closed_forms}, {"bad_input", bad_input},
                 {"dp_allreduce", dp_allreduce_closed_forms}, {"glpk_guard", glpk_guard_returns}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    return pg_run_suite(opt_suite());
}
