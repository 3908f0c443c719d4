/* glpk_start.c: a first solution for GLPK's search (glpk_start.h). */
#include "opt/glpk_start.h"

#include "opt/workclock.h"

int glpk_start_offer(glp_tree *tree, glpk_start *s)
{
    if (glp_ios_reason(tree) != GLP_IHEUR || s->given || s->x == NULL) return 0;
    s->given = 1;
    glp_ios_heur_sol(tree, s->x);
    return 1;
}

void glpk_start_callback(glp_tree *tree, void *info)
{
    glpk_start *s = info;
    glpk_start_offer(tree, s);
    workclock_glpk_tick(tree, s->deadline_s);
}
