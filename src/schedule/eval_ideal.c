/* eval_ideal.c: the seed papers' timing model, without SimGrid.
 *
 * An op starts when its rank is free and its predecessor has ended (plus
 * t_comm when the predecessor ran on another rank); it lasts t/v for its kind,
 * a fused BW lasting (t_b + t_w)/v.  The repository this model comes from
 * charges BW only t_b (a list-concatenation slip); we charge both on purpose. */
#include <stdlib.h>
#include "schedule/sched_index.h"

#include <float.h>
#include <string.h>

static double op_duration(op_kind k, double t_f, double t_b, double t_w, int v)
{
    switch (k) {
    case OP_F:
        return t_f / v;
    case OP_B:
        return t_b / v;
    case OP_W:
        return t_w / v;
    case OP_BW:
        return (t_b + t_w) / v;
    default:
        return 0.0;
    }
}

static void times_alloc(const schedule *s, sched_times *t)
{
    memset(t, 0, sizeof *t);
    t->start = pg_xcalloc((size_t)s->pp, sizeof *t->start);
    t->end = pg_xcalloc((size_t)s->pp, sizeof *t->end);
    for (int r = 0; r < s->pp; r++) {
        t->start[r] = pg_xcalloc((size_t)s->nops[r] + 1, sizeof(double));
        t->end[r] = pg_xcalloc((size_t)s->nops[r] + 1, sizeof(double));
    }
}

void sched_times_free(const schedule *s, sched_times *t)
{
    if (!t)
        return;
    for (int r = 0; r < s->pp && t->start; r++) {
        free(t->start[r]);
        free(t->end[r]);
    }
    free(t->start);
    free(t->end);
    memset(t, 0, sizeof *t);
}

int sched_eval_ideal(const schedule *s, double t_f, double t_b, double t_w, double t_comm, sched_times *out,
                     pg_status *st)
{
    /* The uniform case of sched_eval_staged: every stage takes the same
     * time per kind, a rank's share divided over its v stages. */
    int nst = s->nstages > 0 ? s->nstages : 1;
    double (*dur)[OP_KIND_COUNT] = pg_xcalloc((size_t)nst, sizeof *dur);
    for (int k = 0; k < nst; k++)
        for (int kind = 0; kind < OP_KIND_COUNT; kind++)
            dur[k][kind] = op_duration((op_kind)kind, t_f, t_b, t_w, s->v);
    int rc = sched_eval_staged(s, (const double (*)[OP_KIND_COUNT])dur, t_comm, out, st);
    free(dur);
    return rc;
}

static int eval(const schedule *s, const double (*dur)[OP_KIND_COUNT], double t_comm, const double *t_comm_pair,
                sched_times *out, pg_status *st);

int sched_eval_staged(const schedule *s, const double (*dur)[OP_KIND_COUNT], double t_comm, sched_times *out,
                      pg_status *st)
{
    return eval(s, dur, t_comm, NULL, out, st);
}

int sched_eval_staged_pairs(const schedule *s, const double (*dur)[OP_KIND_COUNT], const double *t_comm_pair,
                            sched_times *out, pg_status *st)
{
    return eval(s, dur, 0.0, t_comm_pair, out, st);
}

/* The makespan and the longest rank's span of filled times. */
static void span_of(const schedule *s, sched_times *out)
{
    double first = DBL_MAX, last = -DBL_MAX;
    out->span = 0.0;
    for (int r = 0; r < s->pp; r++) {
        if (s->nops[r] == 0)
            continue;
        double a = out->start[r][0], b = out->end[r][s->nops[r] - 1];
        if (a < first)
            first = a;
        if (b > last)
            last = b;
        if (b - a > out->span)
            out->span = b - a;
    }
    out->makespan = last > first ? last - first : 0.0;
}

/* The ops in the replay's order rp (a dependency order): each starts when
 * its rank is free and its predecessor's output is in. */
static void eval_in_order(const schedule *s, const sched_replay *rp, const double (*dur)[OP_KIND_COUNT],
                          double t_comm, const double *t_comm_pair, sched_times *out)
{
    const sched_index *ix = &rp->ix;
    memset(out, 0, sizeof *out);
    times_alloc(s, out);
    double *end_of = pg_xmalloc(((size_t)ix->total + 1) * sizeof *end_of);
    double *rank_free = pg_xcalloc((size_t)s->pp, sizeof *rank_free);
    for (int n = 0; n < ix->total; n++) {
        int g = rp->order[n], r = ix->op_rank[g], i = g - ix->rank_base[r];
        double t0 = rank_free[r];
        int p = ix->pred[g];
        if (p >= 0) {
            int from = ix->op_rank[p];
            double ready = end_of[p] + (from == r ? 0.0 : t_comm_pair ? t_comm_pair[from * s->pp + r] : t_comm);
            if (ready > t0)
                t0 = ready;
        }
        const sched_op *op = &s->ops[r][i];
        double t1 = t0 + dur[op->stage][op->kind];
        out->start[r][i] = t0;
        out->end[r][i] = t1;
        end_of[g] = t1;
        rank_free[r] = t1;
    }
    span_of(s, out);
    free(end_of);
    free(rank_free);
}

static int eval(const schedule *s, const double (*dur)[OP_KIND_COUNT], double t_comm, const double *t_comm_pair,
                sched_times *out, pg_status *st)
{
    sched_replay rp;
    int rc = sched_replay_build(s, &rp, st);
    if (rc) {
        memset(out, 0, sizeof *out);   /* nothing for the caller to free */
        return rc;
    }
    eval_in_order(s, &rp, dur, t_comm, t_comm_pair, out);
    sched_replay_free(&rp);
    return 0;
}

void sched_eval_staged_pairs_replayed(const schedule *s, const sched_replay *rp, const double (*dur)[OP_KIND_COUNT],
                                      const double *t_comm_pair, sched_times *out)
{
    eval_in_order(s, rp, dur, 0.0, t_comm_pair, out);
}

/* ---- Megatron's combined 1F1B steps --------------------------------------- */

/* Whether op g (on rank r) has its input: then *t0 is raised to when it is
 * in (its predecessor's end, plus the transfer from another rank and what
 * that transfer waited for, late_of). */
static int input_in(const sched_index *ix, const double *end_of, const double *late_of, const unsigned char *known,
                    const double *t_comm_pair, int pp, int g, int r, double *t0)
{
    int p = ix->pred[g];
    if (p < 0)
        return 1;
    if (!known[p])
        return 0;
    int from = ix->op_rank[p];
    double ready = end_of[p] + (from == r ? 0.0 : t_comm_pair[from * pp + r] + late_of[p]);
    if (ready > *t0)
        *t0 = ready;
    return 1;
}

int sched_output_stage(const schedule *s, int kind, int stage)
{
    int to = kind == OP_F ? stage + 1 : kind == OP_B || kind == OP_BW ? stage - 1 : -1;
    return to >= 0 && to < s->nstages ? to : -1;
}

/* The rank op's output goes to, or -1: none, or its own rank r. */
static int send_rank(const schedule *s, const sched_op *op, int r)
{
    int to = sched_output_stage(s, op->kind, op->stage);
    return to < 0 || s->stage_rank[to] == r ? -1 : s->stage_rank[to];
}

/* Ranks run as far as their inputs allow, in sweeps until every op has run
 * or a sweep runs none (a pair's op cannot wait for a later one of its own
 * rank, so the order is not the plain replay's). */
int sched_eval_combined(const schedule *s, const double (*compute)[OP_KIND_COUNT], const double (*comm)[OP_KIND_COUNT],
                        const double (*step_comm)[OP_KIND_COUNT], const double *t_comm_pair,
                        const sched_step_sends *sends, sched_times *out, pg_status *st)
{
    if (step_comm == NULL)
        step_comm = comm;
    memset(out, 0, sizeof *out);
    sched_index ix;
    int rc = sched_index_build(s, &ix, st);
    if (rc)
        return rc;
    times_alloc(s, out);
    double *end_of = pg_xcalloc((size_t)ix.total + 1, sizeof *end_of);
    double *late_of = pg_xcalloc((size_t)ix.total + 1, sizeof *late_of);   /* its send's wait for a shared port */
    unsigned char *known = pg_xcalloc((size_t)ix.total + 1, 1);
    double *rank_free = pg_xcalloc((size_t)s->pp, sizeof *rank_free);
    int *next = pg_xcalloc((size_t)s->pp, sizeof *next);
    int done = 0, ran = 1;
    while (done < ix.total && ran) {
        ran = 0;
        for (int r = 0; r < s->pp; r++)
            while (next[r] < s->nops[r]) {
                int i = next[r], g = ix.rank_base[r] + i;
                const sched_op *a = &s->ops[r][i];
                int paired = a->overlap_next && i + 1 < s->nops[r];
                double t0 = rank_free[r];
                if (!input_in(&ix, end_of, late_of, known, t_comm_pair, s->pp, g, r, &t0) ||
                    (paired && !input_in(&ix, end_of, late_of, known, t_comm_pair, s->pp, g + 1, r, &t0)))
                    break;
                double c = compute[a->stage][a->kind], x = (paired ? step_comm : comm)[a->stage][a->kind];
                if (paired) {
                    const sched_op *b = &s->ops[r][i + 1];
                    c += compute[b->stage][b->kind];
                    x += step_comm[b->stage][b->kind];
                }
                double t1 = t0 + (paired ? (c > x ? c : x) : c + x);
                for (int k = 0; k <= paired; k++) {
                    out->start[r][i + k] = t0;
                    out->end[r][i + k] = t1;
                    end_of[g + k] = t1;
                    known[g + k] = 1;
                }
                if (paired && sends) {   /* both outputs leave at t1: through one port, each waits for the other */
                    int to_a = send_rank(s, a, r), to_b = send_rank(s, &s->ops[r][i + 1], r);
                    const int *port = sends->port_pair + (size_t)r * (size_t)s->pp;
                    if (to_a >= 0 && to_b >= 0 && port[to_a] == port[to_b]) {
                        late_of[g] = sends->xfer_pair[r * s->pp + to_b];
                        late_of[g + 1] = sends->xfer_pair[r * s->pp + to_a];
                    }
                }
                rank_free[r] = t1;
                next[r] += 1 + paired;
                done += 1 + paired;
                ran = 1;
            }
    }
    if (done < ix.total) {
        rc = sched_index_deadlock_msg(s, &ix, next, st);
        sched_times_free(s, out);
    } else {
        span_of(s, out);
    }
    free(end_of);
    free(late_of);
    free(known);
    free(rank_free);
    free(next);
    sched_index_free(&ix);
    return rc;
}

/* ---- activation count ---------------------------------------------------- */

typedef struct act_event {
    double t;
    int delta; /* +1 or -1, in units of one stage activation (1/v of a rank's share) */
} act_event;

static int act_event_cmp(const void *pa, const void *pb)
{
    const act_event *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return (a->delta > b->delta) - (a->delta < b->delta); /* releases first at equal times */
}

double sched_peak_activations(const schedule *s, const sched_times *t, int rank)
{
    if (rank < 0 || rank >= s->pp || s->nops[rank] == 0 || s->v < 1)
        return 0.0;
    int n = s->nops[rank];
    act_event *ev = pg_xmalloc((size_t)n * sizeof *ev);
    int k = 0;
    for (int i = 0; i < n; i++) {
        op_kind kind = (op_kind)s->ops[rank][i].kind;
        if (kind == OP_F)
            ev[k++] = (act_event){t->start[rank][i], +1};
        else if (kind == OP_W || kind == OP_BW)
            ev[k++] = (act_event){t->end[rank][i], -1};
    }
    qsort(ev, (size_t)k, sizeof *ev, act_event_cmp);
    int cur = 0, peak = 0;
    for (int i = 0; i < k; i++) {
        cur += ev[i].delta;
        if (cur > peak)
            peak = cur;
    }
    free(ev);
    return (double)peak / s->v;
}
