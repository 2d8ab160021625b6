/* Licensed under the Apache License, Version 2.0. */

/*
 * httpd's parent restarts a supervisor that stopped beating.  Anyone
 * running as User can SIGSTOP both the supervisor and the controller:
 * the request path then fails open for as long as they like, and the
 * supervisor's own watch on the controller is stopped too.  The parent
 * (root, which User cannot stop) looks through the monitor hook, in
 * the MPM's maintenance loop, and SIGKILLs the supervisor's process
 * group, by the pid it started (never one read from the shared
 * segment, which User can write); the MPM then reaps the supervisor
 * and qc_supervise.c starts another, as after any death.
 */

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "httpd.h"
#include "http_log.h"
#include "http_protocol.h"
#include "apr_strings.h"

#include "qc_module.h"
#include "qc_heartbeat.h"
#include "qc_watch.h"

APLOG_USE_MODULE(qosctl);

/* The supervisor beats every half second; this much silence is not an
 * overloaded machine (it runs at nice -10) but a stopped process. */
#define QC_SUPERVISOR_SILENT_SEC 5
/* From its start until its first beat (it beats at once, but a loaded
 * machine may be slow to run a new process). */
#define QC_SUPERVISOR_START_SEC 15
/* A controller silent this long past QC_HUNG_MIN_SEC should have been
 * replaced by a supervisor that beats: that supervisor is not working. */
#define QC_CONTROLLER_EXTRA_SEC 10
/* A gap this long between two of our own looks (the whole server was
 * stopped or suspended): count afresh rather than blame the child. */
#define QC_WATCH_GAP_SEC 30

double qc_hung_min_sec = QC_HUNG_MIN_SEC;
static double qc_watch_extra_sec = QC_CONTROLLER_EXTRA_SEC;

/*
 * The tests shorten QC_HUNG_MIN_SEC and QC_CONTROLLER_EXTRA_SEC, so as
 * to wait seconds rather than half a minute, through the environment
 * of httpd's parent (root's: no User's script sets it), read as each
 * supervisor starts: QOSCTL_TEST_HUNG_MIN_SEC,
 * QOSCTL_TEST_CONTROLLER_EXTRA_SEC.  Never longer than the defaults.
 */
static double qc_watch_test_sec(const char *name, double dflt)
{
    const char *v = getenv(name);
    char *end;
    double d;

    if (!v) {
        return dflt;
    }
    d = strtod(v, &end);
    return end != v && !*end && d >= 1.0 && d < dflt ? d : dflt;
}

static pid_t qc_watch_pid;              /* 0: none running */
static apr_uint64_t qc_watch_born;      /* qc_mono_usec() of its start */
/* Silence before this counts for nothing: our own looks had a gap, or
 * we just killed one (qc_mono_usec()). */
static apr_uint64_t qc_watch_grace;
static apr_uint64_t qc_watch_looked;

static const char *const qc_watch_reasons[] = {
    "", "its supervisor stood still (stopped or hung)",
    "the controller stood still and its supervisor did not replace it"
};

void qc_watch_started(pid_t pid)
{
    qc_watch_pid = pid;
    if (!pid) {
        qc_hung_min_sec = qc_watch_test_sec("QOSCTL_TEST_HUNG_MIN_SEC",
                                            QC_HUNG_MIN_SEC);
        qc_watch_extra_sec = qc_watch_test_sec(
            "QOSCTL_TEST_CONTROLLER_EXTRA_SEC", QC_CONTROLLER_EXTRA_SEC);
        qc_watch_born = qc_watch_grace = qc_mono_usec();
    }
}

void qc_watch_ended(void)
{
    qc_watch_pid = 0;
}

apr_status_t qc_watch_cleanup(void *unused)
{
    if (qc_watch_pid > 0) {
        kill(-qc_watch_pid, SIGTERM);
        kill(-qc_watch_pid, SIGCONT);
    }
    return APR_SUCCESS;
}

/* Why the supervisor must go (QC_RESTART_*), 0 if it need not; *silent:
 * for how long it, or the controller, has been still, in µs. */
static unsigned qc_watch_reason(apr_uint64_t now, apr_uint64_t *silent)
{
    apr_uint64_t beat = apr_atomic_read64(&qc_rt.shm->supervisor_beat);
    apr_uint64_t from = beat > qc_watch_grace ? beat : qc_watch_grace;
    apr_interval_time_t quiet;
    double ctl_limit = qc_hung_after(qc_rt.main->period)
                       + qc_watch_extra_sec;

    *silent = now > from ? now - from : 0;
    if (*silent > apr_time_from_sec(beat < qc_watch_born
                                    ? QC_SUPERVISOR_START_SEC
                                    : QC_SUPERVISOR_SILENT_SEC)) {
        return QC_RESTART_SUPERVISOR_SILENT;
    }
    qc_controller_stale(apr_time_now(), &quiet);
    *silent = quiet > 0 ? (apr_uint64_t)quiet : 0;
    return *silent > ctl_limit * APR_USEC_PER_SEC
           && now - qc_watch_grace > ctl_limit * APR_USEC_PER_SEC
           ? QC_RESTART_CONTROLLER_SILENT : 0;
}

int qc_monitor(apr_pool_t *p, server_rec *s)
{
    apr_uint64_t now = qc_mono_usec(), last = qc_watch_looked, silent;
    qc_shm_t *q = qc_rt.shm;
    unsigned reason;

    qc_watch_looked = now;
    if (!q || qc_watch_pid <= 0) {
        return DECLINED;
    }
    if (last && now - last > apr_time_from_sec(QC_WATCH_GAP_SEC)) {
        qc_watch_grace = now;
        return DECLINED;
    }
    reason = qc_watch_reason(now, &silent);
    ap_log_error(APLOG_MARK, APLOG_TRACE2, 0, s, QC_LOGNO(10045)
                 "QosCtl: supervisor %ld looked at: still for %.1f s, "
                 "reason %u",
                 (long)qc_watch_pid, silent / 1e6, reason);
    if (!reason) {
        return DECLINED;
    }
    /* SIGKILL ends a stopped process too; the group holds the
     * controller (qc_supervise.c puts them in one). */
    kill(-qc_watch_pid, SIGKILL);
    kill(qc_watch_pid, SIGKILL);
    apr_atomic_set64(&q->parent_restart_silence_ms, silent / 1000);
    apr_atomic_set32(&q->parent_restart_reason, reason);
    apr_atomic_inc32(&q->parent_restarts);
    apr_atomic_set64(&q->parent_restart_time, apr_time_now());
    ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, QC_LOGNO(10046)
                 "QosCtl: supervisor %ld killed by httpd's parent: %s for "
                 "%.1f s; starting another, the request path fails open "
                 "meanwhile",
                 (long)qc_watch_pid, qc_watch_reasons[reason],
                 silent / 1e6);
    /* Not again before the MPM reaped it and started another. */
    qc_watch_grace = now;
    return OK;
}

void qc_watch_status(request_rec *r, int json)
{
    qc_shm_t *q = qc_rt.shm;
    apr_time_t at = (apr_time_t)apr_atomic_read64(&q->parent_restart_time);
    unsigned reason = apr_atomic_read32(&q->parent_restart_reason);
    char stamp[APR_RFC822_DATE_LEN];
    double silence;

    if (!at || reason >= sizeof(qc_watch_reasons)
                         / sizeof(qc_watch_reasons[0])) {
        return;
    }
    silence = apr_atomic_read64(&q->parent_restart_silence_ms) / 1e3;
    apr_rfc822_date(stamp, at);
    if (json) {
        ap_rprintf(r, ",\"restarted_by_parent\":{\"at\":\"%s\","
                   "\"count\":%u,\"reason\":\"%s\",\"silence_seconds\":"
                   "%.1f}", stamp, apr_atomic_read32(&q->parent_restarts),
                   qc_watch_reasons[reason], silence);
    }
    else {
        ap_rprintf(r, "<p>Controller restarted by httpd's parent at %s "
                   "(%u times): %s for %.1f s.</p>\n", stamp,
                   apr_atomic_read32(&q->parent_restarts),
                   qc_watch_reasons[reason], silence);
    }
}
