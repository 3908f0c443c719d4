/* gradsync.c: data parallelism: gradient buckets, their all-reduce across
 * the replicas, the optimizer step (engine_internal.h).
 *
 *   - gradients: one reducer actor per pipeline rank all-reduces that
 *     rank's gradients across the replicas, for every tp rank at once (tp
 *     groups of dp GPUs), bucket after bucket (one NCCL stream), FUSED unless
 *     stepwise_collectives (STEPWISE: 4x the wall time at 512 GPUs, the
 *     same iteration to 1e-5 there).
 *     A stage's gradient (its trained parameters, stage_trainable_params, / tp when the times are the group's,
 *     x grad_bytes_per_param) is cut into equal buckets of at most
 *     bucket_bytes.  Without overlap every bucket is ready when the rank has
 *     run its whole list (Megatron's finalize_model_grads); with overlap the
 *     stage's last weight-gradient op (W, or BW) runs in as many equal
 *     pieces as the stage has buckets and bucket j is ready after piece j
 *     (the backward produces gradients layer by layer).  A bucket starts
 *     when every replica has it ready.  Algorithm per group: a ring in dp
 *     order, or hierarchical (collectives.h) when the group spans several
 *     nodes with the same number > 1 of its GPUs on each (AUTO).  With
 *     symmetric replicas (replicas.c) only replica 0 (or a block of
 *     replicas) is simulated and the rings are mirror rings (block rings):
 *     a bucket is ready when the simulated replicas have it.
 *     Experts (ep > 1): a stage's routed experts' gradient
 *     (stage_trainable_expert_params) is held by the GPUs holding the same
 *     experts only, Megatron's expert-data-parallel group
 *     (parallel_expert_dp: with etp=1 the GPUs of Megatron's order with the
 *     same index modulo ep, else the replicas with the same index modulo ep
 *     at each tp x cp rank): its buckets are reduced over those rings
 *     (dp_rank.expert; flat ring or NCCL's channels, never hierarchical), the
 *     dense part's over the replicas as above.  A stage's last weight-gradient
 *     op releases both kinds of buckets, spread evenly over its pieces (the
 *     backward produces both layer by layer; Megatron keeps them in two
 *     buffers reduced on one stream).  The distributed optimizer gathers
 *     each stage's dense parameters, then its experts', over the same rings.
 *   - tied embedding (embed_sync_bytes): with the word embedding on the
 *     first stage and the LM head's copy of it on the last, on two ranks,
 *     the two copies' gradients are summed once both ranks have reduced
 *     their buckets: a 2-GPU all-reduce per replica and tp x cp rank, run by
 *     the first stage's reducer (Megatron's _allreduce_embedding_grads, in
 *     finalize_model_grads after the data-parallel reduction).
 *   - optimizer: when every reducer is done (a barrier: the step needs the
 *     global gradient norm), each rank spends its optimizer_s.
 *   - ZeRO-2 / ZeRO-3 / FSDP (sharding GRADIENTS, FULL; sim.h): no buckets.
 *     Each op of the rank runs in one piece per layer of its stage; the
 *     reducer is the rank's one communication stream and runs the rank's
 *     per-layer collectives in the order the ops issue them, each once every
 *     replica has issued it.  A gathering op (FULL: F, B, BW) issues its
 *     first layer's all-gather when it starts, waits for layer j's before
 *     piece j and then issues layer j + 1's (the prefetch: the next layer's
 *     gather runs under this layer's compute); a weight-gradient op (W, BW)
 *     issues layer j's reduce-scatter when piece j ends (under the next
 *     layer's backward).  The stream's order is thus AG0, AG1, RS0, AG2, RS1,
 *     ... of each op.  After the rank's last op: HSDP's all-reduce of the
 *     sharded gradient across the shard groups, the embedding's sum, the
 *     step on the shard, and with GRADIENTS the all-gather of the updated
 *     parameters over the shard group (FULL gathers them layer by layer in
 *     the next iteration's forward).
 */
#include "sim/engine_internal.h"
#include "util/units.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(pg_engine_dp, pg_engine, "gradient buckets, all-reduces, optimizer");

void eng_dp_signal(dp_rank *dr, int bucket)
{
    dr->ready[bucket]++;
    if (eng.events_mode) {
        eng_events_reducer(dr);
        return;
    }
    if (dr->waiting == bucket && dr->ready[bucket] >= eng.nrep) {
        dr->waiting = -1;
        sg_sem_release(dr->wake);
    }
}

void eng_dp_finished(dp_rank *dr)
{
    if (dr->op_first_bucket == NULL)   /* no overlap: every bucket is ready now */
        for (int b = 0; b < dr->nbuckets; b++)
            eng_dp_signal(dr, b);
    dr->finished++;
    if (eng.events_mode) {
        eng_events_reducer(dr);
        return;
    }
    if (dr->waiting == dr->nbuckets && dr->finished >= eng.nrep) {
        dr->waiting = -1;
        sg_sem_release(dr->wake);
    }
}

/* A collective of dr's reducer (or its optimizer step) from start_s to now,
 * into the timeline: the one record of both replays. */
void eng_dp_record(const dp_rank *dr, tl_coll_kind kind, double bytes, int stage, int count, double start_s)
{
    tl_coll rec = {.start_s = start_s, .end_s = simgrid_get_clock(), .bytes = bytes, .rank = dr->rank,
                   .replica = -1, .stage = stage, .mb = -1, .count = count, .kind = kind};
    timeline_add_coll(eng.tl, &rec);
}

/* Layer collective k of dr (ZeRO-2/3) from start_s to now. */
void eng_lc_record(const dp_rank *dr, int k, double start_s)
{
    eng_dp_record(dr, dr->lc_kind[k] == COLL_ALLGATHER ? TLC_DP_ALLGATHER : TLC_DP_REDUCE_SCATTER, dr->lc_bytes[k],
                  dr->lc_stage[k], k, start_s);
}

/* The tied embedding's all-reduce (header): both ranks' reducers meet,
 * the first stage's runs it. */
static void embed_sync(const dp_rank *dr)
{
    sg_barrier_wait(eng.embed_barrier);
    if (dr->rank != eng.embed_ranks[0])
        return;
    double start_s = simgrid_get_clock();
    eng.events += coll_run(COLL_ALLREDUCE, &eng.embed_rings, eng.par->embed_sync_bytes, 1, COLL_FUSED);
    eng_dp_record(dr, TLC_EMBED_ALLREDUCE, eng.par->embed_sync_bytes, 0, 1, start_s);
}

/* The distributed optimizer's all-gather of dense_bytes of updated
 * parameters (per GPU) over the replicas' rings, then of the experts'
 * expert_bytes over theirs (each part only when it has bytes), for the
 * rank's stage `stage` (-1: all of them): one record. */
static void param_gather(dp_rank *dr, const coll_rings *rings, double dense_bytes, double expert_bytes, int stage)
{
    double start_s = simgrid_get_clock();
    if (dense_bytes > 0 || !(expert_bytes > 0))
        eng.events += coll_run(COLL_ALLGATHER, rings, dense_bytes, 1, COLL_FUSED);
    if (expert_bytes > 0)
        eng.events += coll_run(COLL_ALLGATHER, &dr->expert, expert_bytes, 1, COLL_FUSED);
    eng_dp_record(dr, TLC_DP_ALLGATHER, dense_bytes + expert_bytes, stage, 0, start_s);
}

/* Whether the experts' gradients and parameters go their own way (header):
 * expert parallelism puts other experts on the other GPUs of a group. */
int eng_dp_experts_apart(void)
{
    return eng.ep > 1;
}

const coll_rings *eng_dp_bucket_rings(const dp_rank *dr, int b)
{
    return dr->bucket_expert && dr->bucket_expert[b] ? &dr->expert : &dr->flat;
}

int eng_dp_bucket_hier(const dp_rank *dr, int b)
{
    return dr->use_hier && !(dr->bucket_expert && dr->bucket_expert[b]);
}

/* The non-overlapped gather after the step: the rank's dense and expert
 * parameters per GPU. */
double eng_dp_step_gather_bytes(const dp_rank *dr, int expert)
{
    double ratio = eng.par->param_bytes_per_param / eng.par->grad_bytes_per_param;
    return (expert ? dr->expert_grad_bytes : dr->grad_bytes - dr->expert_grad_bytes) * ratio;
}

/* With overlap: the stages' gathers in order, each waking the forwards
 * that wait for it (eng_run_compute). */
static void gather_stages(dp_rank *dr)
{
    for (int k = 0; k < dr->ngather; k++) {
        while (k > 0 && dr->fwd_started[k - 1] < eng.nrep) {
            dr->gather_wait = k - 1;
            sg_sem_acquire(dr->wake);
        }
        param_gather(dr, &dr->flat, dr->gather_bytes[k], dr->gather_expert_bytes[k], -1);
        dr->gathered = k + 1;
        for (; dr->gather_waiting > 0; dr->gather_waiting--)
            sg_sem_release(dr->params_wake);
    }
}

static void wait_gather(dp_rank *dr, int k)
{
    while (dr->gathered <= k) {
        dr->gather_waiting++;
        sg_sem_acquire(dr->params_wake);
    }
}

/* ZeRO-2 / ZeRO-3: per-layer collectives over shard groups (header). */
int eng_dp_sharded(void)
{
    return eng.dp > 1 && (eng.par->sharding == DP_SHARD_GRADIENTS || eng.par->sharding == DP_SHARD_FULL);
}

/* Replicas a shard spans. */
int eng_dp_shard_group(void)
{
    return eng.par->shard_group > 0 ? eng.par->shard_group : eng.dp;
}

/* The per-layer collectives (header) in their order, each once every
 * replica has issued it, waking the pieces waiting for a gather. */
static void layer_collectives(dp_rank *dr)
{
    for (int k = 0; k < dr->nlc; k++) {
        while (dr->lc_issued[k] < eng.nrep) {
            dr->lc_waiting = k;
            sg_sem_acquire(dr->wake);
        }
        double start_s = simgrid_get_clock();
        eng.events += coll_run(dr->lc_kind[k], &dr->shard, dr->lc_bytes[k], 1, COLL_FUSED);
        eng_lc_record(dr, k, start_s);
        XBT_DEBUG("rank %d: layer collective %d of %d [%.9f, %.9f]", dr->rank, k, dr->nlc, start_s, simgrid_get_clock());
        dr->lc_done = k + 1;
        /* a woken piece waiting for a later gather counts itself again while
         * these run: release only those waiting now */
        int waiting = dr->lc_compute_waiting;
        dr->lc_compute_waiting = 0;
        for (int w = 0; w < waiting; w++)
            sg_sem_release(dr->lc_wake);
    }
}

/* HSDP: the rank's sharded gradient all-reduced across the shard groups. */
static void cross_group_allreduce(dp_rank *dr)
{
    if (dr->cross.count == 0 || !(dr->grad_bytes > 0))
        return;
    double bytes = dr->grad_bytes / eng_dp_shard_group(), start_s = simgrid_get_clock();
    eng.events += coll_run(COLL_ALLREDUCE, &dr->cross, bytes, 1, COLL_FUSED);
    eng_dp_record(dr, TLC_DP_ALLREDUCE, bytes, -1, 0, start_s);
}

static void reducer_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    dp_rank *dr = sg_actor_self_get_data();
    int dist = eng.par->distributed_optimizer && eng.dp > 1;
    if (dist && eng.par->overlap)
        gather_stages(dr);
    if (eng_dp_sharded())
        layer_collectives(dr);
    for (int b = 0; b < dr->nbuckets; b++) {
        while (dr->ready[b] < eng.nrep) {
            dr->waiting = b;
            sg_sem_acquire(dr->wake);
        }
        double start_s = simgrid_get_clock();
        if (dist)
            eng.events += coll_run(COLL_REDUCE_SCATTER, eng_dp_bucket_rings(dr, b), dr->bucket_bytes[b], 1, COLL_FUSED);
        else if (eng_dp_bucket_hier(dr, b))
            eng.events += coll_hier_allreduce(&dr->hier, dr->bucket_bytes[b], COLL_FUSED);
        else
            eng.events += coll_run(COLL_ALLREDUCE, eng_dp_bucket_rings(dr, b), dr->bucket_bytes[b], 1, COLL_FUSED);
        XBT_DEBUG("rank %d: bucket %d of %d, %.0f bytes [%.9f, %.9f]", dr->rank, b, dr->nbuckets, dr->bucket_bytes[b],
                  start_s, simgrid_get_clock());
        eng_dp_record(dr, dist ? TLC_DP_REDUCE_SCATTER : TLC_DP_ALLREDUCE, dr->bucket_bytes[b], dr->bucket_stage[b], b,
                      start_s);
    }
    while (dr->finished < eng.nrep) {
        dr->waiting = dr->nbuckets;
        sg_sem_acquire(dr->wake);
    }
    if (eng_dp_sharded())
        cross_group_allreduce(dr);
    if (eng.embed_rings.count > 0 && (dr->rank == eng.embed_ranks[0] || dr->rank == eng.embed_ranks[1]))
        embed_sync(dr);
    sg_barrier_wait(eng.opt_barrier);
    if (eng.par->optimizer_s != NULL && eng.par->optimizer_s[dr->rank] > 0) {
        double start_s = simgrid_get_clock();
        sg_actor_sleep_for(eng.par->optimizer_s[dr->rank]);
        eng_dp_record(dr, TLC_OPTIMIZER, 0.0, -1, 0, start_s);
    }
    if (dist && !eng.par->overlap && eng_dp_step_gather_bytes(dr, 0) + eng_dp_step_gather_bytes(dr, 1) > 0)
        param_gather(dr, &dr->flat, eng_dp_step_gather_bytes(dr, 0), eng_dp_step_gather_bytes(dr, 1), -1);
    if (eng_dp_sharded() && eng.par->sharding == DP_SHARD_GRADIENTS)
        param_gather(dr, &dr->shard, dr->param_bytes, 0.0, -1);
}

/* A layer collective issued by one replica (header); -1: none. */
void eng_lc_issue(dp_rank *dr, int k)
{
    if (k < 0)
        return;
    if (eng.events_mode) {
        dr->lc_issued[k]++;
        eng_events_reducer(dr);
        return;
    }
    if (++dr->lc_issued[k] >= eng.nrep && dr->lc_waiting == k) {
        dr->lc_waiting = -1;
        sg_sem_release(dr->wake);
    }
}

static void lc_wait(dp_rank *dr, int k)
{
    while (k >= 0 && dr->lc_done <= k) {
        dr->lc_compute_waiting++;
        sg_sem_acquire(dr->lc_wake);
    }
}

/* Op i's compute in pieces, one per layer, with its gathers and
 * reduce-scatters (header). */
static void run_pieces(rank_state *rs, dp_rank *dr, int i, double ref_s)
{
    int first = dr->op_piece[i], n = dr->op_piece[i + 1] - first;
    eng_lc_issue(dr, dr->piece_gather[first]);
    for (int j = 0; j < n; j++) {
        lc_wait(dr, dr->piece_gather[first + j]);
        if (j + 1 < n)
            eng_lc_issue(dr, dr->piece_gather[first + j + 1]);
        eng_group_execute(rs, ref_s / n);
        eng_lc_issue(dr, dr->piece_reduce[first + j]);
    }
}

/* The op at index i of rs's list: its compute, its stage's buckets released
 * piece by piece when it is that stage's last weight-gradient op (overlap). */
void eng_run_compute(rank_state *rs, int i, double ref_s)
{
    dp_rank *dr = eng.dpr ? &eng.dpr[rs->rank] : NULL;
    int nb = dr && dr->op_first_bucket ? dr->op_nbuckets[i] : 0;
    int gather = dr && dr->op_gather ? dr->op_gather[i] : -1;
    if (gather >= 0 && ++dr->fwd_started[gather] >= eng.nrep && dr->gather_wait == gather) {
        dr->gather_wait = -1;   /* its pre-hook: the next stage's gather may start */
        sg_sem_release(dr->wake);
    }
    if (dr && dr->op_piece && dr->op_piece[i + 1] > dr->op_piece[i]) {
        run_pieces(rs, dr, i, ref_s);
    } else if (nb == 0) {
        eng_group_execute(rs, ref_s);
    } else {
        for (int j = 0; j < nb; j++) {
            eng_group_execute(rs, ref_s / nb);
            eng_dp_signal(dr, dr->op_first_bucket[i] + j);
        }
    }
    if (gather >= 0)
        wait_gather(dr, gather);
}

void eng_dp_free(void)
{
    const schedule *s = eng.in->sched;
    for (int r = 0; eng.dpr && r < s->pp; r++) {
        dp_rank *dr = &eng.dpr[r];
        if (dr->wake)
            sg_sem_destroy(dr->wake);
        if (dr->params_wake)
            sg_sem_destroy(dr->params_wake);
        if (dr->lc_wake)
            sg_sem_destroy(dr->lc_wake);
        free(dr->lc_kind);
        free(dr->lc_bytes);
        free(dr->lc_stage);
        free(dr->lc_issued);
        free(dr->op_piece);
        free(dr->piece_gather);
        free(dr->piece_reduce);
        coll_rings_free(&dr->shard);
        coll_rings_free(&dr->cross);
        free(dr->gather_bytes);
        free(dr->gather_expert_bytes);
        free(dr->bucket_expert);
        coll_rings_free(&dr->expert);
        free(dr->op_gather);
        free(dr->fwd_started);
        free(dr->bucket_bytes);
        free(dr->bucket_stage);
        free(dr->ready);
        free(dr->op_first_bucket);
        free(dr->op_nbuckets);
        coll_rings_free(&dr->flat);
        coll_hier_free(&dr->hier);
    }
    free(eng.dpr);
    if (eng.opt_barrier)
        sg_barrier_destroy(eng.opt_barrier);
    coll_rings_free(&eng.embed_rings);
    if (eng.embed_barrier)
        sg_barrier_destroy(eng.embed_barrier);
}

static int gpu_node(const sim_input *in, int g)
{
    return in->plat->gpu[g].node;
}

/* A stage's trained parameters on one GPU of rank dr, reduced and gathered
 * with the replicas (*dense) and with the GPUs holding the same experts
 * (*experts; 0 where no other GPU holds them: nothing to reduce). */
static void stage_params_apart(const stage_cost *c, const dp_rank *dr, double *dense, double *experts)
{
    double own = eng_dp_experts_apart() ? stage_trainable_expert_params(c) : 0.0;
    *dense = stage_trainable_params(c) - own;
    *experts = dr->expert.count > 0 ? own : 0.0;
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
        double dense_bytes, expert_bytes;
        stage_params_apart(&in->wl->stage[st], dr, &dense_bytes, &expert_bytes);
        dense_bytes *= share * par->grad_bytes_per_param;
        expert_bytes *= share * par->grad_bytes_per_param;
        /* buckets of at most bucket_bytes, of each kind */
        int nd = dense_bytes > 0 ? units_pieces(dense_bytes, par->bucket_bytes) : 0;
        int ne = expert_bytes > 0 ? units_pieces(expert_bytes, par->bucket_bytes) : 0;
        int nb = nd + ne;
        if (nb == 0)
            continue;
        dr->bucket_bytes = pg_xrealloc(dr->bucket_bytes, (size_t)(dr->nbuckets + nb) * sizeof *dr->bucket_bytes);
        dr->bucket_stage = pg_xrealloc(dr->bucket_stage, (size_t)(dr->nbuckets + nb) * sizeof *dr->bucket_stage);
        dr->bucket_expert = pg_xrealloc(dr->bucket_expert, (size_t)(dr->nbuckets + nb) * sizeof *dr->bucket_expert);
        dr->op_first_bucket[i] = dr->nbuckets;
        dr->op_nbuckets[i] = nb;
        for (int j = 0; j < nb; j++) {
            int expert = workload_bucket_is_expert(j, ne, nb);
            dr->bucket_bytes[dr->nbuckets + j] = expert ? expert_bytes / ne : dense_bytes / nd;
            dr->bucket_stage[dr->nbuckets + j] = st;
            dr->bucket_expert[dr->nbuckets + j] = (unsigned char)expert;
            if (expert)
                dr->expert_grad_bytes += expert_bytes / ne;
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

/* The tied embedding's rings (header): none when there is nothing to sum
 * or the first and the last stage share a rank (V-shaped schedules). */
static void embed_setup(const sim_input *in)
{
    const schedule *s = in->sched;
    const sim_parallel *par = in->par;
    int a = s->stage_rank[0], b = s->stage_rank[s->nstages - 1];
    if (!(par->embed_sync_bytes > 0) || a == b)
        return;
    eng.embed_ranks[0] = a;
    eng.embed_ranks[1] = b;
    eng.embed_barrier = sg_barrier_init(2);
    for (int d = 0; d < eng.nrep; d++)
        for (int t = 0; t < eng.grp; t++) {
            sg_host_t pair[2] = {sg_host_by_name(in->plat->gpu[eng_group_gpu(a, d, t)].host),
                                 sg_host_by_name(in->plat->gpu[eng_group_gpu(b, d, t)].host)};
            coll_rings_add(&eng.embed_rings, pair, 2);
        }
}

/* The distributed optimizer's overlapped gathers of rank dr: one per stage,
 * in the order of the stages' first forwards, each awaited by that forward. */
static void gather_setup(const sim_input *in, dp_rank *dr)
{
    const schedule *s = in->sched;
    const sim_parallel *par = in->par;
    int nops = s->nops[dr->rank];
    double share = par->split_compute ? 1.0 / par->tp : 1.0;
    dr->params_wake = sg_sem_init(0);
    dr->op_gather = pg_xmalloc((size_t)(nops > 0 ? nops : 1) * sizeof *dr->op_gather);
    dr->gather_bytes = pg_xcalloc((size_t)s->nstages, sizeof *dr->gather_bytes);
    dr->gather_expert_bytes = pg_xcalloc((size_t)s->nstages, sizeof *dr->gather_expert_bytes);
    dr->fwd_started = pg_xcalloc((size_t)s->nstages, sizeof *dr->fwd_started);
    dr->gather_wait = -1;
    int *seen = pg_xcalloc((size_t)s->nstages, sizeof *seen);
    for (int i = 0; i < nops; i++) {
        const sched_op *op = &s->ops[dr->rank][i];
        dr->op_gather[i] = -1;
        if (op->kind != OP_F || seen[op->stage])
            continue;
        seen[op->stage] = 1;
        double dense, experts;
        stage_params_apart(&in->wl->stage[op->stage], dr, &dense, &experts);
        dr->gather_bytes[dr->ngather] = dense * share * par->param_bytes_per_param;
        dr->gather_expert_bytes[dr->ngather] = experts * share * par->param_bytes_per_param;
        dr->op_gather[i] = dr->ngather++;
    }
    free(seen);
}

/* Append a layer collective to dr's list; its index. */
static int lc_add(dp_rank *dr, coll_kind kind, double bytes, int stage)
{
    dr->lc_kind = pg_xrealloc(dr->lc_kind, (size_t)(dr->nlc + 1) * sizeof *dr->lc_kind);
    dr->lc_bytes = pg_xrealloc(dr->lc_bytes, (size_t)(dr->nlc + 1) * sizeof *dr->lc_bytes);
    dr->lc_stage = pg_xrealloc(dr->lc_stage, (size_t)(dr->nlc + 1) * sizeof *dr->lc_stage);
    dr->lc_kind[dr->nlc] = kind;
    dr->lc_bytes[dr->nlc] = bytes;
    dr->lc_stage[dr->nlc] = stage;
    return dr->nlc++;
}

/* ZeRO-2 / ZeRO-3 (header): each op's pieces and the layer collectives in
 * the order the pieces issue them: AG0, then per piece j AG(j+1), RS(j). */
static void layer_setup(const sim_input *in, dp_rank *dr)
{
    const schedule *s = in->sched;
    const sim_parallel *par = in->par;
    int nops = s->nops[dr->rank], full = par->sharding == DP_SHARD_FULL;
    double share = par->split_compute ? 1.0 / par->tp : 1.0;
    dr->lc_wake = sg_sem_init(0);
    dr->lc_waiting = -1;
    dr->op_piece = pg_xcalloc((size_t)nops + 1, sizeof *dr->op_piece);
    int npieces = 0;
    for (int i = 0; i < nops; i++) {
        const sched_op *op = &s->ops[dr->rank][i];
        const stage_cost *c = &in->wl->stage[op->stage];
        int gathers = full && op->kind != OP_W, reduces = op->kind == OP_W || op->kind == OP_BW;
        int n = c->layers > 0 ? c->layers : 1;
        dr->op_piece[i] = npieces;
        if (!gathers && !reduces)
            continue;
        double params = c->param_count * share, trained = stage_trainable_params(c) * share;
        dr->piece_gather = pg_xrealloc(dr->piece_gather, (size_t)(npieces + n) * sizeof *dr->piece_gather);
        dr->piece_reduce = pg_xrealloc(dr->piece_reduce, (size_t)(npieces + n) * sizeof *dr->piece_reduce);
        for (int j = 0; j < n; j++)
            dr->piece_gather[npieces + j] = dr->piece_reduce[npieces + j] = -1;
        if (gathers)
            dr->piece_gather[npieces] = lc_add(dr, COLL_ALLGATHER, params * par->param_bytes_per_param / n, op->stage);
        for (int j = 0; j < n; j++) {
            if (gathers && j + 1 < n)
                dr->piece_gather[npieces + j + 1] =
                    lc_add(dr, COLL_ALLGATHER, params * par->param_bytes_per_param / n, op->stage);
            if (reduces)
                dr->piece_reduce[npieces + j] =
                    lc_add(dr, COLL_REDUCE_SCATTER, trained * par->grad_bytes_per_param / n, op->stage);
        }
        npieces += n;
    }
    dr->op_piece[nops] = npieces;
    dr->lc_issued = pg_xcalloc((size_t)dr->nlc + 1, sizeof *dr->lc_issued);
    /* the rank's gradient and parameters per GPU (HSDP's all-reduce, ZeRO-2's gather) */
    for (int st = 0; st < s->nstages; st++)
        if (s->stage_rank[st] == dr->rank) {
            double trained = stage_trainable_params(&in->wl->stage[st]) * share;
            dr->grad_bytes += trained * par->grad_bytes_per_param;
            dr->param_bytes += trained * par->param_bytes_per_param;
        }
}

/* The rings of replicas first, first + step, ... (n of them) of each tp x cp
 * rank t at pipeline rank r: channel rings, or mirror rings when one replica
 * stands for all. */
static void add_group_rings(const sim_input *in, coll_rings *rings, int r, int first, int step, int n,
                            sg_host_t *hosts, int *node)
{
    for (int t = 0; t < eng.grp; t++) {
        for (int k = 0; k < n; k++) {
            int g = eng_group_gpu(r, first + k * step, t);
            hosts[k] = sg_host_by_name(in->plat->gpu[g].host);
            node[k] = gpu_node(in, g);
        }
        if (eng.mirror)
            coll_rings_add_mirror(rings, hosts, n);
        else
            coll_rings_add_channels(rings, hosts, node, n);
    }
}

/* The shard groups' rings and HSDP's rings across them (header); mirrored,
 * replica 0's groups only. */
static void shard_rings(const sim_input *in, dp_rank *dr, sg_host_t *hosts, int *node)
{
    int sg = eng_dp_shard_group(), ngroups = eng.dp / sg;
    for (int grp = 0; grp < (eng.mirror ? 1 : ngroups); grp++)
        add_group_rings(in, &dr->shard, dr->rank, grp * sg, 1, sg, hosts, node);
    for (int k = 0; ngroups > 1 && k < (eng.mirror ? 1 : sg); k++)
        add_group_rings(in, &dr->cross, dr->rank, k, sg, ngroups, hosts, node);
}

/* The experts' rings of rank dr (dp_rank.expert): one per class of GPUs
 * holding the same experts (Megatron's order q = d x grp + t: with etp=1
 * class q mod ep, else replica d mod ep at tp x cp rank t), in q order, of
 * parallel_expert_dp GPUs; with symmetric replicas only the classes with a
 * simulated member, as block rings of their simulated members. */
static void expert_rings(const sim_input *in, dp_rank *dr)
{
    int n_per = parallel_expert_dp(eng.grp, eng.dp, eng.ep, eng.expert_tp1);
    if (!eng_dp_experts_apart() || n_per <= 1)
        return;
    /* one pass over the rank's GPUs, each to its class's list (in q order) */
    int nclass = eng.expert_tp1 ? eng.ep : eng.ep * eng.grp;
    sg_host_t *hosts = pg_xmalloc((size_t)nclass * n_per * sizeof *hosts);
    int *node = pg_xmalloc((size_t)nclass * n_per * sizeof *node);
    int *count = pg_xcalloc((size_t)nclass, sizeof *count), *nsim = pg_xcalloc((size_t)nclass, sizeof *nsim);
    for (int d = 0; d < eng.dp; d++)
        for (int t = 0; t < eng.grp; t++) {
            int q = d * eng.grp + t, c = eng.expert_tp1 ? q % eng.ep : (d % eng.ep) * eng.grp + t;
            if (count[c] >= n_per)   /* a layout ep does not divide (experiment.c refuses it) */
                continue;
            size_t at = (size_t)c * n_per + count[c]++;
            int g = eng_group_gpu(dr->rank, d, t);
            hosts[at] = sg_host_by_name(in->plat->gpu[g].host);
            node[at] = gpu_node(in, g);
            nsim[c] += d < eng.nrep;
        }
    for (int c = 0; c < nclass; c++) {
        if (nsim[c] == 0)
            continue;
        int first = dr->expert.count;
        coll_rings_add_channels(&dr->expert, hosts + (size_t)c * n_per, node + (size_t)c * n_per, count[c]);
        if (eng.mirror)
            coll_rings_simulate_block(&dr->expert, first, nsim[c]);
    }
    free(hosts);
    free(node);
    free(count);
    free(nsim);
}

/* Reducers: buckets, the tp groups' rings (flat or hierarchical). */
void eng_dp_setup(const sim_input *in)
{
    const schedule *s = in->sched;
    const sim_parallel *par = in->par;
    int tp = eng.grp, dp = par->dp;
    eng.dpr = pg_xcalloc((size_t)s->pp, sizeof *eng.dpr);
    eng.opt_barrier = sg_barrier_init((unsigned)s->pp);
    sg_host_t *hosts = pg_xmalloc((size_t)dp * sizeof *hosts);
    int *node = pg_xmalloc((size_t)dp * sizeof *node);
    for (int r = 0; r < s->pp; r++) {
        dp_rank *dr = &eng.dpr[r];
        dr->rank = r;
        dr->waiting = -1;
        dr->wake = sg_sem_init(0);
        dr->host = eng.rep[0].ranks[r].host;
        if (dp > 1 && eng_dp_sharded()) {
            dr->ready = pg_xcalloc(1, sizeof *dr->ready);
            layer_setup(in, dr);
            shard_rings(in, dr, hosts, node);
        } else if (dp > 1) {
            expert_rings(in, dr);
            dp_buckets(in, dr);
        } else
            dr->ready = pg_xcalloc(1, sizeof *dr->ready);
        /* Mirrored (symmetric replicas): every member of a group is on a
         * node of its own, where the hierarchical algorithm never applies. */
        int hier = dp > 1 && par->algo == DP_ALGO_HIERARCHICAL && !eng.mirror && !par->distributed_optimizer;
        for (int b = 0; b < dr->nbuckets; b++)   /* layer_setup's otherwise */
            dr->grad_bytes += dr->bucket_bytes[b];
        if (dp > 1 && par->distributed_optimizer && par->overlap)
            gather_setup(in, dr);
        for (int t = 0; t < tp && dp > 1; t++) {
            for (int d = 0; d < dp; d++) {
                int g = eng_group_gpu(r, d, t);
                hosts[d] = sg_host_by_name(in->plat->gpu[g].host);
                node[d] = gpu_node(in, g);
            }
            int first = dr->flat.count;
            coll_rings_add_channels(&dr->flat, hosts, node, dp);
            if (eng.mirror)   /* symmetric: the block's members (block rings; one: a mirror ring) */
                coll_rings_simulate_block(&dr->flat, first, eng.nrep);
            if (hier && !coll_hier_add(&dr->hier, hosts, node, dp))
                hier = 0;
        }
        dr->use_hier = hier && dr->hier.local > 0;
    }
    free(hosts);
    free(node);
    embed_setup(in);
}

/* One reducer actor per pipeline rank ("reduceR"), when dp or the
 * optimizer is simulated. */
void eng_dp_start_actors(void)
{
    char name[MAILBOX_NAME_MAX + 16];
    for (int r = 0; eng.dpr && r < eng.in->sched->pp; r++) {
        snprintf(name, sizeof name, "reduce%d", r);
        sg_actor_t a = sg_actor_init(name, eng.dpr[r].host);
        sg_actor_set_data(a, &eng.dpr[r]);
        sg_actor_start(a, reducer_actor, 0, NULL);
    }
}
