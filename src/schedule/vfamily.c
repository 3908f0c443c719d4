/* vfamily.c: see vfamily.h. */
#include "schedule/vfamily.h"

#include <stdlib.h>
#include <string.h>

#include "schedule/dualpipev.h"
#include "schedule/reorder.h"
#include "schedule/vgrid.h"
#include "schedule/zbv_heur.h"
#include "schedule/vshape_common.h"

/* Look-ahead windows tried when reordering a block (reorder.h): short ones
 * keep the block's rhythm, longer ones let more warm-up work overtake. */
static const int vf_windows[] = {8, 4, 2};
#define VF_NWIN (sizeof vf_windows / sizeof vf_windows[0])
/* Above this many ops fewer reorderings are tried (time budget). */
#define VF_FULL_SEARCH_OPS 100000

/* Offer plan and its ready-first reorderings (up to nwin windows); plan is
 * consumed. */
static void with_reorderings(const sched_params *p, const vs_spec *spec, schedule *plan, size_t nwin,
                             vs_best *best)
{
    pg_status st;
    reorder_cost c;
    memset(&c, 0, sizeof c);
    vs_durations(p, spec->v, c.dur_s);
    c.t_comm_s = p->t_comm;
    memcpy(c.mem, spec->mem, sizeof c.mem);
    c.mem_limit = spec->limit;
    for (size_t i = 0; i < nwin; i++) {
        schedule cand;
        vs_empty(p, spec, &cand);
        c.window = vf_windows[i];
        if (reorder_ready(plan, &c, &cand, &st) == 0) vs_keep(p, spec, best, &cand);
        else sched_free(&cand);
    }
    vs_keep(p, spec, best, plan);
}

static void block_candidates(const sched_params *p, const vs_spec *spec, const int (*slot)[VB_PASSES],
                             vs_best *best)
{
    schedule plan;
    pg_status st;
    vs_empty(p, spec, &plan);
    if (vblock_build(slot, &plan, &st) != 0) {
        sched_free(&plan);
        return;
    }
    with_reorderings(p, spec, &plan, sched_total_ops(&plan) > VF_FULL_SEARCH_OPS ? 1 : VF_NWIN, best);
    /* seed B's own recipe: reorder inside the slot grid, then squeeze */
    schedule grid;
    vs_empty(p, spec, &grid);
    if (vgrid_build(slot, &grid, &st) == 0) vs_keep(p, spec, best, &grid);
    else sched_free(&grid);
}

/* DualPipeV's order is a bidirectional V schedule at about 1F1B memory: a
 * good candidate whenever it fits the limit (it needs m >= 2pp).  With its
 * overlapped pairs run backward first it holds one chunk less. */
static void dualpipe_candidate(const sched_params *p, const vs_spec *spec, vs_best *best)
{
    for (int b_first = 0; b_first < 2; b_first++) {
        schedule plan;
        pg_status st;
        if (dualpipev_build(p, b_first, spec->name, &plan, &st) != 0) return;
        with_reorderings(p, spec, &plan, sched_total_ops(&plan) > VF_FULL_SEARCH_OPS ? 0 : VF_NWIN, best);
    }
}

void vf_blocks_add(vf_blocks *b, const int (*slot)[VB_PASSES], int pp)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 16;
        b->slot = pg_xrealloc(b->slot, (size_t)b->cap * pp * sizeof *b->slot);
    }
    b->pp = pp;
    memcpy(b->slot + (size_t)b->n * pp, slot, (size_t)pp * sizeof *b->slot);
    b->n++;
}

void vf_blocks_free(vf_blocks *b)
{
    free(b->slot);
    memset(b, 0, sizeof *b);
}

static int generate(const sched_params *p, const char *name, double limit, const int (*slot)[VB_PASSES],
                    const vf_blocks *blocks, schedule *out, pg_status *st);

int vfamily_generate(const sched_params *p, const char *name, double limit,
                     const int (*slot)[VB_PASSES], schedule *out, pg_status *st)
{
    return generate(p, name, limit, slot, NULL, out, st);
}

int vfamily_generate_blocks(const sched_params *p, const char *name, double limit, const vf_blocks *blocks,
                            schedule *out, pg_status *st)
{
    return generate(p, name, limit, NULL, blocks, out, st);
}

static int generate(const sched_params *p, const char *name, double limit, const int (*slot)[VB_PASSES],
                    const vf_blocks *blocks, schedule *out, pg_status *st)
{
    const int v = 2;
    vs_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.name = name;
    spec.v = v;
    spec.place = sched_place_v;
    spec.split = 1;
    spec.mem[OP_F] = 1.0 / v;
    spec.mem[OP_W] = -1.0 / v;
    spec.mem[OP_BW] = -1.0 / v;
    spec.limit = limit;
    /* The V schedules start their ranks staggered, so span and makespan
     * differ; the pipeline's iteration time is the makespan. */
    spec.by_makespan = 1;
    vs_best best;
    memset(&best, 0, sizeof best);
    int rc = vs_greedy(p, &spec, &best, st);
    if (rc == 0 && slot) block_candidates(p, &spec, slot, &best);
    for (int b = 0; rc == 0 && blocks && b < blocks->n; b++) {
        schedule grid;
        pg_status gst;
        vs_empty(p, &spec, &grid);
        if (vgrid_build((const int (*)[VB_PASSES])(blocks->slot + (size_t)b * blocks->pp), &grid, &gst) == 0)
            vs_keep(p, &spec, &best, &grid);
        else
            sched_free(&grid);
    }
    if (rc == 0) {
        /* the zero-bubble paper's ZB-V construction, under the same limit */
        schedule zh;
        vs_empty(p, &spec, &zh);
        if (zbv_heur_build(p, limit, &zh) == 0) vs_keep(p, &spec, &best, &zh);
        else sched_free(&zh);
    }
    /* DualPipeV holds about pp stage activations: pointless below that. */
    if (rc == 0 && limit >= p->pp) dualpipe_candidate(p, &spec, &best);
    if (rc) {
        if (best.have) sched_free(&best.s);
        return rc;
    }
    return vs_finish(&best, out, st);
}
