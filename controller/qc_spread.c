/* Licensed under the Apache License, Version 2.0. */

#include <math.h>

#include "qc_spread.h"

apr_uint64_t qc_spread_update(qc_spread_t *sp, const apr_uint64_t *counts,
                              double arrived)
{
    double total = 0.0, counted = 0.0, fair;
    apr_uint64_t mask = 0;
    unsigned b;

    for (b = 0; b < QC_BUCKETS; b++) {
        /* A smaller count is a new segment: start over. */
        double n = sp->primed && counts[b] >= sp->prev[b]
                   ? (double)(counts[b] - sp->prev[b]) : 0.0;

        sp->h[b] = QC_SPREAD_KEEP * sp->h[b] + n;
        counted += n;
        sp->prev[b] = counts[b];
        total += sp->h[b];
    }
    sp->primed = 1;
    if (arrived > 0.0 && counted == 0.0) {
        sp->mask = QC_SPREAD_ALL;
        return sp->mask;
    }
    if (total < QC_SPREAD_MIN_COUNT) {
        return sp->mask;
    }
    fair = total / QC_BUCKETS;
    for (b = 0; b < QC_BUCKETS; b++) {
        if (sp->h[b] > QC_SPREAD_HEAVY * fair
            && sp->h[b] > fair + QC_SPREAD_SIGMAS * sqrt(fair)) {
            mask |= (apr_uint64_t)1 << b;
        }
    }
    sp->mask = mask;
    return mask;
}

double qc_spread_threshold(const qc_spread_t *sp, double f)
{
    double total = 0.0, marked = 0.0, below = 0.0;
    unsigned b;

    if (!(f > 0.0) || f >= 1.0 || sp->mask == QC_SPREAD_ALL) {
        return f;
    }
    for (b = 0; b < QC_BUCKETS; b++) {
        total += sp->h[b];
        if ((sp->mask >> b) & 1) {
            marked += sp->h[b];
        }
    }
    if (total < QC_SPREAD_MIN_COUNT) {
        return f;
    }
    /* In bucket b, F in [b, b + 1) / QC_BUCKETS serves
     * F * marked + below + (F * QC_BUCKETS - b) * own: linear in F. */
    for (b = 0; b < QC_BUCKETS; b++) {
        double own = (sp->mask >> b) & 1 ? 0.0 : sp->h[b];
        double lo = (double)b / QC_BUCKETS, hi = (double)(b + 1) / QC_BUCKETS;
        double slope = marked + own * QC_BUCKETS;

        if ((hi * marked + below + own) / total >= f && slope > 0.0) {
            double F = (f * total - below + b * own) / slope;

            return F < lo ? lo : F > hi ? hi : F;
        }
        below += own;
    }
    return f;
}

double qc_spread_level(const qc_spread_t *sp, double m)
{
    double whole = floor(m);

    if (!(m > 1.0) || m == whole) {
        return m;
    }
    return whole + qc_spread_threshold(sp, m - whole);
}
