/* cluster.c: generate the platform of network=cluster (platform.h).
 *
 * NVLink domains: the unit of the layout is the NVLink domain, the GPUs on
 * one NVLink switch fabric (platform_cluster_domain_gpus: a DGX node of 8,
 * or a GB200/GB300 NVL72 rack of 72).  What the platform calls a "node"
 * (the GPUs' node property, the zones below) is a domain, so that everything
 * that asks whether two GPUs share a node (collectives' channel rings,
 * expert placement, data-parallel replicas, search's tp candidates) asks
 * whether they share NVLink.  The cluster's nodes x gpus_per_node GPUs fill
 * the domains in rank order; the last may be partial.  Where the domain is a
 * node (every DGX/HGX system by default) the XML is what it always was.
 *
 * Layout (notes/simgrid.md section 4, verified there against SimGrid 3.32):
 *   - one zone per domain, routing Full, holding its GPUs nNN-gpuGG, its
 *     host-memory endpoint nNN-cpu (the host memory of all its GPUs: a
 *     node's, or its Grace CPUs' together) and a router nNN-ib, the domain's
 *     gateway;
 *   - per GPU three SPLITDUPLEX links (independent directions):
 *       nvl   its NVLink port into a non-blocking NVSwitch: GPU i to GPU j
 *             is [nvl_i UP, nvl_j DOWN], so contention is at the GPU ports;
 *       pcie  its PCIe link; GPUs 2k and 2k+1 share the PCIe-switch uplink
 *             swK-up to host memory: GPU i to cpu is [pcie_i UP, sw(i/2) UP];
 *             the uplink is SPLITDUPLEX at the datasheet rate, but SHARED by
 *             both directions under cluster.host_link=measured: the measured
 *             rate (PipeOffload's 15 GB/s on A100) is each GPU's while the
 *             pair copies in opposite directions at once (its staggered
 *             slots), so there the directions contend;
 *       nic   its InfiniBand NIC (one rail per GPU): GPU i to the gateway is
 *             [nic_i UP];
 *     under cluster.links=fitted (the default) the NVLink ports and NICs
 *     carry the GPU type's fitted NCCL ring-step latency (fitted_links), so
 *     that every GPU-to-GPU route has the alpha the iteration model charges;
 *   - between domains a FATPIPE core (a non-blocking fat tree: every flow
 *     gets the full rate, so only NICs limit), one core link ib-core-nNN per
 *     domain (core_link: same timings as one shared link, far less solver
 *     work): up to STAR_ABOVE_NODES domains the top zone is Full with one
 *     zoneRoute per domain pair over the lower domain's core link; above, the
 *     top zone is DijkstraCache with a fabric zone and one zoneRoute per
 *     domain over its own core link (linear size), so a flow crosses two core
 *     links at half latency each;
 *   - cluster.oversubscription > 1: the rail-optimized leaf/spine above the
 *     domains is oversubscribed.  Rails are symmetric (GPU i of every domain
 *     on leaf i) and a flow between domains leaves through its domain's leaves
 *     and enters the other's, so the model is each domain's uplink to the
 *     spine: one SPLITDUPLEX link per domain of (its GPUs x NIC rate) /
 *     oversubscription, shared by the flows of that domain (the star layout,
 *     a flow crossing its source's uplink and its destination's); the
 *     symmetric-replica shortcut is off (replicas contend there).
 * Names are zero-padded so that SimGrid's name order is the rank order.
 *
 * Mirror routes (platform_make_cluster_for only; the shipped platforms/
 * files have none): each GPU has a route to itself, [the core, its NIC UP,
 * its NIC DOWN], over mirror core links of the node (FATPIPE at the NIC rate
 * with the latencies a flow to another node crosses: one link of
 * CORE_LATENCY_S in the Full layout, two of half in the star), so that it
 * has the links, latency and bandwidth of a route to the same GPU of another
 * node, summed in the same order.  The simulator sends a symmetric
 * data-parallel ring's traffic there when it simulates one replica for all
 * (src/sim/replicas.c); nothing else sends a GPU's bytes to itself.
 *
 * Size: SimGrid 3.32 loads a platform in O(hosts x zones) (creating a host
 * looks its name up through every zone; sealing a zone lists every host of
 * the engine), so a cluster of N nodes costs O(N^2) to load whatever the job
 * uses.  A job runs on GPUs 0..tp*dp*pp-1 (Megatron order), so
 * platform_make_cluster_for generates only the nodes holding those GPUs:
 * the unused nodes carry no traffic and change no result.  In the star
 * layout the links live in one zone "links" declared first: SimGrid resolves
 * a route's link names by searching the zones depth-first from the root,
 * which then finds them in the first zone instead of scanning node zones.
 */
#include <stdio.h>
#include <string.h>

#include "model/costmodel.h"
#include "model/platform.h"
#include "model/numtext.h"
#include "util/strbuf.h"

/* A number as exact shortest text, valid until the end of the enclosing block. */
#define NUM(v) pg_numtext((v), (char[PG_NUMTEXT_MAX]){0})

/* Latencies: modelling choices of notes/simgrid.md section 4 (not vendor
 * figures; vendors do not publish per-hop latencies for these parts). */
#define NVLINK_PORT_LATENCY_S 0.5e-6   /* GPU-to-GPU over NVSwitch: 2 ports = 1 us */
#define PCIE_LATENCY_S 1e-6
#define PCIE_UPLINK_LATENCY_S 0.0
#define NIC_LATENCY_S 1e-6
#define CORE_LATENCY_S 0.6e-6          /* crossing the inter-node fabric once */
#define STAR_ABOVE_NODES 64            /* notes: star loads faster, same timings */
#define CPU_SPEED_FLOPS 1e12           /* the cpu host never computes; any speed */
#define GPUS_PER_PCIE_SWITCH 2
#define MAX_CLUSTER_GPUS (1 << 20)     /* beyond any SimGrid run we can afford */

static int digits(int n)
{
    int d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

/* What cluster.links=fitted takes from the GPU type profile: coll_bw_eff
 * and net_bw_eff, the share of the NVLink and NIC rates NCCL reached in the
 * calibration, and coll_latency, the fitted alpha of one ring step (and of
 * a p2p send) in the iteration model (costmodel_allreduce_s, itermodel.c).
 * The generated links carry that alpha: every GPU-to-GPU route, inside a
 * node or across nodes, then has latency coll_latency, so that a simulated
 * ring of S steps pays S coll_latency as the analytic one does (before, it
 * paid the modelled wire latencies, 1 us inside a node, and a simulated
 * tensor-parallel job ran faster than the same collectives computed).
 * Efficiencies 1 and no step latency (the modelled wire latencies) when
 * the datasheet rates are asked for or the profile cannot be read (the
 * header says which). */
typedef struct link_fit {
    double nvlink_eff, nic_eff;
    double step_latency_s;      /* 0: the modelled latencies */
} link_fit;

typedef struct gen {
    strbuf *sb;
    int nw, gw;            /* zero-padding widths of node and GPU indices */
    const gpu_system *gs;
    int gpus;              /* of the zone being written: its domain's */
    int domain;            /* GPUs per domain (platform_cluster_domain_gpus) */
    long total_gpus;       /* the cluster's: nodes x gpus_per_node */
    double host_memory_bytes;  /* the GPU system's, shared by host_memory_gpus GPUs */
    int host_memory_gpus;
    double oversubscription;   /* > 1: SPLITDUPLEX domain uplinks (header) */
    double nvl_bw, pcie_bw, nic_bw;
    link_fit fit;          /* cluster.links (fitted_links) */
    double nvl_port_lat_s, nic_lat_s;   /* link_latencies */
    double core_lat_s;     /* one core link: CORE_LATENCY_S, half of it in the star (crossed twice) */
    double uplink_bw;      /* PCIe-switch uplink shared by GPUS_PER_PCIE_SWITCH GPUs */
    int uplink_shared;     /* the uplink's two directions share uplink_bw (measured host link) */
    const gpu_params *host_link;   /* cluster.host_link=measured: the GPU type's profile (its host_link block);
                                    * NULL: the datasheet PCIe rate */
    int links_on_top;      /* links declared in the top zone, not the node zones (star layout) */
    int star;              /* the star layout: a flow to another node crosses two core links */
    int mirror;            /* mirror routes (header) */
} gen;

#define IND "      "

/* GPUs of domain z: the domain's, the last one what is left. */
static int zone_gpus(const gen *g, int z)
{
    long left = g->total_gpus - (long)z * g->domain;
    return left < g->domain ? (int)left : g->domain;
}

static void uplink(gen *g, int n, int sw)
{
    sb_appendf(g->sb, IND "<link id=\"n%0*d-sw%d-up\" bandwidth=\"%sBps\" latency=\"%ss\" sharing_policy=\"%s\"/>\n",
               g->nw, n, sw, NUM(g->uplink_bw), NUM(PCIE_UPLINK_LATENCY_S),
               g->uplink_shared ? "SHARED" : "SPLITDUPLEX");
}

/* The SPLITDUPLEX link nN-gI-<kind> of GPU i. */
static void port_link(gen *g, int n, int i, const char *kind, double bw, double lat)
{
    sb_appendf(g->sb,
               IND "<link id=\"n%0*d-g%d-%s\" bandwidth=\"%sBps\" latency=\"%ss\" "
                   "sharing_policy=\"SPLITDUPLEX\"/>\n",
               g->nw, n, i, kind, NUM(bw), NUM(lat));
}

/* Node n's port into the core fabric.  One FATPIPE link per node rather
 * than one for the whole fabric: a FATPIPE link bounds each flow alone (at
 * the NIC rate, which the NICs already impose), so the timings are the same,
 * but SimGrid's solver couples every flow that crosses one link, and one
 * shared core made every inter-node transfer touch all the others in flight
 * (issue 17: the replay cost 0.41-0.44x the bare replay with the shared core,
 * 0.20-0.26x with one core link per node). */
static void core_link(gen *g, int n, double lat)
{
    if (g->oversubscription > 1.0) {
        sb_appendf(g->sb, "    <link id=\"ib-core-n%0*d\" bandwidth=\"%sBps\" latency=\"%ss\" sharing_policy=\"SPLITDUPLEX\"/>\n",
                   g->nw, n, NUM(zone_gpus(g, n) * g->nic_bw / g->oversubscription), NUM(lat));
        return;
    }
    sb_appendf(g->sb, "    <link id=\"ib-core-n%0*d\" bandwidth=\"%sBps\" latency=\"%ss\" sharing_policy=\"FATPIPE\"/>\n",
               g->nw, n, NUM(g->nic_bw), NUM(lat));
}

/* The core crossings of node n's mirror routes (header): as many links,
 * with the same latencies, as a flow from node n to another node crosses. */
static int mirror_core_links(const gen *g)
{
    return g->star ? 2 : 1;
}

static void mirror_core_link(gen *g, int n, int k)
{
    sb_appendf(g->sb, IND "<link id=\"n%0*d-mirror-core%d\" bandwidth=\"%sBps\" latency=\"%ss\" "
                      "sharing_policy=\"FATPIPE\"/>\n", g->nw, n, k, NUM(g->nic_bw), NUM(g->core_lat_s));
}

/* <link_ctn> of link nN-<what>I[-up] in direction dir (none for a SHARED
 * uplink: both directions cross the same link). */
static void ctn(gen *g, int n, const char *kind, int idx, const char *dir)
{
    if (strcmp(kind, "sw") == 0 && g->uplink_shared)
        sb_appendf(g->sb, "<link_ctn id=\"n%0*d-sw%d-up\"/>", g->nw, n, idx);
    else if (strcmp(kind, "sw") == 0)
        sb_appendf(g->sb, "<link_ctn id=\"n%0*d-sw%d-up\" direction=\"%s\"/>", g->nw, n, idx, dir);
    else
        sb_appendf(g->sb, "<link_ctn id=\"n%0*d-g%d-%s\" direction=\"%s\"/>", g->nw, n, idx, kind, dir);
}

/* The links of node n's GPUs and PCIe switches. */
static void node_links(gen *g, int n)
{
    for (int i = 0; i < g->gpus; i++) {
        port_link(g, n, i, "nvl", g->nvl_bw, g->nvl_port_lat_s);
        port_link(g, n, i, "pcie", g->pcie_bw, PCIE_LATENCY_S);
        port_link(g, n, i, "nic", g->nic_bw, g->nic_lat_s);
    }
    int nsw = (g->gpus + GPUS_PER_PCIE_SWITCH - 1) / GPUS_PER_PCIE_SWITCH;
    for (int s = 0; s < nsw; s++)
        uplink(g, n, s);
    for (int k = 0; g->mirror && k < mirror_core_links(g); k++)
        mirror_core_link(g, n, k);
}

static void node_zone(gen *g, int n)
{
    int nw = g->nw, gw = g->gw;
    sb_appendf(g->sb, "    <zone id=\"node%0*d\" routing=\"Full\">\n", nw, n);
    for (int i = 0; i < g->gpus; i++)
        sb_appendf(g->sb,
                   IND "<host id=\"n%0*d-gpu%0*d\" speed=\"%sf\"><prop id=\"kind\" value=\"gpu\"/>"
                       "<prop id=\"node\" value=\"%d\"/><prop id=\"local_rank\" value=\"%d\"/>"
                       "<prop id=\"memory\" value=\"%sB\"/><prop id=\"gpu\" value=\"%s\"/></host>\n",
                   nw, n, gw, i, NUM(g->gs->speed_flops), n, i, NUM(g->gs->memory_bytes), g->gs->name);
    sb_appendf(g->sb,
               IND "<host id=\"n%0*d-cpu\" speed=\"%sf\"><prop id=\"kind\" value=\"cpu\"/>"
                   "<prop id=\"node\" value=\"%d\"/><prop id=\"memory\" value=\"%sB\"/></host>\n",
               nw, n, NUM(CPU_SPEED_FLOPS), n, NUM(g->host_memory_bytes * ((double)g->gpus / g->host_memory_gpus)));
    sb_appendf(g->sb, IND "<router id=\"n%0*d-ib\"/>\n", nw, n);
    if (!g->links_on_top)
        node_links(g, n);
    for (int i = 0; i < g->gpus; i++)
        for (int j = i + 1; j < g->gpus; j++) {
            sb_appendf(g->sb, IND "<route src=\"n%0*d-gpu%0*d\" dst=\"n%0*d-gpu%0*d\">", nw, n, gw, i, nw, n, gw, j);
            ctn(g, n, "nvl", i, "UP");
            ctn(g, n, "nvl", j, "DOWN");
            sb_append(g->sb, "</route>\n");
        }
    for (int i = 0; i < g->gpus; i++) {
        sb_appendf(g->sb, IND "<route src=\"n%0*d-gpu%0*d\" dst=\"n%0*d-cpu\">", nw, n, gw, i, nw, n);
        ctn(g, n, "pcie", i, "UP");
        ctn(g, n, "sw", i / GPUS_PER_PCIE_SWITCH, "UP");
        sb_append(g->sb, "</route>\n");
        sb_appendf(g->sb, IND "<route src=\"n%0*d-gpu%0*d\" dst=\"n%0*d-ib\">", nw, n, gw, i, nw, n);
        ctn(g, n, "nic", i, "UP");
        sb_append(g->sb, "</route>\n");
    }
    /* Mirror routes list the core links first: SimGrid 3.32 sums a route's
     * latency in that order for a route between two node zones (the zone
     * route's links, then the source's, then the destination's), and the
     * order of a route's links changes nothing else, so both sums are the
     * same double (tests/test_collectives.c compares them bit for bit). */
    for (int i = 0; g->mirror && i < g->gpus; i++) {
        sb_appendf(g->sb, IND "<route src=\"n%0*d-gpu%0*d\" dst=\"n%0*d-gpu%0*d\" symmetrical=\"NO\">", nw, n, gw,
                   i, nw, n, gw, i);
        for (int k = 0; k < mirror_core_links(g); k++)
            sb_appendf(g->sb, "<link_ctn id=\"n%0*d-mirror-core%d\"/>", nw, n, k);
        ctn(g, n, "nic", i, "UP");
        ctn(g, n, "nic", i, "DOWN");
        sb_append(g->sb, "</route>\n");
    }
    /* The cpu reaches other nodes through GPU 0's NIC (host-to-host traffic
     * across nodes is rare; it must merely be routable). */
    sb_appendf(g->sb, IND "<route src=\"n%0*d-cpu\" dst=\"n%0*d-ib\">", nw, n, nw, n);
    ctn(g, n, "nic", 0, "UP");
    sb_append(g->sb, "</route>\n    </zone>\n");
}

static link_fit fitted_links(const experiment *e, const gpu_system *gs)
{
    link_fit f = {1.0, 1.0, 0.0};
    if (!e->cluster_links_fitted)
        return f;
    gpu_params prof;
    pg_status st;
    pg_status_clear(&st);
    if (gpu_params_load(gs->name, &prof, &st) != 0)
        return f;
    if (prof.v[GP_COLL_BW_EFF] > 0 && prof.v[GP_COLL_BW_EFF] <= 1)
        f.nvlink_eff = prof.v[GP_COLL_BW_EFF];
    if (prof.v[GP_NET_BW_EFF] > 0 && prof.v[GP_NET_BW_EFF] <= 1)
        f.nic_eff = prof.v[GP_NET_BW_EFF];
    if (prof.v[GP_COLL_LATENCY_S] > 0)
        f.step_latency_s = prof.v[GP_COLL_LATENCY_S];
    return f;
}

/* The datasheet NVLink and NIC rates: the cluster.*_bw keys (a user's link
 * rate is a datasheet rate, as the GPU system's), else the GPU system's. */
static void datasheet_bandwidths(const experiment *e, const gpu_system *gs, double *nvlink_bw, double *nic_bw)
{
    *nvlink_bw = e->cluster_nvlink_bw > 0 ? e->cluster_nvlink_bw : gs->nvlink_bw;
    *nic_bw = e->cluster_ib_bw > 0 ? e->cluster_ib_bw : gs->nic_bw;
}

/* The NVLink and NIC rates that run: the datasheet rates times the fitted
 * efficiencies (1 with cluster.links=datasheet), whoever gave them, so that
 * a key keeps the meaning of the default (before, a key's rate ran as
 * given: 400Gbps ran faster than the default 400 Gb/s NIC's fitted rate). */
static void link_bandwidths(const experiment *e, const gpu_system *gs, const link_fit *f, double *nvlink_bw,
                            double *nic_bw)
{
    datasheet_bandwidths(e, gs, nvlink_bw, nic_bw);
    *nvlink_bw *= f->nvlink_eff;
    *nic_bw *= f->nic_eff;
}

/* The latencies of a GPU's NVLink port and its NIC.
 * A route between two GPUs of a node crosses two NVLink ports; one between
 * nodes two NICs and the core (CORE_LATENCY_S in all, in either layout).  With a fitted step
 * latency both routes total it, except that no link goes below its
 * modelled wire latency (a fitted alpha under 1 us inside a node, or
 * 2 NIC_LATENCY_S + CORE_LATENCY_S = 2.6 us across nodes, leaves that
 * route at the wire's). */
static void link_latencies(const link_fit *f, double *nvl_port_s, double *nic_s)
{
    double nvl_fit_s = f->step_latency_s / 2.0;
    double nic_fit_s = (f->step_latency_s - CORE_LATENCY_S) / 2.0;
    *nvl_port_s = nvl_fit_s > NVLINK_PORT_LATENCY_S ? nvl_fit_s : NVLINK_PORT_LATENCY_S;
    *nic_s = nic_fit_s > NIC_LATENCY_S ? nic_fit_s : NIC_LATENCY_S;
}

/* Where a link rate of the header comes from: a key, or the datasheet rate
 * times the fitted efficiency (cluster.links=fitted), or the datasheet. */
static void link_rate_origin(int set_by_key, const char *key, double datasheet_bw, double eff, const char *eff_name,
                             char *out, size_t len)
{
    char by[64] = "";
    if (set_by_key)
        snprintf(by, sizeof by, ", set by %s", key);
    if (eff < 1.0)
        snprintf(out, len, " (datasheet %s%s x fitted %s %.4g)", NUM(datasheet_bw), by, eff_name, eff);
    else if (set_by_key)
        snprintf(out, len, " (datasheet%s)", by);
    else
        out[0] = '\0';
}

static void header(gen *g, const experiment *e, int nodes, int star)
{
    const gpu_system *gs = g->gs;
    strbuf *sb = g->sb;
    sb_append(sb, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n");
    int zones_all = (int)((g->total_gpus + g->domain - 1) / g->domain);
    if (g->domain == e->cluster_gpus_per_node) {
        sb_appendf(sb, "<!-- pipegrid network=cluster: %d node(s) x %d GPU(s) of type %s.\n", nodes, g->gpus, gs->name);
        if (nodes < e->cluster_nodes)
            sb_appendf(sb, "     Generated: the first %d of cluster.nodes=%d, the nodes the job uses.\n", nodes,
                       e->cluster_nodes);
    } else {
        sb_appendf(sb,
                   "<!-- pipegrid network=cluster: %ld GPU(s) of type %s (%d node(s) x %d) in NVLink domains of %d\n"
                   "     GPUs (cluster.nvlink_domain; the last holds what is left), each domain one zone (node) on\n"
                   "     one NVLink switch fabric; host memory %s B per %d GPUs.\n",
                   g->total_gpus, gs->name, e->cluster_nodes, e->cluster_gpus_per_node, g->domain,
                   NUM(g->host_memory_bytes), g->host_memory_gpus);
        if (nodes < zones_all)
            sb_appendf(sb, "     Generated: the first %d of %d domains, the domains the job uses.\n", nodes, zones_all);
    }
    if (g->oversubscription > 1.0)
        sb_appendf(sb,
                   "     Fabric above the domains: rail-optimized leaf/spine oversubscribed %s:1, modelled as one\n"
                   "     SPLITDUPLEX uplink per domain of its GPUs x NIC rate / %s (crossed by a flow leaving and\n"
                   "     one entering the domain).\n",
                   NUM(g->oversubscription), NUM(g->oversubscription));
    sb_appendf(sb, "     GPU speed %s flop/s (dense BF16 peak), memory %s B, host memory per node %s B,\n",
               NUM(gs->speed_flops), NUM(gs->memory_bytes), NUM(gs->host_memory_bytes));
    char why_nvl[160], why_nic[160];
    double nvl_sheet_bw, nic_sheet_bw;
    datasheet_bandwidths(e, gs, &nvl_sheet_bw, &nic_sheet_bw);
    link_rate_origin(e->cluster_nvlink_bw > 0, "cluster.nvlink_bw", nvl_sheet_bw, g->fit.nvlink_eff, "coll_bw_eff",
                     why_nvl, sizeof why_nvl);
    link_rate_origin(e->cluster_ib_bw > 0, "cluster.ib_bw", nic_sheet_bw, g->fit.nic_eff, "net_bw_eff", why_nic,
                     sizeof why_nic);
    sb_appendf(sb, "     NVLink %s B/s per GPU per direction%s,\n", NUM(g->nvl_bw), why_nvl);
    if (g->host_link)
        sb_appendf(sb,
                   "     PCIe %s B/s per GPU per direction, uplink %s B/s shared by %d GPUs and both directions (cluster.host_link=\n"
                   "     measured: %s B/s each while the %d copy at once, / %s alone; source: %s),\n",
                   NUM(g->pcie_bw), NUM(g->uplink_bw), GPUS_PER_PCIE_SWITCH, NUM(g->host_link->host_link_bw),
                   GPUS_PER_PCIE_SWITCH, NUM(HOST_LINK_SOLO_SHARE), g->host_link->host_link_source);
    else
        sb_appendf(sb, "     %s %s B/s per GPU per direction%s (uplink shared by %d GPUs: same rate),\n",
                   gs->host_link && strncmp(gs->host_link, "PCIe", 4) != 0 ? gs->host_link : "PCIe",
                   NUM(g->pcie_bw), e->cluster_pcie_bw > 0 ? " (set by cluster.pcie_bw)" : "", GPUS_PER_PCIE_SWITCH);
    sb_appendf(sb, "     InfiniBand NIC %s B/s per GPU per direction%s.\n", NUM(g->nic_bw), why_nic);
    sb_appendf(sb, "     Source of the %s figures: %s.\n", gs->name, gs->source);
    if (g->fit.step_latency_s > 0)
        sb_appendf(sb,
                   "     Latencies of the GPU-to-GPU routes: the fitted coll_latency %s s of one NCCL ring step\n"
                   "     (cluster.links=fitted; profiles/gpus/%s.yaml), at least the wire latencies below.\n",
                   NUM(g->fit.step_latency_s), gs->name);
    sb_appendf(sb,
               "     Latencies (modelling choices of notes/simgrid.md section 4, not vendor figures): NVLink port\n"
               "     %s s (GPU to GPU crosses two ports), PCIe %s s, PCIe-switch uplink %s s, NIC %s s,\n"
               "     inter-node core %s s per crossing (FATPIPE: a non-blocking fabric that never limits a flow\n"
               "     below its NICs; %s).\n"
               "     Layout: node zones with Full routing, per-GPU SPLITDUPLEX NVLink / PCIe / NIC links, a\n"
               "     PCIe-switch uplink per GPU pair to the node's host memory, the node's router nNN-ib as\n"
               "     gateway. -->\n",
               NUM(g->nvl_port_lat_s), NUM(PCIE_LATENCY_S), NUM(PCIE_UPLINK_LATENCY_S), NUM(g->nic_lat_s),
               NUM(g->core_lat_s),
               star ? "star layout: crossed twice, via the fabric zone" : "crossed once between two node zones");
}

int platform_cluster_gpu_bandwidths(const experiment *e, double *nvlink_bw, double *nic_bw)
{
    const gpu_system *gs = gpu_system_find(e->cluster_gpu);
    if (gs == NULL) {
        *nvlink_bw = *nic_bw = 0.0;
        return 0;
    }
    link_fit f = fitted_links(e, gs);
    link_bandwidths(e, gs, &f, nvlink_bw, nic_bw);
    return 1;
}

int platform_cluster_datasheet_bandwidths(const experiment *e, double *nvlink_bw, double *nic_bw)
{
    const gpu_system *gs = gpu_system_find(e->cluster_gpu);
    if (gs == NULL) {
        *nvlink_bw = *nic_bw = 0.0;
        return 0;
    }
    datasheet_bandwidths(e, gs, nvlink_bw, nic_bw);
    return 1;
}

int platform_cluster_gpu_latencies(const experiment *e, double *nvlink_route_s, double *nic_route_s)
{
    const gpu_system *gs = gpu_system_find(e->cluster_gpu);
    if (gs == NULL) {
        *nvlink_route_s = *nic_route_s = 0.0;
        return 0;
    }
    link_fit f = fitted_links(e, gs);
    double nvl_port_s, nic_s;
    link_latencies(&f, &nvl_port_s, &nic_s);
    *nvlink_route_s = 2.0 * nvl_port_s;
    *nic_route_s = 2.0 * nic_s + CORE_LATENCY_S;
    return 1;
}

int platform_cluster_domain_gpus(const experiment *e)
{
    if (e->cluster_nvlink_domain > 0)
        return e->cluster_nvlink_domain;
    const gpu_system *gs = gpu_system_find(e->cluster_gpu);
    if (gs && gs->nvlink_domain_gpus > 0)
        return gs->nvlink_domain_gpus;
    return e->cluster_gpus_per_node;
}

/* A domain is whole nodes, or a node holds whole domains: otherwise a
 * node's GPUs would sit on two NVLink fabrics and a domain's host memory
 * on part of a node. */
static int check_domain(const experiment *e, pg_status *st)
{
    int d = platform_cluster_domain_gpus(e), n = e->cluster_gpus_per_node;
    if (d < 1 || (d % n != 0 && n % d != 0))
        return pg_fail_key(st, PG_EXIT_INPUT, "cluster.nvlink_domain",
                           "%d GPUs per NVLink domain neither hold whole nodes of cluster.gpus_per_node=%d nor "
                           "divide one",
                           d, n);
    return 0;
}

/* The XML of the first `generated` of e's domains (all of them when
 * generated is 0), with mirror routes if mirror (header). */
static int cluster_xml(const experiment *e, int generated, int mirror, strbuf *out, pg_status *st)
{
    const gpu_system *gs = gpu_system_find(e->cluster_gpu);
    if (gs == NULL) {
        size_t n;
        const gpu_system *all = gpu_systems(&n);
        char known[256] = "";
        size_t off = 0;
        for (size_t i = 0; i < n && off < sizeof known; i++)
            off += (size_t)snprintf(known + off, sizeof known - off, "%s%s", i ? ", " : "", all[i].name);
        return pg_fail_at(st, PG_EXIT_INPUT, experiment_origin(e, "cluster.gpu"), "cluster.gpu",
                          "unknown GPU type '%.64s' (known: %s)", e->cluster_gpu, known);
    }
    if (e->cluster_nodes < 1)
        return pg_fail_key(st, PG_EXIT_INPUT, "cluster.nodes", "must be at least 1 (got %d)", e->cluster_nodes);
    if (e->cluster_gpus_per_node < 1)
        return pg_fail_key(st, PG_EXIT_INPUT, "cluster.gpus_per_node", "must be at least 1 (got %d)",
                       e->cluster_gpus_per_node);
    if ((long long)e->cluster_nodes * e->cluster_gpus_per_node > MAX_CLUSTER_GPUS)
        return pg_fail_key(st, PG_EXIT_INPUT, "cluster.nodes", "%d x %d GPUs is more than %d", e->cluster_nodes,
                       e->cluster_gpus_per_node, MAX_CLUSTER_GPUS);
    if (e->cluster_nvlink_bw < 0 || e->cluster_ib_bw < 0 || e->cluster_pcie_bw < 0)
        return pg_fail_key(st, PG_EXIT_INPUT, "cluster.*_bw", "bandwidths must not be negative");

    int rc = check_domain(e, st);
    if (rc)
        return rc;
    int domain = platform_cluster_domain_gpus(e);
    long total = (long)e->cluster_nodes * e->cluster_gpus_per_node;
    int zones = (int)((total + domain - 1) / domain);
    int nodes = generated > 0 && generated < zones ? generated : zones;   /* zones generated */
    gen g = {
        .sb = out,
        .nw = digits(zones - 1),   /* the names the whole cluster would have */
        .gw = digits(domain - 1),
        .gs = gs,
        .gpus = domain,
        .domain = domain,
        .total_gpus = total,
        .host_memory_bytes = gs->host_memory_bytes,
        .host_memory_gpus = gs->host_memory_gpus > 0 ? gs->host_memory_gpus : e->cluster_gpus_per_node,
        .oversubscription = e->cluster_oversubscription,
        .pcie_bw = e->cluster_pcie_bw > 0 ? e->cluster_pcie_bw : gs->pcie_bw,
    };
    g.fit = fitted_links(e, gs);
    link_bandwidths(e, gs, &g.fit, &g.nvl_bw, &g.nic_bw);
    g.uplink_bw = g.pcie_bw;
    gpu_params prof;
    if (e->cluster_host_link_measured && e->cluster_pcie_bw <= 0) {
        rc = gpu_host_link_load(gs->name, &prof, st);
        if (rc)
            return rc;
        /* both GPUs of a switch copying at once get host_link_bw each (the
         * uplink), one alone host_link_bw / HOST_LINK_SOLO_SHARE (its own link) */
        g.host_link = &prof;
        g.pcie_bw = prof.host_link_bw / HOST_LINK_SOLO_SHARE;
        g.uplink_bw = prof.host_link_bw * GPUS_PER_PCIE_SWITCH;
        g.uplink_shared = 1;
    }
    int star = nodes > STAR_ABOVE_NODES || g.oversubscription > 1.0;
    link_latencies(&g.fit, &g.nvl_port_lat_s, &g.nic_lat_s);
    g.core_lat_s = star ? CORE_LATENCY_S / 2 : CORE_LATENCY_S;
    g.links_on_top = star;
    g.star = star;
    g.mirror = mirror && !(g.oversubscription > 1.0);
    header(&g, e, nodes, star);
    sb_appendf(out, "<platform version=\"4.1\">\n  <zone id=\"cluster\" routing=\"%s\">\n",
               star ? "DijkstraCache" : "Full");
    if (g.links_on_top) {
        sb_append(out, "    <zone id=\"links\" routing=\"Full\">\n");
        for (int n = 0; n < nodes; n++) {
            g.gpus = zone_gpus(&g, n);
            node_links(&g, n);
        }
        sb_append(out, "    </zone>\n");
    }
    for (int n = 0; n < nodes; n++) {
        g.gpus = zone_gpus(&g, n);
        node_zone(&g, n);
    }
    if (star) {
        sb_append(out, "    <zone id=\"fabric\" routing=\"Full\"><router id=\"ib-core\"/></zone>\n");
        for (int a = 0; a < nodes; a++)
            core_link(&g, a, g.core_lat_s);
        for (int a = 0; a < nodes; a++)
            sb_appendf(out,
                       "    <zoneRoute src=\"node%0*d\" dst=\"fabric\" gw_src=\"n%0*d-ib\" gw_dst=\"ib-core\">"
                       "<link_ctn id=\"ib-core-n%0*d\"%s/></zoneRoute>\n",
                       g.nw, a, g.nw, a, g.nw, a, g.oversubscription > 1.0 ? " direction=\"UP\"" : "");
    } else if (nodes > 1) {
        for (int a = 0; a < nodes - 1; a++)   /* the last node's pairs all use their lower node's */
            core_link(&g, a, g.core_lat_s);
        for (int a = 0; a < nodes; a++)
            for (int b = a + 1; b < nodes; b++)
                sb_appendf(out,
                           "    <zoneRoute src=\"node%0*d\" dst=\"node%0*d\" gw_src=\"n%0*d-ib\" gw_dst=\"n%0*d-ib\">"
                           "<link_ctn id=\"ib-core-n%0*d\"/></zoneRoute>\n",
                           g.nw, a, g.nw, b, g.nw, a, g.nw, b, g.nw, a);
    }
    sb_append(out, "  </zone>\n</platform>\n");
    return 0;
}

int platform_cluster_xml(const experiment *e, strbuf *out, pg_status *st)
{
    return cluster_xml(e, 0, 0, out, st);
}

int platform_make_cluster_for(const experiment *e, int used_gpus, platform_desc *p, pg_status *st)
{
    memset(p, 0, sizeof *p);
    int generated = 0;   /* all domains */
    int domain = platform_cluster_domain_gpus(e);
    if (used_gpus > 0 && domain > 0 &&
        (long long)used_gpus <= (long long)e->cluster_nodes * e->cluster_gpus_per_node)
        generated = (used_gpus + domain - 1) / domain;
    strbuf sb;
    sb_init(&sb);
    int rc = cluster_xml(e, generated, 1, &sb, st);
    if (rc == 0)
        rc = platform_load_text(sb.data, "network=cluster", p, st);
    if (rc == 0)
        p->mirror_routes = !(e->cluster_oversubscription > 1.0);
    sb_free(&sb);
    return rc;
}

int platform_make_cluster(const experiment *e, platform_desc *p, pg_status *st)
{
    return platform_make_cluster_for(e, 0, p, st);
}
