/* Licensed under the Apache License, Version 2.0. */

/*
 * The status page's part for "QosCtl LogOnly", the dry run: the levels
 * the controller would set and the shares of each class's requests it
 * would have degraded and rejected (would_arrived in qc_shm.h), in
 * JSON, Prometheus and one HTML block of their own.  Nothing is shown
 * under QosCtl On, whose own counters say what was done.
 */

#include "httpd.h"
#include "http_protocol.h"
#include "apr_atomic.h"
#include "apr_strings.h"

#include "qc_module.h"
#include "qc_status_render.h"

/* What a class would have got, read once from shared memory. */
typedef struct {
    double m;                   /* the level it would be served at */
    apr_uint64_t arrived;       /* every request the class saw */
    apr_uint64_t degraded, rejected;
    double degraded_share, rejected_share;      /* of arrived, 0 none */
} qc_dry_view_t;

static void qc_dry_view(const qc_server_conf *c, int cls, qc_dry_view_t *v)
{
    qc_class_shm_t *cs = &c->slot->cls[cls];
    unsigned k;

    v->m = c->fixed_set ? c->fixed_level
           : qc_level_from_fx(apr_atomic_read32(&cs->loop_fx));
    v->arrived = qc_cls_arrived(cs);
    v->rejected = apr_atomic_read64(&cs->would_arrived[0]);
    v->degraded = 0;
    for (k = 1; k < c->levels; k++) {
        v->degraded += apr_atomic_read64(&cs->would_arrived[k]);
    }
    v->degraded_share = v->arrived ? (double)v->degraded / v->arrived : 0.0;
    v->rejected_share = v->arrived ? (double)v->rejected / v->arrived : 0.0;
}

static const char *qc_num(request_rec *r, double d)
{
    return qc_pdouble(r->pool, "%.15g", d);
}

/* A class's ",\"would\":{...}" in the JSON status. */
void qc_dry_json(request_rec *r, const qc_server_conf *c, int cls)
{
    qc_class_shm_t *cs = &c->slot->cls[cls];
    qc_dry_view_t v;
    unsigned k;

    if (!qc_rt.main->log_only) {
        return;
    }
    qc_dry_view(c, cls, &v);
    ap_rprintf(r, ",\"would\":{\"m\":%s,\"degraded\":%" APR_UINT64_T_FMT
               ",\"rejected\":%" APR_UINT64_T_FMT ",\"degraded_share\":%s,"
               "\"rejected_share\":%s,\"tree_arrived\":[", qc_num(r, v.m),
               v.degraded, v.rejected, qc_num(r, v.degraded_share),
               qc_num(r, v.rejected_share));
    /* trees below the top, lowest first, as tree_responses */
    for (k = 1; k < c->levels; k++) {
        ap_rprintf(r, "%s%" APR_UINT64_T_FMT, k > 1 ? "," : "",
                   apr_atomic_read64(&cs->would_arrived[k]));
    }
    ap_rputs("]}", r);
}

/* One series per shown class; which: 0 m, 1 and 2 the degraded and
 * rejected counts.  Their shares are ratios of counters, left to the
 * query. */
static void qc_dry_prom_series(request_rec *r, const qc_global_view_t *g,
                               const char *name, const char *type,
                               const char *help, int which)
{
    qc_walk_t w = QC_WALK(g);

    ap_rprintf(r, "# HELP qosctl_%s %s\n# TYPE qosctl_%s %s\n", name, help,
               name, type);
    while (qc_next_class(&w)) {
        qc_dry_view_t v;
        double d;

        qc_dry_view(w.c, w.cls, &v);
        d = which == 0 ? v.m : which == 1 ? (double)v.degraded
            : (double)v.rejected;
        ap_rprintf(r, "qosctl_%s{vhost=\"%s\",class=\"%s\"} %s\n", name,
                   qc_prom_label(r->pool, w.c->key), qc_class_names[w.cls],
                   qc_num(r, d));
    }
}

void qc_dry_prom(request_rec *r, const qc_global_view_t *g)
{
    int dry = qc_rt.main->log_only;

    /* server-wide: not in a host's own view (qosctl-host-status), where
     * the would_ series alone say it */
    if (!g->only) {
        ap_rprintf(r, "# HELP qosctl_log_only 1 under QosCtl LogOnly: "
                   "every request is served in full, the levels are what "
                   "the controller would set.\n"
                   "# TYPE qosctl_log_only gauge\nqosctl_log_only %d\n",
                   dry);
    }
    if (!dry) {
        return;
    }
    qc_dry_prom_series(r, g, "would_level", "gauge", "Level the "
                       "controller would set (LogOnly).", 0);
    qc_dry_prom_series(r, g, "would_degraded_total", "counter",
                       "Requests it would have served from a lower tree "
                       "(over qosctl_requests_total: the share).", 1);
    qc_dry_prom_series(r, g, "would_rejected_total", "counter",
                       "Requests it would have refused with 503.", 2);
}

void qc_dry_html(request_rec *r, const qc_global_view_t *g)
{
    qc_walk_t w = QC_WALK(g);

    if (!qc_rt.main->log_only) {
        return;
    }
    ap_rputs("<h2>Dry run (QosCtl LogOnly)</h2>\n<p>Every request is "
             "served from the top tree and none is refused.  The levels "
             "below and in the table are those the controller would set; "
             "the shares are of each class's requests that it would have "
             "degraded or refused, since the server started.</p>\n"
             "<table><tr><th class=\"l\">Virtual host</th>"
             "<th class=\"l\">Class</th><th>Would-be level</th>"
             "<th>Would degrade</th><th>Would refuse</th></tr>\n", r);
    while (qc_next_class(&w)) {
        qc_dry_view_t v;

        qc_dry_view(w.c, w.cls, &v);
        ap_rprintf(r, "<tr><td class=\"l\">%s</td><td class=\"l\">%s"
                   "</td><td>%s</td><td>%s%% (%" APR_UINT64_T_FMT ")</td>"
                   "<td>%s%% (%" APR_UINT64_T_FMT ")</td></tr>\n",
                   ap_escape_html(r->pool, w.c->key), qc_class_names[w.cls],
                   qc_pdouble(r->pool, "%.2f", v.m),
                   qc_pdouble(r->pool, "%.1f", 100.0 * v.degraded_share),
                   v.degraded,
                   qc_pdouble(r->pool, "%.1f", 100.0 * v.rejected_share),
                   v.rejected);
    }
    ap_rputs("</table>\n", r);
}
