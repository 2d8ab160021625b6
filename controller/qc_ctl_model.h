/* Licensed under the Apache License, Version 2.0. */

/* The fit, qc_ctl_model.c: what the period's reading teaches (not for
 * the module). */

#ifndef QC_CTL_MODEL_H
#define QC_CTL_MODEL_H

#include "qc_ctl_types.h"

void qc_ctl_update_model(qc_ctl_t *ctl, double dt);
void qc_ctl_model_from_rls(qc_ctl_t *ctl);

#endif /* QC_CTL_MODEL_H */
