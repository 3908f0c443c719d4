/* csv.h: the one CSV record splitter (RFC 4180) and line reader for the
 * validation files pipegrid reads (calib/rows.c, calib/itermodel.c) and the
 * sweep, optimize and validate CSVs it reads back (job/sweep_csv.c).
 *
 * A record is one line: fields separated by commas; a field may be quoted
 * with double quotes, inside which a comma is text and "" is one quote.
 * Blanks around a field (outside its quotes) are dropped, as the files are
 * hand-written.  Records never span lines: a quote left open at the end of
 * the line is an error (splitting it would invent an extra row), and so is
 * text after a closing quote or a quote inside an unquoted field.
 */
#ifndef PG_UTIL_CSV_H
#define PG_UTIL_CSV_H

#include <stddef.h>
#include <stdio.h>

/* Split line in place into at most max fields (field[i] point into line).
 * Returns the number of fields, or -1 with *why (a static string) when the
 * line is malformed or has more than max fields. */
int pg_csv_split(char *line, char **field, int max, const char **why);

/* The index of the first field whose name appeared earlier in names[0..n),
 * or -1 when all differ: a header with one column twice is refused, since a
 * reader going by name would silently use one of them. */
int pg_csv_duplicate(char *const *names, int n);

/* Read one line of f into buf (size bytes, at most size - 1 of text),
 * without its "\n" or "\r\n".  Returns 1, 0 at end of file, or -1 with *why:
 * "line longer than N bytes" (N = size - 1, in why_buf of why_len bytes) or
 * "NUL byte in the line" (a binary or UTF-16 file). */
int pg_csv_read_line(FILE *f, char *buf, size_t size, char *why_buf, size_t why_len, const char **why);

#endif
