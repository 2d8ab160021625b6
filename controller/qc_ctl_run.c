/* Licensed under the Apache License, Version 2.0. */

/*
 * The controller's main loop: the timer that runs the periods and the
 * ticks within them, and the readings each needs (sensors, queues,
 * connection counters, power).  It calls the stages (qc_controller.c)
 * and the output (qc_ctl_io.c); nothing calls back into it.
 */

#include <errno.h>
#include <math.h>
#include <time.h>
#include <unistd.h>

#include "apr_atomic.h"
#include "apr_time.h"

#include "qc_controller.h"
#include "qc_ctl_capacity.h"
#include "qc_netstat.h"
static double qc_mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double qc_cpu_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Ticks in a period: as many as fit QC_CTL_TICK_MIN, at most
 * QC_CTL_TICKS. */
static unsigned qc_ticks(double period)
{
    unsigned n = (unsigned)(period / QC_CTL_TICK_MIN);

    return n < 1 ? 1 : n > QC_CTL_TICKS ? QC_CTL_TICKS : n;
}

/* The period's power draw, for the status page (qc_power.h). */
static void qc_power_publish(qc_ctl_config_t *cfg, double now)
{
    double w = qc_power_sample(&cfg->power, now);

    apr_atomic_set32(&cfg->shm->power_source,
                     (apr_uint32_t)cfg->power.source);
    apr_atomic_set64(&cfg->shm->power_bits, qc_dbits(w < 0.0 ? 0.0 / 0.0
                                                     : w));
}

/* A tick's readings for the capacity estimate; returns the accept
 * queues' length (< 0 unknown), which the period's step uses too. */
static long qc_capacity_read(qc_ctl_t *ctl, double dt, qc_netstat_t *prev)
{
    qc_netstat_t cur;
    double attempts = -1.0, drops = -1.0;
    long limit, queued = qc_backlog_read_limit(&ctl->cfg->backlog, &limit);

    if (qc_netstat_read(&cur, NULL, NULL) == 0) {
        qc_netstat_delta(prev, &cur, &attempts, &drops);
        *prev = cur;
    }
    qc_ctl_capacity_tick(ctl, dt, queued, limit, attempts, drops);
    return queued;
}

/*
 * What the link has yet to send (the send queues of httpd's
 * connections, bytes) and the bytes/s it sends now, into the period's
 * input.  Only where the link is the one resource: with others the
 * utilization read may be theirs.
 */
static void qc_link_queue(qc_ctl_config_t *cfg, qc_ctl_input_t *in)
{
    const qc_sensor_t *s = &cfg->sensors[0];

    if (cfg->nsensors == 1 && s->bits_per_s > 0.0 && s->cap_now > 0.0) {
        in->sendq_bytes = (double)qc_backlog_read_sendq(&cfg->backlog);
        in->link_bps = s->cap_now / 8.0;
    }
}

/* The period's step reads the slow sensors, not the ticks' copy, so
 * that its input spans the whole period (dt seconds, to now). */
static void qc_period_step(qc_ctl_t *ctl, double now, double dt,
                           long queued)
{
    qc_ctl_config_t *cfg = ctl->cfg;
    qc_ctl_input_t in;

    in = qc_ctl_input(dt, qc_sensors_max(cfg->sensors, cfg->nsensors, now),
                      queued, apr_time_now());
    qc_link_queue(cfg, &in);
    in.rescale = qc_sensors_rescale(cfg->sensors, cfg->nsensors);
    qc_ctl_step(ctl, in);
}

/*
 * The timer: a tick every period / qc_ticks(), the period's step at
 * every last one.  The ticks read a copy of the sensors, so that the
 * period's own reading spans the whole period.
 */
int qc_ctl_run(qc_ctl_t *ctl, volatile sig_atomic_t *stop, pid_t parent)
{
    qc_ctl_config_t *cfg = ctl->cfg;
    qc_sensor_t fast[QC_CTL_MAX_SENSORS];
    unsigned ticks = qc_ticks(cfg->period), tick = 0;
    double tick_len = cfg->period / ticks;
    double last = qc_mono(), next = last, last_tick = last, cpu = 0.0;
    qc_netstat_t counters;
    long queued;

    if (qc_netstat_read(&counters, NULL, NULL) != 0) {
        counters.have = 0;
    }
    memcpy(fast, cfg->sensors, sizeof(fast));
    qc_sensors_max(cfg->sensors, cfg->nsensors, last);    /* prime */
    qc_sensors_max(fast, cfg->nsensors, last);
    while (!*stop) {
        struct timespec ts;
        double now, cpu0;

        next += tick_len;
        ts.tv_sec = (time_t)next;
        ts.tv_nsec = (long)((next - (double)ts.tv_sec) * 1e9);
        if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)
            == EINTR || *stop) {
            continue;
        }
        if (getppid() != parent) {
            return 0;           /* httpd is gone; so are we */
        }
        cpu0 = qc_cpu_seconds();
        now = qc_mono();
        queued = qc_capacity_read(ctl, now - last_tick, &counters);
        if (++tick < ticks) {
            qc_ctl_tick(ctl, now - last_tick,
                        qc_sensors_max(fast, cfg->nsensors, now));
            last_tick = now;
            cpu += qc_cpu_seconds() - cpu0;
            continue;
        }
        tick = 0;
        /* The tick that ends the period reads like any other, so that
         * the fast sensors span each tick alike. */
        qc_ctl_tick(ctl, now - last_tick,
                    qc_sensors_max(fast, cfg->nsensors, now));
        last_tick = now;
        qc_period_step(ctl, now, now - last, queued);
        last = now;
        qc_power_publish(cfg, now);
        apr_atomic_set64(&cfg->shm->period_cpu_ns, (apr_uint64_t)
                         ((cpu + qc_cpu_seconds() - cpu0) * 1e9));
        cpu = 0.0;
        if (now - next > tick_len) {
            next = now;         /* overslept (suspend, overload): resync */
        }
    }
    return 0;
}
