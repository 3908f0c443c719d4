/* gen_hanayo.c: Hanayo (Liu et al., SC'23): wave placement (chunks waves,
 * stage s on rank s mod pp going down for even waves and back up for odd
 * ones), fused backward as in the paper.
 *
 * The order is the greedy list scheduler's (BW first when ready, F while the
 * rank stays within 1F1B's activation memory, pp stage units), which is the
 * one-forward-one-backward steady state Hanayo runs after its wave warm-up.
 */
#include <string.h>
#include "schedule/generators.h"
#include "schedule/vshape_common.h"

int sched_gen_hanayo(const sched_params *p, schedule *out, pg_status *st)
{
    int v = p->chunks;
    vs_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.name = "hanayo";
    spec.v = v;
    spec.place = sched_place_wave;
    spec.split = 0;
    spec.mem[OP_F] = 1.0 / v;
    spec.mem[OP_BW] = -1.0 / v;
    spec.mem[OP_W] = -1.0 / v;
    spec.limit = (double)p->pp;
    vs_best best;
    memset(&best, 0, sizeof best);
    int rc = vs_greedy(p, &spec, &best, st);
    if (rc) {
        if (best.have) sched_free(&best.s);
        return rc;
    }
    return vs_finish(&best, out, st);
}
