/* Licensed under the Apache License, Version 2.0. */

/*
 * The controller's capacity estimate (qc_ctl_capacity.c) on the fluid
 * plant (link_plant.h): a link that buffers, a cold CPU, a resource
 * that shrinks.
 */

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apr_general.h"
#include "apr_atomic.h"

#include "qc_test.h"
#include "qc_test_ctl.h"
#include "qc_ctl_capacity.h"
#include "qc_ctl_rescale.h"
#include "qc_controller.h"
#include "qc_surge.h"
#include "link_plant.h"

static apr_pool_t *pool;

/*
 * A host pinned at full quality, 40 periods: `light` at half of what the
 * plant carries, then `over` times it, every reply counted as completed
 * at once, the accept queue empty.  link: the link sensor knows its rate
 * (else no link sensor); k > 0: a cold start's calibration, held.
 * Then `drain` periods in which nothing arrives or completes while the
 * link stays saturated, sending the replies earlier periods buffered.
 * Returns the capacity estimate; *carried what the plant carries.
 */
static double pinned_capacity(int light, double over, int link, double k,
                              int drain, double shrink, double *carried)
{
    qc_ctl_vs_t vs = { "pinned:80", NULL, 2, 0, 0.0, 0.0, 1, 2.0 };
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    /* full quality: 1e-4 + 8e-9 * 65536 = 6.2e-4 s of link per reply */
    plant_t pl = PLANT(0.0, 8192.0, 65536.0);
    qc_shm_t *q = plant_shm(pool, 1);
    qc_class_shm_t *cs = &q->slots[0].cls[QC_CLASS_BASIC];
    int i;

    *carried = 1.0 / (TRUE_A + TRUE_B * pl.x[2]);
    plant_one_host(pool, &ctl, &cfg, &vs, q, 0.9);
    if (link) {
        cfg.sensors[0].bits_per_s = 8.0 * *carried * pl.x[2];
        cfg.nsensors = 1;
    }
    for (i = 0; i < 40 + drain; i++) {
        double u;

        pl.r = i >= 40 ? 0.0 : (i < light ? 0.5 : over) * *carried;
        u = i >= 40 ? 1.0 : plant_period(cs, &pl, 2, 1.0);
        if (k > 0.0) {
            ctl.calib.k = ctl.sat.k_unsaturated = k;
        }
        qc_ctl_capacity_tick(&ctl, 1.0, 0, 128, pl.r, 0.0);
        qc_test_step(&ctl, 1.0, u < 0.99 ? u : 0.99, 0,
                    (apr_int64_t)(i + 1) * 1000000);
    }
    ck_assert_msg(fabs(qc_bitsd(q->capacity_bits) - ctl.cp.capacity) < 1e-6,
                  "published %g", qc_bitsd(q->capacity_bits));
    if (shrink > 0.0) {
        double before = ctl.cp.capacity, conns = ctl.cp.est.capacity;

        /* the estimator's own state, not only what it published: the
         * next period derives the published figure from it again */
        qc_ctl_rescale(&ctl, shrink);
        ck_assert(fabs(ctl.cp.est.capacity - conns / shrink) < 1e-9 * conns);
        ck_assert(fabs(ctl.cp.capacity - before / shrink) < 1e-9 * before);
    }
    return ctl.cp.capacity;
}

/*
 * Capacity on a link that buffers (bench/capacity in miniature): offered
 * 1.3x what the link carries, replies count as completed when they enter
 * socket buffers, so completions keep pace with arrivals while the
 * accept queue stays empty.  The estimate must come down to what the
 * link carries (it stayed at the arrivals: 22% over on the testbed).
 */
START_TEST(test_capacity_on_a_buffering_link)
{
    double carried, c = pinned_capacity(10, 1.3, 1, 0.0, 0, 0.0, &carried);

    ck_assert_msg(fabs(c - carried) < 0.05 * carried,
                  "capacity %.1f req/s, the link carries %.1f", c, carried);
}
END_TEST

/*
 * The same overload, then the link drains what it buffered: for ten
 * periods nothing arrives and nothing completes while the link stays
 * saturated.  Those periods say nothing of its rate; read as "served 0"
 * they took the estimate from 47 to 9 req/s on a 25 Mbit/s link
 * (bench/sizing), which an admin reading the status page after a burst,
 * or qosctl-plan --from-status, would have planned with.
 */
START_TEST(test_capacity_holds_while_a_link_drains)
{
    double carried, c = pinned_capacity(10, 1.3, 1, 0.0, 10, 0.0, &carried);

    ck_assert_msg(fabs(c - carried) < 0.05 * carried,
                  "capacity %.1f req/s after the drain, the link carries "
                  "%.1f", c, carried);
}
END_TEST

/*
 * Capacity on a saturated CPU, cold (bench/capacity on the CGI site): the
 * accept queue stays empty for the first periods (the wait is in cgid and
 * the run queue), and the calibration is a cold start's (k 55).  What was
 * completed is the service rate; pricing it by that model made the
 * estimate fall to 2-7 req/s against 215-260 served.
 */
START_TEST(test_capacity_on_a_cold_cpu)
{
    double carried, c = pinned_capacity(0, 1.0, 0, 55.0, 0, 0.0, &carried);

    ck_assert_msg(fabs(c - carried) < 0.1 * carried,
                  "capacity %.1f req/s, completed %.1f", c, carried);
}
END_TEST

/* The same CPU cut to a quarter once the estimate is known: the
 * estimate is a quarter too, in what the estimator keeps (before
 * 96b1931 the rescale divided only the figure it published, which the
 * next period derived again from the unscaled state). */
START_TEST(test_capacity_follows_a_resource_that_shrinks)
{
    double carried, c = pinned_capacity(0, 1.0, 0, 55.0, 0, 4.0, &carried);

    ck_assert_msg(fabs(c - carried / 4.0) < 0.1 * carried / 4.0,
                  "capacity %.1f req/s, a quarter of %.1f", c, carried);
}
END_TEST

/*
 * The clients a full accept queue turns away: while it fills, every
 * attempt enters it once, and they come at the rate offered; once full,
 * the kernel's attempts count dropped clients' retries, ACKs and request
 * segments too (here 3x), and the offered rate must stay the filling's.
 * A period without drops ends it.
 */
START_TEST(test_offered_rate_while_the_accept_queue_fills)
{
    qc_ctl_vs_t vs = { "dropping:80", NULL, 2, 0, 0.0, 0.0, 1, 2.0 };
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    qc_shm_t *q = plant_shm(pool, 1);
    int period, t;

    plant_one_host(pool, &ctl, &cfg, &vs, q, 0.9);
    for (period = 0; period < 7; period++) {
        for (t = 0; t < 10; t++) {
            /* 100/s into an empty queue; then 800/s, 360/s of them
             * accepted, for three periods (the queue fills to 128 in
             * 0.3 s, and the light load before the step is a second
             * back); then the kernel drops and the clients retry */
            int light = period == 0 || period == 6;
            int filling = period == 1 && t < 3;
            double attempts = light ? 10.0 : filling ? 80.0 : 240.0;
            double drops = light || filling ? 0.0 : attempts - 36.0;
            long queued = light ? 0 : filling ? 44 * (t + 1) : 128;

            qc_ctl_capacity_tick(&ctl, 0.1, queued, 128, attempts, drops);
        }
        if (period == 0 || period == 6) {
            ck_assert(qc_ctl_offered_conns(&ctl) < 0.0);
        }
        else {
            ck_assert_msg(fabs(qc_ctl_offered_conns(&ctl) - 800.0) < 1e-6,
                          "period %d: offered %g/s", period,
                          qc_ctl_offered_conns(&ctl));
        }
        qc_ctl_capacity_period(&ctl, 1.0);
    }
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {
        test_offered_rate_while_the_accept_queue_fills,
        test_capacity_on_a_buffering_link,
        test_capacity_holds_while_a_link_drains,
        test_capacity_on_a_cold_cpu,
        test_capacity_follows_a_resource_that_shrinks
    };

    return qc_test_main("qc_ctl_capacity", tests,
                        sizeof(tests) / sizeof(tests[0]), &pool);
}
