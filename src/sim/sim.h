/* sim.h: replay a schedule on a simulated cluster (the only SimGrid user).
 *
 * Each pipeline rank replays its op list on its GPU host: each op lasts
 * (time on the reference GPU x reference speed) flops over the host's speed,
 * the profiled time scaled by the speed ratio; an op starts once the
 * messages it depends on have arrived.  Every job runs on the replay without
 * actors (eventreplay.c: kernel timers and one-sided transfers); the
 * reference, one SimGrid actor per rank (replay.c), runs on demand
 * (sim.engine=actors); both give the same timeline (tests/test_eventreplay.c,
 * tests/replay.sh).  After
 * an F the activation is sent to the next stage's rank, after a B (or BW)
 * the gradient to the previous stage's rank, as asynchronous transfers over
 * the platform's route that overlap with compute.  The network model is set
 * in code to SimGrid's exact one (CM02, no cross-traffic, no TCP window), so
 * a transfer takes route latency + bytes / bottleneck bandwidth, shared
 * fairly under contention.  A memory plan adds offload copies to host memory
 * (copy engines or streams per GPU, with admission: copyengine.c) and
 * recompute ops.
 *
 * Tensor and data parallelism (sim_input.par; NULL = tp = dp = 1, the
 * single pipeline above, unchanged).  A pipeline rank is then a tp group of
 * GPUs, and dp replicas of the whole pipeline run at once, contending for
 * the platform's links (only replica 0 is recorded in the timeline, plus one
 * span per replica).  Each op executes on every GPU of its group (1/tp of
 * the stage time each when the times are the group's), then runs its
 * tensor-parallel collectives over the group's links (collectives.h).  Each
 * rank's gradients are all-reduced across the replicas in buckets (ring or
 * hierarchical, over the platform's routes, during the last backward ops
 * with overlap), then every rank runs its optimizer step once all ranks'
 * reductions have ended (Megatron's gradient-norm all-reduce makes the step
 * a global synchronisation).  When the replicas are symmetric (replicas.c,
 * sim_input.replicas) one replica is simulated for all, with the same
 * results (or a block of replicas, where they share nodes or ep groups).  Context parallelism passes each attention
 * layer's keys and values round the cp GPUs of a group; expert parallelism
 * runs each MoE layer's token dispatch and combine all-to-alls among the
 * ep replicas of a group (workload.h), contending with everything else;
 * DualPipeV's overlapped pairs hide one op's all-to-alls under the other's
 * compute.  The engine's files (engine_internal.h) have the details.
 *
 * SimGrid allows one simulation per process: sim_run may be called once.
 */
#ifndef PG_SIM_SIM_H
#define PG_SIM_SIM_H

#include <stddef.h>

#include "model/experiment.h"
#include "model/platform.h"
#include "model/workload.h"
#include "schedule/plan.h"
#include "schedule/schedule.h"
#include "sim/timeline.h"
#include "util/error.h"

typedef enum { DP_ALGO_AUTO = 0, DP_ALGO_RING, DP_ALGO_HIERARCHICAL } dp_algo;

/* Megatron's tensor-parallel collectives per transformer layer, in F and in
 * B (the attention and MLP blocks' row-parallel outputs, and their inputs'
 * gradients), each of the stage's boundary_bytes; W has none (tpgroup.c
 * runs them, optimize's bound counts them). */
#define SIM_TP_COLLS_PER_LAYER 2

typedef struct sim_parallel {
    int tp, dp;                  /* degrees (>= 1) */
    const int *gpu;              /* [pp * dp * tp] platform GPU of (rank r, replica d, tp rank t) at
                                  * index (r * dp + d) * tp + t (Megatron's order); gpu[r * dp * tp]
                                  * must equal rank_gpu[r] */
    int split_compute;           /* 1: stage times are the whole tp group's (each GPU runs 1/tp);
                                  * 0: they are one GPU's already (workload=gpt) */
    int tp_comm;                 /* 1: simulate 2 tp collectives per layer in F and 2 in B, each of the
                                  * stage's boundary_bytes (a stage without layers counts as one) */
    int sequence_parallel;       /* tp collectives as reduce-scatter + all-gather pairs */
    int tp_in_ops;               /* 1: the ops' times hold their tp collectives' exposed part (tp.comm_overlap:
                                  * the cost model's, each beyond its GEMM); the engine runs none */
    double grad_bytes_per_param; /* bytes of one gradient element in the dp all-reduce */
    double bucket_bytes;         /* dp all-reduce bucket; 0 = one bucket per stage */
    int overlap;                 /* buckets become ready during the stage's last weight-gradient op; with the
                                  * distributed optimizer the parameter all-gather also runs under the first
                                  * forward (Megatron's overlap_grad_reduce and overlap_param_gather) */
    int distributed_optimizer;   /* 1: Megatron's distributed optimizer (ZeRO-1): each bucket is reduce-
                                  * scattered instead of all-reduced, each rank steps its 1/dp shard, and the
                                  * updated parameters (param_bytes_per_param each) are all-gathered: at the
                                  * iteration's start, the rank's first op waiting for them, with overlap (the
                                  * gather of the step before, under this iteration's first forward), after
                                  * the optimizer step without */
    double param_bytes_per_param;/* bytes of one parameter in that all-gather (bf16: 2) */
    /* ZeRO-2 and ZeRO-3 / FSDP (experiment.h dp_shard_mode; NONE and
     * OPTIMIZER run the buckets above), per layer on the reducer's one
     * communication stream (gradsync.c): GRADIENTS reduce-scatters each
     * layer's gradient (its share of the stage's grad_bytes) after the
     * layer's piece of every weight-gradient op (W, BW) and all-gathers the
     * updated parameters after the optimizer step; FULL also all-gathers each
     * layer's parameters (param_bytes_per_param) before its piece of every
     * F, B and BW, the first at the op's start, the next once the layer
     * before has started (prefetch), and gathers nothing after the step.
     * Both over shard groups of shard_group consecutive replicas; with
     * shard_group < dp (HSDP) each rank's sharded gradient (1/shard_group)
     * is then all-reduced across the dp / shard_group groups, once, when the
     * rank has run its list.  A stage's op runs in one piece per layer (a
     * stage without layers: one). */
    dp_shard_mode sharding;
    int shard_group;             /* replicas of a shard group (divides dp); 0 = dp */
    dp_algo algo;                /* AUTO and RING: NCCL's rings (collectives.h: one per NIC across nodes);
                                  * HIERARCHICAL: in node, across, in node (all-reduces only) */
    int stepwise_collectives;    /* 1: ring steps one by one (collectives.h STEPWISE); 0: FUSED */
    const double *optimizer_s;   /* [pp] optimizer step of each rank, seconds; NULL = none */
    double embed_sync_bytes;     /* per GPU: the tied word embedding's gradient, which the first stage's and the
                                  * last stage's GPUs (of each replica and tp / cp rank) all-reduce after the
                                  * data-parallel reduction, before the optimizer step (Megatron's
                                  * _allreduce_embedding_grads); 0 = none, or both stages on one rank */
    /* Context and expert parallelism (0 or 1: none).  With cp > 1 a rank's
     * group is tp x cp GPUs, at index ((r * dp + d) * cp + c) * tp + t of gpu
     * (Megatron's order: tp, cp, dp, pp); split_compute then splits a stage's
     * time over tp x cp.  ep > 1 (dividing dp) groups ep consecutive replicas
     * for the MoE all-to-alls; with expert_tp1 (experts whole on each GPU,
     * Megatron's expert tensor parallelism 1) the groups are ep consecutive
     * GPUs in that order instead (ep divides tp x cp x dp, and tp x cp
     * divides ep or ep divides tp x cp). */
    int cp, ep;
    int expert_tp1;
    int ep_hybrid;               /* 1: HybridEP's dispatch (costmodel.h a2a_scales, with the workload's
                                  * moe_experts and moe_top_k) */
    int overlap_pairs;           /* 1: ops marked overlap_next (schedule.h) run as overlapped pairs */
    int combined_pairs;          /* 1: a pair is Megatron-Core's combined 1F1B step (sched_params.ep_overlap): it
                                  * starts once both ops' inputs are in, runs the two computes back to back with
                                  * both ops' all-to-alls at once beside them, and both outputs leave at its end */
} sim_parallel;

/* Which replay runs (engine_internal.h): AUTO, the replay without actors
 * (every job kind); ACTORS, the actor replay (the reference: key
 * sim.engine=actors, comparisons, tests). */
typedef enum { SIM_ENGINE_AUTO = 0, SIM_ENGINE_ACTORS } sim_engine;

/* How many data-parallel replicas are simulated (replicas.c).  AUTO: one
 * for all when the job is symmetric (sim_replicas_symmetric), every one
 * otherwise; ALL: every one (the reference the shortcut is tested against). */
typedef enum { SIM_REPLICAS_AUTO = 0, SIM_REPLICAS_ALL } sim_replicas;

typedef struct sim_input {
    const schedule *sched;
    const workload *wl;
    const platform_desc *plat;
    const int *rank_gpu;       /* [pp] index into plat->gpu of each pipeline rank */
    int zero_byte_messages;    /* network=ideal: messages carry no bytes, only latency */
    const memplan *plan;          /* offload / recompute choices; NULL or empty: none (copyengine.c's header) */
    const sim_parallel *par;      /* tensor / data parallelism; NULL: tp = dp = 1, no optimizer step */
    copy_model_kind copy_model;   /* offload copies' streams (copyengine.c); 0: duplex */
    int copy_slots;               /* unfinished D2H copies a rank may have (admission); 0: no limit */
    sim_engine engine;            /* AUTO (0) or ACTORS */
    sim_replicas replicas;        /* AUTO (0) or ALL */
} sim_input;

#define SIM_WHY_MAX 160

typedef struct sim_outcome {
    int completed;             /* 1 if every op ran */
    long ops_done, ops_total;
    char blocked[PG_MSG_MAX];  /* on deadlock: each blocked rank's next op and what it waits for */
    double wall_s;             /* host time spent in simgrid_run */
    long events;               /* executions + transfers simulated */
    int replicas;              /* data-parallel replicas of the job (dp) */
    int replicas_simulated;    /* of which simulated: the block when symmetric (1: one for all), else replicas */
    char replicas_why[SIM_WHY_MAX];   /* "symmetric", "dp.replicas=all", "not symmetric: ..." */
    int actorless;             /* 1: the replay without actors ran (eventreplay.c); 0: the actor replay */
    int judged;                /* 1: not simulated again: the run offload=plan's judge simulated for this
                                * plan in a child (job/job_offload.c), the same inputs */
} sim_outcome;

/* Runs the simulation, filling tl.  Returns 0, PG_EXIT_DEADLOCK (with the
 * blocked ops in st and out->blocked), or PG_EXIT_INPUT for a platform SimGrid
 * refuses. */
int sim_run(const sim_input *in, timeline *tl, sim_outcome *out, pg_status *st);

/* b >= 1 if the first b data-parallel replicas may stand for all of in's
 * dp replicas, exactly, b < dp the smallest such block (replicas.c: a
 * generated cluster with mirror routes, no node holding GPUs of two blocks,
 * every block placed like the first, one GPU type, expert-parallel groups
 * inside a block; b = 1: one replica for all); 0 otherwise.  why (may be
 * NULL) says which, or the first condition that fails for b = 1.  Plain C:
 * no SimGrid. */
int sim_replicas_symmetric(const sim_input *in, char *why, size_t why_len);

/* After SimGrid loaded in->plat (sim_run does it): PG_EXIT_INPUT, naming the
 * file and a GPU's line, if two GPUs the job uses (or, with offloading, a
 * GPU and its host memory) have no route; 0 otherwise or for a generated
 * platform (routecheck.c). */
int sim_check_routes(const sim_input *in, pg_status *st);

#endif
