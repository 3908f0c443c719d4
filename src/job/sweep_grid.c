/* sweep_grid.c: --grid options -> an ordered grid; combination indices and
 * chunks (see sweep.h for the order). */
#include <stdlib.h>
#include <string.h>

#include "job/sweep.h"
#include "util/units.h"

#define GRID_VALUE_SEP ','

static int add_values(sweep_key *k, const char *list, const char *spec, pg_status *st)
{
    const char *p = list;
    for (;;) {
        const char *end = strchr(p, GRID_VALUE_SEP);
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0)
            return pg_fail(st, PG_EXIT_INPUT, "--grid %s: key '%s': empty value", spec, k->name);
        char *v = pg_xmalloc(len + 1);
        memcpy(v, p, len);
        v[len] = '\0';
        for (int i = 0; i < k->nvalues; i++)
            if (strcmp(k->values[i], v) == 0) {
                /* A repeated value would make two rows with the same key
                 * columns, which resume could not tell apart. */
                pg_fail(st, PG_EXIT_INPUT, "--grid %s: key '%s': value '%s' given twice", spec, k->name, v);
                free(v);
                return st->code;
            }
        k->values = pg_xrealloc(k->values, (size_t)(k->nvalues + 1) * sizeof *k->values);
        k->values[k->nvalues++] = v;
        if (!end)
            return 0;
        p = end + 1;
    }
}

int sweep_grid_parse(sweep_grid *g, const char *const *specs, int nspecs, pg_status *st)
{
    memset(g, 0, sizeof *g);
    g->total = 1;
    if (nspecs == 0)
        return pg_fail(st, PG_EXIT_INPUT, "sweep: no --grid KEY=V1,V2,... given");
    g->keys = pg_xcalloc((size_t)nspecs, sizeof *g->keys);
    for (int s = 0; s < nspecs; s++) {
        const char *spec = specs[s];
        const char *eq = strchr(spec, '=');
        if (!eq || eq == spec)
            return pg_fail(st, PG_EXIT_INPUT, "--grid %s: expected KEY=V1,V2,...", spec);
        size_t klen = (size_t)(eq - spec);
        sweep_key *k = &g->keys[g->nkeys++];
        k->name = pg_xmalloc(klen + 1);
        memcpy(k->name, spec, klen);
        k->name[klen] = '\0';
        for (int o = 0; o + 1 < g->nkeys; o++)
            if (strcmp(g->keys[o].name, k->name) == 0)
                return pg_fail(st, PG_EXIT_INPUT, "--grid %s: key '%s' is already a grid key", spec, k->name);
        int rc = add_values(k, eq + 1, spec, st);
        if (rc != 0)
            return rc;
        if (g->total > SWEEP_MAX_COMBINATIONS / k->nvalues)
            return pg_fail(st, PG_EXIT_INPUT, "--grid %s: more than %ld combinations", spec,
                           SWEEP_MAX_COMBINATIONS);
        g->total *= k->nvalues;
    }
    return 0;
}

void sweep_grid_free(sweep_grid *g)
{
    for (int k = 0; k < g->nkeys; k++) {
        for (int v = 0; v < g->keys[k].nvalues; v++)
            free(g->keys[k].values[v]);
        free(g->keys[k].values);
        free(g->keys[k].name);
    }
    free(g->keys);
    memset(g, 0, sizeof *g);
}

void sweep_grid_combination(const sweep_grid *g, long index, const char **values)
{
    /* The last key varies fastest: peel digits from the right. */
    for (int k = g->nkeys - 1; k >= 0; k--) {
        values[k] = g->keys[k].values[index % g->keys[k].nvalues];
        index /= g->keys[k].nvalues;
    }
}

/* How many combinations one step of key k's value moves: the keys after k vary faster. */
static long key_stride(const sweep_grid *g, int k)
{
    long stride = 1;
    for (int i = g->nkeys - 1; i > k; i--)
        stride *= g->keys[i].nvalues;
    return stride;
}

int sweep_grid_value_at(const sweep_grid *g, long index, int k)
{
    return (int)((index / key_stride(g, k)) % g->keys[k].nvalues);
}

long sweep_grid_with_value(const sweep_grid *g, long index, int k, int v)
{
    return index + ((long)v - sweep_grid_value_at(g, index, k)) * key_stride(g, k);
}

int sweep_grid_value_index(const sweep_grid *g, int k, const char *value)
{
    for (int v = 0; v < g->keys[k].nvalues; v++)
        if (strcmp(g->keys[k].values[v], value) == 0)
            return v;
    return -1;
}

void sweep_grid_describe(const sweep_grid *g, long index, strbuf *sb)
{
    const char **values = pg_xcalloc((size_t)g->nkeys, sizeof *values);
    sweep_grid_combination(g, index, values);
    for (int k = 0; k < g->nkeys; k++)
        sb_appendf(sb, "%s%s=%s", k ? " " : "", g->keys[k].name, values[k]);
    free(values);
}

int sweep_parse_chunk(const char *text, int *k, int *n, pg_status *st)
{
    const char *slash = strchr(text, '/');
    long kk = 0, nn = 0;
    const char *why = NULL;
    if (slash) {
        char head[32];
        size_t len = (size_t)(slash - text);
        if (len == 0 || len >= sizeof head)
            goto bad;
        memcpy(head, text, len);
        head[len] = '\0';
        if (units_parse_long(head, &kk, &why) != 0 || units_parse_long(slash + 1, &nn, &why) != 0)
            goto bad;
        if (nn >= 1 && nn <= SWEEP_MAX_COMBINATIONS && kk >= 1 && kk <= nn) {
            *k = (int)kk;
            *n = (int)nn;
            return 0;
        }
    }
bad:
    return pg_fail(st, PG_EXIT_INPUT, "--chunk: '%s' is not K/N with 1 <= K <= N", text);
}

int sweep_in_chunk(long index, int k, int n)
{
    return n == 0 || index % n == k - 1;
}
