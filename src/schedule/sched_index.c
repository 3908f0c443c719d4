/* sched_index.c: locating ops, structural checks and the abstract replay.
 * See sched_index.h. */
#include <stdlib.h>
#include "schedule/sched_index.h"

#include <stdio.h>
#include <string.h>

#include "util/strbuf.h"

/* Room kept free in a status message for the "N more" tail. */
#define MSG_TAIL_RESERVE 96

void sched_index_free(sched_index *ix)
{
    free(ix->rank_base);
    for (int k = 0; k < OP_KIND_COUNT; k++)
        free(ix->id[k]);
    free(ix->pred);
    free(ix->op_rank);
    memset(ix, 0, sizeof *ix);
}

sched_op sched_index_op(const schedule *s, const sched_index *ix, int g)
{
    int r = ix->op_rank[g];
    return s->ops[r][g - ix->rank_base[r]];
}

static int fail_op(const schedule *s, sched_index *ix, pg_status *st, const char *fmt_before, sched_op op,
                   const char *after)
{
    char buf[96];
    sched_index_free(ix);
    return pg_fail(st, PG_EXIT_INPUT, "schedule '%s': %s%s%s", s->name, fmt_before, sched_op_str(op, buf, sizeof buf),
                   after);
}

static int check_shape(const schedule *s, pg_status *st)
{
    if (s->pp < 1 || s->v < 1 || s->m < 1)
        return pg_fail(st, PG_EXIT_INPUT, "schedule '%s': needs pp >= 1, v >= 1 and m >= 1 (got pp %d, v %d, m %d)",
                       s->name, s->pp, s->v, s->m);
    if (s->nstages != s->pp * s->v)
        return pg_fail(st, PG_EXIT_INPUT, "schedule '%s': %d stages, expected pp * v = %d", s->name, s->nstages,
                       s->pp * s->v);
    if ((long long)s->nstages * s->m * OP_KIND_COUNT > (long long)INT32_MAX / 2)
        return pg_fail(st, PG_EXIT_INPUT, "schedule '%s': %d stages x %d microbatches is too large", s->name,
                       s->nstages, s->m);
    for (int i = 0; i < s->nstages; i++)
        if (s->stage_rank[i] < 0 || s->stage_rank[i] >= s->pp)
            return pg_fail(st, PG_EXIT_INPUT, "schedule '%s': stage %d placed on rank %d, outside 0..%d", s->name, i,
                           s->stage_rank[i], s->pp - 1);
    return 0;
}

/* Every op present once, on its stage's rank, each backward fused or split. */
static int check_ops(const schedule *s, sched_index *ix, pg_status *st)
{
    for (int r = 0; r < s->pp; r++)
        for (int i = 0; i < s->nops[r]; i++) {
            sched_op op = s->ops[r][i];
            if (op.kind >= OP_KIND_COUNT) {
                /* formatted only on failure: this loop runs once per op */
                char where[64];
                snprintf(where, sizeof where, " (rank %d, position %d)", r, i);
                sched_index_free(ix);
                return pg_fail(st, PG_EXIT_INPUT, "schedule '%s': op kind %d is unknown%s", s->name, (int)op.kind,
                               where);
            }
            if (op.stage < 0 || op.stage >= s->nstages)
                return fail_op(s, ix, st, "", op, " has a stage outside the model");
            if (op.mb < 0 || op.mb >= s->m)
                return fail_op(s, ix, st, "", op, " has a microbatch outside 0..m-1");
            if (s->stage_rank[op.stage] != r) {
                char msg[160];
                snprintf(msg, sizeof msg, " is on rank %d but stage %d is placed on rank %d", r, (int)op.stage,
                         s->stage_rank[op.stage]);
                return fail_op(s, ix, st, "", op, msg);
            }
            int *slot = &ix->id[op.kind][op.stage * s->m + op.mb];
            if (*slot >= 0)
                return fail_op(s, ix, st, "", op, " appears twice");
            *slot = ix->rank_base[r] + i;
        }
    for (int stg = 0; stg < s->nstages; stg++)
        for (int j = 0; j < s->m; j++) {
            int k = stg * s->m + j;
            sched_op op = {.stage = stg, .mb = j, .kind = OP_F};
            if (ix->id[OP_F][k] < 0)
                return fail_op(s, ix, st, "", op, " is missing");
            int b = ix->id[OP_B][k] >= 0, w = ix->id[OP_W][k] >= 0, bw = ix->id[OP_BW][k] >= 0;
            if (bw && (b || w)) {
                op.kind = OP_BW;
                return fail_op(s, ix, st, "", op, b ? " and B of the same stage and mb are both present (a backward is fused or split, not both)"
                                                    : " and W of the same stage and mb are both present (a backward is fused or split, not both)");
            }
            if (!bw && !b && !w) {
                op.kind = OP_BW;
                return fail_op(s, ix, st, "backward (BW, or B and W) of ", op, " is missing");
            }
            if (b != w) {
                op.kind = b ? OP_W : OP_B;
                return fail_op(s, ix, st, "", op, b ? " is missing (its B is present)" : " is missing (its W is present)");
            }
        }
    return 0;
}

static void fill_preds(const schedule *s, sched_index *ix)
{
    for (int g = 0; g < ix->total; g++) {
        sched_op op = sched_index_op(s, ix, g);
        int k = op.stage * s->m + op.mb, p = -1;
        switch ((op_kind)op.kind) {
        case OP_F:
            p = op.stage > 0 ? ix->id[OP_F][k - s->m] : -1;
            break;
        case OP_W:
            p = ix->id[OP_B][k];
            break;
        case OP_B:
        case OP_BW:
            if (op.stage == s->nstages - 1)
                p = ix->id[OP_F][k];
            else
                p = ix->id[OP_B][k + s->m] >= 0 ? ix->id[OP_B][k + s->m] : ix->id[OP_BW][k + s->m];
            break;
        default:
            break;
        }
        ix->pred[g] = p;
    }
}

int sched_index_build(const schedule *s, sched_index *ix, pg_status *st)
{
    memset(ix, 0, sizeof *ix);
    int rc = check_shape(s, st);
    if (rc)
        return rc;
    ix->nstages = s->nstages;
    ix->m = s->m;
    ix->rank_base = pg_xcalloc((size_t)s->pp + 1, sizeof *ix->rank_base);
    for (int r = 0; r < s->pp; r++) {
        if (s->nops[r] < 0 || (long long)ix->rank_base[r] + s->nops[r] > INT32_MAX / 2) {
            sched_index_free(ix);
            return pg_fail(st, PG_EXIT_INPUT, "schedule '%s': rank %d has a bad op count", s->name, r);
        }
        ix->rank_base[r + 1] = ix->rank_base[r] + s->nops[r];
    }
    ix->total = ix->rank_base[s->pp];
    size_t cells = (size_t)s->nstages * (size_t)s->m;
    for (int k = 0; k < OP_KIND_COUNT; k++) {
        ix->id[k] = pg_xmalloc(cells * sizeof(int));
        for (size_t c = 0; c < cells; c++)
            ix->id[k][c] = -1;
    }
    ix->pred = pg_xmalloc(((size_t)ix->total + 1) * sizeof(int));
    ix->op_rank = pg_xmalloc(((size_t)ix->total + 1) * sizeof(int));
    for (int r = 0; r < s->pp; r++)
        for (int i = 0; i < s->nops[r]; i++)
            ix->op_rank[ix->rank_base[r] + i] = r;
    rc = check_ops(s, ix, st);
    if (rc)
        return rc; /* check_ops freed the index */
    fill_preds(s, ix);
    return 0;
}

/* Linear in the ops: a rank is revisited only when the op it is stuck on may
 * have become runnable (its predecessor just ran), instead of sweeping every
 * rank until nothing moves, which cost ranks x sweeps: with the backward
 * chain running against the sweep order, a sweep could advance a single op
 * (quadratic on files of thousands of ranks). */
int sched_index_replay(const schedule *s, const sched_index *ix, int *order, int *next)
{
    return sched_index_replay_counted(s, ix, order, next, NULL);
}

int sched_index_replay_counted(const schedule *s, const sched_index *ix, int *order, int *next, long *checks)
{
    long tried = 0;
    size_t total = (size_t)ix->total;
    char *done = pg_xcalloc(total + 1, 1);
    /* dependents of each op (the ops whose predecessor it is), as CSR */
    int *first = pg_xcalloc(total + 2, sizeof *first);
    int *dep = pg_xmalloc((total + 1) * sizeof *dep);
    for (size_t g = 0; g < total; g++)
        if (ix->pred[g] >= 0)
            first[ix->pred[g] + 1]++;
    for (size_t g = 0; g < total; g++)
        first[g + 1] += first[g];
    int *fill = pg_xmalloc((total + 1) * sizeof *fill);
    memcpy(fill, first, (total + 1) * sizeof *fill);
    for (size_t g = 0; g < total; g++)
        if (ix->pred[g] >= 0)
            dep[fill[ix->pred[g]]++] = (int)g;
    free(fill);
    /* ranks to try, each at most once on the stack at a time */
    int *stack = pg_xmalloc(((size_t)s->pp + 1) * sizeof *stack);
    char *queued = pg_xcalloc((size_t)s->pp + 1, 1);
    int top = 0, ran = 0;
    for (int r = s->pp - 1; r >= 0; r--) {
        next[r] = 0;
        stack[top++] = r;
        queued[r] = 1;
    }
    while (top > 0) {
        int r = stack[--top];
        queued[r] = 0;
        while (next[r] < s->nops[r]) {
            int g = ix->rank_base[r] + next[r];
            tried++;
            if (ix->pred[g] >= 0 && !done[ix->pred[g]])
                break;
            done[g] = 1;
            order[ran++] = g;
            next[r]++;
            for (int k = first[g]; k < first[g + 1]; k++) {
                int d = dep[k], rd = ix->op_rank[d];
                if (!queued[rd] && d == ix->rank_base[rd] + next[rd]) {   /* rd is stuck on d */
                    stack[top++] = rd;
                    queued[rd] = 1;
                }
            }
        }
    }
    free(queued);
    free(stack);
    free(dep);
    free(first);
    free(done);
    if (checks)
        *checks = tried;
    return ran;
}

int sched_index_deadlock_msg(const schedule *s, const sched_index *ix, const int *next, pg_status *st)
{
    strbuf sb;
    sb_init(&sb);
    sb_appendf(&sb, "schedule '%s': deadlock:", s->name);
    int listed = 0, blocked = 0;
    for (int r = 0; r < s->pp; r++) {
        if (next[r] >= s->nops[r])
            continue;
        blocked++;
        if (sb.len + MSG_TAIL_RESERVE >= PG_MSG_MAX)
            continue;
        int g = ix->rank_base[r] + next[r];
        char a[96], b[96];
        sched_op op = sched_index_op(s, ix, g);
        sched_op pr = sched_index_op(s, ix, ix->pred[g]);
        sb_appendf(&sb, "%s rank %d blocked at %s waiting for %s", listed ? ";" : "", r, sched_op_str(op, a, sizeof a),
                   sched_op_str(pr, b, sizeof b));
        if (ix->op_rank[ix->pred[g]] == r)
            sb_append(&sb, " (later on the same rank)");
        listed++;
    }
    if (listed < blocked)
        sb_appendf(&sb, "; ... %d more ranks blocked", blocked - listed);
    int rc = pg_fail(st, PG_EXIT_DEADLOCK, "%s", sb.data);
    sb_free(&sb);
    return rc;
}

int sched_replay_build(const schedule *s, sched_replay *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    int rc = sched_index_build(s, &out->ix, st);
    if (rc)
        return rc;
    out->order = pg_xmalloc(((size_t)out->ix.total + 1) * sizeof *out->order);
    int *next = pg_xcalloc((size_t)s->pp + 1, sizeof *next);
    if (sched_index_replay(s, &out->ix, out->order, next) < out->ix.total)
        rc = sched_index_deadlock_msg(s, &out->ix, next, st);
    free(next);
    if (rc)
        sched_replay_free(out);
    return rc;
}

void sched_replay_free(sched_replay *r)
{
    sched_index_free(&r->ix);
    free(r->order);
    memset(r, 0, sizeof *r);
}
