/* Licensed under the Apache License, Version 2.0. */

/*
 * QosCtlUser: the user the supervisor and the controller run as once
 * they have opened what needs root.  A user of their own keeps a
 * tenant's CGI or mod_php, which run as httpd's User, from stopping
 * them with a signal (doc/operating.md, "QosCtlUser").  Without the
 * directive: the system user qosctl where it exists (the Debian package
 * creates it), else httpd's User, and "apachectl -t" warns.
 */

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "mpm_common.h"
#include "unixd.h"
#include "apr_strings.h"

#include "qc_logno.h"
#include "qc_module.h"

APLOG_USE_MODULE(qosctl);


/* The user the Debian package creates for the controller. */
#define QC_DEFAULT_USER "qosctl"

const char *qc_cmd_user(cmd_parms *cmd, void *dummy, const char *arg)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    qc_server_conf *g = qc_sconf(cmd->server);
    struct passwd *pw;

    if (err) {
        return err;
    }
    errno = 0;
    pw = getpwnam(arg);
    if (!pw) {
        return qc_bad(cmd, arg, "no such user");
    }
    if (pw->pw_uid == 0) {
        return qc_bad(cmd, arg, "the controller must not run as root");
    }
    g->ctl_user = apr_pstrdup(cmd->pool, pw->pw_name);
    g->ctl_uid = pw->pw_uid;
    g->ctl_gid = pw->pw_gid;
    return NULL;
}

/*
 * check_config, so on every start and every "apachectl -t": settles the
 * default user before the supervisor starts, and warns where the
 * controller would run as httpd's User, whose scripts can stop it.
 * A warning, not a refusal: such a server still runs, controlled, and
 * httpd's parent replaces a stopped supervisor (qc_watch.c).
 */
int qc_check_user(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                  server_rec *s)
{
    qc_server_conf *g = qc_sconf(s);
    struct passwd *pw;

    if (g->enabled != 1 || geteuid() != 0) {
        return OK;
    }
    if (!g->ctl_user && (pw = getpwnam(QC_DEFAULT_USER)) != NULL
        && pw->pw_uid != 0) {
        g->ctl_user = apr_pstrdup(pconf, pw->pw_name);
        g->ctl_uid = pw->pw_uid;
        g->ctl_gid = pw->pw_gid;
    }
    if (!g->ctl_user) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     QC_LOGNO(10090) "QosCtl: the controller runs as "
                     "httpd's User %s, so any script running as %s can "
                     "stop it with a signal: no QosCtlUser and no user "
                     QC_DEFAULT_USER " (adduser --system --group "
                     QC_DEFAULT_USER ")",
                     ap_unixd_config.user_name,
                     ap_unixd_config.user_name);
    }
    else if (g->ctl_uid == ap_unixd_config.user_id) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
                     QC_LOGNO(10091) "QosCtl: QosCtlUser %s is httpd's "
                     "User, so any script running as %s can stop the "
                     "controller with a signal: name a user of its own",
                     g->ctl_user, ap_unixd_config.user_name);
    }
    return OK;
}

/* As httpd's children do (mod_unixd): nothing to drop unless root. */
int qc_drop_privileges(apr_pool_t *p, server_rec *s)
{
    const qc_server_conf *g = qc_rt.main;

    if (!g->ctl_user) {
        return ap_run_drop_privileges(p, s);
    }
    if (geteuid() != 0) {
        return 0;
    }
    if (setgid(g->ctl_gid) != 0
        || initgroups(g->ctl_user, g->ctl_gid) != 0
        || setuid(g->ctl_uid) != 0 || getuid() != g->ctl_uid) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, errno, s, QC_LOGNO(10048)
                     "QosCtl: could not become QosCtlUser %s",
                     g->ctl_user);
        return -1;
    }
    return 0;
}
