/* rpt_optimize.c: what `pipegrid optimize` prints (report_opt.h): the Pareto
 * front as text, every candidate as CSV.  The CLI's search decides which
 * candidates are simulated, pruned, on the front and best; this file only
 * lays that out, so that optimize's output takes the report layer's path as
 * `run`, `bound` and `plan` do. */
#include "report/report_opt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "report/report_util.h"
#include "util/units.h"

/* The front's picture (report_optimize_svg): plot area and margins in px. */
#define FRONT_W 760.0
#define FRONT_H 460.0
#define FRONT_LEFT 80.0
#define FRONT_RIGHT 30.0
#define FRONT_TOP 50.0
#define FRONT_BOTTOM 60.0
#define FRONT_TICKS 5
#define FRONT_HEADROOM 1.08        /* axes reach past the largest value by this factor */
#define FRONT_FLUSH_BYTES 65536
#define FRONT_DOT_R 3.0
#define FRONT_CHOSEN_R 8.0

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

/* A round step (1, 2 or 5 times a power of ten) giving about FRONT_TICKS ticks up to max. */
static double tick_step(double max)
{
    double raw = max / FRONT_TICKS, p = pow(10.0, floor(log10(raw)));
    return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

static void svg_attr_num(strbuf *sb, const char *name, double v)
{
    sb_appendf(sb, " %s=\"", name);
    rpt_svg_num(sb, v);
    sb_append(sb, "\"");
}

static void svg_text(strbuf *sb, double x, double y, const char *attrs, const char *t)
{
    sb_append(sb, "<text");
    svg_attr_num(sb, "x", x);
    svg_attr_num(sb, "y", y);
    sb_appendf(sb, "%s%s>", attrs[0] ? " " : "", attrs);
    rpt_xml_text(sb, t);
    sb_append(sb, "</text>\n");
}

int report_optimize_svg(const report_optimize_point *points, int n, long global_batch, int gpus, const char *path,
                        pg_status *st)
{
    rpt_file w;
    int rc = rpt_file_open(&w, path, "--svg", FRONT_FLUSH_BYTES, st);
    if (rc != 0) return rc;
    strbuf *sb = rpt_file_buf(&w);
    double max_x = 0, max_y = 0;
    for (int i = 0; i < n; i++) {
        max_x = fmax(max_x, points[i].peak_bytes / GIB);
        max_y = fmax(max_y, points[i].samples_per_s);
    }
    double sx = tick_step(max_x > 0 ? max_x * FRONT_HEADROOM : 1.0), sy = tick_step(max_y > 0 ? max_y * FRONT_HEADROOM : 1.0);
    double top_x = sx * ceil((max_x > 0 ? max_x * FRONT_HEADROOM : 1.0) / sx);
    double top_y = sy * ceil((max_y > 0 ? max_y * FRONT_HEADROOM : 1.0) / sy);
    double pw = FRONT_W - FRONT_LEFT - FRONT_RIGHT, ph = FRONT_H - FRONT_TOP - FRONT_BOTTOM;
#define PX(gib) (FRONT_LEFT + (gib) / top_x * pw)
#define PY(sps) (FRONT_TOP + ph - (sps) / top_y * ph)
    sb_append(sb, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"");
    svg_attr_num(sb, "width", FRONT_W);
    svg_attr_num(sb, "height", FRONT_H);
    sb_append(sb, " font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n");
    strbuf title;
    sb_init(&title);
    sb_appendf(&title, "Pareto front: %d simulated plans that fit, batch %ld on %d GPUs", n, global_batch, gpus);
    sb_append(sb, "<title>");
    rpt_xml_text(sb, title.data);
    sb_append(sb, "</title>\n");
    svg_text(sb, FRONT_LEFT, FRONT_TOP / 2, "font-size=\"14\"", title.data);
    sb_free(&title);
    /* axes and their ticks */
    sb_append(sb, "<g stroke=\"#444\">\n<line");
    svg_attr_num(sb, "x1", FRONT_LEFT);
    svg_attr_num(sb, "y1", FRONT_TOP + ph);
    svg_attr_num(sb, "x2", FRONT_LEFT + pw);
    svg_attr_num(sb, "y2", FRONT_TOP + ph);
    sb_append(sb, "/>\n<line");
    svg_attr_num(sb, "x1", FRONT_LEFT);
    svg_attr_num(sb, "y1", FRONT_TOP);
    svg_attr_num(sb, "x2", FRONT_LEFT);
    svg_attr_num(sb, "y2", FRONT_TOP + ph);
    sb_append(sb, "/>\n</g>\n");
    char label[64];
    for (double v = 0; v <= top_x * (1 + 1e-9); v += sx) {
        snprintf(label, sizeof label, "%g", v);
        svg_text(sb, PX(v), FRONT_TOP + ph + 18, "text-anchor=\"middle\"", label);
    }
    for (double v = 0; v <= top_y * (1 + 1e-9); v += sy) {
        snprintf(label, sizeof label, "%g", v);
        svg_text(sb, FRONT_LEFT - 8, PY(v) + 4, "text-anchor=\"end\"", label);
    }
    svg_text(sb, FRONT_LEFT + pw / 2, FRONT_H - 15, "text-anchor=\"middle\"", "peak memory (GiB, fullest GPU)");
    char rotate[96];
    snprintf(rotate, sizeof rotate, "text-anchor=\"middle\" transform=\"rotate(-90 18 %g)\"", FRONT_TOP + ph / 2);
    svg_text(sb, 18, FRONT_TOP + ph / 2, rotate, "samples/s");
    /* the front, joined in peak order (the caller's points are in any order) */
    int *front = malloc(((size_t)n + 1) * sizeof *front);
    int nf = 0;
    for (int i = 0; i < n; i++)
        if (points[i].on_front) front[nf++] = i;
    for (int a = 1; a < nf; a++)
        for (int b = a; b > 0 && points[front[b]].peak_bytes < points[front[b - 1]].peak_bytes; b--) {
            int t = front[b];
            front[b] = front[b - 1];
            front[b - 1] = t;
        }
    if (nf > 1) {
        sb_append(sb, "<polyline class=\"front\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"");
        for (int k = 0; k < nf; k++) {
            if (k) sb_append(sb, " ");
            rpt_svg_num(sb, PX(points[front[k]].peak_bytes / GIB));
            sb_append(sb, ",");
            rpt_svg_num(sb, PY(points[front[k]].samples_per_s));
        }
        sb_append(sb, "\"/>\n");
    }
    free(front);
    for (int k = 0; k < 2 * n; k++) {   /* the others first, so that the front's dots lie on top */
        const report_optimize_point *p = &points[k % n];
        if (p->on_front != (k >= n)) continue;
        sb_appendf(sb, "<circle class=\"%s\"", p->on_front ? "front" : "plan");
        svg_attr_num(sb, "cx", PX(p->peak_bytes / GIB));
        svg_attr_num(sb, "cy", PY(p->samples_per_s));
        svg_attr_num(sb, "r", FRONT_DOT_R);
        sb_appendf(sb, " fill=\"%s\"><title>", p->on_front ? "#1f77b4" : "#aaaaaa");
        sb_appendf(sb, "%.4f samples/s, %.3f GiB: ", p->samples_per_s, p->peak_bytes / GIB);
        rpt_xml_text(sb, p->settings);
        sb_append(sb, "</title></circle>\n");
    }
    for (int i = 0; i < n; i++) {
        const report_optimize_point *p = &points[i];
        if (!p->best) continue;
        sb_append(sb, "<circle id=\"chosen\" class=\"chosen\"");
        svg_attr_num(sb, "cx", PX(p->peak_bytes / GIB));
        svg_attr_num(sb, "cy", PY(p->samples_per_s));
        svg_attr_num(sb, "r", FRONT_CHOSEN_R);
        sb_append(sb, " fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\"/>\n");
        strbuf t;
        sb_init(&t);
        sb_appendf(&t, "chosen: %.4f samples/s at %.3f GiB", p->samples_per_s, p->peak_bytes / GIB);
        svg_text(sb, FRONT_LEFT + 10, FRONT_TOP + 14, "fill=\"#d62728\"", t.data);
        svg_text(sb, FRONT_LEFT + 10, FRONT_TOP + 30, "fill=\"#d62728\" font-size=\"10\"", p->settings);
        sb_free(&t);
    }
#undef PX
#undef PY
    sb_append(sb, "</svg>\n");
    return rpt_file_close(&w, path, "front picture", st);
}
