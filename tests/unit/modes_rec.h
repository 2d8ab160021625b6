/* Licensed under the Apache License, Version 2.0. */

/*
 * What the mode tests (test_modes_cpu.c, test_modes_link.c) record of a
 * run, period by period, and assert on: the mode the controller
 * published in the segment (be_mode, the status page's and QosCtlLog's)
 * with the state it was chosen on.
 */

#ifndef MODES_REC_H
#define MODES_REC_H

#include "qc_controller.h"
#include "cpu_plant.h"

#define MAXP 120

typedef struct {
    int n;
    qc_be_mode_t mode[MAXP];
    const char *why[MAXP];
    double u[MAXP], m[MAXP];
    int saturated[MAXP], draining[MAXP];
    int valved[MAXP];           /* the valve fired within the period */
    double refused[MAXP];       /* share of the period's arrivals */
    double wait[MAXP];          /* refusing's measure, s (< 0 none) */
    apr_uint64_t arrived, rejected;
} rec_t;

/* The period just stepped, which read u. */
void rec_period(rec_t *rc, const rig_t *g, double u);
void rec_print(const char *what, const rec_t *rc);

/* The first period from `from` on whose mode is `to` right after
 * `prev`'s; -1 none. */
int rec_find(const rec_t *rc, int from, qc_be_mode_t prev, qc_be_mode_t to);

/* Periods from..to (inclusive) read saturated (want 1) or not. */
void rec_saturated(const rec_t *rc, int from, int to, int want);

/* Every period from `from` on is in `mode`. */
void rec_stays(const rec_t *rc, int from, qc_be_mode_t mode);

/* The first transition from `prev` to `to`, which must come after
 * period `after`, chosen for `why` (NULL: any reason); prints the run. */
int rec_expect(const rec_t *rc, int after, qc_be_mode_t prev,
               qc_be_mode_t to, const char *why);

#endif /* MODES_REC_H */
