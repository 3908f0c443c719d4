/* collectives.h: NCCL-style collectives as SimGrid transfers between GPU
 * hosts, over the platform's routes (so they share links, NICs and NVLink
 * ports with everything else in flight).
 *
 * Ring algorithm, n GPUs, a buffer of `bytes` on every GPU:
 *   reduce-scatter  n-1 steps; in each, every GPU i sends bytes/n to GPU
 *                   i+1 (mod n) and the step ends when all n transfers have
 *   all-gather      the same, n-1 steps
 *   all-reduce      reduce-scatter then all-gather: 2(n-1) steps
 * Uncontended, with route latency L and bandwidth B on every ring edge, a
 * collective of S steps takes S L + S bytes / (n B): for the all-reduce the
 * alpha-beta formula 2(n-1) L + 2(n-1)/n bytes / B, exactly with the exact
 * network model replay.c configures.
 *
 * Two ways to simulate the steps:
 *   COLL_STEPWISE  each step is n transfers, then a wait for all of them:
 *                  S n transfers, step-synchronous like NCCL's ring.
 *   COLL_FUSED     each ring edge carries all its steps' bytes as one
 *                  transfer (n transfers in all), then the calling actor
 *                  sleeps (S - 1) L for the latencies of the other steps.
 *                  Uncontended it gives the same time as STEPWISE, exactly;
 *                  under contention the shared bandwidth applies to the
 *                  whole volume at once instead of step by step.  For the
 *                  many small tensor-parallel collectives of every op.
 * `count` collectives of the same size run back to back (a layer's worth, or
 * a whole op's): STEPWISE repeats them, FUSED adds up their steps.
 *
 * Several disjoint rings run at once (the tp data-parallel groups of one
 * pipeline stage, the per-node rings of a hierarchical all-reduce): their
 * transfers of one step are started together and waited for together.
 *
 * Hierarchical all-reduce (a group spread over several nodes with g > 1 of
 * its GPUs on each): reduce-scatter inside each node (NVLink), all-reduce of
 * the resulting bytes/g shard across nodes on g rings at once (one per local
 * index, each over its own NIC: rail-aligned), all-gather inside each node.
 *
 * Channel rings (coll_rings_add_channels): NCCL's rings on DGX-class nodes,
 * one per NIC; a "node" is an NVLink domain (the platform's node of a GPU:
 * 72 GPUs on an NVL72 rack, model/cluster.c).  A group spread over several nodes with m > 1 of its GPUs
 * on each runs m rings at once, each carrying 1/m of the bytes; ring c
 * visits every node's members rotated by c, so it leaves node k from its
 * member (c - 1) mod m and enters node k + 1 at member c: each member's NIC
 * carries one ring out and one in, and the group's cross-node traffic
 * spreads over all its NICs (rail-aligned, as NCCL lays its channels).
 * Each member's NVLink port carries m - 1 of the rings, its NIC one, so
 * uncontended, with one latency L on every route, a pass of n - 1 steps takes
 *   (n - 1) L + (n - 1)/n x bytes / min(B_nvlink x m/(m - 1), m x B_nic)
 * (costmodel_ring_bw: the calibration's surrogate uses the same).
 * A group inside one node (or unevenly spread) is one ring.
 *
 * Their transfers.  In every one of the m rings a member sends to the same
 * next member of its node (local index i to i + 1 mod m) or, once, to the
 * next node's member i + 1 mod m; so the m rings are kept as one coll_ring
 * (ring 0's order, channels = m) whose round is 2 transfers per member: the
 * m - 1 edges to the next member of its node as one transfer of their bytes,
 * and the edge to the next node.  Each member's NVLink port and NIC then
 * carry exactly the bytes the m rings put there, and uncontended the round
 * ends at the same time, with 2n transfers instead of m x n: SimGrid's cost
 * grows with the square of the transfers in flight, and a data-parallel
 * group of 128 GPUs on two 64-GPU domains ran 8,192 per bucket (a GB300
 * job of 256 GPUs took minutes, 0.2 s now).  What changes is the share
 * against other traffic on the NVLink port: the m - 1 edges count as one
 * flow there.  As block rings (below) of whole nodes they stay one, the
 * transfers leaving the block's last node going to its first; of a part of
 * a node, they become the m rings.
 *
 * Mirror rings (coll_rings_add_mirror): a ring of n GPUs of which only
 * host[0] is simulated, because the other members are exact copies of it
 * (symmetric data-parallel replicas, src/sim/replicas.c).  Its one edge
 * carries member 0's share, the same bytes as every edge of the full ring,
 * from host[0] to host[0] over the platform's mirror route (platform.h:
 * host[0]'s own NIC out, the core, its own NIC in): the links that member
 * 0's outgoing edge loads at the sender and its incoming edge at the
 * receiver, which in a symmetric job carry the same flows as the receiving
 * member's.  Step counts and the latency of the other steps are the full
 * ring's (n members, the largest latency of its real edges).
 *
 * Block rings (coll_rings_simulate_block): the generalisation of mirror
 * rings to symmetric replicas that share nodes or meet in expert-parallel
 * groups, where a block of b consecutive members is simulated for all
 * (src/sim/replicas.c).  Each ring keeps its first b members, which the
 * block's nodes hold (ring order visits them first); its edges inside the
 * block are the real ones, and the edge leaving the block, from its last
 * member to the next block's first, goes back to the block's own first
 * member: a real route between two nodes that loads the sender's NIC out
 * and the receiver's NIC in, which in a job symmetric under shifting every
 * member by b carry the same flows as the next block's.  Bytes per edge,
 * step counts and latencies stay the full ring's (n members).  A mirror
 * ring is the block ring of b = 1.
 *
 * Every function here but coll_start blocks the calling SimGrid actor until
 * its transfers are done; none records anything (the engine does).  With the engine's
 * files (engine_internal.h) and sgshim.cpp, the only SimGrid users.
 */
#ifndef PG_SIM_COLLECTIVES_H
#define PG_SIM_COLLECTIVES_H

#include <simgrid/forward.h>

typedef enum { COLL_ALLREDUCE = 0, COLL_REDUCE_SCATTER, COLL_ALLGATHER } coll_kind;
typedef enum { COLL_STEPWISE = 0, COLL_FUSED } coll_mode;

/* A ring: host[i] sends to host[(i + 1) % n]; a mirror ring only
 * host[0] to itself (header). */
typedef struct coll_ring {
    int n;
    sg_host_t *host;          /* [n] */
    double max_latency_s;     /* largest route latency of an edge (FUSED's sleeps) */
    int nsim;                 /* edges simulated: n; a block ring's members (< n); 1: a mirror ring */
    double share;             /* part of the collective's bytes this ring carries (channel rings: 1/m) */
    int channels;             /* 1: a ring; m > 1: m channel rings as one (header: their transfers) */
} coll_ring;

/* Several rings that run together. */
typedef struct coll_rings {
    int count;
    coll_ring *ring;          /* [count] */
} coll_rings;

/* Steps of one collective of kind k on n GPUs (0 when n <= 1). */
int coll_steps(coll_kind k, int n);

/* Append a ring over hosts[0..n) (copied) to rs; edge latencies looked up
 * now (a platform must be loaded). */
void coll_rings_add(coll_rings *rs, const sg_host_t *hosts, int n);
/* The same ring as a mirror ring (header): hosts[0..n) give the latencies,
 * only hosts[0] sends. */
void coll_rings_add_mirror(coll_rings *rs, const sg_host_t *hosts, int n);
/* The group hosts[0..n), whose node numbers are node[i], as NCCL's channel
 * rings (header): m rings of share 1/m, kept as one coll_ring of m channels,
 * when it spans nodes with m > 1 of its GPUs on each, else one ring.
 * Returns the number of rings (channels) it stands for. */
int coll_rings_add_channels(coll_rings *rs, const sg_host_t *hosts, const int *node, int n);
/* Rings from index `from` on of rs become block rings (header) of their
 * first nsim hosts (1 <= nsim; rings of at most nsim members are left whole;
 * a coll_ring of m channels stays one where m divides nsim, else becomes
 * the m rings, each a block ring). */
void coll_rings_simulate_block(coll_rings *rs, int from, int nsim);
void coll_rings_free(coll_rings *rs);

/* Run count back-to-back collectives of kind k, bytes per GPU each, on every
 * ring of rs at once.  Returns the transfers simulated. */
long coll_run(coll_kind k, const coll_rings *rs, double bytes, int count, coll_mode mode);

/* The same without an actor (the replay without actors, eventreplay.c):
 * starts coll_run's transfers as one-sided transfers (sgshim.h's
 * sgx_transfer) and timers, the same activities at the same dates, and
 * calls done(arg) once coll_run would have returned (at once, from inside
 * coll_start, when there is nothing to run).  Returns the transfers it
 * will simulate.  Needs sgx_events_init. */
typedef void (*coll_done_fn)(void *arg);
long coll_start(coll_kind k, const coll_rings *rs, double bytes, int count, coll_mode mode, coll_done_fn done,
                void *arg);

/* A hierarchical all-reduce of one or more groups, built by coll_hier_add. */
typedef struct coll_hier {
    coll_rings intra;         /* one ring per (group, node) */
    coll_rings inter;         /* one ring per (group, local index) */
    int local;                /* GPUs of a group per node (the same for all) */
} coll_hier;

/* Add a group of n hosts whose node numbers are node[i].  Returns 1 if the
 * group spans several nodes with the same number (> 1) of its GPUs on each
 * and that number matches the groups added before; 0 otherwise (nothing
 * added: a flat ring is the way for it). */
int coll_hier_add(coll_hier *h, const sg_host_t *hosts, const int *node, int n);
void coll_hier_free(coll_hier *h);

/* The hierarchical all-reduce of bytes per GPU on every group of h at once. */
long coll_hier_allreduce(const coll_hier *h, double bytes, coll_mode mode);
/* The same without an actor (as coll_start): adds its transfers to
 * *transfers as its phases start, calls done(arg) when it is over. */
void coll_hier_start(const coll_hier *h, double bytes, coll_mode mode, long *transfers, coll_done_fn done, void *arg);

#endif
