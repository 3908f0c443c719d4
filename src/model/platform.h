/* platform.h: the cluster as pipegrid sees it, without SimGrid.
 *
 * A platform is a SimGrid XML file (platforms/NAME.xml, or one generated into a
 * temporary file for network=ideal and network=cluster).  This module reads
 * the XML with libxml2 to check it is well formed (errors give file and
 * line) and to list the GPUs: hosts with <prop id="kind" value="gpu"/>,
 * ordered by their "node" and "local_rank" properties.  Each GPU has
 *   speed (host speed, flop/s), memory (prop "memory", bytes with unit),
 *   gpu type (prop "gpu"), and the host-memory endpoint of its node
 *   (the host with kind=cpu and the same node), the target of offload copies,
 *   with the bandwidth and latency of the route there when the XML lists it.
 * The simulator then loads the same file into SimGrid.
 */
#ifndef PG_MODEL_PLATFORM_H
#define PG_MODEL_PLATFORM_H

#include "model/experiment.h"
#include "util/error.h"

typedef struct pg_gpu {
    char host[64];            /* SimGrid host name */
    int node;
    int local_rank;
    double speed_flops;
    double memory_bytes;
    char type[32];            /* "h100-sxm", ... ("" if not given) */
    int cpu_index;            /* index into platform_desc.cpu_host, -1 if none */
    int line;                 /* line of its <host> in xml_path (messages) */
    /* The route to its node's host memory (the offload copies' path) when the
     * XML lists it explicitly (<route> between the GPU and the cpu host, in
     * either direction, as Full zones do): its narrowest link's bandwidth
     * and its summed latency.  0 = not listed (a Dijkstra or star zone):
     * unknown here, SimGrid still routes the copies.  host_shared_bw: the
     * rate while every GPU whose host route crosses a link copies at once,
     * the narrowest link's bandwidth over its number of such routes
     * (FATPIPE links are not shared): on a generated cluster, the rate of
     * each GPU of a PCIe switch while both copy (PipeOffload's B_o). */
    double host_bw;           /* bytes/s */
    double host_shared_bw;    /* bytes/s */
    double host_latency_s;
} pg_gpu;

typedef struct platform_desc {
    char xml_path[4096];      /* file SimGrid loads */
    int is_temporary;         /* generated: removed by platform_free */
    int ngpus;
    pg_gpu *gpu;              /* [ngpus], node-major, local_rank-minor */
    int ncpus;
    char (*cpu_host)[64];     /* host-memory endpoint per node */
    double *cpu_memory_bytes; /* host memory capacity per node (0 = unknown) */
    /* 1: a generated cluster whose every GPU has a route to itself over its
     * own NIC out, a core crossing and its own NIC in: the latencies and
     * bandwidths of a route to the same GPU of another node (cluster.c).
     * The simulator's symmetric-replica shortcut sends each data-parallel
     * ring's traffic to this mirror (sim.h, SIM_REPLICAS_AUTO). */
    int mirror_routes;
} platform_desc;

/* Read and check a platform XML. */
int platform_load(const char *path, platform_desc *p, pg_status *st);

/* network=ideal: ngpus GPUs of the given speed; every route between two GPUs
 * has latency latency_s and no bandwidth limit worth the name (transfers are
 * zero-byte messages). */
int platform_make_ideal(int ngpus, double latency_s, double speed_flops, double memory_bytes,
                        platform_desc *p, pg_status *st);

/* network=cluster: generated from the cluster.* keys of e, every node. */
int platform_make_cluster(const experiment *e, platform_desc *p, pg_status *st);

/* The same for a job that uses GPUs 0..used_gpus-1 (node-major): only the
 * nodes holding them are generated (linear in what the job uses; timings
 * are those of the whole cluster, since the other nodes carry no traffic),
 * with the mirror routes (mirror_routes above).
 * The platform's GPU and node lists are then those nodes'.  used_gpus <= 0,
 * or more GPUs than the cluster has, generates every node. */
int platform_make_cluster_for(const experiment *e, int used_gpus, platform_desc *p, pg_status *st);

void platform_free(platform_desc *p);

/* Write xml_text to a new temporary file (mkstemp) and platform_load it;
 * the result is_temporary, so platform_free removes the file.  what names
 * the generator in messages ("network=ideal"). */
int platform_load_text(const char *xml_text, const char *what, platform_desc *p, pg_status *st);

/* network=cluster: the bandwidth of a route between two GPUs of one node
 * (NVLink: [nvl UP, nvl DOWN]) and between two nodes (the NICs; the FATPIPE
 * core runs at the NIC rate), per direction, in bytes/s, as it runs: the
 * datasheet rate (platform_cluster_datasheet_bandwidths) times the GPU
 * type's fitted efficiency under cluster.links=fitted.  Returns 0 (both 0)
 * for an unknown cluster.gpu, 1 otherwise. */
int platform_cluster_gpu_bandwidths(const experiment *e, double *nvlink_bw, double *nic_bw);
/* The datasheet rates behind them: the cluster.nvlink_bw / cluster.ib_bw
 * keys (a user's rate is a datasheet rate), else the GPU system's. */
int platform_cluster_datasheet_bandwidths(const experiment *e, double *nvlink_bw, double *nic_bw);

/* network=cluster: the latency of a route between two GPUs of one node and
 * between two nodes, in seconds: the GPU type's fitted NCCL ring-step
 * latency under cluster.links=fitted (never below the modelled wire
 * latencies, 1 us and 2.6 us), else the wire's.  Returns 0 (both 0) for an
 * unknown cluster.gpu, 1 otherwise. */
int platform_cluster_gpu_latencies(const experiment *e, double *nvlink_route_s, double *nic_route_s);

/* network=cluster: GPUs per NVLink domain (one switch fabric): the
 * cluster.nvlink_domain key, else the GPU system's (72 for an NVL72 rack),
 * else a node (cluster.gpus_per_node).  The generated platform's "node" of
 * a GPU is its domain (cluster.c), and every "per node" NVLink question of
 * the cost model (costmodel_ring_bw, costmodel_group_per_node) takes this. */
int platform_cluster_domain_gpus(const experiment *e);

/* The XML platform_make_cluster loads, as text (appended to out), so that
 * tools can ship it (platforms/NAME.xml are made this way).  Layout: see
 * cluster.c. */
struct strbuf;
int platform_cluster_xml(const experiment *e, struct strbuf *out, pg_status *st);

/* GPU system presets (speed, memory, NVLink/PCIe/NIC bandwidths, source). */
typedef struct gpu_system {
    const char *name;         /* "a100-80g", "h100-sxm", ... */
    double speed_flops;       /* dense BF16 peak */
    double fp8_flops;         /* dense FP8 peak; 0 = no FP8 tensor cores */
    double fp4_flops;         /* dense FP4 (NVFP4/MXFP4) peak; 0 = no FP4 tensor cores */
    int sm_count;             /* streaming multiprocessors (datasheet): the GEMM waves of the cost model */
    double memory_bytes;
    double nvlink_bw;         /* per GPU, each direction, bytes/s */
    double pcie_bw;           /* per GPU, each direction, bytes/s */
    double nic_bw;            /* per GPU NIC, bytes/s */
    double host_memory_bytes; /* per node, or per host_memory_gpus GPUs when that is set */
    int host_memory_gpus;     /* GPUs sharing host_memory_bytes (a Grace CPU and its 2 GPUs); 0 = a node's */
    int nvlink_domain_gpus;   /* GPUs on one NVLink switch fabric (72: an NVL72 rack); 0 = a node's */
    const char *host_link;    /* what pcie_bw is: "PCIe Gen5 x16", "NVLink-C2C" (XML header) */
    const char *source;
    /* The measured effective host link (cluster.host_link=measured) is the
     * GPU type's profile's: gpu_params.host_link_bw (costmodel.h). */
} gpu_system;
/* PipeOffload's repository times a copy alone at 0.7 of a copy while its
 * paired GPU copies too (zerobubble/scheduler/offloading.py, solo vs
 * parallel offload time). */
#define HOST_LINK_SOLO_SHARE 0.7
const gpu_system *gpu_system_find(const char *name);
const gpu_system *gpu_systems(size_t *count);

#endif
