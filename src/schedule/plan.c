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
    free(p->reload_at);
    free(p->reload_release_s);
    free(p->f_release_s);
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

/* The (stage, mb) entries of p's per-item arrays. */
static size_t plan_items(const memplan *p)
{
    return (size_t)p->nstages * (size_t)p->m;
}

/* A copy of n items of size bytes (one more allocated, as plan_init and
 * plan_build allocate), or NULL for NULL. */
static void *copy_items(const void *src, size_t n, size_t size)
{
    if (src == NULL)
        return NULL;
    void *dst = pg_xcalloc(n + 1, size);
    memcpy(dst, src, n * size);
    return dst;
}

static int same_items(const void *a, const void *b, size_t n, size_t size)
{
    if (a == NULL || b == NULL)
        return a == b;
    return memcmp(a, b, n * size) == 0;
}

void plan_copy(memplan *dst, const memplan *src)
{
    size_t n = plan_items(src);
    *dst = *src;
    dst->c = copy_items(src->c, n, sizeof *src->c);
    dst->reload_at = copy_items(src->reload_at, n, sizeof *src->reload_at);
    dst->reload_release_s = copy_items(src->reload_release_s, n, sizeof *src->reload_release_s);
    dst->f_release_s = copy_items(src->f_release_s, n, sizeof *src->f_release_s);
}

int plan_equal(const memplan *a, const memplan *b)
{
    if (a->nstages != b->nstages || a->m != b->m)
        return 0;
    size_t n = plan_items(a);
    for (size_t k = 0; a->c && b->c && k < n; k++)
        if (a->c[k].offload != b->c[k].offload || a->c[k].fwd != b->c[k].fwd || a->c[k].bwd != b->c[k].bwd)
            return 0;
    return (a->c != NULL) == (b->c != NULL) && same_items(a->reload_at, b->reload_at, n, sizeof *a->reload_at) &&
           same_items(a->reload_release_s, b->reload_release_s, n, sizeof *a->reload_release_s) &&
           same_items(a->f_release_s, b->f_release_s, n, sizeof *a->f_release_s);
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

/* Whole chunks: every activation of each rank's first `chunks` local chunks
 * (local chunk 0 is the one whose activations live longest in the looping
 * placements, which is why PipeOffload offloads from chunk 0 up). */
static void select_chunks(const schedule *s, int chunks, memplan *out)
{
    for (int stage = 0; stage < s->nstages; stage++) {
        if (sched_stage_chunk(s, stage) >= chunks) continue;
        for (int mb = 0; mb < s->m; mb++) {
            plan_choice c = plan_get(out, stage, mb);
            c.offload = 1;
            plan_set(out, stage, mb, c);
        }
    }
}

typedef struct po_reload {
    int consumer;   /* op index of the consumer on the rank */
    int f_idx;      /* op index of its F */
    int trigger;    /* op index at whose start the H2D is queued */
    size_t item;
} po_reload;

static int by_consumer(const void *a, const void *b)
{
    const po_reload *x = a, *y = b;
    return (x->consumer > y->consumer) - (x->consumer < y->consumer);
}

/* PipeOffload's lifespan filter and reload rule (plan.h's header) on the
 * offloads already chosen in out. */
static int apply_po_rules(const schedule *s, const plan_policy *pol, memplan *out, pg_status *st)
{
    sched_times t;
    int rc;
    if (pol->stage_f_s && pol->stage_b_s && pol->stage_w_s)
        rc = plan_eval_times(s, pol->stage_f_s, pol->stage_b_s, pol->stage_w_s, pol->t_comm, &t, st);
    else
        rc = sched_eval_ideal(s, pol->t_f, pol->t_b, pol->t_w, pol->t_comm, &t, st);
    if (rc) return rc;
    size_t n = (size_t)s->nstages * (size_t)s->m;
    double scale = pol->sim_s_per_plan_s > 0 ? pol->sim_s_per_plan_s : 1.0;
    if (pol->postpone_warmup) {
        double *orig = pg_xcalloc(n + 1, sizeof *orig);
        for (int r = 0; r < s->pp; r++)
            for (int i = 0; i < s->nops[r]; i++)
                if (s->ops[r][i].kind == OP_F)
                    orig[(size_t)s->ops[r][i].stage * (size_t)s->m + (size_t)s->ops[r][i].mb] = t.start[r][i];
        out->npostponed = plan_postpone_warmup(s, &t, pol->t_comm);
        out->f_release_s = pg_xcalloc(n + 1, sizeof *out->f_release_s);
        for (int r = 0; r < s->pp; r++)
            for (int i = 0; i < s->nops[r]; i++) {
                size_t k = (size_t)s->ops[r][i].stage * (size_t)s->m + (size_t)s->ops[r][i].mb;
                if (s->ops[r][i].kind == OP_F && t.start[r][i] > orig[k]) out->f_release_s[k] = t.start[r][i] * scale;
            }
        free(orig);
    }
    out->reload_at = pg_xmalloc((n + 1) * sizeof *out->reload_at);
    out->reload_release_s = pg_xcalloc(n + 1, sizeof *out->reload_release_s);
    for (size_t k = 0; k < n; k++)
        out->reload_at[k] = -1;
    int *f_idx = pg_xmalloc((n + 1) * sizeof *f_idx);
    for (int r = 0; r < s->pp; r++) {
        const sched_op *ops = s->ops[r];
        po_reload *rl = pg_xmalloc(((size_t)s->nops[r] + 1) * sizeof *rl);
        int nr = 0;
        double bw = pol->copy_bw[r], lat_s = pol->copy_lat_s ? pol->copy_lat_s[r] : 0.0;
        for (int i = 0; i < s->nops[r]; i++) {
            size_t k = (size_t)ops[i].stage * (size_t)s->m + (size_t)ops[i].mb;
            if (ops[i].kind == OP_F) {
                f_idx[k] = i;
                continue;
            }
            if (ops[i].kind != OP_B && ops[i].kind != OP_BW) continue;
            plan_choice c = plan_get(out, ops[i].stage, ops[i].mb);
            if (!c.offload) continue;
            double bytes = pol->offload_bytes ? pol->offload_bytes[ops[i].stage] : 0.0;
            double one_way_s = lat_s + (bw > 0 ? bytes / bw : 0.0);
            double c_start = t.start[r][i], c_dur = t.end[r][i] - t.start[r][i];
            double gap_s = c_start - c_dur - t.end[r][f_idx[k]];
            if (bw <= 0 || gap_s <= PLAN_PO_LIFESPAN_ROUND_TRIPS * 2.0 * one_way_s) {
                c.offload = 0;   /* too short a lifespan to free anything */
                plan_set(out, ops[i].stage, ops[i].mb, c);
                out->nlifespan_skipped++;
                continue;
            }
            /* the reload must end one consumer duration before the consumer */
            double latest_start_s = c_start - c_dur - one_way_s;
            int j = f_idx[k] + 1;
            while (j + 1 < i && t.start[r][j + 1] <= latest_start_s)
                j++;
            rl[nr++] = (po_reload){i, f_idx[k], j, k};
            out->reload_release_s[k] = latest_start_s * scale;
        }
        qsort(rl, (size_t)nr, sizeof *rl, by_consumer);
        for (int q = nr - 2; q >= 0; q--)   /* one H2D queue: reloads in consumer order */
            if (rl[q + 1].trigger < rl[q].trigger)
                rl[q].trigger = rl[q + 1].trigger > rl[q].f_idx + 1 ? rl[q + 1].trigger : rl[q].f_idx + 1;
        for (int q = 0; q < nr; q++)
            out->reload_at[rl[q].item] = rl[q].trigger;
        free(rl);
    }
    free(f_idx);
    sched_times_free(s, &t);
    return 0;
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
    if (pol->offload_chunks < 0 || pol->offload_chunks > (s->v > 0 ? s->v : 1))
        return pg_fail(st, PG_EXIT_INPUT, "offload chunks %d is outside [0, %d] (chunks per rank)",
                       pol->offload_chunks, s->v > 0 ? s->v : 1);
    int rc = 0;
    if (pol->offload == PLAN_OFFLOAD_SELECTIVE && pol->offload_chunks > 0)
        select_chunks(s, pol->offload_chunks, out);
    else if (pol->offload == PLAN_OFFLOAD_SELECTIVE && pol->offload_ratio > 0)
        rc = select_offloads(s, pol, out, st);
    if (rc == 0 && pol->copy_bw != NULL && out->noffload > 0)
        rc = apply_po_rules(s, pol, out, st);
    return rc;
}
