/* Licensed under the Apache License, Version 2.0. */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qc_spread.h"

/*
 * Whether h has moved from held by more than chance: at some bucket
 * edge, the share of the load below it differs by over QC_SPREAD_DRIFT
 * and by over QC_SPREAD_DRIFT_SIGMAS standard deviations of two
 * independent samples of total and held_total requests.
 */
static int qc_spread_moved(const qc_spread_t *sp, double total, double phi)
{
    double below = 0.0, held_below = 0.0;
    double scale = phi * (1.0 / total + 1.0 / sp->held_total);
    unsigned b;

    for (b = 0; b + 1 < QC_BUCKETS; b++) {
        double s, d;

        below += sp->h[b];
        held_below += sp->held[b];
        s = held_below / sp->held_total;
        d = fabs(below / total - s);
        if (d > QC_SPREAD_DRIFT
            && d * d > QC_SPREAD_DRIFT_SIGMAS * QC_SPREAD_DRIFT_SIGMAS
                       * s * (1.0 - s) * scale) {
            return 1;
        }
    }
    return 0;
}

static int qc_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/*
 * How much more the period's counts n stray from what h led one to
 * expect than independent requests would: the median over buckets of
 * (n - e)^2 / e, over the median of a chi-square of one degree (0.455).
 * Clients that send bursts (a page and its images) make it about the
 * burst's length; one bucket whose load changed does not move a median.
 * -1 when the counts are too few to tell, or none came; 1 when too few
 * buckets expect a request to take a median of (a few keys, or a few
 * requests in the period).
 */
static double qc_spread_dispersion(const double *h, double h_total,
                                   const double *n, double counted)
{
    double r[QC_BUCKETS];
    unsigned b, k = 0;

    if (h_total < QC_SPREAD_MIN_COUNT || !(counted > 0.0)) {
        return -1.0;
    }
    for (b = 0; b < QC_BUCKETS; b++) {
        double e = counted * h[b] / h_total;

        if (e >= 1.0) {
            r[k++] = (n[b] - e) * (n[b] - e) / e;
        }
    }
    if (k < QC_BUCKETS / 4) {
        return 1.0;             /* a few keys, or requests: no median */
    }
    qsort(r, k, sizeof(r[0]), qc_cmp_double);
    return (k & 1 ? r[k / 2] : 0.5 * (r[k / 2 - 1] + r[k / 2])) / 0.455;
}

/* Which buckets hold a heavy key, from the decayed counts (total of
 * them) at dispersion phi: only load that chance cannot make
 * (qc_spread.h), and a marked bucket keeps its mark down to a margin
 * under the line, lest a key near it move the threshold to and fro. */
static apr_uint64_t qc_spread_heavy(const qc_spread_t *sp, double total,
                                    double phi)
{
    double fair = total / QC_BUCKETS;
    apr_uint64_t mask = 0;
    unsigned b;

    for (b = 0; b < QC_BUCKETS; b++) {
        apr_uint64_t bit = (apr_uint64_t)1 << b;
        double heavy = QC_SPREAD_HEAVY * fair;
        double margin = QC_SPREAD_HYSTERESIS * sqrt(phi * heavy);

        if (sp->mask != QC_SPREAD_ALL && (sp->mask & bit)
            ? sp->h[b] > heavy - margin
            : sp->h[b] > heavy + margin
              && sp->h[b] > fair + QC_SPREAD_SIGMAS * sqrt(phi * fair)) {
            mask |= bit;
        }
    }
    return mask;
}

apr_uint64_t qc_spread_update(qc_spread_t *sp, const apr_uint64_t *counts,
                              double arrived)
{
    double total = 0.0, counted = 0.0, before = 0.0, phi;
    double n[QC_BUCKETS], expected[QC_BUCKETS];
    apr_uint64_t mask;
    unsigned b;

    for (b = 0; b < QC_BUCKETS; b++) {
        /* A smaller count is a new segment: start over. */
        n[b] = sp->primed && counts[b] >= sp->prev[b]
               ? (double)(counts[b] - sp->prev[b]) : 0.0;
        expected[b] = sp->h[b];
        before += sp->h[b];
        sp->h[b] = QC_SPREAD_KEEP * sp->h[b] + n[b];
        counted += n[b];
        sp->prev[b] = counts[b];
        total += sp->h[b];
    }
    sp->primed = 1;
    phi = qc_spread_dispersion(expected, before, n, counted);
    if (phi >= 0.0) {
        phi = phi > 1.0 ? phi : 1.0;
        sp->dispersion = sp->dispersion > 0.0
                         ? QC_SPREAD_KEEP * sp->dispersion
                           + (1.0 - QC_SPREAD_KEEP) * phi
                         : phi;
    }
    phi = sp->dispersion;
    if (arrived > 0.0 && counted == 0.0) {
        sp->mask = QC_SPREAD_ALL;
        return sp->mask;
    }
    /* Until one period's counts have been held against the last ones,
     * chance has no measure: visits of ten requests would pass for
     * heavy keys. */
    if (total < QC_SPREAD_MIN_COUNT || !(phi > 0.0)) {
        return sp->mask;
    }
    mask = qc_spread_heavy(sp, total, phi);
    sp->mask = mask;
    /* A sample twice as large is taken once; after that, only a
     * population that has changed moves the threshold. */
    if (!(sp->held_total > 0.0) || total > 2.0 * sp->held_total
        || qc_spread_moved(sp, total, phi)) {
        memcpy(sp->held, sp->h, sizeof(sp->held));
        sp->held_total = total;
    }
    return mask;
}

double qc_spread_threshold(const qc_spread_t *sp, double f)
{
    double total = 0.0, marked = 0.0, below = 0.0;
    unsigned b;

    if (!(f > 0.0) || f >= 1.0 || sp->mask == QC_SPREAD_ALL
        || !(sp->held_total > 0.0)) {
        return f;
    }
    for (b = 0; b < QC_BUCKETS; b++) {
        total += sp->held[b];
        if ((sp->mask >> b) & 1) {
            marked += sp->held[b];
        }
    }
    if (total < QC_SPREAD_MIN_COUNT) {
        return f;
    }
    /* In bucket b, F in [b, b + 1) / QC_BUCKETS serves
     * F * marked + below + (F * QC_BUCKETS - b) * own: linear in F. */
    for (b = 0; b < QC_BUCKETS; b++) {
        double own = (sp->mask >> b) & 1 ? 0.0 : sp->held[b];
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
