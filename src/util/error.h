/* error.h: how every layer reports failure.
 *
 * A function that can fail takes a `pg_status *st` last and returns 0 on
 * success or a PG_EXIT_* code after filling `st` with a message.  Messages
 * for bad input always name where the input came from, in the form
 *     FILE:LINE: key 'KEY': what is wrong
 * (pg_fail_at builds exactly that), so the CLI can print st->msg unchanged
 * and exit with st->code.  Nothing below the CLI calls exit().
 */
#ifndef PG_UTIL_ERROR_H
#define PG_UTIL_ERROR_H

#include <stdarg.h>
#include <stddef.h>

/* Process exit codes, fixed by the command-line contract. */
enum {
    PG_EXIT_OK = 0,
    PG_EXIT_INTERNAL = 1,  /* a bug or an environment failure (out of memory, I/O) */
    PG_EXIT_INPUT = 2,     /* bad input: unknown key or value, malformed file, impossible parameters */
    PG_EXIT_OOM = 3,       /* simulation completed but some GPU's peak exceeds its capacity */
    PG_EXIT_DEADLOCK = 4,  /* the schedule cannot complete */
};

#define PG_MSG_MAX 4096

typedef struct pg_status {
    int code;               /* PG_EXIT_* ; 0 while no error */
    char msg[PG_MSG_MAX];   /* human-readable, no trailing newline */
} pg_status;

/* Where a value came from: a file and a 1-based line, or a command-line
 * option (file = "--set", line = 0). */
typedef struct pg_origin {
    const char *file;
    int line;
} pg_origin;

void pg_status_clear(pg_status *st);

/* Fill st (if not NULL) and return code. */
int pg_fail(pg_status *st, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "FILE:LINE: key 'KEY': <fmt>"; line 0 prints "FILE: key ...". key may be NULL. */
int pg_fail_at(pg_status *st, int code, pg_origin where, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Prefix an existing message with "<prefix>: " (e.g. the file being read). */
void pg_status_prefix(pg_status *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Allocation that never returns NULL: aborts with a message on exhaustion,
 * because no caller could do anything more useful. */
void *pg_xmalloc(size_t size);
void *pg_xcalloc(size_t n, size_t size);
void *pg_xrealloc(void *ptr, size_t size);
char *pg_xstrdup(const char *s);

/* Grow *array (of *cap elements of elem_size) so it holds at least need. */
void pg_grow(void **array, size_t *cap, size_t need, size_t elem_size);

#endif
