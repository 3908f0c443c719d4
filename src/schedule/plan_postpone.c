/* plan_postpone.c: the timing PipeOffload's copy rules are decided on
 * (plan.h): per-stage op durations, and the warm-up postponement.
 *
 * plan_eval_times replays a schedule's fixed orders as soon as possible
 * (sched_eval_staged) with each stage's own F, B and W seconds (the
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

int plan_eval_times(const schedule *s, const double *f_s, const double *b_s, const double *w_s, double t_comm,
                    sched_times *out, pg_status *st)
{
    /* schedule.h's staged evaluator, with each stage's own seconds per kind */
    int nst = s->nstages > 0 ? s->nstages : 1;
    double (*dur)[OP_KIND_COUNT] = pg_xcalloc((size_t)nst, sizeof *dur);
    for (int k = 0; k < s->nstages; k++) {
        dur[k][OP_F] = f_s[k];
        dur[k][OP_B] = b_s[k];
        dur[k][OP_W] = w_s[k];
        dur[k][OP_BW] = b_s[k] + w_s[k];
    }
    int rc = sched_eval_staged(s, (const double (*)[OP_KIND_COUNT])dur, t_comm, out, st);
    free(dur);
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
