/* bound.c: the lower bound on makespan: input checks, the critical path
 * over one microbatch's chain (heads and tails, bound_chain.c), and the
 * combination of the per-rank relaxations (bound_machine.c, bound_memory.c).
 *
 * Why a maximum of relaxations is a bound: each one drops constraints of the
 * real problem (the machine bound drops memory and the coupling between
 * ranks; the memory bound drops the order of ops; the path drops every other
 * microbatch), so the optimum of each is at most the makespan of any real
 * schedule, and so is their maximum.
 */
#include <math.h>
#include <stdlib.h>

#include "opt/bound.h"
#include "opt/bound_internal.h"

/* K below one stage activation by less than this still holds one (limits
 * are typed by people, as 0.5 or 1/3 written 0.3333). */
#define BOUND_LIMIT_SLACK 1e-9

const char *bound_kind_name(bound_kind k)
{
    switch (k) {
    case BOUND_PATH: return "critical_path";
    case BOUND_MACHINE: return "machine";
    case BOUND_MEMORY: return "memory";
    default: return "?";
    }
}

static int check_input(const bound_input *in, pg_status *st)
{
    if (in->pp < 1 || in->m < 1 || in->nstages < in->pp || in->nstages % in->pp != 0)
        return pg_fail(st, PG_EXIT_INPUT, "bound: need pp >= 1, microbatches >= 1 and a multiple of pp stages "
                                          "(got pp %d, microbatches %d, stages %d)", in->pp, in->m, in->nstages);
    if (!in->stage_rank || !in->f || !in->b || !in->w)
        return pg_fail(st, PG_EXIT_INPUT, "bound: missing stage placement or op times");
    int v = bound_stages_per_rank(in);
    int *count = pg_xcalloc((size_t)in->pp, sizeof *count);
    int bad = -1;
    for (int s = 0; s < in->nstages && bad < 0; s++) {
        int r = in->stage_rank[s];
        if (r < 0 || r >= in->pp || ++count[r] > v)
            bad = s;
    }
    free(count);
    if (bad >= 0)
        return pg_fail(st, PG_EXIT_INPUT, "bound: stage %d placed on rank %d: every rank must hold %d stages",
                       bad, in->stage_rank[bad], v);
    for (int s = 0; s < in->nstages; s++) {
        double t[] = {in->f[s], in->b[s], in->w[s]};
        for (int k = 0; k < 3; k++)
            if (!isfinite(t[k]) || t[k] < 0)
                return pg_fail(st, PG_EXIT_INPUT, "bound: stage %d: op times must be finite and >= 0", s);
        double wf = in->w_fraction ? in->w_fraction[s] : 0.0;
        if (!(wf >= 0 && wf <= 1))
            return pg_fail(st, PG_EXIT_INPUT, "bound: stage %d: w_fraction must be in 0..1 (got %g)", s, wf);
    }
    if (!isfinite(in->comm_s) || in->comm_s < 0)
        return pg_fail(st, PG_EXIT_INPUT, "bound: latency must be finite and >= 0 (got %g)", in->comm_s);
    if (!isfinite(in->mem_limit))
        return pg_fail_key(st, PG_EXIT_INPUT, "memory.limit", "must be finite");
    /* One F holds 1/v; a limit below that lets no forward run at all (and
     * a recomputation holds the same 1/v, so remat does not help). */
    if (in->mem_limit > 0 && in->mem_limit * v < 1.0 - BOUND_LIMIT_SLACK)
        return pg_fail_key(st, PG_EXIT_INPUT,
                       "memory.limit", "%g is below one stage activation (1/%d of M_B with %d stages per rank): "
                       "no schedule fits", in->mem_limit, v, v);
    return 0;
}

/* Seed 000's exact K = 1 case, generalised: single wave, no remat, room for
 * one activation but never for a second one next to anything a W still
 * holds.  Then rank 0 (stage 0) holds microbatch j from the start of F(0,j)
 * to the end of W(0,j) (fused: BW(0,j)) and no two microbatches overlap
 * there, so T >= m * P with P the chain of one microbatch from F(0) to the
 * end of W(0): the memory bound of rank 0 (bound_memory.c).  The serial
 * schedule (one microbatch every P, each W(s) right after B(s)) is feasible
 * when every rank s is done with microbatch j before F(s, j+1) starts, and
 * then lasts (m-1) P + path.  Returns that makespan, or -1 when the case
 * does not apply. */
static double serial_makespan(const bound_input *in, const bound_chain *c, double path_s)
{
    if (bound_stages_per_rank(in) != 1 || in->remat || in->mem_limit <= 0)
        return -1;
    double k = in->mem_limit;
    if (k >= 2.0 - BOUND_LIMIT_SLACK)
        return -1;
    if (in->split) {
        double wf0 = in->w_fraction ? in->w_fraction[0] : 0.0;
        if (k - wf0 >= 1.0 - BOUND_LIMIT_SLACK)   /* a W(0) and an F fit together */
            return -1;
    }
    double period = in->split ? c->head_w[0] + in->w[0] : c->head_b[0] + c->bk[0];
    for (int s = 0; s < in->nstages; s++) {
        double done = in->split ? c->head_w[s] + in->w[s] : c->head_b[s] + c->bk[s];
        if (done - c->head_f[s] > period)
            return -1;
    }
    return (in->m - 1) * period + path_s;
}

int bound_lower(const bound_input *in, bound_result *out, pg_status *st)
{
    *out = (bound_result){.active = BOUND_PATH, .active_rank = -1, .machine_rank = -1, .memory_rank = -1,
                          .exact_reason = ""};
    int rc = check_input(in, st);
    if (rc != 0)
        return rc;
    /* A rank never holds more than m (each microbatch at most 1/v on each of
     * its v stages): K >= m cannot bind, the unconstrained case. */
    const bound_input *given = in;
    bound_input vacuous;
    if (in->mem_limit >= in->m) {
        vacuous = *in;
        vacuous.mem_limit = 0;
        in = &vacuous;
    }
    bound_chain c;
    bound_chain_build(in, &c);

    /* Critical path: microbatch 0 alone needs its whole chain, which ends
     * with the latest of the W's (or of B(0) fused). */
    out->path_s = in->f[0] + c.tail_f[0];
    out->lower_bound = out->path_s;

    for (int r = 0; r < in->pp; r++) {
        double mach = bound_machine_rank(in, &c, r);
        if (mach > out->machine_s || out->machine_rank < 0) {
            out->machine_s = mach;
            out->machine_rank = r;
        }
        if (in->mem_limit > 0) {
            double remat_ops = 0;
            double mem = bound_memory_rank(in, &c, r, &remat_ops);
            if (mem > out->memory_s || out->memory_rank < 0) {
                out->memory_s = mem;
                out->memory_rank = r;
                out->remat_ops = remat_ops;
            }
        }
    }
    if (out->machine_s > out->lower_bound) {
        out->lower_bound = out->machine_s;
        out->active = BOUND_MACHINE;
        out->active_rank = out->machine_rank;
    }
    if (out->memory_s > out->lower_bound) {
        out->lower_bound = out->memory_s;
        out->active = BOUND_MEMORY;
        out->active_rank = out->memory_rank;
    }
    double serial = serial_makespan(given, &c, out->path_s);
    if (serial >= 0 && serial <= out->lower_bound * (1 + BOUND_LIMIT_SLACK)) {
        out->exact = 1;
        out->exact_reason = "K leaves room for one activation: microbatches are serialised on rank 0 "
                            "(Mind Bubbles and Memory's exact case K = 1), and the one-at-a-time schedule reaches the bound";
    }
    bound_chain_free(&c);
    return 0;
}
