/* plan_postpone.c: the timing PipeOffload's copy rules are decided on
 * (plan.h): per-stage op durations, and the warm-up postponement.
 *
 * plan_eval_times replays a schedule's fixed orders as soon as possible, as
 * sched_eval_ideal does, but with each stage's own F, B and W seconds (the
 * first and last stages of a model carry the embedding and the head, so a
 * single per-rank duration would misplace every copy slot by their
 * difference).
 *
 * plan_postpone_warmup is PipeOffload's postpone_forward_in_warmup (read in
 * the repository's zerobubble/scheduler/offloading.py, not copied): a
 * forward in a rank's warm-up that is not needed yet only raises the peak
 * before any copy can free memory, so each warm-up forward is moved as late
 * as it can go without delaying anything: before the first backward of its
 * rank with one backward's duration to spare (the repository's margin), and
 * before the same microbatch's forward of the next stage less the transfer
 * time.  Ranks are handled from the last to the first, so the next stage's
 * forward has already found its place; the walk back through a rank's
 * warm-up stops at the forward of microbatch 0 of the rank's last chunk
 * (everything before it is needed as soon as it runs).  Only start and end
 * times change: the order is the schedule's.
 */
#include "schedule/plan.h"

#include <stdlib.h>
#include <string.h>

#include "schedule/sched_index.h"

static double op_dur(const sched_op *op, const double *f_s, const double *b_s, const double *w_s)
{
    switch ((op_kind)op->kind) {
    case OP_F: return f_s[op->stage];
    case OP_B: return b_s[op->stage];
    case OP_W: return w_s[op->stage];
    case OP_BW: return b_s[op->stage] + w_s[op->stage];
    default: return 0.0;
    }
}

int plan_eval_times(const schedule *s, const double *f_s, const double *b_s, const double *w_s, double t_comm,
                    sched_times *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    sched_index ix;
    int rc = sched_index_build(s, &ix, st);
    if (rc) return rc;
    int *order = pg_xmalloc(((size_t)ix.total + 1) * sizeof *order);
    int *next = pg_xcalloc((size_t)s->pp + 1, sizeof *next);
    if (sched_index_replay(s, &ix, order, next) < ix.total) {
        rc = sched_index_deadlock_msg(s, &ix, next, st);
    } else {
        out->start = pg_xcalloc((size_t)s->pp + 1, sizeof *out->start);
        out->end = pg_xcalloc((size_t)s->pp + 1, sizeof *out->end);
        for (int r = 0; r < s->pp; r++) {
            out->start[r] = pg_xcalloc((size_t)s->nops[r] + 1, sizeof(double));
            out->end[r] = pg_xcalloc((size_t)s->nops[r] + 1, sizeof(double));
        }
        double *end_of = pg_xcalloc((size_t)ix.total + 1, sizeof *end_of);
        double *rank_free = pg_xcalloc((size_t)s->pp + 1, sizeof *rank_free);
        double last = 0;
        for (int n = 0; n < ix.total; n++) {
            int g = order[n], r = ix.op_rank[g], i = g - ix.rank_base[r];
            double t0 = rank_free[r];
            int p = ix.pred[g];
            if (p >= 0) {
                double ready = end_of[p] + (ix.op_rank[p] != r ? t_comm : 0.0);
                if (ready > t0) t0 = ready;
            }
            double t1 = t0 + op_dur(&s->ops[r][i], f_s, b_s, w_s);
            out->start[r][i] = t0;
            out->end[r][i] = t1;
            end_of[g] = t1;
            rank_free[r] = t1;
            if (t1 > last) last = t1;
        }
        out->makespan = last;
        free(end_of);
        free(rank_free);
    }
    free(order);
    free(next);
    sched_index_free(&ix);
    return rc;
}

/* Index of (stage, mb)'s F in its rank's list, by a scan (warm-ups are short
 * and this runs once per plan). */
static int f_index(const schedule *s, int rank, int stage, int mb)
{
    for (int i = 0; i < s->nops[rank]; i++)
        if (s->ops[rank][i].kind == OP_F && s->ops[rank][i].stage == stage && s->ops[rank][i].mb == mb) return i;
    return -1;
}

int plan_postpone_warmup(const schedule *s, sched_times *t, double t_comm)
{
    int moved = 0;
    int last_chunk = (s->v > 0 ? s->v : 1) - 1;
    for (int r = s->pp - 1; r >= 0; r--) {
        const sched_op *ops = s->ops[r];
        int first_b = -1;
        for (int i = 0; i < s->nops[r] && first_b < 0; i++)
            if (ops[i].kind == OP_B || ops[i].kind == OP_BW) first_b = i;
        if (first_b < 1) continue;
        double b_dur = t->end[r][first_b] - t->start[r][first_b];
        double cur_s = t->start[r][first_b] - b_dur;   /* the repository's margin of one backward */
        for (int i = first_b - 1; i >= 0; i--) {
            const sched_op *op = &ops[i];
            if (op->kind == OP_F && sched_stage_chunk(s, op->stage) == last_chunk && op->mb == 0) break;
            double cost = t->end[r][i] - t->start[r][i];
            double latest = cur_s - cost;
            if (op->kind == OP_F && op->stage + 1 < s->nstages) {
                int nr = s->stage_rank[op->stage + 1];
                int j = f_index(s, nr, op->stage + 1, op->mb);
                if (j >= 0) {
                    double by_next = t->start[nr][j] - (nr != r ? t_comm : 0.0) - cost;
                    if (by_next < latest) latest = by_next;
                }
            }
            if (latest > t->start[r][i]) {
                t->start[r][i] = latest;
                t->end[r][i] = latest + cost;
                moved++;
            }
            cur_s = t->start[r][i];
        }
    }
    return moved;
}
