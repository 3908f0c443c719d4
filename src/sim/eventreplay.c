/* eventreplay.c: the replay without actors (engine_internal.h; the
 * decision and its measurements: docs/architecture.md).
 *
 * Scope.  sim_run takes this path (sim.engine=auto) for every job: plain
 * pipelines, tp / cp groups with their
 * collectives, data-parallel buckets (ring, channel, mirror, block or
 * hierarchical rings, with or without overlap), the tied embedding's
 * all-reduce, the optimizer barrier and step, the distributed optimizer's
 * reduce-scatter and parameter gathers (overlapped with the forwards or
 * not), ZeRO-2/3 and FSDP's per-layer gathers and reduce-scatters (HSDP's
 * all-reduce across the shard groups), expert-parallel all-to-alls,
 * DualPipeV's overlapped pairs, Megatron's combined 1F1B steps, and memory
 * plans (copyengine.c's copy engines and streams as state machines, the
 * compute's reload and admission waits and recomputes as continuations).
 * The actor replay (replay.c) is the reference, which this one reproduces
 * exactly (tests/test_eventreplay.c record by record; tests/replay.sh the
 * whole report and the event count on every job kind).
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
 * With par: an op is its compute (one timer per piece: with dp.overlap the
 * stage's last weight-gradient op runs in as many pieces as its buckets,
 * each releasing one; eng_group_seconds is the group's time), then its
 * collectives one after the other (coll_start: the same one-sided transfers
 * and latency timers as coll_run, at the same dates), then its all-to-alls
 * (eng_ep_events_arrive: the group's barriers as arrival counts), then its
 * end.  Each rank's reducer is a state machine (eng_events_reducer, poked
 * when a bucket is ready, a rank finishes or a collective ends) that takes
 * the reducer actor's steps in its order (gradsync.c).
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
 * 1 + ((replica x nstages + stage) x 2 + gradient) x m + mb. */
static void *message_of(const rank_state *rs, const channel *c, int mb)
{
    size_t boundary = ((size_t)rs->rep->index * (size_t)eng.in->sched->nstages + (size_t)c->stage) * 2 +
                      (c->kind == XFER_GRADIENT);
    return (void *)(uintptr_t)(boundary * (size_t)eng.in->sched->m + (size_t)mb + 1);
}

static void on_arrival(void *arg, double start_s, double end_s)
{
    size_t id = (size_t)(uintptr_t)arg - 1, m = (size_t)eng.in->sched->m, boundary = id / m;
    size_t nstages = (size_t)eng.in->sched->nstages;
    int mb = (int)(id % m), stage = (int)(boundary / 2 % nstages), d = (int)(boundary / 2 / nstages);
    channel *c = boundary % 2 ? &eng.rep[d].gradient[stage] : &eng.rep[d].activation[stage];
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
    sgx_transfer(rs->host, c->dst->host, c->bytes, on_arrival, message_of(rs, c, op.mb));
    eng.events++;
}

/* The rank on to its next op (and its reducer told when it has run them all). */
static void advance(rank_state *rs)
{
    rs->next++;
    rs->busy = 0;
    rs->pair = 0;
    if (eng.dpr && rs->next == eng.in->sched->nops[rs->rank])
        eng_dp_finished(&eng.dpr[rs->rank]);
    try_next(rs);
}

/* ref_s reference seconds of compute on rs's GPU or group, then fn(rs):
 * eng_group_execute as a kernel timer, its duration and its event count. */
static void group_compute(rank_state *rs, double ref_s, sgx_fn fn)
{
    eng.events += rs->tp > 1 && !rs->tp_same_time ? rs->tp : 1;
    sgx_at(simgrid_get_clock() + eng_group_seconds(rs, ref_s), fn, rs);
}

/* The running op is over: recorded from start_s, its output sent, its
 * activation's offload queued (a memory plan: past the copy slots the rank
 * waits for one, eng_events_admitted), the rank on. */
static void finish_running(rank_state *rs, double start_s)
{
    sched_op op = rs->running;
    rs->rep->done[eng_done_index(op.kind, op.stage, op.mb)] = 1;
    eng_finish_op(rs, op, start_s, simgrid_get_clock());
    send_output(rs, op);
    if (eng.plan && eng_plan_offload(rs, op)) {
        rs->stall_start_s = simgrid_get_clock();
        rs->waiting_admission = 1;
        return;
    }
    advance(rs);
}

void eng_events_admitted(rank_state *rs)
{
    eng_plan_record_stall(rs, rs->running, rs->stall_start_s);
    advance(rs);
}

static void op_end(void *arg)
{
    rank_state *rs = arg;
    finish_running(rs, rs->op_start_s);
}

/* ---- tp / cp / dp (par != NULL) -------------------------------------------- */

static void next_coll(rank_state *rs);

static void coll_end(void *arg)
{
    rank_state *rs = arg;
    eng_record_coll(rs, rs->running, &rs->colls[rs->coll], rs->coll_start_s, simgrid_get_clock());
    rs->coll++;
    next_coll(rs);
}

/* DualPipeV's overlapped pairs (expert.c's eng_run_pair): the first op's
 * all-to-alls run under the second's compute; the first is recorded to the
 * end of its compute and collectives, the second from there to the end of
 * both ops' communication; the first's output leaves once its all-to-alls
 * and the second's collectives are over. */
static int ep_comm(void)
{
    return eng.ep > 1 && eng.par->tp_comm;
}

static void pair_end(void *arg)
{
    rank_state *rs = arg;
    finish_running(rs, rs->pair_mid_s);
}

static void pair_tail(rank_state *rs)
{
    rs->pair_tail = 0;
    send_output(rs, rs->pair_first);
    if (!(ep_comm() && eng_ep_events_arrive(rs, rs->running, pair_end)))
        pair_end(rs);
}

static void pair_a2a_done(void *arg)
{
    rank_state *rs = arg;
    rs->pair_a2a = 0;
    if (rs->pair_tail)
        pair_tail(rs);
}

/* The first op of a pair or combined step is done now: recorded, and
 * kept as the pair's first (its output leaves with the second's end). */
static sched_op record_pair_first(rank_state *rs)
{
    sched_op op = rs->running;
    double mid_s = simgrid_get_clock();
    rs->rep->done[eng_done_index(op.kind, op.stage, op.mb)] = 1;
    eng_finish_op(rs, op, rs->op_start_s, mid_s);
    rs->pair_first = op;
    rs->pair_mid_s = mid_s;
    rs->pair_tail = 0;
    return op;
}

static void pair_first_done(rank_state *rs)
{
    sched_op op = record_pair_first(rs);
    rs->pair_a2a = ep_comm() && eng_ep_events_arrive(rs, op, pair_a2a_done);
    rs->next++;
    rs->busy = 0;
    rs->pair = 2;
    try_next(rs);
}

static void start_par_op(rank_state *rs);

/* Megatron's combined 1F1B steps (expert.c's eng_run_combined): both ops'
 * all-to-alls from the step's start, the two computes and their
 * collectives back to back; the first recorded to the end of its
 * collectives, the second from there to the step's end, when both outputs
 * leave. */
static void combined_end(rank_state *rs)
{
    rs->pair_tail = 0;
    send_output(rs, rs->pair_first);
    finish_running(rs, rs->pair_mid_s);
}

static void combined_a2a_done(void *arg)
{
    rank_state *rs = arg;
    rs->pair_a2a = 0;
    if (rs->pair_tail)
        combined_end(rs);
}

static void combined_first_done(rank_state *rs)
{
    record_pair_first(rs);
    rs->next++;
    rs->running = eng.in->sched->ops[rs->rank][rs->next];
    rs->pair = 4;
    start_par_op(rs);
}

/* The running op's collectives one after the other, then its all-to-alls
 * and its end (or, in a pair, what follows the pair's op). */
static void next_coll(rank_state *rs)
{
    if (rs->coll >= rs->ncolls) {
        if (rs->pair == 1) {
            pair_first_done(rs);
        } else if (rs->pair == 2) {
            rs->pair_tail = 1;
            if (!rs->pair_a2a)
                pair_tail(rs);
        } else if (rs->pair == 3) {
            combined_first_done(rs);
        } else if (rs->pair == 4) {
            rs->pair_tail = 1;
            if (!rs->pair_a2a)
                combined_end(rs);
        } else if (!(ep_comm() && eng_ep_events_arrive(rs, rs->running, op_end))) {
            op_end(rs);
        }
        return;
    }
    const eng_coll *c = &rs->colls[rs->coll];
    rs->coll_start_s = simgrid_get_clock();
    eng.events += coll_start(c->kind, c->rings, c->bytes, c->count, c->mode, coll_end, rs);
}

static void start_piece(rank_state *rs);

/* The running op's collectives, after its compute. */
static void start_colls(rank_state *rs)
{
    rs->ncolls = eng_op_colls(rs, rs->running, rs->colls);
    rs->coll = 0;
    next_coll(rs);
}

/* The running op's compute is over: its collectives, once its stage's
 * parameters are gathered (eng_run_compute's wait_gather). */
static void compute_done(rank_state *rs)
{
    if (rs->gather >= 0 && eng.dpr[rs->rank].gathered <= rs->gather) {
        rs->gather_wait = 1;
        return;
    }
    start_colls(rs);
}

/* A piece of the running op's compute ended: its bucket is ready (with
 * overlap), then the next piece or the collectives. */
static void piece_end(void *arg)
{
    rank_state *rs = arg;
    if (rs->pieces > 0)
        eng_dp_signal(&eng.dpr[rs->rank], eng.dpr[rs->rank].op_first_bucket[rs->next] + rs->piece);
    if (++rs->piece < (rs->pieces > 0 ? rs->pieces : 1)) {
        start_piece(rs);
        return;
    }
    compute_done(rs);
}

/* ZeRO-2/3 (gradsync.c's run_pieces): the running op's compute in one
 * piece per layer; piece j waits for its layer's parameter gather, issues
 * the next layer's gather before it runs and its layer's gradient
 * reduce-scatter after. */
static void layer_piece_end(void *arg);

static void start_layer_piece(rank_state *rs)
{
    dp_rank *dr = &eng.dpr[rs->rank];
    int j = rs->lpiece, k = dr->piece_gather[rs->lfirst + j];
    if (k >= 0 && dr->lc_done <= k) {
        rs->lc_wait = k;   /* reducer_coll_end resumes it once the gather has run */
        return;
    }
    rs->lc_wait = -1;
    if (j + 1 < rs->lpieces)
        eng_lc_issue(dr, dr->piece_gather[rs->lfirst + j + 1]);
    double ref_s = actmem_op_ref_s(&eng.in->wl->stage[rs->running.stage], rs->running.kind);
    group_compute(rs, ref_s / rs->lpieces, layer_piece_end);
}

static void layer_piece_end(void *arg)
{
    rank_state *rs = arg;
    dp_rank *dr = &eng.dpr[rs->rank];
    eng_lc_issue(dr, dr->piece_reduce[rs->lfirst + rs->lpiece]);
    if (++rs->lpiece < rs->lpieces) {
        start_layer_piece(rs);
        return;
    }
    rs->lpieces = 0;
    compute_done(rs);
}

static void start_piece(rank_state *rs)
{
    double ref_s = actmem_op_ref_s(&eng.in->wl->stage[rs->running.stage], rs->running.kind);
    if (rs->pieces > 0)
        ref_s /= rs->pieces;
    group_compute(rs, ref_s, piece_end);
}

/* An op of a job with par: its compute on the group (in pieces that
 * release its stage's buckets, with overlap), then its collectives
 * (eng_run_compute and eng_op_communication's order). */
static void start_par_op(rank_state *rs)
{
    dp_rank *dr = eng.dpr ? &eng.dpr[rs->rank] : NULL;
    if (rs->next == 0)
        rs->first_start_s = rs->op_start_s;
    rs->pieces = dr && dr->op_first_bucket ? dr->op_nbuckets[rs->next] : 0;
    rs->piece = 0;
    rs->gather = dr && dr->op_gather ? dr->op_gather[rs->next] : -1;
    if (rs->gather >= 0) {   /* its pre-hook: the next stage's gather may start */
        dr->fwd_started[rs->gather]++;
        eng_events_reducer(dr);
    }
    if (dr && dr->op_piece && dr->op_piece[rs->next + 1] > dr->op_piece[rs->next]) {
        rs->lfirst = dr->op_piece[rs->next];
        rs->lpieces = dr->op_piece[rs->next + 1] - rs->lfirst;
        rs->lpiece = 0;
        eng_lc_issue(dr, dr->piece_gather[rs->lfirst]);
        start_layer_piece(rs);
        return;
    }
    start_piece(rs);
}

/* The reducer of a pipeline rank (gradsync.c's reducer_actor) as a state
 * machine: with the distributed optimizer's overlap the stages' parameter
 * gathers first, each once the stage before's first forward has started on
 * every simulated replica; buckets in order, each once every simulated
 * replica has it, then
 * the tied embedding's all-reduce, the optimizer barrier, the step and the
 * distributed optimizer's gather.  Called whenever something it may wait
 * for happens. */
enum {
    RED_GATHERS, RED_LAYERS, RED_BUCKETS, RED_CROSS, RED_EMBED, RED_EMBED_WAIT, RED_OPT, RED_OPT_WAIT, RED_STEP,
    RED_GATHER, RED_SHARD_GATHER, RED_DONE
};

static void reducer_done_step(void *arg);
static void reducer_coll_end(void *arg);

/* A parameter gather of the reducer's state (busy: its index + 1 in
 * RED_GATHERS): its dense part over the replicas' rings, then its experts'
 * over theirs, each only when it has bytes (gradsync.c's param_gather).
 * reducer_start_gather starts it; reducer_expert_gather, once the dense
 * part is over, starts the experts' part and returns 1, or 0 when none. */
static double gather_part_bytes(const dp_rank *dr, int busy, int expert)
{
    if (dr->ev_state == RED_GATHERS)
        return expert ? dr->gather_expert_bytes[busy - 1] : dr->gather_bytes[busy - 1];
    return eng_dp_step_gather_bytes(dr, expert);
}

static int reducer_expert_gather(dp_rank *dr, int busy)
{
    double bytes = gather_part_bytes(dr, busy, 1);
    if (!(bytes > 0))
        return 0;
    dr->ev_expert_part = 1;
    dr->ev_busy = busy;
    eng.events += coll_start(COLL_ALLGATHER, &dr->expert, bytes, 1, COLL_FUSED, reducer_coll_end, dr);
    return 1;
}

static void reducer_start_gather(dp_rank *dr, int busy)
{
    double dense = gather_part_bytes(dr, busy, 0);
    dr->ev_busy = busy;
    dr->ev_start_s = simgrid_get_clock();
    if (!(dense > 0) && reducer_expert_gather(dr, busy))
        return;
    dr->ev_expert_part = 0;
    eng.events += coll_start(COLL_ALLGATHER, &dr->flat, dense, 1, COLL_FUSED, reducer_coll_end, dr);
}

static void reducer_coll_end(void *arg)
{
    dp_rank *dr = arg;
    int dist = eng.par->distributed_optimizer && eng.dp > 1;
    double start_s = dr->ev_start_s;
    int busy = dr->ev_busy;   /* a collective's index + 1 */
    dr->ev_busy = 0;
    if ((dr->ev_state == RED_GATHERS || dr->ev_state == RED_GATHER) && !dr->ev_expert_part &&
        reducer_expert_gather(dr, busy)) {
        return;   /* the dense part is done: the experts' part runs next (gradsync.c's param_gather) */
    }
    dr->ev_expert_part = 0;
    if (dr->ev_state == RED_GATHERS) {
        int k = busy - 1;
        eng_dp_record(dr, TLC_DP_ALLGATHER, dr->gather_bytes[k] + dr->gather_expert_bytes[k], -1, 0, start_s);
        dr->gathered = k + 1;
        for (int d = 0; d < eng.nrep; d++) {   /* the forwards that waited for it */
            rank_state *rs = &eng.rep[d].ranks[dr->rank];
            if (rs->gather_wait && rs->gather < dr->gathered) {
                rs->gather_wait = 0;
                start_colls(rs);
            }
        }
    } else if (dr->ev_state == RED_LAYERS) {
        int k = busy - 1;
        eng_lc_record(dr, k, start_s);
        dr->lc_done = k + 1;
        /* the reducer goes on first (as its actor does), then the pieces that waited for this gather */
        eng_events_reducer(dr);
        for (int d = 0; d < eng.nrep; d++) {
            rank_state *rs = &eng.rep[d].ranks[dr->rank];
            if (rs->lpieces > 0 && rs->lc_wait >= 0 && rs->lc_wait < dr->lc_done)
                start_layer_piece(rs);
        }
        return;
    } else if (dr->ev_state == RED_CROSS) {
        eng_dp_record(dr, TLC_DP_ALLREDUCE, dr->grad_bytes / eng_dp_shard_group(), -1, 0, start_s);
        dr->ev_state = RED_EMBED;
    } else if (dr->ev_state == RED_SHARD_GATHER) {
        eng_dp_record(dr, TLC_DP_ALLGATHER, dr->param_bytes, -1, 0, start_s);
        dr->ev_state = RED_DONE;
    } else if (dr->ev_state == RED_BUCKETS) {
        int b = busy - 1;
        eng_dp_record(dr, dist ? TLC_DP_REDUCE_SCATTER : TLC_DP_ALLREDUCE, dr->bucket_bytes[b], dr->bucket_stage[b], b,
                      start_s);
        dr->ev_bucket = b + 1;
    } else if (dr->ev_state == RED_EMBED_WAIT) {
        eng_dp_record(dr, TLC_EMBED_ALLREDUCE, eng.par->embed_sync_bytes, 0, 1, start_s);
        dr->ev_state = RED_OPT;
    } else {   /* RED_GATHER */
        eng_dp_record(dr, TLC_DP_ALLGATHER, eng_dp_step_gather_bytes(dr, 0) + eng_dp_step_gather_bytes(dr, 1), -1, 0,
                      start_s);
        dr->ev_state = RED_SHARD_GATHER;
    }
    eng_events_reducer(dr);
}

static void reducer_done_step(void *arg)
{
    dp_rank *dr = arg;
    eng_dp_record(dr, TLC_OPTIMIZER, 0.0, -1, 0, dr->ev_start_s);
    dr->ev_busy = 0;
    dr->ev_state = RED_GATHER;
    eng_events_reducer(dr);
}

void eng_events_reducer(dp_rank *dr)
{
    int dist = eng.par->distributed_optimizer && eng.dp > 1, pp = eng.in->sched->pp;
    while (!dr->ev_busy) {
        switch (dr->ev_state) {
        case RED_GATHERS: {
            int k = dr->gathered;
            if (!(dist && eng.par->overlap) || k >= dr->ngather) {
                dr->ev_state = RED_LAYERS;
                break;
            }
            if (k > 0 && dr->fwd_started[k - 1] < eng.nrep)
                return;
            reducer_start_gather(dr, k + 1);
            continue;
        }
        case RED_LAYERS: {   /* ZeRO-2/3: each layer collective once every replica has issued it */
            int k = dr->lc_done;
            if (!eng_dp_sharded() || k >= dr->nlc) {
                dr->ev_state = RED_BUCKETS;
                break;
            }
            if (dr->lc_issued[k] < eng.nrep)
                return;
            dr->ev_busy = k + 1;
            dr->ev_start_s = simgrid_get_clock();
            eng.events += coll_start(dr->lc_kind[k], &dr->shard, dr->lc_bytes[k], 1, COLL_FUSED, reducer_coll_end, dr);
            continue;
        }
        case RED_BUCKETS: {
            int b = dr->ev_bucket;
            if (b < dr->nbuckets) {
                if (dr->ready[b] < eng.nrep)
                    return;
                dr->ev_busy = b + 1;
                dr->ev_start_s = simgrid_get_clock();
                if (!dist && eng_dp_bucket_hier(dr, b))
                    coll_hier_start(&dr->hier, dr->bucket_bytes[b], COLL_FUSED, &eng.events, reducer_coll_end, dr);
                else
                    eng.events += coll_start(dist ? COLL_REDUCE_SCATTER : COLL_ALLREDUCE, eng_dp_bucket_rings(dr, b),
                                             dr->bucket_bytes[b], 1, COLL_FUSED, reducer_coll_end, dr);
                continue;
            }
            if (dr->finished < eng.nrep)
                return;
            dr->ev_state = RED_CROSS;
            break;
        }
        case RED_CROSS:   /* HSDP: the sharded gradient all-reduced across the shard groups */
            if (eng_dp_sharded() && dr->cross.count > 0 && dr->grad_bytes > 0) {
                dr->ev_busy = 1;
                dr->ev_start_s = simgrid_get_clock();
                eng.events += coll_start(COLL_ALLREDUCE, &dr->cross, dr->grad_bytes / eng_dp_shard_group(), 1,
                                         COLL_FUSED, reducer_coll_end, dr);
                continue;
            }
            dr->ev_state = RED_EMBED;
            break;
        case RED_EMBED:
            if (eng.embed_rings.count > 0 && (dr->rank == eng.embed_ranks[0] || dr->rank == eng.embed_ranks[1])) {
                dr->ev_state = RED_EMBED_WAIT;
                if (++eng.ev_embed_arrived < 2)
                    return;
                /* both reducers are in: the first stage's runs the ring, the other goes on */
                dp_rank *a = &eng.dpr[eng.embed_ranks[0]], *b = &eng.dpr[eng.embed_ranks[1]];
                b->ev_state = RED_OPT;
                a->ev_busy = 1;
                a->ev_start_s = simgrid_get_clock();
                eng.events += coll_start(COLL_ALLREDUCE, &eng.embed_rings, eng.par->embed_sync_bytes, 1, COLL_FUSED,
                                         reducer_coll_end, a);
                if (dr == a) {   /* b waited at RED_EMBED_WAIT: it goes on now */
                    eng_events_reducer(b);
                    return;
                }
                continue;   /* dr is b: on to the optimizer's barrier */
            }
            dr->ev_state = RED_OPT;
            break;
        case RED_EMBED_WAIT:
            return;
        case RED_OPT:
            dr->ev_state = RED_OPT_WAIT;
            if (++eng.ev_opt_arrived < pp)
                return;
            for (int r = 0; r < pp; r++)
                eng.dpr[r].ev_state = RED_STEP;
            for (int r = 0; r < pp; r++)
                if (&eng.dpr[r] != dr)
                    eng_events_reducer(&eng.dpr[r]);
            break;
        case RED_OPT_WAIT:
            return;
        case RED_STEP:
            if (eng.par->optimizer_s != NULL && eng.par->optimizer_s[dr->rank] > 0) {
                dr->ev_busy = 1;
                dr->ev_start_s = simgrid_get_clock();
                sgx_at(dr->ev_start_s + eng.par->optimizer_s[dr->rank], reducer_done_step, dr);
                return;
            }
            dr->ev_state = RED_GATHER;
            break;
        case RED_GATHER:
            if (dist && !eng.par->overlap && eng_dp_step_gather_bytes(dr, 0) + eng_dp_step_gather_bytes(dr, 1) > 0) {
                reducer_start_gather(dr, 1);
                continue;
            }
            dr->ev_state = RED_SHARD_GATHER;
            break;
        case RED_SHARD_GATHER:   /* ZeRO-2: the updated parameters gathered over the shard group */
            if (eng_dp_sharded() && eng.par->sharding == DP_SHARD_GRADIENTS) {
                dr->ev_busy = 1;
                dr->ev_start_s = simgrid_get_clock();
                eng.events += coll_start(COLL_ALLGATHER, &dr->shard, dr->param_bytes, 1, COLL_FUSED,
                                         reducer_coll_end, dr);
                continue;
            }
            dr->ev_state = RED_DONE;
            break;
        default:
            return;
        }
    }
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

/* The running op's compute, now. */
static void run_op(rank_state *rs)
{
    sched_op op = rs->running;
    rs->op_start_s = simgrid_get_clock();
    if (eng.par != NULL)
        start_par_op(rs);
    else
        group_compute(rs, actmem_op_ref_s(&eng.in->wl->stage[op.stage], op.kind), op_end);
}

/* ---- memory plans: copyengine.c's decisions, its waits as continuations ---- */

/* A forward held to its plan release date may go on. */
static void release_end(void *arg)
{
    rank_state *rs = arg;
    rs->release_wait = 0;
    try_next(rs);
}

/* rs reaches its next op (once): the reloads it triggers are queued, and
 * a forward the plan postpones waits for its date; 1 if it may start. */
static int plan_reached(rank_state *rs, sched_op op)
{
    if (rs->reached != rs->next) {
        rs->reached = rs->next;
        eng_plan_reach_queue(rs, rs->next);
        double release_s = eng_plan_release_s(op);
        if (release_s > simgrid_get_clock()) {
            rs->release_wait = 1;
            sgx_at(release_s, release_end, rs);
        }
    }
    return !rs->release_wait;
}

static void recompute_end(void *arg)
{
    rank_state *rs = arg;
    int kind;
    double ref_s;
    eng_plan_recompute(rs->running, &kind, &ref_s);
    eng_record_op(rs, rs->running, kind, rs->op_start_s, simgrid_get_clock());
    run_op(rs);
}

/* The recompute before the running op (R before B, RW before W), then the op. */
static void plan_recompute(rank_state *rs)
{
    int kind;
    double ref_s;
    if (!eng_plan_recompute(rs->running, &kind, &ref_s)) {
        run_op(rs);
        return;
    }
    rs->op_start_s = simgrid_get_clock();   /* the recompute's record start */
    group_compute(rs, ref_s, recompute_end);
}

/* Before the running op: its activation back from host memory (a stall
 * until eng_events_reloaded), then its recompute. */
static void plan_before(rank_state *rs)
{
    sched_op op = rs->running;
    if (eng_plan_reload_pending(rs, op)) {
        rs->stall_start_s = simgrid_get_clock();
        rs->waiting_reload = (int)eng_item_of(op.stage, op.mb);
        return;
    }
    plan_recompute(rs);
}

void eng_events_reloaded(rank_state *rs)
{
    eng_plan_record_stall(rs, rs->running, rs->stall_start_s);
    plan_recompute(rs);
}

static void try_next(rank_state *rs)
{
    const schedule *s = eng.in->sched;
    if (rs->busy || rs->stopped || rs->next >= s->nops[rs->rank])
        return;
    sched_op op = s->ops[rs->rank][rs->next];
    if (eng.plan && !plan_reached(rs, op))
        return;
    if (!input_ready(rs, op))
        return;
    /* a memory plan runs no pairs (as the actor replay) */
    int paired = eng.par != NULL && !eng.plan && rs->pair == 0 && op.overlap_next && rs->next + 1 < s->nops[rs->rank];
    int combined = paired && eng.par->combined_pairs;
    if (combined && !input_ready(rs, s->ops[rs->rank][rs->next + 1]))
        return;   /* a combined step starts once both inputs are in */
    rs->busy = 1;
    rs->running = op;
    if (eng.par != NULL) {
        if (combined) {
            rs->pair = 3;
            rs->pair_a2a = ep_comm() && eng_ep_events_arrive_combined(rs, op, s->ops[rs->rank][rs->next + 1],
                                                                      combined_a2a_done);
        } else if (paired && eng.par->overlap_pairs) {
            rs->pair = 1;
        }
    }
    if (eng.plan)
        plan_before(rs);
    else
        run_op(rs);
}

static void start_all(void *arg)
{
    (void)arg;
    const schedule *s = eng.in->sched;
    for (int d = 0; d < eng.nrep; d++)
        for (int r = 0; r < s->pp; r++)
            if (eng.dpr && s->nops[r] == 0)
                eng_dp_finished(&eng.dpr[r]);
    for (int d = 0; d < eng.nrep; d++)
        for (int r = 0; r < s->pp; r++)
            try_next(&eng.rep[d].ranks[r]);
    for (int r = 0; eng.dpr && r < s->pp; r++)
        eng_events_reducer(&eng.dpr[r]);
}

void eng_events_start(void)
{
    sgx_events_init();
    if (eng.plan)
        eng_plan_events_start();
    sgx_at(0.0, start_all, NULL);
}

void eng_events_free(void)
{
    sgx_events_free();
}
