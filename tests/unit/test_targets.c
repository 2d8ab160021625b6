/* Licensed under the Apache License, Version 2.0. */

/* Unit tests of the set-point arithmetic (controller/qc_targets.c). */

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qc_test.h"
#include "qc_targets.h"

#define assert_near(x, y) \
    ck_assert_msg(fabs((x) - (y)) <= 1e-12, "%s = %.15g, expected %.15g", \
                  #x, (double)(x), (double)(y))

static const qc_model_t mod = { 1e-4, 8e-9, 4e-5, 0.02, { 0.0 } };

START_TEST(test_guarantee_and_util)
{
    /* U* = a Rmax + b Wmax = 0.1 + 0.16 */
    assert_near(qc_target_guarantee(&mod, 1000.0, 2e7), 0.26);
    assert_near(qc_target_guarantee(&mod, 0.0, 0.0), 0.0);
    /* a R + b W + c R_rej, without d */
    assert_near(qc_model_util(&mod, 500.0, 1e7, 100.0), 0.134);
    assert_near(qc_model_util(&mod, 0.0, 0.0, 0.0), 0.0);
}
END_TEST

START_TEST(test_premium_basic)
{
    double u_star = qc_target_guarantee(&mod, 1000.0, 2e7);
    double u_prem = qc_model_util(&mod, 500.0, 1e7, 100.0);

    /* Premium: U* less the cost of rejecting all basic requests. */
    assert_near(qc_target_premium(&mod, u_star, 2000.0, 1.0), 0.26 - 0.08);
    assert_near(qc_target_premium(&mod, u_star, 0.0, 1.0), 0.26);
    assert_near(qc_target_premium(&mod, u_star, 10000.0, 1.0), 0.0);
    /* Premium first: a premium load that fits U* at full quality keeps
     * it, whatever rejecting basic would cost; one that does not gets
     * the paper's target. */
    assert_near(qc_target_premium(&mod, u_star, 10000.0, 0.1), 0.1);
    assert_near(qc_target_premium(&mod, u_star, 2000.0, 0.1), 0.26 - 0.08);
    assert_near(qc_target_premium(&mod, u_star, 2000.0, 0.3), 0.26 - 0.08);
    /* Basic: what premium leaves of U*. */
    assert_near(qc_target_basic(u_star, u_prem), 0.26 - 0.134);
    assert_near(qc_target_basic(u_star, 0.0), 0.26);
    assert_near(qc_target_basic(u_star, 0.4), 0.0);
}
END_TEST

START_TEST(test_best_effort)
{
    qc_model_t m = mod;

    /* bound - guaranteed - d */
    assert_near(qc_target_best_effort(&m, 0.58, 0.30), 0.26);
    /* A negative intercept corrects a model that overstates a, b, c. */
    m.d = -0.05;
    assert_near(qc_target_best_effort(&m, 0.58, 0.30), 0.33);
    /* Background is charged up to half the bound: a busy machine
     * leaves web traffic at least bound / 2. */
    m.d = 0.45;
    assert_near(qc_target_best_effort(&m, 0.58, 0.0), 0.29);
    m.d = 0.9;
    assert_near(qc_target_best_effort(&m, 0.58, 0.1), 0.19);
    /* Guaranteed traffic above the bound: nothing left, not negative. */
    m.d = 0.02;
    assert_near(qc_target_best_effort(&m, 0.58, 0.70), 0.0);
    assert_near(qc_target_best_effort(&m, 0.58, 0.57), 0.0);
}
END_TEST

START_TEST(test_share_level)
{
    /* Host with 3 trees: best effort at half its range means level 1.5. */
    assert_near(qc_share_level(1.2, 0.5, 3), 1.5);
    /* The server's own loop is higher: it is policed by its own m. */
    assert_near(qc_share_level(1.2, 0.3, 3), 1.2);
    assert_near(qc_share_level(0.0, 1.0, 3), 3.0);
    /* The same m_b means a different level on a host with 1 tree. */
    assert_near(qc_share_level(0.4, 0.5, 1), 0.5);
    assert_near(qc_share_level(0.6, 0.5, 1), 0.6);
    /* Clamped to [0, M]. */
    assert_near(qc_share_level(5.0, 0.2, 3), 3.0);
    assert_near(qc_share_level(1.0, 1.7, 3), 3.0);
    assert_near(qc_share_level(-1.0, -0.5, 3), 0.0);
    assert_near(qc_share_level(NAN, NAN, 3), 0.0);
}
END_TEST

START_TEST(test_capacity_check)
{
    const char *names[] = { "www.a.example", "shop.b.example",
                            "media.c.example" };
    const double rmax[] = { 1000.0, 500.0, 1000.0 };
    const double wmax[] = { 2e7, 1e7, 3e7 };
    double shares[3], sum = -1.0;
    char msg[512];
    int rc;

    /* Two servers fit under 0.58. */
    rc = qc_capacity_check(&mod, 0.58, names, rmax, wmax, 2, shares, &sum,
                           msg, sizeof(msg));
    printf("capacity, under: %s\n", msg);
    ck_assert_int_eq(rc, 0);
    assert_near(shares[0], 0.26);
    assert_near(shares[1], 0.13);
    assert_near(sum, 0.39);
    ck_assert(strstr(msg, "fits") != NULL);
    ck_assert(strstr(msg, "0.3900 <= 0.5800") != NULL);
    ck_assert(strstr(msg, "www.a.example 0.2600") != NULL);
    ck_assert(strstr(msg, "shop.b.example 0.1300") != NULL);

    /* A third one does not. */
    rc = qc_capacity_check(&mod, 0.58, names, rmax, wmax, 3, shares, &sum,
                           msg, sizeof(msg));
    printf("capacity, over: %s\n", msg);
    ck_assert_int_eq(rc, 1);
    assert_near(shares[2], 0.34);
    assert_near(sum, 0.73);
    ck_assert(strstr(msg, "exceeds") != NULL);
    ck_assert(strstr(msg, "0.7300 > 0.5800") != NULL);
    ck_assert(strstr(msg, "www.a.example 0.2600") != NULL);
    ck_assert(strstr(msg, "shop.b.example 0.1300") != NULL);
    ck_assert(strstr(msg, "media.c.example 0.3400") != NULL);

    /* Throughput guarantees only: the bound may be up to 1. */
    ck_assert_int_eq(qc_capacity_check(&mod, 1.0, names, rmax, wmax, 3,
                                       NULL, NULL, msg, sizeof(msg)), 0);

    /* Unnamed servers, no outputs wanted. */
    ck_assert_int_eq(qc_capacity_check(&mod, 0.58, NULL, rmax, wmax, 3,
                                       NULL, NULL, msg, sizeof(msg)), 1);
    ck_assert(strstr(msg, "#0 0.2600") != NULL);
    ck_assert(strstr(msg, "#2 0.3400") != NULL);
    ck_assert_int_eq(qc_capacity_check(&mod, 0.58, NULL, rmax, wmax, 3,
                                       NULL, NULL, NULL, 0), 1);

    /* A short buffer truncates but stays a string. */
    ck_assert_int_eq(qc_capacity_check(&mod, 0.58, names, rmax, wmax, 3,
                                       NULL, NULL, msg, 16), 1);
    ck_assert_int_eq((int)strlen(msg), 15);

    /* Nothing configured fits. */
    ck_assert_int_eq(qc_capacity_check(&mod, 0.58, NULL, NULL, NULL, 0,
                                       NULL, &sum, msg, sizeof(msg)), 0);
    assert_near(sum, 0.0);
}
END_TEST

START_TEST(test_capacity_invalid)
{
    const double rmax[] = { 1000.0, -1.0 };
    const double wmax[] = { 2e7, 1e7 };
    const double rnan[] = { NAN };
    qc_model_t bad = mod;
    char msg[64] = "unchanged?";

    ck_assert_int_eq(qc_capacity_check(&mod, 0.58, NULL, rmax, wmax, 2,
                                       NULL, NULL, msg, sizeof(msg)), -1);
    ck_assert_str_eq(msg, "");
    ck_assert_int_eq(qc_capacity_check(&mod, 0.58, NULL, rnan, wmax, 1,
                                       NULL, NULL, msg, sizeof(msg)), -1);
    bad.a = -1e-4;
    ck_assert_int_eq(qc_capacity_check(&bad, 0.58, NULL, rmax, wmax, 1,
                                       NULL, NULL, msg, sizeof(msg)), -1);
    ck_assert_int_eq(qc_capacity_check(&mod, NAN, NULL, rmax, wmax, 1,
                                       NULL, NULL, msg, sizeof(msg)), -1);
}
END_TEST

static Suite *targets_suite(void)
{
    Suite *s = suite_create("qc_targets");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_guarantee_and_util);
    tcase_add_test(tc, test_premium_basic);
    tcase_add_test(tc, test_best_effort);
    tcase_add_test(tc, test_share_level);
    tcase_add_test(tc, test_capacity_check);
    tcase_add_test(tc, test_capacity_invalid);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    return qc_test_run(targets_suite());
}
