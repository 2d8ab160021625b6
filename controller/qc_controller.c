/* Licensed under the Apache License, Version 2.0. */

/*
 * The controller's period, in order: sense, learn, decide, publish.  A
 * period is split into sensing (qc_ctl_sense.c: counters to rates), the
 * fit (qc_ctl_model.c), the decisions (qc_ctl_policy.c and the files of
 * qc_decide.h: a pure function of those rates, the sensor reading and
 * the loop state) and output (qc_ctl_io.c: publishing, the log, the
 * state file); qc_controller.c runs them in that order, and
 * qc_ctl_run.c, the main loop, times the periods and the ticks.  A
 * stage's functions are declared in a header named after its file (the
 * decide stage's parts in qc_decide.h); the state they share is in
 * qc_ctl_types.h.
 */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "apr_atomic.h"
#include "apr_time.h"

#include "qc_controller.h"
#include "qc_ctl_capacity.h"
#include "qc_ctl_dry.h"
#include "qc_ctl_helpers.h"
#include "qc_ctl_io.h"
#include "qc_ctl_model.h"
#include "qc_ctl_policy.h"
#include "qc_ctl_rescale.h"
#include "qc_ctl_sense.h"
#include "qc_decide.h"
#include "qc_logno.h"
#include "qc_state.h"

/* The loop's m, not the threshold that serves it. */
static double qc_level_in_shm(const qc_class_shm_t *cs)
{
    return qc_level_from_fx(apr_atomic_read32(
                                (volatile apr_uint32_t *)&cs->loop_fx));
}

/* The fit resumed was learnt at capacity cap of a resource in `unit`:
 * the first capacity read is then a change from it, rescaled at the
 * first period, not where the model starts. */
static void qc_ctl_fitted_at(qc_ctl_config_t *cfg, double cap,
                             apr_uint32_t unit)
{
    if (cfg->nsensors == 1 && cap > 0.0 && isfinite(cap)
        && unit == qc_ctl_unit_code(qc_sensor_unit(&cfg->sensors[0]))) {
        cfg->sensors[0].cap_seen = cap;
    }
}

/* The state file, all of it or nothing: a file that is not what the
 * controller writes (damaged, hand-made) is named in the error log,
 * once per controller start, and the model starts from its prior; the
 * next converged fit overwrites it.  A file another user may write is
 * neither read nor written: its numbers are that user's choice. */
static void qc_ctl_read_state(qc_ctl_t *ctl)
{
    qc_ctl_config_t *cfg = ctl->cfg;
    char text[QC_STATE_MAX + 1], why[256];
    struct stat sb;
    qc_state_t st;
    ssize_t n;

    if (cfg->state_fd < 0) {
        return;
    }
    why[0] = '\0';
    if (fstat(cfg->state_fd, &sb) != 0) {
        snprintf(why, sizeof(why), "cannot stat it: %s", strerror(errno));
    }
    else {
        qc_state_owner(&sb, geteuid(), why, sizeof(why));
    }
    if (why[0]) {
        fprintf(stderr, QC_LOGNO(10060)
                "QosCtl: QosCtlStateFile not used: %s; neither "
                "read nor written, the model starts from QosCtlModel (or "
                "the running one)\n", why);
        close(cfg->state_fd);
        cfg->state_fd = -1;
        return;
    }
    if ((n = pread(cfg->state_fd, text, sizeof(text), 0)) <= 0) {
        return;                 /* none yet */
    }
    if (qc_state_parse(text, (size_t)n, &st, why, sizeof(why)) != NULL) {
        fprintf(stderr, QC_LOGNO(10061)
                "QosCtl: QosCtlStateFile not used: %s; the model "
                "starts from QosCtlModel (or the running one)\n", why);
        return;
    }
    ctl->rls = st.rls;
    if (st.unit[0]) {
        qc_ctl_fitted_at(cfg, st.capacity, qc_ctl_unit_code(st.unit));
    }
}

/* A controller restarted after a crash resumes its predecessor's
 * estimates; a state file, when given, holds the full RLS state. */
static void qc_ctl_init_model(qc_ctl_t *ctl)
{
    qc_ctl_config_t *cfg = ctl->cfg;
    qc_shm_t *q = cfg->shm;

    if (apr_atomic_read64(&q->periods)) {
        qc_rls_init(&ctl->rls, qc_bitsd(apr_atomic_read64(&q->a_bits)),
                    qc_bitsd(apr_atomic_read64(&q->b_bits)),
                    qc_bitsd(apr_atomic_read64(&q->c_bits)), QC_RLS_LAMBDA);
        qc_ctl_fitted_at(cfg, qc_bitsd(apr_atomic_read64(
                                           &q->resource_cap_bits)),
                         apr_atomic_read32(&q->resource_unit));
    }
    else {
        qc_rls_init(&ctl->rls, cfg->a0, cfg->b0, cfg->c0, QC_RLS_LAMBDA);
    }
    qc_ctl_read_state(ctl);
    qc_ctl_model_from_rls(ctl);
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
    ctl->contract_n = apr_pcalloc(p, sizeof(double) * cfg->nvs + 1);
    ctl->contract_last = apr_pcalloc(p, sizeof(double) * cfg->nvs + 1);
    qc_ctl_init_model(ctl);
    qc_calib_init(&ctl->calib);
    qc_ctl_capacity_init(ctl);
    for (i = 0; i < cfg->nvs; i++) {
        const qc_ctl_vs_t *vs = &cfg->vs[i];

        for (k = 0; k < QC_NCLASSES; k++) {
            qc_ctl_class_t *cl = qc_cls(ctl, i, k);
            qc_class_shm_t *cs = &vs->slot->cls[k];

            cl->m_applied = qc_level_in_shm(cs);
            qc_pi_init(&cl->pi, vs->levels, cl->m_applied);
            qc_ctl_read_counts(cs, vs->levels, &cl->prev);
            qc_spread_update(&cl->spread, cl->prev.buckets, 0.0);
        }
    }
    qc_pi_init(&ctl->be, 1.0, apr_atomic_read64(&q->periods)
               ? qc_bitsd(apr_atomic_read64(&q->m_best_effort_bits)) : 1.0);
    ctl->u_measured = -1.0;
    ctl->prev_u = -1.0;
    ctl->floor_cur = -1.0;
    ctl->floor_prev = -1.0;
    ctl->queued = -1;
    ctl->sent_backlog = -1.0;
    ctl->prev_sent_backlog = -1.0;
    ctl->link_bps = -1.0;
    ctl->dry.u_prev = -1.0;
    ctl->dry.ratio = 1.0;
    qc_overflow_init(&ctl->ovf);
    ctl->wait = ctl->wait_last = -1.0;
    ctl->be_last = 1.0;
    ctl->sat.waiting_prev = -1.0;
    ctl->be_mode = QC_BE_TRACK;
    ctl->be_why = QC_BE_WHY_START;
    ctl->tick.upper = qc_ctl_upper_arrivals(ctl);
    ctl->tick.valves = apr_atomic_read32(&q->valve_firings);
    ctl->tick.surge_seen = apr_atomic_read64(&q->surge_arrived);
    ctl->tick.surge_down = apr_atomic_read64(&q->surge_degraded);
    qc_ctl_log_init(ctl, p);
    /* The levels in the segment are valid (a predecessor's, or the top):
     * say at once that a controller is back, not a period later. */
    apr_atomic_set64(&q->a_bits, qc_dbits(ctl->model.a));
    apr_atomic_set64(&q->b_bits, qc_dbits(ctl->model.b));
    apr_atomic_set64(&q->c_bits, qc_dbits(ctl->model.c));
    apr_atomic_set64(&q->d_bits, qc_dbits(ctl->model.d));
    apr_atomic_set32(&q->controller_pid, (apr_uint32_t)getpid());
    apr_atomic_set64(&q->heartbeat, (apr_uint64_t)apr_time_now());
}

/* The link's backlog in seconds of its time, < 0 unknown. */
static void qc_ctl_link_queue(qc_ctl_t *ctl, double bytes, double bytes_per_s)
{
    int known = bytes >= 0.0 && bytes_per_s > 0.0;

    ctl->prev_sent_backlog = ctl->sent_backlog;
    ctl->sent_backlog = known ? bytes / bytes_per_s : -1.0;
    ctl->link_bps = known ? bytes_per_s : -1.0;
}

void qc_ctl_step(qc_ctl_t *ctl, qc_ctl_input_t in)
{
    qc_ctl_link_queue(ctl, in.sendq_bytes, in.link_bps);
    qc_ctl_rescale(ctl, in.rescale);
    ctl->u_measured = in.u;
    qc_ctl_sense(ctl, in.dt);
    qc_ctl_classify(ctl);
    qc_ctl_update_model(ctl, in.dt);
    qc_ctl_add_queued(ctl, in.queued, in.dt);
    qc_ctl_censor(ctl);
    if (ctl->cfg->log_only) {
        qc_ctl_dry_plant(ctl, in.dt);
        qc_ctl_policy(ctl);
        qc_ctl_dry_restore(ctl);
    }
    else {
        qc_ctl_policy(ctl);
    }
    /* the capacity estimate reads the drops itself */
    ctl->reading.saturated = qc_u_capped(ctl->u_measured);
    qc_ctl_capacity_period(ctl, in.dt);
    ctl->prev_u = in.u;
    ctl->periods++;
    qc_ctl_log_period(ctl, in.now_us);
    ctl->tick.valved_last = ctl->tick.valved;
    ctl->tick.valved = 0;
    qc_ctl_save_state(ctl);
    qc_ctl_publish(ctl, in.now_us);
}

int qc_ctl_tick(qc_ctl_t *ctl, double dt, double u_tick)
{
    apr_uint64_t down = apr_atomic_read64(&ctl->cfg->shm->surge_degraded);
    int surged = down != ctl->tick.surge_down;

    ctl->tick.surge_down = down;
    qc_ctl_surge_rebase(ctl, dt);
    if (ctl->cfg->log_only && u_tick > 0.0) {
        /* the virtual plant's reading (qc_ctl_dry.c), scaled as the
         * period's was */
        u_tick = fmin(u_tick * ctl->dry.ratio, 1.0);
    }
    if (!qc_ctl_valve(ctl, dt, u_tick, surged)) {
        return 0;
    }
    qc_ctl_publish_levels(ctl);
    return 1;
}
