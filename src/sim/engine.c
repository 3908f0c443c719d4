/* engine.c: the SimGrid replay of a schedule (see sim.h for the contract).
 *
 * Actors.  Each pipeline rank has one compute actor on its GPU host, which
 * executes the rank's op list in order, and one receive actor per incoming
 * channel.  A channel carries the messages of one stage boundary in one
 * direction: the activations F(s,*) -> F(s+1,*) or the gradients
 * B(s,*) -> B(s-1,*), whenever the two stages sit on different ranks.
 *
 * Why receive actors: SimGrid 3.32's C API gives no completion time for a
 * detached transfer, and a compute actor that only drains its mailbox when
 * it needs a message would see "when I looked", not "when it arrived".  A
 * receive actor is always blocked on its channel, so the moment its get
 * returns is the arrival time, exactly: the channel's mailbox has a
 * permanent receiver (eager: a transfer starts when it is sent, like NCCL's
 * pre-posted receives), and its messages all have the same size and route,
 * so they complete in the order they were sent, which is the order a
 * mailbox delivers them.  The receive actor marks the arrival and wakes the
 * compute actor if that is the message it waits for.  It is the "receive
 * stream" of the GPU, as CUDA would have it.
 *
 * Time.  An op of reference duration t on a GPU of speed S is an execution
 * of t * ref_speed flops (ref_speed: the GPU the profile was measured on), so
 * it lasts t * ref_speed / S.  Workloads with absolute times (ref_speed 0)
 * run t * S flops: exactly t on any GPU.
 *
 * Completion.  Every executed op is counted.  If the simulation ends with
 * ops left (SimGrid detects that every actor is blocked and stops), the run
 * is a deadlock and each blocked rank's next op is named.
 */
#include "sim/sim.h"

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xbt/config.h>
#include <xbt/log.h>

#include "sim/sgshim.h"
#include "util/strbuf.h"

#define MAILBOX_NAME_MAX 48

struct rank_state;

/* One stage boundary in one direction between two ranks. */
typedef struct channel {
    int used;                   /* 0: both stages on one rank, or no such boundary */
    int stage;                  /* producing stage */
    xfer_kind kind;
    int src_rank, dst_rank;
    double bytes;
    char name[MAILBOX_NAME_MAX];
    sg_mailbox_t mailbox;
    double *sent_at_s;          /* [m] when each microbatch's message was sent */
    unsigned char *arrived;     /* [m] */
    struct rank_state *dst;
} channel;

typedef struct rank_state {
    int rank;
    sg_host_t host;
    double flops_per_ref_s;     /* flops that one second of reference time costs */
    int next;                   /* index of the next op to run */
    sg_sem_t wake;              /* released by a receive actor */
    const channel *waiting_on;  /* channel and microbatch the compute actor waits for */
    int waiting_mb;
    sched_op blocked_pred;      /* what the next op waits for (deadlock report) */
    int blocked_on_local;       /* the predecessor is later in this rank's own list */
} rank_state;

/* The one simulation of this process (SimGrid allows no second). */
static struct {
    const sim_input *in;
    timeline *tl;
    rank_state *ranks;
    channel *activation;        /* [nstages]: F(s) -> F(s+1) */
    channel *gradient;          /* [nstages]: B(s) -> B(s-1) */
    unsigned char *done;        /* [OP_KIND_COUNT][nstages][m] */
    long events;
} E;

static int ran_once;

static size_t done_index(int kind, int stage, int mb)
{
    const schedule *s = E.in->sched;
    return ((size_t)kind * (size_t)s->nstages + (size_t)stage) * (size_t)s->m + (size_t)mb;
}

/* Ops whose completion satisfies a dependency on `op`: a backward
 * dependency is met by B or BW alike. */
static int is_done(sched_op op)
{
    if (op.kind == OP_B || op.kind == OP_BW)
        return E.done[done_index(OP_B, op.stage, op.mb)] || E.done[done_index(OP_BW, op.stage, op.mb)];
    return E.done[done_index(op.kind, op.stage, op.mb)];
}

static double op_reference_s(const stage_cost *c, op_kind kind)
{
    switch (kind) {
    case OP_F: return c->f_s;
    case OP_B: return c->b_s;
    case OP_W: return c->w_s;
    case OP_BW: return c->b_s + c->w_s;
    default: return 0.0;
    }
}

/* The channel that carries pred's output, or NULL if it stays on its rank. */
static channel *channel_of(sched_op pred)
{
    channel *c = pred.kind == OP_F ? &E.activation[pred.stage] : &E.gradient[pred.stage];
    return c->used ? c : NULL;
}

/* Block until op's input is available; 0 if it never will be. */
static int wait_for_input(rank_state *rs, sched_op op)
{
    sched_op pred;
    if (!sched_pred(E.in->sched, op, &pred))
        return 1;
    rs->blocked_pred = pred;
    channel *c = NULL;
    if (E.in->sched->stage_rank[pred.stage] != rs->rank)
        c = channel_of(pred);
    if (c == NULL) {
        /* Same rank: ops run in list order, so pred is done or comes later. */
        rs->blocked_on_local = !is_done(pred);
        return !rs->blocked_on_local;
    }
    while (!c->arrived[pred.mb]) {
        rs->waiting_on = c;
        rs->waiting_mb = pred.mb;
        sg_sem_acquire(rs->wake);
    }
    return 1;
}

static void send_output(sched_op op, double now_s)
{
    channel *c = NULL;
    if (op.kind == OP_F)
        c = &E.activation[op.stage];
    else if (op.kind == OP_B || op.kind == OP_BW)
        c = &E.gradient[op.stage];
    if (c == NULL || !c->used)
        return;
    c->sent_at_s[op.mb] = now_s;
    /* The payload only identifies the microbatch; it must be non-NULL. */
    sg_comm_t comm = sg_mailbox_put_init(c->mailbox, (void *)(intptr_t)(op.mb + 1), (long)c->bytes);
    sg_comm_detach(comm, NULL);
    E.events++;
}

static void compute_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    rank_state *rs = sg_actor_self_get_data();
    const schedule *s = E.in->sched;
    const sched_op *ops = s->ops[rs->rank];
    for (; rs->next < s->nops[rs->rank]; rs->next++) {
        sched_op op = ops[rs->next];
        if (!wait_for_input(rs, op))
            return; /* deadlock: reported after the run */
        const stage_cost *cost = &E.in->wl->stage[op.stage];
        double start_s = simgrid_get_clock();
        sg_actor_execute(op_reference_s(cost, op.kind) * rs->flops_per_ref_s);
        double end_s = simgrid_get_clock();
        E.events++;
        E.done[done_index(op.kind, op.stage, op.mb)] = 1;
        tl_op rec = {.start = start_s, .end = end_s, .rank = rs->rank, .stage = op.stage, .mb = op.mb,
                     .kind = op.kind};
        timeline_add_op(E.tl, &rec);
        send_output(op, end_s);
    }
}

static void receive_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    channel *c = sg_actor_self_get_data();
    sg_mailbox_set_receiver(c->name);
    for (int i = 0; i < E.in->sched->m; i++) {
        int mb = (int)(intptr_t)sg_mailbox_get(c->mailbox) - 1;
        double now_s = simgrid_get_clock();
        c->arrived[mb] = 1;
        tl_xfer rec = {.start = c->sent_at_s[mb], .end = now_s, .bytes = c->bytes, .src_rank = c->src_rank,
                       .dst_rank = c->dst_rank, .stage = c->stage, .mb = mb, .kind = c->kind};
        timeline_add_xfer(E.tl, &rec);
        rank_state *dst = c->dst;
        if (dst->waiting_on == c && dst->waiting_mb == mb) {
            dst->waiting_on = NULL;
            sg_sem_release(dst->wake);
        }
    }
}

static void channel_setup(channel *c, int stage, xfer_kind kind, int src_stage_rank, int dst_stage_rank)
{
    const sim_input *in = E.in;
    int m = in->sched->m;
    c->used = src_stage_rank != dst_stage_rank;
    if (!c->used)
        return;
    c->stage = stage;
    c->kind = kind;
    c->src_rank = src_stage_rank;
    c->dst_rank = dst_stage_rank;
    c->bytes = in->zero_byte_messages ? 0.0 : in->wl->stage[stage].boundary_bytes;
    snprintf(c->name, sizeof c->name, "%s%d", kind == XFER_ACTIVATION ? "act" : "grad", stage);
    c->mailbox = sg_mailbox_by_name(c->name);
    c->sent_at_s = pg_xcalloc((size_t)m, sizeof *c->sent_at_s);
    c->arrived = pg_xcalloc((size_t)m, 1);
    c->dst = &E.ranks[dst_stage_rank];
}

static void describe_blocked(sim_outcome *out)
{
    const schedule *s = E.in->sched;
    strbuf sb;
    sb_init(&sb);
    char op_text[64], pred_text[64];
    for (int r = 0; r < s->pp; r++) {
        rank_state *rs = &E.ranks[r];
        if (rs->next >= s->nops[r])
            continue;
        sched_op op = s->ops[r][rs->next];
        sched_op_str(op, op_text, sizeof op_text);
        sched_op_str(rs->blocked_pred, pred_text, sizeof pred_text);
        sb_appendf(&sb, "%srank %d blocked at %s waiting for %s%s", sb.len ? "; " : "", r, op_text, pred_text,
                   rs->blocked_on_local ? " (later in its own list)" : "");
    }
    snprintf(out->blocked, sizeof out->blocked, "%s", sb.len ? sb.data : "");
    sb_free(&sb);
}

static void engine_free(void)
{
    const schedule *s = E.in->sched;
    for (int st = 0; st < s->nstages; st++) {
        free(E.activation[st].sent_at_s);
        free(E.activation[st].arrived);
        free(E.gradient[st].sent_at_s);
        free(E.gradient[st].arrived);
    }
    for (int r = 0; r < s->pp; r++)
        sg_sem_destroy(E.ranks[r].wake);
    free(E.activation);
    free(E.gradient);
    free(E.ranks);
    free(E.done);
    memset(&E, 0, sizeof E);
}

static void simgrid_setup(void)
{
    static char prog[] = "pipegrid";
    /* Quiet before init: SimGrid logs its own configuration changes. */
    xbt_log_control_set("root.thres:critical");
#if defined(__SANITIZE_ADDRESS__)
    /* Under AddressSanitizer, actors run on threads: SimGrid's default
     * context switching swaps stacks behind ASan's back (false reports);
     * threads are slower but let ASan check the actors' code for real. */
    static char contexts[] = "--cfg=contexts/factory:thread";
    static char *argv[] = {prog, contexts, NULL};
    int argc = 2;
#else
    static char *argv[] = {prog, NULL};
    int argc = 1;
#endif
    simgrid_init(&argc, argv);
    /* Exact network model: time = sum of latencies + bytes / bottleneck
     * bandwidth, fair sharing, no cross-traffic, no TCP window cap. */
    sg_cfg_set_string("network/model", "CM02");
    sg_cfg_set_boolean("network/crosstraffic", "no");
    sg_cfg_set_double("network/TCP-gamma", 0.0);
    /* pipegrid reports deadlocks itself, naming the blocked ops. */
    xbt_log_control_set("ker_engine.app:file:/dev/null");
}

int sim_run(const sim_input *in, timeline *tl, sim_outcome *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    if (ran_once)
        return pg_fail(st, PG_EXIT_INTERNAL, "sim_run: SimGrid runs one simulation per process");
    ran_once = 1;

    const schedule *s = in->sched;
    simgrid_setup();
    char err[PG_MSG_MAX - 64];
    if (sgx_load_platform(in->plat->xml_path, err, sizeof err) != 0)
        return pg_fail(st, PG_EXIT_INPUT, "%s: SimGrid refused the platform: %s", in->plat->xml_path, err);

    E.in = in;
    E.tl = tl;
    E.ranks = pg_xcalloc((size_t)s->pp, sizeof *E.ranks);
    E.activation = pg_xcalloc((size_t)s->nstages, sizeof *E.activation);
    E.gradient = pg_xcalloc((size_t)s->nstages, sizeof *E.gradient);
    E.done = pg_xcalloc((size_t)OP_KIND_COUNT * (size_t)s->nstages * (size_t)s->m, 1);

    for (int r = 0; r < s->pp; r++) {
        rank_state *rs = &E.ranks[r];
        const pg_gpu *gpu = &in->plat->gpu[in->rank_gpu[r]];
        rs->rank = r;
        rs->host = sg_host_by_name(gpu->host);
        if (rs->host == NULL) {
            engine_free();
            return pg_fail(st, PG_EXIT_INPUT, "%s: no host '%s' for rank %d", in->plat->xml_path, gpu->host, r);
        }
        rs->flops_per_ref_s = in->wl->ref_speed_flops > 0 ? in->wl->ref_speed_flops : sg_host_get_speed(rs->host);
        rs->wake = sg_sem_init(0);
    }
    for (int stage = 0; stage < s->nstages; stage++) {
        int here = s->stage_rank[stage];
        if (stage + 1 < s->nstages)
            channel_setup(&E.activation[stage], stage, XFER_ACTIVATION, here, s->stage_rank[stage + 1]);
        if (stage > 0)
            channel_setup(&E.gradient[stage], stage, XFER_GRADIENT, here, s->stage_rank[stage - 1]);
    }

    /* Receive actors first: they must own their mailboxes before anything is sent. */
    char name[MAILBOX_NAME_MAX + 16];
    for (int stage = 0; stage < s->nstages; stage++) {
        channel *pair[2] = {&E.activation[stage], &E.gradient[stage]};
        for (int k = 0; k < 2; k++) {
            channel *c = pair[k];
            if (!c->used)
                continue;
            snprintf(name, sizeof name, "recv-%s", c->name);
            sg_actor_t a = sg_actor_init(name, E.ranks[c->dst_rank].host);
            sg_actor_set_data(a, c);
            sg_actor_start(a, receive_actor, 0, NULL);
        }
    }
    for (int r = 0; r < s->pp; r++) {
        snprintf(name, sizeof name, "rank%d", r);
        sg_actor_t a = sg_actor_init(name, E.ranks[r].host);
        sg_actor_set_data(a, &E.ranks[r]);
        sg_actor_start(a, compute_actor, 0, NULL);
    }

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    simgrid_run();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;

    out->ops_total = sched_total_ops(s);
    for (int r = 0; r < s->pp; r++)
        out->ops_done += E.ranks[r].next;
    out->events = E.events;
    out->completed = out->ops_done == out->ops_total;
    int rc = 0;
    if (!out->completed) {
        describe_blocked(out);
        rc = pg_fail(st, PG_EXIT_DEADLOCK, "deadlock after %ld of %ld ops: %s", out->ops_done, out->ops_total,
                     out->blocked);
    }
    engine_free();
    return rc;
}
