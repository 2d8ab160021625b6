/* Licensed under the Apache License, Version 2.0. */

/*
 * The utilization control loop (paper §4.4): a PI controller tuned from
 * the process gain p = dU/dm, the sampling period T and a gain margin
 * G, driving the actuator input m in [0, M] (level 0 rejects, level k
 * serves from content tree k).
 *
 * Plain C, no allocation: the state is caller-owned.
 */

#ifndef QC_PI_H
#define QC_PI_H

#include "qc_reading.h"

/* Smallest process gain used (U per unit of m), so gains stay finite. */
#define QC_PI_GAIN_MIN 1e-3

/* The floor is also this fraction of the steepest segment's slope. */
#define QC_PI_GAIN_REL_MIN 0.05

/* Within this distance of a segment boundary, m may cross it in one
 * step, so both adjacent slopes are considered. */
#define QC_PI_EDGE 0.05

/* Pass as `applied` to qc_pi_step(): the loop's own output is in force. */
#define QC_PI_APPLIED_OWN (-1.0)

/* An error beyond this fraction of the set point is a large signal:
 * qc_pi_jump() moves the output to the model's answer at once. */
#define QC_PI_JUMP 0.3

typedef struct {
    double m;           /* output, in [0, m_max] */
    double m_max;       /* M */
    double e_prev;      /* error of the previous step */
    int primed;         /* e_prev is valid */
    int jumped;         /* the last change was qc_pi_jump() */
    double kp, ki;      /* gains used by the last step, for reporting */
} qc_pi_t;

/*
 * PI gains for G(s) = Kp (1 + Ki / s) on P(s) = p e^(-sT) (a hold and a
 * period-averaging sensor, T/2 each; derivation in qc_pi.c), controller
 * phase pi/6 and gain margin G: Kp = sqrt(3) / (2 G p) (dimension: 1/p),
 * Ki = 5 pi / (6 sqrt(3) T) (1/s).  p, T and G are floored at
 * QC_PI_GAIN_MIN, 1e-3 s and 1.
 */
void qc_pi_gains(double p, double T, double G, double *kp, double *ki);

/*
 * The utilization U_k the class would cause if all its clients were
 * served at level k, from the model: u[0] = c r (all rejected),
 * u[k] = a_tree[M - k] r + b r xbar[k - 1] for k = 1..M, with a_tree[j]
 * the cost of a request to the tree j below the top (s), r the offered
 * request rate (req/s) and xbar[k - 1] the mean reply size of tree k
 * (bytes).  u must hold M + 1 values.
 */
void qc_pi_level_utils(const double *a_tree, double b, double c, double r,
                       const double *xbar, unsigned M, double *u);

/*
 * Process gain dU/dm at m from the level utilizations u[0..M]: the slope
 * u[I+1] - u[I] of the segment holding m, the larger of the two slopes
 * within QC_PI_EDGE of a boundary, floored at the larger of
 * QC_PI_GAIN_MIN and QC_PI_GAIN_REL_MIN times the steepest slope (a flat
 * or inverted segment must not make the gains explode or flip sign).
 * For a loop whose m is normalized to [0, 1] across hosts with M_h
 * trees, sum M_h * qc_pi_process_gain(u_h, M_h, m * M_h) over hosts.
 */
double qc_pi_process_gain(const double *u, unsigned M, double m);

/* Start with output m_init (clamped to [0, m_max]); m_max > 0. */
void qc_pi_init(qc_pi_t *pi, double m_max, double m_init);

/*
 * One control period: returns the new output m in [0, M].  setpoint and
 * measured are utilizations over the period just ended, p the current
 * process gain, T the period (s), G the gain margin.  applied is the
 * level actually in force during the period (e.g. max(m_i, m_b M) under
 * excess sharing) or QC_PI_APPLIED_OWN; while it differs from the
 * loop's output, the output does not move away from it (it holds).
 * Non-finite inputs leave the state unchanged.
 */
double qc_pi_step(qc_pi_t *pi, double setpoint, double measured, double p,
                  double T, double G, double applied);

/*
 * Utilization at level m by linear interpolation of u[0..M] (as the
 * actuator mixes trees I and I + 1 in proportion F, §4.2).
 */
double qc_pi_util_at(const double *u, unsigned M, double m);

/*
 * The largest m in [lo, hi] with f(m, arg) <= target, for f
 * nondecreasing in m: lo when even f(lo) exceeds it, hi when f(hi) does
 * not.  Bisection to 1e-6.
 */
double qc_pi_invert(double (*f)(double m, void *arg), void *arg,
                    double lo, double hi, double target);

/*
 * The level for target on a model that may fall again below knee (the
 * lowest tree): a refusal may cost more than a cached snapshot, so
 * f(0) > f(knee) can hold.  qc_pi_invert() above knee; below it only
 * where refusing costs less than the lowest tree, else knee.
 */
double qc_pi_invert_above(double (*f)(double m, void *arg), void *arg,
                          double knee, double hi, double target);

/*
 * measured / model, the factor by which the model is off where the loop
 * is, for scaling the set point handed to qc_pi_invert(); 1 when the
 * model predicts next to nothing there or the measurement is saturated
 * (>= QC_U_SATURATED: capped, it says nothing of the factor), else
 * clamped to
 * [1/4, 4].
 */
double qc_pi_model_ratio(double measured, double model);

/*
 * Large signal.  The gains are tuned for small deviations about the set
 * point, at the slope of the segment m is on; after a step from idle to
 * several times the capacity they would walk m down one slope after
 * another over many periods while the excess queues on the link (and
 * takes further periods to drain).  When |setpoint - measured| exceeds
 * QC_PI_JUMP * setpoint, the output goes straight to m_ff, the level
 * the model says meets the set point, and the loop restarts there with
 * no proportional kick from the stale error; returns 1.  Otherwise (or
 * for non-finite input, when m_ff is where the output is already, before
 * the first qc_pi_step(), or in the period right after a jump, which
 * mixes two levels, unless `saturated`) nothing changes and it returns
 * 0: run qc_pi_step().  Pass saturated = 1 when the sensor is saturated
 * and the measurement does not lag the level: the load decided in the
 * period, all arrivals counted (qc_pi_model_ratio() leaves the model
 * alone there).
 */
int qc_pi_jump(qc_pi_t *pi, double setpoint, double measured, double m_ff,
               int saturated);

/*
 * Raise the output to at least `floor` (within [0, M]), e.g. to hold a
 * level the loop may not go below this period.  Leaves the rest of the
 * state alone.
 */
void qc_pi_hold_floor(qc_pi_t *pi, double floor);

/* Lower the output to at most ceiling (the up limit: qc_hold_up),
 * keeping the loop's state. */
void qc_pi_hold_ceiling(qc_pi_t *pi, double ceiling);

/*
 * Move the output by dm (within [0, M]), keeping
 * the loop's state: a feed-forward of what the error has not seen.
 */
void qc_pi_shift(qc_pi_t *pi, double dm);

/*
 * A factor the loops cannot measure is searched for by doubling a
 * period: any factor f is reached in log2 f periods and passed by at
 * most 2x.  The calibration k searches so while saturated readings
 * bound it only from below (qc_calib_update), and a loop's up moves so
 * where the model is least known, where the loop has not been.
 */
#define QC_PI_SEARCH 2.0

/*
 * The highest level a loop at m may reach next period: its excess over
 * the lowest tree (`lowest`) at most QC_PI_SEARCH times what it was,
 * or QC_PI_UP_LEAST of a tree (`unit`) more.  Down is never limited,
 * nor the way out of rejection (its levels are measured, and a 503 is
 * the last resort); up on the model's word is (doc/control.md, "Up
 * moves").
 */
#define QC_PI_UP_LEAST 0.15

double qc_pi_up_limit(double m, double lowest, double unit);

/*
 * Move the output to m (within [0, M]) and restart the loop there, with
 * no proportional kick from the error before: the caller knows the
 * level its set point needs better than the PI's path does.
 */
void qc_pi_restart(qc_pi_t *pi, double m);

/* Current output. */
double qc_pi_output(const qc_pi_t *pi);

#endif /* QC_PI_H */
