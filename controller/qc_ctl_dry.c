/* Licensed under the Apache License, Version 2.0. */

/*
 * QosCtl LogOnly's virtual plant: the last step of sensing.  Under
 * LogOnly every request is served from the top tree, so what the sensor
 * reads is the load of levels no decision lowers; decided on it, the
 * loops see a resource they cannot relieve and the would-be level runs
 * down to the lowest tree and below.  So the decisions (qc_ctl_policy)
 * read instead what the server would have read at the would-be levels:
 *
 *  - the arrivals by the tree they would have got (would_arrived), 503s
 *    the ones that would have been refused;
 *  - a reading of the measured load less what those requests would have
 *    saved: with the resource unsaturated, the measured load beyond the
 *    background scaled by the model's load of the would-be mix over that
 *    of what was served (the period's own calibration of the top tree,
 *    which is real data); saturated, the reading bounds the load from
 *    below only, and what the server did not keep up with is added as
 *    it shows: the link's backlog growing, arrivals over completions
 *    (the accept queues' growth among the arrivals) and, while the
 *    kernel drops connection attempts at full accept queues, the
 *    clients it turned away, taken to come at the rate they came while
 *    the queues filled (qc_ctl_capacity.c); and on a link the bytes
 *    completed, which count the replies the kernel throws away when
 *    their clients give up, work On's server would have done; and a
 *    completion costs at most what it cost in the last period loaded
 *    but not saturated, as it would at On's level;
 *  - a queue of its own: work over the capacity is carried to the next
 *    period, read as saturation until it is done, and stands for the
 *    link's and the accept queues' (which hold the top tree's backlog).
 *
 * The fit has already learnt from the period as it was served (its
 * sample is the replies by the tree that served them and the sensor),
 * so it learns the top tree's cost and the background, and nothing of
 * the trees below, which served nothing.  Their costs are what the fit
 * has measured (a state file from a run under On), else a tenth of
 * the tree above's: the prior (QosCtlModel's one cost for every tree)
 * would say that degrading saves nothing, which is the pessimism this
 * plant is here to remove, and nothing at all would leave the level
 * high by about the lower tree's share of the top's cost (0.11 over
 * On's at 3x on the unit tests' link plant, whose reduced photo costs
 * 13% of the full one, as on bench/testbed).  Where the true share is
 * t, the would-be level is above On's by about 1.2 (t - 0.1) (1 - 1/x)
 * at x times the load the top tree carries at the bound.
 *
 * After the decisions the measured values are put back, so the
 * capacity estimate, the log, the status page and the next period's
 * sensing see the server as it is.
 */

#include <math.h>

#include "qc_ctl_capacity.h"
#include "qc_ctl_dry.h"
#include "qc_ctl_helpers.h"
#include "qc_ctl_model.h"
#include "qc_decide.h"
#include "qc_math.h"

/* An unmeasured tree costs this share of the one above it. */
#define QC_DRY_LOWER 0.1

/* The most arrivals over completions, and unseen over seen, a
 * saturated period is read at (qc_ctl_sense.c's accept-queue scale). */
#define QC_DRY_BEHIND_MAX 4.0

/* A reading from which a period is loaded enough for its cost of a
 * completion to be held (qc_dry_demand): half the saturated mark. */
#define QC_DRY_LOADED (0.5 * QC_U_SATURATED)

/* Completions a period needs before its arrivals over them are read. */
#define QC_DRY_MIN_DONE 20.0

/* The mean cost of a request from the top tree, over every class that
 * had arrivals (the loops' model has one a_j for every host). */
static double qc_dry_top_cost(qc_ctl_t *ctl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double r = 0.0, bytes = 0.0;
    unsigned i;
    int k;

    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            const qc_ctl_class_t *cl = qc_cls(ctl, i, k);
            double x = cl->xbar[cfg->vs[i].levels - 1];

            r += cl->r;
            bytes += cl->r * (x > 0.0 ? x : cl->r > 0.0 ? cl->w / cl->r
                                                          : 0.0);
        }
    }
    return ctl->model.a_tree[0] + ctl->model.b * (r > 0.0 ? bytes / r
                                                          : 0.0);
}

/* The cost of tree j below the top as the loops see it: the fit's
 * where it has measured it (at the largest reply size known of it),
 * else QC_DRY_LOWER of the tree above's, bytes included, for a reply
 * size the fit cannot know either. */
static void qc_dry_model(qc_ctl_t *ctl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double above = qc_dry_top_cost(ctl);
    unsigned i, j;
    int k;

    for (j = 1; j < QC_MAX_TREES; j++) {
        double bytes = 0.0;

        for (i = 0; i < cfg->nvs; i++) {
            for (k = 0; k < QC_NCLASSES && j < cfg->vs[i].levels; k++) {
                bytes = fmax(bytes,
                             qc_cls(ctl, i, k)->xbar[cfg->vs[i].levels
                                                     - j - 1]);
            }
        }
        if (qc_rls_tree_uncertainty(&ctl->rls, j, bytes) > QC_MEASURED) {
            ctl->model.a_tree[j] = QC_DRY_LOWER * above;
        }
        above = ctl->model.a_tree[j] + ctl->model.b * bytes;
    }
}

/* Move a class's arrivals to the trees they would have got, 503s the
 * refusals; returns the model load of what was served (*served) and of
 * what would have been (the return). */
static double qc_dry_class(const qc_ctl_t *ctl, qc_ctl_class_t *cl,
                           unsigned levels, double *served)
{
    double down = 0.0;
    unsigned k;

    *served += qc_class_model_util(&ctl->model, cl, levels);
    for (k = 0; k < levels && k < QC_MAX_TREES; k++) {
        cl->r_tree[k] += cl->r_would[k];
        down += cl->r_would[k];
    }
    cl->r_tree[levels] = fmax(cl->r_tree[levels] - down, 0.0);
    cl->r_rej = cl->r_tree[0];
    return qc_class_model_util(&ctl->model, cl, levels);
}

/* The period's cost of a completion, as a scale of the model's load of
 * its arrivals at the top tree (served): the work done less the
 * background, or more: the link's backlog grew by the rest, and what
 * completed is all handed to the link, sent or not (its bytes over
 * what the link sent; a reply the kernel drops when its client gives
 * up is work On's server would have done).  Times the arrivals (the
 * accept queues' growth among them) over the completions, once enough
 * completed to say.  *unseen: the arrivals the server never saw over
 * those it counted, at least 1: the clients the kernel turned away
 * while its accept queues were full come at the rate they came while
 * the queues filled. */
static double qc_dry_cost(qc_ctl_t *ctl, double u, double d, double served,
                          double dt, double *unseen)
{
    double arrived, done, bytes, work = u - d, offered, k;

    qc_ctl_totals(ctl, &arrived, &done, &bytes);
    if (ctl->sent_backlog >= 0.0 && ctl->prev_sent_backlog >= 0.0) {
        work += fmax(ctl->sent_backlog - ctl->prev_sent_backlog, 0.0) / dt;
    }
    if (ctl->link_bps > 0.0) {
        work = fmax(work, u * bytes / ctl->link_bps - d);
    }
    k = work / served;
    if (done * dt >= QC_DRY_MIN_DONE) {
        k *= qc_clampd(arrived / done, 1.0, QC_DRY_BEHIND_MAX);
    }
    offered = qc_ctl_offered_conns(ctl) * ctl->cp.rpc;
    *unseen = arrived > 0.0 && offered > arrived
              ? fmin(offered / arrived, QC_DRY_BEHIND_MAX) : 1.0;
    return k;
}

/* The load the server would have had, before any queue: see above.
 * Saturated or censored (qc_ctl_censor), a completion costs at most
 * what it cost in the last period that was loaded and not: a resource
 * the full tree saturates spends more on each request (contention, and
 * turning clients away) than one held at the bound, where On's server
 * runs. */
static double qc_dry_demand(qc_ctl_t *ctl, double u, double served,
                            double would, double dt)
{
    double d = fmin(ctl->model.d, u), k, unseen;

    if (served < QC_CALIB_MIN_LOAD) {
        return fmax(u - ctl->calib.k * (served - would), 0.0);
    }
    k = qc_dry_cost(ctl, u, d, served, dt, &unseen);
    if (!qc_u_capped(u) && !ctl->reading.turned_away) {
        if (u >= QC_DRY_LOADED) {
            ctl->dry.k_loaded = k;
        }
        return d + (u - d) / served * would;
    }
    if (ctl->dry.k_loaded > 0.0) {
        k = fmin(k, ctl->dry.k_loaded);
    }
    return d + k * unseen * would;
}

void qc_ctl_dry_plant(qc_ctl_t *ctl, double dt)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    qc_ctl_dry_t *dry = &ctl->dry;
    qc_reading_t *rd = &ctl->reading;
    double u = ctl->u_measured, served = 0.0, would = 0.0, demand, v;
    double before = dry->backlog;
    unsigned i;
    int k;

    dry->u = u;
    dry->queued = ctl->queued;
    dry->sent_backlog = ctl->sent_backlog;
    dry->prev_sent_backlog = ctl->prev_sent_backlog;
    dry->ratio = 1.0;
    qc_dry_model(ctl);
    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            would += qc_dry_class(ctl, qc_cls(ctl, i, k), cfg->vs[i].levels,
                                  &served);
        }
    }
    if (!rd->known || !(dt > 0.0)) {
        return;
    }
    demand = qc_dry_demand(ctl, u, served, would, dt);
    if (u >= QC_U_UNCAPPED) {
        /* a link declared below what it carries: no cap to model */
        v = demand;
        dry->backlog = 0.0;
    }
    else {
        v = fmin(demand + before / dt, 1.0);
        dry->backlog = fmax(before + (demand - 1.0) * dt, 0.0);
    }
    ctl->u_measured = v;
    dry->ratio = u > 0.0 ? v / u : 1.0;
    rd->saturated = qc_u_capped(v) || rd->turned_away;
    rd->fresh = !qc_u_capped(dry->u_prev);
    if (ctl->queued >= 0) {
        ctl->queued = dry->backlog > 0.0 ? ctl->queued : 0;
    }
    if (ctl->sent_backlog >= 0.0) {
        ctl->sent_backlog = dry->backlog;
    }
    if (ctl->prev_sent_backlog >= 0.0) {
        ctl->prev_sent_backlog = before;
    }
}

void qc_ctl_dry_restore(qc_ctl_t *ctl)
{
    qc_ctl_dry_t *dry = &ctl->dry;
    qc_reading_t *rd = &ctl->reading;

    dry->u_prev = rd->known ? ctl->u_measured : -1.0;
    ctl->u_measured = dry->u;
    rd->saturated = qc_u_capped(dry->u);
    rd->fresh = !qc_u_capped(ctl->prev_u);
    ctl->queued = dry->queued;
    ctl->sent_backlog = dry->sent_backlog;
    ctl->prev_sent_backlog = dry->prev_sent_backlog;
    qc_ctl_model_from_rls(ctl);
}

double qc_ctl_u_decided(const qc_ctl_t *ctl)
{
    return ctl->cfg->log_only ? ctl->dry.u_prev : ctl->u_measured;
}
