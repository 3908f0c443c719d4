/* tpgroup.c: an op's compute on its GPU group, its tensor-parallel
 * collectives and its context-parallel key/value exchange
 * (engine_internal.h).
 *
 * Time.  An op of reference duration t on a GPU of speed S is an execution
 * of t * ref_speed flops (ref_speed: the GPU the profile was measured on), so
 * it lasts t * ref_speed / S.  Workloads with absolute times (ref_speed 0)
 * run t * S flops: exactly t on any GPU.
 *
 * Tensor and data parallelism (sim_input.par, sim.h; NULL: none of this
 * runs, and the compute loop pays one test per op).
 *   - tp group: the compute actor starts the op's execution on every GPU of
 *     its group at once and waits for all (a GPU slower than the others
 *     holds the op; with equal GPUs one execution stands for all, see
 *     group_execute), then runs the op's tensor-parallel collectives on the
 *     group's ring (collectives.h; FUSED unless stepwise_collectives):
 *     Megatron has 2 all-reduces per layer in F and 2 in B (none in W),
 *     each of the layer's output s x b x h elements, the stage's
 *     tp_coll_bytes (a pipeline p2p carries 1/tp of it); one op's 2L of them
 *     are one fused record, the same time as 2L separate ones uncontended.
 *     With sequence parallelism each becomes a reduce-scatter + all-gather
 *     pair (the same bytes on the wire).  The op's record spans compute and
 *     collectives, as the framework sees it.
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
 */
#include "sim/engine_internal.h"


XBT_LOG_NEW_DEFAULT_SUBCATEGORY(pg_engine_tp, pg_engine, "group compute, tp collectives, cp rings");

/* ref_s reference seconds of compute on rs's GPUs: on its one GPU, or on
 * every GPU of its tp group at once (each its share).  When the group's
 * GPUs run the share in the same time (same speed, the usual case) one
 * execution on the first stands for all: a GPU belongs to one group and
 * only its group's compute actor executes on it, so the others would run
 * uncontended and end at the same instant (measured: 512 GPUs at tp = 8,
 * 25-50 % less wall time, the same iteration to the last digit). */
void eng_group_execute(rank_state *rs, double ref_s)
{
    if (rs->tp <= 1) {
        sg_actor_execute(ref_s * rs->flops_per_ref_s);
        eng.events++;
        return;
    }
    double share = eng.par->split_compute ? 1.0 / rs->tp : 1.0;
    if (rs->tp_same_time) {
        sg_actor_execute(ref_s * share * rs->flops_per_ref_s);
        eng.events++;
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
    eng.events += rs->tp;
}

/* Seconds that eng_group_execute(rs, ref_s) lasts: every GPU of the group
 * runs alone on its host, so the slowest one's flops / speed. */
double eng_group_seconds(const rank_state *rs, double ref_s)
{
    if (rs->tp <= 1)
        return ref_s * rs->flops_per_ref_s / sg_host_get_speed(rs->host);
    double share = eng.par->split_compute ? 1.0 / rs->tp : 1.0;
    if (rs->tp_same_time)
        return ref_s * share * rs->flops_per_ref_s / sg_host_get_speed(rs->host);
    double worst_s = 0.0;
    for (int t = 0; t < rs->tp; t++) {
        double s = ref_s * share * rs->tp_flops_per_ref_s[t] / sg_host_get_speed(rs->tp_host[t]);
        if (s > worst_s)
            worst_s = s;
    }
    return worst_s;
}

/* The collectives of op after its compute, in order (header): its
 * tensor-parallel ones, then its context-parallel key/value exchange;
 * returns how many (at most ENG_OP_COLLS_MAX) into list. */
int eng_op_colls(const rank_state *rs, sched_op op, eng_coll *list)
{
    int n = 0;
    if (!eng.par->tp_comm)
        return 0;
    const stage_cost *c = &eng.in->wl->stage[op.stage];
    coll_mode mode = eng.par->stepwise_collectives ? COLL_STEPWISE : COLL_FUSED;
    if (eng.tp > 1 && !eng.par->tp_in_ops && (op.kind == OP_F || op.kind == OP_B || op.kind == OP_BW) &&
        c->tp_coll_bytes > 0) {
        int count = SIM_TP_COLLS_PER_LAYER * (c->layers > 0 ? c->layers : 1);
        static const coll_kind kinds_ar[] = {COLL_ALLREDUCE}, kinds_sp[] = {COLL_REDUCE_SCATTER, COLL_ALLGATHER};
        const coll_kind *kinds = eng.par->sequence_parallel ? kinds_sp : kinds_ar;
        int nkinds = eng.par->sequence_parallel ? 2 : 1;
        for (int k = 0; k < nkinds; k++)
            list[n++] = (eng_coll){.kind = kinds[k], .rings = &rs->tp_ring, .bytes = c->tp_coll_bytes, .count = count,
                                   .mode = mode, .rec_bytes = c->tp_coll_bytes * count,
                                   .rec_kind = kinds[k] == COLL_ALLREDUCE        ? TLC_TP_ALLREDUCE
                                               : kinds[k] == COLL_REDUCE_SCATTER ? TLC_TP_REDUCE_SCATTER
                                                                                 : TLC_TP_ALLGATHER};
    }
    if (eng.cp > 1 && op.kind != OP_W && c->cp_kv_bytes > 0) {
        int count = c->attn_layers > 0 ? c->attn_layers : 1;
        list[n++] = (eng_coll){.kind = COLL_ALLGATHER, .rings = &rs->cp_ring,
                               .bytes = eng.cp * c->cp_kv_bytes * (op.kind == OP_F ? 1.0 : 2.0), .count = count,
                               .mode = mode, .rec_bytes = c->cp_kv_bytes * count, .rec_kind = TLC_CP_KV};
    }
    return n;
}

void eng_record_coll(const rank_state *rs, sched_op op, const eng_coll *c, double start_s, double end_s)
{
    XBT_DEBUG("rank %d replica %d: collective kind %d x %d [%.9f, %.9f]", rs->rank, rs->rep->index, c->rec_kind,
              c->count, start_s, end_s);
    if (!rs->record)
        return;
    tl_coll rec = {.start_s = start_s, .end_s = end_s, .bytes = c->rec_bytes, .rank = rs->rank,
                   .replica = rs->rep->index, .stage = op.stage, .mb = op.mb, .count = c->count,
                   .kind = (uint8_t)c->rec_kind, .op_kind = (uint8_t)op.kind};
    timeline_add_coll(eng.tl, &rec);
}

/* An op's communication after its compute: tp collectives, cp exchange and,
 * when with_a2a, its all-to-alls. */
void eng_op_communication(rank_state *rs, sched_op op, int with_a2a)
{
    if (!eng.par->tp_comm)
        return;
    eng_coll list[ENG_OP_COLLS_MAX];
    int n = eng_op_colls(rs, op, list);
    for (int i = 0; i < n; i++) {
        double start_s = simgrid_get_clock();
        eng.events += coll_run(list[i].kind, list[i].rings, list[i].bytes, list[i].count, list[i].mode);
        eng_record_coll(rs, op, &list[i], start_s, simgrid_get_clock());
    }
    if (with_a2a && eng.ep > 1)
        eng_ep_alltoall(rs, op);
}
