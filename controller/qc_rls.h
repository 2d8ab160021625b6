/* Licensed under the Apache License, Version 2.0. */

/*
 * Online estimation of the server model (paper §4.3, eq. 2):
 *
 *     U = a * R_served + b * W + c * R_rejected + d
 *
 * U is the measured utilization of the bottleneck in [0, 1], R in
 * requests/s, W in bytes/s; a and c are seconds per request, b seconds
 * per byte, and d is the background load no request accounts for.
 *
 * Recursive least squares with directional forgetting: only the
 * information in the direction of the current regressor is forgotten,
 * so a constant or idle load cannot inflate the covariance in the
 * directions it does not excite (no wind-up).  Idle and saturated
 * samples are skipped and the trace of the covariance is bounded.  The
 * estimates the getters return are clamped to the physical ranges
 * below; the recursion itself runs unclamped (within twice those
 * ranges), since clamping it would bias the fit.
 *
 * Plain C, no allocation: the state is caller-owned.
 */

#ifndef QC_RLS_H
#define QC_RLS_H

#include <stddef.h>

/* Number of parameters: a, b, c, d. */
#define QC_RLS_NP 4

/* Physical ranges the estimates are clamped to (natural units). */
#define QC_RLS_A_MAX 1.0        /* s/request: 1 req/s saturates */
#define QC_RLS_B_MAX 1e-5       /* s/byte: 100 kB/s saturates */
#define QC_RLS_C_MAX 0.1        /* s/rejection: rejecting is cheap */
#define QC_RLS_D_MAX 0.5        /* |d|: background load */

/* Default forgetting factor: a memory of about 50 samples. */
#define QC_RLS_LAMBDA 0.98

/* Longest line qc_rls_format() writes, including the NUL. */
#define QC_RLS_LINE_MAX 512

typedef struct {
    /* Scaled parameters: a in s/kreq, b in s/MB, c in s/kreq, d. */
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
} qc_rls_t;

/*
 * Start from the administrator's model (a, b, c) with d = 0.  lambda is
 * the forgetting factor: a memory of about 1 / (1 - lambda) samples;
 * outside [0.9, 1] it is replaced by QC_RLS_LAMBDA.  The seed is clamped
 * to the physical ranges.
 */
void qc_rls_init(qc_rls_t *rls, double a, double b, double c, double lambda);

/*
 * Feed one sample.  Returns 1 if the estimates were updated, 0 if the
 * sample was skipped as uninformative (idle server, utilization at
 * saturation, no new information in its direction), -1 if an input was
 * negative or not finite or the update failed numerically (the state is
 * left untouched).
 */
int qc_rls_update(qc_rls_t *rls, double r_served, double w, double r_rej,
                  double u_measured);

/* The utilization the current model predicts, d included. */
double qc_rls_predict(const qc_rls_t *rls, double r_served, double w,
                      double r_rej);

/* Current estimates in natural units. */
double qc_rls_a(const qc_rls_t *rls);
double qc_rls_b(const qc_rls_t *rls);
double qc_rls_c(const qc_rls_t *rls);
double qc_rls_d(const qc_rls_t *rls);

/* Trace of the (scaled) covariance, for monitoring. */
double qc_rls_trace(const qc_rls_t *rls);

/*
 * Nonzero once a and b are trustworthy: at least 20 updates, standard
 * errors of a and b below 10% of their values, and a and b no longer
 * moving (mean relative change per update below 2%).
 */
int qc_rls_converged(const qc_rls_t *rls);

/*
 * One text line (no newline) holding the whole state, e.g. for a state
 * file read back after a restart.  Returns the length written, or -1 if
 * buf is too small (QC_RLS_LINE_MAX always suffices).
 */
int qc_rls_format(const qc_rls_t *rls, char *buf, size_t len);

/*
 * Read a line written by qc_rls_format().  Returns 0 on success; -1 on
 * a malformed or out-of-range line, in which case rls is unchanged.
 */
int qc_rls_parse(qc_rls_t *rls, const char *line);

#endif /* QC_RLS_H */
