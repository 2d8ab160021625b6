/* Licensed under the Apache License, Version 2.0. */

/*
 * PI tuning (paper §4.4, eqs. 4-8).
 *
 * Plant P(s) = p e^(-s Td); controller C(s) = Kp (1 + Ki/s).  The paper
 * takes Td = T/2, the delay of a zero-order hold on the output, for a
 * utilization sampled at an instant.  Ours is the mean over the period
 * just ended (a sensor that averages over T lags by another T/2), so
 * here Td = T: one whole period, which is also exactly what the
 * discrete loop is (the level set at the end of period k decides every
 * request of period k + 1, whose mean utilization is read at its end).
 * At the frequency w where the loop phase reaches -pi:
 *
 *   phase:  arg e^(-jwTd) + arg(1 + Ki/(jw)) = -w Td - atan(Ki/w) = -pi
 *           so  w Td + atan(Ki/w) = pi                              (7)
 *   tuning: atan(Ki/w) = pi/6                                       (8)
 *           =>  w Td = 5 pi/6,  w = 5 pi / (6 T),
 *               Ki = w tan(pi/6) = w / sqrt(3) = 5 pi / (6 sqrt(3) T)
 *   gain:   p Kp |1 + Ki/(jw)| = 1/G                                (6)
 *           |1 - j/sqrt(3)| = sqrt(1 + 1/3) = 2/sqrt(3)
 *           =>  Kp = sqrt(3) / (2 G p)
 *
 * Worked case p = 0.5, T = 1 s, G = 4: w = 2.617994 rad/s,
 * Ki = 1.511499 1/s, Kp = 0.4330127.
 *
 * Discrete loop: velocity (incremental) form with trapezoidal (Tustin)
 * integration, the discretization that keeps the continuous design's
 * margins at the crossover,
 *
 *   m_k = clamp(m_{k-1} + Kp [(e_k - e_{k-1}) + Ki T (e_k + e_{k-1})/2],
 *               0, M)
 *
 * Why Td = T and Tustin rather than the paper's T/2 and backward
 * Euler: doc/control.md.
 *
 * The velocity form is chosen over the positional form because (1) the
 * gains are recomputed every period from a changing process gain, and
 * with no stored integral sum a gain change cannot make the output jump;
 * (2) the state is the clamped output itself, so saturation stops the
 * integration at once (no wind-up) and the first error of the other sign
 * moves m off the limit immediately; (3) holding the output while
 * another loop's level is in force is just dropping the increment.
 * Note Kp Ki T = 5 pi / (12 G p): the per-period integral action does
 * not depend on T.
 */

#include "qc_pi.h"

#include <math.h>

#include "qc_math.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#define T_MIN 1e-3
#define G_MIN 1.0
/* Tolerance when comparing the applied level with the output: the
 * module publishes m in 16.16 fixed point. */
#define APPLIED_EPS 1e-3

void qc_pi_gains(double p, double T, double G, double *kp, double *ki)
{
    if (!(p >= QC_PI_GAIN_MIN)) {
        p = QC_PI_GAIN_MIN;
    }
    if (!(T >= T_MIN)) {
        T = T_MIN;
    }
    if (!(G >= G_MIN)) {
        G = G_MIN;
    }
    *kp = sqrt(3.0) / (2.0 * G * p);
    *ki = 5.0 * M_PI / (6.0 * sqrt(3.0) * T);
}

void qc_pi_level_utils(const double *a_tree, double b, double c, double r,
                       const double *xbar, unsigned M, double *u)
{
    unsigned k;

    u[0] = c * r;
    for (k = 1; k <= M; k++) {
        u[k] = a_tree[M - k] * r + b * r * xbar[k - 1];
    }
}

double qc_pi_process_gain(const double *u, unsigned M, double m)
{
    double slope, steepest = 0.0, floor_p;
    unsigned k, seg;

    if (M == 0) {
        return QC_PI_GAIN_MIN;
    }
    for (k = 0; k < M; k++) {
        if (u[k + 1] - u[k] > steepest) {
            steepest = u[k + 1] - u[k];
        }
    }
    m = qc_clampd(m, 0.0, (double)M);
    seg = (unsigned)floor(m);
    if (seg >= M) {
        seg = M - 1;
    }
    slope = u[seg + 1] - u[seg];
    /* Near a boundary the next step may land in the neighbouring
     * segment: design for the steeper of the two. */
    if (seg > 0 && m - seg < QC_PI_EDGE && u[seg] - u[seg - 1] > slope) {
        slope = u[seg] - u[seg - 1];
    }
    if (seg + 1 < M && seg + 1 - m < QC_PI_EDGE
        && u[seg + 2] - u[seg + 1] > slope) {
        slope = u[seg + 2] - u[seg + 1];
    }
    floor_p = QC_PI_GAIN_REL_MIN * steepest;
    if (floor_p < QC_PI_GAIN_MIN) {
        floor_p = QC_PI_GAIN_MIN;
    }
    return slope > floor_p ? slope : floor_p;
}

void qc_pi_init(qc_pi_t *pi, double m_max, double m_init)
{
    pi->m_max = m_max > 0.0 ? m_max : 1.0;
    pi->m = qc_clampd(m_init, 0.0, pi->m_max);
    pi->e_prev = 0.0;
    pi->primed = 0;
    pi->jumped = 0;
    pi->kp = 0.0;
    pi->ki = 0.0;
}

double qc_pi_step(qc_pi_t *pi, double setpoint, double measured, double p,
                  double T, double G, double applied)
{
    double e, dm;

    if (!isfinite(setpoint) || !isfinite(measured) || !isfinite(p)
        || !isfinite(T) || !isfinite(G) || !isfinite(applied)) {
        return pi->m;
    }
    qc_pi_gains(p, T, G, &pi->kp, &pi->ki);
    if (T < T_MIN) {
        T = T_MIN;
    }
    e = setpoint - measured;
    pi->jumped = 0;
    if (!pi->primed) {
        /* No proportional kick from an unknown previous error. */
        pi->e_prev = e;
        pi->primed = 1;
    }
    dm = pi->kp * ((e - pi->e_prev) + pi->ki * T * 0.5 * (e + pi->e_prev));
    pi->e_prev = e;

    /* Another loop's level is in force: the measured utilization
     * reflects that level, not ours, so do not move away from it.
     * Moving toward it is safe (and needed to take over again). */
    if (applied >= 0.0) {
        if (applied > pi->m + APPLIED_EPS && dm < 0.0) {
            dm = 0.0;
        }
        else if (applied < pi->m - APPLIED_EPS && dm > 0.0) {
            dm = 0.0;
        }
    }
    pi->m = qc_clampd(pi->m + dm, 0.0, pi->m_max);
    return pi->m;
}

double qc_pi_util_at(const double *u, unsigned M, double m)
{
    unsigned i;

    if (M == 0) {
        return u[0];
    }
    m = qc_clampd(m, 0.0, (double)M);
    i = (unsigned)floor(m);
    if (i >= M) {
        return u[M];
    }
    return u[i] + (m - i) * (u[i + 1] - u[i]);
}

double qc_pi_invert(double (*f)(double m, void *arg), void *arg,
                    double lo, double hi, double target)
{
    int n;

    if (!(f(lo, arg) <= target)) {
        return lo;
    }
    if (f(hi, arg) <= target) {
        return hi;
    }
    for (n = 0; n < 60 && hi - lo > 1e-6; n++) {
        double mid = 0.5 * (lo + hi);

        if (f(mid, arg) <= target) {
            lo = mid;
        }
        else {
            hi = mid;
        }
    }
    return lo;
}

double qc_pi_invert_above(double (*f)(double m, void *arg), void *arg,
                          double knee, double hi, double target)
{
    double at_knee = f(knee, arg);

    if (at_knee <= target || !(f(0.0, arg) < at_knee)) {
        return qc_pi_invert(f, arg, knee, hi, target);
    }
    return qc_pi_invert(f, arg, 0.0, knee, target);
}

double qc_pi_model_ratio(double measured, double model)
{
    if (!isfinite(measured) || !isfinite(model) || !(model > 1e-3)
        || qc_u_capped(measured)) {
        return 1.0;
    }
    return qc_clampd(measured / model, 0.25, 4.0);
}

int qc_pi_jump(qc_pi_t *pi, double setpoint, double measured, double m_ff,
               int saturated)
{
    /* Not to where the output already is (idle at the top): that would
     * only unprime the loop for the next, real jump. */
    if (!(pi->primed || (pi->jumped && saturated))
        || !isfinite(setpoint) || !isfinite(measured)
        || !isfinite(m_ff)
        || !(fabs(setpoint - measured)
             > QC_PI_JUMP * fabs(setpoint))
        || fabs(qc_clampd(m_ff, 0.0, pi->m_max) - pi->m) < 1e-6) {
        return 0;
    }
    pi->m = qc_clampd(m_ff, 0.0, pi->m_max);
    pi->primed = 0;
    pi->jumped = 1;
    return 1;
}

void qc_pi_hold_floor(qc_pi_t *pi, double floor)
{
    if (pi->m < floor) {
        pi->m = qc_clampd(floor, 0.0, pi->m_max);
    }
}

void qc_pi_hold_ceiling(qc_pi_t *pi, double ceiling)
{
    if (pi->m > ceiling) {
        pi->m = qc_clampd(ceiling, 0.0, pi->m_max);
    }
}

void qc_pi_shift(qc_pi_t *pi, double dm)
{
    if (!isfinite(dm)) {
        return;
    }
    pi->m = qc_clampd(pi->m + dm, 0.0, pi->m_max);
}

double qc_pi_up_limit(double m, double lowest, double unit)
{
    double least = QC_PI_UP_LEAST * unit;

    if (!isfinite(m) || !(unit > 0.0) || !(lowest >= 0.0)) {
        return m;
    }
    if (m < lowest) {
        return lowest + least;
    }
    return lowest + fmax(QC_PI_SEARCH * (m - lowest), m - lowest + least);
}

void qc_pi_restart(qc_pi_t *pi, double m)
{
    pi->m = qc_clampd(m, 0.0, pi->m_max);
    pi->primed = 0;
    pi->jumped = 1;
}

double qc_pi_output(const qc_pi_t *pi)
{
    return pi->m;
}
