/* Licensed under the Apache License, Version 2.0. */

/* The capacity estimate of the period and of its ticks,
 * qc_ctl_capacity.c (not for the module). */

#ifndef QC_CTL_CAPACITY_H
#define QC_CTL_CAPACITY_H

#include "qc_ctl_types.h"

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

/*
 * The ticks' readings for the capacity estimate: dt seconds, the accept
 * queues' length and limit (qc_backlog_read_limit; < 0 unknown), the
 * connection attempts and drops over the tick (qc_netstat_delta; < 0
 * unknown).  The period's estimate is made in qc_ctl_step.
 */
void qc_ctl_capacity_tick(qc_ctl_t *ctl, double dt, long queued, long limit,
                          double attempts, double drops);

#endif /* QC_CTL_CAPACITY_H */
