/* workclock.c: see workclock.h. */
#include "opt/workclock.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MS_PER_SECOND 1000.0

int workclock_deterministic(void)
{
    static int mode = -1;
    if (mode < 0) {
        const char *v = getenv(WORKCLOCK_ENV);
        mode = v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
    }
    return mode;
}

double workclock_s(void)
{
    if (workclock_deterministic()) {
        static double virtual_s;
        virtual_s += WORKCLOCK_TICK_S;
        return virtual_s;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int workclock_tm_lim_ms(double limit_s)
{
    if (workclock_deterministic())
        return INT_MAX;
    double ms = limit_s * MS_PER_SECOND;
    if (!(ms >= 1))
        return 1;
    return ms >= INT_MAX ? INT_MAX : (int)ms;
}

void workclock_glpk_tick(glp_tree *tree, double deadline_s)
{
    if (workclock_deterministic() && workclock_s() > deadline_s)
        glp_ios_terminate(tree);
}
