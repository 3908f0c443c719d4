/* zbauto_heur.c: see zbauto_heur.h.
 *
 * Times are simulated exactly as the ideal evaluator does (an op ends at
 * max(stage free, input end + t_comm) + duration, every stage on its own
 * rank), so the order appended evaluates to the times computed here.  Every
 * op checks that its input is already placed; a variant that would need an
 * unplaced input or cannot fit memory is abandoned (-1) rather than trusted.
 */
#include "schedule/zbauto_heur.h"

#include <stdlib.h>

/* Tolerance for comparing accumulated times and fractional memory counts. */
#define ZA_EPS 1e-9
/* Variant bits (zbauto_heur.h: the three binary options). */
#define ZA_BUBBLE_BEFORE_FIRST_B 1
#define ZA_PRIORITIZE_B 2
#define ZA_NO_BUBBLE_GREEDY 4
/* A stage may skip its forward only when it is at least this many forwards
 * ahead of the next stage (otherwise the next stage would starve). */
#define ZA_SKIP_LEAD 2
/* Op kinds this heuristic places (F, B, W: the first three of op_kind). */
#define ZA_KINDS 3

typedef struct za_state {
    schedule *s;
    int pp, m, variant;
    double dur[ZA_KINDS], mem[ZA_KINDS], comm, limit;
    int *n[ZA_KINDS];        /* [pp] ops of each kind placed per stage */
    double *e;               /* [pp] end of the stage's last op */
    double *used;            /* [pp] activation memory held */
    double *bubble;          /* [pp] idle time after the stage's first forward */
    double max_bubble;       /* max of bubble[] */
    double *tf, *tb;         /* [pp * m] end of F / B, < 0 while not placed */
} za_state;

static double max2(double a, double b)
{
    return a > b ? a : b;
}

/* Place the next op of kind k on stage j; -1 if its input is not placed. */
static int put(za_state *g, int j, op_kind k)
{
    int i = g->n[k][j];
    if (i >= g->m) return -1;
    double ready = g->e[j];
    if (k == OP_F && j > 0) {
        double d = g->tf[(size_t)(j - 1) * g->m + i];
        if (d < 0.0) return -1;
        ready = max2(ready, d + g->comm);
    } else if (k == OP_B) {
        if (i >= g->n[OP_F][j]) return -1;
        if (j + 1 < g->pp) {
            double d = g->tb[(size_t)(j + 1) * g->m + i];
            if (d < 0.0) return -1;
            ready = max2(ready, d + g->comm);
        }
    } else if (k == OP_W && i >= g->n[OP_B][j]) {
        return -1;
    }
    if (g->n[OP_F][j] > 0) {
        g->bubble[j] += ready - g->e[j];
        if (g->bubble[j] > g->max_bubble) g->max_bubble = g->bubble[j];
    }
    g->e[j] = ready + g->dur[k];
    if (k == OP_F) g->tf[(size_t)j * g->m + i] = g->e[j];
    if (k == OP_B) g->tb[(size_t)j * g->m + i] = g->e[j];
    g->used[j] += g->mem[k];
    g->n[k][j]++;
    sched_push(g->s, j, k, j, i);
    return 0;
}

static int w_pending(const za_state *g, int j)
{
    return g->n[OP_W][j] < g->n[OP_B][j];
}

/* Run deferred W's until an op of kind k fits the limit; -1 if none is left. */
static int make_room(za_state *g, int j, op_kind k)
{
    while (g->used[j] + g->mem[k] > g->limit + ZA_EPS) {
        if (!w_pending(g, j) || put(g, j, OP_W)) return -1;
    }
    return 0;
}

/* Fill the wait for an input arriving at `arrive` with deferred W's: those
 * that fit, then one that overruns it when the wait is more bubble than the
 * stage may take (or always, under no-bubble greedy). */
static int fill_wait(za_state *g, int j, double arrive)
{
    while (w_pending(g, j) && g->e[j] + g->dur[OP_W] <= arrive + ZA_EPS)
        if (put(g, j, OP_W)) return -1;
    if (w_pending(g, j) && g->e[j] < arrive - ZA_EPS) {
        int tolerable = arrive - g->e[j] <= g->max_bubble - g->bubble[j] + ZA_EPS;
        if (!tolerable || (g->variant & ZA_NO_BUBBLE_GREEDY))
            if (put(g, j, OP_W)) return -1;
    }
    return 0;
}

/* Phase 1: forwards before the first backward, then that backward. */
static int warm_up(za_state *g)
{
    int pp = g->pp;
    for (int j = 0; j < pp; j++)
        if (put(g, j, OP_F)) return -1;
    int *extra = pg_xcalloc((size_t)pp, sizeof *extra);
    /* when the first backward can reach stage j (end of B(j+1, 0)) */
    double b_end = g->tf[(size_t)(pp - 1) * g->m] + g->dur[OP_B];
    for (int j = pp - 2; j >= 0; j--) {
        double used = g->used[j], t = g->e[j];
        while (g->n[OP_F][j] + extra[j] < g->m && used + g->mem[OP_F] <= g->limit + ZA_EPS) {
            if (g->variant & ZA_BUBBLE_BEFORE_FIRST_B) {
                if (t + g->dur[OP_F] > b_end + g->comm + ZA_EPS) break;
            } else if (t >= b_end + g->comm - ZA_EPS) {
                break;
            }
            used += g->mem[OP_F];
            t += g->dur[OP_F];
            extra[j]++;
        }
        b_end = max2(t, b_end + g->comm) + g->dur[OP_B];
    }
    /* each stage strictly fewer than the one before (its inputs come from
     * there), unless it runs out of microbatches */
    for (int j = 1; j < pp; j++) {
        while (extra[j] > 0 && extra[j] >= extra[j - 1] && g->n[OP_F][j] + extra[j] < g->m) extra[j]--;
        if (extra[j] > extra[j - 1]) extra[j] = extra[j - 1];
    }
    int rc = 0;
    for (int j = 0; j < pp && rc == 0; j++)
        for (int k = 0; k < extra[j] && rc == 0; k++) rc = put(g, j, OP_F);
    for (int j = pp - 1; j >= 0 && rc == 0; j--) rc = put(g, j, OP_B);
    free(extra);
    return rc;
}

/* Under "prioritize B": whether stage j (ahead of stage j+1) skips this
 * round's forward so as not to delay stage j+1's next forward and backward. */
static int skips_forward(const za_state *g, int j)
{
    double next = g->e[j + 1] + g->dur[OP_F] + g->dur[OP_B] + g->comm;
    if (g->e[j] >= next - ZA_EPS) return 1;
    /* the W's the forward would first need for memory */
    double used = g->used[j] + g->mem[OP_F], w_cost = 0.0;
    for (int cnt = 0; used > g->limit + ZA_EPS && g->n[OP_W][j] + cnt < g->n[OP_B][j]; cnt++) {
        w_cost += g->dur[OP_W];
        used += g->mem[OP_W];
    }
    if (g->e[j] + g->dur[OP_F] + w_cost <= next + ZA_EPS) return 0;
    return next - g->e[j] <= g->max_bubble - g->bubble[j] + ZA_EPS;
}

/* Phase 2: round i (i >= 1): forwards, first stage to last, then backward
 * i, last stage to first. */
static int round_i(za_state *g, int i, int *fwd)
{
    int pp = g->pp;
    for (int j = 0; j < pp; j++) {
        fwd[j] = g->n[OP_F][j] < g->m;
        if (fwd[j] && (g->variant & ZA_PRIORITIZE_B) && j + 1 < pp &&
            g->n[OP_F][j] >= g->n[OP_F][j + 1] + ZA_SKIP_LEAD && skips_forward(g, j))
            fwd[j] = 0;
    }
    for (int j = pp - 2; j >= 0; j--)
        if (!fwd[j + 1]) fwd[j] = 0;
    for (int j = 0; j < pp; j++) {
        if (!fwd[j]) continue;
        if (make_room(g, j, OP_F)) return -1;
        if (j > 0) {
            double d = g->tf[(size_t)(j - 1) * g->m + g->n[OP_F][j]];
            if (d < 0.0 || fill_wait(g, j, d + g->comm)) return -1;
        }
        if (put(g, j, OP_F)) return -1;
    }
    for (int j = pp - 1; j >= 0; j--) {
        if (g->n[OP_B][j] != i || make_room(g, j, OP_B)) return -1;
        if (j + 1 < pp) {
            double d = g->tb[(size_t)(j + 1) * g->m + i];
            if (d < 0.0 || fill_wait(g, j, d + g->comm)) return -1;
        }
        /* the first stage's backward feeds nobody: once its forwards are
         * done, its W's may as well go first */
        if (j == 0 && g->n[OP_F][0] == g->m)
            while (w_pending(g, 0))
                if (put(g, 0, OP_W)) return -1;
        if (put(g, j, OP_B)) return -1;
    }
    return 0;
}

int zbauto_heur_build(const sched_params *p, const double mem[OP_KIND_COUNT], double limit, int variant,
                      schedule *out, double *span_s, double *makespan_s)
{
    za_state g = {0};
    g.s = out;
    g.pp = p->pp;
    g.m = p->m;
    g.variant = variant;
    g.dur[OP_F] = p->t_f;
    g.dur[OP_B] = p->t_b;
    g.dur[OP_W] = p->t_w;
    g.comm = p->t_comm;
    g.limit = limit;
    for (int k = 0; k < ZA_KINDS; k++) {
        g.mem[k] = mem[k];
        g.n[k] = pg_xcalloc((size_t)g.pp, sizeof *g.n[k]);
    }
    g.e = pg_xcalloc((size_t)g.pp, sizeof *g.e);
    g.used = pg_xcalloc((size_t)g.pp, sizeof *g.used);
    g.bubble = pg_xcalloc((size_t)g.pp, sizeof *g.bubble);
    size_t n = (size_t)g.pp * g.m;
    g.tf = pg_xmalloc(n * sizeof *g.tf);
    g.tb = pg_xmalloc(n * sizeof *g.tb);
    for (size_t i = 0; i < n; i++) g.tf[i] = g.tb[i] = -1.0;
    int *fwd = pg_xmalloc((size_t)g.pp * sizeof *fwd);

    int rc = g.mem[OP_F] <= g.limit + ZA_EPS ? warm_up(&g) : -1;
    for (int i = 1; i < g.m && rc == 0; i++) rc = round_i(&g, i, fwd);
    for (int j = 0; j < g.pp && rc == 0; j++)
        while (rc == 0 && w_pending(&g, j)) rc = put(&g, j, OP_W);
    if (rc == 0) {
        /* every stage starts with F(j, 0); stage 0 starts at time 0 */
        double span = 0.0, end = 0.0;
        for (int j = 0; j < g.pp; j++) {
            double first = g.tf[(size_t)j * g.m] - g.dur[OP_F];
            span = max2(span, g.e[j] - first);
            end = max2(end, g.e[j]);
        }
        *span_s = span;
        *makespan_s = end;
    }

    free(fwd);
    free(g.tf);
    free(g.tb);
    free(g.bubble);
    free(g.used);
    free(g.e);
    for (int k = 0; k < ZA_KINDS; k++) free(g.n[k]);
    return rc;
}
