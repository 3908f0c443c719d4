/* gpu_systems.c: the GPU system presets behind network=cluster (platform.h).
 *
 * One row per system (NVSwitch, one NIC rail per GPU): DGX/HGX systems of 8
 * GPUs whose NVLink domain is the node, and Grace-Blackwell NVL72 racks whose
 * NVLink domain is the rack's 72 GPUs (nvlink_domain_gpus; the cluster
 * generator puts a domain on one switch fabric: cluster.c).
 * Every figure carries its source in the row's `source` string, which the
 * cluster generator copies into the header comment of the XML it writes, so
 * a generated platform always says where its numbers come from.
 *
 * Conventions: bandwidths are per GPU and per direction (vendors quote
 * NVLink and PCIe bidirectional: we halve them); NIC rates are line rates in
 * bits/s divided by 8; GPU memory figures quoted as "GB" by the vendor are
 * binary (an 80 GB HBM part shows 81920 MiB in nvidia-smi), so we use GiB;
 * host memory is quoted in decimal TB in system datasheets and kept so.
 * Rack figures (GB200/GB300 NVL72 datasheets quote a rack's totals) are
 * divided by the rack's 72 GPUs (36 Grace CPUs); sparse tensor rates by 2.
 * The host link (pcie_bw) is the GPU's path to host memory: PCIe on DGX
 * systems; on Grace-Blackwell, NVLink-C2C, 900 GB/s bidirectional between a
 * Grace and its two GPUs: modelled as 450 GB/s per direction per GPU and the
 * same on the link both GPUs share (the generator's per-pair uplink).
 */
#include <stddef.h>
#include <string.h>

#include "model/platform.h"
#include "util/units.h"

#define TERA 1e12
#define GIGA 1e9
#define BITS_PER_BYTE 8.0
#define NVL72_GPUS 72           /* GB200 / GB300 NVL72: 72 GPUs, one NVLink domain */
#define GPUS_PER_GRACE 2        /* a Grace-Blackwell superchip: one Grace CPU, two GPUs */

static const gpu_system SYSTEMS[] = {
    {
        .name = "a100-80g",
        .speed_flops = 312 * TERA,
        .fp8_flops = 0,               /* Ampere has no FP8 tensor cores */
        .fp4_flops = 0,
        .sm_count = 108,               /* A100 SXM4: 108 SMs (NVIDIA A100 Tensor Core GPU Architecture whitepaper) */
        .memory_bytes = 80 * GIB,
        .nvlink_bw = 300 * GIGA,
        .pcie_bw = 32 * GIGA,
        .nic_bw = 200 * GIGA / BITS_PER_BYTE,
        .host_memory_bytes = 2 * TERA,
        .host_link = "PCIe Gen4 x16",
        .source = "NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB): BF16 dense 312 TFLOPS, 80GB HBM2e, "
                  "NVLink3 600 GB/s bidirectional (300 per direction), PCIe Gen4 x16 64 GB/s bidirectional "
                  "(32 per direction); NVIDIA DGX A100 datasheet: 8x ConnectX-6 HDR InfiniBand 200 Gb/s "
                  "(one per GPU), 2TB system memory (DGX A100 640GB)",
    },
    {
        .name = "h100-sxm",
        .speed_flops = 989.4 * TERA,
        .fp8_flops = 1978.9 * TERA,   /* same datasheet: FP8 3958 TFLOPS with sparsity */
        .sm_count = 132,               /* H100 SXM5: 132 SMs (NVIDIA H100 Tensor Core GPU Architecture whitepaper) */
        .memory_bytes = 80 * GIB,
        .nvlink_bw = 450 * GIGA,
        .pcie_bw = 64 * GIGA,
        .nic_bw = 400 * GIGA / BITS_PER_BYTE,
        .fp4_flops = 0,               /* Hopper has no FP4 tensor cores */
        .host_memory_bytes = 2 * TERA,
        .host_link = "PCIe Gen5 x16",
        .source = "NVIDIA H100 Tensor Core GPU datasheet (SXM5): BF16 1979 TFLOPS with sparsity = 989.4 dense, "
                  "80GB HBM3, NVLink4 900 GB/s bidirectional (450 per direction), PCIe Gen5 x16 128 GB/s "
                  "bidirectional (64 per direction); NVIDIA DGX H100 datasheet: 8x ConnectX-7 NDR InfiniBand "
                  "400 Gb/s (one per GPU), 2TB system memory",
    },
    {
        .name = "h200",
        .speed_flops = 989.4 * TERA,
        .fp8_flops = 1978.9 * TERA,   /* same datasheet: FP8 3958 TFLOPS with sparsity */
        .sm_count = 132,               /* H200 SXM: the GH100 of H100 SXM5, 132 SMs */
        .memory_bytes = 141 * GIB,
        .nvlink_bw = 450 * GIGA,
        .pcie_bw = 64 * GIGA,
        .nic_bw = 400 * GIGA / BITS_PER_BYTE,
        .fp4_flops = 0,               /* Hopper has no FP4 tensor cores */
        .host_memory_bytes = 2 * TERA,
        .host_link = "PCIe Gen5 x16",
        .source = "NVIDIA H200 Tensor Core GPU datasheet (SXM): BF16 1979 TFLOPS with sparsity = 989.4 dense "
                  "(same GH100 compute as H100), 141GB HBM3e, NVLink 900 GB/s bidirectional (450 per "
                  "direction), PCIe Gen5 x16 128 GB/s bidirectional (64 per direction); NVIDIA DGX H200 "
                  "datasheet: 8x ConnectX-7 400 Gb/s (one per GPU), 2TB system memory",
    },
    {
        .name = "b200",
        .speed_flops = 2250 * TERA,
        .fp8_flops = 4500 * TERA,     /* same datasheets: FP8 9 PFLOPS with sparsity per GPU */
        .sm_count = 148,               /* B200: 148 SMs (NVIDIA Blackwell architecture technical brief) */
        .memory_bytes = 180 * GIB,
        .nvlink_bw = 900 * GIGA,
        .pcie_bw = 64 * GIGA,
        .nic_bw = 400 * GIGA / BITS_PER_BYTE,
        .fp4_flops = 9000 * TERA,     /* HGX B200 datasheet: FP4 144 PFLOPS with sparsity per 8 GPUs */
        .host_memory_bytes = 2 * TERA,
        .host_link = "PCIe Gen5 x16",
        .source = "NVIDIA HGX B200 / DGX B200 datasheets: BF16 4.5 PFLOPS with sparsity = 2.25 dense per GPU, "
                  "FP8 9 PFLOPS with sparsity = 4.5 dense, FP4 18 PFLOPS with sparsity = 9 dense, "
                  "180GB HBM3e per GPU (1440GB per 8 GPUs), NVLink5 1.8 TB/s bidirectional (900 per "
                  "direction), host link PCIe Gen5 x16 (DGX B200 host CPUs are Gen5) 64 GB/s per direction; "
                  "DGX B200: 8x ConnectX-7 400 Gb/s (one per GPU), 2TB system memory",
    },
    {
        .name = "b300",
        .speed_flops = 2250 * TERA,
        .fp8_flops = 4500 * TERA,
        .fp4_flops = 13500 * TERA,    /* HGX B300 datasheet: FP4 108 PFLOPS dense per 8 GPUs */
        .sm_count = 160,               /* Blackwell Ultra: 160 SMs (NVIDIA Blackwell Ultra technical blog) */
        .memory_bytes = 288 * GIB,
        .nvlink_bw = 900 * GIGA,
        .pcie_bw = 64 * GIGA,
        .nic_bw = 800 * GIGA / BITS_PER_BYTE,
        .host_memory_bytes = 2 * TERA,
        .host_link = "PCIe Gen5 x16",
        .source = "NVIDIA HGX B300 / DGX B300 datasheets: per 8 GPUs BF16 36 PFLOPS with sparsity (2.25 dense "
                  "per GPU), FP8 72 PFLOPS with sparsity (4.5 dense per GPU), FP4 144 PFLOPS with sparsity / 108 "
                  "dense (13.5 dense per GPU), up to 2.3TB HBM3e (288GB per GPU), 8 TB/s per GPU, NVLink5 1.8 "
                  "TB/s bidirectional (900 per direction), networking 1.6 TB/s = 8x ConnectX-8 SuperNIC 800 "
                  "Gb/s (one per GPU); host CPUs Intel Xeon 6776P, PCIe Gen5 x16 to host memory (the GPUs' "
                  "ConnectX-8 PCIe Gen6 switches run the CPU side at Gen5) 64 GB/s per direction; 2TB system "
                  "memory (DGX B300 as DGX B200, upgradable)",
    },
    {
        .name = "gb200",
        .speed_flops = 2500 * TERA,
        .fp8_flops = 5000 * TERA,
        .fp4_flops = 10000 * TERA,
        .sm_count = 148,               /* the B200 of GB200: 148 SMs (NVIDIA Blackwell architecture technical brief) */
        .memory_bytes = 186 * GIB,
        .nvlink_bw = 900 * GIGA,
        .pcie_bw = 450 * GIGA,        /* NVLink-C2C 900 GB/s bidirectional */
        .nic_bw = 400 * GIGA / BITS_PER_BYTE,
        .host_memory_bytes = 480 * GIGA,
        .host_memory_gpus = GPUS_PER_GRACE,
        .nvlink_domain_gpus = NVL72_GPUS,
        .host_link = "NVLink-C2C",
        .source = "NVIDIA GB200 NVL72 / DGX GB200 datasheets: per rack of 72 GPUs and 36 Grace CPUs BF16 360 "
                  "PFLOPS with sparsity (2.5 dense per GPU), FP8 720 PFLOPS with sparsity (5 dense per GPU), FP4 "
                  "1,440 PFLOPS with sparsity (10 dense per GPU), 13.4TB HBM3e (186GB per GPU), 576 TB/s (8 per "
                  "GPU), one NVLink5 domain of 72 GPUs, 130 TB/s (1.8 TB/s bidirectional per GPU, 900 per "
                  "direction), up to 17TB LPDDR5X (480GB per Grace, GB200 superchip datasheet), NVLink-C2C 900 "
                  "GB/s bidirectional per Grace and its 2 GPUs (450 per direction); DGX GB200: 72 ConnectX-7 "
                  "400 Gb/s InfiniBand (one per GPU)",
    },
    {
        .name = "gb300",
        .speed_flops = 2500 * TERA,
        .fp8_flops = 5000 * TERA,
        .fp4_flops = 15000 * TERA,
        .sm_count = 160,               /* Blackwell Ultra: 160 SMs (NVIDIA Blackwell Ultra technical blog) */
        .memory_bytes = 288 * GIB,
        .nvlink_bw = 900 * GIGA,
        .pcie_bw = 450 * GIGA,        /* NVLink-C2C 900 GB/s bidirectional */
        .nic_bw = 800 * GIGA / BITS_PER_BYTE,
        .host_memory_bytes = 500 * GIGA,
        .host_memory_gpus = GPUS_PER_GRACE,
        .nvlink_domain_gpus = NVL72_GPUS,
        .host_link = "NVLink-C2C",
        .source = "NVIDIA GB300 NVL72 / DGX GB300 datasheets: per rack of 72 GPUs and 36 Grace CPUs BF16 360 "
                  "PFLOPS with sparsity (2.5 dense per GPU), FP8 720 PFLOPS with sparsity (5 dense per GPU), FP4 "
                  "1,440 PFLOPS with sparsity / 1,080 dense (15 dense per GPU), up to 21TB HBM3e (288GB per GPU), "
                  "576 TB/s (8 per GPU), one NVLink5 domain of 72 GPUs, 130 TB/s (1.8 TB/s bidirectional per "
                  "GPU, 900 per direction), up to 18TB LPDDR5X (500GB per Grace), NVLink-C2C 900 GB/s "
                  "bidirectional per Grace and its 2 GPUs (450 per direction); 72 ConnectX-8 SuperNIC 800 Gb/s "
                  "(one per GPU; NVIDIA GB300 NVL72 enterprise reference architecture: 4 per 4-GPU tray)",
    },
};

const gpu_system *gpu_systems(size_t *count)
{
    if (count)
        *count = sizeof SYSTEMS / sizeof SYSTEMS[0];
    return SYSTEMS;
}

const gpu_system *gpu_system_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof SYSTEMS / sizeof SYSTEMS[0]; i++)
        if (strcmp(SYSTEMS[i].name, name) == 0)
            return &SYSTEMS[i];
    return NULL;
}
