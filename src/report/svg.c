/* svg.c: a run drawn as the pipeline papers draw it, as one SVG file.
 *
 * Top to bottom: a title (schedule, pp, m, makespan) and a subtitle
 * (workload, network, bubble, peak memory); a legend of what is drawn; the
 * timeline, one lane per rank (rank 0 on top) and time across, each op a
 * rectangle coloured by kind (later chunks of a rank darker, as the
 * interleaved and V-shape papers shade them) with its microbatch number
 * inside when the number fits, idle time as the lane's grey background,
 * reload stalls hatched; under each lane thin strips for what runs beside
 * the compute, each present only when the timeline has some: offload copies
 * (D2H, H2D), tensor-parallel collectives, gradient all-reduce buckets; the
 * optimizer step on the compute row after the pipeline; a time axis; then
 * per rank a small device-memory plot on the same time axis: the step curve
 * of static + activation + workspace bytes (metrics_memory_walk, the
 * accounting the peaks come from, so the picture cannot disagree with the
 * numbers), the static part as a band and the capacity as a dashed line, all
 * panels on one scale so ranks compare.
 *
 * Deterministic: ops are drawn in (rank, start, index) order, every number
 * goes through a fixed printf format, nothing depends on the clock or on
 * addresses; the same run gives a byte-identical file.  Elements carry
 * classes (op KIND, idle, stall, d2h, h2d, tp, dp, optimizer, mem, capacity)
 * so that tests and style sheets can find them.
 *
 * Op kinds are styled by one table indexed by tl_op.kind: a kind the
 * timeline gains later is drawn grey under rpt_kind_name until the table
 * gives it a colour.  The file is streamed through a buffer, like the trace.
 */
#include "report/report.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_util.h"

#define SVG_FLUSH_BYTES (1u << 20)

/* ---- geometry (pixels) ---------------------------------------------------- */
#define MARGIN_LEFT 84.0
#define MARGIN_RIGHT 28.0
#define MARGIN_TOP 12.0
#define MARGIN_BOTTOM 14.0
#define TITLE_FONT 17.0
#define SUBTITLE_FONT 12.0
#define TITLE_BLOCK_H 50.0
#define LEGEND_FONT 11.0
#define LEGEND_ROW_H 20.0
#define LEGEND_SWATCH_W 16.0
#define LEGEND_SWATCH_H 11.0
#define LEGEND_ITEM_GAP 18.0
#define LEGEND_TEXT_GAP 5.0      /* swatch to its text */
#define LEGEND_LINE_W 1.6
#define TITLE_LINE_GAP 8.0
#define LABEL_GAP 8.0            /* rank labels to the plot */
#define PANEL_BORDER_W 0.6
#define MEM_LINE_W 1.3
#define SECTION_FONT 12.0
#define SECTION_HEAD_H 20.0
#define LABEL_FONT 11.0
#define AXIS_H 34.0              /* ticks, labels, axis title */
#define AXIS_TICK_LEN 4.0
#define AXIS_FONT 10.0
#define TICK_TARGET_PX 100.0     /* about one tick every this many pixels */
#define TICK_EPS 1e-9            /* a tick at t1 itself despite rounding */
#define SECTION_GAP 14.0
/* Plot width grows with the ops of the busiest rank, within bounds. */
#define PX_PER_OP 24.0
#define PLOT_W_MIN 900.0
#define PLOT_W_MAX 1800.0
/* Lane and memory-panel heights shrink with pp so big pipelines stay one page. */
#define LANES_BUDGET_PX 420.0
#define ROW_H_MIN 6.0
#define ROW_H_MAX 24.0
#define STRIP_H_MAX 5.0
#define STRIP_H_MIN 2.0
#define MEM_BUDGET_PX 340.0
#define MEM_H_MIN 12.0
#define MEM_H_MAX 42.0
#define MEM_PEAK_FONT 9.0
/* Memory scale: the capacity is drawn when it is at most this many times the
 * highest peak; the scale leaves a little room above what it shows. */
#define CAPACITY_ON_SCALE_MAX 2.0
#define CAPACITY_HEADROOM 1.04
#define PEAK_HEADROOM 1.15
#define MEM_LABEL_MIN_H 26.0     /* panels lower than this get no peak label under the rank's */
#define MEM_LABEL_SHIFT 6.0      /* the rank label moves up this much to make room for it */
#define RANK_LABEL_MIN_PX 11.0   /* rank labels closer than this are thinned out */
/* Microbatch numbers: font from the row height, drawn when they fit. */
#define MB_FONT_MAX 11.0
#define MB_FONT_MIN 7.0
#define MB_FONT_PAD 7.0          /* row height minus font size */
#define CHAR_W_EM 0.60           /* average glyph width of the sans font, in em */
#define DIGIT_W_EM 0.64          /* digits are wider than the average glyph */
#define TEXT_PAD_PX 3.0
#define BASELINE_EM 0.35         /* baseline offset that centres digits vertically */
#define OP_STROKE_W 0.5
#define OP_MIN_W 0.5             /* every op stays visible */
#define OP_STROKE_MIN_AVG_W 5.0  /* borders only when ops are wide enough to keep them apart */
#define CHUNK_DARKEN 0.26        /* per chunk index */
#define CHUNK_DARKEN_FLOOR 0.42
#define DARK_LUMA 0.5            /* fills darker than this get white numbers */
#define COORD_SCALE 100.0        /* coordinates are written to 1/100 px */

/* ---- colours ---------------------------------------------------------------- */
#define COL_BACKGROUND "#ffffff"
#define COL_IDLE "#ececec"
#define COL_GRID_LANES "#ffffff"
#define COL_GRID_MEM "#eeeeee"
#define COL_TEXT "#1a1a1a"
#define COL_SUBTLE "#555555"
#define COL_OP_STROKE "#4d4d4d"
#define COL_AXIS "#333333"
#define COL_STALL "#d62728"
#define COL_STALL_BG "#f7d4d4"
#define COL_D2H "#1b7f79"
#define COL_H2D "#b5651d"
#define COL_TP "#7b6fb0"
#define COL_DP "#3d3d3d"
#define COL_OPTIMIZER 0x8c8c8cu
#define COL_MEM "#1f4e8c"
#define COL_STATIC "#dbe4f0"
#define COL_CAPACITY "#c0392b"
#define COL_PANEL_BORDER "#c8c8c8"
#define COL_UNKNOWN_KIND 0xbfbfbfu

typedef struct kind_style {
    const char *label;     /* legend text after the kind's name; NULL = not styled yet */
    uint32_t rgb;
} kind_style;

/* Indexed by tl_op.kind.  Add a row when the timeline gains a kind. */
static const kind_style KIND_STYLE[TL_OP_KIND_COUNT] = {
    [OP_F] = { "forward", 0x9dc3e6u },
    [OP_B] = { "backward (input grad)", 0xf4b183u },
    [OP_W] = { "weight grad", 0xa9d18eu },
    [OP_BW] = { "fused backward", 0xf6cf5fu },
    [TL_OP_R] = { "recompute", 0xc5a3d9u },
    [TL_OP_RW] = { "recompute for W", 0xe3a9c8u },
};

static uint32_t kind_rgb(int kind)
{
    if (kind >= 0 && kind < TL_OP_KIND_COUNT && KIND_STYLE[kind].label) return KIND_STYLE[kind].rgb;
    return COL_UNKNOWN_KIND;
}

static const char *kind_label(int kind)
{
    if (kind >= 0 && kind < TL_OP_KIND_COUNT && KIND_STYLE[kind].label) return KIND_STYLE[kind].label;
    return "other";
}

static uint32_t shade(uint32_t rgb, int chunk)
{
    double f = 1.0 - CHUNK_DARKEN * chunk;
    if (f < CHUNK_DARKEN_FLOOR) f = CHUNK_DARKEN_FLOOR;
    uint32_t out = 0;
    for (int shift = 16; shift >= 0; shift -= 8) {
        unsigned c = (unsigned)lround(((rgb >> shift) & 0xffu) * f);
        out |= (uint32_t)(c > 255u ? 255u : c) << shift;
    }
    return out;
}

static int is_dark(uint32_t rgb)
{
    double luma = (0.2126 * ((rgb >> 16) & 0xffu) + 0.7152 * ((rgb >> 8) & 0xffu) + 0.0722 * (rgb & 0xffu)) / 255.0;
    return luma < DARK_LUMA;
}

/* ---- output ------------------------------------------------------------------ */

/* The picture streams through the report layer's buffered file writer. */
typedef rpt_file writer;

static strbuf *out(writer *w)
{
    return rpt_file_buf(w);
}

/* A coordinate to 1/100 px, trailing zeros trimmed ("12.5", "40"); never "-0". */
static void num(strbuf *sb, double v)
{
    if (!isfinite(v)) v = 0;
    long long c = llround(v * COORD_SCALE);
    if (c < 0) {
        sb_append(sb, "-");
        c = -c;
    }
    long long whole = c / (long long)COORD_SCALE, frac = c % (long long)COORD_SCALE;
    if (frac == 0)
        sb_appendf(sb, "%lld", whole);
    else if (frac % 10 == 0)
        sb_appendf(sb, "%lld.%lld", whole, frac / 10);
    else
        sb_appendf(sb, "%lld.%02lld", whole, frac);
}

static void color(strbuf *sb, uint32_t rgb)
{
    sb_appendf(sb, "#%06x", (unsigned)(rgb & 0xffffffu));
}

/* Text content or attribute value, XML-escaped. */
static void text_escaped(strbuf *sb, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': sb_append(sb, "&amp;"); break;
        case '<': sb_append(sb, "&lt;"); break;
        case '>': sb_append(sb, "&gt;"); break;
        case '"': sb_append(sb, "&quot;"); break;
        default:
            /* control characters are not allowed in XML 1.0 */
            if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n')
                sb_append(sb, "?");
            else
                sb_append_n(sb, s, 1);
        }
    }
}

static void rect(strbuf *sb, double x, double y, double wd, double ht)
{
    sb_append(sb, "<rect x=\"");
    num(sb, x);
    sb_append(sb, "\" y=\"");
    num(sb, y);
    sb_append(sb, "\" width=\"");
    num(sb, wd > 0 ? wd : 0);
    sb_append(sb, "\" height=\"");
    num(sb, ht > 0 ? ht : 0);
    sb_append(sb, "\"");
}

static void line(strbuf *sb, double x1, double y1, double x2, double y2)
{
    sb_append(sb, "<line x1=\"");
    num(sb, x1);
    sb_append(sb, "\" y1=\"");
    num(sb, y1);
    sb_append(sb, "\" x2=\"");
    num(sb, x2);
    sb_append(sb, "\" y2=\"");
    num(sb, y2);
    sb_append(sb, "\"");
}

/* <text x y ATTRS>TEXT</text>; attrs may be "". */
static void text(strbuf *sb, double x, double y, const char *attrs, const char *s)
{
    sb_append(sb, "<text x=\"");
    num(sb, x);
    sb_append(sb, "\" y=\"");
    num(sb, y);
    sb_appendf(sb, "\"%s%s>", attrs[0] ? " " : "", attrs);
    text_escaped(sb, s);
    sb_append(sb, "</text>\n");
}

static double text_width(const char *s, double font_px)
{
    /* UTF-8 continuation bytes do not start a glyph */
    int glyphs = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0u) != 0x80u) glyphs++;
    return glyphs * CHAR_W_EM * font_px;
}

/* ---- human numbers --------------------------------------------------------- */

typedef struct time_unit {
    double seconds;
    const char *name;
} time_unit;

static time_unit unit_for(double range_s)
{
    if (range_s >= 1.0) return (time_unit){ 1.0, "s" };
    if (range_s >= 1e-3) return (time_unit){ 1e-3, "ms" };
    if (range_s >= 1e-6) return (time_unit){ 1e-6, "\xc2\xb5s" };
    return (time_unit){ 1e-9, "ns" };
}

static void fmt_seconds(char *buf, size_t len, double s)
{
    time_unit u = unit_for(fabs(s));
    snprintf(buf, len, "%.4g %s", s / u.seconds, u.name);
}

static void fmt_bytes(char *buf, size_t len, double bytes)
{
    static const char *const names[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    int i = 0;
    double v = bytes;
    while (fabs(v) >= 1024.0 && i < (int)(sizeof names / sizeof names[0]) - 1) v /= 1024.0, i++;
    if (i == 0)
        snprintf(buf, len, "%.0f B", v);
    else
        snprintf(buf, len, "%.1f %s", v, names[i]);
}

/* ---- strips: thin rows under each lane for what runs beside the compute ---- */

/* Offload copies (one engine per direction) and, with tensor / data
 * parallelism, the collectives: each kind its own row, present only when
 * the timeline has some, so a plain run has none. */
enum { STRIP_D2H, STRIP_H2D, STRIP_TP, STRIP_DP, STRIP_COUNT };

static const struct {
    const char *cls, *fill, *legend;
} STRIP_STYLE[STRIP_COUNT] = {
    [STRIP_D2H] = { "d2h", COL_D2H, "offload D2H" },
    [STRIP_H2D] = { "h2d", COL_H2D, "reload H2D" },
    [STRIP_TP] = { "tp", COL_TP, "tensor-parallel collectives" },
    [STRIP_DP] = { "dp", COL_DP, "gradient all-reduce (dp)" },
};

/* ---- layout ------------------------------------------------------------------ */

typedef struct layout {
    int pp, v;
    double t0, t1;               /* drawn time range, seconds */
    double plot_x, plot_w;
    double width, height;
    double legend_y;             /* top of the legend */
    double legend_h;
    double lanes_y;              /* top of rank 0's lane */
    double row_h, strip_h, lane_h, lane_gap;
    double axis1_y;              /* the timeline's axis line */
    double mem_head_y;
    double mem_y, mem_h, mem_gap;
    double axis2_y;
    int label_every;             /* rank labels on every k-th rank */
    int strip[STRIP_COUNT];      /* row of each strip under the lanes, -1 = not drawn */
    int nstrips;
    int has_stalls, has_optimizer;
    int kind_present[TL_OP_KIND_COUNT + 1];   /* last slot: kinds with no style */
    time_unit unit;
    double tick_step_s;
    int tick_decimals;
    int nticks;                  /* at t0, t0 + step, ... up to t1 */
    double ymax_bytes;           /* top of every memory panel */
    int capacity_on_scale;
    double capacity_off_scale_bytes;   /* > 0: the capacity, too high to draw */
    int has_static;
    double mb_font;
} layout;

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static double X(const layout *L, double t)
{
    double range = L->t1 - L->t0;
    double x = range > 0 ? (t - L->t0) / range * L->plot_w : 0;
    return L->plot_x + clampd(x, 0, L->plot_w);
}

static double lane_top(const layout *L, int r)
{
    return L->lanes_y + r * (L->lane_h + L->lane_gap);
}

static double panel_top(const layout *L, int r)
{
    return L->mem_y + r * (L->mem_h + L->mem_gap);
}

static double Y(const layout *L, int r, double bytes)
{
    double bottom = panel_top(L, r) + L->mem_h;
    return bottom - clampd(bytes / L->ymax_bytes, 0, 1) * (L->mem_h - 1);
}

static int pipeline_ranks(const report_input *in)
{
    if (in->sched) return in->sched->pp;
    if (in->m) return in->m->pp;
    int pp = 0;
    for (size_t i = 0; i < in->tl->nops; i++)
        if (timeline_op(in->tl, i).rank >= pp) pp = timeline_op(in->tl, i).rank + 1;
    return pp;
}

static void choose_ticks(layout *L)
{
    double range = L->t1 - L->t0;
    L->unit = unit_for(range);
    double target = L->plot_w / TICK_TARGET_PX;
    double raw = range > 0 ? range / target : 1.0;
    double mag = pow(10.0, floor(log10(raw)));
    double norm = raw / mag;
    double nice = norm <= 1.0 ? 1.0 : norm <= 2.0 ? 2.0 : norm <= 5.0 ? 5.0 : 10.0;
    L->tick_step_s = nice * mag;
    double step_u = L->tick_step_s / L->unit.seconds;
    L->tick_decimals = step_u >= 1.0 ? 0 : (int)ceil(-log10(step_u) - TICK_EPS);
    L->nticks = (int)floor(range / L->tick_step_s * (1 + TICK_EPS)) + 1;
}

/* ---- legend (measured and drawn by the same code) ------------------------- */

typedef struct legend {
    const layout *L;
    strbuf *sb;                  /* NULL: measure only */
    double x, y;
    int rows;
} legend;

static void legend_advance(legend *lg, const char *label)
{
    double need = LEGEND_SWATCH_W + LEGEND_TEXT_GAP + text_width(label, LEGEND_FONT);
    if (lg->x > lg->L->plot_x && lg->x + need > lg->L->plot_x + lg->L->plot_w) {
        lg->x = lg->L->plot_x;
        lg->y += LEGEND_ROW_H;
        lg->rows++;
    }
}

static void legend_label(legend *lg, const char *label)
{
    double tx = lg->x + LEGEND_SWATCH_W + LEGEND_TEXT_GAP;
    if (lg->sb) text(lg->sb, tx, lg->y + LEGEND_SWATCH_H - 1, "", label);
    lg->x = tx + text_width(label, LEGEND_FONT) + LEGEND_ITEM_GAP;
}

/* A filled swatch; fill2 != fill paints its right half (a later chunk). */
static void legend_box(legend *lg, const char *label, const char *fill, const char *fill2, const char *cls)
{
    legend_advance(lg, label);
    if (lg->sb) {
        double half = LEGEND_SWATCH_W / 2;
        rect(lg->sb, lg->x, lg->y, fill2 ? half : LEGEND_SWATCH_W, LEGEND_SWATCH_H);
        sb_appendf(lg->sb, " class=\"legend %s\" fill=\"%s\" stroke=\"%s\" stroke-width=\"%g\"/>\n", cls, fill,
                   COL_OP_STROKE, OP_STROKE_W);
        if (fill2) {
            rect(lg->sb, lg->x + half, lg->y, half, LEGEND_SWATCH_H);
            sb_appendf(lg->sb, " class=\"legend %s\" fill=\"%s\" stroke=\"%s\" stroke-width=\"%g\"/>\n", cls, fill2,
                       COL_OP_STROKE, OP_STROKE_W);
        }
    }
    legend_label(lg, label);
}

static void legend_line(legend *lg, const char *label, const char *stroke, const char *dash)
{
    legend_advance(lg, label);
    if (lg->sb) {
        line(lg->sb, lg->x, lg->y + LEGEND_SWATCH_H / 2, lg->x + LEGEND_SWATCH_W, lg->y + LEGEND_SWATCH_H / 2);
        sb_appendf(lg->sb, " stroke=\"%s\" stroke-width=\"%g\"%s%s%s/>\n", stroke, LEGEND_LINE_W, dash ? " stroke-dasharray=\"" : "",
                   dash ? dash : "", dash ? "\"" : "");
    }
    legend_label(lg, label);
}

static void hex(char *buf, uint32_t rgb)
{
    snprintf(buf, 8, "#%06x", (unsigned)(rgb & 0xffffffu));
}

/* Returns the number of legend rows. */
static int legend_run(const layout *L, strbuf *sb, double y)
{
    legend lg = { L, sb, L->plot_x, y, 1 };
    char label[96], c0[8], c1[8], kbuf[16];
    for (int k = 0; k <= TL_OP_KIND_COUNT; k++) {
        if (!L->kind_present[k]) continue;
        const char *name = k < TL_OP_KIND_COUNT ? rpt_kind_name(k, kbuf, sizeof kbuf) : "?";
        snprintf(label, sizeof label, "%s %s", name, kind_label(k));
        uint32_t rgb = k < TL_OP_KIND_COUNT ? kind_rgb(k) : COL_UNKNOWN_KIND;
        hex(c0, rgb);
        hex(c1, shade(rgb, 1));
        legend_box(&lg, label, c0, L->v > 1 ? c1 : NULL, name);
    }
    if (L->v > 1) {
        /* the halves above: chunk 0 left, the last chunk darker */
        snprintf(label, sizeof label, "(darker: later chunk of the rank)");
        legend_advance(&lg, label);
        lg.x -= LEGEND_SWATCH_W + LEGEND_TEXT_GAP;
        legend_label(&lg, label);
    }
    legend_box(&lg, "idle", COL_IDLE, NULL, "idle");
    if (L->has_stalls) legend_box(&lg, "stall (waits for reload)", "url(#stall-hatch)", NULL, "stall");
    if (L->has_optimizer) {
        hex(c0, COL_OPTIMIZER);
        legend_box(&lg, "optimizer step", c0, NULL, "optimizer");
    }
    for (int k = 0; k < STRIP_COUNT; k++)
        if (L->strip[k] >= 0) legend_box(&lg, STRIP_STYLE[k].legend, STRIP_STYLE[k].fill, NULL, STRIP_STYLE[k].cls);
    legend_line(&lg, "device memory", COL_MEM, NULL);
    if (L->has_static) legend_box(&lg, "static (weights, grads, optimizer)", COL_STATIC, NULL, "static");
    if (L->capacity_on_scale) legend_line(&lg, "capacity", COL_CAPACITY, "5 3");
    return lg.rows;
}

/* ---- memory walk passes --------------------------------------------------- */

static double static_bytes(const report_input *in, int r)
{
    return (in->m && r < in->m->pp) ? in->m->rank[r].static_bytes : 0.0;
}

static double capacity_bytes(const report_input *in, int r)
{
    return (in->m && r < in->m->pp) ? in->m->rank[r].capacity_bytes : 0.0;
}

static metrics_input walk_input(const report_input *in)
{
    metrics_input mi = { .sched = in->sched, .wl = in->wl, .plat = in->plat, .rank_gpu = in->rank_gpu,
                         .tl = in->tl, .plan = in->plan };
    if (in->exp) {
        mi.bytes_per_param = in->exp->bytes_per_param;
        mi.capacity_override_bytes = in->exp->memory_capacity_bytes;
        mi.sharding = memory_sharding_of(in->exp);
        mi.dp = in->exp->dp;
    }
    return mi;
}

typedef struct peak_ctx {
    const report_input *in;
    int pp;
    double *peak;                /* [pp] */
} peak_ctx;

static void peak_event(void *vctx, int rank, double t_s, double activation_bytes, double workspace_bytes,
                       double activations)
{
    (void)t_s;
    (void)activations;
    peak_ctx *c = vctx;
    if (rank < 0 || rank >= c->pp) return;
    double total = static_bytes(c->in, rank) + activation_bytes + workspace_bytes;
    if (total > c->peak[rank]) c->peak[rank] = total;
}

/* ---- sections ------------------------------------------------------------ */

static void header(const report_input *in, const layout *L, writer *w)
{
    strbuf *sb = out(w);
    sb_append(sb, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"");
    num(sb, L->width);
    sb_append(sb, "\" height=\"");
    num(sb, L->height);
    sb_append(sb, "\" viewBox=\"0 0 ");
    num(sb, L->width);
    sb_append(sb, " ");
    num(sb, L->height);
    sb_appendf(sb, "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" fill=\"%s\">\n", COL_TEXT);
    sb_append(sb, "<title>");
    text_escaped(sb, rpt_schedule_name(in));
    sb_append(sb, " pipeline</title>\n");
    sb_appendf(sb,
               "<defs><pattern id=\"stall-hatch\" width=\"4\" height=\"4\" patternUnits=\"userSpaceOnUse\" "
               "patternTransform=\"rotate(45)\"><rect width=\"4\" height=\"4\" fill=\"%s\"/>"
               "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"4\" stroke=\"%s\" stroke-width=\"2\"/></pattern></defs>\n",
               COL_STALL_BG, COL_STALL);
    sb_appendf(sb, "<rect class=\"background\" width=\"100%%\" height=\"100%%\" fill=\"%s\"/>\n", COL_BACKGROUND);
}

static void title(const report_input *in, const layout *L, const double *peak, writer *w)
{
    strbuf *sb = out(w);
    char buf[RPT_LABEL_MAX + 200], tbuf[32], lbl[RPT_LABEL_MAX], pbuf[32], cbuf[32];
    int n = snprintf(buf, sizeof buf, "%s \xc2\xb7 pp %d \xc2\xb7 m %d", rpt_schedule_name(in), L->pp,
                     rpt_microbatches(in));
    if (L->v > 1) n += snprintf(buf + n, sizeof buf - (size_t)n, " \xc2\xb7 v %d", L->v);
    double makespan = in->m ? in->m->makespan_s : L->t1 - L->t0;
    fmt_seconds(tbuf, sizeof tbuf, makespan);
    snprintf(buf + n, sizeof buf - (size_t)n, " \xc2\xb7 makespan %s", tbuf);
    char attrs[80];
    snprintf(attrs, sizeof attrs, "font-size=\"%g\" font-weight=\"bold\"", TITLE_FONT);
    text(sb, MARGIN_LEFT, MARGIN_TOP + TITLE_FONT, attrs, buf);

    n = snprintf(buf, sizeof buf, "workload %s", rpt_workload_label(in, lbl, sizeof lbl));
    n += snprintf(buf + n, sizeof buf - (size_t)n, " \xc2\xb7 network %s", rpt_network_label(in, lbl, sizeof lbl));
    if (in->m) {
        double p = 0, cap = 0;
        for (int r = 0; r < L->pp; r++) {
            if (peak[r] > p) p = peak[r];
            if (capacity_bytes(in, r) > cap) cap = capacity_bytes(in, r);
        }
        n += snprintf(buf + n, sizeof buf - (size_t)n, " \xc2\xb7 pipeline bubble %.1f %% of all ranks' time",
                      in->m->pipeline_bubble_ratio * 100.0);
        fmt_bytes(pbuf, sizeof pbuf, p);
        fmt_bytes(cbuf, sizeof cbuf, cap);
        if (cap > 0)
            n += snprintf(buf + n, sizeof buf - (size_t)n, " \xc2\xb7 peak memory %s of %s", pbuf, cbuf);
        else
            n += snprintf(buf + n, sizeof buf - (size_t)n, " \xc2\xb7 peak memory %s", pbuf);
        if (in->m->noom > 0)
            n += snprintf(buf + n, sizeof buf - (size_t)n, " \xc2\xb7 OUT OF MEMORY on %d rank%s", in->m->noom,
                          in->m->noom > 1 ? "s" : "");
    }
    if (in->outcome && !in->outcome->completed)
        snprintf(buf + n, sizeof buf - (size_t)n, " \xc2\xb7 DEADLOCK: the ops that ran");
    snprintf(attrs, sizeof attrs, "font-size=\"%g\" fill=\"%s\"", SUBTITLE_FONT, COL_SUBTLE);
    text(sb, MARGIN_LEFT, MARGIN_TOP + TITLE_FONT + TITLE_LINE_GAP + SUBTITLE_FONT, attrs, buf);
}

static void rank_labels(const layout *L, writer *w, double first_y, double row_h, double pitch, double shift)
{
    strbuf *sb = out(w);
    char attrs[64], label[32];
    double font = clampd(row_h + 1, MB_FONT_MIN, LABEL_FONT);
    snprintf(attrs, sizeof attrs, "font-size=\"%g\" text-anchor=\"end\"", font);
    for (int r = 0; r < L->pp; r += L->label_every) {
        snprintf(label, sizeof label, "rank %d", r);
        text(sb, L->plot_x - LABEL_GAP, first_y + r * pitch + row_h / 2 + font * BASELINE_EM - shift, attrs, label);
    }
}

static void gridlines(const layout *L, writer *w, double y0, double y1, const char *stroke)
{
    strbuf *sb = out(w);
    sb_appendf(sb, "<g class=\"grid\" stroke=\"%s\" stroke-width=\"1\">\n", stroke);
    for (int k = 0; k < L->nticks; k++) {
        double t = L->t0 + k * L->tick_step_s;
        line(sb, X(L, t), y0, X(L, t), y1);
        sb_append(sb, "/>\n");
    }
    sb_append(sb, "</g>\n");
}

static void axis(const layout *L, writer *w, double y, int with_title)
{
    strbuf *sb = out(w);
    sb_appendf(sb, "<g class=\"axis\" stroke=\"%s\" stroke-width=\"1\">\n", COL_AXIS);
    line(sb, L->plot_x, y, L->plot_x + L->plot_w, y);
    sb_append(sb, "/>\n");
    for (int k = 0; k < L->nticks; k++) {
        double t = L->t0 + k * L->tick_step_s;
        line(sb, X(L, t), y, X(L, t), y + AXIS_TICK_LEN);
        sb_append(sb, "/>\n");
    }
    sb_append(sb, "</g>\n");
    sb_appendf(sb, "<g class=\"axis-labels\" font-size=\"%g\" text-anchor=\"middle\">\n", AXIS_FONT);
    char label[32];
    for (int k = 0; k < L->nticks; k++) {
        double t = L->t0 + k * L->tick_step_s;
        snprintf(label, sizeof label, "%.*f", L->tick_decimals, k * L->tick_step_s / L->unit.seconds);
        text(sb, X(L, t), y + AXIS_TICK_LEN + AXIS_FONT + 1, "", label);
    }
    sb_append(sb, "</g>\n");
    if (with_title) {
        char t[32], attrs[64];
        snprintf(t, sizeof t, "time (%s)", L->unit.name);
        snprintf(attrs, sizeof attrs, "font-size=\"%g\" text-anchor=\"middle\"", AXIS_FONT + 1);
        text(sb, L->plot_x + L->plot_w / 2, y + AXIS_TICK_LEN + 2 * AXIS_FONT + TITLE_LINE_GAP, attrs, t);
    }
}

/* ---- ops ------------------------------------------------------------------ */

typedef struct op_ref {
    int32_t rank;
    double start;
    size_t idx;
} op_ref;

static int op_ref_cmp(const void *a, const void *b)
{
    const op_ref *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static int chunk_of(const report_input *in, int stage)
{
    if (!in->sched || in->sched->v <= 1 || stage < 0 || stage >= in->sched->nstages || !in->sched->stage_rank)
        return 0;
    return sched_stage_chunk(in->sched, stage);
}

static void time_range_text(char *buf, size_t len, const layout *L, double a, double b)
{
    snprintf(buf, len, "%.6g\xe2\x80\x93%.6g %s", (a - L->t0) / L->unit.seconds, (b - L->t0) / L->unit.seconds,
             L->unit.name);
}

static double digits_width(const char *digits, double font_px)
{
    return (double)strlen(digits) * DIGIT_W_EM * font_px;
}

typedef struct kind_fit {
    int kind;
    double font;                 /* largest font whose number fits the op */
} kind_fit;

static int kind_fit_cmp(const void *a, const void *b)
{
    const kind_fit *x = a, *y = b;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    return (x->font > y->font) - (x->font < y->font);
}

/* One font size for every microbatch number of the picture (mixed sizes
 * read badly): the largest that the row allows and that fits the median op
 * of the kind whose ops are widest, so that kind is numbered throughout;
 * none when that is below the legible minimum. */
static void mb_font_for_ops(const report_input *in, layout *L, const op_ref *refs, size_t n)
{
    double row_font = L->mb_font, best = 0;
    if (row_font <= 0 || n == 0) return;
    kind_fit *fit = pg_xmalloc(n * sizeof *fit);
    char mb[16];
    for (size_t i = 0; i < n; i++) {
        const tl_op op_rec = timeline_op(in->tl, refs[i].idx), *op = &op_rec;
        snprintf(mb, sizeof mb, "%d", op->mb);
        fit[i] = (kind_fit){ op->kind, (X(L, op->end_s) - X(L, op->start_s) - 2 * TEXT_PAD_PX) / digits_width(mb, 1.0) };
    }
    qsort(fit, n, sizeof *fit, kind_fit_cmp);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && fit[j].kind == fit[i].kind) j++;
        double median = fit[i + (j - i) / 2].font;
        if (median > best) best = median;
        i = j;
    }
    free(fit);
    L->mb_font = best < row_font ? floor(best * 2) / 2 : row_font;   /* half-pixel steps */
    if (L->mb_font < MB_FONT_MIN) L->mb_font = 0;
}

static void ops_section(const report_input *in, layout *L, writer *w)
{
    const timeline *tl = in->tl;
    size_t n = 0;
    op_ref *refs = pg_xmalloc((tl->nops ? tl->nops : 1) * sizeof *refs);
    double total_w = 0;
    for (size_t i = 0; i < tl->nops; i++) {
        const tl_op op_rec = timeline_op(tl, i), *op = &op_rec;
        if (op->rank < 0 || op->rank >= L->pp) continue;
        refs[n++] = (op_ref){ op->rank, op->start_s, i };
        total_w += X(L, op->end_s) - X(L, op->start_s);
    }
    qsort(refs, n, sizeof *refs, op_ref_cmp);
    int stroke = n > 0 && total_w / (double)n >= OP_STROKE_MIN_AVG_W;
    strbuf *sb = out(w);
    sb_appendf(sb, "<g class=\"ops\"");
    if (stroke) sb_appendf(sb, " stroke=\"%s\" stroke-width=\"%g\"", COL_OP_STROKE, OP_STROKE_W);
    sb_append(sb, ">\n");
    char kbuf[16], tbuf[96], mb[16];
    for (size_t k = 0; k < n; k++) {
        const tl_op op_rec = timeline_op(tl, refs[k].idx), *op = &op_rec;
        const char *kind = rpt_kind_name(op->kind, kbuf, sizeof kbuf);
        double x0 = X(L, op->start_s), x1 = X(L, op->end_s);
        sb = out(w);
        rect(sb, x0, lane_top(L, op->rank), x1 - x0 < OP_MIN_W ? OP_MIN_W : x1 - x0, L->row_h);
        sb_append(sb, " class=\"op ");
        text_escaped(sb, kind);
        sb_append(sb, "\" fill=\"");
        color(sb, shade(kind_rgb(op->kind), chunk_of(in, op->stage)));
        time_range_text(tbuf, sizeof tbuf, L, op->start_s, op->end_s);
        sb_appendf(sb, "\"><title>%s mb %d, stage %d: %s</title></rect>\n", kind, op->mb, op->stage, tbuf);
    }
    sb_append(sb, "</g>\n");
    /* Microbatch numbers in a group of their own, after every rect: the
     * ops' stroke would outline the digits. */
    mb_font_for_ops(in, L, refs, n);
    if (L->mb_font > 0) {
        sb_appendf(sb, "<g class=\"mb\" font-size=\"%g\" text-anchor=\"middle\">\n", L->mb_font);
        for (size_t k = 0; k < n; k++) {
            const tl_op op_rec = timeline_op(tl, refs[k].idx), *op = &op_rec;
            double x0 = X(L, op->start_s), wd = X(L, op->end_s) - x0;
            snprintf(mb, sizeof mb, "%d", op->mb);
            if (digits_width(mb, L->mb_font) + 2 * TEXT_PAD_PX > wd) continue;
            uint32_t fill = shade(kind_rgb(op->kind), chunk_of(in, op->stage));
            text(out(w), x0 + wd / 2, lane_top(L, op->rank) + L->row_h / 2 + L->mb_font * BASELINE_EM,
                 is_dark(fill) ? "fill=\"#ffffff\"" : "", mb);
        }
        sb_append(out(w), "</g>\n");
    }
    free(refs);
}

static double strip_y(const layout *L, int strip, int rank)
{
    return lane_top(L, rank) + L->row_h + 1 + L->strip[strip] * L->strip_h;
}

/* Opens a rect on a strip; the caller adds attributes and closes it. */
static void strip_rect(strbuf *sb, const layout *L, int strip, int rank, double start, double end)
{
    double x0 = X(L, start), x1 = X(L, end);
    rect(sb, x0, strip_y(L, strip, rank), x1 - x0 < OP_MIN_W ? OP_MIN_W : x1 - x0, L->strip_h);
}

static int coll_strip(int kind)
{
    switch (kind) {
    case TLC_TP_ALLREDUCE:
    case TLC_TP_REDUCE_SCATTER:
    case TLC_TP_ALLGATHER:
    case TLC_EP_ALLTOALL:
    case TLC_CP_KV: return STRIP_TP;
    case TLC_DP_ALLREDUCE:
    case TLC_EMBED_ALLREDUCE: return STRIP_DP;
    default: return -1;
    }
}

/* Tensor-parallel collectives (inside their op's time) and the gradient
 * all-reduce on strips; the optimizer step on the compute row, after the
 * pipeline; replica spans (TLC_PIPELINE) are not drawn: replica 0's ops are. */
static void colls_section(const report_input *in, const layout *L, writer *w)
{
    const timeline *tl = in->tl;
    if (tl->ncolls == 0) return;
    char tbuf[96], bbuf[32];
    strbuf *sb = out(w);
    sb_append(sb, "<g class=\"collectives\">\n");
    for (size_t i = 0; i < tl->ncolls; i++) {
        const tl_coll *c = &tl->colls[i];
        if (c->rank < 0 || c->rank >= L->pp) continue;
        int k = coll_strip(c->kind);
        time_range_text(tbuf, sizeof tbuf, L, c->start_s, c->end_s);
        fmt_bytes(bbuf, sizeof bbuf, c->bytes);
        sb = out(w);
        if (k >= 0) {
            strip_rect(sb, L, k, c->rank, c->start_s, c->end_s);
            sb_appendf(sb, " class=\"%s\" fill=\"%s\"><title>%s, %s per GPU: %s</title></rect>\n",
                       STRIP_STYLE[k].cls, STRIP_STYLE[k].fill, rpt_coll_name(c->kind), bbuf, tbuf);
        } else if (c->kind == TLC_OPTIMIZER) {
            double x0 = X(L, c->start_s), x1 = X(L, c->end_s);
            rect(sb, x0, lane_top(L, c->rank), x1 - x0 < OP_MIN_W ? OP_MIN_W : x1 - x0, L->row_h);
            sb_append(sb, " class=\"optimizer\" fill=\"");
            color(sb, COL_OPTIMIZER);
            sb_appendf(sb, "\"><title>%s: %s</title></rect>\n", rpt_coll_name(c->kind), tbuf);
        }
    }
    sb_append(sb, "</g>\n");
}

static void copies_section(const report_input *in, const layout *L, writer *w)
{
    const timeline *tl = in->tl;
    char tbuf[96], bbuf[32];
    if (tl->ncopies > 0) {
        strbuf *sb = out(w);
        sb_append(sb, "<g class=\"copies\">\n");
        for (size_t i = 0; i < tl->ncopies; i++) {
            const tl_copy *cp = &tl->copies[i];
            if (cp->rank < 0 || cp->rank >= L->pp) continue;
            int d2h = cp->dir == COPY_D2H;
            int k = d2h ? STRIP_D2H : STRIP_H2D;
            sb = out(w);
            strip_rect(sb, L, k, cp->rank, cp->start_s, cp->end_s);
            time_range_text(tbuf, sizeof tbuf, L, cp->start_s, cp->end_s);
            fmt_bytes(bbuf, sizeof bbuf, cp->bytes);
            sb_appendf(sb, " class=\"%s\" fill=\"%s\"><title>%s stage %d mb %d, %s: %s</title></rect>\n",
                       STRIP_STYLE[k].cls, STRIP_STYLE[k].fill, d2h ? "offload" : "reload", cp->stage, cp->mb, bbuf,
                       tbuf);
        }
        sb_append(sb, "</g>\n");
    }
    if (L->has_stalls) {
        strbuf *sb = out(w);
        sb_append(sb, "<g class=\"stalls\">\n");
        for (size_t i = 0; i < tl->nstalls; i++) {
            const tl_stall *sl = &tl->stalls[i];
            if (sl->rank < 0 || sl->rank >= L->pp) continue;
            double x0 = X(L, sl->start_s), x1 = X(L, sl->end_s);
            sb = out(w);
            rect(sb, x0, lane_top(L, sl->rank), x1 - x0 < OP_MIN_W ? OP_MIN_W : x1 - x0, L->row_h);
            time_range_text(tbuf, sizeof tbuf, L, sl->start_s, sl->end_s);
            sb_appendf(sb,
                       " class=\"stall\" fill=\"url(#stall-hatch)\"><title>stall: stage %d mb %d waits for its "
                       "reload: %s</title></rect>\n",
                       sl->stage, sl->mb, tbuf);
        }
        sb_append(sb, "</g>\n");
    }
}

static void lanes_section(const report_input *in, layout *L, writer *w)
{
    strbuf *sb = out(w);
    sb_appendf(sb, "<g class=\"lanes\" fill=\"%s\">\n", COL_IDLE);
    for (int r = 0; r < L->pp; r++) {
        rect(sb, L->plot_x, lane_top(L, r), L->plot_w, L->row_h);
        sb_append(sb, " class=\"idle\"/>\n");
    }
    sb_append(sb, "</g>\n");
    gridlines(L, w, L->lanes_y, lane_top(L, L->pp - 1) + L->lane_h, COL_GRID_LANES);
    ops_section(in, L, w);
    copies_section(in, L, w);
    colls_section(in, L, w);
    rank_labels(L, w, L->lanes_y, L->row_h, L->lane_h + L->lane_gap, 0);
    axis(L, w, L->axis1_y, 1);
}

/* ---- memory panels --------------------------------------------------------- */

typedef struct mem_ctx {
    const report_input *in;
    const layout *L;
    writer *w;
    const double *peak;
    int cur;                     /* rank whose path is open, -1 = none yet */
    long long last_x, last_y;    /* last point written, in 1/100 px */
} mem_ctx;

/* Step to (x, y): a horizontal run is written only when the level changes
 * (or at the end), so flat stretches cost nothing. */
static void mem_point(mem_ctx *c, double x, double y, int last)
{
    long long xi = llround(x * COORD_SCALE), yi = llround(y * COORD_SCALE);
    if (yi == c->last_y && !last) return;
    strbuf *sb = out(c->w);
    if (xi != c->last_x) {
        sb_append(sb, "H");
        num(sb, x);
        c->last_x = xi;
    }
    if (yi != c->last_y) {
        sb_append(sb, "V");
        num(sb, y);
        c->last_y = yi;
    }
}

static void mem_begin(mem_ctx *c, int r)
{
    const layout *L = c->L;
    strbuf *sb = out(c->w);
    double top = panel_top(L, r), st = static_bytes(c->in, r), cap = capacity_bytes(c->in, r);
    sb_appendf(sb, "<g class=\"rank-memory\" data-rank=\"%d\">\n", r);
    rect(sb, L->plot_x, top, L->plot_w, L->mem_h);
    sb_appendf(sb, " class=\"mem-panel\" fill=\"none\" stroke=\"%s\" stroke-width=\"%g\"/>\n", COL_PANEL_BORDER, PANEL_BORDER_W);
    if (st > 0) {
        double ys = Y(L, r, st);
        rect(sb, L->plot_x, ys, L->plot_w, top + L->mem_h - ys);
        sb_appendf(sb, " class=\"static\" fill=\"%s\"/>\n", COL_STATIC);
    }
    if (cap > 0 && L->capacity_on_scale) {
        double yc = Y(L, r, cap);
        line(sb, L->plot_x, yc, L->plot_x + L->plot_w, yc);
        sb_appendf(sb, " class=\"capacity\" stroke=\"%s\" stroke-width=\"1\" stroke-dasharray=\"5 3\"/>\n",
                   COL_CAPACITY);
    }
    sb_appendf(sb, "<path class=\"mem\" fill=\"none\" stroke=\"%s\" stroke-width=\"%g\" d=\"M", COL_MEM, MEM_LINE_W);
    double x0 = L->plot_x, y0 = Y(L, r, st);
    num(sb, x0);
    sb_append(sb, " ");
    num(sb, y0);
    c->last_x = llround(x0 * COORD_SCALE);
    c->last_y = llround(y0 * COORD_SCALE);
    c->cur = r;
}

static void mem_end(mem_ctx *c)
{
    const layout *L = c->L;
    int r = c->cur;
    mem_point(c, L->plot_x + L->plot_w, c->last_y / COORD_SCALE, 1);
    strbuf *sb = out(c->w);
    sb_append(sb, "\"/>\n");
    if (L->mem_h >= MEM_LABEL_MIN_H) {
        /* in the left margin under the rank's name: inside the panel it would cross the curve */
        char pbuf[32], label[64], attrs[96];
        double cap = capacity_bytes(c->in, r);
        int oom = cap > 0 && c->peak[r] > cap;
        fmt_bytes(pbuf, sizeof pbuf, c->peak[r]);
        snprintf(label, sizeof label, "peak %s", pbuf);
        snprintf(attrs, sizeof attrs, "class=\"peak%s\" font-size=\"%g\" text-anchor=\"end\" fill=\"%s\"",
                 oom ? " oom" : "", MEM_PEAK_FONT, oom ? COL_CAPACITY : COL_SUBTLE);
        text(sb, L->plot_x - LABEL_GAP, panel_top(L, r) + L->mem_h / 2 + MEM_LABEL_SHIFT + MEM_PEAK_FONT * BASELINE_EM + 2,
             attrs, label);
    }
    sb_append(sb, "</g>\n");
}

static void mem_event(void *vctx, int rank, double t_s, double activation_bytes, double workspace_bytes,
                      double activations)
{
    (void)activations;
    mem_ctx *c = vctx;
    if (rank < 0 || rank >= c->L->pp || rank < c->cur) return;
    while (c->cur < rank) {
        if (c->cur >= 0) mem_end(c);
        mem_begin(c, c->cur + 1);
    }
    mem_point(c, X(c->L, t_s), Y(c->L, rank, static_bytes(c->in, rank) + activation_bytes + workspace_bytes), 0);
}

static void memory_section(const report_input *in, const layout *L, const double *peak, writer *w)
{
    strbuf *sb = out(w);
    char head[160], ybuf[32], cbuf[32], attrs[64];
    fmt_bytes(ybuf, sizeof ybuf, L->ymax_bytes);
    int n = snprintf(head, sizeof head, "device memory per rank (each panel 0 to %s", ybuf);
    if (L->capacity_off_scale_bytes > 0) {
        fmt_bytes(cbuf, sizeof cbuf, L->capacity_off_scale_bytes);
        snprintf(head + n, sizeof head - (size_t)n, "; capacity %s, off scale)", cbuf);
    } else {
        snprintf(head + n, sizeof head - (size_t)n, ")");
    }
    snprintf(attrs, sizeof attrs, "font-size=\"%g\" font-weight=\"bold\"", SECTION_FONT);
    text(sb, L->plot_x, L->mem_head_y + SECTION_FONT, attrs, head);
    gridlines(L, w, L->mem_y, panel_top(L, L->pp - 1) + L->mem_h, COL_GRID_MEM);
    mem_ctx c = { in, L, w, peak, -1, 0, 0 };
    metrics_input mi = walk_input(in);
    metrics_memory_walk(&mi, mem_event, &c);
    while (c.cur < L->pp - 1) {
        if (c.cur >= 0) mem_end(&c);
        mem_begin(&c, c.cur + 1);
    }
    if (c.cur >= 0) mem_end(&c);
    rank_labels(L, w, L->mem_y, L->mem_h, L->mem_h + L->mem_gap, L->mem_h >= MEM_LABEL_MIN_H ? MEM_LABEL_SHIFT : 0);
    axis(L, w, L->axis2_y, 1);
}

/* ---- whole picture ---------------------------------------------------------- */

static void compute_layout(const report_input *in, const double *peak, layout *L)
{
    const timeline *tl = in->tl;
    memset(L, 0, sizeof *L);
    L->pp = pipeline_ranks(in);
    L->v = rpt_stages_per_rank(in);
    int *per_rank = pg_xcalloc((size_t)L->pp + 1, sizeof *per_rank);
    int any = 0, busiest = 0;
    for (size_t i = 0; i < tl->nops; i++) {
        const tl_op op_rec = timeline_op(tl, i), *op = &op_rec;
        if (op->rank < 0 || op->rank >= L->pp) continue;
        if (!any || op->start_s < L->t0) L->t0 = op->start_s;
        if (!any || op->end_s > L->t1) L->t1 = op->end_s;
        any = 1;
        if (++per_rank[op->rank] > busiest) busiest = per_rank[op->rank];
        L->kind_present[op->kind < TL_OP_KIND_COUNT ? op->kind : TL_OP_KIND_COUNT] = 1;
    }
    free(per_rank);
    int strip_used[STRIP_COUNT] = { 0 };
    for (size_t i = 0; i < tl->ncopies; i++)
        if (tl->copies[i].rank >= 0 && tl->copies[i].rank < L->pp) {
            strip_used[tl->copies[i].dir == COPY_D2H ? STRIP_D2H : STRIP_H2D] = 1;
            if (tl->copies[i].end_s > L->t1) L->t1 = tl->copies[i].end_s;
        }
    for (size_t i = 0; i < tl->ncolls; i++) {
        const tl_coll *c = &tl->colls[i];
        if (c->rank < 0 || c->rank >= L->pp) continue;
        if (coll_strip(c->kind) >= 0) strip_used[coll_strip(c->kind)] = 1;
        else if (c->kind == TLC_OPTIMIZER) L->has_optimizer = 1;
        else continue;
        if (c->end_s > L->t1) L->t1 = c->end_s;
    }
    L->nstrips = 0;
    for (int k = 0; k < STRIP_COUNT; k++) L->strip[k] = strip_used[k] ? L->nstrips++ : -1;
    for (size_t i = 0; i < tl->nstalls; i++)
        if (tl->stalls[i].rank >= 0 && tl->stalls[i].rank < L->pp) L->has_stalls = 1;
    if (!(L->t1 > L->t0)) L->t1 = L->t0 + 1.0;   /* nothing ran: an empty second keeps the axes sane */

    int pp = L->pp > 0 ? L->pp : 1;
    L->plot_x = MARGIN_LEFT;
    L->plot_w = clampd(floor(busiest * PX_PER_OP), PLOT_W_MIN, PLOT_W_MAX);
    L->width = ceil(MARGIN_LEFT + L->plot_w + MARGIN_RIGHT);
    L->row_h = clampd(floor(LANES_BUDGET_PX / pp), ROW_H_MIN, ROW_H_MAX);
    L->strip_h = L->nstrips ? clampd(floor(L->row_h / 4), STRIP_H_MIN, STRIP_H_MAX) : 0;
    L->lane_h = L->row_h + (L->nstrips ? L->nstrips * L->strip_h + 1 : 0);
    L->lane_gap = pp > 32 ? 1 : L->nstrips ? 5 : 3;   /* strips need air from the next rank */
    L->mem_h = clampd(floor(MEM_BUDGET_PX / pp), MEM_H_MIN, MEM_H_MAX);
    L->mem_gap = pp <= 32 ? 4 : 1;
    double pitch = L->lane_h + L->lane_gap;
    L->label_every = pitch >= RANK_LABEL_MIN_PX ? 1 : (int)ceil(RANK_LABEL_MIN_PX / pitch);
    L->mb_font = clampd(L->row_h - MB_FONT_PAD, 0, MB_FONT_MAX);
    if (L->mb_font < MB_FONT_MIN) L->mb_font = 0;
    choose_ticks(L);

    double top_peak = 0, top_cap = 0;
    for (int r = 0; r < L->pp; r++) {
        if (peak[r] > top_peak) top_peak = peak[r];
        if (capacity_bytes(in, r) > top_cap) top_cap = capacity_bytes(in, r);
        if (static_bytes(in, r) > 0) L->has_static = 1;
    }
    /* A capacity far above every peak would flatten the curves: it is then
     * left off the scale (and named in the section's heading). */
    L->capacity_on_scale = top_cap > 0 && top_cap <= CAPACITY_ON_SCALE_MAX * top_peak;
    L->capacity_off_scale_bytes = top_cap > 0 && !L->capacity_on_scale ? top_cap : 0;
    L->ymax_bytes = L->capacity_on_scale ? (top_cap > top_peak ? top_cap : top_peak) * CAPACITY_HEADROOM
                                         : top_peak * PEAK_HEADROOM;
    if (!(L->ymax_bytes > 0)) L->ymax_bytes = 1;

    double y = MARGIN_TOP + TITLE_BLOCK_H;
    L->legend_y = y;
    L->legend_h = legend_run(L, NULL, y) * LEGEND_ROW_H;
    y += L->legend_h + SECTION_GAP / 2;
    L->lanes_y = y;
    y += L->pp * pitch - L->lane_gap;
    L->axis1_y = y + 2;
    y = L->axis1_y + AXIS_H + SECTION_GAP;
    L->mem_head_y = y;
    L->mem_y = y + SECTION_HEAD_H;
    y = L->mem_y + L->pp * (L->mem_h + L->mem_gap) - L->mem_gap;
    L->axis2_y = y + 2;
    L->height = ceil(L->axis2_y + AXIS_H + MARGIN_BOTTOM);
}

int report_svg(const report_input *in, const char *path, pg_status *st)
{
    writer w;
    int rc = rpt_file_open(&w, path, "--svg", SVG_FLUSH_BYTES, st);
    if (rc != 0) return rc;
    static const timeline empty;
    report_input local = *in;
    if (!local.tl) local.tl = &empty;
    int pp = pipeline_ranks(&local);
    double *peak = pg_xcalloc(pp > 0 ? (size_t)pp : 1, sizeof *peak);
    for (int r = 0; r < pp; r++) peak[r] = static_bytes(&local, r);
    peak_ctx pc = { &local, pp, peak };
    metrics_input mi = walk_input(&local);
    metrics_memory_walk(&mi, peak_event, &pc);

    layout L;
    compute_layout(&local, peak, &L);
    header(&local, &L, &w);
    title(&local, &L, peak, &w);
    legend_run(&L, out(&w), L.legend_y);
    if (L.pp > 0) {
        lanes_section(&local, &L, &w);
        memory_section(&local, &L, peak, &w);
    }
    sb_append(out(&w), "</svg>\n");
    free(peak);
    return rpt_file_close(&w, path, "picture", st);
}

/* The coordinate and text writers above, for the report layer's other
 * pictures (report_util.h: optimize's front), so that every SVG writes
 * numbers and escapes text one way. */
void rpt_svg_num(strbuf *sb, double v)
{
    num(sb, v);
}

void rpt_xml_text(strbuf *sb, const char *s)
{
    text_escaped(sb, s);
}
