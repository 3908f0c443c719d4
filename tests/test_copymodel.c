/* test_copymodel.c: the engine's offload copy model (src/sim/copyengine.c):
 * admission (sim_input.copy_slots) and the copy streams (copy_model duplex,
 * single, paired).
 *
 * The runs are GPipe on one or two GPUs, F = B = W = 1 s (fused BW 2 s),
 * every activation of A bytes offloaded, each GPU behind its own PCIe link of
 * P bytes/s to host memory (A / P = c = 1.25 s per copy, longer than an F)
 * and a host link too wide to matter.  Every expected time below is worked
 * out by hand from copyengine.c's header rules (the prefetch rule, the
 * offload filter, admission, the streams' service order), event by event in
 * the comments.  SimGrid runs one simulation per process: one per test
 * (check's fork mode).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/config.h"
#include "model/experiment.h"
#include "model/platform.h"
#include "model/workload.h"
#include "schedule/plan.h"
#include "schedule/schedule.h"
#include "sim/metrics.h"
#include "sim/sim.h"
#include "util/strbuf.h"
#include "testutil.h"

#define PCIE_BW 1e9
#define COPY_S 1.25                 /* A / PCIE_BW */
#define ACT_BYTES (COPY_S * PCIE_BW)
#define HOST_BW 1e15                /* never the bottleneck */
#define HOST_MEM_BYTES 1e15

/* GPipe stages of F = B = W = 1 s, act_b A, no boundary bytes. */
static void uniform(workload *w, int nstages)
{
    memset(w, 0, sizeof *w);
    w->nstages = nstages;
    w->stage = calloc((size_t)nstages, sizeof *w->stage);
    for (int s = 0; s < nstages; s++)
        w->stage[s] = (stage_cost){.f_s = 1, .b_s = 1, .w_s = 1, .act_b_bytes = ACT_BYTES,
                                   .act_w_bytes = ACT_BYTES / 2};
}

/* One node of ngpus GPUs, each with its own PCIe link (split duplex: D2H
 * and H2D each get P) to a shared host link, and a host-memory host. */
static void platform_xml(char *path, size_t len, int ngpus)
{
    strbuf sb;
    sb_init(&sb);
    sb_append(&sb, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                   "<platform version=\"4.1\">\n <zone id=\"n0\" routing=\"Full\">\n");
    for (int i = 0; i < ngpus; i++)
        sb_appendf(&sb,
                   "  <host id=\"gpu%d\" speed=\"1e12f\"><prop id=\"kind\" value=\"gpu\"/><prop id=\"node\" "
                   "value=\"0\"/><prop id=\"local_rank\" value=\"%d\"/><prop id=\"memory\" value=\"80GiB\"/></host>\n",
                   i, i);
    sb_appendf(&sb,
               "  <host id=\"cpu\" speed=\"1e12f\"><prop id=\"kind\" value=\"cpu\"/><prop id=\"node\" value=\"0\"/>"
               "<prop id=\"memory\" value=\"%.17gB\"/></host>\n", HOST_MEM_BYTES);
    for (int i = 0; i < ngpus; i++) {
        sb_appendf(&sb, "  <link id=\"nvl%d\" bandwidth=\"1e15Bps\" latency=\"0s\" sharing_policy=\"SPLITDUPLEX\"/>\n", i);
        sb_appendf(&sb, "  <link id=\"pcie%d\" bandwidth=\"%.17gBps\" latency=\"0s\" sharing_policy=\"SPLITDUPLEX\"/>\n",
                   i, PCIE_BW);
    }
    sb_appendf(&sb, "  <link id=\"host\" bandwidth=\"%.17gBps\" latency=\"0s\" sharing_policy=\"SPLITDUPLEX\"/>\n",
               HOST_BW);
    for (int i = 0; i < ngpus; i++) {
        for (int j = i + 1; j < ngpus; j++)
            sb_appendf(&sb, "  <route src=\"gpu%d\" dst=\"gpu%d\"><link_ctn id=\"nvl%d\" direction=\"UP\"/>"
                            "<link_ctn id=\"nvl%d\" direction=\"DOWN\"/></route>\n", i, j, i, j);
        sb_appendf(&sb, "  <route src=\"gpu%d\" dst=\"cpu\"><link_ctn id=\"pcie%d\" direction=\"UP\"/>"
                        "<link_ctn id=\"host\" direction=\"UP\"/></route>\n", i, i);
    }
    sb_append(&sb, " </zone>\n</platform>\n");
    snprintf(path, len, "/tmp/pg-test-copymodel-XXXXXX");
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    ck_assert(write(fd, sb.data, sb.len) == (ssize_t)sb.len);
    close(fd);
    sb_free(&sb);
}

typedef struct run_result {
    run_metrics m;
    timeline tl;
    workload w;
} run_result;

/* GPipe, pp GPUs, m microbatches, full offload, the given copy model. */
static void run(int pp, int m, copy_model_kind model, int slots, run_result *out)
{
    pg_status st;
    pg_status_clear(&st);
    schedule s;
    sched_params p = {.pp = pp, .m = m, .chunks = 1, .t_f = 1, .t_b = 1, .t_w = 1, .w_fraction = 0.5};
    ck_assert_msg(sched_generate("gpipe", &p, &s, &st) == 0, "%s", st.msg);
    uniform(&out->w, s.nstages);
    char path[64];
    platform_xml(path, sizeof path, pp);
    platform_desc plat;
    ck_assert_msg(platform_load(path, &plat, &st) == 0, "%s", st.msg);
    int rank_gpu[8];
    for (int r = 0; r < pp; r++)
        rank_gpu[r] = r;
    plan_policy pol = {.offload = PLAN_OFFLOAD_FULL, .t_f = 1, .t_b = 1, .t_w = 1};
    memplan pl;
    ck_assert_msg(plan_build(&s, &pol, &pl, &st) == 0, "%s", st.msg);
    sim_input in = {.sched = &s, .wl = &out->w, .plat = &plat, .rank_gpu = rank_gpu, .zero_byte_messages = 1,
                    .plan = &pl, .copy_model = model, .copy_slots = slots};
    sim_outcome o;
    timeline_init(&out->tl);
    ck_assert_msg(sim_run(&in, &out->tl, &o, &st) == 0, "%s", st.msg);
    ck_assert(o.completed);
    metrics_input mi = {.sched = &s, .wl = &out->w, .plat = &plat, .rank_gpu = rank_gpu, .tl = &out->tl,
                        .bytes_per_param = 16, .plan = &pl, .offload = 1};
    metrics_compute(&mi, &out->m);
    plan_free(&pl);
    platform_free(&plat);
    unlink(path);
    sched_free(&s);
}

static void run_free(run_result *r)
{
    metrics_free(&r->m);
    timeline_free(&r->tl);
    free(r->w.stage);
}

static double stall_sum(const run_result *r)
{
    double sum = 0;
    for (size_t i = 0; i < r->tl.nstalls; i++)
        sum += r->tl.stalls[i].end_s - r->tl.stalls[i].start_s;
    return sum;
}

static double op_start(const run_result *r, int rank, int kind, int mb)
{
    for (size_t i = 0; i < r->tl.nops; i++)
        if (timeline_op(&r->tl, i).rank == rank && timeline_op(&r->tl, i).kind == kind && timeline_op(&r->tl, i).mb == mb)
            return timeline_op(&r->tl, i).start_s;
    ck_abort_msg("no op kind %d mb %d on rank %d", kind, mb, rank);
    return -1;
}

/* Copies that run at once: pairs (i, j) whose intervals overlap by more
 * than rounding, both on one of the given ranks (rank_b < 0: rank_a only). */
static int overlapping_copies(const run_result *r, int rank_a, int rank_b)
{
    int n = 0;
    for (size_t i = 0; i < r->tl.ncopies; i++)
        for (size_t j = i + 1; j < r->tl.ncopies; j++) {
            const tl_copy *x = &r->tl.copies[i], *y = &r->tl.copies[j];
            int in_x = x->rank == rank_a || x->rank == rank_b, in_y = y->rank == rank_a || y->rank == rank_b;
            double overlap = (x->end_s < y->end_s ? x->end_s : y->end_s) - (x->start_s > y->start_s ? x->start_s : y->start_s);
            if (in_x && in_y && overlap > 1e-9)
                n++;
        }
    return n;
}

/* Duplex, no admission, one GPU, m = 4: F0..F3 in [0, 4] back to back; the
 * D2H engine runs D2H0..3 in [1 + j c, 1 + (j + 1) c]; every activation
 * passes the filter (windows 3, 4, 5, 6 s >= 2c); reloads (one op ahead, two
 * for BW0) never make a BW wait: BW0..3 in [4, 12].  Makespan 12, no stall. */
START_TEST(test_duplex_unlimited)
{
    run_result r;
    run(1, 4, COPY_MODEL_DUPLEX, 0, &r);
    ck_assert_int_eq((int)r.tl.ncopies, 8);
    ck_assert_exact(r.m.makespan_s, 12.0);
    ck_assert_int_eq((int)r.tl.nstalls, 0);
    for (int mb = 0; mb < 4; mb++)
        ck_assert_exact(op_start(&r, 0, OP_F, mb), mb * 1.0);
    run_free(&r);
}
END_TEST

/* Admission, one copy slot: after F_i queues D2H_i the compute waits for
 * D2H_{i-1} (c > F): F1 at 1, F_i at 1 + (i - 1) c for i >= 2 (2.25, 3.5);
 * three waits of c - F = 0.25 s (after F1, F2, F3).  D2H3 ends at 4.75,
 * then BW0 (its reload ended at 3.5) in [4.75, 6.75]; the reloads of 1, 2,
 * 3 (queued at BW0, BW1, BW2) end at 6.0, 8.0, 10.0, each before its BW:
 * BW1..3 back to back, makespan 4.75 + 4 x 2 = 12.75. */
START_TEST(test_admission_one_slot)
{
    run_result r;
    run(1, 4, COPY_MODEL_DUPLEX, 1, &r);
    ck_assert_exact(op_start(&r, 0, OP_F, 1), 1.0);
    ck_assert_exact(op_start(&r, 0, OP_F, 2), 1.0 + COPY_S);
    ck_assert_exact(op_start(&r, 0, OP_F, 3), 1.0 + 2 * COPY_S);
    ck_assert_exact(op_start(&r, 0, OP_BW, 0), 1.0 + 3 * COPY_S);
    ck_assert_int_eq((int)r.tl.nstalls, 3);
    ck_assert_exact(stall_sum(&r), 3 * (COPY_S - 1.0));
    ck_assert_exact(r.m.makespan_s, 1.0 + 3 * COPY_S + 4 * 2.0);
    ck_assert_exact(r.m.rank[0].stall_s, 3 * (COPY_S - 1.0));
    run_free(&r);
}
END_TEST

/* Single stream, no admission: copies one at a time, alternating D2H and
 * H2D when both are ready.  D2H0 [1, 2.25], H2D0 [2.25, 3.5] (queued at
 * F2), D2H1 [3.5, 4.75], H2D1 [4.75, 6] (queued at BW0 = 4), D2H2 [6, 7.25],
 * H2D2 [7.25, 8.5] (queued at BW1 = 6), D2H3 [8.5, 9.75], H2D3 [9.75, 11].
 * BW0 [4, 6], BW1 [6, 8], BW2 waits for H2D2 (0.5 s) [8.5, 10.5], BW3 for
 * H2D3 (0.5 s) [11, 13].  Makespan 13, stalls 1 s; no two copies overlap,
 * and each lasts c (the whole PCIe link). */
START_TEST(test_single_stream)
{
    run_result r;
    run(1, 4, COPY_MODEL_SINGLE, 0, &r);
    ck_assert_int_eq((int)r.tl.ncopies, 8);
    ck_assert_int_eq(overlapping_copies(&r, 0, -1), 0);
    for (size_t i = 0; i < r.tl.ncopies; i++)
        ck_assert_exact(r.tl.copies[i].end_s - r.tl.copies[i].start_s, COPY_S);
    ck_assert_exact(op_start(&r, 0, OP_BW, 2), 8.5);
    ck_assert_exact(op_start(&r, 0, OP_BW, 3), 11.0);
    ck_assert_exact(stall_sum(&r), 1.0);
    ck_assert_exact(r.m.makespan_s, 13.0);
    run_free(&r);
}
END_TEST

/* The duplex engines of the same run do overlap (D2H1 with H2D0): what the
 * single stream removes. */
START_TEST(test_duplex_overlaps)
{
    run_result r;
    run(1, 4, COPY_MODEL_DUPLEX, 0, &r);
    ck_assert_int_gt(overlapping_copies(&r, 0, -1), 0);
    run_free(&r);
}
END_TEST

/* Paired, two GPUs of their own PCIe links: one stream for ranks 0 and 1,
 * so no two of the pair's copies overlap, and each still lasts c (one copy
 * at a time on its own link).  Duplex on the same run overlaps them. */
START_TEST(test_paired_streams)
{
    run_result r;
    run(2, 4, COPY_MODEL_PAIRED, 0, &r);
    int ranks_copying[2] = {0, 0};
    for (size_t i = 0; i < r.tl.ncopies; i++) {
        ck_assert_exact(r.tl.copies[i].end_s - r.tl.copies[i].start_s, COPY_S);
        ranks_copying[r.tl.copies[i].rank] = 1;
    }
    ck_assert(ranks_copying[0] && ranks_copying[1]);
    ck_assert_int_eq(overlapping_copies(&r, 0, 1), 0);
    run_free(&r);
}
END_TEST

START_TEST(test_duplex_pair_overlaps)
{
    run_result r;
    run(2, 4, COPY_MODEL_DUPLEX, 0, &r);
    ck_assert_int_gt(overlapping_copies(&r, 0, 1), 0);
    run_free(&r);
}
END_TEST

/* The keys: offload.copy_model and offload.copy_slots parse into the
 * experiment, reject bad values naming the key, and are reported as
 * ignored without offload. */
static int load(const char *const *sets, int n, experiment *e, pg_status *st)
{
    config c;
    config_init(&c);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = config_apply_set(&c, sets[i], st);
    if (rc == 0)
        rc = experiment_from_config(&c, e, st);
    config_free(&c);
    return rc;
}

static void count_ignored(const char *msg, void *ctx)
{
    (void)msg;
    ++*(int *)ctx;
}

START_TEST(test_keys)
{
    pg_status st;
    pg_status_clear(&st);
    experiment e;
    const char *ok[] = {"offload=full", "offload.copy_model=paired", "offload.copy_slots=2"};
    ck_assert_msg(load(ok, 3, &e, &st) == 0, "%s", st.msg);
    ck_assert_int_eq(e.offload_copy_model, COPY_MODEL_PAIRED);
    ck_assert_int_eq(e.offload_copy_slots, 2);
    const char *defaults[] = {"offload=full"};
    ck_assert(load(defaults, 1, &e, &st) == 0);
    ck_assert_int_eq(e.offload_copy_model, COPY_MODEL_DUPLEX);
    ck_assert_int_eq(e.offload_copy_slots, 0);
    const char *bad_model[] = {"offload=full", "offload.copy_model=triple"};
    ck_assert_int_ne(load(bad_model, 2, &e, &st), 0);
    ck_assert_msg(strstr(st.msg, "offload.copy_model") != NULL, "%s", st.msg);
    pg_status_clear(&st);
    const char *bad_slots[] = {"offload=full", "offload.copy_slots=-1"};
    ck_assert_int_ne(load(bad_slots, 2, &e, &st), 0);
    ck_assert_msg(strstr(st.msg, "offload.copy_slots") != NULL, "%s", st.msg);
    pg_status_clear(&st);
    config c;
    config_init(&c);
    ck_assert(config_apply_set(&c, "offload.copy_slots=1", &st) == 0);
    ck_assert(experiment_from_config(&c, &e, &st) == 0);
    int ignored = 0;
    experiment_ignored_keys(&c, &e, NULL, count_ignored, &ignored);
    ck_assert_int_eq(ignored, 1);
    config_free(&c);
}
END_TEST

static Suite *copymodel_suite(void)
{
    Suite *s = suite_create("copymodel");
    TCase *t = tcase_create("copies");
    tcase_add_test(t, test_duplex_unlimited);
    tcase_add_test(t, test_admission_one_slot);
    tcase_add_test(t, test_single_stream);
    tcase_add_test(t, test_duplex_overlaps);
    tcase_add_test(t, test_paired_streams);
    tcase_add_test(t, test_duplex_pair_overlaps);
    tcase_add_test(t, test_keys);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return pg_run_suite(copymodel_suite());
}
