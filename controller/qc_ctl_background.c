/* Licensed under the Apache License, Version 2.0. */

/*
 * The background estimator: load the server does not cause (doc/
 * control.md, "The reading floor and the background d", "The
 * background's test", "A background that saturates the resource
 * alone").  The fit's intercept d is its estimate; this file is the one
 * place that bounds it, from the reading floor, a test period's reading
 * and the end of a background that saturated the resource alone.  Best
 * effort starts the tests (qc_ctl_besteffort.c).  No I/O.
 */

#include <math.h>

#include "qc_ctl_helpers.h"
#include "qc_decide.h"
#include "qc_math.h"

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

/*
 * The end of a background that saturated the resource alone: the fit
 * and the calibration were taught by its censored readings (and k by
 * its first period, as it began among requests), and no reading with
 * traffic tells what is left of it from the requests' load.  Both go
 * back to what stands without it: the fit of before, whole (its d
 * alone would leave the costs where the background's d pushed them,
 * each reading then explained by the calibration instead), and the
 * fit's own costs; what is left is for the background's test to find.
 */
void qc_background_gone(qc_ctl_t *ctl)
{
    ctl->bg.full = 0;
    ctl->bg.below = 0;
    ctl->bg.seen = 0.0;
    ctl->bg.wait = 0.0;
    ctl->rls = ctl->bg.fit0;
    ctl->model.d = qc_ctl_fit_d(ctl);
    qc_calib_init(&ctl->calib);
}

double qc_bg_before_fit(qc_ctl_t *ctl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double u = ctl->u_measured, floor;

    /* A fit can be taught a background the resource never showed (in
     * CI, periods with no arrivals read 0.99 while earlier replies
     * drained): the calibration would take it out of every reading and
     * the loops would see no load.  Projected before the update, so that
     * its residual is not the wrong d's, and after (qc_bg_after_fit). */
    floor = qc_reading_floor(ctl);
    if (floor >= 0.0) {
        floor += 0.5 * cfg->bound;
        qc_rls_limit_d(&ctl->rls, floor);
    }
    /* A period best effort spent at its lowest tree to test the
     * background (qc_be_test_start) read the background and
     * what was left of the requests: no background is more. */
    if (ctl->bg.test && u >= 0.0) {
        ctl->bg.restore = qc_rls_d(&ctl->rls) - QC_CTL_READING_NOISE <= u
                          ? ctl->bg.m : 0.0;
        ctl->bg.seen = u;
        qc_rls_limit_d(&ctl->rls, u);
        ctl->bg.test = 0;
        /* Everything at its lowest tree and well short of saturated
         * (past a sensor's rounding): the saturation was the requests'. */
        if (ctl->bg.full
            && u < 0.5 * (cfg->bound + QC_U_SATURATED)) {
            qc_background_gone(ctl);
            ctl->bg.restore = 0.0;
        }
    }
    /* What the fit was before a background saturated the resource
     * alone (qc_bg_alone). */
    if (!ctl->bg.alone && !ctl->bg.full) {
        ctl->bg.fit0 = ctl->rls;
    }
    return floor;
}

void qc_bg_after_fit(qc_ctl_t *ctl, double floor)
{
    if (floor >= 0.0) {
        qc_rls_limit_d(&ctl->rls, floor);
    }
}

/*
 * A background that saturates the resource while nothing of the
 * server's is under way (no arrivals, no replies, nothing left to
 * drain, no connection waiting to be accepted, and on a link no more of
 * its replies queued than the queue's noise: a closed loop whose replies
 * all outlast a period sends no request and finishes none, yet fills
 * the link itself, and workers all held by requests longer than a
 * period leave connections at the door) for
 * QC_CTL_PERSIST in a row: while the reading stays
 * saturated, no level lowers it, and the loops hold every class at its
 * top (invariant (v); the fit cannot tell how much of a saturated
 * reading is whose, and its calibration may be what the background
 * taught it as it began).  The background's test looks again every
 * QC_CTL_TEST_SECONDS, every class at its lowest tree, so that a
 * saturation the requests take over from it is met (qc_ctl_update_model
 * ends it then).  Otherwise QC_CTL_PERSIST unsaturated readings in
 * a row end it (one may be the sensor's rounding: at T = 0.25 s a tick
 * is 4% of the CPU).
 */
static void qc_bg_alone(qc_ctl_t *ctl)
{
    double served = 0.0;
    unsigned i;

    if (!ctl->reading.known) {
        return;
    }
    /* the sensor's cap: clients turned away (qc_ctl_censor) with
     * nothing served are a stalled server, not a background */
    if (!qc_u_capped(ctl->u_measured)) {
        ctl->bg.alone = 0;
        if (ctl->bg.full && ++ctl->bg.below >= QC_CTL_PERSIST) {
            qc_background_gone(ctl);
        }
        return;
    }
    ctl->bg.below = 0;
    for (i = 0; i < ctl->cfg->nvs * QC_NCLASSES; i++) {
        served += ctl->cls[i].r_served;
    }
    if (qc_arrivals(ctl) > 0.0 || served > 0.0 || ctl->sat.draining
        || ctl->queued > 0
        || ctl->sent_backlog > QC_CTL_LINK_FELL * ctl->cfg->period) {
        ctl->bg.alone = 0;
    }
    else if (++ctl->bg.alone >= QC_CTL_PERSIST) {
        ctl->bg.full = 1;
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
static void qc_bg_warn(qc_ctl_t *ctl)
{
    if (ctl->model.d >= ctl->cfg->bound || ctl->bg.full) {
        ctl->warnings |= QC_WARN_BACKGROUND;
    }
    else if (ctl->model.d < 0.8 * ctl->cfg->bound) {
        ctl->warnings &= ~QC_WARN_BACKGROUND;
    }
}

void qc_bg_note_alone(qc_ctl_t *ctl)
{
    qc_bg_alone(ctl);
    qc_bg_warn(ctl);
}
