/* registry.c: the table of schedule generators and sched_generate.
 * A generator is one gen_<name>.c file plus one line in this table. */
#include "schedule/generators.h"

#include <math.h>
#include <string.h>

#include "util/pglimits.h"
#include "util/strbuf.h"

/* Sanity limits on parameters: the experiment schema's (util/pglimits.h),
 * re-checked for library callers, and the total op count (a product of
 * keys, which no single key's range can bound). */
#define SCHED_MAX_PP PG_MAX_PP
#define SCHED_MAX_CHUNKS PG_MAX_CHUNKS
#define SCHED_MAX_MICROBATCHES PG_MAX_MICROBATCHES
#define SCHED_MAX_TOTAL_OPS 50000000LL
/* A stage and microbatch have at most three ops (F, B, W). */
#define SCHED_MAX_OPS_PER_STAGE_MB 3

static const sched_generator generators[] = {
    {"gpipe", sched_gen_gpipe, "GPipe: all forwards, then all fused backwards (peak m activations)"},
    {"1f1b", sched_gen_1f1b, "1F1B (PipeDream-flush): warm-up forwards, one forward one backward, cool-down"},
    {"interleaved", sched_gen_interleaved, "Megatron interleaved 1F1B, chunks stages per rank (m a multiple of pp)"},
    {"zb-h1", sched_gen_zbh1, "zero-bubble ZB-H1: split backward, W deferred, 1F1B memory"},
    {"zb-h2", sched_gen_zbh2, "zero-bubble ZB-H2: split backward, extra warm-up forwards, 2p-1 activations"},
    {"zb-v", sched_gen_zbv, "ZB-V: V placement, split backward, 1F1B memory (pp stage units), near-zero bubble"},
    {"v-half", sched_gen_vhalf, "V-Half: V building block, (pp+2)//2 stage activations, about half 1F1B's bubble"},
    {"v-min", sched_gen_vmin, "V-Min: V building block, (pp+4)//3 stage activations, about 2/3 of 1F1B's bubble"},
    {"v-zb", sched_gen_vzb, "V-ZB family: V placement under memory.limit (default pp), less memory for more bubble"},
    {"zb-auto", sched_gen_zbauto, "automatic zero-bubble schedule (greedy) under memory.limit in M_B (default pp = ZB-1p)"},
    {"hanayo", sched_gen_hanayo, "Hanayo: wave placement over chunks waves, fused backward, 1F1B memory"},
    {"gis", sched_gen_gis, "PipeOffload group-interleaved 1F1B, groups of pp microbatches, chunks stages per rank"},
    {"gis-h", sched_gen_gish, "PipeOffload group-interleaved 1F1B with its smallest group (~pp/2): less memory"},
    {"dualpipe-v", sched_gen_dualpipev, "DeepSeek DualPipeV: V placement, bidirectional halves (m >= 2pp)"},
    {NULL, NULL, NULL},
};

const sched_generator *sched_generators(void)
{
    return generators;
}

const sched_generator *sched_find_generator(const char *name)
{
    if (!name)
        return NULL;
    for (const sched_generator *g = generators; g->name; g++)
        if (strcmp(g->name, name) == 0)
            return g;
    return NULL;
}

static int check_params(const sched_params *p, pg_status *st)
{
    if (p->pp < 1 || p->pp > SCHED_MAX_PP)
        return pg_fail(st, PG_EXIT_INPUT, "key 'pp': expected an integer between 1 and %d, got '%d'", SCHED_MAX_PP, p->pp);
    if (p->m < 1 || p->m > SCHED_MAX_MICROBATCHES)
        return pg_fail(st, PG_EXIT_INPUT, "key 'microbatches': expected an integer between 1 and %d, got '%d'", SCHED_MAX_MICROBATCHES,
                       p->m);
    if (p->chunks < 1 || p->chunks > SCHED_MAX_CHUNKS)
        return pg_fail(st, PG_EXIT_INPUT, "key 'chunks': expected an integer between 1 and %d, got '%d'", SCHED_MAX_CHUNKS, p->chunks);
    long long ops = (long long)p->pp * p->chunks * p->m * SCHED_MAX_OPS_PER_STAGE_MB;
    if (ops > SCHED_MAX_TOTAL_OPS)
        return pg_fail(st, PG_EXIT_INPUT,
                       "key 'microbatches': pp %d x chunks %d x microbatches %d gives %lld ops, more than %lld",
                       p->pp, p->chunks, p->m, ops, SCHED_MAX_TOTAL_OPS);
    const double t[] = {p->t_f, p->t_b, p->t_w, p->t_comm};
    const char *const key[] = {"uniform.f", "uniform.b", "uniform.w", "t_comm"};
    for (int i = 0; i < 4; i++)
        if (!isfinite(t[i]) || t[i] < 0)
            return pg_fail(st, PG_EXIT_INPUT, "key '%s': must be a finite time >= 0 (got %g)", key[i], t[i]);
    return 0;
}

int sched_generate(const char *name, const sched_params *p, schedule *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    const sched_generator *g = sched_find_generator(name);
    if (!g) {
        strbuf sb;
        sb_init(&sb);
        for (const sched_generator *k = generators; k->name; k++)
            sb_appendf(&sb, "%s%s", k == generators ? "" : ", ", k->name);
        int rc = pg_fail(st, PG_EXIT_INPUT, "key 'schedule': unknown schedule '%s' (known: %s, file:PATH)",
                         name ? name : "", sb.data ? sb.data : "");
        sb_free(&sb);
        return rc;
    }
    int rc = check_params(p, st);
    if (rc)
        return rc;
    rc = g->generate(p, out, st);
    if (rc == 0)
        rc = sched_validate(out, st);
    if (rc == 0)
        rc = sched_check_deadlock(out, st);
    if (rc)
        sched_free(out);
    return rc;
}
