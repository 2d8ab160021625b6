/* Licensed under the Apache License, Version 2.0. */

/* What a utilization reading can say of the load: the one saturation
 * mark the fit (qc_rls.c), the calibration and the loops share. */

#ifndef QC_READING_H
#define QC_READING_H

/* Utilization from which a sensor is taken to be saturated: capped, it
 * no longer tells how much load there is, only that there is at least
 * this much (a lower bound: censored). */
#define QC_U_SATURATED 0.95

/* From here on a reading is no cap: a link declared below what it
 * carries (a bandwidth plan on a faster port) reads its load past 1.
 * Far past it: a capped sensor's noise reaches 1.1 over a tick (a
 * shaper's bursts; a tenth of a second is 10-25 jiffies of /proc/stat),
 * and read as exact there, the valve lost its count and cold starts on
 * the link refused 12-35 requests. */
#define QC_U_UNCAPPED 1.5

/* Whether u is a capped reading, a lower bound of the load. */
static inline int qc_u_capped(double u)
{
    return u >= QC_U_SATURATED && u < QC_U_UNCAPPED;
}

#endif /* QC_READING_H */
