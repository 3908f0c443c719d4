/* outfile.h: output files that appear whole or not at all, and output
 * files that only one pipegrid writes at a time.
 *
 * Whole files (a trace, an SVG, optimize's -o, merge's and calibrate's -o,
 * sweep --emit's script) are written to a temporary file beside the
 * destination (PATH.tmpXXXXXX, same directory, so the rename never crosses
 * file systems) and renamed onto PATH only once every byte is written and
 * closed.  An interrupted or failing writer therefore never leaves a
 * truncated PATH, and an older PATH survives a failed rewrite.  A destination
 * that exists and is not a regular file (/dev/full, /dev/null, a FIFO, a
 * symbolic link) is written in place: renaming over it would replace the
 * device or the link rather than write through it.
 *
 * Exit codes (the README's rule): a destination that cannot be created
 * (no such directory, no permission) is bad input, PG_EXIT_INPUT, naming the
 * path and the option that gave it; a write or rename that fails after that
 * (full disk, I/O error) is an environment failure, PG_EXIT_INTERNAL.
 *
 * Appended files (a sweep's -o, optimize --resume) are locked with flock,
 * non-blocking: a second pipegrid on the same file is refused at once
 * (PG_EXIT_INTERNAL: the input is fine, the file is busy) instead of
 * interleaving rows with the first.  The lock is the open file's: forked
 * children (sweep and optimize workers) close their copy at fork, so only
 * the writer holds it and a killed writer releases it at once. */
#ifndef PG_UTIL_OUTFILE_H
#define PG_UTIL_OUTFILE_H

#include <stdio.h>

#include "util/error.h"

typedef struct pg_outfile {
    FILE *f;            /* write here */
    char *path;         /* the destination */
    char *tmp_path;     /* the temporary file; NULL when writing in place */
} pg_outfile;

/* Create the temporary file for path (or open path itself, see above).
 * option names the key or option that gave the path ("--trace", "-o"), for
 * the message; NULL names none.  On failure *o is zeroed. */
int pg_outfile_open(pg_outfile *o, const char *path, const char *option, pg_status *st);
/* Flush, close and rename onto the destination; on failure the temporary
 * file is removed and PG_EXIT_INTERNAL says "PATH: cannot write: ...".
 * Always leaves *o zeroed.  already_failed: the caller saw a write fail
 * (the file is discarded as on failure). */
int pg_outfile_commit(pg_outfile *o, int already_failed, pg_status *st);
/* Close and remove the temporary file (the destination is untouched).
 * A no-op on a zeroed *o. */
void pg_outfile_discard(pg_outfile *o);

/* Open path for appending (created when missing) and lock it: 0 with *out,
 * or PG_EXIT_INPUT "PATH: key 'OPTION': cannot open for writing" /
 * pg_lock_output's failure, with *out NULL.  Take it before reading what
 * the file already holds, so no other writer appends in between. */
int pg_open_locked_append(const char *path, const char *option, const char *what, FILE **out, pg_status *st);

/* Lock fd (open on path) for this process's writes: 0, or PG_EXIT_INTERNAL
 * "PATH: another pipegrid is writing this file ..." when another process
 * holds it.  what says who writes it ("sweep -o", "optimize --resume").
 * The lock lasts until fd is closed. */
int pg_lock_output(int fd, const char *path, const char *what, pg_status *st);

#endif
