/* workclock.h: the planners' clock, and their deterministic mode.
 *
 * The planners (remat_*.c, zb_ilp.c, offload_milp.c) stop on time: their
 * local searches run until a deadline read from this clock, and GLPK until
 * its time limit.  By default that is wall time, so what they find depends on
 * the machine's speed and load.
 *
 * Deterministic mode (environment PIPEGRID_DETERMINISTIC=1; the test suite
 * and the README examples set it) turns every time limit into a work limit:
 * each read of workclock_s() advances a virtual clock by WORKCLOCK_TICK_S
 * instead of reading the wall clock, GLPK gets no time limit of its own
 * (workclock_tm_lim_ms), and each call of a search's callback reads the clock
 * once and ends the search (glp_ios_terminate) once past its deadline
 * (workclock_glpk_tick).  The same input then gives the same plan on any
 * machine; the time limits keep their meaning as budgets (a larger
 * recompute.time_limit is more work), not as seconds.  Default behaviour is
 * unchanged.
 */
#ifndef PG_OPT_WORKCLOCK_H
#define PG_OPT_WORKCLOCK_H

#include <glpk.h>

#define WORKCLOCK_ENV "PIPEGRID_DETERMINISTIC"
/* Virtual seconds one clock read stands for in deterministic mode. */
#define WORKCLOCK_TICK_S 5e-3

/* 1 in deterministic mode (read once per process). */
int workclock_deterministic(void);
/* Seconds: monotonic wall time, or the virtual clock. */
double workclock_s(void);
/* A GLPK tm_lim (milliseconds, at least 1) for a limit of limit_s seconds;
 * in deterministic mode none (INT_MAX): the callbacks' ticks stop the search. */
int workclock_tm_lim_ms(double limit_s);
/* From a GLPK search callback: in deterministic mode, one clock read, and the
 * search is terminated once the clock is past deadline_s.  Nothing otherwise. */
void workclock_glpk_tick(glp_tree *tree, double deadline_s);

#endif
