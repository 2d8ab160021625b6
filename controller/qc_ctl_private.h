/* Licensed under the Apache License, Version 2.0. */

/*
 * What the controller's own files share (not for the module).  A period
 * is split into sensing (qc_ctl_sense.c: counters to rates), the fit
 * (qc_ctl_model.c), the decisions (qc_ctl_policy.c and the files of
 * qc_decide.h: a pure function of those rates, the sensor reading
 * and the loop state) and output (qc_ctl_io.c: publishing, the log,
 * the state file); qc_controller.c runs them in that order, and
 * qc_ctl_run.c, the main loop, times the periods and the ticks.
 */

#ifndef QC_CTL_PRIVATE_H
#define QC_CTL_PRIVATE_H

#include <string.h>

#include "qc_controller.h"

static APR_INLINE qc_ctl_class_t *qc_cls(qc_ctl_t *ctl, unsigned i, int k)
{
    return &ctl->cls[i * QC_NCLASSES + k];
}

/* A unit as qc_sensor_unit names it, as the segment keeps it. */
static APR_INLINE apr_uint32_t qc_ctl_unit_code(const char *unit)
{
    return !strcmp(unit, "bit/s") ? QC_SHM_UNIT_BITS
           : !strcmp(unit, "cpus") ? QC_SHM_UNIT_CPUS : QC_SHM_UNIT_NONE;
}

/* qc_ctl_sense.c */
void qc_ctl_read_counts(qc_class_shm_t *cs, unsigned levels,
                        qc_ctl_counts_t *c);
void qc_ctl_sense(qc_ctl_t *ctl, double dt);
/* The period's reading classified (qc_reading_t), after qc_ctl_sense. */
void qc_ctl_classify(qc_ctl_t *ctl);
/* ...and whose load it shows, for the calibration (reading.whose). */
void qc_ctl_classify_load(qc_ctl_t *ctl, double u_model);
/* Did a quantity change by half or more since the last period, at or
 * above `least` (below it, noise)? */
int qc_jumped(double now, double prev, double least);
void qc_ctl_add_queued(qc_ctl_t *ctl, long queued, double dt);
double qc_ctl_upper_arrivals(qc_ctl_t *ctl);

/*
 * qc_ctl_dry.c, under QosCtl LogOnly: after the fit, the readings and
 * arrivals the would-be levels would have given, for the decisions;
 * after them, the measured ones back.
 */
void qc_ctl_dry_plant(qc_ctl_t *ctl, double dt);
void qc_ctl_dry_restore(qc_ctl_t *ctl);
/* The reading the loops decided on: the virtual one under LogOnly. */
double qc_ctl_u_decided(const qc_ctl_t *ctl);

/* The background the loops use, from the fit: its intercept may go below
 * 0 to absorb what the linear costs miss; as background load it is 0
 * then (a negative one raised the targets over the bound: 0.98 for a
 * bound of 0.6). */
static APR_INLINE double qc_ctl_fit_d(const qc_ctl_t *ctl)
{
    double d = qc_rls_d(&ctl->rls);

    return d > 0.0 ? d : 0.0;
}

/* qc_ctl_model.c */
void qc_ctl_update_model(qc_ctl_t *ctl);
void qc_ctl_model_from_rls(qc_ctl_t *ctl);

/* qc_ctl_policy.c; the valve in qc_ctl_besteffort.c */
void qc_ctl_policy(qc_ctl_t *ctl);
int qc_ctl_valve(qc_ctl_t *ctl, double dt, double u_tick, int surged);
double qc_ctl_full_ratio(qc_ctl_t *ctl);

/*
 * qc_ctl_rescale.c: the resource's capacity changed by 1/s (a shaper
 * turned down to a quarter, s = 4): the model's costs and background,
 * the readings kept and the load decided are s times what they were,
 * the capacity estimates 1/s times, and no level is known to saturate.
 * Unscaled, the fit took the jump of every reading at unchanged
 * arrivals for background load (bench/cluster's cut of a backend from
 * 100 to 25 Mbit/s: d 0.81, the costs 0, for 20 periods).
 */
void qc_ctl_rescale(qc_ctl_t *ctl, double s);

/* qc_ctl_capacity.c */
void qc_ctl_capacity_init(qc_ctl_t *ctl);
void qc_ctl_capacity_period(qc_ctl_t *ctl, double dt);
/* The period's arrivals/s (the accept queues' growth among them),
 * completions/s and completed bytes/s, every host and class. */
void qc_ctl_totals(const qc_ctl_t *ctl, double *arrived, double *done,
                   double *bytes);
/* Connections/s that came while the accept queues filled, when the
 * kernel has dropped attempts this period; else < 0. */
double qc_ctl_offered_conns(const qc_ctl_t *ctl);
/* The resource shrank by s (qc_ctl_rescale): so did the estimate. */
void qc_ctl_capacity_rescale(qc_ctl_t *ctl, double s);

/* qc_ctl_io.c */
void qc_ctl_publish(qc_ctl_t *ctl, apr_int64_t now_us);
void qc_ctl_publish_levels(qc_ctl_t *ctl);
void qc_ctl_history_append(qc_ctl_t *ctl, apr_int64_t now_us);
void qc_ctl_log_init(qc_ctl_t *ctl, apr_pool_t *p);
void qc_ctl_log_period(qc_ctl_t *ctl, apr_int64_t now_us);
void qc_ctl_save_state(qc_ctl_t *ctl);

#endif /* QC_CTL_PRIVATE_H */
