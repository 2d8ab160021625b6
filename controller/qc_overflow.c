/* Licensed under the Apache License, Version 2.0. */

#include <math.h>

#include "qc_overflow.h"

void qc_overflow_init(qc_overflow_t *o)
{
    o->seconds = 0.0;
    o->queue0 = 0.0;
    o->on = 0;
    o->overhead = 0.0;
}

void qc_overflow_observe(qc_overflow_t *o, int known, int at_lowest,
                         int saturated, double queue, double period)
{
    if (!known || !at_lowest) {
        o->on = 0;
        o->seconds = 0.0;
        return;
    }
    if (!saturated) {
        o->seconds = 0.0;
        return;
    }
    if (o->seconds <= 0.0) {
        o->queue0 = queue;
    }
    o->seconds += period;
    if (queue <= o->queue0 - QC_OVERFLOW_DRAIN * o->seconds) {
        /* draining so far: the count starts again from here */
        o->queue0 = queue;
        o->seconds = period;
    }
    else if (o->seconds > QC_OVERFLOW_SECONDS + 1e-9) {
        o->on = 1;
    }
}

void qc_overflow_learn(qc_overflow_t *o, double load, double bps,
                       double logged, double replies)
{
    double per;

    if (!(bps > 0.0) || !(replies >= 1.0) || isnan(load)
        || !(logged >= 0.0)) {
        return;
    }
    per = fmin(fmax((load * bps - logged) / replies, 0.0),
               QC_OVERFLOW_OVERHEAD_MAX);
    o->overhead += QC_OVERFLOW_OVERHEAD_WEIGHT * (per - o->overhead);
}
