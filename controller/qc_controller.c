/* Licensed under the Apache License, Version 2.0. */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "apr_atomic.h"
#include "apr_time.h"

#include "qc_controller.h"

/* A tree's mean reply size is a mean over replies, each period's
 * weighted by this factor per period of age: one small reply (a status
 * page) must not stand for the hundreds that follow it. */
#define QC_XBAR_KEEP 0.7


/* Periods after a large-signal jump before the trim learns again, and
 * the backlog (periods of link time) below which there is none. */
#define QC_CTL_SETTLE 8
#define QC_CTL_BACKLOG_IDLE 0.05

/* Saturated periods in a row with no backlog after which the saturation
 * is the model's bias, not a queue still draining (that takes one or two
 * periods past where the backlog estimate reaches zero, after a step). */
#define QC_CTL_SATURATED_BIAS 3

/* The best-effort loop's own error, relative, within which it counts as
 * settled for the trim. */
#define QC_CTL_TRIM_BAND 0.1

/* Largest change of a level per period (see qc_pi_set_max_step). */
#define QC_CTL_MAX_STEP 0.5

/* Most the accept queues' change may scale the counted arrivals by. */
#define QC_CTL_QUEUE_SCALE 4.0

static unsigned qc_max_levels(const qc_ctl_config_t *cfg)
{
    unsigned i, m = 1;

    for (i = 0; i < cfg->nvs; i++) {
        if (cfg->vs[i].levels > m) {
            m = cfg->vs[i].levels;
        }
    }
    return m;
}

/* The fewest trees of a host the best-effort level drives: m_b of
 * 1 / this serves every such host from its lowest tree or above. */
static unsigned qc_min_levels(const qc_ctl_config_t *cfg)
{
    unsigned i, m = 0;

    for (i = 0; i < cfg->nvs; i++) {
        if (!cfg->vs[i].fixed && (m == 0 || cfg->vs[i].levels < m)) {
            m = cfg->vs[i].levels;
        }
    }
    return m ? m : 1;
}

static qc_ctl_class_t *qc_cls(qc_ctl_t *ctl, unsigned i, int k)
{
    return &ctl->cls[i * QC_NCLASSES + k];
}

static void qc_read_counts(qc_class_shm_t *cs, unsigned levels,
                           qc_ctl_counts_t *c)
{
    unsigned k;

    for (k = 0; k <= levels; k++) {
        c->larr[k] = apr_atomic_read64(&cs->level_arrived[k]);
    }
    c->responses = apr_atomic_read64(&cs->responses);
    c->bytes = apr_atomic_read64(&cs->bytes);
    for (k = 1; k <= levels; k++) {
        c->lresp[k] = apr_atomic_read64(&cs->level_responses[k]);
        c->lbytes[k] = apr_atomic_read64(&cs->level_bytes[k]);
    }
}

/* Counters only grow; a smaller value means a new segment: no rate. */
static double qc_rate(apr_uint64_t now, apr_uint64_t prev, double dt)
{
    return now >= prev && dt > 0.0 ? (double)(now - prev) / dt : 0.0;
}

/*
 * The byte rate the requests of this period were committed to: arrivals
 * by tree times each tree's mean reply.  The loops act on it rather than
 * on the bytes logged as replies finish: those lag a change of level by
 * as long as the link's queue takes to drain (seconds, once it is
 * saturated).  A tree whose reply size is not known yet counts as empty,
 * as in the level utilizations the loops invert; until some size is
 * known, the logged bytes stand in.
 */
static double qc_sent_bytes(const qc_ctl_class_t *cl, unsigned levels)
{
    double w = 0.0;
    unsigned k;
    int known = 0;

    for (k = 1; k <= levels; k++) {
        if (cl->xbar[k - 1] > 0.0) {
            w += cl->r_tree[k] * cl->xbar[k - 1];
            known = 1;
        }
    }
    return known ? w : cl->w;
}

static void qc_sense_class(qc_ctl_class_t *cl, qc_class_shm_t *cs,
                           unsigned levels, double dt)
{
    qc_ctl_counts_t now;
    unsigned k;

    qc_read_counts(cs, levels, &now);
    cl->r = 0.0;
    for (k = 0; k <= levels; k++) {
        cl->r_tree[k] = qc_rate(now.larr[k], cl->prev.larr[k], dt);
        cl->r += cl->r_tree[k];
    }
    cl->r_rej = cl->r_tree[0];
    cl->r_served = qc_rate(now.responses, cl->prev.responses, dt);
    cl->w = qc_rate(now.bytes, cl->prev.bytes, dt);
    for (k = 1; k <= levels; k++) {
        if (now.lresp[k] >= cl->prev.lresp[k]
            && now.lbytes[k] >= cl->prev.lbytes[k]) {
            double *n = &cl->xn[k - 1], *b = &cl->xb[k - 1];

            *n = QC_XBAR_KEEP * *n + (double)(now.lresp[k]
                                              - cl->prev.lresp[k]);
            *b = QC_XBAR_KEEP * *b + (double)(now.lbytes[k]
                                              - cl->prev.lbytes[k]);
            if (*n >= 1.0) {
                cl->xbar[k - 1] = *b / *n;
            }
        }
    }
    cl->prev = now;
}

/*
 * dU/dm of one class at level m: the slope of the utilization each tree
 * would cause (level 0 costs c per rejection).  A tree whose reply size
 * is not known yet counts as empty, which overstates the slope above
 * it: a lower loop gain, never an unstable one.
 */
static double qc_class_gain(const qc_model_t *mod, const qc_ctl_class_t *cl,
                            unsigned levels, double m)
{
    double u[QC_MAX_TREES + 1];

    qc_pi_level_utils(mod->a, mod->b, mod->c, cl->r, cl->xbar, levels, u);
    return qc_pi_process_gain(u, levels, m);
}

static double qc_level_in_shm(const qc_class_shm_t *cs)
{
    return qc_level_from_fx(apr_atomic_read32(
                                (volatile apr_uint32_t *)&cs->level_fx));
}

void qc_ctl_init(qc_ctl_t *ctl, qc_ctl_config_t *cfg, apr_pool_t *p)
{
    qc_shm_t *q = cfg->shm;
    unsigned i;
    int k;

    memset(ctl, 0, sizeof(*ctl));
    ctl->cfg = cfg;
    ctl->cls = apr_pcalloc(p, sizeof(qc_ctl_class_t) * cfg->nvs
                              * QC_NCLASSES + 1);
    /* A controller restarted after a crash resumes its predecessor's
     * estimates; a state file, when given, holds the full RLS state. */
    if (apr_atomic_read64(&q->periods)) {
        qc_rls_init(&ctl->rls, qc_bitsd(apr_atomic_read64(&q->a_bits)),
                    qc_bitsd(apr_atomic_read64(&q->b_bits)),
                    qc_bitsd(apr_atomic_read64(&q->c_bits)), 0.98);
    }
    else {
        qc_rls_init(&ctl->rls, cfg->a0, cfg->b0, cfg->c0, 0.98);
    }
    if (cfg->state_fd >= 0) {
        char line[QC_RLS_LINE_MAX];
        ssize_t n = pread(cfg->state_fd, line, sizeof(line) - 1, 0);

        if (n > 0) {
            qc_rls_t saved;

            line[n] = '\0';
            if (qc_rls_parse(&saved, line) == 0) {
                ctl->rls = saved;
            }
        }
    }
    for (i = 0; i < cfg->nvs; i++) {
        const qc_ctl_vs_t *vs = &cfg->vs[i];

        for (k = 0; k < QC_NCLASSES; k++) {
            qc_ctl_class_t *cl = qc_cls(ctl, i, k);
            qc_class_shm_t *cs = &vs->slot->cls[k];

            cl->m_applied = qc_level_in_shm(cs);
            qc_pi_init(&cl->pi, vs->levels, cl->m_applied);
            qc_pi_set_max_step(&cl->pi, QC_CTL_MAX_STEP);
            qc_read_counts(cs, vs->levels, &cl->prev);
        }
    }
    qc_pi_init(&ctl->be, 1.0, apr_atomic_read64(&q->periods)
               ? qc_bitsd(apr_atomic_read64(&q->m_best_effort_bits)) : 1.0);
    qc_pi_set_max_step(&ctl->be, QC_CTL_MAX_STEP / qc_max_levels(cfg));
    ctl->u_measured = -1.0;
    ctl->queued = -1;
    /* The levels in the segment are valid (a predecessor's, or the top):
     * say at once that a controller is back, not a period later. */
    apr_atomic_set64(&q->a_bits, qc_dbits(qc_rls_a(&ctl->rls)));
    apr_atomic_set64(&q->b_bits, qc_dbits(qc_rls_b(&ctl->rls)));
    apr_atomic_set64(&q->c_bits, qc_dbits(qc_rls_c(&ctl->rls)));
    apr_atomic_set64(&q->d_bits, qc_dbits(qc_rls_d(&ctl->rls)));
    apr_atomic_set32(&q->controller_pid, (apr_uint32_t)getpid());
    apr_atomic_set64(&q->heartbeat, (apr_uint64_t)apr_time_now());
}

/*
 * Arrivals the counters have not seen yet: the growth of httpd's accept
 * queues over the period (qc_backlog.h); their shrinking is the same
 * arrivals counted late, in a burst.  Every class waits in the same
 * queues in the order it came, so each is scaled alike, rejections too:
 * the waiting connections will be decided at the levels in force.  The
 * completions the model learns from stay as counted.
 */
static void qc_add_queued(qc_ctl_t *ctl, long queued, double dt)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double n = 0.0, s;
    long prev = ctl->queued;
    unsigned i, j;
    int k;

    ctl->queued = queued;
    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            n += qc_cls(ctl, i, k)->r * dt;
        }
    }
    if (queued < 0 || prev < 0 || n < 1.0) {
        return;
    }
    s = (n + (double)(queued - prev)) / n;
    if (s > QC_CTL_QUEUE_SCALE) {
        s = QC_CTL_QUEUE_SCALE;
    }
    else if (s < 1.0 / QC_CTL_QUEUE_SCALE) {
        s = 1.0 / QC_CTL_QUEUE_SCALE;
    }
    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            cl->r *= s;
            cl->r_rej *= s;
            for (j = 0; j <= cfg->vs[i].levels; j++) {
                cl->r_tree[j] *= s;
            }
        }
    }
}

/* Did a rate change by half or more since the last period? */
static int qc_jumped(double now, double prev)
{
    double hi = now > prev ? now : prev;

    return hi > 0.0 && (now > prev ? now - prev : prev - now) >= 0.5 * hi
           && hi >= 1.0;
}

static void qc_update_model(qc_ctl_t *ctl, double u_measured)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double served = 0.0, w = 0.0, rej = 0.0;
    unsigned i;
    int k;

    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            const qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            served += cl->r_served;
            w += cl->w;
            rej += cl->r_rej;
        }
    }
    /* Right after a jump, and in the period after a saturated one, the
     * sensor still sees old load draining from socket and link queues:
     * such a period would teach the model the lag, not the costs (seen:
     * a tenfold a, with d pinned at its floor to make up). */
    if (u_measured >= 0.0 && ctl->prev_u < QC_PI_SATURATED
        && !qc_jumped(w, ctl->prev_w)
        && !qc_jumped(served, ctl->prev_served)
        && !qc_jumped(rej, ctl->prev_rej)) {
        qc_rls_update(&ctl->rls, served, w, rej, u_measured);
    }
    ctl->prev_w = w;
    ctl->prev_served = served;
    ctl->prev_rej = rej;
    ctl->model.a = qc_rls_a(&ctl->rls);
    ctl->model.b = qc_rls_b(&ctl->rls);
    ctl->model.c = qc_rls_c(&ctl->rls);
    ctl->model.d = qc_rls_d(&ctl->rls);
}

/*
 * A large-signal jump of a loop to m_ff (qc_pi_jump), under the rules of
 * a saturated link, where the link sensor cannot tell how far over it
 * the load is.  Returns 1 if the loop jumped.
 *
 * With the accept queues read, every arrival is counted: the loop may
 * jump on a smaller error, and right after a jump (its measurement is
 * the load decided in the period, which follows a new level at once;
 * the model ratio, which lags with the link's queue, is not used).  But
 * not into rejection, below level `lowest` (unless the loop is there
 * already): arrivals can still come in bursts the queues do not show,
 * clients whose SYNs were lost retrying a second later (seen in the
 * demo: 1,240 requests a second against 760 offered, a jump to m 0.83
 * and 117 clients answered 503).  Degrading costs a burst nothing;
 * rejecting is left to the PI, a period at a time.
 *
 * Without that reading, arrivals counted late, in a burst, would be
 * taken for load (seen: 330 a second counted of 570 offered, then 900):
 * only the first saturated period allows a jump, and only to a loop
 * that passes first_ok (best effort; a guaranteed host within its
 * contract was degraded by a jump on a burst).
 */
static int qc_ctl_jump(qc_ctl_t *ctl, qc_pi_t *pi, double target, double u,
                       double m_ff, double lowest, int first_ok)
{
    double m = qc_pi_output(pi), lo = m < lowest ? m : lowest;
    int saturated = ctl->u_measured >= QC_PI_SATURATED;
    int counted = saturated && ctl->queued >= 0;

    if (saturated && !counted
        && !(first_ok && ctl->prev_u < QC_PI_SATURATED)) {
        return 0;
    }
    return qc_pi_jump(pi, target, u, counted && m_ff < lo ? lo : m_ff,
                      counted);
}

/*
 * What a guaranteed class's own loop holds it to: its load, or its
 * target when it is over it, for the loop cuts it there (at once, on a
 * large error).  Best effort plans with this, not with the load of the
 * moment: a host over its contract that had ridden on best effort's
 * level left it for its own loop, and best effort, planning with the
 * host's whole load, jumped to rejecting everyone (seen: 47 clients
 * answered 503 at a link of 0.81).
 */
static double qc_held(const qc_ctl_class_t *cl, double u)
{
    return u < cl->u_target ? u : cl->u_target;
}

/* Premium gets the guarantee less the cost of rejecting basic; basic
 * gets what premium leaves (paper §5.2).  Returns what their loops hold
 * them to (qc_held). */
static double qc_guaranteed_targets(qc_ctl_t *ctl, unsigned i)
{
    const qc_ctl_vs_t *vs = &ctl->cfg->vs[i];
    qc_ctl_class_t *prem = qc_cls(ctl, i, QC_CLASS_PREMIUM);
    qc_ctl_class_t *basic = qc_cls(ctl, i, QC_CLASS_BASIC);
    double ustar = qc_target_guarantee(&ctl->model, vs->rmax, vs->wmax);

    prem->u_target = qc_target_premium(&ctl->model, ustar, basic->r);
    basic->u_target = qc_target_basic(ustar, prem->u);
    return qc_held(prem, prem->u) + qc_held(basic, basic->u);
}

/* Model utilization of one class at level m. */
static double qc_class_util(const qc_model_t *mod, const qc_ctl_class_t *cl,
                            unsigned levels, double m)
{
    double u[QC_MAX_TREES + 1];

    qc_pi_level_utils(mod->a, mod->b, mod->c, cl->r, cl->xbar, levels, u);
    return qc_pi_util_at(u, levels, m);
}

/* Is a class of a host that is not pinned served at the best-effort
 * level m (= m_b M)?  Best-effort hosts always are; a guaranteed class
 * when m is above its own loop's output (excess sharing, §5.3). */
static int qc_be_drives(const qc_ctl_vs_t *vs, const qc_ctl_class_t *cl,
                        double m)
{
    return !vs->guaranteed || qc_pi_output(&cl->pi) < m;
}

/* Model utilization of all traffic the best-effort level can move, at
 * normalized level m_b: each class at the level it is served at. */
static double qc_be_util(double m_b, void *arg)
{
    qc_ctl_t *ctl = arg;
    const qc_ctl_config_t *cfg = ctl->cfg;
    double u = 0.0;
    unsigned i;
    int k;

    for (i = 0; i < cfg->nvs; i++) {
        const qc_ctl_vs_t *vs = &cfg->vs[i];

        if (vs->fixed) {
            continue;
        }
        for (k = 0; k < QC_NCLASSES; k++) {
            const qc_ctl_class_t *cl = qc_cls(ctl, i, k);
            double m = m_b * vs->levels;

            u += qc_be_drives(vs, cl, m)
                 ? qc_class_util(&ctl->model, cl, vs->levels, m)
                 : qc_held(cl, qc_class_util(&ctl->model, cl, vs->levels,
                                             qc_pi_output(&cl->pi)));
        }
    }
    return u;
}

static double qc_best_effort_level(qc_ctl_t *ctl, double target)
{
    return qc_pi_invert(qc_be_util, ctl, 0.0, 1.0, target);
}

typedef struct {
    const qc_model_t *mod;
    const qc_ctl_class_t *cl;
    unsigned levels;
} qc_class_arg_t;

static double qc_class_util_cb(double m, void *arg)
{
    const qc_class_arg_t *a = arg;

    return qc_class_util(a->mod, a->cl, a->levels, m);
}

/* The level at which the model puts a class at target, the model
 * scaled by how far off it was at the level applied (excluded URIs,
 * files served from a higher tree, uneven clients). */
static double qc_class_level(const qc_model_t *mod, const qc_ctl_class_t *cl,
                             unsigned levels, double target, double u,
                             double m)
{
    qc_class_arg_t a = { mod, cl, levels };

    return qc_pi_invert(qc_class_util_cb, &a, 0.0, levels, target
                        / qc_pi_model_ratio(u, qc_class_util(mod, cl, levels,
                                                             m)));
}

/*
 * The trim corrects a persistent bias of the model, so it learns only
 * when an error can be one: best effort's level inside its range (at the
 * top nothing is degraded and the link is simply not full), the loop
 * settled on the model (its own error within QC_CTL_TRIM_BAND of the
 * target), no backlog of decided work that the link has yet to send
 * (after an overload the link stays full for periods whatever the model
 * says), and no large-signal jump in the last QC_CTL_SETTLE periods.
 * Seen without the second condition: a G = 10 loop still working off a
 * step learned a trim of -0.05 from the saturated link, and held U 9%
 * below the set point afterwards.  A link that stays saturated with no
 * backlog for QC_CTL_SATURATED_BIAS periods is the model's bias, learnt
 * faster and whenever the loop is settled, jump or not (seen: a 0.9
 * bound with the link at 0.98 for whole 10-s steps of the
 * differentiation experiment, the model 6% under it with a = 0, the
 * slow trim never catching up, and never learning within QC_CTL_SETTLE
 * periods of the jump at each step).
 */
static void qc_update_trim(qc_ctl_t *ctl, double m_b, double u)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double total = ctl->model.d;
    unsigned i;
    int k, biased;

    if (ctl->u_measured < 0.0) {
        return;
    }
    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            total += qc_cls(ctl, i, k)->u;
        }
    }
    ctl->backlog += total - ctl->u_measured;
    if (ctl->backlog < 0.0) {
        ctl->backlog = 0.0;
    }
    if (ctl->since_jump < QC_CTL_SETTLE) {
        ctl->since_jump++;
    }
    ctl->saturated_idle = ctl->u_measured >= QC_PI_SATURATED
                          && ctl->backlog < QC_CTL_BACKLOG_IDLE
                          ? ctl->saturated_idle + 1 : 0;
    biased = ctl->saturated_idle > QC_CTL_SATURATED_BIAS;
    ctl->be_trim = qc_target_trim(ctl->be_trim, cfg->bound,
                                  ctl->u_measured, biased
                                  ? QC_TRIM_GAIN_SATURATED : QC_TRIM_GAIN,
                                  m_b > 1e-3 && m_b < 1.0 - 1e-3
                                  && fabs(u - ctl->be_target)
                                     <= QC_CTL_TRIM_BAND * ctl->be_target
                                  && (biased
                                      || (ctl->backlog < QC_CTL_BACKLOG_IDLE
                                          && ctl->since_jump
                                             >= QC_CTL_SETTLE)));
}

/*
 * The best-effort loop holds everything not covered by a guarantee at
 * the bound less the guaranteed traffic (§5.3).  Its output is a
 * fraction of each host's range; its process gain sums the classes it
 * drives, each scaled by that host's M.
 */
static double qc_best_effort(qc_ctl_t *ctl, double u_guaranteed)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double u = 0.0, gain = 0.0, m_b = qc_pi_output(&ctl->be), m_ff;
    int saturated;
    unsigned i;
    int k;

    for (i = 0; i < cfg->nvs; i++) {
        const qc_ctl_vs_t *vs = &cfg->vs[i];

        if (vs->fixed) {
            continue;
        }
        for (k = 0; k < QC_NCLASSES; k++) {
            qc_ctl_class_t *cl = qc_cls(ctl, i, k);
            double m = m_b * vs->levels;

            if (!qc_be_drives(vs, cl, m)) {
                continue;       /* its own loop is in force */
            }
            /* A guaranteed class served at the best-effort level (excess
             * sharing, §5.3) is best effort's to hold: in its measurement
             * and out of what its target leaves for the guarantees.
             * Otherwise a guaranteed host over its contract with no
             * best-effort traffic beside it kept m_b, and itself, at
             * the top on a saturated link. */
            if (vs->guaranteed) {
                u_guaranteed -= qc_held(cl, cl->u);
            }
            u += cl->u;
            gain += vs->levels * qc_class_gain(&ctl->model, cl, vs->levels,
                                               m);
        }
    }
    qc_update_trim(ctl, m_b, u);
    ctl->be_target = qc_target_best_effort(&ctl->model, cfg->bound,
                                           u_guaranteed) + ctl->be_trim;
    if (ctl->be_target < 0.0) {
        ctl->be_target = 0.0;
    }
    if (gain <= 0.0) {
        gain = 1e-3;
    }
    /* u_guaranteed is now what the guaranteed loops hold themselves. */
    m_ff = qc_best_effort_level(ctl, (ctl->be_target + u_guaranteed)
                                / qc_pi_model_ratio(u + u_guaranteed,
                                                    qc_be_util(m_b, ctl)));
    if (qc_ctl_jump(ctl, &ctl->be, ctl->be_target, u, m_ff,
                    1.0 / qc_min_levels(cfg), 1)) {
        ctl->since_jump = 0;
        return qc_pi_output(&ctl->be);
    }
    /* On a saturated link best effort only goes down (the one-sided
     * correction this replaces charged the link's backlog to best effort
     * and rejected clients at a 0.9 bound). */
    saturated = ctl->u_measured >= QC_PI_SATURATED;
    return qc_pi_step(&ctl->be, ctl->be_target, u, gain, cfg->period,
                      cfg->gain_margin,
                      saturated ? 0.0 : QC_PI_APPLIED_OWN);
}

static void qc_publish_class(qc_ctl_class_t *cl, qc_class_shm_t *cs,
                             unsigned levels)
{
    apr_atomic_set32(&cs->level_fx, qc_level_to_fx(cl->m_applied, levels));
    apr_atomic_set64(&cs->r_bits, qc_dbits(cl->r));
    apr_atomic_set64(&cs->r_rej_bits, qc_dbits(cl->r_rej));
    apr_atomic_set64(&cs->w_bits, qc_dbits(cl->w));
    apr_atomic_set64(&cs->u_bits, qc_dbits(cl->u));
    apr_atomic_set64(&cs->u_target_bits, qc_dbits(cl->u_target));
    apr_atomic_set64(&cs->m_own_bits, qc_dbits(qc_pi_output(&cl->pi)));
}

static void qc_publish_global(qc_ctl_t *ctl, apr_int64_t now_us)
{
    qc_shm_t *q = ctl->cfg->shm;

    apr_atomic_set64(&q->accept_queue, ctl->queued < 0 ? ~(apr_uint64_t)0
                     : (apr_uint64_t)ctl->queued);
    apr_atomic_set64(&q->a_bits, qc_dbits(ctl->model.a));
    apr_atomic_set64(&q->b_bits, qc_dbits(ctl->model.b));
    apr_atomic_set64(&q->c_bits, qc_dbits(ctl->model.c));
    apr_atomic_set64(&q->d_bits, qc_dbits(ctl->model.d));
    apr_atomic_set64(&q->u_measured_bits, qc_dbits(ctl->u_measured));
    apr_atomic_set64(&q->m_best_effort_bits,
                     qc_dbits(qc_pi_output(&ctl->be)));
    apr_atomic_set64(&q->u_best_effort_target_bits,
                     qc_dbits(ctl->be_target));
    apr_atomic_set32(&q->controller_pid, (apr_uint32_t)getpid());
    apr_atomic_inc64(&q->periods);
    /* Last, so a request that sees the heartbeat sees fresh levels. */
    apr_atomic_set64(&q->heartbeat, (apr_uint64_t)now_us);
    apr_atomic_set32(&q->fail_open_logged, 0);
}

/* One write per period keeps lines of concurrent readers whole. */
static void qc_log_period(qc_ctl_t *ctl, apr_int64_t now_us)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    static const char *const names[QC_NCLASSES] = { "premium", "basic" };
    char buf[8192];
    size_t len = 0;
    unsigned i;
    int k;

    if (cfg->log_fd < 0) {
        return;
    }
    if (lseek(cfg->log_fd, 0, SEEK_END) == 0) {
        len += snprintf(buf, sizeof(buf), "time\tvserver\tclass\tR\tR_rej\t"
                        "W\tU_model\tU_target\tm\tU_measured\ta\tb\tc\t"
                        "queued\n");
    }
    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES && len < sizeof(buf) - 256; k++) {
            const qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            len += snprintf(buf + len, sizeof(buf) - len,
                            "%.3f\t%s\t%s\t%.2f\t%.2f\t%.0f\t%.5f\t%.5f\t"
                            "%.4f\t%.5f\t%.4g\t%.4g\t%.4g\t%ld\n",
                            now_us / 1e6, cfg->vs[i].name, names[k], cl->r,
                            cl->r_rej, cl->w, cl->u, cl->u_target,
                            cl->m_applied, ctl->u_measured, ctl->model.a,
                            ctl->model.b, ctl->model.c, ctl->queued);
        }
    }
    if (write(cfg->log_fd, buf, len) < 0) {
        /* Nothing to tell: a full disk must not stop control. */
    }
}

static void qc_save_state(qc_ctl_t *ctl)
{
    char line[QC_RLS_LINE_MAX];
    int fd = ctl->cfg->state_fd;
    int n;

    if (fd < 0 || ctl->periods % QC_CTL_STATE_EVERY
        || !qc_rls_converged(&ctl->rls)) {
        return;
    }
    n = qc_rls_format(&ctl->rls, line, sizeof(line));
    if (n > 0 && pwrite(fd, line, (size_t)n, 0) == n) {
        if (ftruncate(fd, n) != 0) {
            /* the next write tries again */
        }
    }
}

void qc_ctl_step(qc_ctl_t *ctl, double dt, double u_measured, long queued,
                 apr_int64_t now_us)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    double u_guaranteed = 0.0, m_b;
    unsigned i;
    int k;

    ctl->u_measured = u_measured;
    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            qc_sense_class(qc_cls(ctl, i, k), &cfg->vs[i].slot->cls[k],
                           cfg->vs[i].levels, dt);
        }
    }
    qc_update_model(ctl, u_measured);
    qc_add_queued(ctl, queued, dt);
    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            cl->u = qc_model_util(&ctl->model, cl->r - cl->r_rej,
                                  qc_sent_bytes(cl, cfg->vs[i].levels),
                                  cl->r_rej);
        }
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
                double own = qc_pi_output(&cl->pi);
                double p = qc_class_gain(&ctl->model, cl, vs->levels, own);
                double applied = cl->m_applied > own + 1e-9
                                 ? cl->m_applied : QC_PI_APPLIED_OWN;

                double m_ff = qc_class_level(&ctl->model, cl, vs->levels,
                                             cl->u_target, cl->u,
                                             cl->m_applied);

                if (applied != QC_PI_APPLIED_OWN
                    || !qc_ctl_jump(ctl, &cl->pi, cl->u_target, cl->u,
                                    m_ff, 1.0, 0)) {
                    own = qc_pi_step(&cl->pi, cl->u_target, cl->u, p,
                                     cfg->period, cfg->gain_margin,
                                     applied);
                }
                own = qc_pi_output(&cl->pi);
                cl->m_applied = qc_share_level(own, m_b, vs->levels);
            }
            else {
                cl->u_target = ctl->be_target;
                cl->m_applied = m_b * vs->levels;
                qc_pi_init(&cl->pi, vs->levels, cl->m_applied);
            }
            if (!vs->fixed) {
                qc_publish_class(cl, &vs->slot->cls[k], vs->levels);
            }
        }
    }
    ctl->prev_u = u_measured;
    ctl->periods++;
    qc_log_period(ctl, now_us);
    qc_save_state(ctl);
    qc_publish_global(ctl, now_us);
}

static double qc_mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double qc_cpu_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int qc_ctl_run(qc_ctl_t *ctl, volatile sig_atomic_t *stop, pid_t parent)
{
    qc_ctl_config_t *cfg = ctl->cfg;
    double last = qc_mono(), next = last;

    qc_sensors_max(cfg->sensors, cfg->nsensors, last);    /* prime */
    while (!*stop) {
        struct timespec ts;
        double now, cpu0;

        next += cfg->period;
        ts.tv_sec = (time_t)next;
        ts.tv_nsec = (long)((next - (double)ts.tv_sec) * 1e9);
        if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)
            == EINTR || *stop) {
            continue;
        }
        if (getppid() != parent) {
            return 0;           /* httpd is gone; so are we */
        }
        cpu0 = qc_cpu_seconds();
        now = qc_mono();
        qc_ctl_step(ctl, now - last,
                    qc_sensors_max(cfg->sensors, cfg->nsensors, now),
                    qc_backlog_read(&cfg->backlog), apr_time_now());
        last = now;
        apr_atomic_set64(&cfg->shm->period_cpu_ns, (apr_uint64_t)
                         ((qc_cpu_seconds() - cpu0) * 1e9));
        if (now - next > cfg->period) {
            next = now;         /* overslept (suspend, overload): resync */
        }
    }
    return 0;
}
