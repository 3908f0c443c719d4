/* engine_internal.h: what the engine's files share (the engine's contract
 * is sim.h's; none of this is visible outside src/sim).
 *
 * The replay is split by concern, one file each, every one with a header
 * comment stating what it simulates and a SimGrid log subcategory of
 * pg_engine (PIPEGRID_SIM_LOG=pg_engine.thres:debug traces them all):
 *   replay.c      sim_run, SimGrid's setup, the compute actor's op loop,
 *                 the replicas' state, the outcome (pg_engine)
 *   p2p.c         stage-boundary channels: eager transfers, draining,
 *                 dependency waits (pg_engine_p2p)
 *   copyengine.c  the memory plan: offload copies (duplex, single stream,
 *                 paired ranks), admission, reloads, recomputes
 *                 (pg_engine_copy); the one place that consumes plan fields
 *   tpgroup.c     an op's compute on its tp x cp group, tensor-parallel
 *                 collectives, context-parallel K/V rings (pg_engine_tp)
 *   gradsync.c    gradient buckets, reducers, the optimizer step
 *                 (pg_engine_dp)
 *   expert.c      expert-parallel all-to-alls, DualPipeV's overlapped pairs
 *                 (pg_engine_ep)
 *   deadlock.c    naming each blocked rank's op when the run stalls
 *                 (pg_engine_deadlock)
 *   replicas.c    whether one replica may stand for all (no SimGrid)
 * The whole state of the one simulation of the process is `eng` (SimGrid
 * allows no second simulation per process, so a global costs nothing and
 * keeps every actor's argument a single pointer). */
#ifndef PG_SIM_ENGINE_INTERNAL_H
#define PG_SIM_ENGINE_INTERNAL_H

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/semaphore.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xbt/log.h>

#include "model/costmodel.h"
#include "sim/actmem.h"
#include "sim/collectives.h"
#include "sim/sgshim.h"
#include "sim/sim.h"

#define MAILBOX_NAME_MAX 48

struct replica;

/* One collective an op runs after its compute (tp all-reduce, or reduce-
 * scatter + all-gather with sequence parallelism, cp key/value ring), and
 * how the timeline records it (tpgroup.c). */
#define ENG_OP_COLLS_MAX 3
typedef struct eng_coll {
    coll_kind kind;
    const coll_rings *rings;
    double bytes;               /* per GPU, each of count */
    int count;
    coll_mode mode;
    double rec_bytes;           /* the record's bytes */
    int rec_kind;               /* tl_coll kind */
} eng_coll;

/* One stage boundary in one direction between two ranks. */
typedef struct channel {
    int used;                   /* 0: both stages on one rank, or no such boundary */
    int stage;                  /* producing stage */
    xfer_kind kind;
    int src_rank, dst_rank;
    double bytes;
    char name[MAILBOX_NAME_MAX];
    sg_mailbox_t mailbox;
    unsigned char *arrived;     /* [m] drained from the mailbox (without actors: arrived) */
    struct rank_state *dst;
} channel;

/* One copy engine (D2H or H2D) of a GPU: a queue of (stage, mb) items. */
typedef struct copy_engine {
    copy_dir dir;
    int total;                  /* items it will copy in the whole run */
    int *queue;                 /* [total] item indices, in the order queued */
    int head, tail;
    sg_sem_t work;              /* one token per queued item */
    sg_sem_t wake;              /* H2D: released when the awaited D2H ends */
    int waiting_item;           /* H2D: item whose D2H it waits for, -1 */
    struct rank_state *rs;
    struct copy_stream *stream; /* single / paired: the stream serving it; NULL: its own actor (duplex) */
    /* the replay without actors: the engine as a state machine (copyengine.c) */
    int busy;                   /* duplex: a copy is running (or waits for its reload slot) */
    int item;                   /* the item it copies */
    int pending;                /* its transfers not ended (one per GPU of the group) */
    double start_s;             /* when they started */
} copy_engine;

/* single / paired copy models: one copy stream serving the engines of one
 * rank (single) or of a pair of ranks (paired), one copy at a time. */
typedef struct copy_stream {
    int nengines;
    copy_engine *engine[4];     /* cyclic service order (copyengine.c) */
    int last;                   /* index of the engine served last */
    int total;                  /* copies of the whole run */
    sg_sem_t work;              /* one token per queued copy */
    sg_host_t host;             /* where its actor lives */
    int busy;                   /* without actors: a copy is running */
} copy_stream;

typedef struct rank_state {
    int rank;
    struct replica *rep;
    int record;                 /* replica 0: ops, transfers, copies go into the timeline */
    sg_host_t host;             /* the GPU (tp rank 0's with tensor parallelism) */
    double flops_per_ref_s;     /* flops that one second of reference time costs */
    int next;                   /* index of the next op to run */
    sg_sem_t wake;              /* released by the H2D engine when an awaited reload ends */
    sched_op blocked_pred;      /* what the next op waits for (deadlock report) */
    int blocked_on_local;       /* the predecessor is later in this rank's own list */
    double first_start_s, last_end_s;
    /* the replay without actors only */
    int busy;                   /* an op is running */
    int stopped;                /* waits for a predecessor later in its own list: for good */
    double op_start_s;          /* start of the running op */
    sched_op running;           /* the running op (not re-read from the list: a cache miss at 512 ranks) */
    int pieces, piece;          /* par: the running op's compute pieces (buckets released, overlap) */
    int ncolls, coll;           /* par: its collectives after the compute, and the one running */
    int gather;                 /* par: the parameter gather the running op waits for, -1 none */
    int gather_wait;            /* par: its compute ended before that gather */
    int lfirst, lpieces, lpiece;/* par, ZeRO-2/3: the running op's per-layer pieces (dp_rank.op_piece), 0 none */
    int lc_wait;                /* par, ZeRO-2/3: the layer gather its next piece waits for, -1 none */
    eng_coll colls[ENG_OP_COLLS_MAX]; /* par: those collectives */
    double coll_start_s;
    double a2a_start_s;         /* par: when it arrived at its all-to-alls */
    int pair;                   /* par: 1 the first op of an overlapped pair runs, 2 the second; 3 the first of
                                 * a combined step, 4 its second; 0 none */
    int pair_a2a;               /* the first's all-to-alls are still running */
    int pair_tail;              /* the second's compute and collectives ended, the first's all-to-alls not */
    double pair_mid_s;          /* the first's end, the second's record start */
    sched_op pair_first;
    /* memory plan only */
    sg_host_t cpu;              /* host-memory endpoint of the GPU's node */
    sg_host_t *tp_cpu;          /* [tp] with tp_host: each group GPU's, which copies its share too */
    copy_engine d2h, h2d;
    int *trig_first;            /* [nops + 1]: reloads queued on reaching op i are */
    int *trig_items;            /*   trig_items[trig_first[i] .. trig_first[i+1]) */
    int owns_triggers;          /* replica 0 computes them, the others share */
    int waiting_reload;         /* item whose H2D the compute actor waits for, -1 */
    int d2h_unfinished;         /* D2H copies queued and not ended (admission) */
    int waiting_admission;      /* the compute actor waits for a copy slot */
    int reached;                /* without actors: the op whose reloads are queued (eng_plan_reach_queue); -1 none */
    int release_wait;           /* without actors: a forward waits for its plan release date */
    double stall_start_s;       /* without actors: since when it waits for a reload or a copy slot */
    /* tensor / data parallelism only (par != NULL) */
    int tp;
    sg_host_t *tp_host;         /* [tp] */
    double *tp_flops_per_ref_s; /* [tp] */
    int tp_same_time;           /* every GPU of the group runs an op in the same time */
    coll_rings tp_ring;         /* cp rings of tp GPUs */
    coll_rings cp_ring;         /* tp rings of cp GPUs */
    struct ep_group *ep;        /* the expert-parallel group of this rank's replica, NULL: none */
} rank_state;

/* The replicas whose GPUs exchange one pipeline rank's expert all-to-alls:
 * ep replicas (experts split over tp: GPU i of each trades with GPU i of
 * the others), or with expert tensor parallelism 1 the ep / (tp x cp)
 * replicas whose ep GPUs, consecutive in Megatron's order, trade among
 * themselves (one replica, several exchanges, when ep <= tp x cp). */
typedef struct ep_group {
    int first;                  /* first replica */
    int nrep;                   /* replicas in the group */
    int rank;                   /* the pipeline rank */
    /* without actors (expert.c, eng_ep_events_arrive) */
    int ev_arrived;             /* members arrived for the current op */
    size_t ev_pending;          /* its transfers not ended */
    sched_op ev_op;             /* what the all-to-alls are recorded under */
    int ev_count;               /* its all-to-alls (a combined step's: both ops') */
    double ev_bytes;            /* their bytes per GPU in all */
    sgx_fn ev_release;          /* what each member does once released */
    sg_bar_t bar;
    double latency_s;           /* largest route latency between two members' GPUs */
    a2a_scales scales;          /* the dispatcher's bytes per in-node and cross-node pair (costmodel.h) */
    struct ep_flow *flow;       /* [nflows] the transfers of one exchange (expert.c eng_ep_setup) */
    int nflows;
} ep_group;

/* One data-parallel replica of the pipeline. */
typedef struct replica {
    int index;
    rank_state *ranks;          /* [pp] */
    channel *activation;        /* [nstages]: F(s) -> F(s+1) */
    channel *gradient;          /* [nstages]: B(s) -> B(s-1) */
    unsigned char *done;        /* [OP_KIND_COUNT][nstages][m] */
    unsigned char *offloaded;   /* memory plan: [nstages * m] D2H ended */
    unsigned char *reloaded;    /* memory plan: [nstages * m] H2D ended */
} replica;

/* A pipeline rank's gradient reduction across the replicas (reducer actor). */
typedef struct dp_rank {
    int rank;
    int nbuckets;
    double *bucket_bytes;       /* [nbuckets] per GPU */
    int *bucket_stage;          /* [nbuckets] */
    unsigned char *bucket_expert; /* [nbuckets] 1: the experts' gradients, reduced over `expert`, not `flat` */
    int *ready;                 /* [nbuckets] replicas that have the bucket ready */
    int finished;               /* replicas whose rank ran its whole list */
    int waiting;                /* bucket the reducer waits for; nbuckets: waits for finished; -1 none */
    sg_sem_t wake;
    int *op_first_bucket;       /* [nops] overlap: buckets that op i releases, piece by piece */
    int *op_nbuckets;           /* [nops] */
    int use_hier;
    double grad_bytes;          /* sum of bucket_bytes: the rank's gradient per GPU */
    double expert_grad_bytes;   /* of it, the experts' (expert buckets) */
    /* Distributed optimizer with overlap (Megatron's overlap_param_gather):
     * the parameters of the rank's stages are gathered stage by stage in the
     * order of their first forwards, each forward waiting for its stage's
     * gather; the first is gathered from the iteration's start (dispatched
     * after the step before), stage k + 1's once stage k's first forward has
     * started on every replica (the forward's pre-hook prefetches the next). */
    int ngather;                /* stages of the rank */
    double *gather_bytes;       /* [ngather] per GPU, in that order, over `flat` */
    double *gather_expert_bytes; /* [ngather] the experts' part, gathered after it over `expert` */
    int *op_gather;             /* [nops] the gather op i waits for after its compute; -1 none */
    int *fwd_started;           /* [ngather] replicas whose stage k's first forward has started */
    int gather_wait;            /* the reducer waits for fwd_started[gather_wait]; -1 it does not */
    int gathered;               /* gathers done */
    int gather_waiting;         /* compute actors waiting on params_wake */
    sg_sem_t params_wake;
    /* ZeRO-2 / ZeRO-3 (sim.h sharding): the rank's per-layer collectives
     * of the whole run, in the order its ops issue them (gradsync.c), run one
     * at a time by the reducer once every replica has issued it; an op of
     * the rank runs in pieces, one per layer of its stage. */
    int nlc;
    coll_kind *lc_kind;         /* [nlc] all-gather of a layer's parameters or reduce-scatter of its gradient */
    double *lc_bytes;           /* [nlc] per GPU */
    int *lc_stage;              /* [nlc] */
    int *lc_issued;             /* [nlc] replicas that have issued it */
    int lc_done;                /* collectives done */
    int lc_waiting;             /* the reducer waits for lc_issued[lc_waiting]; -1 it does not */
    int lc_compute_waiting;     /* compute actors waiting on lc_wake for a gather */
    sg_sem_t lc_wake;
    int *op_piece;              /* [nops + 1] op i's pieces are op_piece[i] .. op_piece[i + 1]; NULL: no pieces */
    int *piece_gather;          /* [pieces] the all-gather the piece waits for, -1 none */
    int *piece_reduce;          /* [pieces] the reduce-scatter it issues when done, -1 none */
    double param_bytes;         /* the rank's parameters per GPU (param_bytes_per_param each) */
    coll_rings shard;           /* tp rings of shard_group GPUs (each shard group's) */
    coll_rings cross;           /* HSDP: rings of dp / shard_group GPUs, one shard group member each */
    coll_rings flat;            /* tp rings of dp GPUs */
    coll_rings expert;          /* with ep > 1: rings of the GPUs holding the same experts (the experts'
                                 * gradients and parameters; parallel_expert_dp GPUs each); none when
                                 * every GPU holds experts of its own */
    coll_hier hier;
    sg_host_t host;             /* where the reducer actor lives */
    /* the replay without actors: the reducer as a state machine (eventreplay.c) */
    int ev_state;               /* what it does or waits for next */
    int ev_busy;                /* a collective or the optimizer step is running (buckets: its index + 1) */
    int ev_bucket;              /* the next bucket to reduce */
    int ev_expert_part;         /* a parameter gather's experts' part is running (after its dense part) */
    double ev_start_s;
} dp_rank;

/* The one simulation of this process (SimGrid allows no second). */
typedef struct engine_state {
    const sim_input *in;
    const sim_parallel *par;    /* NULL: tp = dp = 1 */
    timeline *tl;
    int dp;                     /* the job's data-parallel replicas */
    int nrep;                   /* of which simulated: dp, or the symmetric block (1: mirrored) */
    int mirror;                 /* 1: the replicas are symmetric, the first nrep stand for all (replicas.c) */
    replica *rep;               /* [nrep] */
    long events;
    /* memory plan only (plan == NULL otherwise) */
    const memplan *plan;
    act_flow *flow;             /* [nstages * m], shared by the replicas */
    copy_stream *streams;       /* single / paired: [nstreams] */
    int nstreams;
    /* data parallelism / optimizer only */
    dp_rank *dpr;               /* [pp] */
    sg_bar_t opt_barrier;
    int embed_ranks[2];         /* the ranks of the first and the last stage (embed_sync_bytes > 0) */
    coll_rings embed_rings;     /* one 2-GPU ring per simulated replica and tp x cp rank; count 0: none */
    sg_bar_t embed_barrier;     /* the two ranks' reducers meet here once both have reduced */
    /* context / expert parallelism */
    int tp, cp, ep, grp;        /* grp = tp x cp GPUs per rank and replica */
    int expert_tp1;             /* sim_parallel.expert_tp1 */
    ep_group *epg;              /* [pp * dp / ep] */
    int events_mode;            /* 1: the replay without actors (eventreplay.c) */
    int ev_embed_arrived;       /* reducers at the tied embedding's barrier (without actors) */
    int ev_opt_arrived;         /* reducers at the optimizer's barrier (without actors) */
} engine_state;

extern engine_state eng;

/* p2p.c */
void eng_channel_setup(replica *rep, channel *c, int stage, xfer_kind kind, int src_stage_rank, int dst_stage_rank);
int eng_wait_for_input(rank_state *rs, sched_op op);
void eng_own_mailboxes(const rank_state *rs);
size_t eng_done_index(int kind, int stage, int mb);
void eng_send_output(rank_state *rs, sched_op op);
int eng_is_done(const replica *rep, sched_op op);
/* copyengine.c */
int eng_plan_setup(const sim_input *in, pg_status *st);
void eng_plan_start_actors(void);
size_t eng_item_of(int stage, int mb);
void eng_plan_before(rank_state *rs, sched_op op);
void eng_plan_reach(rank_state *rs, int i);
void eng_plan_after(rank_state *rs, sched_op op);
void eng_plan_free(void);
/* What eng_plan_reach / before / after decide, for both replays (the actor
 * replay waits on semaphores, the replay without actors in continuations): */
void eng_plan_reach_queue(rank_state *rs, int i);     /* queue the reloads triggered at op i */
double eng_plan_release_s(sched_op op);               /* the plan's start date of forward op; -1 none */
int eng_plan_reload_pending(const rank_state *rs, sched_op op); /* op waits for its activation's reload */
int eng_plan_recompute(sched_op op, int *kind, double *ref_s); /* a recompute before op: its kind, ref seconds */
int eng_plan_offload(rank_state *rs, sched_op op);    /* after op: queue its D2H; 1 if the op must wait for a slot */
void eng_plan_record_stall(const rank_state *rs, sched_op op, double start_s);
void eng_plan_events_start(void);                     /* without actors: the copy streams */
/* tpgroup.c */
int eng_op_colls(const rank_state *rs, sched_op op, eng_coll *list);
void eng_record_coll(const rank_state *rs, sched_op op, const eng_coll *c, double start_s, double end_s);
double eng_group_seconds(const rank_state *rs, double ref_s);
void eng_group_execute(rank_state *rs, double ref_s);
void eng_op_communication(rank_state *rs, sched_op op, int with_a2a);
/* gradsync.c */
void eng_dp_start_actors(void);
void eng_dp_finished(dp_rank *dr);
int eng_dp_sharded(void);
int eng_dp_shard_group(void);
void eng_lc_issue(dp_rank *dr, int k);
void eng_dp_record(const dp_rank *dr, tl_coll_kind kind, double bytes, int stage, int count, double start_s);
/* Experts (gradsync.c): whether their gradients and parameters have rings
 * of their own; bucket b's rings and whether it runs hierarchically; the
 * non-overlapped gather's dense (expert 0) or expert (1) bytes per GPU. */
int eng_dp_experts_apart(void);
const coll_rings *eng_dp_bucket_rings(const dp_rank *dr, int b);
int eng_dp_bucket_hier(const dp_rank *dr, int b);
double eng_dp_step_gather_bytes(const dp_rank *dr, int expert);
void eng_lc_record(const dp_rank *dr, int k, double start_s);
void eng_dp_signal(dp_rank *dr, int bucket);
void eng_dp_setup(const sim_input *in);
void eng_run_compute(rank_state *rs, int i, double ref_s);
void eng_dp_free(void);
/* expert.c */
void eng_ep_setup(const sim_input *in);
/* Replicas in one expert-parallel group (ep_group). */
int eng_ep_group_replicas(void);
void eng_ep_alltoall(rank_state *rs, sched_op op);
int eng_run_pair(rank_state *rs, sched_op first, sched_op second, double start_s);
/* Megatron's combined 1F1B step of first and second (sim.h combined_pairs;
 * expert.c's header); called with first's input in; 0 on deadlock. */
int eng_run_combined(rank_state *rs, sched_op first, sched_op second);
/* Without actors: rs arrives at its group's all-to-alls of op; 0 if op has
 * none (go on), 1 if it waits: release(member) is called for every member
 * once the all-to-alls are over. */
int eng_ep_events_arrive(rank_state *rs, sched_op op, sgx_fn release);
/* The same for a combined step: both ops' all-to-alls as one exchange,
 * recorded under first. */
int eng_ep_events_arrive_combined(rank_state *rs, sched_op first, sched_op second, sgx_fn release);
/* eventreplay.c */
void eng_events_reducer(dp_rank *dr);
void eng_events_reloaded(rank_state *rs);   /* the reload rs waited for has ended */
void eng_events_admitted(rank_state *rs);   /* rs's copy slot is free */
void eng_events_start(void);
void eng_events_free(void);
/* deadlock.c */
void eng_describe_blocked(sim_outcome *out);
/* replay.c */
int eng_group_gpu(int rank, int replica, int t);
void eng_finish_op(rank_state *rs, sched_op op, double start_s, double end_s);
void eng_record_op(rank_state *rs, sched_op op, int kind, double start_s, double end_s);

#endif
