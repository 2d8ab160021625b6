/* Licensed under the Apache License, Version 2.0. */

/*
 * The decide stage's parts, shared by its files (not for the module):
 *   qc_ctl_model.c       the fit: what the period's reading teaches
 *   qc_ctl_levels.c      a class's load at a level, and when a 503 helps
 *   qc_ctl_besteffort.c  best effort's modes (qc_be_mode_t)
 *   qc_ctl_policy.c      the period: sensing's notes, the guaranteed
 *                        loops, best effort, what is applied
 * and the rules' constants, in one place.  The reasoning is in
 * doc/control.md.
 */

#ifndef QC_DECIDE_H
#define QC_DECIDE_H

#include "qc_ctl_types.h"
#include "qc_be_mode.h"

/* Decided work not yet sent (periods of the resource) below which
 * there is none, and the longest a resource is taken to drain it: a
 * link's queue after a step to 3x drains in 5 to 7 s.  Past that a
 * model that overstates the work would hold "draining" for ever, and
 * a saturation is the requests' own, of whatever tree they are served
 * from (the fit learns from it; a guaranteed loop may refuse). */
#define QC_CTL_BACKLOG_IDLE 0.05
#define QC_CTL_DRAIN_SECONDS 10.0
/* Readings in a row on one side of a mark before a state is believed
 * (a queue that does not fall, a reading over the bound, a saturated
 * resource, tick or period): noise symmetric about the mark puts 3 in
 * a row there once in 8, and a loop that acts once a period must not
 * wait much longer to act on a change that is real. */
#define QC_CTL_PERSIST 3
/* Standard deviations of a Poisson count's jitter that bound 95% of
 * it: a count that moves less is noise (the fit's regressors, a host's
 * arrivals against its contract). */
#define QC_COUNT_JITTER_SD 2.0
/* Periods of work a request may wait before the loops may refuse
 * (qc_be_mode.h, refusing's gate): one, the loop's own reaction time;
 * past it the tree loop cannot shorten the queue.  A drain clears a
 * backlog within it too. */
#define QC_CTL_WAIT_PERIODS 1.0
/* A reading past this is load beyond the resource as declared, not a
 * capped sensor's noise, which reaches 1.1 (qc_pi.h, QC_U_UNCAPPED). */
#define QC_CTL_OVER_NOISE 1.1
/* So a reading's noise is a tenth of the scale (a link held at 0.9
 * reads 0.8 to 0.98 from one second to the next): a loop holding the
 * bound, a reading over it that may be a background's, and a test's
 * reading that confirms one are told within it. */
#define QC_CTL_READING_NOISE (QC_CTL_OVER_NOISE - 1.0)
/* A move of the link's queue, in periods, past its noise. */
#define QC_CTL_LINK_FELL 0.25
/* Saturated periods in a row after which best effort degrades fully:
 * the loop acted on the first, and the second reads that it did not
 * unsaturate the resource; unless it was holding the bound (its last
 * unsaturated reading within a reading's noise of the target: the
 * valve in doc/control.md). */
#define QC_CTL_VALVE_PERIODS 2
/* Background load is there at every instant, so it is at most the
 * lowest reading of the last FLOOR to 2 FLOOR seconds; one that
 * fluctuates is charged on average, up to half the bound above that
 * (what the targets charge at most: qc_target_background). */
#define QC_CTL_FLOOR_SECONDS 15.0
/* A background of more than half the bound lets the reading stay over
 * it; over by more than a reading's noise for QC_CTL_PERSIST periods
 * in a row, best effort tests it at its lowest tree, at most once in
 * the floor's longest window, so that the floor always holds a test's
 * reading. */
#define QC_CTL_TEST_SECONDS (2.0 * QC_CTL_FLOOR_SECONDS)

/* The fit has measured a tree's cost once its uncertainty is below this
 * share of the prior's (qc_rls_a_uncertainty). */
#define QC_MEASURED 0.2

/* qc_ctl_model.c: a class's decisions at the model's costs. */
double qc_class_model_util(const qc_model_t *mod,
                           const qc_ctl_class_t *cl, unsigned levels);

/*
 * qc_ctl_background.c, the one writer of the background d besides the
 * fit itself.  Before the fit's update: the period's bound on d (the
 * reading floor's, < 0 none), a test period's reading applied; after
 * it, the bound again.  Once the levels' inputs are known: whether a
 * background saturates the resource alone, and the warning.
 */
double qc_bg_before_fit(qc_ctl_t *ctl);
void qc_bg_after_fit(qc_ctl_t *ctl, double floor);
void qc_bg_note_alone(qc_ctl_t *ctl);
void qc_background_gone(qc_ctl_t *ctl);

/* qc_ctl_levels.c */
double qc_ctl_full_ratio(qc_ctl_t *ctl);
int qc_overflowing(const qc_ctl_t *ctl);
unsigned qc_fewest_levels(qc_ctl_t *ctl, int busy);
unsigned qc_min_levels(qc_ctl_t *ctl);
unsigned qc_min_levels_any(qc_ctl_t *ctl);
double qc_class_gain(const qc_ctl_t *ctl, const qc_ctl_class_t *cl,
                     unsigned levels, double m);
double qc_class_util(const qc_ctl_t *ctl, const qc_ctl_class_t *cl,
                     unsigned levels, double m);
int qc_ctl_jump(const qc_ctl_t *ctl, qc_pi_t *pi, double target,
                double u, double m_ff, double lowest, int first_ok);
void qc_no_reject_below_bound(const qc_ctl_t *ctl, qc_pi_t *pi,
                              double before, double lowest,
                              double limit, int helps);
void qc_hold_up(qc_pi_t *pi, double before, double lowest);
double qc_refusing_level(const qc_ctl_t *ctl, qc_pi_t *pi, double lowest);
void qc_reject_saving(const qc_ctl_t *ctl, const qc_ctl_class_t *cl,
                      unsigned levels, double *r, double *u0,
                      double *u1);
int qc_reject_helps(const qc_ctl_t *ctl, double r, double u0,
                    double u1, double target, double own);
double qc_held(const qc_ctl_class_t *cl, double u);
double qc_class_level(const qc_ctl_t *ctl, const qc_ctl_class_t *cl,
                      unsigned levels, double target);
double qc_arrivals(const qc_ctl_t *ctl);
int qc_past_contract(qc_ctl_t *ctl, unsigned i, double count,
                     double seconds);
/* Is a count past n, the most a Poisson count may be expected to be,
 * by more than its jitter (QC_COUNT_JITTER_SD)? */
int qc_count_past(double count, double n);
/* Refusing's gate, from the period's wait against QC_CTL_WAIT_PERIODS
 * periods (qc_be_mode.h). */
qc_refuse_gate_t qc_ctl_refuse_gate(const qc_ctl_t *ctl);

/* qc_ctl_besteffort.c */
int qc_ctl_valve(qc_ctl_t *ctl, double dt, double u_tick, int surged);
void qc_be_to_lowest(qc_ctl_t *ctl, double lowest);
double qc_be_premium(qc_ctl_t *ctl, double u_guaranteed);
double qc_best_effort(qc_ctl_t *ctl, double u_guaranteed);
void qc_be_apply(const qc_ctl_t *ctl, const qc_ctl_vs_t *vs, int k,
                 qc_ctl_class_t *cl, double m_b);

#endif /* QC_DECIDE_H */
