/* vfamily.h: the V-shape generators' shared recipe (private to the schedule
 * layer).
 *
 * Every V generator (zb-v, v-zb, v-half, v-min) counts activations the
 * F-until-W way (a chunk's F adds 1/2 stage unit, its W frees it, B frees
 * nothing), which is the contract's peak_activations, and asks for the best
 * order under one per-rank limit.  The candidates are the greedy list
 * scheduler's orders and, when a building block is given, the block's
 * squeezed order and its ready-first reorderings (vblock.h, reorder.h).
 */
#ifndef PG_SCHEDULE_VFAMILY_H
#define PG_SCHEDULE_VFAMILY_H

#include "schedule/schedule.h"
#include "schedule/vblock.h"

/* slot: a building block [pp][VB_PASSES] or NULL.  limit: stage units. */
int vfamily_generate(const sched_params *p, const char *name, double limit,
                     const int (*slot)[VB_PASSES], schedule *out, pg_status *st);

/* A list of building blocks of one pp, each offered through the slot-grid
 * recipe only (vgrid.h): the searches try many. */
typedef struct vf_blocks {
    int pp, n, cap;
    int (*slot)[VB_PASSES];   /* [n * pp] */
} vf_blocks;
void vf_blocks_add(vf_blocks *b, const int (*slot)[VB_PASSES], int pp);
void vf_blocks_free(vf_blocks *b);
int vfamily_generate_blocks(const sched_params *p, const char *name, double limit, const vf_blocks *blocks,
                            schedule *out, pg_status *st);

#endif
