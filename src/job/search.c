/* search.c: optimize's search (`pipegrid optimize`, cli/optimize_cli.c): search tp x pp x dp x schedules x
 * recompute / offload plans for a model, a cluster, a memory capacity and a
 * global batch; print the Pareto front (throughput against peak memory) and
 * write the best plan that fits as an experiment file that `run` replays.
 *
 * The search space is one sweep grid (sweep.h): tp, pp, dp, microbatches,
 * schedule, recompute, offload, then any other --grid key.  Only the
 * combinations that keep the job's shape are candidates:
 *   - tp x pp x dp = the experiment's GPU count G / cp (the job keeps its GPUs);
 *   - the global batch B is fixed (global_batch_size, else the experiment's
 *     microbatches x micro_batch_size x dp), so microbatches = B / (dp x
 *     micro_batch_size) follows from dp: every candidate trains on the same
 *     samples per iteration, and throughputs compare iterations of one batch;
 *   - by default tp divides the GPUs of one node (tensor-parallel traffic
 *     stays on NVLink) and pp every divisor of G / tp.
 *
 * Before anything is simulated each candidate is built in this process (the
 * experiment, workload, schedule and platform of `run`, no simulation):
 * one that the job pipeline refuses is invalid (its exit code, not run);
 * one whose static memory (weights, gradients, optimizer state) alone is
 * over a rank's capacity is out of memory whatever its schedule does, and is
 * skipped; the others get the seed-000 lower bound of their pipeline (no
 * memory limit, their schedule's own backward kind; on a generated cluster
 * each F and B also pays at least its tp collectives, and each B its
 * recomputation), or the data-parallel all-reduce's bound when that is
 * later (opt/bound_dp.c), plus their shortest optimizer step (which starts
 * once the pipeline and the all-reduce are done), which makes
 * B / (bound + step) an upper bound on their samples/s.  They are simulated best bound first,
 * in batches (one forked `run --format csv` per candidate, -j at a time,
 * through sweep_run); before each batch a candidate whose upper bound is
 * below the best simulated plan's samples/s is skipped (it can never be the
 * best; the front is then the front of the candidates that could be), or
 * with --full-front only one that a simulated fitting plan beats on both
 * axes (faster than its upper bound, no more peak memory than its static
 * memory: opt_dominated_unsimulated), so that the front is exact too.
 * A planner's candidate (recompute=plan, offload=plan) that keeps the op
 * order is bounded, besides, by its keep-all sibling's simulated
 * throughput (planner_ceiling: it only adds work to it), which the
 * ordering simulates first: most planners are then skipped unsimulated.
 * Throughput is exactly run's samples_per_second.
 *
 * --resume FILE keeps the simulated rows (the sweep CSV of the grid): a run
 * that is stopped and started again with the same command simulates only
 * what the file lacks.  On a terminal a progress bar is drawn on stderr.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job/search.h"
#include "model/memory.h"
#include "util/outfile.h"
#include "opt/optimize.h"
#include "report/report_opt.h"
#include "util/units.h"

#define MAX_VALUE_TEXT 64
/* Candidates simulated between two prunings: small enough that a good
 * candidate found early prunes most of the rest, large enough to keep -j
 * workers busy.  Not tied to -j below it, so that which candidates are
 * skipped does not depend on the machine. */
#define MIN_BATCH 8
/* The bound can meet a simulated throughput exactly (a pipeline with no
 * bubble the bound misses), up to rounding: a candidate is skipped only when
 * beaten by more than this relative margin, never for the last bits. */
#define BOUND_REL_SLACK 1e-9
/* Progress lines when stderr is not a terminal (a log, CI): one every this
 * many seconds, so that a long search shows it is alive without flooding. */
#define PROGRESS_LINE_S 5.0
/* Candidates assessed between two looks at the clock. */
#define ASSESS_CLOCK_EVERY 16

#define DEFAULT_SCHEDULES sched_optimize_defaults()   /* the registry's SCHED_OPTIMIZE_DEFAULT rows */
static const char *const DEFAULT_RECOMPUTE = "none,full,selective";
static const char *const DEFAULT_OFFLOAD = "none,selective,plan";

/* The grid's first keys, in this order; optimize derives the first four. */
enum { K_TP, K_PP, K_DP, K_MB, K_SCHEDULE, K_RECOMPUTE, K_OFFLOAD, NOWN };
static const char *const OWN_KEYS[NOWN] = {"tp", "pp", "dp", "microbatches", "schedule", "recompute", "offload"};
/* Keys a --grid may not vary: they follow from the GPU count and the batch. */
static const char *const DERIVED_KEYS[] = {"dp", "microbatches", "global_batch_size"};

static const char *const STATUS_NAME[] = {"pending", "simulated", "pruned_memory", "pruned_bound", "invalid",
                                          "pruned_activations"};

static int column_of(char **names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

static double number_at(char **f, int nf, int i)
{
    if (i < 0 || i >= nf || f[i][0] == '\0') return 0.0;
    return strtod(f[i], NULL);
}

static const char *user_grid(const search_options *o, const char *key)
{
    size_t n = strlen(key);
    for (int i = 0; i < o->ngrids; i++)
        if (strncmp(o->grids[i], key, n) == 0 && o->grids[i][n] == '=') return o->grids[i] + n + 1;
    return NULL;
}

/* Whether combination index of the grid plans its offload (offload=plan). */
static int offload_planner(const sweep_grid *g, long index)
{
    return strcmp(g->keys[K_OFFLOAD].values[sweep_grid_value_at(g, index, K_OFFLOAD)], "plan") == 0;
}

/* The key of a "KEY=VALUE" setting into key[len]; its value. */
static const char *setting_key(const char *set, char *key, size_t len)
{
    const char *eq = strchr(set, '=');
    snprintf(key, len, "%.*s", (int)(eq - set), set);
    return eq + 1;
}

int search_budgeted_planner(const search *s, const candidate *c)
{
    return s->nplanner_sets > 0 && offload_planner(&s->g, c->index);
}

/* sweep_plan.index_sets: optimize's planning budget for an offload planner. */
static const char *const *planner_sets(long index, int *n, void *ctx)
{
    const search *s = ctx;
    *n = s->nplanner_sets > 0 && offload_planner(&s->g, index) ? s->nplanner_sets : 0;
    return *n ? s->planner_sets : NULL;
}

/* The budget's settings that neither the experiment (file and --set) nor a --grid gives. */
static void choose_planner_sets(const search_options *o, const job *j, search *s)
{
    static const char *const BUDGET[SEARCH_NPLANNER_SETS] = SEARCH_PLANNER_SETS;
    for (int i = 0; i < SEARCH_NPLANNER_SETS; i++) {
        char key[64];
        setting_key(BUDGET[i], key, sizeof key);
        if (config_find(&j->cfg, key) == NULL && !user_grid(o, key))
            s->planner_sets[s->nplanner_sets++] = BUDGET[i];
    }
}

static int is_own_key(const char *spec)
{
    for (int k = 0; k < NOWN; k++) {
        size_t n = strlen(OWN_KEYS[k]);
        if (strncmp(spec, OWN_KEYS[k], n) == 0 && spec[n] == '=') return 1;
    }
    return 0;
}

/* A comma list of positive integers dividing g into out (room for g);
 * returns the count, or -1 (st set) naming the option. */
static int parse_divisors(const char *key, const char *v, int g, int *out, const char *what, pg_status *st)
{
    int k = 0;
    const char *p = v;
    while (*p) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || (*end != ',' && *end != '\0') || x < 1 || g % x != 0 || k >= g) {
            pg_fail(st, PG_EXIT_INPUT, "--grid %s: '%s' must list divisors of %s", key, v, what);
            return -1;
        }
        out[k++] = (int)x;
        p = *end ? end + 1 : end;
    }
    return k;
}

static void join_ints(strbuf *sb, const int *v, int n)
{
    for (int i = 0; i < n; i++) sb_appendf(sb, "%s%d", i ? "," : "", v[i]);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* GPUs on the node of the job's first GPU: where tensor parallelism stays
 * on NVLink (the whole job for network=ideal, which has one node). */
static int gpus_per_node(const platform_desc *p)
{
    int n = 0;
    for (int i = 0; i < p->ngpus; i++) n += p->gpu[i].node == p->gpu[0].node;
    return n > 0 ? n : 1;
}

/* The search grid (see the header); every value checked before anything runs. */
static int build_grid(const search_options *o, const job *j, search *s, pg_status *st)
{
    const experiment *e = &j->exp;
    for (size_t k = 0; k < sizeof DERIVED_KEYS / sizeof DERIVED_KEYS[0]; k++)
        if (user_grid(o, DERIVED_KEYS[k]))
            return pg_fail(st, PG_EXIT_INPUT,
                           "--grid %s: optimize keeps the GPU count and the global batch (%ld samples): dp = GPUs / "
                           "(tp x pp) and microbatches = global batch / (dp x micro_batch_size) follow; set "
                           "global_batch_size with --set, or grid micro_batch_size",
                           DERIVED_KEYS[k], s->global_batch);
    int g = s->gpus / s->cp;
    int *tps = pg_xcalloc((size_t)g + 1, sizeof *tps), *pps = pg_xcalloc((size_t)g + 1, sizeof *pps),
        *dps = pg_xcalloc((size_t)g + 1, sizeof *dps);
    int ntp = 0, npp, ndp = opt_divisors(g, dps), rc = 0;
    const char *v = user_grid(o, "tp");
    if (v) {
        strbuf what;
        sb_init(&what);
        sb_appendf(&what, "the job's %d GPUs", g);
        ntp = parse_divisors("tp", v, g, tps, what.data, st);
        sb_free(&what);
    } else {
        int *d = pg_xcalloc((size_t)g + 1, sizeof *d);
        int nd = opt_divisors(g, d);
        for (int i = 0; i < nd; i++)
            if (s->gpus_per_node % d[i] == 0) tps[ntp++] = d[i];
        free(d);
    }
    v = user_grid(o, "pp");
    if (v) {
        strbuf what;
        sb_init(&what);
        sb_appendf(&what, "the job's %d GPUs", g);
        npp = parse_divisors("pp", v, g, pps, what.data, st);
        sb_free(&what);
    } else {
        npp = opt_divisors(g, pps);
    }
    if (ntp < 0 || npp < 0) rc = st->code;
    /* micro batch sizes: a --grid micro_batch_size, else the experiment's */
    int *mbs = NULL, nmbs = 0;
    if (rc == 0) {
        const char *mv = user_grid(o, "micro_batch_size");
        int n = 1;
        for (const char *p = mv ? mv : ""; *p; p++) n += *p == ',';
        mbs = pg_xcalloc((size_t)n + 1, sizeof *mbs);
        if (mv == NULL) {
            mbs[nmbs++] = e->micro_batch_size;
        } else {
            for (const char *p = mv; *p;) {
                char *end;
                long x = strtol(p, &end, 10);
                if (end == p || (*end != ',' && *end != '\0') || x < 1 || x > s->global_batch) {
                    rc = pg_fail(st, PG_EXIT_INPUT, "--grid micro_batch_size: '%s' must list sample counts from 1 "
                                 "to the global batch (%ld)", mv, s->global_batch);
                    break;
                }
                mbs[nmbs++] = (int)x;
                p = *end ? end + 1 : end;
            }
        }
    }
    /* the microbatch counts the batch gives at some dp and micro batch size */
    int *ms = pg_xcalloc((size_t)(ndp * (nmbs ? nmbs : 1)) + 1, sizeof *ms);
    int nm = 0;
    for (int a = 0; rc == 0 && a < ndp; a++)
        for (int b = 0; b < nmbs; b++) {
            int m = opt_microbatches(s->global_batch, dps[a], mbs[b]);
            int seen = m == 0;
            for (int i = 0; i < nm && !seen; i++) seen = ms[i] == m;
            if (!seen) ms[nm++] = m;
        }
    qsort(ms, (size_t)nm, sizeof *ms, cmp_int);
    if (rc == 0 && nm == 0)
        rc = pg_fail(st, PG_EXIT_INPUT, "optimize: the global batch of %ld samples divides into no whole number of "
                     "microbatches at any dp and micro_batch_size", s->global_batch);
    char **specs = pg_xcalloc((size_t)o->ngrids + NOWN + 1, sizeof *specs);
    int nspec = 0;
    if (rc == 0) {
        const int *lists[] = {tps, pps, dps, ms};
        const int counts[] = {ntp, npp, ndp, nm};
        for (int k = 0; k < 4; k++) {
            strbuf sb;
            sb_init(&sb);
            sb_appendf(&sb, "%s=", OWN_KEYS[k]);
            join_ints(&sb, lists[k], counts[k]);
            specs[nspec++] = sb.data;
        }
        const char *defaults[] = {DEFAULT_SCHEDULES, DEFAULT_RECOMPUTE, DEFAULT_OFFLOAD};
        for (int k = K_SCHEDULE; k < NOWN; k++) {
            const char *uv = user_grid(o, OWN_KEYS[k]);
            strbuf sb;
            sb_init(&sb);
            sb_appendf(&sb, "%s=%s", OWN_KEYS[k], uv ? uv : defaults[k - K_SCHEDULE]);
            specs[nspec++] = sb.data;
        }
        for (int i = 0; i < o->ngrids; i++)
            if (!is_own_key(o->grids[i])) specs[nspec++] = pg_xstrdup(o->grids[i]);
        rc = sweep_grid_parse(&s->g, (const char *const *)specs, nspec, st);
    }
    for (int k = NOWN; rc == 0 && k < s->g.nkeys; k++)
        for (int i = 0; rc == 0 && i < s->g.keys[k].nvalues; i++)
            rc = sweep_check_grid_value(s->g.keys[k].name, s->g.keys[k].values[i], st);
    for (int k = K_SCHEDULE; rc == 0 && k < NOWN; k++)
        for (int i = 0; rc == 0 && i < s->g.keys[k].nvalues; i++)
            rc = sweep_check_grid_value(s->g.keys[k].name, s->g.keys[k].values[i], st);
    for (int i = 0; i < nspec; i++) free(specs[i]);
    free(specs);
    free(ms);
    free(mbs);
    free(tps);
    free(pps);
    free(dps);
    return rc;
}

/* The grid's --set options of combination index into sets (owned). */
static int combination_sets(const sweep_grid *g, long index, char **sets)
{
    const char **values = pg_xcalloc((size_t)g->nkeys + 1, sizeof *values);
    sweep_grid_combination(g, index, values);
    for (int k = 0; k < g->nkeys; k++) {
        strbuf kv;
        sb_init(&kv);
        sb_appendf(&kv, "%s=%s", g->keys[k].name, values[k]);
        sets[k] = kv.data;
    }
    free(values);
    return g->nkeys;
}

/* Does combination index keep the job's shape: tp x pp x dp GPUs and the
 * microbatches of the global batch? */
static int keeps_shape(const search *s, const job *j, long index)
{
    const sweep_grid *g = &s->g;
    const char **values = pg_xcalloc((size_t)g->nkeys + 1, sizeof *values);
    sweep_grid_combination(g, index, values);
    int tp = atoi(values[K_TP]), pp = atoi(values[K_PP]), dp = atoi(values[K_DP]), m = atoi(values[K_MB]);
    int mbs = j->exp.micro_batch_size;
    for (int k = NOWN; k < g->nkeys; k++)
        if (strcmp(g->keys[k].name, "micro_batch_size") == 0) mbs = atoi(values[k]);
    free(values);
    return (long)tp * pp * dp == s->gpus / s->cp && opt_microbatches(s->global_batch, dp, mbs) == m;
}

/* The memory pre-screen beyond static memory: the ranks whose static
 * memory (headroom included) and least activations exceed their capacity,
 * listed into oom ("r;r"), counted in *noom; returns whether there is one.
 * The least activations: under a fixed plan its least peak
 * (job_least_peak_bytes: the ops' order, no simulation); under a planner's
 * (recompute=plan, offload=plan) what any plan must hold at some backward
 * (job_least_planner_bytes).  Such a candidate is out of memory whatever
 * the timing or the plan. */
static int least_peak_over(const job *j, strbuf *oom, int *noom)
{
    const experiment *e = &j->exp;
    int planner = e->recompute == RECOMPUTE_PLAN || e->offload == OFFLOAD_PLAN;
    memplan plan;
    pg_status st;
    pg_status_clear(&st);
    if (!planner && job_build_plan((job *)j, &plan, &st) != 0) return 0;   /* the simulation will say why */
    double *planner_least = NULL;
    if (planner) {
        planner_least = pg_xcalloc((size_t)j->sched.pp, sizeof *planner_least);
        job_least_planner_bytes(j, planner_least);
    }
    for (int r = 0; r < j->sched.pp; r++) {
        double least = planner ? planner_least[r] : job_least_peak_bytes(j, &plan, r);
        if (job_rank_over_capacity(j, r, least)) sb_appendf(oom, "%s%d", (*noom)++ ? ";" : "", r);
    }
    if (!planner) plan_free(&plan);
    free(planner_least);
    return *noom > 0;
}

static int keep_all_sibling_of(const search *s, const candidate *c, int keeps_order);

/* The candidate built in this process as run would build it: invalid, out
 * of memory by its static memory alone or with its least activations, or
 * pending with its bound. */
static void assess(const search_options *o, search *s, candidate *c)
{
    int nsets = o->nsets + s->g.nkeys;
    char **own = pg_xcalloc((size_t)s->g.nkeys + 1, sizeof *own);
    combination_sets(&s->g, c->index, own);
    const char **sets = pg_xcalloc((size_t)nsets + 1, sizeof *sets);
    for (int i = 0; i < o->nsets; i++) sets[i] = o->sets[i];
    for (int k = 0; k < s->g.nkeys; k++) sets[o->nsets + k] = own[k];
    job j;
    pg_status st;
    pg_status_clear(&st);
    memset(&j, 0, sizeof j);
    int rc = job_load_experiment(&j, o->experiment_path, sets, nsets, &st);
    if (rc == 0) rc = job_build_schedule_cached(&j, &s->sched_cache, &st);
    if (rc == 0) rc = s->shared_plat ? job_borrow_platform(&j, s->shared_plat, &st) : job_build_platform(&j, &st);
    c->ub_samples_per_s = INFINITY;
    if (rc != 0) {
        c->status = C_INVALID;
        c->exit_code = rc;
    } else {
        c->planner = j.exp.recompute == RECOMPUTE_PLAN || j.exp.offload == OFFLOAD_PLAN;
        c->sibling = keep_all_sibling_of(s, c, !j.exp.offload_order_search);
        strbuf oom;
        sb_init(&oom);
        for (int r = 0; r < j.sched.pp; r++) {
            double bytes = job_rank_static_bytes(&j, r);
            double cap = j.exp.memory_capacity_bytes > 0 ? j.exp.memory_capacity_bytes
                                                         : j.plat.gpu[j.rank_gpu[r]].memory_bytes;
            if (bytes > c->static_bytes) {
                c->static_bytes = bytes;
                c->capacity_bytes = cap;
            }
            if (cap > 0 && bytes > cap) sb_appendf(&oom, "%s%d", c->noom++ ? ";" : "", r);
        }
        c->status = c->noom > 0 ? C_PRUNED_MEMORY : C_PENDING;
        if (c->status == C_PENDING && least_peak_over(&j, &oom, &c->noom)) c->status = C_PRUNED_ACTIVATIONS;
        c->oom_ranks = oom.data ? oom.data : pg_xstrdup("");
        c->exit_code = c->noom > 0 ? PG_EXIT_OOM : 0;
        /* The bound with no memory limit (a schedule that ignores
         * memory.limit may beat the limited bound) and the schedule's own
         * backward kind.  A bound that cannot be computed prunes nothing. */
        job_bound jb;
        memset(&jb, 0, sizeof jb);
        pg_status bst;
        pg_status_clear(&bst);
        if (c->status == C_PENDING && job_compute_bound(&j, &jb, &bst) == 0) {
            bound_input in = jb.in;
            in.mem_limit = 0;
            in.split = sched_is_split(&j.sched);
            /* No iteration is shorter than the later of the pipeline's bound
             * (every cost no schedule avoids) and the all-reduce's (what of it
             * cannot overlap the pipeline), plus the shortest rank's step. */
            job_costed_bound cb;
            if (job_costed_bound_compute(&j, &in, &cb) == 0)
                c->ub_samples_per_s = (double)s->global_batch / (fmax(cb.makespan_s, cb.reduce_end_s) + cb.step_s);
            job_costed_bound_free(&cb);
        }
        job_bound_free(&jb);
    }
    job_free(&j);
    for (int k = 0; k < s->g.nkeys; k++) free(own[k]);
    free(own);
    free(sets);
}

static candidate *find_candidate(search *s, long index)
{
    int lo = 0, hi = s->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (s->c[mid].index == index) return &s->c[mid];
        if (s->c[mid].index < index) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

/* A simulated row (sweep format, no '\n') into its candidate. */
static int take_row(search *s, const char *row, int exit_code_known, int exit_code, long *index_out)
{
    char **f = NULL;
    int nf = csv_split(row, &f);
    if (nf != s->ncols) {
        csv_fields_free(f, nf);
        return -1;
    }
    long index = (long)number_at(f, nf, s->col_index);
    candidate *c = find_candidate(s, index);
    int ok = c != NULL;
    if (ok) {
        const char **values = pg_xcalloc((size_t)s->g.nkeys + 1, sizeof *values);
        sweep_grid_combination(&s->g, index, values);
        for (int k = 0; k < s->g.nkeys && ok; k++) ok = strcmp(values[k], f[k]) == 0;
        free(values);
    }
    if (ok) {
        c->status = C_SIMULATED;
        c->exit_code = exit_code_known ? exit_code : (int)number_at(f, nf, s->col_exit);
        c->samples_per_s = number_at(f, nf, s->col_samples);
        c->peak_bytes = number_at(f, nf, s->col_peak);
        c->iteration_s = number_at(f, nf, s->col_iter);
        c->makespan_s = number_at(f, nf, s->col_makespan);
        free(c->row);
        c->row = pg_xstrdup(row);
        *index_out = index;
    }
    csv_fields_free(f, nf);
    return ok ? 0 : -1;
}

static int collect(const sweep_result *r, void *ctx)
{
    search *s = ctx;
    size_t len = strlen(r->row);
    char *row = pg_xstrdup(r->row);
    if (len > 0 && row[len - 1] == '\n') row[len - 1] = '\0';
    long index;
    int rc = take_row(s, row, 1, r->exit_code, &index);
    if (rc == 0) {
        s->nsimulated++;
        s->sim_this_run++;
    }
    if (rc == 0 && s->resume && (fprintf(s->resume, "%s\n", row) < 0 || fflush(s->resume) != 0)) s->write_failed = 1;
    free(row);
    return rc != 0 || s->write_failed;
}

/* --resume FILE: the rows already simulated; the file is then open for
 * appending (created with the header when new).  It is locked first, so a
 * second search on the same file is refused rather than appending every
 * row again (util/outfile.h). */
static int open_resume(search *s, pg_status *st)
{
    const char *path = s->resume_path;
    int rc = pg_open_locked_append(path, "--resume", "optimize --resume", &s->resume, st);
    if (rc != 0) return rc;
    struct stat sb;
    if (fstat(fileno(s->resume), &sb) == 0 && sb.st_size > 0) {
        csv_lines l;
        if (csv_read_lines(path, &l, st) != 0) return st->code;
        size_t hlen = s->header.len - 1;
        if (l.count < 1 || strlen(l.line[0]) != hlen || strncmp(l.line[0], s->header.data, hlen) != 0)
            rc = pg_fail(st, PG_EXIT_INPUT, "%s:1: cannot resume: the header differs from this search's (other grid "
                         "keys or columns); use another file", path);
        for (int i = 1; rc == 0 && i < l.count; i++) {
            long index;
            if (take_row(s, l.line[i], 0, 0, &index) != 0) {
                rc = pg_fail(st, PG_EXIT_INPUT, "%s:%d: cannot resume: not a candidate of this search (other grid "
                             "values, GPU count or global batch); use another file", path, i + 1);
            } else {
                s->nsimulated++;
                find_candidate(s, index)->resumed = 1;
            }
        }
        /* a row cut by an interrupted run is dropped and simulated again */
        if (rc == 0 && l.partial && truncate(path, (off_t)l.complete_bytes) != 0)
            rc = pg_fail(st, PG_EXIT_INPUT, "%s: cannot truncate: %s", path, strerror(errno));
        csv_lines_free(&l);
        return rc;
    }
    if (fputs(s->header.data, s->resume) < 0 || fflush(s->resume) != 0)
        return pg_fail(st, PG_EXIT_INTERNAL, "%s: write error", path);
    return 0;
}

static opt_point point_of(const candidate *c)
{
    return (opt_point){c->samples_per_s, c->peak_bytes, c->status == C_SIMULATED && c->exit_code == PG_EXIT_OK};
}

/* Order of simulation: highest throughput bound first, then a fixed memory
 * plan before a planner's (recompute=plan, offload=plan: the same bound,
 * but their children plan and simulate several times over, often to find
 * nothing that fits), then least static memory, then grid order. */
static const search *order_base;
static int by_promise(const void *x, const void *y)
{
    const candidate *a = &order_base->c[*(const int *)x], *b = &order_base->c[*(const int *)y];
    if (a->ub_samples_per_s != b->ub_samples_per_s) return a->ub_samples_per_s > b->ub_samples_per_s ? -1 : 1;
    if (a->planner != b->planner) return a->planner - b->planner;
    if (a->static_bytes != b->static_bytes) return a->static_bytes < b->static_bytes ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* A planner's candidate (recompute=plan, offload=plan, keeping the op
 * order) only adds work to its keep-all sibling, the same candidate with
 * recompute=none and offload=none: more recomputation, copies that can only
 * delay, never an op earlier (a fixed-order schedule's times are monotone
 * in its durations).  The sibling's position, or -1 when c is no such
 * planner or the grid has no such candidate (set once, by assess). */
static int keep_all_sibling_of(const search *s, const candidate *c, int keeps_order)
{
    if (!c->planner || !keeps_order) return -1;
    int none_r = sweep_grid_value_index(&s->g, K_RECOMPUTE, "none");
    int none_o = sweep_grid_value_index(&s->g, K_OFFLOAD, "none");
    if (none_r < 0 || none_o < 0) return -1;
    long sib = sweep_grid_with_value(&s->g, c->index, K_RECOMPUTE, none_r);
    sib = sweep_grid_with_value(&s->g, sib, K_OFFLOAD, none_o);
    int lo = 0, hi = s->n - 1;
    while (lo <= hi) {   /* s->c ascends by index */
        int mid = lo + (hi - lo) / 2;
        if (s->c[mid].index == sib) return mid;
        if (s->c[mid].index < sib) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static candidate *keep_all_sibling(const search *s, const candidate *c)
{
    return c->sibling >= 0 ? &s->c[c->sibling] : NULL;
}

/* The planner's throughput is at most its keep-all sibling's simulated
 * one, fitting or not: that, or INFINITY when unknown. */
static double planner_ceiling(const search *s, const candidate *c)
{
    const candidate *k = keep_all_sibling(s, c);
    int ran = k && k->status == C_SIMULATED && (k->exit_code == PG_EXIT_OK || k->exit_code == PG_EXIT_OOM);
    return ran && k->samples_per_s > 0 ? k->samples_per_s : INFINITY;
}

/* Skip every pending candidate whose throughput bound is below the best
 * simulated plan's (the default: the best is exact, the front is that of
 * the candidates that could beat the best), or with full_front only those
 * that a simulated fitting one dominates on both axes (the front is exact
 * too, at the cost of simulating the slower low-memory candidates). */
static void prune(search *s, int full_front)
{
    opt_point *pts = pg_xcalloc((size_t)s->n + 1, sizeof *pts);
    int *front = pg_xcalloc((size_t)s->n + 1, sizeof *front);
    for (int i = 0; i < s->n; i++) pts[i] = point_of(&s->c[i]);
    int nf = opt_pareto_front(pts, s->n, front);
    opt_point *fp = pg_xcalloc((size_t)nf + 1, sizeof *fp);
    for (int i = 0; i < nf; i++) fp[i] = pts[front[i]];
    for (int i = 0; i < s->n; i++) {
        candidate *c = &s->c[i];
        if (c->status != C_PENDING) continue;
        /* the front's last point is the best (the front ascends in both) */
        double ub = fmin(c->ub_samples_per_s, planner_ceiling(s, c)) * (1.0 + BOUND_REL_SLACK);
        int skip = full_front ? opt_dominated_unsimulated(ub, c->static_bytes, fp, nf) : opt_slower_than_best(ub, fp, nf);
        if (skip) c->status = C_PRUNED_BOUND;
    }
    free(fp);
    free(front);
    free(pts);
}

/* Children's and candidates' messages (one per refused or out-of-memory
 * candidate) would drown the result: they go to /dev/null while the
 * candidates are built, and a summary is printed. */
static int quiet_stderr(void)
{
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
        dup2(null, STDERR_FILENO);
        close(null);
    }
    return saved;
}

static void restore_stderr(int saved)
{
    if (saved < 0) return;
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
}

static double since_start_s(const search *s)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - s->start.tv_sec) + (double)(now.tv_nsec - s->start.tv_nsec) * 1e-9;
}

/* One progress line (stderr not a terminal): what is done of the whole,
 * what was pruned, the best so far and, while simulating, an ETA (the
 * candidates still pending at this run's pace: an upper bound, since
 * pruning may skip them). */
static void progress_line(search *s, double t_s)
{
    long pruned = 0, pending = 0, simulated = 0;
    double best = 0.0;
    for (int i = 0; i < s->n; i++) {
        const candidate *c = &s->c[i];
        pruned += c->status != C_PENDING && c->status != C_SIMULATED;
        pending += c->status == C_PENDING;
        simulated += c->status == C_SIMULATED;
        if (c->status == C_SIMULATED && c->exit_code == PG_EXIT_OK && c->samples_per_s > best) best = c->samples_per_s;
    }
    if (s->assessed < s->n) {
        fprintf(stderr, "pipegrid: optimize: %.0f s: pre-screen %ld/%d candidates\n", t_s, s->assessed, s->n);
    } else {
        fprintf(stderr, "pipegrid: optimize: %.0f s: %ld/%d done (%ld simulated, %ld pruned), best ", t_s,
                simulated + pruned, s->n, simulated, pruned);
        if (best > 0) fprintf(stderr, "%.6g samples/s", best);
        else fputs("none yet", stderr);
        if (s->sim_this_run > 0) fprintf(stderr, ", ETA at most %.0f s\n", t_s / (double)s->sim_this_run * (double)pending);
        else fputs("\n", stderr);
    }
    fflush(stderr);
    s->last_line_s = t_s;
}

/* The clock: a progress line when one is due, and the time limit; returns
 * non-zero once the search is cut. */
static int search_tick(void *ctx)
{
    search *s = ctx;
    double t = since_start_s(s);
    if (s->progress_lines && t - s->last_line_s >= PROGRESS_LINE_S) progress_line(s, t);
    if (s->time_limit_s > 0 && t >= s->time_limit_s) s->cut = 1;
    return s->cut;
}

static int run_search(const search_options *o, const job *j, search *s, pg_status *st)
{
    /* every combination that keeps the job's shape, built here */
    int saved = quiet_stderr();
    for (long i = 0; i < s->g.total; i++) {
        if (!keeps_shape(s, j, i)) continue;
        if (s->n % 256 == 0) s->c = pg_xrealloc(s->c, ((size_t)s->n + 256) * sizeof *s->c);
        candidate *c = &s->c[s->n++];
        memset(c, 0, sizeof *c);
        c->index = i;
        c->sibling = -1;
    }
    int rc = 0;
    if (s->resume_path) rc = open_resume(s, st);
    for (int i = 0; rc == 0 && i < s->n; i++) {
        /* a resumed candidate keeps its simulation, and gets its bound and
         * static memory as a new one would (the same CSV either way) */
        if (i % ASSESS_CLOCK_EVERY == 0) {
            restore_stderr(saved);
            int stop = search_tick(s);
            saved = quiet_stderr();
            if (stop) break;
        }
        s->assessed++;
        candidate *c = &s->c[i];
        cand_status was = c->status;
        int code = c->exit_code;
        assess(o, s, c);
        if (was == C_SIMULATED) {
            c->status = was;
            c->exit_code = code;
        }
    }
    restore_stderr(saved);
    if (rc != 0) return rc;
    int *order = pg_xcalloc((size_t)s->n + 1, sizeof *order);
    int norder = 0;
    for (int i = 0; i < s->n; i++)
        if (s->c[i].status == C_PENDING) order[norder++] = i;
    order_base = s;
    qsort(order, (size_t)norder, sizeof *order, by_promise);
    order_base = NULL;
    long nresumed = s->nsimulated;
    if (nresumed > 0) fprintf(stderr, "pipegrid: optimize: %s: %ld candidates already simulated\n", s->resume_path, nresumed);

    const char *const *sets = o->sets;
    int batch = o->jobs > MIN_BATCH ? o->jobs : MIN_BATCH;
    long *idx = pg_xcalloc((size_t)batch, sizeof *idx);
    int next = 0;
    if (s->progress_lines) progress_line(s, since_start_s(s));
    while (rc == 0 && !s->cut) {
        prune(s, o->full_front);
        long pending = 0;
        for (int i = next; i < norder; i++) pending += s->c[order[i]].status == C_PENDING;
        if (pending == 0) break;
        int nb = 0;
        while (nb < batch && next < norder) {
            candidate *c = &s->c[order[next]];
            /* A planner waits for its keep-all sibling (planner_ceiling may then skip it); a sibling that the
             * least activations ruled out is simulated all the same, for that ceiling: one simulation of a
             * fixed plan against a planner's several (it ends out of memory, as predicted). */
            candidate *sib = c->status == C_PENDING ? keep_all_sibling(s, c) : NULL;
            if (sib && sib->status == C_PRUNED_ACTIVATIONS) {
                sib->status = C_PENDING;
                idx[nb++] = sib->index;
                continue;
            }
            if (nb > 0 && sib && sib->status == C_PENDING) break;
            next++;
            if (c->status == C_PENDING) idx[nb++] = c->index;
        }
        qsort(idx, (size_t)nb, sizeof *idx, cmp_long);
        long noom = 0, nfailed = 0;   /* of this run's simulations so far, for the bar */
        for (int i = 0; i < s->n; i++) {
            const candidate *c = &s->c[i];
            if (c->status != C_SIMULATED || c->resumed) continue;
            noom += c->exit_code == PG_EXIT_OOM;
            nfailed += c->exit_code != PG_EXIT_OK && c->exit_code != PG_EXIT_OOM;
        }
        sweep_plan plan = {.grid = &s->g, .experiment_path = o->experiment_path, .sets = sets, .nsets = o->nsets,
                           .indices = idx, .count = nb, .jobs = o->jobs, .progress = o->progress,
                           .progress_label = "optimize", .progress_done_before = s->nsimulated - nresumed,
                           .progress_oom_before = noom, .progress_failed_before = nfailed,
                           .progress_total = s->nsimulated - nresumed + pending, .quiet_children = 1,
                           .child = o->child, .tick = search_tick, .tick_ctx = s, .stopped = &s->cut,
                           .index_sets = planner_sets, .index_ctx = s};
        rc = sweep_run(&plan, collect, s, st);
        if (rc != 0 && s->write_failed)
            rc = pg_fail(st, PG_EXIT_INTERNAL, "%s: write error", s->resume_path);
    }
    free(idx);
    free(order);
    if (rc == 0 && s->progress_lines) progress_line(s, since_start_s(s));
    if (rc == 0 && s->cut) {
        long left = 0;
        for (int i = 0; i < s->n; i++) left += s->c[i].status == C_PENDING;
        fprintf(stderr, "pipegrid: optimize: search cut by --time-limit after %.0f s: %ld of %d candidates neither "
                        "simulated nor pruned; what follows is the best of those simulated (exit code %d)\n",
                since_start_s(s), left, s->n, PG_EXIT_CUT);
    }
    return rc;
}

/* A YAML scalar: plain when it is safe, else double-quoted. */
static void yaml_scalar(FILE *f, const char *v)
{
    int plain = v[0] != '\0';
    for (const char *p = v; *p; p++)
        if (!(isalnum((unsigned char)*p) || strchr("._/+-", *p))) plain = 0;
    if (plain) {
        fputs(v, f);
        return;
    }
    fputc('"', f);
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\') fputc('\\', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

/* The experiment (file + --set) with the candidate's values on top. */
int search_write_best(const char *path, const config *cfg, const search *s, const candidate *c, pg_status *st)
{
    pg_outfile of;
    int rc = pg_outfile_open(&of, path, "-o", st);
    if (rc != 0) return rc;
    FILE *f = of.f;
    fprintf(f, "# written by pipegrid optimize: the highest simulated throughput that fits\n"
               "# (%.6g samples/s, iteration %.6g s, peak %.4g GiB); replay: pipegrid run %s\n",
            c->samples_per_s, c->iteration_s, c->peak_bytes / GIB, path);
    config out;
    config_init(&out);
    for (size_t i = 0; i < cfg->count; i++)
        config_put(&out, cfg->entries[i].key, cfg->entries[i].value, cfg->entries[i].origin);
    const char **values = pg_xcalloc((size_t)s->g.nkeys + 1, sizeof *values);
    sweep_grid_combination(&s->g, c->index, values);
    for (int k = 0; k < s->g.nkeys; k++) config_put(&out, s->g.keys[k].name, values[k], (pg_origin){"optimize", 0});
    free(values);
    for (int i = 0; search_budgeted_planner(s, c) && i < s->nplanner_sets; i++) {
        char key[64];
        const char *value = setting_key(s->planner_sets[i], key, sizeof key);
        config_put(&out, key, value, (pg_origin){"optimize", 0});
    }
    for (size_t i = 0; i < out.count; i++) {
        fprintf(f, "%s: ", out.entries[i].key);
        yaml_scalar(f, out.entries[i].value);
        fputc('\n', f);
    }
    config_free(&out);
    return pg_outfile_commit(&of, 0, st);
}

/* The candidate's grid values as a CSV row of the sweep header: simulated
 * rows as run gave them; the others with their verdict only. */
void search_candidate_row(const search *s, const candidate *c, strbuf *sb)
{
    if (c->status == C_SIMULATED) {
        sb_append(sb, c->row);
        return;
    }
    const char **values = pg_xcalloc((size_t)s->g.nkeys + 1, sizeof *values);
    sweep_grid_combination(&s->g, c->index, values);
    for (int i = 0; i < s->ncols; i++) {
        strbuf v;
        sb_init(&v);
        if (i < s->g.nkeys) sb_append(&v, values[i]);
        else if (i == s->col_index) sb_appendf(&v, "%ld", c->index);
        else if (i == s->col_total) sb_appendf(&v, "%ld", s->g.total);
        else if (i == s->col_exit && c->status != C_PRUNED_BOUND) sb_appendf(&v, "%d", c->exit_code);
        else if (i == s->col_oom && c->exit_code == PG_EXIT_OOM) sb_appendf(&v, "%d", c->noom);
        else if (i == s->col_oom_ranks && c->exit_code == PG_EXIT_OOM) sb_append(&v, c->oom_ranks);
        if (i) sb_append(sb, ",");
        csv_field(sb, v.data ? v.data : "");
        sb_free(&v);
    }
    free(values);
}

void search_free(search *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->c[i].row);
        free(s->c[i].oom_ranks);
    }
    free(s->c);
    csv_fields_free(s->cols, s->ncols);
    sb_free(&s->header);
    sweep_grid_free(&s->g);
    job_sched_cache_free(&s->sched_cache);
    if (s->resume) fclose(s->resume);
}

const char *search_status_name(cand_status status)
{
    return STATUS_NAME[status];
}

/* Keys that never change the platform (the network keys and the GPU count
 * do; the GPU count is the job's for every candidate): a grid of these
 * alone lets every candidate borrow the job's platform. */
static const char *const PLATFORM_FREE_KEYS[] = {"tp", "pp", "dp", "cp", "ep", "microbatches", "micro_batch_size",
                                                 "schedule", "chunks", "recompute", "offload", "memory.", "tp.",
                                                 "dp.", "zb_auto.", "dualpipe.", "recompute.", "offload."};

static int grid_keeps_platform(const sweep_grid *g)
{
    for (int k = 0; k < g->nkeys; k++) {
        int free_key = 0;
        for (size_t i = 0; i < sizeof PLATFORM_FREE_KEYS / sizeof PLATFORM_FREE_KEYS[0] && !free_key; i++) {
            const char *f = PLATFORM_FREE_KEYS[i];
            size_t n = strlen(f);
            free_key = f[n - 1] == '.' ? strncmp(g->keys[k].name, f, n) == 0 : strcmp(g->keys[k].name, f) == 0;
        }
        if (!free_key) return 0;
    }
    return 1;
}

int search_run(const search_options *o, const job *j, search *s, pg_status *st)
{
    memset(s, 0, sizeof *s);
    sb_init(&s->header);
    const experiment *e = &j->exp;
    s->cp = e->cp;
    s->gpus = e->pp * e->tp * e->cp * e->dp;
    s->gpus_per_node = gpus_per_node(&j->plat);
    s->global_batch = e->global_batch_size > 0 ? e->global_batch_size
                                               : (long)e->microbatches * e->micro_batch_size * e->dp;
    s->resume_path = o->resume_path;
    clock_gettime(CLOCK_MONOTONIC, &s->start);
    s->progress_lines = !o->progress;
    int rc = 0;
    if (o->time_limit) {
        char *end;
        s->time_limit_s = strtod(o->time_limit, &end);
        if (end == o->time_limit || *end != '\0' || !isfinite(s->time_limit_s) || s->time_limit_s <= 0)
            rc = pg_fail(st, PG_EXIT_INPUT, "--time-limit: '%s' is not a number of seconds above 0", o->time_limit);
    }
    if (rc == 0) rc = build_grid(o, j, s, st);
    if (rc == 0) choose_planner_sets(o, j, s);
    if (rc == 0 && j->have_plat && grid_keeps_platform(&s->g)) s->shared_plat = &j->plat;
    if (rc == 0) {
        sweep_csv_header(&s->g, &s->header);
        char *h = pg_xstrdup(s->header.data);
        h[strlen(h) - 1] = '\0';
        s->ncols = csv_split(h, &s->cols);
        free(h);
        s->col_exit = column_of(s->cols, s->ncols, "exit_code");
        s->col_makespan = column_of(s->cols, s->ncols, "makespan");
        s->col_iter = column_of(s->cols, s->ncols, "iteration_seconds");
        s->col_samples = column_of(s->cols, s->ncols, "samples_per_second");
        s->col_peak = column_of(s->cols, s->ncols, "max_peak_memory_bytes");
        s->col_oom = column_of(s->cols, s->ncols, "oom");
        s->col_oom_ranks = column_of(s->cols, s->ncols, "oom_ranks");
        s->col_index = column_of(s->cols, s->ncols, SWEEP_COL_INDEX);
        s->col_total = column_of(s->cols, s->ncols, SWEEP_COL_TOTAL);
        rc = run_search(o, j, s, st);
    }
    return rc;
}

void search_outcome_of(const search *s, int full_front, search_outcome *out)
{
    memset(out, 0, sizeof *out);
    opt_point *pts = pg_xcalloc((size_t)s->n + 1, sizeof *pts);
    for (int i = 0; i < s->n; i++) {
        pts[i] = point_of(&s->c[i]);
        out->counts[s->c[i].status]++;
        out->nfit += pts[i].fits;   /* counted before the front's restriction below */
        out->nsimoom += s->c[i].status == C_SIMULATED && s->c[i].exit_code == PG_EXIT_OOM;
    }
    int best = opt_best(pts, s->n);
    /* The default pruning simulates every candidate whose bound reaches the
     * best, and some others depending on the order results came in: the
     * front is that of the former only, so that it does not depend on -j. */
    for (int i = 0; i < s->n && best >= 0 && !full_front; i++)
        if (s->c[i].ub_samples_per_s * (1.0 + BOUND_REL_SLACK) < pts[best].throughput) pts[i].fits = 0;
    out->front = pg_xcalloc((size_t)s->n + 1, sizeof *out->front);
    out->on_front = pg_xcalloc((size_t)s->n + 1, sizeof *out->on_front);
    out->nfront = opt_pareto_front(pts, s->n, out->front);
    for (int i = 0; i < out->nfront; i++) out->on_front[out->front[i]] = 1;
    out->best = best;
    free(pts);
}

void search_outcome_free(search_outcome *out)
{
    free(out->on_front);
    free(out->front);
    memset(out, 0, sizeof *out);
}

void search_settings(const search *s, const candidate *c, strbuf *sb)
{
    const char **values = pg_xcalloc((size_t)s->g.nkeys + 1, sizeof *values);
    sweep_grid_combination(&s->g, c->index, values);
    for (int k = 0; k < s->g.nkeys; k++) sb_appendf(sb, "%s%s=%s", k ? " " : "", s->g.keys[k].name, values[k]);
    free(values);
}

int search_write_svg(const char *path, const search *s, const search_outcome *oc, pg_status *st)
{
    report_optimize_point *pt = pg_xcalloc((size_t)s->n + 1, sizeof *pt);
    strbuf *text = pg_xcalloc((size_t)s->n + 1, sizeof *text);
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        const candidate *c = &s->c[i];
        if (c->status != C_SIMULATED || c->exit_code != PG_EXIT_OK) continue;
        sb_init(&text[n]);
        search_settings(s, c, &text[n]);
        pt[n] = (report_optimize_point){.samples_per_s = c->samples_per_s, .iteration_s = c->iteration_s,
                                        .makespan_s = c->makespan_s, .peak_bytes = c->peak_bytes,
                                        .settings = text[n].data ? text[n].data : "", .best = i == oc->best,
                                        .on_front = oc->on_front[i]};
        n++;
    }
    int rc = report_optimize_svg(pt, n, s->global_batch, s->gpus, path, st);
    for (int i = 0; i < n; i++) sb_free(&text[i]);
    free(text);
    free(pt);
    return rc;
}
