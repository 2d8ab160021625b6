/* Licensed under the Apache License, Version 2.0. */

/* Output, qc_ctl_io.c: publishing, the log, the state file (not for
 * the module). */

#ifndef QC_CTL_IO_H
#define QC_CTL_IO_H

#include "qc_ctl_types.h"

void qc_ctl_publish(qc_ctl_t *ctl, apr_int64_t now_us);
void qc_ctl_publish_levels(qc_ctl_t *ctl);
void qc_ctl_surge_rebase(qc_ctl_t *ctl, double dt);
void qc_ctl_history_append(qc_ctl_t *ctl, apr_int64_t now_us);
void qc_ctl_log_init(qc_ctl_t *ctl, apr_pool_t *p);
void qc_ctl_log_period(qc_ctl_t *ctl, apr_int64_t now_us);
void qc_ctl_save_state(qc_ctl_t *ctl);

#endif /* QC_CTL_IO_H */
