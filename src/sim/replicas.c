/* replicas.c: when one data-parallel replica may stand for all (sim.h,
 * sim_replicas_symmetric).  The one place that decides it.
 *
 * The replicas of a job run the same op lists and interact only through
 * the gradient all-reduce: per pipeline rank and group GPU t, a ring in
 * which member d sends to member d + 1 (gradsync.c, collectives.h).  With
 * dp.overlap that traffic shares links with each replica's own pipeline.
 * When the job is symmetric, every replica's timeline is replica 0's: the
 * permutation d -> d + 1 maps the platform's loaded links and the flows on
 * them onto themselves, so SimGrid's max-min sharing (CM02: shares weighted
 * by route latency) gives every replica's flows the rates of replica 0's.
 * Member 0's ring edge loads its own NIC out and member 1's NIC in; member
 * 1's NIC in carries what member 0's carries.  So replica 0 alone, with its
 * ring edge sent over the mirror route (its own NIC out, the core, its own
 * NIC in: platform.h), sees every flow it shares a link with at the rates
 * of the full simulation, and the ring's time is the full ring's.
 *
 * Symmetric here means, conservatively (each condition is needed by the
 * argument above; anything else falls back to simulating every replica):
 *   - a generated cluster with mirror routes (network=cluster): one GPU
 *     type, identical nodes, one NIC per GPU, a non-blocking core that
 *     bounds a flow only at the NIC rate (FATPIPE), so the mirror route has
 *     the bandwidth and latency of every ring edge;
 *   - no expert parallelism (its all-to-alls join replicas at every layer);
 *   - every node holds GPUs of a single replica, so two members of a ring
 *     never share a node (every edge crosses the core, the hierarchical
 *     all-reduce never applies) and no link carries two replicas' traffic
 *     other than the ring's;
 *   - every replica placed like replica 0: each of its GPUs has the local
 *     rank (NIC) of replica 0's GPU of the same rank and group index, and
 *     its GPUs share nodes exactly as replica 0's do.
 *
 * Blocks (issue 35).  Where replicas share nodes (tp x cp below a node's
 * GPUs) or meet in expert-parallel groups, one replica cannot stand for
 * all, but a block of b consecutive replicas can: the same argument with the
 * shift d -> d + b.  Conditions: b divides dp and is a multiple of ep (the
 * all-to-alls stay inside a block), no node holds GPUs of two blocks,
 * replica d is placed like replica d mod b (local ranks, GPUs, node sharing),
 * every data-parallel ring's first and last block members sit on different
 * nodes (the edge leaving the block, sent back to its first member, crosses
 * nodes as the real one does: collectives.h's block rings), and no
 * hierarchical all-reduce when replicas share nodes.  The smallest such b
 * below dp is simulated (replicas 0..b-1: their ops, pipelines, tp / cp
 * rings, all-to-alls, copy engines and host links in full) and block 0's
 * timeline is every block's.  b = 1 is the case above.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "util/error.h"

static int say(char *why, size_t len, int verdict, const char *fmt, ...)
{
    if (why != NULL && len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return verdict;
}

/* The GPU of (rank r, replica d, group index t). */
static const pg_gpu *gpu_of(const sim_input *in, int grp, int r, int d, int t)
{
    return &in->plat->gpu[in->par->gpu[((size_t)r * in->par->dp + (size_t)d) * grp + t]];
}

/* Blocks of b consecutive replicas repeat (header): no node holds GPUs of
 * two blocks, replica d is placed like replica d mod b (local rank, GPU,
 * its GPUs sharing nodes alike), every data-parallel ring leaves a block b >
 * 1 between two nodes, b is a multiple of ep, and b = 1 or no hierarchical
 * all-reduce; 0 with the reason in why otherwise. */
static int blocks_repeat(const sim_input *in, int grp, int nodes, int b, char *why, size_t len)
{
    const sim_parallel *par = in->par;
    int pp = in->sched->pp, dp = par->dp, ep = par->ep > 1 ? par->ep : 1;
    if (par->expert_tp1)   /* the replicas of one expert group: ep consecutive GPUs (sim.h) */
        ep = ep > grp ? ep / grp : 1;
    if (b % ep != 0)
        return say(why, len, 0, "not symmetric: expert parallelism joins the replicas (ep = %d)", ep);
    int *owner = pg_xmalloc((size_t)nodes * sizeof *owner);   /* replica holding GPUs of node k, -1 none */
    int *image = pg_xmalloc((size_t)nodes * sizeof *image);   /* node of block q standing for block 0's node k */
    int *preimage = pg_xmalloc((size_t)nodes * sizeof *preimage);
    int ok = 1, shared = 0;
    for (int k = 0; k < nodes; k++)
        owner[k] = -1;
    for (int q = 0; ok && q < dp / b; q++) {
        for (int k = 0; k < nodes; k++)
            image[k] = preimage[k] = -1;
        for (int d = q * b; ok && d < (q + 1) * b; d++) {
            for (int r = 0; ok && r < pp; r++) {
                for (int t = 0; ok && t < grp; t++) {
                    const pg_gpu *g = gpu_of(in, grp, r, d, t), *g0 = gpu_of(in, grp, r, d % b, t);
                    if (owner[g->node] >= 0 && owner[g->node] / b != q)
                        ok = say(why, len, 0, "not symmetric: node %d holds GPUs of replicas %d and %d", g->node,
                                 owner[g->node], d);
                    else if (g->local_rank != g0->local_rank || g->speed_flops != g0->speed_flops ||
                             g->memory_bytes != g0->memory_bytes || strcmp(g->type, g0->type) != 0)
                        ok = say(why, len, 0, "not symmetric: replica %d's GPU of rank %d, index %d differs from "
                                 "replica %d's (local rank, speed, memory or type)", d, r, t, d % b);
                    else if ((image[g0->node] >= 0 && image[g0->node] != g->node) ||
                             (preimage[g->node] >= 0 && preimage[g->node] != g0->node))
                        ok = say(why, len, 0, "not symmetric: replica %d's GPUs share nodes unlike replica %d's", d,
                                 d % b);
                    if (owner[g->node] >= 0 && owner[g->node] != d)
                        shared = 1;
                    owner[g->node] = d;
                    image[g0->node] = g->node;
                    preimage[g->node] = g0->node;
                }
            }
        }
    }
    /* A block ring's edge out of the block must cross nodes like the real
     * one (collectives.h): its first and last members on different nodes. */
    for (int r = 0; ok && b > 1 && r < pp; r++)
        for (int t = 0; ok && t < grp; t++)
            if (gpu_of(in, grp, r, 0, t)->node == gpu_of(in, grp, r, b - 1, t)->node)
                ok = say(why, len, 0, "not symmetric: a block of %d replicas holds a data-parallel ring on one "
                         "node", b);
    if (ok && shared && par->algo == DP_ALGO_HIERARCHICAL)
        ok = say(why, len, 0, "not symmetric: replicas share nodes and dp.algorithm=hierarchical");
    free(owner);
    free(image);
    free(preimage);
    return ok;
}

int sim_replicas_symmetric(const sim_input *in, char *why, size_t why_len)
{
    const sim_parallel *par = in->par;
    if (par == NULL || par->dp <= 1)
        return say(why, why_len, 0, "one replica (dp = 1)");
    if (in->replicas == SIM_REPLICAS_ALL)
        return say(why, why_len, 0, "dp.replicas=all");
    if (!in->plat->mirror_routes)
        return say(why, why_len, 0, "not symmetric: only a generated cluster (network=cluster) is known to be");
    if (par->gpu == NULL)
        return say(why, why_len, 0, "not symmetric: no GPU map");
    int grp = (par->tp > 1 ? par->tp : 1) * (par->cp > 1 ? par->cp : 1), dp = par->dp, nodes = 0;
    size_t n = (size_t)in->sched->pp * (size_t)dp * (size_t)grp;
    for (size_t i = 0; i < n; i++) {
        if (par->gpu[i] < 0 || par->gpu[i] >= in->plat->ngpus)
            return say(why, why_len, 0, "not symmetric: GPU %d is not on the platform", par->gpu[i]);
        if (in->plat->gpu[par->gpu[i]].node + 1 > nodes)
            nodes = in->plat->gpu[par->gpu[i]].node + 1;
    }
    /* The smallest block that repeats; the reason given is the first
     * block size's (one replica for all), the shortcut most jobs get. */
    char first_why[SIM_WHY_MAX] = "";
    for (int b = 1; b < dp; b++) {
        if (dp % b != 0)
            continue;
        if (blocks_repeat(in, grp, nodes, b, b == 1 ? first_why : NULL, sizeof first_why)) {
            if (b == 1)
                return say(why, why_len, 1, "symmetric");
            return say(why, why_len, b, "symmetric in blocks of %d replicas%s", b,
                       par->ep > 1 ? " (expert-parallel groups)" : " (replicas share nodes)");
        }
    }
    return say(why, why_len, 0, "%s", first_why);
}
