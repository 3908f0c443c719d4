/* rpt_optimize.c: what `pipegrid optimize` prints (report_opt.h): the Pareto
 * front as text, every candidate as CSV.  The CLI's search decides which
 * candidates are simulated, pruned, on the front and best; this file only
 * lays that out, so that optimize's output takes the report layer's path as
 * `run`, `bound` and `plan` do. */
#include "report/report_opt.h"

#include <math.h>

#include "util/units.h"

void report_optimize_text(const report_optimize_input *o, strbuf *sb)
{
    sb_appendf(sb, "Pareto front (simulated; throughput against peak memory, %d point%s; global batch %ld "
               "samples on %d GPUs%s)\n", o->nfront, o->nfront == 1 ? "" : "s", o->global_batch, o->gpus,
               o->full_front ? "" : "; of the candidates whose bound reaches the best: --full-front for all");
    sb_appendf(sb, "%14s %12s %12s %10s  %s\n", "samples/s", "iteration", "makespan", "peak GiB", "settings");
    for (int i = 0; i < o->nfront; i++) {
        const report_optimize_point *p = &o->front[i];
        sb_appendf(sb, "%14.4f %10.4f s %10.4f s %10.3f  %s%s\n", p->samples_per_s, p->iteration_s, p->makespan_s,
                   p->peak_bytes / GIB, p->settings, p->best ? "   <- best" : "");
    }
}

void report_optimize_csv(const report_optimize_input *o, strbuf *sb)
{
    sb_append(sb, o->csv_header);
    sb_append(sb, ",status,samples_per_second_bound,static_bytes,front,best\n");
    for (int i = 0; i < o->ncandidates; i++) {
        const report_optimize_row *r = &o->rows[i];
        sb_appendf(sb, "%s,%s,", r->run_columns, r->status);
        if (isfinite(r->samples_per_s_bound)) sb_append_json_number(sb, r->samples_per_s_bound);
        sb_append(sb, ",");
        if (isfinite(r->static_bytes)) sb_append_json_number(sb, r->static_bytes);
        sb_appendf(sb, ",%d,%d\n", r->on_front, r->best);
    }
}
