/* strbuf.h: a growable string, and JSON-safe appends.
 * Used by every writer (text, JSON, CSV, traces, generated XML). */
#ifndef PG_UTIL_STRBUF_H
#define PG_UTIL_STRBUF_H

#include <stddef.h>
#include <stdio.h>

typedef struct strbuf {
    char *data;     /* always NUL-terminated once anything was appended */
    size_t len;
    size_t cap;
} strbuf;

void sb_init(strbuf *sb);
void sb_free(strbuf *sb);
void sb_reset(strbuf *sb);                      /* len = 0, keeps memory */
void sb_append(strbuf *sb, const char *text);
void sb_append_n(strbuf *sb, const char *text, size_t n);
void sb_appendf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_append_json_string(strbuf *sb, const char *text);   /* with quotes and escapes */
/* A double as JSON: shortest round-trip text ("%.17g" trimmed); non-finite -> null. */
void sb_append_json_number(strbuf *sb, double value);
int sb_write(const strbuf *sb, FILE *out);      /* write and flush: 0, or -1 on any error */

#endif
