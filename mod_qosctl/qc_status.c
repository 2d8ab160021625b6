/* Licensed under the Apache License, Version 2.0. */

/*
 * "SetHandler qosctl-status": what the module and its controller are
 * doing, per virtual server and class.  HTML by default, ?format=json
 * for scripts, ?format=prometheus for the Prometheus text format
 * (version 0.0.4): the outputs of qc_status_render.h, over the views of
 * qc_status_view.c.  Also a short section in mod_status's page.
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

#include "qc_status_render.h"
#include "qc_parse.h"

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
