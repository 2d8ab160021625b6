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
#include "http_protocol.h"
#include "http_request.h"
#include "apr_atomic.h"
#include "apr_strings.h"
#include "mod_status.h"

#include "mod_qosctl.h"
#include "qc_heartbeat.h"
#include "qc_parse.h"
#include "qc_power.h"
#include "qc_relief.h"
#include "qc_be_mode.h"

static const char *const qc_class_names[QC_NCLASSES] = {
    "premium", "basic"
};

/* What one class shows, read once from shared memory. */
typedef struct {
    double arrived, rejected, responses, bytes;
    double m, threshold, m_own, r, r_rej, w, u, u_target;
    double spread_buckets;
} qc_class_view_t;

typedef struct {
    const char *key;            /* JSON key and Prometheus name stem */
    const char *help;
    int counter;                /* Prometheus counter (name + _total) */
    size_t off;
} qc_metric_t;

#define QC_M(k, h, ctr) { #k, h, ctr, APR_OFFSETOF(qc_class_view_t, k) }
static const qc_metric_t qc_metrics[] = {
    QC_M(arrived, "Requests decided on by the actuator.", 1),
    QC_M(rejected, "Requests rejected with 503.", 1),
    QC_M(responses, "Responses completed (not rejected).", 1),
    QC_M(bytes, "Response body bytes sent.", 1),
    QC_M(m, "Level m applied by the actuator (0 rejects, M is top).", 0),
    QC_M(threshold, "The hash threshold that serves level m's share with "
         "these clients (m where nothing is counted).", 0),
    QC_M(m_own, "Output of this class's own control loop.", 0),
    QC_M(r, "Arrival rate over the last period, req/s.", 0),
    QC_M(r_rej, "Rejection rate over the last period, req/s.", 0),
    QC_M(w, "Byte rate over the last period, bytes/s.", 0),
    QC_M(u, "Model utilization a*R + b*W + c*Rrej of this class.", 0),
    QC_M(u_target, "Utilization target of this class.", 0),
    QC_M(spread_buckets, "Buckets of the client hash marked heavy: "
         "their heavy key is split between trees request by request "
         "(all 64 until the clients below the top level are counted).",
         0),
};
#define QC_NMETRICS (sizeof(qc_metrics) / sizeof(qc_metrics[0]))


static double qc_rd(volatile apr_uint64_t *bits)
{
    return qc_bitsd(apr_atomic_read64(bits));
}

static void qc_view(const qc_server_conf *c, int cls, qc_class_view_t *v)
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

static double qc_metric(const qc_class_view_t *v, const qc_metric_t *m)
{
    return *(const double *)((const char *)v + m->off);
}

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

/* Label values escape backslash, double quote and newline. */
static const char *qc_prom_label(apr_pool_t *p, const char *s)
{
    char *out = apr_palloc(p, strlen(s) * 2 + 1), *o = out;

    for (; *s; s++) {
        if (*s == '\\' || *s == '"') {
            *o++ = '\\';
            *o++ = *s;
        }
        else if (*s == '\n') {
            *o++ = '\\';
            *o++ = 'n';
        }
        else {
            *o++ = *s;
        }
    }
    *o = '\0';
    return out;
}

/* What the controller wants an admin to know (QC_WARN_* bits). */
static const struct {
    apr_uint32_t bit;
    const char *kind;           /* JSON word, Prometheus label */
    const char *text;           /* HTML sentence */
} qc_warnings[] = {
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
#define QC_NWARNINGS (sizeof(qc_warnings) / sizeof(qc_warnings[0]))

typedef struct {
    apr_time_t age;             /* since the last heartbeat, -1: none */
    apr_uint64_t periods;
    unsigned pid;
    unsigned valves;            /* qc_shm.h: valve_firings */
    apr_uint64_t surged;        /* qc_shm.h: surge_degraded */
    double surge_rate;          /* req/s, 0: no guard */
    int fail_open;
    double a, b, c, d, u_measured, m_be, u_be_target, cpu_ms;
    double accept_queue;        /* -1: unknown */
    double calibration;
    /* req/s as degraded and at full quality (NaN: none yet) */
    double capacity, capacity_full;
    double drop_ratio, headroom;
    double syn, synack, syn_ratio;      /* Ohta and Andou's counts and R */
    int capacity_lower_bound;   /* nothing was hard yet */
    double watts;               /* NaN: unknown */
    const char *power_source;   /* "rapl", "model", NULL: none */
    double a_tree[QC_MAX_TREES];        /* [0]: the top tree */
    unsigned ntrees;            /* of a_tree shown: the most any host has */
    apr_uint32_t warnings;
    const char *be_mode;        /* best effort's mode (qc_be_mode.h) */
    const char *refusing;       /* qc_relief.h's state */
    const qc_server_conf *only; /* the one host shown, NULL: all */
} qc_global_view_t;

/* The i-th host, or NULL when the view leaves it out. */
static const qc_server_conf *qc_shown(const qc_global_view_t *g, int i)
{
    const qc_server_conf *c = APR_ARRAY_IDX(qc_rt.servers, i,
                                            qc_server_conf *);

    return g->only == NULL || g->only == c ? c : NULL;
}

static void qc_global_view(qc_global_view_t *g)
{
    qc_shm_t *q = qc_rt.shm;
    apr_time_t beat = (apr_time_t)apr_atomic_read64(&q->heartbeat);
    apr_time_t now = apr_time_now();
    apr_uint64_t queued;
    unsigned k;
    int i;

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

static const char *qc_tree_name(const qc_server_conf *c, unsigned k)
{
    if (c->ntrees == 0) {
        return "/";
    }
    return c->trees[k - 1][0] ? c->trees[k - 1] : "/";
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
    unsigned k;
    int i, first = 1;

    ap_rputs(",\"vhosts\":[", r);
    for (i = 0; i < qc_rt.servers->nelts; i++) {
        const qc_server_conf *c = qc_shown(g, i);
        int cls;

        if (c == NULL) {
            continue;
        }
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
            for (j = 0; j < QC_NMETRICS; j++) {
                ap_rprintf(r, "%s\"%s\":", j ? "," : "", qc_metrics[j].key);
                qc_json_num(r, qc_metric(&v, &qc_metrics[j]));
            }
            qc_json_trees(r, ",\"tree_responses\":", cs->level_responses,
                          c->levels);
            qc_json_trees(r, ",\"tree_bytes\":", cs->level_bytes, c->levels);
            qc_json_counts(r, ",\"bucket_arrived\":", cs->bucket_arrived,
                           QC_BUCKETS);
            ap_rputc('}', r);
        }
        ap_rputs("}}", r);
    }
    ap_rputs("]}\n", r);
}

static void qc_render_json(request_rec *r, const qc_global_view_t *g)
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
    ap_rprintf(r, ",\"mode\":\"%s\",\"refusing\":\"%s\"", g->be_mode,
               g->refusing);
    qc_json_field(r, "},\"period\":", m->period);
    qc_json_field(r, ",\"calibration\":", g->calibration);
    for (k = 0; k < g->ntrees; k++) {
        qc_json_field(r, k ? "," : ",\"a_tree\":[", g->a_tree[k]);
    }
    ap_rputs("],\"warnings\":[", r);
    for (k = 0, first = 1; k < QC_NWARNINGS; k++) {
        if (g->warnings & qc_warnings[k].bit) {
            ap_rprintf(r, "%s\"%s\"", first ? "" : ",", qc_warnings[k].kind);
            first = 0;
        }
    }
    ap_rputc(']', r);
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
    for (k = 0; k < QC_NWARNINGS; k++) {
        ap_rprintf(r, "qosctl_warning{kind=\"%s\"} %d\n",
                   qc_warnings[k].kind,
                   (g->warnings & qc_warnings[k].bit) != 0);
    }
}

static void qc_render_prom(request_rec *r, const qc_global_view_t *g)
{
    unsigned j, k;
    int i, cls;

    qc_prom_gauge(r, "fail_open", "1 while failing open (stale controller).",
                  g->fail_open);
    if (!g->only) {
        qc_render_prom_server(r, g);
    }
    for (j = 0; j < QC_NMETRICS; j++) {
        const qc_metric_t *m = &qc_metrics[j];
        const char *sfx = m->counter ? "_total" : "";

        ap_rprintf(r, "# HELP qosctl_%s%s %s\n# TYPE qosctl_%s%s %s\n",
                   m->key, sfx, m->help, m->key, sfx,
                   m->counter ? "counter" : "gauge");
        for (i = 0; i < qc_rt.servers->nelts; i++) {
            const qc_server_conf *c = qc_shown(g, i);
            const char *vh;

            if (c == NULL) {
                continue;
            }
            vh = qc_prom_label(r->pool, c->key);
            for (cls = 0; cls < QC_NCLASSES; cls++) {
                qc_class_view_t v;

                qc_view(c, cls, &v);
                ap_rprintf(r, "qosctl_%s%s{vhost=\"%s\",class=\"%s\"} "
                           "%s\n", m->key, sfx, vh, qc_class_names[cls],
                           qc_pdouble(r->pool, "%.15g", qc_metric(&v, m)));
            }
        }
    }
    ap_rputs("# HELP qosctl_tree_responses_total Responses by content "
             "tree.\n# TYPE qosctl_tree_responses_total counter\n", r);
    for (i = 0; i < qc_rt.servers->nelts; i++) {
        const qc_server_conf *c = qc_shown(g, i);
        const char *vh;

        if (c == NULL) {
            continue;
        }
        vh = qc_prom_label(r->pool, c->key);
        for (cls = 0; cls < QC_NCLASSES; cls++) {
            for (k = 1; k <= c->levels; k++) {
                ap_rprintf(r, "qosctl_tree_responses_total{vhost=\"%s\","
                           "class=\"%s\",tree=\"%s\"} %" APR_UINT64_T_FMT
                           "\n", vh, qc_class_names[cls],
                           qc_prom_label(r->pool, qc_tree_name(c, k)),
                           apr_atomic_read64(
                               &c->slot->cls[cls].level_responses[k]));
            }
        }
    }
}

/* What concerns the whole server: the resource, model and controller. */
static void qc_render_html_server(request_rec *r, const qc_global_view_t *g)
{
    unsigned j;

    ap_rprintf(r, "<p>Utilization: measured %s, bound %s; model a = %s s, "
               "b = %s s/B, c = %s s; best effort m = %s</p>\n",
               qc_pdouble(r->pool, "%.3f", g->u_measured),
               qc_pdouble(r->pool, "%.2f", qc_rt.main->bound),
               qc_pdouble(r->pool, "%.3g", g->a),
               qc_pdouble(r->pool, "%.3g", g->b),
               qc_pdouble(r->pool, "%.3g", g->c),
               qc_pdouble(r->pool, "%.3f", g->m_be));
    ap_rprintf(r, "<p>Calibration (measured over modelled utilization) "
               "%s; cost per request by tree, top first:",
               qc_pdouble(r->pool, "%.3f", g->calibration));
    for (j = 0; j < g->ntrees; j++) {
        ap_rprintf(r, "%s %s s", j ? "," : "",
                   qc_pdouble(r->pool, "%.3g", g->a_tree[j]));
    }
    ap_rputs("</p>\n", r);
    ap_rprintf(r, "<p>Best effort's mode: %s; refusing: %s "
               "(doc/control.md).</p>\n", g->be_mode, g->refusing);
    for (j = 0; j < QC_NWARNINGS; j++) {
        if (g->warnings & qc_warnings[j].bit) {
            ap_rprintf(r, "<p><b>Warning (%s):</b> %s.</p>\n",
                       qc_warnings[j].kind, qc_warnings[j].text);
        }
    }
    if (g->age < 0) {
        ap_rputs("<p>Controller: no heartbeat yet.</p>\n", r);
    }
    else {
        ap_rprintf(r, "<p>Controller: pid %u, last period %.2f s ago, "
                   "%" APR_UINT64_T_FMT " periods, %u valve firings, "
                   "%" APR_UINT64_T_FMT " requests sent down by the surge "
                   "guard (past %.0f req/s); %s "
                   "connections waiting to be accepted%s.</p>\n", g->pid,
                   g->age / 1e6, g->periods, g->valves, g->surged,
                   g->surge_rate,
                   g->accept_queue < 0 ? "unknown"
                   : qc_pdouble(r->pool, "%.0f", g->accept_queue),
                   g->fail_open ? " &mdash; <b>failing open</b>" : "");
    }
    if (g->capacity > 0.0) {
        ap_rprintf(r, "<p>Capacity: %s%s requests/s as degraded, %s at "
                   "full quality; headroom %s; drop ratio %s (tolerance "
                   "%s).</p>\n", g->capacity_lower_bound ? "at least " : "",
                   qc_pdouble(r->pool, "%.0f", g->capacity),
                   qc_pdouble(r->pool, "%.0f", g->capacity_full),
                   qc_pdouble(r->pool, "%.2f", g->headroom),
                   qc_pdouble(r->pool, "%.4f", g->drop_ratio),
                   qc_pdouble(r->pool, "%g", qc_rt.main->drop_tolerance));
    }
    if (g->power_source) {
        ap_rprintf(r, "<p>Power: %s W (%s).</p>\n",
                   qc_pdouble(r->pool, "%.1f", g->watts),
                   !strcmp(g->power_source, "rapl") ? "measured by RAPL"
                   : "QosCtlPowerModel on the CPU's utilization");
    }
}

static void qc_render_html(request_rec *r, const qc_global_view_t *g)
{
    unsigned j;
    int i, cls;

    ap_rputs(DOCTYPE_HTML_4_01 "<html><head><title>mod_qosctl status"
             "</title></head><body><h1>mod_qosctl</h1>\n", r);
    if (g->only) {
        ap_rprintf(r, "<p>%s</p>\n", g->fail_open ? "Control is off for now "
                   "(<b>failing open</b>): every request is served at full "
                   "quality." : "Control is on.");
    }
    else {
        qc_render_html_server(r, g);
    }
    ap_rputs("<table border=\"1\"><tr><th>virtual server</th>"
             "<th>class</th>", r);
    for (j = 0; j < QC_NMETRICS; j++) {
        ap_rprintf(r, "<th>%s</th>", qc_metrics[j].key);
    }
    ap_rputs("<th>responses by tree</th></tr>\n", r);
    for (i = 0; i < qc_rt.servers->nelts; i++) {
        const qc_server_conf *c = qc_shown(g, i);

        if (c == NULL) {
            continue;
        }
        for (cls = 0; cls < QC_NCLASSES; cls++) {
            qc_class_view_t v;
            unsigned k;

            qc_view(c, cls, &v);
            ap_rprintf(r, "<tr><td>%s%s</td><td>%s</td>",
                       ap_escape_html(r->pool, c->key),
                       c->guaranteed ? " (guaranteed)" : "",
                       qc_class_names[cls]);
            for (j = 0; j < QC_NMETRICS; j++) {
                ap_rprintf(r, "<td>%s</td>", qc_pdouble(r->pool, "%.4g",
                           qc_metric(&v, &qc_metrics[j])));
            }
            ap_rputs("<td>", r);
            for (k = 1; k <= c->levels; k++) {
                ap_rprintf(r, "%s%s: %" APR_UINT64_T_FMT, k > 1 ? ", " : "",
                           ap_escape_html(r->pool, qc_tree_name(c, k)),
                           apr_atomic_read64(
                               &c->slot->cls[cls].level_responses[k]));
            }
            ap_rputs("</td></tr>\n", r);
        }
    }
    ap_rputs("</table></body></html>\n", r);
}

int qc_status_handler(request_rec *r)
{
    qc_status_format_e fmt;
    qc_global_view_t g;
    int host;

    host = !strcmp(r->handler, "qosctl-host-status");
    if (!host && strcmp(r->handler, "qosctl-status")) {
        return DECLINED;
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
    if (fmt == QC_STATUS_JSON) {
        qc_render_json(r, &g);
    }
    else if (fmt == QC_STATUS_PROMETHEUS) {
        qc_render_prom(r, &g);
    }
    else {
        qc_render_html(r, &g);
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
