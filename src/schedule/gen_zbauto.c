/* gen_zbauto.c: the zero-bubble automatic scheduler (ZB paper sec. 3).
 *
 * One stage per rank, split backward, memory counted the zero-bubble way in
 * M_B units: F adds 1, B frees all but what W needs (1 - w_fraction), W frees
 * the rest; limit memory.limit (<= 0: pp, i.e. ZB-1p; 2pp gives ZB-2p).
 *
 * Candidates, all held to the limit, the one with the smallest largest
 * per-rank span kept (the paper's objective; ties: makespan):
 *   - the paper's own microbatch-sweep heuristic, its 8 variants
 *     (zbauto_heur.h);
 *   - the event-driven greedy list scheduler under several policies
 *     (greedy_list.h via vs_greedy);
 *   - ZB-H1 and ZB-H2, the handcrafted schedules, whenever they fit the
 *     limit: an automatic schedule must never lose to them at equal memory.
 *
 * Not done here: the paper's exact ILP refinement (App. G) lives in the opt
 * layer (opt/zb_ilp.h) and is applied by the caller for tiny cases. */
#include <string.h>
#include "schedule/generators.h"
#include "schedule/vshape_common.h"
#include "schedule/zbauto_heur.h"

/* Offer the handcrafted schedule built by gen under the zb-auto name. */
static void offer_handcrafted(const sched_params *p, const vs_spec *spec, sched_gen_fn gen, vs_best *best)
{
    schedule s;
    pg_status st;
    memset(&s, 0, sizeof s);
    if (gen(p, &s, &st) != 0) {
        sched_free(&s);
        return;
    }
    strncpy(s.name, spec->name, sizeof s.name - 1);
    s.name[sizeof s.name - 1] = '\0';
    vs_keep(p, spec, best, &s);
}

/* Tolerance when ranking candidates by accumulated times. */
#define ZBAUTO_EPS 1e-9

/* The paper's heuristic: rank its variants by the times it computes itself
 * and offer only the best (vs_keep then checks and evaluates that one). */
static void offer_sweep(const sched_params *p, const vs_spec *spec, vs_best *best)
{
    schedule keep;
    double keep_span = 0.0, keep_mk = 0.0;
    int have = 0;
    for (int k = 0; k < ZBAUTO_VARIANTS; k++) {
        schedule cand;
        double span, mk;
        vs_empty(p, spec, &cand);
        if (zbauto_heur_build(p, spec->mem, spec->limit, k, &cand, &span, &mk) == 0 &&
            (!have || span < keep_span - ZBAUTO_EPS ||
             (span <= keep_span + ZBAUTO_EPS && mk < keep_mk - ZBAUTO_EPS))) {
            if (have) sched_free(&keep);
            keep = cand;
            keep_span = span;
            keep_mk = mk;
            have = 1;
        } else {
            sched_free(&cand);
        }
    }
    if (have) vs_keep(p, spec, best, &keep);
}

int sched_gen_zbauto(const sched_params *p, schedule *out, pg_status *st)
{
    double wf = p->w_fraction;
    if (!(wf >= 0.0 && wf <= 1.0))
        return pg_fail_key(st, PG_EXIT_INPUT, "uniform.w_fraction", "must be in [0, 1] (got %g)", wf);
    vs_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.name = "zb-auto";
    spec.v = 1;
    spec.place = sched_place_contiguous;
    spec.split = 1;
    spec.mem[OP_F] = 1.0;
    spec.mem[OP_B] = -(1.0 - wf);
    spec.mem[OP_W] = -wf;
    spec.mem[OP_BW] = -1.0;
    spec.limit = p->mem_limit > 0.0 ? p->mem_limit : (double)p->pp;
    vs_best best;
    memset(&best, 0, sizeof best);
    int rc = vs_greedy(p, &spec, &best, st);
    if (rc) {
        if (best.have) sched_free(&best.s);
        return rc;
    }
    offer_sweep(p, &spec, &best);
    offer_handcrafted(p, &spec, sched_gen_zbh1, &best);
    offer_handcrafted(p, &spec, sched_gen_zbh2, &best);
    return vs_finish(&best, out, st);
}
