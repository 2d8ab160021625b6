/* Licensed under the Apache License, Version 2.0. */

/*
 * When the module stops trusting the controller.  The request path
 * (fail open) and the status page (what it reports) must agree, so the
 * rule is written here once.
 */

#ifndef QC_HEARTBEAT_H
#define QC_HEARTBEAT_H

#include "qc_atomic.h"

#include "mod_qosctl.h"

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

#endif /* QC_HEARTBEAT_H */
