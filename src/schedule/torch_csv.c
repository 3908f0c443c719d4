/* torch_csv.c: PyTorch compute-only schedule CSV, export and import.
 * See torch_csv.h for the format.  The importer is written for hostile
 * input: every index is bounded before it is used, and each failure names
 * the row and column a person would fix. */
#include "schedule/torch_csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds on what a file may ask for, so a typo cannot make us allocate
 * gigabytes: far beyond real pipelines. */
#define CSV_MAX_FILE_BYTES (256L * 1024 * 1024)
#define CSV_MAX_STAGES 262144
#define CSV_MAX_MICROBATCHES 1000000
#define CSV_MAX_CELLS (64LL * 1024 * 1024)
/* How much of an offending cell a message quotes. */
#define CSV_TOKEN_QUOTE_MAX 32

/* ---- export --------------------------------------------------------------- */

static char kind_letter(op_kind k)
{
    switch (k) {
    case OP_F:
        return 'F';
    case OP_B:
        return 'I';
    case OP_W:
        return 'W';
    case OP_BW:
        return 'B';
    default:
        return '?';
    }
}

void sched_export_torch_csv(const schedule *s, strbuf *out)
{
    for (int r = 0; r < s->pp; r++) {
        for (int i = 0; i < s->nops[r]; i++) {
            const sched_op *o = &s->ops[r][i];
            sb_appendf(out, "%s%d%c%d", i ? "," : "", (int)o->stage, kind_letter((op_kind)o->kind), (int)o->mb);
        }
        sb_append(out, "\n");
    }
}

/* ---- import: cells -------------------------------------------------------- */

typedef struct csv_action {
    int row, col;          /* 1-based, as a person counts them in the file */
    int stage, mb;
    op_kind kind;
} csv_action;

typedef struct csv_parse {
    const char *origin;
    csv_action *acts;
    size_t nacts, cap;
    int rows;
    int max_stage, max_mb;
} csv_parse;

/* The offending cell, quoted safely (control bytes become '?'). */
static const char *quote_token(const char *p, size_t n, char *buf, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 4 < cap && i < CSV_TOKEN_QUOTE_MAX; i++) {
        unsigned char c = (unsigned char)p[i];
        buf[k++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (n > CSV_TOKEN_QUOTE_MAX && k + 4 < cap) {
        memcpy(buf + k, "...", 3);
        k += 3;
    }
    buf[k] = '\0';
    return buf;
}

/* Reads a decimal number of at most `limit`; returns the digits consumed,
 * 0 when none or when the value is too large (*too_big set). */
static size_t read_number(const char *p, size_t n, long limit, long *value, int *too_big)
{
    size_t i = 0;
    long v = 0;
    *too_big = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9') {
        if (v <= limit)
            v = v * 10 + (p[i] - '0');
        i++;
    }
    if (i > 0 && v > limit)
        *too_big = 1;
    *value = v;
    return i;
}

static const char *const comm_actions[] = {"SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD", "RESHARD",
                                           "REDUCE_GRAD"};

static int bad_cell(const csv_parse *cp, pg_status *st, int row, int col, const char *p, size_t n, const char *why)
{
    char tok[CSV_TOKEN_QUOTE_MAX + 8];
    return pg_fail(st, PG_EXIT_INPUT, "%s:%d:%d: action '%s': %s", cp->origin, row, col,
                   quote_token(p, n, tok, sizeof tok), why);
}

static int parse_cell(csv_parse *cp, int row, int col, const char *p, size_t n, pg_status *st)
{
    long stage, mb;
    int big;
    size_t i = read_number(p, n, CSV_MAX_STAGES, &stage, &big);
    if (i == 0)
        return bad_cell(cp, st, row, col, p, n, "unknown token: expected STAGE KIND MICROBATCH, e.g. 0F0");
    if (big)
        return bad_cell(cp, st, row, col, p, n, "stage index too large");
    for (size_t c = 0; c < sizeof comm_actions / sizeof comm_actions[0]; c++) {
        size_t len = strlen(comm_actions[c]);
        if (n - i >= len && memcmp(p + i, comm_actions[c], len) == 0)
            return bad_cell(cp, st, row, col, p, n,
                            "communication actions are not part of the compute-only format (F, I, W, B only)");
    }
    if (i >= n)
        return bad_cell(cp, st, row, col, p, n, "unknown token: missing the op letter (F, I, W or B)");
    op_kind kind;
    switch (p[i]) {
    case 'F':
        kind = OP_F;
        break;
    case 'I':
        kind = OP_B;
        break;
    case 'W':
        kind = OP_W;
        break;
    case 'B':
        kind = OP_BW;
        break;
    default:
        return bad_cell(cp, st, row, col, p, n, "unknown token: the op letter must be F, I, W or B");
    }
    i++;
    size_t d = read_number(p + i, n - i, CSV_MAX_MICROBATCHES - 1, &mb, &big);
    if (d == 0)
        return bad_cell(cp, st, row, col, p, n, "unknown token: missing the microbatch number");
    if (big)
        return bad_cell(cp, st, row, col, p, n, "microbatch index too large");
    if (i + d != n)
        return bad_cell(cp, st, row, col, p, n, "unknown token: trailing characters after the microbatch");
    if (cp->nacts >= (size_t)CSV_MAX_CELLS)
        return bad_cell(cp, st, row, col, p, n, "too many actions in one file");
    pg_grow((void **)&cp->acts, &cp->cap, cp->nacts + 1, sizeof *cp->acts);
    cp->acts[cp->nacts++] = (csv_action){row, col, (int)stage, (int)mb, kind};
    if (stage > cp->max_stage)
        cp->max_stage = (int)stage;
    if (mb > cp->max_mb)
        cp->max_mb = (int)mb;
    return 0;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* One line = one rank; cells split on commas, trimmed, optional quotes. */
static int parse_line(csv_parse *cp, int row, const char *p, size_t n, pg_status *st)
{
    int col = 1;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != ',')
            continue;
        size_t a = start, b = i;
        while (a < b && is_blank(p[a]))
            a++;
        while (b > a && is_blank(p[b - 1]))
            b--;
        if (b - a >= 2 && p[a] == '"' && p[b - 1] == '"') {
            a++;
            b--;
        }
        if (b > a) {
            int rc = parse_cell(cp, row, col, p + a, b - a, st);
            if (rc)
                return rc;
        }
        col++;
        start = i + 1;
    }
    return 0;
}

static int parse_text(csv_parse *cp, const char *text, size_t len, pg_status *st)
{
    /* Trailing blank lines are the file's end, not empty ranks. */
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || is_blank(text[len - 1])))
        len--;
    if (len == 0)
        return pg_fail(st, PG_EXIT_INPUT, "%s: empty schedule file (expected one row of actions per rank)",
                       cp->origin);
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] != '\n')
            continue;
        size_t end = i;
        if (end > start && text[end - 1] == '\r')
            end--;
        if (cp->rows >= CSV_MAX_STAGES)
            return pg_fail(st, PG_EXIT_INPUT, "%s:%d: too many rows (ranks)", cp->origin, cp->rows + 1);
        cp->rows++;
        int rc = parse_line(cp, cp->rows, text + start, end - start, st);
        if (rc)
            return rc;
        start = i + 1;
    }
    return 0;
}

/* ---- import: structure ----------------------------------------------------- */

static void act_name(const csv_action *a, char *buf, size_t cap)
{
    snprintf(buf, cap, "%d%c%d", a->stage, kind_letter(a->kind), a->mb);
}

/* Which rank holds each stage, and the same number of stages on every rank. */
static int infer_placement(const csv_parse *cp, int nstages, int *stage_rank, int *v_out, pg_status *st)
{
    int *first = pg_xmalloc((size_t)nstages * sizeof *first); /* index of the act that placed it */
    for (int s = 0; s < nstages; s++)
        first[s] = -1;
    int rc = 0;
    for (size_t k = 0; k < cp->nacts && !rc; k++) {
        const csv_action *a = &cp->acts[k];
        int f = first[a->stage];
        if (f < 0) {
            first[a->stage] = (int)k;
            stage_rank[a->stage] = a->row - 1;
        } else if (cp->acts[f].row != a->row) {
            char n[48];
            act_name(a, n, sizeof n);
            rc = pg_fail(st, PG_EXIT_INPUT,
                         "%s:%d:%d: action '%s': stage %d is on two ranks: rank %d here and rank %d (row %d, column "
                         "%d); a stage lives on one rank",
                         cp->origin, a->row, a->col, n, a->stage, a->row - 1, cp->acts[f].row - 1, cp->acts[f].row,
                         cp->acts[f].col);
        }
    }
    for (int s = 0; s < nstages && !rc; s++)
        if (first[s] < 0)
            rc = pg_fail(st, PG_EXIT_INPUT, "%s: stage %d appears on no row (stages must be 0..%d without gaps)",
                         cp->origin, s, nstages - 1);
    free(first);
    if (rc)
        return rc;
    int *count = pg_xcalloc((size_t)cp->rows, sizeof *count);
    for (int s = 0; s < nstages; s++)
        count[stage_rank[s]]++;
    int v = count[0];
    for (int r = 0; r < cp->rows && !rc; r++) {
        if (count[r] == 0)
            rc = pg_fail(st, PG_EXIT_INPUT, "%s:%d: rank %d has no actions (rank out of range: %d stages for %d rows)",
                         cp->origin, r + 1, r, nstages, cp->rows);
        else if (count[r] != v)
            rc = pg_fail(st, PG_EXIT_INPUT,
                         "%s:%d: rank %d holds %d stages but rank 0 holds %d; every rank must hold the same number",
                         cp->origin, r + 1, r, count[r], v);
    }
    free(count);
    *v_out = v;
    return rc;
}

/* Every (stage, mb): one F, and one B or one I-and-W pair. */
static int check_ops(const csv_parse *cp, int nstages, int m, const int *stage_rank, pg_status *st)
{
    size_t cells = (size_t)nstages * (size_t)m;
    int *at[OP_KIND_COUNT];
    for (int k = 0; k < OP_KIND_COUNT; k++) {
        at[k] = pg_xmalloc(cells * sizeof(int));
        for (size_t c = 0; c < cells; c++)
            at[k][c] = -1;
    }
    int rc = 0;
    char n1[48], n2[48];
    for (size_t k = 0; k < cp->nacts && !rc; k++) {
        const csv_action *a = &cp->acts[k];
        size_t c = (size_t)a->stage * (size_t)m + (size_t)a->mb;
        int prev = at[a->kind][c];
        act_name(a, n1, sizeof n1);
        if (prev >= 0) {
            rc = pg_fail(st, PG_EXIT_INPUT, "%s:%d:%d: action '%s': duplicated op (also at row %d, column %d)",
                         cp->origin, a->row, a->col, n1, cp->acts[prev].row, cp->acts[prev].col);
            break;
        }
        int other = -1;
        if (a->kind == OP_BW)
            other = at[OP_B][c] >= 0 ? at[OP_B][c] : at[OP_W][c];
        else if (a->kind == OP_B || a->kind == OP_W)
            other = at[OP_BW][c];
        if (other >= 0) {
            act_name(&cp->acts[other], n2, sizeof n2);
            rc = pg_fail(st, PG_EXIT_INPUT,
                         "%s:%d:%d: action '%s': mixed fused and split backward for stage %d, microbatch %d ('%s' at "
                         "row %d, column %d); use B alone or I and W",
                         cp->origin, a->row, a->col, n1, a->stage, a->mb, n2, cp->acts[other].row,
                         cp->acts[other].col);
            break;
        }
        at[a->kind][c] = (int)k;
    }
    for (int s = 0; s < nstages && !rc; s++)
        for (int j = 0; j < m && !rc; j++) {
            size_t c = (size_t)s * (size_t)m + (size_t)j;
            int row = stage_rank[s] + 1;
            if (at[OP_F][c] < 0)
                rc = pg_fail(st, PG_EXIT_INPUT, "%s:%d: missing op '%dF%d' (forward of stage %d, microbatch %d, rank %d)",
                             cp->origin, row, s, j, s, j, row - 1);
            else if (at[OP_BW][c] < 0 && at[OP_B][c] < 0 && at[OP_W][c] < 0)
                rc = pg_fail(st, PG_EXIT_INPUT,
                             "%s:%d: missing op '%dB%d' (or '%dI%d' and '%dW%d'): backward of stage %d, microbatch %d",
                             cp->origin, row, s, j, s, j, s, j, s, j);
            else if ((at[OP_B][c] < 0) != (at[OP_W][c] < 0)) {
                int have = at[OP_B][c] >= 0 ? at[OP_B][c] : at[OP_W][c];
                act_name(&cp->acts[have], n2, sizeof n2);
                rc = pg_fail(st, PG_EXIT_INPUT, "%s:%d: missing op '%d%c%d' (its pair '%s' is at row %d, column %d)",
                             cp->origin, row, s, at[OP_B][c] < 0 ? 'I' : 'W', j, n2, cp->acts[have].row,
                             cp->acts[have].col);
            }
        }
    for (int k = 0; k < OP_KIND_COUNT; k++)
        free(at[k]);
    return rc;
}

int sched_import_torch_csv_text(const char *text, size_t len, const char *origin, schedule *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    csv_parse cp = {.origin = origin ? origin : "<csv>", .max_stage = -1, .max_mb = -1};
    int rc = parse_text(&cp, text, len, st);
    if (!rc && cp.nacts == 0)
        rc = pg_fail(st, PG_EXIT_INPUT, "%s: no actions (expected cells such as 0F0)", cp.origin);
    int nstages = cp.max_stage + 1, m = cp.max_mb + 1;
    if (!rc && (long long)nstages * m > CSV_MAX_CELLS)
        rc = pg_fail(st, PG_EXIT_INPUT, "%s: %d stages x %d microbatches is too large", cp.origin, nstages, m);
    int *stage_rank = NULL, v = 0;
    if (!rc) {
        stage_rank = pg_xcalloc((size_t)nstages, sizeof *stage_rank);
        rc = infer_placement(&cp, nstages, stage_rank, &v, st);
    }
    if (!rc)
        rc = check_ops(&cp, nstages, m, stage_rank, st);
    if (!rc) {
        char name[sizeof out->name];
        snprintf(name, sizeof name, "file:%s", cp.origin);
        sched_init(out, name, cp.rows, v, m);
        memcpy(out->stage_rank, stage_rank, (size_t)nstages * sizeof *stage_rank);
        for (size_t k = 0; k < cp.nacts; k++)
            sched_push(out, cp.acts[k].row - 1, cp.acts[k].kind, cp.acts[k].stage, cp.acts[k].mb);
        rc = sched_validate(out, st);
        if (!rc)
            rc = sched_check_deadlock(out, st);
        if (rc) {
            pg_status_prefix(st, "%s", cp.origin);
            sched_free(out);
        }
    }
    free(stage_rank);
    free(cp.acts);
    return rc;
}

int sched_import_torch_csv(const char *path, schedule *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return pg_fail(st, PG_EXIT_INPUT, "%s: cannot open schedule file: %s", path, strerror(errno));
    strbuf sb;
    sb_init(&sb);
    char chunk[65536];
    size_t got;
    int rc = 0;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (sb.len + got > (size_t)CSV_MAX_FILE_BYTES) {
            rc = pg_fail(st, PG_EXIT_INPUT, "%s: schedule file larger than %ld bytes", path, CSV_MAX_FILE_BYTES);
            break;
        }
        sb_append_n(&sb, chunk, got);
    }
    if (!rc && ferror(f))
        rc = pg_fail(st, PG_EXIT_INPUT, "%s: cannot read schedule file: %s", path, strerror(errno));
    fclose(f);
    if (!rc)
        rc = sched_import_torch_csv_text(sb.data ? sb.data : "", sb.len, path, out, st);
    sb_free(&sb);
    return rc;
}
