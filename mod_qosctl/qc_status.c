/* Licensed under the Apache License, Version 2.0. */

/*
 * "SetHandler qosctl-status": what the module and its controller are
 * doing, per virtual server and class.  HTML by default, ?format=json
 * for scripts, ?format=prometheus for the Prometheus text format
 * (version 0.0.4).  One table of per-class metrics drives all three, so
 * they cannot disagree.  Also a short section in mod_status's page.
 * "SetHandler qosctl-host-status" shows the same for the virtual server
 * that serves the request alone, and nothing server-wide: what a hosting
 * provider can open to that host's tenant.
 */

#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "apr_atomic.h"
#include "apr_strings.h"
#include "mod_status.h"
#include "util_cfgtree.h"

#include "qc_status.h"
#include "qc_heartbeat.h"
#include "qc_parse.h"
#include "qc_power.h"
#include "qc_relief.h"
#include "qc_be_mode.h"

const char *const qc_class_names[QC_NCLASSES] = {
    "premium", "basic"
};

#define QC_M(k, h, ctr, label, show) \
    { #k, h, ctr, APR_OFFSETOF(qc_class_view_t, k), label, show }
const qc_metric_t qc_metrics[] = {
    QC_M(m, "Level m applied by the actuator (0 rejects, M is top).", 0,
         "Level", QC_SHOW_FIXED2),
    QC_M(threshold, "The hash threshold that serves level m's share with "
         "these clients (m where nothing is counted).", 0,
         NULL, QC_SHOW_NONE),
    QC_M(m_own, "Output of this class's own control loop.", 0,
         NULL, QC_SHOW_NONE),
    QC_M(r, "Arrival rate over the last period, req/s.", 0,
         "Req/s", QC_SHOW_RATE),
    QC_M(r_rej, "Rejection rate over the last period, req/s.", 0,
         "503/s", QC_SHOW_RATE),
    QC_M(w, "Byte rate over the last period, bytes/s.", 0,
         "Sent/s", QC_SHOW_BYTES),
    QC_M(u, "Model utilization a*R + b*W + c*Rrej of this class.", 0,
         "Load", QC_SHOW_FIXED2),
    QC_M(u_target, "Utilization target of this class.", 0,
         "Load target", QC_SHOW_FIXED2),
    QC_M(arrived, "Requests decided on by the actuator.", 1,
         "Requests", QC_SHOW_COUNT),
    QC_M(rejected, "Requests rejected with 503.", 1,
         "503s", QC_SHOW_COUNT),
    QC_M(responses, "Responses completed (not rejected).", 1,
         NULL, QC_SHOW_NONE),
    QC_M(bytes, "Response body bytes sent.", 1, "Sent", QC_SHOW_BYTES),
    QC_M(spread_buckets, "Buckets of the client hash marked heavy: "
         "their heavy key is split between trees request by request "
         "(all 64 until the clients below the top level are counted).",
         0, "Split groups", QC_SHOW_COUNT),
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
    { QC_WARN_NO_RELIEF, "refusing-no-relief",
      "refusing did not lower the load: clients sent their next request "
      "at once or retried, or the load is not the requests'; no 503s "
      "for a while, the lowest tree serves everyone" },
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

static void qc_global_view(qc_global_view_t *g)
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
    g->refusing = qc_relief_name((qc_relief_state_t)apr_atomic_read32(
                                     &q->relief_state));
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

/* Whether a SetHandler naming qosctl-status is at file:line of the
 * configuration tree at d (its sections' contents included). */
static int qc_conf_sets_status(const ap_directive_t *d, const char *file,
                               int line)
{
    for (; d; d = d->next) {
        if (d->line_num == line && d->filename && !strcmp(d->filename, file)
            && !strcasecmp(d->directive, "SetHandler")) {
            const char *a = d->args;
            size_t n = strlen(a);

            if (n >= 2 && (a[0] == '"' || a[0] == '\'') && a[n - 1] == a[0]) {
                a++;
                n -= 2;
            }
            return n == 13 && !strncasecmp(a, "qosctl-status", n);
        }
        if (qc_conf_sets_status(d->first_child, file, line)) {
            return 1;
        }
    }
    return 0;
}

/*
 * Whether the whole server's status may be shown here: the SetHandler
 * in effect is one of httpd's configuration, not a tenant's .htaccess
 * (AllowOverride FileInfo allows SetHandler and RewriteRule's H=, so
 * the handler's name alone proves nothing).  The expression core keeps
 * for SetHandler says where it was written; httpd keeps its parsed
 * configuration, which no .htaccess is part of.
 */
static int qc_server_scope_allowed(request_rec *r)
{
    const core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    const ap_expr_info_t *e = d ? d->expr_handler : NULL;

    return e && e->filename
           && qc_conf_sets_status(ap_conftree, e->filename,
                                  (int)e->line_number);
}

int qc_status_handler(request_rec *r)
{
    qc_status_format_e fmt;
    qc_global_view_t g;
    int host, narrowed = 0;

    host = !strcmp(r->handler, "qosctl-host-status");
    if (!host && strcmp(r->handler, "qosctl-status")) {
        return DECLINED;
    }
    if (!host && !qc_server_scope_allowed(r)) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "QosCtl: qosctl-status "
                      "is not set by SetHandler in httpd's configuration "
                      "here (an .htaccess?): showing this host only");
        host = narrowed = 1;
    }
    r->allowed |= (AP_METHOD_BIT << M_GET);
    if (r->method_number != M_GET) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    if (qc_parse_status_query(r->args, &fmt) != NULL) {
        return HTTP_BAD_REQUEST;
    }
    ap_set_content_type(r, fmt == QC_STATUS_JSON ? "application/json"
                        : fmt == QC_STATUS_PROMETHEUS
                        ? "text/plain; version=0.0.4; charset=utf-8"
                        : "text/html; charset=utf-8");
    apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    if (r->header_only) {
        return OK;
    }
    if (!qc_rt.shm) {
        ap_rputs(fmt == QC_STATUS_JSON ? "{\"enabled\":false}\n"
                 : fmt == QC_STATUS_PROMETHEUS ? "# mod_qosctl is off\n"
                 : "<p>mod_qosctl is off (QosCtl Off).</p>\n", r);
        return OK;
    }
    qc_global_view(&g);
    g.only = host ? qc_sconf(r->server) : NULL;
    g.narrowed = narrowed;
    if (fmt == QC_STATUS_JSON) {
        qc_render_json(r, &g);
    }
    else if (fmt == QC_STATUS_PROMETHEUS) {
        qc_render_prom(r, &g);
    }
    else {
        qc_render_html(r, &g, qc_parse_status_flag(r->args, "refresh"));
    }
    return OK;
}

/* mod_status's page: one line of state, HTML or ?auto. */
int qc_status_hook(request_rec *r, int flags)
{
    qc_global_view_t g;

    if (!qc_rt.shm) {
        return OK;
    }
    qc_global_view(&g);
    if (flags & AP_STATUS_SHORT) {
        ap_rprintf(r, "QosCtlUtilization: %.4f\nQosCtlControllerAge: %.2f\n"
                   "QosCtlFailOpen: %d\n", g.u_measured,
                   g.age < 0 ? -1.0 : g.age / 1e6, g.fail_open);
        return OK;
    }
    ap_rprintf(r, "<hr /><h2>mod_qosctl</h2><p>Utilization %.3f of bound "
               "%.2f; controller %s; %d virtual servers. Details: a "
               "location with <code>SetHandler qosctl-status</code>.</p>\n",
               g.u_measured, qc_rt.main->bound,
               g.age < 0 ? "not started" : g.fail_open ? "stale, failing open"
               : "running", qc_rt.servers->nelts);
    return OK;
}
