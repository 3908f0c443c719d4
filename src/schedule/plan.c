/* plan.c: per-(stage, microbatch) offload and recompute choices (plan.h).
 *
 * Selective offload ranks a rank's activations by how long they sit idle on
 * the GPU: from the end of F to the start of the op that reads them first
 * (B or BW), under the ideal timing of the schedule.  That window is what an
 * offload can free; the longest windows free the most byte-seconds and are
 * the easiest to hide behind compute (PipeOffload offloads the chunks with
 * the longest lifespan first).  Each rank then takes activations from the
 * longest window down until it has offloaded ratio x its activation bytes.
 */
#include "schedule/plan.h"

#include <stdlib.h>
#include <string.h>

void plan_init(memplan *p, const schedule *s)
{
    memset(p, 0, sizeof *p);
    p->nstages = s->nstages;
    p->m = s->m;
    p->c = pg_xcalloc((size_t)s->nstages * (size_t)s->m + 1, sizeof *p->c);
}

void plan_free(memplan *p)
{
    free(p->c);
    memset(p, 0, sizeof *p);
}

static int counts_recompute(plan_choice c)
{
    return c.fwd != PLAN_FWD_KEEP || c.bwd != PLAN_BWD_KEEP;
}

void plan_set(memplan *p, int stage, int mb, plan_choice c)
{
    plan_choice *old = &p->c[(size_t)stage * (size_t)p->m + (size_t)mb];
    p->noffload += (int)c.offload - (int)old->offload;
    p->nrecompute += counts_recompute(c) - counts_recompute(*old);
    *old = c;
}

int plan_is_empty(const memplan *p)
{
    return p == NULL || (p->noffload == 0 && p->nrecompute == 0);
}

typedef struct candidate {
    int stage, mb;
    double window_s;   /* F end to first use */
    double bytes;
} candidate;

static int by_window_desc(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->window_s != y->window_s) return x->window_s > y->window_s ? -1 : 1;
    if (x->stage != y->stage) return x->stage < y->stage ? -1 : 1;   /* deterministic ties */
    return (x->mb > y->mb) - (x->mb < y->mb);
}

/* Marks the longest-lived activations of every rank until ratio of its bytes. */
static int select_offloads(const schedule *s, const plan_policy *pol, memplan *out, pg_status *st)
{
    sched_times t;
    int rc = sched_eval_ideal(s, pol->t_f, pol->t_b, pol->t_w, pol->t_comm, &t, st);
    if (rc) return rc;
    size_t n = (size_t)s->nstages * (size_t)s->m;
    double *f_end = pg_xcalloc(n + 1, sizeof *f_end);
    double *use_start = pg_xcalloc(n + 1, sizeof *use_start);
    for (int r = 0; r < s->pp; r++) {
        for (int i = 0; i < s->nops[r]; i++) {
            sched_op op = s->ops[r][i];
            size_t k = (size_t)op.stage * (size_t)s->m + (size_t)op.mb;
            if (op.kind == OP_F) f_end[k] = t.end[r][i];
            else if (op.kind == OP_B || op.kind == OP_BW) use_start[k] = t.start[r][i];
        }
    }
    candidate *cand = pg_xmalloc((n + 1) * sizeof *cand);
    for (int r = 0; r < s->pp; r++) {
        size_t nc = 0;
        double total = 0;
        for (int stage = 0; stage < s->nstages; stage++) {
            if (s->stage_rank[stage] != r) continue;
            double bytes = pol->offload_bytes ? pol->offload_bytes[stage] : 1.0;
            for (int mb = 0; mb < s->m; mb++) {
                size_t k = (size_t)stage * (size_t)s->m + (size_t)mb;
                cand[nc++] = (candidate){ stage, mb, use_start[k] - f_end[k], bytes };
                total += bytes;
            }
        }
        qsort(cand, nc, sizeof *cand, by_window_desc);
        double want = pol->offload_ratio * total, taken = 0;
        for (size_t i = 0; i < nc && taken < want; i++) {
            plan_choice c = plan_get(out, cand[i].stage, cand[i].mb);
            c.offload = 1;
            plan_set(out, cand[i].stage, cand[i].mb, c);
            taken += cand[i].bytes;
        }
    }
    free(cand);
    free(f_end);
    free(use_start);
    sched_times_free(s, &t);
    return 0;
}

int plan_build(const schedule *s, const plan_policy *pol, memplan *out, pg_status *st)
{
    plan_init(out, s);
    if (!(pol->offload_ratio >= 0 && pol->offload_ratio <= 1))
        return pg_fail(st, PG_EXIT_INPUT, "offload ratio %g is outside [0, 1]", pol->offload_ratio);
    int split = sched_is_split(s);
    for (int stage = 0; stage < s->nstages; stage++) {
        for (int mb = 0; mb < s->m; mb++) {
            plan_choice c = { .offload = pol->offload == PLAN_OFFLOAD_FULL, .fwd = (uint8_t)pol->fwd,
                              .bwd = (uint8_t)(split ? pol->bwd : PLAN_BWD_KEEP) };
            plan_set(out, stage, mb, c);
        }
    }
    if (pol->offload == PLAN_OFFLOAD_SELECTIVE && pol->offload_ratio > 0)
        return select_offloads(s, pol, out, st);
    return 0;
}
