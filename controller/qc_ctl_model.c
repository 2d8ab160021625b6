/* Licensed under the Apache License, Version 2.0. */

/*
 * The fit (paper §4.3): what each period's reading teaches the model,
 * and which readings may teach it at all.  No I/O.
 */

#include <math.h>
#include <string.h>

#include "qc_ctl_policy.h"
#include "qc_math.h"

/* Background load is there at every instant, so it is at most the
 * lowest reading of the last FLOOR to 2 FLOOR seconds; one that
 * fluctuates is charged on average, up to half the bound above that
 * (what the targets charge at most: qc_target_background). */
#define QC_CTL_FLOOR_SECONDS 15.0

/* Did a quantity change by half or more since the last period, at or
 * above `least` (below it, noise)? */
int qc_jumped(double now, double prev, double least)
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
    return ctl->tick.valved || ctl->tick.valved_last;
}

/*
 * The end of a background that saturated the resource alone: the fit's
 * d and the calibration were taught by its censored readings (and k by
 * its first period, as it began among requests), and no reading with
 * traffic tells what is left of it from the requests' load.  Both go
 * back to what stands without it, the d of before and the fit's own
 * costs; what is left is for the background's test to find.
 */
void qc_background_gone(qc_ctl_t *ctl)
{
    ctl->bg.full = 0;
    ctl->bg.below = 0;
    ctl->bg.seen = 0.0;
    ctl->bg.wait = 0.0;
    qc_rls_limit_d(&ctl->rls, ctl->bg.d0);
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
     * background (qc_be_test_start) read the background and
     * what was left of the requests: no background is more. */
    if (ctl->bg.test && u >= 0.0) {
        ctl->bg.restore = qc_rls_d(&ctl->rls) * QC_CTL_TEST_NOISE <= u
                          ? ctl->bg.m : 0.0;
        ctl->bg.seen = u;
        qc_rls_limit_d(&ctl->rls, u);
        ctl->bg.test = 0;
        /* Everything at its lowest tree and well short of saturated
         * (past a sensor's rounding): the saturation was the requests'. */
        if (ctl->bg.full
            && u < 0.5 * (cfg->bound + QC_PI_SATURATED)) {
            qc_background_gone(ctl);
            ctl->bg.restore = 0.0;
        }
    }
    /* What the fit's d was before a background saturated the resource
     * alone (qc_note_background_alone). */
    if (!ctl->bg.alone && !ctl->bg.full) {
        ctl->bg.d0 = qc_rls_d(&ctl->rls);
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
                     ? fresh || (ctl->sat.saturated_for > QC_CTL_DRAIN_SECONDS
                                 && served > 0.0)
                     : ((fresh || ctl->sat.backlog <= QC_CTL_BACKLOG_IDLE)
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
double qc_class_model_util(const qc_model_t *mod,
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

/* The model the loops use, from the fit. */
void qc_ctl_model_from_rls(qc_ctl_t *ctl)
{
    unsigned j;

    for (j = 0; j < QC_MAX_TREES; j++) {
        ctl->model.a_tree[j] = qc_rls_a_tree(&ctl->rls, j);
    }
    ctl->model.a = ctl->model.a_tree[0];
    ctl->model.b = qc_rls_b(&ctl->rls);
    ctl->model.c = qc_rls_c(&ctl->rls);
    /* The fit's intercept may go below 0 to absorb what the linear
     * costs miss; as background load it is 0 then (a negative one
     * raised the targets over the bound: 0.98 for a bound of 0.6). */
    ctl->model.d = fmax(qc_rls_d(&ctl->rls), 0.0);
}
