/* glpk_start.h: hand GLPK's branch and bound a first solution.
 *
 * Every MILP of the planners starts from a heuristic plan: GLPK takes it
 * through glp_ios_heur_sol at the first GLP_IHEUR call of its search
 * callback (it must be given in the problem's own columns, so the caller
 * turns GLPK's presolver off).  glpk_start_offer does that once;
 * glpk_start_callback is the whole callback for searches that need
 * nothing else.
 */
#ifndef PG_OPT_GLPK_START_H
#define PG_OPT_GLPK_START_H

#include <glpk.h>

typedef struct glpk_start {
    const double *x;          /* [ncols + 1], 1-based; NULL: nothing to give */
    int given;
    double deadline_s;        /* workclock.h deadline of the search (its deterministic mode) */
} glpk_start;

/* Gives s->x to the search if this is its first heuristic call; returns 1
 * if this call was that one (the caller's other GLP_IHEUR work then waits
 * for the next call). */
int glpk_start_offer(glp_tree *tree, glpk_start *s);

/* A callback for glp_iocp.cb_func, cb_info a glpk_start: the start, and the
 * work limit of workclock.h's deterministic mode at s->deadline_s. */
void glpk_start_callback(glp_tree *tree, void *info);

#endif
