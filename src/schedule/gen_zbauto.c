/* gen_zbauto.c: the zero-bubble automatic scheduler (ZB paper sec. 3).
 *
 * One stage per rank, split backward, memory counted the zero-bubble way in
 * M_B units: F adds 1, B frees all but what W needs (1 - w_fraction), W frees
 * the rest; limit memory.limit (<= 0: pp, i.e. ZB-1p; 2pp gives ZB-2p).  The
 * heuristic is the greedy list scheduler (greedy_list.h) under several
 * policies, keeping the order with the smallest largest per-rank span, which
 * is the paper's objective.
 *
 * Not done: the paper's exact ILP refinement (App. G); the heuristic is the
 * whole result. */
#include <string.h>
#include "schedule/generators.h"
#include "schedule/vshape_common.h"

int sched_gen_zbauto(const sched_params *p, schedule *out, pg_status *st)
{
    double wf = p->w_fraction;
    if (!(wf >= 0.0 && wf <= 1.0))
        return pg_fail(st, PG_EXIT_INPUT, "key 'uniform.w_fraction': must be in [0, 1] (got %g)", wf);
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
    return vs_finish(&best, out, st);
}
