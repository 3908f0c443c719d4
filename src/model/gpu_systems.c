/* gpu_systems.c: the GPU system presets behind network=cluster (platform.h).
 *
 * One row per system (8 GPUs per node, NVSwitch, one NIC rail per GPU).
 * Every figure carries its source in the row's `source` string, which the
 * cluster generator copies into the header comment of the XML it writes, so
 * a generated platform always says where its numbers come from.
 *
 * Conventions: bandwidths are per GPU and per direction (vendors quote
 * NVLink and PCIe bidirectional: we halve them); NIC rates are line rates in
 * bits/s divided by 8; GPU memory figures quoted as "GB" by the vendor are
 * binary (an 80 GB HBM part shows 81920 MiB in nvidia-smi), so we use GiB;
 * host memory is quoted in decimal TB in system datasheets and kept so.
 */
#include <stddef.h>
#include <string.h>

#include "model/platform.h"
#include "util/units.h"

#define TERA 1e12
#define GIGA 1e9
#define BITS_PER_BYTE 8.0

static const gpu_system SYSTEMS[] = {
    {
        .name = "a100-80g",
        .speed_flops = 312 * TERA,
        .fp8_flops = 0,               /* Ampere has no FP8 tensor cores */
        .sm_count = 108,               /* A100 SXM4: 108 SMs (NVIDIA A100 Tensor Core GPU Architecture whitepaper) */
        .memory_bytes = 80 * GIB,
        .nvlink_bw = 300 * GIGA,
        .pcie_bw = 32 * GIGA,
        .nic_bw = 200 * GIGA / BITS_PER_BYTE,
        .host_memory_bytes = 2 * TERA,
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
        .host_memory_bytes = 2 * TERA,
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
        .host_memory_bytes = 2 * TERA,
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
        .host_memory_bytes = 2 * TERA,
        .source = "NVIDIA HGX B200 / DGX B200 datasheets: BF16 4.5 PFLOPS with sparsity = 2.25 dense per GPU, "
                  "180GB HBM3e per GPU (1440GB per 8 GPUs), NVLink5 1.8 TB/s bidirectional (900 per "
                  "direction), host link PCIe Gen5 x16 (DGX B200 host CPUs are Gen5) 64 GB/s per direction; "
                  "DGX B200: 8x ConnectX-7 400 Gb/s (one per GPU), 2TB system memory",
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
