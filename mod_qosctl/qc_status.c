/* Licensed under the Apache License, Version 2.0. */

/*
 * "SetHandler qosctl-status": what the module and its controller are
 * doing, per virtual server and class.  HTML by default, ?format=json
 * for scripts, ?format=prometheus for the Prometheus text format
 * (version 0.0.4): the outputs of qc_status_render.h, over the views of
 * qc_status_view.c.  Also a short section in mod_status's page.
 * "SetHandler qosctl-host-status" shows the same for the virtual server
 * that serves the request alone, and nothing server-wide: what a hosting
 * provider can open to that host's tenant.  Either handler set at server
 * level answers on the main server only (qc_where_allowed): a virtual
 * host's page is one its own <VirtualHost> asks for.
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

#include "qc_logno.h"
#include "qc_status_render.h"
#include "qc_parse.h"

/* Where a SetHandler naming qosctl-status was written. */
typedef enum {
    QC_SET_NOWHERE,             /* not in httpd's configuration */
    QC_SET_SERVER,              /* at server level: every host has it */
    QC_SET_HOST                 /* in the <VirtualHost> of host s */
} qc_set_where_e;

static int qc_is_status_sethandler(const ap_directive_t *d,
                                   const char *handler)
{
    const char *a = d->args;
    size_t n = strlen(a);

    if (strcasecmp(d->directive, "SetHandler")) {
        return 0;
    }
    if (n >= 2 && (a[0] == '"' || a[0] == '\'') && a[n - 1] == a[0]) {
        a++;
        n -= 2;
    }
    return n == strlen(handler) && !strncasecmp(a, handler, n);
}

/*
 * Where the SetHandler at file:line of the configuration tree at d is:
 * vhost is the <VirtualHost> section d is in (NULL: server level), s
 * the host serving the request.  A file included in several sections
 * has the same file:line in each: the one at server level or in s's
 * own section is the one in effect for s.
 */
static qc_set_where_e qc_conf_sets_status(const ap_directive_t *d,
                                          const ap_directive_t *vhost,
                                          const char *file, int line,
                                          const char *handler,
                                          const server_rec *s)
{
    for (; d; d = d->next) {
        qc_set_where_e in;

        if (d->line_num == line && d->filename && !strcmp(d->filename, file)
            && qc_is_status_sethandler(d, handler)) {
            if (!vhost) {
                return QC_SET_SERVER;
            }
            if (s->defn_name && vhost->filename
                && !strcmp(s->defn_name, vhost->filename)
                && (int)s->defn_line_number == vhost->line_num) {
                return QC_SET_HOST;
            }
        }
        in = qc_conf_sets_status(d->first_child,
                                 !strcasecmp(d->directive, "<VirtualHost")
                                 ? d : vhost, file, line, handler, s);
        if (in != QC_SET_NOWHERE) {
            return in;
        }
    }
    return QC_SET_NOWHERE;
}

/* What a status handler may show for a request. */
typedef enum {
    QC_SCOPE_NONE,              /* 404: a host that did not ask for it */
    QC_SCOPE_HOST,              /* the host that serves the request */
    QC_SCOPE_SERVER             /* every host, the model, the controller */
} qc_scope_e;

/*
 * What the status handler in effect (qosctl-status, or qosctl-host-status
 * when host) may show here.  A SetHandler at server level is in every
 * virtual host, a tenant's too, whose scripts reach any host over
 * loopback with the Host header they like and pass "Require local": it
 * answers on the main server alone, and a virtual host answers only
 * where its own <VirtualHost> sets the handler (a host the admin chose:
 * the whole server for qosctl-status, that host for
 * qosctl-host-status).  The SetHandler in effect must be one of httpd's
 * configuration: the expression core keeps for SetHandler says where it
 * was written, and httpd keeps its parsed configuration, which no
 * .htaccess is part of.  Set elsewhere (a tenant's .htaccess: SetHandler,
 * AddHandler, RewriteRule's H=), it shows the host that serves the
 * request, the tenant's own figures, and nothing server-wide.
 */
static qc_scope_e qc_where_allowed(request_rec *r, int host)
{
    const core_dir_config *d = ap_get_core_module_config(r->per_dir_config);
    const ap_expr_info_t *e = d ? d->expr_handler : NULL;
    const char *handler = host ? "qosctl-host-status" : "qosctl-status";
    qc_set_where_e where;

    where = e && e->filename
            ? qc_conf_sets_status(ap_conftree, NULL, e->filename,
                                  (int)e->line_number, handler, r->server)
            : QC_SET_NOWHERE;
    if (where == QC_SET_NOWHERE) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, QC_LOGNO(10100)
                      "QosCtl: %s is not set by SetHandler in httpd's "
                      "configuration here (an .htaccess?): showing this "
                      "host only", handler);
        return QC_SCOPE_HOST;
    }
    if (where == QC_SET_SERVER && r->server->is_virtual) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, QC_LOGNO(10101)
                      "QosCtl: %s is set at server level and this is a "
                      "virtual host: not found (it answers on the main "
                      "server, or where a <VirtualHost> sets the handler "
                      "itself)", handler);
        return QC_SCOPE_NONE;
    }
    return host ? QC_SCOPE_HOST : QC_SCOPE_SERVER;
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
    switch (qc_where_allowed(r, host)) {
    case QC_SCOPE_NONE:
        return HTTP_NOT_FOUND;
    case QC_SCOPE_HOST:
        narrowed = !host;
        host = 1;
        break;
    case QC_SCOPE_SERVER:
        break;
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
