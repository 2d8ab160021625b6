/* Licensed under the Apache License, Version 2.0. */

/*
 * Online estimation of the server model (paper §4.3, eq. 2, with a
 * request cost per content tree):
 *
 *     U = sum_j a_j * R_j + b * W + c * R_rejected + d
 *
 * U is the measured utilization of the bottleneck in [0, 1], R_j the
 * requests/s served from the tree j steps below a host's top tree (j = 0
 * the top), W bytes/s; a_j and c are seconds per request, b seconds per
 * byte, and d is the background load no request accounts for.  A CGI
 * page and its static snapshot of the same size differ in a_j, not in
 * b: that is what lets the loops see that degrading relieves the CPU.
 *
 * Recursive least squares with directional forgetting: only the
 * information in the direction of the current regressor is forgotten,
 * so a constant or idle load cannot inflate the covariance in the
 * directions it does not excite (no wind-up).  Idle and saturated
 * samples are skipped and the trace of the covariance is bounded.
 * A saturated sample is censored: the true load is at least what the
 * sensor reads, so it corrects only a model that predicts less (a
 * wrong prior is corrected even when the server never leaves
 * saturation).  The
 * estimates the getters return are clamped to the physical ranges
 * below; the recursion itself runs unclamped (within twice those
 * ranges), since clamping it would bias the fit.
 *
 * Plain C, no allocation: the state is caller-owned.
 */

#ifndef QC_RLS_H
#define QC_RLS_H

#include <stddef.h>

#include "qc_level.h"

/* Trees with a cost of their own. */
#define QC_RLS_TREES QC_MAX_TREES

/* Number of parameters: a_0 .. a_{TREES-1}, b, c, d. */
#define QC_RLS_NP (QC_RLS_TREES + 3)
#define QC_RLS_B QC_RLS_TREES
#define QC_RLS_C (QC_RLS_TREES + 1)
#define QC_RLS_D (QC_RLS_TREES + 2)

/* Physical ranges the estimates are clamped to (natural units). */
#define QC_RLS_A_MAX 1.0        /* s/request: 1 req/s saturates */
#define QC_RLS_B_MAX 1e-5       /* s/byte: 100 kB/s saturates */
#define QC_RLS_C_MAX 2e-3       /* s/rejection: a 503 costs tens of us */
#define QC_RLS_D_MAX 1.0        /* |d|: background load */

/* Default forgetting factor: a memory of about 50 samples. */
#define QC_RLS_LAMBDA 0.98

/* Longest line qc_rls_format() writes, including the NUL. */
#define QC_RLS_LINE_MAX 2048

/* One period's regressors. */
typedef struct {
    double r[QC_RLS_TREES];     /* req/s served by tree, [0] the top */
    double w;                   /* bytes/s */
    double r_rej;               /* req/s rejected */
} qc_rls_sample_t;

typedef struct {
    /* Scaled parameters: a_j in s/kreq, b in s/MB, c in s/kreq, d. */
    double theta[QC_RLS_NP];
    /* Covariance (up to the noise variance) in the scaled units. */
    double p[QC_RLS_NP][QC_RLS_NP];
    double lambda;
    /* Running mean square of the a-priori residual. */
    double err2;
    /* Running mean of the relative change of a and b per update. */
    double change;
    /* Updates applied (skipped samples are not counted). */
    unsigned long n;
    /* The scaled regressor of the last update: where the data are. */
    double phi_last[QC_RLS_NP];
    /* A capped reading (a bound, taken as a measure) taught it since
     * the covariance was last reset. */
    int censored;
} qc_rls_t;

/*
 * Start from the administrator's model (a, b, c) with d = 0: every
 * tree's a_j = a until the data tell them apart.  lambda is
 * the forgetting factor: a memory of about 1 / (1 - lambda) samples;
 * outside [0.9, 1] it is replaced by QC_RLS_LAMBDA.  The seed is clamped
 * to the physical ranges.
 */
void qc_rls_init(qc_rls_t *rls, double a, double b, double c, double lambda);

/*
 * Feed one sample.  Returns 1 if the estimates were updated, 0 if the
 * sample was skipped as uninformative (idle server, a saturated reading
 * the model already predicts, no new information in its direction), -1
 * if an input was negative or not finite or the update failed
 * numerically (the state is left untouched).
 */
int qc_rls_update(qc_rls_t *rls, const qc_rls_sample_t *x,
                  double u_measured);

/* The utilization the current model predicts, d included. */
double qc_rls_predict(const qc_rls_t *rls, const qc_rls_sample_t *x);

/* Current estimates in natural units; qc_rls_a() is the top tree's. */
double qc_rls_a_tree(const qc_rls_t *rls, unsigned j);
double qc_rls_a(const qc_rls_t *rls);
double qc_rls_b(const qc_rls_t *rls);
double qc_rls_c(const qc_rls_t *rls);
double qc_rls_d(const qc_rls_t *rls);

/*
 * Projection onto what is known of d from outside the fit: at most
 * d_max (the background is never more than the resource read at some
 * instant).  The costs then re-adapt around the corrected d.
 */
void qc_rls_limit_d(qc_rls_t *rls, double d_max);

/*
 * The resource's capacity changed by 1/s (a shaper turned down to a
 * quarter: s = 4): every cost and the background, in units of that
 * resource, are s times what they were.  The covariance stays, since
 * it depends on the regressors alone (up to the noise, which scales
 * alike); the residual's mean square scales by s^2.  s <= 0 or not
 * finite: nothing changes.
 */
void qc_rls_scale(qc_rls_t *rls, double s);

/* Trace of the (scaled) covariance, for monitoring. */
double qc_rls_trace(const qc_rls_t *rls);

/*
 * How well the data have pinned a_j down: its standard error over its
 * prior standard deviation, 1 for a tree never served, towards 0 as
 * samples accumulate.
 */
double qc_rls_a_uncertainty(const qc_rls_t *rls, unsigned j);

/* The same for c, the cost of a rejection: 1 until requests have been
 * rejected. */
double qc_rls_c_uncertainty(const qc_rls_t *rls);

/*
 * The same for the cost of one request of tree j with replies of
 * `bytes` bytes (0: unknown, a_j alone): a_j + b bytes, the prediction
 * the data pin down even where a_j and b cannot be told apart (replies
 * of one size).  Its standard deviation over the prior's.
 */
double qc_rls_tree_uncertainty(const qc_rls_t *rls, unsigned j,
                               double bytes);

/*
 * Nonzero once the model is trustworthy where the server runs: at least
 * 20 updates, the standard error of its prediction at the last sample
 * below 10% of that prediction, and a and b no longer moving (mean
 * relative change per update below 2%).  The costs one by one may still
 * be unknown (replies of one size per tree cannot tell a_j from b): a
 * restart starts from the same predictions, which is what the state
 * file is for.
 */
int qc_rls_converged(const qc_rls_t *rls);

/*
 * One text line (no newline) holding the whole state, e.g. for a state
 * file read back after a restart.  Returns the length written, or -1 if
 * buf is too small (QC_RLS_LINE_MAX always suffices).
 */
int qc_rls_format(const qc_rls_t *rls, char *buf, size_t len);

/*
 * Read a line written by qc_rls_format() (qc_rls_text.c).  Returns 0 on
 * success; -1 on a malformed or out-of-range line (a cost below 0,
 * a number that is not plain decimal, a field missing or out of order,
 * anything after the last), in which case rls is unchanged and, when
 * why is not NULL, the reason naming the field is written there (len
 * bytes with the NUL; 128 suffice).
 */
int qc_rls_read(qc_rls_t *rls, const char *line, char *why, size_t len);

/* qc_rls_read() without a reason. */
int qc_rls_parse(qc_rls_t *rls, const char *line);

#endif /* QC_RLS_H */
