/* validate.c: structural validation and the deadlock check (schedule.h).
 * Both are thin wrappers over the shared index so that the rules they apply
 * are exactly the ones the evaluators use. */
#include <stdlib.h>
#include "schedule/sched_index.h"

int sched_validate(const schedule *s, pg_status *st)
{
    sched_index ix;
    int rc = sched_index_build(s, &ix, st);
    if (rc)
        return rc;
    sched_index_free(&ix);
    return 0;
}

int sched_check_deadlock(const schedule *s, pg_status *st)
{
    sched_index ix;
    int rc = sched_index_build(s, &ix, st);
    if (rc)
        return rc;
    int *order = pg_xmalloc(((size_t)ix.total + 1) * sizeof *order);
    int *next = pg_xcalloc((size_t)s->pp, sizeof *next);
    if (sched_index_replay(s, &ix, order, next) < ix.total)
        rc = sched_index_deadlock_msg(s, &ix, next, st);
    free(order);
    free(next);
    sched_index_free(&ix);
    return rc;
}
