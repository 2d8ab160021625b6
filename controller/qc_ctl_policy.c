/* Licensed under the Apache License, Version 2.0. */

/*
 * The control policy (paper §4.4, §5): from the period's rates, the
 * sensor reading and the loop state, the levels of every class.  No
 * I/O.  The reasoning behind the rules is in doc/control.md.
 */

#include <math.h>
#include <string.h>

#include "qc_ctl_helpers.h"
#include "qc_ctl_policy.h"
#include "qc_ctl_sense.h"
#include "qc_decide.h"
#include "qc_math.h"
#include "qc_surge.h"

/* The model physics gives a link, in measured units (no k): a request
 * costs its overhead bytes, a byte 1 / the link's bytes/s, a 503 next to
 * nothing.  No fit enters it. */
static void qc_link_model(const qc_ctl_t *ctl, qc_model_t *phys)
{
    unsigned j;

    memset(phys, 0, sizeof(*phys));
    for (j = 0; j < QC_MAX_TREES; j++) {
        phys->a_tree[j] = ctl->ovf.overhead / ctl->link_bps;
    }
    phys->a = phys->a_tree[0];
    phys->b = 1.0 / ctl->link_bps;
}

/* Arrivals/s of a host's classes in the period. */
static double qc_host_arrivals(qc_ctl_t *ctl, const qc_ctl_vs_t *vs)
{
    unsigned i = (unsigned)(vs - ctl->cfg->vs);

    return qc_cls(ctl, i, QC_CLASS_PREMIUM)->r
           + qc_cls(ctl, i, QC_CLASS_BASIC)->r;
}

/* Premium gets the guarantee less the cost of rejecting basic; basic
 * gets what premium leaves (paper §5.2), in measured units.  On a link
 * the guarantee's share and each class's load are at least what physics
 * says, bytes and overhead over the link's bytes/s, a measured quantity
 * that k does not scale.  A fit that cannot tell requests from bytes
 * (all replies at the lowest tree, of one size) puts b and the top
 * tree's cost at 0 after a flash: the share alone would then leave a
 * host within its contract degraded, the load alone a host over it
 * uncut.  Returns what their loops hold them to (qc_held). */
static double qc_guaranteed_targets(qc_ctl_t *ctl, unsigned i)
{
    const qc_ctl_vs_t *vs = &ctl->cfg->vs[i];
    qc_ctl_class_t *prem = qc_cls(ctl, i, QC_CLASS_PREMIUM);
    qc_ctl_class_t *basic = qc_cls(ctl, i, QC_CLASS_BASIC);
    double k = ctl->calib.k;
    double ustar = k * qc_target_guarantee(&ctl->model, vs->rmax,
                                           vs->wmax);

    if (ctl->link_bps > 0.0) {
        qc_model_t phys;

        qc_link_model(ctl, &phys);
        ustar = fmax(ustar, qc_target_guarantee(&phys, vs->rmax, vs->wmax));
        prem->u = fmax(prem->u, qc_class_model_util(&phys, prem,
                                                    vs->levels));
        basic->u = fmax(basic->u, qc_class_model_util(&phys, basic,
                                                      vs->levels));
    }

    prem->u_target = qc_target_premium(&ctl->model, ustar, k * basic->r,
                                       qc_class_util(ctl, prem, vs->levels,
                                                     vs->levels));
    basic->u_target = qc_target_basic(ustar, prem->u);
    return qc_held(prem, prem->u) + qc_held(basic, basic->u);
}

/*
 * Each host's contract window: the requests a period serves came in
 * within it and as far back as the wait at its start, and what waits at
 * its end came in since requests last waited less than a period
 * (refusing's gate).  So the window is the period just read and the one
 * before it while the wait read short at both ends, and grows by a
 * period while it read long at either.  Kept as a count a host and the
 * window's length (qc_in_contract); any window of more than two periods
 * grew from the last.
 */
static void qc_note_contract(qc_ctl_t *ctl)
{
    int grow = qc_ctl_refuse_gate(ctl) == QC_REFUSE_LONG
               || ctl->wait_last > QC_CTL_WAIT_PERIODS * ctl->cfg->period;
    unsigned i;

    ctl->contract_periods = grow ? ctl->contract_periods + 1
                            : ctl->periods > 0 ? 2 : 1;
    for (i = 0; i < ctl->cfg->nvs; i++) {
        double now = qc_host_arrivals(ctl, &ctl->cfg->vs[i])
                     * ctl->cfg->period;

        ctl->contract_n[i] = (ctl->contract_periods > 2 ? ctl->contract_n[i]
                              : ctl->contract_last[i]) + now;
        ctl->contract_last[i] = now;
    }
}

/*
 * Is host i within its contract?  A contract is a rate: the host is
 * judged on its count over its window against what the contract allows
 * in it.  A closed loop of 1,300 clients on a link, waiting on 5 s of
 * replies, sent nothing for two periods and was judged within its
 * contract on each of them, owed its top tree, where its next burst
 * timed out whole.
 */
static int qc_in_contract(qc_ctl_t *ctl, unsigned i)
{
    return !qc_past_contract(ctl, i, ctl->contract_n[i],
                             ctl->contract_periods * ctl->cfg->period);
}

/* A guaranteed class's own loop; returns the level applied to it. */
static double qc_guaranteed_loop(qc_ctl_t *ctl, const qc_ctl_vs_t *vs,
                                 qc_ctl_class_t *cl, double m_b)
{
    double own = qc_pi_output(&cl->pi);
    double p = qc_class_gain(ctl, cl, vs->levels, own);
    double applied = cl->m_applied > own + 1e-9 ? cl->m_applied
                     : QC_PI_APPLIED_OWN;
    double m_ff = qc_class_level(ctl, cl, vs->levels, cl->u_target);
    double r = 0.0, u0 = 0.0, u1 = 0.0;

    if (ctl->bg.full) {
        /* As best effort (qc_note_background_alone), and with it to the
         * lowest tree for the background's test. */
        qc_pi_restart(&cl->pi, vs->levels);
        return ctl->bg.test ? 1.0 : vs->levels;
    }
    if (qc_in_contract(ctl, (unsigned)(vs - ctl->cfg->vs))) {
        /* Within its contract a host is owed its top tree (5.1); the
         * model only says how far to send down one past it.  A fit
         * whose top-tree cost collapsed under a background job priced
         * such a host's target at 0 and sent it down. */
        qc_pi_restart(&cl->pi, vs->levels);
        return vs->levels;
    }
    if (applied != QC_PI_APPLIED_OWN
        || !qc_ctl_jump(ctl, &cl->pi, cl->u_target, cl->u, m_ff, 1.0, 0)) {
        qc_pi_step(&cl->pi, cl->u_target, cl->u, p, ctl->cfg->period,
                   ctl->cfg->gain_margin, applied);
    }
    /* While requests wait longer than a period, a period's arrivals
     * are censored by the wait (clients waiting send nothing): no news
     * that the class could go up, as for best effort. */
    qc_hold_up(&cl->pi, own, 1.0);
    if (qc_ctl_refuse_gate(ctl) == QC_REFUSE_LONG) {
        qc_pi_hold_ceiling(&cl->pi, own);
    }
    qc_reject_saving(ctl, cl, vs->levels, &r, &u0, &u1);
    qc_no_reject_below_bound(ctl, &cl->pi, own, 1.0, ctl->cfg->bound,
                             qc_reject_helps(ctl, r, u0, u1, cl->u_target,
                                             cl->u_target));
    return qc_share_level(qc_refusing_level(ctl, &cl->pi, 1.0), m_b,
                          vs->levels);
}

/* Seconds of the link a reply from the lowest tree takes, on average
 * over the period's arrivals; 0 when no size is known. */
static double qc_lowest_reply_seconds(const qc_ctl_t *ctl)
{
    double r = 0.0, bytes = 0.0;
    unsigned i;

    for (i = 0; i < ctl->cfg->nvs * QC_NCLASSES; i++) {
        if (ctl->cls[i].xbar[0] > 0.0) {
            r += ctl->cls[i].r;
            bytes += ctl->cls[i].r * ctl->cls[i].xbar[0];
        }
    }
    return r > 0.0 && ctl->link_bps > 0.0
           ? (bytes / r + ctl->ovf.overhead) / ctl->link_bps : 0.0;
}

/* Seconds of the period a completion took, over every class; in a
 * period that completed nothing, the period: each took longer. */
static double qc_mean_service(const qc_ctl_t *ctl)
{
    double served = 0.0;
    unsigned i;

    for (i = 0; i < ctl->cfg->nvs * QC_NCLASSES; i++) {
        served += ctl->cls[i].r_served;
    }
    return served > 0.0 ? 1.0 / served : ctl->cfg->period;
}

/* The link's backlog and the accept queues' connections at `per`
 * seconds each, in seconds of the resource. */
static double qc_queue_seconds(const qc_ctl_t *ctl, double per)
{
    return fmax(ctl->sent_backlog, 0.0)
           + (ctl->queued > 0 ? (double)ctl->queued * per : 0.0);
}

/*
 * The work waiting, in seconds of the resource: the link's queue, and
 * the connections not yet accepted at a lowest-tree reply (on a link)
 * or at the period's mean service (elsewhere); < 0 unknown.
 */
static double qc_waiting_work(const qc_ctl_t *ctl)
{
    double per = qc_lowest_reply_seconds(ctl);

    if (ctl->sent_backlog < 0.0 && ctl->queued < 0) {
        return -1.0;
    }
    return qc_queue_seconds(ctl, per > 0.0 ? per : qc_mean_service(ctl));
}

/*
 * Work decided in earlier periods that the resource has yet to do: the
 * calibrated model of what was decided beyond what the sensor saw,
 * accumulated while saturated (an unsaturated resource has none
 * waiting).  A step of load mostly comes in the middle of a period,
 * which then reads unsaturated on average although it left work
 * queued: its excess counts if the next period reads saturated.  The
 * calibration is the one the loops acted on when the saturation began
 * (the last unsaturated period's, after its update): the search
 * (qc_calib.h) raises k because the model falls short of the load, and
 * with that k every period's decisions would look like new backlog,
 * which would stop the search as a drain; an older k would count the
 * model's error as backlog instead, and a saturation held by levels
 * set too high would pass for a drain.  Returns nonzero while some is
 * left, for at most QC_CTL_DRAIN_SECONDS, and unless the work waiting
 * (measured where it shows more than a queue's noise, QC_CTL_LINK_FELL
 * of a period: a CPU's work in progress is in no queue; else this
 * estimate) did not fall by more than that noise in QC_CTL_PERSIST
 * saturated periods in a row: that is load the levels
 * decided do not hold, not a queue draining (clients that send their
 * next request when a reply comes refill the resource as m falls).
 */
static int qc_update_backlog(qc_ctl_t *ctl, double u_model)
{
    double before = ctl->sat.backlog, q = qc_waiting_work(ctl);
    double noise = QC_CTL_LINK_FELL * ctl->cfg->period;

    if (ctl->reading.saturated) {
        double excess = (ctl->sat.k_unsaturated > 0.0 ? ctl->sat.k_unsaturated
                         : ctl->calib.k) * u_model + ctl->model.d
                        - ctl->u_measured;

        ctl->sat.saturated_for += ctl->cfg->period;
        ctl->sat.backlog += ctl->sat.excess + excess;
        ctl->sat.excess = 0.0;
        if (ctl->sat.backlog < 0.0) {
            ctl->sat.backlog = 0.0;
        }
        ctl->sat.backlog_grew = (q >= 0.0 && ctl->sat.waiting_prev >= noise
                             ? q > ctl->sat.waiting_prev - noise
                             : before > 0.0 && ctl->sat.backlog >= before)
                            ? ctl->sat.backlog_grew + 1 : 0;
    }
    else if (ctl->reading.known) {
        ctl->sat.backlog = 0.0;
        ctl->sat.saturated_for = 0.0;
        ctl->sat.backlog_grew = 0;
    }
    ctl->sat.waiting_prev = q;
    return ctl->sat.backlog > QC_CTL_BACKLOG_IDLE
           && ctl->sat.backlog_grew < QC_CTL_PERSIST
           && ctl->sat.saturated_for <= QC_CTL_DRAIN_SECONDS
           && !qc_overflowing(ctl);
}

/*
 * How long a request waits as the lowest tree would serve the queue:
 * the link's backlog, and the connections not yet accepted at the
 * lowest tree's cost a request (calibrated), or at the period's mean
 * service if that is less (a prior set high must not make a queue
 * look longer than the server takes to serve it); < 0 unknown, as it
 * is while the fit has not measured the lowest tree of a class that
 * has arrivals.  A queue the trees can shed is the tree loop's, not
 * refusing's.
 */
static double qc_wait_at_lowest(const qc_ctl_t *ctl)
{
    double r = 0.0, low = 0.0, per;
    int measured = 1;
    unsigned i;

    if (ctl->sent_backlog < 0.0 && ctl->queued < 0) {
        return -1.0;
    }
    for (i = 0; i < ctl->cfg->nvs; i++) {
        int k;

        for (k = 0; k < QC_NCLASSES; k++) {
            const qc_ctl_class_t *cl = qc_cls((qc_ctl_t *)ctl, i, k);

            r += cl->r;
            low += qc_class_util(ctl, cl, ctl->cfg->vs[i].levels, 1.0);
            measured &= !(cl->r > 0.0)
                        || qc_rls_tree_uncertainty(
                               &ctl->rls, ctl->cfg->vs[i].levels - 1,
                               cl->xbar[0]) <= QC_MEASURED;
        }
    }
    per = qc_lowest_reply_seconds(ctl);
    if (per <= 0.0) {
        if (!measured && ctl->queued > 0) {
            return -1.0;
        }
        per = qc_mean_service(ctl);
        if (r > 0.0 && low > 0.0) {
            per = fmin(per, low / r);
        }
    }
    return qc_queue_seconds(ctl, per);
}

/*
 * Work beyond what the resource as declared can do: a link declared
 * below what its port carries (a bandwidth plan) queues nothing when
 * the plan is exceeded, so the reading's excess over 1, past a capped
 * sensor's noise (QC_CTL_OVER_NOISE), is the queue it would have; the
 * spare of a reading under 1 drains it.  Seconds of the resource.
 */
static void qc_note_over(qc_ctl_t *ctl)
{
    double u = ctl->u_measured, t = ctl->cfg->period;

    if (!(u >= 0.0)) {
        return;
    }
    if (u > QC_CTL_OVER_NOISE) {
        ctl->over_work += (u - 1.0) * t;
    }
    else if (u < 1.0) {
        ctl->over_work = fmax(ctl->over_work - (1.0 - u) * t, 0.0);
    }
}

/* The wait refusing reads (qc_be_mode.h), and the last one. */
static void qc_note_wait(qc_ctl_t *ctl)
{
    qc_note_over(ctl);
    ctl->wait_last = ctl->wait;
    ctl->wait = qc_wait_at_lowest(ctl);
    if (ctl->over_work > 0.0) {
        ctl->wait = fmax(ctl->wait, 0.0) + ctl->over_work;
    }
}

/*
 * The link's queue, and what it shows (qc_overflow.h): the period's
 * replies and 503s put on the link what it sent and what its queue grew
 * by, which holds saturated or not, so the overhead per reply is learnt
 * from every period where the queue is measured (without it, only from
 * unsaturated ones that drain nothing); and whether the queue drained
 * while best effort was at the lowest tree (`lowest`), the waiting
 * connections at a lowest-tree reply each.
 */
static void qc_note_link_queue(qc_ctl_t *ctl, double lowest)
{
    double w = 0.0, n = 0.0, load = ctl->u_measured;
    unsigned i, j;

    for (i = 0; i < ctl->cfg->nvs * QC_NCLASSES; i++) {
        w += ctl->cls[i].w;
        n += ctl->cls[i].r_rej;
        for (j = 1; j <= QC_MAX_TREES; j++) {
            n += ctl->cls[i].r_served_tree[j];
        }
    }
    if (load >= 0.0 && ctl->sent_backlog >= 0.0
        && ctl->prev_sent_backlog >= 0.0) {
        qc_overflow_learn(&ctl->ovf, load + (ctl->sent_backlog
                                             - ctl->prev_sent_backlog)
                                            / ctl->cfg->period,
                          ctl->link_bps, w, n);
    }
    else if (load >= 0.0 && !ctl->sat.draining && !qc_u_capped(load)) {
        qc_overflow_learn(&ctl->ovf, load, ctl->link_bps, w, n);
    }
    qc_overflow_observe(&ctl->ovf, ctl->sent_backlog >= 0.0,
                        qc_pi_output(&ctl->be) <= lowest + 1e-9,
                        ctl->reading.saturated,
                        ctl->sent_backlog
                        + (ctl->queued > 0 ? (double)ctl->queued : 0.0)
                          * qc_lowest_reply_seconds(ctl),
                        ctl->cfg->period);
}

/* After the calibration of an unsaturated period: what a saturation
 * that begins next is reckoned against (qc_update_backlog). */
static void qc_note_unsaturated(qc_ctl_t *ctl, double u_model)
{
    if (ctl->reading.known && !ctl->reading.saturated) {
        double excess = ctl->calib.k * u_model + ctl->model.d
                        - ctl->u_measured;

        ctl->sat.k_unsaturated = ctl->calib.k;
        ctl->sat.u_unsaturated = ctl->u_measured;
        ctl->sat.r_unsaturated = qc_arrivals(ctl);
        ctl->sat.m_unsaturated = qc_pi_output(&ctl->be);    /* in force */
        ctl->sat.excess = excess > 0.0 ? excess : 0.0;
    }
}

/*
 * QosCtlResource names the wrong resource when it stays under half the
 * bound (half is best effort's own share: qc_target_background) while
 * connections wait to be accepted longer than refusing's target, by
 * Little's law on the period's completions: something else is the
 * bottleneck.  Counted up and down so that one period does not flip
 * it.
 */
static void qc_check_resource(qc_ctl_t *ctl)
{
    double per = qc_mean_service(ctl);

    if (ctl->reading.known && ctl->u_measured < 0.5 * ctl->cfg->bound
        && ctl->queued > 0
        && (double)ctl->queued * per
           > QC_CTL_WAIT_PERIODS * ctl->cfg->period) {
        if (ctl->low_queued < 2 * QC_CTL_PERSIST) {
            ctl->low_queued++;
        }
    }
    else if (ctl->low_queued > 0) {
        ctl->low_queued--;
    }
    if (ctl->low_queued >= QC_CTL_PERSIST) {
        ctl->warnings |= QC_WARN_WRONG_RESOURCE;
    }
    else if (ctl->low_queued == 0) {
        ctl->warnings &= ~QC_WARN_WRONG_RESOURCE;
    }
}

/*
 * The rate of requests above the lowest trees the new levels should
 * decide at this period's arrival rates: the valve's reference.  The
 * rate counted in the period is no reference alone: when the valve cut
 * it, the next period's held load would look like a jump, and the
 * valve would fire in every period.
 */
static void qc_expect_upper(qc_ctl_t *ctl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double expect = 0.0;
    unsigned i;
    int k;

    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES && !cfg->vs[i].fixed; k++) {
            const qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            if (cfg->vs[i].levels > 1) {
                expect += cl->r * fmin(fmax(cl->m_applied - 1.0, 0.0), 1.0);
            }
        }
    }
    ctl->tick.upper_rate = fmax(ctl->tick.upper_rate, expect);
}

/*
 * The period's reading made the loops' measure: the model load of what
 * was decided, the backlog and drain, k (qc_calib.h) and each class's
 * calibrated load, then the checks that read them and the wait.
 */
static void qc_ctl_calibrate(qc_ctl_t *ctl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double u_model = 0.0;
    int draining, expected_over;
    unsigned i;
    int k;

    for (i = 0; i < cfg->nvs; i++) {
        const qc_ctl_vs_t *vs = &cfg->vs[i];

        for (k = 0; k < QC_NCLASSES; k++) {
            qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            cl->u_model = qc_class_model_util(&ctl->model, cl, vs->levels);
            u_model += cl->u_model;
        }
    }
    /* The calibration takes the whole background out of the reading:
     * the requests' share is what is left.  (The targets charge it only
     * up to half the bound: qc_target_background.)  Decisions the
     * loops expected to read over the bound past a reading's noise make
     * a saturated reading no news of k (qc_calib_update). */
    expected_over = ctl->calib.k * u_model + ctl->model.d
                    > cfg->bound + QC_CTL_READING_NOISE;
    qc_note_link_queue(ctl, 1.0 / qc_min_levels(ctl));
    draining = qc_update_backlog(ctl, u_model);
    ctl->sat.drained = ctl->sat.draining && !draining;
    ctl->sat.draining = draining;
    qc_ctl_classify_load(ctl, u_model);
    /* A censored reading (qc_ctl_censor) is a bound from 0 on. */
    qc_calib_update(&ctl->calib, ctl->u_measured, u_model, ctl->model.d,
                    ctl->reading.whose, expected_over,
                    ctl->reading.turned_away ? 0.0 : QC_U_SATURATED);
    qc_note_unsaturated(ctl, u_model);
    ctl->prev_u_model = u_model;
    for (i = 0; i < cfg->nvs * QC_NCLASSES; i++) {
        ctl->cls[i].u = ctl->calib.k * ctl->cls[i].u_model;
    }
    qc_check_resource(ctl);
    qc_bg_note_alone(ctl);
    qc_note_wait(ctl);
}

void qc_ctl_policy(qc_ctl_t *ctl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double u_guaranteed = 0.0, m_b;
    unsigned i;
    int k;

    qc_ctl_calibrate(ctl);
    qc_note_contract(ctl);
    for (i = 0; i < cfg->nvs; i++) {
        if (cfg->vs[i].guaranteed && !cfg->vs[i].fixed) {
            u_guaranteed += qc_guaranteed_targets(ctl, i);
        }
    }
    u_guaranteed += qc_be_premium(ctl, u_guaranteed);
    m_b = qc_best_effort(ctl, u_guaranteed);
    for (i = 0; i < cfg->nvs; i++) {
        const qc_ctl_vs_t *vs = &cfg->vs[i];

        for (k = 0; k < QC_NCLASSES; k++) {
            qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            if (vs->fixed) {
                cl->m_applied = qc_pi_output(&cl->pi);
            }
            else if (vs->guaranteed) {
                cl->m_applied = qc_guaranteed_loop(ctl, vs, cl, m_b);
            }
            else {
                qc_be_apply(ctl, vs, k, cl, m_b);
            }
        }
    }
    qc_expect_upper(ctl);
    /* Load that is not the server's is not shed (as by the valve). */
    ctl->tick.surge_rate = ctl->warnings & QC_WARN_BACKGROUND ? 0.0
                      : qc_surge_rate(ctl->tick.surge_r, ctl->u_measured,
                                      cfg->period);
}
