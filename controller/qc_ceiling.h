/* Licensed under the Apache License, Version 2.0. */

/*
 * A level the resource was just seen to saturate at caps how far the
 * loop may go up.  The model's shape can be off (a fit from readings
 * that lag their periods prices the lowest tree 3x too high), and a
 * calibration read at one level then puts the level for the bound too
 * high at another: the loop jumps to a level it saturated at a few
 * seconds before, and cycles.  Two readings bound the answer instead:
 * U is linear in m between trees, and a saturated reading is a lower
 * bound of the load, so the level for the target lies at most where
 * the line through (m_now, u_now) and (m_sat, u_sat) crosses it.
 * The ceiling lapses when a reading at or above it is unsaturated, when
 * the arrival rate moves, or after QC_CEILING_PERIODS.
 *
 * Pure: no I/O, state owned by the caller.
 */

#ifndef QC_CEILING_H
#define QC_CEILING_H

#define QC_CEILING_PERIODS 10
/* Arrival rates within this factor of the saturated period's. */
#define QC_CEILING_RATE 1.25

typedef struct {
    double m;           /* lowest level seen saturated; < 0: none */
    double u;           /* its reading */
    double r;           /* arrivals/s in that period */
    unsigned age;       /* periods since */
} qc_ceiling_t;

void qc_ceiling_init(qc_ceiling_t *c);

/* A period read u (< 0: unknown) at level m with r arrivals/s. */
void qc_ceiling_observe(qc_ceiling_t *c, double m, double u, double r);

/*
 * The highest level the loop may move up to from m_now, where it read
 * u_now, to hold target: HUGE_VAL when nothing caps it.
 */
double qc_ceiling_cap(const qc_ceiling_t *c, double m_now, double u_now,
                      double target);

#endif /* QC_CEILING_H */
