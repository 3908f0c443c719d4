/* common.c: labels and derived numbers shared by the report writers. */
#include "report/report_util.h"

#include <stdio.h>
#include <string.h>

int report_exit_code(const report_input *in)
{
    if (in->outcome && !in->outcome->completed) return PG_EXIT_DEADLOCK;
    if (in->m && in->m->noom > 0) return PG_EXIT_OOM;
    return PG_EXIT_OK;
}

const char *rpt_schedule_name(const report_input *in)
{
    if (in->exp && in->exp->schedule[0]) return in->exp->schedule;
    if (in->sched && in->sched->name[0]) return in->sched->name;
    return "?";
}

const char *rpt_order_chosen(const report_input *in)
{
    if (!in->exp || !in->sched || !in->exp->offload_order_search || in->exp->offload != OFFLOAD_PLAN) return NULL;
    return strcmp(in->sched->name, in->exp->schedule) != 0 ? in->sched->name : NULL;
}

int rpt_microbatches(const report_input *in)
{
    if (in->sched) return in->sched->m;
    return in->exp ? in->exp->microbatches : 0;
}

int rpt_stages_per_rank(const report_input *in)
{
    return (in->sched && in->sched->v > 0) ? in->sched->v : 1;
}

char *rpt_workload_label(const report_input *in, char *buf, int len)
{
    if (in->exp) {
        switch (in->exp->workload) {
        case WL_UNIFORM: snprintf(buf, (size_t)len, "uniform"); return buf;
        case WL_PROFILE: snprintf(buf, (size_t)len, "%s", in->exp->profile_path); return buf;
        case WL_GPT:
            snprintf(buf, (size_t)len, "gpt (%d layers, hidden %d, %d heads, seq %d)", in->exp->gpt_layers,
                     in->exp->gpt_hidden, in->exp->gpt_heads, in->exp->gpt_seq);
            return buf;
        case WL_HF:
            snprintf(buf, (size_t)len, "hf:%s (seq %d)", in->exp->profile_path, in->exp->gpt_seq);
            return buf;
        }
    }
    snprintf(buf, (size_t)len, "%s", in->wl && in->wl->name[0] ? in->wl->name : "?");
    return buf;
}

char *rpt_network_label(const report_input *in, char *buf, int len)
{
    if (in->exp) {
        switch (in->exp->network) {
        case NET_IDEAL: snprintf(buf, (size_t)len, "ideal"); return buf;
        case NET_CLUSTER: snprintf(buf, (size_t)len, "cluster"); return buf;
        case NET_PLATFORM: snprintf(buf, (size_t)len, "%s", in->exp->platform_path); return buf;
        }
    }
    snprintf(buf, (size_t)len, "%s", in->plat && in->plat->xml_path[0] ? in->plat->xml_path : "?");
    return buf;
}

const char *rpt_kind_name(int kind, char *buf, int len)
{
    if (kind >= 0 && kind < OP_KIND_COUNT) return op_kind_name((op_kind)kind);
    if (kind == TL_OP_R) return "R";     /* recomputes inserted from a memory plan */
    if (kind == TL_OP_RW) return "RW";
    snprintf(buf, (size_t)len, "op%d", kind);
    return buf;
}

const char *rpt_coll_name(int kind)
{
    switch (kind) {
    case TLC_TP_ALLREDUCE: return "tp all-reduce";
    case TLC_TP_REDUCE_SCATTER: return "tp reduce-scatter";
    case TLC_TP_ALLGATHER: return "tp all-gather";
    case TLC_DP_ALLREDUCE: return "dp all-reduce";
    case TLC_OPTIMIZER: return "optimizer step";
    case TLC_EMBED_ALLREDUCE: return "tied embedding all-reduce";
    case TLC_EP_ALLTOALL: return "ep all-to-all";
    case TLC_CP_KV: return "cp key/value exchange";
    default: return "collective";
    }
}

const char *rpt_rank_host(const report_input *in, int rank)
{
    int g = (in->m && rank < in->m->pp) ? in->m->rank[rank].gpu : -1;
    return (in->plat && g >= 0 && g < in->plat->ngpus) ? in->plat->gpu[g].host : "";
}

const char *rpt_recompute_word(recompute_policy p)
{
    switch (p) {
    case RECOMPUTE_NONE: return "none";
    case RECOMPUTE_FULL: return "full";
    case RECOMPUTE_SELECTIVE: return "selective";
    case RECOMPUTE_PLAN: return "plan";
    case RECOMPUTE_LGD: return "lgd";
    }
    return "?";
}

const char *rpt_offload_word(offload_policy p)
{
    switch (p) {
    case OFFLOAD_NONE: return "none";
    case OFFLOAD_FULL: return "full";
    case OFFLOAD_SELECTIVE: return "selective";
    case OFFLOAD_PLAN: return "plan";
    }
    return "?";
}

const char *rpt_precision_word(precision_kind p)
{
    return experiment_precision_word(p);
}

const char *rpt_attention_word(attention_kind a)
{
    switch (a) {
    case ATTENTION_FLASH: return "flash";
    case ATTENTION_LEGACY: return "legacy";
    }
    return "?";
}

long rpt_global_batch_size(const report_input *in)
{
    /* What ran; equal to global_batch_size when given (experiment.c checks it). */
    return (long)in->exp->micro_batch_size * in->exp->dp * rpt_microbatches(in);
}

double rpt_max_peak_memory(const run_metrics *m)
{
    double peak = 0;
    for (int r = 0; r < m->pp; r++)
        if (m->rank[r].peak_memory_bytes > peak) peak = m->rank[r].peak_memory_bytes;
    return peak;
}

double rpt_max_peak_activations(const run_metrics *m)
{
    double peak = 0;
    for (int r = 0; r < m->pp; r++)
        if (m->rank[r].peak_activations > peak) peak = m->rank[r].peak_activations;
    return peak;
}

double rpt_rank_bubble(const rank_metrics *rm)
{
    return rm->span > 0 ? rm->idle_s / rm->span : 0.0;
}
