/* Licensed under the Apache License, Version 2.0. */

/*
 * A load the lowest tree cannot carry, from the link's measured queue
 * (qc_overflow.h): when a queue that stays is told from one that
 * drains, the overhead per reply the link adds, and the share of
 * arrivals that holds the bound.  Hand-worked numbers of the 10 Mbit/s
 * integration testbed: 1.25 MB/s, 8 KB lowest-tree replies.
 */

#include <math.h>

#include "qc_overflow.h"
#include "qc_test.h"

#define NEAR(x, y) (fabs((x) - (y)) < 1e-9)

/* Saturated at the lowest tree, 1 s periods: a queue that stays (or
 * grows) is overflow once 3 s have passed; one that drains at 10% of
 * the link, as after an overshoot, never is. */
START_TEST(a_queue_that_stays_is_overflow)
{
    qc_overflow_t o;
    int k;

    qc_overflow_init(&o);
    for (k = 0; k < 3; k++) {
        qc_overflow_observe(&o, 1, 1, 1, 1.5, 1.0);
        ck_assert(!o.on);                   /* not before 3 s */
    }
    qc_overflow_observe(&o, 1, 1, 1, 1.5, 1.0);
    ck_assert(o.on);
    qc_overflow_init(&o);
    for (k = 0; k < 20; k++) {
        qc_overflow_observe(&o, 1, 1, 1, 2.0 - 0.1 * k, 1.0);
        ck_assert(!o.on);
    }
    /* a queue falling at 4% of the link is a load over 0.96 of it */
    qc_overflow_init(&o);
    for (k = 0; k < 5; k++) {
        qc_overflow_observe(&o, 1, 1, 1, 2.0 - 0.04 * k, 1.0);
    }
    ck_assert(o.on);
}
END_TEST

/* Beyond the link httpd takes in less than is offered, so the queue a
 * step left drains while the load stays beyond the lowest tree (100
 * Mbit/s testbed, 10x: 1.43 s of send queue falling to 0.5 s in five
 * seconds, then staying): the 3 s count from when it stops draining,
 * not from the step (there, 19 s; here the 8th period). */
START_TEST(counted_from_when_it_stops_draining)
{
    static const double q[] = { 1.434, 0.914, 0.709, 0.623, 0.582, 0.494,
                                0.478, 0.491, 0.495, 0.495, 0.497 };
    qc_overflow_t o;
    int k, on = -1;

    qc_overflow_init(&o);
    for (k = 0; k < (int)(sizeof(q) / sizeof(q[0])); k++) {
        qc_overflow_observe(&o, 1, 1, 1, q[k], 1.0);
        if (o.on && on < 0) {
            on = k;
        }
    }
    ck_assert_int_eq(on, 8);    /* from the first reading: not in 11 */
}
END_TEST

/* Anything but saturation at the lowest tree with the queue known
 * starts the count afresh; once on, only leaving the lowest tree or
 * losing the queue ends it (an unsaturated link is the refusals
 * working). */
START_TEST(what_starts_and_ends_it)
{
    qc_overflow_t o;
    int k;

    qc_overflow_init(&o);
    for (k = 0; k < 10; k++) {
        qc_overflow_observe(&o, 1, 1, k % 3 != 2, 1.5, 1.0);
        ck_assert(!o.on);                   /* an unsaturated period */
    }
    for (k = 0; k < 10; k++) {
        qc_overflow_observe(&o, 1, 0, 1, 1.5, 1.0);
        ck_assert(!o.on);                   /* above the lowest tree */
        qc_overflow_observe(&o, 0, 1, 1, 1.5, 1.0);
        ck_assert(!o.on);                   /* queue unknown */
    }
    for (k = 0; k < 4; k++) {
        qc_overflow_observe(&o, 1, 1, 1, 1.5, 1.0);
    }
    ck_assert(o.on);
    qc_overflow_observe(&o, 1, 1, 0, 0.1, 1.0);
    ck_assert(o.on && o.seconds == 0.0);
    qc_overflow_observe(&o, 1, 0, 1, 1.5, 1.0);
    ck_assert(!o.on);
    /* 0.25 s periods: the same 3 s */
    qc_overflow_init(&o);
    for (k = 0; k < 12; k++) {
        qc_overflow_observe(&o, 1, 1, 1, 1.5, 0.25);
        ck_assert(!o.on);
    }
    qc_overflow_observe(&o, 1, 1, 1, 1.5, 0.25);
    ck_assert(o.on);
}
END_TEST

/* 148 replies/s of 8 KB on a full 1.25 MB/s link: 1,212,416 bytes
 * logged, 37,584 more sent, 254 bytes a reply; learnt as a moving
 * average, bounded below by 0 and above by a large reply. */
START_TEST(overhead_per_reply)
{
    qc_overflow_t o;
    double logged = 148.0 * 8192.0;
    int k;

    qc_overflow_init(&o);
    for (k = 0; k < 60; k++) {
        qc_overflow_learn(&o, 1.0, 1.25e6, logged, 148.0);
    }
    ck_assert(fabs(o.overhead - 37584.0 / 148.0) < 1e-3);
    qc_overflow_init(&o);
    qc_overflow_learn(&o, 1.0, 1.25e6, logged, 148.0);
    ck_assert(NEAR(o.overhead, 0.2 * 37584.0 / 148.0));
    /* less sent than logged (noise): no overhead, not a negative one */
    qc_overflow_init(&o);
    qc_overflow_learn(&o, 0.5, 1.25e6, logged, 148.0);
    ck_assert(NEAR(o.overhead, 0.0));
    /* one reply and a busy link: at most 64 KB */
    qc_overflow_learn(&o, 1.0, 1.25e6, 0.0, 1.0);
    ck_assert(NEAR(o.overhead, 0.2 * QC_OVERFLOW_OVERHEAD_MAX));
    /* nothing to learn from */
    qc_overflow_init(&o);
    qc_overflow_learn(&o, 1.0, 1.25e6, logged, 0.5);
    qc_overflow_learn(&o, 1.0, -1.0, logged, 148.0);
    qc_overflow_learn(&o, NAN, 1.25e6, logged, 148.0);
    ck_assert(NEAR(o.overhead, 0.0));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qc_overflow");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, a_queue_that_stays_is_overflow);
    tcase_add_test(tc, what_starts_and_ends_it);
    tcase_add_test(tc, counted_from_when_it_stops_draining);
    tcase_add_test(tc, overhead_per_reply);
    suite_add_tcase(s, tc);
    return qc_test_run(s);
}
