/* test_job.c: the job layer (src/job) driven as a library, without the
 * pipegrid binary: the pipeline of one job from an experiment to simulated
 * metrics, its errors placed on the key, and the sweep grid's order. */
#include "job/job.h"
#include "job/sweep.h"
#include "testutil.h"

/* The bundled default experiment on uniform stages and the ideal network,
 * with the sets given after those. */
static int load(job *j, const char *const *extra, int nextra, pg_status *st)
{
    const char *sets[16] = {"workload=uniform", "network=ideal"};
    int n = 2;
    for (int i = 0; i < nextra; i++) sets[n++] = extra[i];
    return job_load_experiment(j, NULL, sets, n, st);
}

/* What `run` does, through the job layer's calls only: the simulated
 * iteration completes, every op runs, and its makespan is no shorter than
 * the job's lower bound (opt/bound.h, over every schedule and over the
 * schedule's own backward kind), which it would be if the layer handed the
 * simulator another job than the bound's. */
START_TEST(test_simulate_is_bounded)
{
    const char *extra[] = {"schedule=1f1b", "pp=4", "microbatches=8"};
    job j;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(load(&j, extra, 3, &st), 0);
    ck_assert_int_eq(job_build_schedule(&j, &st), 0);
    memplan plan;
    job_parallel jpar;
    timeline tl;
    sim_outcome out;
    memset(&plan, 0, sizeof plan);
    memset(&jpar, 0, sizeof jpar);
    memset(&tl, 0, sizeof tl);
    ck_assert_msg(job_simulate(&j, &plan, &jpar, &tl, &out, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(out.completed, 1);
    ck_assert_int_eq(out.ops_done, out.ops_total);
    ck_assert_int_gt(out.ops_total, 0);
    metrics_input mi = job_metrics_input(&j, &tl, &plan);
    run_metrics m;
    metrics_compute(&mi, &m);
    job_bound jb;
    memset(&jb, 0, sizeof jb);
    ck_assert_msg(job_compute_bound(&j, &jb, &st) == 0, "%s", st.msg);
    ck_assert_double_gt(jb.any.lower_bound, 0.0);
    ck_assert_msg(m.makespan_s >= jb.cls.lower_bound * (1.0 - PG_REL_TOL), "makespan %.15g below the bound %.15g",
                  m.makespan_s, jb.cls.lower_bound);
    ck_assert_msg(jb.cls.lower_bound >= jb.any.lower_bound * (1.0 - PG_REL_TOL), "own-kind bound below any-kind bound");
    job_bound_free(&jb);
    metrics_free(&m);
    timeline_free(&tl);
    job_parallel_free(&jpar);
    plan_free(&plan);
    job_free(&j);
}
END_TEST

/* A bad value is bad input naming its key, and the job is then safe to free. */
START_TEST(test_bad_key_is_named)
{
    const char *extra[] = {"pp=0"};
    job j;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(load(&j, extra, 1, &st), PG_EXIT_INPUT);
    ck_assert_str_eq(st.key, "pp");
    job_free(&j);
}
END_TEST

/* sweep.h: the first key varies slowest; combination i of a grid of 2 x 3
 * values has the first key's value i / 3 and the second's i % 3. */
START_TEST(test_sweep_grid_row_major)
{
    const char *specs[] = {"pp=2,4", "schedule=1f1b,gpipe,zb-h1"};
    sweep_grid g;
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(sweep_grid_parse(&g, specs, 2, &st), 0);
    ck_assert_int_eq(g.total, 6);
    const char *values[2];
    for (long i = 0; i < g.total; i++) {
        sweep_grid_combination(&g, i, values);
        ck_assert_str_eq(values[0], g.keys[0].values[i / 3]);
        ck_assert_str_eq(values[1], g.keys[1].values[i % 3]);
    }
    sweep_grid_free(&g);
}
END_TEST

/* The sweep's CSV round trip: what csv_field writes, csv_split reads back
 * unchanged, quotes, commas, newlines and blanks at the ends included (the
 * splitter is util/csv.c's, which drops blanks around an unquoted field). */
START_TEST(test_csv_round_trip)
{
    const char *values[] = {"plain", "a,b", "say \"hi\"", " lead", "trail ", "two\nlines", "", "1e-09"};
    const int n = (int)(sizeof values / sizeof values[0]);
    strbuf sb;
    sb_init(&sb);
    for (int i = 0; i < n; i++) {
        if (i) sb_append(&sb, ",");
        csv_field(&sb, values[i]);
    }
    char **f;
    ck_assert_int_eq(csv_split(sb.data, &f), n);
    for (int i = 0; i < n; i++) ck_assert_str_eq(f[i], values[i]);
    csv_fields_free(f, n);
    ck_assert_int_eq(csv_split("a,\"open", &f), -1);
    ck_assert_ptr_null(f);
    ck_assert_int_eq(csv_split("a,b\"c", &f), -1);
    sb_free(&sb);
}
END_TEST

static Suite *job_suite(void)
{
    Suite *s = suite_create("job");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_simulate_is_bounded);
    tcase_add_test(tc, test_bad_key_is_named);
    tcase_add_test(tc, test_sweep_grid_row_major);
    tcase_add_test(tc, test_csv_round_trip);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pg_run_suite(job_suite());
}
