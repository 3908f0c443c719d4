/* trace.c: Chrome trace-event JSON of a run (Perfetto, chrome://tracing).
 *
 * Layout: process = pipeline rank (its GPU's host in the name); threads =
 * streams: compute, send, recv, then d2h and h2d reserved for offload copies.
 * Transfers of one rank may overlap (they are asynchronous), and trace
 * viewers only draw properly nested slices on one thread, so overlapping
 * transfers are spread over extra lanes of the same stream ("send #2", ...),
 * assigned greedily in start order.  Each transfer is a slice on the
 * sender's send lane and one on the receiver's recv lane, joined by a flow
 * ("s" at the send slice's start, "f" with bp "e" at the recv slice's start:
 * a slice's start is inside it in every viewer, so both ends bind).
 *
 * Bubbles are the gaps between consecutive ops inside a rank's span: on the
 * rank with the largest span they add up to span - busy, the bubble ratio's
 * numerator.  Memory counters come from metrics_memory_walk, the very
 * accounting the peaks come from.
 *
 * The file is streamed through a buffer flushed every TRACE_FLUSH_BYTES:
 * a 4M-op trace is gigabytes and is never held in memory whole.
 */
#include "report/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_util.h"

#define US_PER_S 1e6
#define TRACE_FLUSH_BYTES (1u << 20)
/* Gaps shorter than this fraction of the makespan are rounding, not bubbles. */
#define TRACE_MIN_GAP_REL 1e-12
/* Lanes per stream; transfers beyond overlap in the last lane. */
#define TRACE_MAX_LANES 64

enum { STREAM_COMPUTE = 0, STREAM_SEND, STREAM_RECV, STREAM_D2H, STREAM_H2D, STREAM_COUNT };
static const char *const stream_name[STREAM_COUNT] = { "compute", "send", "recv", "d2h", "h2d" };

/* Lanes of a stream are adjacent tids so that viewers sort them together. */
static int tid_of(int stream, int lane)
{
    return stream * TRACE_MAX_LANES + lane;
}

/* The report layer's buffered file writer, and the events written so far
 * (for the separators). */
typedef struct writer {
    rpt_file file;
    int nevents;
} writer;

/* Starts a new event object; the caller closes it with "}". */
static strbuf *event(writer *w)
{
    strbuf *sb = rpt_file_buf(&w->file);
    sb_append(sb, w->nevents++ ? ",\n{" : "\n{");
    return sb;
}

/* Microseconds with picosecond resolution, trailing zeros trimmed.  Written
 * from an integer count of picoseconds: printf's float path was most of the
 * CPU time of a big trace.  Beyond PS_EXACT_MAX picoseconds (about 100 days
 * of simulated time) the integer would overflow, so printf takes over. */
#define PS_PER_S 1e12
#define PS_PER_US 1000000LL
#define PS_EXACT_MAX 9e18
#define US_FRACTION_DIGITS 6
static void append_us(strbuf *sb, double seconds)
{
    double ps_f = seconds * PS_PER_S;
    if (!(ps_f > -PS_EXACT_MAX && ps_f < PS_EXACT_MAX)) {
        sb_appendf(sb, "%.6f", seconds * US_PER_S);
        return;
    }
    long long ps = llround(ps_f);
    char buf[32];
    int n = 0;
    if (ps < 0) {
        buf[n++] = '-';
        ps = -ps;
    }
    long long us = ps / PS_PER_US, frac = ps % PS_PER_US;
    char digits[24];
    int nd = 0;
    do digits[nd++] = (char)('0' + us % 10); while ((us /= 10) > 0);
    while (nd > 0) buf[n++] = digits[--nd];
    if (frac) {
        buf[n++] = '.';
        for (int i = US_FRACTION_DIGITS - 1; i >= 0; i--) digits[i] = (char)('0' + frac % 10), frac /= 10;
        int last = US_FRACTION_DIGITS;
        while (digits[last - 1] == '0') last--;
        for (int i = 0; i < last; i++) buf[n++] = digits[i];
    }
    sb_append_n(sb, buf, (size_t)n);
}

/* Counter values are for plotting: ten significant digits, one printf. */
static void append_value(strbuf *sb, double v)
{
    if (isfinite(v))
        sb_appendf(sb, "%.10g", v);
    else
        sb_append(sb, "0");
}

static void meta(writer *w, const char *what, int pid, int tid, const char *key, const char *text, long number)
{
    strbuf *sb = event(w);
    sb_appendf(sb, "\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"args\":{\"%s\":", what, pid, tid, key);
    if (text)
        sb_append_json_string(sb, text);
    else
        sb_appendf(sb, "%ld", number);
    sb_append(sb, "}}");
}

static void slice_head(strbuf *sb, const char *name, const char *cat, int pid, int tid, double start, double end)
{
    sb_append(sb, "\"ph\":\"X\",\"name\":");
    sb_append_json_string(sb, name);
    sb_appendf(sb, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":", cat, pid, tid);
    append_us(sb, start);
    sb_append(sb, ",\"dur\":");
    append_us(sb, end > start ? end - start : 0.0);
}

/* ---- ops and bubbles ------------------------------------------------------ */

static void op_events(const report_input *in, writer *w)
{
    int v = rpt_stages_per_rank(in);
    char name[64], kbuf[16];
    for (size_t i = 0; i < in->tl->nops; i++) {
        const tl_op op_rec = timeline_op(in->tl, i), *op = &op_rec;
        const char *kind = rpt_kind_name(op->kind, kbuf, sizeof kbuf);
        if (v > 1)
            snprintf(name, sizeof name, "%s%d s%d", kind, op->mb, op->stage);
        else
            snprintf(name, sizeof name, "%s%d", kind, op->mb);
        strbuf *sb = event(w);
        slice_head(sb, name, kind, op->rank, tid_of(STREAM_COMPUTE, 0), op->start_s, op->end_s);
        sb_appendf(sb, ",\"args\":{\"stage\":%d,\"microbatch\":%d,\"kind\":\"%s\"}}", op->stage, op->mb, kind);
    }
}

typedef struct interval {
    int32_t rank;
    double start, end;
    size_t idx;
} interval;

static int interval_cmp(const void *a, const void *b)
{
    const interval *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static void sort_intervals(interval *iv, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (interval_cmp(&iv[i - 1], &iv[i]) > 0) {
            qsort(iv, n, sizeof *iv, interval_cmp);
            return;
        }
}

static double makespan_of(const report_input *in)
{
    if (in->m) return in->m->makespan_s;
    double lo = 0, hi = 0;
    for (size_t i = 0; i < in->tl->nops; i++) {
        tl_op op = timeline_op(in->tl, i);
        if (i == 0 || op.start_s < lo) lo = op.start_s;
        if (i == 0 || op.end_s > hi) hi = op.end_s;
    }
    return hi - lo;
}

static void bubble_events(const report_input *in, writer *w)
{
    size_t n = in->tl->nops;
    if (n == 0) return;
    interval *iv = pg_xmalloc(n * sizeof *iv);
    for (size_t i = 0; i < n; i++) {
        tl_op op = timeline_op(in->tl, i);
        iv[i] = (interval){ op.rank, op.start_s, op.end_s, i };
    }
    sort_intervals(iv, n);
    double min_gap = makespan_of(in) * TRACE_MIN_GAP_REL;
    double busy_until = iv[0].end;
    for (size_t i = 1; i < n; i++) {
        if (iv[i].rank != iv[i - 1].rank) {
            busy_until = iv[i].end;
            continue;
        }
        if (iv[i].start - busy_until > min_gap) {
            strbuf *sb = event(w);
            slice_head(sb, "bubble", "idle", iv[i].rank, tid_of(STREAM_COMPUTE, 0), busy_until, iv[i].start);
            sb_append(sb, ",\"args\":{\"seconds\":");
            sb_append_json_number(sb, iv[i].start - busy_until);
            sb_append(sb, "}}");
        }
        if (iv[i].end > busy_until) busy_until = iv[i].end;
    }
    free(iv);
}

/* ---- transfers ------------------------------------------------------------ */

/* Greedy lanes: each transfer takes the first lane of its rank free at its
 * start.  lane[idx] receives the lane of transfer idx; lanes_used[rank] the
 * number of lanes that rank needed. */
static void assign_lanes(interval *iv, size_t n, uint8_t *lane, int *lanes_used)
{
    double lane_end[TRACE_MAX_LANES];
    int nl = 0;
    sort_intervals(iv, n);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || iv[i].rank != iv[i - 1].rank) nl = 0;
        int l = 0;
        while (l < nl && lane_end[l] > iv[i].start) l++;
        if (l < nl) {
            lane_end[l] = iv[i].end;                   /* a free lane */
        } else if (nl < TRACE_MAX_LANES) {
            lane_end[nl++] = iv[i].end;                /* a new lane */
        } else {
            l = TRACE_MAX_LANES - 1;                   /* out of lanes: overlap in the last */
            if (iv[i].end > lane_end[l]) lane_end[l] = iv[i].end;
        }
        lane[iv[i].idx] = (uint8_t)l;
        if (nl > lanes_used[iv[i].rank]) lanes_used[iv[i].rank] = nl;
    }
}

static const char *xfer_name(const tl_xfer *x)
{
    return x->kind == XFER_ACTIVATION ? "activation" : "gradient";
}

static void xfer_events(const report_input *in, writer *w, int pp)
{
    size_t n = in->tl->nxfers;
    uint8_t *send_lane = pg_xcalloc(n ? n : 1, 1), *recv_lane = pg_xcalloc(n ? n : 1, 1);
    int *send_lanes = pg_xcalloc(pp > 0 ? (size_t)pp : 1, sizeof *send_lanes);
    int *recv_lanes = pg_xcalloc(pp > 0 ? (size_t)pp : 1, sizeof *recv_lanes);
    interval *iv = pg_xmalloc((n ? n : 1) * sizeof *iv);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const tl_xfer x_rec = timeline_xfer(in->tl, i), *x = &x_rec;
        if (x->src_rank >= 0 && x->src_rank < pp) iv[k++] = (interval){ x->src_rank, x->start_s, x->end_s, i };
    }
    assign_lanes(iv, k, send_lane, send_lanes);
    k = 0;
    for (size_t i = 0; i < n; i++) {
        const tl_xfer x_rec = timeline_xfer(in->tl, i), *x = &x_rec;
        if (x->dst_rank >= 0 && x->dst_rank < pp) iv[k++] = (interval){ x->dst_rank, x->start_s, x->end_s, i };
    }
    assign_lanes(iv, k, recv_lane, recv_lanes);
    free(iv);

    for (int r = 0; r < pp; r++) {
        char tname[32];
        for (int l = 1; l < send_lanes[r]; l++) {
            snprintf(tname, sizeof tname, "send #%d", l + 1);
            meta(w, "thread_name", r, tid_of(STREAM_SEND, l), "name", tname, 0);
            meta(w, "thread_sort_index", r, tid_of(STREAM_SEND, l), "sort_index", NULL, tid_of(STREAM_SEND, l));
        }
        for (int l = 1; l < recv_lanes[r]; l++) {
            snprintf(tname, sizeof tname, "recv #%d", l + 1);
            meta(w, "thread_name", r, tid_of(STREAM_RECV, l), "name", tname, 0);
            meta(w, "thread_sort_index", r, tid_of(STREAM_RECV, l), "sort_index", NULL, tid_of(STREAM_RECV, l));
        }
    }

    char name[64];
    for (size_t i = 0; i < n; i++) {
        const tl_xfer x_rec = timeline_xfer(in->tl, i), *x = &x_rec;
        int src_ok = x->src_rank >= 0 && x->src_rank < pp, dst_ok = x->dst_rank >= 0 && x->dst_rank < pp;
        snprintf(name, sizeof name, "%s s%d mb%d", xfer_name(x), x->stage, x->mb);
        int send_tid = tid_of(STREAM_SEND, send_lane[i]), recv_tid = tid_of(STREAM_RECV, recv_lane[i]);
        for (int side = 0; side < 2; side++) {
            if (!(side == 0 ? src_ok : dst_ok)) continue;
            strbuf *sb = event(w);
            slice_head(sb, name, side == 0 ? "send" : "recv", side == 0 ? x->src_rank : x->dst_rank,
                       side == 0 ? send_tid : recv_tid, x->start_s, x->end_s);
            sb_appendf(sb, ",\"args\":{\"stage\":%d,\"microbatch\":%d,\"kind\":\"%s\",\"%s\":%d,\"bytes\":", x->stage,
                       x->mb, xfer_name(x), side == 0 ? "to" : "from", side == 0 ? x->dst_rank : x->src_rank);
            sb_append_json_number(sb, x->bytes);
            sb_append(sb, "}}");
        }
        if (!src_ok || !dst_ok) continue;
        strbuf *sb = event(w);
        sb_appendf(sb, "\"ph\":\"s\",\"name\":\"%s\",\"cat\":\"flow\",\"id\":%zu,\"pid\":%d,\"tid\":%d,\"ts\":",
                   xfer_name(x), i, x->src_rank, send_tid);
        append_us(sb, x->start_s);
        sb_append(sb, "}");
        sb = event(w);
        sb_appendf(sb,
                   "\"ph\":\"f\",\"bp\":\"e\",\"name\":\"%s\",\"cat\":\"flow\",\"id\":%zu,\"pid\":%d,\"tid\":%d,\"ts\":",
                   xfer_name(x), i, x->dst_rank, recv_tid);
        append_us(sb, x->start_s);
        sb_append(sb, "}");
    }
    free(send_lane);
    free(recv_lane);
    free(send_lanes);
    free(recv_lanes);
}

/* ---- offload copies and stalls ------------------------------------------- */

/* Each copy engine serves one copy at a time: one lane per direction.  A
 * stall (an op waiting for its activation's reload) is a slice on the
 * compute thread, inside the bubble it causes. */
static void copy_events(const report_input *in, writer *w, int pp)
{
    const timeline *tl = in->tl;
    int *named = pg_xcalloc(pp > 0 ? (size_t)pp : 1, sizeof *named);
    char name[64];
    for (size_t i = 0; i < tl->ncopies; i++) {
        const tl_copy *cp = &tl->copies[i];
        if (cp->rank < 0 || cp->rank >= pp) continue;
        int stream = cp->dir == COPY_D2H ? STREAM_D2H : STREAM_H2D;
        int bit = 1 << (stream - STREAM_D2H);
        if (!(named[cp->rank] & bit)) {
            named[cp->rank] |= bit;
            meta(w, "thread_name", cp->rank, tid_of(stream, 0), "name", stream_name[stream], 0);
            meta(w, "thread_sort_index", cp->rank, tid_of(stream, 0), "sort_index", NULL, tid_of(stream, 0));
        }
        snprintf(name, sizeof name, "%s s%d mb%d", cp->dir == COPY_D2H ? "offload" : "reload", cp->stage, cp->mb);
        strbuf *sb = event(w);
        slice_head(sb, name, stream_name[stream], cp->rank, tid_of(stream, 0), cp->start_s, cp->end_s);
        sb_appendf(sb, ",\"args\":{\"stage\":%d,\"microbatch\":%d,\"bytes\":", cp->stage, cp->mb);
        sb_append_json_number(sb, cp->bytes);
        sb_append(sb, "}}");
    }
    free(named);
    for (size_t i = 0; i < tl->nstalls; i++) {
        const tl_stall *sl = &tl->stalls[i];
        if (sl->rank < 0 || sl->rank >= pp) continue;
        strbuf *sb = event(w);
        slice_head(sb, "stall", "stall", sl->rank, tid_of(STREAM_COMPUTE, 0), sl->start_s, sl->end_s);
        sb_appendf(sb, ",\"args\":{\"stage\":%d,\"microbatch\":%d,\"waits for\":\"reload\"}}", sl->stage,
                   sl->mb);
    }
}

/* ---- memory counters ------------------------------------------------------ */

typedef struct counter_ctx {
    writer *w;
    const run_metrics *m;
} counter_ctx;

static void counter_event(void *vctx, int rank, double t_s, double activation_bytes, double workspace_bytes,
                          double activations)
{
    counter_ctx *c = vctx;
    double static_bytes = (c->m && rank < c->m->pp) ? c->m->rank[rank].static_bytes : 0.0;
    strbuf *sb = event(c->w);
    sb_appendf(sb, "\"ph\":\"C\",\"name\":\"memory bytes\",\"pid\":%d,\"tid\":0,\"ts\":", rank);
    append_us(sb, t_s);
    sb_append(sb, ",\"args\":{\"static\":");
    append_value(sb, static_bytes);
    sb_append(sb, ",\"activations\":");
    append_value(sb, activation_bytes);
    sb_append(sb, ",\"workspace\":");
    append_value(sb, workspace_bytes);
    sb_append(sb, "}}");
    sb = event(c->w);
    sb_appendf(sb, "\"ph\":\"C\",\"name\":\"stored activations\",\"pid\":%d,\"tid\":0,\"ts\":", rank);
    append_us(sb, t_s);
    sb_append(sb, ",\"args\":{\"stage units\":");
    append_value(sb, activations);
    sb_append(sb, "}}");
}

static void memory_events(const report_input *in, writer *w)
{
    metrics_input mi = { .sched = in->sched, .wl = in->wl, .plat = in->plat, .rank_gpu = in->rank_gpu, .tl = in->tl,
                         .plan = in->plan };
    counter_ctx c = { w, in->m };
    metrics_memory_walk(&mi, counter_event, &c);
}

/* ---- whole file ----------------------------------------------------------- */

static int pipeline_ranks(const report_input *in)
{
    if (in->sched) return in->sched->pp;
    if (in->m) return in->m->pp;
    int pp = 0;
    for (size_t i = 0; i < in->tl->nops; i++)
        if (timeline_op(in->tl, i).rank >= pp) pp = timeline_op(in->tl, i).rank + 1;
    return pp;
}

static void process_metadata(const report_input *in, writer *w, int pp)
{
    char name[128];
    for (int r = 0; r < pp; r++) {
        const char *host = rpt_rank_host(in, r);
        if (host[0])
            snprintf(name, sizeof name, "rank %d: %s", r, host);
        else
            snprintf(name, sizeof name, "rank %d", r);
        meta(w, "process_name", r, 0, "name", name, 0);
        meta(w, "process_sort_index", r, 0, "sort_index", NULL, r);
        for (int s = STREAM_COMPUTE; s <= STREAM_RECV; s++) {
            meta(w, "thread_name", r, tid_of(s, 0), "name", stream_name[s], 0);
            meta(w, "thread_sort_index", r, tid_of(s, 0), "sort_index", NULL, tid_of(s, 0));
        }
    }
}

static void other_data(const report_input *in, writer *w)
{
    char label[RPT_LABEL_MAX];
    strbuf *sb = rpt_file_buf(&w->file);
    sb_append(sb, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"schedule\":");
    sb_append_json_string(sb, rpt_schedule_name(in));
    sb_appendf(sb, ",\"microbatches\":%d,\"workload\":", rpt_microbatches(in));
    sb_append_json_string(sb, rpt_workload_label(in, label, sizeof label));
    sb_append(sb, ",\"network\":");
    sb_append_json_string(sb, rpt_network_label(in, label, sizeof label));
    if (in->m) {
        sb_append(sb, ",\"makespan_s\":");
        sb_append_json_number(sb, in->m->makespan_s);
    }
    sb_append(sb, "}}\n");
}

int report_trace(const report_input *in, const char *path, pg_status *st)
{
    writer w = { .nevents = 0 };
    int rc = rpt_file_open(&w.file, path, "--trace", TRACE_FLUSH_BYTES, st);
    if (rc != 0) return rc;
    sb_append(rpt_file_buf(&w.file), "{\"traceEvents\":[");
    static const timeline empty;
    report_input local = *in;
    if (!local.tl) local.tl = &empty;
    int pp = pipeline_ranks(&local);
    process_metadata(&local, &w, pp);
    op_events(&local, &w);
    bubble_events(&local, &w);
    xfer_events(&local, &w, pp);
    copy_events(&local, &w, pp);
    memory_events(&local, &w);
    other_data(&local, &w);
    return rpt_file_close(&w.file, path, "trace", st);
}
