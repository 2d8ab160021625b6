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

static void qc_json_str(request_rec *r, const char *s)
{
    ap_rputc('"', r);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch == '"' || ch == '\\') {
            ap_rprintf(r, "\\%c", ch);
        }
        else if (ch < 0x20) {
            ap_rprintf(r, "\\u%04x", ch);
        }
        else {
            ap_rputc(ch, r);
        }
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

static void qc_prom_gauge(request_rec *r, const char *name, const char *help,
                          double v)
{
    ap_rprintf(r, "# HELP qosctl_%s %s\n# TYPE qosctl_%s gauge\n"
               "qosctl_%s %s\n", name, help, name, name,
               v != v ? "NaN" : qc_pdouble(r->pool, "%.15g", v));
}

/* What concerns the whole server: the resource, model and controller. */
static void qc_render_prom_server(request_rec *r, const qc_global_view_t *g)
{
    unsigned k;

    qc_prom_gauge(r, "utilization_bound", "Utilization set point.",
                  qc_rt.main->bound);
    qc_prom_gauge(r, "utilization_measured",
                  "Measured utilization of the bottleneck.", g->u_measured);
    qc_prom_gauge(r, "model_a_seconds", "Model cost a of a served request.",
                  g->a);
    qc_prom_gauge(r, "model_b_seconds_per_byte", "Model cost b of a byte.",
                  g->b);
    qc_prom_gauge(r, "model_c_seconds", "Model cost c of a rejection.", g->c);
    qc_prom_gauge(r, "model_d", "Model intercept (background load).", g->d);
    qc_prom_gauge(r, "best_effort_level",
                  "Best-effort loop output, fraction of the range.", g->m_be);
    qc_prom_gauge(r, "controller_age_seconds",
                  "Seconds since the controller's last period "
                  "(-1: never ran).", g->age < 0 ? -1.0 : g->age / 1e6);
    qc_prom_gauge(r, "accept_queue", "Connections waiting for httpd to "
                  "accept them, at the last period (-1: unknown).",
                  g->accept_queue);
    qc_prom_gauge(r, "capacity_requests_per_second", "Requests per "
                  "second the server takes with drops under the tolerance, "
                  "as degraded (queue monitoring; NaN: none yet).",
                  g->capacity);
    qc_prom_gauge(r, "capacity_full_quality_requests_per_second",
                  "The same at full quality.", g->capacity_full);
    qc_prom_gauge(r, "capacity_lower_bound", "1 while the capacity is "
                  "only a lower bound (no overload seen yet).",
                  g->capacity_lower_bound);
    qc_prom_gauge(r, "drop_ratio", "Connection attempts the kernel "
                  "dropped over those made, last period.", g->drop_ratio);
    qc_prom_gauge(r, "headroom_ratio", "(capacity - arrival rate) / "
                  "capacity.", g->headroom);
    qc_prom_gauge(r, "syn_ratio", "Ohta and Andou's R = (SYNs - SYN-ACKs) / "
                  "SYN-ACKs at the listeners, last period.", g->syn_ratio);
    ap_rprintf(r, "# HELP qosctl_syn_received_total Connection attempts "
               "(SYNs) at the listeners.\n"
               "# TYPE qosctl_syn_received_total counter\n"
               "qosctl_syn_received_total %.0f\n"
               "# HELP qosctl_syn_answered_total Of those, the ones the "
               "kernel answered (SYN-ACKs).\n"
               "# TYPE qosctl_syn_answered_total counter\n"
               "qosctl_syn_answered_total %.0f\n", g->syn, g->synack);
    if (g->power_source) {
        ap_rprintf(r, "# HELP qosctl_power_watts The server's power draw, "
                   "last period (source rapl: measured; model: "
                   "QosCtlPowerModel on the CPU's utilization).\n"
                   "# TYPE qosctl_power_watts gauge\n"
                   "qosctl_power_watts{source=\"%s\"} %s\n",
                   g->power_source, g->watts != g->watts ? "NaN"
                   : qc_pdouble(r->pool, "%.15g", g->watts));
    }
    ap_rprintf(r, "# HELP qosctl_controller_periods_total Control periods "
               "run.\n# TYPE qosctl_controller_periods_total counter\n"
               "qosctl_controller_periods_total %" APR_UINT64_T_FMT "\n",
               g->periods);
    ap_rprintf(r, "# HELP qosctl_controller_valve_firings_total Jumps of "
               "load that saturated the resource within a period and sent "
               "best effort to its lowest tree at once.\n"
               "# TYPE qosctl_controller_valve_firings_total counter\n"
               "qosctl_controller_valve_firings_total %u\n", g->valves);
    ap_rprintf(r, "# HELP qosctl_surge_degraded_total Requests that came "
               "past the surge guard's rate and were served from their "
               "host's lowest tree.\n"
               "# TYPE qosctl_surge_degraded_total counter\n"
               "qosctl_surge_degraded_total %" APR_UINT64_T_FMT "\n",
               g->surged);
    qc_prom_gauge(r, "surge_rate", "Arrivals/s past which the surge "
                  "guard serves the lowest tree (0: none).", g->surge_rate);
    qc_prom_gauge(r, "calibration", "Measured over modelled utilization "
                  "of the requests.", g->calibration);
    ap_rputs("# HELP qosctl_request_cost_seconds Model cost of a request "
             "by tree (0: the top tree, j: j below it).\n"
             "# TYPE qosctl_request_cost_seconds gauge\n", r);
    for (k = 0; k < g->ntrees; k++) {
        ap_rprintf(r, "qosctl_request_cost_seconds{tree=\"%u\"} %s\n", k,
                   qc_pdouble(r->pool, "%.15g", g->a_tree[k]));
    }
    ap_rputs("# HELP qosctl_warning 1 while the controller raises this "
             "warning.\n# TYPE qosctl_warning gauge\n", r);
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
    for (j = 0; j < qc_nmetrics; j++) {
        const qc_metric_t *m = &qc_metrics[j];
        const char *sfx = m->counter ? "_total" : "";

        ap_rprintf(r, "# HELP qosctl_%s%s %s\n# TYPE qosctl_%s%s %s\n",
                   m->key, sfx, m->help, m->key, sfx,
                   m->counter ? "counter" : "gauge");
        w = QC_WALK(g);
        while (qc_next_class(&w)) {
            qc_class_view_t v;

            qc_view(w.c, w.cls, &v);
            ap_rprintf(r, "qosctl_%s%s{vhost=\"%s\",class=\"%s\"} %s\n",
                       m->key, sfx, qc_prom_label(r->pool, w.c->key),
                       qc_class_names[w.cls],
                       qc_pdouble(r->pool, "%.15g", qc_metric(&v, m)));
        }
    }
    qc_dry_prom(r, g);
    ap_rputs("# HELP qosctl_tree_responses_total Responses by content "
             "tree.\n# TYPE qosctl_tree_responses_total counter\n", r);
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
