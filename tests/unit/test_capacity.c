/* Licensed under the Apache License, Version 2.0. */

/*
 * Unit tests of the queue-monitoring capacity estimate
 * (controller/qc_capacity.c, Tsai et al., §5.3, eqs. 1-5), worked by hand,
 * and a closed loop against a simulated server.
 */

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qc_test.h"
#include "qc_capacity.h"

#define assert_near(x, y) \
    ck_assert_msg(fabs((x) - (y)) <= 1e-9, "%s = %.15g, expected %.15g", \
                  #x, (double)(x), (double)(y))

/* K = 128 (Tsai et al.'s accept queue), T = 1 s, Tc = 2 s, 1%, α = 0.5. */
static const qc_cap_params_t par = { 128.0, 1.0, 2.0, 0.01, 0.5 };

static qc_cap_sample_t sample(double arrived, double accepted,
                              double dropped, double queue, double peak)
{
    qc_cap_sample_t s;

    s.arrived = arrived;
    s.accepted = accepted;
    s.dropped = dropped;
    s.queue_avg = queue;
    s.peak_rate = peak;
    return s;
}

/* One period of par; the new capacity. */
static double step(qc_cap_t *c, double arrived, double accepted,
                   double dropped, double queue, double peak)
{
    qc_cap_sample_t s = sample(arrived, accepted, dropped, queue, peak);

    return qc_cap_update(c, &par, &s);
}

/* A state past the fast start, with capacity cap and no last period. */
static qc_cap_t adapting(double cap)
{
    qc_cap_t c;

    qc_cap_init(&c);
    c.capacity = cap;
    c.adapting = 1;
    return c;
}

START_TEST(test_fill_time)
{
    /* K / (λmax - c) = 128 / (700 - 600) */
    assert_near(qc_cap_fill_time(128.0, 700.0, 600.0), 1.28);
    /* nothing known: 128 / 64 */
    assert_near(qc_cap_fill_time(128.0, 64.0, 0.0), 2.0);
    /* λmax <= c: the queue cannot grow at the peak */
    ck_assert(qc_cap_fill_time(128.0, 600.0, 600.0) < 0.0);
    ck_assert(qc_cap_fill_time(128.0, 500.0, 600.0) < 0.0);
    /* a queue of nothing is full at once */
    assert_near(qc_cap_fill_time(0.0, 700.0, 600.0), 0.0);
    ck_assert(qc_cap_fill_time(NAN, 700.0, 600.0) < 0.0);
    ck_assert(qc_cap_fill_time(-1.0, 700.0, 600.0) < 0.0);
    ck_assert(qc_cap_fill_time(128.0, NAN, 0.0) < 0.0);
    ck_assert(qc_cap_fill_time(128.0, INFINITY, 0.0) < 0.0);
    ck_assert(qc_cap_fill_time(128.0, 700.0, -1.0) < 0.0);
    /* 128 / 1e-320 overflows: no finite time, undefined */
    ck_assert(qc_cap_fill_time(128.0, 1e-320, 0.0) < 0.0);
}
END_TEST

START_TEST(test_threshold)
{
    qc_cap_params_t p = par;

    /* tf = 1.28 > T = 1: ([K - (λmax - c) T] + K) / 2
     *                  = (128 - 100 + 128) / 2 = 78 */
    assert_near(qc_cap_threshold(&p, 700.0, 600.0), 78.0);
    /* T = 2, tf = 1.28 <= T: (K/2) λmax tf / (c (T - tf) + λmax tf)
     *   λmax tf = 700 * 1.28 = 896, c (T - tf) = 600 * 0.72 = 432,
     *   64 * 896 / (432 + 896) = 57344 / 1328 = 43.1807... */
    p.period = 2.0;
    assert_near(qc_cap_threshold(&p, 700.0, 600.0), 57344.0 / 1328.0);
    /* the branches meet at tf = T = 1.28: both give K/2 */
    p.period = 1.28;
    assert_near(qc_cap_threshold(&p, 700.0, 600.0), 64.0);
    assert_near(qc_cap_threshold(&p, 700.0, 600.0 - 1e-9), 64.0);
    /* c = 0: every request of the period meets the filling queue,
     * K/2 = 64 (tf = 128 / 400 = 0.32 <= 1) */
    assert_near(qc_cap_threshold(&par, 400.0, 0.0), 64.0);
    /* tf undefined (λmax <= c): only a full queue overflows */
    assert_near(qc_cap_threshold(&par, 600.0, 600.0), 128.0);
    assert_near(qc_cap_threshold(&par, 0.0, 0.0), 128.0);
    /* garbage rates count as 0; garbage K or T give 0 */
    assert_near(qc_cap_threshold(&par, NAN, 600.0), 128.0);
    assert_near(qc_cap_threshold(&par, -5.0, 600.0), 128.0);
    assert_near(qc_cap_threshold(&par, 400.0, NAN), 64.0);
    assert_near(qc_cap_threshold(NULL, 700.0, 600.0), 0.0);
    p = par;
    p.queue_limit = 0.0;
    assert_near(qc_cap_threshold(&p, 700.0, 600.0), 0.0);
    p = par;
    p.period = 0.0;
    assert_near(qc_cap_threshold(&p, 700.0, 600.0), 0.0);
    p.period = NAN;
    assert_near(qc_cap_threshold(&p, 700.0, 600.0), 0.0);
    /* huge but finite rates stay in [0, K] */
    {
        double th = qc_cap_threshold(&par, 1e308, 9e307);

        ck_assert(th >= 0.0 && th <= 128.0);
        th = qc_cap_threshold(&par, 1e308, 0.0);
        ck_assert(th >= 0.0 && th <= 128.0);
    }
}
END_TEST

/* Eq. 3: ℓ̂ = ℓ + ℓ' Tc with ℓ' = (ℓ - ℓ_previous) / T. */
START_TEST(test_prediction)
{
    qc_cap_params_t p = par;
    qc_cap_sample_t s = sample(100.0, 100.0, 0.0, 10.0, 100.0);
    qc_cap_t c;

    p.forecast = 5.0;
    qc_cap_init(&c);
    /* no previous period: ℓ' = 0, ℓ̂ = ℓ = 10 */
    qc_cap_update(&c, &p, &s);
    assert_near(c.predicted, 10.0);
    assert_near(c.prev_queue, 10.0);
    /* ℓ' = (16 - 10) / 1 = 6, ℓ̂ = 16 + 6 * 5 = 46 */
    s.queue_avg = 16.0;
    qc_cap_update(&c, &p, &s);
    assert_near(c.predicted, 46.0);
    /* ℓ' = (4 - 16) / 1 = -12, ℓ̂ = 4 - 60 = -56: no queue, 0 */
    s.queue_avg = 4.0;
    qc_cap_update(&c, &p, &s);
    assert_near(c.predicted, 0.0);
    /* ℓ' = (100 - 4) / 1 = 96, ℓ̂ = 100 + 480: a full queue, K */
    s.queue_avg = 100.0;
    qc_cap_update(&c, &p, &s);
    assert_near(c.predicted, 128.0);
    /* T = 2: ℓ' = (16 - 10) / 2 = 3, ℓ̂ = 16 + 3 * 5 = 31 */
    p.period = 2.0;
    qc_cap_init(&c);
    s.queue_avg = 10.0;
    qc_cap_update(&c, &p, &s);
    s.queue_avg = 16.0;
    qc_cap_update(&c, &p, &s);
    assert_near(c.predicted, 31.0);
}
END_TEST

/*
 * Eq. 5 past the fast start.  c = 600, λmax = 700, T = 1: tf = 1.28 > T,
 * ℓ_th = 78 (test_threshold).
 */
START_TEST(test_adapt)
{
    qc_cap_t c;

    /* ε = 14 / 700 = 0.02 >= 0.01: clamped to μ = 580 */
    c = adapting(600.0);
    assert_near(step(&c, 700.0, 580.0, 14.0, 120.0, 750.0), 580.0);
    assert_near(c.drop_ratio, 0.02);
    /* ... as written, also up: drops at μ = 580 > c = 500 */
    c = adapting(500.0);
    assert_near(step(&c, 700.0, 580.0, 14.0, 120.0, 750.0), 580.0);

    /* optimistic: min(100, 100) >= 78 and c = 600 > μ = 560:
     * c' = 0.5 * 600 + 0.5 * 560 = 580 */
    c = adapting(600.0);
    assert_near(step(&c, 650.0, 560.0, 0.0, 100.0, 700.0), 580.0);
    assert_near(c.threshold, 78.0);
    /* ... the same with drops under the tolerance (6 / 650 < 1%) */
    c = adapting(600.0);
    assert_near(step(&c, 650.0, 560.0, 6.0, 100.0, 700.0), 580.0);

    /* pessimistic: max(10, 10) < 78 and c = 600 < μ = 620:
     * c' = 0.5 * 600 + 0.5 * 620 = 610 */
    c = adapting(600.0);
    assert_near(step(&c, 620.0, 620.0, 0.0, 10.0, 700.0), 610.0);

    /* retained: a short queue while serving under c (a light load) */
    c = adapting(600.0);
    assert_near(step(&c, 560.0, 560.0, 0.0, 10.0, 700.0), 600.0);
    /* ... a long queue while serving over c */
    c = adapting(600.0);
    assert_near(step(&c, 650.0, 620.0, 0.0, 100.0, 700.0), 600.0);
    /* ... an idle period */
    c = adapting(600.0);
    assert_near(step(&c, 0.0, 0.0, 0.0, 0.0, 0.0), 600.0);
    assert_near(c.drop_ratio, 0.0);
}
END_TEST

/* Eq. 4 looks at both ℓ and ℓ̂ (ℓ_th = 78 as above, Tc = 2). */
START_TEST(test_prediction_gates)
{
    qc_cap_t c;

    /* ℓ = 80 >= 78 alone: optimistic, 0.5 * 600 + 0.5 * 560 = 580 */
    c = adapting(600.0);
    assert_near(step(&c, 650.0, 560.0, 0.0, 80.0, 700.0), 580.0);
    /* ... but draining from 100: ℓ' = -20, ℓ̂ = 80 - 40 = 40 < 78 */
    c = adapting(600.0);
    c.prev_queue = 100.0;
    assert_near(step(&c, 650.0, 560.0, 0.0, 80.0, 700.0), 600.0);
    assert_near(c.predicted, 40.0);

    /* ℓ = 50 < 78 alone: pessimistic, 0.5 * 600 + 0.5 * 620 = 610 */
    c = adapting(600.0);
    assert_near(step(&c, 620.0, 620.0, 0.0, 50.0, 700.0), 610.0);
    /* ... but filling from 30: ℓ' = 20, ℓ̂ = 50 + 40 = 90 >= 78 */
    c = adapting(600.0);
    c.prev_queue = 30.0;
    assert_near(step(&c, 620.0, 620.0, 0.0, 50.0, 700.0), 600.0);
    assert_near(c.predicted, 90.0);
}
END_TEST

START_TEST(test_mode_bit)
{
    qc_cap_t c;

    qc_cap_init(&c);
    ck_assert_int_eq(c.adapting, 0);
    assert_near(c.capacity, 0.0);
    /* fast start: c = max(0, λmax = 400); ℓ_th with c = 0 is K/2 */
    assert_near(step(&c, 300.0, 300.0, 0.0, 0.0, 400.0), 400.0);
    assert_near(c.threshold, 64.0);
    /* a lower peak leaves the lower bound where it was */
    assert_near(step(&c, 320.0, 320.0, 0.0, 0.0, 350.0), 400.0);
    /* pessimistic (ℓ_th = 78, max(1, 3) < 78, c = 400 < μ = 450), but
     * not downward: max(400, 500) */
    assert_near(step(&c, 450.0, 450.0, 0.0, 1.0, 500.0), 500.0);
    assert_near(c.predicted, 3.0);
    /* drops (10 / 600) while serving over c = 500: not downward either,
     * max(500, 650) */
    assert_near(step(&c, 600.0, 520.0, 10.0, 60.0, 650.0), 650.0);
    ck_assert_int_eq(c.adapting, 0);
    /* drops (21 / 700 = 3%) serving μ = 590 < c = 650: clamped, on */
    assert_near(step(&c, 700.0, 590.0, 21.0, 120.0, 760.0), 590.0);
    ck_assert_int_eq(c.adapting, 1);
    /* on: a peak of 900 is no longer followed (short queue, μ < c) */
    assert_near(step(&c, 300.0, 300.0, 0.0, 2.0, 900.0), 590.0);
    ck_assert_int_eq(c.adapting, 1);
    /* pessimistic, now applied: λmax = 650, tf = 128 / 60 > 1,
     * ℓ_th = (128 - 60 + 128) / 2 = 98; ℓ̂ = 5 + 3 * 2 = 11 < 98,
     * c = 590 < μ = 600: 0.5 * 590 + 0.5 * 600 = 595 */
    assert_near(step(&c, 600.0, 600.0, 0.0, 5.0, 650.0), 595.0);
    assert_near(c.threshold, 98.0);
    assert_near(c.predicted, 11.0);
    ck_assert_int_eq(c.adapting, 1);
    /* an upward adaptation or an idle period never turns it off */
    assert_near(step(&c, 0.0, 0.0, 0.0, 0.0, 0.0), 595.0);
    ck_assert_int_eq(c.adapting, 1);
}
END_TEST

/* The other downward adaptation, an optimistic estimate, turns it on. */
START_TEST(test_mode_bit_optimistic)
{
    qc_cap_t c;

    qc_cap_init(&c);
    assert_near(step(&c, 700.0, 700.0, 0.0, 0.0, 700.0), 700.0);
    /* λmax = c: ℓ_th = K = 128 > 100, no drops: fast start holds 700 */
    assert_near(step(&c, 650.0, 560.0, 0.0, 100.0, 700.0), 700.0);
    assert_near(c.threshold, 128.0);
    ck_assert_int_eq(c.adapting, 0);
    /* tf = 128 / 20 = 6.4 > 1: ℓ_th = (128 - 20 + 128) / 2 = 118;
     * ℓ̂ = 120 + 20 * 2 = 160, a full queue 128; min(120, 128) >= 118,
     * c = 700 > μ = 560: 0.5 * 700 + 0.5 * 560 = 630 */
    assert_near(step(&c, 690.0, 560.0, 0.0, 120.0, 720.0), 630.0);
    assert_near(c.threshold, 118.0);
    ck_assert_int_eq(c.adapting, 1);
}
END_TEST

/* A peak under the period's mean is the mean. */
START_TEST(test_peak_at_least_mean)
{
    qc_cap_t c;

    qc_cap_init(&c);
    assert_near(step(&c, 450.0, 450.0, 0.0, 0.0, 0.0), 450.0);
    /* more drops than attempts (counters read apart): ε is 1 */
    c = adapting(600.0);
    assert_near(step(&c, 10.0, 5.0, 20.0, 128.0, 10.0), 5.0);
    assert_near(c.drop_ratio, 1.0);
}
END_TEST

static void assert_same(const qc_cap_t *a, const qc_cap_t *b)
{
    ck_assert(a->capacity == b->capacity);
    ck_assert(a->prev_queue == b->prev_queue);
    ck_assert_int_eq(a->adapting, b->adapting);
    ck_assert(a->drop_ratio == b->drop_ratio);
    ck_assert(a->threshold == b->threshold);
    ck_assert(a->predicted == b->predicted);
}

START_TEST(test_garbage)
{
    static const double bad[] = { NAN, -1.0, INFINITY, -INFINITY };
    qc_cap_sample_t good = sample(650.0, 560.0, 0.0, 100.0, 700.0), s;
    qc_cap_params_t p;
    qc_cap_t c, before;
    unsigned i, f;

    c = adapting(600.0);
    c.prev_queue = 90.0;
    qc_cap_update(&c, &par, &good);     /* 580, ℓ_th 78, ℓ̂ 120 */
    before = c;

    /* every field of the sample, each bad value */
    for (f = 0; f < 5; f++) {
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            double *field[5];

            s = good;
            field[0] = &s.arrived;
            field[1] = &s.accepted;
            field[2] = &s.dropped;
            field[3] = &s.queue_avg;
            field[4] = &s.peak_rate;
            *field[f] = bad[i];
            assert_near(qc_cap_update(&c, &par, &s), 580.0);
            assert_same(&c, &before);
        }
    }
    /* a count too big for a tiny period: a rate of inf */
    p = par;
    p.period = 1e-310;
    s = good;
    s.arrived = 1e300;
    assert_near(qc_cap_update(&c, &p, &s), 580.0);
    assert_same(&c, &before);

    /* parameters: K or T not > 0, Tc < 0, ε_th outside (0, 1],
     * α outside [0, 1), NaN anywhere */
    {
        static const struct {
            unsigned field;
            double value;
        } badp[] = {
            { 0, 0.0 }, { 0, -128.0 }, { 0, NAN }, { 0, INFINITY },
            { 1, 0.0 }, { 1, -1.0 }, { 1, NAN }, { 1, INFINITY },
            { 2, -1.0 }, { 2, NAN }, { 2, INFINITY },
            { 3, 0.0 }, { 3, -0.01 }, { 3, 1.5 }, { 3, NAN },
            { 4, 1.0 }, { 4, -0.1 }, { 4, NAN }
        };

        for (i = 0; i < sizeof(badp) / sizeof(badp[0]); i++) {
            double *field[5];

            p = par;
            field[0] = &p.queue_limit;
            field[1] = &p.period;
            field[2] = &p.forecast;
            field[3] = &p.tolerance;
            field[4] = &p.alpha;
            *field[badp[i].field] = badp[i].value;
            assert_near(qc_cap_update(&c, &p, &good), 580.0);
            assert_same(&c, &before);
        }
    }
    /* no parameters, no sample, no state */
    assert_near(qc_cap_update(&c, NULL, &good), 580.0);
    assert_near(qc_cap_update(&c, &par, NULL), 580.0);
    assert_same(&c, &before);
    assert_near(qc_cap_update(NULL, &par, &good), 0.0);

    /* a state a caller wrote garbage into: never NaN or negative back */
    c.capacity = NAN;
    assert_near(qc_cap_update(&c, &par, NULL), 0.0);
    ck_assert(qc_cap_update(&c, &par, &good) >= 0.0);
    ck_assert(isfinite(c.capacity));
    c.capacity = -5.0;
    c.prev_queue = NAN;
    ck_assert(qc_cap_update(&c, &par, &good) >= 0.0);
    ck_assert(isfinite(c.predicted));
}
END_TEST

START_TEST(test_headroom)
{
    qc_cap_t c = adapting(600.0);

    assert_near(qc_cap_headroom(&c, 450.0), 0.25);     /* 150 / 600 */
    assert_near(qc_cap_headroom(&c, 750.0), -0.25);
    assert_near(qc_cap_headroom(&c, 1500.0), -1.0);    /* -1.5, clamped */
    assert_near(qc_cap_headroom(&c, -60.0), 1.0);      /* 1.1, clamped */
    assert_near(qc_cap_headroom(&c, INFINITY), -1.0);
    assert_near(qc_cap_headroom(&c, NAN), 0.0);
    assert_near(qc_cap_headroom(NULL, 450.0), 0.0);
    c.capacity = 0.0;
    assert_near(qc_cap_headroom(&c, 450.0), 0.0);
    c.capacity = NAN;
    assert_near(qc_cap_headroom(&c, 450.0), 0.0);
}
END_TEST

/*
 * The closed loop: a server of capacity 595 req/s (Tsai et al.'s measured
 * one) behind an accept queue of 128, offered a rate rising linearly
 * through it as in Tsai et al.'s Fig. 2, then falling back.  The queue is
 * a fluid, stepped ten times a period: arrivals jittered ±20% and
 * service ±10% around 595 req/s (a fixed generator), what overflows K
 * dropped.
 */
#define SIM_CAPACITY 595.0
#define SIM_STEPS 10

static unsigned sim_seed = 1;

static double sim_uniform(void)
{
    sim_seed = sim_seed * 1103515245u + 12345u;
    return (double)((sim_seed >> 16) & 0x7fff) / 32768.0;
}

/* 100 req/s rising 2 req/s each second to 820 at 360 s, then falling. */
static double sim_rate(double t)
{
    return t < 360.0 ? 100.0 + 2.0 * t : 820.0 - 2.0 * (t - 360.0);
}

static qc_cap_sample_t sim_period(double t0, double period, double *queue)
{
    qc_cap_sample_t s = sample(0.0, 0.0, 0.0, 0.0, 0.0);
    double dt = period / SIM_STEPS, qsum = 0.0;
    int i;

    for (i = 0; i < SIM_STEPS; i++) {
        double r = sim_rate(t0 + (i + 0.5) * dt) * (0.8 + 0.4 * sim_uniform());
        double served;

        *queue += r * dt;
        served = fmin(SIM_CAPACITY * (0.9 + 0.2 * sim_uniform()) * dt,
                      *queue);
        *queue -= served;
        s.arrived += r * dt;
        s.accepted += served;
        if (*queue > 128.0) {
            s.dropped += *queue - 128.0;
            *queue = 128.0;
        }
        qsum += *queue;
        s.peak_rate = fmax(s.peak_rate, r);
    }
    s.queue_avg = qsum / SIM_STEPS;
    return s;
}

START_TEST(test_closed_loop)
{
    qc_cap_params_t p;
    qc_cap_t c;
    double queue = 0.0, t, est, overload_end = 0.0, top = 0.0;
    double dropped = 0.0, low = HUGE_VAL, high = 0.0;

    p.queue_limit = 128.0;
    p.period = 1.0;
    p.forecast = 2.0;
    p.tolerance = QC_CAP_TOLERANCE_DEFAULT;
    p.alpha = QC_CAP_ALPHA_DEFAULT;
    qc_cap_init(&c);
    for (t = 0.0; t < 700.0; t += p.period) {
        qc_cap_sample_t s = sim_period(t, p.period, &queue);

        est = qc_cap_update(&c, &p, &s);
        ck_assert(isfinite(est) && est >= 0.0);
        top = fmax(top, est);
        dropped += s.dropped;
        if (s.dropped > 0.0) {
            overload_end = t;
        }
        if (c.adapting && s.dropped > 0.0) {
            low = fmin(low, est);
            high = fmax(high, est);
        }
    }
    printf("closed loop: capacity %.1f req/s (true %.0f, %+.1f%%) after "
           "the overload ended at %.0f s; %.1f to %.1f during it; fast "
           "start peaked at %.1f; seed: 586 estimated against 595 "
           "measured\n",
           c.capacity, SIM_CAPACITY,
           100.0 * (c.capacity - SIM_CAPACITY) / SIM_CAPACITY,
           overload_end, low, high, top);
    ck_assert(dropped > 0.0);           /* it was overloaded */
    ck_assert(overload_end < 600.0);    /* and no longer at the end */
    ck_assert_int_eq(c.adapting, 1);
    ck_assert_msg(fabs(c.capacity - SIM_CAPACITY) <= 0.05 * SIM_CAPACITY,
                  "capacity %.1f, true %.1f", c.capacity, SIM_CAPACITY);
}
END_TEST

static Suite *capacity_suite(void)
{
    Suite *s = suite_create("qc_capacity");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_fill_time);
    tcase_add_test(tc, test_threshold);
    tcase_add_test(tc, test_prediction);
    tcase_add_test(tc, test_adapt);
    tcase_add_test(tc, test_prediction_gates);
    tcase_add_test(tc, test_mode_bit);
    tcase_add_test(tc, test_mode_bit_optimistic);
    tcase_add_test(tc, test_peak_at_least_mean);
    tcase_add_test(tc, test_garbage);
    tcase_add_test(tc, test_headroom);
    tcase_add_test(tc, test_closed_loop);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    return qc_test_run(capacity_suite());
}
