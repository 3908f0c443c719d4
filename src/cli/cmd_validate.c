/* cmd_validate.c: `pipegrid validate CSV...` -- predict every measured
 * iteration time of the files with the cost model and report the errors
 * (per file, fit and held-out part; rows of other GPU types or that the
 * model cannot describe are listed as skipped, with the reason).
 *
 *   pipegrid validate CSV... [--gpu TYPE|FILE] [--fit-fraction F] [--format text|csv]
 *                         [--max-mape X] [--max-error Y] [--with-regressions] [--no-layer-profiles]
 *
 * Reports MAPE and the largest relative error over all rows, over the
 * held-out rows (those `pipegrid calibrate` with the same --fit-fraction did
 * not fit on) and per parallelism (tp, dp, pp and each tp x dp x pp), and the
 * floor of those MAPEs: what rows of one job measured at different times
 * cost any model that predicts one time per job (iter_mape_floor).  With
 * --max-mape / --max-error the exit code is 1 when the held-out rows miss
 * them (for CI).  --format csv prints one line per row instead.
 * --with-regressions also predicts the rows of documented software
 * regressions (src/calib/rows.h), listed as skipped otherwise.
 * When the GPU file has measured layer profiles (costmodel.h), the report
 * says how many rows ran a profiled shape and the errors of both kinds;
 * --no-layer-profiles predicts every layer analytically.
 */
#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "calib/itermodel.h"
#include "calib/row_experiment.h"
#include "job/sweep.h"
#include "cli/validate_args.h"

#define PCT 100.0
#define MS_PER_S 1000.0
#define EMIT_DIR_MODE 0777   /* less the umask */
#define WORST_SHOWN 5

typedef struct group {
    int tp, dp, pp;                /* 0 = any */
} group;

static void report_group(const iter_set *set, const double *pred, const int *base_mask, group gr, const char *label)
{
    int *mask = pg_xcalloc((size_t)set->n, sizeof *mask);
    for (int i = 0; i < set->n; i++) {
        const train_row *r = &set->row[i];
        mask[i] = (!base_mask || base_mask[i]) && (!gr.tp || r->tp == gr.tp) && (!gr.dp || r->dp == gr.dp) &&
                  (!gr.pp || r->pp == gr.pp);
    }
    error_stats e = iter_errors(set, pred, mask);
    if (e.n > 0)
        printf("  %-22s %5d rows  MAPE %6.2f %%  max %6.2f %% (line %d)\n", label, e.n, PCT * e.mape,
               PCT * e.max_err, set->row[e.worst].line);
    free(mask);
}

/* The held-out errors of the rows that ran a profiled layer shape and of
 * the others (nothing when the GPU file has no profile). */
static void report_profiled(const iter_set *set, const double *pred, const int *holdout, const double *factor,
                            int nprofiles)
{
    if (nprofiles == 0)
        return;
    int *mask = pg_xcalloc((size_t)set->n, sizeof *mask);
    for (int profiled = 1; profiled >= 0; profiled--) {
        for (int i = 0; i < set->n; i++)
            mask[i] = holdout[i] && (factor[i] != 0) == profiled;
        error_stats e = iter_errors(set, pred, mask);
        printf("  %-14s %5d  MAPE %6.2f %%  max error %6.2f %%  (held-out rows %s)\n",
               profiled ? "profiled:" : "analytic:", e.n, PCT * e.mape, PCT * e.max_err,
               profiled ? "whose layer shape has a measured profile" : "of other layer shapes");
    }
    free(mask);
}

static void report_text(const iter_set *set, const double *pred, const int *holdout, const validate_args *a,
                        const calib_rows *rows, const double *factor, int nprofiles)
{
    error_stats all = iter_errors(set, pred, NULL), held = iter_errors(set, pred, holdout);
    int *fit = pg_xcalloc((size_t)set->n, sizeof *fit);
    for (int i = 0; i < set->n; i++)
        fit[i] = !holdout[i];
    error_stats fitted = iter_errors(set, pred, fit);
    double fit_floor = iter_mape_floor(set, pred, fit);
    free(fit);
    printf("validate");
    for (int k = 0; k < a->nfiles; k++)
        printf(" %s", a->files[k]);
    printf(" (%s) with %s\n", rows->source, a->gpu_path);
    printf("  all rows:      %5d  MAPE %6.2f %%  max error %6.2f %%\n", all.n, PCT * all.mape, PCT * all.max_err);
    printf("  fit rows:      %5d  MAPE %6.2f %%  max error %6.2f %%  (the %.0f %% calibrate fits on)\n", fitted.n,
           PCT * fitted.mape, PCT * fitted.max_err, PCT * a->fit_fraction);
    printf("  held-out rows: %5d  MAPE %6.2f %%  max error %6.2f %%  (not in the %.0f %% fit part)\n", held.n,
           PCT * held.mape, PCT * held.max_err, PCT * a->fit_fraction);
    report_profiled(set, pred, holdout, factor, nprofiles);
    /* how much of the error no model of the job can remove: one job measured at different times */
    printf("  MAPE floor:    all rows %.2f %%, fit %.2f %%, held-out %.2f %%  (jobs measured more than once, at"
           " different times: no model that predicts one time per job goes below)\n",
           PCT * iter_mape_floor(set, pred, NULL), PCT * fit_floor, PCT * iter_mape_floor(set, pred, holdout));
    if (a->nfiles > 1) {
        printf("by file (fit part / held-out part):\n");
        int *mask = pg_xcalloc((size_t)set->n, sizeof *mask);
        for (int k = 0; k < a->nfiles; k++) {
            for (int part = 0; part < 2; part++) {
                for (int i = 0; i < set->n; i++)
                    mask[i] = set->row[i].file == k && holdout[i] == part;
                error_stats e = iter_errors(set, pred, mask);
                const char *base = strrchr(a->files[k], '/');
                printf("  %-34s %-8s %5d rows  MAPE %6.2f %%  max %6.2f %%  floor %5.2f %%\n",
                       base ? base + 1 : a->files[k], part ? "held-out" : "fit", e.n, PCT * e.mape, PCT * e.max_err,
                       PCT * iter_mape_floor(set, pred, mask));
            }
        }
        free(mask);
    }
    measurements_print_skipped(rows, stdout);
    printf("by parallelism (held-out rows):\n");
    static const int DEG[] = {1, 2, 4, 8, 16, 32, 64};
    char label[64];
    for (int k = 0; k < 3; k++)
        for (size_t d = 0; d < sizeof DEG / sizeof DEG[0]; d++) {
            group gr = {k == 0 ? DEG[d] : 0, k == 1 ? DEG[d] : 0, k == 2 ? DEG[d] : 0};
            snprintf(label, sizeof label, "%s=%d", k == 0 ? "tp" : k == 1 ? "dp" : "pp", DEG[d]);
            report_group(set, pred, holdout, gr, label);
        }
    printf("by tp x dp x pp (held-out rows):\n");
    for (size_t t = 0; t < sizeof DEG / sizeof DEG[0]; t++)
        for (size_t d = 0; d < sizeof DEG / sizeof DEG[0]; d++)
            for (size_t p = 0; p < sizeof DEG / sizeof DEG[0]; p++) {
                snprintf(label, sizeof label, "tp%d dp%d pp%d", DEG[t], DEG[d], DEG[p]);
                report_group(set, pred, holdout, (group){DEG[t], DEG[d], DEG[p]}, label);
            }
    /* the worst held-out rows, so a bad fit can be traced to a configuration */
    printf("worst held-out rows:\n");
    int *shown = pg_xcalloc((size_t)set->n, sizeof *shown);
    for (int w = 0; w < WORST_SHOWN; w++) {
        int *mask = pg_xcalloc((size_t)set->n, sizeof *mask);
        for (int i = 0; i < set->n; i++)
            mask[i] = holdout[i] && !shown[i];
        error_stats e = iter_errors(set, pred, mask);
        free(mask);
        if (e.worst < 0)
            break;
        shown[e.worst] = 1;
        const train_row *r = &set->row[e.worst];
        printf("  line %4d: gbs %d mb %d h %d L %d tp %d dp %d pp %d: measured %.1f ms, predicted %.1f ms (%+.1f %%)%s%s\n",
               r->line, r->global_batch, r->micro_batch, r->hidden, r->layers, r->tp, r->dp, r->pp,
               1e3 * r->measured_s, 1e3 * pred[e.worst], PCT * (pred[e.worst] / r->measured_s - 1),
               strncmp(r->label, "line ", 5) != 0 ? "  " : "", strncmp(r->label, "line ", 5) != 0 ? r->label : "");
    }
    free(shown);
}

/* The stem of a file's name: "data/x/ground_truth_single.csv" -> "ground_truth_single". */
static void file_stem(const char *path, char *out, size_t len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    snprintf(out, len, "%.*s", dot ? (int)(dot - base) : (int)strlen(base), base);
}

/* predicted_ms is the simulator's (the surrogate's with --surrogate, and for
 * one-layer rows); surrogate_ms and the breakdown columns are the surrogate's. */
static void report_csv(const validate_args *a, const iter_set *set, const double *pred, const double *sur,
                       const int *holdout, const iter_breakdown *bd, const double *factor)
{
    printf("line,part,gpus,global_batch,micro_batch,hidden,heads,layers,seq,tp,dp,pp,measured_ms,predicted_ms,"
           "error,surrogate_ms,sim_surrogate_gap,pipeline_ms,embed_sync_ms,dp_allreduce_ms,optimizer_ms,overhead_ms,"
           "layer_profile,file,label\n");
    /* numbers in the shortest form that reads back exactly, the file and label as CSV fields */
    strbuf line;
    sb_init(&line);
    for (int i = 0; i < set->n; i++) {
        const train_row *r = &set->row[i];
        char stem[256];
        file_stem(a->files[r->file], stem, sizeof stem);
        sb_reset(&line);
        sb_appendf(&line, "%d,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d", r->line, holdout[i] ? "holdout" : "fit", r->gpus,
                   r->global_batch, r->micro_batch, r->hidden, r->heads, r->layers, r->seq, r->tp, r->dp, r->pp);
        const double num[] = {1e3 * r->measured_s,     1e3 * pred[i],           pred[i] / r->measured_s - 1,
                              1e3 * sur[i],            pred[i] / sur[i] - 1,    1e3 * bd[i].pipeline_s,
                              1e3 * bd[i].embed_sync_s, 1e3 * bd[i].dp_allreduce_s, 1e3 * bd[i].optimizer_s,
                              1e3 * bd[i].overhead_s,  factor[i]};
        for (size_t k = 0; k < sizeof num / sizeof num[0]; k++) {
            sb_append(&line, ",");
            if (isfinite(num[k]))   /* empty, as every CSV of pipegrid writes a number it does not have */
                sb_append_json_number(&line, num[k]);
        }
        sb_append(&line, ",");
        csv_field(&line, stem);
        sb_append(&line, ",");
        csv_field(&line, r->label);
        printf("%s\n", line.data);
    }
    sb_free(&line);
}

static int write_text(const char *path, const strbuf *text, pg_status *st)
{
    FILE *f = fopen(path, "w");
    if (!f || fwrite(text->data, 1, text->len, f) != text->len || fclose(f) != 0) {
        if (f)
            fclose(f);
        return pg_fail(st, PG_EXIT_INTERNAL, "validate: --emit: cannot write %s", path);
    }
    return 0;
}

/* --emit DIR: each row as DIR/STEM-line-N.yaml (and its model as
 * STEM-line-N.json), and DIR/rows.csv listing them with the measured times. */
static int emit_rows(const validate_args *a, const iter_set *set, pg_status *st)
{
    strbuf index, text;
    sb_init(&index);
    sb_init(&text);
    sb_append(&index, "file,line,experiment,measured_ms,not_simulated,label\n");
    int rc = 0;
    for (int i = 0; i < set->n && rc == 0; i++) {
        const train_row *r = &set->row[i];
        char stem[256], name[512], path[4096];
        file_stem(a->files[r->file], stem, sizeof stem);
        snprintf(name, sizeof name, "%s-line-%d", stem, r->line);
        char hf[600];
        snprintf(hf, sizeof hf, "%s.json", name);
        row_experiment x;
        pg_status why;
        pg_status_clear(&why);
        if (row_experiment_make(r, hf, &x, &why) != 0) {
            sb_appendf(&index, "%s,%d,,%.6f,", stem, r->line, MS_PER_S * r->measured_s);
            csv_field(&index, why.msg);
            sb_append(&index, ",");
            csv_field(&index, r->label);
            sb_append(&index, "\n");
            continue;
        }
        sb_reset(&text);
        row_experiment_yaml(&x, r, stem, &text);
        snprintf(path, sizeof path, "%s/%s.yaml", a->emit_dir, name);
        rc = write_text(path, &text, st);
        if (rc == 0 && x.hf_json) {
            strbuf json = {.data = x.hf_json, .len = strlen(x.hf_json)};
            snprintf(path, sizeof path, "%s/%s", a->emit_dir, hf);
            rc = write_text(path, &json, st);
        }
        sb_appendf(&index, "%s,%d,%s.yaml,%.6f,", stem, r->line, name, MS_PER_S * r->measured_s);
        csv_field(&index, x.unmodelled);
        sb_append(&index, ",");
        csv_field(&index, r->label);
        sb_append(&index, "\n");
        row_experiment_free(&x);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/rows.csv", a->emit_dir);
    if (rc == 0)
        rc = write_text(path, &index, st);
    sb_free(&index);
    sb_free(&text);
    return rc;
}

/* ---- the simulator: every row as the job `run` simulates -------------------- */

#define SIM_REASON_MAX 200

typedef struct row_sims {
    int n;
    row_experiment *x;              /* [n] */
    double *iteration_s;            /* [n] simulated; NAN when the row was not simulated */
    int *code;                      /* [n] the simulation's exit code; -1 not simulated */
    char (*why)[SIM_REASON_MAX];    /* [n] why not */
    int col_iteration, col_exit;    /* in the sweep's rows */
    int *same_as;                   /* [n] an earlier row with the same experiment; -1 none */
} row_sims;

/* Whether two rows' experiments are the same job: the same keys and the
 * same model (the config.json's text). */
static int same_experiment(const row_sims *rs, int i)
{
    const row_experiment *a = &rs->x[i];
    for (int j = 0; j < i; j++) {
        const row_experiment *b = &rs->x[j];
        if (b->nsets != a->nsets || rs->same_as[j] >= 0 || (a->hf_json == NULL) != (b->hf_json == NULL) ||
            (a->hf_json && strcmp(a->hf_json, b->hf_json) != 0))
            continue;
        int k = 0;
        while (k < a->nsets && (strncmp(a->sets[k], "workload=", 9) == 0 || strcmp(a->sets[k], b->sets[k]) == 0))
            k++;
        if (k == a->nsets)
            return j;
    }
    return -1;
}

static const char *const *row_sets(long index, int *n, void *ctx)
{
    const row_sims *rs = ctx;
    *n = rs->x[index].nsets;
    return (const char *const *)rs->x[index].sets;
}

static int header_column(const char *header, const char *name)
{
    char **f;
    int nf = csv_split(header, &f), col = -1;
    for (int i = 0; i < nf; i++)
        if (strcmp(f[i], name) == 0)
            col = i;
    csv_fields_free(f, nf);
    return col;
}

static int collect_row(const sweep_result *r, void *ctx)
{
    row_sims *rs = ctx;
    char **f;
    size_t len = strlen(r->row);
    while (len > 0 && r->row[len - 1] == '\n')
        r->row[--len] = '\0';
    int nf = csv_split(r->row, &f);
    long i = r->index;
    rs->code[i] = r->exit_code;
    if ((r->exit_code == PG_EXIT_OK || r->exit_code == PG_EXIT_OOM) && rs->col_iteration < nf)
        rs->iteration_s[i] = strtod(f[rs->col_iteration], NULL);
    else
        snprintf(rs->why[i], sizeof rs->why[i], "the simulation failed (exit code %d)", r->exit_code);
    csv_fields_free(f, nf);
    return 0;
}

/* Simulate every row of set (each as its experiment: row_experiment.h),
 * jobs at a time, its model written to dir.  Rows that are not an
 * iteration (one layer's kernels) are not simulated. */
static int simulate_rows(const validate_args *a, const iter_set *set, const char *dir, row_sims *rs, pg_status *st)
{
    int n = set->n;
    rs->n = n;
    rs->x = pg_xcalloc((size_t)n + 1, sizeof *rs->x);
    rs->iteration_s = pg_xcalloc((size_t)n + 1, sizeof *rs->iteration_s);
    rs->code = pg_xcalloc((size_t)n + 1, sizeof *rs->code);
    rs->why = pg_xcalloc((size_t)n + 1, sizeof *rs->why);
    rs->same_as = pg_xcalloc((size_t)n + 1, sizeof *rs->same_as);
    for (int i = 0; i < n; i++)
        rs->same_as[i] = -1;
    strbuf spec;
    sb_init(&spec);
    sb_append(&spec, "name=");
    long *indices = pg_xcalloc((size_t)n + 1, sizeof *indices);
    long count = 0;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        rs->iteration_s[i] = NAN;
        rs->code[i] = -1;
        char stem[256], hf[4096 + 512];
        file_stem(a->files[set->row[i].file], stem, sizeof stem);
        snprintf(hf, sizeof hf, "%s/%s-line-%d.json", dir, stem, set->row[i].line);
        pg_status why;
        pg_status_clear(&why);
        if (row_experiment_make(&set->row[i], hf, &rs->x[i], &why) != 0) {
            snprintf(rs->why[i], sizeof rs->why[i], "%.190s", why.msg);
            continue;
        }
        if (rs->x[i].hf_json) {
            strbuf json = {.data = rs->x[i].hf_json, .len = strlen(rs->x[i].hf_json)};
            rc = write_text(hf, &json, st);
        }
        /* the simulator is deterministic: a job measured several times (the
         * summaries republish rows) is simulated once */
        rs->same_as[i] = same_experiment(rs, i);
        if (rs->same_as[i] >= 0)
            continue;
        sb_appendf(&spec, "%srow%d", count > 0 ? "," : "", i);
        indices[count++] = i;
    }
    if (count == 0 || rc != 0) {
        sb_free(&spec);
        free(indices);
        return rc;
    }
    /* A grid of one key, the experiment's free-text name, one value per row
     * (every row is run, indices are the rows' own). */
    strbuf base_path, base;
    sb_init(&base_path);
    sb_init(&base);
    sb_appendf(&base_path, "%s/measured-row.yaml", dir);
    sb_append(&base, "# the base of every measured row's experiment (validate): each sets all it needs\n"
                     "name: measured row\n");
    rc = write_text(base_path.data, &base, st);
    sweep_grid grid = {0};
    const char *specs[1] = {spec.data};
    if (rc == 0)
        rc = sweep_grid_parse(&grid, specs, 1, st);
    if (rc == 0) {
        strbuf header;
        sb_init(&header);
        sweep_csv_header(&grid, &header);
        if (header.len > 0 && header.data[header.len - 1] == '\n')
            header.data[--header.len] = '\0';
        rs->col_iteration = header_column(header.data, "iteration_seconds");
        rs->col_exit = header_column(header.data, "exit_code");
        sb_free(&header);
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        sweep_plan plan = {.grid = &grid, .experiment_path = base_path.data, .indices = indices, .count = count,
                           .jobs = a->jobs > 0 ? a->jobs : (int)(cpus > 0 ? cpus : 1), .progress = isatty(2),
                           .progress_label = "validate", .quiet_children = 1, .index_sets = row_sets,
                           .index_ctx = rs, .child = cmd_run};
        long *rows_of_grid = pg_xmalloc((size_t)count * sizeof *rows_of_grid);
        for (long c = 0; c < count; c++) {   /* the grid's combination c is row indices[c] */
            rows_of_grid[c] = indices[c];
            indices[c] = c;
        }
        rs->n = n;
        /* the sink gets grid indices: map them back to rows */
        row_sims by_grid = *rs;
        by_grid.x = pg_xcalloc((size_t)count, sizeof *by_grid.x);
        by_grid.iteration_s = pg_xcalloc((size_t)count, sizeof *by_grid.iteration_s);
        by_grid.code = pg_xcalloc((size_t)count, sizeof *by_grid.code);
        by_grid.why = pg_xcalloc((size_t)count, sizeof *by_grid.why);
        int k = 0;
        for (long c = 0; c < count; c++)
            by_grid.x[k++] = rs->x[rows_of_grid[c]];
        plan.index_ctx = &by_grid;
        rc = sweep_run(&plan, collect_row, &by_grid, st);
        for (long c = 0; c < count; c++) {
            int i = (int)rows_of_grid[c];
            rs->iteration_s[i] = by_grid.code[c] == PG_EXIT_OK || by_grid.code[c] == PG_EXIT_OOM
                                     ? by_grid.iteration_s[c] : NAN;
            rs->code[i] = by_grid.code[c];
            memcpy(rs->why[i], by_grid.why[c], sizeof rs->why[i]);
        }
        for (int i = 0; i < n; i++)
            if (rs->same_as[i] >= 0) {
                int j = rs->same_as[i];
                rs->iteration_s[i] = rs->iteration_s[j];
                rs->code[i] = rs->code[j];
                memcpy(rs->why[i], rs->why[j], sizeof rs->why[i]);
            }
        free(by_grid.x);
        free(by_grid.iteration_s);
        free(by_grid.code);
        free(by_grid.why);
        free(rows_of_grid);
        sweep_grid_free(&grid);
    }
    unlink(base_path.data);
    sb_free(&base_path);
    sb_free(&base);
    sb_free(&spec);
    free(indices);
    return rc;
}

static void row_sims_free(row_sims *rs)
{
    for (int i = 0; i < rs->n; i++)
        row_experiment_free(&rs->x[i]);
    free(rs->x);
    free(rs->iteration_s);
    free(rs->code);
    free(rs->why);
    free(rs->same_as);
    memset(rs, 0, sizeof *rs);
}

/* Simulate the rows (unless --surrogate) and keep those simulated, with
 * their times in sim_s (compacted like the rows); the others are skipped
 * with the reason.  One-layer rows stay, at the cost model's time (sim_s
 * NAN): no iteration to simulate. */
static int simulate_and_keep(const validate_args *a, calib_rows *rows, iter_set *set, double **sim_s, pg_status *st)
{
    *sim_s = NULL;
    if (a->surrogate_only)
        return 0;
    char tmpl[4096];
    const char *dir = a->emit_dir;
    if (dir == NULL) {
        const char *tmp = getenv("TMPDIR");
        snprintf(tmpl, sizeof tmpl, "%s/pipegrid-validate-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        if (mkdtemp(tmpl) == NULL)
            return pg_fail(st, PG_EXIT_INTERNAL, "validate: cannot make a temporary directory %s", tmpl);
        dir = tmpl;
    }
    row_sims rs = {0};
    int rc = simulate_rows(a, set, dir, &rs, st);
    int n = set->n, kept = 0;
    int *keep = pg_xcalloc((size_t)n + 1, sizeof *keep);
    double *out = pg_xcalloc((size_t)n + 1, sizeof *out);
    for (int i = 0; i < n; i++) {
        keep[i] = !isnan(rs.iteration_s[i]) || set->row[i].kind == ROW_LAYER;
        if (keep[i])
            out[kept++] = rs.iteration_s[i];
        if (a->emit_dir == NULL && rs.x[i].hf_json) {
            char stem[256], hf[4096 + 512];
            file_stem(a->files[set->row[i].file], stem, sizeof stem);
            snprintf(hf, sizeof hf, "%s/%s-line-%d.json", dir, stem, set->row[i].line);
            unlink(hf);
        }
    }
    if (a->emit_dir == NULL)
        rmdir(dir);
    if (rc == 0) {
        calib_rows_keep(rows, keep, rs.why);
        iter_set_free(set);
        rc = rows->n > 0 ? iter_set_prepare(set, rows->row, rows->n, st)
                         : pg_fail(st, PG_EXIT_INPUT, "%s: no row could be simulated", a->csv);
    }
    row_sims_free(&rs);
    free(keep);
    if (rc != 0) {
        free(out);
        return rc;
    }
    *sim_s = out;
    return 0;
}

/* The simulator against the surrogate, row by row. */
static void report_gap(const iter_set *set, const double *sim_s, const double *sur_s)
{
    int n = 0, worst = -1;
    double sum = 0, max = 0;
    for (int i = 0; i < set->n; i++) {
        if (isnan(sim_s[i]))
            continue;
        double gap = fabs(sim_s[i] / sur_s[i] - 1);
        sum += gap;
        n++;
        if (worst < 0 || gap > max) {
            max = gap;
            worst = i;
        }
    }
    error_stats sur = iter_errors(set, sur_s, NULL);
    printf("  surrogate:     %5d  MAPE %6.2f %%  (the analytic iteration model calibrate fits with)\n", sur.n,
           PCT * sur.mape);
    if (n > 0)
        printf("  sim/surrogate: %5d  mean |gap| %5.2f %%  max %5.2f %% (line %d)\n", n, PCT * sum / n, PCT * max,
               set->row[worst].line);
}

int cmd_validate(int argc, char **argv)
{
    validate_args a;
    pg_status st;
    pg_status_clear(&st);
    if (validate_args_parse(argc, argv, 0, &a, &st))
        return cli_report_error(&st);
    gpu_params g;
    calib_rows rows;
    iter_set set = {0};
    if (measurements_load(&a, &g, &rows, &set, &st))
        return cli_report_error(&st);
    a.gpu_path = g.path;
    /* the simulations run these parameters, whatever file they came from */
    if (a.no_layer_profiles)
        g.nlayer_profiles = 0;
    gpu_params_override(&g);
    if (a.emit_dir && mkdir(a.emit_dir, EMIT_DIR_MODE) != 0 && errno != EEXIST) {
        iter_set_free(&set);
        calib_rows_free(&rows);
        pg_fail(&st, PG_EXIT_INPUT, "validate: --emit %s: cannot make the directory: %s", a.emit_dir, strerror(errno));
        return cli_report_error(&st);
    }
    double *sim_s = NULL;
    if (simulate_and_keep(&a, &rows, &set, &sim_s, &st) != 0) {
        iter_set_free(&set);
        calib_rows_free(&rows);
        return cli_report_error(&st);
    }
    int n = rows.n;
    double *sur = pg_xcalloc((size_t)n + 1, sizeof *sur);
    double *pred = pg_xcalloc((size_t)n, sizeof *pred);
    iter_breakdown *bd = pg_xcalloc((size_t)n, sizeof *bd);
    int *holdout = pg_xcalloc((size_t)n, sizeof *holdout);
    double *factor = pg_xcalloc((size_t)n, sizeof *factor);   /* the row's layer profile; 0 = none */
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char key[LAYER_KEY_MAX];
        iter_row_layer_key(&set, i, key, sizeof key);
        const layer_profile *p = gpu_params_find_layer_profile(&g, key);
        factor[i] = p ? p->factor : 0.0;
        rc = iter_predict(&g, &set, i, &bd[i], &st);
        sur[i] = bd[i].total_s;
        pred[i] = sim_s && !isnan(sim_s[i]) ? sim_s[i] : sur[i];
        holdout[i] = !iter_row_in_fit_part(&rows.row[i], a.fit_fraction);
    }
    if (rc == 0 && a.emit_dir)
        rc = emit_rows(&a, &set, &st) ? cli_report_error(&st) : 0;
    if (rc == 0) {
        if (a.csv_out)
            report_csv(&a, &set, pred, sur, holdout, bd, factor);
        else {
            report_text(&set, pred, holdout, &a, &rows, factor, g.nlayer_profiles);
            if (sim_s)
                report_gap(&set, sim_s, sur);
        }
        error_stats held = iter_errors(&set, pred, holdout);
        if ((a.max_mape > 0 && held.mape > a.max_mape) || (a.max_error > 0 && held.max_err > a.max_error)) {
            fprintf(stderr, "pipegrid: validate: held-out MAPE %.2f %% / max %.2f %% miss the limits\n",
                    PCT * held.mape, PCT * held.max_err);
            rc = PG_EXIT_INTERNAL;
        }
    } else
        rc = cli_report_error(&st);
    free(pred);
    free(sur);
    free(sim_s);
    free(bd);
    free(holdout);
    free(factor);
    iter_set_free(&set);
    calib_rows_free(&rows);
    return rc;
}
