/* csv.c: RFC 4180 records, one per line (csv.h). */
#include "util/csv.h"

#include <string.h>

#define NUL_BYTE "NUL byte in the line (a binary or UTF-16 file?)"

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

int pg_csv_split(char *line, char **field, int max, const char **why)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max) {
            *why = "more fields than any file of its kind has";
            return -1;
        }
        while (is_blank(*p))
            p++;
        char *out = p;
        field[n] = p;
        if (*p == '"') {
            p++;
            for (;;) {
                if (*p == '\0') {
                    *why = "unterminated quote (a field cannot span lines)";
                    return -1;
                }
                if (*p == '"') {
                    if (p[1] != '"') {
                        p++;
                        break;
                    }
                    p++;   /* "" is one quote */
                }
                *out++ = *p++;
            }
            while (is_blank(*p))
                p++;
            if (*p != ',' && *p != '\0') {
                *why = "text after a closing quote";
                return -1;
            }
        } else {
            while (*p != '\0' && *p != ',') {
                if (*p == '"') {
                    *why = "a quote inside an unquoted field (quote the whole field)";
                    return -1;
                }
                *out++ = *p++;
            }
            while (out > field[n] && is_blank(out[-1]))
                out--;
        }
        int end = *p == '\0';
        *out = '\0';   /* out <= p: at most the comma is overwritten, after it was seen */
        n++;
        if (end)
            return n;
        p++;
    }
}

int pg_csv_duplicate(char *const *names, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return i;
    return -1;
}

int pg_csv_read_line(FILE *f, char *buf, size_t size, char *why_buf, size_t why_len, const char **why)
{
    size_t n = 0;
    int c, nul = 0;
    while ((c = getc(f)) != EOF && c != '\n') {
        if (c == '\0')
            nul = 1;
        if (n + 1 >= size) {
            snprintf(why_buf, why_len, "line longer than %zu bytes", size - 1);
            *why = nul ? NUL_BYTE : why_buf;
            return -1;
        }
        buf[n++] = (char)c;
    }
    if (c == EOF && n == 0)
        return 0;
    if (nul) {
        *why = NUL_BYTE;
        return -1;
    }
    if (n > 0 && buf[n - 1] == '\r')
        n--;
    buf[n] = '\0';
    return 1;
}
