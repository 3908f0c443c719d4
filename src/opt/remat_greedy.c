/* remat_greedy.c: the planner's heuristic (warm start and large-case
 * fallback, remat_ilp.h).
 *
 * Memory depends on the choices only (remat_ilp.h), so each rank is fixed on
 * its own: walk its ops in order; while the op at hand is over budget,
 * move one activation alive there one step down (keep -> selective -> full,
 * or keep -> backward recompute): the step with the fewest recompute
 * seconds per byte it frees, and among equals (the same option of the same
 * stage) the activation that lives longest (F start to B start for the
 * forward options, B end to W start for the backward one, in the
 * no-recomputation ideal timing).  A long-lived activation frees its bytes
 * at many ops for one recompute, so it is the best value first; this is
 * PipeOffload's "longest lifespan first" rule applied to recomputation.
 * Then undo: every step taken, shortest-lived
 * first, is reverted when the rank still fits without it (recompute time
 * only ever lengthens ops, so fewer recomputes never hurt the makespan).
 */
#include <stdlib.h>
#include <string.h>

#include "opt/remat_internal.h"

/* The next, more frugal forward option after f, or -1. */
static int fwd_next(const rm_stage *sc, int f)
{
    if (f == PLAN_FWD_KEEP && sc->fwd_ok[PLAN_FWD_SELECTIVE]) return PLAN_FWD_SELECTIVE;
    if (f != PLAN_FWD_FULL && sc->fwd_ok[PLAN_FWD_FULL]) return PLAN_FWD_FULL;
    return -1;
}

/* The previous, less frugal forward option before f, or -1. */
static int fwd_prev(const rm_stage *sc, int f)
{
    if (f == PLAN_FWD_FULL && sc->fwd_ok[PLAN_FWD_SELECTIVE]) return PLAN_FWD_SELECTIVE;
    if (f != PLAN_FWD_KEEP) return PLAN_FWD_KEEP;
    return -1;
}

static void add_bytes(double *mem, int from, int to, double bytes)
{
    for (int k = from; k < to; k++) mem[k] += bytes;
}

/* Whether mem + bytes over [from, to) stays within budget. */
static int fits_with(const double *mem, int from, int to, double bytes, double budget)
{
    for (int k = from; k < to; k++)
        if (mem[k] + bytes > budget) return 0;
    return 1;
}

/* Seconds per byte freed at op k, and the bytes, of moving pair p one step
 * down; 0 bytes when no step frees anything at k. */
static double step_cost(const rm_model *md, const plan_choice *c, int p, int k, int *bwd, double *bytes)
{
    const rm_stage *sc = &md->st[p / md->m];
    *bytes = 0;
    if (k >= md->idF[p] && k < md->idB[p]) {
        int to = fwd_next(sc, c[p].fwd);
        if (to < 0) return 0;
        *bwd = 0;
        *bytes = sc->f_alloc[c[p].fwd] - sc->f_alloc[to];
        return (sc->r_s[to] - sc->r_s[c[p].fwd]) / *bytes;
    }
    if (md->idW[p] >= 0 && k > md->idB[p] && k < md->idW[p] && sc->bwd_ok && c[p].bwd == PLAN_BWD_KEEP) {
        *bwd = 1;
        *bytes = sc->after_b[PLAN_BWD_KEEP] - sc->after_b[PLAN_BWD_RECOMPUTE];
        return sc->rw_s / *bytes;
    }
    return 0;
}

/* Ratios this close are the same option of the same kind of stage. */
#define SAME_RATIO_REL 1e-9

/* One step down, among the activations alive at op k, for the cheapest
 * seconds per byte freed (selective recomputation first: the attention core
 * is about half the bytes for a few percent of F), the longest-lived among
 * equals; 0 if none can step down. */
static int step_down(const rm_model *md, const int *live, int nlive, int k, const double *lf, const double *lb,
                     plan_choice *c, double *mem)
{
    int best = -1, best_bwd = 0;
    double best_ratio = 0, best_life = -1;
    for (int i = 0; i < nlive; i++) {
        int p = live[i], bwd = 0;
        double bytes;
        double ratio = step_cost(md, c, p, k, &bwd, &bytes);
        if (bytes <= 0) continue;
        double life = bwd ? lb[p] : lf[p];
        int better = best < 0 || ratio < best_ratio * (1 - SAME_RATIO_REL) ||
                     (ratio <= best_ratio * (1 + SAME_RATIO_REL) && life > best_life);
        if (better) best = p, best_bwd = bwd, best_ratio = ratio, best_life = life;
    }
    if (best < 0) return 0;
    const rm_stage *sc = &md->st[best / md->m];
    if (best_bwd) {
        add_bytes(mem, md->idB[best] + 1, md->idW[best],
                  sc->after_b[PLAN_BWD_RECOMPUTE] - sc->after_b[PLAN_BWD_KEEP]);
        c[best].bwd = PLAN_BWD_RECOMPUTE;
    } else {
        int to = fwd_next(sc, c[best].fwd);
        add_bytes(mem, md->idF[best], md->idB[best], sc->f_alloc[to] - sc->f_alloc[c[best].fwd]);
        c[best].fwd = (uint8_t)to;
    }
    return 1;
}

typedef struct undo_item {
    double life;
    int pair, bwd;
} undo_item;

static int undo_cmp(const void *a, const void *b)
{
    const undo_item *x = a, *y = b;
    if (x->life < y->life) return -1;
    if (x->life > y->life) return 1;
    return x->pair - y->pair;
}

/* Revert what is not needed, shortest-lived first. */
static void undo_unneeded(const rm_model *md, const double *lf, const double *lb, plan_choice *c, double *mem)
{
    undo_item *it = pg_xmalloc(((size_t)md->npairs * 2 + 1) * sizeof *it);
    int n = 0;
    for (int p = 0; p < md->npairs; p++) {
        if (c[p].fwd != PLAN_FWD_KEEP) it[n++] = (undo_item){lf[p], p, 0};
        if (c[p].bwd != PLAN_BWD_KEEP) it[n++] = (undo_item){lb[p], p, 1};
    }
    qsort(it, (size_t)n, sizeof *it, undo_cmp);
    for (int i = 0; i < n; i++) {
        int p = it[i].pair;
        const rm_stage *sc = &md->st[p / md->m];
        double budget = md->budget[md->s->stage_rank[p / md->m]];
        if (it[i].bwd) {
            double more = sc->after_b[PLAN_BWD_KEEP] - sc->after_b[PLAN_BWD_RECOMPUTE];
            if (fits_with(mem, md->idB[p] + 1, md->idW[p], more, budget)) {
                add_bytes(mem, md->idB[p] + 1, md->idW[p], more);
                c[p].bwd = PLAN_BWD_KEEP;
            }
            continue;
        }
        for (int prev; (prev = fwd_prev(sc, c[p].fwd)) >= 0;) {
            double more = sc->f_alloc[prev] - sc->f_alloc[c[p].fwd];
            if (!fits_with(mem, md->idF[p], md->idB[p], more, budget)) break;
            add_bytes(mem, md->idF[p], md->idB[p], more);
            c[p].fwd = (uint8_t)prev;
        }
    }
    free(it);
}

int rm_greedy(const rm_model *md, const double *lf, const double *lb, plan_choice *c, pg_status *st)
{
    double *mem = pg_xmalloc(((size_t)md->total + 1) * sizeof *mem);
    rm_memory(md, c, mem);
    /* Pairs alive at op k (F started, W or BW not ended), per rank. */
    int *live = pg_xmalloc(((size_t)md->npairs + 1) * sizeof *live);
    int *slot = pg_xmalloc(((size_t)md->npairs + 1) * sizeof *slot);
    int rc = 0;
    for (int r = 0; r < md->pp && rc == 0; r++) {
        int nlive = 0;
        for (int k = md->base[r]; k < md->base[r + 1]; k++) {
            sched_op o = md->op[k];
            int p = rm_pair(md, o.stage, o.mb);
            if (o.kind == OP_F) {
                slot[p] = nlive;
                live[nlive++] = p;
            }
            while (mem[k] > md->budget[r]) {
                if (!step_down(md, live, nlive, k, lf, lb, c, mem)) {
                    char buf[64];
                    rc = pg_fail(st, PG_EXIT_INPUT,
                                 "rank %d cannot fit at %s: %.0f bytes of activations and workspace even with "
                                 "recomputation, %.0f bytes allowed",
                                 r, sched_op_str(o, buf, sizeof buf), mem[k], md->budget[r]);
                    break;
                }
            }
            if (rc != 0) break;
            if (o.kind == OP_W || o.kind == OP_BW) {   /* the pair is gone: swap-remove */
                int i = slot[p], last = live[--nlive];
                live[i] = last;
                slot[last] = i;
            }
        }
    }
    if (rc == 0) undo_unneeded(md, lf, lb, c, mem);
    free(mem);
    free(live);
    free(slot);
    return rc;
}

/* ---- local search (rm_polish) ------------------------------------------- */

/* A plan's score: the makespan first, then the sum of all op ends, which
 * falls when a recompute leaves a path that is critical but not the only
 * critical one (the makespan alone is flat there and the search would
 * stop). */
typedef struct polish_score {
    double makespan_s, sum_end_s;
} polish_score;

/* Makespans this close are equal (rounding of the summed durations). */
#define POLISH_TIE_REL 1e-12

static polish_score score_of(const rm_model *md, const plan_choice *c, double *end)
{
    polish_score s;
    s.makespan_s = rm_times(md, c, NULL, end, NULL);
    s.sum_end_s = 0;
    for (int k = 0; k < md->total; k++) s.sum_end_s += end[k];
    return s;
}

static int score_better(polish_score a, polish_score b)
{
    double tie = POLISH_TIE_REL * (b.makespan_s > 0 ? b.makespan_s : 1.0);
    if (a.makespan_s < b.makespan_s - tie) return 1;
    if (a.makespan_s > b.makespan_s + tie) return 0;
    return a.sum_end_s < b.sum_end_s * (1 - POLISH_TIE_REL);
}

/* Adds to mem (the memory at every op start) what pair p's choice going
 * from a to b changes, the spans of rm_memory. */
static void apply_change(const rm_model *md, int p, plan_choice a, plan_choice b, double *mem)
{
    const rm_stage *sc = &md->st[p / md->m];
    add_bytes(mem, md->idF[p], md->idB[p], sc->f_alloc[b.fwd] - sc->f_alloc[a.fwd]);
    if (md->idW[p] >= 0) add_bytes(mem, md->idB[p] + 1, md->idW[p], sc->after_b[b.bwd] - sc->after_b[a.bwd]);
}

static int rank_fits(const rm_model *md, const double *mem, int r)
{
    for (int k = md->base[r]; k < md->base[r + 1]; k++)
        if (mem[k] > md->budget[r]) return 0;
    return 1;
}

static int same_choice(plan_choice a, plan_choice b)
{
    return a.fwd == b.fwd && a.bwd == b.bwd;
}

/* The choices a stage allows: [n], at most 6. */
static int stage_options(const rm_stage *sc, int split, plan_choice *opt)
{
    int n = 0;
    for (int f = PLAN_FWD_KEEP; f <= PLAN_FWD_SELECTIVE; f++) {
        if (!sc->fwd_ok[f]) continue;
        opt[n++] = (plan_choice){.fwd = (uint8_t)f};
        if (split && sc->bwd_ok) opt[n++] = (plan_choice){.fwd = (uint8_t)f, .bwd = PLAN_BWD_RECOMPUTE};
    }
    return n;
}

/* Try (p, q) at (a, b): keeps it and returns 1 when it fits and scores better. */
static int try_move(const rm_model *md, plan_choice *c, int p, int q, plan_choice a, plan_choice b, int r,
                    double *mem, double *end, polish_score *cur)
{
    plan_choice pa = c[p], qb = c[q];
    if (p == q) b = a, qb = pa;   /* one pair moved */
    apply_change(md, p, pa, a, mem);
    if (q != p) apply_change(md, q, qb, b, mem);
    c[p] = a;
    c[q] = b;
    if (rank_fits(md, mem, r)) {
        polish_score s = score_of(md, c, end);
        if (score_better(s, *cur)) {
            *cur = s;
            rm_memory(md, c, mem);   /* afresh: no drift from the added deltas */
            return 1;
        }
    }
    if (q != p) apply_change(md, q, b, qb, mem);
    apply_change(md, p, a, pa, mem);
    c[q] = qb;
    c[p] = pa;
    return 0;
}

/* Microbatches farther apart than this are not moved together (their
 * windows rarely overlap, so the pair move would not fit anyway). */
#define POLISH_REACH 12

int rm_polish(const rm_model *md, plan_choice *c, double deadline_s, double (*clock_s)(void))
{
    size_t n = (size_t)md->total + 1;
    double *end = pg_xmalloc(n * sizeof *end), *mem = pg_xmalloc(n * sizeof *mem);
    rm_memory(md, c, mem);
    polish_score cur = score_of(md, c, end);
    int split = sched_is_split(md->s);
    plan_choice opt[6];
    int moves = 0, improved = 1;
    while (improved && clock_s() < deadline_s) {
        improved = 0;
        for (int stage = 0; stage < md->S && clock_s() < deadline_s; stage++) {
            int r = md->s->stage_rank[stage];
            int nopt = stage_options(&md->st[stage], split, opt);
            for (int a = 0; a < md->m; a++) {
                int p = rm_pair(md, stage, a);
                for (int b = a; b < md->m && b <= a + POLISH_REACH; b++) {
                    int q = rm_pair(md, stage, b);
                    for (int i = 0; i < nopt; i++)
                        for (int j = 0; j < nopt; j++) {
                            if (b == a && j > 0) break;   /* one pair: only its own option */
                            plan_choice oa = opt[i], ob = b == a ? opt[i] : opt[j];
                            if (same_choice(oa, c[p]) && same_choice(ob, c[q])) continue;
                            if (try_move(md, c, p, q, oa, ob, r, mem, end, &cur)) improved = 1, moves++;
                        }
                }
            }
        }
    }
    free(end);
    free(mem);
    return moves;
}
