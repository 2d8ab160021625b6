/* Licensed under the Apache License, Version 2.0. */

/*
 * Shared bits of the unit tests: running a suite, and asserting on the
 * "NULL or a static reason" convention of the parsers.
 */

#ifndef QC_TEST_H
#define QC_TEST_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The test cannot run on this machine: say so, in the line ./dev's
 * summary counts as a test not run ("SKIP: <test>: <why>"), and return.
 * check counts the test as passed; the summary takes it back.  Only
 * from the test's own function, whose name check derives (name_fn).
 */
#define QC_TEST_SKIP(why)                                                \
    do {                                                                 \
        fprintf(stderr, "SKIP: %s: %s\n", __func__, (why));              \
        fflush(stderr);                                                  \
        return;                                                          \
    } while (0)

/* expr (a parser call) must succeed; on failure print its reason. */
#define QC_ACCEPT(expr)                                                  \
    do {                                                                 \
        const char *qc_reason_ = (expr);                                 \
        ck_assert_msg(qc_reason_ == NULL, "%s refused: %s", #expr,      \
                      qc_reason_);                                       \
    } while (0)

/* expr must fail with a reason containing want (NULL: any reason). */
#define QC_REJECT(expr, want)                                            \
    do {                                                                 \
        const char *qc_reason_ = (expr);                                 \
        const char *qc_want_ = (want);                                   \
        ck_assert_msg(qc_reason_ != NULL, "%s accepted", #expr);         \
        ck_assert_msg(qc_want_ == NULL                                   \
                      || strstr(qc_reason_, qc_want_) != NULL,           \
                      "%s: reason \"%s\" lacks \"%s\"", #expr,           \
                      qc_reason_, qc_want_);                             \
    } while (0)

/* A class's balance kept in a plain int64_t (qc_balance_add_fn in
 * qc_level.h): the request path's atomic add, single-threaded. */
static inline int64_t qc_test_balance_add(void *ctx, int64_t delta)
{
    int64_t *balance = ctx, before = *balance;

    *balance += delta;
    return before;
}

static inline int qc_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif /* QC_TEST_H */
