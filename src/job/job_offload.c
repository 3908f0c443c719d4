/* job_offload.c: offload=plan: the job's input to the offload planner and
 * its choice of plan (opt/offload_order.h), shared by `run` (through
 * job_build_plan) and `plan offload`.
 *
 * The planner makes two plans per candidate order (two copy models) and
 * asks this file which runs faster: each is simulated in a forked child
 * (SimGrid runs one simulation per process, and the parent still has its
 * own to run), which sends back its makespan, or infinity when it ran out
 * of memory or did not complete.  The child simulates exactly what `run`
 * would (same platform, tp/dp collectives, optimizer step), so the plan
 * `run` replays is the one that was judged; the fastest that fits also sends
 * back its run (outcome and timeline), which `run` then reports instead of
 * simulating the same inputs again (job_judged_take).  A plan whose least
 * activations alone exceed a rank's capacity (job_plan_surely_oom) is out of
 * memory without a simulation.
 */
#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "job/job.h"
#include "opt/offload_ladder.h"
#include "util/units.h"

double *job_offload_policy(const job *j, plan_policy *pol)
{
    const experiment *e = &j->exp;
    int v = j->sched.v > 0 ? j->sched.v : 1;
    pol->offload_chunks = e->offload_preset == OFFLOAD_PRESET_PO_H   ? (v + 1) / 2
                          : e->offload_preset == OFFLOAD_PRESET_PO_F ? v
                                                                     : e->offload_chunks;
    if (!e->offload_rules || pol->offload == PLAN_OFFLOAD_NONE) return NULL;
    int pp = j->sched.pp, n = j->wl.nstages;
    double *buf = pg_xcalloc(2 * (size_t)pp + 3 * (size_t)n + 1, sizeof *buf);
    double *copy_bw = buf, *copy_lat_s = buf + pp, *f_s = buf + 2 * pp, *b_s = f_s + n, *w_s = b_s + n;
    /* The rules compare copies with the workload's op seconds, which are
     * reference seconds (workload.h): a copy of c seconds on a GPU of speed S
     * lasts c x S / ref_speed reference seconds. */
    for (int r = 0; r < pp; r++) {
        const pg_gpu *g = &j->plat.gpu[j->rank_gpu[r]];
        double ref_per_real = j->wl.ref_speed_flops > 0 && g->speed_flops > 0 ? g->speed_flops / j->wl.ref_speed_flops
                                                                               : 1.0;
        copy_bw[r] = g->host_bw / ref_per_real;
        copy_lat_s[r] = g->host_latency_s * ref_per_real;
    }
    for (int s = 0; s < n; s++) {
        f_s[s] = j->wl.stage[s].f_s;
        b_s[s] = j->wl.stage[s].b_s;
        w_s[s] = j->wl.stage[s].w_s;
    }
    pol->copy_bw = copy_bw;
    pol->copy_lat_s = copy_lat_s;
    pol->stage_f_s = f_s;
    pol->stage_b_s = b_s;
    pol->stage_w_s = w_s;
    pol->postpone_warmup = e->offload_postpone;
    /* rank 0's GPU sets the time base of the copy slots (the rules assume one GPU type) */
    const pg_gpu *g0 = &j->plat.gpu[j->rank_gpu[0]];
    pol->sim_s_per_plan_s = j->wl.ref_speed_flops > 0 && g0->speed_flops > 0 ? j->wl.ref_speed_flops / g0->speed_flops
                                                                             : 1.0;
    return buf;
}

/* The judge's memory of the fastest run that fit (job.h's job->judged): what
 * was simulated (the experiment's bytes, the schedule, the plan) and the
 * run.  Shared by the job's shallow copies, which the planners judge with;
 * only runs of the job's own experiment are kept (the floor's, without a
 * capacity, and recompute=plan's, without offload, never run as the job). */
typedef struct job_judged {
    experiment exp;
    int have;
    double makespan_s;
    schedule sched;
    memplan plan;
    sim_outcome out;
    timeline tl;
} job_judged;

static void judged_clear(job_judged *jd)
{
    if (jd->have) {
        sched_free(&jd->sched);
        plan_free(&jd->plan);
        timeline_free(&jd->tl);
    }
    jd->have = 0;
}

void job_judged_free(job_judged *jd)
{
    if (jd == NULL)
        return;
    judged_clear(jd);
    free(jd);
}

/* j's judge memory when it is kept for j's experiment as it is now, else NULL. */
static job_judged *judged_of(const job *j)
{
    job_judged *jd = j->judged;
    return jd != NULL && memcmp(&jd->exp, &j->exp, sizeof jd->exp) == 0 ? jd : NULL;
}

int job_judged_take(const job *j, const memplan *plan, timeline *tl, sim_outcome *out)
{
    job_judged *jd = judged_of(j);
    if (jd == NULL || !jd->have || plan == NULL || !sched_equal(&jd->sched, &j->sched) || !plan_equal(&jd->plan, plan))
        return 0;
    timeline_free(tl);
    *tl = jd->tl;
    timeline_init(&jd->tl);
    *out = jd->out;
    out->judged = 1;
    judged_clear(jd);
    return 1;
}

/* Simulates schedule s with plan p as `run` would; the makespan, or
 * INFINITY when it did not complete or ran out of memory.  tl and out are
 * the run's (tl timeline_init'ed by the caller, freed by it). */
static double simulate_makespan(const job *j, const schedule *s, const memplan *p, timeline *tl, sim_outcome *out)
{
    job jj = *j;   /* shallow: the child reads it, with the candidate order */
    jj.sched = *s;
    job_parallel jpar;
    memset(&jpar, 0, sizeof jpar);
    pg_status st;
    pg_status_clear(&st);
    double makespan = INFINITY;
    if (job_simulate_plan(&jj, p, &jpar, tl, out, &st) == 0 && out->completed) {
        metrics_input mi = job_metrics_input(&jj, tl, p);
        run_metrics m;
        metrics_compute(&mi, &m);
        if (m.noom == 0) makespan = m.makespan_s;
        metrics_free(&m);
    }
    job_parallel_free(&jpar);
    return makespan;
}

/* In the judge's child: simulate, then send the makespan and, when it fits,
 * the outcome and the timeline (the parent reads what it keeps and closes
 * the pipe on the rest: a failed write ends the child). */
static void judge_child(const job *j, const schedule *s, const memplan *p, FILE *to_parent)
{
    timeline tl;
    timeline_init(&tl);
    sim_outcome out;
    memset(&out, 0, sizeof out);
    double makespan = simulate_makespan(j, s, p, &tl, &out);
    int ok = fwrite(&makespan, sizeof makespan, 1, to_parent) == 1;
    if (ok && isfinite(makespan))
        ok = fwrite(&out, sizeof out, 1, to_parent) == 1 && timeline_write(to_parent, &tl) == 0;
    ok = fclose(to_parent) == 0 && ok;
    _exit(ok ? 0 : 1);
}

/* In the parent: the child's makespan and, when it fits and is the job's
 * fastest run yet (j->judged), its run. */
static double judge_read(const job *j, const schedule *s, const memplan *p, FILE *from_child)
{
    double makespan = INFINITY;
    if (fread(&makespan, sizeof makespan, 1, from_child) != 1)
        return INFINITY;
    job_judged *jd = judged_of(j);
    if (!isfinite(makespan) || jd == NULL || p == NULL || (jd->have && makespan >= jd->makespan_s))
        return makespan;
    sim_outcome out;
    timeline tl;
    timeline_init(&tl);
    if (fread(&out, sizeof out, 1, from_child) != 1 || timeline_read(from_child, &tl) != 0) {
        timeline_free(&tl);
        return makespan;   /* the judgement stands; the run will be simulated again */
    }
    judged_clear(jd);
    jd->have = 1;
    jd->makespan_s = makespan;
    sched_copy(&jd->sched, s);
    plan_copy(&jd->plan, p);
    jd->out = out;
    jd->tl = tl;
    return makespan;
}

/* offload_judge_fn: simulate in a child; INFINITY if anything fails. */
static double judge_by_simulation(void *ctx, const schedule *s, const memplan *p)
{
    const job *j = ctx;
    job jj = *j;   /* shallow: the candidate order's memory */
    jj.sched = *s;
    if (job_plan_surely_oom(&jj, p))
        return INFINITY;   /* out of memory whatever the timing: what its simulation would say */
    int fd[2];
    if (pipe(fd) != 0) return INFINITY;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return INFINITY;
    }
    if (pid == 0) {
        close(fd[0]);
        signal(SIGPIPE, SIG_IGN);   /* a parent that stops reading ends the child by its failed write */
        FILE *to_parent = fdopen(fd[1], "wb");
        if (to_parent == NULL) _exit(1);
        judge_child(j, s, p, to_parent);
    }
    close(fd[1]);
    FILE *from_child = fdopen(fd[0], "rb");
    double makespan = INFINITY;
    if (from_child != NULL) {
        makespan = judge_read(j, s, p, from_child);
        fclose(from_child);
    } else {
        close(fd[0]);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return makespan;
}

/* PipeOffload's heuristic on the job's order: full offload under its rules
 * (lifespan filter, reload slots, postponed warm-up), judged by simulation;
 * returns its makespan (INFINITY: it does not fit) and the plan in *po. */
static double pipeoffload_candidate(job *j, memplan *po)
{
    job jj = *j;   /* shallow: the policy reads the experiment's offload keys */
    jj.exp.offload = OFFLOAD_FULL;
    jj.exp.offload_rules = 1;
    jj.exp.offload_postpone = 1;
    jj.exp.offload_preset = OFFLOAD_PRESET_NONE;
    jj.exp.offload_chunks = 0;
    plan_policy pol = {.offload = PLAN_OFFLOAD_FULL,
                       .t_comm = j->exp.network == NET_IDEAL ? j->exp.ideal_latency_s : 0.0};
    int v = j->sched.v > 0 ? j->sched.v : 1;
    double *bytes = pg_xcalloc((size_t)j->wl.nstages + 1, sizeof *bytes);
    for (int s = 0; s < j->wl.nstages; s++) {
        const stage_cost *c = &j->wl.stage[s];
        bytes[s] = c->act_b_bytes;   /* offload alone: F keeps everything */
        if (c->f_s * v > pol.t_f) pol.t_f = c->f_s * v;
        if (c->b_s * v > pol.t_b) pol.t_b = c->b_s * v;
        if (c->w_s * v > pol.t_w) pol.t_w = c->w_s * v;
    }
    pol.offload_bytes = bytes;
    double *buf = job_offload_policy(&jj, &pol);
    pg_status st;
    pg_status_clear(&st);
    double makespan = INFINITY;
    if (plan_build(&j->sched, &pol, po, &st) == 0)
        makespan = judge_by_simulation(j, &j->sched, po);
    free(buf);
    free(bytes);
    return makespan;
}

/* Capacity no job reaches: the floor's run is not limited by memory. */
#define UNLIMITED_CAPACITY_BYTES 1e30

/* The job's order simulated with no memory plan and no capacity limit: no
 * plan on this order runs faster (offload_ladder.h, early stop). */
static double order_floor_s(const job *j)
{
    job *jj = pg_xmalloc(sizeof *jj);
    *jj = *j;   /* shallow, as simulate_makespan's */
    jj->exp.memory_capacity_bytes = UNLIMITED_CAPACITY_BYTES;
    double s = judge_by_simulation(jj, &j->sched, NULL);
    free(jj);
    return s;
}

/* recompute=plan's rematerialization ILP on the job's order, no offload,
 * judged by simulation: offload=plan with recomputation allowed in full
 * must never run slower than recomputation planned alone.  Returns its
 * makespan (INFINITY: no plan or it does not fit) and the plan in *rp. */
static double remat_candidate(const job *j, memplan *rp)
{
    job jj = *j;   /* shallow: the remat planner and the judge read the experiment's keys */
    jj.exp.offload = OFFLOAD_NONE;
    jj.exp.recompute = RECOMPUTE_PLAN;
    remat_result res;
    pg_status st;
    pg_status_clear(&st);
    double makespan = INFINITY;
    if (job_plan_remat(&jj, rp, &res, &st) == 0)
        makespan = judge_by_simulation(&jj, &j->sched, rp);
    else
        memset(rp, 0, sizeof *rp);
    remat_result_free(&res);
    return makespan;
}

/* A plan made outside the MILP on the job's own order (PipeOffload's rules,
 * the remat ILP) joins the table; it replaces the choice when it fits and
 * runs faster (ties keep the MILP's).  Takes *cand either way. */
static void consider_candidate(job *j, const char *label, offload_solve_status status, offload_copy_model model,
                               memplan *cand, double cand_s, double cap, schedule *best, memplan *out,
                               offload_plan_result *res, offload_order_result *ores)
{
    if (ores->n >= OFFLOAD_ORDER_MAX_CANDIDATES) {
        plan_free(cand);
        return;
    }
    double chosen_s = ores->chosen >= 0 && ores->cand[ores->chosen].fits ? ores->cand[ores->chosen].judged_makespan_s
                                                                         : INFINITY;
    offload_order_candidate *c = &ores->cand[ores->n];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%.24s %s", j->sched.name, label);
    c->copy_model = model;
    c->status = status;
    c->model_makespan_s = NAN;
    c->judged_makespan_s = cand_s;
    c->fits = isfinite(cand_s);
    ores->n++;
    if (c->fits && (isnan(chosen_s) || cand_s < chosen_s)) {
        ores->chosen = ores->n - 1;
        ores->planned_capacity_bytes = cap;
        plan_free(out);
        *out = *cand;
        sched_free(best);
        sched_copy(best, &j->sched);
        memset(res, 0, sizeof *res);
        res->status = status;
        res->model_makespan_s = NAN;
        res->noffload = cand->noffload;
        res->nrecompute = cand->nrecompute;
    } else {
        plan_free(cand);
    }
}

/* Set (to anything but 0) in the environment: `run` simulates offload=plan's
 * chosen plan again instead of taking its judge's run (tests/offload.sh
 * compares the two reports). */
#define RESIMULATE_ENV "PIPEGRID_RESIMULATE"

/* j->judged, empty, for runs of j's experiment as it is now. */
static void judged_start(job *j)
{
    const char *v = getenv(RESIMULATE_ENV);
    if (v != NULL && strcmp(v, "0") != 0)
        return;
    if (j->judged == NULL)
        j->judged = pg_xcalloc(1, sizeof *j->judged);
    judged_clear(j->judged);
    memcpy(&j->judged->exp, &j->exp, sizeof j->exp);   /* bytes: compared by memcmp */
}

int job_plan_offload(job *j, memplan *out, offload_plan_result *res, offload_order_result *ores, pg_status *st)
{
    const experiment *e = &j->exp;
    sched_params params;
    int rc = job_sched_params(e, &params, st);
    if (rc != 0) return rc;
    judged_start(j);
    /* recompute is the planner's ceiling (opt/offload_milp.h) */
    offload_order_input in = {
        .plan = {.exp = e, .sched = &j->sched, .wl = &j->wl, .plat = &j->plat, .rank_gpu = j->rank_gpu,
                 .allow_offload = 1, .milp_time_limit_s = e->offload_time_limit_s,
                 .allow_recompute = e->recompute == RECOMPUTE_NONE        ? 0
                                    : e->recompute == RECOMPUTE_SELECTIVE ? 1
                                                                          : 2},
        .params = &params, .search = e->offload_order_search, .judge = judge_by_simulation, .judge_ctx = j};
    schedule best;
    /* the job's capacity: memory.capacity, else the smallest GPU of the pipeline */
    double cap = e->memory_capacity_bytes;
    for (int r = 0; cap <= 0 && r < j->sched.pp; r++) {
        double g = j->plat.gpu[j->rank_gpu[r]].memory_bytes;
        if (g > 0 && (cap <= 0 || g < cap)) cap = g;
    }
    /* PipeOffload's own heuristic on the given order is a candidate too:
     * offload=plan must never run slower than it at the same memory; and,
     * with recomputation allowed in full, neither slower than recompute=plan
     * alone (the remat ILP plans recomputation finer than the MILP's
     * no-offload plan).  Both are judged before the ladder so that the
     * faster is its incumbent (its early stop). */
    memplan po, rp;
    memset(&rp, 0, sizeof rp);
    double po_s = pipeoffload_candidate(j, &po);
    int with_remat = in.plan.allow_recompute == 2 && cap > 0;
    double rp_s = with_remat ? remat_candidate(j, &rp) : INFINITY;
    offload_ladder_result lres;
    if (cap > 0) {
        /* with the order fixed, no plan beats the order without one: the ladder stops there (a
         * simulation, so only for a ladder with rungs below the capacity: offload.capacities > 0) */
        int floor_used = !e->offload_order_search && e->offload_capacities > 0;
        offload_ladder_stop stop = {.floor_s = floor_used ? order_floor_s(j) : NAN,
                                    .incumbent_s = rp_s < po_s ? rp_s : po_s};
        rc = offload_ladder_choose(&in, cap, e->offload_capacities, &stop, &best, out, res, ores, &lres, st);
    } else {
        rc = offload_order_choose(&in, &best, out, res, ores, st);
    }
    if (rc == 0) {
        consider_candidate(j, "PipeOffload", OFFLOAD_SOLVED_PIPEOFFLOAD, OFFLOAD_COPIES_ONLY, &po, po_s, cap, &best,
                           out, res, ores);
        if (with_remat)
            consider_candidate(j, "recompute=plan", OFFLOAD_SOLVED_REMAT, OFFLOAD_COPIES_NONE, &rp, rp_s, cap, &best,
                               out, res, ores);
    } else {
        plan_free(&po);
        plan_free(&rp);
    }
    if (rc == 0) {   /* the chosen order replaces the schedule: every report shows what ran */
        sched_free(&j->sched);
        j->sched = best;
    }
    return rc;
}

void job_note_offload_plan(job *j, const offload_plan_result *res, const offload_order_result *ores)
{
    report_plan_note *n = &j->plan_note;
    memset(n, 0, sizeof *n);
    n->kind = "offload=plan";
    n->candidates = ores->n;
    n->feasible = ores->chosen >= 0 && ores->cand[ores->chosen].fits;
    if (n->feasible) {
        const offload_order_candidate *c = &ores->cand[ores->chosen];
        snprintf(n->chosen, sizeof n->chosen, "%s (%s)", c->name, offload_solve_status_name(c->status));
        return;
    }
    snprintf(n->chosen, sizeof n->chosen, "%.48s's first plan (%s)", j->sched.name,
             offload_solve_status_name(res->status));
    char cap[32];
    double cap_bytes = ores->job_capacity_bytes > 0 ? ores->job_capacity_bytes : j->exp.memory_capacity_bytes;
    for (int r = 0; cap_bytes <= 0 && r < j->sched.pp; r++)
        cap_bytes = j->plat.gpu[j->rank_gpu[r]].memory_bytes;
    snprintf(n->reason, sizeof n->reason,
             "none of the %d plans tried fits %s per GPU (each runs out of memory in the simulation%s); the given "
             "order runs with its first plan",
             ores->n, units_format_bytes(cap_bytes, cap, sizeof cap),
             res->status == OFFLOAD_SOLVED_INFEASIBLE ? ", and the MILP found no plan that fits its model" : "");
}
