/* draw.c: terminal drawing of a timed schedule (see draw.h). */
#include "schedule/draw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Beyond this a line is unreadable anyway; it also bounds allocation. */
#define DRAW_MAX_COLS 100000
#define IDLE_CHAR '.'
#define STYLE_IDLE (-1)
/* Styles: kind, plus OP_KIND_COUNT for "a later chunk" (brighter colour). */
#define STYLE_LATER_CHUNK OP_KIND_COUNT

static const char fill_char[OP_KIND_COUNT] = {'-', '=', '~', '#'};
/* ANSI SGR: background per kind; the bright variants mark later chunks. */
static const char *const color_normal[OP_KIND_COUNT] = {"\x1b[44;97m", "\x1b[42;30m", "\x1b[45;97m", "\x1b[46;30m"};
static const char *const color_bright[OP_KIND_COUNT] = {"\x1b[104;30m", "\x1b[102;30m", "\x1b[105;30m",
                                                        "\x1b[106;30m"};
static const char *const color_reset = "\x1b[0m";

static const char *style_color(int style)
{
    if (style < 0)
        return color_reset;
    int kind = style % STYLE_LATER_CHUNK;
    return style >= STYLE_LATER_CHUNK ? color_bright[kind] : color_normal[kind];
}

static int column_of(double t, double t0, double cols_per_s)
{
    return (int)floor((t - t0) * cols_per_s + 0.5);
}

static void draw_rank(const schedule *s, const sched_times *t, int r, double t0, double cols_per_s, int width,
                      char *cell, signed char *style)
{
    memset(cell, IDLE_CHAR, (size_t)width);
    memset(style, STYLE_IDLE, (size_t)width);
    for (int i = 0; i < s->nops[r]; i++) {
        const sched_op *o = &s->ops[r][i];
        int a = column_of(t->start[r][i], t0, cols_per_s), b = column_of(t->end[r][i], t0, cols_per_s);
        if (a < 0)
            a = 0;
        if (a >= width)
            a = width - 1;
        if (b <= a)
            b = a + 1; /* every op stays visible */
        if (b > width)
            b = width;
        char label[32];
        int len = snprintf(label, sizeof label, "%s%d", op_kind_name((op_kind)o->kind), (int)o->mb);
        if (len < 0)
            len = 0;
        int chunk = sched_stage_chunk(s, o->stage);
        int st = o->kind % OP_KIND_COUNT + (chunk > 0 ? STYLE_LATER_CHUNK : 0);
        for (int c = a; c < b; c++) {
            cell[c] = (c - a < len) ? label[c - a] : fill_char[o->kind % OP_KIND_COUNT];
            style[c] = (signed char)st;
        }
    }
}

void sched_draw(const schedule *s, const sched_times *times, int use_color, int width_cols, strbuf *out)
{
    sched_times own;
    memset(&own, 0, sizeof own);
    if (!times) {
        pg_status st;
        if (sched_eval_ideal(s, 1.0, 1.0, 1.0, 0.0, &own, &st) != 0) {
            sb_appendf(out, "(cannot draw: %s)\n", st.msg);
            return;
        }
        times = &own;
    }
    int width = width_cols > 0 ? width_cols : SCHED_DRAW_DEFAULT_COLS;
    if (width > DRAW_MAX_COLS)
        width = DRAW_MAX_COLS;
    double t0 = INFINITY, t1 = -INFINITY;
    for (int r = 0; r < s->pp; r++)
        if (s->nops[r] > 0) {
            t0 = fmin(t0, times->start[r][0]);
            t1 = fmax(t1, times->end[r][s->nops[r] - 1]);
        }
    if (!(t1 > t0)) {
        t0 = 0.0;
        t1 = 1.0;
    }
    double cols_per_s = width / (t1 - t0);
    int digits = snprintf(NULL, 0, "%d", s->pp > 0 ? s->pp - 1 : 0);
    char *cell = pg_xmalloc((size_t)width);
    signed char *style = pg_xmalloc((size_t)width);
    for (int r = 0; r < s->pp; r++) {
        draw_rank(s, times, r, t0, cols_per_s, width, cell, style);
        sb_appendf(out, "rank %*d |", digits, r);
        int cur = STYLE_IDLE;
        for (int c = 0; c < width; c++) {
            if (use_color && style[c] != cur) {
                sb_append(out, style_color(style[c]));
                cur = style[c];
            }
            sb_append_n(out, &cell[c], 1);
        }
        if (use_color && cur != STYLE_IDLE)
            sb_append(out, color_reset);
        sb_append(out, "|\n");
    }
    sb_appendf(out, "legend: F forward, B input backward, W weight backward, BW fused backward, %c idle; "
                    "number = microbatch%s\n",
               IDLE_CHAR, use_color && s->v > 1 ? ", brighter = later chunk" : "");
    sb_appendf(out, "time: %.6g s to %.6g s, one column = %.6g s\n", t0, t1, (t1 - t0) / width);
    free(cell);
    free(style);
    if (times == &own)
        sched_times_free(s, &own);
}
