/* rpt_bound.c: `pipegrid bound`'s text and JSON (report_opt.h). */
#include "report/report_opt.h"

#include "report/report_util.h"

void report_bound_json(const report_bound_input *b, strbuf *sb)
{
    const bound_result *any = b->any;
    const bound_input *in = b->in;
    rpt_json w = rpt_json_open(sb);
    rpt_json_num(&w, "lower_bound", any->lower_bound);
    rpt_json_str(&w, "active_bound", bound_kind_name(any->active));
    rpt_json_int(&w, "active_rank", any->active_rank);
    rpt_json_bool(&w, "exact", any->exact);
    if (any->exact)
        rpt_json_str(&w, "exact_reason", any->exact_reason);
    rpt_json_num(&w, "critical_path_bound", any->path_s);
    rpt_json_num(&w, "machine_bound", any->machine_s);
    rpt_json_int(&w, "machine_rank", any->machine_rank);
    rpt_json_num(&w, "memory_bound", any->memory_s);
    rpt_json_int(&w, "memory_rank", any->memory_rank);
    rpt_json_num(&w, "remat_ops", any->remat_ops);
    rpt_json_str(&w, "schedule", b->schedule);
    rpt_json_str(&w, "schedule_class", b->own_split ? "split" : "fused");
    rpt_json_num(&w, "schedule_class_lower_bound", b->cls->lower_bound);
    rpt_json_int(&w, "pp", in->pp);
    rpt_json_int(&w, "microbatches", in->m);
    rpt_json_int(&w, "stages_per_rank", in->nstages / in->pp);
    rpt_json_num(&w, "memory_limit", in->mem_limit > 0 ? in->mem_limit : 0);
    rpt_json_num(&w, "latency", in->comm_s);
    rpt_json_bool(&w, "remat", in->remat);
    rpt_json_close(&w);
    sb_append(sb, "\n");
}

void report_bound_text(const report_bound_input *b, strbuf *o)
{
    const bound_result *any = b->any;
    const bound_input *in = b->in;
    int v = in->nstages / in->pp;
    sb_appendf(o, "lower bound on makespan: %.6g s (%s bound", any->lower_bound, bound_kind_name(any->active));
    if (any->active_rank >= 0)
        sb_appendf(o, ", rank %d", any->active_rank);
    sb_appendf(o, ")%s\n", any->exact ? ", exact" : "");
    if (any->exact)
        sb_appendf(o, "  exact: %s\n", any->exact_reason);
    sb_appendf(o, "  pp %d, microbatches %d, %d stage%s per rank (placement of %s), latency %.6g s\n", in->pp, in->m,
               v, v > 1 ? "s" : "", b->schedule, in->comm_s);
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
    sb_appendf(o, "  %s-backward schedules (like %s): %.6g s\n", b->own_split ? "split" : "fused", b->schedule,
               b->cls->lower_bound);
}
