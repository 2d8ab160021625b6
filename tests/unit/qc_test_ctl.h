/* Licensed under the Apache License, Version 2.0. */

/* The controller's period as the unit tests drive it. */

#ifndef QC_TEST_CTL_H
#define QC_TEST_CTL_H

#include "qc_controller.h"

/* A period with no link queue and no change of capacity. */
static inline void qc_test_step(qc_ctl_t *ctl, double dt, double u,
                                long queued, apr_int64_t now_us)
{
    qc_ctl_step(ctl, qc_ctl_input(dt, u, queued, now_us));
}

#endif /* QC_TEST_CTL_H */
