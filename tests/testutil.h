/* testutil.h: helpers shared by the check-based unit tests. */
#ifndef PG_TESTS_TESTUTIL_H
#define PG_TESTS_TESTUTIL_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Closed forms must hold to 1e-9 relative (the project's standard). */
#define PG_REL_TOL 1e-9

#define ck_assert_rel(actual, expected, rel)                                          \
    do {                                                                               \
        double pg_a_ = (actual), pg_e_ = (expected);                                   \
        double pg_scale_ = fabs(pg_e_) > 1.0 ? fabs(pg_e_) : 1.0;                      \
        ck_assert_msg(fabs(pg_a_ - pg_e_) <= (rel) * pg_scale_,                        \
                      "%s = %.15g, expected %.15g (rel tol %g)", #actual, pg_a_, pg_e_, \
                      (double)(rel));                                                  \
    } while (0)

#define ck_assert_exact(actual, expected) ck_assert_rel(actual, expected, PG_REL_TOL)

/* A temporary directory per test (a check fixture: pg_tmpdir_setup,
 * pg_tmpdir_teardown) and files written into it. */
#define PG_TMPDIR_LEN 32 /* "/tmp/pg-test-XXXXXX" and its NUL */
static inline char *pg_tmpdir(void)
{
    static char dir[PG_TMPDIR_LEN];
    return dir;
}

static inline void pg_tmpdir_setup(void)
{
    snprintf(pg_tmpdir(), PG_TMPDIR_LEN, "/tmp/pg-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(pg_tmpdir()));
}

static inline void pg_tmpdir_teardown(void)
{
    char cmd[PG_TMPDIR_LEN + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", pg_tmpdir());
    ck_assert_int_eq(system(cmd), 0);
}

/* Write text to pg_tmpdir()/name and return the path; the last four paths
 * stay valid (a test may hold a few at once). */
static inline const char *pg_write_file(const char *name, const char *text)
{
    enum { SLOTS = 4, PATH_LEN = 512 };
    static char paths[SLOTS][PATH_LEN];
    static int slot;
    char *path = paths[slot++ % SLOTS];
    snprintf(path, PATH_LEN, "%s/%s", pg_tmpdir(), name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq((int)fwrite(text, 1, strlen(text), f), (int)strlen(text));
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

/* Run a suite; every test binary's main is this one line. */
static inline int pg_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
