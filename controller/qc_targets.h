/* Licensed under the Apache License, Version 2.0. */

/*
 * Set points of the control loops (paper §5): capacity planning for
 * guaranteed virtual servers, the premium/basic split inside a server,
 * the best-effort loop that uses the excess capacity, and the rule that
 * lets a guaranteed server use that excess.
 *
 * Units: R in requests/s, W in bytes/s, a and c in s/request, b in
 * s/byte, utilizations as fractions of the bottleneck.
 */

#ifndef QC_TARGETS_H
#define QC_TARGETS_H

#include <stddef.h>

#include "qc_level.h"

/* The server model U = a R_served + b W + c R_rejected + d; a is the
 * top tree's cost per request, a_tree[j] that of the tree j below it
 * (a_tree[0] = a). */
typedef struct {
    double a, b, c, d;
    double a_tree[QC_MAX_TREES];
} qc_model_t;

/* Share U* = a Rmax + b Wmax that guarantees (Rmax, Wmax) (§5.1). */
double qc_target_guarantee(const qc_model_t *mod, double rmax, double wmax);

/* Model utilization a R_served + b W + c R_rejected of a class (no d:
 * the intercept belongs to no class). */
double qc_model_util(const qc_model_t *mod, double r_served, double w,
                     double r_rej);

/*
 * Premium target of a guaranteed server (§5.2): its share u_star less
 * the cost of rejecting all current requests of its basic class,
 * c r_basic (r_basic: the basic class's offered rate); at least 0.
 * Premium first: where premium's load at full quality, u_full, fits the
 * share, its target is at least that, whatever basic's 503s cost (a
 * flood of basic clients would otherwise degrade a premium class that
 * is a small part of the load, and degrading it saves next to nothing).
 */
double qc_target_premium(const qc_model_t *mod, double u_star,
                         double r_basic, double u_full);

/* Basic target: u_star less the premium class's current model
 * utilization (qc_model_util() of premium); at least 0. */
double qc_target_basic(double u_star, double u_premium);

/*
 * Best-effort target (§5.3): the utilization bound less u_guaranteed,
 * the model utilization of all traffic the guaranteed servers' own
 * loops account for, less the model's intercept d; at least 0.  With d
 * charged, the loops hold the fitted total a*R + b*W + c*Rrej + d at
 * the bound, and that total tracks the measurement even when load that
 * does not vary lets the estimator split it between the terms in any
 * way (d then also corrects a, b and c, in either direction).  A
 * positive d is charged up to half the bound only: shedding web clients
 * cannot relieve a backup job, so non-web load never squeezes best
 * effort below half the bound.
 */
double qc_target_best_effort(const qc_model_t *mod, double u_bound,
                             double u_guaranteed);

/* The background the best-effort target charges: the model's d, at
 * most u_bound / 2 (a negative d corrects a model that overstates the
 * requests' costs). */
double qc_target_background(const qc_model_t *mod, double u_bound);

/*
 * Excess sharing (§5.3): a request to a guaranteed server is served at
 * the higher of its own loop's output m_own (in [0, M]) and the
 * best-effort output m_b_norm, which is kept in [0, 1] because hosts
 * have different numbers of trees M.  Returns max(m_own, m_b_norm M)
 * clamped to [0, M].
 */
double qc_share_level(double m_own, double m_b_norm, unsigned M);

/*
 * Capacity planning (§5.1): share[i] = a rmax[i] + b wmax[i] for the n
 * guaranteed servers.  Writes into msg (always NUL-terminated, possibly
 * truncated) a sentence giving the sum, the bound and every server's
 * share, named by names[i] (a NULL names or names[i] gives "#i").
 * shares and sum may be NULL.  Returns 1 if the sum exceeds u_bound,
 * 0 if it fits, -1 on a negative or non-finite input.
 */
int qc_capacity_check(const qc_model_t *mod, double u_bound,
                      const char *const *names, const double *rmax,
                      const double *wmax, size_t n, double *shares,
                      double *sum, char *msg, size_t msglen);

#endif /* QC_TARGETS_H */
