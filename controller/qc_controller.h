/* Licensed under the Apache License, Version 2.0. */

/*
 * The controller process's work (paper §4-§6), free of httpd: every
 * period it turns the shared counters into rates, learns the model, runs
 * one PI loop per (guaranteed virtual server, class) plus one for best
 * effort, and publishes the levels the request path applies.  The
 * module builds a qc_ctl_config_t, forks, and calls qc_ctl_run(); tests
 * call qc_ctl_step() directly on a segment in ordinary memory.
 */

#ifndef QC_CONTROLLER_H
#define QC_CONTROLLER_H

#include <signal.h>
#include <sys/types.h>

#include "qc_ctl_types.h"

/*
 * Start from the state file's model if it holds one, else from the
 * initial model; levels start where the segment has them, so a
 * restarted controller picks up where its predecessor stopped.  A
 * state file saved at another capacity of the same kind of resource (a
 * link shaped otherwise since, a site moved to a larger cgroup) is
 * rescaled to this one at the first period (qc_sensors_rescale).
 */
void qc_ctl_init(qc_ctl_t *ctl, qc_ctl_config_t *cfg, apr_pool_t *p);

/*
 * What one period reads of the world, all of it: a step is a function
 * of this and the controller's state.
 */
typedef struct {
    double dt;                  /* seconds since the last step */
    double u;                   /* the sensors' reading, < 0 unknown */
    long queued;                /* httpd's accept queues (qc_backlog_read),
                                 * < 0 unknown */
    /* The bytes the link has yet to send (qc_backlog_read_sendq) and the
     * bytes/s it sends now; < 0 unknown, as when the resource is no
     * link.  A queue that does not drain while everyone is at the lowest
     * tree shows a load that tree cannot carry (doc/control.md,
     * "Overflow on a link"). */
    double sendq_bytes, link_bps;
    /* The resource's capacity changed by 1/rescale since the last step
     * (qc_sensors_rescale: a shaper turned down to a quarter, 4); 1 when
     * it did not. */
    double rescale;
    apr_int64_t now_us;         /* the wall clock, for the heartbeat */
} qc_ctl_input_t;

/* An input with no link queue and no change of capacity. */
static APR_INLINE qc_ctl_input_t qc_ctl_input(double dt, double u,
                                              long queued,
                                              apr_int64_t now_us)
{
    qc_ctl_input_t in;

    in.dt = dt;
    in.u = u;
    in.queued = queued;
    in.sendq_bytes = -1.0;
    in.link_bps = -1.0;
    in.rescale = 1.0;
    in.now_us = now_us;
    return in;
}

/* One period. */
void qc_ctl_step(qc_ctl_t *ctl, qc_ctl_input_t in);

/*
 * One tick within a period: dt seconds since the last tick, u_tick the
 * sensors' reading over it (< 0: unknown).  A jump of load that
 * saturates the resource sends best effort to the lowest tree at once,
 * published before it returns, instead of a period later.  Returns
 * nonzero when it did.  Optional: qc_ctl_step alone controls too.
 */
int qc_ctl_tick(qc_ctl_t *ctl, double dt, double u_tick);

/* Ticks per period (at most), and the shortest tick, in seconds. */
#define QC_CTL_TICKS 10
#define QC_CTL_TICK_MIN 0.05

/*
 * Run periods until *stop is set or the parent (pid) is gone.  Returns
 * 0 on a clean stop.
 */
int qc_ctl_run(qc_ctl_t *ctl, volatile sig_atomic_t *stop, pid_t parent);

#endif /* QC_CONTROLLER_H */
