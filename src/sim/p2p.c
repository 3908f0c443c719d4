/* p2p.c: the pipeline's point-to-point channels (engine_internal.h).
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

 */
#include "sim/engine_internal.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(pg_engine_p2p, pg_engine, "stage-boundary channels");

size_t eng_done_index(int kind, int stage, int mb)
{
    const schedule *s = eng.in->sched;
    return ((size_t)kind * (size_t)s->nstages + (size_t)stage) * (size_t)s->m + (size_t)mb;
}

/* Ops whose completion satisfies a dependency on `op`: a backward
 * dependency is met by B or BW alike. */
int eng_is_done(const replica *rep, sched_op op)
{
    if (op.kind == OP_B || op.kind == OP_BW)
        return rep->done[eng_done_index(OP_B, op.stage, op.mb)] || rep->done[eng_done_index(OP_BW, op.stage, op.mb)];
    return rep->done[eng_done_index(op.kind, op.stage, op.mb)];
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
    XBT_DEBUG("%s: mb %d from rank %d to rank %d [%.9f, %.9f]", c->name, mb, c->src_rank, c->dst_rank, start_s,
              end_s);
    if (rs->record) {
        tl_xfer rec = {.start_s = start_s, .end_s = end_s, .bytes = c->bytes, .src_rank = c->src_rank,
                       .dst_rank = c->dst_rank, .stage = c->stage, .mb = mb, .kind = c->kind};
        timeline_add_xfer(eng.tl, &rec);
    }
}

/* Block until op's input is available; 0 if it never will be. */
int eng_wait_for_input(rank_state *rs, sched_op op)
{
    sched_op pred;
    if (!sched_pred(eng.in->sched, op, &pred))
        return 1;
    rs->blocked_pred = pred;
    channel *c = NULL;
    if (eng.in->sched->stage_rank[pred.stage] != rs->rank)
        c = channel_of(rs->rep, pred);
    if (c == NULL) {
        /* Same rank: ops run in list order, so pred is done or comes later. */
        rs->blocked_on_local = !eng_is_done(rs->rep, pred);
        return !rs->blocked_on_local;
    }
    while (!c->arrived[pred.mb])
        drain_one(rs, c);
    return 1;
}

void eng_send_output(rank_state *rs, sched_op op)
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
    eng.events++;
}

/* Become the permanent receiver of every channel into this rank, before
 * anything is sent: all compute actors run this at time 0, and nothing is
 * sent before an op has executed. */
void eng_own_mailboxes(const rank_state *rs)
{
    const replica *rep = rs->rep;
    for (int stage = 0; stage < eng.in->sched->nstages; stage++) {
        const channel *pair[2] = {&rep->activation[stage], &rep->gradient[stage]};
        for (int k = 0; k < 2; k++)
            if (pair[k]->used && pair[k]->dst == rs)
                sg_mailbox_set_receiver(pair[k]->name);
    }
}

void eng_channel_setup(replica *rep, channel *c, int stage, xfer_kind kind, int src_stage_rank,
                          int dst_stage_rank)
{
    const sim_input *in = eng.in;
    int m = in->sched->m;
    c->used = src_stage_rank != dst_stage_rank;
    if (!c->used)
        return;
    c->stage = stage;
    c->kind = kind;
    c->src_rank = src_stage_rank;
    c->dst_rank = dst_stage_rank;
    c->bytes = in->zero_byte_messages ? 0.0 : workload_p2p_bytes(in->wl, stage, in->par ? in->par->tp : 1);
    if (rep->index == 0)
        snprintf(c->name, sizeof c->name, "%s%d", kind == XFER_ACTIVATION ? "act" : "grad", stage);
    else
        snprintf(c->name, sizeof c->name, "%s%d.r%d", kind == XFER_ACTIVATION ? "act" : "grad", stage, rep->index);
    c->mailbox = sg_mailbox_by_name(c->name);
    c->arrived = pg_xcalloc((size_t)m, 1);
    c->dst = &rep->ranks[dst_stage_rank];
}
