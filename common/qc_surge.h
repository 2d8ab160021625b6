/* Licensed under the Apache License, Version 2.0. */

/*
 * The surge guard (doc/control.md, "The surge guard"): the controller
 * learns a level's effect a period late, and a step of load met at full
 * quality queues a period of it on the resource.  Each period the
 * controller publishes the arrival rate past which the resource
 * saturates at the levels it leaves in force (its rate over its
 * utilization), and the request path counts every request it decides on
 * for a host a loop drives.  A request past that rate since the period
 * began, with some slack, is served from its host's lowest tree, and the
 * controller's next tick takes best effort there (qc_ctl_valve).
 * Nothing is ever rejected by it.
 *
 * Pure: both sides include it; no I/O.
 */

#ifndef QC_SURGE_H
#define QC_SURGE_H

#include <apr.h>

/* The guard's rate is at least this many times the period's arrivals:
 * near the bound r / u is close to r, and arrivals that an accept
 * queue held back come counted in a burst. */
#define QC_SURGE_RATIO_MIN 1.5
/* ...and at most this many: the reading of a nearly idle resource is
 * mostly noise and background. */
#define QC_SURGE_RATIO_MAX 20.0
/* No guard after a period of fewer requests: r / u of a few is noise,
 * and an idle start has no rate. */
#define QC_SURGE_LEAST 10.0
/* Slack: this many seconds of the rate, and at least this many
 * requests. */
#define QC_SURGE_SLACK_SECONDS 0.1
#define QC_SURGE_SLACK_LEAST 16.0

/*
 * The rate (requests/s) past which a period's arrivals, r requests/s
 * over `period` seconds at utilization u (< 0 or NaN: unknown), would
 * saturate the resource; 0: no guard.
 */
static APR_INLINE double qc_surge_rate(double r, double u, double period)
{
    double ratio;

    if (!(r * period >= QC_SURGE_LEAST) || !(u >= 0.0)) {
        return 0.0;
    }
    ratio = u > 1.0 / QC_SURGE_RATIO_MAX ? 1.0 / u : QC_SURGE_RATIO_MAX;
    return r * (ratio > QC_SURGE_RATIO_MIN ? ratio : QC_SURGE_RATIO_MIN);
}

/* Requests the guard lets through before its rate starts to count. */
static APR_INLINE double qc_surge_slack(double rate)
{
    double s = rate * QC_SURGE_SLACK_SECONDS;

    return s > QC_SURGE_SLACK_LEAST ? s : QC_SURGE_SLACK_LEAST;
}

/*
 * The base a tick of the controller leaves, t seconds after the rate
 * was published and seq requests counted (publishing itself: t = 0 and
 * no base yet, HUGE_VAL): what the resource did not do is not done
 * later, so the room the guard leaves (base + rate t - seq) is at most
 * the slack at every tick.  Banked over a light
 * stretch, it let a step that came late in a period pass at full
 * quality as many requests as the whole stretch would have (in the
 * simulator, 2 s of a PHP site's work queued in 0.3 s).
 */
static APR_INLINE double qc_surge_rebase(double base, double seq,
                                         double rate, double t)
{
    double cap = seq + qc_surge_slack(rate) - rate * (t > 0.0 ? t : 0.0);

    return cap < base ? cap : base;
}

/*
 * Whether the request numbered seq (the count of decided requests
 * before it) comes past the guard: base is the count when the rate was
 * published plus the slack, t the seconds since then.
 */
static APR_INLINE int qc_surge_past(double seq, double base, double rate,
                                double t)
{
    return rate > 0.0 && seq - base > rate * (t > 0.0 ? t : 0.0);
}

#endif /* QC_SURGE_H */
