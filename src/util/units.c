/* units.c: SimGrid-style quantities ("80GiB", "100Gbps", "1.5ms", "989Tf").
 *
 * A quantity is a non-negative decimal number immediately followed by an
 * optional suffix.  The number is scanned by hand before strtod sees it,
 * because strtod alone would also accept hex, "nan", "inf" and leading
 * signs, none of which a quantity may be.
 */
#include "util/units.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define BITS_PER_BYTE 8.0
#define KILO 1e3
#define KIBI 1024.0
#define SECONDS_PER_MINUTE 60.0
#define SECONDS_PER_HOUR 3600.0
#define SECONDS_PER_DAY 86400.0
#define SECONDS_PER_WEEK 604800.0
#define NUMBER_MAX_CHARS 64

typedef struct unit_prefix {
    const char *text;
    double scale;
} unit_prefix;

/* SimGrid's prefixes: k M G T P E are powers of 1000, Ki Mi Gi Ti Pi Ei powers
 * of 1024.  "K" is also read as 1000: people write "KB" and mean a kilobyte. */
static const unit_prefix PREFIXES[] = {
    {"", 1.0},
    {"k", KILO}, {"K", KILO}, {"M", KILO * KILO}, {"G", KILO * KILO * KILO},
    {"T", KILO * KILO * KILO * KILO}, {"P", KILO * KILO * KILO * KILO * KILO},
    {"E", KILO * KILO * KILO * KILO * KILO * KILO},
    {"Ki", KIBI}, {"Mi", KIBI * KIBI}, {"Gi", KIBI * KIBI * KIBI},
    {"Ti", KIBI * KIBI * KIBI * KIBI}, {"Pi", KIBI * KIBI * KIBI * KIBI * KIBI},
    {"Ei", KIBI * KIBI * KIBI * KIBI * KIBI * KIBI},
};
#define NPREFIXES (sizeof PREFIXES / sizeof PREFIXES[0])

typedef struct unit_base {
    const char *text;
    double scale;
    int binary_prefixes_ok;  /* flops have no binary multiples */
} unit_base;

static const unit_base BYTE_BASES[] = {
    {"B", 1.0, 1}, {"b", 1.0 / BITS_PER_BYTE, 1},
};
static const unit_base BANDWIDTH_BASES[] = {
    {"Bps", 1.0, 1}, {"B/s", 1.0, 1}, {"bps", 1.0 / BITS_PER_BYTE, 1}, {"b/s", 1.0 / BITS_PER_BYTE, 1},
};
static const unit_base SPEED_BASES[] = {
    {"f", 1.0, 0}, {"flops", 1.0, 0},
};

/* Durations do not compose from prefixes ("ks" is not a SimGrid unit). */
static const unit_prefix DURATIONS[] = {
    {"", 1.0}, {"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"ps", 1e-12},
    {"m", SECONDS_PER_MINUTE}, {"h", SECONDS_PER_HOUR}, {"d", SECONDS_PER_DAY}, {"w", SECONDS_PER_WEEK},
};
#define NDURATIONS (sizeof DURATIONS / sizeof DURATIONS[0])

/* What every quantity starts with: blanks, then an optional '+'.  Returns
 * the first byte of the number, or NULL with *why for a missing, empty or
 * negative value (no quantity here can be negative). */
static const char *number_start(const char *text, const char **why)
{
    if (!text) {
        *why = "no value";
        return NULL;
    }
    const char *p = text;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '\0') {
        *why = "empty value";
        return NULL;
    }
    if (*p == '-') {
        *why = "negative values are not allowed";
        return NULL;
    }
    return *p == '+' ? p + 1 : p;
}

/* Scan [blanks] digits[.digits][e[+-]digits] from text.  On success *end is
 * the first byte after the number and *value its value. */
static int scan_number(const char *text, double *value, const char **end, const char **why)
{
    const char *p = number_start(text, why);
    if (p == NULL)
        return -1;
    const char *start = p;
    size_t digits = 0;
    while (isdigit((unsigned char)*p)) {
        p++;
        digits++;
    }
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) {
            p++;
            digits++;
        }
    }
    if (digits == 0) {
        *why = "not a number";
        return -1;
    }
    if (*p == 'e' || *p == 'E') {
        const char *q = p + 1;
        if (*q == '+' || *q == '-')
            q++;
        if (isdigit((unsigned char)*q)) {
            while (isdigit((unsigned char)*q))
                q++;
            p = q;
        }
    }
    size_t n = (size_t)(p - start);
    if (n >= NUMBER_MAX_CHARS) {
        *why = "number too long";
        return -1;
    }
    char buf[NUMBER_MAX_CHARS];
    memcpy(buf, start, n);
    buf[n] = '\0';
    double v = strtod(buf, NULL);
    if (!isfinite(v)) {  /* underflow to 0 or a denormal is fine: it is a tiny quantity */
        *why = "number out of range";
        return -1;
    }
    *value = v;
    *end = p;
    return 0;
}

/* The suffix without trailing blanks: [s, *len). */
static size_t suffix_len(const char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    return n;
}

static int match_exact(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && strncmp(s, word, n) == 0;
}

/* prefix + base, or nothing at all (bare number = the base unit). */
static int parse_prefixed(const char *text, const unit_base *bases, size_t nbases, double *out,
                          const char **why, const char *expected)
{
    double v;
    const char *end;
    if (scan_number(text, &v, &end, why) != 0)
        return -1;
    size_t n = suffix_len(end);
    if (n == 0) {
        *out = v;
        return 0;
    }
    for (size_t b = 0; b < nbases; b++) {
        size_t bl = strlen(bases[b].text);
        if (n < bl || strncmp(end + n - bl, bases[b].text, bl) != 0)
            continue;
        for (size_t i = 0; i < NPREFIXES; i++) {
            if (!bases[b].binary_prefixes_ok && strchr(PREFIXES[i].text, 'i'))
                continue;
            if (!match_exact(end, n - bl, PREFIXES[i].text))
                continue;
            double r = v * PREFIXES[i].scale * bases[b].scale;
            if (!isfinite(r)) {
                *why = "number out of range";
                return -1;
            }
            *out = r;
            return 0;
        }
    }
    *why = expected;
    return -1;
}

/* Callers may pass why == NULL when they only need the verdict; every public
 * parser points it at this sink first, so no path writes through NULL. */
#define WHY_OR_SINK(why) const char *why_sink_; if ((why) == NULL) (why) = &why_sink_

int units_parse_bytes(const char *text, double *bytes, const char **why)
{
    WHY_OR_SINK(why);
    return parse_prefixed(text, BYTE_BASES, sizeof BYTE_BASES / sizeof BYTE_BASES[0], bytes, why,
                          "unknown unit (bytes: B kB MB GB TB KiB MiB GiB TiB; bits: b kb Mb Gb Kib Mib Gib)");
}

int units_parse_bandwidth(const char *text, double *bytes_per_s, const char **why)
{
    WHY_OR_SINK(why);
    return parse_prefixed(text, BANDWIDTH_BASES, sizeof BANDWIDTH_BASES / sizeof BANDWIDTH_BASES[0], bytes_per_s,
                          why, "unknown unit (bytes/s: Bps kBps MBps GBps TBps KiBps MiBps GiBps; "
                               "bits/s: bps kbps Mbps Gbps Tbps)");
}

int units_parse_speed(const char *text, double *flops_per_s, const char **why)
{
    WHY_OR_SINK(why);
    return parse_prefixed(text, SPEED_BASES, sizeof SPEED_BASES / sizeof SPEED_BASES[0], flops_per_s, why,
                          "unknown unit (flop/s: f kf Mf Gf Tf Pf Ef)");
}

int units_parse_duration(const char *text, double *seconds, const char **why)
{
    WHY_OR_SINK(why);
    double v;
    const char *end;
    if (scan_number(text, &v, &end, why) != 0)
        return -1;
    size_t n = suffix_len(end);
    for (size_t i = 0; i < NDURATIONS; i++) {
        if (match_exact(end, n, DURATIONS[i].text)) {
            double r = v * DURATIONS[i].scale;
            if (!isfinite(r)) {
                *why = "number out of range";
                return -1;
            }
            *seconds = r;
            return 0;
        }
    }
    *why = "unknown unit (durations: s ms us ns ps m h d w)";
    return -1;
}

int units_parse_double(const char *text, double *value, const char **why)
{
    WHY_OR_SINK(why);
    const char *end;
    if (scan_number(text, value, &end, why) != 0)
        return -1;
    if (suffix_len(end) != 0) {
        *why = "trailing characters after the number";
        return -1;
    }
    return 0;
}

int units_parse_long(const char *text, long *value, const char **why)
{
    WHY_OR_SINK(why);
    const char *p = number_start(text, why);
    if (p == NULL)
        return -1;
    if (!isdigit((unsigned char)*p)) {
        *why = "not an integer";
        return -1;
    }
    long v = 0;
    while (isdigit((unsigned char)*p)) {
        int d = *p - '0';
        if (v > (LONG_MAX - d) / 10) {
            *why = "integer out of range";
            return -1;
        }
        v = v * 10 + d;
        p++;
    }
    if (suffix_len(p) != 0) {
        *why = "not an integer";
        return -1;
    }
    *value = v;
    return 0;
}

int units_parse_bool(const char *text, int *value, const char **why)
{
    WHY_OR_SINK(why);
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    if (!text) {
        *why = "no value";
        return -1;
    }
    const char *p = text;
    while (*p == ' ' || *p == '\t')
        p++;
    size_t n = suffix_len(p);
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strlen(yes[i]) == n && strncasecmp(p, yes[i], n) == 0) {
            *value = 1;
            return 0;
        }
        if (strlen(no[i]) == n && strncasecmp(p, no[i], n) == 0) {
            *value = 0;
            return 0;
        }
    }
    *why = "expected true/false, yes/no, on/off or 1/0";
    return -1;
}

/* Pick the largest unit not above |value| (the first one for tiny values). */
static char *format_scaled(double value, const unit_prefix *units, size_t nunits, int decimals, char *buf,
                           int len)
{
    if (!buf || len <= 0)
        return buf;
    if (!isfinite(value)) {
        snprintf(buf, (size_t)len, "%g", value);
        return buf;
    }
    size_t pick = 0;
    for (size_t i = 0; i < nunits; i++)
        if (fabs(value) >= units[i].scale)
            pick = i;
    snprintf(buf, (size_t)len, "%.*f %s", decimals, value / units[pick].scale, units[pick].text);
    return buf;
}

char *units_format_bytes(double bytes, char *buf, int len)
{
    static const unit_prefix units[] = {
        {"B", 1.0}, {"KiB", KIBI}, {"MiB", KIBI * KIBI}, {"GiB", KIBI * KIBI * KIBI},
        {"TiB", KIBI * KIBI * KIBI * KIBI}, {"PiB", KIBI * KIBI * KIBI * KIBI * KIBI},
    };
    if (buf && len > 0 && isfinite(bytes) && fabs(bytes) < KIBI) {
        snprintf(buf, (size_t)len, "%.0f B", bytes);
        return buf;
    }
    return format_scaled(bytes, units, sizeof units / sizeof units[0], 2, buf, len);
}

int units_pieces(double total_bytes, double piece_bytes)
{
    if (!(piece_bytes > 0) || !(total_bytes > 0))
        return 1;
    double q = total_bytes / piece_bytes;
    int n = (int)q < q ? (int)q + 1 : (int)q;
    return n < 1 ? 1 : n;
}

char *units_format_duration(double seconds, char *buf, int len)
{
    static const unit_prefix units[] = {
        {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0},
    };
    if (buf && len > 0 && seconds == 0.0) {
        snprintf(buf, (size_t)len, "0 s");
        return buf;
    }
    return format_scaled(seconds, units, sizeof units / sizeof units[0], 3, buf, len);
}

char *units_format_bandwidth(double bytes_per_s, char *buf, int len)
{
    static const unit_prefix units[] = {
        {"B/s", 1.0}, {"kB/s", KILO}, {"MB/s", KILO * KILO}, {"GB/s", KILO * KILO * KILO},
        {"TB/s", KILO * KILO * KILO * KILO},
    };
    return format_scaled(bytes_per_s, units, sizeof units / sizeof units[0], 1, buf, len);
}
