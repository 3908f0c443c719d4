/* csv.c: one header and one row per run, for sweeps.
 *
 * The grid keys come first (extra columns), then a fixed list of result
 * columns; header and rows are built from the same table so they always have
 * the same number of fields.  `oom` is the number of ranks over capacity
 * (0 = fits) and `oom_ranks` lists them joined by ';'.  Numbers are written
 * as shortest round-trip decimals; a value that does not exist (a failed
 * combination, a bound not computed) is an empty field.  `error` is the
 * row's one-line reason when exit_code is not 0 (empty otherwise), so a
 * sweep's failed row says why in the file itself.
 */
#include "report/report.h"

#include <math.h>
#include <string.h>

#include "report/report_util.h"

typedef enum {
    COL_SCHEDULE, COL_PP, COL_MICROBATCHES, COL_MAKESPAN, COL_SPAN, COL_BUBBLE_RATIO,
    COL_MAX_PEAK_MEMORY, COL_MAX_PEAK_ACTIVATIONS, COL_OOM, COL_OOM_RANKS, COL_EXIT_CODE,
    COL_SAMPLES_PER_S, COL_TOKENS_PER_S, COL_MFU, COL_ITERATION_S, COL_LOWER_BOUND,
    COL_PIPELINE_S, COL_DP_ALLREDUCE_S, COL_OPTIMIZER_S, COL_ERROR, COL_COUNT
} csv_col;

static const char *const col_name[COL_COUNT] = {
    "schedule", "pp", "microbatches", "makespan", "span", "bubble_ratio",
    "max_peak_memory_bytes", "max_peak_activations", "oom", "oom_ranks", "exit_code",
    "samples_per_second", "tokens_per_second", "mfu", "iteration_seconds", "lower_bound",
    "pipeline_seconds", "dp_allreduce_seconds", "optimizer_seconds", "error",
};

/* A field, quoted only when it has to be (RFC 4180). */
static void field(strbuf *sb, const char *text)
{
    if (!strpbrk(text, ",\"\r\n")) {
        sb_append(sb, text);
        return;
    }
    sb_append(sb, "\"");
    for (const char *p = text; *p; p++) {
        if (*p == '"') sb_append(sb, "\"");   /* a quote inside is doubled */
        sb_append_n(sb, p, 1);
    }
    sb_append(sb, "\"");
}

static void number(strbuf *sb, double v)
{
    if (isfinite(v)) sb_append_json_number(sb, v);
}

static void extras(strbuf *sb, const char *const *values, int n)
{
    for (int i = 0; i < n; i++) {
        field(sb, values[i] ? values[i] : "");
        sb_append(sb, ",");
    }
}

void report_csv_header(const char *const *extra_keys, int nextra, strbuf *sb)
{
    extras(sb, extra_keys, nextra);
    for (int c = 0; c < COL_COUNT; c++) {
        sb_append(sb, c ? "," : "");
        field(sb, col_name[c]);
    }
    sb_append(sb, "\n");
}

static void cell(const report_input *in, csv_col c, strbuf *sb)
{
    const run_metrics *m = in->m;
    switch (c) {
    case COL_SCHEDULE: field(sb, rpt_schedule_name(in)); return;
    case COL_PP: sb_appendf(sb, "%d", in->sched ? in->sched->pp : m->pp); return;
    case COL_MICROBATCHES: sb_appendf(sb, "%d", rpt_microbatches(in)); return;
    case COL_MAKESPAN: number(sb, m->makespan_s); return;
    case COL_SPAN: number(sb, m->span); return;
    case COL_BUBBLE_RATIO: number(sb, m->bubble_ratio); return;
    case COL_MAX_PEAK_MEMORY: number(sb, rpt_max_peak_memory(m)); return;
    case COL_MAX_PEAK_ACTIVATIONS: number(sb, rpt_max_peak_activations(m)); return;
    case COL_OOM: sb_appendf(sb, "%d", m->noom); return;
    case COL_OOM_RANKS:
        for (int i = 0; i < m->noom; i++) sb_appendf(sb, "%s%d", i ? ";" : "", m->oom[i]);
        return;
    case COL_EXIT_CODE: sb_appendf(sb, "%d", report_exit_code(in)); return;
    case COL_SAMPLES_PER_S: number(sb, m->samples_per_s); return;
    case COL_TOKENS_PER_S: number(sb, m->tokens_per_s); return;
    case COL_MFU: number(sb, m->mfu); return;
    case COL_ITERATION_S: number(sb, m->iteration_s); return;
    case COL_LOWER_BOUND:
        if (m->lower_bound > 0) number(sb, m->lower_bound);
        return;
    case COL_PIPELINE_S: number(sb, m->pipeline_s); return;
    case COL_DP_ALLREDUCE_S: number(sb, m->dp_allreduce_s); return;
    case COL_OPTIMIZER_S: number(sb, m->optimizer_s); return;
    case COL_ERROR: {
        /* The words of cmd_run's messages for the same exit codes. */
        char why[96] = "";
        int code = report_exit_code(in);
        if (code == PG_EXIT_OOM)
            snprintf(why, sizeof why, "out of memory predicted on %d rank%s (see oom)", m->noom,
                     m->noom > 1 ? "s" : "");
        else if (code == PG_EXIT_DEADLOCK)
            snprintf(why, sizeof why, "deadlock: the schedule cannot complete");
        field(sb, why);
        return;
    }
    case COL_COUNT: return;
    }
}

void report_csv_row(const report_input *in, const char *const *extra_values, int nextra, strbuf *sb)
{
    if (!in->m) {
        report_csv_row_failed(extra_values, nextra, report_exit_code(in), NULL, sb);
        return;
    }
    extras(sb, extra_values, nextra);
    for (int c = 0; c < COL_COUNT; c++) {
        sb_append(sb, c ? "," : "");
        cell(in, (csv_col)c, sb);
    }
    sb_append(sb, "\n");
}

void report_csv_row_failed(const char *const *extra_values, int nextra, int exit_code, const char *error,
                           strbuf *sb)
{
    extras(sb, extra_values, nextra);
    for (int c = 0; c < COL_COUNT; c++) {
        sb_append(sb, c ? "," : "");
        if (c == COL_EXIT_CODE) sb_appendf(sb, "%d", exit_code);
        if (c == COL_ERROR && error) field(sb, error);
    }
    sb_append(sb, "\n");
}
