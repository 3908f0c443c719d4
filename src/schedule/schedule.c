/* schedule.c: the schedule container, dependency rule and op names.
 *
 * The container is deliberately plain (arrays indexed by rank) so generators,
 * the importer and the simulator can walk it without helper iterators. */
#include <stdlib.h>
#include "schedule/schedule.h"

#include <stdio.h>
#include <string.h>

/* First allocation of a rank's op list; lists then double. */
#define SCHED_INITIAL_CAP 16

static void forget_cache(const schedule *s);

void sched_init(schedule *s, const char *name, int pp, int v, int m)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name ? name : "");
    s->pp = pp > 0 ? pp : 0;
    s->v = v > 0 ? v : 0;
    s->nstages = s->pp * s->v;
    s->m = m;
    if (s->nstages > 0)
        s->stage_rank = pg_xcalloc((size_t)s->nstages, sizeof *s->stage_rank);
    if (s->pp > 0) {
        s->nops = pg_xcalloc((size_t)s->pp, sizeof *s->nops);
        s->cap = pg_xcalloc((size_t)s->pp, sizeof *s->cap);
        s->ops = pg_xcalloc((size_t)s->pp, sizeof *s->ops);
    }
}

void sched_free(schedule *s)
{
    if (!s)
        return;
    forget_cache(s);
    for (int r = 0; r < s->pp && s->ops; r++)
        free(s->ops[r]);
    free(s->ops);
    free(s->cap);
    free(s->nops);
    free(s->stage_rank);
    memset(s, 0, sizeof *s);
}

void sched_push(schedule *s, int rank, op_kind kind, int stage, int mb)
{
    if (rank < 0 || rank >= s->pp)
        return; /* callers validate ranks; an out-of-range push is a bug we must not turn into a write */
    size_t need = (size_t)s->nops[rank] + 1;
    if (need > s->cap[rank]) {
        size_t cap = s->cap[rank];
        pg_grow((void **)&s->ops[rank], &cap, need < SCHED_INITIAL_CAP ? SCHED_INITIAL_CAP : need,
                sizeof(sched_op));
        s->cap[rank] = cap;
    }
    sched_op *op = &s->ops[rank][s->nops[rank]++];
    op->stage = stage;
    op->mb = mb;
    op->kind = (uint8_t)kind;
    op->overlap_next = 0;
}

void sched_mark_overlap_next(schedule *s, int rank)
{
    if (rank >= 0 && rank < s->pp && s->nops[rank] > 0)
        s->ops[rank][s->nops[rank] - 1].overlap_next = 1;
}

int sched_total_ops(const schedule *s)
{
    int n = 0;
    for (int r = 0; r < s->pp; r++)
        n += s->nops[r];
    return n;
}

void sched_copy(schedule *dst, const schedule *src)
{
    sched_init(dst, src->name, src->pp, src->v, src->m);
    if (src->nstages > 0)
        memcpy(dst->stage_rank, src->stage_rank, (size_t)src->nstages * sizeof *src->stage_rank);
    for (int r = 0; r < src->pp; r++)
        for (int i = 0; i < src->nops[r]; i++) {
            sched_op op = src->ops[r][i];
            sched_push(dst, r, (op_kind)op.kind, op.stage, op.mb);
            if (op.overlap_next)
                sched_mark_overlap_next(dst, r);
        }
}

int sched_equal(const schedule *a, const schedule *b)
{
    if (a->pp != b->pp || a->v != b->v || a->nstages != b->nstages || a->m != b->m)
        return 0;
    if (a->nstages > 0 && memcmp(a->stage_rank, b->stage_rank, (size_t)a->nstages * sizeof *a->stage_rank) != 0)
        return 0;
    for (int r = 0; r < a->pp; r++) {
        if (a->nops[r] != b->nops[r])
            return 0;
        for (int i = 0; i < a->nops[r]; i++) {
            sched_op x = a->ops[r][i], y = b->ops[r][i];
            if (x.stage != y.stage || x.mb != y.mb || x.kind != y.kind || x.overlap_next != y.overlap_next)
                return 0;
        }
    }
    return 1;
}

int sched_is_split(const schedule *s)
{
    for (int r = 0; r < s->pp; r++)
        for (int i = 0; i < s->nops[r]; i++)
            if (s->ops[r][i].kind == OP_B || s->ops[r][i].kind == OP_W)
                return 1;
    return 0;
}

/* Where each (stage, mb)'s B or BW sits in its rank's list, remembered for
 * the last schedule asked about: sched_pred is called once per op by the
 * simulator, and a scan per call would make that quadratic.  Every answer is
 * checked against the op actually at the remembered position, and the table
 * is rebuilt when the check fails, so edits to the schedule cannot make it
 * lie.  One cache per process: pipegrid runs no two evaluations at once
 * (SimGrid runs its actors one at a time, even on thread contexts), and a
 * thread-local table would leak one copy per actor thread. */
typedef struct bwd_cache {
    const schedule *s;
    int nstages, m;
    int *pos;        /* [nstages * m] position in the stage's rank list, or -1 */
    size_t cap;
} bwd_cache;
static bwd_cache cache;

/* Beyond this many (stage, mb) pairs we scan instead of caching. */
#define BWD_CACHE_MAX_CELLS (64u * 1024 * 1024)

static int cached_backward(const schedule *s, int stage, int mb, op_kind *kind)
{
    if (cache.s != s || cache.nstages != s->nstages || cache.m != s->m || !cache.pos)
        return 0;
    int r = s->stage_rank[stage], i = cache.pos[(size_t)stage * (size_t)s->m + (size_t)mb];
    if (r < 0 || r >= s->pp || i < 0 || i >= s->nops[r])
        return 0;
    const sched_op *o = &s->ops[r][i];
    if (o->stage != stage || o->mb != mb || (o->kind != OP_B && o->kind != OP_BW))
        return 0;
    *kind = (op_kind)o->kind;
    return 1;
}

static void rebuild_cache(const schedule *s)
{
    size_t cells = (size_t)s->nstages * (size_t)s->m;
    pg_grow((void **)&cache.pos, &cache.cap, cells, sizeof *cache.pos);
    for (size_t c = 0; c < cells; c++)
        cache.pos[c] = -1;
    cache.s = s;
    cache.nstages = s->nstages;
    cache.m = s->m;
    for (int r = 0; r < s->pp; r++)
        for (int i = 0; i < s->nops[r]; i++) {
            const sched_op *o = &s->ops[r][i];
            if ((o->kind == OP_B || o->kind == OP_BW) && o->stage >= 0 && o->stage < s->nstages && o->mb >= 0 &&
                o->mb < s->m && s->stage_rank[o->stage] == r)
                cache.pos[(size_t)o->stage * (size_t)s->m + (size_t)o->mb] = i;
        }
}

static void forget_cache(const schedule *s)
{
    if (cache.s == s) {
        free(cache.pos);
        memset(&cache, 0, sizeof cache);
    }
}

/* Kind of the backward that carries the input gradient of (stage, mb): a
 * schedule may fuse some backwards and split others (DualPipe does), so look
 * at the op actually present on the rank holding the stage. */
static op_kind backward_kind_of(const schedule *s, int stage, int mb)
{
    op_kind k;
    if (stage >= 0 && stage < s->nstages && mb >= 0 && mb < s->m && s->m > 0 &&
        (size_t)s->nstages * (size_t)s->m <= BWD_CACHE_MAX_CELLS) {
        if (cached_backward(s, stage, mb, &k))
            return k;
        rebuild_cache(s);
        if (cached_backward(s, stage, mb, &k))
            return k;
    } else if (stage >= 0 && stage < s->nstages) {
        int r = s->stage_rank[stage];
        if (r >= 0 && r < s->pp)
            for (int i = 0; i < s->nops[r]; i++) {
                const sched_op *o = &s->ops[r][i];
                if (o->stage == stage && o->mb == mb && (o->kind == OP_B || o->kind == OP_BW))
                    return (op_kind)o->kind;
            }
    }
    return sched_is_split(s) ? OP_B : OP_BW;
}

int sched_pred(const schedule *s, sched_op op, sched_op *pred)
{
    sched_op p = {.stage = op.stage, .mb = op.mb, .kind = OP_F};
    switch ((op_kind)op.kind) {
    case OP_F:
        if (op.stage <= 0)
            return 0;
        p.stage = op.stage - 1;
        break;
    case OP_W:
        p.kind = OP_B;
        break;
    case OP_B:
    case OP_BW:
        if (op.stage >= s->nstages - 1)
            break; /* the loss turn: backward of the last stage follows its forward */
        p.stage = op.stage + 1;
        p.kind = (uint8_t)backward_kind_of(s, p.stage, op.mb);
        break;
    default:
        return 0;
    }
    if (pred)
        *pred = p;
    return 1;
}

const char *op_kind_name(op_kind k)
{
    static const char *const names[OP_KIND_COUNT] = {"F", "B", "W", "BW"};
    return (unsigned)k < OP_KIND_COUNT ? names[k] : "?";
}

char *sched_op_str(sched_op op, char *buf, int len)
{
    if (buf && len > 0)
        snprintf(buf, (size_t)len, "%s(stage %d, mb %d)", op_kind_name((op_kind)op.kind), (int)op.stage,
                 (int)op.mb);
    return buf;
}
