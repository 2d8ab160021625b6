/* Licensed under the Apache License, Version 2.0. */

#include <math.h>

#include "qc_calib.h"
#include "qc_math.h"

void qc_calib_init(qc_calib_t *c)
{
    c->k = 1.0;
    c->saturated = 0;
}

double qc_calib_update(qc_calib_t *c, double u_measured, double u_model,
                       double d, int draining, int expected_over,
                       double saturated_at)
{
    double reading;

    if (!(u_measured >= 0.0) || !isfinite(u_model) || !isfinite(d)) {
        return c->k;
    }
    if (draining) {
        /* The reading is earlier periods' work as much as this one's. */
        c->saturated = u_measured < saturated_at ? 0 : c->saturated + 1;
        return c->k;
    }
    if (u_measured < saturated_at) {
        c->saturated = 0;
        if (u_model < QC_CALIB_MIN_LOAD) {
            return c->k;
        }
        reading = qc_clampd((u_measured - d) / u_model,
                            QC_CALIB_MIN, QC_CALIB_MAX);
        c->k = exp((1.0 - QC_CALIB_WEIGHT) * log(c->k)
                   + QC_CALIB_WEIGHT * log(reading));
        return c->k;
    }
    c->saturated++;
    if (u_model >= QC_CALIB_MIN_LOAD) {
        reading = (u_measured - d) / u_model;
        if (c->k < reading) {
            c->k = reading;
        }
    }
    if (c->saturated >= 2 && !expected_over) {
        c->k *= QC_CALIB_SEARCH;
    }
    c->k = qc_clampd(c->k, QC_CALIB_MIN, QC_CALIB_MAX);
    return c->k;
}
