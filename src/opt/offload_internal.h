/* offload_internal.h: the planner's instance, shared by its model builder
 * and greedy (offload_model.c) and its MILP (offload_milp.c).  Not a public
 * interface: see offload_milp.h for the contract.
 *
 * Everything is in op-index space of each rank's fixed order: op i of rank r
 * lasts dur[r][i] seconds on its GPU (no recompute), and "memory during op
 * i" is what the simulator's metrics would count while op i runs.
 */
#ifndef PG_OPT_OFFLOAD_INTERNAL_H
#define PG_OPT_OFFLOAD_INTERNAL_H

#include "opt/offload_input.h"
#include "schedule/plan.h"
#include "util/error.h"

/* The six per-activation options (keep first: it is the slack). */
typedef enum { OPT_KEEP = 0, OPT_SEL, OPT_FULL, OPT_OFF, OPT_OFF_SEL, OPT_OFF_FULL, OPT_COUNT } off_option;

typedef struct off_item {
    int stage, mb, rank;
    int f_idx, c_idx;                /* F and first consumer (B / BW) in the rank's list */
    int w_idx;                       /* W (split), else c_idx */
    int allowed[OPT_COUNT];
    double f_alloc[OPT_COUNT];       /* bytes F keeps */
    double off_bytes[OPT_COUNT];     /* bytes copied each way (0: not offloaded) */
    double r_s[OPT_COUNT];           /* recompute seconds before the consumer, on the GPU */
    double copy_s[OPT_COUNT];        /* one copy (D2H or H2D), contended bandwidth */
    int out_from[OPT_COUNT];         /* off the GPU during ops [out_from, in_from) */
    int in_from[OPT_COUNT];
    double full_bytes;               /* M_B: what keep holds until the consumer */
    /* MILP columns (0: none) */
    int col[OPT_COUNT];
    int col_d2h, col_h2d;
} off_item;

typedef struct off_model {
    const schedule *s;
    int pp, m, nitems;
    off_item *items;                 /* [nstages * m], index stage * m + mb */
    double **dur;                    /* [pp][nops] */
    double **room;                   /* [pp][nops] capacity - static - workspace, bytes */
    double **keep_mem;               /* [pp][nops] activation bytes if everything is kept */
    double *comm_s;                  /* [nstages]: transfer from stage s to s+1 (and back) */
    double *copy_bw;                 /* [pp] bytes/s of a copy in the timing (route, or route / sharers) */
    double *shared_bw;               /* [pp] route / sharers: when memory is freed (always conservative) */
    double *copy_lat_s;              /* [pp] */
    double host_link_bw;             /* cluster.host_link=measured: the GPU type's measured rate (its profile's
                                      * host_link block, model/costmodel.h); 0: the routes' datasheet rate */
    double horizon_s;                /* an upper bound on any end time (big-M) */
} off_model;

/* Build the instance; PG_EXIT_INPUT when a rank has no capacity to plan to. */
int off_model_build(const offload_plan_input *in, off_model *md, pg_status *st);
void off_model_free(off_model *md);

static inline off_item *off_item_at(const off_model *md, int stage, int mb)
{
    return &md->items[(size_t)stage * (size_t)md->m + (size_t)mb];
}

/* Activation bytes item holds during op i of its rank under option o. */
double off_item_mem(const off_item *it, int o, int i);

/* Memory-driven greedy: choice[nitems] (index stage * m + mb) starts all
 * keep; returns 1 if every rank fits, 0 otherwise (choices then save all
 * they could at the ops over budget). */
int off_greedy(const off_model *md, int *choice);

/* The makespan of choices under the model's timing (copy engines included):
 * an as-soon-as-possible replay of the fixed orders. */
double off_eval(const off_model *md, const int *choice);

/* The memplan of choices. */
void off_to_plan(const off_model *md, const int *choice, memplan *out);

#endif
