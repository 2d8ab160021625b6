/* Licensed under the Apache License, Version 2.0. */

/*
 * The status page for scripts: ?format=json and ?format=prometheus (the
 * Prometheus text format, version 0.0.4).  Their names are what tools
 * and dashboards read: the HTML page has its own headings.
 */

#include "httpd.h"
#include "http_protocol.h"
#include "apr_atomic.h"
#include "apr_strings.h"

#include "qc_status_render.h"
#include "qc_watch.h"

/*
 * A double as JSON and Prometheus want it: apr's formatter drops the
 * leading zero ("%g" of 0.58 gives ".58"), so libc formats numbers.
 */
/* JSON has no NaN or infinity; a value not computed yet is null. */
static void qc_json_num(request_rec *r, double d)
{
    if (d != d || d > 1e300 || d < -1e300) {
        ap_rputs("null", r);
    }
    else {
        ap_rputs(qc_pdouble(r->pool, "%.15g", d), r);
    }
}

/*
 * A JSON string of any bytes: the output is valid UTF-8 whatever the
 * configuration holds (a ServerName or a path in Latin-1, say), each
 * byte that is not part of valid UTF-8 becoming U+FFFD; control
 * characters and DEL are escaped.
 */
static void qc_json_str(request_rec *r, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;

    ap_rputc('"', r);
    while (*u) {
        apr_size_t n = qc_utf8_len(u);

        if (*u == '"' || *u == '\\') {
            ap_rprintf(r, "\\%c", *u);
        }
        else if (*u < 0x20 || *u == 0x7f) {
            ap_rprintf(r, "\\u%04x", *u);
        }
        else if (n == 0) {
            ap_rputs("\\ufffd", r);
        }
        else {
            ap_rwrite(u, (int)n, r);
            u += n;
            continue;
        }
        u++;
    }
    ap_rputc('"', r);
}

/* A key (with its punctuation) and a number. */
static void qc_json_field(request_rec *r, const char *key, double d)
{
    ap_rputs(key, r);
    qc_json_num(r, d);
}

/* A key (with its punctuation) and n counters as a JSON array. */
static void qc_json_counts(request_rec *r, const char *key,
                           volatile apr_uint64_t *counts, unsigned n)
{
    unsigned k;

    ap_rputs(key, r);
    for (k = 0; k < n; k++) {
        ap_rprintf(r, "%c%" APR_UINT64_T_FMT, k ? ',' : '[',
                   apr_atomic_read64(&counts[k]));
    }
    ap_rputs(n ? "]" : "[]", r);
}

/* A per-tree counter, tree 1 (lowest) first; [0], rejections, left out. */
static void qc_json_trees(request_rec *r, const char *key,
                          volatile apr_uint64_t *by_level, unsigned levels)
{
    qc_json_counts(r, key, by_level + 1, levels);
}

/* The "vhosts" array and the closing brace. */
static void qc_render_json_hosts(request_rec *r, const qc_global_view_t *g)
{
    qc_walk_t w = QC_WALK(g);
    unsigned k;
    int first = 1;

    ap_rputs(",\"vhosts\":[", r);
    while (qc_next_host(&w)) {
        const qc_server_conf *c = w.c;
        int cls;

        ap_rputs(first ? "{\"key\":" : ",{\"key\":", r);
        first = 0;
        qc_json_str(r, c->key);
        ap_rprintf(r, ",\"levels\":%u,\"trees\":[", c->levels);
        for (k = 1; k <= c->levels; k++) {
            if (k > 1) {
                ap_rputc(',', r);
            }
            qc_json_str(r, qc_tree_name(c, k));
        }
        ap_rprintf(r, "],\"guaranteed\":%s,\"rmax\":",
                   c->guaranteed ? "true" : "false");
        qc_json_num(r, c->guaranteed ? c->rmax : 0.0 / 0.0);
        ap_rputs(",\"wmax\":", r);
        qc_json_num(r, c->guaranteed ? c->wmax : 0.0 / 0.0);
        qc_json_field(r, ",\"fixed_level\":",
                      c->fixed_set ? c->fixed_level : 0.0 / 0.0);
        ap_rputs(",\"classes\":{", r);
        for (cls = 0; cls < QC_NCLASSES; cls++) {
            qc_class_view_t v;
            qc_class_shm_t *cs = &c->slot->cls[cls];
            unsigned j;

            qc_view(c, cls, &v);
            ap_rprintf(r, "%s\"%s\":{", cls ? "," : "", qc_class_names[cls]);
            for (j = 0; j < qc_nmetrics; j++) {
                ap_rprintf(r, "%s\"%s\":", j ? "," : "", qc_metrics[j].key);
                qc_json_num(r, qc_metric(&v, &qc_metrics[j]));
            }
            qc_json_trees(r, ",\"tree_responses\":", cs->level_responses,
                          c->levels);
            qc_json_trees(r, ",\"tree_bytes\":", cs->level_bytes, c->levels);
            qc_json_counts(r, ",\"bucket_arrived\":", cs->bucket_arrived,
                           QC_BUCKETS);
            qc_dry_json(r, c, cls);
            ap_rputc('}', r);
        }
        ap_rputs("}}", r);
    }
    ap_rputs("]}\n", r);
}

void qc_render_json(request_rec *r, const qc_global_view_t *g)
{
    const qc_server_conf *m = qc_rt.main;
    unsigned k;
    int first = 1;

    if (g->only) {
        ap_rprintf(r, "{\"enabled\":true,\"scope\":\"host\","
                   "\"fail_open\":%s", g->fail_open ? "true" : "false");
        qc_render_json_hosts(r, g);
        return;
    }
    ap_rprintf(r, "{\"enabled\":true,\"scope\":\"server\","
               "\"generation\":%u,"
               "\"controller\":{\"pid\":%u,\"periods\":%" APR_UINT64_T_FMT
               ",\"age_seconds\":", qc_rt.shm->generation, g->pid,
               g->periods);
    qc_json_num(r, g->age < 0 ? 0.0 / 0.0 : g->age / 1e6);
    ap_rprintf(r, ",\"fail_open\":%s,\"valve_firings\":%u,"
               "\"surge_degraded\":%" APR_UINT64_T_FMT ",\"surge_rate\":",
               g->fail_open ? "true" : "false", g->valves, g->surged);
    qc_json_num(r, g->surge_rate);
    ap_rputs(",\"cpu_ms_per_period\":", r);
    qc_json_num(r, g->cpu_ms);
    qc_json_field(r, ",\"accept_queue\":", g->accept_queue < 0
                  ? 0.0 / 0.0 : g->accept_queue);
    qc_watch_status(r, 1);
    qc_json_field(r, "},\"capacity\":{\"requests_per_second\":",
                  g->capacity);
    qc_json_field(r, ",\"full_quality\":", g->capacity_full);
    ap_rprintf(r, ",\"lower_bound\":%s",
               g->capacity_lower_bound ? "true" : "false");
    qc_json_field(r, ",\"drop_ratio\":", g->drop_ratio);
    qc_json_field(r, ",\"headroom\":", g->headroom);
    qc_json_field(r, ",\"drop_tolerance\":", qc_rt.main->drop_tolerance);
    qc_json_field(r, "},\"syn\":{\"received\":", g->syn);
    qc_json_field(r, ",\"answered\":", g->synack);
    qc_json_field(r, ",\"ratio\":", g->syn_ratio);
    qc_json_field(r, "},\"power\":{\"watts\":", g->watts);
    if (g->power_source) {
        ap_rprintf(r, ",\"source\":\"%s\"", g->power_source);
    }
    else {
        ap_rputs(",\"source\":null", r);
    }
    qc_json_field(r, "},\"model\":{\"a\":", g->a);
    qc_json_field(r, ",\"b\":", g->b);
    qc_json_field(r, ",\"c\":", g->c);
    qc_json_field(r, ",\"d\":", g->d);
    qc_json_field(r, "},\"utilization\":{\"measured\":", g->u_measured);
    qc_json_field(r, ",\"bound\":", m->bound);
    qc_json_field(r, "},\"best_effort\":{\"m\":", g->m_be);
    qc_json_field(r, ",\"u_target\":", g->u_be_target);
    ap_rprintf(r, ",\"mode\":\"%s\",\"mode_why\":\"%s\","
               "\"refusing\":\"%s\"", g->be_mode, g->be_why, g->refusing);
    qc_json_field(r, "},\"period\":", m->period);
    qc_json_field(r, ",\"calibration\":", g->calibration);
    for (k = 0; k < g->ntrees; k++) {
        qc_json_field(r, k ? "," : ",\"a_tree\":[", g->a_tree[k]);
    }
    ap_rputs("],\"warnings\":[", r);
    for (k = 0, first = 1; k < qc_nwarnings; k++) {
        if (g->warnings & qc_warnings[k].bit) {
            ap_rprintf(r, "%s\"%s\"", first ? "" : ",", qc_warnings[k].kind);
            first = 0;
        }
    }
    ap_rprintf(r, "],\"log_only\":%s",
               qc_rt.main->log_only ? "true" : "false");
    qc_render_json_hosts(r, g);
}

/* A number as the Prometheus text format writes it. */
static const char *qc_prom_num(request_rec *r, double v)
{
    return qc_pdouble(r->pool, "%.15g", v);
}

static void qc_prom_head(request_rec *r, const char *name, const char *type,
                         const char *help)
{
    ap_rprintf(r, "# HELP qosctl_%s %s\n# TYPE qosctl_%s %s\n", name, help,
               name, type);
}

/* A gauge without labels; its sample is left out while the value is
 * unknown (NaN), as Prometheus wants rather than a stand-in number. */
static void qc_prom_gauge(request_rec *r, const char *name, const char *help,
                          double v)
{
    qc_prom_head(r, name, "gauge", help);
    if (v == v) {
        ap_rprintf(r, "qosctl_%s %s\n", name, qc_prom_num(r, v));
    }
}

static void qc_prom_counter(request_rec *r, const char *name,
                            const char *help, apr_uint64_t v)
{
    qc_prom_head(r, name, "counter", help);
    ap_rprintf(r, "qosctl_%s %" APR_UINT64_T_FMT "\n", name, v);
}

/* What concerns the whole server: the resource, model and controller. */
static void qc_render_prom_server(request_rec *r, const qc_global_view_t *g)
{
    const double unknown = 0.0 / 0.0;
    unsigned k;

    qc_prom_gauge(r, "utilization_bound_ratio", "Utilization set point "
                  "(QosCtlBound).", qc_rt.main->bound);
    qc_prom_gauge(r, "utilization_measured_ratio",
                  "Measured utilization of the bottleneck, last period.",
                  g->u_measured);
    /* the model's a, b, c and d (doc/control.md); promtool's lint takes
     * one-letter parts of a name for abbreviated units */
    qc_prom_gauge(r, "model_request_seconds", "Model cost a of a served "
                  "request.", g->a);
    qc_prom_gauge(r, "model_byte_seconds", "Model cost b of a byte sent.",
                  g->b);
    qc_prom_gauge(r, "model_rejection_seconds", "Model cost c of a "
                  "rejection.", g->c);
    qc_prom_gauge(r, "model_background_ratio", "Model intercept d "
                  "(utilization of load that is not the requests').", g->d);
    qc_prom_gauge(r, "best_effort_level_ratio", "Best-effort loop output, "
                  "fraction of the range of levels.", g->m_be);
    qc_prom_gauge(r, "controller_age_seconds", "Seconds since the "
                  "controller's last period (no sample: it never ran).",
                  g->age < 0 ? unknown : g->age / 1e6);
    qc_prom_gauge(r, "accept_queue_connections", "Connections waiting for "
                  "httpd to accept them, at the last period (no sample: "
                  "unknown).", g->accept_queue < 0 ? unknown
                  : g->accept_queue);
    qc_prom_gauge(r, "capacity_requests_per_second", "Requests per "
                  "second the server takes with drops under the tolerance, "
                  "as degraded (queue monitoring; no sample: none yet).",
                  g->capacity);
    qc_prom_gauge(r, "capacity_full_quality_requests_per_second",
                  "The same at full quality.", g->capacity_full);
    qc_prom_gauge(r, "capacity_lower_bound", "1 while the capacity is "
                  "only a lower bound (no overload seen yet).",
                  g->capacity_lower_bound);
    qc_prom_gauge(r, "drop_ratio", "Connection attempts the kernel "
                  "dropped over those made, last period.", g->drop_ratio);
    qc_prom_gauge(r, "headroom_ratio", "(capacity - arrival rate) / "
                  "capacity, last period.", g->headroom);
    qc_prom_gauge(r, "syn_ratio", "Ohta and Andou's R = (SYNs - SYN-ACKs) / "
                  "SYN-ACKs at the listeners, last period.", g->syn_ratio);
    qc_prom_counter(r, "syn_received_total", "Connection attempts (SYNs) "
                    "at the listeners.", (apr_uint64_t)g->syn);
    qc_prom_counter(r, "syn_answered_total", "Of those, the ones the "
                    "kernel answered (SYN-ACKs).", (apr_uint64_t)g->synack);
    if (g->power_source) {
        qc_prom_head(r, "power_watts", "gauge", "The server's power draw, "
                     "last period (source rapl: measured; model: "
                     "QosCtlPowerModel on the CPU's utilization).");
        if (g->watts == g->watts) {
            ap_rprintf(r, "qosctl_power_watts{source=\"%s\"} %s\n",
                       g->power_source, qc_prom_num(r, g->watts));
        }
    }
    qc_prom_counter(r, "controller_periods_total", "Control periods run.",
                    g->periods);
    qc_prom_counter(r, "controller_valve_firings_total", "Jumps of load "
                    "that saturated the resource within a period and sent "
                    "best effort to its lowest tree at once.", g->valves);
    qc_prom_counter(r, "surge_degraded_total", "Requests that came past "
                    "the surge guard's rate and were served from their "
                    "host's lowest tree.", g->surged);
    qc_prom_gauge(r, "surge_guard_requests_per_second", "Arrivals per "
                  "second past which the surge guard serves the lowest "
                  "tree (no sample: no guard).",
                  g->surge_rate > 0.0 ? g->surge_rate : unknown);
    qc_prom_gauge(r, "calibration_ratio", "Measured over modelled "
                  "utilization of the requests.", g->calibration);
    qc_prom_head(r, "request_cost_seconds", "gauge", "Model cost of a "
                 "request by depth (0: a host's top tree, j: j trees "
                 "below it).");
    for (k = 0; k < g->ntrees; k++) {
        if (g->a_tree[k] == g->a_tree[k]) {
            ap_rprintf(r, "qosctl_request_cost_seconds{depth=\"%u\"} %s\n",
                       k, qc_prom_num(r, g->a_tree[k]));
        }
    }
    qc_prom_head(r, "warning", "gauge", "1 while the controller raises this "
                 "warning.");
    for (k = 0; k < qc_nwarnings; k++) {
        ap_rprintf(r, "qosctl_warning{kind=\"%s\"} %d\n",
                   qc_warnings[k].kind,
                   (g->warnings & qc_warnings[k].bit) != 0);
    }
}

void qc_render_prom(request_rec *r, const qc_global_view_t *g)
{
    qc_walk_t w;
    unsigned j, k;

    qc_prom_gauge(r, "fail_open", "1 while failing open (stale controller).",
                  g->fail_open);
    if (!g->only) {
        qc_render_prom_server(r, g);
    }
    qc_prom_head(r, "top_level", "gauge", "A host's level at full "
                 "quality: its number of content trees.");
    w = QC_WALK(g);
    while (qc_next_host(&w)) {
        ap_rprintf(r, "qosctl_top_level{vhost=\"%s\"} %u\n",
                   qc_prom_label(r->pool, w.c->key), w.c->levels);
    }
    for (j = 0; j < qc_nmetrics; j++) {
        const qc_metric_t *m = &qc_metrics[j];

        if (!m->prom) {
            continue;
        }
        qc_prom_head(r, m->prom, m->counter ? "counter" : "gauge", m->help);
        w = QC_WALK(g);
        while (qc_next_class(&w)) {
            qc_class_view_t v;
            double d;

            qc_view(w.c, w.cls, &v);
            d = qc_metric(&v, m);
            if (d == d) {
                ap_rprintf(r, "qosctl_%s{vhost=\"%s\",class=\"%s\"} %s\n",
                           m->prom, qc_prom_label(r->pool, w.c->key),
                           qc_class_names[w.cls], qc_prom_num(r, d));
            }
        }
    }
    qc_dry_prom(r, g);
    qc_prom_head(r, "tree_responses_total", "counter", "Responses by "
                 "content tree (tree: its path).");
    w = QC_WALK(g);
    while (qc_next_class(&w)) {
        for (k = 1; k <= w.c->levels; k++) {
            ap_rprintf(r, "qosctl_tree_responses_total{vhost=\"%s\","
                       "class=\"%s\",tree=\"%s\"} %" APR_UINT64_T_FMT "\n",
                       qc_prom_label(r->pool, w.c->key), qc_class_names[w.cls],
                       qc_prom_label(r->pool, qc_tree_name(w.c, k)),
                       apr_atomic_read64(
                           &w.c->slot->cls[w.cls].level_responses[k]));
        }
    }
}
