/* Licensed under the Apache License, Version 2.0. */

/*
 * Measured utilization closes the loop.  The model (qc_rls.h) says how
 * the requests of each host and class would load the bottleneck at
 * each level; it can be off by any factor (a prior 10x wrong, a state
 * file from another site, costs a fit cannot separate yet).  The
 * calibration k is the factor that makes the model agree with the
 * sensor: the loops hold k times the model at their targets, so the sum
 * of what they hold is the measured utilization, and the model only
 * splits it between hosts and classes and says where each level lies.
 *
 * While the sensor is saturated it reads a lower bound of the load:
 * k is raised to at least what the reading implies and, when
 * saturation persists although the loops expected their last decisions
 * to fit the bound, with nothing decided earlier left to drain, grows
 * geometrically each period (the excess is unknown: search for it), so
 * quality goes down within a few periods whatever the model says.
 *
 * Pure: no I/O, state owned by the caller.
 */

#ifndef QC_CALIB_H
#define QC_CALIB_H

/* Range of k: a prior off by 10x either way is inside it. */
#define QC_CALIB_MAX 64.0
#define QC_CALIB_MIN (1.0 / QC_CALIB_MAX)

/* Model load (utilization) below which a period does not measure k,
 * only bounds it from above (the requests load no more than the reading
 * leaves). */
#define QC_CALIB_MIN_LOAD 0.01

/* Weight of a period's reading in k (geometric mean with the old). */
#define QC_CALIB_WEIGHT 0.5

typedef struct {
    double k;
    unsigned saturated;         /* saturated periods in a row */
} qc_calib_t;

void qc_calib_init(qc_calib_t *c);

/* Whose load a reading shows (qc_calib_update's `reading`). */
#define QC_CALIB_OWN 0          /* this period's decisions' */
#define QC_CALIB_OLD 1          /* not only theirs: earlier work's as
                                 * much (a drain), or censored (clients
                                 * turned away): k stays */
#define QC_CALIB_RISING 2       /* a rise the sensor lags: a lower bound */

/*
 * One period.  u_measured: the sensor (< 0 unknown); u_model: the model
 * utilization of the requests decided in the period, uncalibrated;
 * d: the fitted background; reading: QC_CALIB_*; expected_over: the
 * last decisions were expected to exceed the bound (the loops are
 * acting on a saturation they know of: no search); saturated_at: the
 * reading from which the sensor is capped.  Returns the new k.
 */
double qc_calib_update(qc_calib_t *c, double u_measured, double u_model,
                       double d, int reading, int expected_over,
                       double saturated_at);

#endif /* QC_CALIB_H */
