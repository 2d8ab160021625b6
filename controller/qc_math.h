/* Licensed under the Apache License, Version 2.0. */

/* Small numeric helpers the controller's files share. */

#ifndef QC_MATH_H
#define QC_MATH_H

/* x within [lo, hi]; NaN gives lo. */
static inline double qc_clampd(double x, double lo, double hi)
{
    if (!(x >= lo)) {
        return lo;
    }
    return x > hi ? hi : x;
}

#endif /* QC_MATH_H */
