/* Licensed under the Apache License, Version 2.0. */

/*
 * Best effort's mode transitions (doc/control.md, "Best effort's
 * modes"; qc_be_choose in qc_ctl_besteffort.c) driven on the CPU-bound
 * site (cpu_plant.h); those on the queued link are test_modes_link.c's.
 * Each test asserts the modes the controller publishes, in order, and
 * the entry condition the doc names at the transition.
 */

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "apr_general.h"

#include "qc_test.h"
#include "qc_test_ctl.h"
#include "qc_decide.h"
#include "cpu_plant.h"
#include "modes_rec.h"


static apr_pool_t *pool;

/* A run of the CPU-bound site (bound 0.6), loads in multiples of what
 * the full tree carries: `warm` periods (5 if 0) at `light` (20 req/s
 * if 0) from a prior `prior` times the true cost, then `load`, from
 * period `at` on `load1` with every cost `scale` times as high (if not
 * 0); from period `bg_from` to `bg_to` a job takes `bg` of the CPU. */
typedef struct {
    double prior, light, load, load1, scale, bg, noise;
    int warm, at, bg_from, bg_to, periods;
} cpu_case_t;

/* Records every period in *rc, the warm ones first (index p + warm);
 * returns rc. */
static const rec_t *cpu_run(rec_t *rc, const cpu_case_t *c)
{
    double full = COST_FULL + 2e-4;
    int warm = c->warm ? c->warm : 5, p;
    rig_t g;
    cpu_plant_t pl;
    qc_class_shm_t *cs;

    memset(rc, 0, sizeof(*rc));
    memset(&pl, 0, sizeof(pl));
    pl.rng = 101;
    pl.conn = 2e-4;
    pl.noise = c->noise;
    rig_init(&g, pool, c->prior * COST_FULL, 0.6);
    cs = &g.q->slots[0].cls[QC_CLASS_BASIC];
    for (p = -warm; p < c->periods; p++) {
        double u;

        pl.r = p < 0 ? (c->light > 0.0 ? c->light / full : 20.0)
               : (c->at > 0 && p >= c->at ? c->load1 : c->load) / full;
        pl.scale = c->at > 0 && p >= c->at ? c->scale : 0.0;
        pl.background = p >= c->bg_from && p < c->bg_to ? c->bg : 0.0;
        u = cpu_period(&pl, cs);
        qc_test_step(&g.ctl, 1.0, u, 0, (apr_int64_t)(p + 40) * 1000000);
        rec_period(rc, &g, u);
    }
    return rc;
}

/* A step to 3x the full tree from a prior 10x low. */
static const cpu_case_t qc_step = { 0.1, 0, 3.0, 0, 0, 0, 0, 0, 0, 0, 0,
                                    30 };
/* The same, then 8x from period 2, the one after its restart. */
static const cpu_case_t qc_step_again = { 0.1, 0, 3.0, 8.0, 0, 0, 0, 0, 2,
                                          0, 0, 20 };
/* 1.5x, then 2.5x with every cost 3x: the fit is off by a factor. */
static const cpu_case_t qc_shrink = { 1.0, 0.1, 1.5, 2.5, 3.0, 0, 0, 0, 10,
                                      0, 0, 20 };
/* The same with 3x: the model takes part of the overload for work
 * queued. */
static const cpu_case_t qc_shrink_more = { 1.0, 0.1, 1.5, 3.0, 3.0, 0, 0, 0,
                                           10, 0, 0, 20 };
/* A job fills the CPU from the start; 60 req/s from period 10. */
static const cpu_case_t qc_job_traffic = { 1.0, 0.1, 0.0, 0.19, 0, 1.0, 0,
                                           0, 10, 0, 90, 80 };
/* 3x, then pages 20% cheaper: the fit takes the fall for a background
 * that rose (test_robust's cheaper pages). */
static const cpu_case_t qc_cheaper = { 1.0, 3.0, 3.0, 3.0, 0.8, 0, 0.05, 30,
                                       1, 0, 0, 60 };
/* A job of half the CPU on an idle site (the fit learns it), then 2x:
 * the targets charge half the bound of it, so the CPU reads over. */
static const cpu_case_t qc_half_job = { 1.0, 0.001, 2.0, 0, 0, 0.5, 0, 10,
                                        0, -10, 90, 40 };
/* A job fills the CPU of an idle site from period 5 to 20. */
static const cpu_case_t qc_job = { 1.0, 0, 0.0, 0, 0, 1.0, 0, 0, 0, 5, 20,
                                   40 };

/* A step to 3x the full tree from a prior 10x low: the model's jump
 * leaves work queued, which the loop drains below the bound. */
START_TEST(track_draining_on_a_backlog)
{
    rec_t rc;
    int p = rec_expect(cpu_run(&rc, &qc_step), 4, TRACKING, DRAINING);

    ck_assert_int_eq(p, 5);                 /* the step's period */
    ck_assert(rc.draining[p]);              /* work queued, modelled */
    ck_assert(rc.saturated[p]);
}
END_TEST

/* The same drain ends at the first unsaturated reading: back to the
 * model's level at once. */
START_TEST(drain_ends_in_a_restart_when_unsaturated)
{
    rec_t rc;
    int p = rec_expect(cpu_run(&rc, &qc_step), 5, DRAINING, RESTARTED);

    ck_assert(!rc.saturated[p]);
    ck_assert(rc.saturated[p - 1]);
    ck_assert(rc.m[p] > 1.0);               /* the model's level, no 503 */
}
END_TEST

/* A restart lasts one period; the loop then tracks and holds the bound
 * for good. */
START_TEST(restart_then_tracking_the_next_period)
{
    rec_t rc;
    int q;
    int p = rec_expect(cpu_run(&rc, &qc_step), 5, RESTARTED, TRACKING);

    rec_stays(&rc, p, QC_BE_TRACK);
    for (q = rc.n - 10; q < rc.n; q++) {
        ck_assert(fabs(rc.u[q] - 0.6) < 0.05);
    }
}
END_TEST

/* The load steps again, to 8x, the period after the restart: the
 * restart's level saturates the CPU with work the model says is
 * queued, and the loop drains it from its first saturated period. */
START_TEST(restart_then_draining_on_a_second_step)
{
    rec_t rc;
    int p = rec_expect(cpu_run(&rc, &qc_step_again), 5, RESTARTED,
                       DRAINING);

    ck_assert_int_eq(p, 7);                 /* the second step's period */
    ck_assert(!rc.saturated[p - 1]);
    ck_assert(rc.saturated[p] && rc.draining[p]);
    ck_assert(rc.m[p] < rc.m[p - 1]);       /* down from the restart's */
}
END_TEST

/* A job fills the CPU of an idle site: nothing of the server's is under
 * way, so nothing shed would lower the reading: best effort at the
 * top, the background's mode. */
START_TEST(track_to_background_on_a_job_alone)
{
    rec_t rc;
    int p = rec_expect(cpu_run(&rc, &qc_job), 11, TRACK_ANY,
                       BACKGROUND_ALONE);

    rec_saturated(&rc, p - 2, p, 1);
    ck_assert(rc.m[p] == 2.0);
}
END_TEST

/* The job ends: after 3 unsaturated readings the loop tracks again. */
START_TEST(background_to_track_when_the_job_ends)
{
    rec_t rc;
    int p = rec_expect(cpu_run(&rc, &qc_job), 25, BACKGROUND_ANY,
                       TRACK_ANY);

    rec_saturated(&rc, p - 2, p, 0);
    rec_stays(&rc, p, QC_BE_TRACK);
}
END_TEST

/* Saturated for 2 periods with no backlog the model knows of, the
 * arrivals up 1.7x (no loop holding the bound by chance): the model is
 * off by a factor, and everyone goes to the lowest tree. */
START_TEST(track_to_lowest_when_saturated_with_nothing_to_drain)
{
    rec_t rc;
    int p = rec_expect(cpu_run(&rc, &qc_shrink), 15, TRACKING,
                       LOWEST_SATURATED);

    rec_saturated(&rc, p - 1, p, 1);
    ck_assert(!rc.draining[p]);
    ck_assert(rc.m[p - 1] > 1.0);
    ck_assert(rc.m[p] == 1.0);
}
END_TEST

/* ... until the first unsaturated reading: back to the model's level,
 * calibrated on it; the loop then holds the bound. */
START_TEST(lowest_to_track_with_a_restart_when_unsaturated)
{
    rec_t rc;
    int p = rec_expect(cpu_run(&rc, &qc_shrink), 15, LOWEST_ANY,
                       RESTARTED);

    ck_assert(!rc.saturated[p]);
    ck_assert_int_eq(rc.mode[p + 1], QC_BE_TRACK);
}
END_TEST

/* 1.5x, then 3x with every cost 3x: the drain's level, above the lowest
 * tree, still saturates the CPU at the true costs, and the model's
 * backlog is gone: the model is off by a factor, the lowest tree. */
START_TEST(drain_to_lowest_when_saturated_with_the_backlog_gone)
{
    rec_t rc;
    int p = rec_expect(cpu_run(&rc, &qc_shrink_more), 14, DRAINING,
                       LOWEST_SATURATED);

    ck_assert_int_eq(p, 16);                /* the period after the step */
    rec_saturated(&rc, p - 1, p, 1);
    ck_assert(rc.draining[p - 1] && !rc.draining[p]);
    ck_assert(rc.m[p - 1] > 1.0);           /* the drain's, in force */
    ck_assert(rc.m[p] == 1.0);
}
END_TEST

/* A job saturating the CPU alone, then traffic: every 30 s best effort
 * spends a period at its lowest tree to read the background; it reads
 * saturated there too, so the job is real and the top is kept. */
START_TEST(background_to_lowest_for_a_test_every_30_s)
{
    rec_t rc;
    int q;
    int p = rec_expect(cpu_run(&rc, &qc_job_traffic), 10, BACKGROUND_ANY,
                       LOWEST_TEST);

    rec_saturated(&rc, p - 2, p, 1);
    ck_assert(rc.m[p - 1] > 1.0);
    ck_assert(rc.m[p] == 1.0);              /* the lowest tree */
    q = rec_find(&rc, p + 1, BACKGROUND_ANY, LOWEST_TEST);
    printf("background tests in periods %d and %d\n", p, q);
    ck_assert_int_ge(q - p, 30);
}
END_TEST

/* The test's period read the job at the lowest tree: back to the top
 * at once. */
START_TEST(lowest_for_a_test_to_background_at_the_top)
{
    rec_t rc;
    int p = rec_expect(cpu_run(&rc, &qc_job_traffic), 15, LOWEST_TEST,
                       BACKGROUND_ANY);

    ck_assert(rc.saturated[p]);
    ck_assert(rc.m[p] == 2.0);
}
END_TEST

/* A fitted background that is the fit's (pages cheaper under load):
 * over the bound 3 periods on it, the test reads the lowest tree well
 * below it, so the loop restarts from the model corrected by it. */
START_TEST(track_to_lowest_for_a_test_on_a_fitted_background)
{
    rec_t rc;
    int p = rec_expect(cpu_run(&rc, &qc_cheaper), 30, TRACKING,
                       LOWEST_TEST);

    ck_assert(rc.m[p] == 1.0);
    ck_assert(rc.u[p - 2] > 0.7 && rc.u[p - 1] > 0.7 && rc.u[p] > 0.7);
}
END_TEST

START_TEST(lowest_for_a_test_to_track_when_it_is_not)
{
    rec_t rc;
    int p = rec_expect(cpu_run(&rc, &qc_cheaper), 30, LOWEST_TEST,
                       RESTARTED);

    ck_assert(!rc.saturated[p]);
    ck_assert(rc.u[p] < 0.6);
    ck_assert_int_eq(rc.mode[p + 1], QC_BE_TRACK);
    ck_assert(fabs(rc.u[rc.n - 1] - 0.6) < 0.1);
}
END_TEST

/* A real background under traffic: the test's period at the lowest
 * tree reads it, and the loop goes back to where it was. */
START_TEST(lowest_for_a_test_to_background_when_it_is_real)
{
    rec_t rc;
    int p = rec_expect(cpu_run(&rc, &qc_half_job), 10, LOWEST_TEST,
                       BACKGROUND_REAL);

    ck_assert(rc.m[p - 1] == 1.0);
    ck_assert(fabs(rc.m[p] - rc.m[p - 2]) < 1e-9);
    ck_assert(rc.u[p] >= 0.5);              /* the job read at the lowest */
}
END_TEST

/* ... for one period: the loop then tracks, the test not due again for
 * 30 s. */
START_TEST(background_to_track_after_the_test)
{
    rec_t rc;
    int q;
    int p = rec_expect(cpu_run(&rc, &qc_half_job), 10, BACKGROUND_ANY,
                       TRACK_ANY);

    ck_assert_int_eq(rc.mode[p - 2], QC_BE_LOWEST);
    ck_assert_int_eq(rc.why[p - 2], QC_BE_WHY_TEST);
    ck_assert(!rc.saturated[p]);
    q = rec_find(&rc, p, TRACK_ANY, LOWEST_TEST);
    ck_assert(q < 0 || q - (p - 2) >= 30);
}
END_TEST

/*
 * A job taking 0.55 of the CPU starts under 2x the full tree's traffic.
 * The lowest tree plus the job read 0.73, over the 0.6 bound but far
 * from saturated, and the fit, taught no idle period, puts the job in
 * the requests' costs (d 0.07, too little for the background's test).
 * Refusing would lower the reading by 0.03: best effort holds the
 * lowest tree, since only a saturated reading opens refusing (once it
 * cycled, refusing 15% of requests).
 */
START_TEST(a_job_under_traffic_is_not_shed)
{
    static const cpu_case_t job = { 1.0, 0, 2.0, 0, 0, 0.55, 0, 0, 0, 10,
                                    90, 60 };
    double refused = 0.0;
    rec_t rc;
    int p;

    cpu_run(&rc, &job);
    rec_print("a job of 0.55 under 2x", &rc);
    for (p = 25; p < rc.n; p++) {
        refused += rc.refused[p] / (rc.n - 25);
    }
    printf("a job of 0.55 under 2x: %.1f%% refused\n", 100.0 * refused);
    ck_assert(refused <= 0.01);
}
END_TEST

/*
 * A job that fills the CPU from before the first request (the fit
 * learns it as the background, d about 1), then traffic at 3x the full
 * tree: no refusal can unsaturate the CPU, so none is made.
 */
START_TEST(a_job_that_saturates_alone_is_never_refused_for)
{
    static const cpu_case_t job = { 1.0, 0.1, 0.0, 3.0, 0, 1.0, 0, 0, 10,
                                    -10, 90, 60 };
    double refused = 0.0;
    rec_t rc;
    int p;

    cpu_run(&rc, &job);
    rec_print("a job filling the CPU, then 3x", &rc);
    for (p = 10; p < rc.n; p++) {
        refused += rc.refused[p] / (rc.n - 10);
    }
    printf("a job filling the CPU, then 3x: %.1f%% refused\n",
           100.0 * refused);
    ck_assert(refused <= 0.01);
}
END_TEST

/* The rule itself: a lowest tree loading the CPU 2.0 against a target
 * of 0.3 needs refusing, unless the fitted background alone saturates
 * it. */
START_TEST(no_refusal_helps_under_a_saturating_background)
{
    rig_t g;

    rig_init(&g, pool, COST_FULL, 0.6);
    g.ctl.model.d = 0.2;
    ck_assert(qc_reject_helps(&g.ctl, 5000.0, 0.1, 2.0, 0.3, 0.3));
    g.ctl.model.d = 0.99;
    ck_assert(!qc_reject_helps(&g.ctl, 5000.0, 0.1, 2.0, 0.3, 0.3));
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {
        track_draining_on_a_backlog,
        drain_ends_in_a_restart_when_unsaturated,
        restart_then_tracking_the_next_period,
        restart_then_draining_on_a_second_step,
        track_to_background_on_a_job_alone,
        background_to_track_when_the_job_ends,
        track_to_lowest_when_saturated_with_nothing_to_drain,
        lowest_to_track_with_a_restart_when_unsaturated,
        drain_to_lowest_when_saturated_with_the_backlog_gone,
        background_to_lowest_for_a_test_every_30_s,
        lowest_for_a_test_to_background_at_the_top,
        lowest_for_a_test_to_background_when_it_is_real,
        background_to_track_after_the_test,
        track_to_lowest_for_a_test_on_a_fitted_background,
        lowest_for_a_test_to_track_when_it_is_not,
        a_job_under_traffic_is_not_shed,
        a_job_that_saturates_alone_is_never_refused_for,
        no_refusal_helps_under_a_saturating_background
    };

    return qc_test_main("qc_modes_cpu", tests,
                        sizeof(tests) / sizeof(tests[0]), &pool);
}
