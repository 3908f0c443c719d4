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
 * Memory plan (sim_input.plan, schedule/plan.h; NULL or empty: none of
 * this runs, and the compute loop pays one test per op).  Each rank gets
 * two more actors, its copy engines: D2H and H2D, each serving its queue in
 * order with blocking one-sided transfers (sg_host_sendto) over the
 * platform's route between the GPU and its node's host-memory host, so
 * GPUs sharing a PCIe-switch uplink or a host link share its bandwidth.
 * After an offloaded F the compute actor queues the D2H copy; the H2D copy
 * is queued when the compute actor reaches a trigger op chosen before the
 * run (the prefetch rule, below), and starts once the D2H copy of the same
 * activation has ended.  Before the activation's first consumer (the
 * forward recompute R, else B / BW) the compute actor waits for the H2D copy
 * to end: that wait is a stall, recorded.  R (before B / BW) and RW (before
 * W) are executions of their plan-given cost, recorded as ops.
 *
 * Offloads that cannot pay: an activation whose window (the compute of the
 * ops between its F and its consumer on this GPU) is shorter than the
 * uncontended D2H + H2D time is not offloaded: it would free nothing and
 * delay the consumer (PipeOffload's own filter, issue #70 of its repository,
 * with factor 1 where its code lazily uses 3).  The last stage's activations
 * in 1F1B, consumed right after their F, are the typical case.
 *
 * Prefetch rule: the reload of an activation consumed by the op at index c
 * of its rank's list is queued when the compute actor reaches op c - k,
 * where k >= 1 is the fewest ops whose durations on this GPU add up to the
 * uncontended H2D time (route latency + bytes / route bandwidth), and never
 * before the op after the activation's F.  Triggers are then made
 * non-decreasing in consumer order (an earlier consumer's reload is never
 * queued after a later one's), since the H2D engine serves in order.  With
 * contention (shared uplinks, several GPUs on one host link) copies take
 * longer than planned and the B stalls: that is what the rule is meant to
 * expose, not hide.
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

#include "sim/actmem.h"
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

/* One copy engine (D2H or H2D) of a GPU: a queue of (stage, mb) items. */
typedef struct copy_engine {
    copy_dir dir;
    int total;                  /* items it will copy in the whole run */
    int *queue;                 /* [total] item indices, in the order queued */
    int head, tail;
    sg_sem_t work;              /* one token per queued item */
    sg_sem_t wake;              /* H2D: released when the awaited D2H ends */
    int waiting_item;           /* H2D: item whose D2H it waits for, -1 */
    struct rank_state *rs;
} copy_engine;

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
    /* memory plan only */
    sg_host_t cpu;              /* host-memory endpoint of the GPU's node */
    copy_engine d2h, h2d;
    int *trig_first;            /* [nops + 1]: reloads queued on reaching op i are */
    int *trig_items;            /*   trig_items[trig_first[i] .. trig_first[i+1]) */
    int waiting_reload;         /* item whose H2D the compute actor waits for, -1 */
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
    /* memory plan only (plan == NULL otherwise) */
    const memplan *plan;
    act_flow *flow;             /* [nstages * m] */
    unsigned char *offloaded;   /* [nstages * m] D2H ended */
    unsigned char *reloaded;    /* [nstages * m] H2D ended */
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

/* ---- memory plan: copies and recomputes ---------------------------------- */

static size_t item_of(int stage, int mb)
{
    return (size_t)stage * (size_t)E.in->sched->m + (size_t)mb;
}

static void copy_push(copy_engine *ce, int item)
{
    ce->queue[ce->tail++] = item;
    sg_sem_release(ce->work);
}

static void record_op(rank_state *rs, sched_op op, int kind, double start_s, double end_s)
{
    tl_op rec = {.start = start_s, .end = end_s, .rank = rs->rank, .stage = op.stage, .mb = op.mb,
                 .kind = (uint8_t)kind};
    timeline_add_op(E.tl, &rec);
}

/* A recompute op of ref_s reference seconds, before op. */
static void recompute(rank_state *rs, sched_op op, int kind, double ref_s)
{
    double start_s = simgrid_get_clock();
    sg_actor_execute(ref_s * rs->flops_per_ref_s);
    E.events++;
    record_op(rs, op, kind, start_s, simgrid_get_clock());
}

/* Before op runs: its activation back from host memory, then its recompute. */
static void plan_before(rank_state *rs, sched_op op)
{
    size_t item = item_of(op.stage, op.mb);
    const act_flow *f = &E.flow[item];
    if (op.kind == OP_B || op.kind == OP_BW) {
        if (f->offload_bytes > 0 && !E.reloaded[item]) {
            double start_s = simgrid_get_clock();
            rs->waiting_reload = (int)item;
            while (!E.reloaded[item])
                sg_sem_acquire(rs->wake);
            tl_stall rec = {.start = start_s, .end = simgrid_get_clock(), .rank = rs->rank, .stage = op.stage,
                            .mb = op.mb};
            timeline_add_stall(E.tl, &rec);
        }
        if (f->has_r)
            recompute(rs, op, TL_OP_R, f->r_ref_s);
    } else if (op.kind == OP_W && f->has_rw) {
        recompute(rs, op, TL_OP_RW, f->rw_ref_s);
    }
}

static void copy_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    copy_engine *ce = sg_actor_self_get_data();
    rank_state *rs = ce->rs;
    for (int n = 0; n < ce->total; n++) {
        sg_sem_acquire(ce->work);
        int item = ce->queue[ce->head++];
        if (ce->dir == COPY_H2D) {
            while (!E.offloaded[item]) {
                ce->waiting_item = item;
                sg_sem_acquire(ce->wake);
            }
        }
        double bytes = E.flow[item].offload_bytes;
        double start_s = simgrid_get_clock();
        if (ce->dir == COPY_D2H)
            sg_host_sendto(rs->host, rs->cpu, bytes);
        else
            sg_host_sendto(rs->cpu, rs->host, bytes);
        double end_s = simgrid_get_clock();
        E.events++;
        int m = E.in->sched->m;
        tl_copy rec = {.start = start_s, .end = end_s, .bytes = bytes, .rank = rs->rank, .stage = item / m,
                       .mb = item % m, .dir = (uint8_t)ce->dir};
        timeline_add_copy(E.tl, &rec);
        if (ce->dir == COPY_D2H) {
            E.offloaded[item] = 1;
            if (rs->h2d.waiting_item == item) {
                rs->h2d.waiting_item = -1;
                sg_sem_release(rs->h2d.wake);
            }
        } else {
            E.reloaded[item] = 1;
            if (rs->waiting_reload == item) {
                rs->waiting_reload = -1;
                sg_sem_release(rs->wake);
            }
        }
    }
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
        if (E.plan) {
            for (int t = rs->trig_first[rs->next]; t < rs->trig_first[rs->next + 1]; t++)
                copy_push(&rs->h2d, rs->trig_items[t]);
        }
        if (!wait_for_input(rs, op))
            return; /* deadlock: reported after the run */
        if (E.plan)
            plan_before(rs, op);
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
        if (E.plan && op.kind == OP_F && E.flow[item_of(op.stage, op.mb)].offload_bytes > 0)
            copy_push(&rs->d2h, (int)item_of(op.stage, op.mb));
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
    for (int r = 0; r < s->pp; r++) {
        rank_state *rs = &E.ranks[r];
        sg_sem_destroy(rs->wake);
        if (E.plan && rs->d2h.work) {   /* NULL on ranks plan_setup did not reach */
            sg_sem_destroy(rs->d2h.work);
            sg_sem_destroy(rs->h2d.work);
            sg_sem_destroy(rs->h2d.wake);
        }
        if (E.plan) {
            free(rs->d2h.queue);
            free(rs->h2d.queue);
            free(rs->trig_first);
            free(rs->trig_items);
        }
    }
    free(E.flow);
    free(E.offloaded);
    free(E.reloaded);
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

/* Seconds op takes on rs's GPU (ideal: no waiting). */
static double op_seconds(const rank_state *rs, sched_op op)
{
    return op_reference_s(&E.in->wl->stage[op.stage], (op_kind)op.kind) * rs->flops_per_ref_s /
           sg_host_get_speed(rs->host);
}

/* The prefetch rule of the header: trigger op of each reload of rank rs. */
static void plan_triggers(rank_state *rs)
{
    const schedule *s = E.in->sched;
    int n = s->nops[rs->rank];
    const sched_op *ops = s->ops[rs->rank];
    size_t nitems = (size_t)s->nstages * (size_t)s->m;
    int *f_index = pg_xmalloc((nitems + 1) * sizeof *f_index);
    for (size_t k = 0; k < nitems; k++)
        f_index[k] = -1;   /* F not reached yet (only in a list that cannot run) */
    int *consumer = pg_xmalloc(((size_t)n + 1) * sizeof *consumer);   /* op indices, in order */
    double *before_s = pg_xmalloc(((size_t)n + 1) * sizeof *before_s);  /* compute before op i */
    before_s[0] = 0;
    for (int i = 0; i < n; i++)
        before_s[i + 1] = before_s[i] + op_seconds(rs, ops[i]);
    int *trigger = pg_xmalloc(((size_t)n + 1) * sizeof *trigger);
    int nc = 0;
    double lat_s = sg_host_get_route_latency(rs->cpu, rs->host);
    double bw = sg_host_get_route_bandwidth(rs->cpu, rs->host);
    for (int i = 0; i < n; i++) {
        size_t item = item_of(ops[i].stage, ops[i].mb);
        if (ops[i].kind == OP_F) {
            f_index[item] = i;
            continue;
        }
        if ((ops[i].kind != OP_B && ops[i].kind != OP_BW) || E.flow[item].offload_bytes <= 0)
            continue;
        double need_s = lat_s + (bw > 0 ? E.flow[item].offload_bytes / bw : 0.0), ahead_s = 0;
        if (f_index[item] < 0 || before_s[i] - before_s[f_index[item] + 1] < 2 * need_s) {
            E.flow[item].offload_bytes = 0;   /* cannot pay (header) */
            continue;
        }
        int j = i;
        while (j - 1 > f_index[item] && (j == i || ahead_s < need_s))
            ahead_s += op_seconds(rs, ops[--j]);
        consumer[nc] = i;
        trigger[nc++] = j;
    }
    for (int k = nc - 2; k >= 0; k--) {
        size_t item = item_of(ops[consumer[k]].stage, ops[consumer[k]].mb);
        if (trigger[k + 1] < trigger[k])
            trigger[k] = trigger[k + 1] > f_index[item] + 1 ? trigger[k + 1] : f_index[item] + 1;
    }
    rs->trig_first = pg_xcalloc((size_t)n + 2, sizeof *rs->trig_first);
    rs->trig_items = pg_xmalloc(((size_t)nc + 1) * sizeof *rs->trig_items);
    for (int k = 0; k < nc; k++)
        rs->trig_first[trigger[k] + 1]++;
    for (int i = 0; i < n; i++)
        rs->trig_first[i + 1] += rs->trig_first[i];
    int *fill = pg_xmalloc(((size_t)n + 1) * sizeof *fill);
    memcpy(fill, rs->trig_first, ((size_t)n + 1) * sizeof *fill);
    for (int k = 0; k < nc; k++)
        rs->trig_items[fill[trigger[k]]++] = (int)item_of(ops[consumer[k]].stage, ops[consumer[k]].mb);
    rs->d2h.total = rs->h2d.total = nc;
    free(fill);
    free(f_index);
    free(consumer);
    free(trigger);
    free(before_s);
}

/* Copy engines, flows and triggers; 0 or PG_EXIT_INPUT (no host memory). */
static int plan_setup(const sim_input *in, pg_status *st)
{
    const schedule *s = in->sched;
    size_t n = (size_t)s->nstages * (size_t)s->m;
    E.plan = in->plan;
    E.flow = pg_xcalloc(n + 1, sizeof *E.flow);
    E.offloaded = pg_xcalloc(n + 1, 1);
    E.reloaded = pg_xcalloc(n + 1, 1);
    for (int stage = 0; stage < s->nstages; stage++)
        for (int mb = 0; mb < s->m; mb++)
            act_flow_of(in->wl, in->plan, stage, mb, &E.flow[item_of(stage, mb)]);
    for (int r = 0; r < s->pp; r++) {
        rank_state *rs = &E.ranks[r];
        const pg_gpu *gpu = &in->plat->gpu[in->rank_gpu[r]];
        rs->waiting_reload = -1;
        rs->d2h = (copy_engine){.dir = COPY_D2H, .work = sg_sem_init(0), .waiting_item = -1, .rs = rs};
        rs->h2d = (copy_engine){.dir = COPY_H2D, .work = sg_sem_init(0), .wake = sg_sem_init(0),
                                .waiting_item = -1, .rs = rs};
        if (in->plan->noffload > 0) {
            if (gpu->cpu_index < 0 || (rs->cpu = sg_host_by_name(in->plat->cpu_host[gpu->cpu_index])) == NULL)
                return pg_fail(st, PG_EXIT_INPUT,
                               "%s: offload needs a host-memory host (kind=cpu) on the node of GPU '%s'",
                               in->plat->xml_path, gpu->host);
            plan_triggers(rs);
        } else {
            rs->trig_first = pg_xcalloc((size_t)s->nops[r] + 2, sizeof *rs->trig_first);
        }
        rs->d2h.queue = pg_xcalloc((size_t)rs->d2h.total + 1, sizeof *rs->d2h.queue);
        rs->h2d.queue = pg_xcalloc((size_t)rs->h2d.total + 1, sizeof *rs->h2d.queue);
    }
    return 0;
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
    if (!plan_is_empty(in->plan)) {
        int rc = plan_setup(in, st);
        if (rc != 0) {
            engine_free();
            return rc;
        }
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
    for (int r = 0; r < s->pp && E.plan; r++) {
        copy_engine *engines[2] = {&E.ranks[r].d2h, &E.ranks[r].h2d};
        for (int k = 0; k < 2; k++) {
            if (engines[k]->total == 0)
                continue;
            snprintf(name, sizeof name, "%s%d", k == 0 ? "d2h" : "h2d", r);
            sg_actor_t a = sg_actor_init(name, E.ranks[r].host);
            sg_actor_set_data(a, engines[k]);
            sg_actor_start(a, copy_actor, 0, NULL);
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
