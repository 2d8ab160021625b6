/* Licensed under the Apache License, Version 2.0. */

/* Unit tests of PI tuning and the control loop (controller/qc_pi.c). */

#include <check.h>
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "qc_test.h"
#include "qc_pi.h"
#include "sim_plant.h"

#define assert_near(x, y, tol) \
    ck_assert_msg(fabs((x) - (y)) <= (tol), "%s = %.9g, expected %.9g +- %g", \
                  #x, (double)(x), (double)(y), (double)(tol))

#define U_SET 0.58              /* the schedulable bound of §4.1 */
#define T_PERIOD 1.0            /* s; the loop is scale-free in T */
#define IDLE 10                 /* idle periods before the step */
#define RUN 60                  /* periods after the step */
#define BAND 0.05               /* settling band, relative */
#define NOISE 0.01              /* relative noise on measured U */

START_TEST(test_gains_hand_worked)
{
    double kp, ki;

    /* p = 0.5, T = 1, G = 4: Kp = sqrt(3)/(2*4*0.5) = sqrt(3)/4,
     * Ki = (5 pi / 6) / sqrt(3) = 2.6179938780 / 1.7320508076. */
    qc_pi_gains(0.5, 1.0, 4.0, &kp, &ki);
    assert_near(kp, 0.4330127019, 1e-9);
    assert_near(ki, 1.5114994702, 1e-9);

    /* Other cases scale as derived: Kp ~ 1/(G p), Ki ~ 1/T. */
    qc_pi_gains(1.6, 5.0, 10.0, &kp, &ki);
    assert_near(kp, sqrt(3.0) / 32.0, 1e-12);
    assert_near(ki, 5.0 * M_PI / (30.0 * sqrt(3.0)), 1e-12);

    /* Floors: no division by a zero or negative gain, G >= 1. */
    qc_pi_gains(0.0, 1.0, 4.0, &kp, &ki);
    assert_near(kp, sqrt(3.0) / (8.0 * QC_PI_GAIN_MIN), 1e-6);
    qc_pi_gains(-3.0, 1.0, 4.0, &kp, &ki);
    ck_assert(kp > 0.0 && isfinite(kp));
    qc_pi_gains(0.5, 1.0, 0.2, &kp, &ki);
    assert_near(kp, sqrt(3.0), 1e-12);
    qc_pi_gains(0.5, 0.0, 4.0, &kp, &ki);
    ck_assert(isfinite(ki) && ki > 0.0);
}
END_TEST

/* The gains satisfy eqs. (6)-(8) with Td = T at w = 5 pi / (6 T), checked with
 * complex arithmetic rather than the closed form. */
START_TEST(test_gains_satisfy_design_equations)
{
    static const double cases[][3] = {
        { 0.5, 1.0, 4.0 }, { 1.7, 5.0, 4.0 }, { 0.2, 2.0, 10.0 },
        { 3.0, 0.5, 2.0 }
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double p = cases[i][0], T = cases[i][1], G = cases[i][2];
        double kp, ki, w = 5.0 * M_PI / (6.0 * T);
        double complex c, l;

        qc_pi_gains(p, T, G, &kp, &ki);
        c = kp * (1.0 + ki / (I * w));
        l = p * cexp(-I * w * T) * c;
        assert_near(cabs(l), 1.0 / G, 1e-12);               /* (6) */
        assert_near(fabs(carg(l)), M_PI, 1e-9);              /* (7) */
        assert_near(-carg(c), M_PI / 6.0, 1e-12);            /* (8) */
    }
}
END_TEST

START_TEST(test_process_gain_levels)
{
    static const double lv[] = { 0.03, 0.60, 1.10, 1.74 };
    static const double flat[] = { 0.10, 0.10, 0.90 };
    static const double inverted[] = { 0.50, 0.30, 0.90 };
    static const double idle[] = { 0.0, 0.0, 0.0 };
    static const double xbar[] = { 5000.0, 20000.0, 60000.0 };
    static const double a_same[] = { 1e-4, 1e-4, 1e-4 };
    static const double a_cgi[] = { 3e-3, 1e-4, 1e-4 };
    double u[4];

    /* Inside a segment: its slope. */
    assert_near(qc_pi_process_gain(lv, 3, 0.5), 0.57, 1e-12);
    assert_near(qc_pi_process_gain(lv, 3, 1.5), 0.50, 1e-12);
    assert_near(qc_pi_process_gain(lv, 3, 2.5), 0.64, 1e-12);
    /* At or near a boundary: the steeper neighbour. */
    assert_near(qc_pi_process_gain(lv, 3, 1.0), 0.57, 1e-12);
    assert_near(qc_pi_process_gain(lv, 3, 1.02), 0.57, 1e-12);
    assert_near(qc_pi_process_gain(lv, 3, 0.98), 0.57, 1e-12);
    assert_near(qc_pi_process_gain(lv, 3, 2.0), 0.64, 1e-12);
    assert_near(qc_pi_process_gain(lv, 3, 1.97), 0.64, 1e-12);
    /* The ends and out-of-range m. */
    assert_near(qc_pi_process_gain(lv, 3, 0.0), 0.57, 1e-12);
    assert_near(qc_pi_process_gain(lv, 3, 3.0), 0.64, 1e-12);
    assert_near(qc_pi_process_gain(lv, 3, -2.0), 0.57, 1e-12);
    assert_near(qc_pi_process_gain(lv, 3, 9.0), 0.64, 1e-12);
    /* Flat or inverted segments: floored at 5% of the steepest. */
    assert_near(qc_pi_process_gain(flat, 2, 0.5), 0.04, 1e-12);
    assert_near(qc_pi_process_gain(inverted, 2, 0.3), 0.03, 1e-12);
    /* Idle: the absolute floor, never <= 0. */
    assert_near(qc_pi_process_gain(idle, 2, 1.0), QC_PI_GAIN_MIN, 1e-15);
    ck_assert(qc_pi_process_gain(idle, 0, 0.0) > 0.0);

    /* Level utilizations from the model: U_0 = c R,
     * U_k = a R + b R xbar_k. */
    qc_pi_level_utils(a_same, 8e-9, 4e-5, 1000.0, xbar, 3, u);
    assert_near(u[0], 0.04, 1e-12);
    assert_near(u[1], 0.14, 1e-12);
    assert_near(u[2], 0.26, 1e-12);
    assert_near(u[3], 0.58, 1e-12);
    assert_near(qc_pi_process_gain(u, 3, 2.5), 0.32, 1e-12);
    /* A dynamic top tree (3 ms a request) over static ones: a_tree[0]
     * is the top's cost. */
    qc_pi_level_utils(a_cgi, 8e-9, 4e-5, 100.0, xbar, 3, u);
    assert_near(u[3], 0.3 + 0.048, 1e-12);
    assert_near(u[2], 0.01 + 0.016, 1e-12);
}
END_TEST

/*
 * The closed loop: IDLE periods of an idle server, then a step to 3x
 * overload (U at full service = 1.74).  The controller sees the level
 * utilizations of its model (lv_model, e.g. from the measured request
 * rate and the RLS estimates) and the measured U; the plant is lv_plant.
 * u[k], m[k] for k = 0..RUN-1 are the periods after the step.
 */
typedef struct {
    const double *u;
    unsigned M;
} levels_t;

static double levels_cb(double m, void *arg)
{
    const levels_t *lv = arg;

    return qc_pi_util_at(lv->u, lv->M, m);
}

/*
 * As the controller runs a loop: a large error moves m to the level the
 * model gives for the set point (qc_pi_jump), a small one is the PI's.
 * With jump 0, the PI alone (the paper's loop).
 */
static void run_step(double G, unsigned M, const double *lv_plant,
                     const double *lv_model, double noise,
                     unsigned long long seed, int jump, double *u,
                     double *m)
{
    static const double zero[SIM_MAX_M + 1];
    sim_plant_t pl;
    qc_pi_t pi;
    double um = 0.0, mk;
    int k;

    sim_plant_init(&pl, M, (double)M, noise, seed);
    qc_pi_init(&pi, (double)M, (double)M);
    for (k = -IDLE; k < RUN; k++) {
        const double *model = k < 0 ? zero : lv_model;
        levels_t lv = { model, M };
        double p, m_ff;

        /* The controller acts on the period just measured. */
        p = qc_pi_process_gain(model, M, qc_pi_output(&pi));
        m_ff = qc_pi_invert(levels_cb, &lv, 0.0, (double)M, U_SET
                            / qc_pi_model_ratio(um, qc_pi_util_at(
                                model, M, qc_pi_output(&pi))));
        if (jump && qc_pi_jump(&pi, U_SET, um, m_ff, 0)) {
            mk = qc_pi_output(&pi);
        }
        else {
            mk = qc_pi_step(&pi, U_SET, um, p, T_PERIOD, G,
                            QC_PI_APPLIED_OWN);
        }
        if (k == -IDLE) {
            ck_assert(mk == (double)M);
        }
        sim_plant_set_levels(&pl, k < 0 ? zero : lv_plant);
        um = sim_plant_period(&pl, mk);
        if (k >= 0) {
            u[k] = um;
            m[k] = mk;
        }
    }
}

typedef struct {
    int settle;             /* first period from which U stays in band */
    double overshoot;       /* beyond the set point, relative */
    double sse_mean;        /* mean error over the last 30 periods */
    double sse_rms;
    int crossings;          /* set-point crossings before settling */
} step_stats_t;

static step_stats_t analyse(const double *u)
{
    step_stats_t st = { RUN, 0.0, 0.0, 0.0, 0 };
    int k, first = -1;

    for (k = RUN - 1; k >= 0; k--) {
        if (fabs(u[k] - U_SET) > BAND * U_SET) {
            break;
        }
        st.settle = k;
    }
    for (k = 0; k < RUN; k++) {
        if (first < 0 && u[k] <= U_SET) {
            first = k;
        }
        if (first >= 0 && (U_SET - u[k]) / U_SET > st.overshoot) {
            st.overshoot = (U_SET - u[k]) / U_SET;
        }
        if (k > 0 && k <= st.settle
            && (u[k] - U_SET) * (u[k - 1] - U_SET) < 0.0) {
            st.crossings++;
        }
    }
    for (k = RUN - 30; k < RUN; k++) {
        st.sse_mean += (u[k] - U_SET) / 30.0;
        st.sse_rms += (u[k] - U_SET) * (u[k] - U_SET) / 30.0;
    }
    st.sse_rms = sqrt(st.sse_rms);
    return st;
}

static void print_run(const char *name, const double *u, step_stats_t st)
{
    int k;

    printf("%s: settled (+-5%%) after %d periods, overshoot %.1f%%, "
           "steady-state error %+.4f (rms %.4f)\n  U:", name, st.settle,
           100.0 * st.overshoot, st.sse_mean, st.sse_rms);
    for (k = 0; k < 24; k++) {
        printf(" %.3f", u[k]);
    }
    printf("\n");
}

/* Admission control only (M = 1): U = c R at m = 0, 3 U_SET at m = 1. */
static const double lv_adm[] = { 0.05, 1.74 };

START_TEST(test_step_g4)
{
    double u[RUN], m[RUN];
    step_stats_t st, clean;

    run_step(4.0, 1, lv_adm, lv_adm, 0.0, 1, 1, u, m);
    clean = analyse(u);
    print_run("G=4 step to 3x overload, no noise", u, clean);
    ck_assert_int_le(clean.settle, 10);
    ck_assert(clean.overshoot <= 0.20);
    ck_assert(fabs(clean.sse_mean) < 1e-4);     /* integral action */

    run_step(4.0, 1, lv_adm, lv_adm, NOISE, 2, 1, u, m);
    st = analyse(u);
    print_run("G=4 step to 3x overload, 1% noise", u, st);
    ck_assert_int_le(st.settle, 10);
    ck_assert(st.overshoot <= 0.20);
    ck_assert(fabs(st.sse_mean) < 0.01);
}
END_TEST

START_TEST(test_step_g10)
{
    double u[RUN], m[RUN], u4[RUN];
    step_stats_t st, clean, clean4;
    int k;

    run_step(4.0, 1, lv_adm, lv_adm, 0.0, 1, 0, u4, m);
    clean4 = analyse(u4);
    run_step(10.0, 1, lv_adm, lv_adm, 0.0, 1, 0, u, m);
    clean = analyse(u);
    print_run("G=10 step to 3x overload, no noise", u, clean);
    /* Slower than G = 4, yet settles... */
    ck_assert_int_gt(clean.settle, clean4.settle);
    ck_assert_int_le(clean.settle, 40);
    /* ...without oscillation: a monotone approach from above. */
    for (k = 1; k < RUN; k++) {
        ck_assert_msg(u[k] <= u[k - 1] + 1e-12, "U rose at period %d", k);
    }
    ck_assert(clean.overshoot < 1e-3);
    ck_assert_int_eq(clean.crossings, 0);
    /* still closing in at period 30 (the mean is over 30..59) */
    ck_assert(fabs(clean.sse_mean) < 0.015);

    run_step(10.0, 1, lv_adm, lv_adm, NOISE, 2, 0, u, m);
    st = analyse(u);
    print_run("G=10 step to 3x overload, 1% noise", u, st);
    ck_assert_int_le(st.settle, 40);
    /* No overshoot beyond the noise (3.5 sigma = 3.5%). */
    ck_assert(st.overshoot <= 0.035);
    ck_assert(fabs(st.sse_mean) < 0.01);
}
END_TEST

/* Three content trees; the gain changes along the way. */
START_TEST(test_step_multilevel)
{
    static const double lv[] = { 0.05, 0.80, 1.30, 1.74 };
    double u[RUN], m[RUN];
    step_stats_t st;

    run_step(4.0, 3, lv, lv, NOISE, 3, 1, u, m);
    st = analyse(u);
    print_run("G=4 three trees, 1% noise", u, st);
    ck_assert_int_le(st.settle, 10);
    ck_assert(st.overshoot <= 0.20);
    /* Settles between rejection and the first tree (U_SET < 0.80). */
    ck_assert(m[RUN - 1] > 0.5 && m[RUN - 1] < 1.0);
}
END_TEST

/* The model used for the gain is wrong by -30% or +50%. */
START_TEST(test_step_model_error)
{
    static const double lo[] = { 0.05, 0.05 + 0.7 * 1.69 };
    static const double hi[] = { 0.05, 0.05 + 1.5 * 1.69 };
    double u[RUN], m[RUN];
    step_stats_t st;

    run_step(4.0, 1, lv_adm, lo, NOISE, 4, 1, u, m);
    st = analyse(u);
    print_run("G=4, gain underestimated by 30%", u, st);
    ck_assert_int_le(st.settle, 15);
    ck_assert(st.overshoot <= 0.20);

    run_step(4.0, 1, lv_adm, hi, NOISE, 5, 1, u, m);
    st = analyse(u);
    print_run("G=4, gain overestimated by 50%", u, st);
    ck_assert_int_le(st.settle, 15);
    /* The jump trusts the model: one 50% too steep lands a third below
     * the set point (0.58 / 1.5), and the PI brings it back. */
    ck_assert(st.overshoot <= 0.35);
}
END_TEST

/* Saturated at M for a long idle spell, then the load arrives. */
START_TEST(test_antiwindup_saturation)
{
    qc_pi_t pi;
    sim_plant_t pl;
    double um = 0.0, m = 1.0;
    int k, left = -1;

    qc_pi_init(&pi, 1.0, 1.0);
    sim_plant_init(&pl, 1, 1.0, 0.0, 1);
    for (k = 0; k < 500; k++) {
        m = qc_pi_step(&pi, U_SET, 0.0, 1e-3, T_PERIOD, 4.0,
                       QC_PI_APPLIED_OWN);
        ck_assert(m == 1.0);
    }
    sim_plant_set_levels(&pl, lv_adm);
    for (k = 0; k < 20; k++) {
        double p = qc_pi_process_gain(lv_adm, 1, m);

        um = sim_plant_period(&pl, m);
        m = qc_pi_step(&pi, U_SET, um, p, T_PERIOD, 4.0, QC_PI_APPLIED_OWN);
        if (left < 0 && m < 1.0) {
            left = k + 1;
        }
    }
    printf("anti-windup: output left saturation %d period(s) after "
           "the load rose\n", left);
    ck_assert_int_eq(left, 1);
    ck_assert(fabs(um - U_SET) <= BAND * U_SET);

    /* The other end: everything rejected for long, then load falls. */
    qc_pi_init(&pi, 1.0, 0.0);
    for (k = 0; k < 500; k++) {
        m = qc_pi_step(&pi, U_SET, 0.9, 0.5, T_PERIOD, 4.0,
                       QC_PI_APPLIED_OWN);
        ck_assert(m == 0.0);
    }
    m = qc_pi_step(&pi, U_SET, 0.2, 0.5, T_PERIOD, 4.0, QC_PI_APPLIED_OWN);
    ck_assert(m > 0.1);
}
END_TEST

/* A guaranteed server's loop while the best-effort level is in force. */
START_TEST(test_antiwindup_held)
{
    qc_pi_t pi;
    double m, m_held;
    int k;

    qc_pi_init(&pi, 3.0, 1.2);
    /* Over its target (it uses excess capacity at the applied level 3):
     * the loop must hold, not drift toward 0. */
    for (k = 0; k < 1000; k++) {
        m = qc_pi_step(&pi, 0.2, 0.35, 0.3, T_PERIOD, 4.0, 3.0);
        ck_assert(m == 1.2);
    }
    /* Best effort drops below: the loop takes over from where it was
     * and moves down at once. */
    m_held = qc_pi_output(&pi);
    m = qc_pi_step(&pi, 0.2, 0.35, 0.3, T_PERIOD, 4.0, m_held);
    ck_assert(m < m_held);

    /* Under its target at a higher applied level: moving up (toward the
     * applied level) is allowed. */
    qc_pi_init(&pi, 3.0, 1.2);
    m = qc_pi_step(&pi, 0.2, 0.10, 0.3, T_PERIOD, 4.0, 3.0);
    ck_assert(m > 1.2);

    /* The applied level below the output (forced lower): no upward
     * drift either. */
    qc_pi_init(&pi, 3.0, 2.0);
    for (k = 0; k < 1000; k++) {
        m = qc_pi_step(&pi, 0.5, 0.1, 0.3, T_PERIOD, 4.0, 0.5);
        ck_assert(m == 2.0);
    }
}
END_TEST

START_TEST(test_step_details)
{
    qc_pi_t pi;
    double m;

    /* At the set point, a change of gain does not move the output. */
    qc_pi_init(&pi, 2.0, 1.3);
    m = qc_pi_step(&pi, 0.5, 0.5, 0.4, T_PERIOD, 4.0, QC_PI_APPLIED_OWN);
    assert_near(m, 1.3, 1e-15);
    m = qc_pi_step(&pi, 0.5, 0.5, 0.04, T_PERIOD, 4.0, QC_PI_APPLIED_OWN);
    assert_near(m, 1.3, 1e-15);

    /* One step by hand: first step has no proportional kick; p = 0.5,
     * G = 4: Kp Ki T = 0.4330127 * 1.5114995 = 0.6544985. */
    qc_pi_init(&pi, 2.0, 1.0);
    m = qc_pi_step(&pi, 0.5, 0.4, 0.5, T_PERIOD, 4.0, QC_PI_APPLIED_OWN);
    assert_near(m, 1.0 + 0.6544985 * 0.1, 1e-7);
    assert_near(pi.kp, 0.4330127019, 1e-9);
    /* Second: + Kp (e - e_prev) + Kp Ki T (e + e_prev) / 2, e = 0.05
     * (trapezoidal integration). */
    m = qc_pi_step(&pi, 0.5, 0.45, 0.5, T_PERIOD, 4.0, QC_PI_APPLIED_OWN);
    assert_near(m, 1.06544985 + 0.4330127 * (0.05 - 0.1)
                + 0.6544985 * 0.075, 1e-7);

    /* Garbage in: state unchanged. */
    m = qc_pi_step(&pi, NAN, 0.45, 0.5, T_PERIOD, 4.0, QC_PI_APPLIED_OWN);
    ck_assert(m == qc_pi_output(&pi));
    ck_assert(qc_pi_step(&pi, 0.5, INFINITY, 0.5, T_PERIOD, 4.0,
                         QC_PI_APPLIED_OWN) == m);

    /* Initial output clamped. */
    qc_pi_init(&pi, 2.0, 7.0);
    ck_assert(qc_pi_output(&pi) == 2.0);
    qc_pi_init(&pi, 2.0, -1.0);
    ck_assert(qc_pi_output(&pi) == 0.0);
}
END_TEST

static const double lv_inv[3] = { 0.01, 0.39, 3.1 };

static double util_cb(double m, void *arg)
{
    return qc_pi_util_at(arg, 2, m);
}

/* The actuator mixes trees I and I + 1, so U is linear between levels;
 * the large-signal jump needs the inverse. */
START_TEST(test_util_at_and_invert)
{
    void *arg = (void *)lv_inv;

    ck_assert(fabs(qc_pi_util_at(lv_inv, 2, 0.0) - 0.01) < 1e-12);
    ck_assert(fabs(qc_pi_util_at(lv_inv, 2, 0.5) - 0.20) < 1e-12);
    ck_assert(fabs(qc_pi_util_at(lv_inv, 2, 1.1) - 0.661) < 1e-12);
    ck_assert(fabs(qc_pi_util_at(lv_inv, 2, 2.0) - 3.1) < 1e-12);
    ck_assert(fabs(qc_pi_util_at(lv_inv, 2, 7.0) - 3.1) < 1e-12);
    ck_assert(fabs(qc_pi_util_at(lv_inv, 2, -1.0) - 0.01) < 1e-12);

    /* 0.58 = 0.39 + F (3.1 - 0.39): F = 0.19 / 2.71 */
    ck_assert(fabs(qc_pi_invert(util_cb, arg, 0.0, 2.0, 0.58)
                   - (1.0 + 0.19 / 2.71)) < 1e-5);
    ck_assert(fabs(qc_pi_invert(util_cb, arg, 0.0, 2.0, 0.2) - 0.5) < 1e-5);
    /* beyond the ends: the nearest end */
    ck_assert(qc_pi_invert(util_cb, arg, 0.0, 2.0, 5.0) == 2.0);
    ck_assert(qc_pi_invert(util_cb, arg, 0.0, 2.0, 0.001) == 0.0);
}
END_TEST

/* A refusal dearer than the lowest tree: U(0) = 0.9 > U(1) = 0.1. */
static const double lv_dear[3] = { 0.9, 0.1, 2.1 };

START_TEST(test_invert_above_the_lowest_tree)
{
    void *dear = (void *)lv_dear, *cheap = (void *)lv_inv;

    /* qc_pi_invert alone reads U(0) > 0.6 as "refuse everyone" */
    ck_assert(qc_pi_invert(util_cb, dear, 0.0, 2.0, 0.6) == 0.0);
    /* 0.6 = 0.1 + F 2.0 */
    ck_assert(fabs(qc_pi_invert_above(util_cb, dear, 1.0, 2.0, 0.6) - 1.25)
              < 1e-5);
    /* over the bound at the lowest tree, refusing does not help: stay */
    ck_assert(qc_pi_invert_above(util_cb, dear, 1.0, 2.0, 0.05) == 1.0);
    /* where refusing is cheaper, below the lowest tree as before */
    ck_assert(fabs(qc_pi_invert_above(util_cb, cheap, 1.0, 2.0, 0.2) - 0.5)
              < 1e-5);
    ck_assert(fabs(qc_pi_invert_above(util_cb, cheap, 1.0, 2.0, 0.58)
                   - (1.0 + 0.19 / 2.71)) < 1e-5);
}
END_TEST

/* Up, the excess over the lowest tree at most doubles, or grows by
 * 0.15 of a tree; out of rejection, to just above the lowest tree. */
START_TEST(test_up_limit)
{
    ck_assert(fabs(qc_pi_up_limit(1.0, 1.0, 1.0) - 1.15) < 1e-9);
    ck_assert(fabs(qc_pi_up_limit(1.1, 1.0, 1.0) - 1.25) < 1e-9);
    ck_assert(fabs(qc_pi_up_limit(1.4, 1.0, 1.0) - 1.8) < 1e-9);
    ck_assert(fabs(qc_pi_up_limit(0.2, 1.0, 1.0) - 1.15) < 1e-9);
    /* best effort's units: a host of two trees, m_b in [0, 1] */
    ck_assert(fabs(qc_pi_up_limit(0.6, 0.5, 0.5) - 0.7) < 1e-9);
    ck_assert(fabs(qc_pi_up_limit(0.5, 0.5, 0.5) - 0.575) < 1e-9);
    /* from the lowest tree to the top of two in four periods */
    {
        double m = 1.0;
        int n = 0;

        while (m < 2.0 && n < 10) {
            m = qc_pi_up_limit(m, 1.0, 1.0);
            n++;
        }
        ck_assert_int_eq(n, 4);
    }
    ck_assert(isnan(qc_pi_up_limit(NAN, 1.0, 1.0)));
    ck_assert(qc_pi_up_limit(1.2, 1.0, 0.0) == 1.2);
}
END_TEST

/* A small error leaves the PI in charge; a large one moves the output
 * to the model's level at once, and the next step starts from there
 * without a proportional kick from the stale error. */
START_TEST(test_jump)
{
    qc_pi_t pi;
    double m;

    qc_pi_init(&pi, 2.0, 2.0);
    /* not before a first step: there is no known level to jump from */
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, 3.1, 1.07, 0), 0);
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, 3.1, 1.07, 1), 0);
    qc_pi_step(&pi, 0.58, 0.58, 2.71, 1.0, 4.0, QC_PI_APPLIED_OWN);
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, 0.70, 1.07, 0), 0);
    ck_assert(qc_pi_output(&pi) == 2.0);
    /* idle at the top: nowhere to jump, the loop stays primed */
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, 0.01, 2.0, 0), 0);
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, 0.01, 5.0, 0), 0);
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, 0.58 * (1 + QC_PI_JUMP) - 1e-9,
                                1.07, 0), 0);
    /* saturated: the same threshold */
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, 0.58 * (1 + QC_PI_JUMP) - 1e-9,
                                1.07, 1), 0);
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, 0.58 * (1 + QC_PI_JUMP) + 1e-9,
                                1.07, 1), 1);
    ck_assert(qc_pi_output(&pi) == 1.07);
    qc_pi_step(&pi, 0.58, 0.58, 2.71, 1.0, 4.0, QC_PI_APPLIED_OWN);
    qc_pi_init(&pi, 2.0, 2.0);
    qc_pi_step(&pi, 0.58, 0.58, 2.71, 1.0, 4.0, QC_PI_APPLIED_OWN);
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, 3.1, 1.07, 0), 1);
    ck_assert(qc_pi_output(&pi) == 1.07);
    /* no kick: the first step after a jump is integral action only */
    m = qc_pi_step(&pi, 0.58, 0.60, 2.71, 1.0, 4.0, QC_PI_APPLIED_OWN);
    ck_assert(m < 1.07);
    ck_assert(fabs((1.07 - m) - pi.kp * pi.ki * 1.0 * 0.02) < 1e-12);
    /* clamped to the range; not twice running; up as well as down */
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, 3.1, -0.5, 0), 1);
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, 3.1, 1.0, 0), 0);
    /* ... unless saturated with the load counted: then at once again */
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, 3.1, 1.0, 1), 1);
    ck_assert(qc_pi_output(&pi) == 1.0);
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, 3.1, 0.0, 1), 1);
    qc_pi_step(&pi, 0.58, 0.58, 2.71, 1.0, 4.0, QC_PI_APPLIED_OWN);
    ck_assert(qc_pi_output(&pi) == 0.0);
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, 0.1, 9.0, 0), 1);
    ck_assert(qc_pi_output(&pi) == 2.0);
    qc_pi_step(&pi, 0.58, 0.58, 2.71, 1.0, 4.0, QC_PI_APPLIED_OWN);
    /* non-finite input changes nothing */
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, NAN, 1.0, 0), 0);
    ck_assert_int_eq(qc_pi_jump(&pi, 0.58, 3.0, INFINITY, 0), 0);
    ck_assert(qc_pi_output(&pi) == 2.0);
}
END_TEST

static Suite *pi_suite(void)
{
    Suite *s = suite_create("qc_pi");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_gains_hand_worked);
    tcase_add_test(tc, test_gains_satisfy_design_equations);
    tcase_add_test(tc, test_process_gain_levels);
    tcase_add_test(tc, test_step_g4);
    tcase_add_test(tc, test_step_g10);
    tcase_add_test(tc, test_step_multilevel);
    tcase_add_test(tc, test_step_model_error);
    tcase_add_test(tc, test_antiwindup_saturation);
    tcase_add_test(tc, test_antiwindup_held);
    tcase_add_test(tc, test_step_details);
    tcase_add_test(tc, test_util_at_and_invert);
    tcase_add_test(tc, test_invert_above_the_lowest_tree);
    tcase_add_test(tc, test_jump);
    tcase_add_test(tc, test_up_limit);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    return qc_test_run(pi_suite());
}
