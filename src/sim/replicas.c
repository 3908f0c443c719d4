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
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

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

/* Every replica placed like replica 0 on nodes of its own (header).
 * 0 with the reason in why otherwise. */
static int placement_symmetric(const sim_input *in, int grp, char *why, size_t len)
{
    const sim_parallel *par = in->par;
    const platform_desc *p = in->plat;
    int pp = in->sched->pp, dp = par->dp, nodes = 0;
    size_t n = (size_t)pp * (size_t)dp * (size_t)grp;
    for (size_t i = 0; i < n; i++) {
        if (par->gpu[i] < 0 || par->gpu[i] >= p->ngpus)
            return say(why, len, 0, "not symmetric: GPU %d is not on the platform", par->gpu[i]);
        if (p->gpu[par->gpu[i]].node + 1 > nodes)
            nodes = p->gpu[par->gpu[i]].node + 1;
    }
    int *owner = pg_xmalloc((size_t)nodes * sizeof *owner);   /* replica holding GPUs of node k, -1 none */
    int *image = pg_xmalloc((size_t)nodes * sizeof *image);   /* node of replica d standing for replica 0's node k */
    int *preimage = pg_xmalloc((size_t)nodes * sizeof *preimage);
    int ok = 1;
    for (int k = 0; k < nodes; k++)
        owner[k] = -1;
    for (int d = 0; ok && d < dp; d++) {
        for (int k = 0; k < nodes; k++)
            image[k] = preimage[k] = -1;
        for (int r = 0; ok && r < pp; r++) {
            for (int t = 0; ok && t < grp; t++) {
                const pg_gpu *g = &p->gpu[par->gpu[((size_t)r * dp + (size_t)d) * grp + t]];
                const pg_gpu *g0 = &p->gpu[par->gpu[(size_t)r * dp * grp + t]];
                if (owner[g->node] >= 0 && owner[g->node] != d)
                    ok = say(why, len, 0, "not symmetric: node %d holds GPUs of replicas %d and %d", g->node,
                             owner[g->node], d);
                else if (g->local_rank != g0->local_rank || g->speed_flops != g0->speed_flops ||
                         g->memory_bytes != g0->memory_bytes || strcmp(g->type, g0->type) != 0)
                    ok = say(why, len, 0, "not symmetric: replica %d's GPU of rank %d, index %d differs from "
                             "replica 0's (local rank, speed, memory or type)", d, r, t);
                else if ((image[g0->node] >= 0 && image[g0->node] != g->node) ||
                         (preimage[g->node] >= 0 && preimage[g->node] != g0->node))
                    ok = say(why, len, 0, "not symmetric: replica %d's GPUs share nodes unlike replica 0's", d);
                owner[g->node] = d;
                image[g0->node] = g->node;
                preimage[g->node] = g0->node;
            }
        }
    }
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
    if (par->ep > 1)
        return say(why, why_len, 0, "not symmetric: expert parallelism joins the replicas (ep = %d)", par->ep);
    if (par->gpu == NULL)
        return say(why, why_len, 0, "not symmetric: no GPU map");
    int grp = (par->tp > 1 ? par->tp : 1) * (par->cp > 1 ? par->cp : 1);
    if (!placement_symmetric(in, grp, why, why_len))
        return 0;
    return say(why, why_len, 1, "symmetric");
}
