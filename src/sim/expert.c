/* expert.c: expert-parallel all-to-alls and DualPipeV's overlapped pairs
 * (engine_internal.h).
 *
 * Expert parallelism (par->ep > 1): replicas d with the same d / ep form an
 * expert-parallel group.  After an op's compute, its 2 x moe_layers
 * all-to-alls (dispatch and combine per MoE layer in F, their gradients in
 * B or BW) run among the group: every GPU of every member sends a2a_bytes /
 * (ep - 1) to the same GPU of each other member.  With expert tensor
 * parallelism 1 (par->expert_tp1) the group is the replicas holding ep
 * consecutive GPUs of Megatron's order (tp, cp, dp), and every GPU sends
 * a2a_bytes / (ep - 1) to each of the other ep - 1 GPUs of its block.  The members' compute
 * actors meet at a barrier (the exchange needs every member's tokens), the
 * group's first replica starts all the transfers, fused as the tp
 * collectives are (each pair's transfer carries all the op's all-to-alls,
 * then the other all-to-alls' latencies are slept), and a second barrier
 * releases the members when they are done.  Uncontended an all-to-all takes
 * route latency + a2a_bytes / the GPU's link; with other traffic on the
 * links it takes its fair share.  The all-to-alls sit after the op's
 * compute, not between its layers: the same time without overlap.  With
 * HybridEP (par->ep_hybrid) a pair in one node carries local_scale times
 * those bytes and a pair across nodes remote_scale times (ep_group.scales,
 * costmodel_a2a_scales over the group's GPUs per node).
 *
 * The transfers (eng_ep_setup's flows).  Where every node holding GPUs of
 * a trading class (the GPUs that trade with each other) holds as many of
 * them, each GPU's transfers to the others of its node are one transfer to
 * the next of them (in the group's order, round the node), and its
 * transfers to other nodes one transfer to the GPU at its own place among
 * the class's GPUs of the next node (round the nodes), each carrying the
 * bytes of the transfers it stands for: every GPU then sends and receives
 * through its NVLink port and its NIC exactly the bytes the pair-by-pair
 * exchange moves there, in the same time uncontended (the pairs of a class
 * share its ports evenly and end together), with 2 instead of ep - 1
 * transfers per GPU.  That is what makes the exchange affordable: SimGrid
 * spends time quadratic in the transfers in flight (its activity list and
 * max-min solver), which at 32 GPUs was most of a Qwen3-235B H100 row's
 * minutes.  Against other traffic a class's NIC share counts as one flow,
 * not n - per_node.  A class spread unevenly sends pair by pair.
 *
 * Without actors (eng_ep_events_arrive, for eventreplay.c): the members
 * arrive one by one, the last starts the same transfers as one-sided ones
 * and, once they and the other all-to-alls' latencies are over, every
 * member is released at once: the two barriers' dates.
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
 * Combined steps (par->combined_pairs, Megatron-Core's combined 1F1B with
 * --overlap-moe-expert-parallel-comm: a steady-state forward and the
 * backward after it, which its layer-by-layer schedule interleaves so that
 * each op's dispatch and combine run on a communication stream under the
 * other's attention and expert compute): the step starts once both ops'
 * inputs are in; both ops' all-to-alls start then, as one exchange of their
 * bytes (a helper actor), while the two computes and their tp collectives
 * run back to back; the step ends when both are over, uncontended after
 * max(compute_1 + compute_2, all-to-alls_1 + all-to-alls_2).  The first op
 * is recorded to the end of its compute, the second from there to the
 * step's end; both outputs leave at the end (Megatron sends them after the
 * combined step).  Without a memory plan only, as pairs.
 */
#include "sim/engine_internal.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(pg_engine_ep, pg_engine, "expert-parallel all-to-alls and DualPipeV's overlapped pairs");

/* All-to-alls of op: 2 per MoE layer in F, B and BW. */
static int a2a_count(sched_op op)
{
    const stage_cost *c = &eng.in->wl->stage[op.stage];
    if (op.kind == OP_W || c->moe_layers <= 0 || c->a2a_bytes <= 0)
        return 0;
    return 2 * c->moe_layers;
}

static sg_host_t member_host(int rep_index, int rank, int i)
{
    const rank_state *rs = &eng.rep[rep_index].ranks[rank];
    return rs->tp_host ? rs->tp_host[i] : rs->host;
}

/* The platform node of GPU i of replica rep_index's rank (Megatron's
 * order, sim.h: tp x cp GPUs per rank and replica). */
static int member_node(int rep_index, int rank, int i)
{
    const sim_parallel *par = eng.in->par;
    return eng.in->plat->gpu[par->gpu[((size_t)rank * par->dp + (size_t)rep_index) * eng.grp + i]].node;
}

/* Whether GPU q1 of an expert group sends to its GPU q2, q = (replica -
 * first) x grp + i: with etp=1 every other GPU of its block of ep, else GPU i
 * of every other replica. */
static int trades(int q1, int q2)
{
    if (eng.expert_tp1)
        return q1 != q2 && q1 / eng.ep == q2 / eng.ep;
    return q1 / eng.grp != q2 / eng.grp && q1 % eng.grp == q2 % eng.grp;
}

/* Bytes each GPU sends in all in op's all-to-alls (a2a_count of its
 * stage's a2a_bytes). */
static double a2a_total_bytes(sched_op op)
{
    return a2a_count(op) * eng.in->wl->stage[op.stage].a2a_bytes;
}

/* One transfer of an exchange: GPU q1 to GPU q2 of the group, standing for
 * `pairs` pair-by-pair transfers. */
typedef struct ep_flow {
    int q1, q2, pairs;
} ep_flow;

/* Bytes GPU q1 of group g sends GPU q2 of all-to-alls of bytes per GPU in
 * all: the dispatcher's scale of its share. */
static double pair_bytes(const ep_group *g, int q1, int q2, double bytes)
{
    int same = member_node(g->first + q1 / eng.grp, g->rank, q1 % eng.grp) ==
               member_node(g->first + q2 / eng.grp, g->rank, q2 % eng.grp);
    return bytes / (eng.ep - 1) * (same ? g->scales.local_scale : g->scales.remote_scale);
}

/* count all-to-alls of bytes per GPU in all, recorded under op (the first
 * op of a combined step carries both ops'). */
static void record_a2a(const rank_state *rs, sched_op op, int count, double bytes, double start_s, double end_s)
{
    XBT_DEBUG("rank %d replica %d: %d all-to-alls [%.9f, %.9f]", rs->rank, rs->rep->index, count, start_s, end_s);
    if (!rs->record)
        return;
    tl_coll rec = {.start_s = start_s, .end_s = end_s, .bytes = bytes, .rank = rs->rank, .replica = rs->rep->index,
                   .stage = op.stage, .mb = op.mb, .count = count, .kind = TLC_EP_ALLTOALL, .op_kind = (uint8_t)op.kind};
    timeline_add_coll(eng.tl, &rec);
}

/* count all-to-alls of bytes per GPU in all among rs's group, as one
 * exchange (recorded under op). */
static void exchange(rank_state *rs, sched_op op, int count, double bytes)
{
    ep_group *g = rs->ep;
    double start_s = simgrid_get_clock();
    sg_barrier_wait(g->bar);
    if (rs->rep->index == g->first) {
        size_t k = 0;
        sg_comm_t *comms = pg_xmalloc((size_t)(g->nflows > 0 ? g->nflows : 1) * sizeof *comms);
        for (int f = 0; f < g->nflows; f++) {
            const ep_flow *e = &g->flow[f];
            comms[k++] = sgx_sendto_async(member_host(g->first + e->q1 / eng.grp, rs->rank, e->q1 % eng.grp),
                                          member_host(g->first + e->q2 / eng.grp, rs->rank, e->q2 % eng.grp),
                                          e->pairs * pair_bytes(g, e->q1, e->q2, bytes));
        }
        sg_comm_wait_all(comms, k);
        free(comms);
        eng.events += (long)k;
        if (count > 1)
            sg_actor_sleep_for((count - 1) * g->latency_s);
    }
    sg_barrier_wait(g->bar);
    record_a2a(rs, op, count, bytes, start_s, simgrid_get_clock());
}

/* The op's expert-parallel all-to-alls among rs's group (header). */
void eng_ep_alltoall(rank_state *rs, sched_op op)
{
    int count = a2a_count(op);
    if (count == 0 || rs->ep == NULL)
        return;
    exchange(rs, op, count, a2a_total_bytes(op));
}

/* ---- without actors (eventreplay.c) ---- */

static void a2a_release(void *arg)
{
    ep_group *g = arg;
    double end_s = simgrid_get_clock();
    for (int a = g->first; a < g->first + g->nrep; a++) {
        rank_state *m = &eng.rep[a].ranks[g->rank];
        record_a2a(m, g->ev_op, g->ev_count, g->ev_bytes, m->a2a_start_s, end_s);
        g->ev_release(m);
    }
}

static void a2a_edge_done(void *arg, double start_s, double finish_s)
{
    (void)start_s;
    ep_group *g = arg;
    if (--g->ev_pending > 0)
        return;
    int count = g->ev_count;
    if (count > 1)
        sgx_at(finish_s + (count - 1) * g->latency_s, a2a_release, g);
    else
        a2a_release(g);
}

/* rs arrives at count all-to-alls of bytes per GPU in all (recorded under
 * op); 0 if there are none. */
static int arrive(rank_state *rs, sched_op op, int count, double bytes, sgx_fn release)
{
    if (count == 0 || rs->ep == NULL)
        return 0;
    ep_group *g = rs->ep;
    rs->a2a_start_s = simgrid_get_clock();
    if (++g->ev_arrived < g->nrep)
        return 1;
    g->ev_arrived = 0;
    g->ev_op = op;
    g->ev_count = count;
    g->ev_bytes = bytes;
    g->ev_release = release;
    g->ev_pending = (size_t)g->nflows;
    eng.events += (long)g->ev_pending;
    for (int f = 0; f < g->nflows; f++) {
        const ep_flow *e = &g->flow[f];
        sgx_transfer(member_host(g->first + e->q1 / eng.grp, rs->rank, e->q1 % eng.grp),
                     member_host(g->first + e->q2 / eng.grp, rs->rank, e->q2 % eng.grp),
                     e->pairs * pair_bytes(g, e->q1, e->q2, bytes), a2a_edge_done, g);
    }
    return 1;
}

int eng_ep_events_arrive(rank_state *rs, sched_op op, sgx_fn release)
{
    return arrive(rs, op, a2a_count(op), a2a_total_bytes(op), release);
}

int eng_ep_events_arrive_combined(rank_state *rs, sched_op first, sched_op second, sgx_fn release)
{
    return arrive(rs, first, a2a_count(first) + a2a_count(second), a2a_total_bytes(first) + a2a_total_bytes(second),
                  release);
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
    eng_ep_alltoall(pj->rs, pj->op);
    sg_sem_release(pj->done);
}

/* Ops first and second (the next in the list) as an overlapped pair
 * (header); rs->next is left on second.  0 on deadlock. */
int eng_run_pair(rank_state *rs, sched_op first, sched_op second, double start_s)
{
    const stage_cost *c1 = &eng.in->wl->stage[first.stage], *c2 = &eng.in->wl->stage[second.stage];
    eng_run_compute(rs, rs->next, actmem_op_ref_s(c1, first.kind));
    eng_op_communication(rs, first, 0);
    double mid_s = simgrid_get_clock();
    rs->rep->done[eng_done_index(first.kind, first.stage, first.mb)] = 1;
    eng_finish_op(rs, first, start_s, mid_s);
    pair_job pj = {.rs = rs, .op = first, .done = sg_sem_init(0)};
    int async = eng.ep > 1 && eng.par->tp_comm && a2a_count(first) > 0 && rs->ep != NULL;
    if (async) {
        sg_actor_t a = sg_actor_init("pair-a2a", rs->host);
        sg_actor_set_data(a, &pj);
        sg_actor_start(a, pair_a2a_actor, 0, NULL);
    }
    rs->next++;
    if (!eng_wait_for_input(rs, second)) {
        sg_sem_destroy(pj.done);
        return 0;
    }
    eng_run_compute(rs, rs->next, actmem_op_ref_s(c2, second.kind));
    eng_op_communication(rs, second, 0);
    if (async)
        sg_sem_acquire(pj.done);
    sg_sem_destroy(pj.done);
    eng_send_output(rs, first);
    if (eng.ep > 1 && eng.par->tp_comm)
        eng_ep_alltoall(rs, second);
    double end_s = simgrid_get_clock();
    rs->rep->done[eng_done_index(second.kind, second.stage, second.mb)] = 1;
    eng_finish_op(rs, second, mid_s, end_s);
    eng_send_output(rs, second);
    return 1;
}

/* A helper actor running a combined step's all-to-alls. */
typedef struct combined_job {
    rank_state *rs;
    sched_op first;
    int count;
    double bytes;
    sg_sem_t done;
} combined_job;

static void combined_a2a_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    combined_job *cj = sg_actor_self_get_data();
    exchange(cj->rs, cj->first, cj->count, cj->bytes);
    sg_sem_release(cj->done);
}

/* Ops first and second (the next in the list) as Megatron's combined 1F1B
 * step (header); rs->next is left on second.  0 on deadlock. */
int eng_run_combined(rank_state *rs, sched_op first, sched_op second)
{
    if (!eng_wait_for_input(rs, second))
        return 0;
    const stage_cost *c1 = &eng.in->wl->stage[first.stage], *c2 = &eng.in->wl->stage[second.stage];
    double start_s = simgrid_get_clock();
    combined_job cj = {.rs = rs, .first = first, .count = a2a_count(first) + a2a_count(second),
                       .bytes = a2a_total_bytes(first) + a2a_total_bytes(second), .done = sg_sem_init(0)};
    int async = eng.ep > 1 && eng.par->tp_comm && cj.count > 0 && rs->ep != NULL;
    if (async) {
        sg_actor_t a = sg_actor_init("combined-a2a", rs->host);
        sg_actor_set_data(a, &cj);
        sg_actor_start(a, combined_a2a_actor, 0, NULL);
    }
    eng_run_compute(rs, rs->next, actmem_op_ref_s(c1, first.kind));
    eng_op_communication(rs, first, 0);
    double mid_s = simgrid_get_clock();
    rs->rep->done[eng_done_index(first.kind, first.stage, first.mb)] = 1;
    eng_finish_op(rs, first, start_s, mid_s);
    rs->next++;
    eng_run_compute(rs, rs->next, actmem_op_ref_s(c2, second.kind));
    eng_op_communication(rs, second, 0);
    if (async)
        sg_sem_acquire(cj.done);
    sg_sem_destroy(cj.done);
    double end_s = simgrid_get_clock();
    rs->rep->done[eng_done_index(second.kind, second.stage, second.mb)] = 1;
    eng_finish_op(rs, second, mid_s, end_s);
    eng_send_output(rs, first);
    eng_send_output(rs, second);
    return 1;
}

/* Replicas per expert-parallel group (header). */
int eng_ep_group_replicas(void)
{
    if (!eng.expert_tp1)
        return eng.ep;
    return eng.ep > eng.grp ? eng.ep / eng.grp : 1;
}

/* Whether GPUs q and p of the group are of one class (the GPUs that trade
 * with each other, q itself included). */
static int same_class(int q, int p)
{
    return p == q || trades(q, p);
}

/* Group g's transfers (the header's "The transfers"): per GPU one to the
 * next GPU of its class in its node and one to its place among its class's
 * GPUs in the next node of the class, where the class's nodes hold as many
 * of its GPUs each; else every pair. */
static void ep_flows(ep_group *g)
{
    int gpus = g->nrep * eng.grp;
    int *node = pg_xmalloc((size_t)gpus * sizeof *node), *in_node = pg_xcalloc((size_t)gpus, sizeof *in_node);
    for (int q = 0; q < gpus; q++)
        node[q] = member_node(g->first + q / eng.grp, g->rank, q % eng.grp);
    for (int q = 0; q < gpus; q++)   /* the GPUs of q's class in q's node */
        for (int p = 0; p < gpus; p++)
            in_node[q] += same_class(q, p) && node[p] == node[q];
    int even = 1;
    for (int q = 0; q < gpus && even; q++)
        for (int p = 0; p < gpus && even; p++)
            even = !trades(q, p) || in_node[p] == in_node[q];
    g->flow = pg_xmalloc((size_t)gpus * (size_t)(eng.ep > 1 ? eng.ep - 1 : 1) * sizeof *g->flow);
    g->nflows = 0;
    for (int q = 0; q < gpus; q++) {
        if (!even) {
            for (int p = 0; p < gpus; p++)
                if (trades(q, p))
                    g->flow[g->nflows++] = (ep_flow){q, p, 1};
            continue;
        }
        /* in the node: the next of the class after q, round the node; q's place among them, and the
         * first of them (the head of q's node: the class's nodes are ordered by their heads) */
        int next_local = -1, first_local = -1, place = 0, remote = 0, next_head = -1, first_head = -1, my_head = q;
        for (int p = 0; p < q; p++)
            if (same_class(q, p) && node[p] == node[q]) {
                my_head = p;
                break;
            }
        for (int p = 0; p < gpus; p++) {
            if (!same_class(q, p))
                continue;
            if (node[p] == node[q]) {
                place += p < q;
                if (p != q && first_local < 0)
                    first_local = p;
                if (p > q && next_local < 0)
                    next_local = p;
                continue;
            }
            remote++;
            int head = 1;   /* p is the first GPU of the class in its node */
            for (int o = 0; o < p && head; o++)
                head = !(same_class(q, o) && node[o] == node[p]);
            if (head && first_head < 0)
                first_head = p;
            if (head && p > my_head && next_head < 0)
                next_head = p;
        }
        if (in_node[q] > 1)
            g->flow[g->nflows++] = (ep_flow){q, next_local >= 0 ? next_local : first_local, in_node[q] - 1};
        if (remote == 0)
            continue;
        /* across nodes: the next node of the class (ordered by their first GPUs), at q's place there */
        int head = next_head >= 0 ? next_head : first_head, seen = 0;
        for (int p = head; p < gpus; p++)
            if (same_class(q, p) && node[p] == node[head] && seen++ == place) {
                g->flow[g->nflows++] = (ep_flow){q, p, remote};
                break;
            }
    }
    free(node);
    free(in_node);
}

/* Expert-parallel groups at each rank (header): eng_ep_group_replicas
 * consecutive replicas each. */
void eng_ep_setup(const sim_input *in)
{
    int pp = in->sched->pp, per = eng_ep_group_replicas(), groups = eng.nrep / per;
    eng.epg = pg_xcalloc((size_t)pp * (size_t)groups, sizeof *eng.epg);
    for (int r = 0; r < pp; r++)
        for (int k = 0; k < groups; k++) {
            ep_group *g = &eng.epg[(size_t)r * groups + k];
            g->first = k * per;
            g->nrep = per;
            g->rank = r;
            g->bar = sg_barrier_init((unsigned)per);
            int gpus = per * eng.grp, peers = 1, in_node = 1;
            for (int q = 1; q < gpus; q++) {   /* the farthest of the GPUs the group's first GPU trades with */
                if (!trades(0, q))
                    continue;
                double lat = sg_host_get_route_latency(member_host(g->first, r, 0),
                                                       member_host(g->first + q / eng.grp, r, q % eng.grp));
                if (lat > g->latency_s)
                    g->latency_s = lat;
                peers++;
                in_node += member_node(g->first, r, 0) == member_node(g->first + q / eng.grp, r, q % eng.grp);
            }
            /* the first GPU's peers stand for every member's: a group spans its nodes evenly */
            g->scales = costmodel_a2a_scales(eng.in->par->ep_hybrid, eng.in->wl->moe_experts,
                                             eng.in->wl->moe_top_k, peers, in_node);
            ep_flows(g);
            for (int a = g->first; a < g->first + per; a++)
                eng.rep[a].ranks[r].ep = g;
        }
}
