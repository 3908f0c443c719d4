/* copyengine.c: the memory plan in the replay: offload copies, reloads,
 * recomputes (engine_internal.h).  The one place of the engine that reads
 * the plan's fields (act_flow_of, sim_input.plan): new plan fields are
 * consumed here.
 *
 * Memory plan (sim_input.plan, schedule/plan.h; NULL or empty: none of
 * this runs, and the compute loop pays one test per op).  Each rank gets
 * two copy engines (two more actors in the actor replay, state machines
 * without actors: the end of this file): D2H and H2D, each serving its queue in
 * order with blocking one-sided transfers (sg_host_sendto) over the
 * platform's route between the GPU and its node's host-memory host, so
 * GPUs sharing a PCIe-switch uplink or a host link share its bandwidth.
 * With tensor / context parallelism every GPU of the rank's tp x cp group
 * holds its share of the activation (the workload's bytes are one GPU's),
 * and all of them copy at once, each over its own route: a copy ends when
 * the group's last transfer does, and group GPUs behind one PCIe switch
 * contend for its uplink as they would on the machine.
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
 */
#include "sim/engine_internal.h"

#include <xbt/asserts.h>

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(pg_engine_copy, pg_engine, "offload copies, admission, reloads, recomputes");

size_t eng_item_of(int stage, int mb)
{
    return (size_t)stage * (size_t)eng.in->sched->m + (size_t)mb;
}

static void ev_kick(copy_engine *ce);

static void copy_push(copy_engine *ce, int item)
{
    ce->queue[ce->tail++] = item;
    if (ce->dir == COPY_D2H)
        ce->rs->d2h_unfinished++;
    if (eng.events_mode)
        ev_kick(ce);
    else
        sg_sem_release(ce->stream ? ce->stream->work : ce->work);
}

/* The decisions below are the plan's, for both replays; the waits are the
 * actor replay's (eng_plan_reach, _before, _after) or the replay without
 * actors' continuations (eventreplay.c). */

/* Reached op i of rs's list: queue the reloads the prefetch rule (or the
 * plan's reload_at) triggers there (header). */
void eng_plan_reach_queue(rank_state *rs, int i)
{
    for (int t = rs->trig_first[i]; t < rs->trig_first[i + 1]; t++)
        copy_push(&rs->h2d, rs->trig_items[t]);
}

/* The plan's warm-up postponement (schedule/plan.h f_release_s): the date
 * before which forward op does not start; -1 for none. */
double eng_plan_release_s(sched_op op)
{
    if (eng.plan->f_release_s && op.kind == OP_F)
        return eng.plan->f_release_s[eng_item_of(op.stage, op.mb)];
    return -1.0;
}

/* Whether op (B / BW) must wait for its activation to come back. */
int eng_plan_reload_pending(const rank_state *rs, sched_op op)
{
    size_t item = eng_item_of(op.stage, op.mb);
    return (op.kind == OP_B || op.kind == OP_BW) && eng.flow[item].offload_bytes > 0 && !rs->rep->reloaded[item];
}

/* Whether a recompute runs before op: R before B / BW, RW before W; its
 * record kind and reference seconds. */
int eng_plan_recompute(sched_op op, int *kind, double *ref_s)
{
    const act_flow *f = &eng.flow[eng_item_of(op.stage, op.mb)];
    if ((op.kind == OP_B || op.kind == OP_BW) && f->has_r) {
        *kind = TL_OP_R;
        *ref_s = f->r_ref_s;
        return 1;
    }
    if (op.kind == OP_W && f->has_rw) {
        *kind = TL_OP_RW;
        *ref_s = f->rw_ref_s;
        return 1;
    }
    return 0;
}

/* After op ran: an offloaded F queues its D2H copy; 1 if the rank is then
 * past its copy slots and must wait for the oldest unfinished one to end
 * (admission). */
int eng_plan_offload(rank_state *rs, sched_op op)
{
    size_t item = eng_item_of(op.stage, op.mb);
    if (op.kind != OP_F || eng.flow[item].offload_bytes <= 0)
        return 0;
    copy_push(&rs->d2h, (int)item);
    int slots = eng.in->copy_slots;
    return slots > 0 && rs->d2h_unfinished > slots;
}

/* A wait of the compute for a reload or a copy slot, from start_s to now. */
void eng_plan_record_stall(const rank_state *rs, sched_op op, double start_s)
{
    XBT_DEBUG("rank %d replica %d: stall before / after op kind %d stage %d mb %d [%.9f, %.9f]", rs->rank,
              rs->rep->index, op.kind, op.stage, op.mb, start_s, simgrid_get_clock());
    tl_stall rec = {.start_s = start_s, .end_s = simgrid_get_clock(), .rank = rs->rank, .stage = op.stage, .mb = op.mb};
    if (rs->record)
        timeline_add_stall(eng.tl, &rec);
}

/* Reached op i of rs's list: its reloads queued, and a forward the plan
 * postpones held (actor replay). */
void eng_plan_reach(rank_state *rs, int i)
{
    eng_plan_reach_queue(rs, i);
    double release_s = eng_plan_release_s(eng.in->sched->ops[rs->rank][i]);
    if (release_s >= 0)
        sg_actor_sleep_until(release_s);
}

/* After op ran (actor replay): its D2H queued, then the admission wait. */
void eng_plan_after(rank_state *rs, sched_op op)
{
    if (!eng_plan_offload(rs, op))
        return;
    double start_s = simgrid_get_clock();
    while (rs->d2h_unfinished > eng.in->copy_slots) {
        rs->waiting_admission = 1;
        sg_sem_acquire(rs->wake);
    }
    eng_plan_record_stall(rs, op, start_s);
}

/* Before op runs (actor replay): its activation back from host memory,
 * then its recompute. */
void eng_plan_before(rank_state *rs, sched_op op)
{
    if (eng_plan_reload_pending(rs, op)) {
        size_t item = eng_item_of(op.stage, op.mb);
        double start_s = simgrid_get_clock();
        rs->waiting_reload = (int)item;
        while (!rs->rep->reloaded[item])
            sg_sem_acquire(rs->wake);
        eng_plan_record_stall(rs, op, start_s);
    }
    int kind;
    double ref_s;
    if (eng_plan_recompute(op, &kind, &ref_s)) {
        double start_s = simgrid_get_clock();
        eng_group_execute(rs, ref_s);
        eng_record_op(rs, op, kind, start_s, simgrid_get_clock());
    }
}

/* A copy is one transfer per GPU of the rank: its GPU alone, or every GPU
 * of its tp x cp group at once (header). */
static int copy_transfers(const rank_state *rs)
{
    return rs->tp_cpu == NULL ? 1 : rs->tp;
}

/* The ends of transfer t of a copy in direction dir: the GPU and its
 * node's host memory. */
static void copy_ends(const rank_state *rs, copy_dir dir, int t, sg_host_t *from, sg_host_t *to)
{
    sg_host_t gpu = rs->tp_cpu == NULL ? rs->host : rs->tp_host[t];
    sg_host_t cpu = rs->tp_cpu == NULL ? rs->cpu : rs->tp_cpu[t];
    *from = dir == COPY_D2H ? gpu : cpu;
    *to = dir == COPY_D2H ? cpu : gpu;
}

/* One copy of bytes per GPU in direction dir, now (actor replay); returns
 * the transfers. */
static int copy_transfer(const rank_state *rs, copy_dir dir, double bytes)
{
    int n = copy_transfers(rs);
    sg_host_t from, to;
    if (n == 1) {
        copy_ends(rs, dir, 0, &from, &to);
        sg_host_sendto(from, to, bytes);
        return 1;
    }
    sg_comm_t comms[n];   /* as tpgroup.c's executions: one per GPU of the group */
    for (int t = 0; t < n; t++) {
        copy_ends(rs, dir, t, &from, &to);
        comms[t] = sgx_sendto_async(from, to, bytes);
    }
    sg_comm_wait_all(comms, (size_t)n);
    return n;
}

/* The plan's reload slot (schedule/plan.h reload_release_s): the date before
 * which ce's copy of item does not start (on a shared stream it holds the
 * stream, as a slot placed backwards from the B does); -1 none. */
static double copy_release_s(const copy_engine *ce, int item)
{
    return ce->dir == COPY_H2D && eng.plan->reload_release_s ? eng.plan->reload_release_s[item] : -1.0;
}

/* The waits a copy's end releases. */
typedef struct copy_wakes {
    int h2d;         /* the duplex H2D engine waited for this D2H */
    int compute;     /* the compute waited for this reload, or for this copy slot */
} copy_wakes;

/* ce's copy of item ran from start_s to now: recorded, the activation
 * offloaded or reloaded, and what that ends (header). */
static copy_wakes copy_finished(copy_engine *ce, int item, double start_s)
{
    rank_state *rs = ce->rs;
    replica *rep = rs->rep;
    double bytes = eng.flow[item].offload_bytes, end_s = simgrid_get_clock();
    int m = eng.in->sched->m;
    XBT_DEBUG("rank %d replica %d: %s of stage %d mb %d, %.0f bytes [%.9f, %.9f]", rs->rank, rep->index,
              ce->dir == COPY_D2H ? "D2H" : "H2D", item / m, item % m, bytes, start_s, end_s);
    tl_copy rec = {.start_s = start_s, .end_s = end_s, .bytes = bytes, .rank = rs->rank, .stage = item / m,
                   .mb = item % m, .dir = (uint8_t)ce->dir};
    if (rs->record)
        timeline_add_copy(eng.tl, &rec);
    copy_wakes w = {0, 0};
    if (ce->dir == COPY_D2H) {
        rep->offloaded[item] = 1;
        rs->d2h_unfinished--;
        if (rs->h2d.waiting_item == item) {
            rs->h2d.waiting_item = -1;
            w.h2d = 1;
        }
        if (rs->waiting_admission && rs->d2h_unfinished <= eng.in->copy_slots) {
            rs->waiting_admission = 0;
            w.compute = 1;
        }
    } else {
        rep->reloaded[item] = 1;
        if (rs->waiting_reload == item) {
            rs->waiting_reload = -1;
            w.compute = 1;
        }
    }
    return w;
}

/* One copy of item by ce (actor replay), over its GPU's route to or from
 * host memory; then the waits it ends are released. */
static void copy_one(copy_engine *ce, int item)
{
    double release_s = copy_release_s(ce, item);
    if (release_s >= 0)
        sg_actor_sleep_until(release_s);
    double start_s = simgrid_get_clock();
    eng.events += copy_transfer(ce->rs, ce->dir, eng.flow[item].offload_bytes);
    copy_wakes w = copy_finished(ce, item, start_s);
    if (w.h2d)
        sg_sem_release(ce->rs->h2d.wake);
    if (w.compute)
        sg_sem_release(ce->rs->wake);
}

/* Duplex: one engine serves its queue in order; an H2D copy waits for the
 * D2H copy of its activation. */
static void copy_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    copy_engine *ce = sg_actor_self_get_data();
    replica *rep = ce->rs->rep;
    for (int n = 0; n < ce->total; n++) {
        sg_sem_acquire(ce->work);
        int item = ce->queue[ce->head++];
        if (ce->dir == COPY_H2D) {
            while (!rep->offloaded[item]) {
                ce->waiting_item = item;
                sg_sem_acquire(ce->wake);
            }
        }
        copy_one(ce, item);
    }
}

/* An engine of a stream can copy its next item now: it has one, and an
 * H2D's activation is already in host memory. */
static int engine_ready(const copy_engine *ce)
{
    if (ce->head >= ce->tail)
        return 0;
    return ce->dir == COPY_D2H || ce->rs->rep->offloaded[ce->queue[ce->head]];
}

/* Single / paired: one stream serves its engines one copy at a time, the
 * next ready engine after the last served, in the stream's cyclic order
 * (header).  A queued H2D whose D2H has not ended has that D2H queued on
 * the same stream, so some engine is always ready when work is queued. */
static void stream_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    copy_stream *cs = sg_actor_self_get_data();
    for (int n = 0; n < cs->total; n++) {
        sg_sem_acquire(cs->work);
        int k = cs->last;
        do
            k = (k + 1) % cs->nengines;
        while (!engine_ready(cs->engine[k]) && k != cs->last);
        xbt_assert(engine_ready(cs->engine[k]), "copy stream with work but no ready engine");
        cs->last = k;
        copy_engine *ce = cs->engine[k];
        copy_one(ce, ce->queue[ce->head++]);
    }
}

/* ---- the copy engines without actors (eventreplay.c's replay) ------------
 * Each engine (duplex) or stream (single / paired) is a state machine
 * taking its actor's steps: kicked when work is queued or a D2H its next
 * H2D waits for ends, it starts its next copy if it can; a copy is one
 * transfer per GPU of the group, over; its end is recorded as copy_one's,
 * then the engine goes on first (as its actor does) and the waits it ended
 * are resumed. */

static void ev_stream_next(copy_stream *cs);
static void ev_engine_next(copy_engine *ce);

static void ev_kick(copy_engine *ce)
{
    if (ce->stream)
        ev_stream_next(ce->stream);
    else
        ev_engine_next(ce);
}

static void ev_transfer_end(void *arg, double start_s, double finish_s)
{
    (void)start_s;
    (void)finish_s;
    copy_engine *ce = arg;
    if (--ce->pending > 0)
        return;
    rank_state *rs = ce->rs;
    copy_wakes w = copy_finished(ce, ce->item, ce->start_s);
    if (ce->stream)
        ce->stream->busy = 0;
    else
        ce->busy = 0;
    ev_kick(ce);
    if (w.h2d)
        ev_engine_next(&rs->h2d);
    if (w.compute)
        (ce->dir == COPY_D2H ? eng_events_admitted : eng_events_reloaded)(rs);
}

/* ce's copy of ce->item, now (copy_transfer's transfers). */
static void ev_transfer(void *arg)
{
    copy_engine *ce = arg;
    double bytes = eng.flow[ce->item].offload_bytes;
    ce->start_s = simgrid_get_clock();
    int n = copy_transfers(ce->rs);
    ce->pending = n;
    for (int t = 0; t < n; t++) {
        sg_host_t from, to;
        copy_ends(ce->rs, ce->dir, t, &from, &to);
        sgx_transfer(from, to, bytes, ev_transfer_end, ce);
    }
    eng.events += n;
}

/* ce copies item: from its reload slot, else now. */
static void ev_copy(copy_engine *ce, int item)
{
    ce->item = item;
    double release_s = copy_release_s(ce, item);
    if (release_s > simgrid_get_clock())
        sgx_at(release_s, ev_transfer, ce);
    else
        ev_transfer(ce);
}

/* Duplex (copy_actor): the next queued item, an H2D once its D2H has ended. */
static void ev_engine_next(copy_engine *ce)
{
    if (ce->busy || ce->head >= ce->tail)
        return;
    int item = ce->queue[ce->head];
    if (ce->dir == COPY_H2D && !ce->rs->rep->offloaded[item]) {
        ce->waiting_item = item;
        return;
    }
    ce->head++;
    ce->busy = 1;
    ev_copy(ce, item);
}

/* Single / paired (stream_actor): the next ready engine after the last served. */
static void ev_stream_next(copy_stream *cs)
{
    if (cs->busy)
        return;
    int queued = 0;
    for (int e = 0; e < cs->nengines; e++)
        queued += cs->engine[e]->tail - cs->engine[e]->head;
    if (queued == 0)
        return;
    int k = cs->last;
    do
        k = (k + 1) % cs->nengines;
    while (!engine_ready(cs->engine[k]) && k != cs->last);
    xbt_assert(engine_ready(cs->engine[k]), "copy stream with work but no ready engine");
    cs->last = k;
    cs->busy = 1;
    copy_engine *ce = cs->engine[k];
    ev_copy(ce, ce->queue[ce->head++]);
}

/* Seconds op takes on rs's GPU (ideal: no waiting). */
static double op_seconds(const rank_state *rs, sched_op op)
{
    return actmem_op_ref_s(&eng.in->wl->stage[op.stage], (op_kind)op.kind) * rs->flops_per_ref_s /
           sg_host_get_speed(rs->host);
}

/* The prefetch rule of the header: trigger op of each reload of rank rs. */
static void plan_triggers(rank_state *rs)
{
    const schedule *s = eng.in->sched;
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
        size_t item = eng_item_of(ops[i].stage, ops[i].mb);
        if (ops[i].kind == OP_F) {
            f_index[item] = i;
            continue;
        }
        if ((ops[i].kind != OP_B && ops[i].kind != OP_BW) || eng.flow[item].offload_bytes <= 0)
            continue;
        double need_s = lat_s + (bw > 0 ? eng.flow[item].offload_bytes / bw : 0.0), ahead_s = 0;
        if (f_index[item] < 0 || before_s[i] - before_s[f_index[item] + 1] < 2 * need_s) {
            eng.flow[item].offload_bytes = 0;   /* cannot pay (header) */
            continue;
        }
        int j = i;
        while (j - 1 > f_index[item] && (j == i || ahead_s < need_s))
            ahead_s += op_seconds(rs, ops[--j]);
        /* A plan carrying PipeOffload's reload rule (schedule/plan.h reload_at) sets the trigger. */
        if (eng.plan->reload_at != NULL && eng.plan->reload_at[item] > f_index[item] && eng.plan->reload_at[item] <= i)
            j = eng.plan->reload_at[item];
        consumer[nc] = i;
        trigger[nc++] = j;
    }
    for (int k = nc - 2; k >= 0; k--) {
        size_t item = eng_item_of(ops[consumer[k]].stage, ops[consumer[k]].mb);
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
        rs->trig_items[fill[trigger[k]]++] = (int)eng_item_of(ops[consumer[k]].stage, ops[consumer[k]].mb);
    rs->d2h.total = rs->h2d.total = nc;
    free(fill);
    free(f_index);
    free(consumer);
    free(trigger);
    free(before_s);
}

/* The host-memory host of GPU g's node, or NULL with st set. */
static sg_host_t host_memory_of(const sim_input *in, int g, pg_status *st)
{
    int cpu_index = in->plat->gpu[g].cpu_index;
    sg_host_t cpu = cpu_index >= 0 ? sg_host_by_name(in->plat->cpu_host[cpu_index]) : NULL;
    if (cpu == NULL)
        pg_fail(st, PG_EXIT_INPUT, "%s: offload needs a host-memory host (kind=cpu) on the node of GPU '%s'",
                in->plat->xml_path, in->plat->gpu[g].host);
    return cpu;
}

/* rs->cpu, and rs->tp_cpu for a tp x cp group: 0, or PG_EXIT_INPUT with st set. */
static int rank_host_memory(const sim_input *in, rank_state *rs, pg_status *st)
{
    if ((rs->cpu = host_memory_of(in, eng_group_gpu(rs->rank, rs->rep->index, 0), st)) == NULL)
        return PG_EXIT_INPUT;
    if (rs->tp_host == NULL)
        return 0;
    rs->tp_cpu = pg_xcalloc((size_t)rs->tp, sizeof *rs->tp_cpu);
    for (int t = 0; t < rs->tp; t++)
        if ((rs->tp_cpu[t] = host_memory_of(in, eng_group_gpu(rs->rank, rs->rep->index, t), st)) == NULL)
            return PG_EXIT_INPUT;
    return 0;
}

/* Copy engines, flows and triggers; 0 or PG_EXIT_INPUT (no host memory).
 * Replica 0 computes the flows' filter and the triggers; the other replicas
 * run the same lists on the same kind of GPUs and share them. */
int eng_plan_setup(const sim_input *in, pg_status *st)
{
    const schedule *s = in->sched;
    size_t n = (size_t)s->nstages * (size_t)s->m;
    eng.plan = in->plan;
    eng.flow = pg_xcalloc(n + 1, sizeof *eng.flow);
    for (int stage = 0; stage < s->nstages; stage++)
        for (int mb = 0; mb < s->m; mb++)
            act_flow_of(in->wl, in->plan, stage, mb, &eng.flow[eng_item_of(stage, mb)]);
    for (int d = 0; d < eng.nrep; d++) {
        replica *rep = &eng.rep[d];
        rep->offloaded = pg_xcalloc(n + 1, 1);
        rep->reloaded = pg_xcalloc(n + 1, 1);
        for (int r = 0; r < s->pp; r++) {
            rank_state *rs = &rep->ranks[r], *first = &eng.rep[0].ranks[r];
            rs->waiting_reload = -1;
            rs->reached = -1;   /* without actors: no op reached yet, op 0 included (eventreplay.c plan_reached) */
            rs->d2h = (copy_engine){.dir = COPY_D2H, .work = sg_sem_init(0), .waiting_item = -1, .rs = rs};
            rs->h2d = (copy_engine){.dir = COPY_H2D, .work = sg_sem_init(0), .wake = sg_sem_init(0),
                                    .waiting_item = -1, .rs = rs};
            if (in->plan->noffload > 0) {
                if (rank_host_memory(in, rs, st) != 0)
                    return PG_EXIT_INPUT;
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

/* The copy models' streams (header): single, one per rank; paired, one
 * per pair of ranks (2k, 2k + 1; an odd last rank alone), in each replica. */
static void streams_setup(void)
{
    int pp = eng.in->sched->pp, per = eng.in->copy_model == COPY_MODEL_PAIRED ? 2 : 1;
    int per_rep = (pp + per - 1) / per;
    eng.nstreams = eng.nrep * per_rep;
    eng.streams = pg_xcalloc((size_t)eng.nstreams, sizeof *eng.streams);
    for (int d = 0; d < eng.nrep; d++)
        for (int k = 0; k < per_rep; k++) {
            copy_stream *cs = &eng.streams[d * per_rep + k];
            rank_state *a = &eng.rep[d].ranks[k * per];
            rank_state *b = k * per + 1 < pp && per == 2 ? &eng.rep[d].ranks[k * per + 1] : NULL;
            cs->work = sg_sem_init(0);
            cs->host = a->host;
            /* Staggered: successive slots alternate direction and, paired,
             * rank (a's D2H, b's H2D, a's H2D, b's D2H). */
            cs->engine[cs->nengines++] = &a->d2h;
            if (b)
                cs->engine[cs->nengines++] = &b->h2d;
            cs->engine[cs->nengines++] = &a->h2d;
            if (b)
                cs->engine[cs->nengines++] = &b->d2h;
            cs->last = cs->nengines - 1;
            for (int e = 0; e < cs->nengines; e++) {
                cs->engine[e]->stream = cs;
                cs->total += cs->engine[e]->total;
            }
        }
}

/* Without actors: the streams of the single and paired copy models. */
void eng_plan_events_start(void)
{
    if (eng.plan && eng.in->copy_model != COPY_MODEL_DUPLEX)
        streams_setup();
}

/* The copy engines' actors ("d2hR", "h2dR", ".rD" for replica d > 0) for
 * the engines with work, or the streams' ("copyK", ".rD"). */
void eng_plan_start_actors(void)
{
    char name[MAILBOX_NAME_MAX + 16];
    if (eng.plan && eng.in->copy_model != COPY_MODEL_DUPLEX) {
        streams_setup();
        int per_rep = eng.nstreams / eng.nrep;
        for (int i = 0; i < eng.nstreams; i++) {
            if (eng.streams[i].total == 0)
                continue;
            if (i < per_rep)
                snprintf(name, sizeof name, "copy%d", i);
            else
                snprintf(name, sizeof name, "copy%d.r%d", i % per_rep, i / per_rep);
            sg_actor_t a = sg_actor_init(name, eng.streams[i].host);
            sg_actor_set_data(a, &eng.streams[i]);
            sg_actor_start(a, stream_actor, 0, NULL);
        }
        return;
    }
    for (int d = 0; d < eng.nrep && eng.plan; d++) {
        for (int r = 0; r < eng.in->sched->pp; r++) {
            rank_state *rs = &eng.rep[d].ranks[r];
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
}

/* Everything eng_plan_setup and eng_plan_start_actors made. */
void eng_plan_free(void)
{
    for (int d = 0; eng.plan && d < eng.nrep; d++) {
        replica *rep = &eng.rep[d];
        for (int r = 0; rep->ranks && r < eng.in->sched->pp; r++) {
            rank_state *rs = &rep->ranks[r];
            if (rs->d2h.work) {   /* NULL on ranks eng_plan_setup did not reach */
                sg_sem_destroy(rs->d2h.work);
                sg_sem_destroy(rs->h2d.work);
                sg_sem_destroy(rs->h2d.wake);
            }
            free(rs->d2h.queue);
            free(rs->h2d.queue);
            free(rs->tp_cpu);
            if (rs->owns_triggers) {
                free(rs->trig_first);
                free(rs->trig_items);
            }
        }
        free(rep->offloaded);
        free(rep->reloaded);
    }
    for (int i = 0; i < eng.nstreams; i++)
        sg_sem_destroy(eng.streams[i].work);
    free(eng.streams);
    free(eng.flow);
}
