/* Licensed under the Apache License, Version 2.0. */

/*
 * The best-effort loop (paper §5.3): everything no guarantee covers,
 * held at the bound less the guaranteed traffic and the background.
 * No I/O.
 */

#include <math.h>
#include <string.h>

#include "qc_ctl_helpers.h"
#include "qc_ctl_sense.h"
#include "qc_decide.h"
#include "qc_math.h"
#include "qc_surge.h"

/* Ticks below the mark in a row that end a run: a saturated link's
 * tick reads 0.93-0.99, one in three to five under the mark. */
#define QC_CTL_VALVE_DIPS 2

/* Is a class of a host that is not pinned served at the best-effort
 * level m (= m_b M)?  Best effort's basic clients always are; a class
 * with a level of its own when m is above it: a guaranteed host's
 * (excess sharing, §5.3) and best effort's premium (qc_be_premium). */
static int qc_be_drives(const qc_ctl_vs_t *vs, int k,
                        const qc_ctl_class_t *cl, double m)
{
    return (!vs->guaranteed && k == QC_CLASS_BASIC)
           || qc_pi_output(&cl->pi) < m;
}

/*
 * Visit every class of every host that is not pinned, with the level
 * m = m_b M its host would be served at by the best-effort level and
 * whether that level drives it there (qc_be_drives).
 */
typedef void (*qc_be_visit_fn)(qc_ctl_t *ctl, const qc_ctl_vs_t *vs,
                               int k, qc_ctl_class_t *cl, double m,
                               int drives, void *arg);

static void qc_be_each(qc_ctl_t *ctl, double m_b, qc_be_visit_fn fn,
                       void *arg)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    unsigned i;
    int k;

    for (i = 0; i < cfg->nvs; i++) {
        const qc_ctl_vs_t *vs = &cfg->vs[i];
        double m = m_b * vs->levels;

        for (k = 0; k < QC_NCLASSES && !vs->fixed; k++) {
            qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            fn(ctl, vs, k, cl, m, qc_be_drives(vs, k, cl, m), arg);
        }
    }
}

static void qc_be_util_one(qc_ctl_t *ctl, const qc_ctl_vs_t *vs, int k,
                           qc_ctl_class_t *cl, double m, int drives,
                           void *arg)
{
    *(double *)arg += drives
        ? qc_class_util(ctl, cl, vs->levels, m)
        : qc_held(cl, qc_class_util(ctl, cl, vs->levels,
                                    qc_pi_output(&cl->pi)));
}

/* Calibrated utilization of all traffic the best-effort level can move,
 * at normalized level m_b: each class at the level it is served at. */
static double qc_be_util(double m_b, void *arg)
{
    double u = 0.0;

    qc_be_each(arg, m_b, qc_be_util_one, &u);
    return u;
}

/* What the best-effort loop measures and holds, summed over the
 * classes it drives. */
typedef struct {
    double u, gain, u_guaranteed;
    double r;           /* arrivals/s */
} qc_be_sum_t;

static void qc_be_sum_one(qc_ctl_t *ctl, const qc_ctl_vs_t *vs, int k,
                          qc_ctl_class_t *cl, double m, int drives,
                          void *arg)
{
    qc_be_sum_t *sum = arg;

    if (!drives) {
        return;                 /* its own loop is in force */
    }
    /* A class with a level of its own served at the best-effort level
     * (excess sharing) is best effort's to hold: in its measurement and
     * out of what its target leaves for the guarantees and premium. */
    if (vs->guaranteed || k == QC_CLASS_PREMIUM) {
        sum->u_guaranteed -= qc_held(cl, cl->u);
    }
    sum->u += cl->u;
    sum->gain += vs->levels * qc_class_gain(ctl, cl, vs->levels, m);
    sum->r += cl->r;
}

/* Best effort's load at the lowest tree and all refused, calibrated,
 * over the classes its level drives; and that of the period's 503s. */
typedef struct {
    double low, refused, rej;
    double n_rej;               /* the period's 503s, a count */
} qc_be_floor_t;

static void qc_be_floor_one(qc_ctl_t *ctl, const qc_ctl_vs_t *vs, int k,
                            qc_ctl_class_t *cl, double m, int drives,
                            void *arg)
{
    qc_be_floor_t *f = arg;

    if (drives) {
        double all = qc_class_util(ctl, cl, vs->levels, 0.0);

        f->low += qc_class_util(ctl, cl, vs->levels, 1.0);
        f->refused += all;
        f->rej += cl->r > 0.0 ? all * cl->r_rej / cl->r : 0.0;
        f->n_rej += cl->r_rej * ctl->cfg->period;
    }
}

/*
 * Do the period's 503s load the resource past best effort's target by
 * more than their count's jitter (QC_COUNT_JITTER_SD, as a host's count
 * against its contract)?  Their load is a count times a cost: a few
 * dozen 503s a period past the target by less than that jitter prove
 * nothing, and cutting the share on them held an open overload's wait
 * at twice its target.
 */
static int qc_be_rej_past(const qc_ctl_t *ctl, const qc_be_floor_t *f)
{
    return f->rej > ctl->be_target
           && qc_count_past(f->n_rej, f->n_rej * ctl->be_target / f->rej);
}

/* Calibrated utilization of class k of every best-effort host at the
 * normalized level m_b. */
typedef struct {
    qc_ctl_t *ctl;
    int k;
} qc_be_class_arg_t;

static double qc_be_class_util(double m_b, void *arg)
{
    const qc_be_class_arg_t *a = arg;
    const qc_ctl_config_t *cfg = a->ctl->cfg;
    double u = 0.0;
    unsigned i;

    for (i = 0; i < cfg->nvs; i++) {
        const qc_ctl_vs_t *vs = &cfg->vs[i];

        if (!vs->guaranteed && !vs->fixed) {
            u += qc_class_util(a->ctl, qc_cls(a->ctl, i, a->k), vs->levels,
                               m_b * vs->levels);
        }
    }
    return u;
}

/*
 * Best effort's premium clients are served first, as a guaranteed
 * host's are (paper §5.2, qc_target_premium): at the highest level
 * whose calibrated load fits best effort's target less what refusing
 * all its basic clients costs, or at the top where that load fits the
 * target alone; never below the lowest tree, so that basic is refused
 * first.  Sets each premium class's own level and target; returns the
 * load held for them, which basic's loop leaves alone.
 */
double qc_be_premium(qc_ctl_t *ctl, double u_guaranteed)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    qc_be_class_arg_t prem = { ctl, QC_CLASS_PREMIUM };
    double lowest = 1.0 / qc_min_levels(ctl), r_basic = 0.0, target, m_p;
    double u_full = qc_be_class_util(1.0, &prem), held = 0.0;
    unsigned i;

    for (i = 0; i < cfg->nvs; i++) {
        if (!cfg->vs[i].guaranteed && !cfg->vs[i].fixed) {
            r_basic += qc_cls(ctl, i, QC_CLASS_BASIC)->r;
        }
    }
    target = qc_target_premium(&ctl->model,
                               qc_target_best_effort(&ctl->model,
                                                     cfg->bound,
                                                     u_guaranteed),
                               ctl->calib.k * r_basic, u_full);
    /* The top wherever its load fits, first: a fit that prices the
     * lowest tree over the top (two trees of about one cost, noise)
     * would have the search below stop at the lowest tree, where the
     * model itself says premium costs more. */
    m_p = u_full <= target ? 1.0
          : qc_pi_invert(qc_be_class_util, &prem, lowest, 1.0, target);
    for (i = 0; i < cfg->nvs; i++) {
        const qc_ctl_vs_t *vs = &cfg->vs[i];
        qc_ctl_class_t *cl = qc_cls(ctl, i, QC_CLASS_PREMIUM);

        if (!vs->guaranteed && !vs->fixed) {
            cl->u_target = target;
            qc_pi_init(&cl->pi, vs->levels, m_p * vs->levels);
            held += qc_held(cl, cl->u);
        }
    }
    return held;
}

/*
 * The share of best effort's arrivals to refuse (doc/control.md,
 * "Refusing"), once the trees are spent: best effort was at its lowest
 * tree, or refusing, all through the period just read.  PIE's law
 * (RFC 8033) on the wait, in the loop's own units: the share moves by
 * the wait's excess over a period and by its change over the period,
 * both over G periods (G the gain margin, QosCtlGainMargin, as for the
 * tree loops: higher is slower and steadier):
 *
 *     p = p_last + ((wait - T) + (wait - wait_last)) / (G T)
 *
 * held to [0, 1].  The tree loop acts once a period and only on what
 * arrives after it acts, so a queue longer than a period is beyond its
 * reach; only admitting less shortens it, and p settles where the wait
 * holds at a period.  A queue a step left that the lowest tree drains
 * lowers p, and from p = 0 only a standing wait that grew starts
 * refusing: over the target at the period's start too (CoDel's test of
 * a standing queue, its interval the period), for one that rose from
 * under it is a burst, and one over it that falls is bounded already.
 * A closed loop's queue is bounded by its clients, and p stays 0.  The wait is
 * measured, not modelled: no price that saturation hides or a prior
 * sets wrong enters it.  No wait
 * measured: nothing refused.  Nor where a 503 costs what the lowest
 * tree's reply does (a slow machine, tiny pages): refusing would turn
 * clients away and shorten nothing.
 */
static double qc_be_refuse_share(qc_ctl_t *ctl, double lowest)
{
    double t = QC_CTL_WAIT_PERIODS * ctl->cfg->period, last, p, p_last;
    qc_be_floor_t f = { 0.0, 0.0, 0.0, 0.0 };

    if (ctl->wait < 0.0 || ctl->be_last > lowest + 1e-9
        || ctl->tick.valved) {
        return 0.0;
    }
    qc_be_each(ctl, lowest, qc_be_floor_one, &f);
    if (!(f.refused < f.low)) {
        return 0.0;
    }
    last = ctl->wait_last >= 0.0 ? ctl->wait_last : ctl->wait;
    p = ctl->be_last < lowest ? 1.0 - ctl->be_last / lowest : 0.0;
    p_last = p;
    if (p_last == 0.0 && !(ctl->wait > last && last > t)) {
        return 0.0;
    }
    p += ((ctl->wait - t) + (ctl->wait - last))
         / (ctl->cfg->gain_margin * t);
    if (qc_be_rej_past(ctl, &f)) {
        /* The period's 503s alone load the resource past best effort's
         * target: the refused came back at once (a closed loop with no
         * think) and refusing is the overload, its queue the 503s'.
         * The share goes back to what keeps their load within it. */
        p = fmin(p, p_last * ctl->be_target / f.rej);
    }
    return qc_clampd(p, 0.0, 1.0);
}

/*
 * A saturation the loop met while holding the bound (its last
 * unsaturated reading near u_held, the reading at best effort's target,
 * at today's arrivals but for their counting jitter, and at a level no
 * lower than m_b): the chance of a noisy sensor, not a model off by a
 * factor.  u_held counts what the reading
 * holds besides best effort, the guaranteed classes and the background:
 * against best effort's target alone, a background of half the bound
 * made every saturation look held, and best effort stayed at its top
 * on a link a closed loop kept full for 30 s.
 */
static int qc_was_holding(const qc_ctl_t *ctl, double u_held, double m_b)
{
    double t = ctl->cfg->period;

    return ctl->sat.u_unsaturated >= u_held - QC_CTL_READING_NOISE
           && !qc_count_past(qc_arrivals(ctl) * t,
                             ctl->sat.r_unsaturated * t)
           && m_b <= ctl->sat.m_unsaturated;
}

/*
 * How far the model's level for `target` moved with a trend in best
 * effort's arrivals r (doc/control.md, "The trend feed-forward").  The
 * PI lags a ramp: each period's new arrivals meet last period's level.
 * Where the arrivals moved the same way in two periods in a row, the
 * loop follows the smaller of the two moves at once: the model's level
 * at r less its level at r less that move.  One fit and calibration for
 * both, so a change of either is the PI's to follow, not this.  A lone
 * step, a large move after a small one, moves little (the jump and the
 * PI take it), and noise around a steady load seldom (its moves
 * alternate).
 */
static double qc_be_trend(qc_ctl_t *ctl, double r, double target,
                          double m_ff, double lowest)
{
    double dr = r - ctl->be_r_prev, trend = 0.0;

    if (ctl->be_r_prev > 0.0 && dr * ctl->be_dr_prev > 0.0) {
        trend = fabs(dr) < fabs(ctl->be_dr_prev) ? dr : ctl->be_dr_prev;
    }
    ctl->be_dr_prev = ctl->be_r_prev > 0.0 ? dr : 0.0;
    ctl->be_r_prev = r;
    if (trend == 0.0 || !(r - trend > 0.0)) {
        return 0.0;
    }
    /* The level is linear in each class's arrivals at a given m: the
     * load of r - trend at m is r's times (r - trend) / r. */
    return m_ff - qc_pi_invert_above(qc_be_util, ctl, lowest, 1.0,
                                     target * r / (r - trend));
}

/*
 * Best effort to its lowest tree at once, and back to the model's level
 * at the first unsaturated reading (lowest mode, qc_be_choose): the
 * valves, and the background's test.
 */
void qc_be_to_lowest(qc_ctl_t *ctl, double lowest)
{
    qc_pi_restart(&ctl->be, lowest);
}

/*
 * The targets charge the fitted background only up to half the bound,
 * and the calibration takes all of it out of the reading, so a fit with
 * more than that lets the reading stay over the bound by the rest
 * (qc_target_background).  A background is there at every instant; one
 * that steady arrivals cannot tell from the requests' costs is often
 * the fit's (pages that cost less under load, fitted as a background
 * that rose: the CPU held at 0.8-1.0 against 0.6 in test_robust).  The
 * sensor over the bound (or capped) for QC_CTL_PERSIST in a row on such a
 * fit, best effort spends a period at its lowest tree, whose reading
 * bounds the background (qc_ctl_update_model), and restarts from the
 * model corrected by it.  A background that is real reads at least as much
 * there: the loop goes back to where it was, and tests again only when
 * the fit puts the background over that reading, at most once in
 * QC_CTL_TEST_SECONDS.  qc_be_note_over counts the periods over,
 * qc_be_test_due says a test is due, qc_be_test_start begins one.
 */
static void qc_be_note_over(qc_ctl_t *ctl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;

    ctl->bg.wait -= cfg->period;
    if (ctl->u_measured > cfg->bound + QC_CTL_READING_NOISE
        || qc_u_capped(ctl->u_measured)) {
        ctl->bg.over++;
    }
    else {
        ctl->bg.over = 0;
    }
}

static int qc_be_test_due(const qc_ctl_t *ctl, double m_b, double lowest)
{
    return ctl->bg.over >= QC_CTL_PERSIST
           && (ctl->bg.full
               || ctl->model.d > fmax(0.5 * ctl->cfg->bound, ctl->bg.seen))
           && m_b > lowest && ctl->bg.wait <= 0.0;
}

static void qc_be_test_start(qc_ctl_t *ctl, double m_b, double lowest)
{
    ctl->bg.m = m_b;
    qc_be_to_lowest(ctl, lowest);
    ctl->bg.test = 1;
    ctl->bg.wait = QC_CTL_TEST_SECONDS;
    ctl->bg.over = 0;
    ctl->bg.tests++;
}

const char *qc_refuse_gate_name(unsigned gate)
{
    static const char *const names[QC_REFUSE_NGATES] = { "short", "long",
                                                          "unknown" };

    return gate < QC_REFUSE_NGATES ? names[gate] : "?";
}

const char *qc_be_mode_name(unsigned mode)
{
    static const char *const names[QC_BE_NMODES] = { "track", "lowest",
                                                      "background" };

    return mode < QC_BE_NMODES ? names[mode] : "?";
}

const char *qc_be_why_text(unsigned why)
{
    static const char *const texts[QC_BE_NWHYS] = {
        "no period yet",
        "the model and the PI",
        "work queued from an overload",
        "unsaturated after a drain or the lowest tree",
        "saturated with nothing left to drain",
        "a jump of load saturated the resource within a period",
        "over the bound, on a fitted background over half of it",
        "saturated still",
        "a background saturates the resource alone",
        "the background's test found it real"
    };

    return why < QC_BE_NWHYS ? texts[why] : "?";
}

/*
 * The best-effort loop holds everything not covered by a guarantee at
 * the bound less the guaranteed traffic and the background (§5.3).  Its
 * output is a fraction of each host's range; its process gain sums the
 * classes it drives, each scaled by that host's M.
 */
/* What best effort decides on in a period: its level m_b as the period
 * began, the lowest tree's, the target (a drain's taken off), the
 * level the model gives for it (m_ff), the trend's shift and what the
 * classes hold at m_b. */
typedef struct {
    double m_b, lowest, target, m_ff, follow;
    qc_be_sum_t sum;
} qc_be_plan_t;

static void qc_be_plan(qc_ctl_t *ctl, double u_guaranteed, qc_be_plan_t *pl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;

    memset(pl, 0, sizeof(*pl));
    pl->m_b = qc_pi_output(&ctl->be);
    pl->lowest = 1.0 / qc_min_levels(ctl);
    pl->sum.u_guaranteed = u_guaranteed;
    qc_be_each(ctl, pl->m_b, qc_be_sum_one, &pl->sum);
    ctl->be_target = qc_target_best_effort(&ctl->model, cfg->bound,
                                           pl->sum.u_guaranteed);
    /* Work still queued from an overload is drained within a few
     * periods, below the bound, not at the spare capacity the bound
     * leaves. */
    pl->target = ctl->be_target;
    if (ctl->sat.draining) {
        /* Within refusing's wait target: held at the bound, a backlog
         * drains at the spare 10% (2 s after a step to 3x: 20 s of
         * queueing, and clients time out). */
        pl->target -= ctl->sat.backlog / QC_CTL_WAIT_PERIODS;
        pl->target = pl->target > 0.0 ? pl->target : 0.0;
    }
    if (pl->sum.gain <= 0.0) {
        pl->sum.gain = QC_PI_GAIN_MIN;
    }
    /* sum.u_guaranteed is now what the guaranteed loops hold. */
    pl->m_ff = qc_pi_invert_above(qc_be_util, ctl, pl->lowest, 1.0,
                                  pl->target + pl->sum.u_guaranteed);
    pl->follow = qc_be_trend(ctl, pl->sum.r,
                             pl->target + pl->sum.u_guaranteed, pl->m_ff,
                             pl->lowest);
}

/*
 * The transition function: best effort's mode for the period just read,
 * from the mode it was in (which the valve may have set within the
 * period) and the reading, first match wins; *why says what chose it.
 * The lowest tree is left at the first unsaturated reading, for the
 * model's level, as a drain is; a backlog found meanwhile is drained
 * from where the loop is.
 */
static qc_be_mode_t qc_be_choose(const qc_ctl_t *ctl,
                                 const qc_be_plan_t *pl, double u_held,
                                 qc_be_why_t *why)
{
    double m_b = pl->m_b, lowest = pl->lowest;
    int saturated = ctl->reading.saturated;
    int held = ctl->be_mode == QC_BE_LOWEST && !ctl->sat.draining;
    int spent = m_b <= lowest + 1e-9 && pl->sum.r > 0.0 && saturated
                && !ctl->sat.draining;

    if (qc_be_test_due(ctl, m_b, lowest)) {
        *why = QC_BE_WHY_TEST;
        return QC_BE_LOWEST;
    }
    if (ctl->bg.full || ctl->bg.restore > 0.0) {
        *why = ctl->bg.full ? QC_BE_WHY_ALONE : QC_BE_WHY_REAL;
        return QC_BE_BACKGROUND;
    }
    if ((held || ctl->sat.drained) && !saturated && !ctl->tick.valved) {
        *why = QC_BE_WHY_UNSATURATED;
        return QC_BE_TRACK;
    }
    if (saturated && !ctl->sat.draining
        && ctl->calib.saturated >= QC_CTL_VALVE_PERIODS && m_b > lowest
        && !qc_was_holding(ctl, u_held, m_b)) {
        *why = QC_BE_WHY_SATURATED;
        return QC_BE_LOWEST;
    }
    *why = ctl->sat.draining ? QC_BE_WHY_BACKLOG
           : held || spent ? QC_BE_WHY_HELD : QC_BE_WHY_MODEL;
    return held || spent ? QC_BE_LOWEST : QC_BE_TRACK;
}

/* What the period's transition does to best effort's loop: the moves
 * from outside it, else its step.  Returns 1 where it put the level
 * back from outside the loop (no up limit then). */
static int qc_be_act(qc_ctl_t *ctl, const qc_be_plan_t *pl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    int saturated = ctl->reading.saturated;

    switch (ctl->be_why) {
    case QC_BE_WHY_TEST:
        /* its reading is the next period's */
        qc_be_test_start(ctl, pl->m_b, pl->lowest);
        return 0;
    case QC_BE_WHY_ALONE:
    case QC_BE_WHY_REAL:
        /* Nothing shed lowers the reading (qc_note_background_alone): the
         * top; or a test found the background real: back where the loop
         * was.  Saturated or not (a backup job may fill the CPU). */
        qc_pi_restart(&ctl->be, ctl->bg.full ? 1.0 : ctl->bg.restore);
        ctl->bg.restore = 0.0;
        return 1;
    case QC_BE_WHY_UNSATURATED:
        /* The backlog is gone: back at once to the level for the bound,
         * not up the PI's slope from the drain's level. */
        qc_pi_restart(&ctl->be, pl->m_ff);
        return 0;
    case QC_BE_WHY_SATURATED:
        /* Saturated with nothing left to drain although the levels were
         * the model's: it is off by a factor the search (qc_calib.h)
         * would take periods to find, while the queue grows.  Everyone
         * goes to the lowest tree until the sensor reads unsaturated,
         * then restarts where the model calibrated on that says. */
        qc_be_to_lowest(ctl, pl->lowest);
        return 0;
    default:
        break;
    }
    if (!qc_ctl_jump(ctl, &ctl->be, pl->target, pl->sum.u, pl->m_ff,
                     pl->lowest, 1)) {
        /* On a saturated resource best effort only goes down. */
        qc_pi_step(&ctl->be, pl->target, pl->sum.u, pl->sum.gain,
                   cfg->period, cfg->gain_margin,
                   saturated ? 0.0 : QC_PI_APPLIED_OWN);
        if (!(saturated && pl->follow > 0.0)) {
            qc_pi_shift(&ctl->be, pl->follow);
        }
    }
    return 0;
}

double qc_best_effort(qc_ctl_t *ctl, double u_guaranteed)
{
    qc_be_plan_t pl;
    double refuse;
    int restored;

    qc_be_plan(ctl, u_guaranteed, &pl);
    qc_be_note_over(ctl);
    ctl->be_mode = qc_be_choose(ctl, &pl, pl.target + pl.sum.u_guaranteed
                                + fmax(ctl->model.d, 0.0),
                                &ctl->be_why);
    restored = qc_be_act(ctl, &pl);
    if (ctl->tick.valved
        && (ctl->be_mode == QC_BE_TRACK || ctl->be_why == QC_BE_WHY_HELD)) {
        /* The valve sent the loop to the lowest tree within the period,
         * and it goes on from there: the period is the valve's. */
        ctl->be_mode = QC_BE_LOWEST;
        ctl->be_why = QC_BE_WHY_VALVE;
    }
    if (qc_pi_output(&ctl->be) > pl.m_b && !restored) {
        qc_hold_up(&ctl->be, pl.m_b, pl.lowest);
    }
    /* The trees are the loop's; below the lowest, refusing's. */
    qc_pi_hold_floor(&ctl->be, pl.lowest);
    refuse = qc_be_refuse_share(ctl, pl.lowest);
    if (refuse > 0.0) {
        qc_pi_restart(&ctl->be, pl.lowest);
    }
    ctl->be_last = refuse > 0.0 ? pl.lowest * (1.0 - refuse)
                   : qc_pi_output(&ctl->be);
    return ctl->be_last;
}

/* A best-effort host's class k at the best-effort level m_b (of
 * [0, 1]); premium at its own level when that is higher. */
void qc_be_apply(const qc_ctl_t *ctl, const qc_ctl_vs_t *vs, int k,
                 qc_ctl_class_t *cl, double m_b)
{
    if (k == QC_CLASS_PREMIUM) {
        cl->m_applied = qc_share_level(qc_pi_output(&cl->pi), m_b,
                                       vs->levels);
        return;
    }
    cl->u_target = ctl->be_target;
    cl->m_applied = m_b * vs->levels;
    qc_pi_init(&cl->pi, vs->levels, cl->m_applied);
}

/*
 * Has guaranteed host i had more requests of class k since the period
 * began than its contract allows a whole period (qc_past_contract)?
 * Premium comes first, as in the loops: its requests count by
 * themselves, basic's with premium's.  A contract is a rate over the
 * loop's period, so however its requests bunch (a page and its objects)
 * a host within it never has.
 */
static int qc_over_contract(qc_ctl_t *ctl, unsigned i, int k)
{
    double t = ctl->tick.surge_t;

    return qc_past_contract(ctl, i, qc_ctl_host_rate(ctl, i, k, t) * t,
                            ctl->cfg->period);
}

/* The valve's levels: best effort at `lowest` when `be` (it was above
 * it), each class of a guaranteed host past its contract at its lowest
 * tree, and the others at their own loop's level where best effort had
 * lent them more.  Returns whether a guaranteed class went down. */
static int qc_valve_apply(qc_ctl_t *ctl, double lowest, int be)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    unsigned i;
    int k, down = 0;

    for (i = 0; i < cfg->nvs; i++) {
        const qc_ctl_vs_t *vs = &cfg->vs[i];

        for (k = 0; k < QC_NCLASSES && !vs->fixed; k++) {
            qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            if (!vs->guaranteed) {
                if (be) {
                    qc_be_apply(ctl, vs, k, cl, lowest);
                }
            }
            else if (qc_over_contract(ctl, i, k)) {
                /* as best effort's: its lowest tree until the first
                 * unsaturated reading, not a period's cut its loop then
                 * walks down from */
                qc_pi_restart(&cl->pi, fmin(qc_pi_output(&cl->pi), 1.0));
                down = down || cl->m_applied > 1.0;
                cl->m_applied = fmin(cl->m_applied, 1.0);
            }
            else if (be && cl->m_applied > qc_pi_output(&cl->pi)) {
                /* excess sharing gives back what best effort lent */
                cl->m_applied = qc_share_level(qc_pi_output(&cl->pi),
                                               lowest, vs->levels);
            }
        }
    }
    return down;
}

/*
 * Within a period: a jump of the load decided above the lowest trees
 * (a cold start, a step, a restart on a model that is far off) that
 * keeps the resource saturated for QC_CTL_PERSIST ticks sends best
 * effort to the lowest tree at once, and with it each guaranteed host
 * past its contract (qc_over_contract): what a host has beyond it is
 * shared excess (paper, 5.1), best effort's to give up; a host within
 * its contract keeps its level.  The period's loop would act only
 * at its end, and on a link every second at 3x queues two seconds of
 * work that clients then wait for.  The loop restarts from the model
 * in the first period that reads unsaturated, as after its own valve.
 * A jump is a count of those requests past what the levels decide by
 * more than its jitter (qc_count_past): held load at the bound differs
 * by its jitter only, so its busy seconds do not fire this.  A background the fit knows to saturate the resource is
 * not shed here either.  The request path's surge guard (qc_surge.h)
 * fires it too, surged: it has seen arrivals past the rate that
 * saturates the resource, and sends them down itself until then.
 */
int qc_ctl_valve(qc_ctl_t *ctl, double dt, double u_tick, int surged)
{
    double upper = qc_ctl_upper_arrivals(ctl), last = ctl->tick.upper;
    double lowest;
    unsigned fewest;
    int jumped = 0, be;

    ctl->tick.upper = upper;
    if (!(u_tick >= QC_U_SATURATED) || !(dt > 0.0)) {
        if (!(dt > 0.0) || !ctl->tick.saturated
            || ++ctl->tick.dips >= QC_CTL_VALVE_DIPS) {
            ctl->tick.saturated = 0;
        }
        else {
            ctl->tick.seconds += dt;
        }
    }
    else {
        ctl->tick.dips = 0;
        if (ctl->tick.saturated++ == 0) {
            ctl->tick.upper0 = last;
            ctl->tick.seconds = 0.0;
        }
        ctl->tick.seconds += dt;
        jumped = ctl->tick.saturated >= QC_CTL_PERSIST
                 && qc_count_past(upper - ctl->tick.upper0,
                                  ctl->tick.upper_rate * ctl->tick.seconds);
    }
    fewest = qc_fewest_levels(ctl, 1);
    lowest = 1.0 / (fewest ? fewest : qc_min_levels_any(ctl));
    if (!(jumped || surged) || ctl->tick.valved
        || (ctl->warnings & QC_WARN_BACKGROUND)) {
        return 0;
    }
    be = qc_pi_output(&ctl->be) > lowest;
    if (!qc_valve_apply(ctl, lowest, be) && !be) {
        return 0;
    }
    ctl->tick.valves++;
    if (be) {
        qc_be_to_lowest(ctl, lowest);
        ctl->be_mode = QC_BE_LOWEST;
        ctl->be_why = QC_BE_WHY_VALVE;
        ctl->tick.valved = 1;
    }
    return 1;
}
