/* Licensed under the Apache License, Version 2.0. */

/*
 * libFuzzer target: the capacity estimate of queue monitoring, Tsai et al.'s
 * eqs. 1-5 (controller/qc_capacity.c).
 *
 * Input: doubles, 8 bytes each (little-endian IEEE 754, any bit pattern:
 * NaN, infinities, negatives, denormals).  First a parameter set: K, T,
 * Tc, tolerance, alpha.  Then up to FUZZ_PERIODS periods, each 1 byte
 * of op (bit 0: a new parameter set of 5 doubles follows), the sample
 * (n_arr, n_acc, n_d, queue average, peak rate), an arrival rate for
 * qc_cap_headroom and a capacity a caller might have written into a
 * state.  Missing bytes are zeros; periods stop with the input.
 *
 * Checked: what qc_capacity.h promises.  After every qc_cap_update the
 * result equals the state's capacity, which is finite and >= 0; the
 * mode bit is 0 or 1 and never goes back from 1 to 0; garbage
 * parameters or a garbage sample (a count, rate or length negative, NaN
 * or infinite; K or T not > 0; tolerance outside (0, 1]; alpha outside
 * [0, 1)) or a NULL leave the state bit-identical (memcmp); the same
 * update on a copy gives the same bits.  A period that counts gives:
 * the last queue in prev_queue, a drop ratio in [0, 1] (n_d / n_arr
 * when that is), the predicted queue in [0, K], the threshold eq. 2
 * gives for the peak (never under the mean arrival rate) and the old
 * capacity; in mode 0 the capacity follows that peak up and never
 * down; the period that turns the mode bit on adapts down; in mode 1
 * the capacity lies between the old one and the service rate, and is
 * the service rate when the drop ratio reaches the tolerance.
 * qc_cap_threshold is in [0, K] for valid K and T, K exactly when the
 * queue cannot fill, 0 for garbage K or T; qc_cap_fill_time is < 0 or
 * K / (peak - capacity), finite and >= 0, as eq. 1 says;
 * qc_cap_headroom is (c - λ) / c clamped to [-1, 1], 0 for no capacity
 * or a NaN rate, also for a state whose capacity a caller spoilt, and
 * qc_cap_update on such a state still returns a finite c' >= 0.
 */

#include <math.h>
#include <string.h>

#include "fuzz_common.h"
#include "qc_capacity.h"

#define FUZZ_PERIODS 64

/* Rounding slack of c alpha + mu (1 - alpha) against its two ends. */
#define FUZZ_REL 1e-12
#define FUZZ_ABS 1e-320

static int fuzz_finite_nonneg(double x)
{
    return isfinite(x) && x >= 0.0;
}

static int fuzz_params_garbage(const qc_cap_params_t *p)
{
    return !fuzz_finite_nonneg(p->queue_limit) || !(p->queue_limit > 0.0)
           || !fuzz_finite_nonneg(p->period) || !(p->period > 0.0)
           || !fuzz_finite_nonneg(p->forecast)
           || !(p->tolerance > 0.0 && p->tolerance <= 1.0)
           || !(p->alpha >= 0.0 && p->alpha < 1.0);
}

static int fuzz_sample_garbage(const qc_cap_sample_t *s)
{
    return !fuzz_finite_nonneg(s->arrived)
           || !fuzz_finite_nonneg(s->accepted)
           || !fuzz_finite_nonneg(s->dropped)
           || !fuzz_finite_nonneg(s->queue_avg)
           || !fuzz_finite_nonneg(s->peak_rate);
}

/* x within [lo, hi], give or take rounding. */
static int fuzz_within(double x, double lo, double hi)
{
    double slack = FUZZ_REL * fmax(fabs(lo), fabs(hi)) + FUZZ_ABS;

    return x >= lo - slack && x <= hi + slack;
}

static void fuzz_read_params(fuzz_input_t *in, qc_cap_params_t *p)
{
    p->queue_limit = fuzz_double(in);
    p->period = fuzz_double(in);
    p->forecast = fuzz_double(in);
    p->tolerance = fuzz_double(in);
    p->alpha = fuzz_double(in);
}

/* Eq. 1, as qc_capacity.h states it. */
static void fuzz_fill_time(double k, double peak, double cap)
{
    double t = qc_cap_fill_time(k, peak, cap);

    FUZZ_CHECK(t < 0.0 || fuzz_finite_nonneg(t), NULL);
    if (fuzz_finite_nonneg(k) && fuzz_finite_nonneg(peak)
        && fuzz_finite_nonneg(cap) && peak > cap
        && isfinite(k / (peak - cap))) {
        FUZZ_CHECK(t == k / (peak - cap), NULL);
    }
    else {
        FUZZ_CHECK(t < 0.0, NULL);
    }
}

/* Eq. 2, as qc_capacity.h states it. */
static double fuzz_threshold(const qc_cap_params_t *p, double peak,
                             double cap)
{
    double th = qc_cap_threshold(p, peak, cap), k = p->queue_limit;

    if (!fuzz_finite_nonneg(k) || !(k > 0.0)
        || !fuzz_finite_nonneg(p->period) || !(p->period > 0.0)) {
        FUZZ_CHECK(th == 0.0, NULL);
        return th;
    }
    FUZZ_CHECK(th >= 0.0 && th <= k, NULL);
    /* Garbage rates count as 0; K when the queue cannot fill. */
    if (qc_cap_fill_time(k, fuzz_finite_nonneg(peak) ? peak : 0.0,
                         fuzz_finite_nonneg(cap) ? cap : 0.0) < 0.0) {
        FUZZ_CHECK(th == k, NULL);
    }
    return th;
}

static void fuzz_headroom(const qc_cap_t *c, double rate)
{
    double h = qc_cap_headroom(c, rate), cap = c->capacity;

    FUZZ_CHECK(h >= -1.0 && h <= 1.0, NULL);
    if (isnan(rate) || !fuzz_finite_nonneg(cap) || cap == 0.0) {
        FUZZ_CHECK(h == 0.0, NULL);
    }
    else {
        double want = (cap - rate) / cap;

        FUZZ_CHECK(h == (want < -1.0 ? -1.0 : want > 1.0 ? 1.0 : want),
                   NULL);
    }
}

/* One period's update, and what it must have done to the state. */
static void fuzz_update(qc_cap_t *st, const qc_cap_params_t *p,
                        const qc_cap_sample_t *s)
{
    qc_cap_t before, twin;
    double cap, r, lambda, mu, peak, th;

    memcpy(&before, st, sizeof(before));
    memcpy(&twin, st, sizeof(twin));
    cap = before.capacity;

    /* NULLs change nothing. */
    FUZZ_CHECK(qc_cap_update(NULL, p, s) == 0.0, NULL);
    FUZZ_CHECK(qc_cap_update(st, NULL, s) == cap, NULL);
    FUZZ_CHECK(qc_cap_update(st, p, NULL) == cap, NULL);
    FUZZ_CHECK(!memcmp(st, &before, sizeof(before)), NULL);

    r = qc_cap_update(st, p, s);
    FUZZ_CHECK(fuzz_finite_nonneg(r), NULL);
    FUZZ_CHECK(r == st->capacity, NULL);
    FUZZ_CHECK(fuzz_finite_nonneg(st->capacity), NULL);
    FUZZ_CHECK(st->adapting == 0 || st->adapting == 1, NULL);
    FUZZ_CHECK(st->adapting >= before.adapting, NULL);

    /* Pure: the same update of the same state gives the same bits. */
    FUZZ_CHECK(qc_cap_update(&twin, p, s) == r, NULL);
    FUZZ_CHECK(!memcmp(&twin, st, sizeof(twin)), NULL);

    if (fuzz_params_garbage(p) || fuzz_sample_garbage(s)) {
        FUZZ_CHECK(r == cap, NULL);
        FUZZ_CHECK(!memcmp(st, &before, sizeof(before)), NULL);
        return;
    }
    lambda = s->arrived / p->period;
    mu = s->accepted / p->period;
    if (!isfinite(lambda) || !isfinite(mu)) {
        return;                 /* a count too big for the period */
    }
    peak = s->peak_rate > lambda ? s->peak_rate : lambda;

    FUZZ_CHECK(st->prev_queue == s->queue_avg, NULL);
    FUZZ_CHECK(st->drop_ratio >= 0.0 && st->drop_ratio <= 1.0, NULL);
    if (s->arrived > 0.0 && s->dropped <= s->arrived) {
        FUZZ_CHECK(st->drop_ratio == s->dropped / s->arrived, NULL);
    }
    FUZZ_CHECK(st->predicted >= 0.0 && st->predicted <= p->queue_limit,
               NULL);
    th = fuzz_threshold(p, peak, cap);
    FUZZ_CHECK(st->threshold == th, NULL);

    if (!st->adapting) {
        /* A lower bound: it follows the peak up, never down. */
        FUZZ_CHECK(r == (peak > cap ? peak : cap), NULL);
    }
    else {
        if (!before.adapting) {
            /* The first downward adaptation. */
            FUZZ_CHECK(fuzz_within(r, 0.0, cap), NULL);
        }
        FUZZ_CHECK(fuzz_within(r, fmin(cap, mu), fmax(cap, mu)), NULL);
        if (st->drop_ratio >= p->tolerance) {
            FUZZ_CHECK(r == mu, NULL);   /* drops clamp it to the served */
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_t in = { data, size };
    qc_cap_params_t p;
    qc_cap_sample_t s;
    qc_cap_t st, spoilt;
    unsigned period;

    /* Zeroed first: memcmp sees the padding too. */
    memset(&st, 0, sizeof(st));
    qc_cap_init(&st);
    FUZZ_CHECK(st.capacity == 0.0 && st.prev_queue < 0.0
               && st.adapting == 0, NULL);
    FUZZ_CHECK(qc_cap_headroom(NULL, 1.0) == 0.0, NULL);
    FUZZ_CHECK(qc_cap_threshold(NULL, 1.0, 1.0) == 0.0, NULL);

    fuzz_read_params(&in, &p);
    for (period = 0; period < FUZZ_PERIODS && fuzz_more(&in); period++) {
        double rate, written;

        if (fuzz_u8(&in) & 1) {
            fuzz_read_params(&in, &p);
        }
        s.arrived = fuzz_double(&in);
        s.accepted = fuzz_double(&in);
        s.dropped = fuzz_double(&in);
        s.queue_avg = fuzz_double(&in);
        s.peak_rate = fuzz_double(&in);
        rate = fuzz_double(&in);
        written = fuzz_double(&in);

        /* The free functions, on this period's numbers and the state. */
        fuzz_fill_time(p.queue_limit, s.peak_rate, st.capacity);
        fuzz_fill_time(s.queue_avg, s.peak_rate, rate);
        fuzz_fill_time(s.arrived, rate, written);
        fuzz_threshold(&p, s.peak_rate, st.capacity);
        fuzz_threshold(&p, rate, written);
        fuzz_headroom(&st, rate);
        fuzz_headroom(&st, s.peak_rate);

        fuzz_update(&st, &p, &s);
        fuzz_headroom(&st, rate);

        /* A state a caller wrote into: still a usable answer. */
        memcpy(&spoilt, &st, sizeof(spoilt));
        spoilt.capacity = written;
        spoilt.prev_queue = rate;
        fuzz_headroom(&spoilt, rate);
        fuzz_headroom(&spoilt, s.arrived);
        FUZZ_CHECK(fuzz_finite_nonneg(qc_cap_update(&spoilt, &p, &s)),
                   NULL);
    }
    apr_pool_clear(fuzz_pool);
    return 0;
}
