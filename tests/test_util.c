/* test_util.c: the util layer: errors, strings and JSON, units, YAML trees,
 * data-file lookup, and a seeded mutation run of the YAML loader. */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "util/csv.h"
#include "util/datapath.h"
#include "util/error.h"
#include "util/outfile.h"
#include "util/strbuf.h"
#include "util/units.h"
#include "util/yamltree.h"

#define KIB 1024.0
#define MIB (KIB * KIB)
/* GIB: util/units.h (2^30), the one definition */
#define TIB (KIB * GIB)

/* ---------------------------------------------------------------- error */

START_TEST(test_fail_at_formats)
{
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(st.code, 0);
    ck_assert_str_eq(st.msg, "");

    pg_origin o = {"exp.yaml", 12};
    int rc = pg_fail_at(&st, PG_EXIT_INPUT, o, "pp", "expected an integer >= %d", 1);
    ck_assert_int_eq(rc, PG_EXIT_INPUT);
    ck_assert_int_eq(st.code, PG_EXIT_INPUT);
    ck_assert_str_eq(st.msg, "exp.yaml:12: key 'pp': expected an integer >= 1");

    pg_origin set = {"--set", 0};
    pg_fail_at(&st, PG_EXIT_INPUT, set, "uniform.f", "bad");
    ck_assert_str_eq(st.msg, "--set: key 'uniform.f': bad");

    pg_fail_at(&st, PG_EXIT_INPUT, o, NULL, "malformed YAML");
    ck_assert_str_eq(st.msg, "exp.yaml:12: malformed YAML");

    pg_origin nofile = {NULL, 3};
    pg_fail_at(&st, PG_EXIT_INPUT, nofile, "k", "x");
    ck_assert_str_eq(st.msg, "<input>:3: key 'k': x");

    /* A NULL status still returns the code: callers may not care about the text. */
    ck_assert_int_eq(pg_fail(NULL, PG_EXIT_DEADLOCK, "x"), PG_EXIT_DEADLOCK);
    ck_assert_int_eq(pg_fail_at(NULL, PG_EXIT_OOM, o, "k", "x"), PG_EXIT_OOM);
    ck_assert_int_eq(pg_fail(&st, PG_EXIT_INTERNAL, "n=%d", 5), PG_EXIT_INTERNAL);
    ck_assert_str_eq(st.msg, "n=5");
}
END_TEST

START_TEST(test_fail_truncates_safely)
{
    pg_status st;
    char *big = malloc(3 * PG_MSG_MAX);
    memset(big, 'x', 3 * PG_MSG_MAX - 1);
    big[3 * PG_MSG_MAX - 1] = '\0';
    pg_origin o = {big, 7};
    pg_fail_at(&st, PG_EXIT_INPUT, o, big, "%s", big);
    ck_assert_uint_eq(strlen(st.msg), PG_MSG_MAX - 1);
    pg_fail(&st, PG_EXIT_INPUT, "%s", big);
    ck_assert_uint_eq(strlen(st.msg), PG_MSG_MAX - 1);
    pg_status_prefix(&st, "%s", big);
    ck_assert_uint_eq(strlen(st.msg), PG_MSG_MAX - 1);
    free(big);
}
END_TEST

START_TEST(test_status_prefix)
{
    pg_status st;
    pg_fail(&st, PG_EXIT_INPUT, "line 3: bad");
    pg_status_prefix(&st, "profile %s", "p.yaml");
    ck_assert_str_eq(st.msg, "profile p.yaml: line 3: bad");
    ck_assert_int_eq(st.code, PG_EXIT_INPUT);
}
END_TEST

/* The location is fields, not text: a layer names the key, the caller that
 * knows the origins places it, and nothing parses the message. */
START_TEST(test_status_key_fields)
{
    pg_status st;
    pg_status_clear(&st);
    ck_assert_int_eq(pg_fail_key(&st, PG_EXIT_INPUT, "microbatches", "needs a multiple of %d", 4), PG_EXIT_INPUT);
    ck_assert_str_eq(st.msg, "key 'microbatches': needs a multiple of 4");
    ck_assert_str_eq(st.key, "microbatches");
    ck_assert_str_eq(st.file, "");
    ck_assert_int_eq(st.line, 0);
    ck_assert_str_eq(st.msg + st.problem, "needs a multiple of 4");

    pg_status_locate(&st, (pg_origin){"exp.yaml", 7});
    ck_assert_str_eq(st.msg, "exp.yaml:7: key 'microbatches': needs a multiple of 4");
    ck_assert_str_eq(st.file, "exp.yaml");
    ck_assert_int_eq(st.line, 7);
    ck_assert_str_eq(st.msg + st.problem, "needs a multiple of 4");
    ck_assert_int_eq(st.code, PG_EXIT_INPUT);

    /* Located once: a second origin does not move it. */
    pg_status_locate(&st, (pg_origin){"other.yaml", 2});
    ck_assert_str_eq(st.msg, "exp.yaml:7: key 'microbatches': needs a multiple of 4");

    /* A key left at its default has no origin: the message stays as it is. */
    pg_fail_key(&st, PG_EXIT_INPUT, "pp", "too big");
    pg_status_locate(&st, (pg_origin){NULL, 0});
    ck_assert_str_eq(st.msg, "key 'pp': too big");
    ck_assert_str_eq(st.file, "");

    /* --set: line 0 prints no line number. */
    pg_status_locate(&st, (pg_origin){"--set", 0});
    ck_assert_str_eq(st.msg, "--set: key 'pp': too big");
    ck_assert_int_eq(st.line, 0);

    /* No key: nothing to place. */
    pg_fail(&st, PG_EXIT_INTERNAL, "disk full");
    ck_assert_str_eq(st.key, "");
    pg_status_locate(&st, (pg_origin){"exp.yaml", 3});
    ck_assert_str_eq(st.msg, "disk full");

    /* pg_fail_at fills every field. */
    pg_fail_at(&st, PG_EXIT_INPUT, (pg_origin){"a.yaml", 12}, "cluster.gpu", "unknown GPU '%s'", "X1");
    ck_assert_str_eq(st.key, "cluster.gpu");
    ck_assert_str_eq(st.file, "a.yaml");
    ck_assert_int_eq(st.line, 12);
    ck_assert_str_eq(st.msg + st.problem, "unknown GPU 'X1'");

    /* A prefixed message is one problem in the prefix's context. */
    pg_fail_key(&st, PG_EXIT_INPUT, "pp", "bad");
    pg_status_prefix(&st, "sched.csv");
    ck_assert_str_eq(st.msg, "sched.csv: key 'pp': bad");
    ck_assert_str_eq(st.key, "");
    ck_assert_int_eq((int)st.problem, 0);

    /* A new failure forgets the old fields. */
    pg_fail(&st, PG_EXIT_INPUT, "plain");
    ck_assert_str_eq(st.key, "");
    ck_assert_str_eq(st.file, "");
    ck_assert_int_eq(pg_fail_key(NULL, PG_EXIT_OOM, "k", "x"), PG_EXIT_OOM);
}
END_TEST

START_TEST(test_alloc_and_grow)
{
    int *a = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < 1000; i++) {
        void *p = a;
        pg_grow(&p, &cap, i + 1, sizeof *a);
        a = p;
        ck_assert_uint_ge(cap, i + 1);
        a[i] = (int)i;
    }
    for (size_t i = 0; i < 1000; i++)
        ck_assert_int_eq(a[i], (int)i);
    size_t before = cap;
    void *p = a;
    pg_grow(&p, &cap, 10, sizeof *a);  /* never shrinks */
    ck_assert_uint_eq(cap, before);
    free(p);

    char *s = pg_xstrdup("hello");
    ck_assert_str_eq(s, "hello");
    free(s);
    s = pg_xstrdup(NULL);
    ck_assert_str_eq(s, "");
    free(s);
    int *z = pg_xcalloc(4, sizeof *z);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(z[i], 0);
    z = pg_xrealloc(z, 8 * sizeof *z);
    free(z);
    free(pg_xmalloc(0));
}
END_TEST

/* ---------------------------------------------------------------- strbuf */

START_TEST(test_strbuf_basic)
{
    strbuf sb;
    sb_init(&sb);
    sb_append(&sb, "ab");
    sb_append_n(&sb, "cdef", 2);
    sb_appendf(&sb, "-%d-%s", 42, "x");
    ck_assert_str_eq(sb.data, "abcd-42-x");
    ck_assert_uint_eq(sb.len, 9);
    /* Longer than any internal scratch buffer. */
    char big[1000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    sb_reset(&sb);
    ck_assert_uint_eq(sb.len, 0);
    ck_assert_str_eq(sb.data, "");
    sb_appendf(&sb, "<%s>", big);
    ck_assert_uint_eq(sb.len, 1001);
    ck_assert_int_eq(sb.data[0], '<');
    ck_assert_int_eq(sb.data[1000], '>');
    ck_assert_int_eq(sb.data[1001], '\0');

    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(sb_write(&sb, f), 0);
    ck_assert_int_eq(ftell(f), 1001);
    fclose(f);
    sb_free(&sb);
    ck_assert_ptr_null(sb.data);

    strbuf empty;
    sb_init(&empty);
    f = tmpfile();
    ck_assert_int_eq(sb_write(&empty, f), 0);
    fclose(f);
}
END_TEST

static void check_json_string(const char *in, const char *expected)
{
    strbuf sb;
    sb_init(&sb);
    sb_append_json_string(&sb, in);
    ck_assert_msg(strcmp(sb.data, expected) == 0, "json(%s) = %s, expected %s", in, sb.data, expected);
    sb_free(&sb);
}

START_TEST(test_json_string)
{
    check_json_string("plain", "\"plain\"");
    check_json_string("", "\"\"");
    check_json_string(NULL, "\"\"");
    check_json_string("a\"b\\c", "\"a\\\"b\\\\c\"");
    check_json_string("l1\nl2\tx\r\b\f", "\"l1\\nl2\\tx\\r\\b\\f\"");
    check_json_string("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
    check_json_string("/slash", "\"/slash\"");
    /* Valid UTF-8 passes through; invalid bytes become U+FFFD so the output stays valid. */
    check_json_string("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
    check_json_string("a\xff" "b", "\"a\\ufffdb\"");
    check_json_string("\xc3", "\"\\ufffd\"");
    check_json_string("\xc0\xaf", "\"\\ufffd\\ufffd\"");          /* overlong */
    check_json_string("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""); /* surrogate */
    check_json_string("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* > U+10FFFF */
}
END_TEST

static const char *json_number(double v, char *out, size_t len)
{
    strbuf sb;
    sb_init(&sb);
    sb_append_json_number(&sb, v);
    snprintf(out, len, "%s", sb.data);
    sb_free(&sb);
    return out;
}

START_TEST(test_json_number)
{
    char b[64];
    ck_assert_str_eq(json_number(0.1, b, sizeof b), "0.1");
    ck_assert_str_eq(json_number(100, b, sizeof b), "100");
    ck_assert_str_eq(json_number(0, b, sizeof b), "0");
    ck_assert_str_eq(json_number(-2.5, b, sizeof b), "-2.5");
    ck_assert_str_eq(json_number(1e21, b, sizeof b), "1e+21");
    ck_assert_str_eq(json_number(NAN, b, sizeof b), "null");
    ck_assert_str_eq(json_number(INFINITY, b, sizeof b), "null");
    ck_assert_str_eq(json_number(-INFINITY, b, sizeof b), "null");
    /* Whole numbers take a fast path: the same text as %.15g, at its edges too. */
    const double whole[] = {1, -1, 2147483648.0, -9007199254740992.0, 999999999999999.0, 1e15, -1e15, 123456789012.0};
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++) {
        char want[48];
        snprintf(want, sizeof want, "%.15g", whole[i]);
        if (strtod(want, NULL) != whole[i]) snprintf(want, sizeof want, "%.17g", whole[i]);
        ck_assert_str_eq(json_number(whole[i], b, sizeof b), want);
    }
    ck_assert_str_eq(json_number(-0.0, b, sizeof b), "-0");
    /* 0.1+0.2 needs 17 digits to round-trip. */
    ck_assert_str_eq(json_number(0.1 + 0.2, b, sizeof b), "0.30000000000000004");
    /* Every value round-trips exactly, with no more than 17 significant digits. */
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        uint64_t bits = x;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v))
            continue;
        json_number(v, b, sizeof b);
        ck_assert_msg(strtod(b, NULL) == v, "%s does not round-trip", b);
    }
    double thirds = 1.0 / 3.0;
    json_number(thirds, b, sizeof b);
    ck_assert(strtod(b, NULL) == thirds);
}
END_TEST

/* ---------------------------------------------------------------- units */

typedef struct unit_case {
    const char *text;
    double value;
} unit_case;

START_TEST(test_units_bytes)
{
    static const unit_case good[] = {
        {"80GiB", 80 * GIB}, {"34MiB", 34 * MIB}, {"1.5kB", 1500}, {"512B", 512}, {"4096", 4096},
        {"1KiB", KIB}, {"2TiB", 2 * TIB}, {"1KB", 1000}, {"1MB", 1e6}, {"1GB", 1e9}, {"1TB", 1e12},
        {"1PB", 1e15}, {"1EB", 1e18}, {"1PiB", KIB * TIB}, {"100Gb", 100e9 / 8}, {"8b", 1},
        {"1kb", 125}, {"1Mb", 1e6 / 8}, {"1Kib", 128}, {"1Gib", GIB / 8}, {" 3GiB ", 3 * GIB},
        {"0", 0}, {"1e3", 1000}, {"2.5e-1KB", 250}, {"+7B", 7}, {".5kB", 500}, {"5.kB", 5000},
        {"1e-400", 0},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        double v = -1;
        const char *why = NULL;
        ck_assert_msg(units_parse_bytes(good[i].text, &v, &why) == 0, "'%s' rejected: %s", good[i].text, why);
        ck_assert_msg(fabs(v - good[i].value) <= 1e-12 * fmax(1, good[i].value), "'%s' = %.17g, expected %.17g",
                      good[i].text, v, good[i].value);
    }
    static const char *const bad[] = {
        "", "   ", "-1", "-0", "nan", "NaN", "inf", "infinity", "0x10", "abc", "1GiBB", "1 G iB", "1XB",
        "1gib", "1gB", "GiB", "1e400", "1e308TiB", "1.2.3", "1e", "1Bps", "1s", "--1", "+-1", "1,5", ".",
        "1 2", "1GiB x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double v = 42;
        const char *why = NULL;
        ck_assert_msg(units_parse_bytes(bad[i], &v, &why) == -1, "'%s' accepted as %g", bad[i], v);
        ck_assert_ptr_nonnull(why);
        ck_assert(v == 42);
    }
    const char *why = NULL;
    double v;
    ck_assert_int_eq(units_parse_bytes(NULL, &v, &why), -1);
    units_parse_bytes("-5GiB", &v, &why);
    ck_assert_ptr_nonnull(strstr(why, "negative"));
    units_parse_bytes("5XiB", &v, &why);
    ck_assert_ptr_nonnull(strstr(why, "GiB"));
}
END_TEST

START_TEST(test_units_bandwidth)
{
    static const unit_case good[] = {
        {"150GBps", 150e9}, {"100Gbps", 100e9 / 8}, {"25GiBps", 25 * GIB}, {"1e9", 1e9}, {"1Bps", 1},
        {"1kBps", 1e3}, {"1MBps", 1e6}, {"1TBps", 1e12}, {"1KiBps", KIB}, {"1MiBps", MIB}, {"8bps", 1},
        {"1kbps", 125}, {"1Mbps", 125e3}, {"1Tbps", 125e9}, {"900GB/s", 900e9}, {"400Gb/s", 50e9},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        double v = -1;
        const char *why = NULL;
        ck_assert_msg(units_parse_bandwidth(good[i].text, &v, &why) == 0, "'%s' rejected: %s", good[i].text, why);
        ck_assert_rel(v, good[i].value, 1e-12);
    }
    static const char *const bad[] = {"", "-1GBps", "1GB", "1Gb", "1GBs", "1gbps", "inf", "nan", "1 GBpss", "Gbps"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double v;
        const char *why = NULL;
        ck_assert_msg(units_parse_bandwidth(bad[i], &v, &why) == -1, "'%s' accepted", bad[i]);
        ck_assert_ptr_nonnull(why);
    }
}
END_TEST

START_TEST(test_units_duration)
{
    static const unit_case good[] = {
        {"2us", 2e-6}, {"1.5ms", 1.5e-3}, {"3s", 3}, {"10ns", 10e-9}, {"1ps", 1e-12}, {"1m", 60},
        {"1h", 3600}, {"1d", 86400}, {"1w", 604800}, {"0.25", 0.25}, {"0", 0}, {" 4ms", 4e-3},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        double v = -1;
        const char *why = NULL;
        ck_assert_msg(units_parse_duration(good[i].text, &v, &why) == 0, "'%s' rejected: %s", good[i].text, why);
        ck_assert_rel(v, good[i].value, 1e-12);
    }
    static const char *const bad[] = {"", "-1s", "1sec", "1S", "1 ms ms", "ms", "1ks", "nan", "inf", "1y", "1e999s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double v;
        const char *why = NULL;
        ck_assert_msg(units_parse_duration(bad[i], &v, &why) == -1, "'%s' accepted", bad[i]);
        ck_assert_ptr_nonnull(why);
    }
}
END_TEST

START_TEST(test_units_speed)
{
    static const unit_case good[] = {
        {"989Tf", 989e12}, {"312Tf", 312e12}, {"1e12", 1e12}, {"1f", 1}, {"1kf", 1e3}, {"1Mf", 1e6},
        {"1Gf", 1e9}, {"1Pf", 1e15}, {"1Ef", 1e18}, {"2Gflops", 2e9},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        double v = -1;
        const char *why = NULL;
        ck_assert_msg(units_parse_speed(good[i].text, &v, &why) == 0, "'%s' rejected: %s", good[i].text, why);
        ck_assert_rel(v, good[i].value, 1e-12);
    }
    static const char *const bad[] = {"", "-1f", "1Gif", "1Tff", "1F", "Tf", "nan"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double v;
        const char *why = NULL;
        ck_assert_msg(units_parse_speed(bad[i], &v, &why) == -1, "'%s' accepted", bad[i]);
    }
}
END_TEST

START_TEST(test_units_plain)
{
    double d;
    long l;
    int b;
    const char *why;
    ck_assert_int_eq(units_parse_double("0.4324", &d, &why), 0);
    ck_assert_rel(d, 0.4324, 1e-15);
    ck_assert_int_eq(units_parse_double("1e-3 ", &d, &why), 0);
    ck_assert_rel(d, 1e-3, 1e-15);
    ck_assert_int_eq(units_parse_double("1ms", &d, &why), -1);
    ck_assert_int_eq(units_parse_double("-0.5", &d, &why), -1);
    ck_assert_int_eq(units_parse_double("nan", &d, &why), -1);
    ck_assert_int_eq(units_parse_double("", &d, &why), -1);

    ck_assert_int_eq(units_parse_long("42", &l, &why), 0);
    ck_assert_int_eq(l, 42);
    ck_assert_int_eq(units_parse_long(" +7 ", &l, &why), 0);
    ck_assert_int_eq(l, 7);
    ck_assert_int_eq(units_parse_long("9223372036854775807", &l, &why), 0);
    ck_assert(l == LONG_MAX);
    static const char *const bad_long[] = {"", "-1", "1.5", "1e3", "0x10", "12a", "99999999999999999999", "a", "+"};
    for (size_t i = 0; i < sizeof bad_long / sizeof bad_long[0]; i++)
        ck_assert_msg(units_parse_long(bad_long[i], &l, &why) == -1, "'%s' accepted", bad_long[i]);

    static const char *const yes[] = {"true", "YES", "on", "1", " True "};
    static const char *const no[] = {"false", "no", "OFF", "0"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        ck_assert_int_eq(units_parse_bool(yes[i], &b, &why), 0);
        ck_assert_int_eq(b, 1);
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        ck_assert_int_eq(units_parse_bool(no[i], &b, &why), 0);
        ck_assert_int_eq(b, 0);
    }
    ck_assert_int_eq(units_parse_bool("maybe", &b, &why), -1);
    ck_assert_int_eq(units_parse_bool("", &b, &why), -1);
    ck_assert_int_eq(units_parse_bool("truex", &b, &why), -1);
}
END_TEST

/* A caller that only wants the verdict passes why == NULL: every parser must
 * still refuse bad text (platform.c's link reader once crashed here). */
START_TEST(test_units_null_why)
{
    const char *bad[] = {"-1s", "", "fast", "nan", "inf", NULL};
    double v = 0;
    long l = 0;
    int b = 0;
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        ck_assert_int_eq(units_parse_duration(bad[i], &v, NULL), -1);
        ck_assert_int_eq(units_parse_bytes(bad[i], &v, NULL), -1);
        ck_assert_int_eq(units_parse_bandwidth(bad[i], &v, NULL), -1);
        ck_assert_int_eq(units_parse_speed(bad[i], &v, NULL), -1);
        ck_assert_int_eq(units_parse_double(bad[i], &v, NULL), -1);
        ck_assert_int_eq(units_parse_long(bad[i], &l, NULL), -1);
        ck_assert_int_eq(units_parse_bool(bad[i], &b, NULL), -1);
    }
    ck_assert_int_eq(units_parse_duration("2us", &v, NULL), 0);
    ck_assert_double_eq_tol(v, 2e-6, 1e-18);
}
END_TEST

/* RFC 4180 records on one line: quotes protect commas, "" is a quote,
 * blanks outside quotes are dropped; malformed records are refused. */
START_TEST(test_csv_split)
{
    char line[128];
    char *f[8];
    const char *why = NULL;
    snprintf(line, sizeof line, "a, \"b,c\" ,\"d\"\"e\",,  f  ");
    ck_assert_int_eq(pg_csv_split(line, f, 8, &why), 5);
    ck_assert_str_eq(f[0], "a");
    ck_assert_str_eq(f[1], "b,c");
    ck_assert_str_eq(f[2], "d\"e");
    ck_assert_str_eq(f[3], "");
    ck_assert_str_eq(f[4], "f");
    const char *bad[] = {"a,\"b,c", "a,\"b\"x,c", "a,b\"c", "1,2,3,4,5,6,7,8,9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(line, sizeof line, "%s", bad[i]);
        why = NULL;
        ck_assert_msg(pg_csv_split(line, f, 8, &why) == -1 && why != NULL, "'%s' accepted", bad[i]);
    }
    snprintf(line, sizeof line, "x,\"b,c");
    pg_csv_split(line, f, 8, &why);
    ck_assert_ptr_nonnull(strstr(why, "unterminated quote"));
    char *names[] = {"a", "b", "a"};
    ck_assert_int_eq(pg_csv_duplicate(names, 3), 2);
    ck_assert_int_eq(pg_csv_duplicate(names, 2), -1);
}
END_TEST

/* A NUL byte is named as one, not as a long line; CRLF is one line end. */
START_TEST(test_csv_read_line)
{
    static const char text[] = "ab\r\nc\0d\nlong line here\n";
    FILE *f = fmemopen((void *)text, sizeof text - 1, "r");
    ck_assert_ptr_nonnull(f);
    char buf[8], why_buf[64];
    const char *why = NULL;
    ck_assert_int_eq(pg_csv_read_line(f, buf, sizeof buf, why_buf, sizeof why_buf, &why), 1);
    ck_assert_str_eq(buf, "ab");
    ck_assert_int_eq(pg_csv_read_line(f, buf, sizeof buf, why_buf, sizeof why_buf, &why), -1);
    ck_assert_ptr_nonnull(strstr(why, "NUL byte"));
    ck_assert_int_eq(pg_csv_read_line(f, buf, sizeof buf, why_buf, sizeof why_buf, &why), -1);
    ck_assert_ptr_nonnull(strstr(why, "longer than 7 bytes"));
    fclose(f);
}
END_TEST

/* A whole output appears only at commit; a discarded or failed one leaves
 * the old file; a lock refuses a second holder. */
START_TEST(test_outfile)
{
    char dir[] = "/tmp/pg_outfile_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256], buf[64];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    pg_status st;
    pg_status_clear(&st);
    pg_outfile o;
    ck_assert_int_eq(pg_outfile_open(&o, path, "-o", &st), 0);
    fputs("new", o.f);
    ck_assert_int_eq(access(path, F_OK), -1);   /* nothing at path before the commit */
    ck_assert_int_eq(pg_outfile_commit(&o, 0, &st), 0);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
    fclose(f);
    ck_assert_str_eq(buf, "new");
    ck_assert_int_eq(pg_outfile_open(&o, path, "-o", &st), 0);
    fputs("half", o.f);
    ck_assert_int_eq(pg_outfile_commit(&o, 1, &st), PG_EXIT_INTERNAL);   /* a write failed: old file kept */
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
    fclose(f);
    ck_assert_str_eq(buf, "new");
    char missing[300];
    snprintf(missing, sizeof missing, "%s/no/such/x", dir);
    ck_assert_int_eq(pg_outfile_open(&o, missing, "-o", &st), PG_EXIT_INPUT);
    FILE *a = NULL, *b = NULL;
    ck_assert_int_eq(pg_open_locked_append(path, "-o", "test", &a, &st), 0);
    /* flock locks belong to the open file: a second open is a second writer */
    ck_assert_int_eq(pg_open_locked_append(path, "-o", "test", &b, &st), PG_EXIT_INTERNAL);
    ck_assert_ptr_nonnull(strstr(st.msg, "another pipegrid is writing"));
    ck_assert_ptr_null(b);
    fclose(a);
    ck_assert_int_eq(pg_open_locked_append(path, "-o", "test", &b, &st), 0);
    fclose(b);
    unlink(path);
    rmdir(dir);
}
END_TEST

START_TEST(test_units_format)
{
    char buf[64];
    ck_assert_str_eq(units_format_bytes(79.5 * GIB, buf, sizeof buf), "79.50 GiB");
    ck_assert_str_eq(units_format_bytes(512, buf, sizeof buf), "512 B");
    ck_assert_str_eq(units_format_bytes(34 * MIB, buf, sizeof buf), "34.00 MiB");
    ck_assert_str_eq(units_format_bytes(1.5 * KIB, buf, sizeof buf), "1.50 KiB");
    ck_assert_str_eq(units_format_duration(1.25e-3, buf, sizeof buf), "1.250 ms");
    ck_assert_str_eq(units_format_duration(2e-6, buf, sizeof buf), "2.000 us");
    ck_assert_str_eq(units_format_duration(3, buf, sizeof buf), "3.000 s");
    ck_assert_str_eq(units_format_duration(0, buf, sizeof buf), "0 s");
    ck_assert_str_eq(units_format_duration(5e-12, buf, sizeof buf), "0.005 ns");
    ck_assert_str_eq(units_format_bandwidth(150e9, buf, sizeof buf), "150.0 GB/s");
    ck_assert_str_eq(units_format_bandwidth(12.5e9, buf, sizeof buf), "12.5 GB/s");
    ck_assert_str_eq(units_format_bandwidth(10, buf, sizeof buf), "10.0 B/s");
    /* Formatting then parsing gives the value back to the printed precision. */
    double back;
    const char *why;
    units_format_bytes(80 * GIB, buf, sizeof buf);
    char compact[64];
    size_t j = 0;
    for (size_t i = 0; buf[i]; i++)
        if (buf[i] != ' ')
            compact[j++] = buf[i];
    compact[j] = '\0';
    ck_assert_int_eq(units_parse_bytes(compact, &back, &why), 0);
    ck_assert_rel(back, 80 * GIB, 1e-12);
    /* Tiny buffers truncate, never overflow. */
    char tiny[4];
    units_format_bytes(79.5 * GIB, tiny, sizeof tiny);
    ck_assert_str_eq(tiny, "79.");
    units_format_duration(1, tiny, 0);
}
END_TEST

/* ---------------------------------------------------------------- yamltree */

static int load(const char *text, yt_doc *doc, pg_status *st)
{
    pg_status_clear(st);
    return yt_load_buffer(text, strlen(text), "t.yaml", doc, st);
}

START_TEST(test_yaml_tree)
{
    const char *text = "# comment\n"
                       "schedule: 1f1b\n"
                       "pp: 4\n"
                       "uniform:\n"
                       "  f: 1ms\n"
                       "  b: \"2ms\"\n"
                       "list: [1, 2, 3]\n"
                       "block:\n"
                       "  - a\n"
                       "  - {x: 1}\n"
                       "empty:\n"
                       "quoted: ''\n";
    yt_doc doc;
    pg_status st;
    ck_assert_int_eq(load(text, &doc, &st), 0);
    ck_assert_str_eq(doc.file, "t.yaml");
    const yt_node *r = doc.root;
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->kind, YT_MAP);
    ck_assert_int_eq(r->line, 2);
    ck_assert_uint_eq(r->count, 7);
    ck_assert_str_eq(r->keys[0], "schedule");
    ck_assert_int_eq(r->key_lines[0], 2);
    ck_assert_str_eq(yt_get(r, "schedule")->scalar, "1f1b");
    ck_assert_int_eq(yt_get(r, "pp")->line, 3);
    const yt_node *u = yt_get(r, "uniform");
    ck_assert_int_eq(u->kind, YT_MAP);
    ck_assert_int_eq(u->line, 5);
    ck_assert_str_eq(yt_get(u, "b")->scalar, "2ms");
    ck_assert_int_eq(yt_get(u, "b")->line, 6);
    const yt_node *l = yt_get(r, "list");
    ck_assert_int_eq(l->kind, YT_SEQ);
    ck_assert_uint_eq(l->count, 3);
    ck_assert_str_eq(l->items[2]->scalar, "3");
    const yt_node *bl = yt_get(r, "block");
    ck_assert_int_eq(bl->kind, YT_SEQ);
    ck_assert_int_eq(bl->items[1]->kind, YT_MAP);
    ck_assert_int_eq(bl->items[1]->line, 10);
    ck_assert_str_eq(yt_get(r, "empty")->scalar, "");
    ck_assert_str_eq(yt_get(r, "quoted")->scalar, "");
    ck_assert_ptr_null(yt_get(r, "missing"));
    ck_assert_ptr_null(yt_get(l, "x"));
    ck_assert_ptr_null(yt_get(NULL, "x"));
    ck_assert_str_eq(yt_kind_name(YT_SCALAR), "scalar");
    ck_assert_str_eq(yt_kind_name(YT_MAP), "mapping");
    ck_assert_str_eq(yt_kind_name(YT_SEQ), "sequence");
    yt_free(&doc);
    ck_assert_ptr_null(doc.root);
    yt_free(&doc); /* idempotent */
}
END_TEST

START_TEST(test_yaml_large_collections)
{
    strbuf sb;
    sb_init(&sb);
    sb_append(&sb, "seq:\n");
    for (int i = 0; i < 3000; i++)
        sb_appendf(&sb, "  - %d\n", i);
    for (int i = 0; i < 500; i++)
        sb_appendf(&sb, "k%d: %d\n", i, i);
    yt_doc doc;
    pg_status st;
    ck_assert_int_eq(yt_load_buffer(sb.data, sb.len, "big", &doc, &st), 0);
    ck_assert_uint_eq(doc.root->count, 501);
    const yt_node *s = yt_get(doc.root, "seq");
    ck_assert_uint_eq(s->count, 3000);
    ck_assert_str_eq(s->items[2999]->scalar, "2999");
    ck_assert_int_eq(s->items[2999]->line, 3001);
    ck_assert_str_eq(yt_get(doc.root, "k499")->scalar, "499");
    yt_free(&doc);
    sb_free(&sb);
}
END_TEST

START_TEST(test_yaml_empty)
{
    static const char *const empties[] = {"", "\n\n", "# only a comment\n", "---\n", "---\n...\n", "   \n"};
    for (size_t i = 0; i < sizeof empties / sizeof empties[0]; i++) {
        yt_doc doc;
        pg_status st;
        ck_assert_msg(load(empties[i], &doc, &st) == 0, "'%s': %s", empties[i], st.msg);
        ck_assert_ptr_null(doc.root);
        yt_free(&doc);
    }
    yt_doc doc;
    pg_status st;
    ck_assert_int_eq(yt_load_buffer(NULL, 0, NULL, &doc, &st), 0);
    ck_assert_ptr_null(doc.root);
    ck_assert_str_eq(doc.file, "<input>");
    yt_free(&doc);
}
END_TEST

typedef struct bad_yaml {
    const char *text;
    int line;
    const char *needle;
} bad_yaml;

START_TEST(test_yaml_rejects)
{
    static const bad_yaml cases[] = {
        {"a: &x 1\nb: *x\n", 1, "anchor"},
        {"a: 1\nb: *x\n", 2, "alias"},
        {"base: &b {x: 1}\n", 1, "anchor"},
        {"s: &s [1]\n", 1, "anchor"},
        {"a: 1\n---\nb: 2\n", 2, "more than one YAML document"},
        {"a: 1\nb: 2\na: 3\n", 3, "key 'a': duplicate key (first at line 1)"},
        {"m:\n  x: 1\n  x: 2\n", 3, "duplicate key"},
        {"? [a, b]\n: 1\n", 1, "mapping keys must be plain scalars, not a sequence"},
        {"? {a: 1}\n: 1\n", 1, "not a mapping"},
        {"a: [1, 2\n", 2, "malformed YAML"},
        {"a: \"unterminated\n", 2, "malformed YAML"},
        {"a:\n\t- 1\n", 2, "malformed YAML"},
        {"a: b: c\n", 1, "malformed YAML"},
        {"  a: 1\n b: 2\n", 2, "malformed YAML"},
        {"a: 1\x01\n", 1, "malformed YAML"},
        {"a: \xff\xfe\n", 1, "malformed YAML"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        yt_doc doc;
        pg_status st;
        int rc = load(cases[i].text, &doc, &st);
        ck_assert_msg(rc == PG_EXIT_INPUT, "case %zu accepted", i);
        ck_assert_int_eq(st.code, PG_EXIT_INPUT);
        ck_assert_ptr_null(doc.root);
        ck_assert_ptr_null(doc.file);
        char prefix[32];
        snprintf(prefix, sizeof prefix, "t.yaml:%d: ", cases[i].line);
        ck_assert_msg(strncmp(st.msg, prefix, strlen(prefix)) == 0, "case %zu: '%s' does not start with '%s'", i,
                      st.msg, prefix);
        ck_assert_msg(strstr(st.msg, cases[i].needle) != NULL, "case %zu: '%s' lacks '%s'", i, st.msg,
                      cases[i].needle);
        yt_free(&doc);
    }
    /* A NUL byte inside the buffer is bad input, not the end of it. */
    yt_doc doc;
    pg_status st;
    ck_assert_int_eq(yt_load_buffer("a: 1\n\0b: 2\n", 11, "nul", &doc, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "nul:"));
    ck_assert_ptr_nonnull(strstr(st.msg, "control characters"));
}
END_TEST

START_TEST(test_yaml_depth_limit)
{
    strbuf sb;
    sb_init(&sb);
    for (int i = 0; i < 10000; i++)
        sb_append(&sb, "[");
    yt_doc doc;
    pg_status st;
    ck_assert_int_eq(yt_load_buffer(sb.data, sb.len, "deep", &doc, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, "nesting deeper than"));
    sb_reset(&sb);
    /* Moderate nesting is fine. */
    for (int i = 0; i < 20; i++)
        sb_append(&sb, "[");
    for (int i = 0; i < 20; i++)
        sb_append(&sb, "]");
    ck_assert_int_eq(yt_load_buffer(sb.data, sb.len, "ok", &doc, &st), 0);
    yt_free(&doc);
    sb_free(&sb);
}
END_TEST

START_TEST(test_yaml_file)
{
    char path[] = "/tmp/pg_test_util_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char *text = "x: 1\ny:\n  z: [a, b]\n";
    ck_assert_int_eq(write(fd, text, strlen(text)), (int)strlen(text));
    close(fd);
    yt_doc doc;
    pg_status st;
    ck_assert_int_eq(yt_load_file(path, &doc, &st), 0);
    ck_assert_str_eq(doc.file, path);
    ck_assert_int_eq(yt_get(yt_get(doc.root, "y"), "z")->line, 3);
    yt_free(&doc);
    unlink(path);
    ck_assert_int_eq(yt_load_file(path, &doc, &st), PG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(st.msg, path));
    ck_assert_ptr_nonnull(strstr(st.msg, "cannot open"));
    ck_assert_int_eq(yt_load_file("/tmp", &doc, &st), PG_EXIT_INPUT);
}
END_TEST

/* ---------------------------------------------------------------- datapath */

START_TEST(test_datapath)
{
    char dir[] = "/tmp/pg_datapath_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char sub[256], file[256];
    snprintf(sub, sizeof sub, "%s/profiles", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    snprintf(file, sizeof file, "%s/profiles/only-here.yaml", dir);
    FILE *f = fopen(file, "w");
    fputs("x: 1\n", f);
    fclose(f);

    char out[512];
    setenv(PG_DATA_DIR_ENV, dir, 1);
    ck_assert_int_eq(datapath_find("profiles/only-here.yaml", out, sizeof out), 0);
    ck_assert_str_eq(out, file);
    /* An absolute path is taken as given. */
    ck_assert_int_eq(datapath_find(file, out, sizeof out), 0);
    ck_assert_str_eq(out, file);
    /* Directories never match. */
    ck_assert_int_eq(datapath_find("profiles", out, sizeof out), -1);
    ck_assert_int_eq(datapath_find("profiles/absent.yaml", out, sizeof out), -1);
    ck_assert_int_eq(datapath_find("", out, sizeof out), -1);
    ck_assert_int_eq(datapath_find(NULL, out, sizeof out), -1);
    /* Too small an output buffer is a miss, not an overflow. */
    char small[8];
    ck_assert_int_eq(datapath_find("profiles/only-here.yaml", small, sizeof small), -1);
    unsetenv(PG_DATA_DIR_ENV);
    ck_assert_int_eq(datapath_find("profiles/only-here.yaml", out, sizeof out), -1);

    /* The compiled-in source tree is searched: this file's own header lives there. */
    char cwd[512];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_int_eq(datapath_find("src/util/datapath.h", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "src/util/datapath.h"));
    ck_assert_str_ne(out, "src/util/datapath.h");
    /* The current directory comes first. */
    ck_assert_int_eq(datapath_find("profiles/only-here.yaml", out, sizeof out), 0);
    ck_assert_str_eq(out, "profiles/only-here.yaml");
    ck_assert_int_eq(chdir(cwd), 0);

    unlink(file);
    rmdir(sub);
    rmdir(dir);
}
END_TEST

/* ---------------------------------------------------------------- mutation */

/* Seeded and deterministic: the same mutations on every run, so a failure
 * reproduces; tests/fuzz/fuzz_yaml.c explores without that restriction. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

static const char *const SAMPLES[] = {
    "name: demo\nschedule: zb-h1\npp: 4\nmicrobatches: 8\nworkload: uniform\n"
    "uniform:\n  f: 1ms\n  b: 1ms\n  w: 0.5ms\n  w_fraction: 0.4324\nnetwork: ideal\nideal:\n  latency: 2us\n",
    "layers:\n  - {kind: embedding, f: 1.2ms, b: 1ms, w: 0.3ms, act_b: 34MiB}\n"
    "  - kind: block\n    count: 24\n    f: \"2.5ms\"\n    params: 1.2e8\nstages: [6, 6, 6, 6]\n",
    "# comment\n---\nmemory: {limit: 3, capacity: 80GiB}\noffload: selective\noffload.ratio: 0.5\n"
    "description: |\n  multi\n  line\nlist: [a, 'b', \"c\"]\n...\n",
};

static const char MUTATION_BYTES[] = ":-[]{}&*!|>#,?'\"\n\t \\%@`\x01\xff\xc3";

static int count_lines(const char *s, size_t n)
{
    int lines = 1;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\n')
            lines++;
    return lines;
}

static void check_tree(const yt_node *n, int max_line, int depth)
{
    ck_assert_int_le(depth, 100);
    ck_assert_int_ge(n->line, 1);
    ck_assert_int_le(n->line, max_line);
    if (n->kind == YT_SCALAR) {
        ck_assert_ptr_nonnull(n->scalar);
        return;
    }
    for (size_t i = 0; i < n->count; i++) {
        if (n->kind == YT_MAP) {
            ck_assert_ptr_nonnull(n->keys[i]);
            ck_assert_int_ge(n->key_lines[i], 1);
            ck_assert_int_le(n->key_lines[i], max_line);
            for (size_t j = 0; j < i; j++)
                ck_assert_str_ne(n->keys[i], n->keys[j]);
        }
        check_tree(n->items[i], max_line, depth + 1);
    }
}

#define MUTATION_RUNS 4000
#define MUTATION_MAX_EDITS 4

START_TEST(test_yaml_mutations)
{
    uint64_t seed = 0x5EED5EED12345678ull;
    int accepted = 0, rejected = 0;
    char *buf = malloc(4096);
    for (int run = 0; run < MUTATION_RUNS; run++) {
        const char *sample = SAMPLES[run % (sizeof SAMPLES / sizeof SAMPLES[0])];
        size_t n = strlen(sample);
        memcpy(buf, sample, n);
        int edits = 1 + (int)(rng_next(&seed) % MUTATION_MAX_EDITS);
        for (int e = 0; e < edits && n > 0; e++) {
            size_t at = rng_next(&seed) % n;
            switch (rng_next(&seed) % 5) {
            case 0: /* replace a byte */
                buf[at] = MUTATION_BYTES[rng_next(&seed) % (sizeof MUTATION_BYTES - 1)];
                break;
            case 1: /* insert a byte */
                if (n + 1 < 4096) {
                    memmove(buf + at + 1, buf + at, n - at);
                    buf[at] = MUTATION_BYTES[rng_next(&seed) % (sizeof MUTATION_BYTES - 1)];
                    n++;
                }
                break;
            case 2: { /* delete a span */
                size_t len = 1 + rng_next(&seed) % 8;
                if (at + len > n)
                    len = n - at;
                memmove(buf + at, buf + at + len, n - at - len);
                n -= len;
                break;
            }
            case 3: { /* duplicate a span */
                size_t len = 1 + rng_next(&seed) % 16;
                if (at + len > n)
                    len = n - at;
                if (n + len < 4096) {
                    memmove(buf + at + len, buf + at, n - at);
                    n += len;
                }
                break;
            }
            default: /* truncate */
                n = at;
                break;
            }
        }
        yt_doc doc;
        pg_status st;
        pg_status_clear(&st);
        int rc = yt_load_buffer(buf, n, "m.yaml", &doc, &st);
        ck_assert_msg(rc == 0 || rc == PG_EXIT_INPUT, "run %d: rc %d", run, rc);
        if (rc == 0) {
            accepted++;
            if (doc.root)
                check_tree(doc.root, count_lines(buf, n), 0);
        } else {
            rejected++;
            int line = 0;
            ck_assert_msg(sscanf(st.msg, "m.yaml:%d: ", &line) == 1 && line >= 1 && line <= count_lines(buf, n) + 1,
                          "run %d: message without a line: %s", run, st.msg);
            ck_assert_ptr_null(doc.root);
        }
        yt_free(&doc);
    }
    free(buf);
    /* The mutations must exercise both outcomes, or the test proves nothing. */
    ck_assert_int_gt(accepted, MUTATION_RUNS / 20);
    ck_assert_int_gt(rejected, MUTATION_RUNS / 20);
}
END_TEST

static Suite *util_suite(void)
{
    Suite *s = suite_create("util");
    TCase *tc = tcase_create("error");
    tcase_add_test(tc, test_fail_at_formats);
    tcase_add_test(tc, test_fail_truncates_safely);
    tcase_add_test(tc, test_status_prefix);
    tcase_add_test(tc, test_status_key_fields);
    tcase_add_test(tc, test_alloc_and_grow);
    suite_add_tcase(s, tc);
    tc = tcase_create("strbuf");
    tcase_add_test(tc, test_strbuf_basic);
    tcase_add_test(tc, test_json_string);
    tcase_add_test(tc, test_json_number);
    suite_add_tcase(s, tc);
    tc = tcase_create("units");
    tcase_add_test(tc, test_units_bytes);
    tcase_add_test(tc, test_units_bandwidth);
    tcase_add_test(tc, test_units_duration);
    tcase_add_test(tc, test_units_speed);
    tcase_add_test(tc, test_units_null_why);
    tcase_add_test(tc, test_csv_split);
    tcase_add_test(tc, test_csv_read_line);
    tcase_add_test(tc, test_outfile);
    tcase_add_test(tc, test_units_plain);
    tcase_add_test(tc, test_units_format);
    suite_add_tcase(s, tc);
    tc = tcase_create("yamltree");
    tcase_add_test(tc, test_yaml_tree);
    tcase_add_test(tc, test_yaml_large_collections);
    tcase_add_test(tc, test_yaml_empty);
    tcase_add_test(tc, test_yaml_rejects);
    tcase_add_test(tc, test_yaml_depth_limit);
    tcase_add_test(tc, test_yaml_file);
    suite_add_tcase(s, tc);
    tc = tcase_create("datapath");
    tcase_add_test(tc, test_datapath);
    suite_add_tcase(s, tc);
    tc = tcase_create("mutation");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_yaml_mutations);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pg_run_suite(util_suite());
}
