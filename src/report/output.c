/* output.c: the JSON object writer and the buffered file writer shared by
 * every report (report_util.h). */
#include "report/report_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

rpt_json rpt_json_open(strbuf *sb)
{
    sb_append(sb, "{");
    return (rpt_json){sb, 1};
}

void rpt_json_close(rpt_json *w)
{
    sb_append(w->sb, "}");
}

void rpt_json_key(rpt_json *w, const char *key)
{
    sb_append(w->sb, w->first ? "" : ",");
    w->first = 0;
    sb_append_json_string(w->sb, key);
    sb_append(w->sb, ":");
}

void rpt_json_num(rpt_json *w, const char *key, double v)
{
    rpt_json_key(w, key);
    sb_append_json_number(w->sb, v);
}

void rpt_json_int(rpt_json *w, const char *key, long v)
{
    rpt_json_key(w, key);
    sb_appendf(w->sb, "%ld", v);
}

void rpt_json_str(rpt_json *w, const char *key, const char *v)
{
    rpt_json_key(w, key);
    sb_append_json_string(w->sb, v);
}

void rpt_json_bool(rpt_json *w, const char *key, int v)
{
    rpt_json_key(w, key);
    sb_append(w->sb, v ? "true" : "false");
}

void rpt_json_null(rpt_json *w, const char *key)
{
    rpt_json_key(w, key);
    sb_append(w->sb, "null");
}

void rpt_json_sep(strbuf *sb, int index)
{
    sb_append(sb, index ? "," : "");
}

int rpt_file_open(rpt_file *w, const char *path, const char *option, size_t flush_bytes, pg_status *st)
{
    memset(w, 0, sizeof *w);
    int rc = pg_outfile_open(&w->out, path, option, st);
    if (rc != 0)
        return rc;
    sb_init(&w->sb);
    w->flush_bytes = flush_bytes;
    return 0;
}

void rpt_file_flush(rpt_file *w)
{
    if (w->sb.len && fwrite(w->sb.data, 1, w->sb.len, w->out.f) != w->sb.len)
        w->failed = 1;
    sb_reset(&w->sb);
}

strbuf *rpt_file_buf(rpt_file *w)
{
    if (w->sb.len >= w->flush_bytes)
        rpt_file_flush(w);
    return &w->sb;
}

int rpt_file_close(rpt_file *w, const char *path, const char *what, pg_status *st)
{
    rpt_file_flush(w);
    sb_free(&w->sb);
    (void)path;   /* the outfile knows it */
    pg_status inner;
    pg_status_clear(&inner);
    if (pg_outfile_commit(&w->out, w->failed, &inner) != 0)
        return pg_fail(st, PG_EXIT_INTERNAL, "%s (the %s)", inner.msg, what);
    return 0;
}
