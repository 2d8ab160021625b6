/* Licensed under the Apache License, Version 2.0. */

/*
 * Directives of mod_qosctl.  Syntax is checked here (QosCtlResource's
 * in qc_resource.c), as each line is read; what needs the whole
 * configuration (DocumentRoot, the number of trees of a merged virtual
 * host, Listen ports) is checked in qc_check.c, which httpd also runs
 * for "apachectl -t".  Every message names the directive and the
 * offending value.
 */

#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_main.h"
#include "ap_listen.h"
#include "apr_strings.h"

#include "qc_module.h"
#include "qc_parse.h"
#include "qc_targets.h"
#include "qc_controller.h"

APLOG_USE_MODULE(qosctl);

const char *qc_bad(cmd_parms *cmd, const char *value, const char *why)
{
    return apr_psprintf(cmd->pool, "%s: invalid value '%s': %s",
                        cmd->cmd->name, value, why);
}

/* libc formats numbers: apr's %g drops the leading zero of 0.58. */
/* A number in [lo, hi]; the message states the range it must be in. */
static const char *qc_cmd_double(cmd_parms *cmd, const char *arg,
                                 double lo, double hi, double *out)
{
    const char *err = qc_parse_double(arg, lo, hi, out);

    if (err) {
        return qc_bad(cmd, arg, apr_psprintf(cmd->pool, "%s (expected %s "
                                             "to %s)", err,
                                             qc_pdouble(cmd->pool, "%g", lo),
                                             qc_pdouble(cmd->pool, "%g", hi)));
    }
    return NULL;
}

static const char *qc_global_only(cmd_parms *cmd)
{
    return ap_check_cmd_context(cmd, GLOBAL_ONLY);
}

/* The main server's config, where the global knobs live. */
static qc_server_conf *qc_global(cmd_parms *cmd)
{
    return qc_sconf(cmd->server);
}

void *qc_create_server_conf(apr_pool_t *p, server_rec *s)
{
    qc_server_conf *c = apr_pcalloc(p, sizeof(*c));

    c->enabled = QC_UNSET;
    c->bound = QC_DEFAULT_BOUND;
    c->period = QC_DEFAULT_PERIOD;
    c->gain_margin = QC_DEFAULT_GAIN_MARGIN;
    c->drop_tolerance = QC_DEFAULT_DROP_TOLERANCE;
    c->model_a = QC_DEFAULT_A;
    c->model_b = QC_DEFAULT_B;
    c->model_c = QC_DEFAULT_C;
    c->resources = apr_array_make(p, 2, sizeof(qc_resource_t));
    c->retry_after = QC_DEFAULT_RETRY_AFTER;
    c->premium = apr_array_make(p, 2, sizeof(qc_cidr_t));
    c->excludes = apr_array_make(p, 2, sizeof(const char *));
    c->reason_header = QC_UNSET;
    c->server = s;
    return c;
}

/*
 * A virtual host inherits the main server's trees, classes and pinned
 * level unless it sets its own; never its guarantee, which is a
 * contract of one host.  Its exclusions add to the main server's: a
 * host that excludes its own health check must not lose the server's
 * exclusion of the status page, which would then be degraded or
 * refused on that host.
 */
void *qc_merge_server_conf(apr_pool_t *p, void *basev, void *addv)
{
    qc_server_conf *base = basev;
    qc_server_conf *add = addv;
    qc_server_conf *c = apr_pmemdup(p, add, sizeof(*c));

    if (add->ntrees == 0) {
        memcpy(c->trees, base->trees, sizeof(c->trees));
        c->ntrees = base->ntrees;
    }
    if (apr_is_empty_array(add->premium)) {
        c->premium = base->premium;
    }
    c->excludes = apr_array_append(p, base->excludes, add->excludes);
    if (!add->fixed_set) {
        c->fixed_set = base->fixed_set;
        c->fixed_level = base->fixed_level;
    }
    if (add->reason_header == QC_UNSET) {
        c->reason_header = base->reason_header;
    }
    return c;
}

/* On, Off or LogOnly (a dry run: decide and log, serve as with Off),
 * without regard to case, as httpd takes its own flags. */
static const char *qc_cmd_enable(cmd_parms *cmd, void *dummy,
                                 const char *arg)
{
    qc_server_conf *g = qc_global(cmd);
    const char *err = qc_global_only(cmd);

    if (err) {
        return err;
    }
    if (!strcasecmp(arg, "on") || !strcasecmp(arg, "logonly")) {
        g->enabled = 1;
        g->log_only = arg[0] == 'l' || arg[0] == 'L';
    }
    else if (!strcasecmp(arg, "off")) {
        g->enabled = 0;
        g->log_only = 0;
    }
    else {
        return qc_bad(cmd, arg, "expected On, Off or LogOnly");
    }
    return NULL;
}

static const char *qc_cmd_bound(cmd_parms *cmd, void *dummy,
                                const char *arg)
{
    const char *err = qc_global_only(cmd);
    double v;

    if (err) {
        return err;
    }
    if ((err = qc_cmd_double(cmd, arg, 0.0, 1.0, &v)) != NULL) {
        return err;
    }
    if (v <= 0.0) {
        return qc_bad(cmd, arg, "must be above 0");
    }
    qc_global(cmd)->bound = v;
    return NULL;
}

static const char *qc_cmd_period(cmd_parms *cmd, void *dummy,
                                 const char *arg)
{
    const char *err = qc_global_only(cmd);
    double v;

    if (err) {
        return err;
    }
    if ((err = qc_parse_seconds(arg, &v)) != NULL) {
        return qc_bad(cmd, arg, err);
    }
    if (v < 0.05) {
        return qc_bad(cmd, arg, "must be at least 0.05 seconds");
    }
    qc_global(cmd)->period = v;
    return NULL;
}

static const char *qc_cmd_drop_tolerance(cmd_parms *cmd, void *dummy,
                                         const char *arg)
{
    const char *err = qc_global_only(cmd);
    double v;

    if (err) {
        return err;
    }
    if ((err = qc_cmd_double(cmd, arg, 0.0, 0.5, &v)) != NULL) {
        return err;
    }
    if (v <= 0.0) {
        return qc_bad(cmd, arg, "must be above 0");
    }
    qc_global(cmd)->drop_tolerance = v;
    return NULL;
}

static const char *qc_cmd_power_model(cmd_parms *cmd, void *dummy,
                                      const char *idle, const char *max)
{
    const char *err = qc_global_only(cmd);
    qc_server_conf *g;
    double i, m;

    if (err) {
        return err;
    }
    if ((err = qc_cmd_double(cmd, idle, 0.0, 1e6, &i)) != NULL
        || (err = qc_cmd_double(cmd, max, 0.0, 1e6, &m)) != NULL) {
        return err;
    }
    if (m <= 0.0 || m < i) {
        return qc_bad(cmd, apr_pstrcat(cmd->pool, idle, " ", max, NULL),
                      "the watts at full load must be above 0 and at "
                      "least those at idle");
    }
    g = qc_global(cmd);
    g->power_idle = i;
    g->power_max = m;
    return NULL;
}

static const char *qc_cmd_gain_margin(cmd_parms *cmd, void *dummy,
                                      const char *arg)
{
    const char *err = qc_global_only(cmd);
    double v;

    if (err) {
        return err;
    }
    if ((err = qc_cmd_double(cmd, arg, 1.0, 1000.0, &v)) != NULL) {
        return err;
    }
    if (v <= 1.0) {
        return qc_bad(cmd, arg, "a gain margin must be above 1");
    }
    qc_global(cmd)->gain_margin = v;
    return NULL;
}

/* QosCtlModel <a ms/request> <b ms/KB> [<c ms/rejected request>] */
static const char *qc_cmd_model(cmd_parms *cmd, void *dummy,
                                const char *a, const char *b,
                                const char *c)
{
    const char *err = qc_global_only(cmd);
    qc_server_conf *g = qc_global(cmd);
    double va, vb, vc = g->model_c * 1000.0;

    if (err) {
        return err;
    }
    if ((err = qc_cmd_double(cmd, a, 0.0, 1000.0, &va)) != NULL
        || (err = qc_cmd_double(cmd, b, 0.0, 1000.0, &vb)) != NULL
        || (c && (err = qc_cmd_double(cmd, c, 0.0, 1000.0, &vc)) != NULL)) {
        return err;
    }
    if (va == 0.0 && vb == 0.0) {
        return apr_psprintf(cmd->pool, "%s: a and b cannot both be 0: "
                            "every request costs something",
                            cmd->cmd->name);
    }
    /* The paper's units (ms/request, ms/KB) to seconds and bytes. */
    g->model_a = va / 1000.0;
    g->model_b = vb / 1000.0 / 1024.0;
    g->model_c = vc / 1000.0;
    g->model_set = 1;
    return NULL;
}

static const char *qc_cmd_path(cmd_parms *cmd, void *dummy, const char *arg)
{
    const char *err = qc_global_only(cmd);
    qc_server_conf *g = qc_global(cmd);
    const char *path;

    if (err) {
        return err;
    }
    path = ap_server_root_relative(cmd->pool, arg);
    if (!path) {
        return qc_bad(cmd, arg, "not a valid path");
    }
    if (cmd->info == (void *)0) {
        g->log_path = path;
    }
    else {
        g->state_path = path;
    }
    return NULL;
}

static const char *qc_cmd_retry_after(cmd_parms *cmd, void *dummy,
                                      const char *arg)
{
    const char *err = qc_global_only(cmd);
    long v;

    if (err) {
        return err;
    }
    if ((err = qc_parse_long(arg, 0, 86400, &v)) != NULL) {
        return qc_bad(cmd, arg, apr_pstrcat(cmd->pool, err, " (expected "
                                            "whole seconds, 0 to 86400)",
                                            NULL));
    }
    qc_global(cmd)->retry_after = (int)v;
    return NULL;
}

static const char *qc_cmd_reason_header(cmd_parms *cmd, void *dummy,
                                        int flag)
{
    qc_sconf(cmd->server)->reason_header = flag;
    return NULL;
}

/* [address:]port; an address without a port is a mistake, not port 0. */
static const char *qc_cmd_agent_listen(cmd_parms *cmd, void *dummy,
                                       const char *arg)
{
    const char *err = qc_global_only(cmd);
    char *host = NULL, *scope = NULL;
    apr_port_t port = 0;
    long v;

    if (err) {
        return err;
    }
    if (qc_parse_long(arg, 1, 65535, &v) == NULL) {
        port = (apr_port_t)v;
    }
    else if (apr_parse_addr_port(&host, &scope, &port, arg, cmd->pool)
             != APR_SUCCESS || !host || scope || port == 0) {
        return qc_bad(cmd, arg, "expected [address:]port, the port 1 to "
                      "65535 (e.g. 8471, 127.0.0.1:8471, [::1]:8471)");
    }
    qc_global(cmd)->agent_host = host;
    qc_global(cmd)->agent_port = port;
    return NULL;
}

/*
 * Given once per context, so that a second line is a mistake, not a merge.
 * Trees must not nest: a URL under two of them would have two trees to
 * come from, and the tree inside another would be served at both levels.
 */
static const char *qc_cmd_trees(cmd_parms *cmd, void *dummy,
                                const char *args)
{
    qc_server_conf *c = qc_sconf(cmd->server);
    const char *given[QC_MAX_TREES];
    const char *word;
    unsigned n = 0;

    if (c->ntrees) {
        return apr_psprintf(cmd->pool, "%s: given twice for this host",
                            cmd->cmd->name);
    }
    while (*(word = ap_getword_conf(cmd->pool, &args)) != '\0') {
        char buf[256];
        const char *err;
        unsigned i;

        if (n == QC_MAX_TREES) {
            return apr_psprintf(cmd->pool, "%s: at most %d trees",
                                cmd->cmd->name, QC_MAX_TREES);
        }
        err = qc_parse_url_prefix(word, buf, sizeof(buf));
        if (err) {
            return qc_bad(cmd, word, err);
        }
        for (i = 0; i < n; i++) {
            int in_old = qc_url_prefix_contains(given[i], word);
            int has_old = qc_url_prefix_contains(word, given[i]);

            if (in_old && has_old) {
                return apr_psprintf(cmd->pool, "%s: %s is the same tree as "
                                    "%s (listed twice); trees must not "
                                    "nest", cmd->cmd->name, word, given[i]);
            }
            if (in_old || has_old) {
                return apr_psprintf(cmd->pool, "%s: %s is inside %s; trees "
                                    "must not nest", cmd->cmd->name,
                                    in_old ? word : given[i],
                                    in_old ? given[i] : word);
            }
        }
        given[n] = word;
        c->trees[n++] = apr_pstrdup(cmd->pool, buf);
    }
    if (n == 0) {
        return apr_psprintf(cmd->pool, "%s: name at least one tree, "
                            "lowest quality first (e.g. /degraded /full)",
                            cmd->cmd->name);
    }
    c->ntrees = n;
    return NULL;
}

static const char *qc_cmd_guarantee(cmd_parms *cmd, void *dummy,
                                    const char *rmax, const char *wmax)
{
    qc_server_conf *c = qc_sconf(cmd->server);
    const char *err;

    if ((err = qc_cmd_double(cmd, rmax, 0.0, 1e9, &c->rmax)) != NULL) {
        return err;
    }
    if (c->rmax <= 0.0) {
        return qc_bad(cmd, rmax, "a request rate must be above 0");
    }
    if ((err = qc_parse_bandwidth(wmax, &c->wmax)) != NULL) {
        return qc_bad(cmd, wmax, err);
    }
    c->guaranteed = 1;
    return NULL;
}

static const char *qc_cmd_premium(cmd_parms *cmd, void *dummy,
                                  const char *arg)
{
    qc_server_conf *c = qc_sconf(cmd->server);
    qc_cidr_t cidr;
    const char *err = qc_cidr_parse(cmd->pool, arg, &cidr);

    if (err) {
        return qc_bad(cmd, arg, err);
    }
    APR_ARRAY_PUSH(c->premium, qc_cidr_t) = cidr;
    return NULL;
}

static const char *qc_cmd_exclude(cmd_parms *cmd, void *dummy,
                                  const char *arg)
{
    qc_server_conf *c = qc_sconf(cmd->server);
    char buf[256];
    const char *err = qc_parse_url_prefix(arg, buf, sizeof(buf));

    if (err) {
        return qc_bad(cmd, arg, err);
    }
    APR_ARRAY_PUSH(c->excludes, const char *) = apr_pstrdup(cmd->pool, buf);
    return NULL;
}

static const char *qc_cmd_fixed_level(cmd_parms *cmd, void *dummy,
                                      const char *arg)
{
    qc_server_conf *c = qc_sconf(cmd->server);
    const char *err = qc_cmd_double(cmd, arg, 0.0, QC_MAX_TREES,
                                    &c->fixed_level);

    if (err) {
        return err;
    }
    c->fixed_set = 1;
    return NULL;
}

const command_rec qc_cmds[] = {
    AP_INIT_TAKE1("QosCtl", qc_cmd_enable, NULL, RSRC_CONF,
                  "On to control utilization, LogOnly to log what it would "
                  "do and serve everything in full, Off (default) to do "
                  "nothing"),
    AP_INIT_TAKE1("QosCtlUtilizationBound", qc_cmd_bound, NULL, RSRC_CONF,
                  "utilization set point in (0, 1], default 0.58"),
    AP_INIT_TAKE1("QosCtlPeriod", qc_cmd_period, NULL, RSRC_CONF,
                  "control period in seconds (e.g. 1, 0.25, 250ms)"),
    AP_INIT_TAKE1("QosCtlGainMargin", qc_cmd_gain_margin, NULL, RSRC_CONF,
                  "gain margin G of the PI loops, default 4"),
    AP_INIT_TAKE1("QosCtlDropTolerance", qc_cmd_drop_tolerance, NULL,
                  RSRC_CONF, "drop ratio of connection attempts that "
                  "defines the capacity estimate, in (0, 0.5], "
                  "default 0.01"),
    AP_INIT_TAKE2("QosCtlPowerModel", qc_cmd_power_model, NULL, RSRC_CONF,
                  "the server's watts at idle and at full CPU load, for "
                  "the power estimate where RAPL is not available"),
    AP_INIT_TAKE23("QosCtlModel", qc_cmd_model, NULL, RSRC_CONF,
                   "initial model: <a ms/request> <b ms/KB> "
                   "[<c ms/rejected request>]"),
    AP_INIT_TAKE123("QosCtlResource", qc_cmd_resource, NULL, RSRC_CONF,
                    "bottleneck: 'cpu [<cpulist>]', 'cgroup <directory>' "
                    "or 'link <interface> <bits/s>'"),
    AP_INIT_TAKE1("QosCtlLog", qc_cmd_path, (void *)0, RSRC_CONF,
                  "file for one line per period and class"),
    AP_INIT_TAKE1("QosCtlStateFile", qc_cmd_path, (void *)1, RSRC_CONF,
                  "file keeping the learned model across restarts"),
    AP_INIT_TAKE1("QosCtlUser", qc_cmd_user, NULL, RSRC_CONF,
                  "user the controller runs as (default qosctl, else User)"),
    AP_INIT_TAKE1("QosCtlRetryAfter", qc_cmd_retry_after, NULL, RSRC_CONF,
                  "Retry-After seconds sent with a 503, default 1"),
    AP_INIT_RAW_ARGS("QosCtlContentTrees", qc_cmd_trees, NULL, RSRC_CONF,
                     "URL prefixes of the content trees under "
                     "DocumentRoot, lowest quality first"),
    AP_INIT_TAKE2("QosCtlGuarantee", qc_cmd_guarantee, NULL, RSRC_CONF,
                  "<Rmax req/s> <Wmax, e.g. 13Mbit or 2MB>"),
    AP_INIT_ITERATE("QosCtlPremiumAddress", qc_cmd_premium, NULL, RSRC_CONF,
                    "client addresses (CIDR) of the premium class"),
    AP_INIT_ITERATE("QosCtlExclude", qc_cmd_exclude, NULL, RSRC_CONF,
                    "URL prefixes never rewritten nor rejected"),
    AP_INIT_TAKE1("QosCtlFixedLevel", qc_cmd_fixed_level, NULL, RSRC_CONF,
                  "pin m in [0, number of trees] for this host"),
    AP_INIT_FLAG("QosCtlReasonHeader", qc_cmd_reason_header, NULL,
                 RSRC_CONF, "On to tell clients why a reply was degraded "
                 "or rejected (X-QosCtl-Reason), Off (default)"),
    AP_INIT_TAKE1("QosCtlAgentListen", qc_cmd_agent_listen, NULL,
                  RSRC_CONF, "[address:]port where HAProxy's agent-check "
                  "learns this server's weight"),
    { NULL }
};

/* Whether some <VirtualHost> names this port. */
static int qc_port_named(apr_port_t port)
{
    server_rec *v;
    server_addr_rec *a;

    for (v = ap_server_conf ? ap_server_conf->next : NULL; v; v = v->next) {
        for (a = v->addrs; a; a = a->next) {
            if (a->host_port == port) {
                return 1;
            }
        }
    }
    return 0;
}

/*
 * The port of a host that names none: the lowest httpd listens on that
 * no <VirtualHost> names, where the main server answers; else the
 * lowest of all.  Lowest, not first: ap_listeners changes order over a
 * restart, and the key must not change.
 */
static apr_port_t qc_default_port(void)
{
    apr_port_t any = 0, unnamed = 0;
    ap_listen_rec *lr;

    for (lr = ap_listeners; lr; lr = lr->next) {
        apr_port_t port = lr->bind_addr ? lr->bind_addr->port : 0;

        if (port == 0) {
            continue;
        }
        if (!any || port < any) {
            any = port;
        }
        if ((!unnamed || port < unnamed) && !qc_port_named(port)) {
            unnamed = port;
        }
    }
    return unnamed ? unnamed : any;
}

/*
 * The port a host is reached on: the first its <VirtualHost> names, else
 * its ServerName's, else the default above.  0 only when httpd listens
 * nowhere.
 */
static apr_port_t qc_server_port(server_rec *s)
{
    server_addr_rec *a;

    for (a = s->is_virtual ? s->addrs : NULL; a; a = a->next) {
        if (a->host_port) {
            return a->host_port;
        }
    }
    return s->port ? s->port : qc_default_port();
}

/*
 * key as the segment holds it, in under QC_KEY_LEN bytes.  Cut short,
 * two long names alike in their first bytes would share one slot, one
 * line of the status page and one Prometheus label.  A longer key keeps
 * its start and its port, with a hash of the whole between them: the
 * same on every restart, so that the host keeps its slot.
 */
const char *qc_key_fit(apr_pool_t *p, const char *key)
{
    apr_uint64_t h = APR_UINT64_C(14695981039346656037);  /* FNV-1a */
    const unsigned char *b;
    const char *tail;
    size_t keep;

    if (strlen(key) < QC_KEY_LEN) {
        return key;
    }
    for (b = (const unsigned char *)key; *b; b++) {
        h = (h ^ *b) * APR_UINT64_C(1099511628211);
    }
    tail = strrchr(key, ':');
    if (!tail || strlen(tail) > 16) {
        tail = "";
    }
    /* "~" and 16 hex digits between the start and the tail */
    keep = QC_KEY_LEN - 1 - 17 - strlen(tail);
    return apr_psprintf(p, "%.*s~%016" APR_UINT64_T_HEX_FMT "%s",
                        (int)keep, key, h, tail);
}

/*
 * "host:port", which keeps apart an http and an https host of one name:
 * each has its own guarantee and counters.  Two hosts of one name on
 * one port share a key; qc_shm_bind tells them apart.
 */
const char *qc_server_key(apr_pool_t *p, server_rec *s)
{
    return qc_key_fit(p, apr_psprintf(p, "%s:%u",
                                      s->server_hostname
                                      ? s->server_hostname : "_",
                                      (unsigned)qc_server_port(s)));
}
