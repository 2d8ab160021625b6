/* Licensed under the Apache License, Version 2.0. */

/*
 * What needs the whole configuration: DocumentRoot, the trees of a
 * merged virtual host, httpd's Listen ports, the files as they are on
 * disk.  httpd runs this for "apachectl -t" as for a start, so that a
 * configuration that passes the test also starts.  Every message names
 * the directive and the offending value.
 */

#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_main.h"
#include "ap_listen.h"
#include "apr_network_io.h"
#include "apr_strings.h"
#include "apr_file_info.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qc_module.h"
#include "qc_parse.h"
#include "qc_safe_open.h"
#include "qc_controller.h"
#include "qc_targets.h"

APLOG_USE_MODULE(qosctl);

static const char *qc_docroot(server_rec *s)
{
    core_server_config *core = ap_get_core_module_config(s->module_config);

    return core->ap_document_root;
}

/* dir with every symbolic link resolved, or NULL. */
static const char *qc_real(apr_pool_t *p, const char *dir)
{
    char buf[PATH_MAX];

    return realpath(dir, buf) ? apr_pstrdup(p, buf) : NULL;
}

/*
 * Trees must exist as directories before the first request needs them,
 * inside DocumentRoot once every link is followed, and must not nest on
 * disk either: a tree that is a symbolic link to (or into) another
 * would serve one set of files at two levels.
 */
static int qc_check_trees(apr_pool_t *ptemp, server_rec *s,
                          qc_server_conf *c)
{
    const char *root = qc_docroot(s);
    const char *real_root = qc_real(ptemp, root);
    const char *dir[QC_MAX_TREES], *real[QC_MAX_TREES];
    unsigned i, j;

    for (i = 0; i < c->ntrees; i++) {
        apr_finfo_t fi;
        apr_status_t rv;

        dir[i] = apr_pstrcat(ptemp, root, c->trees[i], NULL);
        rv = apr_stat(&fi, dir[i], APR_FINFO_TYPE, ptemp);
        real[i] = rv == APR_SUCCESS ? qc_real(ptemp, dir[i]) : NULL;
        if (rv != APR_SUCCESS || fi.filetype != APR_DIR || !real[i]) {
            ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_CRIT, rv, s,
                         QC_LOGNO(10001)
                         "QosCtlContentTrees: invalid value '%s' for %s: "
                         "%s is not a directory under DocumentRoot %s",
                         c->trees[i][0] ? c->trees[i] : "/",
                         qc_server_key(ptemp, s), dir[i], root);
            return 0;
        }
        /* A link to /etc would serve it as a tree of the site. */
        if (!real_root || !qc_url_prefix_contains(real_root, real[i])) {
            ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_CRIT, 0, s,
                         QC_LOGNO(10002)
                         "QosCtlContentTrees: invalid value '%s' for %s: "
                         "%s resolves to %s, outside DocumentRoot %s",
                         c->trees[i][0] ? c->trees[i] : "/",
                         qc_server_key(ptemp, s), dir[i], real[i],
                         real_root ? real_root : root);
            return 0;
        }
        for (j = 0; j < i; j++) {
            int in_old = qc_url_prefix_contains(real[j], real[i]);
            int has_old = qc_url_prefix_contains(real[i], real[j]);
            /* The one inside the other; of two alike, the link. */
            unsigned in = in_old && has_old
                          ? (strcmp(dir[i], real[i]) ? i : j)
                          : in_old ? i : j;
            unsigned out = in == i ? j : i;

            if (in_old || has_old) {
                ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_CRIT, 0, s,
                             QC_LOGNO(10003)
                             "QosCtlContentTrees: invalid value '%s' for "
                             "%s: %s is %s on disk, %s tree %s (%s); trees "
                             "must not nest", c->trees[in][0]
                             ? c->trees[in] : "/", qc_server_key(ptemp, s),
                             dir[in], real[in], in_old && has_old
                             ? "the same directory as" : "inside",
                             c->trees[out][0] ? c->trees[out] : "/",
                             real[out]);
                return 0;
            }
        }
    }
    return 1;
}

static int qc_check_fixed(apr_pool_t *ptemp, server_rec *s,
                          qc_server_conf *c)
{
    unsigned levels = qc_levels_of(c);

    if (c->fixed_set && c->fixed_level > levels) {
        ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_CRIT, 0, s,
                     QC_LOGNO(10004)
                     "QosCtlFixedLevel: invalid value '%g' for %s: out of "
                     "range 0..%u (the host has %u content tree%s)",
                     c->fixed_level, qc_server_key(ptemp, s), levels,
                     levels, levels == 1 ? "" : "s");
        return 0;
    }
    return 1;
}

/*
 * Capacity planning (paper §5.1): the guarantees must fit under the
 * bound by the model known now, or some host's guarantee is a promise
 * the machine cannot keep.
 */
static int qc_check_capacity(apr_pool_t *ptemp, server_rec *s,
                             const qc_server_conf *g)
{
    qc_model_t mod;
    apr_array_header_t *names = apr_array_make(ptemp, 4, sizeof(char *));
    apr_array_header_t *rmax = apr_array_make(ptemp, 4, sizeof(double));
    apr_array_header_t *wmax = apr_array_make(ptemp, 4, sizeof(double));
    char msg[2048];
    server_rec *v;

    memset(&mod, 0, sizeof(mod));
    mod.a = g->model_a;
    mod.b = g->model_b;
    mod.c = g->model_c;
    for (v = s; v; v = v->next) {
        const qc_server_conf *c = qc_sconf(v);

        if (c->guaranteed) {
            APR_ARRAY_PUSH(names, const char *) = qc_server_key(ptemp, v);
            APR_ARRAY_PUSH(rmax, double) = c->rmax;
            APR_ARRAY_PUSH(wmax, double) = c->wmax;
        }
    }
    if (names->nelts == 0) {
        return 1;
    }
    if (qc_capacity_check(&mod, g->bound, (const char *const *)names->elts,
                          (const double *)rmax->elts,
                          (const double *)wmax->elts, names->nelts, NULL,
                          NULL, msg, sizeof(msg)) != 0) {
        ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_CRIT, 0, s,
                     QC_LOGNO(10006)
                     "QosCtlGuarantee: %s (QosCtlUtilizationBound %s, "
                     "QosCtlModel a=%s ms b=%s ms/KB)", msg,
                     qc_pdouble(ptemp, "%g", g->bound),
                     qc_pdouble(ptemp, "%g", g->model_a * 1e3),
                     qc_pdouble(ptemp, "%g", g->model_b * 1e3 * 1024.0));
        return 0;
    }
    return 1;
}

/*
 * QosCtlLog and QosCtlStateFile are opened by root: in a directory that
 * exists, not in the kernel's trees, where a "file" can be a process's
 * memory (/proc/self/mem) or a setting, and a regular file of its own
 * or none yet, on a path no other user can redirect (qc_safe_open.h).
 * The last two are the disk's state, which may change: at a start, the
 * supervisor's open refuses them with a log line and goes on without
 * the file (a planted link must not keep the server down);
 * "apachectl -t" refuses them, with the same walk.
 */
static int qc_check_file(apr_pool_t *ptemp, server_rec *s,
                         const char *directive, const char *path)
{
    const char *slash, *dir, *real, *why = NULL, *unsafe;
    char at[PATH_MAX];
    struct stat st;

    if (!path) {
        return 1;
    }
    slash = strrchr(path, '/');
    dir = slash == path ? "/" : apr_pstrndup(ptemp, path, slash - path);
    real = qc_real(ptemp, dir);
    if (!real || stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
        why = apr_psprintf(ptemp, "directory %s does not exist", dir);
    }
    else if (qc_path_is_kernel(real)) {
        why = apr_psprintf(ptemp, "its directory is %s, the kernel's "
                           "(/proc, /sys or /dev), not a place for files",
                           real);
    }
    else if (ap_state_query(AP_SQ_RUN_MODE) != AP_SQ_RM_CONFIG_TEST) {
        why = NULL;
    }
    else if (qc_safe_check(path, &unsafe, at, sizeof(at)) != 0) {
        /* The supervisor's own walk, without creating the file. */
        why = apr_psprintf(ptemp, "%s %s, so a start would go on without "
                           "the file", at, unsafe);
    }
    if (why) {
        ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_CRIT, 0, s,
                     QC_LOGNO(10007) "%s: invalid value '%s': %s",
                     directive, path, why);
        return 0;
    }
    return 1;
}

/* As QosCtlAgentListen was written. */
static const char *qc_agent_value(apr_pool_t *p, const qc_server_conf *g)
{
    const char *h = g->agent_host;

    return !h ? apr_psprintf(p, "%u", (unsigned)g->agent_port)
           : apr_psprintf(p, strchr(h, ':') ? "[%s]:%u" : "%s:%u", h,
                          (unsigned)g->agent_port);
}

/* Whether httpd's Listen lr takes the agent's port at one of its
 * addresses (sa NULL: a bare port, where the agent binds loopback; any
 * Listen on that port is taken for the mistake it almost surely is). */
static int qc_agent_clashes(const ap_listen_rec *lr, apr_port_t port,
                            apr_sockaddr_t *sa)
{
    if (!lr->bind_addr || lr->bind_addr->port != port) {
        return 0;
    }
    if (!sa || apr_sockaddr_is_wildcard(lr->bind_addr)) {
        return 1;
    }
    for (; sa; sa = sa->next) {
        if (apr_sockaddr_is_wildcard(sa)
            || apr_sockaddr_equal(sa, lr->bind_addr)) {
            return 1;
        }
    }
    return 0;
}

/* Whether one of the addresses sa binds here: an address of this
 * machine.  Port 0, so that a running httpd's own agent does not get in
 * the way of the test. */
static apr_status_t qc_agent_local(apr_pool_t *ptemp, apr_sockaddr_t *sa)
{
    apr_status_t rv = APR_EGENERAL;

    for (; sa; sa = sa->next) {
        apr_socket_t *sock;

        rv = apr_socket_create(&sock, sa->family, SOCK_STREAM,
                               APR_PROTO_TCP, ptemp);
        if (rv == APR_SUCCESS) {
            rv = apr_socket_bind(sock, sa);
            apr_socket_close(sock);
        }
        if (rv == APR_SUCCESS) {
            break;
        }
    }
    return rv;
}

/*
 * The agent's port must not be one httpd listens on, and, for
 * "apachectl -t", its address must resolve to one of this machine's.
 * Only for the test: at a start, before the network is up (DNS, an
 * address DHCP gives later), the supervisor's bind failing is a log
 * line and no agent, where a refusal here would be no server.
 */
static int qc_check_agent(apr_pool_t *ptemp, server_rec *s,
                          const qc_server_conf *g)
{
    int test = ap_state_query(AP_SQ_RUN_MODE) == AP_SQ_RM_CONFIG_TEST;
    apr_sockaddr_t *sa = NULL;
    const char *why = NULL;
    ap_listen_rec *lr;
    apr_status_t rv = APR_SUCCESS;

    if (!g->agent_port) {
        return 1;
    }
    if (g->agent_host) {
        rv = apr_sockaddr_info_get(&sa, g->agent_host, APR_UNSPEC, 0, 0,
                                   ptemp);
        if (rv != APR_SUCCESS && !test) {
            return 1;
        }
        if (rv != APR_SUCCESS) {
            why = apr_psprintf(ptemp, "cannot resolve '%s'", g->agent_host);
        }
        else if (test && (rv = qc_agent_local(ptemp, sa)) != APR_SUCCESS) {
            why = apr_psprintf(ptemp, "'%s' is not an address of this "
                               "machine", g->agent_host);
        }
    }
    for (lr = ap_listeners; lr && !why; lr = lr->next) {
        if (qc_agent_clashes(lr, g->agent_port, sa)) {
            why = apr_psprintf(ptemp, "httpd itself listens on port %u "
                               "(Listen); the agent needs a port of its "
                               "own", (unsigned)g->agent_port);
        }
    }
    if (why) {
        ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_CRIT, rv, s,
                     QC_LOGNO(10008)
                     "QosCtlAgentListen: invalid value '%s': %s",
                     qc_agent_value(ptemp, g), why);
        return 0;
    }
    return 1;
}

int qc_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                    apr_pool_t *ptemp, server_rec *s)
{
    qc_server_conf *g = qc_sconf(s);
    server_rec *v;
    int ok = 1;

    if (g->enabled != 1) {
        return OK;
    }
    for (v = s; v; v = v->next) {
        qc_server_conf *c = qc_sconf(v);

        ok &= qc_check_trees(ptemp, v, c);
        ok &= qc_check_fixed(ptemp, v, c);
    }
    ok &= qc_check_capacity(ptemp, s, g);
    ok &= qc_check_file(ptemp, s, "QosCtlLog", g->log_path);
    ok &= qc_check_file(ptemp, s, "QosCtlStateFile", g->state_path);
    ok &= qc_check_agent(ptemp, s, g);
    return ok ? OK : HTTP_INTERNAL_SERVER_ERROR;
}
