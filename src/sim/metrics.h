/* metrics.h: the numbers users read, computed from a timeline (no SimGrid).
 *
 * Definitions (the contract's):
 *   makespan        first op start to last op end, over all ranks
 *   span            max over ranks of (last op end - first op start): the papers' "cost"
 *   bubble_ratio    (span - busy time of the rank with the largest span) / span
 *   peak_activations per rank, peak count of stored activations in stage units:
 *                   +1/v at the start of F, -1/v at the end of the W or BW that frees it
 *   peak_memory_bytes per rank: static + activations (F start +M_B, B end -(M_B-M_W),
 *                   W end -M_W) + the running op's workspace
 * With a memory plan the activation events are those of sim/actmem.h (F
 * keeps less under recomputation, R / RW ops allocate again, a D2H copy
 * frees at its end, an H2D copy allocates at its start); peak_activations
 * keeps the contract's F-to-W count whatever the plan.  Host memory per
 * node: +bytes at a D2H start, -bytes at the H2D end; a node over its
 * capacity (platform cpu memory, 0 = unknown) puts its offloading ranks in oom.
 * Static memory shards the optimizer part over dp with zero1 (model/memory.h).
 * Events at the same instant release before they allocate.
 * Stage costs are one GPU's share (model/workload.h: bytes, parameters and
 * FLOPs always; times too except workload=uniform's, which tp_time_share
 * scales), so MFU multiplies both its sides by the GPUs of a rank.
 */
#ifndef PG_SIM_METRICS_H
#define PG_SIM_METRICS_H

#include "model/memory.h"
#include "model/platform.h"
#include "model/workload.h"
#include "schedule/plan.h"
#include "schedule/schedule.h"
#include "sim/bubbles.h"
#include "sim/timeline.h"

typedef struct rank_metrics {
    double first_start, last_end;
    double span;
    double busy_s;               /* sum of op durations */
    double idle_s;               /* span - busy */
    bubble_breakdown bubbles;    /* idle_s by cause (sim/bubbles.h) */
    double peak_activations;     /* stage units */
    double peak_memory_bytes;
    double peak_time_s;          /* when the memory peak happens */
    double static_bytes;         /* weights + gradients + optimizer state + the headroom's static part */
    /* The headroom (model/workload_types.h memory_headroom) this rank holds:
     * context, NCCL and reserved are of static_bytes; fragmentation_bytes is
     * the allocator's at the peak, of the peak beyond static and activations
     * (what the contract's workspace_bytes counts). */
    double cuda_context_bytes, nccl_bytes, reserved_bytes;
    double fragmentation_bytes;
    double peak_activation_bytes;/* activation bytes at the memory peak */
    double capacity_bytes;       /* of its GPU */
    double recompute_s;          /* time in R / RW ops */
    double offload_bytes;        /* copied D2H */
    double reload_bytes;         /* copied H2D */
    double d2h_busy_s, h2d_busy_s;
    double pcie_busy_s;          /* time with at least one copy of this GPU in flight */
    double stall_s;              /* ops waiting for their activation to come back */
    int gpu;                     /* index into platform */
} rank_metrics;

typedef struct run_metrics {
    int pp;
    double makespan_s;
    double span;
    double bubble_ratio;         /* the contract's: idle / span of the longest-span rank */
    double pipeline_bubble_ratio;/* the pipeline's, as users read it: idle over all ranks' time, each rank
                                  * counted over the makespan window: sum (makespan - busy) / (pp x makespan) */
    int span_rank;               /* rank with the largest span */
    double total_busy_s;
    double samples_per_s, tokens_per_s;   /* per iteration_s, all dp replicas together */
    double mfu;                  /* model FLOPs of the whole job / (iteration_s x the peak of every GPU it
                                  * uses, tp x cp x dp x pp); 0 when either is unknown */
    /* PipeOffload's k, with an offload policy (metrics_input.offload):
     * rank 0's round-trip copy time of one microbatch's offloadable
     * activations (each of its stages' (stage, microbatch 0) under the plan's
     * recompute choice, offloaded: act_flow_of's offload_bytes), one D2H and
     * one H2D per stage, uncontended at the rank-0 GPU's host route
     * (latency + bytes / bandwidth, pg_gpu.host_bw), divided by the same
     * microbatch's F + B + W compute time on rank 0 (the workload's times on
     * rank 0's GPU, one GPU's share).  has_offload_k 0: no offload policy, or
     * the route or the times are unknown.  offload_k_shared: the same at the
     * route's shared rate (pg_gpu.host_shared_bw: both GPUs of a PCIe switch
     * copying at once), PipeOffload's own k, whose B_o (15 GB/s on A100) is
     * the rate of a GPU while its pair copies too. */
    int has_offload_k;
    double offload_k;
    double offload_k_shared;
    /* With a memory plan: the (stage, microbatch) activations its policy chose
     * to offload (before PipeOffload's lifespan filter, schedule/plan.h), and
     * those copied to host memory (replica 0's D2H copies).  The difference
     * are activations whose F-to-consumer window was too short for their
     * copies (the lifespan filter, or the engine's: sim/copyengine.c), which
     * stay on the GPU. */
    int offloads_chosen;
    int offloads_copied;
    double iteration_s;          /* whole iteration: pipeline_s + dp_allreduce_s + embed_allreduce_s + optimizer_s
                                  * + overhead_s */
    /* The iteration's breakdown (tensor / data parallelism, sim.h; without
     * collective records pipeline_s = makespan and the rest is 0):
     *   pipeline_s      first op start to the last op end over every replica
     *   dp_allreduce_s  exposed gradient all-reduce: from the pipeline's end
     *                   to the last bucket's end (0 when fully overlapped)
     *   embed_allreduce_s  the tied embedding's all-reduce between the first
     *                   and the last stage, after that (sim.h embed_sync_bytes)
     *   optimizer_s     the longest rank's optimizer step, which starts once
     *                   every all-reduce has ended (a global synchronisation),
     *                   and the distributed optimizer's parameter all-gather
     *                   after it when it does not overlap the next forward
     *   overhead_s      the framework's per-iteration work (iter_overhead_s)
     * With the distributed optimizer (sim.h) dp_allreduce_s is its exposed
     * reduce-scatter; the overlapped parameter all-gather delays the first
     * forward, inside pipeline_s. */
    double pipeline_s, dp_allreduce_s, embed_allreduce_s, optimizer_s, overhead_s;
    double dp_allgather_busy_s;  /* max over ranks of their parameter all-gathers' summed time (distributed
                                  * optimizer), exposed or not */
    double dp_allreduce_busy_s;  /* max over ranks of their buckets' summed time, exposed or not */
    double tp_comm_s;            /* max over ranks of time in tp collectives (replica 0) */
    double ep_comm_s;            /* the same for expert-parallel all-to-alls */
    double cp_comm_s;            /* the same for context-parallel key/value exchanges */
    int dp_buckets;              /* gradient buckets all-reduced, all ranks */
    double lower_bound;          /* 0 = not computed: with every cost no schedule avoids (cli.h
                                  * job_costed_bound) */
    /* What the bound and the gap above it are made of (set with lower_bound):
     *   lower_bound_compute_s  the same bound on the ops' compute alone; the
     *                          rest of lower_bound is unavoidable tp
     *                          collectives and recomputation
     *   gap_idle_s             idle time of the longest-span rank beyond what
     *                          the bound already holds (bound - its least busy
     *                          time): bubbles no schedule needed
     *   gap_slow_ops_s         that rank's ops above their least (contended or
     *                          slow tp collectives, communication in ops)
     *   gap_other_s            makespan - that rank's span (its late start)
     * The three sum to makespan - lower_bound. */
    double lower_bound_compute_s, gap_idle_s, gap_slow_ops_s, gap_other_s;
    int noom; int *oom;          /* ranks over capacity */
    rank_metrics *rank;          /* [pp] */
    int nhosts;                  /* host-memory endpoints (platform ncpus) */
    double *host_peak_bytes;     /* [nhosts] offloaded activations held in host memory, every GPU of the job
                                  * counted into its node's (a rank's tp x cp x dp GPUs copy alike) */
    double *host_capacity_bytes; /* [nhosts] 0 = unknown */
    int nhost_oom; int *host_oom;/* hosts over capacity */
} run_metrics;

typedef struct metrics_input {
    const schedule *sched;
    const workload *wl;
    const platform_desc *plat;
    const int *rank_gpu;
    const timeline *tl;
    double bytes_per_param;
    double capacity_override_bytes;  /* memory.capacity; 0 = GPU's own */
    const memplan *plan;                /* NULL: no offload, no recompute */
    memory_sharding sharding;        /* data-parallel sharding of the static memory (model/memory.h);
                                      * zeroed: none */
    int dp;
    int tp, cp;                      /* GPUs per pipeline rank and replica: tp x cp (0 = 1) */
    double tp_time_share;            /* experiment_tp_share: the part of a stage's time one GPU runs (0 = 1) */
    int offload;                     /* 1: the experiment has an offload policy (offload_k is computed) */
    double iter_overhead_s;          /* per iteration: the framework's work outside the ops (the GPU type's
                                      * fitted iter_overhead), added after the optimizer step */
    int combined_pairs;              /* 1: ops marked overlap_next ran as Megatron-Core's combined 1F1B steps
                                      * (sim.h sim_parallel.combined_pairs; without a plan): their memory is
                                      * replayed layer-interleaved (metrics.c) */
} metrics_input;

void metrics_compute(const metrics_input *in, run_metrics *out);
void metrics_free(run_metrics *m);

/* The memory accounting above, replayed instant by instant (for traces'
 * memory counters, so that they cannot drift from the peaks): for each rank
 * in order, fn is called once per distinct instant at which the rank's
 * activation or workspace bytes change, with the state after every event of
 * that instant.  activations is in stage units; static bytes are constant
 * (rank_metrics.static_bytes) and not included. */
typedef void (*metrics_memory_fn)(void *ctx, int rank, double t_s, double activation_bytes,
                                  double workspace_bytes, double activations);
void metrics_memory_walk(const metrics_input *in, metrics_memory_fn fn, void *ctx);

#endif
