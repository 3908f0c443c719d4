/* registry.c: the table of schedule generators (its rows are
 * SCHED_REGISTRY in generators.h), the queries on it, and sched_generate. */
#include "schedule/generators.h"

#include <math.h>
#include <stdio.h>
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

#define SCHED_ROW(name, fn, flags, summary) {name, sched_gen_##fn, flags, summary},
static const sched_generator generators[] = {
    SCHED_REGISTRY(SCHED_ROW)
    {NULL, NULL, 0, NULL},
};
#undef SCHED_ROW

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

int sched_has_flags(const char *name, unsigned flags)
{
    const sched_generator *g = sched_find_generator(name);
    return g != NULL && (g->flags & flags) == flags;
}

void sched_names(unsigned flags, const char *sep, const char *last_sep, strbuf *out)
{
    int total = 0, k = 0;
    for (const sched_generator *g = generators; g->name; g++)
        total += (g->flags & flags) == flags;
    for (const sched_generator *g = generators; g->name; g++) {
        if ((g->flags & flags) != flags)
            continue;
        sb_appendf(out, "%s%s", k == 0 ? "" : k == total - 1 ? last_sep : sep, g->name);
        k++;
    }
}

/* Room for every name of the table, with separators: far more than 14 rows need. */
#define SCHED_NAMES_MAX 4096

const char *sched_optimize_defaults(void)
{
    static char names[SCHED_NAMES_MAX];
    if (names[0] == '\0') {
        strbuf sb;
        sb_init(&sb);
        sched_names(SCHED_OPTIMIZE_DEFAULT, ",", ",", &sb);
        snprintf(names, sizeof names, "%s", sb.data ? sb.data : "");
        sb_free(&sb);
    }
    return names;
}

static int check_params(const sched_params *p, pg_status *st)
{
    if (p->pp < 1 || p->pp > SCHED_MAX_PP)
        return pg_fail_key(st, PG_EXIT_INPUT, "pp", "expected an integer between 1 and %d, got '%d'", SCHED_MAX_PP, p->pp);
    if (p->m < 1 || p->m > SCHED_MAX_MICROBATCHES)
        return pg_fail_key(st, PG_EXIT_INPUT, "microbatches", "expected an integer between 1 and %d, got '%d'", SCHED_MAX_MICROBATCHES,
                       p->m);
    if (p->chunks < 1 || p->chunks > SCHED_MAX_CHUNKS)
        return pg_fail_key(st, PG_EXIT_INPUT, "chunks", "expected an integer between 1 and %d, got '%d'", SCHED_MAX_CHUNKS, p->chunks);
    long long ops = (long long)p->pp * p->chunks * p->m * SCHED_MAX_OPS_PER_STAGE_MB;
    if (ops > SCHED_MAX_TOTAL_OPS)
        return pg_fail_key(st, PG_EXIT_INPUT,
                       "microbatches", "pp %d x chunks %d x microbatches %d gives %lld ops, more than %lld",
                       p->pp, p->chunks, p->m, ops, SCHED_MAX_TOTAL_OPS);
    const double t[] = {p->t_f, p->t_b, p->t_w, p->t_comm};
    const char *const key[] = {"uniform.f", "uniform.b", "uniform.w", "t_comm"};
    for (int i = 0; i < 4; i++)
        if (!isfinite(t[i]) || t[i] < 0)
            return pg_fail_key(st, PG_EXIT_INPUT, key[i], "must be a finite time >= 0 (got %g)", t[i]);
    return 0;
}

int sched_generate(const char *name, const sched_params *p, schedule *out, pg_status *st)
{
    memset(out, 0, sizeof *out);
    const sched_generator *g = sched_find_generator(name);
    if (!g) {
        strbuf sb;
        sb_init(&sb);
        sched_names(0, ", ", ", ", &sb);
        int rc = pg_fail_key(st, PG_EXIT_INPUT, "schedule", "unknown schedule '%s' (known: %s, file:PATH)",
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
