/* eventreplay.c: the replay without actors, for plain pipelines
 * (engine_internal.h; the decision and its measurements: docs/architecture.md).
 *
 * Scope.  sim_run takes this path when the run has no memory plan and no
 * tensor / data / context / expert parallelism (sim_input.par NULL, plan
 * empty): one GPU per rank, point-to-point channels only.  Everything else
 * runs on the actor replay (replay.c), which this one reproduces exactly
 * on its scope (tests/test_sim.c compares the two, record by record).
 *
 * Mechanism.  Nothing runs in an actor: an op is a SimGrid kernel timer at
 * now + its duration (t x flops_per_ref_s / the host's speed: a GPU runs one
 * op at a time, so an execution would take exactly that), and an op's output
 * is a one-sided transfer over the platform's route (sgshim.h's
 * sgx_transfer), so the CM02 network model and its contention are
 * SimGrid's, as in the actor replay.  A rank is a small state machine: when
 * it is idle and its next op's input is in (or needs none), the op starts;
 * when the op ends, its output transfer starts and the rank tries its next
 * op; when a transfer ends, its message is marked arrived and the receiving
 * rank tries its next op.  No actor context switch and no mailbox matching:
 * what the bare actor replay spends most of its time on.
 *
 * Deadlocks.  A rank whose next op waits for a message that never comes, or
 * for a predecessor later in its own list (it stops there, as the actor
 * replay's rank does), leaves ops undone when the event queue runs dry;
 * sim_run then names each blocked op (deadlock.c).
 */
#include "sim/engine_internal.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(pg_engine_events, pg_engine, "the replay without actors");

static void try_next(rank_state *rs);

/* A transfer's payload, in the pointer itself (no allocation per message):
 * 1 + (2 x stage + gradient) x m + mb. */
static void *message_of(const channel *c, int mb)
{
    size_t id = ((size_t)c->stage * 2 + (c->kind == XFER_GRADIENT)) * (size_t)eng.in->sched->m + (size_t)mb;
    return (void *)(uintptr_t)(id + 1);
}

static void on_arrival(void *arg, double start_s, double end_s)
{
    size_t id = (size_t)(uintptr_t)arg - 1, m = (size_t)eng.in->sched->m, boundary = id / m;
    int mb = (int)(id % m), stage = (int)(boundary / 2);
    channel *c = boundary % 2 ? &eng.rep[0].gradient[stage] : &eng.rep[0].activation[stage];
    c->arrived[mb] = 1;
    XBT_DEBUG("%s: mb %d from rank %d to rank %d [%.9f, %.9f]", c->name, mb, c->src_rank, c->dst_rank, start_s,
              end_s);
    if (c->dst->record) {
        tl_xfer rec = {.start_s = start_s, .end_s = end_s, .bytes = c->bytes, .src_rank = c->src_rank,
                       .dst_rank = c->dst_rank, .stage = c->stage, .mb = mb, .kind = c->kind};
        timeline_add_xfer(eng.tl, &rec);
    }
    try_next(c->dst);
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
    sgx_transfer(rs->host, c->dst->host, c->bytes, on_arrival, message_of(c, op.mb));
    eng.events++;
}

static void op_end(void *arg)
{
    rank_state *rs = arg;
    sched_op op = rs->running;
    rs->rep->done[eng_done_index(op.kind, op.stage, op.mb)] = 1;
    eng_finish_op(rs, op, rs->op_start_s, simgrid_get_clock());
    send_output(rs, op);
    rs->next++;
    rs->busy = 0;
    try_next(rs);
}

/* 1 if op's input is in; else 0, with what it waits for noted (deadlock
 * report) and, for a predecessor later in the rank's own list, the rank
 * stopped for good (as the actor replay's rank returns there). */
static int input_ready(rank_state *rs, sched_op op)
{
    sched_op pred;
    if (!sched_pred(eng.in->sched, op, &pred))
        return 1;
    rs->blocked_pred = pred;
    if (eng.in->sched->stage_rank[pred.stage] != rs->rank) {
        channel *c = pred.kind == OP_F ? &rs->rep->activation[pred.stage] : &rs->rep->gradient[pred.stage];
        if (c->used)
            return c->arrived[pred.mb];
    }
    rs->blocked_on_local = !eng_is_done(rs->rep, pred);
    rs->stopped = rs->blocked_on_local;
    return !rs->stopped;
}

static void try_next(rank_state *rs)
{
    const schedule *s = eng.in->sched;
    if (rs->busy || rs->stopped || rs->next >= s->nops[rs->rank])
        return;
    sched_op op = s->ops[rs->rank][rs->next];
    if (!input_ready(rs, op))
        return;
    rs->busy = 1;
    rs->running = op;
    rs->op_start_s = simgrid_get_clock();
    double seconds = actmem_op_ref_s(&eng.in->wl->stage[op.stage], op.kind) * rs->flops_per_ref_s /
                     sg_host_get_speed(rs->host);
    eng.events++;
    sgx_at(rs->op_start_s + seconds, op_end, rs);
}

static void start_all(void *arg)
{
    (void)arg;
    for (int r = 0; r < eng.in->sched->pp; r++)
        try_next(&eng.rep[0].ranks[r]);
}

int eng_events_eligible(const sim_input *in)
{
    return in->par == NULL && plan_is_empty(in->plan);
}

void eng_events_start(void)
{
    sgx_events_init();
    sgx_at(0.0, start_all, NULL);
}

void eng_events_free(void)
{
    sgx_events_free();
}
