/* Licensed under the Apache License, Version 2.0. */

/*
 * A class's calibrated load at a level, the large-signal jump, and when
 * a 503 may help (paper §4.4): what the loops of qc_ctl_policy.c and
 * qc_ctl_besteffort.c share.  No I/O.
 */

#include <math.h>
#include <string.h>

#include "qc_ctl_helpers.h"
#include "qc_decide.h"
#include "qc_math.h"

/* A load the lowest tree cannot carry, measured (qc_overflow.h). */
int qc_overflowing(const qc_ctl_t *ctl)
{
    return ctl->ovf.on;
}

/* The fewest trees of a host a loop drives (busy: one with traffic in
 * the last period); 0 for none. */
unsigned qc_fewest_levels(qc_ctl_t *ctl, int busy)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    unsigned i, m = 0;

    for (i = 0; i < cfg->nvs; i++) {
        unsigned levels = cfg->vs[i].levels;

        if (!cfg->vs[i].fixed && (m == 0 || levels < m)
            && (!busy || qc_cls(ctl, i, QC_CLASS_PREMIUM)->r
                         + qc_cls(ctl, i, QC_CLASS_BASIC)->r > 0.0)) {
            m = levels;
        }
    }
    return m;
}

/* The fewest trees of a host with traffic the best-effort level
 * drives: m_b of 1 / this serves every such host from its lowest tree
 * or above.  An idle host must not hold the others at its range.  A
 * period in which no host counted an arrival while connections wait in
 * the accept queues or replies on the link (a closed loop's large
 * replies finishing together; every worker held) is not idle: the
 * fewest of any host's, not the top tree. */
unsigned qc_min_levels(qc_ctl_t *ctl)
{
    unsigned m = qc_fewest_levels(ctl, 1);

    if (!m && (ctl->queued > 0 || ctl->sent_backlog > 0.0)) {
        m = qc_fewest_levels(ctl, 0);
    }
    return m ? m : 1;
}

/* The same over every host: at a cold start none had traffic. */
unsigned qc_min_levels_any(qc_ctl_t *ctl)
{
    unsigned m = qc_fewest_levels(ctl, 0);

    return m ? m : 1;
}

/* Calibrated utilization of a class at each level, u[0..levels]. */
static void qc_class_levels(const qc_ctl_t *ctl, const qc_ctl_class_t *cl,
                            unsigned levels, double *u)
{
    unsigned k;

    qc_pi_level_utils(ctl->model.a_tree, ctl->model.b, ctl->model.c, cl->r,
                      cl->xbar, levels, u);
    for (k = 0; k <= levels; k++) {
        u[k] *= ctl->calib.k;
    }
}

/* dU/dm of a class at level m (qc_pi_process_gain). */
double qc_class_gain(const qc_ctl_t *ctl, const qc_ctl_class_t *cl,
                     unsigned levels, double m)
{
    double u[QC_MAX_TREES + 1];

    qc_class_levels(ctl, cl, levels, u);
    return qc_pi_process_gain(u, levels, m);
}

/* Calibrated utilization of a class at level m. */
double qc_class_util(const qc_ctl_t *ctl, const qc_ctl_class_t *cl,
                     unsigned levels, double m)
{
    double u[QC_MAX_TREES + 1];

    qc_class_levels(ctl, cl, levels, u);
    return qc_pi_util_at(u, levels, m);
}

/*
 * Load of the requests decided in the period over what the same
 * requests would load at full quality: the capacity at full quality is
 * this much of the capacity as degraded (1 without requests).
 */
double qc_ctl_full_ratio(qc_ctl_t *ctl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double now = 0.0, full = 0.0;
    unsigned i;
    int k;

    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            now += cl->u;
            full += qc_class_util(ctl, cl, cfg->vs[i].levels,
                                  (double)cfg->vs[i].levels);
        }
    }
    return now > 0.0 && full > 0.0 ? fmin(now / full, 1.0) : 1.0;
}

/*
 * A large-signal jump of a loop to m_ff (qc_pi_jump), never into
 * rejection: a jump stops at level `lowest` (the lowest tree) unless the
 * loop is below it already.  Rejecting is left to the PI, a period at a
 * time, on the measured error, so that a model that does not yet know
 * what the lowest tree costs cannot turn degrading into refusing.
 *
 * On a saturated sensor the accept queues must be readable for a jump
 * (arrivals counted when they come, not in a burst when the server gets
 * to them); without them only the first saturated period allows one,
 * and only to a loop that passes first_ok (best effort).  Returns 1 if
 * the loop jumped.
 */
int qc_ctl_jump(const qc_ctl_t *ctl, qc_pi_t *pi, double target,
                double u, double m_ff, double lowest, int first_ok)
{
    double m = qc_pi_output(pi), lo = m < lowest ? m : lowest;
    int saturated = ctl->reading.saturated;
    int counted = saturated && ctl->queued >= 0;

    if (saturated && !counted && !(first_ok && ctl->reading.fresh)) {
        return 0;
    }
    if (saturated && m_ff > m) {
        return 0;               /* a full resource is never a reason up */
    }
    return qc_pi_jump(pi, target, u, m_ff < lo ? lo : m_ff, counted);
}

/*
 * No 503 while the lowest tree carries the load: a loop that went down
 * this period may not go below the lowest tree (or below where it was,
 * if it was lower already) unless the reading is at or over `limit`
 * (a guaranteed class: the bound its guarantee is kept under; best
 * effort: saturated, for a lowest tree that serves everyone below
 * saturation serves them better than a 503).  Nor where rejecting does
 * not help (helps == 0: qc_reject_helps): back to the lowest tree.
 */
void qc_no_reject_below_bound(const qc_ctl_t *ctl, qc_pi_t *pi,
                              double before, double lowest,
                              double limit, int helps)
{
    if (!helps) {
        qc_pi_hold_floor(pi, lowest);
    }
    else if (ctl->reading.known && ctl->u_measured < limit) {
        qc_pi_hold_floor(pi, before < lowest ? before : lowest);
    }
}

/* The one limit on a loop's way up (doc/control.md, "Up moves"): the
 * up limit from `before`. */
void qc_hold_up(qc_pi_t *pi, double before, double lowest)
{
    qc_pi_hold_ceiling(pi, qc_pi_up_limit(before, lowest, lowest));
}

/* Refusing's gate (qc_be_mode.h): how the period's wait stands. */
qc_refuse_gate_t qc_ctl_refuse_gate(const qc_ctl_t *ctl)
{
    return ctl->wait < 0.0 ? QC_REFUSE_UNKNOWN
           : ctl->wait > QC_CTL_WAIT_PERIODS * ctl->cfg->period
           ? QC_REFUSE_LONG : QC_REFUSE_SHORT;
}

/*
 * A loop's level as applied, `lowest` its lowest tree: unless requests
 * are measured to wait longer than a period (refusing's gate,
 * qc_be_mode.h), the loop is held there and nothing is refused.
 */
double qc_refusing_level(const qc_ctl_t *ctl, qc_pi_t *pi, double lowest)
{
    if (qc_ctl_refuse_gate(ctl) != QC_REFUSE_LONG) {
        qc_pi_hold_floor(pi, lowest);
        return fmax(qc_pi_output(pi), lowest);
    }
    return qc_pi_output(pi);
}

/*
 * Model load of a class all rejected (*u0) and all served from its
 * lowest tree (*u1), added to the sums.  Rejecting helps only where a
 * 503 costs well under what the cheapest page does: where the cost is
 * the connection itself (a slow machine, tiny pages), a 503 costs as
 * much, and refusing would only turn served clients away.
 */
#define QC_REJECT_SAVES 0.5

void qc_reject_saving(const qc_ctl_t *ctl, const qc_ctl_class_t *cl,
                      unsigned levels, double *r, double *u0,
                      double *u1)
{
    double u[QC_MAX_TREES + 1];

    *r += cl->r;
    qc_pi_level_utils(ctl->model.a_tree, ctl->model.b, ctl->model.c, cl->r,
                      cl->xbar, levels, u);
    /* Nor does a 503 whose cost the fit has not measured cost anything:
     * refusing is how it gets measured (on the link, a few dozen 503s
     * in saturated periods fitted c at 4 times a page, and 10% of
     * connections timed out at 1.1x what the lowest tree carries). */
    if (qc_rls_c_uncertainty(&ctl->rls) <= QC_MEASURED) {
        *u0 += u[0];
    }
    /* A lowest tree whose cost the fit has not measured yet carries
     * everything, as far as rejecting is concerned: serving from it is
     * how its cost gets measured (a prior 10x high once rejected every
     * request of a site whose snapshots cost next to nothing).  Unless
     * the resource stays saturated past any drain: a prior too high is
     * never corrected by a saturated reading, which it predicts. */
    if (cl->r > 0.0 && ctl->sat.saturated_for <= QC_CTL_DRAIN_SECONDS
        && !qc_overflowing(ctl)
        && qc_rls_tree_uncertainty(&ctl->rls, levels - 1, cl->xbar[0])
           > QC_MEASURED) {
        *u1 -= 1e9;
    }
    else {
        *u1 += u[1];
    }
}

/* Does rejecting help a loop holding `target` (r: its arrivals)?  Only
 * where the lowest tree, at its measured and calibrated cost, cannot
 * carry the load at the target; where the fit's own cost of it,
 * uncalibrated, exceeds the target too, and `own`, the share the
 * requests keep whatever else loads the resource (half the bound for
 * best effort: qc_target_background), so that neither a
 * calibration searched up while saturated nor a load the calibration
 * cannot tell from theirs (another job's, with no idle period to learn
 * it from) has a load refused that the lowest tree carries; and where
 * a 503 costs well under a page.  Nor where the fitted background alone
 * saturates the resource: no refusal unsaturates it.  (No traffic:
 * nothing to decide, the PI's own rules hold.) */
int qc_reject_helps(const qc_ctl_t *ctl, double r, double u0,
                    double u1, double target, double own)
{
    /* The link's queue not draining at the lowest tree measures what
     * the prices could only bound: that tree's load is over the link's. */
    return r <= 0.0
           || (ctl->model.d < QC_U_SATURATED
               && (qc_overflowing(ctl)
                   || (ctl->calib.k * u1 > target
                       && u1 > fmax(own, target)))
               && u0 < QC_REJECT_SAVES * u1);
}

/*
 * What a guaranteed class's own loop holds it to: its load, or its
 * target when it is over it, for the loop cuts it there.  Best effort
 * plans with this, not with the load of the moment: a host over its
 * contract that had ridden on best effort's level left it for its own
 * loop, and best effort, planning with the host's whole load, jumped
 * to rejecting everyone.
 */
double qc_held(const qc_ctl_class_t *cl, double u)
{
    return u < cl->u_target ? u : cl->u_target;
}

typedef struct {
    const qc_ctl_t *ctl;
    const qc_ctl_class_t *cl;
    unsigned levels;
} qc_class_arg_t;

static double qc_class_util_cb(double m, void *arg)
{
    const qc_class_arg_t *a = arg;

    return qc_class_util(a->ctl, a->cl, a->levels, m);
}

/* The level at which the calibrated model puts a class at target. */
double qc_class_level(const qc_ctl_t *ctl, const qc_ctl_class_t *cl,
                      unsigned levels, double target)
{
    qc_class_arg_t a = { ctl, cl, levels };

    return qc_pi_invert_above(qc_class_util_cb, &a, 1.0, levels, target);
}

/* Arrivals/s of every host and class in the period. */
double qc_arrivals(const qc_ctl_t *ctl)
{
    double r = 0.0;
    unsigned i;

    for (i = 0; i < ctl->cfg->nvs * QC_NCLASSES; i++) {
        r += ctl->cls[i].r;
    }
    return r;
}

/*
 * Is a count of guaranteed host i's requests over `seconds` past what
 * its contract allows in that time, by more than a count's jitter?  The
 * contract is Rmax requests/s and Wmax bytes/s (paper, 5.1): at the top
 * tree's mean reply the bytes allow Wmax / x requests a second, and the
 * lesser of the two is the allowance.  Within it a host is owed its top
 * tree whatever the model says its requests cost.
 */
int qc_past_contract(qc_ctl_t *ctl, unsigned i, double count,
                     double seconds)
{
    const qc_ctl_vs_t *vs = &ctl->cfg->vs[i];
    double rate = vs->rmax, n;
    int k;

    for (k = 0; k < QC_NCLASSES && vs->wmax > 0.0; k++) {
        double x = qc_cls(ctl, i, k)->xbar[vs->levels - 1];

        if (x > 0.0) {
            rate = fmin(rate, vs->wmax / x);
        }
    }
    n = rate * seconds;
    return qc_count_past(count, n);
}

int qc_count_past(double count, double n)
{
    return count - n > QC_COUNT_JITTER_SD * sqrt(n);
}
