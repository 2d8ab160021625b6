/* Licensed under the Apache License, Version 2.0. */

/*
 * httpd's parent watching the supervisor (qc_watch.c).  The supervisor
 * watches the controller; nothing watched the supervisor, and httpd
 * does not notice a child that is stopped rather than dead.
 */

#ifndef QC_WATCH_H
#define QC_WATCH_H

#include <sys/types.h>

#include "httpd.h"

/* A supervisor is about to start (pid 0), was started as pid (from
 * qc_supervise.c), or has ended. */
void qc_watch_started(pid_t pid);
void qc_watch_ended(void);

/* pconf's cleanup: end the supervisor and its controller, even when
 * stopped (a stopped process acts on no SIGTERM until continued). */
apr_status_t qc_watch_cleanup(void *unused);

/* httpd's monitor hook (the parent, every ten maintenance seconds). */
int qc_monitor(apr_pool_t *p, server_rec *s);

/* The status page's word on the last restart by httpd's parent: a JSON
 * member (json) or an HTML paragraph; nothing when there was none. */
void qc_watch_status(request_rec *r, int json);

#endif /* QC_WATCH_H */
