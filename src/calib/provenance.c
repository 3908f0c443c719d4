/* provenance.c: what a fit writes as each parameter's source (provenance.h). */
#include <stdio.h>
#include <string.h>

#include "calib/provenance.h"

/* Which fitted parameters some fit row depends on, judged as the fit judges
 * it: at calibrate's fixed starting values (a parameter the fit drove to
 * about 0 may no longer move any prediction, yet it was fitted). */
void calib_exercised_at_start(const gpu_params *g, const iter_set *set, const int *fit, int exercised[GP_COUNT])
{
    gpu_params start = *g;
    iter_fit_initial(&start);
    for (int k = 0; k < GP_COUNT; k++)
        exercised[k] = iter_param_exercised(&start, set, fit, (gpu_param_id)k);
}

void calib_provenance(gpu_params *g, const char *const *files, int nfiles, double fit_fraction, const fit_hyper *h,
                      const char *why, int nfit, int n, const char *date, const int exercised[GP_COUNT])
{
    char base[128] = "";
    for (int k = 0; k < nfiles; k++) {
        const char *b = strrchr(files[k], '/');
        b = b ? b + 1 : files[k];
        if (strlen(base) + strlen(b) + 2 < sizeof base)
            snprintf(base + strlen(base), sizeof base - strlen(base), "%s%s", k ? " " : "", b);
    }
    /* the whole sentence, then as much of it as a source holds (the
     * file's header comment keeps the cross-validation table) */
    char text[1024];
    snprintf(text, sizeof text,
             "fitted %.16s by 'pipegrid calibrate %s --fit-fraction %g' on %d of %d measured rows; max-weight %g %s",
             date, base, fit_fraction, nfit, n, h->max_weight, why);
    size_t len = strlen(text);
    if (len >= sizeof g->source[0])
        len = sizeof g->source[0] - 1;
    int tied = iter_attention_tied(exercised);
    char gpu_name[sizeof g->name];   /* a copy: g->name and g->source are parts of one object */
    memcpy(gpu_name, g->name, sizeof gpu_name);
    for (int k = 0; k < GP_COUNT; k++) {
        if (!gpu_param_fitted((gpu_param_id)k))
            continue;   /* datasheet numbers, and the ones fitted outside calibrate, keep their sources */
        if (k == tied) {
            /* the attention kernel no fit row ran: the other one's fitted rate (iter_fit) */
            snprintf(g->source[k], sizeof g->source[k],
                     "not measured on %s: no row of the fit part ran %s attention; equal to the fitted %s (%.300s)",
                     gpu_name, tied == GP_FLASH_EFF ? "flash" : "legacy", gpu_param_name(iter_attention_other(tied)),
                     text);
            continue;
        }
        if (!exercised[k]) {
            /* no fit row depends on it: the fixed starting value, said so */
            snprintf(g->source[k], sizeof g->source[k],
                     "not measured on %s: no row of the fit part exercises it (calibrate's fixed starting value)",
                     gpu_name);
            continue;
        }
        memcpy(g->source[k], text, len);
        g->source[k][len] = '\0';
    }
}

