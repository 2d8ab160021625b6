/* Licensed under the Apache License, Version 2.0. */

/*
 * The controller's output: the levels and figures it publishes in the
 * shared segment, the per-period log and the state file.  No decisions
 * are taken here.
 */

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "apr_atomic.h"
#include "apr_strings.h"

#include "qc_ctl_dry.h"
#include "qc_ctl_helpers.h"
#include "qc_ctl_io.h"
#include "qc_decide.h"
#include "qc_logno.h"
#include "qc_netstat.h"
#include "qc_surge.h"

/* Longest log line of one class (the host name is at most QC_KEY_LEN). */
#define QC_LOG_LINE (QC_KEY_LEN + 352)

static unsigned qc_popcount(apr_uint64_t v)
{
    return (unsigned)__builtin_popcountll(v);
}

static void qc_publish_class(const qc_ctl_class_t *cl, qc_class_shm_t *cs,
                             int fixed)
{
    apr_atomic_set64(&cs->spread_mask, cl->spread.mask);
    if (fixed) {
        return;                 /* QosCtlFixedLevel: the module's level */
    }
    apr_atomic_set64(&cs->r_bits, qc_dbits(cl->r));
    apr_atomic_set64(&cs->r_rej_bits, qc_dbits(cl->r_rej));
    apr_atomic_set64(&cs->w_bits, qc_dbits(cl->w));
    apr_atomic_set64(&cs->u_bits, qc_dbits(cl->u));
    apr_atomic_set64(&cs->u_target_bits, qc_dbits(cl->u_target));
    apr_atomic_set64(&cs->m_own_bits, qc_dbits(qc_pi_output(&cl->pi)));
}

/* One line in the error log (the controller's stderr) when a warning
 * comes or goes. */
static void qc_note_warnings(apr_uint32_t before, apr_uint32_t now)
{
    if ((now ^ before) & QC_WARN_BACKGROUND) {
        fprintf(stderr, now & QC_WARN_BACKGROUND
                ? QC_LOGNO(10062)
                  "QosCtl: load that is not this server's own keeps the "
                  "resource at its utilization bound; web requests keep "
                  "at least half the bound and are not shed for it (a "
                  "QosCtlResource cgroup holding the web server alone "
                  "leaves such load out)\n"
                : QC_LOGNO(10063)
                  "QosCtl: the background load is below the bound "
                  "again\n");
    }
    if ((now ^ before) & QC_WARN_WRONG_RESOURCE) {
        fprintf(stderr, now & QC_WARN_WRONG_RESOURCE
                ? QC_LOGNO(10066)
                  "QosCtl: the resource QosCtlResource names stays low "
                  "while httpd's accept queues fill: the bottleneck is "
                  "probably another resource\n"
                : QC_LOGNO(10067)
                  "QosCtl: the named resource and the accept queues "
                  "agree again\n");
    }
}

/* One count's base for the surge guard (qc_surge_rebase): from `base`,
 * HUGE_VAL when the rate is published anew. */
static void qc_surge_base(volatile apr_uint64_t *base_bits,
                          volatile apr_uint64_t *count, double base,
                          double rate, double t)
{
    apr_atomic_set64(base_bits, qc_dbits(qc_surge_rebase(
                         base, (double)apr_atomic_read64(count), rate, t)));
}

/* The levels alone, as the valve changes them within a period: each
 * class's m, a loop's or a pinned one, and the threshold that serves it
 * (level_fx first, so a module that finds loop_fx its pinned level finds
 * that level's threshold). */
void qc_ctl_publish_levels(qc_ctl_t *ctl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    unsigned i;
    int k;

    for (i = 0; i < cfg->nvs; i++) {
        const qc_ctl_vs_t *vs = &cfg->vs[i];

        for (k = 0; k < QC_NCLASSES; k++) {
            const qc_ctl_class_t *cl = qc_cls(ctl, i, k);
            qc_class_shm_t *cs = &vs->slot->cls[k];
            double m = vs->fixed ? vs->fixed_level : cl->m_applied;

            apr_atomic_set32(&cs->level_fx, qc_level_to_fx(
                                 qc_spread_level(&cl->spread, m),
                                 vs->levels));
            apr_atomic_set32(&cs->loop_fx, qc_level_to_fx(m, vs->levels));
            apr_atomic_set64(&cs->balance, 0);
        }
    }
    apr_atomic_set64(&cfg->shm->m_best_effort_bits,
                     qc_dbits(qc_pi_output(&ctl->be)));
    apr_atomic_set32(&cfg->shm->valve_firings, (apr_uint32_t)ctl->tick.valves);
    apr_atomic_set32(&cfg->shm->be_mode, (apr_uint32_t)ctl->be_mode);
    apr_atomic_set32(&cfg->shm->be_why, (apr_uint32_t)ctl->be_why);
}

/* A sample of the status page's history (qc_shm.h), at most one a
 * QC_HIST_STEP_US: the measured utilization and each class's m. */
void qc_ctl_history_append(qc_ctl_t *ctl, apr_int64_t now_us)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    qc_shm_t *q = cfg->shm;
    apr_uint64_t n = apr_atomic_read64(&q->hist_count);
    unsigned at = (unsigned)(n % QC_HIST_LEN), i;
    int k;

    if (n && now_us - (apr_int64_t)apr_atomic_read64(
            &q->hist_time[(n - 1) % QC_HIST_LEN])
        < QC_HIST_STEP_US - QC_HIST_STEP_US / 20) {
        return;                 /* a period's jitter is not a second */
    }
    for (i = 0; i < cfg->nvs; i++) {
        const qc_ctl_vs_t *vs = &cfg->vs[i];

        for (k = 0; k < QC_NCLASSES; k++) {
            vs->slot->hist_m[k][at] = qc_hist_m_encode(
                vs->fixed ? vs->fixed_level : qc_cls(ctl, i, k)->m_applied);
        }
    }
    apr_atomic_set32(&q->hist_u[at], qc_fbits(ctl->u_measured < 0.0
                                              ? 0.0f / 0.0f
                                              : (float)ctl->u_measured));
    apr_atomic_set64(&q->hist_time[at], (apr_uint64_t)now_us);
    apr_atomic_set64(&q->hist_count, n + 1);
}

/* The model the loops steer by, so that the status page shows what
 * they believe a request costs, and in which unit. */
static void qc_publish_model(const qc_ctl_t *ctl)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    qc_shm_t *q = cfg->shm;
    unsigned j;

    apr_atomic_set64(&q->a_bits, qc_dbits(ctl->model.a));
    apr_atomic_set64(&q->b_bits, qc_dbits(ctl->model.b));
    apr_atomic_set64(&q->c_bits, qc_dbits(ctl->model.c));
    apr_atomic_set64(&q->d_bits, qc_dbits(ctl->model.d));
    for (j = 0; j < QC_MAX_TREES; j++) {
        apr_atomic_set64(&q->a_tree_bits[j], qc_dbits(ctl->model.a_tree[j]));
    }
    apr_atomic_set64(&q->calibration_bits, qc_dbits(ctl->calib.k));
    if (cfg->nsensors == 1) {
        /* what the costs above are shares of (qc_ctl_init) */
        apr_atomic_set64(&q->resource_cap_bits,
                         qc_dbits(cfg->sensors[0].cap_seen));
        apr_atomic_set32(&q->resource_unit,
                         qc_ctl_unit_code(qc_sensor_unit(
                                              &cfg->sensors[0])));
    }
}

void qc_ctl_publish(qc_ctl_t *ctl, apr_int64_t now_us)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    qc_shm_t *q = cfg->shm;
    apr_uint32_t before = apr_atomic_read32(&q->warnings);
    unsigned i;
    int k;

    qc_ctl_publish_levels(ctl);
    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            qc_publish_class(qc_cls(ctl, i, k), &cfg->vs[i].slot->cls[k],
                             cfg->vs[i].fixed);
        }
    }
    apr_atomic_set64(&q->accept_queue, ctl->queued < 0 ? ~(apr_uint64_t)0
                     : (apr_uint64_t)ctl->queued);
    qc_publish_model(ctl);
    apr_atomic_set32(&q->warnings, ctl->warnings);
    apr_atomic_set32(&q->refuse_gate, (apr_uint32_t)qc_ctl_refuse_gate(ctl));
    if (before != ctl->warnings) {
        qc_note_warnings(before, ctl->warnings);
    }
    apr_atomic_set64(&q->capacity_bits, qc_dbits(ctl->cp.capacity));
    apr_atomic_set64(&q->capacity_full_bits, qc_dbits(ctl->cp.capacity_full));
    apr_atomic_set64(&q->drop_ratio_bits, qc_dbits(ctl->cp.est.drop_ratio));
    apr_atomic_set64(&q->headroom_bits, qc_dbits(ctl->cp.headroom));
    apr_atomic_set32(&q->capacity_adapting, (apr_uint32_t)ctl->cp.est.adapting);
    apr_atomic_set64(&q->syn_total, (apr_uint64_t)ctl->cp.syn_total);
    apr_atomic_set64(&q->synack_total, (apr_uint64_t)ctl->cp.synack_total);
    apr_atomic_set64(&q->syn_ratio_bits, qc_dbits(ctl->cp.syn_ratio));
    apr_atomic_set64(&q->u_measured_bits, qc_dbits(ctl->u_measured));
    apr_atomic_set64(&q->u_best_effort_target_bits,
                     qc_dbits(ctl->be_target));
    apr_atomic_set32(&q->controller_pid, (apr_uint32_t)getpid());
    /* Rate, then base, then heartbeat: the request path reads them the
     * other way round (qc_surge_guard). */
    apr_atomic_set64(&q->surge_rate_bits, qc_dbits(ctl->tick.surge_rate));
    qc_surge_base(&q->surge_base_bits, &q->surge_arrived, HUGE_VAL,
                  ctl->tick.surge_rate, 0.0);
    qc_surge_base(&q->surge_premium_base_bits, &q->surge_premium, HUGE_VAL,
                  ctl->tick.surge_rate, 0.0);
    ctl->tick.surge_t = 0.0;
    qc_ctl_history_append(ctl, now_us);
    apr_atomic_inc64(&q->periods);
    /* Last, so a request that sees the heartbeat sees fresh levels. */
    apr_atomic_set64(&q->heartbeat, (apr_uint64_t)now_us);
    apr_atomic_set32(&q->fail_open_logged, 0);
}

/* At a tick: the surge guard's room back to its slack (qc_surge_rebase). */
void qc_ctl_surge_rebase(qc_ctl_t *ctl, double dt)
{
    qc_shm_t *q = ctl->cfg->shm;
    double rate = ctl->tick.surge_rate;

    ctl->tick.surge_t += dt;
    if (rate > 0.0) {
        qc_surge_base(&q->surge_base_bits, &q->surge_arrived,
                      qc_bitsd(apr_atomic_read64(&q->surge_base_bits)), rate,
                      ctl->tick.surge_t);
        qc_surge_base(&q->surge_premium_base_bits, &q->surge_premium,
                      qc_bitsd(apr_atomic_read64(
                          &q->surge_premium_base_bits)),
                      rate, ctl->tick.surge_t);
    }
}

/* Append to the period's buffer; a line that would not fit is left
 * out whole rather than cut. */
static void qc_log_add(qc_ctl_t *ctl, size_t *len, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(ctl->logbuf + *len, ctl->logcap - *len, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < ctl->logcap - *len) {
        *len += (size_t)n;
    }
    else {
        ctl->logbuf[*len] = '\0';
    }
}

/* One write per period keeps lines of concurrent readers whole. */
void qc_ctl_log_period(qc_ctl_t *ctl, apr_int64_t now_us)
{
    const qc_ctl_config_t *cfg = ctl->cfg;
    static const char *const names[QC_NCLASSES] = { "premium", "basic" };
    size_t len = 0;
    unsigned i;
    int k;

    if (cfg->log_fd < 0 || !ctl->logbuf) {
        return;
    }
    if (lseek(cfg->log_fd, 0, SEEK_END) == 0) {
        qc_log_add(ctl, &len, "time\tvserver\tclass\tR\tR_rej\tW\tU_model\t"
                   "U_target\tm\tU_measured\ta\tb\tc\tqueued\tcalibration\t"
                   "a_next\tspread\td\tbacklog\tvalve\tcapacity\t"
                   "drop_ratio\tsent_backlog\toverflow\tlink_overhead\t"
                   "wait\tmode\twhy\tU_decided\n");
    }
    for (i = 0; i < cfg->nvs; i++) {
        for (k = 0; k < QC_NCLASSES; k++) {
            const qc_ctl_class_t *cl = qc_cls(ctl, i, k);

            qc_log_add(ctl, &len, "%.3f\t%s\t%s\t%.2f\t%.2f\t%.0f\t%.5f\t"
                       "%.5f\t%.4f\t%.5f\t%.4g\t%.4g\t%.4g\t%ld\t%.4g\t"
                       "%.4g\t%u\t%.4g\t%.4g\t%d\t%.1f\t%.4g\t%.4g\t"
                       "%.3g\t%.0f\t%.4g\t%d\t%s\t%.5f\n",
                       now_us / 1e6,
                       cfg->vs[i].name,
                       names[k], cl->r, cl->r_rej, cl->w, cl->u,
                       cl->u_target, cl->m_applied, ctl->u_measured,
                       ctl->model.a, ctl->model.b, ctl->model.c,
                       ctl->queued, ctl->calib.k, ctl->model.a_tree[1],
                       qc_popcount(cl->spread.mask), ctl->model.d,
                       ctl->sat.backlog, ctl->tick.valved, ctl->cp.capacity,
                       ctl->cp.est.drop_ratio, ctl->sent_backlog,
                       ctl->ovf.on ? -1.0 : ctl->ovf.seconds,
                       ctl->ovf.overhead, ctl->wait,
                       (int)ctl->be_mode, qc_be_why_text(ctl->be_why),
                       qc_ctl_u_decided(ctl));
        }
    }
    if (write(cfg->log_fd, ctl->logbuf, len) < 0) {
        /* Nothing to tell: a full disk must not stop control. */
    }
}

void qc_ctl_log_init(qc_ctl_t *ctl, apr_pool_t *p)
{
    ctl->logcap = 256 + (size_t)ctl->cfg->nvs * QC_NCLASSES * QC_LOG_LINE;
    ctl->logbuf = apr_palloc(p, ctl->logcap);
}

void qc_ctl_save_state(qc_ctl_t *ctl)
{
    char line[QC_CTL_STATE_MAX];
    const qc_ctl_config_t *cfg = ctl->cfg;
    int fd = cfg->state_fd;
    int n;

    if (fd < 0 || ctl->periods % QC_CTL_STATE_EVERY
        || !qc_rls_converged(&ctl->rls)) {
        return;
    }
    n = qc_rls_format(&ctl->rls, line, QC_RLS_LINE_MAX);
    if (n > 0 && cfg->nsensors == 1 && cfg->sensors[0].cap_seen > 0.0) {
        /* what the fit's units are a share of (qc_ctl_init) */
        n += snprintf(line + n, sizeof(line) - (size_t)n,
                      "\ncapacity %.10g %s\n", cfg->sensors[0].cap_seen,
                      qc_sensor_unit(&cfg->sensors[0]));
    }
    if (n > 0 && pwrite(fd, line, (size_t)n, 0) == n) {
        if (ftruncate(fd, n) != 0) {
            /* the next write tries again */
        }
    }
}
