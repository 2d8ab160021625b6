/* Licensed under the Apache License, Version 2.0. */

#include <math.h>

#include "qc_calib.h"
#include "qc_math.h"
#include "qc_pi.h"

void qc_calib_init(qc_calib_t *c)
{
    c->k = 1.0;
    c->saturated = 0;
}

double qc_calib_update(qc_calib_t *c, double u_measured, double u_model,
                       double d, int reading, int expected_over,
                       double saturated_at)
{
    double ratio;

    if (!(u_measured >= 0.0) || !isfinite(u_model) || !isfinite(d)) {
        return c->k;
    }
    if (reading == QC_CALIB_OLD) {
        c->saturated = u_measured < saturated_at
                       || u_measured >= QC_U_UNCAPPED ? 0
                       : c->saturated + 1;
        return c->k;
    }
    if (u_measured < saturated_at || u_measured >= QC_U_UNCAPPED) {
        c->saturated = 0;
        if (u_model < QC_CALIB_MIN_LOAD) {
            /* Too little to measure k by, enough to bound it: the
             * requests load no more than the reading leaves beyond the
             * background, within the noise this minimum allows.  A k
             * too high holds the level where too little is decided for
             * k to be measured again. */
            if (u_model > 0.0) {
                ratio = (fmax(u_measured - d, 0.0) + QC_CALIB_MIN_LOAD)
                        / u_model;
                c->k = qc_clampd(fmin(c->k, ratio), QC_CALIB_MIN,
                                 QC_CALIB_MAX);
            }
            return c->k;
        }
        ratio = qc_clampd((u_measured - d) / u_model,
                          QC_CALIB_MIN, QC_CALIB_MAX);
        if (reading == QC_CALIB_RISING) {
            /* Part of the period ran before the rise: the load is more
             * than the reading says, never less. */
            c->k = ratio > c->k ? ratio : c->k;
        }
        else {
            c->k = exp((1.0 - QC_CALIB_WEIGHT) * log(c->k)
                       + QC_CALIB_WEIGHT * log(ratio));
        }
        return c->k;
    }
    c->saturated++;
    if (u_model >= QC_CALIB_MIN_LOAD) {
        ratio = (u_measured - d) / u_model;
        if (c->k < ratio) {
            c->k = ratio;
        }
    }
    if (c->saturated >= 2 && !expected_over) {
        c->k *= QC_PI_SEARCH;  /* a saturated reading bounds k only */
    }
    c->k = qc_clampd(c->k, QC_CALIB_MIN, QC_CALIB_MAX);
    return c->k;
}
