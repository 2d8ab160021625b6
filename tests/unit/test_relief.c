/* Licensed under the Apache License, Version 2.0. */

/* Each transition of qc_relief.h: free, testing, barred. */

#include <check.h>

#include "qc_test.h"
#include "qc_relief.h"

static double feed(qc_relief_t *rl, double u, double r, double rej,
                   double queue)
{
    qc_relief_in_t in = { u, r, rej, queue, 0.9, 1.0, -1.0 };

    return qc_relief_observe(rl, &in);
}

static double feed_waiting(qc_relief_t *rl, double u, double r, double rej,
                           double queue, double waiting)
{
    qc_relief_in_t in = { u, r, rej, queue, 0.9, 1.0, waiting };

    return qc_relief_observe(rl, &in);
}

/* Open with the accept queue full: each refusal lets a waiting
 * connection in, and then the refused come back (a closed loop of
 * 1,000 connections on a link: the queue's fall read as relief). */
static void open_on_a_full_queue(qc_relief_t *rl)
{
    qc_relief_init(rl);
    feed_waiting(rl, 0.99, 1400.0, 0.0, 0.6, 512.0);
    feed_waiting(rl, 0.99, 1400.0, 50.0, 0.6, 400.0);
    feed_waiting(rl, 0.99, 1400.0, 50.0, 0.4, 300.0);
    ck_assert(feed_waiting(rl, 0.99, 1400.0, 50.0, 0.3, 300.0) == 1.0);
    ck_assert_int_eq(rl->state, QC_RELIEF_OPEN);
}

/* Closed loop: the refused come back, and stop coming when refusing
 * stops: barred, for QC_RELIEF_FIRST seconds, then twice that. */
START_TEST(test_refill_is_barred)
{
    qc_relief_t rl;
    int i, round;

    qc_relief_init(&rl);
    ck_assert(qc_relief_allowed(&rl) == QC_RELIEF_PROBE_SHARE);
    for (round = 1; round <= 2; round++) {
        ck_assert(feed(&rl, 0.99, 1400.0, 0.0, 0.01)
                  == QC_RELIEF_PROBE_SHARE);
        ck_assert(feed(&rl, 0.99, 1470.0, 70.0, 0.01)
                  == QC_RELIEF_PROBE_SHARE);
        ck_assert_int_eq(rl.state, QC_RELIEF_PROBE);
        ck_assert(feed(&rl, 0.99, 1475.0, 72.0, 0.01) == 0.0);
        ck_assert_int_eq(rl.state, QC_RELIEF_TEST);
        /* stopped: back to what the resource answers */
        ck_assert(feed(&rl, 0.99, 1400.0, 0.0, 0.01) == 0.0);
        ck_assert_int_eq(rl.state, QC_RELIEF_BARRED);
        ck_assert_str_eq(rl.why, "refill");
        ck_assert_int_eq(rl.bars, round);
        for (i = 1; i < (int)(round * QC_RELIEF_FIRST); i++) {
            ck_assert(feed(&rl, 0.99, 1400.0, 0.0, 0.01) == 0.0);
        }
        ck_assert(feed(&rl, 0.99, 1400.0, 0.0, 0.01) == QC_RELIEF_PROBE_SHARE);
        ck_assert_int_eq(rl.state, QC_RELIEF_FREE);
    }
}
END_TEST

/* Open loop: the arrivals do not fall when refusing stops: open. */
START_TEST(test_arrivals_that_stay_are_open)
{
    qc_relief_t rl;

    qc_relief_init(&rl);
    feed(&rl, 0.99, 1400.0, 0.0, 1.0);
    /* a ramp: arrivals rise while refusing */
    feed(&rl, 0.99, 1500.0, 70.0, 1.0);
    ck_assert(feed(&rl, 0.99, 1600.0, 75.0, 1.0) == 0.0);
    ck_assert(feed(&rl, 0.99, 1700.0, 0.0, 1.2) == 1.0);
    ck_assert_int_eq(rl.state, QC_RELIEF_OPEN);
}
END_TEST

/* Open loop past the lowest tree: the queue drains while refusing the
 * probe's share: open, and refusing what is needed stays allowed. */
START_TEST(test_draining_queue_is_relief)
{
    qc_relief_t rl;
    double q = 4.0;
    int i;

    qc_relief_init(&rl);
    feed(&rl, 1.0, 3000.0, 0.0, q);
    ck_assert(feed(&rl, 1.0, 3000.0, 150.0, q) == QC_RELIEF_PROBE_SHARE);
    ck_assert(feed(&rl, 1.0, 3000.0, 150.0, 0.7 * q) == QC_RELIEF_PROBE_SHARE);
    ck_assert(feed(&rl, 1.0, 3000.0, 150.0, 0.5 * q) == 1.0);
    q *= 0.5;
    for (i = 0; i < 10; i++) {
        q *= 0.7;
        ck_assert(feed(&rl, 1.0, 3000.0, 1600.0, q) == 1.0);
    }
    ck_assert(feed(&rl, 0.9, 3000.0, 600.0, q) == 1.0);
    ck_assert_int_eq(rl.bars, 0);
}
END_TEST

/* The probe's refusals leave the reading full and nothing draining: a
 * job, not the requests (or a 503 dear as a page): barred. */
START_TEST(test_probe_without_relief_is_barred)
{
    qc_relief_t rl;

    qc_relief_init(&rl);
    feed(&rl, 1.0, 100.0, 0.0, 0.0);
    ck_assert(feed(&rl, 1.0, 100.0, 5.0, 0.0) == QC_RELIEF_PROBE_SHARE);
    ck_assert(feed(&rl, 1.0, 100.0, 5.0, 0.0) == 0.0);
    ck_assert_str_eq(rl.why, "no-relief");
}
END_TEST

/* The same with the queues full (a load past the lowest tree, whose
 * queues grow no more): what stopping does tells, and arrivals that do
 * not fall open refusing. */
START_TEST(test_probe_on_full_queues_is_tested)
{
    qc_relief_t rl;

    qc_relief_init(&rl);
    feed(&rl, 1.0, 300.0, 0.0, 2.0);
    ck_assert(feed(&rl, 1.0, 300.0, 15.0, 2.0) == QC_RELIEF_PROBE_SHARE);
    ck_assert(feed(&rl, 1.0, 300.0, 15.0, 2.0) == 0.0);
    ck_assert_int_eq(rl.state, QC_RELIEF_TEST);
    ck_assert(feed(&rl, 1.0, 300.0, 0.0, 2.0) == 1.0);
    ck_assert_int_eq(rl.bars, 0);
}
END_TEST

/* Refusing half or more once open, with the reading full and the queue
 * not draining: barred after QC_RELIEF_STILL_SECONDS. */
START_TEST(test_open_without_relief_is_barred)
{
    qc_relief_t rl;

    qc_relief_init(&rl);
    feed(&rl, 1.0, 100.0, 0.0, 1.0);
    feed(&rl, 0.9, 100.0, 5.0, 1.0);
    ck_assert(feed(&rl, 0.9, 100.0, 5.0, 1.0) == 1.0);
    ck_assert(feed(&rl, 1.0, 100.0, 60.0, 1.0) == 1.0);
    ck_assert(feed(&rl, 1.0, 100.0, 60.0, 1.0) == 0.0);
    ck_assert_int_eq(rl.state, QC_RELIEF_BARRED);
}
END_TEST

/* Open, the refused coming back as refusing grows, past what the
 * accept queue lets in: tested, and barred when stopping lowers the
 * arrivals. */
START_TEST(test_open_then_refill_is_tested)
{
    qc_relief_t rl;

    open_on_a_full_queue(&rl);
    /* the first rise is the queue's 200 connections coming in */
    ck_assert(feed_waiting(&rl, 0.99, 1650.0, 250.0, 0.2, 100.0) == 1.0);
    ck_assert_int_eq(rl.refill, 0);
    ck_assert(feed_waiting(&rl, 0.99, 1950.0, 560.0, 0.15, 90.0) == 1.0);
    ck_assert(feed_waiting(&rl, 0.99, 2300.0, 900.0, 0.12, 80.0) == 0.0);
    ck_assert_int_eq(rl.state, QC_RELIEF_TEST);
    ck_assert(feed_waiting(&rl, 0.99, 1400.0, 0.0, 0.2, 300.0) == 0.0);
    ck_assert_int_eq(rl.state, QC_RELIEF_BARRED);
    ck_assert_str_eq(rl.why, "refill");
}
END_TEST

/* An open load past the lowest tree: once the accept queue has let its
 * connections in, the arrivals stay put as refusing grows: open. */
START_TEST(test_open_load_past_the_lowest_tree_stays_open)
{
    qc_relief_t rl;
    double rej = 50.0;
    int i;

    open_on_a_full_queue(&rl);
    ck_assert(feed_waiting(&rl, 0.99, 1700.0, 250.0, 0.2, 0.0) == 1.0);
    for (i = 0; i < 10; i++) {
        rej += 100.0;
        ck_assert(feed_waiting(&rl, 0.99 - 0.01 * i, 1700.0, rej, 0.2, 0.0)
                  == 1.0);
    }
    ck_assert(feed_waiting(&rl, 0.9, 1700.0, rej, 0.1, 0.0) == 1.0);
    ck_assert_int_eq(rl.state, QC_RELIEF_OPEN);
    ck_assert_int_eq(rl.bars, 0);
}
END_TEST

/* A step of load is not noise.  Right after one, a probe's few
 * refusals do not stand out of the saturated arrivals' moves, and the
 * test opens; the refused coming back then stand out (a closed loop of
 * 1,000 connections on the link, as read). */
START_TEST(test_a_step_is_not_noise)
{
    static const double trace[][4] = {
        /* u, arrivals/s, refused/s, waiting connections */
        { 0.13, 26.0, 0.0, 0.0 }, { 0.16, 31.0, 0.0, 0.0 },
        { 0.12, 22.0, 0.0, 0.0 }, { 0.12, 23.0, 0.0, 0.0 },
        { 0.75, 1538.0, 0.0, 512.0 }, { 0.98, 1136.0, 0.0, 513.0 },
        { 0.99, 1305.0, 0.0, 513.0 }, { 0.99, 1346.0, 0.0, 513.0 },
        { 0.99, 1403.0, 0.0, 513.0 }, { 0.99, 1518.0, 72.0, 510.0 },
        { 0.99, 1485.0, 70.0, 512.0 }, { 0.99, 1391.0, 0.0, 512.0 },
        { 0.99, 1665.0, 247.0, 508.0 }, { 0.99, 1879.0, 581.0, 381.0 },
        { 0.98, 2149.0, 842.0, 340.0 }, { 0.98, 2420.0, 1159.0, 259.0 },
        { 0.98, 1100.0, 0.0, 300.0 }
    };
    qc_relief_t rl;
    unsigned i;

    qc_relief_init(&rl);
    for (i = 0; i < sizeof(trace) / sizeof(trace[0]); i++) {
        feed_waiting(&rl, trace[i][0], trace[i][1], trace[i][2], 0.5,
                     trace[i][3]);
        if (i == 8) {
            /* the unclipped mean move would be over 200 */
            ck_assert(rl.noise < 0.05 * 1403.0);
        }
        if (i == 11) {
            ck_assert_int_eq(rl.state, QC_RELIEF_OPEN);
        }
    }
    ck_assert_int_eq(rl.state, QC_RELIEF_BARRED);
    ck_assert_str_eq(rl.why, "refill");
}
END_TEST

static double feed_quarter(qc_relief_t *rl, double u, double r, double rej,
                           double queue, double waiting)
{
    qc_relief_in_t in = { u, r, rej, queue, 0.9, 0.25, waiting };

    return qc_relief_observe(rl, &in);
}

/* At 0.25 s periods the test lasts a second: arrivals that dip in its
 * first period (a link's queue refilling holds back new clients'
 * handshakes) and come back are an open load; arrivals that stay down
 * are the refused that came back, barred after the second. */
START_TEST(test_the_test_lasts_a_second)
{
    static const double after[][4] = {
        { 1380.0, 1500.0, 1500.0, 1500.0 },     /* open */
        { 1400.0, 1400.0, 1400.0, 1400.0 }      /* closed */
    };
    qc_relief_t rl;
    int k, i;

    for (k = 0; k < 2; k++) {
        qc_relief_init(&rl);
        for (i = 0; i < 8; i++) {
            feed_quarter(&rl, 0.99, 1400.0, 0.0, 0.01, -1.0);
        }
        feed_quarter(&rl, 0.99, 1470.0, 70.0, 0.01, -1.0);
        feed_quarter(&rl, 0.99, 1475.0, 72.0, 0.01, -1.0);
        ck_assert_int_eq(rl.state, QC_RELIEF_TEST);
        for (i = 0; i < 3; i++) {
            ck_assert(feed_quarter(&rl, 0.99, after[k][i], 0.0, 0.01, -1.0)
                      == 0.0);
            ck_assert_int_eq(rl.state, QC_RELIEF_TEST);
        }
        feed_quarter(&rl, 0.99, after[k][3], 0.0, 0.01, -1.0);
        ck_assert_int_eq(rl.state,
                         k == 0 ? QC_RELIEF_OPEN : QC_RELIEF_BARRED);
    }
}
END_TEST

/* An open load of 300 req/s on a 10 Mbit/s link that carries 148 of
 * the lowest tree, as read under CPU contention (0.25 s periods: u,
 * arrivals/s, refused/s, seconds of work waiting, connections waiting).
 * Refusing drains the link's queue, which lets held-back handshakes
 * through in bursts: two rises of the arrivals while refusing 90%, the
 * last to 512/s, look like the refused coming back for half a second;
 * then a period with no refusals reads a third of that as the link's
 * queue refills.  Never barred. */
START_TEST(test_an_open_load_on_a_noisy_link_stays_open)
{
    static const double trace[][5] = {
        { 1.055, 168, 0, 0.067, 0 }, { 0.983, 168, 0, 0.120, 0 },
        { 0.987, 180, 0, 0.189, 0 }, { 1.001, 276, 0, 0.427, 0 },
        { 0.996, 296, 0, 0.653, 12 }, { 0.997, 252, 0, 0.749, 48 },
        { 0.998, 316, 0, 1.117, 20 }, { 1.002, 344, 0, 1.243, 79 },
        { 0.997, 304, 0, 1.476, 102 }, { 1.000, 288, 0, 1.597, 150 },
        { 1.002, 268, 0, 1.987, 107 }, { 0.999, 288, 0, 2.062, 166 },
        { 0.999, 252, 0, 2.259, 194 }, { 1.001, 320, 14, 2.289, 229 },
        { 0.999, 228, 10, 2.668, 263 }, { 1.000, 320, 8, 2.473, 302 },
        { 1.004, 296, 10, 2.680, 347 }, { 1.000, 352, 11, 2.627, 403 },
        { 1.000, 316, 0, 2.861, 449 }, { 0.999, 503, 494, 1.486, 0 },
        { 0.998, 296, 296, 1.295, 0 }, { 1.001, 396, 396, 1.122, 0 },
        { 0.997, 252, 252, 0.927, 0 }, { 1.003, 348, 336, 0.763, 0 },
        { 0.999, 324, 320, 0.602, 0 }, { 1.000, 292, 288, 0.413, 0 },
        { 0.999, 292, 256, 0.320, 0 }, { 1.002, 276, 244, 0.170, 0 },
        { 1.000, 372, 336, 0.069, 0 }, { 0.981, 512, 456, 0.008, 0 },
        { 1.002, 176, 0, 0.072, 0 }, { 0.991, 220, 0, 0.213, 0 },
        { 0.998, 300, 0, 0.488, 0 }, { 0.995, 312, 0, 0.772, 0 }
    };
    qc_relief_t rl;
    unsigned i;

    qc_relief_init(&rl);
    for (i = 0; i < sizeof(trace) / sizeof(trace[0]); i++) {
        feed_quarter(&rl, trace[i][0], trace[i][1], trace[i][2],
                     trace[i][3], trace[i][4]);
        ck_assert_int_ne(rl.state, QC_RELIEF_BARRED);
        if (i == 29) {
            /* the last burst: the rises are half a second, not a test */
            ck_assert_int_eq(rl.state, QC_RELIEF_OPEN);
        }
    }
}
END_TEST

/* A minute below the bound forgets the bars; no refusing is free. */
START_TEST(test_calm_forgets)
{
    qc_relief_t rl;
    int i;

    qc_relief_init(&rl);
    rl.next = QC_RELIEF_MOST;
    for (i = 0; i < (int)QC_RELIEF_CALM; i++) {
        ck_assert(feed(&rl, 0.5, 100.0, 0.0, 0.0) == QC_RELIEF_PROBE_SHARE);
    }
    ck_assert(rl.next == QC_RELIEF_FIRST);
    ck_assert_str_eq(qc_relief_name(rl.state), "free");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qc_relief");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_refill_is_barred);
    tcase_add_test(tc, test_arrivals_that_stay_are_open);
    tcase_add_test(tc, test_draining_queue_is_relief);
    tcase_add_test(tc, test_probe_without_relief_is_barred);
    tcase_add_test(tc, test_probe_on_full_queues_is_tested);
    tcase_add_test(tc, test_open_without_relief_is_barred);
    tcase_add_test(tc, test_open_then_refill_is_tested);
    tcase_add_test(tc, test_open_load_past_the_lowest_tree_stays_open);
    tcase_add_test(tc, test_a_step_is_not_noise);
    tcase_add_test(tc, test_the_test_lasts_a_second);
    tcase_add_test(tc, test_an_open_load_on_a_noisy_link_stays_open);
    tcase_add_test(tc, test_calm_forgets);
    suite_add_tcase(s, tc);
    return qc_test_run(s);
}
