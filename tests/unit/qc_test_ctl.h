/* Licensed under the Apache License, Version 2.0. */

/* The controller's period as the unit tests drive it. */

#ifndef QC_TEST_CTL_H
#define QC_TEST_CTL_H

#include <check.h>
#include <stdio.h>

#include "apr_general.h"

#include "qc_controller.h"
#include "qc_test.h"

/* A period with no link queue and no change of capacity. */
static inline void qc_test_step(qc_ctl_t *ctl, double dt, double u,
                                long queued, apr_int64_t now_us)
{
    qc_ctl_step(ctl, qc_ctl_input(dt, u, queued, now_us));
}

/* The n tests as one suite, APR up and *pool theirs; stdout line
 * buffered, so the figures a test prints precede its failure. */
static inline int qc_test_main(const char *name, const TTest *const *tests,
                               unsigned n, apr_pool_t **pool)
{
    Suite *s = suite_create(name);
    TCase *tc = tcase_create("core");
    unsigned i;
    int rc;

    apr_initialize();
    apr_pool_create(pool, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    tcase_set_timeout(tc, 120);
    for (i = 0; i < n; i++) {
        tcase_add_test(tc, tests[i]);
    }
    suite_add_tcase(s, tc);
    rc = qc_test_run(s);
    apr_terminate();
    return rc;
}

#endif /* QC_TEST_CTL_H */
