/* Licensed under the Apache License, Version 2.0. */

/*
 * Best effort's mode transitions (doc/control.md, "Best effort's
 * modes"; qc_be_choose in qc_ctl_besteffort.c) driven on the fluid
 * queued link (link_plant.h); those on the CPU-bound site are
 * test_modes_cpu.c's.  Each test asserts the modes the controller
 * publishes, in order, and the entry condition the doc names at the
 * transition.
 */

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "apr_general.h"

#include "qc_test.h"
#include "qc_test_ctl.h"
#include "cpu_plant.h"
#include "link_plant.h"
#include "modes_rec.h"


static apr_pool_t *pool;

/* The queued link (64 KB and 8 KB trees, bound 0.9) read in ticks of a
 * tenth of a period: light load for 5 periods, then from the fourth
 * tick of period 0 `load` times what the full tree carries, `after`
 * times from period `drop` (if > 0), `again` times from the fourth tick
 * of period `again_at` (if > 0); measured: the link's queue is the
 * controller's input. */
typedef struct {
    double prior, load, after, again;
    int drop, again_at, measured, periods;
} link_case_t;

/* A step to 3x from a prior 10x low, the queue not measured. */
static const link_case_t lk_step = { 0.1, 3.0, 0, 0, 0, 0, 0, 20 };
/* 5x (the lowest tree needs 1.3x the link), 1x from period 20. */
static const link_case_t lk_fall = { 1.0, 5.0, 1.0, 0, 20, 0, 1, 40 };
/* The same, then 5x again from period 22, the one after the restart. */
static const link_case_t lk_fall_again = { 1.0, 5.0, 1.0, 5.0, 20, 22, 1,
                                           30 };
/* 5x, then 1x from period 10, the link's queue still over a second. */
static const link_case_t lk_fall_early = { 1.0, 5.0, 1.0, 0, 10, 0, 1, 25 };
/* 5x, no request at all in period 12, 5x again from period 13. */
static const link_case_t lk_pause = { 1.0, 5.0, 0.0, 5.0, 12, 13, 1, 25 };

/* Records every period in *rc, the 5 light ones first (index p + 5);
 * returns rc. */
static const rec_t *link_run(rec_t *rc, const link_case_t *c)
{
    static lq_t lq;
    plant_t pl = PLANT(20.0, 8192.0, 65536.0);
    rig_t g;
    qc_class_shm_t *cs;
    qc_ctl_input_t in;
    int p, t;

    memset(rc, 0, sizeof(*rc));
    memset(&lq, 0, sizeof(lq));
    rig_init_c(&g, pool, c->prior * plant_cost(&pl, 2), TRUE_C, 0.9);
    cs = &g.q->slots[0].cls[QC_CLASS_BASIC];
    for (p = -5; p < c->periods; p++) {
        double u = 0.0;

        for (t = 0; t < 10; t++) {
            double ut;

            if (t == 3 && (p == 0 || (c->again_at > 0 && p == c->again_at))) {
                pl.r = (p == 0 ? c->load : c->again) / plant_cost(&pl, 2);
            }
            if (c->drop > 0 && p == c->drop && t == 0) {
                pl.r = c->after / plant_cost(&pl, 2);
            }
            ut = lq_period(&lq, cs, &pl, 2, 0.1);
            u += ut / 10.0;
            if (qc_ctl_tick(&g.ctl, 0.1, ut)) {
                /* no surge guard here: only 3 saturated ticks fire it */
                ck_assert_int_eq(g.ctl.be_mode, QC_BE_LOWEST);
                ck_assert_int_eq(g.ctl.be_why, QC_BE_WHY_VALVE);
                ck_assert(g.ctl.tick.saturated >= 3);
            }
        }
        /* the accept queue and the send queues are read alike */
        in = qc_ctl_input(1.0, u, c->measured ? 0 : -1,
                          (apr_int64_t)(p + 10) * 1000000);
        if (c->measured) {
            in.sendq_bytes = lq_left(&lq) / TRUE_B;
            in.link_bps = 1.0 / TRUE_B;
        }
        qc_ctl_step(&g.ctl, in);
        rec_period(rc, &g, u);
    }
    return rc;
}

/* The first period from `from` on in which the valve fired; -1 none. */
static int first_valve(const rec_t *rc, int from)
{
    int p;

    for (p = from; p < rc->n; p++) {
        if (rc->valved[p]) {
            return p;
        }
    }
    return -1;
}

/*
 * A step from light load on the link, prior 10x low: within the step's
 * period 3 saturated ticks fire the valve, which sets the lowest mode
 * (asserted in link_run), and the period is published as the
 * valve's; the first unsaturated period restarts from the model.
 */
START_TEST(track_to_lowest_on_a_jump_within_a_period)
{
    rec_t rc;
    int p = rec_expect(link_run(&rc, &lk_step), 5, LOWEST_ANY,
                       RESTARTED);

    ck_assert_int_eq(first_valve(&rc, 0), 5);
    ck_assert_int_eq(rc.mode[5], QC_BE_LOWEST);
    ck_assert_int_eq(rc.why[5], QC_BE_WHY_VALVE);
    ck_assert(!rc.saturated[p]);
    ck_assert(rc.saturated[p - 1]);
    ck_assert_int_eq(rc.mode[p + 1], QC_BE_TRACK);
}
END_TEST

/* At 5x the full tree the lowest tree needs 1.3x the link, its queue
 * measured: the drain ends after saturated periods whose backlog does
 * not fall, at the lowest tree: the lowest mode. */
START_TEST(drain_to_lowest_when_the_backlog_does_not_fall)
{
    rec_t rc;
    int p = rec_expect(link_run(&rc, &lk_fall), 5, DRAINING, LOWEST_ANY);

    ck_assert(rc.saturated[p]);
    ck_assert(!rc.draining[p]);
}
END_TEST

/* A step to 3x, the queue measured: the lowest tree carries it, and the
 * queue the step left (half a second) drains there: nothing refused. */
static const link_case_t lk_three = { 1.0, 3.0, 0, 0, 0, 0, 1, 20 };

START_TEST(a_queue_the_lowest_tree_drains_is_not_refused)
{
    rec_t rc;
    int p;

    link_run(&rc, &lk_three);
    for (p = 0; p < rc.n; p++) {
        ck_assert(rc.refused[p] == 0.0);
        ck_assert(rc.m[p] >= 1.0);
    }
    ck_assert(rc.wait[5] > 0.0);            /* the step's queue */
    ck_assert(fabs(rc.u[rc.n - 1] - 0.9) < 0.05);
}
END_TEST

/*
 * A flash of 10x for most of period 0, then 2x, which the lowest tree
 * carries at half the link: the flash leaves seconds of replies queued,
 * and the lowest tree drains them at half a second a period.  A wait
 * over the target that falls needs no refusal to bound it (the
 * simulator's seed 117708685011842, a cold start on a link, refused
 * for three periods a queue the lowest tree was draining): nothing
 * refused.
 */
static const link_case_t lk_flash = { 1.0, 10.0, 2.0, 0, 1, 0, 1, 20 };

START_TEST(a_long_queue_the_lowest_tree_drains_is_not_refused)
{
    rec_t rc;
    int p, over = 0;

    link_run(&rc, &lk_flash);
    rec_print("10x, then 2x", &rc);
    for (p = 0; p < rc.n; p++) {
        over |= rc.wait[p] > 1.0;
        ck_assert_msg(rc.refused[p] == 0.0, "period %d: %g refused, "
                      "wait %g", p - 5, rc.refused[p], rc.wait[p]);
    }
    ck_assert(over);                /* the flash's queue, over a period */
}
END_TEST

/* At 5x the lowest tree needs 1.3x the link.  Once the trees are spent
 * requests wait over a period, and refusing holds the wait there: never
 * everyone, the share settling near what the lowest tree cannot carry
 * (a quarter of the arrivals, plus what the 503s cost the link). */
START_TEST(refusing_holds_the_wait_at_a_period)
{
    rec_t rc;
    int p, first = -1;

    link_run(&rc, &lk_fall);
    rec_print("5x on the link", &rc);
    for (p = 5; p < 25 && first < 0; p++) {
        first = rc.refused[p] > 0.0 ? p : -1;
    }
    ck_assert(first >= 0 && first <= 5 + 3);
    for (p = first; p < 25; p++) {
        ck_assert(rc.m[p] > 0.1 && rc.m[p] < 1.0);
    }
    for (p = 15; p < 25; p++) {             /* periods 10-19 */
        ck_assert(rc.wait[p] > 0.5 && rc.wait[p] < 1.5);
        ck_assert(rc.refused[p] > 0.15 && rc.refused[p] < 0.5);
    }
}
END_TEST

/* The load falls to what the full tree carries: the queue drains, the
 * first unsaturated period restarts from the model, and nothing is
 * refused after. */
START_TEST(refusing_stops_when_the_load_falls)
{
    rec_t rc;
    int p = rec_expect(link_run(&rc, &lk_fall), 25, LOWEST_ANY,
                       RESTARTED);

    ck_assert(!rc.saturated[p]);
    ck_assert(rc.m[p] > 1.0);
    for (; p < rc.n; p++) {
        ck_assert(rc.refused[p] == 0.0);
    }
    ck_assert_int_eq(rc.mode[rc.n - 1], QC_BE_TRACK);
    ck_assert(fabs(rc.u[rc.n - 1] - 0.9) < 0.05);
}
END_TEST

/* The load falls to 1x while the link's queue is still deep: refusing
 * ends with the wait, the lowest tree carries the load, and the loop
 * restarts at the first unsaturated reading. */
START_TEST(refusing_ends_while_its_queue_drains)
{
    rec_t rc;
    int p = rec_expect(link_run(&rc, &lk_fall_early), 14, DRAINING,
                       RESTARTED);

    ck_assert_int_eq(p, 16);                /* the period after the fall */
    ck_assert(rc.saturated[p - 1] && !rc.saturated[p]);
    ck_assert(rc.refused[p] == 0.0);
    ck_assert_int_eq(rc.mode[rc.n - 1], QC_BE_TRACK);
}
END_TEST

/* The load falls to 1x, then jumps back to 5x the period after the
 * restart: the valve takes the restart's level to the lowest tree
 * within the period, which is published as the valve's. */
START_TEST(restart_then_lowest_on_a_jump_the_next_period)
{
    rec_t rc;
    int p = rec_expect(link_run(&rc, &lk_fall_again), 25, RESTARTED,
                       LOWEST_VALVE);

    ck_assert_int_eq(p, 27);                /* the jump's period */
    ck_assert_int_eq(first_valve(&rc, 6), p);
    ck_assert(!rc.saturated[p - 1]);
    ck_assert(rc.m[p - 1] > 1.0);           /* the restart's, cut */
    ck_assert(rc.m[p] == 1.0);
}
END_TEST

/*
 * While refusing, no request comes for a period: the queue drains, the
 * loop goes back to the top (with no traffic, also the lowest tree).
 * 5x again: the valve takes best effort to the lowest tree within the
 * period, and refusing follows once the wait is over a period again.
 */
START_TEST(refusing_again_after_a_pause)
{
    rec_t rc;
    int p, again = 0;

    link_run(&rc, &lk_pause);
    ck_assert(rc.refused[16] > 0.0);        /* period 11: refusing */
    ck_assert(rc.m[17] == 2.0);             /* the pause: the top */
    ck_assert(rc.valved[18]);               /* the load's return */
    for (p = 18; p < rc.n; p++) {
        again |= rc.refused[p] > 0.0;
        ck_assert(rc.m[p] > 0.1);
    }
    ck_assert(again);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {
        track_to_lowest_on_a_jump_within_a_period,
        drain_to_lowest_when_the_backlog_does_not_fall,
        a_queue_the_lowest_tree_drains_is_not_refused,
        a_long_queue_the_lowest_tree_drains_is_not_refused,
        refusing_holds_the_wait_at_a_period,
        refusing_stops_when_the_load_falls,
        refusing_ends_while_its_queue_drains,
        restart_then_lowest_on_a_jump_the_next_period,
        refusing_again_after_a_pause
    };

    return qc_test_main("qc_modes_link", tests,
                        sizeof(tests) / sizeof(tests[0]), &pool);
}
