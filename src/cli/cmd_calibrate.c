/* cmd_calibrate.c: `pipegrid calibrate CSV` -- fit the cost model's GPU
 * parameters to measured iteration times.
 *
 *   pipegrid calibrate CSV [--gpu TYPE|FILE] [--fit-fraction F] [--max-weight W] [-o FILE]
 *
 * Starts from the GPU type's parameter file (profiles/gpus/TYPE.yaml), fits
 * the efficiency parameters (never the datasheet ones) globally -- one set
 * for every row, no per-row tuning -- on the deterministic fit part of the
 * rows (a fraction F, 0.3 by default; itermodel.h), and writes the updated
 * parameter file (stdout, or FILE).  The errors on the fit part and on the
 * held-out rest go to stderr; `pipegrid validate` reports them in detail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/itermodel.h"
#include "cli/validate_args.h"
#include "util/strbuf.h"

#define PCT 100.0

static void provenance(gpu_params *g, const validate_args *a, int nfit, int n, const char *date)
{
    const char *base = strrchr(a->csv, '/');
    base = base ? base + 1 : a->csv;
    for (int k = 0; k < GP_COUNT; k++)
        if (gpu_param_fitted((gpu_param_id)k))
            snprintf(g->source[k], sizeof g->source[k],
                     "fitted %.16s by 'pipegrid calibrate %.64s --fit-fraction %g --max-weight %g' on %d of %d "
                     "measured rows", date, base, a->fit_fraction, a->max_weight, nfit, n);
}

int cmd_calibrate(int argc, char **argv)
{
    validate_args a;
    pg_status st;
    pg_status_clear(&st);
    if (validate_args_parse(argc, argv, 1, &a, &st))
        return cli_report_error(&st);
    gpu_params g;
    train_row *rows = NULL;
    int n = 0;
    iter_set set = {0};
    if (measurements_load(&a, &g, &rows, &n, &set, &st))
        return cli_report_error(&st);
    int *fit = pg_xcalloc((size_t)n, sizeof *fit), *held = pg_xcalloc((size_t)n, sizeof *held);
    int nfit = 0;
    for (int i = 0; i < n; i++) {
        fit[i] = iter_in_fit_part(i, a.fit_fraction);
        held[i] = !fit[i];
        nfit += fit[i];
    }
    error_stats fe;
    int rc = nfit == 0 ? pg_fail(&st, PG_EXIT_INPUT, "calibrate: the fit part of %s is empty", a.csv)
                       : iter_fit(&g, &set, fit, a.max_weight, &fe, &st);
    if (rc == 0) {
        double *pred = pg_xcalloc((size_t)n, sizeof *pred);
        for (int i = 0; i < n && rc == 0; i++) {
            iter_breakdown b;
            rc = iter_predict(&g, &set, i, &b, &st);
            pred[i] = b.total_s;
        }
        if (rc == 0) {
            error_stats he = iter_errors(&set, pred, held);
            fprintf(stderr, "calibrate: fit part %d rows MAPE %.2f %% max %.2f %%; held-out %d rows MAPE %.2f %% max %.2f %%\n",
                    fe.n, PCT * fe.mape, PCT * fe.max_err, he.n, PCT * he.mape, PCT * he.max_err);
            char date[32];
            time_t now = time(NULL);
            strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
            provenance(&g, &a, nfit, n, date);
            strbuf sb;
            sb_init(&sb);
            char header[512];
            snprintf(header, sizeof header,
                     "GPU type parameters of the pipegrid cost model (src/model/costmodel.h), %s.\n"
                     "Written by pipegrid calibrate: fit part MAPE %.2f %%, held-out MAPE %.2f %% (max %.2f %%).",
                     g.name, PCT * fe.mape, PCT * he.mape, PCT * he.max_err);
            gpu_params_write_yaml(&g, header, &sb);
            FILE *out = a.output[0] ? fopen(a.output, "w") : stdout;
            if (!out || sb_write(&sb, out) != 0)
                rc = pg_fail(&st, PG_EXIT_INTERNAL, "calibrate: cannot write %s", a.output[0] ? a.output : "stdout");
            if (out && out != stdout)
                fclose(out);
            sb_free(&sb);
        }
        free(pred);
    }
    if (rc)
        cli_report_error(&st);
    free(fit);
    free(held);
    iter_set_free(&set);
    free(rows);
    return rc;
}
