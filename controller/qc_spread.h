/* Licensed under the Apache License, Version 2.0. */

/*
 * Which clients the actuator splits request by request (qc_shm.h
 * spread_mask).  The level m = I + F serves a client from tree I + 1
 * when its hash falls below F: over many clients that is a fraction F
 * of the load, but one address (a NAT, a proxy, a benchmark box)
 * carrying most of it lands wholly on one side, and the loop sees an
 * actuator that is all-or-nothing.  The request path counts arrivals by
 * bucket of the client hash; a bucket that carries more than a few
 * buckets' fair share of the load holds a heavy key, and its requests
 * are split one by one.  Everyone else keeps one tree while m stays.
 *
 * Pure: no I/O, state owned by the caller.
 */

#ifndef QC_SPREAD_H
#define QC_SPREAD_H

#include "qc_shm.h"

/* A bucket is heavy above this multiple of its fair share 1/QC_BUCKETS,
 * and this many Poisson standard deviations over it: chance alone must
 * not take a client's fixed tree away. */
#define QC_SPREAD_HEAVY 3.0
#define QC_SPREAD_SIGMAS 4.0

/* Weight of the past in the decayed counts, per period. */
#define QC_SPREAD_KEEP 0.8

/* Fewer requests than this (decayed) tell nothing: keep the mask. */
#define QC_SPREAD_MIN_COUNT (4.0 * QC_BUCKETS)

typedef struct {
    double h[QC_BUCKETS];       /* decayed arrivals by bucket */
    apr_uint64_t prev[QC_BUCKETS];
    apr_uint64_t mask;
    int primed;
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
 * The decayed counts say how the load spreads over the hash, and under
 * qc_level_pick_request() a marked bucket serves a share F, the edge
 * bucket a share of its own in proportion to where F falls in it, and
 * every other bucket all or none: F is where that sum is f.  f itself
 * while the counts are too few or everyone is split.
 */
double qc_spread_threshold(const qc_spread_t *sp, double f);

/* The level to publish for the loop's m in [0, levels]: I + the
 * threshold for its fraction (below 1 every request is drawn, and the
 * share is F already). */
double qc_spread_level(const qc_spread_t *sp, double m);

#endif /* QC_SPREAD_H */
