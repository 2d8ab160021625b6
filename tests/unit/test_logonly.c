/* Licensed under the Apache License, Version 2.0. */

/*
 * QosCtl LogOnly's would-be level against On's (qc_ctl_dry.c): two rigs
 * on the same plant and load, one whose plant serves at the level it
 * publishes (On), one whose plant serves everything from the top tree
 * and counts what the level would have sent lower (LogOnly).  Over a
 * step overload the median levels must agree within 0.1, and the
 * LogOnly plant must never have degraded or refused anything.
 */

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apr_general.h"

#include "qc_test.h"
#include "qc_test_ctl.h"
#include "cpu_plant.h"
#include "qc_level.h"

#define LIGHT 5
#define OVERLOAD 60

static apr_pool_t *pool;

typedef struct {
    double m_med;               /* median level over the overload */
    double m_min;               /* and its lowest */
    double saturated;           /* share of the overload read saturated */
    apr_uint64_t lower;         /* requests the plant served below the top
                                 * or refused */
    apr_uint64_t would;         /* requests the level would have sent lower */
} run_t;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* A rig with a prior `prior` times the plant's true full-tree cost, at
 * `bound`: light load, then `r` req/s. */
static run_t run(cpu_plant_t pl, double prior, double bound, double r,
                 int log_only)
{
    rig_t g;
    qc_class_shm_t *cs;
    double m[OVERLOAD];
    run_t out;
    int period;

    memset(&out, 0, sizeof(out));
    rig_init(&g, pool, prior * COST_FULL
                       * (pl.scale > 0.0 ? pl.scale : 1.0), bound);
    g.cfg.log_only = log_only;
    pl.log_only = log_only;
    cs = &g.q->slots[0].cls[QC_CLASS_BASIC];
    pl.r = 20.0;
    for (period = -LIGHT; period < OVERLOAD; period++) {
        double u;

        if (period == 0) {
            pl.r = r;
        }
        u = cpu_period(&pl, cs);
        qc_test_step(&g.ctl, 1.0, u, 0,
                     (apr_int64_t)(period + 10) * 1000000);
        if (period >= 0) {
            m[period] = rig_level(&g);
            out.saturated += (u >= 0.95) / (double)OVERLOAD;
        }
    }
    qsort(m, OVERLOAD, sizeof(m[0]), cmp_double);
    out.m_med = m[OVERLOAD / 2];
    out.m_min = m[0];
    out.lower = cs->level_arrived[0] + cs->level_arrived[1];
    out.would = cs->would_arrived[0] + cs->would_arrived[1];
    return out;
}

/* On and LogOnly on the same plant and step; returns LogOnly's run. */
static run_t check_pair(const char *what, cpu_plant_t pl, double prior,
                       double bound, double times)
{
    double full = bound / ((COST_FULL + pl.conn)
                           * (pl.scale > 0.0 ? pl.scale : 1.0));
    run_t on = run(pl, prior, bound, times * full, 0);
    run_t dry = run(pl, prior, bound, times * full, 1);

    printf("%s, step to %gx, prior %gx: On m_med %.2f (min %.2f), LogOnly "
           "m_med %.2f (min %.2f), its plant saturated %.0f%% of the "
           "overload, %llu would-be degraded or refused\n", what, times,
           prior, on.m_med, on.m_min, dry.m_med, dry.m_min,
           100.0 * dry.saturated, (unsigned long long)dry.would);
    ck_assert_msg(fabs(dry.m_med - on.m_med) <= 0.1,
                  "%s %gx prior %gx: LogOnly %.2f, On %.2f", what, times,
                  prior, dry.m_med, on.m_med);
    ck_assert_msg(dry.lower == 0, "%s: LogOnly served %llu below the top",
                  what, (unsigned long long)dry.lower);
    ck_assert(dry.would > 0);
    ck_assert(on.lower > 0);
    return dry;
}

/* The CPU-bound site (cpu_plant.h, bound 0.6): at 3x the full tree's
 * load at the bound the LogOnly plant is saturated all through (the
 * plant's reading is no measure, the model's demand stands), at 1.5x it
 * is not (the reading less what degrading would save). */
START_TEST(test_cpu_step)
{
    cpu_plant_t pl;

    memset(&pl, 0, sizeof(pl));
    pl.rng = 101;
    pl.conn = 2e-4;
    check_pair("cpu", pl, 1.0, 0.6, 3.0);
    check_pair("cpu", pl, 1.0, 0.6, 1.5);
}
END_TEST

/* A cold start from a prior 10x off either way: LogOnly's fit learns
 * the top tree from what it serves, the calibration the rest. */
START_TEST(test_cpu_cold_start)
{
    cpu_plant_t pl;

    memset(&pl, 0, sizeof(pl));
    pl.rng = 103;
    pl.conn = 2e-4;
    check_pair("cpu", pl, 10.0, 0.6, 3.0);
    check_pair("cpu", pl, 0.1, 0.6, 3.0);
    check_pair("cpu", pl, 10.0, 0.6, 1.5);
}
END_TEST

/* The link testbed (link_plant, bound 0.9): saturated at both. */
START_TEST(test_link_step)
{
    cpu_plant_t pl;

    link_plant(&pl, 107);
    check_pair("link", pl, 1.0, 0.9, 3.0);
    check_pair("link", pl, 1.0, 0.9, 1.5);
    check_pair("link", pl, 10.0, 0.9, 3.0);
}
END_TEST

/* The virtual plant's saturation: at 10x the full tree the LogOnly
 * plant reads saturated all through, and its reading is no measure of
 * the load; the would-be level is still On's, near the lowest tree. */
START_TEST(test_saturated_plant)
{
    cpu_plant_t pl;
    run_t dry;

    memset(&pl, 0, sizeof(pl));
    pl.rng = 109;
    pl.conn = 2e-4;
    dry = check_pair("cpu", pl, 1.0, 0.6, 10.0);
    ck_assert(dry.saturated >= 0.99);
    ck_assert(dry.m_med < 1.2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qc_logonly");
    TCase *tc = tcase_create("core");
    int rc;

    apr_initialize();
    apr_pool_create(&pool, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cpu_step);
    tcase_add_test(tc, test_cpu_cold_start);
    tcase_add_test(tc, test_link_step);
    tcase_add_test(tc, test_saturated_plant);
    suite_add_tcase(s, tc);
    rc = qc_test_run(s);
    apr_terminate();
    return rc;
}
