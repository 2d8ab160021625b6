/* Licensed under the Apache License, Version 2.0. */

/* Counters to rates: what the request path counted in the period. */

#include "apr_atomic.h"

#include "qc_ctl_helpers.h"
#include "qc_ctl_sense.h"

/* A tree's mean reply size is a mean over replies, each period's
 * weighted by this factor per period of age: one small reply (a status
 * page) must not stand for the hundreds that follow it. */
#define QC_XBAR_KEEP 0.7

/* Most the accept queues' change may scale the counted arrivals by. */
#define QC_CTL_QUEUE_SCALE 4.0

void qc_ctl_read_counts(qc_class_shm_t *cs, unsigned levels,
                        qc_ctl_counts_t *c)
{
    unsigned k;

    for (k = 0; k <= levels; k++) {
        c->larr[k] = apr_atomic_read64(&cs->level_arrived[k]);
    }
    c->responses = qc_cls_sum(cs->level_responses);
    c->bytes = qc_cls_sum(cs->level_bytes);
    for (k = 1; k <= levels; k++) {
        c->lresp[k] = apr_atomic_read64(&cs->level_responses[k]);
        c->lbytes[k] = apr_atomic_read64(&cs->level_bytes[k]);
    }
    for (k = 0; k < QC_BUCKETS; k++) {
        c->buckets[k] = apr_atomic_read64(&cs->bucket_arrived[k]);
    }
    for (k = 0; k < levels && k < QC_MAX_TREES; k++) {
        c->would[k] = apr_atomic_read64(&cs->would_arrived[k]);
    }
}

/* Counters only grow; a smaller value means a new segment: no rate. */
static double qc_rate(apr_uint64_t now, apr_uint64_t prev, double dt)
{
    return now >= prev && dt > 0.0 ? (double)(now - prev) / dt : 0.0;
}

static void qc_sense_class(qc_ctl_class_t *cl, qc_class_shm_t *cs,
                           unsigned levels, double dt)
{
    qc_ctl_counts_t now;
    unsigned k;

    qc_ctl_read_counts(cs, levels, &now);
    cl->r = 0.0;
    for (k = 0; k <= levels; k++) {
        cl->r_tree[k] = qc_rate(now.larr[k], cl->prev.larr[k], dt);
        cl->r += cl->r_tree[k];
    }
    cl->r_rej = cl->r_tree[0];
    for (k = 0; k < levels && k < QC_MAX_TREES; k++) {
        cl->r_would[k] = qc_rate(now.would[k], cl->prev.would[k], dt);
    }
    cl->r_served = qc_rate(now.responses, cl->prev.responses, dt);
    cl->w = qc_rate(now.bytes, cl->prev.bytes, dt);
    for (k = 1; k <= levels; k++) {
        cl->r_served_tree[k] = qc_rate(now.lresp[k], cl->prev.lresp[k], dt);
        if (now.lresp[k] >= cl->prev.lresp[k]
            && now.lbytes[k] >= cl->prev.lbytes[k]) {
            double *n = &cl->xn[k - 1], *b = &cl->xb[k - 1];

            *n = QC_XBAR_KEEP * *n + (double)(now.lresp[k]
                                              - cl->prev.lresp[k]);
            *b = QC_XBAR_KEEP * *b + (double)(now.lbytes[k]
                                              - cl->prev.lbytes[k]);
            if (*n >= 1.0) {
                cl->xbar[k - 1] = *b / *n;
            }
        }
    }
    qc_spread_update(&cl->spread, now.buckets, cl->r * dt);
    cl->prev = now;
}

void qc_ctl_sense(qc_ctl_t *ctl, double dt)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    unsigned i, j;
    int k;

    apr_uint64_t surged = apr_atomic_read64(&cfg->shm->surge_arrived);

    ctl->tick.surge_r = qc_rate(surged, ctl->tick.surge_seen, dt);
    ctl->tick.surge_seen = surged;
    ctl->tick.upper_rate = 0.0;
    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            qc_sense_class(cl, &cfg->vs[i].slot->cls[k], cfg->vs[i].levels,
                           dt);
            for (j = 2; !cfg->vs[i].fixed && j <= cfg->vs[i].levels; j++) {
                ctl->tick.upper_rate += cl->r_tree[j];
            }
        }
    }
}

/* Did a quantity change by half or more since the last period, at or
 * above `least` (below it, noise)? */
int qc_jumped(double now, double prev, double least)
{
    double hi = now > prev ? now : prev;

    return hi > 0.0 && (now > prev ? now - prev : prev - now) >= 0.5 * hi
           && hi >= least;
}

void qc_ctl_classify(qc_ctl_t *ctl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    qc_reading_t *rd = &ctl->reading, last = *rd;
    double u = ctl->u_measured;
    unsigned i, j;
    int k;

    rd->known = u >= 0.0;
    rd->saturated = qc_u_capped(u);
    rd->fresh = !qc_u_capped(ctl->prev_u);
    rd->lagging = ctl->tick.valved || ctl->tick.valved_last;
    rd->served = rd->w = rd->r_rej = 0.0;
    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            const qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            for (j = 1; j <= cfg->vs[i].levels; j++) {
                rd->served += cl->r_served_tree[j];
            }
            rd->w += cl->w;
            rd->r_rej += cl->r_rej;
        }
    }
    rd->jumped = qc_jumped(rd->w, last.w, 1.0)
                 || qc_jumped(rd->served, last.served, 1.0)
                 || qc_jumped(rd->r_rej, last.r_rej, 1.0);
}

/*
 * A period in which the kernel turned connection attempts away at a
 * full accept queue shows only the load httpd let in: whatever the
 * sensor read is a lower bound of the load, so the reading is saturated
 * (a bound, no measure) for the decisions, as a capped one is.  httpd
 * turns clients away with its CPU half idle when its connection slots
 * are the limit (the event MPM stops accepting at its connection limit;
 * mod_cgid's daemon forks one child at a time), and a loop on the
 * sensor alone then raises the trees while clients wait at the door.
 * The value stays the sensor's: the fit has read the period as
 * measured (qc_ctl_update_model), and the background's estimates and
 * the calibration (qc_whose) take it for what was let in.
 */
void qc_ctl_censor(qc_ctl_t *ctl)
{
    qc_reading_t *rd = &ctl->reading;

    rd->turned_away = rd->known && ctl->cp.attempts >= 0.0
                      && ctl->cp.drops > 0.0
                      && ctl->u_measured < QC_U_UNCAPPED;
    rd->saturated = rd->saturated || rd->turned_away;
}

/*
 * Requests decided so far, of every host a loop drives, at a tree above
 * its lowest: what the valve (qc_ctl_valve) can still degrade.
 */
double qc_ctl_upper_arrivals(qc_ctl_t *ctl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double n = 0.0;
    unsigned i, j;
    int k;

    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES && !cfg->vs[i].fixed; k++) {
            qc_class_shm_t *cs = &cfg->vs[i].slot->cls[k];

            for (j = 2; j <= cfg->vs[i].levels; j++) {
                n += (double)apr_atomic_read64(&cs->level_arrived[j]);
            }
        }
    }
    return n;
}

/* Host i's arrivals/s of classes 0 to `upto` (premium, then basic)
 * since its counters were last read, at the period's start, over the
 * `seconds` since then. */
double qc_ctl_host_rate(qc_ctl_t *ctl, unsigned i, int upto,
                        double seconds)
{
    const qc_ctl_vs_t *vs = &ctl->cfg->vs[i];
    qc_ctl_counts_t now;
    double r = 0.0;
    unsigned j;
    int k;

    for (k = 0; k <= upto; k++) {
        const qc_ctl_class_t *cl = qc_cls(ctl, i, k);

        qc_ctl_read_counts(&vs->slot->cls[k], vs->levels, &now);
        for (j = 0; j <= vs->levels; j++) {
            r += qc_rate(now.larr[j], cl->prev.larr[j], seconds);
        }
    }
    return r;
}

/*
 * Arrivals the counters have not seen yet: the growth of httpd's accept
 * queues over the period (qc_backlog.h); their shrinking is the same
 * arrivals counted late, in a burst.  Every class waits in the same
 * queues in the order it came, so each is scaled alike, rejections too:
 * the waiting connections will be decided at the levels in force.  The
 * completions the model learns from stay as counted.
 */
void qc_ctl_add_queued(qc_ctl_t *ctl, long queued, double dt)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double n = 0.0, s;
    long prev = ctl->queued;
    unsigned i, j;
    int k;

    ctl->queued = queued;
    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            n += qc_cls(ctl, i, k)->r * dt;
        }
    }
    if (queued < 0 || prev < 0 || n < 1.0) {
        return;
    }
    s = (n + (double)(queued - prev)) / n;
    if (s > QC_CTL_QUEUE_SCALE) {
        s = QC_CTL_QUEUE_SCALE;
    }
    else if (s < 1.0 / QC_CTL_QUEUE_SCALE) {
        s = 1.0 / QC_CTL_QUEUE_SCALE;
    }
    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            cl->r *= s;
            cl->r_rej *= s;
            for (j = 0; j <= cfg->vs[i].levels; j++) {
                cl->r_tree[j] *= s;
            }
            for (j = 0; j < cfg->vs[i].levels && j < QC_MAX_TREES; j++) {
                cl->r_would[j] *= s;
            }
        }
    }
}

/*
 * Whose load this period's reading shows (QC_CALIB_*), once the model's
 * load of what was decided (u_model) and the drain are known: a drain's
 * backlog's as much as this period's; a reading the kernel censored
 * (qc_ctl_censor) below the sensor's cap is no measure of the decided
 * load, and k searched up on it would price every request as if the
 * resource were full while it idles (a premium class that fits would
 * lose its top tree; a capped one is searched on, as ever); and a
 * period whose decided load jumped (a step) is read by a sensor that
 * still lags it: a fall says nothing of the scale, a rise bounds it
 * from below.
 */
static int qc_whose(const qc_ctl_t *ctl, double u_model)
{
    if (ctl->sat.draining || ctl->sat.drained || ctl->tick.valved_last
        || (ctl->reading.turned_away && !qc_u_capped(ctl->u_measured))) {
        return QC_CALIB_OLD;
    }
    if (ctl->tick.valved) {
        /* what it decided before the valve was still queued */
        return QC_CALIB_RISING;
    }
    if (!qc_jumped(u_model, ctl->prev_u_model, QC_CALIB_MIN_LOAD)) {
        return QC_CALIB_OWN;
    }
    return u_model > ctl->prev_u_model ? QC_CALIB_RISING : QC_CALIB_OLD;
}

void qc_ctl_classify_load(qc_ctl_t *ctl, double u_model)
{
    ctl->reading.whose = qc_whose(ctl, u_model);
}
