/* collectives.c: ring and hierarchical collectives as SimGrid transfers
 * (collectives.h). */
#include "sim/collectives.h"

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/host.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sgshim.h"
#include "util/error.h"

int coll_steps(coll_kind k, int n)
{
    if (n <= 1)
        return 0;
    return k == COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
}

static int ring_edge_count(const coll_ring *r);
static sg_host_t edge_src(const coll_ring *r, int e);
static sg_host_t edge_dst(const coll_ring *r, int e);

/* Append a ring over hosts[0..n) of nsim simulated members, standing for
 * `channels` channel rings (header); its largest edge latency looked up. */
static void rings_add(coll_rings *rs, const sg_host_t *hosts, int n, int nsim, int channels)
{
    rs->ring = pg_xrealloc(rs->ring, (size_t)(rs->count + 1) * sizeof *rs->ring);
    coll_ring *r = &rs->ring[rs->count++];
    r->n = n;
    r->host = pg_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *r->host);
    memcpy(r->host, hosts, (size_t)n * sizeof *hosts);
    r->nsim = nsim;
    r->channels = channels;
    r->share = 1.0 / channels;
    /* a mirror ring's latency is its full ring's: every real edge (a block ring's are these too) */
    coll_ring full = *r;
    full.nsim = n;
    r->max_latency_s = 0.0;
    for (int e = 0; n > 1 && e < ring_edge_count(&full); e++) {
        double lat_s = sg_host_get_route_latency(edge_src(&full, e), edge_dst(&full, e));
        if (lat_s > r->max_latency_s)
            r->max_latency_s = lat_s;
    }
}

void coll_rings_add(coll_rings *rs, const sg_host_t *hosts, int n)
{
    rings_add(rs, hosts, n, n, 1);
}

void coll_rings_add_mirror(coll_rings *rs, const sg_host_t *hosts, int n)
{
    rings_add(rs, hosts, n, 1, 1);
}

/* Channel ring c of ring r (m channels, node blocks of m members in ring
 * 0's order): every node's members rotated by c (header). */
static void channel_order(const coll_ring *r, int c, sg_host_t *out)
{
    int m = r->channels;
    for (int b = 0; b < r->n / m; b++)
        for (int j = 0; j < m; j++)
            out[b * m + j] = r->host[b * m + (j + c) % m];
}

void coll_rings_simulate_block(coll_rings *rs, int from, int nsim)
{
    int count = rs->count;
    for (int i = from; i < count; i++) {
        if (nsim < 1 || nsim >= rs->ring[i].n)
            continue;
        if (rs->ring[i].channels > 1 && nsim % rs->ring[i].channels == 0) {   /* whole nodes: still one */
            rs->ring[i].nsim = nsim;
            continue;
        }
        if (rs->ring[i].channels > 1) {   /* back to its m rings, each a block ring */
            coll_ring merged = rs->ring[i];
            sg_host_t *order = pg_xmalloc((size_t)merged.n * sizeof *order);
            for (int c = 0; c < merged.channels; c++) {
                channel_order(&merged, c, order);
                rings_add(rs, order, merged.n, nsim, 1);
                rs->ring[rs->count - 1].share = merged.share;
            }
            free(order);
            free(merged.host);
            rs->ring[i] = rs->ring[--rs->count];   /* the last of the m takes its place */
            continue;
        }
        rs->ring[i].nsim = nsim;
    }
}

/* The group's distinct nodes in first-seen order (into nodes) and how many
 * of its members each has; returns the members per node when every node
 * has the same number, else 0. */
static int even_nodes(const int *node, int n, int *nodes, int *nn)
{
    int *per = pg_xcalloc((size_t)(n > 0 ? n : 1), sizeof *per);
    *nn = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < *nn && nodes[k] != node[i])
            k++;
        if (k == *nn)
            nodes[(*nn)++] = node[i];
        per[k]++;
    }
    int local = *nn > 0 ? per[0] : 0;
    for (int k = 1; k < *nn; k++)
        if (per[k] != local)
            local = 0;
    free(per);
    return local;
}

int coll_rings_add_channels(coll_rings *rs, const sg_host_t *hosts, const int *node, int n)
{
    int *nodes = pg_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *nodes), nn;
    int m = even_nodes(node, n, nodes, &nn);
    if (nn <= 1 || m <= 1) {
        free(nodes);
        coll_rings_add(rs, hosts, n);
        return 1;
    }
    /* ring 0: every node's members in first-seen order, the nodes in order */
    sg_host_t *ring = pg_xmalloc((size_t)n * sizeof *ring);
    int len = 0;
    for (int k = 0; k < nn; k++)
        for (int i = 0; i < n; i++)
            if (node[i] == nodes[k])
                ring[len++] = hosts[i];
    rings_add(rs, ring, n, n, m);
    free(ring);
    free(nodes);
    return m;
}

/* The transfers one round of ring r starts: its simulated edges, or a
 * channel ring's 2 per member (header). */
static int ring_edge_count(const coll_ring *r)
{
    if (r->n <= 1)
        return 0;
    return r->channels > 1 ? 2 * r->nsim : r->nsim;
}

/* Transfer e's source: member e, or a channel ring's member e / 2. */
static sg_host_t edge_src(const coll_ring *r, int e)
{
    return r->host[r->channels > 1 ? e / 2 : e];
}

/* Transfer e's destination: the next member, the block's first from its
 * last (a mirror ring's host[0] to itself: its mirror route); a channel
 * ring's member at local index i: e even, its node's member i + 1 mod m,
 * e odd, the next node's (of the block's nodes: the m block rings' edges
 * leaving the block go back to its first node, at the same places). */
static sg_host_t edge_dst(const coll_ring *r, int e)
{
    if (r->channels <= 1)
        return r->host[(e + 1) % r->nsim];
    int m = r->channels, q = e / 2, b = q / m, i = q % m, nodes = r->nsim / m;
    int to = (e % 2 == 0 ? b : (b + 1) % nodes) * m + (i + 1) % m;
    return r->host[to];
}

/* Transfer e's bytes in edges of one ring: a channel ring's transfer to its
 * own node carries m - 1. */
static double edge_weight(const coll_ring *r, int e)
{
    return r->channels > 1 && e % 2 == 0 ? (double)(r->channels - 1) : 1.0;
}

/* The bytes of one edge of ring r (edge_weight times for a channel ring's
 * transfers): FUSED, all steps of count collectives of kind k; STEPWISE,
 * scale steps' worth. */
static double ring_chunk(const coll_ring *r, coll_kind k, int count, double bytes_per_gpu, double scale, int fused)
{
    double edge = fused ? (double)coll_steps(k, r->n) * count * bytes_per_gpu / r->n : scale * bytes_per_gpu / r->n;
    return r->share * edge;
}

/* Start the edges of every ring of rs into comms; returns how many.  An
 * edge of a ring of n carries, FUSED (fused = 1), the bytes of all steps of
 * count collectives of kind k, steps x count x bytes_per_gpu / n; STEPWISE,
 * one step's, scale x bytes_per_gpu / n. */
static size_t start_edges(const coll_rings *rs, double bytes_per_gpu, double scale, coll_kind k, int count,
                          int fused, sg_comm_t *comms)
{
    size_t started = 0;
    for (int i = 0; i < rs->count; i++) {
        const coll_ring *r = &rs->ring[i];
        if (r->n <= 1)
            continue;
        double chunk = ring_chunk(r, k, count, bytes_per_gpu, scale, fused);
        for (int e = 0; e < ring_edge_count(r); e++)
            comms[started++] = sgx_sendto_async(edge_src(r, e), edge_dst(r, e), edge_weight(r, e) * chunk);
    }
    return started;
}

static size_t rings_edges(const coll_rings *rs)
{
    size_t total = 0;
    for (int i = 0; i < rs->count; i++)
        total += (size_t)ring_edge_count(&rs->ring[i]);
    return total;
}

void coll_rings_free(coll_rings *rs)
{
    for (int i = 0; i < rs->count; i++)
        free(rs->ring[i].host);
    free(rs->ring);
    memset(rs, 0, sizeof *rs);
}

/* Start one transfer per edge of every ring (bytes_per_gpu / n each, times
 * `scale` steps' worth), wait for them all; returns the transfers. */
static long ring_round(const coll_rings *rs, double bytes_per_gpu, double scale)
{
    size_t total = rings_edges(rs);
    if (total == 0)
        return 0;
    sg_comm_t *comms = pg_xmalloc(total * sizeof *comms);
    start_edges(rs, bytes_per_gpu, scale, COLL_ALLREDUCE, 1, 0, comms);
    sg_comm_wait_all(comms, total);
    free(comms);
    return (long)total;
}

/* The largest ring of rs (its members), and the largest edge latency of
 * its rings of more than one member into *max_lat_s. */
static int rings_extent(const coll_rings *rs, double *max_lat_s)
{
    int max_n = 0;
    *max_lat_s = 0.0;
    for (int i = 0; i < rs->count; i++) {
        if (rs->ring[i].n > max_n)
            max_n = rs->ring[i].n;
        if (rs->ring[i].n > 1 && rs->ring[i].max_latency_s > *max_lat_s)
            *max_lat_s = rs->ring[i].max_latency_s;
    }
    return max_n;
}

long coll_run(coll_kind k, const coll_rings *rs, double bytes, int count, coll_mode mode)
{
    double max_lat_s;
    int max_n = rings_extent(rs, &max_lat_s);
    if (max_n <= 1 || count <= 0)
        return 0;
    long transfers = 0;
    if (mode == COLL_STEPWISE) {
        /* Rings of different sizes take different step counts: a ring
         * that has finished its steps sits out the remaining rounds. */
        coll_rings active = {0, pg_xmalloc((size_t)rs->count * sizeof *active.ring)};
        for (int c = 0; c < count; c++) {
            for (int s = 0; s < coll_steps(k, max_n); s++) {
                active.count = 0;
                for (int i = 0; i < rs->count; i++)
                    if (s < coll_steps(k, rs->ring[i].n))
                        active.ring[active.count++] = rs->ring[i];
                transfers += ring_round(&active, bytes, 1.0);
            }
        }
        free(active.ring);
        return transfers;
    }
    /* FUSED: every edge carries its steps' volume at once (rings of other
     * sizes scale by their own step count), then the other steps' latencies. */
    size_t total = rings_edges(rs);
    sg_comm_t *comms = pg_xmalloc(total * sizeof *comms);
    size_t n_started = start_edges(rs, bytes, 1.0, k, count, 1, comms);
    sg_comm_wait_all(comms, n_started);
    free(comms);
    transfers += (long)n_started;
    double rest_s = ((double)coll_steps(k, max_n) * count - 1.0) * max_lat_s;
    if (rest_s > 0)
        sg_actor_sleep_for(rest_s);
    return transfers;
}

/* ---- without an actor (coll_start) ----------------------------------------- */

/* A collective in flight: FUSED, one round of every edge then the other
 * steps' latencies; STEPWISE, round after round (collective c, step s),
 * each of the rings still in their steps. */
typedef struct coll_job {
    coll_kind k;
    const coll_rings *rs;
    double bytes;
    int count, max_n, fused;
    double rest_s;            /* FUSED: the other steps' latencies */
    int c, s;                 /* STEPWISE: the round in flight */
    size_t pending;           /* its transfers not ended */
    coll_done_fn done;
    void *arg;
} coll_job;

static void job_finish(void *arg)
{
    coll_job *j = arg;
    coll_done_fn done = j->done;
    void *done_arg = j->arg;
    free(j);
    done(done_arg);
}

static void job_round(coll_job *j);

static void job_edge_done(void *arg, double start_s, double finish_s)
{
    (void)start_s;
    coll_job *j = arg;
    if (--j->pending > 0)
        return;
    if (j->fused) {
        if (j->rest_s > 0)
            sgx_at(finish_s + j->rest_s, job_finish, j);
        else
            job_finish(j);
        return;
    }
    if (++j->s >= coll_steps(j->k, j->max_n)) {
        j->s = 0;
        j->c++;
    }
    if (j->c >= j->count)
        job_finish(j);
    else
        job_round(j);
}

/* Start the round (c, s) of a STEPWISE job, or the one round of a FUSED
 * one: the same transfers as start_edges. */
static void job_round(coll_job *j)
{
    for (int i = 0; i < j->rs->count; i++) {
        const coll_ring *r = &j->rs->ring[i];
        if (r->n <= 1 || (!j->fused && j->s >= coll_steps(j->k, r->n)))
            continue;
        double chunk = ring_chunk(r, j->k, j->count, j->bytes, 1.0, j->fused);
        for (int e = 0; e < ring_edge_count(r); e++) {
            j->pending++;
            sgx_transfer(edge_src(r, e), edge_dst(r, e), edge_weight(r, e) * chunk, job_edge_done, j);
        }
    }
}

long coll_start(coll_kind k, const coll_rings *rs, double bytes, int count, coll_mode mode, coll_done_fn done,
                void *arg)
{
    double max_lat_s;
    int max_n = rings_extent(rs, &max_lat_s);
    if (max_n <= 1 || count <= 0) {
        done(arg);
        return 0;
    }
    coll_job *j = pg_xcalloc(1, sizeof *j);
    *j = (coll_job){.k = k, .rs = rs, .bytes = bytes, .count = count, .max_n = max_n,
                    .fused = mode != COLL_STEPWISE, .done = done, .arg = arg};
    long transfers = 0;
    if (j->fused) {
        j->rest_s = ((double)coll_steps(k, max_n) * count - 1.0) * max_lat_s;
        transfers = (long)rings_edges(rs);
    } else {
        for (int s = 0; s < coll_steps(k, max_n); s++)
            for (int i = 0; i < rs->count; i++)
                if (s < coll_steps(k, rs->ring[i].n))
                    transfers += (long)count * (long)ring_edge_count(&rs->ring[i]);
    }
    job_round(j);
    return transfers;
}

/* ---- hierarchical ----------------------------------------------------------- */

int coll_hier_add(coll_hier *h, const sg_host_t *hosts, const int *node, int n)
{
    /* Distinct nodes in first-seen order, and the group's GPUs on each. */
    int *nodes = pg_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *nodes), nn;
    int local = even_nodes(node, n, nodes, &nn);
    int ok = nn > 1 && local > 1 && (h->local == 0 || h->local == local);
    if (ok) {
        h->local = local;
        sg_host_t *ring = pg_xmalloc((size_t)(nn > local ? nn : local) * sizeof *ring);
        for (int k = 0; k < nn; k++) {       /* in-node rings, group order */
            int len = 0;
            for (int i = 0; i < n; i++)
                if (node[i] == nodes[k])
                    ring[len++] = hosts[i];
            coll_rings_add(&h->intra, ring, len);
        }
        for (int l = 0; l < local; l++) {    /* cross-node rings: the l-th GPU of every node */
            for (int k = 0; k < nn; k++) {
                int seen = 0;
                for (int i = 0; i < n; i++)
                    if (node[i] == nodes[k] && seen++ == l)
                        ring[k] = hosts[i];
            }
            coll_rings_add(&h->inter, ring, nn);
        }
        free(ring);
    }
    free(nodes);
    return ok;
}

void coll_hier_free(coll_hier *h)
{
    coll_rings_free(&h->intra);
    coll_rings_free(&h->inter);
    memset(h, 0, sizeof *h);
}

long coll_hier_allreduce(const coll_hier *h, double bytes, coll_mode mode)
{
    if (h->local <= 0)
        return 0;
    long n = coll_run(COLL_REDUCE_SCATTER, &h->intra, bytes, 1, mode);
    n += coll_run(COLL_ALLREDUCE, &h->inter, bytes / h->local, 1, mode);
    n += coll_run(COLL_ALLGATHER, &h->intra, bytes, 1, mode);
    return n;
}

/* The hierarchical all-reduce without an actor: its three phases chained. */
typedef struct hier_job {
    const coll_hier *h;
    double bytes;
    coll_mode mode;
    int phase;
    long *transfers;
    coll_done_fn done;
    void *arg;
} hier_job;

static void hier_next(void *arg)
{
    hier_job *j = arg;
    switch (j->phase++) {
    case 0:
        *j->transfers += coll_start(COLL_REDUCE_SCATTER, &j->h->intra, j->bytes, 1, j->mode, hier_next, j);
        return;
    case 1:
        *j->transfers += coll_start(COLL_ALLREDUCE, &j->h->inter, j->bytes / j->h->local, 1, j->mode, hier_next, j);
        return;
    case 2:
        *j->transfers += coll_start(COLL_ALLGATHER, &j->h->intra, j->bytes, 1, j->mode, hier_next, j);
        return;
    default: {
        coll_done_fn done = j->done;
        void *done_arg = j->arg;
        free(j);
        done(done_arg);
    }
    }
}

void coll_hier_start(const coll_hier *h, double bytes, coll_mode mode, long *transfers, coll_done_fn done, void *arg)
{
    if (h->local <= 0) {
        done(arg);
        return;
    }
    hier_job *j = pg_xcalloc(1, sizeof *j);
    *j = (hier_job){.h = h, .bytes = bytes, .mode = mode, .transfers = transfers, .done = done, .arg = arg};
    hier_next(j);
}
