/* error.c: status reporting and allocation that cannot fail silently. */
#include "util/error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Smallest capacity pg_grow hands out, so tiny arrays do not regrow on every push. */
#define PG_GROW_MIN_ELEMS 8

void pg_status_clear(pg_status *st)
{
    if (!st)
        return;
    st->code = PG_EXIT_OK;
    st->msg[0] = '\0';
}

int pg_fail(pg_status *st, int code, const char *fmt, ...)
{
    if (!st)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->msg, sizeof st->msg, fmt, ap);
    va_end(ap);
    st->code = code;
    return code;
}

int pg_fail_at(pg_status *st, int code, pg_origin where, const char *key, const char *fmt, ...)
{
    if (!st)
        return code;
    const char *file = where.file ? where.file : "<input>";
    int used;
    if (where.line > 0)
        used = snprintf(st->msg, sizeof st->msg, "%s:%d: ", file, where.line);
    else
        used = snprintf(st->msg, sizeof st->msg, "%s: ", file);
    if (used < 0)
        used = 0;
    if (key && (size_t)used < sizeof st->msg) {
        int k = snprintf(st->msg + used, sizeof st->msg - (size_t)used, "key '%s': ", key);
        if (k > 0)
            used += k;
    }
    if ((size_t)used < sizeof st->msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(st->msg + used, sizeof st->msg - (size_t)used, fmt, ap);
        va_end(ap);
    }
    st->code = code;
    return code;
}

void pg_status_prefix(pg_status *st, const char *fmt, ...)
{
    if (!st)
        return;
    char old[PG_MSG_MAX];
    memcpy(old, st->msg, sizeof old);
    old[sizeof old - 1] = '\0';
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(st->msg, sizeof st->msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    /* Truncation is fine: the message is for people, and the prefix comes first. */
    size_t used = (size_t)n < sizeof st->msg ? (size_t)n : sizeof st->msg - 1;
    size_t room = sizeof st->msg - used;
    const char *sep = ": ";
    size_t sep_len = strlen(sep), old_len = strlen(old);
    if (room > 1) {
        size_t k = sep_len < room - 1 ? sep_len : room - 1;
        memcpy(st->msg + used, sep, k);
        used += k;
        room -= k;
    }
    if (room > 1) {
        size_t k = old_len < room - 1 ? old_len : room - 1;
        memcpy(st->msg + used, old, k);
        used += k;
    }
    st->msg[used] = '\0';
}

/* Out of memory is not an input error: say so once and stop, since every
 * caller would otherwise need a recovery path it cannot test. */
static void out_of_memory(size_t size)
{
    fprintf(stderr, "pipegrid: out of memory (allocating %zu bytes)\n", size);
    abort();
}

void *pg_xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        out_of_memory(size);
    return p;
}

void *pg_xcalloc(size_t n, size_t size)
{
    if (n == 0 || size == 0)
        n = size = 1;
    void *p = calloc(n, size);
    if (!p)
        out_of_memory(n * size);
    return p;
}

void *pg_xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    if (!p)
        out_of_memory(size);
    return p;
}

char *pg_xstrdup(const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s) + 1;
    char *p = pg_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

void pg_grow(void **array, size_t *cap, size_t need, size_t elem_size)
{
    if (need <= *cap)
        return;
    size_t new_cap = *cap < PG_GROW_MIN_ELEMS ? PG_GROW_MIN_ELEMS : *cap;
    while (new_cap < need) {
        if (new_cap > SIZE_MAX / 2)
            out_of_memory(SIZE_MAX);
        new_cap *= 2;
    }
    if (elem_size && new_cap > SIZE_MAX / elem_size)
        out_of_memory(SIZE_MAX);
    *array = pg_xrealloc(*array, new_cap * elem_size);
    *cap = new_cap;
}
