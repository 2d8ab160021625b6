/* Licensed under the Apache License, Version 2.0. */

/* The period's decisions, qc_ctl_policy.c (not for the module). */

#ifndef QC_CTL_POLICY_H
#define QC_CTL_POLICY_H

#include "qc_ctl_types.h"

void qc_ctl_policy(qc_ctl_t *ctl);

#endif /* QC_CTL_POLICY_H */
