/* replay.c: sim_run, the actor-per-rank replay of a schedule (sim.h's
 * contract; the engine's files: engine_internal.h).
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
 *
 * Replicas.  Every data-parallel replica has its own ranks, channels and
 * actors (mailboxes and actors of replica d > 0 carry a ".rD" suffix); only
 * replica 0 records ops, transfers and copies, since the replicas run the
 * same lists and differ only by contention, and each replica's span is
 * recorded (TLC_PIPELINE).  When the replicas are symmetric (replicas.c)
 * only replica 0 is simulated, its gradient rings as mirror rings
 * (collectives.h), and its span is every replica's; or only a block of the
 * first b replicas, with block rings, replica d's span being d mod b's.
 *
 * Logging: PIPEGRID_SIM_LOG, if set, is passed to SimGrid's log control
 * after the engine quiets SimGrid (e.g. pg_engine.thres:debug traces every
 * op, transfer, copy and collective of the engine's files).
 */
#include "sim/engine_internal.h"

#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <xbt/config.h>

XBT_LOG_NEW_CATEGORY(pg_engine, "pipegrid's replay engine (src/sim)");
XBT_LOG_DEFAULT_CATEGORY(pg_engine);

engine_state eng;
static int ran_once;

void eng_record_op(rank_state *rs, sched_op op, int kind, double start_s, double end_s)
{
    if (!rs->record)
        return;
    tl_op rec = {.start_s = start_s, .end_s = end_s, .rank = rs->rank, .stage = op.stage, .mb = op.mb,
                 .kind = (uint8_t)kind};
    timeline_add_op(eng.tl, &rec);
}

void eng_finish_op(rank_state *rs, sched_op op, double start_s, double end_s)
{
    rs->last_end_s = end_s;
    XBT_DEBUG("rank %d replica %d: op kind %d stage %d mb %d [%.9f, %.9f]", rs->rank, rs->rep->index, op.kind,
              op.stage, op.mb, start_s, end_s);
    if (rs->record) {
        tl_op rec = {.start_s = start_s, .end_s = end_s, .rank = rs->rank, .stage = op.stage, .mb = op.mb,
                     .kind = op.kind};
        timeline_add_op(eng.tl, &rec);
    }
}

static void compute_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    rank_state *rs = sg_actor_self_get_data();
    eng_own_mailboxes(rs);
    const schedule *s = eng.in->sched;
    const sched_op *ops = s->ops[rs->rank];
    for (; rs->next < s->nops[rs->rank]; rs->next++) {
        sched_op op = ops[rs->next];
        if (eng.plan)
            eng_plan_reach(rs, rs->next);
        if (!eng_wait_for_input(rs, op))
            return; /* deadlock: reported after the run */
        if (eng.plan)
            eng_plan_before(rs, op);
        const stage_cost *cost = &eng.in->wl->stage[op.stage];
        double start_s = simgrid_get_clock();
        if (eng.par == NULL) {
            sg_actor_execute(actmem_op_ref_s(cost, op.kind) * rs->flops_per_ref_s);
            eng.events++;
        } else {
            if (rs->next == 0)
                rs->first_start_s = start_s;
            if (op.overlap_next && (eng.par->overlap_pairs || eng.par->combined_pairs) && !eng.plan &&
                rs->next + 1 < s->nops[rs->rank]) {
                if (!(eng.par->combined_pairs ? eng_run_combined(rs, op, ops[rs->next + 1])
                                              : eng_run_pair(rs, op, ops[rs->next + 1], start_s)))
                    return; /* deadlock: reported after the run */
                continue;
            }
            eng_run_compute(rs, rs->next, actmem_op_ref_s(cost, op.kind));
            eng_op_communication(rs, op, 1);
        }
        rs->rep->done[eng_done_index(op.kind, op.stage, op.mb)] = 1;
        eng_finish_op(rs, op, start_s, simgrid_get_clock());
        eng_send_output(rs, op);
        if (eng.plan)
            eng_plan_after(rs, op);
    }
    if (eng.dpr)
        eng_dp_finished(&eng.dpr[rs->rank]);
}

static void engine_free(void)
{
    const schedule *s = eng.in->sched;
    eng_plan_free();
    for (int d = 0; d < eng.nrep; d++) {
        replica *rep = &eng.rep[d];
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
            free(rs->tp_host);
            free(rs->tp_flops_per_ref_s);
            coll_rings_free(&rs->tp_ring);
            coll_rings_free(&rs->cp_ring);
        }
        free(rep->activation);
        free(rep->gradient);
        free(rep->ranks);
        free(rep->done);
    }
    eng_dp_free();
    for (int i = 0; eng.epg && i < eng.in->sched->pp * (eng.nrep / eng_ep_group_replicas()); i++) {
        sg_barrier_destroy(eng.epg[i].bar);
        free(eng.epg[i].flow);
    }
    free(eng.epg);
    free(eng.rep);
    memset(&eng, 0, sizeof eng);
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
    /* Tracing the engine when debugging (replay.c's header). */
    const char *log = getenv("PIPEGRID_SIM_LOG");
    if (log != NULL && log[0] != '\0')
        xbt_log_control_set(log);
}

/* The platform index of GPU t of rank r's group in replica d. */
int eng_group_gpu(int r, int d, int t)
{
    const sim_parallel *par = eng.in->par;
    return par && par->gpu ? par->gpu[((size_t)r * eng.dp + d) * eng.grp + t] : eng.in->rank_gpu[r];
}

/* Rank r of replica d: its GPU group's hosts and speeds, its tp and cp
 * rings; 0 or PG_EXIT_INPUT (a GPU without a host). */
static int rank_setup(replica *rep, int r, pg_status *st)
{
    const sim_input *in = eng.in;
    int d = rep->index, tp = eng.grp, tp_degree = eng.tp, cp = eng.cp;
    rank_state *rs = &rep->ranks[r];
    rs->rank = r;
    rs->rep = rep;
    rs->record = d == 0;
    rs->tp = tp;
    rs->wake = sg_sem_init(0);
    int *node = pg_xcalloc((size_t)tp, sizeof *node);   /* each group member's node: NCCL's channel rings */
    for (int t = 0; t < tp; t++) {
        int g = eng_group_gpu(r, d, t);
        node[t] = in->plat->gpu[g].node;
        sg_host_t h = sg_host_by_name(in->plat->gpu[g].host);
        if (h == NULL) {
            free(node);
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
            coll_rings_add_channels(&rs->tp_ring, rs->tp_host + (size_t)c * tp_degree, node + (size_t)c * tp_degree,
                                    tp_degree);
        for (int t = 0; t < tp_degree && cp > 1; t++) {
            sg_host_t ring[cp];
            int ring_node[cp];
            for (int c = 0; c < cp; c++) {
                ring[c] = rs->tp_host[(size_t)c * tp_degree + t];
                ring_node[c] = node[(size_t)c * tp_degree + t];
            }
            coll_rings_add_channels(&rs->cp_ring, ring, ring_node, cp);
        }
        rs->tp_same_time = 1;
        for (int t = 1; t < tp; t++)
            if (rs->tp_flops_per_ref_s[t] / sg_host_get_speed(rs->tp_host[t]) !=
                rs->flops_per_ref_s / sg_host_get_speed(rs->host))
                rs->tp_same_time = 0;
    }
    free(node);
    return 0;
}

/* Replica d: its ranks and channels; 0 or PG_EXIT_INPUT. */
static int replica_setup(int d, pg_status *st)
{
    const schedule *s = eng.in->sched;
    replica *rep = &eng.rep[d];
    rep->index = d;
    rep->ranks = pg_xcalloc((size_t)s->pp, sizeof *rep->ranks);
    rep->activation = pg_xcalloc((size_t)s->nstages, sizeof *rep->activation);
    rep->gradient = pg_xcalloc((size_t)s->nstages, sizeof *rep->gradient);
    rep->done = pg_xcalloc((size_t)OP_KIND_COUNT * (size_t)s->nstages * (size_t)s->m, 1);
    for (int r = 0; r < s->pp; r++) {
        int rc = rank_setup(rep, r, st);
        if (rc != 0)
            return rc;
    }
    for (int stage = 0; stage < s->nstages; stage++) {
        int here = s->stage_rank[stage];
        if (stage + 1 < s->nstages)
            eng_channel_setup(rep, &rep->activation[stage], stage, XFER_ACTIVATION, here, s->stage_rank[stage + 1]);
        if (stage > 0)
            eng_channel_setup(rep, &rep->gradient[stage], stage, XFER_GRADIENT, here, s->stage_rank[stage - 1]);
    }
    return 0;
}

/* One compute actor per rank and replica ("rankR", "rankR.rD"). */
static void start_compute_actors(void)
{
    const schedule *s = eng.in->sched;
    char name[MAILBOX_NAME_MAX + 16];
    for (int d = 0; d < eng.nrep; d++) {
        for (int r = 0; r < s->pp; r++) {
            if (d == 0)
                snprintf(name, sizeof name, "rank%d", r);
            else
                snprintf(name, sizeof name, "rank%d.r%d", r, d);
            sg_actor_t a = sg_actor_init(name, eng.rep[d].ranks[r].host);
            sg_actor_set_data(a, &eng.rep[d].ranks[r]);
            sg_actor_start(a, compute_actor, 0, NULL);
        }
    }
}

/* Each replica's span (TLC_PIPELINE), when tp / dp are simulated (with
 * symmetric blocks, replica d's is replica d mod the block's). */
static void record_pipelines(void)
{
    const schedule *s = eng.in->sched;
    for (int d = 0; d < eng.dp; d++) {
        tl_coll rec = {.rank = -1, .replica = d, .stage = -1, .mb = -1, .kind = TLC_PIPELINE};
        int any = 0;
        for (int r = 0; r < s->pp; r++) {
            const rank_state *rs = &eng.rep[d % eng.nrep].ranks[r];
            if (s->nops[r] == 0)
                continue;
            if (!any++ || rs->first_start_s < rec.start_s)
                rec.start_s = rs->first_start_s;
            if (rs->last_end_s > rec.end_s)
                rec.end_s = rs->last_end_s;
        }
        timeline_add_coll(eng.tl, &rec);
    }
}

/* The timeline's ops and transfers, counted before the run: the ops of
 * every list, and m messages per used channel (replica 0 records them). */
static void reserve_timeline(void)
{
    const schedule *s = eng.in->sched;
    size_t nxfers = 0;
    for (int st = 0; st < s->nstages; st++)
        nxfers += (size_t)(eng.rep[0].activation[st].used + eng.rep[0].gradient[st].used) * (size_t)s->m;
    timeline_reserve(eng.tl, eng.tl->nops + (size_t)sched_total_ops(s), eng.tl->nxfers + nxfers);
}

/* SimGrid, the platform and its routes; 0 or PG_EXIT_INPUT. */
static int platform_setup(const sim_input *in, pg_status *st)
{
    simgrid_setup();
    char err[PG_MSG_MAX - 64];
    if (sgx_load_platform(in->plat->xml_path, err, sizeof err) != 0)
        return pg_fail(st, PG_EXIT_INPUT, "%s: SimGrid refused the platform: %s", in->plat->xml_path, err);
    return sim_check_routes(in, st);   /* a missing route would abort at the first send */
}

/* Everything but the compute actors: replicas (the first `block` alone
 * when symmetric, block > 0), plan, reducers, ep groups. */
static int state_setup(const sim_input *in, timeline *tl, int block, pg_status *st)
{
    const sim_parallel *par = in->par;
    eng.in = in;
    eng.par = par;
    eng.tl = tl;
    eng.tp = par ? par->tp : 1;
    eng.cp = par && par->cp > 1 ? par->cp : 1;
    eng.ep = par && par->ep > 1 ? par->ep : 1;
    eng.grp = eng.tp * eng.cp;   /* the GPUs of a rank's group: tp x cp */
    eng.expert_tp1 = par && par->expert_tp1;
    eng.dp = par ? par->dp : 1;
    eng.mirror = block > 0;
    eng.nrep = eng.mirror ? block : eng.dp;
    eng.rep = pg_xcalloc((size_t)eng.nrep, sizeof *eng.rep);
    for (int d = 0; d < eng.nrep; d++) {
        int rc = replica_setup(d, st);
        if (rc != 0)
            return rc;
    }
    if (!plan_is_empty(in->plan)) {
        int rc = eng_plan_setup(in, st);
        if (rc != 0)
            return rc;
    }
    if (par && (eng.dp > 1 || par->optimizer_s != NULL || par->embed_sync_bytes > 0))
        eng_dp_setup(in);
    if (eng.ep > 1)
        eng_ep_setup(in);
    return 0;
}

/* User + system CPU seconds of the process so far (bench/bench_engine.sh
 * reads the run's share from the debug log: the machine may be shared). */
static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* The replay without actors unless the actor replay is asked for
 * (sim_input.engine; AUTO reads PIPEGRID_ENGINE=actors|events, for
 * comparisons). */
static int use_events(const sim_input *in)
{
    sim_engine want = in->engine;
    const char *env = getenv("PIPEGRID_ENGINE");
    if (want == SIM_ENGINE_AUTO && env != NULL && strcmp(env, "actors") == 0)
        want = SIM_ENGINE_ACTORS;
    return want != SIM_ENGINE_ACTORS;
}

/* Under an address-space limit (`ulimit -v`), SimGrid cannot always map
 * its actors' stacks (one per actor, contexts/stack-size each) or grow its
 * own tables, and then it aborts (exit 134, a core dump) where pipegrid
 * cannot see it coming.  While a limit is set, an abort from starting the
 * actors to the end of the run is reported as what it is, the environment
 * failing (exit 1, as the README's exit codes promise), after SimGrid's own
 * message.  Without a limit nothing changes: an abort there is a bug and
 * keeps its core dump. */
static void abort_under_limit(int sig)
{
    (void)sig;
    static const char msg[] = "pipegrid: the simulation ran out of address space (ulimit -v): SimGrid could not "
                              "allocate its actors' stacks or tables; raise the limit (see above)\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(PG_EXIT_INTERNAL);
}

/* Installs abort_under_limit while a finite RLIMIT_AS is set; returns
 * whether it did (restore with restore_abort). */
static int guard_abort(struct sigaction *old)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = abort_under_limit;
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGABRT, &sa, old) == 0;
}

int sim_run(const sim_input *in, timeline *tl, sim_outcome *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    if (ran_once)
        return pg_fail(st, PG_EXIT_INTERNAL, "sim_run: SimGrid runs one simulation per process");
    ran_once = 1;

    const schedule *s = in->sched;
    const sim_parallel *par = in->par;
    int dp = par ? par->dp : 1, ep = par && par->ep > 1 ? par->ep : 1;
    int tp = (par ? par->tp : 1) * (par && par->cp > 1 ? par->cp : 1);
    if (tp < 1 || dp < 1 || (par && (tp > 1 || dp > 1) && par->gpu == NULL))
        return pg_fail(st, PG_EXIT_INTERNAL, "sim_run: tp = %d, dp = %d without a GPU map", tp, dp);
    if (par && par->expert_tp1 ? (tp * dp) % ep != 0 || (ep % tp != 0 && tp % ep != 0) : dp % ep != 0)
        return pg_fail_key(st, PG_EXIT_INPUT, "ep", "the simulator takes expert-parallel groups from the data-parallel "
                           "replicas (with etp=1: ep consecutive GPUs of tp x cp x dp): ep = %d does not fit tp x cp "
                           "= %d, dp = %d", ep, tp, dp);
    int rc = platform_setup(in, st);
    if (rc != 0)
        return rc;
    out->replicas = dp;
    int block = sim_replicas_symmetric(in, out->replicas_why, sizeof out->replicas_why);
    out->replicas_simulated = block > 0 ? block : dp;
    rc = state_setup(in, tl, block, st);
    if (rc != 0) {
        engine_free();
        return rc;
    }
    reserve_timeline();
    eng.events_mode = use_events(in);
    struct sigaction old_abort;
    int guarded = guard_abort(&old_abort);
    if (eng.events_mode) {
        eng_events_start();
    } else {
        eng_plan_start_actors();
        start_compute_actors();
        eng_dp_start_actors();
    }

    struct timespec t0, t1;
    double cpu0_s = cpu_seconds();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    simgrid_run();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (guarded)
        sigaction(SIGABRT, &old_abort, NULL);
    double run_cpu_s = cpu_seconds() - cpu0_s;
    if (eng.events_mode)
        eng_events_free();
    out->wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;

    out->ops_total = sched_total_ops(s);
    for (int r = 0; r < s->pp; r++)
        out->ops_done += eng.rep[0].ranks[r].next;
    out->events = eng.events;
    out->actorless = eng.events_mode;
    out->completed = out->ops_done == out->ops_total;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    XBT_INFO("run: %ld of %ld ops, %ld events, %.3f s wall, %.3f s cpu, peak RSS %ld KiB (%s, replicas %d of %d)",
             out->ops_done, out->ops_total, out->events, out->wall_s, run_cpu_s, ru.ru_maxrss,
             eng.events_mode ? "without actors" : "actors", eng.nrep, eng.dp);
    if (par && out->completed)
        record_pipelines();
    if (!out->completed) {
        eng_describe_blocked(out);
        rc = pg_fail(st, PG_EXIT_DEADLOCK, "deadlock after %ld of %ld ops: %s", out->ops_done, out->ops_total,
                     out->blocked);
    }
    engine_free();
    return rc;
}
