/* strbuf.c: growable strings and the JSON encodings every writer shares. */
#include "util/strbuf.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

/* Decimal digits tried for a double, shortest first: 17 always round-trips
 * an IEEE binary64, 15 is the most that never invents digits. */
#define SB_DIGITS_MIN 15
#define SB_DIGITS_MAX 17
#define SB_NUMBER_MAX 40
/* Below this a whole double has at most 15 digits: %.15g prints it exactly. */
#define SB_WHOLE_MAX 1e15
#define UNICODE_REPLACEMENT "\\ufffd"

void sb_init(strbuf *sb)
{
    sb->data = NULL;
    sb->len = 0;
    sb->cap = 0;
}

void sb_free(strbuf *sb)
{
    free(sb->data);
    sb_init(sb);
}

void sb_reset(strbuf *sb)
{
    sb->len = 0;
    if (sb->data)
        sb->data[0] = '\0';
}

static void sb_reserve(strbuf *sb, size_t extra)
{
    void *p = sb->data;
    pg_grow(&p, &sb->cap, sb->len + extra + 1, 1);
    sb->data = p;
}

void sb_append_n(strbuf *sb, const char *text, size_t n)
{
    sb_reserve(sb, n);
    if (n)
        memcpy(sb->data + sb->len, text, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void sb_append(strbuf *sb, const char *text)
{
    sb_append_n(sb, text, strlen(text));
}

void sb_appendf(strbuf *sb, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(ap2);
        return;
    }
    if ((size_t)n < sizeof small) {
        sb_append_n(sb, small, (size_t)n);
    } else {
        sb_reserve(sb, (size_t)n);
        vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap2);
        sb->len += (size_t)n;
    }
    va_end(ap2);
}

/* Length of the well-formed UTF-8 sequence at s (1..4), or 0 if the bytes
 * there are not one; rejects overlongs, surrogates and values past U+10FFFF
 * so the JSON we write is always valid UTF-8. */
static size_t utf8_seq_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        if (s[1] < lo || s[1] > hi || (s[2] & 0xC0) != 0x80)
            return 0;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        if (s[1] < lo || s[1] > hi || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
            return 0;
        return 4;
    }
    return 0;
}

void sb_append_json_string(strbuf *sb, const char *text)
{
    sb_append_n(sb, "\"", 1);
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    while (*s) {
        unsigned c = *s;
        const char *esc = NULL;
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default: break;
        }
        if (esc) {
            sb_append(sb, esc);
            s++;
        } else if (c < 0x20 || c == 0x7F) {
            sb_appendf(sb, "\\u%04x", c);
            s++;
        } else {
            /* The NUL terminator stops utf8_seq_len's look-ahead: a NUL is never a continuation byte. */
            size_t n = utf8_seq_len(s);
            if (n == 0) {
                sb_append(sb, UNICODE_REPLACEMENT);
                s++;
            } else {
                sb_append_n(sb, (const char *)s, n);
                s += n;
            }
        }
    }
    sb_append_n(sb, "\"", 1);
}

void sb_append_json_number(strbuf *sb, double value)
{
    if (!isfinite(value)) {
        sb_append(sb, "null");
        return;
    }
    char buf[SB_NUMBER_MAX];
    /* Whole numbers below 10^15 (byte counts, most counters) print the same
     * as %.15g would, without a printf and strtod each: a big trace writes
     * millions of them. */
    if (value == floor(value) && fabs(value) < SB_WHOLE_MAX && !(value == 0 && signbit(value))) {
        long long whole = (long long)value;
        char digits[SB_NUMBER_MAX];
        int n = 0, neg = whole < 0;
        unsigned long long u = neg ? 0ULL - (unsigned long long)whole : (unsigned long long)whole;
        do digits[n++] = (char)('0' + u % 10); while ((u /= 10) > 0);
        int len = 0;
        if (neg) buf[len++] = '-';
        while (n > 0) buf[len++] = digits[--n];
        sb_append_n(sb, buf, (size_t)len);
        return;
    }
    for (int digits = SB_DIGITS_MIN; digits <= SB_DIGITS_MAX; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, value);
        if (digits == SB_DIGITS_MAX || strtod(buf, NULL) == value)
            break;
    }
    sb_append(sb, buf);
}

int sb_write(const strbuf *sb, FILE *out)
{
    /* Flushed here: a full disk or a closed pipe must be an error now, not a
     * silently lost report at exit. */
    if (sb->len > 0 && fwrite(sb->data, 1, sb->len, out) != sb->len)
        return -1;
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
