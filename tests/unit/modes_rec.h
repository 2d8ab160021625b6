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
    qc_be_why_t why[MAXP];
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

/*
 * A period's mode and what chose it, as the arguments of rec_find and
 * rec_expect take them: the steps doc/control.md's transition table
 * names.  REC_ANY matches any reason.
 */
#define REC_ANY QC_BE_NWHYS
#define TRACKING QC_BE_TRACK, QC_BE_WHY_MODEL
#define DRAINING QC_BE_TRACK, QC_BE_WHY_BACKLOG
#define RESTARTED QC_BE_TRACK, QC_BE_WHY_UNSATURATED
#define TRACK_ANY QC_BE_TRACK, REC_ANY
#define LOWEST_SATURATED QC_BE_LOWEST, QC_BE_WHY_SATURATED
#define LOWEST_VALVE QC_BE_LOWEST, QC_BE_WHY_VALVE
#define LOWEST_TEST QC_BE_LOWEST, QC_BE_WHY_TEST
#define LOWEST_ANY QC_BE_LOWEST, REC_ANY
#define BACKGROUND_ALONE QC_BE_BACKGROUND, QC_BE_WHY_ALONE
#define BACKGROUND_REAL QC_BE_BACKGROUND, QC_BE_WHY_REAL
#define BACKGROUND_ANY QC_BE_BACKGROUND, REC_ANY

/* The first period from `from` on that is step `to` right after step
 * `prev`; -1 none. */
int rec_find(const rec_t *rc, int from, qc_be_mode_t prev_mode,
             unsigned prev_why, qc_be_mode_t to_mode, unsigned to_why);

/* Periods from..to (inclusive) read saturated (want 1) or not. */
void rec_saturated(const rec_t *rc, int from, int to, int want);

/* Every period from `from` on is in `mode`. */
void rec_stays(const rec_t *rc, int from, qc_be_mode_t mode);

/* The first transition from step `prev` to step `to`, which must come
 * after period `after`; prints the run. */
int rec_expect(const rec_t *rc, int after, qc_be_mode_t prev_mode,
               unsigned prev_why, qc_be_mode_t to_mode, unsigned to_why);

#endif /* MODES_REC_H */
