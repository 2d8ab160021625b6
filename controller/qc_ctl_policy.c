/* Licensed under the Apache License, Version 2.0. */

/*
 * The control policy (paper §4.4, §5): from the period's rates, the
 * sensor reading and the loop state, the levels of every class.  No
 * I/O.  The reasoning behind the rules is in doc/control.md.
 */

#include <math.h>
#include <string.h>

#include "qc_ctl_private.h"
#include "qc_math.h"
#include "qc_surge.h"

/* Decided work not yet sent (periods of the resource) below which
 * there is none, and the longest a resource is taken to drain it: a
 * link's queue after a step to 3x drains in 5 to 7 s.  Past that a
 * model that overstates the work would hold "draining" for ever. */
#define QC_CTL_BACKLOG_IDLE 0.05
#define QC_CTL_DRAIN_SECONDS 10.0
#define QC_CTL_GROWING 3
#define QC_CTL_FALLING 0.95
/* Saturated for longer than this, the load is the requests' own, of
 * whatever tree they are served from (doc/control.md, point 15). */
#define QC_CTL_LOWEST_OWN (2.0 * QC_CTL_DRAIN_SECONDS)
/* Saturated periods in a row after which best effort degrades fully,
 * unless the last unsaturated reading was within this share of the
 * target: a loop holding the bound (doc/control.md, point 12). */
#define QC_CTL_VALVE_PERIODS 2
#define QC_CTL_HELD_BAND 0.2
/* ... and no more arrivals than this times those of that reading, and
 * best effort's level no higher than then by more than this. */
#define QC_CTL_HELD_RATE 1.2
#define QC_CTL_HELD_STEP 0.02
/* A background of more than half the bound lets the reading stay over
 * it; over by this much for this many periods in a row, best effort
 * tests it at its lowest tree, at most once in this many seconds. */
#define QC_CTL_TEST_OVER 0.1
#define QC_CTL_TEST_PERIODS 3
#define QC_CTL_TEST_SECONDS 30.0
/* A test's reading this close to the fitted background confirms it. */
#define QC_CTL_TEST_NOISE 0.95

/* The valve within a period (qc_ctl_valve): saturated ticks in a row,
 * and how far the rate decided above the lowest trees over them must
 * exceed the last period's (relative, and in requests/s so that an
 * idle period's 0 is no reference every burst exceeds). */
#define QC_CTL_VALVE_TICKS 3
#define QC_CTL_VALVE_JUMP 1.5
#define QC_CTL_VALVE_LEAST 5.0

/* Periods over which best effort drains a backlog: held at the bound it
 * would drain at the resource's spare 10% (a 2 s backlog after a step to
 * 3x: 20 s of queueing, and clients time out). */
#define QC_CTL_DRAIN_PERIODS 3.0

/* Background load is there at every instant, so it is at most the
 * lowest reading of the last FLOOR to 2 FLOOR seconds; one that
 * fluctuates is charged on average, up to half the bound above that
 * (what the targets charge at most: qc_target_background). */
#define QC_CTL_FLOOR_SECONDS 15.0

/* Decided load the loops expected to exceed the bound, relative. */
#define QC_CTL_EXPECTED 1.05

/* Wrong resource: the sensor below half the bound while this many
 * connections wait in the accept queues, for this many periods. */
#define QC_WARN_QUEUE 16
#define QC_WARN_PERIODS 5

/* The fitted background at or over the bound: say so.  The loops do
 * not shed it: the calibration takes it out of the requests' share. */

/* A load the lowest tree cannot carry, measured (qc_overflow.h). */
static int qc_overflowing(const qc_ctl_t *ctl)
{
    return ctl->ovf.on;
}

/* The fewest trees of a host a loop drives (busy: one with traffic in
 * the last period); 0 for none. */
static unsigned qc_fewest_levels(qc_ctl_t *ctl, int busy)
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
 * or above.  An idle host must not hold the others at its range. */
static unsigned qc_min_levels(qc_ctl_t *ctl)
{
    unsigned m = qc_fewest_levels(ctl, 1);

    return m ? m : 1;
}

/* The same over every host: at a cold start none had traffic. */
static unsigned qc_min_levels_any(qc_ctl_t *ctl)
{
    unsigned m = qc_fewest_levels(ctl, 0);

    return m ? m : 1;
}

/* Did a quantity change by half or more since the last period, at or
 * above `least` (below it, noise)? */
static int qc_jumped(double now, double prev, double least)
{
    double hi = now > prev ? now : prev;

    return hi > 0.0 && (now > prev ? now - prev : prev - now) >= 0.5 * hi
           && hi >= least;
}

/*
 * The lowest reading of the last QC_CTL_FLOOR_SECONDS or more: two
 * windows, the current one and the one before (< 0 while there is no
 * reading yet).
 */
static double qc_reading_floor(qc_ctl_t *ctl)
{
    double u = ctl->u_measured;

    if (u >= 0.0) {
        if (ctl->floor_age >= QC_CTL_FLOOR_SECONDS) {
            ctl->floor_prev = ctl->floor_cur;
            ctl->floor_cur = -1.0;
            ctl->floor_age = 0.0;
        }
        if (ctl->floor_cur < 0.0 || u < ctl->floor_cur) {
            ctl->floor_cur = u;
        }
        ctl->floor_age += ctl->cfg->period;
    }
    if (ctl->floor_prev >= 0.0 && ctl->floor_prev < ctl->floor_cur) {
        return ctl->floor_prev;
    }
    return ctl->floor_cur;
}

/* The period the valve fired in, and the next: the fit would learn the
 * top tree's work queued before it fired as theirs (a PHP site's
 * snapshots were fitted at 2.3 times their cost, and 503s followed). */
static int qc_valve_lag(const qc_ctl_t *ctl)
{
    return ctl->valved || ctl->valved_last;
}

/*
 * The end of a background that saturated the resource alone: the fit's
 * d and the calibration were taught by its censored readings (and k by
 * its first period, as it began among requests), and no reading with
 * traffic tells what is left of it from the requests' load.  Both go
 * back to what stands without it, the d of before and the fit's own
 * costs; what is left is for the background's test to find.
 */
static void qc_background_gone(qc_ctl_t *ctl)
{
    ctl->bg_full = 0;
    ctl->bg_below = 0;
    ctl->bg_seen = 0.0;
    ctl->bg_wait = 0.0;
    qc_rls_limit_d(&ctl->rls, ctl->bg_d0);
    qc_ctl_model_from_rls(ctl);
    qc_calib_init(&ctl->calib);
}

static double qc_decided_load(qc_ctl_t *ctl, const qc_model_t *mod);

void qc_ctl_update_model(qc_ctl_t *ctl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    qc_model_t before = ctl->model;
    qc_rls_sample_t x;
    double served = 0.0, u = ctl->u_measured, floor, u_old, u_new;
    unsigned i, j;
    int k, fresh;

    /* A fit can be taught a background the resource never showed (in
     * CI, periods with no arrivals read 0.99 while earlier replies
     * drained): the calibration would take it out of every reading and
     * the loops would see no load.  Projected before the update, so that
     * its residual is not the wrong d's, and after. */
    floor = qc_reading_floor(ctl);
    if (floor >= 0.0) {
        floor += 0.5 * cfg->bound;
        qc_rls_limit_d(&ctl->rls, floor);
    }
    /* A period best effort spent at its lowest tree to test the
     * background (qc_be_test_background) read the background and
     * what was left of the requests: no background is more. */
    if (ctl->bg_test && u >= 0.0) {
        ctl->bg_restore = qc_rls_d(&ctl->rls) * QC_CTL_TEST_NOISE <= u
                          ? ctl->bg_m : 0.0;
        ctl->bg_seen = u;
        qc_rls_limit_d(&ctl->rls, u);
        ctl->bg_test = 0;
        /* Everything at its lowest tree and well short of saturated
         * (past a sensor's rounding): the saturation was the requests'. */
        if (ctl->bg_full
            && u < 0.5 * (cfg->bound + QC_PI_SATURATED)) {
            qc_background_gone(ctl);
            ctl->bg_restore = 0.0;
        }
    }
    /* What the fit's d was before a background saturated the resource
     * alone (qc_note_background_alone). */
    if (!ctl->bg_alone && !ctl->bg_full) {
        ctl->bg_d0 = qc_rls_d(&ctl->rls);
    }
    memset(&x, 0, sizeof(x));
    for (i = 0; i < cfg->nvs; i++) {
        unsigned levels = cfg->vs[i].levels;

        for (k = 0; k < QC_NCLASSES; k++) {
            const qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            for (j = 1; j <= levels; j++) {
                x.r[levels - j] += cl->r_served_tree[j];
                served += cl->r_served_tree[j];
            }
            x.w += cl->w;
            x.r_rej += cl->r_rej;
        }
    }
    /* A saturated reading bounds the load of the period's own requests
     * from below only if nothing was queued when it began: after a
     * saturated period it is the backlog's as much as theirs (periods
     * with no arrivals at all read 0.99 and taught the background d the
     * whole link).  Past the longest drain, a saturation that persists
     * is the requests' own (the lowest tree's cost must be learnt then,
     * or a load it cannot carry is never refused), if there are any.
     * The fit censors the ones it keeps.  Otherwise,
     * right after a jump of the load and in the period after a
     * saturated one with work left to drain, the sensor still sees old
     * load: such a period would teach the model the lag, not the costs. */
    fresh = !qc_pi_capped(ctl->prev_u);
    if (u >= 0.0 && !qc_valve_lag(ctl) && (qc_pi_capped(u)
                     ? fresh || (ctl->saturated_for > QC_CTL_DRAIN_SECONDS
                                 && served > 0.0)
                     : ((fresh || ctl->backlog <= QC_CTL_BACKLOG_IDLE)
                        && !qc_jumped(x.w, ctl->prev_w, 1.0)
                        && !qc_jumped(served, ctl->prev_served, 1.0)
                        && !qc_jumped(x.r_rej, ctl->prev_rej, 1.0)))) {
        qc_rls_update(&ctl->rls, &x, u);
    }
    ctl->prev_w = x.w;
    ctl->prev_served = served;
    ctl->prev_rej = x.r_rej;
    if (floor >= 0.0) {
        qc_rls_limit_d(&ctl->rls, floor);
    }
    qc_ctl_model_from_rls(ctl);
    /* Last period's decided load in the new model's terms: a change of
     * the fit is no change of the load (qc_reading). */
    u_old = qc_decided_load(ctl, &before);
    u_new = qc_decided_load(ctl, &ctl->model);
    if (u_old >= QC_CALIB_MIN_LOAD && u_new >= QC_CALIB_MIN_LOAD) {
        ctl->prev_u_model *= u_new / u_old;
    }
}

/*
 * Model utilization of what a class decided in the period: arrivals by
 * tree at each tree's cost, bytes at each tree's mean reply (the loops
 * act on that, not on bytes logged as replies finish, which lag a change
 * of level by as long as the link's queue takes to drain), rejections.
 * Until some reply size is known, the logged bytes stand in.
 */
static double qc_class_model_util(const qc_model_t *mod,
                                  const qc_ctl_class_t *cl, unsigned levels)
{
    double u = mod->c * cl->r_rej, w = 0.0;
    unsigned k;
    int known = 0;

    for (k = 1; k <= levels; k++) {
        u += mod->a_tree[levels - k] * cl->r_tree[k];
        if (cl->xbar[k - 1] > 0.0) {
            w += cl->r_tree[k] * cl->xbar[k - 1];
            known = 1;
        }
    }
    return u + mod->b * (known ? w : cl->w);
}

/* The model load of every class's decisions in the period. */
static double qc_decided_load(qc_ctl_t *ctl, const qc_model_t *mod)
{
    double u = 0.0;
    unsigned i;
    int k;

    for (i = 0; i < ctl->cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            u += qc_class_model_util(mod, qc_cls(ctl, i, k),
                                     ctl->cfg->vs[i].levels);
        }
    }
    return u;
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
static double qc_class_gain(const qc_ctl_t *ctl, const qc_ctl_class_t *cl,
                            unsigned levels, double m)
{
    double u[QC_MAX_TREES + 1];

    qc_class_levels(ctl, cl, levels, u);
    return qc_pi_process_gain(u, levels, m);
}

/* Calibrated utilization of a class at level m. */
static double qc_class_util(const qc_ctl_t *ctl, const qc_ctl_class_t *cl,
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
static int qc_ctl_jump(const qc_ctl_t *ctl, qc_pi_t *pi, double target,
                       double u, double m_ff, double lowest, int first_ok)
{
    double m = qc_pi_output(pi), lo = m < lowest ? m : lowest;
    int saturated = qc_pi_capped(ctl->u_measured);
    int counted = saturated && ctl->queued >= 0;

    if (saturated && !counted
        && !(first_ok && !qc_pi_capped(ctl->prev_u))) {
        return 0;
    }
    if (saturated && m_ff > m) {
        return 0;               /* a full resource is never a reason up */
    }
    return qc_pi_jump(pi, target, u, m_ff < lo ? lo : m_ff, counted);
}

/*
 * No 503 while the resource is below the bound: a loop that went down
 * this period may not go below the lowest tree (or below where it was,
 * if it was lower already) unless the measurement says the bound is
 * reached.  Rejection is for when the cheapest tree cannot carry the
 * load, and that shows as a measured utilization at the bound.  Nor
 * where rejecting does not help (helps == 0: qc_reject_helps): back to
 * the lowest tree.
 */
static void qc_no_reject_below_bound(const qc_ctl_t *ctl, qc_pi_t *pi,
                                     double before, double lowest,
                                     int helps)
{
    if (!helps) {
        qc_pi_hold_floor(pi, lowest);
    }
    else if (ctl->u_measured >= 0.0 && ctl->u_measured < ctl->cfg->bound) {
        qc_pi_hold_floor(pi, before < lowest ? before : lowest);
    }
}

/*
 * Model load of a class all rejected (*u0) and all served from its
 * lowest tree (*u1), added to the sums.  Rejecting helps only where a
 * 503 costs well under what the cheapest page does: where the cost is
 * the connection itself (a slow machine, tiny pages), a 503 costs as
 * much, and refusing would only turn served clients away.
 */
#define QC_REJECT_SAVES 0.5

/* The fit has measured a tree's cost once its uncertainty is below this
 * share of the prior's (qc_rls_a_uncertainty). */
#define QC_MEASURED 0.2

static void qc_reject_saving(const qc_ctl_t *ctl, const qc_ctl_class_t *cl,
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
    if (cl->r > 0.0 && ctl->saturated_for <= QC_CTL_LOWEST_OWN
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
 * a 503 costs well under a page.  (No traffic: nothing to decide, the
 * PI's own rules hold.) */
static int qc_reject_helps(const qc_ctl_t *ctl, double r, double u0,
                           double u1, double target, double own)
{
    /* The link's queue not draining at the lowest tree measures what
     * the prices could only bound: that tree's load is over the link's. */
    return r <= 0.0
           || ((qc_overflowing(ctl)
                || (ctl->calib.k * u1 > target && u1 > fmax(own, target)))
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
static double qc_held(const qc_ctl_class_t *cl, double u)
{
    return u < cl->u_target ? u : cl->u_target;
}

/* Premium gets the guarantee less the cost of rejecting basic; basic
 * gets what premium leaves (paper §5.2), in measured units.  Returns
 * what their loops hold them to (qc_held). */
static double qc_guaranteed_targets(qc_ctl_t *ctl, unsigned i)
{
    const qc_ctl_vs_t *vs = &ctl->cfg->vs[i];
    qc_ctl_class_t *prem = qc_cls(ctl, i, QC_CLASS_PREMIUM);
    qc_ctl_class_t *basic = qc_cls(ctl, i, QC_CLASS_BASIC);
    double k = ctl->calib.k;
    double ustar = k * qc_target_guarantee(&ctl->model, vs->rmax, vs->wmax);

    prem->u_target = qc_target_premium(&ctl->model, ustar, k * basic->r);
    basic->u_target = qc_target_basic(ustar, prem->u);
    return qc_held(prem, prem->u) + qc_held(basic, basic->u);
}

/* Is a class of a host that is not pinned served at the best-effort
 * level m (= m_b M)?  Best-effort hosts always are; a guaranteed class
 * when m is above its own loop's output (excess sharing, §5.3). */
static int qc_be_drives(const qc_ctl_vs_t *vs, const qc_ctl_class_t *cl,
                        double m)
{
    return !vs->guaranteed || qc_pi_output(&cl->pi) < m;
}

/*
 * Visit every class of every host that is not pinned, with the level
 * m = m_b M its host would be served at by the best-effort level and
 * whether that level drives it there (qc_be_drives).
 */
typedef void (*qc_be_visit_fn)(qc_ctl_t *ctl, const qc_ctl_vs_t *vs,
                               qc_ctl_class_t *cl, double m, int drives,
                               void *arg);

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

            fn(ctl, vs, cl, m, qc_be_drives(vs, cl, m), arg);
        }
    }
}

static void qc_be_util_one(qc_ctl_t *ctl, const qc_ctl_vs_t *vs,
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
static double qc_class_level(const qc_ctl_t *ctl, const qc_ctl_class_t *cl,
                             unsigned levels, double target)
{
    qc_class_arg_t a = { ctl, cl, levels };

    return qc_pi_invert_above(qc_class_util_cb, &a, 1.0, levels, target);
}

/* What the best-effort loop measures and holds, summed over the
 * classes it drives. */
typedef struct {
    double u, gain, u_guaranteed;
    double r, u0, u1;   /* arrivals; all rejected, all at the lowest tree */
    double lowest_bps;  /* bytes/s all would send from the lowest tree */
} qc_be_sum_t;

static void qc_be_sum_one(qc_ctl_t *ctl, const qc_ctl_vs_t *vs,
                          qc_ctl_class_t *cl, double m, int drives,
                          void *arg)
{
    qc_be_sum_t *sum = arg;

    if (!drives) {
        return;                 /* its own loop is in force */
    }
    /* A guaranteed class served at the best-effort level (excess
     * sharing) is best effort's to hold: in its measurement and out of
     * what its target leaves for the guarantees. */
    if (vs->guaranteed) {
        sum->u_guaranteed -= qc_held(cl, cl->u);
    }
    sum->u += cl->u;
    sum->gain += vs->levels * qc_class_gain(ctl, cl, vs->levels, m);
    qc_reject_saving(ctl, cl, vs->levels, &sum->r, &sum->u0, &sum->u1);
    sum->lowest_bps += cl->r * cl->xbar[0];
}

/*
 * Under overflow the prices say nothing the loop can use: the
 * calibration searched up while saturated, and the link's reading is
 * its queue's as much as the period's.  The bytes are measured (the
 * share from them: qc_overflow_share), and the overhead has whatever
 * else the link carries in it, so the fitted background is not taken
 * off the bound again.  Returns best effort's level (in [0, lowest]),
 * or -1 when the sizes are not known yet.
 */
static double qc_overflow_level(const qc_ctl_t *ctl, const qc_be_sum_t *sum,
                                double lowest)
{
    double f = qc_overflow_share(&ctl->ovf,
                                 ctl->cfg->bound - sum->u_guaranteed,
                                 ctl->sent_backlog, QC_CTL_DRAIN_PERIODS,
                                 sum->r, sum->lowest_bps, ctl->link_bps);

    return f < 0.0 ? -1.0 : lowest * f;
}

/* Arrivals/s of every host and class in the period. */
static double qc_arrivals(const qc_ctl_t *ctl)
{
    double r = 0.0;
    unsigned i;

    for (i = 0; i < ctl->cfg->nvs * QC_NCLASSES; i++) {
        r += ctl->cls[i].r;
    }
    return r;
}

/*
 * A saturation the loop met while holding the bound (its last
 * unsaturated reading near the target, at about today's arrivals and
 * level m_b): the chance of a noisy sensor, not a model off by a factor.
 */
static int qc_was_holding(const qc_ctl_t *ctl, double target, double m_b)
{
    return ctl->u_unsaturated >= (1.0 - QC_CTL_HELD_BAND) * target
           && qc_arrivals(ctl) <= QC_CTL_HELD_RATE * ctl->r_unsaturated
           && m_b <= ctl->m_unsaturated + QC_CTL_HELD_STEP;
}

/*
 * How far the model's level for `target` moved with a trend in best
 * effort's arrivals r (doc/control.md, point 23).  The PI lags a ramp:
 * each period's new arrivals meet last period's level.  Where the
 * arrivals moved the same way in two periods in a row, the loop follows
 * the smaller of the two moves at once: the model's level at r less
 * its level at r less that move.  One fit and calibration for both, so
 * a change of either is the PI's to follow, not this.  A lone step,
 * a large move after a small one, moves little (the jump and the PI
 * take it), and noise around a steady load seldom (its moves alternate).
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
 * at the first unsaturated reading (the restart in qc_best_effort): the
 * valves, and the background's test.
 */
static void qc_be_to_lowest(qc_ctl_t *ctl, double lowest)
{
    qc_pi_restart(&ctl->be, lowest);
    ctl->restart = 1;
}

/*
 * The targets charge the fitted background only up to half the bound,
 * and the calibration takes all of it out of the reading, so a fit with
 * more than that lets the reading stay over the bound by the rest
 * (qc_target_background).  A background is there at every instant; one
 * that steady arrivals cannot tell from the requests' costs is often
 * the fit's (pages that cost less under load, fitted as a background
 * that rose: the CPU held at 0.8-1.0 against 0.6 in test_robust).  Over
 * the bound (or saturated) for QC_CTL_TEST_PERIODS in a row on such a
 * fit, best effort spends a period at its lowest tree, whose reading
 * bounds the background (qc_ctl_update_model), and restarts from the
 * model corrected by it.  A background that is real reads at least as much
 * there: the loop goes back to where it was, and tests again only when
 * the fit puts the background over that reading, at most once in
 * QC_CTL_TEST_SECONDS.  Returns 1 if the test began.
 */
static int qc_be_test_background(qc_ctl_t *ctl, double m_b, double lowest)
{
    const qc_ctl_config_t *cfg = ctl->cfg;

    ctl->bg_wait -= cfg->period;
    if (ctl->u_measured > cfg->bound + QC_CTL_TEST_OVER
        || qc_pi_capped(ctl->u_measured)) {
        ctl->bg_over++;
    }
    else {
        ctl->bg_over = 0;
    }
    if (ctl->bg_over < QC_CTL_TEST_PERIODS
        || !(ctl->bg_full
             || ctl->model.d > fmax(0.5 * cfg->bound, ctl->bg_seen))
        || !(m_b > lowest) || ctl->bg_wait > 0.0) {
        return 0;
    }
    ctl->bg_m = m_b;
    qc_be_to_lowest(ctl, lowest);
    ctl->bg_test = 1;
    ctl->bg_wait = QC_CTL_TEST_SECONDS;
    ctl->bg_over = 0;
    ctl->bg_tests++;
    return 1;
}

/*
 * The best-effort loop holds everything not covered by a guarantee at
 * the bound less the guaranteed traffic and the background (§5.3).  Its
 * output is a fraction of each host's range; its process gain sums the
 * classes it drives, each scaled by that host's M.
 */
static double qc_best_effort(qc_ctl_t *ctl, double u_guaranteed)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double m_b = qc_pi_output(&ctl->be), m_ff, m_over, target, follow;
    double lowest = 1.0 / qc_min_levels(ctl);
    int saturated = qc_pi_capped(ctl->u_measured), restored = 0;
    qc_be_sum_t sum = { 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0 };

    sum.u_guaranteed = u_guaranteed;
    qc_be_each(ctl, m_b, qc_be_sum_one, &sum);
    ctl->be_target = qc_target_best_effort(&ctl->model, cfg->bound,
                                           sum.u_guaranteed);
    /* Work still queued from an overload is drained within a few
     * periods, below the bound, not at the spare capacity the bound
     * leaves. */
    target = ctl->be_target;
    if (ctl->draining) {
        target -= ctl->backlog / QC_CTL_DRAIN_PERIODS;
        target = target > 0.0 ? target : 0.0;
    }
    /* m_b was in force all through the period just read.  A loop
     * holding a bound near the saturation mark reads over it now and
     * then by chance: no slope to cap the way up with (doc/control.md,
     * point 21). */
    if (!ctl->valved
        && !(saturated
             && QC_PI_SATURATED - target <= QC_CTL_HELD_BAND * target
             && qc_was_holding(ctl, target, m_b))) {
        qc_ceiling_observe(&ctl->ceiling, m_b, ctl->u_measured, sum.r);
    }
    if (sum.gain <= 0.0) {
        sum.gain = QC_PI_GAIN_MIN;
    }
    /* sum.u_guaranteed is now what the guaranteed loops hold. */
    m_ff = qc_pi_invert_above(qc_be_util, ctl, lowest, 1.0,
                              target + sum.u_guaranteed);
    follow = qc_be_trend(ctl, sum.r, target + sum.u_guaranteed, m_ff,
                         lowest);
    m_over = qc_overflowing(ctl) ? qc_overflow_level(ctl, &sum, lowest)
             : -1.0;
    if (m_over >= 0.0) {
        /* Measured, not searched: straight to the level that holds,
         * saturated or not (a jump on the prices would take the loop
         * back to the lowest tree), until the lowest tree carries the
         * target again. */
        qc_pi_restart(&ctl->be, m_over);
        ctl->ovf.on = m_over < lowest;
    }
    else if (qc_be_test_background(ctl, m_b, lowest)) {
        /* its reading is the next period's */
    }
    else if (ctl->bg_full || ctl->bg_restore > 0.0) {
        /* Nothing shed lowers the reading (qc_note_background_alone): the
         * top; or a test found the background real: back where the loop
         * was.  Saturated or not (a backup job may fill the CPU). */
        restored = 1;
        qc_pi_restart(&ctl->be, ctl->bg_full ? 1.0 : ctl->bg_restore);
        ctl->bg_restore = 0.0;
        ctl->restart = 0;
    }
    else if (ctl->restart && !saturated && !ctl->valved) {
        /* The backlog is gone: back at once to the level for the bound,
         * not up the PI's slope from the drain's level. */
        qc_pi_restart(&ctl->be, m_ff);
        ctl->restart = 0;
    }
    else if (saturated && !ctl->draining
             && ctl->calib.saturated >= QC_CTL_VALVE_PERIODS
             && m_b > lowest
             && !qc_was_holding(ctl, target, m_b)) {
        /* Saturated with nothing left to drain although the levels were
         * the model's: it is off by a factor the search (qc_calib.h)
         * would take periods to find, while the queue grows.  Everyone
         * goes to the lowest tree until the sensor reads unsaturated,
         * then restarts where the model calibrated on that says. */
        qc_be_to_lowest(ctl, lowest);
    }
    else if (!qc_ctl_jump(ctl, &ctl->be, target, sum.u, m_ff, lowest, 1)) {
        /* On a saturated resource best effort only goes down. */
        qc_pi_step(&ctl->be, target, sum.u, sum.gain, cfg->period,
                   cfg->gain_margin, saturated ? 0.0 : QC_PI_APPLIED_OWN);
        if (!(saturated && follow > 0.0)) {
            qc_pi_shift(&ctl->be, follow);
        }
    }
    if (qc_pi_output(&ctl->be) > m_b && !restored) {
        double cap = qc_ceiling_cap(&ctl->ceiling, m_b, ctl->u_measured,
                                    cfg->bound - (ctl->be_target - target));

        qc_pi_hold_ceiling(&ctl->be, cap > m_b ? cap : m_b);
        qc_pi_hold_ceiling(&ctl->be, qc_pi_up_limit(m_b, lowest, lowest));
    }
    /* Refusing asks the target for the offered load, not the drain's:
     * a queue left by an overshoot is no load the lowest tree cannot
     * carry.  And the fit's own cost must say so too: a calibration
     * searched up while saturated is a lower bound of the load then,
     * not a price of the lowest tree (doc/control.md, point 15). */
    qc_no_reject_below_bound(ctl, &ctl->be, m_b, lowest,
                             qc_reject_helps(ctl, sum.r, sum.u0, sum.u1,
                                             ctl->be_target,
                                             0.5 * cfg->bound));
    /* Refusing barred, the loop holds the lowest tree; while it is
     * probed, the loop goes on and only what is applied waits, so that
     * a load found to need refusing meets the level it needs. */
    if (ctl->refuse_most <= 0.0) {
        qc_pi_hold_floor(&ctl->be, lowest);
    }
    return fmax(qc_pi_output(&ctl->be), lowest * (1.0 - ctl->refuse_most));
}

/* A best-effort class at the best-effort level m_b (of [0, 1]). */
static void qc_be_apply(const qc_ctl_t *ctl, const qc_ctl_vs_t *vs,
                        qc_ctl_class_t *cl, double m_b)
{
    cl->u_target = ctl->be_target;
    cl->m_applied = m_b * vs->levels;
    qc_pi_init(&cl->pi, vs->levels, cl->m_applied);
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

    if (ctl->bg_full) {
        /* As best effort (qc_note_background_alone), and with it to the
         * lowest tree for the background's test. */
        qc_pi_restart(&cl->pi, vs->levels);
        return ctl->bg_test ? 1.0 : vs->levels;
    }
    if (applied != QC_PI_APPLIED_OWN
        || !qc_ctl_jump(ctl, &cl->pi, cl->u_target, cl->u, m_ff, 1.0, 0)) {
        qc_pi_step(&cl->pi, cl->u_target, cl->u, p, ctl->cfg->period,
                   ctl->cfg->gain_margin, applied);
    }
    qc_pi_hold_ceiling(&cl->pi, qc_pi_up_limit(own, 1.0, 1.0));
    qc_reject_saving(ctl, cl, vs->levels, &r, &u0, &u1);
    qc_no_reject_below_bound(ctl, &cl->pi, own, 1.0,
                             qc_reject_helps(ctl, r, u0, u1, cl->u_target,
                                             cl->u_target));
    if (ctl->refuse_most <= 0.0) {
        qc_pi_hold_floor(&cl->pi, 1.0);
    }
    return qc_share_level(fmax(qc_pi_output(&cl->pi),
                               1.0 - ctl->refuse_most), m_b, vs->levels);
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

/*
 * The work waiting, in seconds of the resource: the link's queue, and
 * the connections not yet accepted at a lowest-tree reply (on a link)
 * or at the period's mean service (elsewhere); < 0 unknown.
 */
static double qc_waiting_work(const qc_ctl_t *ctl)
{
    double served = 0.0, per = qc_lowest_reply_seconds(ctl);
    unsigned i;

    if (ctl->sent_backlog < 0.0 && ctl->queued < 0) {
        return -1.0;
    }
    for (i = 0; i < ctl->cfg->nvs * QC_NCLASSES; i++) {
        served += ctl->cls[i].r_served;
    }
    if (per <= 0.0) {
        per = served > 0.0 ? 1.0 / served : 0.0;
    }
    return fmax(ctl->sent_backlog, 0.0)
           + (ctl->queued > 0 ? (double)ctl->queued * per : 0.0);
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
 * (measured where it can be, else this estimate) did not fall in
 * QC_CTL_GROWING saturated periods in a row: that is load the levels
 * decided do not hold, not a queue draining (clients that send their
 * next request when a reply comes refill the resource as m falls).
 */
static int qc_update_backlog(qc_ctl_t *ctl, double u_model)
{
    double before = ctl->backlog, q = qc_waiting_work(ctl);

    if (qc_pi_capped(ctl->u_measured)) {
        double excess = (ctl->k_unsaturated > 0.0 ? ctl->k_unsaturated
                         : ctl->calib.k) * u_model + ctl->model.d
                        - ctl->u_measured;

        ctl->saturated_for += ctl->cfg->period;
        ctl->backlog += ctl->excess + excess;
        ctl->excess = 0.0;
        if (ctl->backlog < 0.0) {
            ctl->backlog = 0.0;
        }
        ctl->backlog_grew = (q >= 0.0 && ctl->waiting_prev >= 0.0
                             ? q >= QC_CTL_FALLING * ctl->waiting_prev
                             : before > 0.0 && ctl->backlog >= before)
                            ? ctl->backlog_grew + 1 : 0;
    }
    else if (ctl->u_measured >= 0.0) {
        ctl->backlog = 0.0;
        ctl->saturated_for = 0.0;
        ctl->backlog_grew = 0;
    }
    ctl->waiting_prev = q;
    return ctl->backlog > QC_CTL_BACKLOG_IDLE
           && ctl->backlog_grew < QC_CTL_GROWING
           && ctl->saturated_for <= QC_CTL_DRAIN_SECONDS
           && !qc_overflowing(ctl);
}

/*
 * Does refusing lower the load (qc_relief.h)?  The period's arrivals
 * and refusals over every class, and the work waiting.  While it
 * does not, no loop refuses; until it is known to, they refuse a
 * little at most.
 */
static void qc_note_relief(qc_ctl_t *ctl)
{
    qc_relief_in_t in;
    unsigned i;

    memset(&in, 0, sizeof(in));
    for (i = 0; i < ctl->cfg->nvs * QC_NCLASSES; i++) {
        in.r += ctl->cls[i].r;
        in.r_rej += ctl->cls[i].r_rej;
    }
    in.u = ctl->u_measured;
    in.queue = qc_waiting_work(ctl);
    in.bound = ctl->cfg->bound;
    in.period = ctl->cfg->period;
    ctl->refuse_most = qc_relief_observe(&ctl->relief, &in);
    if (ctl->refuse_most <= 0.0) {
        ctl->warnings |= QC_WARN_NO_RELIEF;
    }
    else {
        ctl->warnings &= ~QC_WARN_NO_RELIEF;
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
    else if (load >= 0.0 && !ctl->draining && !qc_pi_capped(load)) {
        qc_overflow_learn(&ctl->ovf, load, ctl->link_bps, w, n);
    }
    qc_overflow_observe(&ctl->ovf, ctl->sent_backlog >= 0.0,
                        qc_pi_output(&ctl->be) <= lowest + 1e-9,
                        qc_pi_capped(ctl->u_measured),
                        ctl->sent_backlog
                        + (ctl->queued > 0 ? (double)ctl->queued : 0.0)
                          * qc_lowest_reply_seconds(ctl),
                        ctl->cfg->period);
}

/* After the calibration of an unsaturated period: what a saturation
 * that begins next is reckoned against (qc_update_backlog). */
static void qc_note_unsaturated(qc_ctl_t *ctl, double u_model)
{
    if (ctl->u_measured >= 0.0 && !qc_pi_capped(ctl->u_measured)) {
        double excess = ctl->calib.k * u_model + ctl->model.d
                        - ctl->u_measured;

        ctl->k_unsaturated = ctl->calib.k;
        ctl->u_unsaturated = ctl->u_measured;
        ctl->r_unsaturated = qc_arrivals(ctl);
        ctl->m_unsaturated = qc_pi_output(&ctl->be);    /* in force */
        ctl->excess = excess > 0.0 ? excess : 0.0;
    }
}

/*
 * QosCtlResource names the wrong resource when it stays low while
 * connections wait to be accepted: something else is the bottleneck.
 * Counted up and down so that one period does not flip it.
 */
static void qc_check_resource(qc_ctl_t *ctl)
{
    if (ctl->u_measured >= 0.0 && ctl->u_measured < 0.5 * ctl->cfg->bound
        && ctl->queued >= QC_WARN_QUEUE) {
        if (ctl->low_queued < 2 * QC_WARN_PERIODS) {
            ctl->low_queued++;
        }
    }
    else if (ctl->low_queued > 0) {
        ctl->low_queued--;
    }
    if (ctl->low_queued >= QC_WARN_PERIODS) {
        ctl->warnings |= QC_WARN_WRONG_RESOURCE;
    }
    else if (ctl->low_queued == 0) {
        ctl->warnings &= ~QC_WARN_WRONG_RESOURCE;
    }
}

/*
 * Load the server does not cause is not shed by refusing its own
 * requests: the calibration takes the fitted background d (learnt from
 * idle periods above all) out of the reading, so the loops see only the
 * requests' share.  When d alone reaches the bound, the bound cannot be
 * held by shedding anything: the requests keep at least half the bound
 * (qc_target_background), and the status page says why it is exceeded.
 */
static void qc_check_background(qc_ctl_t *ctl)
{
    if (ctl->model.d >= ctl->cfg->bound || ctl->bg_full) {
        ctl->warnings |= QC_WARN_BACKGROUND;
    }
    else if (ctl->model.d < 0.8 * ctl->cfg->bound) {
        ctl->warnings &= ~QC_WARN_BACKGROUND;
    }
}

/*
 * A background that saturates the resource while nothing of the
 * server's is under way (no arrivals, no replies, nothing left to
 * drain) for QC_CTL_TEST_PERIODS in a row: while the reading stays
 * saturated, no level lowers it, and the loops hold every class at its
 * top (invariant (v); the fit cannot tell how much of a saturated
 * reading is whose, and its calibration may be what the background
 * taught it as it began).  The background's test looks again every
 * QC_CTL_TEST_SECONDS, every class at its lowest tree, so that a
 * saturation the requests take over from it is met (qc_ctl_update_model
 * ends it then).  Otherwise QC_CTL_TEST_PERIODS unsaturated readings in
 * a row end it (one may be the sensor's rounding: at T = 0.25 s a tick
 * is 4% of the CPU).
 */
static void qc_note_background_alone(qc_ctl_t *ctl)
{
    double served = 0.0;
    unsigned i;

    if (!(ctl->u_measured >= 0.0)) {
        return;
    }
    if (!qc_pi_capped(ctl->u_measured)) {
        ctl->bg_alone = 0;
        if (ctl->bg_full && ++ctl->bg_below >= QC_CTL_TEST_PERIODS) {
            qc_background_gone(ctl);
        }
        return;
    }
    ctl->bg_below = 0;
    for (i = 0; i < ctl->cfg->nvs * QC_NCLASSES; i++) {
        served += ctl->cls[i].r_served;
    }
    if (qc_arrivals(ctl) > 0.0 || served > 0.0 || ctl->draining) {
        ctl->bg_alone = 0;
    }
    else if (++ctl->bg_alone >= QC_CTL_TEST_PERIODS) {
        ctl->bg_full = 1;
    }
}

/*
 * Whose load this period's reading shows (QC_CALIB_*): a drain's
 * backlog's as much as this period's; and a period whose decided load
 * jumped (a step) is read by a sensor that still lags it: a fall says
 * nothing of the scale, a rise bounds it from below.
 */
static int qc_reading(const qc_ctl_t *ctl, double u_model)
{
    if (ctl->draining || ctl->drained || ctl->valved_last) {
        return QC_CALIB_OLD;
    }
    if (ctl->valved) {
        /* what it decided before the valve was still queued */
        return QC_CALIB_RISING;
    }
    if (!qc_jumped(u_model, ctl->prev_u_model, QC_CALIB_MIN_LOAD)) {
        return QC_CALIB_OWN;
    }
    return u_model > ctl->prev_u_model ? QC_CALIB_RISING : QC_CALIB_OLD;
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
    ctl->upper_rate = fmax(ctl->upper_rate, expect);
}

void qc_ctl_policy(qc_ctl_t *ctl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double u_guaranteed = 0.0, u_model = 0.0, m_b;
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
     * up to half the bound: qc_target_background.) */
    expected_over = ctl->calib.k * u_model + ctl->model.d
                    > QC_CTL_EXPECTED * cfg->bound;
    qc_note_link_queue(ctl, 1.0 / qc_min_levels(ctl));
    draining = qc_update_backlog(ctl, u_model);
    ctl->drained = ctl->draining && !draining;
    /* The last of a backlog may read just over the saturation mark: the
     * restart waits for the first unsaturated period after the drain. */
    ctl->restart = !draining && (ctl->drained || ctl->restart);
    ctl->draining = draining;
    qc_calib_update(&ctl->calib, ctl->u_measured, u_model, ctl->model.d,
                    qc_reading(ctl, u_model), expected_over,
                    QC_PI_SATURATED);
    qc_note_unsaturated(ctl, u_model);
    ctl->prev_u_model = u_model;
    for (i = 0; i < cfg->nvs * QC_NCLASSES; i++) {
        ctl->cls[i].u = ctl->calib.k * ctl->cls[i].u_model;
    }
    qc_check_resource(ctl);
    qc_note_background_alone(ctl);
    qc_check_background(ctl);
    qc_note_relief(ctl);

    for (i = 0; i < cfg->nvs; i++) {
        if (cfg->vs[i].guaranteed && !cfg->vs[i].fixed) {
            u_guaranteed += qc_guaranteed_targets(ctl, i);
        }
    }
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
                qc_be_apply(ctl, vs, cl, m_b);
            }
        }
    }
    qc_expect_upper(ctl);
    /* Load that is not the server's is not shed (as by the valve). */
    ctl->surge_rate = ctl->warnings & QC_WARN_BACKGROUND ? 0.0
                      : qc_surge_rate(ctl->surge_r, ctl->u_measured,
                                      cfg->period);
}

/*
 * Within a period: a jump of the load decided above the lowest trees
 * (a cold start, a step, a restart on a model that is far off) that
 * keeps the resource saturated for QC_CTL_VALVE_TICKS ticks sends best
 * effort to the lowest tree at once.  The period's loop would act only
 * at its end, and on a link every second at 3x queues two seconds of
 * work that clients then wait for.  The loop restarts from the model
 * in the first period that reads unsaturated, as after its own valve.
 * Held load at the bound does not jump, so its busy seconds do not
 * fire this.  A background the fit knows to saturate the resource is
 * not shed here either.  The request path's surge guard (qc_surge.h)
 * fires it too, surged: it has seen arrivals past the rate that
 * saturates the resource, and sends them down itself until then.
 */
int qc_ctl_valve(qc_ctl_t *ctl, double dt, double u_tick, int surged)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double upper = qc_ctl_upper_arrivals(ctl), last = ctl->tick_upper;
    double lowest;
    unsigned i, fewest;
    int k, jumped = 0;

    ctl->tick_upper = upper;
    if (!(u_tick >= QC_PI_SATURATED) || !(dt > 0.0)) {
        ctl->tick_saturated = 0;
    }
    else {
        if (ctl->tick_saturated++ == 0) {
            ctl->tick_upper0 = last;
            ctl->tick_seconds = 0.0;
        }
        ctl->tick_seconds += dt;
        jumped = ctl->tick_saturated >= QC_CTL_VALVE_TICKS
                 && (upper - ctl->tick_upper0) / ctl->tick_seconds
                    > QC_CTL_VALVE_JUMP * ctl->upper_rate
                      + QC_CTL_VALVE_LEAST;
    }
    fewest = qc_fewest_levels(ctl, 1);
    lowest = 1.0 / (fewest ? fewest : qc_min_levels_any(ctl));
    if (!(jumped || surged) || ctl->valved
        || (ctl->warnings & QC_WARN_BACKGROUND)
        || qc_pi_output(&ctl->be) <= lowest) {
        return 0;
    }
    qc_be_to_lowest(ctl, lowest);
    ctl->valved = 1;
    ctl->valves++;
    for (i = 0; i < cfg->nvs; i++) {
        const qc_ctl_vs_t *vs = &cfg->vs[i];

        for (k = 0; k < QC_NCLASSES && !vs->fixed; k++) {
            qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            if (!vs->guaranteed) {
                qc_be_apply(ctl, vs, cl, lowest);
            }
            else if (cl->m_applied > qc_pi_output(&cl->pi)) {
                /* excess sharing gives back what best effort lent */
                cl->m_applied = qc_share_level(qc_pi_output(&cl->pi),
                                               lowest, vs->levels);
            }
        }
    }
    return 1;
}
