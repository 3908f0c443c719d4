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
    sched_replay rp;
    int rc = sched_replay_build(s, &rp, st);
    if (rc == 0)
        sched_replay_free(&rp);
    return rc;
}
