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
