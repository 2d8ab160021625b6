/* Licensed under the Apache License, Version 2.0. */

/*
 * The capacity estimate of a period (qc_capacity.h) from the ticks'
 * readings: the accept queues' length and limit (sock_diag) and the
 * kernel's connection counters (qc_netstat.h).  Pure: the readings are
 * passed in by qc_ctl_run.
 */

#include <math.h>

#include "qc_ctl_capacity.h"
#include "qc_decide.h"
#include "qc_math.h"
#include "qc_netstat.h"

/* Seconds ahead the queue is forecast (eq. 3's Tc): two periods, the
 * time the loops take to act on what they see. */
#define QC_CAP_FORECAST_PERIODS 2.0

/* Share of the accept queues' limit from which they show a saturation
 * themselves. */
#define QC_CAP_QUEUE_SEEN 0.5

/* Seconds, about, of the accept queues' filling that say how fast
 * clients come: the rate of a step, not of the hours before it. */
#define QC_CAP_FILL_WINDOW 1.0

/* Connections in a period below which requests per connection are not
 * re-estimated. */
#define QC_CAP_RPC_MIN_CONNS 10.0

void qc_ctl_capacity_init(qc_ctl_t *ctl)
{
    qc_cap_init(&ctl->cp.est);
    ctl->cp.rpc = 1.0;
    ctl->cp.q_first = -1.0;
    ctl->cp.limit = -1;
    ctl->cp.capacity = -1.0;
    ctl->cp.capacity_full = -1.0;
    ctl->cp.headroom = 0.0;
    ctl->cp.offered = -1.0;
}

/* The rate at which clients come while the accept queues fill: every
 * attempt then enters them once.  Once full, the kernel's attempts count
 * a dropped client's retried SYNs, its ACK and its request's segment,
 * and what enters is what httpd accepts. */
static void qc_cap_fill_tick(qc_ctl_t *ctl, double dt, long queued,
                             double attempts, double drops)
{
    if (drops > 0.0) {
        if (ctl->cp.offered < 0.0 && ctl->cp.fill_time > 0.0) {
            ctl->cp.offered = ctl->cp.fill_entries / ctl->cp.fill_time;
        }
        return;
    }
    if (queued <= 0) {
        ctl->cp.fill_entries = ctl->cp.fill_time = 0.0;
        return;
    }
    ctl->cp.fill_entries += attempts;
    ctl->cp.fill_time += dt;
    if (ctl->cp.fill_time > QC_CAP_FILL_WINDOW) {
        ctl->cp.fill_entries *= QC_CAP_FILL_WINDOW / ctl->cp.fill_time;
        ctl->cp.fill_time = QC_CAP_FILL_WINDOW;
    }
}

void qc_ctl_totals(const qc_ctl_t *ctl, double *arrived, double *done,
                   double *bytes)
{
    unsigned i;

    *arrived = *done = *bytes = 0.0;
    for (i = 0; i < ctl->cfg->nvs * QC_NCLASSES; i++) {
        *arrived += ctl->cls[i].r;
        *done += ctl->cls[i].r_served;
        *bytes += ctl->cls[i].w;
    }
}

double qc_ctl_offered_conns(const qc_ctl_t *ctl)
{
    return ctl->cp.drops > 0.0 ? ctl->cp.offered : -1.0;
}

void qc_ctl_capacity_tick(qc_ctl_t *ctl, double dt, long queued, long limit,
                          double attempts, double drops)
{
    if (!(dt > 0.0)) {
        return;
    }
    if (queued >= 0) {
        if (ctl->cp.q_first < 0.0) {
            ctl->cp.q_first = (double)queued;
        }
        ctl->cp.q_last = (double)queued;
        ctl->cp.q_area += (double)queued * dt;
        ctl->cp.q_time += dt;
    }
    if (limit > 0) {
        ctl->cp.limit = limit;
    }
    if (attempts >= 0.0 && drops >= 0.0 && ctl->cp.attempts >= 0.0) {
        ctl->cp.attempts += attempts;
        ctl->cp.drops += drops;
        if (attempts / dt > ctl->cp.peak) {
            ctl->cp.peak = attempts / dt;
        }
        qc_cap_fill_tick(ctl, dt, queued, attempts, drops);
    }
    else {
        ctl->cp.attempts = -1.0;       /* the period's counts are unknown */
    }
}

/* Requests decided in the period, all hosts and classes (req/s), and
 * replies completed (*served). */
static double qc_cap_requests(qc_ctl_t *ctl, double *served)
{
    double r, bytes;

    qc_ctl_totals(ctl, &r, served, &bytes);
    return r;
}

/* Share of what a saturated link sent that the period's completions
 * must make up for the period to show the link's rate. */
#define QC_CAP_OWN_BYTES 0.5

/* Replies/s a saturated link put on the wire: completions count replies
 * once they are in socket buffers, so they are scaled by the bytes the
 * link sent over the bytes completed (never up).  No link sensor: the
 * completions.  < 0 when the period completed under QC_CAP_OWN_BYTES of
 * what the link sent: it was draining earlier periods' replies (a burst
 * ended), which says nothing of its rate. */
static double qc_cap_link_rate(const qc_ctl_t *ctl, double served)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double r, done, w, bits = 0.0, sent;
    unsigned i;

    for (i = 0; i < cfg->nsensors; i++) {
        bits = fmax(bits, cfg->sensors[i].bits_per_s);
    }
    qc_ctl_totals(ctl, &r, &done, &w);
    sent = ctl->u_measured * bits / 8.0;
    if (!(bits > 0.0) || !(sent > 0.0)) {
        return served;
    }
    if (!(w >= QC_CAP_OWN_BYTES * sent)) {
        return -1.0;
    }
    return sent < w ? served * sent / w : served;
}

/* The estimator's connections/s in requests/s, at full quality, and
 * against r req/s arriving. */
static void qc_cap_publish(qc_ctl_t *ctl, double r)
{
    if (ctl->cp.est.capacity > 0.0) {
        ctl->cp.capacity = ctl->cp.est.capacity * ctl->cp.rpc;
        ctl->cp.capacity_full = ctl->cp.capacity * qc_ctl_full_ratio(ctl);
        ctl->cp.headroom = qc_clampd((ctl->cp.capacity - r) / ctl->cp.capacity,
                                  -1.0, 1.0);
    }
}

void qc_ctl_capacity_rescale(qc_ctl_t *ctl, double s)
{
    double served;

    if (ctl->cp.est.capacity > 0.0) {
        ctl->cp.est.capacity /= s;
        qc_cap_publish(ctl, qc_cap_requests(ctl, &served));
    }
}

/* The estimator (qc_capacity.h) is pure and knows only connections:
 * it is handed the period's counts and the queues' limit, not the
 * controller. */
static void qc_cap_reading(const qc_ctl_t *ctl, double dt,
                           qc_cap_params_t *p, qc_cap_sample_t *s)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double accepted;

    /* Accepted: what arrived, less what was dropped or still waits. */
    accepted = ctl->cp.attempts - ctl->cp.drops
               - (ctl->cp.q_last - ctl->cp.q_first);
    p->queue_limit = (double)ctl->cp.limit;
    p->period = dt;
    p->forecast = QC_CAP_FORECAST_PERIODS * dt;
    p->tolerance = cfg->drop_tolerance > 0.0 ? cfg->drop_tolerance
                   : QC_CAP_TOLERANCE_DEFAULT;
    p->alpha = QC_CAP_ALPHA_DEFAULT;
    s->arrived = ctl->cp.attempts;
    s->accepted = accepted > 0.0 ? accepted : 0.0;
    s->dropped = ctl->cp.drops;
    s->queue_avg = ctl->cp.q_area / ctl->cp.q_time;
    s->peak_rate = ctl->cp.peak;
}

void qc_ctl_capacity_period(qc_ctl_t *ctl, double dt)
{
    qc_cap_params_t p;
    qc_cap_sample_t s;
    double served, r = qc_cap_requests(ctl, &served), rate;

    if (ctl->cp.attempts >= 0.0) {
        ctl->cp.syn_total += ctl->cp.attempts;
        ctl->cp.synack_total += ctl->cp.attempts - ctl->cp.drops;
        ctl->cp.syn_ratio = qc_syn_ratio(ctl->cp.attempts, ctl->cp.drops);
    }
    if (ctl->cp.attempts >= 0.0 && ctl->cp.q_time > 0.0
        && ctl->cp.limit > 0 && dt > 0.0) {
        qc_cap_reading(ctl, dt, &p, &s);
        /* The estimate counts connections; with keep-alive each carries
         * several requests. */
        if (s.accepted >= QC_CAP_RPC_MIN_CONNS) {
            ctl->cp.rpc = qc_clampd(r * dt / s.accepted, 1.0, 1e4);
        }
        rate = 0.0;
        if (ctl->reading.saturated
            && s.queue_avg < QC_CAP_QUEUE_SEEN * p.queue_limit) {
            /* A resource saturated all period is the bottleneck even
             * when the accept queues do not show it (an event MPM
             * writing to a saturated link accepts on, and the wait is
             * in socket buffers): its queue counts as full, and what it
             * did as the service rate, whatever was accepted (nothing,
             * while it drains).  Where the accept queue does show it,
             * Tsai et al.'s reading stands. */
            rate = qc_cap_link_rate(ctl, served);
            s.queue_avg = p.queue_limit;
            s.accepted = rate * dt / ctl->cp.rpc;
        }
        if (rate >= 0.0) {
            qc_cap_update(&ctl->cp.est, &p, &s);
        }
        qc_cap_publish(ctl, r);
    }
    if (!(ctl->cp.drops > 0.0)) {
        ctl->cp.offered = -1.0;
    }
    ctl->cp.q_first = ctl->cp.q_last;
    ctl->cp.q_area = 0.0;
    ctl->cp.q_time = 0.0;
    ctl->cp.attempts = 0.0;
    ctl->cp.drops = 0.0;
    ctl->cp.peak = 0.0;
}
