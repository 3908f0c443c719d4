/* zb_ilp.h: exact refinement of the automatic zero-bubble schedule (the ZB
 * paper's ILP, Qi et al., ICLR 2024, appendix G) with GLPK.
 *
 * Contract.  zb_ilp_refine() takes a zb-auto schedule (one stage per rank,
 * split backward) and the parameters it was generated with, and replaces it
 * by a better order if the ILP finds one within time_limit_s:
 *   - variables: a start time per F, B and W op; an ordering binary for
 *     every pair of ops of one stage whose order precedence does not fix;
 *     the objective variable C;
 *   - constraints: dependencies (schedule.h, t_comm on every cross-rank
 *     edge), one op at a time per stage (big-M disjunctions), memory at
 *     every F (the zero-bubble accounting in M_B units: F +1, B
 *     -(1 - w_fraction), W -w_fraction, counted along the rank's order, at
 *     most mem_limit, or pp when none is given);
 *   - objective: C >= end of every W of a stage - start of its first F, the
 *     largest per-stage span (the paper's eq. 3 and zb-auto's own metric).
 * The heuristic's order is handed to GLPK as its first incumbent (so the
 * search only looks for something better), and the result is re-timed with
 * the ideal evaluator: the refined order is kept only if it validates,
 * respects the memory limit and has a strictly smaller span.  Otherwise
 * *inout is left exactly as it was.
 *
 * Size cutoff: the model has 3 pp m ops and about 2 pp m^2 binaries; beyond
 * ZB_ILP_MAX_OPS ops (pp m <= 40: e.g. pp 4 with m 10, pp 8 with m 5) GLPK
 * cannot even close the root gap in seconds, so larger instances are left to
 * the heuristic (returns 0, schedule unchanged).
 *
 * Returns 0 (refined or unchanged), PG_EXIT_INPUT for a schedule that is not
 * a zb-auto shape.
 */
#ifndef PG_OPT_ZB_ILP_H
#define PG_OPT_ZB_ILP_H

#include "schedule/schedule.h"
#include "util/error.h"

#define ZB_ILP_MAX_OPS 120

int zb_ilp_refine(const sched_params *p, schedule *inout, double time_limit_s, pg_status *st);

#endif
