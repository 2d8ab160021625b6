/* Licensed under the Apache License, Version 2.0. */

/*
 * The status page for people: one page, no other file, no JavaScript,
 * within a 1,280-pixel window.  The server's lines (one function each,
 * so more can join), the chart of the last ten minutes, a table of the
 * classes with headings an admin reads and a legend under it.
 * ?refresh=1 reloads it every control period (a meta refresh).
 */

#include <math.h>

#include "httpd.h"
#include "http_protocol.h"
#include "apr_atomic.h"
#include "apr_strings.h"

#include "qc_status_render.h"
#include "qc_watch.h"

static const char qc_html_style[] =
    "body{font:14px/1.4 sans-serif;color:#222;margin:8px;"
    "max-width:1240px}"
    "h1{font-size:20px;margin:0 0 4px}"
    "p{margin:3px 0}"
    "nav{font-size:13px;margin-bottom:6px}"
    ".qc-chart{width:100%;max-width:1200px;height:auto;display:block;"
    "margin:6px 0}"
    "table{border-collapse:collapse;width:100%;font-size:13px}"
    "th,td{border:1px solid #ccc;padding:2px 5px;text-align:right;"
    "vertical-align:middle}"
    "th{background:#eee;font-weight:600}"
    "th.l,td.l{text-align:left}"
    "td.vh{max-width:15em;overflow-wrap:anywhere}"
    "td.tr{max-width:15em;overflow-wrap:anywhere;text-align:left;"
    "font-size:12px}"
    "td.ch{padding:1px}"
    ".sw{display:inline-block;width:10px;height:10px;margin-right:4px}"
    ".legend{color:#555;font-size:12px;margin:4px 0}"
    ".warn{color:#a00}";

/* Digits an admin reads at a glance: k, M, G beyond four digits. */
static const char *qc_show(apr_pool_t *p, double v, qc_show_e how)
{
    static const char *const prefix[] = { "", "k", "M", "G", "T" };
    const char *unit = how == QC_SHOW_BYTES ? "B" : "";
    int k = 0;

    if (v != v) {
        return "&ndash;";
    }
    if (how == QC_SHOW_FIXED2) {
        return qc_pdouble(p, "%.2f", v);
    }
    if (how == QC_SHOW_RATE && v < 100.0) {
        return qc_pdouble(p, "%.1f", v);
    }
    while (v >= 9999.5 && k < 4) {
        v /= 1000.0;
        k++;
    }
    return apr_pstrcat(p, qc_pdouble(p, k ? "%.3g" : "%.0f", v),
                       *unit || k ? " " : "", prefix[k], unit, NULL);
}

static void qc_html_head(request_rec *r, int refresh)
{
    ap_rputs("<!DOCTYPE html>\n<html lang=\"en\"><head>"
             "<meta charset=\"utf-8\">", r);
    if (refresh) {
        ap_rprintf(r, "<meta http-equiv=\"refresh\" content=\"%.0f\">",
                   ceil(qc_rt.main->period));
    }
    ap_rprintf(r, "<title>mod_qosctl status</title><style>%s</style>"
               "</head><body>\n", qc_html_style);
}

/* The other views of this page, and turning the reload on or off. */
static void qc_html_nav(request_rec *r, int refresh)
{
    ap_rprintf(r, "<nav>%s &middot; <a href=\"?format=json\">JSON</a> "
               "&middot; <a href=\"?format=prometheus\">Prometheus</a>"
               "</nav>\n", refresh
               ? apr_psprintf(r->pool, "Reloads every %.0f s (<a href=\"?\">"
                              "stop</a>)", ceil(qc_rt.main->period))
               : apr_psprintf(r->pool, "<a href=\"?refresh=1\">Reload every "
                              "%.0f s</a>", ceil(qc_rt.main->period)));
}

static void qc_html_utilization(request_rec *r, const qc_global_view_t *g)
{
    ap_rprintf(r, "<p><b>Utilization</b> measured %s, bound %s; best "
               "effort's level %s of its range, mode %s (%s), refusing "
               "%s.</p>\n",
               qc_pdouble(r->pool, "%.3f", g->u_measured),
               qc_pdouble(r->pool, "%.2f", qc_rt.main->bound),
               qc_pdouble(r->pool, "%.2f", g->m_be), g->be_mode,
               ap_escape_html(r->pool, g->be_why), g->refusing);
}

static void qc_html_model(request_rec *r, const qc_global_view_t *g)
{
    unsigned j;

    ap_rprintf(r, "<p><b>Cost model</b> a = %s s a request, b = %s s a "
               "byte, c = %s s a refusal (model a, b, c); a request by "
               "tree, top first:",
               qc_pdouble(r->pool, "%.3g", g->a),
               qc_pdouble(r->pool, "%.3g", g->b),
               qc_pdouble(r->pool, "%.3g", g->c));
    for (j = 0; j < g->ntrees; j++) {
        ap_rprintf(r, "%s %s s", j ? "," : "",
                   qc_pdouble(r->pool, "%.3g", g->a_tree[j]));
    }
    ap_rprintf(r, ". Calibration (measured over modelled) %s.</p>\n",
               qc_pdouble(r->pool, "%.3f", g->calibration));
}

static void qc_html_controller(request_rec *r, const qc_global_view_t *g)
{
    if (g->age < 0) {
        ap_rputs("<p><b>Controller</b> no heartbeat yet.</p>\n", r);
        return;
    }
    ap_rprintf(r, "<p>Controller: pid %u, last period %.2f s ago, "
               "%" APR_UINT64_T_FMT " periods, %u valve firings, "
               "%" APR_UINT64_T_FMT " requests sent down by the surge "
               "guard (past %.0f req/s); %s connections waiting to be "
               "accepted%s.</p>\n", g->pid, g->age / 1e6, g->periods,
               g->valves, g->surged, g->surge_rate,
               g->accept_queue < 0 ? "unknown"
               : qc_pdouble(r->pool, "%.0f", g->accept_queue),
               g->fail_open ? " &mdash; <b class=\"warn\">failing open"
               "</b>" : "");
    qc_watch_status(r, 0);
}

static void qc_html_capacity(request_rec *r, const qc_global_view_t *g)
{
    if (!(g->capacity > 0.0)) {
        return;
    }
    ap_rprintf(r, "<p>Capacity: %s%s requests/s as degraded, %s at full "
               "quality; headroom %s; connections dropped %s (tolerance "
               "%s).</p>\n", g->capacity_lower_bound ? "at least " : "",
               qc_pdouble(r->pool, "%.0f", g->capacity),
               qc_pdouble(r->pool, "%.0f", g->capacity_full),
               qc_pdouble(r->pool, "%.2f", g->headroom),
               qc_pdouble(r->pool, "%.4f", g->drop_ratio),
               qc_pdouble(r->pool, "%g", qc_rt.main->drop_tolerance));
}

static void qc_html_power(request_rec *r, const qc_global_view_t *g)
{
    if (!g->power_source) {
        return;
    }
    ap_rprintf(r, "<p>Power: %s W (%s).</p>\n",
               qc_pdouble(r->pool, "%.1f", g->watts),
               !strcmp(g->power_source, "rapl") ? "measured by RAPL"
               : "QosCtlPowerModel on the CPU's utilization");
}

static void qc_html_warnings(request_rec *r, const qc_global_view_t *g)
{
    unsigned j;

    for (j = 0; j < qc_nwarnings; j++) {
        if (g->warnings & qc_warnings[j].bit) {
            ap_rprintf(r, "<p class=\"warn\"><b>Warning (%s):</b> %s.</p>\n",
                       qc_warnings[j].kind, qc_warnings[j].text);
        }
    }
}

/* What concerns the whole server, a line each, then its chart. */
static void qc_html_server(request_rec *r, const qc_global_view_t *g,
                           const qc_history_t *h)
{
    static void (*const lines[])(request_rec *, const qc_global_view_t *) = {
        qc_html_warnings, qc_html_utilization, qc_html_controller,
        qc_html_capacity, qc_html_power, qc_html_model,
    };
    unsigned j;

    for (j = 0; j < sizeof(lines) / sizeof(lines[0]); j++) {
        lines[j](r, g);
    }
    qc_svg_utilization(r, h, g->now, qc_rt.main->bound);
}

static void qc_html_table_head(request_rec *r)
{
    unsigned j;

    ap_rputs("<table><tr><th class=\"l\">Virtual host</th>"
             "<th class=\"l\">Class</th>", r);
    for (j = 0; j < qc_nmetrics; j++) {
        if (qc_metrics[j].show != QC_SHOW_NONE) {
            ap_rprintf(r, "<th>%s</th>", qc_metrics[j].label);
        }
    }
    ap_rputs("<th class=\"l\">Served by tree</th>"
             "<th class=\"l\">Level, last 10 min</th></tr>\n", r);
}

/* A host's rows: a class each, the chart of both in the first. */
static void qc_html_host_rows(request_rec *r, const qc_server_conf *c,
                              const qc_history_t *h, apr_time_t now)
{
    int cls;

    for (cls = 0; cls < QC_NCLASSES; cls++) {
        qc_class_view_t v;
        unsigned j, k;

        qc_view(c, cls, &v);
        ap_rputs("<tr>", r);
        if (cls == 0) {
            ap_rprintf(r, "<td class=\"l vh\" rowspan=\"%d\">%s%s</td>",
                       QC_NCLASSES, ap_escape_html(r->pool, c->key),
                       c->guaranteed ? "<br>(guaranteed)"
                       : c->fixed_set ? "<br>(fixed level)" : "");
        }
        ap_rprintf(r, "<td class=\"l\"><span class=\"sw\" style=\""
                   "background:%s\"></span>%s</td>", qc_class_color(cls),
                   qc_class_names[cls]);
        for (j = 0; j < qc_nmetrics; j++) {
            if (qc_metrics[j].show != QC_SHOW_NONE) {
                ap_rprintf(r, "<td>%s</td>", qc_show(
                               r->pool, qc_metric(&v, &qc_metrics[j]),
                               qc_metrics[j].show));
            }
        }
        ap_rputs("<td class=\"tr\">", r);
        for (k = c->levels; k >= 1; k--) {
            ap_rprintf(r, "%s%s: %s", k < c->levels ? ", " : "",
                       ap_escape_html(r->pool, qc_tree_name(c, k)),
                       qc_show(r->pool, (double)apr_atomic_read64(
                                   &c->slot->cls[cls].level_responses[k]),
                               QC_SHOW_COUNT));
        }
        ap_rputs("</td>", r);
        if (cls == 0) {
            ap_rprintf(r, "<td class=\"ch\" rowspan=\"%d\">", QC_NCLASSES);
            qc_svg_levels(r, h, now, c);
            ap_rputs("</td>", r);
        }
        ap_rputs("</tr>\n", r);
    }
}

void qc_render_html(request_rec *r, const qc_global_view_t *g, int refresh)
{
    qc_history_t *h = apr_palloc(r->pool, sizeof(*h));
    qc_walk_t w = QC_WALK(g);

    qc_history_read(h, g->now);
    qc_html_head(r, refresh);
    ap_rprintf(r, "<h1>mod_qosctl &mdash; %s</h1>\n",
               g->only ? "this host's status" : "server status");
    qc_html_nav(r, refresh);
    if (g->only) {
        ap_rprintf(r, "<p>%s</p>\n", g->fail_open ? "Control is off for now "
                   "(<b class=\"warn\">failing open</b>): every request is "
                   "served at full quality." : "Control is on.");
        if (g->narrowed) {
            ap_rputs("<p class=\"legend\">The whole server's status shows "
                     "only where httpd's configuration sets "
                     "<code>SetHandler qosctl-status</code>: at server "
                     "level for the main server, or in a host's own "
                     "<code>&lt;VirtualHost&gt;</code>.</p>\n", r);
        }
    }
    else {
        qc_html_server(r, g, h);
    }
    qc_dry_html(r, g);
    qc_html_table_head(r);
    while (qc_next_host(&w)) {
        qc_html_host_rows(r, w.c, h, g->now);
    }
    ap_rputs("</table>\n<p class=\"legend\">Level: the content tree served, "
             "0 refuses with 503, the number of trees is full quality, a "
             "fraction mixes two trees; rates over the last control period; "
             "Load: the share of the bottleneck the class uses by the cost "
             "model, against its target; Split groups: client groups (of "
             "64) whose heavy clients are spread over two trees; counts "
             "since the server started (k, M, G: thousands, millions, "
             "billions).</p>\n</body></html>\n", r);
}
