/* row_sim.c: measured rows simulated as `run` simulates them, and written
 * out as experiments (row_sim.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "calib/row_experiment.h"
#include "calib/row_sim.h"
#include "job/sweep.h"

#define MS_PER_S 1000.0
#define EMIT_DIR_MODE 0777   /* less the umask */

int row_emit_dir_make(const row_sim_opts *o, pg_status *st)
{
    if (o->emit_dir && mkdir(o->emit_dir, EMIT_DIR_MODE) != 0 && errno != EEXIST)
        return pg_fail(st, PG_EXIT_INPUT, "validate: --emit %s: cannot make the directory: %s", o->emit_dir,
                       strerror(errno));
    return 0;
}

/* The stem of a file's name: "data/x/ground_truth_single.csv" -> "ground_truth_single". */
void row_file_stem(const char *path, char *out, size_t len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    snprintf(out, len, "%.*s", dot ? (int)(dot - base) : (int)strlen(base), base);
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
int row_emit(const row_sim_opts *o, const iter_set *set, pg_status *st)
{
    strbuf index, text;
    sb_init(&index);
    sb_init(&text);
    sb_append(&index, "file,line,experiment,measured_ms,not_simulated,label\n");
    int rc = 0;
    for (int i = 0; i < set->n && rc == 0; i++) {
        const train_row *r = &set->row[i];
        char stem[256], name[512], path[4096];
        row_file_stem(o->files[r->file], stem, sizeof stem);
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
        snprintf(path, sizeof path, "%s/%s.yaml", o->emit_dir, name);
        rc = write_text(path, &text, st);
        if (rc == 0 && x.hf_json) {
            strbuf json = {.data = x.hf_json, .len = strlen(x.hf_json)};
            snprintf(path, sizeof path, "%s/%s", o->emit_dir, hf);
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
    snprintf(path, sizeof path, "%s/rows.csv", o->emit_dir);
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
    int col_iteration, col_exit, col_error;    /* in the sweep's rows */
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
    else if (rs->col_error >= 0 && rs->col_error < nf && f[rs->col_error][0])   /* the simulator's own message */
        snprintf(rs->why[i], sizeof rs->why[i], "the simulation failed (exit code %d): %.150s", r->exit_code,
                 f[rs->col_error]);
    else
        snprintf(rs->why[i], sizeof rs->why[i], "the simulation failed (exit code %d)", r->exit_code);
    csv_fields_free(f, nf);
    return 0;
}

/* Simulate every row of set (each as its experiment: row_experiment.h),
 * jobs at a time, its model written to dir.  Rows that are not an
 * iteration (one layer's kernels) are not simulated. */
static int simulate_rows(const row_sim_opts *o, const iter_set *set, const char *dir, row_sims *rs, pg_status *st)
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
        row_file_stem(o->files[set->row[i].file], stem, sizeof stem);
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
        rs->col_error = header_column(header.data, "error");
        sb_free(&header);
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        sweep_plan plan = {.grid = &grid, .experiment_path = base_path.data, .indices = indices, .count = count,
                           .jobs = o->jobs > 0 ? o->jobs : (int)(cpus > 0 ? cpus : 1), .progress = isatty(2),
                           .progress_label = "validate", .quiet_children = 1, .index_sets = row_sets,
                           .index_ctx = rs, .child = o->child};
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
int row_simulate_and_keep(const row_sim_opts *o, calib_rows *rows, iter_set *set, double **sim_s, int **sim_oom,
                          pg_status *st)
{
    *sim_s = NULL;
    *sim_oom = NULL;
    char tmpl[4096];
    const char *dir = o->emit_dir;
    if (dir == NULL) {
        const char *tmp = getenv("TMPDIR");
        snprintf(tmpl, sizeof tmpl, "%s/pipegrid-validate-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        if (mkdtemp(tmpl) == NULL)
            return pg_fail(st, PG_EXIT_INTERNAL, "validate: cannot make a temporary directory %s", tmpl);
        dir = tmpl;
    }
    row_sims rs = {0};
    int rc = simulate_rows(o, set, dir, &rs, st);
    int n = set->n, kept = 0;
    int *keep = pg_xcalloc((size_t)n + 1, sizeof *keep);
    double *out = pg_xcalloc((size_t)n + 1, sizeof *out);
    int *oom = pg_xcalloc((size_t)n + 1, sizeof *oom);
    for (int i = 0; i < n; i++) {
        keep[i] = !isnan(rs.iteration_s[i]) || set->row[i].kind == ROW_LAYER;
        if (keep[i]) {
            oom[kept] = rs.code[i] == PG_EXIT_OOM;
            out[kept++] = rs.iteration_s[i];
        }
        if (o->emit_dir == NULL && rs.x[i].hf_json) {
            char stem[256], hf[4096 + 512];
            row_file_stem(o->files[set->row[i].file], stem, sizeof stem);
            snprintf(hf, sizeof hf, "%s/%s-line-%d.json", dir, stem, set->row[i].line);
            unlink(hf);
        }
    }
    if (o->emit_dir == NULL)
        rmdir(dir);
    if (rc == 0) {
        calib_rows_keep(rows, keep, rs.why);
        iter_set_free(set);
        rc = rows->n > 0 ? iter_set_prepare(set, rows->row, rows->n, st)
                         : pg_fail(st, PG_EXIT_INPUT, "%s: no row could be simulated", o->files[0]);
    }
    row_sims_free(&rs);
    free(keep);
    if (rc != 0) {
        free(out);
        free(oom);
        return rc;
    }
    *sim_s = out;
    *sim_oom = oom;
    return 0;
}

