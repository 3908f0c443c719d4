/* trace.c: Chrome trace-event JSON of a run (Perfetto, chrome://tracing).
 *
 * Layout: one process per GPU of the job (pid = the platform's GPU index,
 * named by its host name; its pipeline rank, stages, replica and tp / cp
 * rank in the process_name event's args and in process_labels); threads =
 * streams: compute, send, recv, d2h and h2d for offload copies, then the
 * collectives' streams (tp collectives, cp key/value exchange, ep
 * all-to-all, dp reduction with the tied embedding's all-reduce) and the
 * optimizer step, each present when the run has it.  The trace covers the
 * whole iteration: it ends with the optimizer step, at the iteration's end.
 *
 * Every GPU of a pipeline rank (its tp x cp group in each data-parallel
 * replica) runs the same op list, and the timeline records one replica's
 * (sim/timeline.h; with symmetric replicas the only one simulated): each GPU
 * shows those ops, transfers (member k of one rank's group sends to member k
 * of the next's), copies and replica 0's collectives; the dp reduction and
 * optimizer step are the rank's.  Past TRACE_MIRROR_MAX_EVENTS events in all
 * only the first GPU of each group carries them (the others' process args
 * say "same_as"), so a big run's trace stays the size it was.
 *
 * Transfers of one GPU may overlap (they are asynchronous), and trace
 * viewers only draw properly nested slices on one thread, so overlapping
 * transfers (and collectives) are spread over extra lanes of the same
 * stream ("send #2", ...), assigned greedily in start order.  Each transfer
 * is a slice on the sender's send lane and one on the receiver's recv lane,
 * joined by a flow ("s" at the send slice's start, "f" with bp "e" at the
 * recv slice's start: a slice's start is inside it in every viewer, so both
 * ends bind).
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
/* Events (ops, transfer ends, copies, collectives, counters) beyond which
 * only the first GPU of each rank's group carries them (header). */
#define TRACE_MIRROR_MAX_EVENTS 4000000.0
/* Counter events per op, about (memory and stored activations at each change). */
#define TRACE_COUNTERS_PER_OP 4

enum {
    STREAM_COMPUTE = 0, STREAM_SEND, STREAM_RECV, STREAM_D2H, STREAM_H2D,
    STREAM_TP, STREAM_CP, STREAM_EP, STREAM_DP, STREAM_OPTIMIZER, STREAM_COUNT
};
static const char *const stream_name[STREAM_COUNT] = {
    "compute", "send", "recv", "d2h", "h2d",
    "tp collectives", "cp key/value exchange", "ep all-to-all", "dp reduction", "optimizer step",
};

/* Lanes of a stream are adjacent tids so that viewers sort them together. */
static int tid_of(int stream, int lane)
{
    return stream * TRACE_MAX_LANES + lane;
}

/* The GPUs of each pipeline rank: base[r] .. base[r] + group - 1 (Megatron's
 * order puts a rank's tp x cp x dp GPUs together, metrics.h); the first
 * `mirrored` of them carry the rank's events (group, or 1 past the limit). */
typedef struct gpu_map {
    int pp;
    int *base;          /* [pp] the rank's first GPU (its pid) */
    int group;          /* GPUs per rank */
    int mirrored;
    int tp, cp;         /* for a GPU's tp / cp rank and replica in its args */
} gpu_map;

/* The report layer's buffered file writer, the events written so far (for
 * the separators), and the GPUs. */
typedef struct writer {
    rpt_file file;
    int nevents;
    gpu_map g;
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

/* Counter values in the shortest form that reads back exactly, as every
 * number pipegrid writes (a non-finite one, never expected, as 0: a
 * counter needs a number). */
static void append_value(strbuf *sb, double v)
{
    sb_append_json_number(sb, isfinite(v) ? v : 0.0);
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
        if (op->rank < 0 || op->rank >= w->g.pp) continue;
        for (int k = 0; k < w->g.mirrored; k++) {
            strbuf *sb = event(w);
            slice_head(sb, name, kind, w->g.base[op->rank] + k, tid_of(STREAM_COMPUTE, 0), op->start_s, op->end_s);
            sb_appendf(sb, ",\"args\":{\"stage\":%d,\"microbatch\":%d,\"kind\":\"%s\"}}", op->stage, op->mb,
                       kind);
        }
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
        if (iv[i].start - busy_until > min_gap && iv[i].rank >= 0 && iv[i].rank < w->g.pp)
            for (int k = 0; k < w->g.mirrored; k++) {
                strbuf *sb = event(w);
                slice_head(sb, "bubble", "idle", w->g.base[iv[i].rank] + k, tid_of(STREAM_COMPUTE, 0), busy_until,
                           iv[i].start);
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

/* Thread names of lanes 1.. of a stream on one GPU (lane 0 is named with
 * the process, or with the stream's first slice). */
static void lane_threads(writer *w, int pid, int stream, int lanes)
{
    char tname[48];
    for (int l = 1; l < lanes; l++) {
        snprintf(tname, sizeof tname, "%s #%d", stream_name[stream], l + 1);
        meta(w, "thread_name", pid, tid_of(stream, l), "name", tname, 0);
        meta(w, "thread_sort_index", pid, tid_of(stream, l), "sort_index", NULL, tid_of(stream, l));
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
    size_t nk = 0;
    for (size_t i = 0; i < n; i++) {
        const tl_xfer x_rec = timeline_xfer(in->tl, i), *x = &x_rec;
        if (x->src_rank >= 0 && x->src_rank < pp) iv[nk++] = (interval){ x->src_rank, x->start_s, x->end_s, i };
    }
    assign_lanes(iv, nk, send_lane, send_lanes);
    nk = 0;
    for (size_t i = 0; i < n; i++) {
        const tl_xfer x_rec = timeline_xfer(in->tl, i), *x = &x_rec;
        if (x->dst_rank >= 0 && x->dst_rank < pp) iv[nk++] = (interval){ x->dst_rank, x->start_s, x->end_s, i };
    }
    assign_lanes(iv, nk, recv_lane, recv_lanes);
    free(iv);

    for (int r = 0; r < pp; r++)
        for (int k = 0; k < w->g.mirrored; k++) {
            lane_threads(w, w->g.base[r] + k, STREAM_SEND, send_lanes[r]);
            lane_threads(w, w->g.base[r] + k, STREAM_RECV, recv_lanes[r]);
        }

    char name[64];
    for (size_t i = 0; i < n; i++) {
        const tl_xfer x_rec = timeline_xfer(in->tl, i), *x = &x_rec;
        int src_ok = x->src_rank >= 0 && x->src_rank < pp, dst_ok = x->dst_rank >= 0 && x->dst_rank < pp;
        snprintf(name, sizeof name, "%s s%d mb%d", xfer_name(x), x->stage, x->mb);
        int send_tid = tid_of(STREAM_SEND, send_lane[i]), recv_tid = tid_of(STREAM_RECV, recv_lane[i]);
        /* member k of the sending rank's group sends to member k of the receiving rank's */
        for (int k = 0; k < w->g.mirrored; k++) {
            int src_pid = src_ok ? w->g.base[x->src_rank] + k : -1, dst_pid = dst_ok ? w->g.base[x->dst_rank] + k : -1;
            for (int side = 0; side < 2; side++) {
                if (!(side == 0 ? src_ok : dst_ok)) continue;
                strbuf *sb = event(w);
                slice_head(sb, name, side == 0 ? "send" : "recv", side == 0 ? src_pid : dst_pid,
                           side == 0 ? send_tid : recv_tid, x->start_s, x->end_s);
                sb_appendf(sb, ",\"args\":{\"stage\":%d,\"microbatch\":%d,\"kind\":\"%s\",\"%s\":%d,\"%s_gpu\":%d,"
                           "\"bytes\":", x->stage, x->mb, xfer_name(x), side == 0 ? "to" : "from",
                           side == 0 ? x->dst_rank : x->src_rank, side == 0 ? "to" : "from",
                           side == 0 ? dst_pid : src_pid);
                sb_append_json_number(sb, x->bytes);
                sb_append(sb, "}}");
            }
            if (!src_ok || !dst_ok) continue;
            size_t id = i * (size_t)w->g.mirrored + (size_t)k;
            strbuf *sb = event(w);
            sb_appendf(sb, "\"ph\":\"s\",\"name\":\"%s\",\"cat\":\"flow\",\"id\":%zu,\"pid\":%d,\"tid\":%d,\"ts\":",
                       xfer_name(x), id, src_pid, send_tid);
            append_us(sb, x->start_s);
            sb_append(sb, "}");
            sb = event(w);
            sb_appendf(sb,
                       "\"ph\":\"f\",\"bp\":\"e\",\"name\":\"%s\",\"cat\":\"flow\",\"id\":%zu,\"pid\":%d,\"tid\":%d,"
                       "\"ts\":", xfer_name(x), id, dst_pid, recv_tid);
            append_us(sb, x->start_s);
            sb_append(sb, "}");
        }
    }
    free(send_lane);
    free(recv_lane);
    free(send_lanes);
    free(recv_lanes);
}

/* Name lane 0 of a stream on one GPU. */
static void stream_thread(writer *w, int pid, int stream)
{
    meta(w, "thread_name", pid, tid_of(stream, 0), "name", stream_name[stream], 0);
    meta(w, "thread_sort_index", pid, tid_of(stream, 0), "sort_index", NULL, tid_of(stream, 0));
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
            for (int k = 0; k < w->g.mirrored; k++) stream_thread(w, w->g.base[cp->rank] + k, stream);
        }
        snprintf(name, sizeof name, "%s s%d mb%d", cp->dir == COPY_D2H ? "offload" : "reload", cp->stage, cp->mb);
        for (int k = 0; k < w->g.mirrored; k++) {
            strbuf *sb = event(w);
            slice_head(sb, name, stream_name[stream], w->g.base[cp->rank] + k, tid_of(stream, 0), cp->start_s,
                       cp->end_s);
            sb_appendf(sb, ",\"args\":{\"stage\":%d,\"microbatch\":%d,\"bytes\":", cp->stage, cp->mb);
            sb_append_json_number(sb, cp->bytes);
            sb_append(sb, "}}");
        }
    }
    free(named);
    for (size_t i = 0; i < tl->nstalls; i++) {
        const tl_stall *sl = &tl->stalls[i];
        if (sl->rank < 0 || sl->rank >= pp) continue;
        for (int k = 0; k < w->g.mirrored; k++) {
            strbuf *sb = event(w);
            slice_head(sb, "stall", "stall", w->g.base[sl->rank] + k, tid_of(STREAM_COMPUTE, 0), sl->start_s,
                       sl->end_s);
            sb_appendf(sb, ",\"args\":{\"stage\":%d,\"microbatch\":%d,\"waits for\":\"reload\"}}", sl->stage,
                       sl->mb);
        }
    }
}

/* ---- collectives and the optimizer step ---------------------------------- */

/* The stream a collective record is drawn on; -1: not drawn (replica spans:
 * the ops are drawn). */
static int coll_stream(int kind)
{
    switch (kind) {
    case TLC_TP_ALLREDUCE:
    case TLC_TP_REDUCE_SCATTER:
    case TLC_TP_ALLGATHER: return STREAM_TP;
    case TLC_CP_KV: return STREAM_CP;
    case TLC_EP_ALLTOALL: return STREAM_EP;
    case TLC_DP_ALLREDUCE:
    case TLC_EMBED_ALLREDUCE: return STREAM_DP;
    case TLC_OPTIMIZER: return STREAM_OPTIMIZER;
    default: return -1;
    }
}

/* Replica 0's collectives (the replica whose ops are drawn) and those of
 * every replica at once (replica -1: the dp reduction, the optimizer). */
static int coll_drawn(const tl_coll *c, int pp)
{
    return c->rank >= 0 && c->rank < pp && (c->replica == 0 || c->replica == -1) && coll_stream(c->kind) >= 0;
}

static void coll_events(const report_input *in, writer *w, int pp)
{
    const timeline *tl = in->tl;
    size_t n = tl->ncolls;
    if (n == 0 || pp <= 0) return;
    /* lanes per (rank, stream): the interval's group key is rank x STREAM_COUNT + stream */
    uint8_t *lane = pg_xcalloc(n, 1);
    int *lanes = pg_xcalloc((size_t)pp * STREAM_COUNT, sizeof *lanes);
    interval *iv = pg_xmalloc(n * sizeof *iv);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const tl_coll *c = &tl->colls[i];
        if (coll_drawn(c, pp))
            iv[k++] = (interval){ c->rank * STREAM_COUNT + coll_stream(c->kind), c->start_s, c->end_s, i };
    }
    assign_lanes(iv, k, lane, lanes);
    free(iv);
    for (int r = 0; r < pp; r++)
        for (int st = 0; st < STREAM_COUNT; st++)
            if (lanes[r * STREAM_COUNT + st] > 0)
                for (int m = 0; m < w->g.mirrored; m++) {
                    stream_thread(w, w->g.base[r] + m, st);
                    lane_threads(w, w->g.base[r] + m, st, lanes[r * STREAM_COUNT + st]);
                }
    char name[64];
    for (size_t i = 0; i < n; i++) {
        const tl_coll *c = &tl->colls[i];
        if (!coll_drawn(c, pp)) continue;
        int st = coll_stream(c->kind);
        if (c->kind == TLC_DP_ALLREDUCE)
            snprintf(name, sizeof name, "%s s%d bucket %d", rpt_coll_name(c->kind), c->stage, c->count);
        else if (c->mb >= 0 && st != STREAM_OPTIMIZER)
            snprintf(name, sizeof name, "%s s%d mb%d", rpt_coll_name(c->kind), c->stage, c->mb);
        else
            snprintf(name, sizeof name, "%s", rpt_coll_name(c->kind));
        for (int m = 0; m < w->g.mirrored; m++) {
            strbuf *sb = event(w);
            slice_head(sb, name, stream_name[st], w->g.base[c->rank] + m, tid_of(st, lane[i]), c->start_s, c->end_s);
            sb_append(sb, ",\"args\":{\"kind\":");
            sb_append_json_string(sb, rpt_coll_name(c->kind));
            sb_appendf(sb, ",\"stage\":%d", c->stage);
            if (c->mb >= 0) sb_appendf(sb, ",\"microbatch\":%d", c->mb);
            if (st == STREAM_TP || st == STREAM_CP || st == STREAM_EP) sb_appendf(sb, ",\"collectives\":%d", c->count);
            if (c->kind == TLC_DP_ALLREDUCE) sb_appendf(sb, ",\"bucket\":%d", c->count);
            if (st != STREAM_OPTIMIZER) {
                sb_append(sb, ",\"bytes per GPU\":");
                sb_append_json_number(sb, c->bytes);
            }
            sb_append(sb, "}}");
        }
    }
    free(lane);
    free(lanes);
}

/* ---- memory counters ------------------------------------------------------ */

typedef struct counter_ctx {
    writer *w;
    const run_metrics *m;
} counter_ctx;

static void counter_pair(writer *w, int pid, double t_s, double static_bytes, double activation_bytes,
                         double workspace_bytes, double activations)
{
    strbuf *sb = event(w);
    sb_appendf(sb, "\"ph\":\"C\",\"name\":\"memory bytes\",\"pid\":%d,\"tid\":0,\"ts\":", pid);
    append_us(sb, t_s);
    sb_append(sb, ",\"args\":{\"static\":");
    append_value(sb, static_bytes);
    sb_append(sb, ",\"activations\":");
    append_value(sb, activation_bytes);
    sb_append(sb, ",\"workspace\":");
    append_value(sb, workspace_bytes);
    sb_append(sb, "}}");
    sb = event(w);
    sb_appendf(sb, "\"ph\":\"C\",\"name\":\"stored activations\",\"pid\":%d,\"tid\":0,\"ts\":", pid);
    append_us(sb, t_s);
    sb_append(sb, ",\"args\":{\"stage units\":");
    append_value(sb, activations);
    sb_append(sb, "}}");
}

static void counter_event(void *vctx, int rank, double t_s, double activation_bytes, double workspace_bytes,
                          double activations)
{
    counter_ctx *c = vctx;
    if (rank < 0 || rank >= c->w->g.pp) return;
    double static_bytes = (c->m && rank < c->m->pp) ? c->m->rank[rank].static_bytes : 0.0;
    for (int k = 0; k < c->w->g.mirrored; k++)
        counter_pair(c->w, c->w->g.base[rank] + k, t_s, static_bytes, activation_bytes, workspace_bytes, activations);
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

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The GPUs of each rank (gpu_map): the rank's GPU and, with the
 * experiment's tp, cp and dp, the group after it, when the platform has
 * them and no two ranks' groups overlap; else the rank's GPU alone, or the
 * rank's number when GPUs are unknown or shared. */
static void gpu_map_build(const report_input *in, int pp, gpu_map *g)
{
    memset(g, 0, sizeof *g);
    g->pp = pp;
    g->base = pg_xcalloc(pp > 0 ? (size_t)pp : 1, sizeof *g->base);
    g->tp = g->cp = 1;
    int known = 1;
    for (int r = 0; r < pp; r++) {
        int gpu = in->rank_gpu ? in->rank_gpu[r] : (in->m && r < in->m->pp) ? in->m->rank[r].gpu : -1;
        if (gpu < 0) known = 0;
        g->base[r] = gpu;
    }
    g->group = 1;
    const experiment *e = in->exp;
    if (known && e && in->plat) {
        int tp = e->tp > 1 ? e->tp : 1, cp = e->cp > 1 ? e->cp : 1, dp = e->dp > 1 ? e->dp : 1;
        long group = (long)tp * cp * dp;
        for (int r = 0; r < pp && group > 1; r++)
            if (g->base[r] + group > in->plat->ngpus) group = 1;
        g->group = (int)group;
        if (group > 1) g->tp = tp, g->cp = cp;
    }
    int *sorted = pg_xcalloc(pp > 0 ? (size_t)pp : 1, sizeof *sorted);
    memcpy(sorted, g->base, (size_t)pp * sizeof *sorted);
    qsort(sorted, (size_t)pp, sizeof *sorted, int_cmp);
    for (int r = 1; known && r < pp; r++)
        if (sorted[r] < sorted[r - 1] + g->group) {
            if (g->group > 1) {   /* overlapping groups: each rank's own GPU only */
                g->group = 1, g->tp = g->cp = 1;
                r = 0;
            } else {
                known = 0;        /* two ranks on one GPU: one process per rank */
            }
        }
    free(sorted);
    if (!known) {
        for (int r = 0; r < pp; r++) g->base[r] = r;
        g->group = 1;
    }
    const timeline *tl = in->tl;
    double events = ((double)tl->nops * (1 + TRACE_COUNTERS_PER_OP) + 2.0 * (double)tl->nxfers +
                     (double)tl->ncopies + (double)tl->nstalls + (double)tl->ncolls) * g->group;
    g->mirrored = events <= TRACE_MIRROR_MAX_EVENTS ? g->group : 1;
}

/* One process per GPU: named by its host name, with what it runs in args
 * (process_name's and process_labels' for the viewers that show them). */
static void process_metadata(const report_input *in, writer *w, int pp)
{
    char name[128], labels[160];
    const gpu_map *g = &w->g;
    for (int r = 0; r < pp; r++)
        for (int k = 0; k < g->group; k++) {
            int pid = g->base[r] + k;
            const char *host = in->plat && pid < in->plat->ngpus && g->base[r] >= 0 && in->plat->gpu[pid].host[0]
                                   ? in->plat->gpu[pid].host : NULL;
            if (host)
                snprintf(name, sizeof name, "%s", host);
            else
                snprintf(name, sizeof name, "GPU %d", pid);
            int t = k % g->tp, c = k / g->tp % g->cp, d = k / (g->tp * g->cp);
            strbuf *sb = event(w);
            sb_appendf(sb, "\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":", pid);
            sb_append_json_string(sb, name);
            sb_appendf(sb, ",\"gpu\":%d,\"pipeline_rank\":%d,\"stages\":[", pid, r);
            int ns = 0;
            for (int st = 0; in->sched && st < in->sched->nstages; st++)
                if (in->sched->stage_rank[st] == r) sb_appendf(sb, "%s%d", ns++ ? "," : "", st);
            sb_appendf(sb, "],\"replica\":%d,\"tp_rank\":%d,\"cp_rank\":%d", d, t, c);
            if (k >= g->mirrored) sb_appendf(sb, ",\"same_as\":%d", g->base[r]);
            sb_append(sb, "}}");
            snprintf(labels, sizeof labels, "pipeline rank %d, replica %d, tp %d, cp %d%s", r, d, t, c,
                     k >= g->mirrored ? " (its events: the group's first GPU's)" : "");
            meta(w, "process_labels", pid, 0, "labels", labels, 0);
            meta(w, "process_sort_index", pid, 0, "sort_index", NULL, pid);
            if (k >= g->mirrored) continue;
            for (int s = STREAM_COMPUTE; s <= STREAM_RECV; s++) stream_thread(w, pid, s);
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
        /* The trace's last slice ends at iteration_seconds - overhead_seconds:
         * the fitted per-iteration overhead (the framework's work outside the
         * ops) has no place in time, so it is a number here, not a slice. */
        sb_append(sb, ",\"iteration_seconds\":");
        sb_append_json_number(sb, in->m->iteration_s);
        sb_append(sb, ",\"overhead_seconds\":");
        sb_append_json_number(sb, in->m->overhead_s);
    }
    sb_appendf(sb, ",\"gpus\":%d,\"gpus_with_events\":%d", w->g.pp * w->g.group, w->g.pp * w->g.mirrored);
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
    gpu_map_build(&local, pp, &w.g);
    process_metadata(&local, &w, pp);
    op_events(&local, &w);
    bubble_events(&local, &w);
    xfer_events(&local, &w, pp);
    copy_events(&local, &w, pp);
    coll_events(&local, &w, pp);
    memory_events(&local, &w);
    other_data(&local, &w);
    free(w.g.base);
    return rpt_file_close(&w.file, path, "trace", st);
}
