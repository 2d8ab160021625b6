/* Licensed under the Apache License, Version 2.0. */

/*
 * What every output of the status page reads: the views of the server
 * and its classes, read once from shared memory, the table of per-class
 * metrics that drives all of them (so they cannot disagree), the walk
 * over the hosts a view shows, and the names they print.
 */

#include "httpd.h"
#include "apr_atomic.h"
#include "apr_strings.h"

#include "qc_status_view.h"
#include "qc_heartbeat.h"
#include "qc_power.h"
#include "qc_be_mode.h"

const char *const qc_class_names[QC_NCLASSES] = {
    "premium", "basic"
};

#define QC_M(k, prom, h, ctr, label, show) \
    { #k, prom, h, ctr, APR_OFFSETOF(qc_class_view_t, k), label, show }
const qc_metric_t qc_metrics[] = {
    QC_M(m, "level", "Level applied by the actuator: the content tree "
         "served, 0 refuses with 503, qosctl_top_level is full quality, "
         "a fraction mixes two trees.", 0, "Level", QC_SHOW_FIXED2),
    QC_M(threshold, "level_threshold", "The hash threshold that serves "
         "the level's share with these clients (the level where nothing "
         "is counted).", 0, NULL, QC_SHOW_NONE),
    QC_M(m_own, "loop_level", "Output of this class's own control loop.",
         0, NULL, QC_SHOW_NONE),
    QC_M(r, NULL, "Arrival rate over the last period, req/s.", 0,
         "Req/s", QC_SHOW_RATE),
    QC_M(r_rej, NULL, "Rejection rate over the last period, req/s.", 0,
         "503/s", QC_SHOW_RATE),
    QC_M(w, NULL, "Byte rate over the last period, bytes/s.", 0,
         "Sent/s", QC_SHOW_BYTES),
    QC_M(u, "model_utilization_ratio", "Modelled utilization "
         "a*R + b*W + c*Rrej of this class, last period.", 0,
         "Load", QC_SHOW_FIXED2),
    QC_M(u_target, "utilization_target_ratio", "Utilization target of "
         "this class.", 0, "Load target", QC_SHOW_FIXED2),
    QC_M(arrived, "requests_total", "Requests decided on by the "
         "actuator.", 1, "Requests", QC_SHOW_COUNT),
    QC_M(rejected, "rejected_requests_total", "Requests refused with "
         "503.", 1, "503s", QC_SHOW_COUNT),
    QC_M(responses, "responses_total", "Responses completed (not "
         "refused).", 1, NULL, QC_SHOW_NONE),
    QC_M(bytes, "response_bytes_total", "Response body bytes sent.", 1,
         "Sent", QC_SHOW_BYTES),
    QC_M(spread_buckets, "spread_buckets", "Buckets of the client hash "
         "marked heavy: their heavy key is split between trees request "
         "by request (all 64 until the clients below the top level are "
         "counted).", 0, "Split groups", QC_SHOW_COUNT),
};
const unsigned qc_nmetrics = sizeof(qc_metrics) / sizeof(qc_metrics[0]);

static double qc_rd(volatile apr_uint64_t *bits)
{
    return qc_bitsd(apr_atomic_read64(bits));
}

void qc_view(const qc_server_conf *c, int cls, qc_class_view_t *v)
{
    qc_class_shm_t *cs = &c->slot->cls[cls];

    v->arrived = (double)qc_cls_arrived(cs);
    v->rejected = (double)qc_cls_rejected(cs);
    v->responses = (double)qc_cls_sum(cs->level_responses);
    v->bytes = (double)qc_cls_sum(cs->level_bytes);
    v->m = c->fixed_set ? c->fixed_level
                        : qc_level_from_fx(apr_atomic_read32(&cs->loop_fx));
    v->threshold = qc_level_from_fx(apr_atomic_read32(&cs->level_fx));
    v->m_own = qc_rd(&cs->m_own_bits);
    v->r = qc_rd(&cs->r_bits);
    v->r_rej = qc_rd(&cs->r_rej_bits);
    v->w = qc_rd(&cs->w_bits);
    v->u = qc_rd(&cs->u_bits);
    v->u_target = qc_rd(&cs->u_target_bits);
    v->spread_buckets = __builtin_popcountll(
                            apr_atomic_read64(&cs->spread_mask));
}

double qc_metric(const qc_class_view_t *v, const qc_metric_t *m)
{
    return *(const double *)((const char *)v + m->off);
}

/* What the controller wants an admin to know (QC_WARN_* bits). */
const qc_warning_t qc_warnings[] = {
    { QC_WARN_BACKGROUND, "background-load",
      "degrading or rejecting did not lower the measured utilization: "
      "the load is not the server's own; shedding stopped (a "
      "QosCtlResource cgroup holding the web server alone leaves such "
      "load out)" },
    { QC_WARN_WRONG_RESOURCE, "wrong-resource",
      "the named resource stays low while httpd's accept queues fill: "
      "the bottleneck may be another resource (QosCtlResource)" },
};
const unsigned qc_nwarnings = sizeof(qc_warnings)
                               / sizeof(qc_warnings[0]);

int qc_next_host(qc_walk_t *w)
{
    while (++w->i < qc_rt.servers->nelts) {
        w->c = APR_ARRAY_IDX(qc_rt.servers, w->i, qc_server_conf *);
        if (w->g->only == NULL || w->g->only == w->c) {
            w->cls = 0;
            return 1;
        }
    }
    w->c = NULL;
    return 0;
}

int qc_next_class(qc_walk_t *w)
{
    if (w->c && ++w->cls < QC_NCLASSES) {
        return 1;
    }
    return qc_next_host(w);
}

void qc_global_view(qc_global_view_t *g)
{
    qc_shm_t *q = qc_rt.shm;
    apr_time_t beat = (apr_time_t)apr_atomic_read64(&q->heartbeat);
    apr_time_t now = apr_time_now();
    apr_uint64_t queued;
    unsigned k;
    int i;

    g->now = now;
    g->age = beat ? now - beat : -1;
    g->fail_open = qc_controller_stale(now, NULL);
    g->periods = apr_atomic_read64(&q->periods);
    g->pid = apr_atomic_read32(&q->controller_pid);
    g->valves = apr_atomic_read32(&q->valve_firings);
    g->surged = apr_atomic_read64(&q->surge_degraded);
    g->surge_rate = qc_rd(&q->surge_rate_bits);
    g->a = qc_rd(&q->a_bits);
    g->b = qc_rd(&q->b_bits);
    g->c = qc_rd(&q->c_bits);
    g->d = qc_rd(&q->d_bits);
    g->u_measured = qc_rd(&q->u_measured_bits);
    g->m_be = qc_rd(&q->m_best_effort_bits);
    g->u_be_target = qc_rd(&q->u_best_effort_target_bits);
    g->cpu_ms = (double)apr_atomic_read64(&q->period_cpu_ns) / 1e6;
    queued = apr_atomic_read64(&q->accept_queue);
    g->accept_queue = queued == ~(apr_uint64_t)0 || !g->periods ? -1.0
                      : (double)queued;
    g->calibration = qc_rd(&q->calibration_bits);
    g->capacity = qc_rd(&q->capacity_bits);
    g->capacity_full = qc_rd(&q->capacity_full_bits);
    if (!(g->capacity > 0.0) || !g->periods) {
        g->capacity = g->capacity_full = 0.0 / 0.0;
    }
    g->drop_ratio = qc_rd(&q->drop_ratio_bits);
    g->headroom = g->capacity > 0.0 ? qc_rd(&q->headroom_bits) : 0.0 / 0.0;
    g->capacity_lower_bound = !apr_atomic_read32(&q->capacity_adapting);
    g->syn = (double)apr_atomic_read64(&q->syn_total);
    g->synack = (double)apr_atomic_read64(&q->synack_total);
    g->syn_ratio = g->periods ? qc_rd(&q->syn_ratio_bits) : 0.0 / 0.0;
    g->power_source = qc_power_source_name((int)apr_atomic_read32(
                                               &q->power_source));
    g->watts = g->power_source && g->periods ? qc_rd(&q->power_bits)
               : 0.0 / 0.0;
    g->warnings = apr_atomic_read32(&q->warnings);
    g->be_mode = qc_be_mode_name(apr_atomic_read32(&q->be_mode));
    g->be_why = qc_be_why_text(apr_atomic_read32(&q->be_why));
    g->refusing = qc_refuse_gate_name(apr_atomic_read32(&q->refuse_gate));
    g->only = NULL;
    g->narrowed = 0;
    g->ntrees = 1;
    for (i = 0; i < qc_rt.servers->nelts; i++) {
        const qc_server_conf *c = APR_ARRAY_IDX(qc_rt.servers, i,
                                                qc_server_conf *);
        if (c->levels > g->ntrees) {
            g->ntrees = c->levels;
        }
    }
    for (k = 0; k < QC_MAX_TREES; k++) {
        g->a_tree[k] = qc_rd(&q->a_tree_bits[k]);
    }
}

const char *qc_tree_name(const qc_server_conf *c, unsigned k)
{
    if (c->ntrees == 0) {
        return "/";
    }
    return c->trees[k - 1][0] ? c->trees[k - 1] : "/";
}

apr_size_t qc_utf8_len(const unsigned char *s)
{
    /* The second byte's range by lead byte (RFC 3629, section 4): no
     * overlong forms, no surrogates, nothing past U+10FFFF. */
    unsigned char lo = 0x80, hi = 0xbf;
    apr_size_t n, k;

    if (s[0] < 0x80) {
        return s[0] ? 1 : 0;
    }
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        n = 2;
    }
    else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        n = 3;
        lo = s[0] == 0xe0 ? 0xa0 : 0x80;
        hi = s[0] == 0xed ? 0x9f : 0xbf;
    }
    else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        n = 4;
        lo = s[0] == 0xf0 ? 0x90 : 0x80;
        hi = s[0] == 0xf4 ? 0x8f : 0xbf;
    }
    else {
        return 0;
    }
    if (s[1] < lo || s[1] > hi) {
        return 0;
    }
    for (k = 2; k < n; k++) {
        if (s[k] < 0x80 || s[k] > 0xbf) {
            return 0;
        }
    }
    return n;
}

/* Label values escape backslash, double quote and newline; a byte that
 * is not valid UTF-8 (the format's encoding) becomes U+FFFD. */
const char *qc_prom_label(apr_pool_t *p, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    char *out = apr_palloc(p, strlen(s) * 3 + 1), *o = out;

    while (*u) {
        apr_size_t n = qc_utf8_len(u);

        if (*u == '\\' || *u == '"') {
            *o++ = '\\';
            *o++ = (char)*u++;
        }
        else if (*u == '\n') {
            *o++ = '\\';
            *o++ = 'n';
            u++;
        }
        else if (n == 0) {
            memcpy(o, "\xef\xbf\xbd", 3);
            o += 3;
            u++;
        }
        else {
            memcpy(o, u, n);
            o += n;
            u += n;
        }
    }
    *o = '\0';
    return out;
}
