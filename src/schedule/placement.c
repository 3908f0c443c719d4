/* placement.c: which rank holds each stage.
 *
 * The placements are the ones the seed schedules use; each is a formula of
 * (stage, pp) so generators and the CSV importer agree on them. */
#include "schedule/schedule.h"

/* With v = 1 this is stage s on rank s; with more stages per rank each rank
 * holds a block of v consecutive stages. */
void sched_place_contiguous(schedule *s)
{
    for (int st = 0; st < s->nstages; st++)
        s->stage_rank[st] = s->v > 0 ? st / s->v : 0;
}

void sched_place_looping(schedule *s)
{
    for (int st = 0; st < s->nstages; st++)
        s->stage_rank[st] = st % s->pp;
}

/* A wave goes down the ranks for even chunks and back up for odd ones, so
 * consecutive chunks meet on the same rank (no message at the turn). */
void sched_place_wave(schedule *s)
{
    for (int st = 0; st < s->nstages; st++) {
        int chunk = st / s->pp, k = st % s->pp;
        s->stage_rank[st] = (chunk % 2 == 0) ? k : s->pp - 1 - k;
    }
}

/* V is the two-chunk wave: rank i holds stages i and 2pp-1-i. */
void sched_place_v(schedule *s)
{
    sched_place_wave(s);
}

int sched_stage_chunk(const schedule *s, int stage)
{
    if (stage < 0 || stage >= s->nstages)
        return -1;
    int r = s->stage_rank[stage], chunk = 0;
    for (int st = 0; st < stage; st++)
        if (s->stage_rank[st] == r)
            chunk++;
    return chunk;
}
