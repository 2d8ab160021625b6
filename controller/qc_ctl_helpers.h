/* Licensed under the Apache License, Version 2.0. */

/*
 * Small helpers on the controller's state that every stage may use: a
 * class's loop, a sensor's unit as the segment keeps it, the fit's
 * background.  Functions of no stage file (not for the module).
 */

#ifndef QC_CTL_HELPERS_H
#define QC_CTL_HELPERS_H

#include <string.h>

#include "qc_ctl_types.h"

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

/* The background the loops use, from the fit: its intercept may go below
 * 0 to absorb what the linear costs miss; as background load it is 0
 * then (a negative one raised the targets over the bound: 0.98 for a
 * bound of 0.6). */
static APR_INLINE double qc_ctl_fit_d(const qc_ctl_t *ctl)
{
    double d = qc_rls_d(&ctl->rls);

    return d > 0.0 ? d : 0.0;
}

#endif /* QC_CTL_HELPERS_H */
