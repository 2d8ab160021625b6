/* Licensed under the Apache License, Version 2.0. */

/* A resource that changes size, qc_ctl_rescale.c (not for the
 * module). */

#ifndef QC_CTL_RESCALE_H
#define QC_CTL_RESCALE_H

#include "qc_ctl_types.h"

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

#endif /* QC_CTL_RESCALE_H */
