/* bare_replay.c: the reference the engine's speed goals are ratios to (issue 17).
 *
 * The simplest actor-per-rank replay of 1F1B in SimGrid, without any of
 * pipegrid's bookkeeping (no timeline, no tp/dp/cp/ep, no memory plan, no
 * deadlock report): one actor per pipeline rank runs the rank's 1F1B list
 * (warm-up forwards, steady one-forward-one-backward, cool-down backwards,
 * F = B = W: the W folded into B as 1F1B does), receiving each input from a
 * mailbox whose permanent receiver it is (eager transfers, as the engine)
 * and sending each output with a detached put.  Same platform as
 * bench/bench_sim.sh: network=cluster of ceil(p / 8) H100 nodes, built by
 * pipegrid's own generator (libpgmodel), with the engine's exact CM02
 * network settings.
 *
 * Usage: bench/bare_replay P M [F_S] [BYTES]
 * Prints: p m makespan_s wall_s events events_per_s peak_rss_MiB run_cpu_s
 * (run_cpu_s: user + system CPU seconds of simgrid_run alone)
 * Deterministic makespan: (m + p - 1) * (F + B) + transfers, the same as
 * `pipegrid run` on the same input (compare to check the baseline is fair). */
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <xbt/config.h>
#include <xbt/log.h>

#include "model/config.h"
#include "model/experiment.h"
#include "model/platform.h"

#define MAILBOX_NAME_MAX 32
#define DEFAULT_OP_S 1e-3
#define DEFAULT_BYTES (32.0 * 1024 * 1024)
#define BYTES_PER_KIB 1024.0

static int P, M;
static double op_s, msg_bytes, speed_flops;
static long events;
static sg_mailbox_t *act_mb, *grad_mb;   /* [P]: into rank r */

/* One op: its input (if any), its compute, its output (if any). */
static void op(int r, int backward, int mb)
{
    if (!backward && r > 0)
        sg_mailbox_get(act_mb[r]);
    if (backward && r < P - 1)
        sg_mailbox_get(grad_mb[r]);
    sg_actor_execute((backward ? 2.0 : 1.0) * op_s * speed_flops);
    events++;
    sg_comm_t c = NULL;
    if (!backward && r < P - 1)
        c = sg_mailbox_put_init(act_mb[r + 1], (void *)(intptr_t)(mb + 1), (long)msg_bytes);
    if (backward && r > 0)
        c = sg_mailbox_put_init(grad_mb[r - 1], (void *)(intptr_t)(mb + 1), (long)msg_bytes);
    if (c) {
        sg_comm_detach(c, NULL);
        events++;
    }
}

static void rank_actor(int argc, char **argv)
{
    (void)argc;
    int r = atoi(argv[1]);
    if (r > 0)
        sg_mailbox_set_receiver(sg_mailbox_get_name(act_mb[r]));
    if (r < P - 1)
        sg_mailbox_set_receiver(sg_mailbox_get_name(grad_mb[r]));
    int warm = P - 1 - r < M ? P - 1 - r : M, f = 0, b = 0;
    for (; f < warm; f++)
        op(r, 0, f);
    while (f < M) {
        op(r, 0, f++);
        op(r, 1, b++);
    }
    while (b < M)
        op(r, 1, b++);
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static int make_platform(int nodes, platform_desc *plat)
{
    config c;
    config_init(&c);
    experiment e;
    pg_status st = {0};
    char set[64];
    snprintf(set, sizeof set, "cluster.nodes=%d", nodes);
    if (config_apply_set(&c, "network=cluster", &st) || config_apply_set(&c, set, &st) ||
        experiment_from_config(&c, &e, &st) || platform_make_cluster(&e, plat, &st)) {
        fprintf(stderr, "bare_replay: %s\n", st.msg);
        return 1;
    }
    config_free(&c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s P M [OP_S] [BYTES]\n", argv[0]);
        return 2;
    }
    P = atoi(argv[1]);
    M = atoi(argv[2]);
    op_s = argc > 3 ? atof(argv[3]) : DEFAULT_OP_S;
    msg_bytes = argc > 4 ? atof(argv[4]) : DEFAULT_BYTES;
    platform_desc plat;
    if (P < 1 || M < 1 || make_platform((P + 7) / 8, &plat))
        return 2;
    xbt_log_control_set("root.thres:critical");
    int one = 1;
    char *sg_argv[] = {argv[0], NULL};
    simgrid_init(&one, sg_argv);
    sg_cfg_set_string("network/model", "CM02");
    sg_cfg_set_boolean("network/crosstraffic", "no");
    sg_cfg_set_double("network/TCP-gamma", 0.0);
    simgrid_load_platform(plat.xml_path);
    act_mb = calloc((size_t)P, sizeof *act_mb);
    grad_mb = calloc((size_t)P, sizeof *grad_mb);
    char name[MAILBOX_NAME_MAX];
    for (int r = 0; r < P; r++) {
        snprintf(name, sizeof name, "act%d", r);
        act_mb[r] = sg_mailbox_by_name(name);
        snprintf(name, sizeof name, "grad%d", r);
        grad_mb[r] = sg_mailbox_by_name(name);
    }
    for (int r = 0; r < P; r++) {
        sg_host_t h = sg_host_by_name(plat.gpu[r].host);
        speed_flops = sg_host_get_speed(h);
        char rank_arg[16];
        snprintf(rank_arg, sizeof rank_arg, "%d", r);
        const char *args[] = {"rank", rank_arg, NULL};
        sg_actor_create("rank", h, rank_actor, 2, (char **)args);
    }
    struct timespec t0, t1;
    double cpu0_s = cpu_seconds();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    simgrid_run();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double run_cpu_s = cpu_seconds() - cpu0_s;
    double wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%d %d %.9g %.3f %ld %.0f %.1f %.3f\n", P, M, simgrid_get_clock(), wall_s, events, events / wall_s,
           (double)ru.ru_maxrss / BYTES_PER_KIB, run_cpu_s);
    platform_free(&plat);
    return 0;
}
