/* glpk_guard.h: run GLPK so that its internal failures cannot abort pipegrid.
 *
 * GLPK ends the process (abort) when one of its own checks fails: a
 * numerically hard MILP can trip the primal simplex's "teta_lim >= 0.0"
 * inside glp_intopt's branch and bound.  A planner must then fall back to its
 * heuristic plan, not take the whole run down.  glpk_guarded runs fn(arg)
 * with GLPK's error hook set to jump back to it; on such a failure it frees
 * GLPK's whole environment (glp_free_env, as GLPK's manual prescribes after
 * an error: every glp_prob of the process is gone) and returns -1.
 *
 * Contract for fn: it never lets a glp_prob outlive the call unless the
 * caller can forget it on failure (every glp_prob is gone then), and it keeps
 * what it allocates itself in the struct behind arg so that the caller can
 * release it, or says in a comment that it gives that memory up on this path
 * (the remat ILP, whose covers and local search allocate as they go).  While fn
 * runs, GLPK's terminal output is swallowed (it would land on stdout, in the
 * middle of --format json).  Not reentrant: one guarded call at a time per
 * process (pipegrid runs its planners in one thread; sweeps fork).
 */
#ifndef PG_OPT_GLPK_GUARD_H
#define PG_OPT_GLPK_GUARD_H

typedef void (*glpk_guarded_fn)(void *arg);

/* 0: fn returned normally; -1: GLPK failed inside it (environment freed). */
int glpk_guarded(glpk_guarded_fn fn, void *arg);

#endif
