/* cmd_validate.c: `pipegrid validate CSV...` -- predict every measured
 * iteration time of the files with the cost model and report the errors
 * (per file, fit and held-out part; rows of other GPU types or that the
 * model cannot describe are listed as skipped, with the reason).
 *
 *   pipegrid validate CSV... [--gpu TYPE|FILE] [--fit-fraction F] [--format text|csv]
 *                         [--max-mape X] [--max-error Y] [--with-regressions] [--no-layer-profiles]
 *                         [--emit DIR] [-j N] [--surrogate]
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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "calib/itermodel.h"
#include "calib/row_experiment.h"
#include "calib/row_sim.h"
#include "job/sweep.h"
#include "calib/measurements.h"
#include "cli/validate_args.h"

#define PCT 100.0
#define MS_PER_S 1000.0
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
    calib_rows_print_skipped(rows, stdout);
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

/* predicted_ms is the simulator's (the surrogate's with --surrogate, and for
 * one-layer rows); surrogate_ms and the breakdown columns are the surrogate's. */
/* predicted_oom: 1 where the simulation said the job does not fit (it ran:
 * the memory model's error), 0 where it fits, empty where nothing was
 * simulated. */
static void report_csv(const validate_args *a, const iter_set *set, const double *pred, const double *sur,
                       const int *holdout, const iter_breakdown *bd, const double *factor, const double *sim_s,
                       const int *sim_oom)
{
    printf("line,part,gpus,global_batch,micro_batch,hidden,heads,layers,seq,tp,dp,pp,measured_ms,predicted_ms,"
           "error,surrogate_ms,sim_surrogate_gap,pipeline_ms,embed_sync_ms,dp_allreduce_ms,optimizer_ms,overhead_ms,"
           "layer_profile,predicted_oom,file,label\n");
    /* numbers in the shortest form that reads back exactly, the file and label as CSV fields */
    strbuf line;
    sb_init(&line);
    for (int i = 0; i < set->n; i++) {
        const train_row *r = &set->row[i];
        char stem[256];
        row_file_stem(a->files[r->file], stem, sizeof stem);
        sb_reset(&line);
        sb_appendf(&line, "%d,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d", r->line, holdout[i] ? "holdout" : "fit", r->gpus,
                   r->global_batch, r->micro_batch, r->hidden, r->heads, r->layers, r->seq, r->tp, r->dp, r->pp);
        double by_sur = isnan(sur[i]) ? NAN : 1e3;   /* no breakdown where the surrogate has no prediction */
        const double num[] = {1e3 * r->measured_s,     1e3 * pred[i],           pred[i] / r->measured_s - 1,
                              1e3 * sur[i],            pred[i] / sur[i] - 1,    by_sur * bd[i].pipeline_s,
                              by_sur * bd[i].embed_sync_s, by_sur * bd[i].dp_allreduce_s, by_sur * bd[i].optimizer_s,
                              by_sur * bd[i].overhead_s, factor[i]};
        for (size_t k = 0; k < sizeof num / sizeof num[0]; k++) {
            sb_append(&line, ",");
            if (isfinite(num[k]))   /* empty, as every CSV of pipegrid writes a number it does not have */
                sb_append_json_number(&line, num[k]);
        }
        sb_append(&line, ",");
        if (sim_s && !isnan(sim_s[i]))
            sb_appendf(&line, "%d", sim_oom[i]);
        sb_append(&line, ",");
        csv_field(&line, stem);
        sb_append(&line, ",");
        csv_field(&line, r->label);
        printf("%s\n", line.data);
    }
    sb_free(&line);
}

/* The simulator against the surrogate, row by row; and how many jobs that
 * ran the simulation says do not fit. */
static void report_gap(const iter_set *set, const double *sim_s, const double *sur_s, const int *sim_oom)
{
    int simulated = 0, oom = 0, first_oom = -1;
    for (int i = 0; i < set->n; i++)
        if (!isnan(sim_s[i])) {
            simulated++;
            if (sim_oom[i] && oom++ == 0)
                first_oom = i;
        }
    if (oom > 0)
        printf("  memory:        %5d of %d simulated rows predicted out of memory, though they ran (e.g. line %d;"
               " docs/accuracy.md)\n", oom, simulated, set->row[first_oom].line);
    error_stats gap = iter_gap(set, sim_s, sur_s), sur = iter_errors(set, sur_s, NULL);
    printf("  surrogate:     %5d  MAPE %6.2f %%  (the analytic iteration model calibrate fits with)\n", sur.n,
           PCT * sur.mape);
    int unmodelled = 0, first = -1;
    for (int i = 0; i < set->n; i++)
        if (iter_row_unmodelled(&set->row[i]) && unmodelled++ == 0)
            first = i;
    if (unmodelled)
        printf("  not in the surrogate: %d rows, the simulator's alone (e.g. line %d: %s)\n", unmodelled,
               set->row[first].line, iter_row_unmodelled(&set->row[first]));
    if (gap.n > 0)
        printf("  sim/surrogate: %5d  mean |gap| %5.2f %%  max %5.2f %% (line %d)\n", gap.n, PCT * gap.mape,
               PCT * gap.max_err, set->row[gap.worst].line);
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
    if (measurements_load(&a, a.surrogate_only, &g, &rows, &set, &st))
        return cli_report_error(&st);
    a.gpu_path = g.path;
    /* the simulations run these parameters, whatever file they came from */
    if (a.no_layer_profiles)
        g.nlayer_profiles = 0;
    gpu_params_override(&g);
    double *sim_s = NULL;
    int *sim_oom = NULL;
    row_sim_opts sim_opts = {.files = a.files, .emit_dir = a.emit_dir, .jobs = a.jobs, .child = cmd_run};
    if (row_emit_dir_make(&sim_opts, &st) != 0 ||
        (!a.surrogate_only && row_simulate_and_keep(&sim_opts, &rows, &set, &sim_s, &sim_oom, &st) != 0)) {
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
        rc = row_emit(&sim_opts, &set, &st) ? cli_report_error(&st) : 0;
    if (rc == 0) {
        if (a.csv_out)
            report_csv(&a, &set, pred, sur, holdout, bd, factor, sim_s, sim_oom);
        else {
            report_text(&set, pred, holdout, &a, &rows, factor, g.nlayer_profiles);
            if (sim_s)
                report_gap(&set, sim_s, sur, sim_oom);
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
    free(sim_oom);
    free(bd);
    free(holdout);
    free(factor);
    iter_set_free(&set);
    calib_rows_free(&rows);
    return rc;
}
