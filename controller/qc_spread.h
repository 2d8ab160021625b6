/* Licensed under the Apache License, Version 2.0. */

/*
 * Which clients the actuator splits request by request (qc_shm.h
 * spread_mask).  The level m = I + F serves a client from tree I + 1
 * when its hash falls below F: over many clients that is a fraction F
 * of the load, but one address (a NAT, a proxy, a benchmark box)
 * carrying most of it lands wholly on one side, and the loop sees an
 * actuator that is all-or-nothing.  The request path counts arrivals by
 * bucket of the client hash; a bucket that carries more than a few
 * buckets' fair share of the load holds a heavy key, and that key's
 * requests are split one by one (the request path votes for it among
 * the bucket's clients).  Everyone else keeps one tree while m stays.
 *
 * Pure: no I/O, state owned by the caller.
 */

#ifndef QC_SPREAD_H
#define QC_SPREAD_H

#include "qc_shm.h"

/* A bucket is heavy above this multiple of its fair share 1/QC_BUCKETS,
 * and this many standard deviations of chance over it (Poisson's, times
 * the counts' dispersion): chance alone must not take a client's fixed
 * tree away. */
#define QC_SPREAD_HEAVY 3.0
#define QC_SPREAD_SIGMAS 4.0

/* Marked once this many standard deviations over the heavy line, and
 * unmarked as many under it: a key that carries about that much would
 * otherwise move the threshold, and its bucket's other clients, to and
 * fro as chance takes it over the line and back. */
#define QC_SPREAD_HYSTERESIS 2.0

/* Weight of the past in the decayed counts, per period. */
#define QC_SPREAD_KEEP 0.8

/* Fewer requests than this (decayed) tell nothing: keep the mask. */
#define QC_SPREAD_MIN_COUNT (4.0 * QC_BUCKETS)

/*
 * The threshold is set by counts held until the load's spread over the
 * hash has moved: by more than this share of the load at some point of
 * the hash, and by more than QC_SPREAD_DRIFT_SIGMAS standard deviations
 * of chance (qc_spread.c).  Every move of the threshold moves the
 * clients it passes to another tree, so chance must not move it.
 */
#define QC_SPREAD_DRIFT 0.03
#define QC_SPREAD_DRIFT_SIGMAS 5.0

typedef struct {
    double h[QC_BUCKETS];       /* decayed arrivals by bucket */
    apr_uint64_t prev[QC_BUCKETS];
    apr_uint64_t mask;
    int primed;
    double dispersion;          /* of the counts over chance's, decayed
                                 * (at least 1); 0: not known yet */
    double held[QC_BUCKETS];    /* h when the threshold was last set */
    double held_total;          /* their sum; 0: not set yet */
} qc_spread_t;

/* Every bucket: each request is split on its own. */
#define QC_SPREAD_ALL (~(apr_uint64_t)0)

/*
 * Take this period's cumulative bucket counters and return the mask of
 * heavy buckets (unchanged while too few requests are counted).
 * arrived: the class's arrivals in the period.  The request path hashes
 * and counts clients only below the top level, so arrivals with no
 * count at all say nothing of who the clients are, and the first
 * period below the top would serve one client wholly from one tree:
 * until the counts say who carries the load, every request is split on
 * its own.
 */
apr_uint64_t qc_spread_update(qc_spread_t *sp, const apr_uint64_t *counts,
                              double arrived);

/*
 * The threshold F to publish for a share f of the load from tree I + 1.
 * Keys are few or skewed (40 addresses, Zipf-weighted): their hashes
 * below F carry a share of the load that is not F (0.12 at F 0.18 in
 * bench/robustness), and the loop saw an actuator of a third less gain.
 * The held counts say how the load spreads over the hash, and under
 * qc_level_pick_request() a marked bucket serves a share F, the bucket
 * F falls in the share of its clients whose hash is below F (in
 * proportion to where F falls in it, taken over its clients), and every
 * other bucket all or none: F is where that sum is f.  f itself while
 * the counts are too few or everyone is split.  The same f gives the
 * same F until the held counts are replaced, so a steady loop moves no
 * client.
 */
double qc_spread_threshold(const qc_spread_t *sp, double f);

/* The level to publish for the loop's m in [0, levels]: I + the
 * threshold for its fraction (below 1 every request is drawn, and the
 * share is F already). */
double qc_spread_level(const qc_spread_t *sp, double m);

#endif /* QC_SPREAD_H */
