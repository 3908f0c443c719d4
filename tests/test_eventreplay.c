/* test_eventreplay.c: the replay without actors (src/sim/eventreplay.c)
 * against the actor replay (src/sim/replay.c) on its scope.
 *
 * Each case runs twice, in two child processes (SimGrid runs one simulation
 * per process): once with the default engine (the replay without actors for
 * these plain pipelines) and once with sim_input.engine = SIM_ENGINE_ACTORS.
 * The children send back every op and transfer record; the test asserts the
 * same records (kind, rank, stage, microbatch, bytes), each rank's ops in
 * the same order, and every time equal to 1e-12 relative (the two differ
 * only by rounding: an execution's end from SimGrid's CPU model against a
 * timer at start + duration).  The platform has contention (GB messages
 * sharing NICs), heterogeneous GPUs (speeds 1, 2, 1, 0.5 x 1e12 flop/s with
 * times scaled from a 1e12 flop/s reference) and two routes of different
 * latency, so ordering, sharing and speed all matter.  A deadlock must be
 * reported the same way by both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model/platform.h"
#include "model/workload.h"
#include "schedule/schedule.h"
#include "sim/sim.h"
#include "sim/timeline.h"
#include "util/strbuf.h"
#include "testutil.h"

#define REF_SPEED_FLOPS 1e12
#define MSG_BYTES 1e9
#define TIME_REL_TOL 1e-12
#define MAX_RECORDS 4096

static const double GPU_SPEED[4] = {1e12, 2e12, 1e12, 0.5e12};

/* Two nodes of two GPUs (NVLink inside, one NIC per GPU and a core across). */
static void platform_xml(char *path, size_t len)
{
    strbuf sb;
    sb_init(&sb);
    sb_append(&sb, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                   "<platform version=\"4.1\">\n <zone id=\"top\" routing=\"Full\">\n");
    for (int n = 0; n < 2; n++) {
        sb_appendf(&sb, "  <zone id=\"node%d\" routing=\"Full\">\n", n);
        for (int g = 0; g < 2; g++)
            sb_appendf(&sb,
                       "   <host id=\"n%d-gpu%d\" speed=\"%.17gf\"><prop id=\"kind\" value=\"gpu\"/><prop id=\"node\" "
                       "value=\"%d\"/><prop id=\"local_rank\" value=\"%d\"/><prop id=\"memory\" value=\"80GiB\"/>"
                       "</host>\n", n, g, GPU_SPEED[2 * n + g], n, g);
        sb_appendf(&sb, "   <router id=\"n%d-ib\"/>\n", n);
        for (int g = 0; g < 2; g++) {
            sb_appendf(&sb, "   <link id=\"n%d-g%d-nvl\" bandwidth=\"450GBps\" latency=\"0.5us\" "
                            "sharing_policy=\"SPLITDUPLEX\"/>\n", n, g);
            sb_appendf(&sb, "   <link id=\"n%d-g%d-nic\" bandwidth=\"50GBps\" latency=\"1us\" "
                            "sharing_policy=\"SPLITDUPLEX\"/>\n", n, g);
        }
        for (int g = 0; g < 2; g++)
            sb_appendf(&sb, "   <route src=\"n%d-gpu%d\" dst=\"n%d-ib\"><link_ctn id=\"n%d-g%d-nic\" direction=\"UP\"/>"
                            "</route>\n", n, g, n, n, g);
        sb_appendf(&sb, "   <route src=\"n%d-gpu0\" dst=\"n%d-gpu1\"><link_ctn id=\"n%d-g0-nvl\" direction=\"UP\"/>"
                        "<link_ctn id=\"n%d-g1-nvl\" direction=\"DOWN\"/></route>\n  </zone>\n", n, n, n, n);
    }
    sb_append(&sb, "  <link id=\"core\" bandwidth=\"25.6TBps\" latency=\"0.6us\" sharing_policy=\"FATPIPE\"/>\n"
                   "  <zoneRoute src=\"node0\" dst=\"node1\" gw_src=\"n0-ib\" gw_dst=\"n1-ib\"><link_ctn id=\"core\"/>"
                   "</zoneRoute>\n </zone>\n</platform>\n");
    snprintf(path, len, "/tmp/pg-test-eventreplay-XXXXXX");
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    ck_assert(write(fd, sb.data, sb.len) == (ssize_t)sb.len);
    close(fd);
    sb_free(&sb);
}

/* What a child sends back. */
typedef struct result {
    int rc;
    long ops_done, events;
    size_t nops, nxfers;
    tl_op ops[MAX_RECORDS];
    tl_xfer xfers[MAX_RECORDS];
    char blocked[PG_MSG_MAX];
} result;

/* Run schedule `name` (pp ranks on GPUs 0..pp-1, or a hand-made deadlock
 * when name is NULL) with the given engine, in this process. */
static void simulate(const char *name, int pp, int m, double f_s, sim_engine engine, result *res)
{
    pg_status st;
    pg_status_clear(&st);
    char path[64];
    platform_xml(path, sizeof path);
    platform_desc plat;
    ck_assert_msg(platform_load(path, &plat, &st) == 0, "%s", st.msg);
    schedule s;
    if (name != NULL) {
        sched_params p = {.pp = pp, .m = m, .chunks = 2, .t_f = f_s, .t_b = f_s, .t_w = f_s, .w_fraction = 0.5};
        ck_assert_msg(sched_generate(name, &p, &s, &st) == 0, "%s", st.msg);
    } else {   /* rank 0 runs BW before its F: waits for rank 1's gradient, which needs that F */
        sched_init(&s, "bad", 2, 1, 1);
        sched_place_contiguous(&s);
        sched_push(&s, 0, OP_BW, 0, 0);
        sched_push(&s, 0, OP_F, 0, 0);
        sched_push(&s, 1, OP_F, 1, 0);
        sched_push(&s, 1, OP_BW, 1, 0);
    }
    workload w;
    memset(&w, 0, sizeof w);
    w.nstages = s.nstages;
    w.ref_speed_flops = REF_SPEED_FLOPS;
    w.stage = calloc((size_t)s.nstages, sizeof *w.stage);
    for (int k = 0; k < s.nstages; k++)   /* uneven stages: F grows with the stage */
        w.stage[k] = (stage_cost){.f_s = f_s * (1 + 0.25 * k), .b_s = 1.5 * f_s, .w_s = f_s,
                                  .boundary_bytes = MSG_BYTES};
    int gpu_of[4] = {0, 1, 2, 3};
    sim_input in = {.sched = &s, .wl = &w, .plat = &plat, .rank_gpu = gpu_of, .engine = engine};
    sim_outcome out;
    timeline tl;
    timeline_init(&tl);
    memset(res, 0, sizeof *res);
    res->rc = sim_run(&in, &tl, &out, &st);
    res->ops_done = out.ops_done;
    res->events = out.events;
    ck_assert(tl.nops <= MAX_RECORDS && tl.nxfers <= MAX_RECORDS);
    res->nops = tl.nops;
    res->nxfers = tl.nxfers;
    for (size_t i = 0; i < tl.nops; i++)
        res->ops[i] = timeline_op(&tl, i);
    for (size_t i = 0; i < tl.nxfers; i++)
        res->xfers[i] = timeline_xfer(&tl, i);
    snprintf(res->blocked, sizeof res->blocked, "%s", res->rc != 0 && res->rc != PG_EXIT_DEADLOCK ? st.msg : out.blocked);
    timeline_free(&tl);
    free(w.stage);
    sched_free(&s);
    platform_free(&plat);
    unlink(path);
}

/* simulate() in a child process; the result comes back through a pipe. */
static result *simulate_in_child(const char *name, int pp, int m, double f_s, sim_engine engine)
{
    int fds[2];
    ck_assert(pipe(fds) == 0);
    result *res = calloc(1, sizeof *res);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        simulate(name, pp, m, f_s, engine, res);
        const char *p = (const char *)res;
        size_t left = sizeof *res;
        while (left > 0) {
            ssize_t n = write(fds[1], p, left);
            if (n <= 0)
                _exit(1);
            p += n;
            left -= (size_t)n;
        }
        _exit(0);
    }
    close(fds[1]);
    char *p = (char *)res;
    size_t left = sizeof *res;
    while (left > 0) {
        ssize_t n = read(fds[0], p, left);
        ck_assert_msg(n > 0, "child died");
        p += n;
        left -= (size_t)n;
    }
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return res;
}

static void assert_time(double a, double b)
{
    ck_assert_rel(a, b, TIME_REL_TOL);
}

/* The k-th op of rank r in a result's list (records of one rank keep their order). */
static const tl_op *nth_op(const result *res, int r, int k)
{
    for (size_t i = 0; i < res->nops; i++)
        if (res->ops[i].rank == r && k-- == 0)
            return &res->ops[i];
    return NULL;
}

static const tl_xfer *find_xfer(const result *res, const tl_xfer *x)
{
    for (size_t i = 0; i < res->nxfers; i++) {
        const tl_xfer *y = &res->xfers[i];
        if (y->kind == x->kind && y->stage == x->stage && y->mb == x->mb)
            return y;
    }
    return NULL;
}

static void compare_engines(const char *name, int pp, int m, double f_s)
{
    result *ev = simulate_in_child(name, pp, m, f_s, SIM_ENGINE_AUTO);
    result *ac = simulate_in_child(name, pp, m, f_s, SIM_ENGINE_ACTORS);
    ck_assert_msg(ev->rc == ac->rc && (ev->rc == 0 || ev->rc == PG_EXIT_DEADLOCK), "rc %d / %d: %s", ev->rc, ac->rc, ev->blocked);
    ck_assert_int_eq(ev->ops_done, ac->ops_done);
    ck_assert_int_eq(ev->events, ac->events);
    ck_assert_int_eq((int)ev->nops, (int)ac->nops);
    ck_assert_int_eq((int)ev->nxfers, (int)ac->nxfers);
    ck_assert_str_eq(ev->blocked, ac->blocked);
    ck_assert(name == NULL || ev->nxfers > 0);
    for (int r = 0; r < pp; r++)
        for (int k = 0;; k++) {
            const tl_op *a = nth_op(ev, r, k), *b = nth_op(ac, r, k);
            ck_assert((a == NULL) == (b == NULL));
            if (a == NULL)
                break;
            ck_assert_int_eq(a->kind, b->kind);
            ck_assert_int_eq(a->stage, b->stage);
            ck_assert_int_eq(a->mb, b->mb);
            assert_time(a->start_s, b->start_s);
            assert_time(a->end_s, b->end_s);
        }
    for (size_t i = 0; i < ev->nxfers; i++) {
        const tl_xfer *a = &ev->xfers[i], *b = find_xfer(ac, a);
        ck_assert(b != NULL);
        ck_assert_int_eq(a->src_rank, b->src_rank);
        ck_assert_int_eq(a->dst_rank, b->dst_rank);
        ck_assert_exact(a->bytes, b->bytes);
        assert_time(a->start_s, b->start_s);
        assert_time(a->end_s, b->end_s);
    }
    free(ev);
    free(ac);
}

/* Compute-bound and communication-bound (F of 1 ms against 20 ms messages
 * that share NICs) for each schedule shape: one stage per rank, split
 * backward, interleaved chunks, V placement, bidirectional pairs. */
START_TEST(test_same_as_actors_1f1b)
{
    compare_engines("1f1b", 4, 8, 0.05);
    compare_engines("1f1b", 4, 8, 0.001);
}
END_TEST

START_TEST(test_same_as_actors_gpipe)
{
    compare_engines("gpipe", 4, 6, 0.001);
}
END_TEST

START_TEST(test_same_as_actors_zbh1)
{
    compare_engines("zb-h1", 4, 8, 0.002);
}
END_TEST

START_TEST(test_same_as_actors_interleaved)
{
    compare_engines("interleaved", 4, 8, 0.003);
}
END_TEST

START_TEST(test_same_as_actors_zbv)
{
    compare_engines("zb-v", 4, 8, 0.002);
}
END_TEST

START_TEST(test_same_as_actors_dualpipev)
{
    compare_engines("dualpipe-v", 4, 8, 0.002);
}
END_TEST

START_TEST(test_same_deadlock_report)
{
    compare_engines(NULL, 2, 1, 0.001);
    result *ev = simulate_in_child(NULL, 2, 1, 0.001, SIM_ENGINE_AUTO);
    ck_assert_int_eq(ev->rc, PG_EXIT_DEADLOCK);
    ck_assert_msg(strstr(ev->blocked, "rank 0 blocked at BW(stage 0, mb 0)") != NULL, "%s", ev->blocked);
    ck_assert_msg(strstr(ev->blocked, "rank 1 blocked at F(stage 1, mb 0)") != NULL, "%s", ev->blocked);
    free(ev);
}
END_TEST

/* The engine can be traced (issue 18): with PIPEGRID_SIM_LOG set to
 * pg_engine.thres:debug, each op and each transfer of a run is logged under
 * the engine's categories; without it, nothing is. */
static size_t traced_lines(const char *log, const char *what)
{
    int fds[2];
    ck_assert(pipe(fds) == 0);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        if (log)
            setenv("PIPEGRID_SIM_LOG", log, 1);
        else
            unsetenv("PIPEGRID_SIM_LOG");
        result *res = calloc(1, sizeof *res);
        simulate("1f1b", 4, 4, 0.001, SIM_ENGINE_AUTO, res);
        _exit(res->rc == 0 ? 0 : 1);
    }
    close(fds[1]);
    strbuf sb;
    sb_init(&sb);
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0)
        sb_appendf(&sb, "%.*s", (int)n, buf);
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    size_t count = 0;
    for (const char *p = sb.data ? sb.data : ""; (p = strstr(p, what)) != NULL; p++)
        count++;
    sb_free(&sb);
    return count;
}

START_TEST(test_trace_log)
{
    /* 1F1B, 4 ranks, 4 microbatches: 4 x 4 x 2 ops, 3 boundaries x 2 directions x 4 messages. */
    ck_assert_int_eq((int)traced_lines("pg_engine.thres:debug", "[pg_engine/DEBUG] rank "), 32);
    ck_assert_int_eq((int)traced_lines("pg_engine.thres:debug", "[pg_engine_events/DEBUG] "), 24);
    ck_assert_int_eq((int)traced_lines(NULL, "pg_engine"), 0);
}
END_TEST

static Suite *eventreplay_suite(void)
{
    Suite *s = suite_create("eventreplay");
    TCase *t = tcase_create("same as actors");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_same_as_actors_1f1b);
    tcase_add_test(t, test_same_as_actors_gpipe);
    tcase_add_test(t, test_same_as_actors_zbh1);
    tcase_add_test(t, test_same_as_actors_interleaved);
    tcase_add_test(t, test_same_as_actors_zbv);
    tcase_add_test(t, test_same_as_actors_dualpipev);
    tcase_add_test(t, test_same_deadlock_report);
    tcase_add_test(t, test_trace_log);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return pg_run_suite(eventreplay_suite());
}
