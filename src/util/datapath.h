/* datapath.h: where the data files the binary reads (profiles/, platforms/,
 * experiments/) are found.
 *
 * A relative name is looked up, in order: as given (relative to the current
 * directory), under $PIPEGRID_DATA_DIR, under the source tree the binary was
 * built from (PG_SOURCE_DIR, so an uninstalled build finds its data from any
 * directory), and under the installed data directory (PG_DATA_DIR).  An
 * installed binary (one that runs from PG_BIN_DIR, or from ROOT/PG_BIN_DIR
 * after `make install DESTDIR=ROOT`) skips the source tree and reads
 * ROOT/PG_DATA_DIR instead, so what `make install` leaves out is an error
 * there, not silently read from the build's sources.  An
 * absolute name is only taken as given.  Only regular files match, so a
 * directory named like a profile is never "found".
 */
#ifndef PG_UTIL_DATAPATH_H
#define PG_UTIL_DATAPATH_H

#include <stddef.h>

/* Environment variable naming an extra data directory, searched first. */
#define PG_DATA_DIR_ENV "PIPEGRID_DATA_DIR"

/* On success writes the path that exists into out (len bytes) and returns 0;
 * returns -1 if no candidate exists or the path does not fit in out. */
int datapath_find(const char *relpath, char *out, size_t len);

#endif
