/* report_util.h: helpers shared by the report writers (internal to src/report).
 *
 * Labels for the header lines and the few derived numbers every format
 * prints, so that text, JSON and CSV name things the same way; the one JSON
 * object writer every command's JSON goes through (output.c); and the one
 * buffered file writer of the trace and the SVG picture (output.c).
 */
#ifndef PG_REPORT_REPORT_UTIL_H
#define PG_REPORT_REPORT_UTIL_H

#include "report/report.h"
#include "util/outfile.h"

/* Buffer size for the labels below. */
#define RPT_LABEL_MAX 600

/* The order offload.order=search ran instead of the experiment's schedule
 * (opt/offload_order.h), or NULL when it ran the schedule's own. */
const char *rpt_order_chosen(const report_input *in);
const char *rpt_schedule_name(const report_input *in);
int rpt_microbatches(const report_input *in);
int rpt_stages_per_rank(const report_input *in);
/* "uniform", "profiles/gpt3.yaml", "gpt (32 layers, hidden 4096)", or the workload's name. */
char *rpt_workload_label(const report_input *in, char *buf, int len);
/* "ideal", "cluster", "platforms/x.xml": the network key's value. */
char *rpt_network_label(const report_input *in, char *buf, int len);
/* "F", "B", "W", "BW", "R", "RW", or "op<N>" for a kind this layer does not know. */
const char *rpt_kind_name(int kind, char *buf, int len);
/* SimGrid host of a rank's GPU, "" if unknown. */
const char *rpt_rank_host(const report_input *in, int rank);
/* A collective record's kind (sim/timeline.h tl_coll_kind) in words. */
const char *rpt_coll_name(int kind);
/* The experiment's policy words, as its keys spell them ("?" for a value
 * this layer does not know). */
const char *rpt_recompute_word(recompute_policy p);
const char *rpt_offload_word(offload_policy p);
const char *rpt_precision_word(precision_kind p);
const char *rpt_attention_word(attention_kind a);
/* Samples per iteration over every replica, micro_batch_size x dp x
 * microbatches (what ran: global_batch_size when given).  Needs in->exp. */
long rpt_global_batch_size(const report_input *in);
double rpt_max_peak_memory(const run_metrics *m);
double rpt_max_peak_activations(const run_metrics *m);
/* Idle fraction of one rank's own span (0 for an empty rank). */
double rpt_rank_bubble(const rank_metrics *rm);

/* ---- JSON objects (output.c) ----------------------------------------------
 * Members in the order written, separated as JSON needs; numbers through
 * sb_append_json_number (shortest round trip, non-finite -> null). */
typedef struct rpt_json {
    strbuf *sb;
    int first;      /* no member written yet */
} rpt_json;

/* "{" and a writer for its members; rpt_json_close writes "}". */
rpt_json rpt_json_open(strbuf *sb);
void rpt_json_close(rpt_json *w);
/* "KEY": and the separator before it; the caller writes the value. */
void rpt_json_key(rpt_json *w, const char *key);
void rpt_json_num(rpt_json *w, const char *key, double v);
void rpt_json_int(rpt_json *w, const char *key, long v);
void rpt_json_str(rpt_json *w, const char *key, const char *v);
void rpt_json_bool(rpt_json *w, const char *key, int v);
void rpt_json_null(rpt_json *w, const char *key);
/* An array element's separator: "" before the first, "," after. */
void rpt_json_sep(strbuf *sb, int index);

/* ---- buffered file output (output.c) ---------------------------------------
 * Big outputs (a trace of millions of events) are built in a strbuf and
 * written every flush_bytes, so they are never held whole in memory; write
 * errors are remembered and reported once, at close.  The file is written
 * beside path and renamed onto it at close (util/outfile.h), so an
 * interrupted or failed write never leaves a truncated file. */
typedef struct rpt_file {
    pg_outfile out;
    strbuf sb;
    size_t flush_bytes;
    int failed;         /* a write failed */
} rpt_file;

/* Opens path for writing; PG_EXIT_INPUT "PATH: key 'OPTION': cannot open
 * for writing: ..." when it cannot (option: the command-line option that
 * named it, "--trace", "--svg"). */
int rpt_file_open(rpt_file *w, const char *path, const char *option, size_t flush_bytes, pg_status *st);
/* The buffer to append to (written out first when it holds flush_bytes). */
strbuf *rpt_file_buf(rpt_file *w);
/* Writes out what the buffer holds. */
void rpt_file_flush(rpt_file *w);
/* Flushes, closes, renames into place and frees; PG_EXIT_INTERNAL "PATH:
 * cannot write: ... (the WHAT)" if any write, the close or the rename failed
 * (then path is left as it was). */
int rpt_file_close(rpt_file *w, const char *path, const char *what, pg_status *st);

/* svg.c's writers: an SVG coordinate (to 1/100 px, trailing zeros trimmed)
 * and XML-escaped text. */
void rpt_svg_num(strbuf *sb, double v);
void rpt_xml_text(strbuf *sb, const char *s);

#endif
