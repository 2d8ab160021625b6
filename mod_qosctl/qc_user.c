/* Licensed under the Apache License, Version 2.0. */

/*
 * QosCtlUser: the user the supervisor and the controller run as once
 * they have opened what needs root.  By default httpd's User; a user of
 * their own keeps a tenant's CGI or mod_php, which run as httpd's User,
 * from stopping them with a signal (doc/operating.md, "QosCtlUser").
 */

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "mpm_common.h"
#include "apr_strings.h"

#include "qc_module.h"

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
