/* test_metrics.c: metrics_compute on timelines built by hand.
 *
 * Every expected number below is worked out in the comment above its test
 * from the definitions in sim/metrics.h, not read back from the code.
 */
#include <stdlib.h>
#include <string.h>

#include "sim/metrics.h"
#include "testutil.h"

/* ---- fixtures --------------------------------------------------------------- */

#define MAX_OPS 64

typedef struct fixture {
    int stage_rank[4];
    schedule sched;
    stage_cost cost[4];
    workload wl;
    pg_gpu gpu[2];
    platform_desc plat;
    int rank_gpu[2];
    tl_op ops[MAX_OPS];   /* the ops, editable until compute() records them */
    size_t nops;
    timeline tl;
    metrics_input in;
} fixture;

static void add_op(fixture *f, int rank, op_kind kind, int stage, int mb, double start, double end)
{
    ck_assert_int_lt((int)f->nops, MAX_OPS);
    f->ops[f->nops++] = (tl_op){ .start_s = start, .end_s = end, .rank = rank, .stage = stage, .mb = mb,
                                    .kind = (uint8_t)kind };
}

/* Records the fixture's ops in its timeline (timeline_add_op, as the
 * engine does); the caller frees it (timeline_free). */
static void record(fixture *f)
{
    timeline_init(&f->tl);
    for (size_t i = 0; i < f->nops; i++)
        timeline_add_op(&f->tl, &f->ops[i]);
}

/* The metrics of the fixture's ops as recorded now. */
static void compute(fixture *f, run_metrics *m)
{
    record(f);
    metrics_compute(&f->in, m);
    timeline_free(&f->tl);
}

/* pp ranks, v stages per rank placed contiguously (v = 1) or as a V
 * (v = 2, pp = 1 only here), m microbatches, every stage costing the same. */
static void fixture_init(fixture *f, int pp, int v, int m, stage_cost cost)
{
    memset(f, 0, sizeof *f);
    int nstages = pp * v;
    for (int s = 0; s < nstages; s++) {
        f->stage_rank[s] = s % pp;
        f->cost[s] = cost;
    }
    strcpy(f->sched.name, "hand");
    f->sched.pp = pp;
    f->sched.v = v;
    f->sched.nstages = nstages;
    f->sched.m = m;
    f->sched.stage_rank = f->stage_rank;
    strcpy(f->wl.name, "hand");
    f->wl.nstages = nstages;
    f->wl.stage = f->cost;
    for (int r = 0; r < pp; r++) {
        snprintf(f->gpu[r].host, sizeof f->gpu[r].host, "gpu%d", r);
        f->gpu[r].node = 0;
        f->gpu[r].local_rank = r;
        f->gpu[r].cpu_index = -1;
        f->rank_gpu[r] = r;
    }
    f->plat.ngpus = pp;
    f->plat.gpu = f->gpu;
    f->in = (metrics_input){ .sched = &f->sched, .wl = &f->wl, .plat = &f->plat, .rank_gpu = f->rank_gpu,
                             .tl = &f->tl };
}

/* 1F1B, pp = 2, m = 2, fused backward, F = 1 s, BW = 2 s, no latency:
 *   rank 0: F(0,0) [0,1]  F(0,1) [1,2]  BW(0,0) [4,6]  BW(0,1) [7,9]
 *   rank 1: F(1,0) [1,2]  BW(1,0) [2,4]  F(1,1) [4,5]  BW(1,1) [5,7]
 * Each stage: act_b 100 B, 1000 params, workspace 10 B while any op runs. */
#define ACT_B 100.0
#define PARAMS 1000.0
#define WORKSPACE 10.0
#define BYTES_PER_PARAM 2.0

static void fixture_1f1b(fixture *f)
{
    fixture_init(f, 2, 1, 2,
                 (stage_cost){ .f_s = 1, .b_s = 2, .act_b_bytes = ACT_B, .param_count = PARAMS,
                               .workspace_bytes = WORKSPACE, .fwd_flops = 1e12 });
    add_op(f, 0, OP_F, 0, 0, 0, 1);
    add_op(f, 0, OP_F, 0, 1, 1, 2);
    add_op(f, 0, OP_BW, 0, 0, 4, 6);
    add_op(f, 0, OP_BW, 0, 1, 7, 9);
    add_op(f, 1, OP_F, 1, 0, 1, 2);
    add_op(f, 1, OP_BW, 1, 0, 2, 4);
    add_op(f, 1, OP_F, 1, 1, 4, 5);
    add_op(f, 1, OP_BW, 1, 1, 5, 7);
    f->in.bytes_per_param = BYTES_PER_PARAM;
}

/* ---- times ------------------------------------------------------------------ */

/* makespan 9; spans 9 and 6 (rank 1 runs 1..7); busy 6 each; the span rank
 * is 0, so the bubble ratio is (9 - 6) / 9. */
START_TEST(test_1f1b_spans_and_bubble)
{
    fixture f;
    fixture_1f1b(&f);
    run_metrics m;
    compute(&f, &m);
    ck_assert_int_eq(m.pp, 2);
    ck_assert_exact(m.makespan_s, 9);
    ck_assert_exact(m.span, 9);
    ck_assert_int_eq(m.span_rank, 0);
    ck_assert_exact(m.rank[0].span, 9);
    ck_assert_exact(m.rank[1].span, 6);
    ck_assert_exact(m.rank[1].first_start, 1);
    ck_assert_exact(m.rank[1].last_end, 7);
    ck_assert_exact(m.rank[0].busy_s, 6);
    ck_assert_exact(m.rank[0].idle_s, 3);
    ck_assert_exact(m.rank[1].idle_s, 0);
    ck_assert_exact(m.total_busy_s, 12);
    ck_assert_exact(m.bubble_ratio, 3.0 / 9.0);
    ck_assert_exact(m.iteration_s, 9);
    ck_assert_exact(m.lower_bound, 0);
    metrics_free(&m);
}
END_TEST

/* The pipeline's bubble counts every rank over the makespan window: rank 0
 * F [0,1] BW [7,9] (busy 3, span 9), rank 1 F [1,2] BW [2,3] (busy 2):
 * the longest-span rank's ratio is 6/9, the pipeline's (6 + 7) / 18. */
START_TEST(test_pipeline_bubble_all_ranks)
{
    fixture f;
    fixture_init(&f, 2, 1, 1, (stage_cost){ .f_s = 1, .b_s = 1, .act_b_bytes = 1 });
    add_op(&f, 0, OP_F, 0, 0, 0, 1);
    add_op(&f, 0, OP_BW, 0, 0, 7, 9);
    add_op(&f, 1, OP_F, 1, 0, 1, 2);
    add_op(&f, 1, OP_BW, 1, 0, 2, 3);
    run_metrics m;
    compute(&f, &m);
    ck_assert_exact(m.bubble_ratio, 6.0 / 9.0);
    ck_assert_exact(m.pipeline_bubble_ratio, 13.0 / 18.0);
    metrics_free(&m);
}
END_TEST

/* Rank 0 stores both microbatches (F0, F1 before BW0): 2.  Rank 1 releases
 * mb 0 (end of BW at t = 4) exactly when F(1,1) starts: releases first, so 1. */
START_TEST(test_1f1b_peak_activations_release_first)
{
    fixture f;
    fixture_1f1b(&f);
    run_metrics m;
    compute(&f, &m);
    ck_assert_exact(m.rank[0].peak_activations, 2);
    ck_assert_exact(m.rank[1].peak_activations, 1);
    metrics_free(&m);
}
END_TEST

/* Static = 1000 params x 2 B = 2000 B per rank.
 * Rank 0: t=0 F0 starts: 2000+100+10 = 2110; t=1 F0 ends (-10) and F1 starts
 * (+100 +10): 2210, the peak (t=4, BW0 starting, only reaches it again).
 * Rank 1: t=4 BW0 ends (-100 -10) before F1 starts (+100 +10): 2110 all
 * along, first reached at t=1 (allocating first would give 2220). */
START_TEST(test_1f1b_peak_memory_bytes)
{
    fixture f;
    fixture_1f1b(&f);
    run_metrics m;
    compute(&f, &m);
    ck_assert_exact(m.rank[0].static_bytes, 2000);
    ck_assert_exact(m.rank[0].peak_memory_bytes, 2210);
    ck_assert_exact(m.rank[0].peak_time_s, 1);
    ck_assert_exact(m.rank[0].peak_activation_bytes, 200);
    ck_assert_exact(m.rank[1].peak_memory_bytes, 2110);
    ck_assert_exact(m.rank[1].peak_time_s, 1);
    ck_assert_exact(m.rank[1].peak_activation_bytes, 100);
    ck_assert_exact(m.rank[0].recompute_s, 0);
    ck_assert_exact(m.rank[0].offload_bytes, 0);
    metrics_free(&m);
}
END_TEST

/* Megatron-Core's combined 1F1B steps, pp = 1, m = 3 (metrics_input
 * .combined_pairs): F(0) [0,1], then F(1) [1,2] + BW(0) [2,4] and F(2) [4,5]
 * + BW(1) [5,7] as steps, BW(2) [7,9]; act_b 100 B, the largest layer 25 B.
 * Each step's forward holds its layer at its start (t = 1: 100 + 25) and the
 * rest at its end, where the backward releases at its start (t = 2:
 * 100 + 100 - 100 = 100): the peak is 125 B and one microbatch, where ops
 * run one after the other (not combined) hold two (200 B). */
START_TEST(test_combined_steps_interleave_memory)
{
    for (int combined = 0; combined <= 1; combined++) {
        fixture f;
        fixture_init(&f, 1, 1, 3,
                     (stage_cost){ .f_s = 1, .b_s = 2, .act_b_bytes = ACT_B, .layer_act_b_bytes = ACT_B / 4,
                                   .param_count = PARAMS, .fwd_flops = 1e12 });
        sched_op order[] = {{0, 0, OP_F, 0}, {0, 1, OP_F, 1}, {0, 0, OP_BW, 0}, {0, 2, OP_F, 1}, {0, 1, OP_BW, 0},
                            {0, 2, OP_BW, 0}};
        sched_op *rank_ops[] = {order};
        int nops[] = {6};
        f.sched.ops = rank_ops;
        f.sched.nops = nops;
        add_op(&f, 0, OP_F, 0, 0, 0, 1);
        add_op(&f, 0, OP_F, 0, 1, 1, 2);
        add_op(&f, 0, OP_BW, 0, 0, 2, 4);
        add_op(&f, 0, OP_F, 0, 2, 4, 5);
        add_op(&f, 0, OP_BW, 0, 1, 5, 7);
        add_op(&f, 0, OP_BW, 0, 2, 7, 9);
        f.in.combined_pairs = combined;
        run_metrics m;
        compute(&f, &m);
        ck_assert_exact(m.rank[0].peak_activation_bytes, combined ? ACT_B + ACT_B / 4 : 2 * ACT_B);
        ck_assert_exact(m.rank[0].peak_activations, combined ? 1 : 2);
        metrics_free(&m);
    }
}
END_TEST

/* GPU capacity 3000 B: nobody is over.  memory.capacity = 2150 B overrides
 * it: rank 0 (2210) is over, rank 1 (2110) is not. */
START_TEST(test_oom_with_capacity_override)
{
    fixture f;
    fixture_1f1b(&f);
    f.gpu[0].memory_bytes = f.gpu[1].memory_bytes = 3000;
    run_metrics m;
    compute(&f, &m);
    ck_assert_int_eq(m.noom, 0);
    ck_assert_exact(m.rank[1].capacity_bytes, 3000);
    metrics_free(&m);

    f.in.capacity_override_bytes = 2150;
    compute(&f, &m);
    ck_assert_int_eq(m.noom, 1);
    ck_assert_int_eq(m.oom[0], 0);
    ck_assert_exact(m.rank[0].capacity_bytes, 2150);
    ck_assert_exact(m.rank[1].capacity_bytes, 2150);
    metrics_free(&m);

    /* Unknown capacity (0) never counts as out of memory. */
    f.in.capacity_override_bytes = 0;
    f.gpu[0].memory_bytes = f.gpu[1].memory_bytes = 0;
    compute(&f, &m);
    ck_assert_int_eq(m.noom, 0);
    metrics_free(&m);
}
END_TEST

/* 2 microbatches x 4 samples in 9 s; 128 tokens per sample.  Model FLOPs:
 * 2 stages x 2 mb x 3 x 1e12; peak: 2 GPUs x 1e12 flop/s x 9 s: MFU 2/3. */
START_TEST(test_throughput_and_mfu)
{
    fixture f;
    fixture_1f1b(&f);
    f.wl.micro_batch_size = 4;
    f.wl.seq_len = 128;
    f.gpu[0].speed_flops = f.gpu[1].speed_flops = 1e12;
    run_metrics m;
    compute(&f, &m);
    ck_assert_exact(m.samples_per_s, 8.0 / 9.0);
    ck_assert_exact(m.tokens_per_s, 8.0 * 128 / 9.0);
    ck_assert_exact(m.mfu, 2.0 / 3.0);
    metrics_free(&m);

    /* Unknown GPU speed: MFU is 0, not infinity. */
    f.gpu[1].speed_flops = 0;
    compute(&f, &m);
    ck_assert_exact(m.mfu, 0);
    ck_assert_exact(m.samples_per_s, 8.0 / 9.0);
    metrics_free(&m);
}
END_TEST

/* ---- split backward ------------------------------------------------------------ */

/* ZB-H1-like, pp = 2, m = 2, F = B = W = 1 s; act_b 100, act_w 40, no
 * workspace, no static:
 *   rank 0: F(0,0) [0,1] F(0,1) [1,2] B(0,0) [3,4] W(0,0) [4,5] B(0,1) [5,6] W(0,1) [6,7]
 *   rank 1: F(1,0) [1,2] B(1,0) [2,3] F(1,1) [3,4] B(1,1) [4,5] W(1,0) [5,6] W(1,1) [6,7]
 * Rank 1 bytes: 100 at t=1; t=3 B(1,0) ends (-60) then F(1,1) (+100): 140
 * (the peak); 80 at 5; 40 at 6; 0 at 7.  Its activation count goes 1, 2
 * (B does not change it), 1, 0: peak 2.  Rank 0: 200 at t=1 (peak), 140, 100,
 * 40, 0.  Spans 7 and 6, busy 6 each: bubble 1/7. */
static void fixture_split(fixture *f)
{
    fixture_init(f, 2, 1, 2, (stage_cost){ .f_s = 1, .b_s = 1, .w_s = 1, .act_b_bytes = 100, .act_w_bytes = 40 });
    add_op(f, 0, OP_F, 0, 0, 0, 1);
    add_op(f, 0, OP_F, 0, 1, 1, 2);
    add_op(f, 0, OP_B, 0, 0, 3, 4);
    add_op(f, 0, OP_W, 0, 0, 4, 5);
    add_op(f, 0, OP_B, 0, 1, 5, 6);
    add_op(f, 0, OP_W, 0, 1, 6, 7);
    add_op(f, 1, OP_F, 1, 0, 1, 2);
    add_op(f, 1, OP_B, 1, 0, 2, 3);
    add_op(f, 1, OP_F, 1, 1, 3, 4);
    add_op(f, 1, OP_B, 1, 1, 4, 5);
    add_op(f, 1, OP_W, 1, 0, 5, 6);
    add_op(f, 1, OP_W, 1, 1, 6, 7);
}

/* MFU counts every GPU of the job: the fixture's 1F1B at tp = 2, cp = 2,
 * dp = 3 uses 2 x 2 x 3 x 2 = 24 GPUs; a stage's fwd_flops (1e12) is one
 * GPU's share, so the job's model FLOPs are 2 stages x 2 mb x 3 x 1e12 x
 * (tp cp = 4) x (dp = 3) = 1.44e14 in 9 s against 24 x 1e12 flop/s: MFU
 * 1.44e14 / 2.16e14 = 2/3, as for one GPU per rank (test_throughput_and_mfu);
 * samples count the 3 replicas: 3 x 8 / 9 per second. */
START_TEST(test_mfu_counts_every_gpu)
{
    fixture f;
    fixture_1f1b(&f);
    f.wl.micro_batch_size = 4;
    f.gpu[0].speed_flops = f.gpu[1].speed_flops = 1e12;
    f.in.tp = 2;
    f.in.cp = 2;
    f.in.dp = 3;
    run_metrics m;
    compute(&f, &m);
    const double job_flops = 2 * 2 * 3 * 1e12 * (2 * 2) * 3, gpus = 2 * 2 * 3 * 2;
    ck_assert_exact(m.mfu, job_flops / (9.0 * gpus * 1e12));
    ck_assert_exact(m.mfu, 2.0 / 3.0);
    ck_assert_exact(m.samples_per_s, 3 * 8.0 / 9.0);
    metrics_free(&m);
}
END_TEST

/* PipeOffload's k on rank 0 (stage 0: F 1 s, B 2 s, W 0 on the reference
 * GPU of 1e12 flop/s; rank 0's GPU runs 2e12, and one GPU runs half of a
 * stage's time (tp_time_share 0.5): F + B + W = 3 x 0.5 x 0.5 = 0.75 s).
 * Its host route: 50 B/s, 0.25 s latency.  Offloading all of act_b (100 B):
 * 2 x (0.25 + 100 / 50) = 4.5 s, k = 6.  With selective recomputation
 * planned for microbatch 0 (the attention core, 40 B, not stored), what F
 * keeps is 60 B: 2 x (0.25 + 60 / 50) = 2.9 s, k = 2.9 / 0.75.  No offload
 * policy, or a route not listed (host_bw 0): no k.  offload_k_shared takes
 * the copies at host_shared_bw (the solo rate where that is unknown). */
START_TEST(test_offload_k)
{
    fixture f;
    fixture_1f1b(&f);
    f.cost[0].w_s = 0;
    f.cost[0].has_selective = 1;
    f.cost[0].selective_bytes = 40;
    f.wl.ref_speed_flops = 1e12;
    f.gpu[0].speed_flops = f.gpu[1].speed_flops = 2e12;
    f.gpu[0].host_bw = 50;
    f.gpu[0].host_latency_s = 0.25;
    f.in.tp_time_share = 0.5;
    run_metrics m;
    compute(&f, &m);
    ck_assert_int_eq(m.has_offload_k, 0);   /* no offload policy */
    metrics_free(&m);

    f.in.offload = 1;
    compute(&f, &m);
    ck_assert_int_eq(m.has_offload_k, 1);
    ck_assert_exact(m.offload_k, 2 * (0.25 + 100.0 / 50) / ((1 + 2 + 0) * 0.5 * (1e12 / 2e12)));
    ck_assert_exact(m.offload_k, 6.0);
    ck_assert_exact(m.offload_k_shared, m.offload_k);   /* no shared rate known: the solo one */
    metrics_free(&m);

    f.gpu[0].host_shared_bw = 25;   /* the route's rate while its other users copy too */
    compute(&f, &m);
    ck_assert_exact(m.offload_k, 6.0);
    ck_assert_exact(m.offload_k_shared, 2 * (0.25 + 100.0 / 25) / 0.75);
    metrics_free(&m);
    f.gpu[0].host_shared_bw = 0;

    memplan p;
    plan_init(&p, &f.sched);
    plan_set(&p, 0, 0, (plan_choice){ .offload = 0, .fwd = PLAN_FWD_SELECTIVE, .bwd = PLAN_BWD_KEEP });
    f.in.plan = &p;
    compute(&f, &m);
    ck_assert_int_eq(m.has_offload_k, 1);
    ck_assert_exact(m.offload_k, 2 * (0.25 + 60.0 / 50) / 0.75);
    metrics_free(&m);
    f.in.plan = NULL;
    plan_free(&p);

    f.gpu[0].host_bw = 0;
    compute(&f, &m);
    ck_assert_int_eq(m.has_offload_k, 0);
    metrics_free(&m);
}
END_TEST

START_TEST(test_split_backward_memory)
{
    fixture f;
    fixture_split(&f);
    run_metrics m;
    compute(&f, &m);
    ck_assert_exact(m.makespan_s, 7);
    ck_assert_exact(m.span, 7);
    ck_assert_exact(m.bubble_ratio, 1.0 / 7.0);
    ck_assert_exact(m.rank[0].static_bytes, 0);
    ck_assert_exact(m.rank[0].peak_memory_bytes, 200);
    ck_assert_exact(m.rank[0].peak_time_s, 1);
    ck_assert_exact(m.rank[1].peak_memory_bytes, 140);
    ck_assert_exact(m.rank[1].peak_time_s, 3);
    ck_assert_exact(m.rank[1].peak_activation_bytes, 140);
    ck_assert_exact(m.rank[0].peak_activations, 2);
    ck_assert_exact(m.rank[1].peak_activations, 2);
    metrics_free(&m);
}
END_TEST

/* The walk the traces use replays the same states: rank 1's activation bytes
 * at its instants 1, 2, 3, 4, 5, 6, 7 are 100, 100, 140, 140, 80, 40, 0, and
 * its activation counts 1, 1, 2, 2, 2, 1, 0. */
typedef struct walk_log {
    int n;
    double t[MAX_OPS], bytes[MAX_OPS], units[MAX_OPS];
} walk_log;

static void log_rank1(void *ctx, int rank, double t_s, double activation_bytes, double workspace_bytes,
                      double activations)
{
    walk_log *w = ctx;
    ck_assert_double_eq(workspace_bytes, 0);
    if (rank != 1) return;
    w->t[w->n] = t_s;
    w->bytes[w->n] = activation_bytes;
    w->units[w->n++] = activations;
}

START_TEST(test_memory_walk_matches_accounting)
{
    fixture f;
    fixture_split(&f);
    walk_log w = { 0 };
    record(&f);
    metrics_memory_walk(&f.in, log_rank1, &w);
    timeline_free(&f.tl);
    const double t[] = { 1, 2, 3, 4, 5, 6, 7 };
    const double bytes[] = { 100, 100, 140, 140, 80, 40, 0 };
    const double units[] = { 1, 1, 2, 2, 2, 1, 0 };
    ck_assert_int_eq(w.n, 7);
    for (int i = 0; i < w.n; i++) {
        ck_assert_exact(w.t[i], t[i]);
        ck_assert_exact(w.bytes[i], bytes[i]);
        ck_assert_exact(w.units[i], units[i]);
    }
}
END_TEST

/* ---- chunks, order, degenerate input ------------------------------------------ */

/* One rank holding two stages (v = 2): each F stores half a stage unit.
 * F(0) F(1) BW(1) BW(0) back to back: peak 2 x 1/2 = 1. */
START_TEST(test_chunks_count_one_over_v)
{
    fixture f;
    fixture_init(&f, 1, 2, 1, (stage_cost){ .f_s = 1, .b_s = 1, .act_b_bytes = 8 });
    add_op(&f, 0, OP_F, 0, 0, 0, 1);
    add_op(&f, 0, OP_F, 1, 0, 1, 2);
    add_op(&f, 0, OP_BW, 1, 0, 2, 3);
    add_op(&f, 0, OP_BW, 0, 0, 3, 4);
    run_metrics m;
    compute(&f, &m);
    ck_assert_exact(m.rank[0].peak_activations, 1);
    ck_assert_exact(m.rank[0].peak_memory_bytes, 16);
    ck_assert_exact(m.bubble_ratio, 0);
    metrics_free(&m);
}
END_TEST

/* The timeline's order does not matter: reversed, the same numbers. */
START_TEST(test_order_independent)
{
    fixture a, b;
    fixture_split(&a);
    fixture_split(&b);
    for (size_t i = 0; i < b.nops; i++) b.ops[i] = a.ops[a.nops - 1 - i];
    run_metrics ma, mb;
    compute(&a, &ma);
    compute(&b, &mb);
    ck_assert_exact(mb.makespan_s, ma.makespan_s);
    ck_assert_exact(mb.bubble_ratio, ma.bubble_ratio);
    for (int r = 0; r < 2; r++) {
        ck_assert_exact(mb.rank[r].peak_memory_bytes, ma.rank[r].peak_memory_bytes);
        ck_assert_exact(mb.rank[r].peak_time_s, ma.rank[r].peak_time_s);
        ck_assert_exact(mb.rank[r].peak_activations, ma.rank[r].peak_activations);
    }
    metrics_free(&ma);
    metrics_free(&mb);
}
END_TEST

/* Nothing ran (a deadlock at the first op), no workload, stages out of the
 * workload's range: zeros, no crash. */
START_TEST(test_degenerate_inputs)
{
    fixture f;
    fixture_1f1b(&f);
    f.nops = 0;
    run_metrics m;
    compute(&f, &m);
    ck_assert_int_eq(m.pp, 2);
    ck_assert_exact(m.makespan_s, 0);
    ck_assert_exact(m.span, 0);
    ck_assert_exact(m.bubble_ratio, 0);
    ck_assert_exact(m.samples_per_s, 0);
    ck_assert_exact(m.rank[0].peak_memory_bytes, 2000);   /* the weights are there all the same */
    metrics_free(&m);

    fixture_1f1b(&f);
    f.ops[0].stage = 99;
    f.in.wl = NULL;
    compute(&f, &m);
    ck_assert_exact(m.makespan_s, 9);
    ck_assert_exact(m.rank[0].peak_memory_bytes, 0);
    metrics_free(&m);

    fixture_1f1b(&f);
    f.ops[0].stage = 99;
    f.ops[1].rank = 7;   /* not a rank of this pipeline: left out of per-rank numbers */
    compute(&f, &m);
    ck_assert_exact(m.rank[0].busy_s, 5);
    metrics_free(&m);
}
END_TEST

/* A long 1F1B-shaped timeline (pp 8, m 4096: 65536 ops) stays exact: the
 * steady state holds pp - r activations on rank r. */
START_TEST(test_long_timeline_exact)
{
    enum { PP = 8, M = 4096 };
    int stage_rank[PP];
    stage_cost cost[PP];
    for (int s = 0; s < PP; s++) {
        stage_rank[s] = s;
        cost[s] = (stage_cost){ .act_b_bytes = 3, .workspace_bytes = 0 };
    }
    schedule s = { .pp = PP, .v = 1, .nstages = PP, .m = M, .stage_rank = stage_rank };
    workload w = { .nstages = PP, .stage = cost };
    timeline tl;
    timeline_init(&tl);
    /* Rank r: warm-up of pp - r forwards, then alternate BW / F, unit times;
     * dependencies are not what matters here, only each rank's own order. */
    size_t k = 0;
    for (int r = 0; r < PP; r++) {
        int warm = PP - r, nf = 0, nb = 0;
        double t = 0;
        while (nf < warm) timeline_add_op(&tl, &(tl_op){ t, t + 1, r, r, nf++, OP_F }), t += 1, k++;
        while (nb < M) {
            timeline_add_op(&tl, &(tl_op){ t, t + 1, r, r, nb++, OP_BW }), t += 1, k++;
            if (nf < M) timeline_add_op(&tl, &(tl_op){ t, t + 1, r, r, nf++, OP_F }), t += 1, k++;
        }
    }
    ck_assert_uint_eq(k, (size_t)PP * M * 2);
    ck_assert_uint_eq(k, tl.nops);
    metrics_input in = { .sched = &s, .wl = &w, .tl = &tl };
    run_metrics m;
    metrics_compute(&in, &m);
    for (int r = 0; r < PP; r++) {
        ck_assert_exact(m.rank[r].peak_activations, PP - r);
        ck_assert_exact(m.rank[r].peak_memory_bytes, 3.0 * (PP - r));
        ck_assert_exact(m.rank[r].span, 2.0 * M);
    }
    metrics_free(&m);
    timeline_free(&tl);
}
END_TEST

/* The timeline stores ops and transfers packed (timeline.h): every field
 * comes back exactly as added, whether it fits the packed key (limits of
 * pglimits.h, -1) or is kept whole on the side (beyond them). */
START_TEST(test_timeline_packing_exact)
{
    const tl_op ops[] = {
        {1.0 / 3, 2.0 / 3, 0, 0, 0, OP_F},
        {1e-300, 1e6, -1, -1, -1, TL_OP_RW},
        {0.5, 0.75, (1 << TL_OP_RANK_BITS) - 2, (1 << TL_OP_STAGE_BITS) - 2, (1 << TL_OP_MB_BITS) - 2,
         (1 << TL_OP_KIND_BITS) - 2},
        {0.5, 0.75, (1 << TL_OP_RANK_BITS) - 1, 3, 4, OP_B},   /* rank too large: kept whole */
        {0.5, 0.75, 5, -2, 4, OP_W},                            /* below -1: kept whole */
        {2, 3, 4095, 4096 * 64 - 1, 999999, OP_BW},             /* pglimits.h's largest */
    };
    const tl_xfer xfers[] = {
        {1.0 / 7, 9.5, 32 * 1048576.0, 0, 1, 0, 0, XFER_ACTIVATION},
        {0, 0, 0.5, 4095, 4094, 262143, 1048574, XFER_GRADIENT},
        {0, 1, 3, 4096, 0, 1, 2, XFER_GRADIENT},                /* rank 4096: kept whole */
        {0, 1, 3, 1, 0, -1, 2, XFER_GRADIENT},                  /* stage -1: kept whole */
        {0, 1, 3, 1, 0, 1, 2, 2},                                /* kind beyond one bit: kept whole */
        {4, 5, 1e15 + 1, 7, 6, 4096 * 64 - 1, 999999, XFER_ACTIVATION},
    };
    const size_t nops = sizeof ops / sizeof ops[0], nxfers = sizeof xfers / sizeof xfers[0];
    timeline tl;
    timeline_init(&tl);
    for (size_t i = 0; i < nops; i++)
        timeline_add_op(&tl, &ops[i]);
    for (size_t i = 0; i < nxfers; i++)
        timeline_add_xfer(&tl, &xfers[i]);
    ck_assert_uint_eq(tl.nops, nops);
    ck_assert_uint_eq(tl.nxfers, nxfers);
    ck_assert_uint_eq(tl.nwide_ops, 2);
    ck_assert_uint_eq(tl.nwide_xfers, 3);
    for (size_t i = 0; i < nops; i++) {
        tl_op a = timeline_op(&tl, i);
        ck_assert(a.start_s == ops[i].start_s && a.end_s == ops[i].end_s);
        ck_assert_int_eq(a.rank, ops[i].rank);
        ck_assert_int_eq(a.stage, ops[i].stage);
        ck_assert_int_eq(a.mb, ops[i].mb);
        ck_assert_int_eq(a.kind, ops[i].kind);
    }
    for (size_t i = 0; i < nxfers; i++) {
        tl_xfer a = timeline_xfer(&tl, i);
        ck_assert(a.start_s == xfers[i].start_s && a.end_s == xfers[i].end_s && a.bytes == xfers[i].bytes);
        ck_assert_int_eq(a.src_rank, xfers[i].src_rank);
        ck_assert_int_eq(a.dst_rank, xfers[i].dst_rank);
        ck_assert_int_eq(a.stage, xfers[i].stage);
        ck_assert_int_eq(a.mb, xfers[i].mb);
        ck_assert_int_eq(a.kind, xfers[i].kind);
    }
    /* the packed records are the smaller ones this is for */
    ck_assert_uint_eq(sizeof(tl_op_rec), 24);
    ck_assert_uint_eq(sizeof(tl_xfer_rec), 32);

    /* through a file and back (offload=plan's judge, a child to its parent):
     * every record, packed and wide, and a copy and a collective */
    timeline_add_copy(&tl, &(tl_copy){.start_s = 0.25, .end_s = 0.5, .bytes = 3e9, .rank = 2});
    timeline_add_coll(&tl, &(tl_coll){.start_s = 1, .end_s = 2, .rank = 1});
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(timeline_write(f, &tl), 0);
    rewind(f);
    timeline back;
    timeline_init(&back);
    ck_assert_int_eq(timeline_read(f, &back), 0);
    ck_assert_uint_eq(back.nops, nops);
    ck_assert_uint_eq(back.nxfers, nxfers);
    ck_assert_uint_eq(back.nwide_ops, 2);
    ck_assert_uint_eq(back.nwide_xfers, 3);
    ck_assert_uint_eq(back.ncopies, 1);
    ck_assert_uint_eq(back.ncolls, 1);
    ck_assert_uint_eq(back.nstalls, 0);
    for (size_t i = 0; i < nops; i++) {
        tl_op a = timeline_op(&back, i), b = timeline_op(&tl, i);
        ck_assert(a.start_s == b.start_s && a.end_s == b.end_s && a.rank == b.rank && a.stage == b.stage &&
                  a.mb == b.mb && a.kind == b.kind);
    }
    for (size_t i = 0; i < nxfers; i++) {
        tl_xfer a = timeline_xfer(&back, i), b = timeline_xfer(&tl, i);
        ck_assert(a.start_s == b.start_s && a.end_s == b.end_s && a.bytes == b.bytes && a.src_rank == b.src_rank &&
                  a.dst_rank == b.dst_rank && a.stage == b.stage && a.mb == b.mb && a.kind == b.kind);
    }
    ck_assert(back.copies[0].bytes == 3e9 && back.copies[0].rank == 2 && back.colls[0].end_s == 2);
    timeline_add_op(&back, &ops[0]);   /* it grows as any timeline */
    ck_assert_uint_eq(back.nops, nops + 1);
    timeline_free(&back);
    /* a short file is refused: its first 40 bytes */
    char head[40];
    rewind(f);
    ck_assert_uint_eq(fread(head, 1, sizeof head, f), sizeof head);
    fclose(f);
    f = fmemopen(head, sizeof head, "rb");
    ck_assert_ptr_nonnull(f);
    timeline_init(&back);
    ck_assert_int_eq(timeline_read(f, &back), -1);
    timeline_free(&back);
    fclose(f);
    timeline_free(&tl);
}
END_TEST

static Suite *metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_1f1b_spans_and_bubble);
    tcase_add_test(tc, test_pipeline_bubble_all_ranks);
    tcase_add_test(tc, test_timeline_packing_exact);
    tcase_add_test(tc, test_1f1b_peak_activations_release_first);
    tcase_add_test(tc, test_1f1b_peak_memory_bytes);
    tcase_add_test(tc, test_combined_steps_interleave_memory);
    tcase_add_test(tc, test_oom_with_capacity_override);
    tcase_add_test(tc, test_throughput_and_mfu);
    tcase_add_test(tc, test_mfu_counts_every_gpu);
    tcase_add_test(tc, test_offload_k);
    tcase_add_test(tc, test_split_backward_memory);
    tcase_add_test(tc, test_memory_walk_matches_accounting);
    tcase_add_test(tc, test_chunks_count_one_over_v);
    tcase_add_test(tc, test_order_independent);
    tcase_add_test(tc, test_degenerate_inputs);
    tcase_add_test(tc, test_long_timeline_exact);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pg_run_suite(metrics_suite());
}
