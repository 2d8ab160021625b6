/* Licensed under the Apache License, Version 2.0. */

/* Sensing, qc_ctl_sense.c: the period's counters become rates, and its
 * reading is classified (not for the module). */

#ifndef QC_CTL_SENSE_H
#define QC_CTL_SENSE_H

#include "qc_ctl_types.h"

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
/* The reading the decisions take, after the fit has read the period. */
void qc_ctl_censor(qc_ctl_t *ctl);
void qc_ctl_add_queued(qc_ctl_t *ctl, long queued, double dt);
double qc_ctl_upper_arrivals(qc_ctl_t *ctl);
double qc_ctl_host_rate(qc_ctl_t *ctl, unsigned i, int upto,
                        double seconds);

#endif /* QC_CTL_SENSE_H */
