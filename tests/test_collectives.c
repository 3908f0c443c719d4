/* test_collectives.c: collectives (sim/collectives.h) against the
 * alpha-beta closed forms on uncontended generated clusters, their
 * contention with pipeline traffic on a shared NIC, and tensor / data
 * parallelism in the engine (sim.h's sim_parallel): TP divides compute, TP
 * collectives inside the ops, iteration = pipeline + exposed all-reduce +
 * optimizer by hand, overlap.  Mirror rings (symmetric replicas) against
 * the same closed form; their exactness against the full simulation under
 * contention is tests/replicas.sh's.
 *
 * SimGrid runs one simulation per process: every test is one simulation
 * (check's default fork mode).  The collective tests drive SimGrid
 * directly with the model flags engine.c sets (CM02, no cross-traffic, no
 * TCP window): the exact network model the closed forms hold for.
 */
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xbt/config.h>
#include <xbt/log.h>

#include "model/costmodel.h"
#include "model/experiment.h"
#include "model/platform.h"
#include "model/workload.h"
#include "schedule/schedule.h"
#include "sim/collectives.h"
#include "sim/metrics.h"
#include "sim/sgshim.h"
#include "sim/sim.h"
#include "testutil.h"

#define GPUS_PER_NODE 8
#define BYTES 8e8             /* divisible by every ring size used: exact chunks */

/* A generated cluster of `nodes` nodes of GPU system gpu (NULL: the
 * default's); gpus_used > 0: generated for a job of that many GPUs
 * (platform_make_cluster_for: with mirror routes). */
static void cluster_of(const char *gpu, int nodes, int gpus_used, platform_desc *p)
{
    experiment e;
    experiment_defaults(&e);
    e.network = NET_CLUSTER;
    if (gpu)
        snprintf(e.cluster_gpu, sizeof e.cluster_gpu, "%s", gpu);
    e.cluster_nodes = nodes;
    e.cluster_gpus_per_node = GPUS_PER_NODE;
    pg_status st;
    pg_status_clear(&st);
    int rc = gpus_used > 0 ? platform_make_cluster_for(&e, gpus_used, p, &st) : platform_make_cluster(&e, p, &st);
    ck_assert_msg(rc == 0, "%s", st.msg);
}

static void cluster_for(int nodes, int gpus_used, platform_desc *p)
{
    cluster_of(NULL, nodes, gpus_used, p);
}

static void cluster(int nodes, platform_desc *p)
{
    cluster_for(nodes, 0, p);
}

/* SimGrid with engine.c's exact model on p. */
static void simgrid_start(const platform_desc *p)
{
    static char prog[] = "test_collectives";
    static char *argv[] = {prog, NULL};
    int argc = 1;
    xbt_log_control_set("root.thres:critical");
    simgrid_init(&argc, argv);
    sg_cfg_set_string("network/model", "CM02");
    sg_cfg_set_boolean("network/crosstraffic", "no");
    sg_cfg_set_double("network/TCP-gamma", 0.0);
    char err[512];
    ck_assert_msg(sgx_load_platform(p->xml_path, err, sizeof err) == 0, "%s", err);
}

static sg_host_t gpu(int node, int local)
{
    char name[64];
    snprintf(name, sizeof name, "n%d-gpu%d", node, local);
    sg_host_t h = sg_host_by_name(name);
    if (h == NULL) {   /* zero-padded names on larger clusters */
        snprintf(name, sizeof name, "n%02d-gpu%d", node, local);
        h = sg_host_by_name(name);
    }
    ck_assert_msg(h != NULL, "no host %s", name);
    return h;
}

/* ---- one collective in an actor ------------------------------------------- */

typedef struct coll_job {
    coll_kind kind;
    coll_mode mode;
    int count;
    int hier;
    coll_rings rings;
    coll_hier h;
    double bytes;
    double pipe_bytes;        /* > 0: a pipeline transfer started at the same time */
    sg_host_t pipe_src, pipe_dst;
    double end_s;
    long transfers;           /* what coll_run started */
} coll_job;

static coll_job J;

static void coll_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    sg_comm_t pipe = NULL;
    if (J.pipe_bytes > 0)
        pipe = sgx_sendto_async(J.pipe_src, J.pipe_dst, J.pipe_bytes);
    if (J.hier)
        coll_hier_allreduce(&J.h, J.bytes, J.mode);
    else
        J.transfers = coll_run(J.kind, &J.rings, J.bytes, J.count, J.mode);
    J.end_s = simgrid_get_clock();
    if (pipe)
        sg_comm_wait(pipe);
}

static double run_job(void)
{
    sg_actor_t a = sg_actor_init("coll", J.pipe_src ? J.pipe_src : J.rings.ring ? J.rings.ring[0].host[0]
                                                                                 : J.h.intra.ring[0].host[0]);
    sg_actor_start(a, coll_actor, 0, NULL);
    simgrid_run();
    return J.end_s;
}

/* k GPUs of node 0 (NVLink ring), or GPU 0 of k nodes (InfiniBand ring). */
static void ring_case(coll_kind kind, coll_mode mode, int k, int across_nodes, int count)
{
    platform_desc p;
    cluster(across_nodes ? k : 1, &p);
    simgrid_start(&p);
    sg_host_t hosts[GPUS_PER_NODE];
    for (int i = 0; i < k; i++)
        hosts[i] = across_nodes ? gpu(i, 0) : gpu(0, i);
    memset(&J, 0, sizeof J);
    J.kind = kind;
    J.mode = mode;
    J.count = count;
    J.bytes = BYTES;
    coll_rings_add(&J.rings, hosts, k);
    double lat_s = sg_host_get_route_latency(hosts[0], hosts[1]);
    double bw = sg_host_get_route_bandwidth(hosts[0], hosts[1]);
    double t = run_job();
    /* alpha-beta: S steps of latency + S/k of the buffer over the edge */
    int steps = kind == COLL_ALLREDUCE ? 2 * (k - 1) : k - 1;
    ck_assert_int_eq(coll_steps(kind, k), steps);
    double expected = count * (steps * lat_s + (double)steps / k * BYTES / bw);
    ck_assert_exact(t, expected);
    coll_rings_free(&J.rings);
    platform_free(&p);
}

/* A mirror ring (collectives.h) of GPU 3 of k nodes on a job's platform of
 * `nodes` nodes (platform_make_cluster_for: mirror routes; above 64 nodes
 * the star layout): its one edge, GPU 3 of node 0 to itself, has exactly
 * the latency and bandwidth of the real ring's edges and the all-reduce
 * takes the full ring's closed form. */
static void mirror_case(int nodes, int k, coll_mode mode)
{
    enum { NIC = 3 };
    platform_desc p;
    cluster_for(nodes, nodes * GPUS_PER_NODE, &p);
    ck_assert_int_eq(p.mirror_routes, 1);
    simgrid_start(&p);
    sg_host_t hosts[GPUS_PER_NODE];
    ck_assert_int_le(k, GPUS_PER_NODE);
    for (int i = 0; i < k; i++)
        hosts[i] = gpu(i * (nodes / k), NIC);   /* spread: crosses the core wherever it is */
    double lat_s = sg_host_get_route_latency(hosts[0], hosts[1]);
    double bw = sg_host_get_route_bandwidth(hosts[0], hosts[1]);
    ck_assert_double_eq(sg_host_get_route_latency(hosts[0], hosts[0]), lat_s);
    ck_assert_double_eq(sg_host_get_route_bandwidth(hosts[0], hosts[0]), bw);
    memset(&J, 0, sizeof J);
    J.kind = COLL_ALLREDUCE;
    J.mode = mode;
    J.count = 1;
    J.bytes = BYTES;
    coll_rings_add_mirror(&J.rings, hosts, k);
    double t = run_job();
    int steps = 2 * (k - 1);
    ck_assert_exact(t, steps * lat_s + (double)steps / k * BYTES / bw);
    coll_rings_free(&J.rings);
    platform_free(&p);
}

START_TEST(test_mirror_ring_allreduce)
{
    mirror_case(_i < 2 ? 4 : 66, 4, _i % 2 ? COLL_FUSED : COLL_STEPWISE);
}
END_TEST

/* The formula of the brief: 2(k-1)/k n/bw + 2(k-1) latency. */
START_TEST(test_ring_allreduce_nvlink)
{
    ring_case(COLL_ALLREDUCE, COLL_STEPWISE, 8, 0, 1);
}
END_TEST

START_TEST(test_ring_allreduce_nvlink_fused)
{
    ring_case(COLL_ALLREDUCE, COLL_FUSED, 8, 0, 1);
}
END_TEST

START_TEST(test_ring_allreduce_fused_count)
{
    ring_case(COLL_ALLREDUCE, COLL_FUSED, 4, 0, 24);   /* one op's 2L all-reduces, L = 12 */
}
END_TEST

START_TEST(test_ring_allreduce_infiniband)
{
    ring_case(COLL_ALLREDUCE, COLL_STEPWISE, 4, 1, 1);
}
END_TEST

START_TEST(test_reduce_scatter_and_allgather)
{
    ring_case(_i == 0 ? COLL_REDUCE_SCATTER : COLL_ALLGATHER, _i < 2 ? COLL_STEPWISE : COLL_FUSED, 8, 0, 1);
}
END_TEST

/* Hierarchical, 2 nodes x 4 GPUs: reduce-scatter in node (3 steps of n/4
 * over NVLink), all-reduce of n/4 across the 2 nodes on 4 rails at once (2
 * steps of n/8 over the NICs), all-gather in node (as the reduce-scatter). */
START_TEST(test_hierarchical_allreduce)
{
    platform_desc p;
    cluster(2, &p);
    simgrid_start(&p);
    memset(&J, 0, sizeof J);
    J.hier = 1;
    J.mode = _i ? COLL_FUSED : COLL_STEPWISE;
    J.bytes = BYTES;
    sg_host_t hosts[8];
    int node[8];
    for (int i = 0; i < 8; i++) {
        hosts[i] = gpu(i / 4, i % 4);
        node[i] = i / 4;
    }
    ck_assert_int_eq(coll_hier_add(&J.h, hosts, node, 8), 1);
    ck_assert_int_eq(J.h.local, 4);
    ck_assert_int_eq(J.h.intra.count, 2);
    ck_assert_int_eq(J.h.inter.count, 4);
    double nvl_lat = sg_host_get_route_latency(hosts[0], hosts[1]);
    double nvl_bw = sg_host_get_route_bandwidth(hosts[0], hosts[1]);
    double ib_lat = sg_host_get_route_latency(hosts[0], hosts[4]);
    double ib_bw = sg_host_get_route_bandwidth(hosts[0], hosts[4]);
    double t = run_job();
    double in_node = 3 * nvl_lat + 3.0 / 4 * BYTES / nvl_bw;
    double across = 2 * ib_lat + 2.0 / 2 * (BYTES / 4) / ib_bw;
    ck_assert_exact(t, 2 * in_node + across);
    coll_hier_free(&J.h);
    platform_free(&p);
}
END_TEST


/* NCCL's channel rings: 16 GPUs on 2 nodes run 8 rings of 1/8 of the bytes,
 * ring c entering each node at its GPU c; each GPU's NIC carries one ring,
 * its NVLink port the other 7.  Fused, the slowest edge's transfer and the
 * other steps' latencies (collectives.h). */
START_TEST(test_channel_rings_across_nodes)
{
    enum { N = 16, M = 8 };
    platform_desc p;
    cluster(2, &p);
    simgrid_start(&p);
    memset(&J, 0, sizeof J);
    J.kind = _i ? COLL_REDUCE_SCATTER : COLL_ALLREDUCE;
    J.mode = COLL_FUSED;
    J.count = 1;
    J.bytes = BYTES;
    sg_host_t hosts[N];
    int node[N];
    for (int i = 0; i < N; i++) {
        hosts[i] = gpu(i / M, i % M);
        node[i] = i / M;
    }
    ck_assert_int_eq(coll_rings_add_channels(&J.rings, hosts, node, N), M);
    /* the M rings kept as one of M channels, 2 transfers per GPU (collectives.h) */
    ck_assert_int_eq(J.rings.count, 1);
    ck_assert_int_eq(J.rings.ring[0].channels, M);
    ck_assert_double_eq(J.rings.ring[0].share, 1.0 / M);
    /* as block rings (of the whole group: every edge real) they are the M rings, ring c rotated by c */
    coll_rings apart = {0};
    ck_assert_int_eq(coll_rings_add_channels(&apart, hosts, node, N), M);
    coll_rings_simulate_block(&apart, 0, N - 1);
    ck_assert_int_eq(apart.count, M);
    int seen[M] = {0};
    for (int k = 0; k < M; k++) {
        const coll_ring *r = &apart.ring[k];
        int c = -1;
        for (int i = 0; i < M; i++)
            if (r->host[0] == gpu(0, i))
                c = i;
        ck_assert_int_ge(c, 0);
        seen[c]++;
        for (int j = 0; j < N; j++)   /* ring c enters each node at its GPU c */
            ck_assert_ptr_eq(r->host[j], gpu(j / M, (j + c) % M));
        ck_assert_double_eq(r->share, 1.0 / M);
        ck_assert_int_eq(r->channels, 1);
        ck_assert_int_eq(r->nsim, N - 1);
    }
    for (int c = 0; c < M; c++)
        ck_assert_int_eq(seen[c], 1);
    coll_rings_free(&apart);
    /* a block of whole nodes keeps them as one */
    ck_assert_int_eq(coll_rings_add_channels(&apart, hosts, node, N), M);
    coll_rings_simulate_block(&apart, 0, M);
    ck_assert_int_eq(apart.count, 1);
    ck_assert_int_eq(apart.ring[0].nsim, M);
    coll_rings_free(&apart);
    double nvl_lat = sg_host_get_route_latency(hosts[0], hosts[1]);
    double nvl_bw = sg_host_get_route_bandwidth(hosts[0], hosts[1]);
    double ib_lat = sg_host_get_route_latency(hosts[0], hosts[M]);
    double ib_bw = sg_host_get_route_bandwidth(hosts[0], hosts[M]);
    double t = run_job();
    ck_assert_int_eq(J.transfers, 2 * N);   /* not M x N */
    int steps = coll_steps(J.kind, N);
    double edge_bytes = (double)steps * BYTES / N / M;
    double ib_s = ib_lat + edge_bytes / ib_bw, nvl_s = nvl_lat + (M - 1) * edge_bytes / nvl_bw;
    double lat_s = ib_lat > nvl_lat ? ib_lat : nvl_lat;
    ck_assert_rel(t, (ib_s > nvl_s ? ib_s : nvl_s) + (steps - 1) * lat_s, 1e-12);
    /* the rate the cost model and the surrogate use (costmodel_ring_bw), when the latencies agree */
    if (ib_lat == nvl_lat)
        ck_assert_rel(t, steps * lat_s + (double)steps / N * BYTES / costmodel_ring_bw(nvl_bw, ib_bw, M, N, 1),
                      1e-12);
    /* inside one node, or one GPU per node: one ring */
    coll_rings one = {0};
    ck_assert_int_eq(coll_rings_add_channels(&one, hosts, node, M), 1);
    int spread[2] = {0, 1};
    sg_host_t two[2] = {hosts[0], hosts[M]};
    ck_assert_int_eq(coll_rings_add_channels(&one, two, spread, 2), 1);
    coll_rings_free(&one);
    coll_rings_free(&J.rings);
    platform_free(&p);
}
END_TEST

/* An uneven group is not hierarchical (a flat ring does it). */
START_TEST(test_hierarchical_needs_even_nodes)
{
    platform_desc p;
    cluster(2, &p);
    simgrid_start(&p);
    coll_hier h;
    memset(&h, 0, sizeof h);
    sg_host_t hosts[3] = {gpu(0, 0), gpu(0, 1), gpu(1, 0)};
    int node[3] = {0, 0, 1};
    ck_assert_int_eq(coll_hier_add(&h, hosts, node, 3), 0);
    sg_host_t one_node[2] = {gpu(0, 0), gpu(0, 1)};
    int same[2] = {0, 0};
    ck_assert_int_eq(coll_hier_add(&h, one_node, same, 2), 0);
    ck_assert_int_eq(h.local, 0);
    coll_hier_free(&h);
    platform_free(&p);
}
END_TEST

/* A data-parallel all-reduce between GPU 0 of two nodes while a (longer)
 * pipeline transfer leaves node 0 through the same NIC (to GPU 1 of node
 * 1): the ring edge 0 -> 1 gets half the NIC in each of its 2 steps, the
 * edge 1 -> 0 shares nothing, so each step takes latency + (n/2)/(bw/2)
 * instead of latency + (n/2)/bw. */
START_TEST(test_allreduce_contends_with_pipeline_on_nic)
{
    platform_desc p;
    cluster(2, &p);
    simgrid_start(&p);
    memset(&J, 0, sizeof J);
    J.kind = COLL_ALLREDUCE;
    J.mode = COLL_STEPWISE;
    J.count = 1;
    J.bytes = BYTES;
    sg_host_t hosts[2] = {gpu(0, 0), gpu(1, 0)};
    coll_rings_add(&J.rings, hosts, 2);
    double lat_s = sg_host_get_route_latency(hosts[0], hosts[1]);
    double bw = sg_host_get_route_bandwidth(hosts[0], hosts[1]);
    int shared = _i == 0;
    J.pipe_src = gpu(0, 0);
    J.pipe_dst = shared ? gpu(1, 1) : gpu(1, 2);
    if (!shared)   /* control: the same transfer from another GPU (its own NIC) */
        J.pipe_src = gpu(0, 1);
    J.pipe_bytes = 20 * BYTES;   /* outlasts the all-reduce */
    double t = run_job();
    double alone = 2 * lat_s + 2.0 / 2 * BYTES / bw;
    double contended = 2 * (lat_s + (BYTES / 2) / (bw / 2));
    ck_assert_exact(t, shared ? contended : alone);
    coll_rings_free(&J.rings);
    platform_free(&p);
}
END_TEST

/* ---- tensor / data parallelism in the engine ------------------------------- */

typedef struct par_case {
    int pp, m, tp, dp;
    double f, b, w;           /* the whole tp group's seconds (split_compute) */
    double boundary_bytes;
    double params;            /* per stage, the group's */
    double expert_params;     /* of them, the routed experts' (ep > 1: reduced over their own group) */
    int dist_opt;             /* the distributed optimizer (reduce-scatter, step, gather) */
    double bucket_bytes;
    int overlap;
    double optimizer_s;
    int nodes;
    int replica_stride;       /* GPU distance between replicas (default tp) */
    int stepwise;             /* collectives step by step */
    const char *schedule;
    int cp, ep;               /* 0 = 1 */
    double a2a_bytes;         /* per stage: one MoE layer's all-to-all bytes per GPU (moe_layers = 1) */
    double cp_kv_bytes;       /* per stage: one attention layer's K/V block (attn_layers = 1) */
    int overlap_pairs;
    dp_shard_mode sharding;   /* ZeRO-2 / ZeRO-3 (sim.h) */
    int shard_group;          /* 0 = dp */
    int layers;               /* per stage; 0 = 1 */
    const char *gpu;          /* GPU system (NULL: the default's) */
    int ep_hybrid;            /* HybridEP's dispatch of experts routed experts, top_k per token */
    int experts, top_k;
    int combined;             /* Megatron's combined 1F1B steps (sched_params.ep_overlap, sim.h combined_pairs) */
    sim_engine engine;        /* SIM_ENGINE_AUTO (without actors here) or _ACTORS */
} par_case;

typedef struct par_result {
    run_metrics m;
    timeline tl;
    platform_desc plat;
    double nvl_lat, nvl_bw, ib_lat, ib_bw;
    double ideal_makespan;    /* the schedule layer's evaluator at t / tp, NVLink latency per hop */
} par_result;

static void simulate_par(const par_case *c, par_result *res)
{
    pg_status st;
    pg_status_clear(&st);
    schedule s;
    sched_params sp = {.pp = c->pp, .m = c->m, .chunks = 2, .t_f = c->f, .t_b = c->b, .t_w = c->w,
                       .w_fraction = 0.5, .ep_overlap = c->combined};
    ck_assert_msg(sched_generate(c->schedule ? c->schedule : "1f1b", &sp, &s, &st) == 0, "%s", st.msg);
    workload w;
    memset(&w, 0, sizeof w);
    w.nstages = s.nstages;
    w.moe_experts = c->experts;
    w.moe_top_k = c->top_k;
    w.stage = calloc((size_t)s.nstages, sizeof *w.stage);
    for (int i = 0; i < s.nstages; i++) {
        w.stage[i] = (stage_cost){.f_s = c->f, .b_s = c->b, .w_s = c->w, .act_b_bytes = 1, .act_w_bytes = 0.5,
                                  .boundary_bytes = c->boundary_bytes, .tp_coll_bytes = c->boundary_bytes,
                                  .param_count = c->params, .expert_param_count = c->expert_params,
                                  .layers = c->layers ? c->layers : 1,
                                  .moe_layers = c->a2a_bytes > 0, .a2a_bytes = c->a2a_bytes,
                                  .attn_layers = c->cp_kv_bytes > 0, .cp_kv_bytes = c->cp_kv_bytes};
    }
    cluster_of(c->gpu, c->nodes ? c->nodes : 1, 0, &res->plat);
    int grp = c->tp * (c->cp > 1 ? c->cp : 1);
    int n = c->pp * c->dp * grp, stride = c->replica_stride ? c->replica_stride : grp;
    int *gpu_of = calloc((size_t)n, sizeof *gpu_of), *rank_gpu = calloc((size_t)c->pp, sizeof *rank_gpu);
    for (int r = 0; r < c->pp; r++)
        for (int d = 0; d < c->dp; d++)
            for (int t = 0; t < grp; t++)
                gpu_of[(r * c->dp + d) * grp + t] = r * c->dp * stride + d * stride + t;
    for (int r = 0; r < c->pp; r++)
        rank_gpu[r] = gpu_of[r * c->dp * grp];
    double *opt = calloc((size_t)c->pp, sizeof *opt);
    for (int r = 0; r < c->pp; r++)
        opt[r] = c->optimizer_s;
    sim_parallel par = {.tp = c->tp, .dp = c->dp, .gpu = gpu_of, .split_compute = 1, .tp_comm = 1,
                        .grad_bytes_per_param = 2, .bucket_bytes = c->bucket_bytes, .overlap = c->overlap,
                        .optimizer_s = c->optimizer_s > 0 ? opt : NULL, .stepwise_collectives = c->stepwise,
                        .cp = c->cp, .ep = c->ep, .ep_hybrid = c->ep_hybrid, .overlap_pairs = c->overlap_pairs,
                        .sharding = c->sharding, .shard_group = c->shard_group, .param_bytes_per_param = 2,
                        .combined_pairs = c->combined, .distributed_optimizer = c->dist_opt};
    sim_input in = {.sched = &s, .wl = &w, .plat = &res->plat, .rank_gpu = rank_gpu, .par = &par,
                    .engine = c->engine};
    sim_outcome out;
    timeline_init(&res->tl);
    ck_assert_msg(sim_run(&in, &res->tl, &out, &st) == 0, "%s", st.msg);
    ck_assert(out.completed);
    /* sim_run freed SimGrid's side; the hosts stay for the route lookups */
    sg_host_t g0 = sg_host_by_name(res->plat.gpu[0].host), g1 = sg_host_by_name(res->plat.gpu[1].host);
    res->nvl_lat = sg_host_get_route_latency(g0, g1);
    res->nvl_bw = sg_host_get_route_bandwidth(g0, g1);
    if (res->plat.ngpus > GPUS_PER_NODE) {
        sg_host_t g8 = sg_host_by_name(res->plat.gpu[GPUS_PER_NODE].host);
        res->ib_lat = sg_host_get_route_latency(g0, g8);
        res->ib_bw = sg_host_get_route_bandwidth(g0, g8);
    }
    sched_times it;
    ck_assert(sched_eval_ideal(&s, c->f / grp, c->b / grp, c->w / grp, res->nvl_lat, &it, &st) == 0);
    res->ideal_makespan = it.makespan;
    sched_times_free(&s, &it);
    metrics_input mi = {.sched = &s, .wl = &w, .plat = &res->plat, .rank_gpu = rank_gpu, .tl = &res->tl,
                        .bytes_per_param = 16, .dp = c->dp};
    metrics_compute(&mi, &res->m);
    free(opt);
    free(gpu_of);
    free(rank_gpu);
    free(w.stage);
    sched_free(&s);
}

static void par_result_free(par_result *r)
{
    metrics_free(&r->m);
    timeline_free(&r->tl);
    platform_free(&r->plat);
}

/* tp = 2 on uniform (group) times: every op takes t / 2, so the run is the
 * ideal evaluator's with halved times and the NVLink latency per hop (the
 * messages carry no bytes: no collectives). */
START_TEST(test_tp_divides_compute)
{
    par_case c = {.pp = 4, .m = 8, .tp = 2, .dp = 1, .f = 1e-3, .b = 2e-3, .w = 1e-3};
    par_result r;
    simulate_par(&c, &r);
    double expected = r.ideal_makespan;
    /* halved compute: above the latency-free closed form by latency terms only */
    double closed = (c.m + c.pp - 1) * (c.f + c.b + c.w) / c.tp;
    ck_assert(expected > closed && expected < closed + 4 * c.m * r.nvl_lat);
    ck_assert_exact(r.m.makespan_s, expected);
    ck_assert_exact(r.m.iteration_s, expected);
    ck_assert_exact(r.m.pipeline_s, expected);
    ck_assert_int_eq((int)r.tl.ncolls, 1);   /* the one replica's span */
    par_result_free(&r);
}
END_TEST

/* pp = 1, tp = 4 in one node: F and B each run their 2 all-reduces (one
 * layer) of the boundary bytes on the NVLink ring after their compute
 * (fused, then stepwise: the same time). */
START_TEST(test_tp_collectives_in_ops)
{
    par_case c = {.pp = 1, .m = 3, .tp = 4, .dp = 1, .f = 1e-3, .b = 2e-3, .w = 1e-3, .boundary_bytes = BYTES / 100,
                  .stepwise = _i};
    par_result r;
    simulate_par(&c, &r);
    int k = c.tp;
    double ar = 2 * (2 * (k - 1) * r.nvl_lat + 2.0 * (k - 1) / k * c.boundary_bytes / r.nvl_bw);
    double expected = c.m * ((c.f + c.b + c.w) / k + 2 * ar);
    ck_assert_exact(r.m.makespan_s, expected);
    ck_assert_exact(r.m.tp_comm_s, c.m * 2 * ar);
    size_t ncoll = 0;
    for (size_t i = 0; i < r.tl.ncolls; i++)
        if (r.tl.colls[i].kind == TLC_TP_ALLREDUCE) {
            ck_assert_exact(r.tl.colls[i].end_s - r.tl.colls[i].start_s, ar);
            ck_assert_int_eq(r.tl.colls[i].count, 2);
            ncoll++;
        }
    ck_assert_int_eq((int)ncoll, 2 * c.m);
    par_result_free(&r);
}
END_TEST

/* pp = 1, dp = 2 on GPU 0 of two nodes: pipeline m (F+B+W), then one
 * bucket of the stage's gradient (params x 2 bytes) all-reduced over the
 * InfiniBand ring, then the optimizer step: the iteration is their sum
 * (fused, then stepwise collectives). */
START_TEST(test_iteration_by_hand)
{
    par_case c = {.pp = 1, .m = 4, .tp = 1, .dp = 2, .f = 1e-3, .b = 2e-3, .w = 1e-3, .params = 1e8,
                  .optimizer_s = 5e-3, .nodes = 2, .replica_stride = GPUS_PER_NODE, .stepwise = _i};
    par_result r;
    simulate_par(&c, &r);
    double pipeline = c.m * (c.f + c.b + c.w);
    double grad = c.params * 2;
    double ar = 2 * r.ib_lat + 2.0 / 2 * grad / r.ib_bw;
    ck_assert_exact(r.m.pipeline_s, pipeline);
    ck_assert_exact(r.m.dp_allreduce_s, ar);
    ck_assert_exact(r.m.dp_allreduce_busy_s, ar);
    ck_assert_exact(r.m.optimizer_s, c.optimizer_s);
    ck_assert_exact(r.m.iteration_s, pipeline + ar + c.optimizer_s);
    ck_assert_int_eq(r.m.dp_buckets, 1);
    par_result_free(&r);
}
END_TEST

/* Buckets: the same gradient in 4 buckets pays 4 x the latency terms;
 * with overlap, bucket j is ready after piece j of the last W, each piece
 * lasting w/4, longer than a bucket's all-reduce, so only the last bucket
 * is exposed. */
START_TEST(test_buckets_and_overlap)
{
    int overlap = _i;
    par_case c = {.pp = 1, .m = 4, .tp = 1, .dp = 2, .f = 1e-3, .b = 2e-3, .w = 40e-3, .params = 1e8,
                  .bucket_bytes = 5e7, .overlap = overlap, .nodes = 2, .replica_stride = GPUS_PER_NODE};
    par_result r;
    simulate_par(&c, &r);
    double bucket = c.params * 2 / 4;
    double ar = 2 * r.ib_lat + 2.0 / 2 * bucket / r.ib_bw;
    ck_assert_msg(ar < c.w / 4, "a bucket must fit in a piece of W for this case");
    ck_assert_int_eq(r.m.dp_buckets, 4);
    ck_assert_exact(r.m.dp_allreduce_busy_s, 4 * ar);
    ck_assert_exact(r.m.pipeline_s, c.m * (c.f + c.b + c.w));
    ck_assert_exact(r.m.dp_allreduce_s, overlap ? ar : 4 * ar);
    ck_assert_exact(r.m.iteration_s, r.m.pipeline_s + r.m.dp_allreduce_s);
    par_result_free(&r);
}
END_TEST

/* Experts' gradients: dp = 4 replicas on GPUs 0 and 4 of two nodes, ep = 2
 * (expert groups: the two replicas of a node), every parameter an
 * expert's.  GPUs holding the same experts are GPU 0 and 8, and 4 and 12:
 * two rings of 2 across the nodes, each on its GPUs' own NICs, so the
 * gradient's all-reduce takes the 2-GPU InfiniBand ring's time (not the
 * 4-replica ring's); with the distributed optimizer a reduce-scatter, the
 * step, then the gather of the bf16 parameters over the same rings; with
 * ep = dp no other GPU holds a GPU's experts: nothing to reduce. */
START_TEST(test_expert_gradients_own_group)
{
    int dist = _i % 2, ep_is_dp = _i >= 2;
    par_case c = {.pp = 1, .m = 2, .tp = 1, .dp = 4, .ep = ep_is_dp ? 4 : 2, .f = 1e-3, .b = 2e-3, .w = 1e-3,
                  .params = 1e8, .expert_params = 1e8, .optimizer_s = 5e-3, .nodes = 2,
                  .replica_stride = GPUS_PER_NODE / 2, .dist_opt = dist};
    par_result r;
    simulate_par(&c, &r);
    double pipeline = c.m * (c.f + c.b + c.w), grad = c.params * 2;
    double pass = r.ib_lat + 1.0 / 2 * grad / r.ib_bw;   /* a 2-GPU ring's reduce-scatter or all-gather */
    ck_assert_exact(r.m.pipeline_s, pipeline);
    ck_assert_int_eq(r.m.dp_buckets, ep_is_dp ? 0 : 1);
    ck_assert_exact(r.m.dp_allreduce_busy_s, ep_is_dp ? 0.0 : dist ? pass : 2 * pass);
    ck_assert_exact(r.m.iteration_s, pipeline + (ep_is_dp ? 0.0 : 2 * pass) + c.optimizer_s);
    par_result_free(&r);
}
END_TEST

/* dp = 2 replicas of a pp = 2 pipeline in one node: both replicas run (the
 * pipeline span is recorded per replica), and without bytes each matches the
 * single pipeline's ideal evaluation. */
START_TEST(test_replicas_run)
{
    par_case c = {.pp = 2, .m = 4, .tp = 1, .dp = 2, .f = 1e-3, .b = 1e-3, .w = 1e-3};
    par_result r;
    simulate_par(&c, &r);
    double expected = r.ideal_makespan;
    int spans = 0;
    for (size_t i = 0; i < r.tl.ncolls; i++)
        if (r.tl.colls[i].kind == TLC_PIPELINE) {
            ck_assert_exact(r.tl.colls[i].end_s - r.tl.colls[i].start_s, expected);
            spans++;
        }
    ck_assert_int_eq(spans, 2);
    ck_assert_exact(r.m.makespan_s, expected);
    ck_assert_exact(r.m.iteration_s, expected);
    par_result_free(&r);
}
END_TEST

/* Expert parallelism, uncontended, one node: every F and B runs its two
 * all-to-alls (one MoE layer): each GPU sends a2a_bytes, split evenly over
 * the other ep - 1 members, through its own NVLink port, so one all-to-all
 * takes latency + a2a_bytes / bandwidth; ep = 1 runs none. */
START_TEST(test_ep_alltoall_by_hand)
{
    const int eps[] = {1, 2, 4};
    int ep = eps[_i];
    par_case c = {.pp = 1, .m = 3, .tp = 1, .dp = 4, .ep = ep, .f = 1e-3, .b = 2e-3, .w = 1e-3,
                  .a2a_bytes = BYTES / 10};
    par_result r;
    simulate_par(&c, &r);
    double a2a = ep > 1 ? r.nvl_lat + c.a2a_bytes / r.nvl_bw : 0.0;
    double per_mb = c.f + c.b + c.w + 2 * 2 * a2a;     /* two in F, two in B */
    ck_assert_exact(r.m.makespan_s, c.m * per_mb);
    if (ep > 1)
        ck_assert_exact(r.m.ep_comm_s, c.m * 2 * 2 * a2a);
    else
        ck_assert(r.m.ep_comm_s == 0);
    par_result_free(&r);
}
END_TEST

/* The all-to-alls contend with a concurrent flow: replicas on two nodes
 * (ep across InfiniBand) and a two-stage pipeline whose boundary transfers
 * leave through the same NICs: the all-to-alls take longer than their
 * uncontended closed form. */
START_TEST(test_ep_alltoall_contends)
{
    par_case c = {.pp = 2, .m = 4, .tp = 1, .dp = 2, .ep = 2, .f = 1e-3, .b = 1e-3, .w = 1e-3, .nodes = 4,
                  .replica_stride = GPUS_PER_NODE, .a2a_bytes = BYTES / 20, .boundary_bytes = 2 * BYTES};
    par_result r;
    simulate_par(&c, &r);
    double alone = c.m * 2 * 2 * (r.ib_lat + c.a2a_bytes / r.ib_bw);
    ck_assert_msg(r.m.ep_comm_s > alone * 1.01, "all-to-alls %.9g s with pipeline traffic, %.9g s alone",
                  r.m.ep_comm_s, alone);
    par_result_free(&r);
}
END_TEST

/* The same case without pipeline bytes: exactly the closed form. */
START_TEST(test_ep_alltoall_infiniband_alone)
{
    par_case c = {.pp = 2, .m = 4, .tp = 1, .dp = 2, .ep = 2, .f = 1e-3, .b = 1e-3, .w = 1e-3, .nodes = 4,
                  .replica_stride = GPUS_PER_NODE, .a2a_bytes = BYTES / 20};
    par_result r;
    simulate_par(&c, &r);
    ck_assert_exact(r.m.ep_comm_s, c.m * 2 * 2 * (r.ib_lat + c.a2a_bytes / r.ib_bw));
    par_result_free(&r);
}
END_TEST

/* Context parallelism, cp = 2 in one node: compute split over the group,
 * and each attention layer's key/value block passed to the ring neighbour,
 * twice the bytes in B. */
START_TEST(test_cp_exchange_by_hand)
{
    par_case c = {.pp = 1, .m = 3, .tp = 1, .cp = 2, .dp = 1, .f = 2e-3, .b = 4e-3, .w = 2e-3,
                  .cp_kv_bytes = BYTES / 10};
    par_result r;
    simulate_par(&c, &r);
    double fwd = r.nvl_lat + c.cp_kv_bytes / r.nvl_bw, bwd = r.nvl_lat + 2 * c.cp_kv_bytes / r.nvl_bw;
    ck_assert_exact(r.m.makespan_s, c.m * ((c.f + c.b + c.w) / 2 + fwd + bwd));
    ck_assert_exact(r.m.cp_comm_s, c.m * (fwd + bwd));
    par_result_free(&r);
}
END_TEST

/* Makespan and all-to-all time of c, simulated in a child process (SimGrid
 * runs one simulation per process). */
static void simulate_in_child(const par_case *c, double out[2])
{
    int fd[2];
    ck_assert(pipe(fd) == 0);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        par_result r;
        simulate_par(c, &r);
        double v[2] = {r.m.makespan_s, r.m.ep_comm_s};
        _exit(write(fd[1], v, sizeof v) == (ssize_t)sizeof v ? 0 : 1);
    }
    close(fd[1]);
    ck_assert(read(fd[0], out, 2 * sizeof *out) == (ssize_t)(2 * sizeof *out));
    close(fd[0]);
    int status;
    ck_assert(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Megatron's combined 1F1B steps, pp = 1, one node, uncontended, with and
 * without actors: F0 alone (its compute, then its two all-to-alls), m - 1
 * steps of max(F + BW compute, the four all-to-alls of both ops as one
 * exchange), the last BW alone; compute-bound (small all-to-alls) and
 * all-to-all-bound. */
START_TEST(test_combined_step_by_hand)
{
    int bound = _i % 2;
    par_case c = {.pp = 1, .m = 4, .tp = 1, .dp = 2, .ep = 2, .f = 1e-3, .b = 2e-3, .w = 1e-3,
                  .a2a_bytes = bound ? 2 * BYTES : BYTES / 100, .combined = 1,
                  .engine = _i / 2 ? SIM_ENGINE_ACTORS : SIM_ENGINE_AUTO};
    par_result r;
    simulate_par(&c, &r);
    double a = r.nvl_lat + c.a2a_bytes / r.nvl_bw, bw = c.b + c.w;
    double step = c.f + bw > 4 * a ? c.f + bw : 4 * a;
    ck_assert_msg((c.f + bw < 4 * a) == bound, "the case must be %s-bound", bound ? "all-to-all" : "compute");
    ck_assert_exact(r.m.makespan_s, (c.f + 2 * a) + (c.m - 1) * step + (bw + 2 * a));
    par_result_free(&r);
}
END_TEST

/* DualPipeV's overlapped pairs: with all-to-alls as long as the compute, the
 * overlapped run is shorter than the same schedule run pair by pair, by no
 * more than the all-to-all time there is to hide. */
START_TEST(test_dualpipev_overlap_hides_alltoall)
{
    double res[2][2];
    for (int ov = 0; ov < 2; ov++) {
        par_case c = {.pp = 2, .m = 8, .tp = 1, .dp = 2, .ep = 2, .f = 1e-3, .b = 1e-3, .w = 1e-3,
                      .schedule = "dualpipe-v", .a2a_bytes = BYTES, .overlap_pairs = ov};
        simulate_in_child(&c, res[ov]);
    }
    ck_assert_msg(res[1][0] < res[0][0] * 0.99, "overlap %.9g s, none %.9g s", res[1][0], res[0][0]);
    ck_assert(res[0][0] - res[1][0] <= res[0][1]);
}
END_TEST

/* The timeline's data-parallel collectives of one kind: how many, and
 * whether every one carries bytes (per GPU) and lasts dur_s. */
static int count_dp_colls(const par_result *r, tl_coll_kind kind, double bytes, double dur_s)
{
    int n = 0;
    for (size_t i = 0; i < r->tl.ncolls; i++) {
        const tl_coll *c = &r->tl.colls[i];
        if (c->kind != kind)
            continue;
        ck_assert_exact(c->bytes, bytes);
        ck_assert_exact(c->end_s - c->start_s, dur_s);
        n++;
    }
    return n;
}

/* FSDP (full sharding), pp = 1, dp = 2 on GPU 0 of two nodes, a stage of
 * 4 layers, 1F1B (F, B, W per microbatch): per microbatch each layer's
 * parameters are all-gathered before its F and again before its B (8
 * gathers of params x 2 B / 4), its gradient reduce-scattered after its W
 * piece (4 of params x 2 B / 4), each a one-step ring pass over InfiniBand,
 * lat + bytes/2 / bw; nothing else.  With the collectives far shorter than
 * a layer's compute, the prefetch hides every gather but each op's first,
 * and a W's last reduce-scatter holds the stream when the next F issues
 * its first gather: makespan m (f + b + w + 2 t) + (m - 1) t, and the
 * iteration ends with the last reduce-scatter. */
START_TEST(test_fsdp_collectives_per_layer)
{
    par_case c = {.pp = 1, .m = 3, .tp = 1, .dp = 2, .f = 40e-3, .b = 40e-3, .w = 40e-3, .params = 1e8,
                  .nodes = 2, .replica_stride = GPUS_PER_NODE, .sharding = DP_SHARD_FULL, .layers = 4};
    par_result r;
    simulate_par(&c, &r);
    double bytes = c.params * 2 / c.layers, t = r.ib_lat + bytes / 2 / r.ib_bw;
    ck_assert_msg(t < c.f / c.layers / 2, "a layer's collective must hide under half a piece for this case");
    ck_assert_int_eq(count_dp_colls(&r, TLC_DP_ALLGATHER, bytes, t), 2 * c.layers * c.m);
    ck_assert_int_eq(count_dp_colls(&r, TLC_DP_REDUCE_SCATTER, bytes, t), c.layers * c.m);
    ck_assert_int_eq(count_dp_colls(&r, TLC_DP_ALLREDUCE, 0, 0), 0);
    double makespan = c.m * (c.f + c.b + c.w + 2 * t) + (c.m - 1) * t;
    ck_assert_double_eq_tol(r.m.makespan_s, makespan, 1e-9 * makespan);
    ck_assert_double_eq_tol(r.m.iteration_s, makespan + t, 1e-9 * makespan);
    par_result_free(&r);
}
END_TEST

/* ZeRO-2 (gradients): no per-layer gathers, the same reduce-scatters, and
 * one all-gather of the updated parameters (params x 2 B) after the step;
 * HSDP (full, shard groups of 2 of dp 4 on four nodes): the per-layer
 * collectives over each group's 2 GPUs, then one all-reduce of the sharded
 * gradient (params x 2 B / 2) across the 2 groups. */
START_TEST(test_zero2_and_hsdp_collectives)
{
    int hsdp = _i;
    par_case c = {.pp = 1, .m = 2, .tp = 1, .dp = hsdp ? 4 : 2, .f = 40e-3, .b = 40e-3, .w = 40e-3,
                  .params = 1e8, .nodes = hsdp ? 4 : 2, .replica_stride = GPUS_PER_NODE,
                  .sharding = hsdp ? DP_SHARD_FULL : DP_SHARD_GRADIENTS, .shard_group = 2, .layers = 4};
    par_result r;
    simulate_par(&c, &r);
    double bytes = c.params * 2 / c.layers, t = r.ib_lat + bytes / 2 / r.ib_bw;
    ck_assert_int_eq(count_dp_colls(&r, TLC_DP_REDUCE_SCATTER, bytes, t), c.layers * c.m);
    if (hsdp) {
        ck_assert_int_eq(count_dp_colls(&r, TLC_DP_ALLGATHER, bytes, t), 2 * c.layers * c.m);
        double shard = c.params * 2 / 2, ar = 2 * (r.ib_lat + shard / 2 / r.ib_bw);
        ck_assert_int_eq(count_dp_colls(&r, TLC_DP_ALLREDUCE, shard, ar), 1);
    } else {
        double whole = c.params * 2;
        ck_assert_int_eq(count_dp_colls(&r, TLC_DP_ALLGATHER, whole, r.ib_lat + whole / 2 / r.ib_bw), 1);
        ck_assert_int_eq(count_dp_colls(&r, TLC_DP_ALLREDUCE, 0, 0), 0);
    }
    par_result_free(&r);
}
END_TEST

/* ---- NVLink domains larger than a node (GB200 NVL72) ------------------------ */

#define NVL72 72
#define NVL72_NODES 18        /* 2 racks of 72 GPUs in 8-GPU nodes (cluster.gpus_per_node's default) */
#define NVL72_BYTES (2.0 * NVL72 * NVL72 * 1e4)   /* exact chunks for rings of 72 and 144 in 72 channels */

/* The GPU of rank r on a generated GB200 cluster: the platform's node of a
 * GPU is its NVLink domain (cluster.c). */
static sg_host_t rack_gpu(const platform_desc *p, int r)
{
    sg_host_t h = sg_host_by_name(p->gpu[r].host);
    ck_assert_msg(h != NULL, "no host %s", p->gpu[r].host);
    return h;
}

/* An all-reduce on GB200 NVL72: _i = 0, the 72 GPUs of one rack: one
 * NVLink ring (a DGX cluster would cross 9 nodes' NICs), the ring's closed
 * form; _i = 1, the 144 GPUs of two racks: 72 channel rings, each GPU's
 * NIC carrying one, its NVLink port the other 71, the closed form of
 * collectives.h, and the rate costmodel_ring_bw gives the cost model for a
 * domain of 72 when the two routes' latencies agree. */
START_TEST(test_nvl72_allreduce)
{
    int n = _i ? 2 * NVL72 : NVL72;
    platform_desc p;
    cluster_of("gb200", NVL72_NODES, 0, &p);
    ck_assert_int_eq(p.ngpus, 2 * NVL72);
    ck_assert_int_eq(p.gpu[NVL72 - 1].node, 0);   /* one domain: one platform node */
    ck_assert_int_eq(p.gpu[NVL72].node, 1);
    simgrid_start(&p);
    memset(&J, 0, sizeof J);
    J.kind = COLL_ALLREDUCE;
    J.mode = COLL_FUSED;
    J.count = 1;
    J.bytes = NVL72_BYTES;
    sg_host_t *hosts = calloc((size_t)n, sizeof *hosts);
    int *node = calloc((size_t)n, sizeof *node);
    for (int i = 0; i < n; i++) {
        hosts[i] = rack_gpu(&p, i);
        node[i] = p.gpu[i].node;
    }
    int rings = coll_rings_add_channels(&J.rings, hosts, node, n);
    ck_assert_int_eq(rings, _i ? NVL72 : 1);
    double nvl_lat = sg_host_get_route_latency(hosts[0], hosts[NVL72 - 1]);
    double nvl_bw = sg_host_get_route_bandwidth(hosts[0], hosts[NVL72 - 1]);
    double t = run_job();
    int steps = coll_steps(J.kind, n);
    if (!_i) {
        ck_assert_rel(t, steps * nvl_lat + (double)steps / n * J.bytes / nvl_bw, 1e-12);
    } else {
        double ib_lat = sg_host_get_route_latency(hosts[0], hosts[NVL72]);
        double ib_bw = sg_host_get_route_bandwidth(hosts[0], hosts[NVL72]);
        double edge_bytes = (double)steps * J.bytes / n / NVL72;
        double ib_s = ib_lat + edge_bytes / ib_bw, nvl_s = nvl_lat + (NVL72 - 1) * edge_bytes / nvl_bw;
        double lat_s = ib_lat > nvl_lat ? ib_lat : nvl_lat;
        ck_assert_rel(t, (ib_s > nvl_s ? ib_s : nvl_s) + (steps - 1) * lat_s, 1e-12);
        ck_assert_rel(ib_lat, nvl_lat, 1e-12);   /* fitted links: one step latency on every route (summed apart) */
        ck_assert_rel(t, steps * lat_s + (double)steps / n * J.bytes / costmodel_ring_bw(nvl_bw, ib_bw, NVL72, n, 1),
                      1e-9);
    }
    free(hosts);
    free(node);
    coll_rings_free(&J.rings);
    platform_free(&p);
}
END_TEST

/* Expert parallelism on GB200 NVL72, ep = 16 (one MoE layer, pp = 1): _i =
 * 0, consecutive GPUs, all in rack 0: every byte over NVLink, one
 * all-to-all = latency + bytes / NVLink (on 8-GPU DGX nodes half would
 * cross NICs); _i = 1, every 9th GPU: 8 members in each rack, so each GPU
 * sends 7/15 of its bytes over its NVLink port and 8/15 over its NIC, at
 * once: costmodel_alltoall_s with 8 per domain. */
START_TEST(test_nvl72_alltoall)
{
    enum { EP = 16, SPREAD = 9 };
    par_case c = {.pp = 1, .m = 3, .tp = 1, .dp = EP, .ep = EP, .f = 1e-3, .b = 2e-3, .w = 1e-3,
                  .nodes = NVL72_NODES, .replica_stride = _i ? SPREAD : 1, .a2a_bytes = NVL72_BYTES / 10,
                  .gpu = "gb200"};
    par_result r;
    simulate_par(&c, &r);
    sg_host_t g0 = sg_host_by_name(r.plat.gpu[0].host), far = sg_host_by_name(r.plat.gpu[NVL72].host);
    double ib_lat = sg_host_get_route_latency(g0, far), ib_bw = sg_host_get_route_bandwidth(g0, far);
    ck_assert_rel(ib_lat, r.nvl_lat, 1e-12);   /* fitted links: one step latency on every route (summed apart) */
    int per_domain = _i ? (NVL72 + SPREAD - 1) / SPREAD : EP;
    double a2a;
    if (!_i) {
        a2a = r.nvl_lat + c.a2a_bytes / r.nvl_bw;
    } else {
        double nvl_s = (per_domain - 1) * c.a2a_bytes / (EP - 1) / r.nvl_bw;
        double nic_s = (EP - per_domain) * c.a2a_bytes / (EP - 1) / ib_bw;
        a2a = r.nvl_lat + (nvl_s > nic_s ? nvl_s : nic_s);
    }
    ck_assert_rel(a2a, costmodel_alltoall_s(c.a2a_bytes, EP, per_domain, r.nvl_bw, ib_bw, r.nvl_lat), 1e-9);
    ck_assert_rel(r.m.ep_comm_s, c.m * 2 * 2 * a2a, 1e-9);
    par_result_free(&r);
}
END_TEST

/* HybridEP (ep.dispatcher=hybridep), ep = 16 over two 8-GPU nodes, one MoE
 * layer of 128 experts, top 8: a token crosses to the other node once where
 * the all-to-all sends it 8 x 8/16 = 4 times, so each cross-node pair
 * carries costmodel_a2a_node_copies = 2 (1 - C(64, 8) / C(128, 8)) / 8 of
 * its bytes, and each in-node pair 16/8 = 2 times them (the forwarded
 * copies); the NIC side is slowest here.  _i = 0: the alltoall dispatcher,
 * _i = 1: HybridEP, both against costmodel_alltoall_scaled_s (which takes
 * the larger route latency for both sides, as the surrogate does). */
START_TEST(test_hybridep_alltoall)
{
    enum { EP = 16, EXPERTS = 128, TOP_K = 8 };
    par_case c = {.pp = 1, .m = 3, .tp = 1, .dp = EP, .ep = EP, .f = 1e-3, .b = 2e-3, .w = 1e-3, .nodes = 2,
                  .a2a_bytes = BYTES / 10, .ep_hybrid = _i, .experts = EXPERTS, .top_k = TOP_K};
    par_result r;
    simulate_par(&c, &r);
    double none = 1.0;
    for (int i = 0; i < TOP_K; i++)
        none *= (double)(EXPERTS / 2 - i) / (EXPERTS - i);
    double remote = _i ? 2 * (1 - none) / TOP_K : 1.0, local = _i ? 2.0 : 1.0;
    ck_assert_rel(costmodel_a2a_node_copies(EXPERTS, TOP_K, 2), 2 * (1 - none) / TOP_K, 1e-12);
    ck_assert_rel(costmodel_a2a_node_copies(EXPERTS, 1, 4), 1.0, 1e-12);   /* top 1: one copy either way */
    ck_assert_rel(costmodel_a2a_node_copies(EXPERTS, TOP_K, 1), 1.0, 1e-12);
    double nvl_s = (GPUS_PER_NODE - 1) * c.a2a_bytes * local / (EP - 1) / r.nvl_bw;
    double nic_s = (EP - GPUS_PER_NODE) * c.a2a_bytes * remote / (EP - 1) / r.ib_bw;
    double lat = r.ib_lat > r.nvl_lat ? r.ib_lat : r.nvl_lat;
    double a2a = lat + (nvl_s > nic_s ? nvl_s : nic_s);
    a2a_scales sc = costmodel_a2a_scales(_i, EXPERTS, TOP_K, EP, GPUS_PER_NODE);
    ck_assert_rel(a2a, costmodel_alltoall_scaled_s(c.a2a_bytes, EP, GPUS_PER_NODE, r.nvl_bw, r.ib_bw, lat, sc), 1e-12);
    /* each op fuses its two all-to-alls: each side's route latency once, both
     * sides' bytes twice, then the group's largest latency for the second */
    double nvl_op = r.nvl_lat + 2 * nvl_s, nic_op = r.ib_lat + 2 * nic_s;
    /* (to 1e-7: with the alltoall dispatcher's mixed in-node and cross-node
     * flows the simulated exchange comes out 6e-8 short of this form, within
     * SimGrid's max-min solver precision; HybridEP's meets it to 1e-9) */
    ck_assert_rel(r.m.ep_comm_s, c.m * 2 * ((nvl_op > nic_op ? nvl_op : nic_op) + lat), _i ? 1e-9 : 1e-7);
    par_result_free(&r);
}
END_TEST

static Suite *collectives_suite(void)
{
    Suite *s = suite_create("collectives");
    TCase *tc = tcase_create("ring");
    tcase_add_test(tc, test_ring_allreduce_nvlink);
    tcase_add_test(tc, test_ring_allreduce_nvlink_fused);
    tcase_add_test(tc, test_ring_allreduce_fused_count);
    tcase_add_test(tc, test_ring_allreduce_infiniband);
    tcase_add_loop_test(tc, test_mirror_ring_allreduce, 0, 4);
    tcase_add_loop_test(tc, test_reduce_scatter_and_allgather, 0, 3);
    tcase_add_loop_test(tc, test_hierarchical_allreduce, 0, 2);
    tcase_add_loop_test(tc, test_channel_rings_across_nodes, 0, 2);
    tcase_add_test(tc, test_hierarchical_needs_even_nodes);
    tcase_add_loop_test(tc, test_allreduce_contends_with_pipeline_on_nic, 0, 2);
    suite_add_tcase(s, tc);
    TCase *te = tcase_create("engine");
    tcase_add_test(te, test_tp_divides_compute);
    tcase_add_loop_test(te, test_tp_collectives_in_ops, 0, 2);
    tcase_add_loop_test(te, test_iteration_by_hand, 0, 2);
    tcase_add_loop_test(te, test_buckets_and_overlap, 0, 2);
    tcase_add_loop_test(te, test_expert_gradients_own_group, 0, 4);
    tcase_add_test(te, test_fsdp_collectives_per_layer);
    tcase_add_loop_test(te, test_zero2_and_hsdp_collectives, 0, 2);
    tcase_add_test(te, test_replicas_run);
    tcase_add_loop_test(te, test_ep_alltoall_by_hand, 0, 3);
    tcase_add_test(te, test_ep_alltoall_contends);
    tcase_add_test(te, test_ep_alltoall_infiniband_alone);
    tcase_add_loop_test(te, test_hybridep_alltoall, 0, 2);
    tcase_add_test(te, test_cp_exchange_by_hand);
    tcase_add_test(te, test_dualpipev_overlap_hides_alltoall);
    tcase_add_loop_test(te, test_combined_step_by_hand, 0, 4);
    tcase_add_loop_test(te, test_nvl72_allreduce, 0, 2);
    tcase_add_loop_test(te, test_nvl72_alltoall, 0, 2);
    suite_add_tcase(s, te);
    return s;
}

int main(void)
{
    return pg_run_suite(collectives_suite());
}
