/* report_util.h: helpers shared by the report writers (internal to src/report).
 *
 * Labels for the header lines and the few derived numbers every format
 * prints, so that text, JSON and CSV name things the same way.
 */
#ifndef PG_REPORT_REPORT_UTIL_H
#define PG_REPORT_REPORT_UTIL_H

#include "report/report.h"

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

#endif
