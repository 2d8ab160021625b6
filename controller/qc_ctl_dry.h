/* Licensed under the Apache License, Version 2.0. */

/* QosCtl LogOnly's virtual plant, qc_ctl_dry.c (not for the
 * module). */

#ifndef QC_CTL_DRY_H
#define QC_CTL_DRY_H

#include "qc_ctl_types.h"

/*
 * qc_ctl_dry.c, under QosCtl LogOnly: after the fit, the readings and
 * arrivals the would-be levels would have given, for the decisions;
 * after them, the measured ones back.
 */
void qc_ctl_dry_plant(qc_ctl_t *ctl, double dt);
void qc_ctl_dry_restore(qc_ctl_t *ctl);
/* The reading the loops decided on: the virtual one under LogOnly. */
double qc_ctl_u_decided(const qc_ctl_t *ctl);

#endif /* QC_CTL_DRY_H */
