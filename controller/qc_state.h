/* Licensed under the Apache License, Version 2.0. */

/*
 * The state file (QosCtlStateFile) as the controller reads it back: the
 * fit, one line of qc_rls_format(), and optionally a second line
 * "capacity <cap> <unit>" of the one sensor it was fitted on.  All or
 * nothing: a file with anything wrong is not used at all, so that the
 * model never starts half from the file and half from the prior.  Pure.
 */

#ifndef QC_STATE_H
#define QC_STATE_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "qc_rls.h"

/* Longest state file: both lines and their ends of line. */
#define QC_STATE_MAX (QC_RLS_LINE_MAX + 64)

/* Longest unit name, as qc_sensor_unit() gives them ("bit/s"). */
#define QC_STATE_UNIT_MAX 15

/*
 * The capacity a fit was learnt at, bounded by what a machine can have,
 * since the first period rescales the model by the ratio of the capacity
 * read to this one: a capacity of 1e308 would rescale every cost to its
 * ceiling.  CPUs: a cgroup quota of one millisecond per second (the
 * kernel's smallest) up to Linux's largest NR_CPUS.  A link: one bit/s
 * (no request fits below) up to the largest QosCtlResource link rate.
 * The fit's own numbers (costs, counts, averages) are bounded by its
 * reader, qc_rls_read().
 */
#define QC_STATE_CPUS_MIN 1e-3
#define QC_STATE_CPUS_MAX 8192.0
#define QC_STATE_BITS_MIN 1.0
#define QC_STATE_BITS_MAX 1e15

typedef struct {
    qc_rls_t rls;
    double capacity;                    /* 0: no capacity line */
    char unit[QC_STATE_UNIT_MAX + 1];   /* "" with no capacity line */
} qc_state_t;

/*
 * Read the n bytes of a state file.  Returns NULL, with *st filled; or
 * the reason the file is not used, written into why (len bytes; 160
 * suffice) and returned, *st left untouched.  An empty file (n == 0,
 * as the supervisor creates it) is a reason too: "empty".
 */
const char *qc_state_parse(const char *text, size_t n, qc_state_t *st,
                           char *why, size_t len);

/*
 * Whether the controller, running as uid ctl_uid, may trust the file
 * whose fstat() is st: a regular file owned by root or by ctl_uid that
 * neither its group nor other users may write.  Any other user who can
 * write it chooses the model the server is steered by.  Returns NULL,
 * or the reason, written into why (len bytes; 120 suffice).
 */
const char *qc_state_owner(const struct stat *st, uid_t ctl_uid,
                           char *why, size_t len);

#endif /* QC_STATE_H */
