/* test_sim.c: the SimGrid replay against closed forms and exact network math.
 *
 * SimGrid runs one simulation per process, so every test here is one
 * simulation and relies on check's default fork mode (one child per test).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/platform.h"
#include "model/workload.h"
#include "schedule/schedule.h"
#include "sim/metrics.h"
#include "sim/sim.h"
#include "testutil.h"

/* A uniform workload of nstages stages: per stage op times f/v, b/v, w/v
 * (the contract's rank-share convention), boundary_bytes per message. */
static void uniform_workload(workload *w, int nstages, int v, double f, double b, double wt, double boundary_bytes)
{
    memset(w, 0, sizeof *w);
    w->nstages = nstages;
    w->stage = calloc((size_t)nstages, sizeof *w->stage);
    for (int s = 0; s < nstages; s++) {
        w->stage[s].f_s = f / v;
        w->stage[s].b_s = b / v;
        w->stage[s].w_s = wt / v;
        w->stage[s].act_b_bytes = 1.0 / v;
        w->stage[s].act_w_bytes = 0.5 / v;
        w->stage[s].boundary_bytes = boundary_bytes;
        w->stage[s].tp_coll_bytes = boundary_bytes;
    }
}

typedef struct sim_case {
    const char *schedule;
    int pp, m, chunks;
    double f, b, w, latency;
} sim_case;

/* Generate, simulate on network=ideal, compute metrics. */
static void simulate_ideal(const sim_case *c, run_metrics *m, timeline *tl)
{
    pg_status st;
    pg_status_clear(&st);
    schedule s;
    sched_params p = {.pp = c->pp, .m = c->m, .chunks = c->chunks ? c->chunks : 2, .t_f = c->f, .t_b = c->b,
                      .t_w = c->w, .t_comm = c->latency, .w_fraction = 0.5};
    ck_assert_msg(sched_generate(c->schedule, &p, &s, &st) == 0, "%s", st.msg);
    workload w;
    uniform_workload(&w, s.nstages, s.v, c->f, c->b, c->w, 0.0);
    platform_desc plat;
    ck_assert_msg(platform_make_ideal(c->pp, c->latency, 1e12, 80e9, &plat, &st) == 0, "%s", st.msg);
    int *rank_gpu = calloc((size_t)c->pp, sizeof *rank_gpu);
    for (int r = 0; r < c->pp; r++)
        rank_gpu[r] = r;
    sim_input in = {.sched = &s, .wl = &w, .plat = &plat, .rank_gpu = rank_gpu, .zero_byte_messages = 1};
    sim_outcome out;
    timeline_init(tl);
    ck_assert_msg(sim_run(&in, tl, &out, &st) == 0, "%s", st.msg);
    ck_assert(out.completed);
    metrics_input mi = {.sched = &s, .wl = &w, .plat = &plat, .rank_gpu = rank_gpu, .tl = tl,
                        .bytes_per_param = 16};
    metrics_compute(&mi, m);
    /* The simulator and the schedule layer's ideal evaluator implement the
     * same model independently: they must agree exactly. */
    sched_times t;
    ck_assert(sched_eval_ideal(&s, c->f, c->b, c->w, c->latency, &t, &st) == 0);
    ck_assert_exact(m->makespan_s, t.makespan);
    ck_assert_exact(m->span, t.span);
    sched_times_free(&s, &t);
    free(rank_gpu);
    platform_free(&plat);
    free(w.stage);
    sched_free(&s);
}

/* ---- closed forms (schedules-reference.md section 3) ---- */

static const sim_case FUSED_CASES[] = {
    {"1f1b", 4, 8, 0, 1, 1, 1, 0},        {"1f1b", 8, 32, 0, 1, 1.1, 0.9, 0}, {"1f1b", 3, 5, 0, 0.7, 1.3, 0.2, 0},
    {"1f1b", 16, 4, 0, 2, 3, 1, 0},       {"gpipe", 4, 8, 0, 1, 1, 1, 0},     {"gpipe", 8, 32, 0, 1, 1.1, 0.9, 0},
    {"gpipe", 5, 3, 0, 0.25, 0.5, 0.125, 0}, {"1f1b", 2, 1, 0, 1, 2, 3, 0},
};

START_TEST(test_fused_closed_form)
{
    const sim_case *c = &FUSED_CASES[_i];
    run_metrics m;
    timeline tl;
    simulate_ideal(c, &m, &tl);
    double expected = (c->m + c->pp - 1) * (c->f + c->b + c->w);
    ck_assert_exact(m.makespan_s, expected);
    ck_assert_exact(m.span, expected);
    /* Rank 0 computes m (F+B+W) and idles the rest. */
    ck_assert_exact(m.rank[0].busy_s, c->m * (c->f + c->b + c->w));
    ck_assert_exact(m.bubble_ratio, (expected - c->m * (c->f + c->b + c->w)) / expected);
    double peak0 = strcmp(c->schedule, "gpipe") == 0 ? c->m : (c->pp < c->m ? c->pp : c->m);
    ck_assert_exact(m.rank[0].peak_activations, peak0);
    metrics_free(&m);
    timeline_free(&tl);
}
END_TEST

/* GPipe with latency c: both sweeps pay (p-1) hops: +2(p-1)c. */
START_TEST(test_gpipe_latency)
{
    sim_case c = {"gpipe", 8, 32, 0, 1, 1.1, 0.9, 0.05};
    run_metrics m;
    timeline tl;
    simulate_ideal(&c, &m, &tl);
    ck_assert_exact(m.makespan_s, 39 * 3.0 + 2 * 7 * 0.05); /* 117.7 (reference slice) */
    metrics_free(&m);
    timeline_free(&tl);
}
END_TEST

/* Reference slice (schedules-reference.md 5.1), measured with the zero-bubble generators. */
START_TEST(test_1f1b_reference_slice)
{
    sim_case c = {"1f1b", 8, 32, 0, 1, 1.1, 0.9, 0.05};
    run_metrics m;
    timeline tl;
    simulate_ideal(&c, &m, &tl);
    ck_assert_exact(m.makespan_s, 120.4);
    ck_assert_exact(m.span, 120.4);
    ck_assert_exact(m.rank[0].peak_activations, 8);
    /* Every cross-rank dependency became a transfer: (p-1) m each way. */
    ck_assert_int_eq((int)tl.nxfers, 2 * 7 * 32);
    for (size_t i = 0; i < tl.nxfers; i++)
        ck_assert_exact(timeline_xfer(&tl, i).end_s - timeline_xfer(&tl, i).start_s, 0.05);
    metrics_free(&m);
    timeline_free(&tl);
}
END_TEST

/* Idle time by cause: 1F1B rank s waits (p-1-s)(B+W) while the pipeline
 * fills and (p-1-s)F while it drains; with latency, the causes still add up
 * to the idle time and the transfers' share is counted as communication. */
START_TEST(test_bubble_breakdown)
{
    sim_case c = {"1f1b", 4, 8, 0, 1, 0.75, 1.25, 0};
    run_metrics m;
    timeline tl;
    simulate_ideal(&c, &m, &tl);
    for (int r = 0; r < c.pp; r++) {
        const bubble_breakdown *b = &m.rank[r].bubbles;
        ck_assert_exact(b->warmup_s, (c.pp - 1 - r) * (c.b + c.w));
        ck_assert_exact(b->cooldown_s, (c.pp - 1 - r) * c.f);
        ck_assert_exact(b->steady_s + b->comm_s + b->reload_s, 0);
        ck_assert_exact(bubble_total_s(b), m.rank[r].idle_s);
    }
    metrics_free(&m);
    timeline_free(&tl);
}
END_TEST

START_TEST(test_bubble_breakdown_latency)
{
    sim_case c = {"1f1b", 4, 8, 0, 1, 1, 1, 0.1};
    run_metrics m;
    timeline tl;
    simulate_ideal(&c, &m, &tl);
    for (int r = 0; r < c.pp; r++) {
        const bubble_breakdown *b = &m.rank[r].bubbles;
        ck_assert_exact(bubble_total_s(b), m.rank[r].idle_s);
        ck_assert(b->comm_s > 0);
        ck_assert_exact(b->reload_s, 0);
    }
    metrics_free(&m);
    timeline_free(&tl);
}
END_TEST

/* ---- network: a hand-written platform with known links ---- */

/* Two nodes of two GPUs: NVLink ports (450 GBps, 0.5us) into a switch, one
 * 50 GBps NIC per GPU (1us) and a fat core (0.6us) between nodes. */
static const char TWO_NODES_XML[] =
    "<?xml version='1.0'?>\n"
    "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
    "<platform version=\"4.1\">\n"
    " <zone id=\"top\" routing=\"Full\">\n"
    "  <zone id=\"node0\" routing=\"Full\">\n"
    "   <host id=\"n0-gpu0\" speed=\"1e12f\"><prop id=\"kind\" value=\"gpu\"/><prop id=\"node\" value=\"0\"/>"
    "<prop id=\"local_rank\" value=\"0\"/><prop id=\"memory\" value=\"80GiB\"/></host>\n"
    "   <host id=\"n0-gpu1\" speed=\"1e12f\"><prop id=\"kind\" value=\"gpu\"/><prop id=\"node\" value=\"0\"/>"
    "<prop id=\"local_rank\" value=\"1\"/><prop id=\"memory\" value=\"80GiB\"/></host>\n"
    "   <router id=\"n0-ib\"/>\n"
    "   <link id=\"n0-g0-nvl\" bandwidth=\"450GBps\" latency=\"0.5us\" sharing_policy=\"SPLITDUPLEX\"/>\n"
    "   <link id=\"n0-g1-nvl\" bandwidth=\"450GBps\" latency=\"0.5us\" sharing_policy=\"SPLITDUPLEX\"/>\n"
    "   <link id=\"n0-g0-nic\" bandwidth=\"50GBps\" latency=\"1us\" sharing_policy=\"SPLITDUPLEX\"/>\n"
    "   <link id=\"n0-g1-nic\" bandwidth=\"50GBps\" latency=\"1us\" sharing_policy=\"SPLITDUPLEX\"/>\n"
    "   <route src=\"n0-gpu0\" dst=\"n0-gpu1\"><link_ctn id=\"n0-g0-nvl\" direction=\"UP\"/>"
    "<link_ctn id=\"n0-g1-nvl\" direction=\"DOWN\"/></route>\n"
    "   <route src=\"n0-gpu0\" dst=\"n0-ib\"><link_ctn id=\"n0-g0-nic\" direction=\"UP\"/></route>\n"
    "   <route src=\"n0-gpu1\" dst=\"n0-ib\"><link_ctn id=\"n0-g1-nic\" direction=\"UP\"/></route>\n"
    "  </zone>\n"
    "  <zone id=\"node1\" routing=\"Full\">\n"
    "   <host id=\"n1-gpu0\" speed=\"1e12f\"><prop id=\"kind\" value=\"gpu\"/><prop id=\"node\" value=\"1\"/>"
    "<prop id=\"local_rank\" value=\"0\"/><prop id=\"memory\" value=\"80GiB\"/></host>\n"
    "   <host id=\"n1-gpu1\" speed=\"1e12f\"><prop id=\"kind\" value=\"gpu\"/><prop id=\"node\" value=\"1\"/>"
    "<prop id=\"local_rank\" value=\"1\"/><prop id=\"memory\" value=\"80GiB\"/></host>\n"
    "   <router id=\"n1-ib\"/>\n"
    "   <link id=\"n1-g0-nvl\" bandwidth=\"450GBps\" latency=\"0.5us\" sharing_policy=\"SPLITDUPLEX\"/>\n"
    "   <link id=\"n1-g1-nvl\" bandwidth=\"450GBps\" latency=\"0.5us\" sharing_policy=\"SPLITDUPLEX\"/>\n"
    "   <link id=\"n1-g0-nic\" bandwidth=\"50GBps\" latency=\"1us\" sharing_policy=\"SPLITDUPLEX\"/>\n"
    "   <link id=\"n1-g1-nic\" bandwidth=\"50GBps\" latency=\"1us\" sharing_policy=\"SPLITDUPLEX\"/>\n"
    "   <route src=\"n1-gpu0\" dst=\"n1-gpu1\"><link_ctn id=\"n1-g0-nvl\" direction=\"UP\"/>"
    "<link_ctn id=\"n1-g1-nvl\" direction=\"DOWN\"/></route>\n"
    "   <route src=\"n1-gpu0\" dst=\"n1-ib\"><link_ctn id=\"n1-g0-nic\" direction=\"UP\"/></route>\n"
    "   <route src=\"n1-gpu1\" dst=\"n1-ib\"><link_ctn id=\"n1-g1-nic\" direction=\"UP\"/></route>\n"
    "  </zone>\n"
    "  <link id=\"core\" bandwidth=\"25.6TBps\" latency=\"0.6us\" sharing_policy=\"FATPIPE\"/>\n"
    "  <zoneRoute src=\"node0\" dst=\"node1\" gw_src=\"n0-ib\" gw_dst=\"n1-ib\"><link_ctn id=\"core\"/></zoneRoute>\n"
    " </zone>\n"
    "</platform>\n";

static void write_platform(char *path, size_t len)
{
    snprintf(path, len, "/tmp/pg-test-sim-XXXXXX");
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    ck_assert(write(fd, TWO_NODES_XML, sizeof TWO_NODES_XML - 1) == (ssize_t)(sizeof TWO_NODES_XML - 1));
    close(fd);
}

/* Replay a schedule on the two-node platform with rank r on GPU gpu_of[r]. */
static void simulate_on_platform_par(const char *name, int pp, int m, const int *gpu_of, double boundary_bytes,
                                     double f, const sim_parallel *par, run_metrics *rm, timeline *tl)
{
    pg_status st;
    pg_status_clear(&st);
    char path[64];
    write_platform(path, sizeof path);
    platform_desc plat;
    ck_assert_msg(platform_load(path, &plat, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(plat.ngpus, 4);
    schedule s;
    sched_params p = {.pp = pp, .m = m, .chunks = 2, .t_f = f, .t_b = f, .t_w = f};
    ck_assert_msg(sched_generate(name, &p, &s, &st) == 0, "%s", st.msg);
    workload w;
    uniform_workload(&w, s.nstages, s.v, f, f, f, boundary_bytes);
    sim_input in = {.sched = &s, .wl = &w, .plat = &plat, .rank_gpu = gpu_of, .par = par};
    sim_outcome out;
    timeline_init(tl);
    ck_assert_msg(sim_run(&in, tl, &out, &st) == 0, "%s", st.msg);
    metrics_input mi = {.sched = &s, .wl = &w, .plat = &plat, .rank_gpu = gpu_of, .tl = tl, .bytes_per_param = 16};
    metrics_compute(&mi, rm);
    platform_free(&plat);
    unlink(path);
    free(w.stage);
    sched_free(&s);
}

static void simulate_on_platform(const char *name, int pp, int m, const int *gpu_of, double boundary_bytes,
                                 double f, run_metrics *rm, timeline *tl)
{
    simulate_on_platform_par(name, pp, m, gpu_of, boundary_bytes, f, NULL, rm, tl);
}

#define GB 1e9

/* Two ranks on one node: every message crosses NVLink: 1 GB in 1e9/450e9 + 1us. */
START_TEST(test_nvlink_route_time)
{
    int gpu_of[] = {0, 1};
    run_metrics m;
    timeline tl;
    simulate_on_platform("gpipe", 2, 1, gpu_of, GB, 0.01, &m, &tl);
    ck_assert_int_eq((int)tl.nxfers, 2);
    for (size_t i = 0; i < tl.nxfers; i++)
        ck_assert_exact(timeline_xfer(&tl, i).end_s - timeline_xfer(&tl, i).start_s, GB / 450e9 + 1e-6);
    /* F0, hop, F1, BW1, hop, BW0 */
    ck_assert_exact(m.makespan_s, 0.01 + (GB / 450e9 + 1e-6) + 0.01 + 0.02 + (GB / 450e9 + 1e-6) + 0.02);
    metrics_free(&m);
    timeline_free(&tl);
}
END_TEST

/* Across nodes: NIC (50 GBps, 1us) + core (0.6us) + NIC (1us). */
START_TEST(test_infiniband_route_time)
{
    int gpu_of[] = {0, 2};
    run_metrics m;
    timeline tl;
    simulate_on_platform("gpipe", 2, 1, gpu_of, GB, 0.01, &m, &tl);
    for (size_t i = 0; i < tl.nxfers; i++)
        ck_assert_exact(timeline_xfer(&tl, i).end_s - timeline_xfer(&tl, i).start_s, GB / 50e9 + 2.6e-6);
    metrics_free(&m);
    timeline_free(&tl);
}
END_TEST

/* Tensor parallelism 2, one tp group per node: each GPU of the group sends
 * its half of the activation on its own NIC at once, so the boundary's
 * transfer is one half on one route (workload_p2p_bytes). */
START_TEST(test_tp_group_sends_its_shard)
{
    int gpu_of[] = {0, 2};
    int gpus[] = {0, 1, 2, 3};   /* (rank r, replica 0, tp rank t) at r * 2 + t */
    sim_parallel par = {.tp = 2, .dp = 1, .gpu = gpus, .split_compute = 1};
    run_metrics m;
    timeline tl;
    simulate_on_platform_par("gpipe", 2, 1, gpu_of, GB, 0.01, &par, &m, &tl);
    ck_assert_int_eq((int)tl.nxfers, 2);
    for (size_t i = 0; i < tl.nxfers; i++) {
        ck_assert_exact(timeline_xfer(&tl, i).bytes, GB / 2);
        ck_assert_exact(timeline_xfer(&tl, i).end_s - timeline_xfer(&tl, i).start_s, GB / 2 / 50e9 + 2.6e-6);
    }
    metrics_free(&m);
    timeline_free(&tl);
}
END_TEST

/* Contention: with GPipe and tiny compute, rank 0 sends microbatches back to
 * back; consecutive 1 GB messages on one NIC overlap and share it. Two
 * messages sent at the same instant each get half the bandwidth. */
START_TEST(test_shared_link_halves_bandwidth)
{
    int gpu_of[] = {0, 2};
    run_metrics m;
    timeline tl;
    /* F takes 1 ns: the second message starts 1 ns after the first, so for
     * all but 1 ns both share the NIC: each takes ~2x the solo time. */
    simulate_on_platform("gpipe", 2, 2, gpu_of, GB, 1e-9, &m, &tl);
    double solo = GB / 50e9 + 2.6e-6;
    int forward_msgs = 0;
    for (size_t i = 0; i < tl.nxfers; i++) {
        if (timeline_xfer(&tl, i).kind != XFER_ACTIVATION)
            continue;
        forward_msgs++;
        double t = timeline_xfer(&tl, i).end_s - timeline_xfer(&tl, i).start_s;
        ck_assert_msg(t > 1.9 * (solo - 2.6e-6) && t < 2 * solo, "shared transfer took %.9f s (solo %.9f)", t, solo);
    }
    ck_assert_int_eq(forward_msgs, 2);
    metrics_free(&m);
    timeline_free(&tl);
}
END_TEST

/* The engine itself detects an order that cannot complete (no validator
 * in front): rank 1 waits for a gradient rank 0 can only send later. */
START_TEST(test_engine_reports_deadlock)
{
    pg_status st;
    pg_status_clear(&st);
    schedule s;
    sched_init(&s, "bad", 2, 1, 1);
    sched_place_contiguous(&s);
    /* rank 0: BW before F: waits for rank 1's gradient, which needs rank 0's F. */
    sched_push(&s, 0, OP_BW, 0, 0);
    sched_push(&s, 0, OP_F, 0, 0);
    sched_push(&s, 1, OP_F, 1, 0);
    sched_push(&s, 1, OP_BW, 1, 0);
    workload w;
    uniform_workload(&w, 2, 1, 1, 1, 1, 0);
    platform_desc plat;
    ck_assert(platform_make_ideal(2, 0.0, 1e12, 80e9, &plat, &st) == 0);
    int gpu_of[] = {0, 1};
    sim_input in = {.sched = &s, .wl = &w, .plat = &plat, .rank_gpu = gpu_of, .zero_byte_messages = 1};
    sim_outcome out;
    timeline tl;
    timeline_init(&tl);
    ck_assert_int_eq(sim_run(&in, &tl, &out, &st), PG_EXIT_DEADLOCK);
    ck_assert(!out.completed);
    ck_assert_int_eq(out.ops_done, 0);
    ck_assert_msg(strstr(st.msg, "rank 0 blocked at BW(stage 0, mb 0)") != NULL, "%s", st.msg);
    ck_assert_msg(strstr(st.msg, "rank 1 blocked at F(stage 1, mb 0)") != NULL, "%s", st.msg);
    timeline_free(&tl);
    platform_free(&plat);
    free(w.stage);
    sched_free(&s);
}
END_TEST

/* Deterministic: the same run twice gives bit-identical timelines. */
START_TEST(test_deterministic)
{
    /* Two processes (fork) of the same case; compare the makespan bits. */
    int fds[2];
    ck_assert(pipe(fds) == 0);
    double result[2];
    for (int k = 0; k < 2; k++) {
        pid_t pid = fork();
        ck_assert(pid >= 0);
        if (pid == 0) {
            sim_case c = {"1f1b", 8, 32, 0, 1, 1.1, 0.9, 0.05};
            run_metrics m;
            timeline tl;
            simulate_ideal(&c, &m, &tl);
            double sum = 0;
            for (size_t i = 0; i < tl.nops; i++)
                sum += timeline_op(&tl, i).start_s * (double)(i + 1);
            ssize_t wr = write(fds[1], &sum, sizeof sum);
            _exit(wr == sizeof sum ? 0 : 1);
        }
        ck_assert(read(fds[0], &result[k], sizeof result[k]) == sizeof result[k]);
    }
    ck_assert(memcmp(&result[0], &result[1], sizeof result[0]) == 0);
    close(fds[0]);
    close(fds[1]);
}
END_TEST

/* sim_replicas_symmetric (replicas.c) on GPU maps of pp 2 on a generated
 * cluster of 8 nodes of 8 GPUs (GPU g = node 8 x n + local rank): each
 * condition that fails says so; the Megatron map with tp 8 (a node per
 * replica's rank) is symmetric replica by replica, and where replicas share
 * nodes or ep groups the smallest block that repeats is returned (its first
 * and last replicas on different nodes, a multiple of ep, below dp).  Plain
 * C: no simulation. */
enum { SYM_NODE_GPUS = 8, SYM_NODES = 8, SYM_PP = 2 };

typedef struct sym_case {
    int tp, dp, ep, all, no_mirror, hier;
    int gpu[SYM_NODES * SYM_NODE_GPUS];   /* [(r dp + d) tp + t]; all zero: Megatron's order */
    int symmetric;            /* the block returned: 1 one replica for all, 0 none */
    const char *why;          /* prefix of the reason */
} sym_case;

#define G(node, lr) ((node) * SYM_NODE_GPUS + (lr))
static const sym_case SYM_CASES[] = {
    {.tp = 8, .dp = 2, .symmetric = 1, .why = "symmetric"},
    {.tp = 8, .dp = 1, .why = "one replica"},
    {.tp = 8, .dp = 2, .all = 1, .why = "dp.replicas=all"},
    {.tp = 8, .dp = 2, .no_mirror = 1, .why = "not symmetric: only a generated cluster"},
    {.tp = 8, .dp = 2, .ep = 2, .why = "not symmetric: expert parallelism"},
    {.tp = 4, .dp = 2, .why = "not symmetric: node 0 holds GPUs of replicas 0 and 1"},
    /* two replicas per node: blocks of 2 would hold each ring on one node, 4 = dp is all */
    {.tp = 4, .dp = 4, .why = "not symmetric: node 0 holds GPUs of replicas 0 and 1"},
    {.tp = 4, .dp = 8, .symmetric = 4, .why = "symmetric in blocks of 4 replicas"},
    {.tp = 2, .dp = 16, .symmetric = 8, .why = "symmetric in blocks of 8 replicas"},
    {.tp = 4, .dp = 8, .hier = 1, .why = "not symmetric: node 0 holds GPUs of replicas 0 and 1"},
    {.tp = 8, .dp = 4, .ep = 2, .symmetric = 2, .why = "symmetric in blocks of 2 replicas (expert-parallel"},
    {.tp = 4, .dp = 8, .ep = 8, .why = "not symmetric: expert parallelism"},
    {.tp = 8, .dp = 4, .ep = 2, .all = 1, .why = "dp.replicas=all"},
    /* replica 1's rank 0 on its node's GPUs 4..7 where replica 0's is on 0..3 */
    {.tp = 4, .dp = 2,
     .gpu = {G(0, 0), G(0, 1), G(0, 2), G(0, 3), G(1, 4), G(1, 5), G(1, 6), G(1, 7),
             G(2, 0), G(2, 1), G(2, 2), G(2, 3), G(3, 0), G(3, 1), G(3, 2), G(3, 3)},
     .why = "not symmetric: replica 1's GPU of rank 0, index 0 differs"},
    /* replica 0's two ranks share node 0, replica 1's are on nodes 1 and 2 */
    {.tp = 4, .dp = 2,
     .gpu = {G(0, 0), G(0, 1), G(0, 2), G(0, 3), G(1, 0), G(1, 1), G(1, 2), G(1, 3),
             G(0, 4), G(0, 5), G(0, 6), G(0, 7), G(2, 4), G(2, 5), G(2, 6), G(2, 7)},
     .why = "not symmetric: replica 1's GPUs share nodes unlike replica 0's"},
};
#undef G

START_TEST(test_replicas_symmetry)
{
    const sym_case *c = &SYM_CASES[_i];
    experiment e;
    experiment_defaults(&e);
    e.network = NET_CLUSTER;
    e.cluster_nodes = SYM_NODES;
    e.cluster_gpus_per_node = SYM_NODE_GPUS;
    pg_status st;
    pg_status_clear(&st);
    platform_desc p;
    ck_assert_msg(platform_make_cluster_for(&e, SYM_NODES * SYM_NODE_GPUS, &p, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(p.mirror_routes, 1);
    if (c->no_mirror)
        p.mirror_routes = 0;
    int n = SYM_PP * c->dp * c->tp, gpu[SYM_NODES * SYM_NODE_GPUS], any = 0;
    ck_assert_int_le(n, SYM_NODES * SYM_NODE_GPUS);
    for (int i = 0; i < n; i++)
        any |= c->gpu[i];
    for (int i = 0; i < n; i++)
        gpu[i] = any ? c->gpu[i] : i;
    schedule s;
    memset(&s, 0, sizeof s);
    s.pp = SYM_PP;
    sim_parallel par = {.tp = c->tp, .dp = c->dp, .gpu = gpu, .ep = c->ep,
                        .algo = c->hier ? DP_ALGO_HIERARCHICAL : DP_ALGO_AUTO};
    sim_input in = {.sched = &s, .plat = &p, .par = &par, .replicas = c->all ? SIM_REPLICAS_ALL : SIM_REPLICAS_AUTO};
    char why[SIM_WHY_MAX];
    ck_assert_int_eq(sim_replicas_symmetric(&in, why, sizeof why), c->symmetric);
    ck_assert_msg(strncmp(why, c->why, strlen(c->why)) == 0, "case %d: '%s', want '%s...'", _i, why, c->why);
    platform_free(&p);
}
END_TEST

static Suite *sim_suite(void)
{
    Suite *s = suite_create("sim");
    TCase *tc = tcase_create("replay");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_fused_closed_form, 0, sizeof FUSED_CASES / sizeof FUSED_CASES[0]);
    tcase_add_test(tc, test_gpipe_latency);
    tcase_add_test(tc, test_1f1b_reference_slice);
    tcase_add_test(tc, test_bubble_breakdown);
    tcase_add_test(tc, test_bubble_breakdown_latency);
    tcase_add_test(tc, test_nvlink_route_time);
    tcase_add_test(tc, test_infiniband_route_time);
    tcase_add_test(tc, test_tp_group_sends_its_shard);
    tcase_add_test(tc, test_shared_link_halves_bandwidth);
    tcase_add_test(tc, test_engine_reports_deadlock);
    tcase_add_test(tc, test_deterministic);
    tcase_add_loop_test(tc, test_replicas_symmetry, 0, sizeof SYM_CASES / sizeof SYM_CASES[0]);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pg_run_suite(sim_suite());
}
