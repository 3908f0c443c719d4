/* error.c: status reporting and allocation that cannot fail silently. */
#include "util/error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* Smallest capacity pg_grow hands out, so tiny arrays do not regrow on every push. */
#define PG_GROW_MIN_ELEMS 8

void pg_status_clear(pg_status *st)
{
    if (!st)
        return;
    st->code = PG_EXIT_OK;
    st->msg[0] = '\0';
    st->key[0] = '\0';
    st->file[0] = '\0';
    st->line = 0;
    st->problem = 0;
}

/* msg = "[FILE[:LINE]: ][key 'KEY': ]<problem>" from st's fields; returns the
 * offset where the problem text goes. */
static size_t write_location(pg_status *st, int named)
{
    int used = 0;
    if (st->file[0] != '\0') {
        if (st->line > 0)
            used = snprintf(st->msg, sizeof st->msg, "%s:%d: ", st->file, st->line);
        else
            used = snprintf(st->msg, sizeof st->msg, "%s: ", st->file);
    }
    if (used < 0)
        used = 0;
    /* named: a key was given, even "" (a file's empty key is worth showing). */
    if (named && (size_t)used < sizeof st->msg) {
        int k = snprintf(st->msg + used, sizeof st->msg - (size_t)used, "key '%s': ", st->key);
        if (k > 0)
            used += k;
    }
    size_t off = (size_t)used < sizeof st->msg ? (size_t)used : sizeof st->msg - 1;
    st->msg[off] = '\0';
    return off;
}

static void set_key(pg_status *st, const char *key)
{
    snprintf(st->key, sizeof st->key, "%s", key ? key : "");
}

int pg_fail(pg_status *st, int code, const char *fmt, ...)
{
    if (!st)
        return code;
    pg_status_clear(st);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->msg, sizeof st->msg, fmt, ap);
    va_end(ap);
    st->code = code;
    return code;
}

int pg_fail_key(pg_status *st, int code, const char *key, const char *fmt, ...)
{
    if (!st)
        return code;
    pg_status_clear(st);
    set_key(st, key);
    st->problem = write_location(st, key != NULL);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->msg + st->problem, sizeof st->msg - st->problem, fmt, ap);
    va_end(ap);
    st->code = code;
    return code;
}

int pg_fail_at(pg_status *st, int code, pg_origin where, const char *key, const char *fmt, ...)
{
    if (!st)
        return code;
    pg_status_clear(st);
    set_key(st, key);
    snprintf(st->file, sizeof st->file, "%s", where.file ? where.file : "<input>");
    st->line = where.line > 0 ? where.line : 0;
    st->problem = write_location(st, key != NULL);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->msg + st->problem, sizeof st->msg - st->problem, fmt, ap);
    va_end(ap);
    st->code = code;
    return code;
}

void pg_status_locate(pg_status *st, pg_origin where)
{
    if (!st || st->key[0] == '\0' || st->file[0] != '\0' || where.file == NULL)
        return;
    char problem[PG_MSG_MAX];
    size_t off = st->problem < sizeof st->msg ? st->problem : 0;
    snprintf(problem, sizeof problem, "%s", st->msg + off);
    snprintf(st->file, sizeof st->file, "%s", where.file);
    st->line = where.line > 0 ? where.line : 0;
    st->problem = write_location(st, 1);
    snprintf(st->msg + st->problem, sizeof st->msg - st->problem, "%s", problem);
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
    /* The prefixed message is one whole problem in the prefix's context (a
     * file being read): a caller places it under its own key. */
    st->key[0] = '\0';
    st->file[0] = '\0';
    st->line = 0;
    st->problem = 0;
}

/* Out of memory is not an input error: say so once and stop, since every
 * caller would otherwise need a recovery path it cannot test.  The one exit
 * below src/cli: an environment failure, PG_EXIT_INTERNAL as the README's
 * exit codes promise, never abort()'s core dump (exit 134).  _exit, not
 * exit: atexit handlers and SimGrid's static destructors may need memory
 * or run mid-simulation, and no partial output should be flushed. */
static void out_of_memory(size_t size)
{
    fprintf(stderr, "pipegrid: out of memory (allocating %zu bytes; a `ulimit -v` or the machine's memory)\n",
            size);
    fflush(stderr);
    _exit(PG_EXIT_INTERNAL);
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

/* Every prediction of the cost model (calibrate runs hundreds of thousands)
 * and every simulation builds its workload, schedule and timings and frees
 * them.  glibc returns the top of the heap to the system whenever more
 * than 128 KiB of it is free (M_TRIM_THRESHOLD) and grows it again at the
 * next allocation: a brk call and fresh zeroed pages each time.  Measured
 * on calibrate's H100 fit (--max-weight 0): 26,772 brk calls in its first
 * 20 s, 79 s wall of which 37 s in the kernel; keeping up to 16 MiB free
 * (and growing 4 MiB at a time) takes it to 10 s with 0.02 s in the kernel,
 * the same file written, the peak resident size 42 MB instead of 37. */
#define KEEP_FREED_BYTES (16 << 20)
#define HEAP_GROWTH_PAD_BYTES (4 << 20)

void pg_alloc_keep_freed_memory(void)
{
#ifdef __GLIBC__
    mallopt(M_TRIM_THRESHOLD, KEEP_FREED_BYTES);
    mallopt(M_TOP_PAD, HEAP_GROWTH_PAD_BYTES);
#endif
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
