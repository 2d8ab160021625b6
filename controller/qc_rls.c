/* Licensed under the Apache License, Version 2.0. */

/*
 * Recursive least squares for U = a R_s + b W + c R_r + d.
 *
 * Scaling.  At real magnitudes the raw regressors span ten decades
 * (R ~ 1e4 req/s, W ~ 1e8 B/s, a constant 1) and so would the
 * parameters (b ~ 1e-9), which makes the covariance badly conditioned.
 * Internally R is in kreq/s and W in MB/s, so every regressor and
 * every parameter is of order 1e-4..1e2.
 *
 * Forgetting.  Plain exponential forgetting divides the whole
 * covariance by lambda each step; under a constant or idle load the
 * directions the data do not excite grow without bound (wind-up) and
 * the next change of load makes the estimates jump.  We use directional
 * forgetting (Kulhavy 1987; Bittanti, Bolzern, Campi 1990) with factor
 * mu: with r = phi' P phi, the information matrix is updated as
 *
 *     P^-1 <- P^-1 + beta phi phi',   beta = mu - (1 - mu) / r
 *
 * i.e. the information along phi is discounted by (1 - mu)(1 + 1/r)
 * before the new sample (weight 1) is added.  Information orthogonal to
 * phi is kept, so P stays bounded without excitation; along a constant
 * phi, r settles at (1 - mu) / mu.  By the matrix inversion lemma, with
 * s = 1 + beta r (= mu (1 + r) when forgetting):
 *
 *     P <- P - beta (P phi)(P phi)' / s,   theta <- theta + P phi e / s
 *
 * where e is the a-priori residual and P phi the old P times phi.  When
 * r > mu / (1 - mu) the discount would exceed the information held
 * along phi (early on, P large); we then do not forget (beta = 1), which
 * is the ordinary RLS step.
 *
 * Under rich excitation the discount is spread over the NP directions,
 * so the memory is about NP / (1 - mu) samples.  To give the caller's
 * lambda its usual meaning (memory 1 / (1 - lambda): 50 samples for
 * 0.98), mu = 1 - NP (1 - lambda).
 */

#include "qc_rls.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qc_math.h"
#include "qc_reading.h"
#include "qc_rls_private.h"

#define NP QC_RLS_NP
#define NT QC_RLS_TREES
#define IB QC_RLS_B
#define IC QC_RLS_C
#define ID QC_RLS_D
#define scale_of qc_rls_scale_of
#define lo_nat qc_rls_lo
#define hi_nat qc_rls_hi
#define TRACE_MAX QC_RLS_TRACE_MAX

/* Prior standard deviations of the scaled parameters (the whole
 * physical range: a_j up to 1e-2 s/req, c 1e-3, b 1e-7 s/B, |d| 0.5;
 * a 503 is cheap, and a wide prior on c let a constant background be
 * charged to rejections, which then looked as costly as serving),
 * over the nominal noise of U.  A tighter prior, on d especially, biases
 * the fit for hundreds of samples: d is nearly collinear with the other
 * regressors at high load, and directional forgetting discounts old
 * information only slowly in such a direction. */
#define A_SD 10.0
#define B_SD 0.1
#define C_SD 1.0
#define D_SD 0.5
#define NOISE_SD 0.02

static double prior_sd(int i)
{
    return i < NT ? A_SD : i == IB ? B_SD : i == IC ? C_SD : D_SD;
}

/* No information in the direction of phi: skip. */
#define R_EPS 1e-12

/* Convergence: enough updates, small standard errors, settled. */
#define CONV_MIN_N 20
#define CONV_REL_SE 0.10
#define CONV_CHANGE 0.02
/* Relative measures use max(|theta|, floor) so tiny values don't
 * divide by ~0: 1e-5 s/req and 1e-9 s/B, scaled. */
#define A_FLOOR 1e-2
#define B_FLOOR 1e-3
/* Weights of the running residual and change averages. */
#define ERR_W 0.1
#define CHANGE_W 0.2

/*
 * Hold the estimate inside the physical ranges by projection in the
 * metric of P^-1: when a parameter is pulled back to a bound, the ones
 * correlated with it move as the data say they must.  Clamping alone
 * left the estimate inconsistent with what was observed (constant load:
 * only a*R + d is known; d clamped at its bound while P still believed
 * it had moved), and each later correction then pushed a the wrong
 * way: a grew 27-fold in 20 periods and the model said 1.07 where the
 * sensors said 0.2.  A few passes, since one projection can push
 * another parameter out; the final clamp is a guarantee, rarely used.
 */
static void project_box(qc_rls_t *rls)
{
    int pass, i, j, moved;

    for (pass = 0; pass < NP; pass++) {
        moved = 0;
        for (i = 0; i < NP; i++) {
            double lo = lo_nat(i) * scale_of(i);
            double hi = hi_nat(i) * scale_of(i);
            double v = rls->theta[i], excess = v - qc_clampd(v, lo, hi);

            if (excess == 0.0 || !(rls->p[i][i] > 0.0)) {
                continue;
            }
            for (j = 0; j < NP; j++) {
                if (j != i) {
                    rls->theta[j] -= rls->p[j][i] * excess / rls->p[i][i];
                }
            }
            rls->theta[i] = qc_clampd(v, lo, hi);
            moved = 1;
        }
        if (!moved) {
            break;
        }
    }
    for (i = 0; i < NP; i++) {
        rls->theta[i] = qc_clampd(rls->theta[i], lo_nat(i) * scale_of(i),
                               hi_nat(i) * scale_of(i));
    }
}

/* Exposed value of scaled parameter i, in natural units. */
static double estimate(const qc_rls_t *rls, int i)
{
    return qc_clampd(rls->theta[i] / scale_of(i), lo_nat(i), hi_nat(i));
}

static double trace_of(const qc_rls_t *rls)
{
    double t = 0.0;
    int i;

    for (i = 0; i < NP; i++) {
        t += rls->p[i][i];
    }
    return t;
}

static void reset_p(qc_rls_t *rls)
{
    int i, j;

    for (i = 0; i < NP; i++) {
        for (j = 0; j < NP; j++) {
            rls->p[i][j] = 0.0;
        }
        rls->p[i][i] = (prior_sd(i) / NOISE_SD) * (prior_sd(i) / NOISE_SD);
    }
}

void qc_rls_init(qc_rls_t *rls, double a, double b, double c, double lambda)
{
    int i;

    memset(rls, 0, sizeof(*rls));
    for (i = 0; i < NP; i++) {
        double v = i < NT ? a : i == IB ? b : i == IC ? c : 0.0;

        rls->theta[i] = qc_clampd(v * scale_of(i), lo_nat(i) * scale_of(i),
                               hi_nat(i) * scale_of(i));
    }
    reset_p(rls);
    rls->lambda = (lambda >= 0.9 && lambda <= 1.0) ? lambda : QC_RLS_LAMBDA;
    /* Pessimistic until the data say otherwise. */
    rls->err2 = 1.0;
    rls->change = 1.0;
    rls->n = 0;
}

/* The scaled regressor; returns how many of its entries are nonzero,
 * or -1 for an input that is negative or not finite. */
static int regressor(const qc_rls_sample_t *x, double *phi)
{
    int i, active = 0;

    for (i = 0; i < NP; i++) {
        double v = i < NT ? x->r[i] : i == IB ? x->w : i == IC ? x->r_rej
                   : 1.0;

        if (!isfinite(v) || v < 0.0) {
            return -1;
        }
        phi[i] = v / scale_of(i);
        active += phi[i] != 0.0;
    }
    return active;
}

static double dot(const double *x, const double *y)
{
    double v = 0.0;
    int i;

    for (i = 0; i < NP; i++) {
        v += x[i] * y[i];
    }
    return v;
}

static int all_finite(const qc_rls_t *rls)
{
    int i, j;

    for (i = 0; i < NP; i++) {
        if (!isfinite(rls->theta[i])) {
            return 0;
        }
        for (j = 0; j < NP; j++) {
            if (!isfinite(rls->p[i][j])) {
                return 0;
            }
        }
    }
    return 1;
}

static double rel_change(double new_v, double old_v, double floor_v)
{
    double den = fabs(old_v) > floor_v ? fabs(old_v) : floor_v;

    return fabs(new_v - old_v) / den;
}

/* P phi, and phi' P phi. */
static double rls_gain(const qc_rls_t *rls, const double *phi, double *pphi)
{
    int i;

    for (i = 0; i < NP; i++) {
        pphi[i] = dot(rls->p[i], phi);
    }
    return dot(phi, pphi);
}

/*
 * The step with directional forgetting (see the top of this file).  The
 * discount is spread over the directions the sample excites, so that a
 * server with one tree in use forgets as fast as the four-parameter
 * model did.
 */
/* Standard errors past a physical bound that 95% of a normal
 * estimate's spread stays within. */
#define OUT_SE 2.0

/* Does the step put a parameter past its physical range by more than
 * OUT_SE of its standard errors (at the nominal noise)?  Then no one
 * regime explains the sample and the history together. */
static int rls_contradicts(const qc_rls_t *rls)
{
    int i;

    for (i = 0; i < NP; i++) {
        double lo = lo_nat(i) * scale_of(i), hi = hi_nat(i) * scale_of(i);
        double se = OUT_SE * NOISE_SD * sqrt(fmax(rls->p[i][i], 0.0));

        if (rls->theta[i] < lo - se || rls->theta[i] > hi + se) {
            return 1;
        }
    }
    return 0;
}

static int rls_apply(qc_rls_t *rls, const double *pphi, double r, double e,
                     int active)
{
    int contradicts;

    double mu = 1.0 - active * (1.0 - rls->lambda), beta, s, t;
    int i, j;

    beta = r * (1.0 - mu) > mu ? 1.0 : mu - (1.0 - mu) / r;
    s = 1.0 + beta * r;         /* > 0: mu (1 + r) or 1 + r */
    for (i = 0; i < NP; i++) {
        rls->theta[i] += pphi[i] * e / s;
    }
    for (i = 0; i < NP; i++) {
        for (j = i; j < NP; j++) {
            double v = rls->p[i][j] - beta * pphi[i] * pphi[j] / s;

            /* Keep P exactly symmetric. */
            rls->p[i][j] = v;
            rls->p[j][i] = v;
        }
    }
    t = trace_of(rls);
    if (t > TRACE_MAX) {
        for (i = 0; i < NP; i++) {
            for (j = 0; j < NP; j++) {
                rls->p[i][j] *= TRACE_MAX / t;
            }
        }
    }
    contradicts = rls_contradicts(rls);
    project_box(rls);
    return contradicts;
}

/* The running measures qc_rls_converged() reads. */
static void rls_track(qc_rls_t *rls, const qc_rls_t *old, double e)
{
    double ch = rel_change(rls->theta[0], old->theta[0], A_FLOOR);
    double t = rel_change(rls->theta[IB], old->theta[IB], B_FLOOR);

    if (t > ch) {
        ch = t;
    }
    rls->change += CHANGE_W * (ch - rls->change);
    rls->err2 = rls->n == 0 ? e * e : rls->err2 + ERR_W * (e * e - rls->err2);
    rls->n++;
}

int qc_rls_update(qc_rls_t *rls, const qc_rls_sample_t *x,
                  double u_measured)
{
    double phi[NP], pphi[NP], r, e;
    qc_rls_t old;
    int i, out, active = regressor(x, phi);

    if (active < 0 || !isfinite(u_measured) || u_measured < 0.0) {
        return -1;
    }
    /* An idle period says nothing of the costs but all of d: the
     * regressor is then d's alone, and only d learns from it. */
    e = u_measured - dot(rls->theta, phi);
    /* A capped reading bounds the load from below: it corrects a model
     * that predicts less, and says nothing otherwise. */
    if (qc_u_capped(u_measured) && e <= 0.0) {
        return 0;
    }
    r = rls_gain(rls, phi, pphi);
    if (!(r > R_EPS)) {
        return 0;
    }
    old = *rls;
    out = rls_apply(rls, pphi, r, e, active);
    if (out && qc_u_capped(u_measured)) {
        /* a bound no estimate in the box reconciles with what was
         * measured: the measures stand */
        *rls = old;
        return 0;
    }
    if (out && rls->censored) {
        /* A measured reading no estimate in the box explains with what
         * capped ones taught: their bounds were taken as measures, and
         * their regime is gone (a background charged to the requests
         * while it saturated the resource with them, then ended).  The
         * sample is learnt from the prior's uncertainty, not projected
         * against them onto the costs' floor. */
        *rls = old;
        reset_p(rls);
        rls->censored = 0;
        r = rls_gain(rls, phi, pphi);
        rls_apply(rls, pphi, r, e, active);
    }
    rls->censored |= qc_u_capped(u_measured);
    if (!all_finite(rls)) {
        *rls = old;
        return -1;
    }
    /* Rounding can cost a diagonal its sign after many near-singular
     * updates; restart the covariance rather than keep a bad one. */
    for (i = 0; i < NP; i++) {
        if (!(rls->p[i][i] > 0.0)) {
            reset_p(rls);
            break;
        }
    }
    rls_track(rls, &old, e);
    memcpy(rls->phi_last, phi, sizeof(phi));
    return 1;
}

double qc_rls_predict(const qc_rls_t *rls, const qc_rls_sample_t *x)
{
    double phi[NP], v = 0.0;
    int i;

    if (regressor(x, phi) < 0) {
        return NAN;
    }
    for (i = 0; i < NP; i++) {
        v += estimate(rls, i) * phi[i] * scale_of(i);
    }
    return v;
}

double qc_rls_a_tree(const qc_rls_t *rls, unsigned j)
{
    return estimate(rls, j < NT ? (int)j : NT - 1);
}

double qc_rls_a(const qc_rls_t *rls)
{
    return estimate(rls, 0);
}

double qc_rls_b(const qc_rls_t *rls)
{
    return estimate(rls, IB);
}

double qc_rls_c(const qc_rls_t *rls)
{
    return estimate(rls, IC);
}

double qc_rls_d(const qc_rls_t *rls)
{
    return estimate(rls, ID);
}

void qc_rls_limit_d(qc_rls_t *rls, double d_max)
{
    if (isfinite(d_max) && estimate(rls, ID) > d_max) {
        rls->theta[ID] = d_max * scale_of(ID);
    }
}

/* Parameter i's standard error over its prior standard deviation. */
static double rls_uncertainty(const qc_rls_t *rls, int i)
{
    double sd0 = prior_sd(i) / NOISE_SD;

    return rls->p[i][i] > 0.0 ? sqrt(rls->p[i][i]) / sd0 : 0.0;
}

double qc_rls_a_uncertainty(const qc_rls_t *rls, unsigned j)
{
    return rls_uncertainty(rls, (int)(j < NT ? j : NT - 1));
}

double qc_rls_c_uncertainty(const qc_rls_t *rls)
{
    return rls_uncertainty(rls, IC);
}

double qc_rls_tree_uncertainty(const qc_rls_t *rls, unsigned j,
                               double bytes)
{
    double phi[NP] = { 0.0 }, pphi[NP], var0;

    j = j < NT ? j : NT - 1;
    phi[j] = 1.0 / scale_of((int)j);
    phi[IB] = bytes > 0.0 && isfinite(bytes) ? bytes / scale_of(IB) : 0.0;
    var0 = phi[j] * phi[j] * (A_SD / NOISE_SD) * (A_SD / NOISE_SD)
           + phi[IB] * phi[IB] * (B_SD / NOISE_SD) * (B_SD / NOISE_SD);
    return sqrt(fmax(rls_gain(rls, phi, pphi), 0.0) / var0);
}

void qc_rls_scale(qc_rls_t *rls, double s)
{
    int i;

    if (!(s > 0.0) || !isfinite(s)) {
        return;
    }
    for (i = 0; i < NP; i++) {
        rls->theta[i] *= s;
    }
    rls->err2 *= s * s;
    project_box(rls);
}

double qc_rls_trace(const qc_rls_t *rls)
{
    return trace_of(rls);
}

int qc_rls_converged(const qc_rls_t *rls)
{
    double pphi[NP], var;

    if (rls->n < CONV_MIN_N || rls->change > CONV_CHANGE) {
        return 0;
    }
    var = rls_gain(rls, rls->phi_last, pphi) * rls->err2;
    return sqrt(var) <= CONV_REL_SE * fabs(dot(rls->theta, rls->phi_last));
}
