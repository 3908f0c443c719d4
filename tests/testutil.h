/* testutil.h: helpers shared by the check-based unit tests. */
#ifndef PG_TESTS_TESTUTIL_H
#define PG_TESTS_TESTUTIL_H

#include <check.h>
#include <math.h>
#include <stdlib.h>

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
