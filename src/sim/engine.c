/* engine.c: the SimGrid replay of a schedule (see sim.h for the contract).
 *
 * Actors.  Each pipeline rank has one compute actor on its GPU host, which
 * executes the rank's op list in order.  A channel carries the messages of
 * one stage boundary in one direction: the activations F(s,*) -> F(s+1,*)
 * or the gradients B(s,*) -> B(s-1,*), whenever the two stages sit on
 * different ranks.  The receiving compute actor is its mailbox's permanent
 * receiver, so a transfer starts when it is sent (eager, like NCCL's
 * pre-posted receives), and when an op needs a message the actor drains the
 * channel until that message is in.  A channel's messages all have the same
 * size and route, so they complete in the order they were sent, which is
 * the order the mailbox delivers them: draining never waits for a message
 * that arrives after the one needed.  Each transfer's true start and finish
 * come from SimGrid itself (sgshim.h), so the timeline has exact arrival
 * times even for messages that were collected later, without a receiving
 * actor per channel (which cost 1.36x at 512 ranks).

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
 * Tensor and data parallelism (sim_input.par, sim.h; NULL: none of this
 * runs, and the compute loop pays one test per op).  Every data-parallel
 * replica has its own ranks, channels and actors (mailboxes and actors of
 * replica d > 0 carry a ".rD" suffix); only replica 0 records ops,
 * transfers and copies, since the replicas run the same lists and differ
 * only by contention, and each replica's span is recorded (TLC_PIPELINE).
 *   - tp group: the compute actor starts the op's execution on every GPU of
 *     its group at once and waits for all (a GPU slower than the others
 *     holds the op; with equal GPUs one execution stands for all, see
 *     group_execute), then runs the op's tensor-parallel collectives on the
 *     group's ring (collectives.h; FUSED unless stepwise_collectives): Megatron has 2 all-reduces per
 *     layer in F and 2 in B (none in W), each of the layer's output
 *     s x b x h elements, the stage's boundary_bytes; one op's 2L of them
 *     are one fused record, the same time as 2L separate ones uncontended.
 *     With sequence parallelism each becomes a reduce-scatter + all-gather
 *     pair (the same bytes on the wire).  The op's record spans compute and
 *     collectives, as the framework sees it.
 *   - gradients: one reducer actor per pipeline rank all-reduces that
 *     rank's gradients across the replicas, for every tp rank at once (tp
 *     groups of dp GPUs), bucket after bucket (one NCCL stream), FUSED unless
 *     stepwise_collectives (STEPWISE: 4x the wall time at 512 GPUs, the
 *     same iteration to 1e-5 there).
 *     A stage's gradient (param_count, / tp when the times are the group's,
 *     x grad_bytes_per_param) is cut into equal buckets of at most
 *     bucket_bytes.  Without overlap every bucket is ready when the rank has
 *     run its whole list (Megatron's finalize_model_grads); with overlap the
 *     stage's last weight-gradient op (W, or BW) runs in as many equal
 *     pieces as the stage has buckets and bucket j is ready after piece j
 *     (the backward produces gradients layer by layer).  A bucket starts
 *     when every replica has it ready.  Algorithm per group: a ring in dp
 *     order, or hierarchical (collectives.h) when the group spans several
 *     nodes with the same number > 1 of its GPUs on each (AUTO).
 *   - optimizer: when every reducer is done (a barrier: the step needs the
 *     global gradient norm), each rank spends its optimizer_s.
 *
 * Context parallelism (par->cp > 1): a rank's group is tp x cp GPUs (the
 * tp machinery above runs over all of them; its tensor-parallel collectives
 * on cp rings of tp GPUs at once), and after an op's compute every
 * attention layer passes its key/value block round the group's tp rings of
 * cp GPUs: a ring all-gather of cp x cp_kv_bytes, i.e. cp - 1 steps of
 * cp_kv_bytes per GPU, twice the bytes in B (keys, values and their
 * gradients).  Not overlapped with the attention compute (Megatron overlaps
 * it partly: an upper bound on its cost).  The gradient all-reduce runs per
 * GPU of the group over the dp replicas (Megatron reduces over dp x cp: one
 * step fewer per ring here).
 *
 * Expert parallelism (par->ep > 1): replicas d with the same d / ep form an
 * expert-parallel group.  After an op's compute, its 2 x moe_layers
 * all-to-alls (dispatch and combine per MoE layer in F, their gradients in
 * B or BW) run among the group: every GPU of every member sends a2a_bytes /
 * (ep - 1) to the same GPU of each other member.  The members' compute
 * actors meet at a barrier (the exchange needs every member's tokens), the
 * group's first replica starts all the transfers, fused as the tp
 * collectives are (each pair's transfer carries all the op's all-to-alls,
 * then the other all-to-alls' latencies are slept), and a second barrier
 * releases the members when they are done.  Uncontended an all-to-all takes
 * route latency + a2a_bytes / the GPU's link; with other traffic on the
 * links it takes its fair share.  The all-to-alls sit after the op's
 * compute, not between its layers: the same time without overlap.
 *
 * Overlapped pairs (par->overlap_pairs, ops marked overlap_next: DualPipeV's
 * forward and backward chunks of different microbatches): the two computes
 * run back to back while the first op's all-to-alls run under the second's
 * compute (a helper actor joins the group's exchange); the second's follow.
 * The first op is recorded up to the end of its compute, the second from
 * there to the end of both ops' communication; the first's output is sent
 * when its all-to-alls end.  Without a memory plan only (with one, pairs run
 * in order).
 *
 * Completion.  Every executed op is counted.  If the simulation ends with
 * ops left (SimGrid detects that every actor is blocked and stops), the run
 * is a deadlock and each blocked rank's next op is named.
 */
#include "sim/sim.h"

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
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
#include "sim/collectives.h"
#include "sim/sgshim.h"
#include "util/strbuf.h"

#define MAILBOX_NAME_MAX 48
/* Megatron's tensor-parallel collectives per transformer layer, in F and in
 * B (the attention and MLP blocks' row-parallel outputs, and their inputs'
 * gradients); W has none. */
#define TP_COLLS_PER_LAYER 2

struct rank_state;
struct replica;

/* One stage boundary in one direction between two ranks. */
typedef struct channel {
    int used;                   /* 0: both stages on one rank, or no such boundary */
    int stage;                  /* producing stage */
    xfer_kind kind;
    int src_rank, dst_rank;
    double bytes;
    char name[MAILBOX_NAME_MAX];
    sg_mailbox_t mailbox;
    unsigned char *arrived;     /* [m] drained from the mailbox */
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
    struct replica *rep;
    int record;                 /* replica 0: ops, transfers, copies go into the timeline */
    sg_host_t host;             /* the GPU (tp rank 0's with tensor parallelism) */
    double flops_per_ref_s;     /* flops that one second of reference time costs */
    int next;                   /* index of the next op to run */
    sg_sem_t wake;              /* released by the H2D engine when an awaited reload ends */
    sched_op blocked_pred;      /* what the next op waits for (deadlock report) */
    int blocked_on_local;       /* the predecessor is later in this rank's own list */
    double first_start_s, last_end_s;
    /* memory plan only */
    sg_host_t cpu;              /* host-memory endpoint of the GPU's node */
    copy_engine d2h, h2d;
    int *trig_first;            /* [nops + 1]: reloads queued on reaching op i are */
    int *trig_items;            /*   trig_items[trig_first[i] .. trig_first[i+1]) */
    int owns_triggers;          /* replica 0 computes them, the others share */
    int waiting_reload;         /* item whose H2D the compute actor waits for, -1 */
    /* tensor / data parallelism only (par != NULL) */
    int tp;
    sg_host_t *tp_host;         /* [tp] */
    double *tp_flops_per_ref_s; /* [tp] */
    int tp_same_time;           /* every GPU of the group runs an op in the same time */
    coll_rings tp_ring;         /* cp rings of tp GPUs */
    coll_rings cp_ring;         /* tp rings of cp GPUs */
    struct ep_group *ep;        /* the expert-parallel group of this rank's replica, NULL: none */
} rank_state;

/* The expert-parallel group of ep replicas at one pipeline rank. */
typedef struct ep_group {
    int first;                  /* first replica */
    sg_bar_t bar;
    double latency_s;           /* largest route latency between two members' GPUs */
} ep_group;

/* One data-parallel replica of the pipeline. */
typedef struct replica {
    int index;
    rank_state *ranks;          /* [pp] */
    channel *activation;        /* [nstages]: F(s) -> F(s+1) */
    channel *gradient;          /* [nstages]: B(s) -> B(s-1) */
    unsigned char *done;        /* [OP_KIND_COUNT][nstages][m] */
    unsigned char *offloaded;   /* memory plan: [nstages * m] D2H ended */
    unsigned char *reloaded;    /* memory plan: [nstages * m] H2D ended */
} replica;

/* A pipeline rank's gradient reduction across the replicas (reducer actor). */
typedef struct dp_rank {
    int rank;
    int nbuckets;
    double *bucket_bytes;       /* [nbuckets] per GPU */
    int *bucket_stage;          /* [nbuckets] */
    int *ready;                 /* [nbuckets] replicas that have the bucket ready */
    int finished;               /* replicas whose rank ran its whole list */
    int waiting;                /* bucket the reducer waits for; nbuckets: waits for finished; -1 none */
    sg_sem_t wake;
    int *op_first_bucket;       /* [nops] overlap: buckets that op i releases, piece by piece */
    int *op_nbuckets;           /* [nops] */
    int use_hier;
    coll_rings flat;            /* tp rings of dp GPUs */
    coll_hier hier;
    sg_host_t host;             /* where the reducer actor lives */
} dp_rank;

/* The one simulation of this process (SimGrid allows no second). */
static struct {
    const sim_input *in;
    const sim_parallel *par;    /* NULL: tp = dp = 1 */
    timeline *tl;
    int nrep;
    replica *rep;               /* [nrep] */
    long events;
    /* memory plan only (plan == NULL otherwise) */
    const memplan *plan;
    act_flow *flow;             /* [nstages * m], shared by the replicas */
    /* data parallelism / optimizer only */
    dp_rank *dpr;               /* [pp] */
    sg_bar_t opt_barrier;
    /* context / expert parallelism */
    int tp, cp, ep, grp;        /* grp = tp x cp GPUs per rank and replica */
    ep_group *epg;              /* [pp * dp / ep] */
} E;

static int ran_once;

static size_t done_index(int kind, int stage, int mb)
{
    const schedule *s = E.in->sched;
    return ((size_t)kind * (size_t)s->nstages + (size_t)stage) * (size_t)s->m + (size_t)mb;
}

/* Ops whose completion satisfies a dependency on `op`: a backward
 * dependency is met by B or BW alike. */
static int is_done(const replica *rep, sched_op op)
{
    if (op.kind == OP_B || op.kind == OP_BW)
        return rep->done[done_index(OP_B, op.stage, op.mb)] || rep->done[done_index(OP_BW, op.stage, op.mb)];
    return rep->done[done_index(op.kind, op.stage, op.mb)];
}

/* The channel that carries pred's output, or NULL if it stays on its rank. */
static channel *channel_of(replica *rep, sched_op pred)
{
    channel *c = pred.kind == OP_F ? &rep->activation[pred.stage] : &rep->gradient[pred.stage];
    return c->used ? c : NULL;
}

/* Take the next message of channel c (waiting for it if it is still in
 * flight) and record its transfer. */
static void drain_one(const rank_state *rs, channel *c)
{
    double start_s, end_s;
    int mb = (int)(intptr_t)sgx_mailbox_get_timed(c->mailbox, &start_s, &end_s) - 1;
    c->arrived[mb] = 1;
    if (rs->record) {
        tl_xfer rec = {.start_s = start_s, .end_s = end_s, .bytes = c->bytes, .src_rank = c->src_rank,
                       .dst_rank = c->dst_rank, .stage = c->stage, .mb = mb, .kind = c->kind};
        timeline_add_xfer(E.tl, &rec);
    }
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
        c = channel_of(rs->rep, pred);
    if (c == NULL) {
        /* Same rank: ops run in list order, so pred is done or comes later. */
        rs->blocked_on_local = !is_done(rs->rep, pred);
        return !rs->blocked_on_local;
    }
    while (!c->arrived[pred.mb])
        drain_one(rs, c);
    return 1;
}

static void send_output(rank_state *rs, sched_op op)
{
    channel *c = NULL;
    if (op.kind == OP_F)
        c = &rs->rep->activation[op.stage];
    else if (op.kind == OP_B || op.kind == OP_BW)
        c = &rs->rep->gradient[op.stage];
    if (c == NULL || !c->used)
        return;
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
    if (!rs->record)
        return;
    tl_op rec = {.start_s = start_s, .end_s = end_s, .rank = rs->rank, .stage = op.stage, .mb = op.mb,
                 .kind = (uint8_t)kind};
    timeline_add_op(E.tl, &rec);
}

/* ---- tensor parallelism ------------------------------------------------------ */

/* ref_s reference seconds of compute on rs's GPUs: on its one GPU, or on
 * every GPU of its tp group at once (each its share).  When the group's
 * GPUs run the share in the same time (same speed, the usual case) one
 * execution on the first stands for all: a GPU belongs to one group and
 * only its group's compute actor executes on it, so the others would run
 * uncontended and end at the same instant (measured: 512 GPUs at tp = 8,
 * 25-50 % less wall time, the same iteration to the last digit). */
static void group_execute(rank_state *rs, double ref_s)
{
    if (rs->tp <= 1) {
        sg_actor_execute(ref_s * rs->flops_per_ref_s);
        E.events++;
        return;
    }
    double share = E.par->split_compute ? 1.0 / rs->tp : 1.0;
    if (rs->tp_same_time) {
        sg_actor_execute(ref_s * share * rs->flops_per_ref_s);
        E.events++;
        return;
    }
    sg_exec_t ex[rs->tp];
    for (int t = 0; t < rs->tp; t++) {
        ex[t] = sg_actor_exec_init(ref_s * share * rs->tp_flops_per_ref_s[t]);
        sg_exec_set_host(ex[t], rs->tp_host[t]);
        sg_exec_start(ex[t]);
    }
    for (int t = 0; t < rs->tp; t++)
        sg_exec_wait(ex[t]);
    E.events += rs->tp;
}

/* The op's tensor-parallel collectives on the group's ring (header). */
static void tp_collectives(rank_state *rs, sched_op op)
{
    if (op.kind != OP_F && op.kind != OP_B && op.kind != OP_BW)
        return;
    const stage_cost *c = &E.in->wl->stage[op.stage];
    int count = TP_COLLS_PER_LAYER * (c->layers > 0 ? c->layers : 1);
    double bytes = c->boundary_bytes;
    if (bytes <= 0)
        return;
    coll_kind kinds_ar[] = {COLL_ALLREDUCE}, kinds_sp[] = {COLL_REDUCE_SCATTER, COLL_ALLGATHER};
    const coll_kind *kinds = E.par->sequence_parallel ? kinds_sp : kinds_ar;
    int nkinds = E.par->sequence_parallel ? 2 : 1;
    coll_mode mode = E.par->stepwise_collectives ? COLL_STEPWISE : COLL_FUSED;
    for (int k = 0; k < nkinds; k++) {
        double start_s = simgrid_get_clock();
        E.events += coll_run(kinds[k], &rs->tp_ring, bytes, count, mode);
        if (rs->record) {
            tl_coll rec = {.start_s = start_s, .end_s = simgrid_get_clock(), .bytes = bytes * count, .rank = rs->rank,
                           .replica = rs->rep->index, .stage = op.stage, .mb = op.mb, .count = count,
                           .kind = (uint8_t)(kinds[k] == COLL_ALLREDUCE        ? TLC_TP_ALLREDUCE
                                             : kinds[k] == COLL_REDUCE_SCATTER ? TLC_TP_REDUCE_SCATTER
                                                                               : TLC_TP_ALLGATHER),
                           .op_kind = (uint8_t)op.kind};
            timeline_add_coll(E.tl, &rec);
        }
    }
}

/* ---- data parallelism: buckets, reducers, optimizer ------------------------- */

static void dp_signal(dp_rank *dr, int bucket)
{
    dr->ready[bucket]++;
    if (dr->waiting == bucket && dr->ready[bucket] >= E.nrep) {
        dr->waiting = -1;
        sg_sem_release(dr->wake);
    }
}

static void dp_finished(dp_rank *dr)
{
    if (dr->op_first_bucket == NULL)   /* no overlap: every bucket is ready now */
        for (int b = 0; b < dr->nbuckets; b++)
            dp_signal(dr, b);
    dr->finished++;
    if (dr->waiting == dr->nbuckets && dr->finished >= E.nrep) {
        dr->waiting = -1;
        sg_sem_release(dr->wake);
    }
}

static void reducer_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    dp_rank *dr = sg_actor_self_get_data();
    for (int b = 0; b < dr->nbuckets; b++) {
        while (dr->ready[b] < E.nrep) {
            dr->waiting = b;
            sg_sem_acquire(dr->wake);
        }
        double start_s = simgrid_get_clock();
        if (dr->use_hier)
            E.events += coll_hier_allreduce(&dr->hier, dr->bucket_bytes[b], COLL_FUSED);
        else
            E.events += coll_run(COLL_ALLREDUCE, &dr->flat, dr->bucket_bytes[b], 1, COLL_FUSED);
        tl_coll rec = {.start_s = start_s, .end_s = simgrid_get_clock(), .bytes = dr->bucket_bytes[b],
                       .rank = dr->rank, .replica = -1, .stage = dr->bucket_stage[b], .mb = -1, .count = b,
                       .kind = TLC_DP_ALLREDUCE};
        timeline_add_coll(E.tl, &rec);
    }
    while (dr->finished < E.nrep) {
        dr->waiting = dr->nbuckets;
        sg_sem_acquire(dr->wake);
    }
    sg_barrier_wait(E.opt_barrier);
    if (E.par->optimizer_s != NULL && E.par->optimizer_s[dr->rank] > 0) {
        double start_s = simgrid_get_clock();
        sg_actor_sleep_for(E.par->optimizer_s[dr->rank]);
        tl_coll rec = {.start_s = start_s, .end_s = simgrid_get_clock(), .rank = dr->rank, .replica = -1,
                       .stage = -1, .mb = -1, .kind = TLC_OPTIMIZER};
        timeline_add_coll(E.tl, &rec);
    }
}

/* The op at index i of rs's list: its compute, its stage's buckets released
 * piece by piece when it is that stage's last weight-gradient op (overlap). */
static void run_compute(rank_state *rs, int i, double ref_s)
{
    const dp_rank *dr = E.dpr ? &E.dpr[rs->rank] : NULL;
    int nb = dr && dr->op_first_bucket ? dr->op_nbuckets[i] : 0;
    if (nb == 0) {
        group_execute(rs, ref_s);
        return;
    }
    for (int j = 0; j < nb; j++) {
        group_execute(rs, ref_s / nb);
        dp_signal(&E.dpr[rs->rank], dr->op_first_bucket[i] + j);
    }
}

/* A recompute op of ref_s reference seconds, before op. */
static void recompute(rank_state *rs, sched_op op, int kind, double ref_s)
{
    double start_s = simgrid_get_clock();
    group_execute(rs, ref_s);
    record_op(rs, op, kind, start_s, simgrid_get_clock());
}

/* Before op runs: its activation back from host memory, then its recompute. */
static void plan_before(rank_state *rs, sched_op op)
{
    size_t item = item_of(op.stage, op.mb);
    const act_flow *f = &E.flow[item];
    replica *rep = rs->rep;
    if (op.kind == OP_B || op.kind == OP_BW) {
        if (f->offload_bytes > 0 && !rep->reloaded[item]) {
            double start_s = simgrid_get_clock();
            rs->waiting_reload = (int)item;
            while (!rep->reloaded[item])
                sg_sem_acquire(rs->wake);
            tl_stall rec = {.start_s = start_s, .end_s = simgrid_get_clock(), .rank = rs->rank, .stage = op.stage,
                            .mb = op.mb};
            if (rs->record)
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
    replica *rep = rs->rep;
    for (int n = 0; n < ce->total; n++) {
        sg_sem_acquire(ce->work);
        int item = ce->queue[ce->head++];
        if (ce->dir == COPY_H2D) {
            while (!rep->offloaded[item]) {
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
        tl_copy rec = {.start_s = start_s, .end_s = end_s, .bytes = bytes, .rank = rs->rank, .stage = item / m,
                       .mb = item % m, .dir = (uint8_t)ce->dir};
        if (rs->record)
            timeline_add_copy(E.tl, &rec);
        if (ce->dir == COPY_D2H) {
            rep->offloaded[item] = 1;
            if (rs->h2d.waiting_item == item) {
                rs->h2d.waiting_item = -1;
                sg_sem_release(rs->h2d.wake);
            }
        } else {
            rep->reloaded[item] = 1;
            if (rs->waiting_reload == item) {
                rs->waiting_reload = -1;
                sg_sem_release(rs->wake);
            }
        }
    }
}

/* Become the permanent receiver of every channel into this rank, before
 * anything is sent: all compute actors run this at time 0, and nothing is
 * sent before an op has executed. */
static void own_mailboxes(const rank_state *rs)
{
    const replica *rep = rs->rep;
    for (int stage = 0; stage < E.in->sched->nstages; stage++) {
        const channel *pair[2] = {&rep->activation[stage], &rep->gradient[stage]};
        for (int k = 0; k < 2; k++)
            if (pair[k]->used && pair[k]->dst == rs)
                sg_mailbox_set_receiver(pair[k]->name);
    }
}

/* The op's context-parallel key/value exchange (header). */
static void cp_exchange(rank_state *rs, sched_op op)
{
    const stage_cost *c = &E.in->wl->stage[op.stage];
    if (op.kind == OP_W || c->cp_kv_bytes <= 0)
        return;
    int count = c->attn_layers > 0 ? c->attn_layers : 1;
    double bytes = E.cp * c->cp_kv_bytes * (op.kind == OP_F ? 1.0 : 2.0);
    coll_mode mode = E.par->stepwise_collectives ? COLL_STEPWISE : COLL_FUSED;
    double start_s = simgrid_get_clock();
    E.events += coll_run(COLL_ALLGATHER, &rs->cp_ring, bytes, count, mode);
    if (rs->record) {
        tl_coll rec = {.start_s = start_s, .end_s = simgrid_get_clock(), .bytes = c->cp_kv_bytes * count, .rank = rs->rank,
                       .replica = rs->rep->index, .stage = op.stage, .mb = op.mb, .count = count,
                       .kind = TLC_CP_KV, .op_kind = (uint8_t)op.kind};
        timeline_add_coll(E.tl, &rec);
    }
}

/* All-to-alls of op: 2 per MoE layer in F, B and BW. */
static int a2a_count(sched_op op)
{
    const stage_cost *c = &E.in->wl->stage[op.stage];
    if (op.kind == OP_W || c->moe_layers <= 0 || c->a2a_bytes <= 0)
        return 0;
    return 2 * c->moe_layers;
}

static sg_host_t member_host(int rep_index, int rank, int i)
{
    const rank_state *rs = &E.rep[rep_index].ranks[rank];
    return rs->tp_host ? rs->tp_host[i] : rs->host;
}

/* The op's expert-parallel all-to-alls among rs's group (header). */
static void ep_alltoall(rank_state *rs, sched_op op)
{
    int count = a2a_count(op);
    if (count == 0 || rs->ep == NULL)
        return;
    ep_group *g = rs->ep;
    const stage_cost *c = &E.in->wl->stage[op.stage];
    double start_s = simgrid_get_clock();
    sg_barrier_wait(g->bar);
    if (rs->rep->index == g->first) {
        double pair_bytes = count * c->a2a_bytes / (E.ep - 1);
        size_t n = (size_t)E.grp * (size_t)E.ep * (size_t)(E.ep - 1), k = 0;
        sg_comm_t *comms = pg_xmalloc(n * sizeof *comms);
        for (int i = 0; i < E.grp; i++)
            for (int a = g->first; a < g->first + E.ep; a++)
                for (int b = g->first; b < g->first + E.ep; b++)
                    if (a != b)
                        comms[k++] = sgx_sendto_async(member_host(a, rs->rank, i), member_host(b, rs->rank, i),
                                                      pair_bytes);
        sg_comm_wait_all(comms, k);
        free(comms);
        E.events += (long)k;
        if (count > 1)
            sg_actor_sleep_for((count - 1) * g->latency_s);
    }
    sg_barrier_wait(g->bar);
    if (rs->record) {
        tl_coll rec = {.start_s = start_s, .end_s = simgrid_get_clock(), .bytes = c->a2a_bytes * count, .rank = rs->rank,
                       .replica = rs->rep->index, .stage = op.stage, .mb = op.mb, .count = count,
                       .kind = TLC_EP_ALLTOALL, .op_kind = (uint8_t)op.kind};
        timeline_add_coll(E.tl, &rec);
    }
}

/* An op's communication after its compute: tp collectives, cp exchange and,
 * when with_a2a, its all-to-alls. */
static void op_communication(rank_state *rs, sched_op op, int with_a2a)
{
    if (!E.par->tp_comm)
        return;
    if (E.tp > 1)
        tp_collectives(rs, op);
    if (E.cp > 1)
        cp_exchange(rs, op);
    if (with_a2a && E.ep > 1)
        ep_alltoall(rs, op);
}

/* A helper actor running the first op of an overlapped pair's all-to-alls. */
typedef struct pair_job {
    rank_state *rs;
    sched_op op;
    sg_sem_t done;
} pair_job;

static void pair_a2a_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    pair_job *pj = sg_actor_self_get_data();
    ep_alltoall(pj->rs, pj->op);
    sg_sem_release(pj->done);
}

static void finish_op(rank_state *rs, sched_op op, double start_s, double end_s)
{
    rs->last_end_s = end_s;
    if (rs->record) {
        tl_op rec = {.start_s = start_s, .end_s = end_s, .rank = rs->rank, .stage = op.stage, .mb = op.mb,
                     .kind = op.kind};
        timeline_add_op(E.tl, &rec);
    }
}

/* Ops first and second (the next in the list) as an overlapped pair
 * (header); rs->next is left on second.  0 on deadlock. */
static int run_pair(rank_state *rs, sched_op first, sched_op second, double start_s)
{
    const stage_cost *c1 = &E.in->wl->stage[first.stage], *c2 = &E.in->wl->stage[second.stage];
    run_compute(rs, rs->next, actmem_op_ref_s(c1, first.kind));
    op_communication(rs, first, 0);
    double mid_s = simgrid_get_clock();
    rs->rep->done[done_index(first.kind, first.stage, first.mb)] = 1;
    finish_op(rs, first, start_s, mid_s);
    pair_job pj = {.rs = rs, .op = first, .done = sg_sem_init(0)};
    int async = E.ep > 1 && E.par->tp_comm && a2a_count(first) > 0 && rs->ep != NULL;
    if (async) {
        sg_actor_t a = sg_actor_init("pair-a2a", rs->host);
        sg_actor_set_data(a, &pj);
        sg_actor_start(a, pair_a2a_actor, 0, NULL);
    }
    rs->next++;
    if (!wait_for_input(rs, second)) {
        sg_sem_destroy(pj.done);
        return 0;
    }
    run_compute(rs, rs->next, actmem_op_ref_s(c2, second.kind));
    op_communication(rs, second, 0);
    if (async)
        sg_sem_acquire(pj.done);
    sg_sem_destroy(pj.done);
    send_output(rs, first);
    if (E.ep > 1 && E.par->tp_comm)
        ep_alltoall(rs, second);
    double end_s = simgrid_get_clock();
    rs->rep->done[done_index(second.kind, second.stage, second.mb)] = 1;
    finish_op(rs, second, mid_s, end_s);
    send_output(rs, second);
    return 1;
}

static void compute_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    rank_state *rs = sg_actor_self_get_data();
    own_mailboxes(rs);
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
        if (E.par == NULL) {
            sg_actor_execute(actmem_op_ref_s(cost, op.kind) * rs->flops_per_ref_s);
            E.events++;
        } else {
            if (rs->next == 0)
                rs->first_start_s = start_s;
            if (op.overlap_next && E.par->overlap_pairs && !E.plan && rs->next + 1 < s->nops[rs->rank]) {
                if (!run_pair(rs, op, ops[rs->next + 1], start_s))
                    return; /* deadlock: reported after the run */
                continue;
            }
            run_compute(rs, rs->next, actmem_op_ref_s(cost, op.kind));
            op_communication(rs, op, 1);
        }
        rs->rep->done[done_index(op.kind, op.stage, op.mb)] = 1;
        finish_op(rs, op, start_s, simgrid_get_clock());
        send_output(rs, op);
        if (E.plan && op.kind == OP_F && E.flow[item_of(op.stage, op.mb)].offload_bytes > 0)
            copy_push(&rs->d2h, (int)item_of(op.stage, op.mb));
    }
    if (E.dpr)
        dp_finished(&E.dpr[rs->rank]);
}

static void channel_setup(replica *rep, channel *c, int stage, xfer_kind kind, int src_stage_rank,
                          int dst_stage_rank)
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
    if (rep->index == 0)
        snprintf(c->name, sizeof c->name, "%s%d", kind == XFER_ACTIVATION ? "act" : "grad", stage);
    else
        snprintf(c->name, sizeof c->name, "%s%d.r%d", kind == XFER_ACTIVATION ? "act" : "grad", stage, rep->index);
    c->mailbox = sg_mailbox_by_name(c->name);
    c->arrived = pg_xcalloc((size_t)m, 1);
    c->dst = &rep->ranks[dst_stage_rank];
}

static void describe_blocked(sim_outcome *out)
{
    const schedule *s = E.in->sched;
    strbuf sb;
    sb_init(&sb);
    char op_text[64], pred_text[64];
    for (int r = 0; r < s->pp; r++) {
        rank_state *rs = &E.rep[0].ranks[r];
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

static void dp_free(void)
{
    const schedule *s = E.in->sched;
    for (int r = 0; E.dpr && r < s->pp; r++) {
        dp_rank *dr = &E.dpr[r];
        if (dr->wake)
            sg_sem_destroy(dr->wake);
        free(dr->bucket_bytes);
        free(dr->bucket_stage);
        free(dr->ready);
        free(dr->op_first_bucket);
        free(dr->op_nbuckets);
        coll_rings_free(&dr->flat);
        coll_hier_free(&dr->hier);
    }
    free(E.dpr);
    if (E.opt_barrier)
        sg_barrier_destroy(E.opt_barrier);
}

static void engine_free(void)
{
    const schedule *s = E.in->sched;
    for (int d = 0; d < E.nrep; d++) {
        replica *rep = &E.rep[d];
        if (rep->ranks == NULL)
            continue;
        for (int st = 0; st < s->nstages; st++) {
            free(rep->activation[st].arrived);
            free(rep->gradient[st].arrived);
        }
        for (int r = 0; r < s->pp; r++) {
            rank_state *rs = &rep->ranks[r];
            if (rs->wake)
                sg_sem_destroy(rs->wake);
            if (E.plan && rs->d2h.work) {   /* NULL on ranks plan_setup did not reach */
                sg_sem_destroy(rs->d2h.work);
                sg_sem_destroy(rs->h2d.work);
                sg_sem_destroy(rs->h2d.wake);
            }
            if (E.plan) {
                free(rs->d2h.queue);
                free(rs->h2d.queue);
                if (rs->owns_triggers) {
                    free(rs->trig_first);
                    free(rs->trig_items);
                }
            }
            free(rs->tp_host);
            free(rs->tp_flops_per_ref_s);
            coll_rings_free(&rs->tp_ring);
            coll_rings_free(&rs->cp_ring);
        }
        free(rep->offloaded);
        free(rep->reloaded);
        free(rep->activation);
        free(rep->gradient);
        free(rep->ranks);
        free(rep->done);
    }
    dp_free();
    for (int i = 0; E.epg && i < E.in->sched->pp * (E.nrep / E.ep); i++)
        sg_barrier_destroy(E.epg[i].bar);
    free(E.epg);
    free(E.flow);
    free(E.rep);
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
    return actmem_op_ref_s(&E.in->wl->stage[op.stage], (op_kind)op.kind) * rs->flops_per_ref_s /
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

/* Copy engines, flows and triggers; 0 or PG_EXIT_INPUT (no host memory).
 * Replica 0 computes the flows' filter and the triggers; the other replicas
 * run the same lists on the same kind of GPUs and share them. */
static int plan_setup(const sim_input *in, pg_status *st)
{
    const schedule *s = in->sched;
    size_t n = (size_t)s->nstages * (size_t)s->m;
    E.plan = in->plan;
    E.flow = pg_xcalloc(n + 1, sizeof *E.flow);
    for (int stage = 0; stage < s->nstages; stage++)
        for (int mb = 0; mb < s->m; mb++)
            act_flow_of(in->wl, in->plan, stage, mb, &E.flow[item_of(stage, mb)]);
    for (int d = 0; d < E.nrep; d++) {
        replica *rep = &E.rep[d];
        rep->offloaded = pg_xcalloc(n + 1, 1);
        rep->reloaded = pg_xcalloc(n + 1, 1);
        for (int r = 0; r < s->pp; r++) {
            rank_state *rs = &rep->ranks[r], *first = &E.rep[0].ranks[r];
            rs->waiting_reload = -1;
            rs->d2h = (copy_engine){.dir = COPY_D2H, .work = sg_sem_init(0), .waiting_item = -1, .rs = rs};
            rs->h2d = (copy_engine){.dir = COPY_H2D, .work = sg_sem_init(0), .wake = sg_sem_init(0),
                                    .waiting_item = -1, .rs = rs};
            if (in->plan->noffload > 0) {
                const char *host = sg_host_get_name(rs->host);
                int cpu_index = -1;
                for (int g = 0; g < in->plat->ngpus; g++)
                    if (strcmp(in->plat->gpu[g].host, host) == 0)
                        cpu_index = in->plat->gpu[g].cpu_index;
                if (cpu_index < 0 || (rs->cpu = sg_host_by_name(in->plat->cpu_host[cpu_index])) == NULL)
                    return pg_fail(st, PG_EXIT_INPUT,
                                   "%s: offload needs a host-memory host (kind=cpu) on the node of GPU '%s'",
                                   in->plat->xml_path, host);
                if (d == 0) {
                    plan_triggers(rs);
                    rs->owns_triggers = 1;
                }
            } else if (d == 0) {
                rs->trig_first = pg_xcalloc((size_t)s->nops[r] + 2, sizeof *rs->trig_first);
                rs->owns_triggers = 1;
            }
            if (d > 0) {
                rs->trig_first = first->trig_first;
                rs->trig_items = first->trig_items;
                rs->d2h.total = first->d2h.total;
                rs->h2d.total = first->h2d.total;
            }
            rs->d2h.queue = pg_xcalloc((size_t)rs->d2h.total + 1, sizeof *rs->d2h.queue);
            rs->h2d.queue = pg_xcalloc((size_t)rs->h2d.total + 1, sizeof *rs->h2d.queue);
        }
    }
    return 0;
}

static int gpu_node(const sim_input *in, int g)
{
    return in->plat->gpu[g].node;
}

/* Buckets of rank r, in the order they become ready (header). */
static void dp_buckets(const sim_input *in, dp_rank *dr)
{
    const schedule *s = in->sched;
    const sim_parallel *par = in->par;
    int r = dr->rank, nops = s->nops[r];
    const sched_op *ops = s->ops[r];
    /* The last weight-gradient op of each stage on this rank. */
    int *last = pg_xmalloc((size_t)s->nstages * sizeof *last);
    for (int st = 0; st < s->nstages; st++)
        last[st] = -1;
    for (int i = 0; i < nops; i++)
        if (ops[i].kind == OP_W || ops[i].kind == OP_BW)
            last[ops[i].stage] = i;
    dr->op_nbuckets = pg_xcalloc((size_t)nops + 1, sizeof *dr->op_nbuckets);
    dr->op_first_bucket = pg_xcalloc((size_t)nops + 1, sizeof *dr->op_first_bucket);
    double share = par->split_compute ? 1.0 / par->tp : 1.0;
    for (int i = 0; i < nops; i++) {
        int st = ops[i].stage;
        if (last[st] != i)
            continue;
        double bytes = in->wl->stage[st].param_count * share * par->grad_bytes_per_param;
        if (bytes <= 0)
            continue;
        int nb = 1;
        if (par->bucket_bytes > 0) {
            double q = bytes / par->bucket_bytes;   /* buckets of at most bucket_bytes */
            nb = (int)q < q ? (int)q + 1 : (int)q;
            if (nb < 1)
                nb = 1;
        }
        dr->bucket_bytes = pg_xrealloc(dr->bucket_bytes, (size_t)(dr->nbuckets + nb) * sizeof *dr->bucket_bytes);
        dr->bucket_stage = pg_xrealloc(dr->bucket_stage, (size_t)(dr->nbuckets + nb) * sizeof *dr->bucket_stage);
        dr->op_first_bucket[i] = dr->nbuckets;
        dr->op_nbuckets[i] = nb;
        for (int j = 0; j < nb; j++) {
            dr->bucket_bytes[dr->nbuckets + j] = bytes / nb;
            dr->bucket_stage[dr->nbuckets + j] = st;
        }
        dr->nbuckets += nb;
    }
    free(last);
    dr->ready = pg_xcalloc((size_t)dr->nbuckets + 1, sizeof *dr->ready);
    if (!par->overlap) {
        free(dr->op_first_bucket);
        free(dr->op_nbuckets);
        dr->op_first_bucket = dr->op_nbuckets = NULL;
    }
}

/* Expert-parallel groups: ep consecutive replicas at each rank (header). */
static void ep_setup(const sim_input *in)
{
    int pp = in->sched->pp, groups = E.nrep / E.ep;
    E.epg = pg_xcalloc((size_t)pp * (size_t)groups, sizeof *E.epg);
    for (int r = 0; r < pp; r++)
        for (int k = 0; k < groups; k++) {
            ep_group *g = &E.epg[(size_t)r * groups + k];
            g->first = k * E.ep;
            g->bar = sg_barrier_init((unsigned)E.ep);
            for (int a = g->first; a < g->first + E.ep; a++) {
                double lat = sg_host_get_route_latency(member_host(g->first, r, 0), member_host(a, r, 0));
                if (a != g->first && lat > g->latency_s)
                    g->latency_s = lat;
                E.rep[a].ranks[r].ep = g;
            }
        }
}

/* Reducers: buckets, the tp groups' rings (flat or hierarchical). */
static void dp_setup(const sim_input *in)
{
    const schedule *s = in->sched;
    const sim_parallel *par = in->par;
    int tp = E.grp, dp = par->dp;
    E.dpr = pg_xcalloc((size_t)s->pp, sizeof *E.dpr);
    E.opt_barrier = sg_barrier_init((unsigned)s->pp);
    sg_host_t *hosts = pg_xmalloc((size_t)dp * sizeof *hosts);
    int *node = pg_xmalloc((size_t)dp * sizeof *node);
    for (int r = 0; r < s->pp; r++) {
        dp_rank *dr = &E.dpr[r];
        dr->rank = r;
        dr->waiting = -1;
        dr->wake = sg_sem_init(0);
        dr->host = E.rep[0].ranks[r].host;
        if (dp > 1)
            dp_buckets(in, dr);
        else
            dr->ready = pg_xcalloc(1, sizeof *dr->ready);
        int hier = dp > 1 && par->algo != DP_ALGO_RING;
        for (int t = 0; t < tp && dp > 1; t++) {
            for (int d = 0; d < dp; d++) {
                int g = par->gpu[((size_t)r * dp + d) * tp + t];
                hosts[d] = sg_host_by_name(in->plat->gpu[g].host);
                node[d] = gpu_node(in, g);
            }
            coll_rings_add(&dr->flat, hosts, dp);
            if (hier && !coll_hier_add(&dr->hier, hosts, node, dp))
                hier = 0;
        }
        dr->use_hier = hier && dr->hier.local > 0;
    }
    free(hosts);
    free(node);
}

int sim_run(const sim_input *in, timeline *tl, sim_outcome *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    if (ran_once)
        return pg_fail(st, PG_EXIT_INTERNAL, "sim_run: SimGrid runs one simulation per process");
    ran_once = 1;

    const schedule *s = in->sched;
    const sim_parallel *par = in->par;
    int tp_degree = par ? par->tp : 1, dp = par ? par->dp : 1;
    int cp = par && par->cp > 1 ? par->cp : 1, ep = par && par->ep > 1 ? par->ep : 1;
    int tp = tp_degree * cp;   /* the GPUs of a rank's group: tp x cp */
    if (tp < 1 || dp < 1 || (par && (tp > 1 || dp > 1) && par->gpu == NULL))
        return pg_fail(st, PG_EXIT_INTERNAL, "sim_run: tp = %d, dp = %d without a GPU map", tp, dp);
    if (dp % ep != 0)
        return pg_fail(st, PG_EXIT_INPUT, "key 'ep': the simulator takes expert-parallel groups from the data-parallel "
                       "replicas: ep = %d must divide dp = %d", ep, dp);
    simgrid_setup();
    char err[PG_MSG_MAX - 64];
    if (sgx_load_platform(in->plat->xml_path, err, sizeof err) != 0)
        return pg_fail(st, PG_EXIT_INPUT, "%s: SimGrid refused the platform: %s", in->plat->xml_path, err);
    int route_rc = sim_check_routes(in, st);   /* a missing route would abort at the first send */
    if (route_rc != 0)
        return route_rc;

    E.in = in;
    E.par = par;
    E.tl = tl;
    E.tp = tp_degree;
    E.cp = cp;
    E.ep = ep;
    E.grp = tp;
    E.nrep = dp;
    E.rep = pg_xcalloc((size_t)dp, sizeof *E.rep);
    for (int d = 0; d < dp; d++) {
        replica *rep = &E.rep[d];
        rep->index = d;
        rep->ranks = pg_xcalloc((size_t)s->pp, sizeof *rep->ranks);
        rep->activation = pg_xcalloc((size_t)s->nstages, sizeof *rep->activation);
        rep->gradient = pg_xcalloc((size_t)s->nstages, sizeof *rep->gradient);
        rep->done = pg_xcalloc((size_t)OP_KIND_COUNT * (size_t)s->nstages * (size_t)s->m, 1);
        for (int r = 0; r < s->pp; r++) {
            rank_state *rs = &rep->ranks[r];
            int g0 = par && par->gpu ? par->gpu[((size_t)r * dp + d) * tp] : in->rank_gpu[r];
            rs->rank = r;
            rs->rep = rep;
            rs->record = d == 0;
            rs->tp = tp;
            rs->wake = sg_sem_init(0);
            for (int t = 0; t < tp; t++) {
                int g = par && par->gpu ? par->gpu[((size_t)r * dp + d) * tp + t] : g0;
                sg_host_t h = sg_host_by_name(in->plat->gpu[g].host);
                if (h == NULL) {
                    engine_free();
                    return pg_fail(st, PG_EXIT_INPUT, "%s: no host '%s' for rank %d", in->plat->xml_path,
                                   in->plat->gpu[g].host, r);
                }
                double fl = in->wl->ref_speed_flops > 0 ? in->wl->ref_speed_flops : sg_host_get_speed(h);
                if (t == 0) {
                    rs->host = h;
                    rs->flops_per_ref_s = fl;
                }
                if (tp > 1) {
                    if (rs->tp_host == NULL) {
                        rs->tp_host = pg_xcalloc((size_t)tp, sizeof *rs->tp_host);
                        rs->tp_flops_per_ref_s = pg_xcalloc((size_t)tp, sizeof *rs->tp_flops_per_ref_s);
                    }
                    rs->tp_host[t] = h;
                    rs->tp_flops_per_ref_s[t] = fl;
                }
            }
            if (tp > 1) {
                for (int c = 0; c < cp && tp_degree > 1; c++)
                    coll_rings_add(&rs->tp_ring, rs->tp_host + (size_t)c * tp_degree, tp_degree);
                for (int t = 0; t < tp_degree && cp > 1; t++) {
                    sg_host_t ring[cp];
                    for (int c = 0; c < cp; c++)
                        ring[c] = rs->tp_host[(size_t)c * tp_degree + t];
                    coll_rings_add(&rs->cp_ring, ring, cp);
                }
                rs->tp_same_time = 1;
                for (int t = 1; t < tp; t++)
                    if (rs->tp_flops_per_ref_s[t] / sg_host_get_speed(rs->tp_host[t]) !=
                        rs->flops_per_ref_s / sg_host_get_speed(rs->host))
                        rs->tp_same_time = 0;
            }
        }
        for (int stage = 0; stage < s->nstages; stage++) {
            int here = s->stage_rank[stage];
            if (stage + 1 < s->nstages)
                channel_setup(rep, &rep->activation[stage], stage, XFER_ACTIVATION, here, s->stage_rank[stage + 1]);
            if (stage > 0)
                channel_setup(rep, &rep->gradient[stage], stage, XFER_GRADIENT, here, s->stage_rank[stage - 1]);
        }
    }
    if (!plan_is_empty(in->plan)) {
        int rc = plan_setup(in, st);
        if (rc != 0) {
            engine_free();
            return rc;
        }
    }
    if (par && (dp > 1 || par->optimizer_s != NULL))
        dp_setup(in);
    if (ep > 1)
        ep_setup(in);

    char name[MAILBOX_NAME_MAX + 16];
    for (int d = 0; d < dp && E.plan; d++) {
        for (int r = 0; r < s->pp; r++) {
            rank_state *rs = &E.rep[d].ranks[r];
            copy_engine *engines[2] = {&rs->d2h, &rs->h2d};
            for (int k = 0; k < 2; k++) {
                if (engines[k]->total == 0)
                    continue;
                if (d == 0)
                    snprintf(name, sizeof name, "%s%d", k == 0 ? "d2h" : "h2d", r);
                else
                    snprintf(name, sizeof name, "%s%d.r%d", k == 0 ? "d2h" : "h2d", r, d);
                sg_actor_t a = sg_actor_init(name, rs->host);
                sg_actor_set_data(a, engines[k]);
                sg_actor_start(a, copy_actor, 0, NULL);
            }
        }
    }
    for (int d = 0; d < dp; d++) {
        for (int r = 0; r < s->pp; r++) {
            if (d == 0)
                snprintf(name, sizeof name, "rank%d", r);
            else
                snprintf(name, sizeof name, "rank%d.r%d", r, d);
            sg_actor_t a = sg_actor_init(name, E.rep[d].ranks[r].host);
            sg_actor_set_data(a, &E.rep[d].ranks[r]);
            sg_actor_start(a, compute_actor, 0, NULL);
        }
    }
    for (int r = 0; E.dpr && r < s->pp; r++) {
        snprintf(name, sizeof name, "reduce%d", r);
        sg_actor_t a = sg_actor_init(name, E.dpr[r].host);
        sg_actor_set_data(a, &E.dpr[r]);
        sg_actor_start(a, reducer_actor, 0, NULL);
    }

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    simgrid_run();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;

    out->ops_total = sched_total_ops(s);
    for (int r = 0; r < s->pp; r++)
        out->ops_done += E.rep[0].ranks[r].next;
    out->events = E.events;
    out->completed = out->ops_done == out->ops_total;
    for (int d = 0; par && d < dp && out->completed; d++) {
        tl_coll rec = {.rank = -1, .replica = d, .stage = -1, .mb = -1, .kind = TLC_PIPELINE};
        int any = 0;
        for (int r = 0; r < s->pp; r++) {
            const rank_state *rs = &E.rep[d].ranks[r];
            if (s->nops[r] == 0)
                continue;
            if (!any++ || rs->first_start_s < rec.start_s)
                rec.start_s = rs->first_start_s;
            if (rs->last_end_s > rec.end_s)
                rec.end_s = rs->last_end_s;
        }
        timeline_add_coll(tl, &rec);
    }
    int rc = 0;
    if (!out->completed) {
        describe_blocked(out);
        rc = pg_fail(st, PG_EXIT_DEADLOCK, "deadlock after %ld of %ld ops: %s", out->ops_done, out->ops_total,
                     out->blocked);
    }
    engine_free();
    return rc;
}
