/* job.c: experiment -> workload -> schedule -> platform, shared by every
 * subcommand (see job.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/job.h"
#include "model/costmodel.h"
#include "opt/offload_milp.h"
#include "opt/zb_ilp.h"
#include "schedule/torch_csv.h"
#include "util/datapath.h"

/* The bundled default experiment, looked up like any data file. */
#define DEFAULT_EXPERIMENT "experiments/default.yaml"
/* network=ideal: GPU speed when the workload's times are absolute (any
 * value works: ops take their given time whatever the speed). */
#define IDEAL_SPEED_FLOPS 1e12
/* network=ideal: GPU memory when neither memory.capacity nor the profile's
 * GPU type says otherwise (an 80 GB part, the common training GPU). */
#define IDEAL_MEMORY_BYTES (80.0 * 1024 * 1024 * 1024)
#define SCHEDULE_FILE_PREFIX "file:"
/* A key that does not apply (experiment_ignored_keys): a warning on
 * stderr; the run goes on and its exit code is unchanged. */
static void warn_ignored(const char *msg, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "pipegrid: warning: %s\n", msg);
}

/* A job over several NVLink domains whose last one is only partly used:
 * its groups that cross a domain boundary go over the NICs, which a user
 * comparing rack systems at a GPU count that is no multiple of the rack's
 * (256 GPUs on 72-GPU racks) rarely means.  A warning; the run goes on. */
static void warn_partial_domain(const experiment *e, int gpus)
{
    int domain = platform_cluster_domain_gpus(e);
    if (domain <= e->cluster_gpus_per_node || gpus <= domain || gpus % domain == 0)
        return;
    fprintf(stderr,
            "pipegrid: warning: cluster.nvlink_domain: the job's %d GPUs fill %d NVLink domains of %d and %d GPUs of "
            "another; groups across a domain boundary go over the NICs (NVIDIA's GB200/GB300 jobs use 64 GPUs per "
            "rack: cluster.nvlink_domain=64)\n",
            gpus, gpus / domain, domain, gpus % domain);
}

static int schedule_uses_chunks(const char *name)
{
    return sched_has_flags(name, SCHED_USES_CHUNKS);
}

int job_load_experiment(job *j, const char *experiment_path, const char *const *sets, int nsets, pg_status *st)
{
    memset(j, 0, sizeof *j);
    config_init(&j->cfg);
    int rc;
    if (experiment_path != NULL) {
        rc = config_load_file(&j->cfg, experiment_path, st);
    } else {
        char path[4096];
        if (datapath_find(DEFAULT_EXPERIMENT, path, sizeof path) != 0)
            return pg_fail(st, PG_EXIT_INPUT, "%s: bundled default experiment not found (set PIPEGRID_DATA_DIR)",
                           DEFAULT_EXPERIMENT);
        rc = config_load_file(&j->cfg, path, st);
    }
    if (rc != 0)
        return rc;
    for (int i = 0; i < nsets; i++)
        if ((rc = config_apply_set(&j->cfg, sets[i], st)) != 0)
            return rc;
    if ((rc = experiment_from_config(&j->cfg, &j->exp, st)) != 0)
        return rc;
    strbuf chunked;
    sb_init(&chunked);
    sched_names(SCHED_USES_CHUNKS, ", ", " or ", &chunked);
    exp_schedule_info info = {.uses_chunks = schedule_uses_chunks, .chunk_schedules = chunked.data};
    experiment_ignored_keys(&j->cfg, &j->exp, &info, warn_ignored, NULL);
    experiment_rare_settings(&j->cfg, &j->exp, warn_ignored, NULL);
    sb_free(&chunked);
    return 0;
}

/* The cost-aware generators see one number per op kind: the slowest rank's
 * share (the bottleneck rank sets the pace of a pipeline). */
static void rank_share_times(const workload *w, sched_params *p)
{
    for (int s = 0; s < w->nstages; s++) {
        const stage_cost *c = &w->stage[s];
        if (c->f_s > p->t_f) p->t_f = c->f_s;
        if (c->b_s > p->t_b) p->t_b = c->b_s;
        if (c->w_s > p->t_w) p->t_w = c->w_s;
    }
    const stage_cost *c0 = &w->stage[0];
    p->w_fraction = c0->act_b_bytes > 0 ? c0->act_w_bytes / c0->act_b_bytes : 0.0;
}

int job_ep_overlap(const experiment *e)
{
    return e->ep_overlap && e->ep > 1;
}

int job_selective_in_backward(const experiment *e)
{
    return e->recompute == RECOMPUTE_SELECTIVE && job_ep_overlap(e) && e->offload == OFFLOAD_NONE &&
           !e->recompute_backward;
}

const char *job_pairs_in_order(const job *j, const memplan *plan)
{
    if (plan_is_empty(plan) || j->exp.ep <= 1)
        return NULL;
    const schedule *s = &j->sched;
    int marked = 0;
    for (int r = 0; r < s->pp && !marked; r++)
        for (int i = 0; i < s->nops[r] && !marked; i++)
            marked = s->ops[r][i].overlap_next;
    if (!marked)
        return NULL;
    if (job_ep_overlap(&j->exp))
        return "ep.overlap's combined steps";
    return j->exp.dualpipe_overlap ? "dualpipe.overlap's pairs" : NULL;
}

/* ep.overlap where Megatron-Core has it: a schedule that runs combined
 * steps (the registry's SCHED_EP_OVERLAP), no full recomputation (its
 * TransformerConfig refuses recompute_granularity='full' with it). */
static int check_ep_overlap(const experiment *e, pg_status *st)
{
    if (!job_ep_overlap(e))
        return 0;
    if (!sched_has_flags(e->schedule, SCHED_EP_OVERLAP)) {
        strbuf names;
        sb_init(&names);
        sched_names(SCHED_EP_OVERLAP, ", ", " or ", &names);
        pg_fail_key(st, PG_EXIT_INPUT, "ep.overlap", "needs schedule=%s (Megatron-Core's combined 1F1B), not '%s'",
                    names.data, e->schedule);
        sb_free(&names);
        return job_locate(e, NULL, st);
    }
    if (e->recompute == RECOMPUTE_FULL) {
        pg_fail_key(st, PG_EXIT_INPUT, "ep.overlap", "not with recompute=full (Megatron-Core refuses the combination)");
        return job_locate(e, NULL, st);
    }
    return 0;
}

int job_sched_params(const experiment *e, sched_params *p, pg_status *st)
{
    /* Generators take per-rank-share times: a workload of pp stages. */
    workload share;
    int rc = workload_build(e, e->pp, &share, st);
    if (rc == PG_EXIT_INPUT &&
        (e->stage_first_layers != STAGE_LAYERS_EVEN || e->stage_last_layers != STAGE_LAYERS_EVEN)) {
        /* stage.first_layers / last_layers fix the edge model chunks (pp x chunks stages), which pp
         * stages may not hold (DeepSeek-V3's 4 and 1 layers at pp 2): the ranks' shares split evenly;
         * the simulated workload keeps the layout */
        experiment even = *e;
        even.stage_first_layers = even.stage_last_layers = STAGE_LAYERS_EVEN;
        pg_status_clear(st);
        rc = workload_build(&even, e->pp, &share, st);
    }
    if (rc != 0)
        return rc;
    *p = (sched_params){.pp = e->pp, .m = e->microbatches, .chunks = e->chunks,
                        .t_comm = e->network == NET_IDEAL ? e->ideal_latency_s : 0.0, .mem_limit = e->memory_limit,
                        .ep_overlap = job_ep_overlap(e)};
    rank_share_times(&share, p);
    workload_free(&share);
    double tp_share = experiment_tp_share(e);   /* one GPU's share, as the simulator runs it */
    p->t_f *= tp_share;
    p->t_b *= tp_share;
    p->t_w *= tp_share;
    return 0;
}

/* Place an error of a lower layer where the user set the key at fault
 * (job.h). */
int job_locate(const experiment *e, const char *fallback, pg_status *st)
{
    if (st->file[0] == '\0' && st->key[0] == '\0' && fallback != NULL) {
        pg_origin at = experiment_origin(e, fallback);
        if (at.file != NULL) {
            pg_status inner = *st;
            return pg_fail_at(st, inner.code, at, fallback, "%s", inner.msg);
        }
    }
    if (st->key[0] != '\0')
        pg_status_locate(st, experiment_origin(e, st->key));
    return st->code;
}

static int load_schedule_file(job *j, const char *path, pg_status *st)
{
    const experiment *e = &j->exp;
    int rc = sched_import_torch_csv(path, &j->sched, st);
    if (rc != 0)
        return job_locate(e, "schedule", st);
    j->have_sched = 1;
    /* The file fixes pp and m: they replace an experiment file's values, but
     * a different value asked for on the command line is a contradiction. */
    if (config_origin_is_set(e->origin_pp) && e->pp != j->sched.pp)
        return pg_fail_at(st, PG_EXIT_INPUT, e->origin_pp, "pp", "%d, but schedule file %s has %d ranks", e->pp,
                          path, j->sched.pp);
    if (config_origin_is_set(e->origin_microbatches) && e->microbatches != j->sched.m)
        return pg_fail_at(st, PG_EXIT_INPUT, e->origin_microbatches, "microbatches",
                          "%d, but schedule file %s has %d microbatches", e->microbatches, path, j->sched.m);
    j->exp.pp = j->sched.pp;
    j->exp.microbatches = j->sched.m;
    if ((rc = sched_validate(&j->sched, st)) != 0)
        return job_locate(e, "schedule", st);
    return sched_check_deadlock(&j->sched, st);
}

/* Same generator and parameters: the generators are deterministic, so the
 * schedule is the same. */
static int same_params(const sched_params *a, const sched_params *b)
{
    return a->pp == b->pp && a->m == b->m && a->chunks == b->chunks && a->t_f == b->t_f && a->t_b == b->t_b &&
           a->t_w == b->t_w && a->t_comm == b->t_comm && a->mem_limit == b->mem_limit && a->w_fraction == b->w_fraction &&
           a->ep_overlap == b->ep_overlap;
}

/* A generated schedule from the cache, or generated and kept there (a slot
 * in turn); 0 or the generator's error. */
static int generate_cached(const char *name, const sched_params *p, schedule *out, job_sched_cache *cache,
                           pg_status *st)
{
    for (int i = 0; cache && i < JOB_SCHED_CACHE_SLOTS; i++) {
        const job_sched_cache_slot *c = &cache->slot[i];
        if (c->used && strcmp(c->name, name) == 0 && same_params(&c->params, p)) {
            sched_copy(out, &c->sched);
            cache->hits++;
            return 0;
        }
    }
    int rc = sched_generate(name, p, out, st);
    if (rc == 0 && cache && strlen(name) < sizeof cache->slot[0].name) {
        job_sched_cache_slot *c = &cache->slot[cache->next];
        cache->next = (cache->next + 1) % JOB_SCHED_CACHE_SLOTS;
        if (c->used) sched_free(&c->sched);
        snprintf(c->name, sizeof c->name, "%s", name);
        c->params = *p;
        sched_copy(&c->sched, out);
        c->used = 1;
    }
    return rc;
}

void job_sched_cache_free(job_sched_cache *cache)
{
    for (int i = 0; i < JOB_SCHED_CACHE_SLOTS; i++)
        if (cache->slot[i].used) sched_free(&cache->slot[i].sched);
    memset(cache, 0, sizeof *cache);
}

int job_build_schedule(job *j, pg_status *st)
{
    return job_build_schedule_cached(j, NULL, st);
}

int job_build_schedule_cached(job *j, job_sched_cache *cache, pg_status *st)
{
    const experiment *e = &j->exp;
    int rc;
    if (strncmp(e->schedule, SCHEDULE_FILE_PREFIX, strlen(SCHEDULE_FILE_PREFIX)) == 0) {
        if ((rc = load_schedule_file(j, e->schedule + strlen(SCHEDULE_FILE_PREFIX), st)) != 0)
            return rc;
    } else {
        if (sched_find_generator(e->schedule) == NULL) {
            strbuf known;
            sb_init(&known);
            sched_names(0, ", ", ", ", &known);
            rc = pg_fail_at(st, PG_EXIT_INPUT, e->origin_schedule, "schedule",
                            "unknown schedule '%s' (known: %s, file:PATH)", e->schedule, known.data);
            sb_free(&known);
            return rc;
        }
        if ((rc = check_ep_overlap(e, st)) != 0)
            return rc;
        sched_params p;
        if ((rc = job_sched_params(e, &p, st)) != 0)
            return job_locate(e, NULL, st);
        /* the ILP refinement has a time limit: not reproducible, never cached */
        int refine = sched_has_flags(e->schedule, SCHED_REFINE_ZB_ILP);
        if ((rc = generate_cached(e->schedule, &p, &j->sched, refine ? NULL : cache, st)) != 0)
            return job_locate(e, "schedule", st);
        j->have_sched = 1;
        /* The registry marks the schedules the exact ILP (opt layer, GLPK)
         * may improve on small cases. */
        if (refine &&
            (rc = zb_ilp_refine(&p, &j->sched, e->zb_auto_time_limit_s, st)) != 0)
            return job_locate(e, "schedule", st);
    }
    if ((rc = workload_build(e, j->sched.nstages, &j->wl, st)) != 0)
        return job_locate(e, NULL, st);
    if (job_selective_in_backward(e))
        memory_selective_in_backward(&j->wl);
    j->have_wl = 1;
    return 0;
}

static int place_ranks(job *j, pg_status *st);

int job_build_platform(job *j, pg_status *st)
{
    const experiment *e = &j->exp;
    int needed = e->pp * e->tp * e->cp * e->dp;
    int rc;
    switch (e->network) {
    case NET_IDEAL: {
        double speed = j->wl.ref_speed_flops > 0 ? j->wl.ref_speed_flops : IDEAL_SPEED_FLOPS;
        double memory = IDEAL_MEMORY_BYTES;
        const gpu_system *g = j->wl.ref_gpu[0] ? gpu_system_find(j->wl.ref_gpu) : NULL;
        if (g != NULL)
            memory = g->memory_bytes;
        rc = platform_make_ideal(needed, e->ideal_latency_s, speed, memory, &j->plat, st);
        break;
    }
    case NET_CLUSTER:
        rc = platform_make_cluster_for(e, needed, &j->plat, st);
        if (rc == 0)
            warn_partial_domain(e, needed);
        break;
    default:
        rc = platform_load(e->platform_path, &j->plat, st);
        break;
    }
    if (rc != 0)
        return job_locate(e, NULL, st);
    j->have_plat = 1;
    return place_ranks(j, st);
}

int job_borrow_platform(job *j, const platform_desc *plat, pg_status *st)
{
    j->plat = *plat;
    j->have_plat = 1;
    j->plat_borrowed = 1;
    return place_ranks(j, st);
}

/* The checks and the rank placement that follow a platform, built or borrowed. */
static int place_ranks(job *j, pg_status *st)
{
    const experiment *e = &j->exp;
    int needed = e->pp * e->tp * e->cp * e->dp;
    if (j->plat.ngpus < needed)
        return pg_fail_at(st, PG_EXIT_INPUT, e->origin_network, "network",
                          "platform %s has %d GPUs, the job needs pp x tp x cp x dp = %d x %d x %d x %d = %d",
                          e->network == NET_PLATFORM ? e->platform_path : "(generated)", j->plat.ngpus, e->pp,
                          e->tp, e->cp, e->dp, needed);
    /* Megatron's rank order: tp fastest, then cp, then dp, then pp. Pipeline
     * rank r of the first data-parallel replica is GPU r * tp * cp * dp. */
    j->rank_gpu = pg_xcalloc((size_t)e->pp, sizeof *j->rank_gpu);
    for (int r = 0; r < e->pp; r++)
        j->rank_gpu[r] = r * e->tp * e->cp * e->dp;
    return 0;
}

void job_free(job *j)
{
    if (j->have_sched)
        sched_free(&j->sched);
    if (j->have_wl)
        workload_free(&j->wl);
    if (j->have_plat && !j->plat_borrowed)
        platform_free(&j->plat);
    free(j->rank_gpu);
    config_free(&j->cfg);
    job_judged_free(j->judged);
    memset(j, 0, sizeof *j);
}

/* ---- tensor / data parallelism (job.h) ------------------------------------- */

double job_dp_bucket_bytes(const job *j)
{
    const experiment *e = &j->exp;
    double share = experiment_times_are_tp_groups(e) ? 1.0 / e->tp : 1.0;
    return workload_dp_bucket_bytes(&j->wl, share, experiment_grad_bytes(e), e->dp_bucket_bytes);
}

int job_build_parallel(const job *j, job_parallel *jp, pg_status *st)
{
    (void)st;
    const experiment *e = &j->exp;
    memset(jp, 0, sizeof *jp);
    int pp = j->sched.pp, tp = e->tp, dp = e->dp;
    size_t n = (size_t)pp * (size_t)tp * (size_t)e->cp * (size_t)dp;
    jp->gpu = pg_xcalloc(n, sizeof *jp->gpu);
    for (size_t g = 0; g < n; g++)
        jp->gpu[g] = (int)g;            /* Megatron: tp fastest, then cp, then dp, then pp */
    /* Each rank's optimizer step on its GPU type (cached by type). */
    jp->optimizer_s = pg_xcalloc((size_t)pp, sizeof *jp->optimizer_s);
    int split = experiment_times_are_tp_groups(e), any_opt = 0;
    gpu_params g;
    char loaded[sizeof g.name + 1] = "";
    int have = 0;
    for (int r = 0; r < pp; r++) {
        const char *type = j->plat.gpu[j->rank_gpu[r]].type;
        if (!type[0])
            type = j->wl.ref_gpu;
        if (!type[0])
            continue;
        if (strcmp(type, loaded) != 0) {
            pg_status ignore;
            pg_status_clear(&ignore);
            have = gpu_params_load(type, &g, &ignore) == 0;
            snprintf(loaded, sizeof loaded, "%s", type);
        }
        double params = 0, experts = 0;
        for (int s = 0; s < j->wl.nstages; s++)
            if (j->sched.stage_rank[s] == r) {
                params += stage_trainable_params(&j->wl.stage[s]) / (split ? tp : 1);
                experts += stage_trainable_expert_params(&j->wl.stage[s]) / (split ? tp : 1);
            }
        /* the distributed optimizer steps each replica's 1/dp shard (of the experts, 1 / the GPUs holding
         * them), ZeRO-2/3 its shard group's */
        if (e->dp_sharding == DP_SHARD_OPTIMIZER && dp > 1)
            params = (params - experts) / dp + experts / experiment_expert_dp(e);
        else if (e->dp_sharding != DP_SHARD_NONE && dp > 1)
            params /= e->dp_shard_group;
        if (have && params > 0) {
            jp->optimizer_s[r] = costmodel_optimizer_s(&g, params);
            any_opt = 1;
        }
    }
    jp->par = (sim_parallel){
        .tp = tp, .dp = dp, .gpu = jp->gpu, .split_compute = split,
        .tp_comm = e->network != NET_IDEAL, .sequence_parallel = e->tp_sequence_parallel,
        .tp_in_ops = e->tp_comm_overlap,
        .grad_bytes_per_param = e->network != NET_IDEAL ? experiment_grad_bytes(e) : 0.0,
        .bucket_bytes = job_dp_bucket_bytes(j), .overlap = e->dp_overlap, .algo = (dp_algo)e->dp_algorithm,
        .distributed_optimizer = e->memory_zero1, .param_bytes_per_param = experiment_weight_bytes(e),
        .sharding = e->dp_sharding, .shard_group = e->dp_shard_group,
        .stepwise_collectives = e->collectives_stepwise,
        .optimizer_s = any_opt ? jp->optimizer_s : NULL,
        .embed_sync_bytes = e->network != NET_IDEAL ? j->wl.tied_embedding_params * experiment_grad_bytes(e) : 0.0,
        .cp = e->cp, .ep = e->ep, .expert_tp1 = experiment_expert_tp1(e),
        .ep_hybrid = e->ep_dispatcher == EP_DISPATCH_HYBRIDEP, .overlap_pairs = e->dualpipe_overlap,
        .combined_pairs = job_ep_overlap(e),
    };
    jp->active = tp > 1 || dp > 1 || e->cp > 1 || any_opt || jp->par.embed_sync_bytes > 0;
    return 0;
}

const sim_parallel *job_sim_parallel(const job_parallel *jp)
{
    return jp->active ? &jp->par : NULL;
}

void job_parallel_free(job_parallel *jp)
{
    free(jp->gpu);
    free(jp->optimizer_s);
    memset(jp, 0, sizeof *jp);
}

int job_simulate_plan(const job *j, const memplan *plan, job_parallel *jpar, timeline *tl, sim_outcome *out,
                      pg_status *st)
{
    memset(out, 0, sizeof *out);
    int rc = job_build_parallel(j, jpar, st);
    if (rc == 0 && job_judged_take(j, plan, tl, out))
        return 0;
    if (rc == 0) {
        sim_input in = {.sched = &j->sched, .wl = &j->wl, .plat = &j->plat, .rank_gpu = j->rank_gpu,
                        .zero_byte_messages = j->exp.network == NET_IDEAL, .plan = plan,
                        .par = job_sim_parallel(jpar), .copy_model = j->exp.offload_copy_model,
                        .copy_slots = j->exp.offload_copy_slots, .replicas = (sim_replicas)j->exp.dp_replicas,
                        .engine = (sim_engine)j->exp.sim_engine};
        rc = sim_run(&in, tl, out, st);
    }
    return rc;
}

metrics_input job_metrics_input(const job *j, const timeline *tl, const memplan *plan)
{
    return (metrics_input){.sched = &j->sched, .wl = &j->wl, .plat = &j->plat, .rank_gpu = j->rank_gpu, .tl = tl,
                           .iter_overhead_s = j->wl.iter_overhead_s,
                           .bytes_per_param = j->exp.bytes_per_param,
                           .capacity_override_bytes = j->exp.memory_capacity_bytes,
                           .plan = plan_is_empty(plan) ? NULL : plan, .sharding = memory_sharding_of(&j->exp),
                           .dp = j->exp.dp, .tp = j->exp.tp, .cp = j->exp.cp,
                           .tp_time_share = experiment_tp_share(&j->exp),
                           .offload = j->exp.offload != OFFLOAD_NONE,
                           .combined_pairs = job_ep_overlap(&j->exp)};
}
