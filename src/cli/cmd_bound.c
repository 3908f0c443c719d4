/* cmd_bound.c: `pipegrid bound`: the makespan no schedule can beat (seed 000).
 *
 * Same input as `run` (job pipeline: experiment + --set, workload, the
 * schedule's placement), but no simulation: the bound is computed from the
 * per-stage op times, the latency of network=ideal and memory.limit by
 * bound_lower (src/opt/bound.h).  `lower_bound` is over every schedule with
 * the experiment's placement (one wave, looping, V or wave, with its chunks),
 * split backward allowed (it includes every fused schedule), recomputation
 * allowed when recompute != none.  `schedule_class_lower_bound` restricts to
 * the chosen schedule's own backward kind (fused or split): the gap between
 * it and `run`'s makespan is what that schedule leaves on the table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "opt/bound.h"

static void json_num(strbuf *o, const char *key, double v, int *first)
{
    sb_appendf(o, "%s\"%s\": ", *first ? "" : ", ", key);
    sb_append_json_number(o, v);
    *first = 0;
}

static void json_str(strbuf *o, const char *key, const char *v, int *first)
{
    sb_appendf(o, "%s\"%s\": ", *first ? "" : ", ", key);
    sb_append_json_string(o, v);
    *first = 0;
}

static void json_int(strbuf *o, const char *key, long v, int *first)
{
    sb_appendf(o, "%s\"%s\": %ld", *first ? "" : ", ", key, v);
    *first = 0;
}

static void write_json(const job *j, const bound_input *in, const bound_result *any, const bound_result *cls,
                       int own_split, strbuf *o)
{
    int first = 1;
    sb_append(o, "{");
    json_num(o, "lower_bound", any->lower_bound, &first);
    json_str(o, "active_bound", bound_kind_name(any->active), &first);
    json_int(o, "active_rank", any->active_rank, &first);
    sb_appendf(o, ", \"exact\": %s", any->exact ? "true" : "false");
    if (any->exact)
        json_str(o, "exact_reason", any->exact_reason, &first);
    json_num(o, "critical_path_bound", any->path_s, &first);
    json_num(o, "machine_bound", any->machine_s, &first);
    json_int(o, "machine_rank", any->machine_rank, &first);
    json_num(o, "memory_bound", any->memory_s, &first);
    json_int(o, "memory_rank", any->memory_rank, &first);
    json_num(o, "remat_ops", any->remat_ops, &first);
    json_str(o, "schedule", j->sched.name, &first);
    json_str(o, "schedule_class", own_split ? "split" : "fused", &first);
    json_num(o, "schedule_class_lower_bound", cls->lower_bound, &first);
    json_int(o, "pp", in->pp, &first);
    json_int(o, "microbatches", in->m, &first);
    json_int(o, "stages_per_rank", in->nstages / in->pp, &first);
    json_num(o, "memory_limit", in->mem_limit > 0 ? in->mem_limit : 0, &first);
    json_num(o, "latency", in->comm_s, &first);
    sb_appendf(o, ", \"remat\": %s", in->remat ? "true" : "false");
    sb_append(o, "}\n");
}

static void write_text(const job *j, const bound_input *in, const bound_result *any, const bound_result *cls,
                       int own_split, strbuf *o)
{
    sb_appendf(o, "lower bound on makespan: %.6g s (%s bound", any->lower_bound, bound_kind_name(any->active));
    if (any->active_rank >= 0)
        sb_appendf(o, ", rank %d", any->active_rank);
    sb_appendf(o, ")%s\n", any->exact ? ", exact" : "");
    if (any->exact)
        sb_appendf(o, "  exact: %s\n", any->exact_reason);
    sb_appendf(o, "  pp %d, microbatches %d, %d stage%s per rank (placement of %s), latency %.6g s\n", in->pp, in->m,
               in->nstages / in->pp, in->nstages / in->pp > 1 ? "s" : "", j->sched.name, in->comm_s);
    if (in->mem_limit > 0)
        sb_appendf(o, "  memory.limit K = %g M_B per rank, recomputation %s\n", in->mem_limit,
                   in->remat ? "allowed" : "not allowed");
    else
        sb_appendf(o, "  memory.limit: none\n");
    sb_appendf(o, "  critical path      %.6g s\n", any->path_s);
    sb_appendf(o, "  machine (rank %d)   %.6g s\n", any->machine_rank, any->machine_s);
    if (any->memory_rank >= 0)
        sb_appendf(o, "  memory (rank %d)    %.6g s%s\n", any->memory_rank, any->memory_s,
                   any->remat_ops > 0 ? " (assuming recomputations)" : "");
    sb_appendf(o, "  %s-backward schedules (like %s): %.6g s\n", own_split ? "split" : "fused", j->sched.name,
               cls->lower_bound);
}

int cmd_bound(int argc, char **argv)
{
    cli_options o;
    pg_status st;
    job j;
    job_bound jb;
    memset(&jb, 0, sizeof jb);
    int rc = job_start(argc, argv, 2, 1u << FORMAT_TEXT | 1u << FORMAT_JSON, 0, 1, &o, &j, &st);
    /* Other networks: the GPUs' speeds scale the op times. */
    if (rc == 0 && j.exp.network != NET_IDEAL)
        rc = job_build_platform(&j, &st);
    if (rc == 0)
        rc = job_compute_bound(&j, &jb, &st);
    if (rc != 0) {
        rc = cli_report_error(&st);
    } else {
        strbuf out;
        sb_init(&out);
        if (o.format == FORMAT_JSON)
            write_json(&j, &jb.in, &jb.any, &jb.cls, sched_is_split(&j.sched), &out);
        else
            write_text(&j, &jb.in, &jb.any, &jb.cls, sched_is_split(&j.sched), &out);
        if (cli_write_stdout(&out, &st) != 0)
            rc = cli_report_error(&st);
        sb_free(&out);
    }
    job_bound_free(&jb);
    job_finish(&j, &o);
    return rc;
}
