/* error.h: how every layer reports failure.
 *
 * A function that can fail takes a `pg_status *st` last and returns 0 on
 * success or a PG_EXIT_* code after filling `st` with a message.  Messages
 * for bad input always name where the input came from, in the form
 *     FILE:LINE: key 'KEY': what is wrong
 * (pg_fail_at builds exactly that), so the CLI can print st->msg unchanged
 * and exit with st->code.  Nothing below the CLI calls exit().
 *
 * The location is structural: st->key, st->file and st->line are fields,
 * and st->msg + st->problem is the problem text alone.  A layer that knows
 * the key at fault but not where the user set it (the schedule generators,
 * the bound, the model's cross-checks) fails with pg_fail_key; whoever
 * knows the origins (the CLI's job, through the experiment) places it with
 * pg_status_locate.  Nobody parses message text to find a key.
 *
 * Outputs on failure, one rule for every function that fills an output
 * (a schedule, a workload, a result struct): on failure it releases what it
 * allocated into that output and leaves it zeroed, so the caller has nothing
 * to free; the matching *_free of a zeroed output is a no-op, so a caller
 * may also free unconditionally.  A context that accumulates across calls
 * (the CLI's `job`) is the exception by design: its owner frees it once with
 * job_free, whatever happened.
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
    PG_EXIT_CUT = 5,       /* optimize --time-limit ran out: the best plan found so far was printed */
};

#define PG_MSG_MAX 4096
#define PG_KEY_MAX 128      /* longest schema key a status records */
#define PG_FILE_MAX 1024    /* longest file name a status records */

typedef struct pg_status {
    int code;               /* PG_EXIT_* ; 0 while no error */
    char msg[PG_MSG_MAX];   /* the whole message as printed, no trailing newline */
    char key[PG_KEY_MAX];   /* the key at fault, "" when the error is not about one key */
    char file[PG_FILE_MAX]; /* where that key was set, "" while not located */
    int line;               /* 1-based line in file, 0 for none (a --set) */
    size_t problem;         /* offset into msg of the problem text (after "FILE:LINE: key 'KEY': ") */
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

/* "key 'KEY': <fmt>", with st->key = key and no location yet: for layers
 * that know which key is wrong but not where it was set.  key may be NULL
 * (then it is pg_fail). */
int pg_fail_key(pg_status *st, int code, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Place a key's error at where: when st names a key and has no file yet,
 * rewrite it as "FILE:LINE: key 'KEY': problem".  Nothing happens when st
 * is already located, names no key, or where.file is NULL (the key was
 * never set: its default is at fault, and no file line would help). */
void pg_status_locate(pg_status *st, pg_origin where);

/* Prefix an existing message with "<prefix>: " (e.g. the file being read).
 * The result is one whole problem with no key or location fields: the
 * prefix is its context, and a caller places it under its own key. */
void pg_status_prefix(pg_status *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Allocation that never returns NULL: aborts with a message on exhaustion,
 * because no caller could do anything more useful. */
void *pg_xmalloc(size_t size);
void *pg_xcalloc(size_t n, size_t size);
void *pg_xrealloc(void *ptr, size_t size);
char *pg_xstrdup(const char *s);

/* Keep freed heap memory for the next allocation instead of returning it
 * to the system at every free (glibc only; elsewhere a no-op).  Call once,
 * first thing in main. */
void pg_alloc_keep_freed_memory(void);

/* Grow *array (of *cap elements of elem_size) so it holds at least need. */
void pg_grow(void **array, size_t *cap, size_t need, size_t elem_size);

#endif
