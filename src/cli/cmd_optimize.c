/* cmd_optimize.c: `pipegrid optimize`: search schedules x pp x microbatches x
 * recompute / offload plans for a model, a cluster and a memory capacity;
 * print the Pareto front (throughput against peak memory) and write the best
 * plan that fits as an experiment file that `run` replays.
 *
 * Every candidate is a simulation: the search is the sweep machinery
 * (sweep.h: one forked `run --format csv` per combination, -j at a time),
 * one sweep per pipeline depth because the depth fixes dp (the job keeps its
 * GPU count G = pp x tp x dp of the experiment) and the default microbatch
 * counts.  Throughput is the whole job's, exactly the samples_per_second
 * `run` prints (m x micro_batch_size x dp samples per simulated iteration:
 * pipeline, data-parallel all-reduce, optimizer step).  Nothing is estimated here; a plan is judged
 * by its simulation only, and the front and the best come from opt/optimize.h.
 *
 * Defaults: every pp dividing G / tp; every schedule but those whose
 * generation runs an ILP or a wide search (zb-auto, v-zb) or needs a file;
 * m in {pp, 2pp, 4pp} unless global_batch_size fixes it; recompute
 * none | full | selective; offload none | selective | plan.  A --grid KEY
 * replaces that key's default values (pp included) or adds a key.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include "cli/cli.h"
#include "cli/sweep.h"
#include "opt/optimize.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MAX_VALUE_TEXT 64

#define DEFAULT_SCHEDULES sched_optimize_defaults()   /* the registry's SCHED_OPTIMIZE_DEFAULT rows */
static const char *const DEFAULT_RECOMPUTE = "none,full,selective";
static const char *const DEFAULT_OFFLOAD = "none,selective,plan";

/* One simulated candidate. */
typedef struct candidate {
    char *sets;          /* "KEY=VALUE\n..." to replay it (pp, dp, then the grid's keys) */
    int exit_code;
    double makespan_s, iteration_s, samples_per_s, peak_bytes;
    int dp;
} candidate;

typedef struct search {
    candidate *c;
    int n, cap;
    /* column positions in the current sweep's rows */
    int col_exit, col_makespan, col_iter, col_samples, col_peak;
    const sweep_grid *grid;
    const char *pp_dp_sets;
    int dp;
} search;

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

static int collect(const sweep_result *r, void *ctx)
{
    search *s = ctx;
    char **f = NULL;
    int nf = csv_split(r->row[0] ? r->row : "", &f);
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->c = pg_xrealloc(s->c, (size_t)s->cap * sizeof *s->c);
    }
    candidate *c = &s->c[s->n++];
    memset(c, 0, sizeof *c);
    c->exit_code = r->exit_code;
    c->makespan_s = number_at(f, nf, s->col_makespan);
    c->iteration_s = number_at(f, nf, s->col_iter);
    c->samples_per_s = number_at(f, nf, s->col_samples);
    c->peak_bytes = number_at(f, nf, s->col_peak);
    c->dp = s->dp;
    strbuf sets;
    sb_init(&sets);
    sb_append(&sets, s->pp_dp_sets);
    const char **values = pg_xcalloc((size_t)s->grid->nkeys + 1, sizeof *values);
    sweep_grid_combination(s->grid, r->index, values);
    for (int k = 0; k < s->grid->nkeys; k++)
        sb_appendf(&sets, "%s=%s\n", s->grid->keys[k].name, values[k]);
    free(values);
    c->sets = sets.data;
    csv_fields_free(f, nf);
    return 0;
}

/* Job throughput: run's own samples_per_second, which already counts every
 * dp replica over the whole iteration (pipeline, all-reduce, optimizer).
 * Scaling it by dp again ranked plans by a number `run` never prints (the
 * README's 49.1 samples/s plan ran at 24.9). */
static double throughput(const candidate *c)
{
    return c->samples_per_s;
}

static const char *user_grid(const cli_options *o, const char *key)
{
    size_t n = strlen(key);
    for (int i = 0; i < o->ngrids; i++)
        if (strncmp(o->grids[i], key, n) == 0 && o->grids[i][n] == '=') return o->grids[i] + n + 1;
    return NULL;
}

/* The grid of one pipeline depth: the defaults, replaced or extended by --grid. */
static int depth_grid(const cli_options *o, const experiment *e, int pp, sweep_grid *g, pg_status *st)
{
    static const char *const own[] = {"schedule", "microbatches", "recompute", "offload"};
    char mbs[3 * MAX_VALUE_TEXT];
    int m[3];
    int nm = opt_default_microbatches(pp, m);
    mbs[0] = '\0';
    for (int i = 0; i < nm; i++)
        snprintf(mbs + strlen(mbs), sizeof mbs - strlen(mbs), "%s%d", i ? "," : "", m[i]);
    const char *defaults[] = {DEFAULT_SCHEDULES, e->global_batch_size > 0 ? NULL : mbs, DEFAULT_RECOMPUTE,
                              DEFAULT_OFFLOAD};
    char **specs = pg_xcalloc((size_t)o->ngrids + 5, sizeof *specs);
    int n = 0;
    for (int k = 0; k < 4; k++) {
        const char *v = user_grid(o, own[k]);
        if (v == NULL) v = defaults[k];
        if (v == NULL) continue;
        strbuf sb;
        sb_init(&sb);
        sb_appendf(&sb, "%s=%s", own[k], v);
        specs[n++] = sb.data;
    }
    for (int i = 0; i < o->ngrids; i++) {
        int mine = strncmp(o->grids[i], "pp=", 3) == 0;
        for (int k = 0; k < 4; k++)
            mine |= strncmp(o->grids[i], own[k], strlen(own[k])) == 0 && o->grids[i][strlen(own[k])] == '=';
        if (!mine) specs[n++] = pg_xstrdup(o->grids[i]);
    }
    int rc = sweep_grid_parse(g, (const char *const *)specs, n, st);
    for (int i = 0; i < n; i++)
        free(specs[i]);
    free(specs);
    return rc;
}

/* Pipeline depths: --grid pp=..., else the divisors of the GPU count / tp;
 * -1 (st set) for a bad --grid pp. */
static int depths(const cli_options *o, const experiment *e, int **out, pg_status *st)
{
    int gpus = e->pp * e->tp * e->dp;
    const char *v = user_grid(o, "pp");
    if (v == NULL) {
        *out = pg_xcalloc((size_t)gpus + 1, sizeof **out);
        return opt_divisors(gpus / e->tp, *out);
    }
    int n = 1;
    for (const char *p = v; *p; p++) n += *p == ',';
    *out = pg_xcalloc((size_t)n + 1, sizeof **out);
    int k = 0;
    const char *p = v;
    while (*p) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || (*end != ',' && *end != '\0') || x < 1 || (gpus / e->tp) % x != 0) {
            pg_fail(st, PG_EXIT_INPUT, "--grid pp: '%s' must list divisors of the job's %d GPUs / tp %d",
                           v, gpus, e->tp);
            return -1;
        }
        (*out)[k++] = (int)x;
        p = *end ? end + 1 : end;
    }
    return k;
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
static int write_best(const char *path, const config *cfg, const candidate *c, double tput, pg_status *st)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) return pg_fail(st, PG_EXIT_INPUT, "%s: cannot write: %s", path, strerror(errno));
    fprintf(f, "# written by pipegrid optimize: the highest simulated throughput that fits\n"
               "# (%.6g samples/s, iteration %.6g s, peak %.4g GiB); replay: pipegrid run %s\n",
            tput, c->iteration_s, c->peak_bytes / GIB, path);
    config out;
    config_init(&out);
    for (size_t i = 0; i < cfg->count; i++)
        config_put(&out, cfg->entries[i].key, cfg->entries[i].value, cfg->entries[i].origin);
    char *sets = pg_xstrdup(c->sets);
    for (char *line = strtok(sets, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        if (eq == NULL) continue;
        *eq = '\0';
        config_put(&out, line, eq + 1, (pg_origin){"optimize", 0});
    }
    free(sets);
    for (size_t i = 0; i < out.count; i++) {
        fprintf(f, "%s: ", out.entries[i].key);
        yaml_scalar(f, out.entries[i].value);
        fputc('\n', f);
    }
    config_free(&out);
    if (fclose(f) != 0) return pg_fail(st, PG_EXIT_INTERNAL, "%s: write error", path);
    return 0;
}

/* "k=v k=v" of a candidate on one line (the text table's last column). */
static void one_line(const char *sets, strbuf *sb)
{
    for (const char *p = sets; *p; p++)
        sb_appendf(sb, "%c", *p == '\n' ? (p[1] ? ' ' : '\0') : *p);
}

static void print_front(const search *s, const int *front, int nfront, int best, output_format fmt)
{
    if (fmt == FORMAT_CSV) {
        printf("throughput_samples_per_s,iteration_seconds,makespan,max_peak_memory_bytes,best,settings\n");
        for (int i = 0; i < nfront; i++) {
            const candidate *c = &s->c[front[i]];
            strbuf line, row;
            sb_init(&line);
            sb_init(&row);
            one_line(c->sets, &line);
            csv_field(&row, line.data ? line.data : "");
            printf("%.17g,%.17g,%.17g,%.17g,%d,%s\n", throughput(c), c->iteration_s, c->makespan_s, c->peak_bytes,
                   front[i] == best, row.data ? row.data : "");
            sb_free(&line);
            sb_free(&row);
        }
        return;
    }
    printf("Pareto front (simulated; throughput against peak memory, %d of %d candidates)\n", nfront, s->n);
    printf("%14s %12s %12s %10s  %s\n", "samples/s", "iteration", "makespan", "peak GiB", "settings");
    for (int i = 0; i < nfront; i++) {
        const candidate *c = &s->c[front[i]];
        strbuf line;
        sb_init(&line);
        one_line(c->sets, &line);
        printf("%14.4f %10.4f s %10.4f s %10.3f  %s%s\n", throughput(c), c->iteration_s, c->makespan_s,
               c->peak_bytes / GIB, line.data ? line.data : "", front[i] == best ? "   <- best" : "");
        sb_free(&line);
    }
}

/* Children's messages (one per failing or out-of-memory candidate) would
 * drown the result: they go to /dev/null, and a summary is printed. */
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

static int explicit_jobs(int argc, char **argv)
{
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "-j") == 0 || strncmp(argv[i], "-j", 2) == 0 || strncmp(argv[i], "--jobs", 6) == 0)
            return 1;
    return 0;
}

static int run_search(const cli_options *o, const job *j, search *s, pg_status *st)
{
    int *pps = NULL;
    int npp = depths(o, &j->exp, &pps, st);
    if (npp <= 0) {
        free(pps);
        return npp < 0 ? st->code : pg_fail(st, PG_EXIT_INPUT, "optimize: no pipeline depth to search");
    }
    int gpus = j->exp.pp * j->exp.tp * j->exp.dp;
    int rc = 0;
    for (int i = 0; i < npp && rc == 0; i++) {
        sweep_grid g;
        memset(&g, 0, sizeof g);
        if ((rc = depth_grid(o, &j->exp, pps[i], &g, st)) != 0) break;
        int dp = gpus / (j->exp.tp * pps[i]);
        char ppv[MAX_VALUE_TEXT], dpv[MAX_VALUE_TEXT], both[2 * MAX_VALUE_TEXT + 2];
        snprintf(ppv, sizeof ppv, "pp=%d", pps[i]);
        snprintf(dpv, sizeof dpv, "dp=%d", dp);
        snprintf(both, sizeof both, "%s\n%s\n", ppv, dpv);
        const char **sets = pg_xcalloc((size_t)o->nsets + 3, sizeof *sets);
        for (int k = 0; k < o->nsets; k++) sets[k] = o->sets[k];
        sets[o->nsets] = ppv;
        sets[o->nsets + 1] = dpv;
        strbuf header;
        sb_init(&header);
        sweep_csv_header(&g, &header);
        char **names = NULL;
        header.data[header.len - 1] = '\0';
        int nn = csv_split(header.data, &names);
        s->col_exit = column_of(names, nn, "exit_code");
        s->col_makespan = column_of(names, nn, "makespan");
        s->col_iter = column_of(names, nn, "iteration_seconds");
        s->col_samples = column_of(names, nn, "samples_per_second");
        s->col_peak = column_of(names, nn, "max_peak_memory_bytes");
        csv_fields_free(names, nn);
        sb_free(&header);
        s->grid = &g;
        s->pp_dp_sets = both;
        s->dp = dp;
        long *idx = pg_xcalloc((size_t)g.total, sizeof *idx);
        for (long k = 0; k < g.total; k++) idx[k] = k;
        sweep_plan plan = {.grid = &g, .experiment_path = o->experiment_path, .sets = sets,
                           .nsets = o->nsets + 2, .indices = idx, .count = g.total, .jobs = o->jobs};
        int saved = quiet_stderr();
        rc = sweep_run(&plan, collect, s, st);
        restore_stderr(saved);
        free(idx);
        free(sets);
        sweep_grid_free(&g);
    }
    free(pps);
    return rc;
}

int cmd_optimize(int argc, char **argv)
{
    cli_options o;
    pg_status st;
    job j;
    search s;
    memset(&s, 0, sizeof s);
    int rc = job_start(argc, argv, 2, 1u << FORMAT_TEXT | 1u << FORMAT_CSV, CLI_OPT_GRID | CLI_OPT_JOBS | CLI_OPT_OUTPUT,
                       0, &o, &j, &st);
    if (rc == 0 && !explicit_jobs(argc, argv)) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        o.jobs = cpus > 0 ? (int)cpus : 1;
    }
    if (rc == 0) rc = run_search(&o, &j, &s, &st);
    if (rc != 0) {
        rc = cli_report_error(&st);
        goto done;
    }
    opt_point *pts = pg_xcalloc((size_t)s.n + 1, sizeof *pts);
    int nfit = 0, noom = 0, nbad = 0;
    for (int i = 0; i < s.n; i++) {
        pts[i] = (opt_point){throughput(&s.c[i]), s.c[i].peak_bytes, s.c[i].exit_code == PG_EXIT_OK};
        nfit += s.c[i].exit_code == PG_EXIT_OK;
        noom += s.c[i].exit_code == PG_EXIT_OOM;
        nbad += s.c[i].exit_code != PG_EXIT_OK && s.c[i].exit_code != PG_EXIT_OOM;
    }
    int *front = pg_xcalloc((size_t)s.n + 1, sizeof *front);
    int nfront = opt_pareto_front(pts, s.n, front);
    int best = opt_best(pts, s.n);
    fprintf(stderr, "pipegrid: optimize: %d candidates simulated: %d fit, %d out of memory, %d not valid "
                    "(schedule / pp / microbatches combinations a generator refuses)\n", s.n, nfit, noom, nbad);
    if (best < 0) {
        fprintf(stderr, "pipegrid: optimize: no candidate fits in memory%s; raise memory.capacity or widen the "
                        "search (--grid)\n", noom ? " (every one that ran is out of memory)" : "");
        rc = noom ? PG_EXIT_OOM : PG_EXIT_INPUT;
    } else {
        print_front(&s, front, nfront, best, o.format);
        if (o.output_path) {
            rc = write_best(o.output_path, &j.cfg, &s.c[best], throughput(&s.c[best]), &st);
            if (rc != 0) rc = cli_report_error(&st);
            else fprintf(stderr, "pipegrid: optimize: best plan written to %s\n", o.output_path);
        }
    }
    free(front);
    free(pts);
done:
    for (int i = 0; i < s.n; i++) free(s.c[i].sets);
    free(s.c);
    job_finish(&j, &o);
    return rc;
}
