/* Licensed under the Apache License, Version 2.0. */

/*
 * When the module stops trusting the controller.  The request path
 * (fail open) and the status page (what it reports) must agree, so the
 * rule is written here once.
 */

#ifndef QC_HEARTBEAT_H
#define QC_HEARTBEAT_H

#include <time.h>

#include "qc_atomic.h"

#include "qc_module.h"

/*
 * Whether the controller has been silent too long at time now, so that
 * the actuator fails open: no heartbeat for stale_after (three periods),
 * counted from the last configuration load when that is later, so that
 * a new generation gives its controller time to start.  *silence (if
 * not NULL): for how long.
 */
static APR_INLINE int qc_controller_stale(apr_time_t now,
                                          apr_interval_time_t *silence)
{
    apr_time_t beat = (apr_time_t)qc_load64(&qc_rt.shm->heartbeat);
    apr_time_t since = (apr_time_t)qc_load64(
                           &qc_rt.shm->config_time);
    apr_interval_time_t quiet = now - (beat > since ? beat : since);

    if (silence) {
        *silence = quiet;
    }
    return quiet > qc_rt.stale_after;
}

/*
 * How long the heartbeat may stand still before the controller is taken
 * for hung and replaced.  The request path has failed open after three
 * periods already, so nothing is urgent, while a replacement loses what
 * the controller learned since the state file was last written: wait
 * far beyond one slow period, an overloaded machine or an admin's brief
 * SIGSTOP (the shaped-link test stops one for about 4 s).
 */
#define QC_HUNG_PERIODS  10
#define QC_HUNG_MIN_SEC  15.0

/* QC_HUNG_MIN_SEC, or less in the tests (qc_watch.c) */
extern double qc_hung_min_sec;

static APR_INLINE double qc_hung_after(double period)
{
    return QC_HUNG_PERIODS * period > qc_hung_min_sec
           ? QC_HUNG_PERIODS * period : qc_hung_min_sec;
}

/* Microseconds of CLOCK_MONOTONIC: the same clock in every process of
 * the machine, and one that no admin's date(1) moves. */
static APR_INLINE apr_uint64_t qc_mono_usec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (apr_uint64_t)ts.tv_sec * 1000000u
           + (apr_uint64_t)ts.tv_nsec / 1000u;
}

/* The supervisor's sign of life for httpd's parent, which restarts it
 * when it stands still (qc_supervise.c, qc_monitor). */
static APR_INLINE void qc_supervisor_beat(qc_shm_t *q)
{
    apr_atomic_set64(&q->supervisor_beat, qc_mono_usec());
}

#endif /* QC_HEARTBEAT_H */
