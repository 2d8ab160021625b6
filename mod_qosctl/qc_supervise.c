/* Licensed under the Apache License, Version 2.0. */

/*
 * The controller process's life, after mod_cgid's daemon: forked from
 * the httpd parent in post_config (not in the pre-config pass of start-
 * up), registered as an "other child" so that the MPM tells us when it
 * dies and we start another unless httpd is stopping, and noted as a
 * subprocess of pconf so that a restart or stop kills it; a graceful
 * restart thus starts a fresh controller with the new configuration.
 * The child closes the listeners, drops to User/Group, and exits when
 * it is told to or when its parent is gone.
 *
 * That child only supervises: it forks the controller proper and starts
 * another the moment waitpid() says it died, because the MPM looks at
 * its other children once a second, too slowly for a 0.25 s period.
 * It also replaces a controller that lives but has stopped beating (a
 * SIGSTOP, a read that never returns), which would otherwise leave the
 * request path failing open for good.  While no controller runs, the
 * request path fails open on its own.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "ap_listen.h"
#include "ap_mpm.h"
#include "mpm_common.h"
#include "apr_strings.h"

#include "qc_module.h"
#include "qc_controller.h"
#include "qc_heartbeat.h"
#include "qc_safe_open.h"
#include "qc_watch.h"

APLOG_USE_MODULE(qosctl);

/*
 * The controller's nice value: an overloaded server is when it must run
 * on time, and it needs about a millisecond a period.
 */
#define QC_CTL_NICE -10

/* How often the supervisor looks at the heartbeat, in ms. */
#define QC_WATCH_TICK_MS 500

static apr_pool_t *qc_sup_pool;         /* pconf of this generation */
static int qc_agent_fd = -1;            /* QosCtlAgentListen's socket */
static server_rec *qc_sup_server;
static volatile sig_atomic_t qc_ctl_stop;

static void qc_ctl_on_signal(int sig)
{
    qc_ctl_stop = 1;
}

/* Open as root, before privileges go, so User need not own the paths;
 * only where no other user can redirect root (qc_safe_open.h). */
static int qc_open(server_rec *s, const char *path, int flags,
                   const char *what)
{
    const char *why;
    char at[PATH_MAX];
    int fd;

    if (!path) {
        return -1;
    }
    fd = qc_safe_open(path, flags, 0644, &why, at, sizeof(at));
    if (fd < 0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, errno, s, QC_LOGNO(10030)
                     "QosCtl: %s %s: %s %s; not opened as root, going "
                     "on without it",
                     what, path, at, why);
    }
    return fd;
}

static void qc_add_sensors(server_rec *s, const qc_server_conf *g,
                           qc_ctl_config_t *cfg)
{
    int i;

    for (i = 0; i < g->resources->nelts && i < QC_CTL_MAX_SENSORS; i++) {
        const qc_resource_t *r = &APR_ARRAY_IDX(g->resources, i,
                                                qc_resource_t);
        qc_sensor_t *sn = &cfg->sensors[cfg->nsensors];
        int rc;

        switch (r->kind) {
        case QC_RESOURCE_CPU:
            rc = qc_sensor_cpu_init(sn, "/proc/stat", r->cpus);
            break;
        case QC_RESOURCE_CGROUP:
            rc = qc_sensor_cgroup_init(sn, r->path,
                                       "/sys/devices/system/cpu/online");
            break;
        default:
            rc = qc_sensor_link_init(sn, "/sys/class/net", r->ifname,
                                     r->bits_per_s);
            break;
        }
        if (rc == 0) {
            cfg->nsensors++;
        }
        else {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, QC_LOGNO(10031)
                         "QosCtlResource %s: cannot measure it; left out",
                         r->arg ? r->arg : "cpu");
        }
    }
    if (g->resources->nelts == 0) {
        /* No QosCtlResource: every CPU of the machine, for the work may
         * run outside httpd (CGI, PHP-FPM) and on other CPUs. */
        qc_sensor_cpu_init(&cfg->sensors[0], "/proc/stat", NULL);
        cfg->nsensors = 1;
    }
}

/* The TCP ports httpd listens on, for the controller's qc_backlog_t
 * (qc_backlog_init, in the controller itself, drops repeats). */
static void qc_add_listeners(qc_ctl_config_t *cfg)
{
    qc_backlog_t *b = &cfg->backlog;
    ap_listen_rec *lr;

    b->fd = -1;
    for (lr = ap_listeners; lr && b->nports < QC_BACKLOG_MAX_PORTS;
         lr = lr->next) {
        b->ports[b->nports++] = (unsigned short)lr->bind_addr->port;
    }
}

static qc_ctl_config_t *qc_ctl_config(apr_pool_t *p, server_rec *s)
{
    const qc_server_conf *g = qc_rt.main;
    qc_ctl_config_t *cfg = apr_pcalloc(p, sizeof(*cfg));
    int i;

    cfg->bound = g->bound;
    cfg->period = g->period;
    cfg->gain_margin = g->gain_margin;
    cfg->drop_tolerance = g->drop_tolerance;
    cfg->a0 = g->model_a;
    cfg->b0 = g->model_b;
    cfg->c0 = g->model_c;
    cfg->log_only = g->log_only;
    cfg->shm = qc_rt.shm;
    cfg->nvs = qc_rt.servers->nelts;
    cfg->vs = apr_pcalloc(p, sizeof(qc_ctl_vs_t) * (cfg->nvs + 1));
    for (i = 0; i < qc_rt.servers->nelts; i++) {
        const qc_server_conf *c = APR_ARRAY_IDX(qc_rt.servers, i,
                                                qc_server_conf *);
        qc_ctl_vs_t *vs = &cfg->vs[i];

        vs->name = c->key;
        vs->slot = c->slot;
        vs->levels = c->levels;
        vs->guaranteed = c->guaranteed;
        vs->rmax = c->rmax;
        vs->wmax = c->wmax;
        vs->fixed = c->fixed_set;
        vs->fixed_level = c->fixed_level;
    }
    qc_add_sensors(s, g, cfg);
    qc_add_listeners(cfg);
    return cfg;
}

static void qc_ctl_signals(void)
{
    struct sigaction sa;
    sigset_t none;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = qc_ctl_on_signal;       /* no SA_RESTART: wake up */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGPIPE, &sa, NULL);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &sa, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The controller proper; never returns. */
static void qc_ctl_worker(apr_pool_t *p, server_rec *s,
                          qc_ctl_config_t *cfg, pid_t supervisor)
{
    qc_ctl_t ctl;

    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != supervisor) {
        _exit(0);
    }
    if (qc_agent_fd >= 0) {
        close(qc_agent_fd);     /* the supervisor's */
    }
    qc_ctl_init(&ctl, cfg, p);
    if (qc_backlog_init(&cfg->backlog, cfg->backlog.ports,
                        cfg->backlog.nports) != 0) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, errno, s, QC_LOGNO(10032)
                     "QosCtl: cannot read the accept queues (sock_diag); "
                     "arrivals still waiting for httpd go uncounted");
    }
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, QC_LOGNO(10033)
                 "QosCtl: controller %ld started, period %d ms, %u "
                 "virtual servers, %u sensors",
                 (long)getpid(), (int)(cfg->period * 1000), cfg->nvs,
                 cfg->nsensors);
    qc_ctl_run(&ctl, &qc_ctl_stop, supervisor);
    _exit(0);
}

static double qc_mono_now(void)
{
    return qc_mono_usec() / 1e6;
}

/*
 * Wait up to tick for one of the blocked signals in set, and return it
 * (0 for none).  With an agent, wait on its sockets too, through a
 * signalfd sfd, and serve HAProxy while the controller works or hangs;
 * that never blocks (qc_agent_io.c), so neither the watch on the
 * controller nor httpd's parent's watch on us waits for a client.
 */
static int qc_wait_event(const sigset_t *set, int sfd,
                         const struct timespec *tick)
{
    struct pollfd pfd[1 + QC_AGENT_POLLFDS];
    struct signalfd_siginfo si;
    int timeout = (int)(tick->tv_sec * 1000 + tick->tv_nsec / 1000000);
    int n;

    if (sfd < 0) {
        return sigtimedwait(set, NULL, tick);
    }
    pfd[0].fd = sfd;
    pfd[0].events = POLLIN;
    pfd[0].revents = 0;
    n = qc_agent_pollfds(qc_agent_fd, pfd + 1, &timeout);
    if (poll(pfd, 1 + n, timeout) < 0) {
        return 0;
    }
    qc_agent_serve(pfd + 1, n, qc_sup_server);
    if ((pfd[0].revents & POLLIN)
        && read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        return (int)si.ssi_signo;
    }
    return 0;
}

/*
 * Wait for the controller pid to end; return its status.  Tell it to go
 * when we are told to; SIGKILL it when its heartbeat has stood still for
 * hung_after seconds, and then say in *hung for how long.  The signals
 * are blocked and taken by sigtimedwait(), so that neither a death nor a
 * stop slips in between a look and the wait.
 */
static int qc_ctl_wait(pid_t pid, qc_shm_t *q, double hung_after,
                       double *hung)
{
    struct timespec tick = { 0, QC_WATCH_TICK_MS * 1000000L };
    apr_uint64_t beat = apr_atomic_read64(&q->heartbeat);
    double moved = qc_mono_now(), looked = moved;
    int status = 0, told = 0, killed = 0, sfd;
    sigset_t set, old;

    *hung = 0.0;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &old);
    sfd = qc_agent_fd >= 0 ? signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)
                           : -1;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        apr_uint64_t now_beat;
        double now;
        int sig;

        qc_supervisor_beat(q);
        if (w == pid || (w < 0 && errno != EINTR)) {
            break;
        }
        if (qc_ctl_stop && !told) {
            /* SIGCONT: a stopped controller would not act on it. */
            kill(pid, SIGTERM);
            kill(pid, SIGCONT);
            told = 1;
        }
        else if (!qc_ctl_stop && !killed) {
            now_beat = apr_atomic_read64(&q->heartbeat);
            now = qc_mono_now();
            /* A gap in our own looks (suspend, the whole group stopped)
             * held the controller too: count afresh. */
            if (now_beat != beat
                || now - looked > 5 * QC_WATCH_TICK_MS / 1000.0) {
                beat = now_beat;
                moved = now;
            }
            else if (now - moved >= hung_after) {
                kill(pid, SIGKILL);
                killed = 1;
                *hung = now - moved;
            }
            looked = now;
        }
        sig = qc_wait_event(&set, sfd, &tick);
        if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
            qc_ctl_stop = 1;
        }
    }
    if (sfd >= 0) {
        close(sfd);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    return status;
}

/* The supervisor: restarts the controller at once; never returns. */
static void qc_supervisor_main(apr_pool_t *p, server_rec *s, pid_t parent)
{
    qc_ctl_config_t *cfg;
    pid_t self = getpid();
    double hung_after;

    /* Its own process group, with the controller: httpd's parent ends
     * both by the pid it started (qc_watch.c). */
    setpgid(0, 0);
    qc_supervisor_beat(qc_rt.shm);
    qc_ctl_signals();
    cfg = qc_ctl_config(p, s);     /* before: it notes their ports */
    hung_after = qc_hung_after(cfg->period);
    ap_close_listeners();
    cfg->log_fd = qc_open(s, qc_rt.main->log_path, O_WRONLY | O_APPEND,
                          "QosCtlLog");
    cfg->state_fd = qc_open(s, qc_rt.main->state_path, O_RDWR,
                            "QosCtlStateFile");
    /* As root: RAPL's counters are readable by root only. */
    qc_power_init(&cfg->power, "/sys/class/powercap", "/proc/stat",
                  qc_rt.main->power_idle, qc_rt.main->power_max);
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, QC_LOGNO(10034)
                 "QosCtl: power estimate %s",
                 cfg->power.source == QC_POWER_RAPL ? "from RAPL"
                 : cfg->power.source == QC_POWER_MODEL
                 ? "from QosCtlPowerModel" : "none (no RAPL, no "
                 "QosCtlPowerModel)");
    /* As root: the admin may name a port below 1024. */
    qc_agent_fd = qc_agent_open(s);
    qc_supervisor_beat(qc_rt.shm);
    /* Only root may raise a priority; the controller inherits it. */
    if (setpriority(PRIO_PROCESS, 0, QC_CTL_NICE) != 0) {
        ap_log_error(APLOG_MARK, APLOG_INFO, errno, s, QC_LOGNO(10035)
                     "QosCtl: controller runs at the server's priority");
    }
    if (qc_drop_privileges(p, s) != 0) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, QC_LOGNO(10036)
                     "QosCtl: controller could not drop privileges");
        _exit(1);
    }
    /* After the setuid: a change of credentials clears the setting. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) {
        _exit(0);
    }
    while (!qc_ctl_stop && getppid() == parent) {
        apr_time_t born = apr_time_now();
        pid_t pid = fork();
        double hung;
        int status;

        if (pid == 0) {
            qc_ctl_worker(p, s, cfg, self);
        }
        if (pid < 0) {
            apr_sleep(apr_time_from_sec(1));
            qc_supervisor_beat(cfg->shm);
            continue;
        }
        status = qc_ctl_wait(pid, cfg->shm, hung_after, &hung);
        if (qc_ctl_stop) {
            break;
        }
        if (hung > 0.0) {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, QC_LOGNO(10037)
                         "QosCtl: controller pid %ld hung for %.1f s; "
                         "replaced", (long)pid, hung);
        }
        else {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, QC_LOGNO(10038)
                         "QosCtl: controller %ld ended (status %d); "
                         "starting another", (long)pid, status);
        }
        if (apr_time_now() - born < apr_time_from_sec(1)) {
            /* Dying at once again and again: do not spin. */
            apr_sleep(apr_time_from_msec(200));
        }
    }
    _exit(0);
}

static apr_status_t qc_ctl_start(apr_pool_t *p, server_rec *s,
                                 apr_proc_t *proc);

/* httpd's other-child callback: the controller died, or httpd restarts
 * or stops. */
static void qc_supervisor_event(int reason, void *data,
                                apr_wait_t status)
{
    apr_proc_t *proc = data;
    int mpm_state;

    switch (reason) {
    case APR_OC_REASON_DEATH:
        apr_proc_other_child_unregister(data);
        qc_watch_ended();
        if (ap_mpm_query(AP_MPMQ_MPM_STATE, &mpm_state) == APR_SUCCESS
            && mpm_state != AP_MPMQ_STOPPING) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, qc_sup_server,
                         QC_LOGNO(10039)
                         "QosCtl: controller %ld died (status %d); "
                         "starting another", (long)proc->pid, status);
            qc_ctl_start(qc_sup_pool, qc_sup_server, proc);
        }
        break;
    case APR_OC_REASON_LOST:
        apr_proc_other_child_unregister(data);
        qc_watch_ended();
        qc_ctl_start(qc_sup_pool, qc_sup_server, proc);
        break;
    case APR_OC_REASON_RESTART:
        /* httpd restarts or stops: pconf's cleanup ends the child */
        apr_proc_other_child_unregister(data);
        break;
    case APR_OC_REASON_UNREGISTER:
        kill(proc->pid, SIGTERM);
        break;
    }
}

static apr_status_t qc_ctl_start(apr_pool_t *p, server_rec *s,
                                 apr_proc_t *proc)
{
    pid_t parent = getpid();
    pid_t pid;

    /* Before the fork: the child's first beat must count. */
    qc_watch_started(0);
    pid = fork();

    if (pid < 0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, errno, s, QC_LOGNO(10040)
                     "QosCtl: cannot fork the controller; the request path "
                     "fails open until it can");
        return errno;
    }
    if (pid == 0) {
        qc_supervisor_main(p, s, parent);
    }
    proc->pid = pid;
    proc->in = proc->out = proc->err = NULL;
    qc_watch_started(pid);
    apr_pool_note_subprocess(p, proc, APR_KILL_AFTER_TIMEOUT);
    apr_proc_other_child_register(proc, qc_supervisor_event, proc, NULL, p);
    return APR_SUCCESS;
}

int qc_supervise(apr_pool_t *pconf, server_rec *s)
{
    /* The first pass of start-up only checks the configuration. */
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG) {
        return OK;
    }
    qc_sup_pool = pconf;
    qc_sup_server = s;
    /* Registered before the subprocess is noted, so it runs first. */
    apr_pool_cleanup_register(pconf, NULL, qc_watch_cleanup,
                              apr_pool_cleanup_null);
    /* A failed fork is logged there; serve anyway: the request path
     * fails open while no controller runs. */
    qc_ctl_start(pconf, s, apr_pcalloc(pconf, sizeof(apr_proc_t)));
    return OK;
}
