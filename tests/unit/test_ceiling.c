/* Licensed under the Apache License, Version 2.0. */

/*
 * The ceiling a saturated reading puts on the loop's way up
 * (qc_ceiling.h): the line through two readings, and when it lapses.
 */

#include <math.h>

#include "qc_ceiling.h"
#include "qc_test.h"

#define NEAR(x, y) (fabs((x) - (y)) < 1e-9)

START_TEST(line_through_two_readings)
{
    qc_ceiling_t c;

    qc_ceiling_init(&c);
    ck_assert(isinf(qc_ceiling_cap(&c, 0.5, 0.4, 0.9)));
    qc_ceiling_observe(&c, 0.6, 0.98, 570.0);
    /* 0.4 at 0.5, 0.98 at 0.6: 0.9 at 0.5 + 0.1 * 0.5 / 0.58 */
    ck_assert(NEAR(qc_ceiling_cap(&c, 0.5, 0.4, 0.9),
                   0.5 + 0.1 * 0.5 / 0.58));
    /* never above the saturated level, nothing to cap from above it */
    ck_assert(NEAR(qc_ceiling_cap(&c, 0.5, 0.4, 5.0), 0.6));
    ck_assert(isinf(qc_ceiling_cap(&c, 0.6, 0.4, 0.9)));
    /* at or over the target the loop does not go up: no cap needed */
    ck_assert(isinf(qc_ceiling_cap(&c, 0.5, 0.9, 0.9)));
    ck_assert(isinf(qc_ceiling_cap(&c, 0.5, -1.0, 0.9)));
    /* a lower saturated level replaces it, a higher one does not */
    qc_ceiling_observe(&c, 0.7, 0.99, 570.0);
    ck_assert(NEAR(c.m, 0.6));
    qc_ceiling_observe(&c, 0.55, 0.96, 570.0);
    ck_assert(NEAR(c.m, 0.55) && NEAR(c.u, 0.96));
}
END_TEST

START_TEST(ceiling_lapses)
{
    qc_ceiling_t c;
    int i;

    /* an unsaturated reading at or above it: noise, or the load fell */
    qc_ceiling_init(&c);
    qc_ceiling_observe(&c, 0.6, 0.97, 570.0);
    qc_ceiling_observe(&c, 0.6, 0.85, 570.0);
    ck_assert(c.m < 0.0);
    /* the arrival rate moved */
    qc_ceiling_observe(&c, 0.6, 0.97, 570.0);
    qc_ceiling_observe(&c, 0.5, 0.5, 800.0);
    ck_assert(c.m < 0.0);
    qc_ceiling_observe(&c, 0.6, 0.97, 570.0);
    qc_ceiling_observe(&c, 0.5, 0.5, 400.0);
    ck_assert(c.m < 0.0);
    /* old */
    qc_ceiling_observe(&c, 0.6, 0.97, 570.0);
    for (i = 0; i < QC_CEILING_PERIODS; i++) {
        qc_ceiling_observe(&c, 0.5, 0.8, 570.0);
        ck_assert(NEAR(c.m, 0.6));
    }
    qc_ceiling_observe(&c, 0.5, 0.8, 570.0);
    ck_assert(c.m < 0.0);
    /* unknown readings change nothing; an exact reading past the cap
     * (qc_pi_capped) is no saturation */
    qc_ceiling_observe(&c, 0.6, -1.0, 570.0);
    qc_ceiling_observe(&c, 0.6, 3.0, 570.0);
    ck_assert(c.m < 0.0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ceiling");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, line_through_two_readings);
    tcase_add_test(tc, ceiling_lapses);
    suite_add_tcase(s, tc);
    return qc_test_run(s);
}
