/* gpufixture.h: GPU parameter fixtures shared by the cost-model and calib
 * tests: a shipped type loaded as is, and one with its host costs and size
 * effects removed so that every time is a pure rate. */
#ifndef PG_TESTS_GPUFIXTURE_H
#define PG_TESTS_GPUFIXTURE_H

#include <check.h>
#include <stdio.h>

#include "model/costmodel.h"

static inline gpu_params load(const char *type)
{
    gpu_params g;
    pg_status st;
    int rc = gpu_params_load(type, &g, &st);
    ck_assert_msg(rc == 0, "%s", st.msg);
    return g;
}

/* A GPU without host costs or size effects: times are pure rates.  Its
 * name is no known system's, so its GEMMs have no SM count and no tile /
 * wave quantization (costmodel_gemm_busy_flops). */
static inline gpu_params pure_rates(void)
{
    gpu_params g = load("a100-80g");
    snprintf(g.name, sizeof g.name, "%s", "pure-rates");
    g.v[GP_KERNEL_LAUNCH_S] = 0;
    g.v[GP_GEMM_HALF_FLOPS] = 0;
    g.v[GP_FLASH_HALF_KEYS] = 0;       /* the flash kernel's size effects */
    g.v[GP_FLASH_HALF_HEAD_DIM] = 0;
    g.v[GP_OP_OVERHEAD_S] = 0;
    g.v[GP_ITER_OVERHEAD_S] = 0;
    g.v[GP_GEMM_EFF] = 0.7;
    g.v[GP_ATTN_EFF] = 0.4;
    g.v[GP_FLASH_EFF] = 0.4;
    g.v[GP_MEM_EFF] = 0.8;
    g.v[GP_COLL_BW_EFF] = 0.6;
    g.v[GP_COLL_LATENCY_S] = 10e-6;
    return g;
}

#endif
