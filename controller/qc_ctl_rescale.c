/* Licensed under the Apache License, Version 2.0. */

/* The bottleneck's capacity changed: everything counted in its units. */

#include <math.h>

#include "qc_ctl_capacity.h"
#include "qc_ctl_model.h"
#include "qc_ctl_rescale.h"

static void qc_scale_reading(double *u, double s)
{
    if (*u > 0.0) {
        *u *= s;
    }
}

void qc_ctl_rescale(qc_ctl_t *ctl, double s)
{
    if (!(s > 0.0) || !isfinite(s) || s == 1.0) {
        return;
    }
    qc_rls_scale(&ctl->rls, s);
    qc_ctl_model_from_rls(ctl);
    ctl->prev_u_model *= s;
    ctl->sat.backlog *= s;
    ctl->sat.excess *= s;
    qc_scale_reading(&ctl->sat.u_unsaturated, s);
    qc_scale_reading(&ctl->prev_u, s);
    qc_scale_reading(&ctl->floor_cur, s);
    qc_scale_reading(&ctl->floor_prev, s);
    /* A level that saturated the old capacity says nothing of the new. */
    qc_ctl_capacity_rescale(ctl, s);
}
