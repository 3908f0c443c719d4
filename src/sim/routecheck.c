/* routecheck.c: every pair of GPUs a job uses must be connected (sim.h).
 *
 * SimGrid answers a route request between hosts its zones do not connect
 * with an empty route, and the first transfer over it aborts the process
 * (network_cm02: "no connecting path").  A hand-written platform with a
 * missing <route> must instead be bad input (exit 2) naming the file and the
 * GPU's line, so the job's GPUs are checked pairwise once the platform is
 * loaded, before any actor starts.  Generated platforms (network=ideal and
 * network=cluster) route every pair by construction and skip the check,
 * which is quadratic in the GPUs the job uses. */
#include <stdlib.h>

#include "schedule/plan.h"
#include "sim/sgshim.h"
#include "sim/sim.h"

int sim_check_routes(const sim_input *in, pg_status *st)
{
    const platform_desc *p = in->plat;
    if (p->is_temporary)
        return 0;
    const sim_parallel *par = in->par;
    int use_map = par && par->gpu;
    int n = in->sched->pp * (use_map ? par->tp * (par->cp > 1 ? par->cp : 1) * par->dp : 1);
    const int *gpu = use_map ? par->gpu : in->rank_gpu;
    int offload = in->plan && !plan_is_empty(in->plan);   /* copies go to the node's host memory */
    const char **host = pg_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *host);
    const char **cpu = pg_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *cpu);
    for (int i = 0; i < n; i++) {
        const pg_gpu *g = &p->gpu[gpu[i]];
        host[i] = g->host;
        cpu[i] = offload && g->cpu_index >= 0 ? p->cpu_host[g->cpu_index] : NULL;
    }
    char err[PG_MSG_MAX / 2];
    int a = -1, b = -1, rc = 0;
    if (sgx_check_routes(host, n, cpu, &a, &b, err, sizeof err) != 0) {
        int line = a >= 0 ? p->gpu[gpu[a]].line : 0;
        rc = pg_fail_at(st, PG_EXIT_INPUT, (pg_origin){p->xml_path, line}, NULL,
                        "platform: %s (the job's GPUs must all reach each other%s)", err,
                        offload ? " and their node's host memory" : "");
    }
    free(host);
    free(cpu);
    return rc;
}
