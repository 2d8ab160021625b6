/* Licensed under the Apache License, Version 2.0. */

#include <math.h>
#include <stddef.h>

#include "qc_capacity.h"
#include "qc_math.h"

/* x is a usable count, rate or length: finite and not negative. */
static int qc_cap_nonneg(double x)
{
    return x >= 0.0 && x < HUGE_VAL;
}

static int qc_cap_params_ok(const qc_cap_params_t *p)
{
    return p != NULL
           && qc_cap_nonneg(p->queue_limit) && p->queue_limit > 0.0
           && qc_cap_nonneg(p->period) && p->period > 0.0
           && qc_cap_nonneg(p->forecast)
           && p->tolerance > 0.0 && p->tolerance <= 1.0
           && p->alpha >= 0.0 && p->alpha < 1.0;
}

static int qc_cap_sample_ok(const qc_cap_sample_t *s)
{
    return s != NULL
           && qc_cap_nonneg(s->arrived) && qc_cap_nonneg(s->accepted)
           && qc_cap_nonneg(s->dropped) && qc_cap_nonneg(s->queue_avg)
           && qc_cap_nonneg(s->peak_rate);
}

/* The state's estimate, read defensively: a caller may have written it. */
static double qc_cap_current(const qc_cap_t *c)
{
    return qc_cap_nonneg(c->capacity) ? c->capacity : 0.0;
}

void qc_cap_init(qc_cap_t *c)
{
    c->capacity = 0.0;
    c->prev_queue = -1.0;
    c->adapting = 0;
    c->drop_ratio = 0.0;
    c->threshold = 0.0;
    c->predicted = 0.0;
}

double qc_cap_fill_time(double queue_limit, double peak_rate,
                        double capacity)
{
    double t;

    if (!qc_cap_nonneg(queue_limit) || !qc_cap_nonneg(peak_rate)
        || !qc_cap_nonneg(capacity) || peak_rate <= capacity) {
        return -1.0;
    }
    t = queue_limit / (peak_rate - capacity);
    return t < HUGE_VAL ? t : -1.0;
}

double qc_cap_threshold(const qc_cap_params_t *p, double peak_rate,
                        double capacity)
{
    double k, t, tf, a, b, th;

    if (p == NULL || !qc_cap_nonneg(p->queue_limit) || p->queue_limit <= 0.0
        || !qc_cap_nonneg(p->period) || p->period <= 0.0) {
        return 0.0;
    }
    k = p->queue_limit;
    t = p->period;
    peak_rate = qc_cap_nonneg(peak_rate) ? peak_rate : 0.0;
    capacity = qc_cap_nonneg(capacity) ? capacity : 0.0;
    tf = qc_cap_fill_time(k, peak_rate, capacity);
    if (tf < 0.0) {
        return k;
    }
    if (tf <= t) {
        /* c (T - tf) requests meet an empty queue, λmax tf one of K/2 on
         * average; as a ratio, so that huge rates cannot make inf/inf. */
        a = peak_rate * tf;
        b = capacity * (t - tf);
        th = a > 0.0 ? 0.5 * k / (1.0 + b / a) : 0.5 * k;
    }
    else {
        /* Full at the end only from K - (λmax - c) T at the start. */
        th = (k - (peak_rate - capacity) * t + k) / 2.0;
    }
    return qc_clampd(th, 0.0, k);
}

/* Eq. 3: the queue Tc ahead, on its trend since the last period, so
 * that a queue on its way to the threshold counts before it gets
 * there. */
static double qc_cap_forecast(const qc_cap_t *c, const qc_cap_params_t *p,
                              double ell)
{
    double slope = qc_cap_nonneg(c->prev_queue)
                   ? (ell - c->prev_queue) / p->period : 0.0;

    /* A queue holds 0 to K; clipping changes no decision as ℓ_th is in
     * (0, K]. */
    return qc_clampd(ell + slope * p->forecast, 0.0, p->queue_limit);
}

double qc_cap_update(qc_cap_t *c, const qc_cap_params_t *p,
                     const qc_cap_sample_t *s)
{
    double cap, lambda, mu, eps, peak, ell, predicted, th, next;
    int violated, optimistic, pessimistic;

    if (c == NULL) {
        return 0.0;
    }
    cap = qc_cap_current(c);
    if (!qc_cap_params_ok(p) || !qc_cap_sample_ok(s)) {
        return cap;
    }
    lambda = s->arrived / p->period;
    mu = s->accepted / p->period;
    if (!qc_cap_nonneg(lambda) || !qc_cap_nonneg(mu)) {
        return cap;             /* a count too big for the period */
    }
    /* Counters read at slightly different instants may show more drops
     * than attempts: a ratio is at most 1. */
    eps = s->arrived > 0.0 ? qc_clampd(s->dropped / s->arrived, 0.0, 1.0)
          : 0.0;
    /* The peak of sub-periods is never under their mean. */
    peak = s->peak_rate > lambda ? s->peak_rate : lambda;
    ell = s->queue_avg;
    predicted = qc_cap_forecast(c, p, ell);

    th = qc_cap_threshold(p, peak, cap);
    violated = eps >= p->tolerance;
    optimistic = fmin(ell, predicted) >= th && cap > mu;
    pessimistic = fmax(ell, predicted) < th && cap < mu;

    if (!c->adapting) {
        if ((violated && mu < cap) || optimistic) {
            c->adapting = 1;    /* for good: the estimate is now a fit */
        }
    }
    if (!c->adapting) {
        /* Fast start: no difficulty met, so the peak was handled. */
        next = peak > cap ? peak : cap;
    }
    else if (violated) {
        next = mu;
    }
    else if (optimistic || pessimistic) {
        next = cap * p->alpha + mu * (1.0 - p->alpha);
    }
    else {
        next = cap;
    }

    c->capacity = qc_cap_nonneg(next) ? next : cap;
    c->prev_queue = ell;
    c->drop_ratio = eps;
    c->threshold = th;
    c->predicted = predicted;
    return c->capacity;
}

double qc_cap_headroom(const qc_cap_t *c, double arrival_rate)
{
    double cap;

    if (c == NULL || isnan(arrival_rate)) {
        return 0.0;
    }
    cap = qc_cap_current(c);
    if (cap <= 0.0) {
        return 0.0;
    }
    return qc_clampd((cap - arrival_rate) / cap, -1.0, 1.0);
}
