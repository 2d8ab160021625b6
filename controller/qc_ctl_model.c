/* Licensed under the Apache License, Version 2.0. */

/*
 * The fit (paper §4.3): what each period's reading teaches the model,
 * and which readings may teach it at all.  No I/O.
 */

#include <math.h>
#include <string.h>

#include "qc_ctl_helpers.h"
#include "qc_ctl_model.h"
#include "qc_decide.h"
#include "qc_math.h"

static double qc_decided_load(qc_ctl_t *ctl, const qc_model_t *mod);

/* Did the link's measured queue move by more than its noise in the
 * period, falling (sign -1) or growing (sign 1)? */
static int qc_link_queue_moved(const qc_ctl_t *ctl, double sign)
{
    return ctl->sent_backlog >= 0.0 && ctl->prev_sent_backlog >= 0.0
           && sign * (ctl->sent_backlog - ctl->prev_sent_backlog)
              > QC_CTL_LINK_FELL * ctl->cfg->period;
}

/*
 * Counting statistics.  At a constant load a period's count of c
 * completions varies by about sqrt(c) from one period to the next,
 * while the work the sensor reads varies less: the requests in flight
 * at either end of a period share their work between periods.  Fitted
 * as they are, those counts say the load does not follow the requests
 * (errors in variables: the least-squares slope is shrunk by
 * var(load) / (var(load) + var(count)), to 0 at a constant load), and
 * the fit slides each request's cost towards 0 and the background d
 * towards the whole reading (d 0.5 of 0.6 in 15 s of a steady PHP
 * site).  So the regressors the fit sees move only when some count
 * moved by more than its jitter from where they are held: the readings
 * in between still teach the level of the load, and only a change
 * larger than counting noise teaches what a request costs.
 */

/* A rate of c = rate dt counts varies by sqrt(c) / dt; the difference
 * of two such by sqrt(2) times that. */
static int qc_fit_jitter(double v, double held, double dt)
{
    return fabs(v - held) <= QC_COUNT_JITTER_SD
                             * sqrt(2.0 * fmax(v, held) / dt);
}

/* The sample whole at the held one when every count in it is jitter
 * (its bytes are those requests'), its reading carried there by the
 * model's own slope: it teaches the level and nothing of the slope.
 * Returns the reading to fit. */
static double qc_fit_denoise(qc_ctl_t *ctl, qc_rls_sample_t *x, double u,
                             double dt)
{
    const qc_rls_sample_t *held = &ctl->fit_held;
    int jitter = dt > 0.0 && ctl->fit_held_set
                 && qc_fit_jitter(x->r_rej, held->r_rej, dt);
    unsigned j;

    for (j = 0; j < QC_RLS_TREES && jitter; j++) {
        jitter = qc_fit_jitter(x->r[j], held->r[j], dt);
    }
    if (jitter) {
        u -= qc_rls_predict(&ctl->rls, x) - qc_rls_predict(&ctl->rls, held);
        *x = *held;
    }
    else {
        ctl->fit_held = *x;
        ctl->fit_held_set = 1;
    }
    return u;
}

/*
 * Does the period's reading teach the fit?
 *
 * A saturated reading with no reply completed teaches nothing: its
 * work is of requests no count stands for yet, so the fit could only
 * charge it to the background (a step on a PHP site whose pages
 * outlast a period put d at 0.76 and the top tree's cost at 0).
 * A saturated reading bounds the load of the period's own requests
 * from below only if nothing was queued when it began: after a
 * saturated period it is the backlog's as much as theirs (periods
 * with no arrivals at all read 0.99 and taught the background d the
 * whole link).  Past the longest drain, a saturation that persists
 * is the requests' own (the lowest tree's cost must be learnt then,
 * or a load it cannot carry is never refused), if the link's queue
 * did not fall by QC_CTL_LINK_FELL of the period:
 * a link that sent that much more than the period put on it was
 * not full of the period's own replies (a drain while most are
 * refused taught d the whole link), and none was refused: refusing
 * holds the queue at a period's wait, so the resource stays full
 * whatever the requests cost while their counts jitter with the share
 * (a 2x open overload on a link moved d from 0 to 0.84 at 10 s, and
 * refusing let up).  The fit censors the ones it keeps.  Before
 * then, a period in which the link's queue fell or grew by as much
 * teaches nothing either: falling, it sent replies of
 * periods before; growing, it shared itself among more replies than it
 * finished, so the reading holds bytes of replies no count has yet (a
 * step of 1,728 closed-loop clients read 0.76 with few replies done,
 * then 1.0 as the queue fell, and the fit put the top tree's cost at 0
 * and d at 0.84).
 * Otherwise, right after a jump of the load and in the period
 * after a saturated one with work left to drain, the sensor still sees
 * old load: such a period would teach the model the lag, not the costs.
 * So does the period the valve fired in, and the next: the fit would
 * learn the top tree's work queued before it fired as the lowest's
 * (a PHP site's snapshots were fitted at 2.3 times their cost, and
 * 503s followed).
 */
static int qc_reading_teaches(const qc_ctl_t *ctl)
{
    const qc_reading_t *rd = &ctl->reading;
    int fell = qc_link_queue_moved(ctl, -1.0);
    int moved = fell || qc_link_queue_moved(ctl, 1.0);

    return rd->known && !rd->lagging
           && (rd->saturated
               ? rd->served > 0.0
                 && ((rd->fresh && !moved)
                     || (ctl->sat.saturated_for > QC_CTL_DRAIN_SECONDS
                         && !fell && rd->r_rej <= 0.0))
               : (rd->fresh || ctl->sat.backlog <= QC_CTL_BACKLOG_IDLE)
                 && !rd->jumped && !moved);
}

void qc_ctl_update_model(qc_ctl_t *ctl, double dt)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    qc_model_t before = ctl->model;
    qc_rls_sample_t x;
    const qc_reading_t *rd = &ctl->reading;
    double floor, u_old, u_new;
    unsigned i, j;
    int k;

    floor = qc_bg_before_fit(ctl);
    memset(&x, 0, sizeof(x));
    for (i = 0; i < cfg->nvs; i++) {
        unsigned levels = cfg->vs[i].levels;

        for (k = 0; k < QC_NCLASSES; k++) {
            const qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            for (j = 1; j <= levels; j++) {
                x.r[levels - j] += cl->r_served_tree[j];
            }
        }
    }
    x.w = rd->w;
    x.r_rej = rd->r_rej;
    if (qc_reading_teaches(ctl)) {
        qc_rls_update(&ctl->rls, &x,
                      qc_fit_denoise(ctl, &x, ctl->u_measured, dt));
    }
    qc_bg_after_fit(ctl, floor);
    qc_ctl_model_from_rls(ctl);
    /* Last period's decided load in the new model's terms: a change of
     * the fit is no change of the load (qc_ctl_classify_load). */
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
    ctl->model.d = qc_ctl_fit_d(ctl);
}
