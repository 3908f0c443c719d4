/* pglimits.h: the one set of size limits on a pipeline, shared by the
 * experiment schema (src/model/experiment.c, which enforces them on user
 * input with file:line messages) and the schedule layer (src/schedule/
 * registry.c, which re-checks what library callers pass), so no two messages
 * can name different limits for one key.
 *
 * They are far beyond any real pipeline and low enough that a typo cannot
 * make a generator allocate gigabytes of op lists. */
#ifndef PG_UTIL_PGLIMITS_H
#define PG_UTIL_PGLIMITS_H

#define PG_MAX_PP 4096                 /* key pp: pipeline ranks */
#define PG_MAX_CHUNKS 64               /* key chunks: stages per rank */
#define PG_MAX_MICROBATCHES 1000000    /* key microbatches */
/* Longest duration any key takes (an op's time, a latency, a solver's time
 * limit): about 11.6 days.  Far above any real op; low enough that sums over
 * a whole schedule stay finite and exact to the simulator's precision, where
 * 1e300 s would overflow to infinity and look like a deadlock. */
#define PG_MAX_DURATION_S 1e6

#endif
