/* Licensed under the Apache License, Version 2.0. */

/*
 * The agent's socket (QosCtlAgentListen).  The controller's supervisor
 * serves it, not the controller: a controller that died or hung must
 * still be answered for, with the weight of a server that fails open.
 * What to answer is qc_agent.c's; this file reads the shared segment
 * and does the I/O.
 *
 * Never blocking: the supervisor also watches the controller, and a
 * client that sends a byte now and then must hold up neither that nor
 * other agent checks.  Every connection is non-blocking, is answered
 * within QC_AGENT_DEADLINE_MS of its accept whatever it sends, and at
 * most QC_AGENT_MAXCONN are open: a new one closes the oldest, once
 * that is older than any honest check takes.  (Not a
 * thread: the supervisor forks controllers, and a fork while another
 * thread holds malloc's or the log's lock hangs the child.)
 */

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "httpd.h"
#include "http_log.h"
#include "ap_mpm.h"
#include "apr_strings.h"

#include "qc_module.h"
#include "qc_agent.h"
#include "qc_heartbeat.h"

APLOG_USE_MODULE(qosctl);

/* How long HAProxy's agent-send may take to arrive after the connect,
 * or its next byte after the last: after that, the agent answers what
 * it has (nothing: the whole server). */
#define QC_AGENT_READ_MS 20
/* Whatever a client sends, its reply comes (and its connection ends)
 * this long after the accept. */
#define QC_AGENT_DEADLINE_MS 250
/* The kernel's queue of connections not yet accepted: long enough for
 * many slow clients at once, for when it overflows a check's SYN is
 * dropped and retried a second later (the kernel caps it at somaxconn). */
#define QC_AGENT_BACKLOG 1024
/* A connection this young is not closed to make room for another: an
 * agent check is answered well within it. */
#define QC_AGENT_KEEP_MS 100
/* Connections accepted per wake-up, so that a flood cannot hold the
 * supervisor from its other work. */
#define QC_AGENT_BURST 16
/* At most one log line about bad agent-send input per this many s. */
#define QC_AGENT_LOG_EVERY 60

typedef struct {
    int fd;                     /* -1: free */
    apr_uint64_t accepted;      /* qc_mono_usec() */
    apr_uint64_t last;          /* of the accept or the last byte */
    size_t got;
    char in[QC_AGENT_REQUEST_MAX + 2];
} qc_agent_conn_t;

static qc_agent_conn_t qc_agent_conns[QC_AGENT_MAXCONN];
static unsigned qc_agent_maxconn;
/* The last weight reported, and when, for the whole server ([0]), for
 * each host asked for by name ([1 + i]) and for names of no host
 * ([nelts + 1]); < 0: none yet. */
static double *qc_agent_last;
static apr_time_t *qc_agent_when;
static apr_time_t qc_agent_logged;
static unsigned qc_agent_unlogged;

static int qc_agent_bind(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC
                    | SOCK_NONBLOCK, ai->ai_protocol);
    int one = 1;

    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0
        || listen(fd, QC_AGENT_BACKLOG) != 0) {
        int e = errno;

        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static const char *qc_agent_host(void)
{
    return qc_rt.main->agent_host ? qc_rt.main->agent_host : "127.0.0.1";
}

int qc_agent_open(server_rec *s)
{
    const qc_server_conf *g = qc_rt.main;
    struct addrinfo hints, *res = NULL, *ai;
    char port[16];
    int fd = -1, rv, daemons = 0, threads = 0;

    if (!g->agent_port) {
        return -1;
    }
    qc_agent_last = apr_palloc(s->process->pconf, sizeof(double)
                               * (qc_rt.servers->nelts + 2));
    qc_agent_when = apr_pcalloc(s->process->pconf, sizeof(apr_time_t)
                                * (qc_rt.servers->nelts + 2));
    for (rv = 0; rv <= qc_rt.servers->nelts + 1; rv++) {
        qc_agent_last[rv] = -1.0;
    }
    for (rv = 0; rv < QC_AGENT_MAXCONN; rv++) {
        qc_agent_conns[rv].fd = -1;
    }
    if (ap_mpm_query(AP_MPMQ_MAX_DAEMONS, &daemons) == APR_SUCCESS
        && ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) == APR_SUCCESS
        && daemons > 0) {
        qc_agent_maxconn = (unsigned)daemons * (threads > 0 ? threads : 1);
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    hints.ai_family = AF_UNSPEC;
    apr_snprintf(port, sizeof(port), "%u", (unsigned)g->agent_port);
    /* A port alone: loopback.  The weights tell how loaded each host
     * is; a balancer elsewhere is named by address, on purpose. */
    rv = getaddrinfo(qc_agent_host(), port, &hints, &res);
    if (rv != 0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, QC_LOGNO(10010)
                     "QosCtl: QosCtlAgentListen %s:%s: %s; no agent",
                     qc_agent_host(), port, gai_strerror(rv));
        return -1;
    }
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = qc_agent_bind(ai);
    }
    if (fd < 0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, errno, s, QC_LOGNO(10011)
                     "QosCtl: QosCtlAgentListen %s:%s: cannot listen; no "
                     "agent",
                     qc_agent_host(), port);
    }
    else {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, QC_LOGNO(10012)
                     "QosCtl: HAProxy agent on %s:%s, maxconn hint %u",
                     qc_agent_host(), port, qc_agent_maxconn);
    }
    freeaddrinfo(res);
    return fd;
}

/* The view of no host, as it starts; returns whether it is fresh. */
static int qc_agent_view_none(qc_agent_view_t *v)
{
    int fresh = !qc_controller_stale(apr_time_now(), NULL);

    qc_agent_view_init(v, qc_bitsd(apr_atomic_read64(
                              &qc_rt.shm->u_measured_bits)),
                       qc_rt.main->bound, fresh, qc_agent_maxconn);
    return fresh;
}

/* The view of every host, or of those host names (NULL: all); returns
 * the hosts found, and in *scope the first one's index + 1 (0: all). */
static int qc_agent_view(qc_agent_view_t *v, const char *host, int *scope)
{
    int i, k, found = 0;
    int fresh = qc_agent_view_none(v);

    for (i = 0; i < qc_rt.servers->nelts; i++) {
        const qc_server_conf *c = APR_ARRAY_IDX(qc_rt.servers, i,
                                                qc_server_conf *);

        if (!c->slot || (host && !qc_agent_key_matches(c->key, host))) {
            continue;
        }
        if (!found++) {
            *scope = host ? i + 1 : 0;
        }
        for (k = 0; k < QC_NCLASSES; k++) {
            qc_class_shm_t *cs = &c->slot->cls[k];

            /* QosCtl LogOnly serves every class in full, whatever
             * level it would set: a balancer must not move load for
             * what is only logged. */
            if (qc_rt.main->log_only) {
                qc_agent_add_class(v, c->levels, c->levels, 1);
            }
            /* A pinned level applies whether or not traffic came. */
            else if (c->fixed_set) {
                qc_agent_add_class(v, c->fixed_level, c->levels, 1);
            }
            else if (fresh) {
                qc_agent_add_class(v, qc_level_from_fx(apr_atomic_read32(
                                       &cs->loop_fx)), c->levels,
                                   qc_bitsd(apr_atomic_read64(&cs->r_bits))
                                   > 0.0);
            }
        }
    }
    return found;
}

static void qc_agent_complain(server_rec *s, const char *what,
                              const char *host, size_t n)
{
    apr_time_t now = apr_time_now();

    if (now - qc_agent_logged < apr_time_from_sec(QC_AGENT_LOG_EVERY)) {
        qc_agent_unlogged++;
        return;
    }
    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, QC_LOGNO(10013)
                 "QosCtl: agent: %s%s (%lu bytes); answered for the whole "
                 "server (%u more since the last such line)", what,
                 host ? host : "", (unsigned long)n, qc_agent_unlogged);
    qc_agent_logged = now;
    qc_agent_unlogged = 0;
}

/*
 * Answer a connection with what it sent, n bytes of in.  A name that is
 * no host's gets what a host at full quality would get (a view with no
 * class in it), smoothed on its own: an agent check can thus neither
 * confirm nor rule out a host name, and a balancer that asks with a
 * wrong one keeps sending (the module fails open for it too).
 */
static void qc_agent_answer(int fd, const char *in, size_t n, server_rec *s)
{
    char host[QC_AGENT_REQUEST_MAX + 1], out[64];
    qc_agent_ask_e ask = qc_agent_parse(in, n, host, sizeof(host));
    qc_agent_view_t v;
    apr_time_t now = apr_time_now();
    int scope = 0, w;
    size_t len;

    if (ask == QC_AGENT_BAD) {
        qc_agent_complain(s, "agent-send is not a host name, or too long",
                          NULL, n);
    }
    if (ask != QC_AGENT_HOST) {
        qc_agent_view(&v, NULL, &scope);
    }
    else if (!qc_agent_view(&v, host, &scope)) {
        qc_agent_complain(s, "agent-send names no virtual host: ", host, n);
        qc_agent_view_none(&v);
        scope = qc_rt.servers->nelts + 1;
    }
    qc_agent_last[scope] = qc_agent_smooth(
        qc_agent_last[scope], qc_agent_weight(&v),
        (double)(now - qc_agent_when[scope]) / APR_USEC_PER_SEC,
        QC_AGENT_TAU_PERIODS * qc_rt.main->period);
    qc_agent_when[scope] = now;
    w = (int)(qc_agent_last[scope] + 0.5);
    len = qc_agent_format(&v, w, out, sizeof(out));
    if (len) {
        /* A peer that does not read loses its reply, nothing else. */
        (void)send(fd, out, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
}

static void qc_agent_close(qc_agent_conn_t *c)
{
    close(c->fd);
    c->fd = -1;
}

/* Read what c's peer sent; answer and close it once it sent a line,
 * went quiet, filled the buffer or used its time. */
static void qc_agent_step(qc_agent_conn_t *c, apr_uint64_t now,
                          server_rec *s)
{
    int done = 0, failed = 0;
    ssize_t r;

    for (;;) {
        if (c->got == sizeof(c->in) || memchr(c->in, '\n', c->got)
            || memchr(c->in, '\r', c->got)) {
            done = 1;
            break;
        }
        r = recv(c->fd, c->in + c->got, sizeof(c->in) - c->got,
                 MSG_DONTWAIT);
        if (r > 0) {
            c->got += (size_t)r;
            c->last = now;
            continue;
        }
        if (r < 0 && errno == EINTR) {
            continue;
        }
        done = r == 0;          /* the peer's end of sending */
        failed = r < 0 && errno != EAGAIN && errno != EWOULDBLOCK;
        break;
    }
    if (!done && !failed && now - c->last < QC_AGENT_READ_MS * 1000
        && now - c->accepted < QC_AGENT_DEADLINE_MS * 1000) {
        return;
    }
    if (!failed) {
        qc_agent_answer(c->fd, c->in, c->got, s);
    }
    qc_agent_close(c);
}

/* A free slot, or else the oldest connection's that is evictable at
 * now, closed unanswered; NULL: none yet.  *until (if not NULL): when
 * one will be. */
static qc_agent_conn_t *qc_agent_slot(apr_uint64_t now, int evict,
                                      apr_uint64_t *until)
{
    qc_agent_conn_t *oldest = NULL;
    int i;

    for (i = 0; i < QC_AGENT_MAXCONN; i++) {
        qc_agent_conn_t *c = &qc_agent_conns[i];

        if (c->fd < 0) {
            return c;
        }
        if (!oldest || c->accepted < oldest->accepted) {
            oldest = c;
        }
    }
    if (until) {
        *until = oldest->accepted + QC_AGENT_KEEP_MS * 1000;
    }
    if (now < oldest->accepted + QC_AGENT_KEEP_MS * 1000) {
        return NULL;
    }
    if (evict) {
        qc_agent_close(oldest);
    }
    return oldest;
}

int qc_agent_pollfds(int lfd, struct pollfd *pfd, int *timeout_ms)
{
    apr_uint64_t now = qc_mono_usec(), due;
    int i, n = 0, ms;

    if (lfd < 0) {
        return 0;
    }
    /* Accept only when a slot is there to take it, or wake up when one
     * will be: the kernel's queue holds the others meanwhile. */
    pfd[n].fd = qc_agent_slot(now, 0, &due) ? lfd : -1;
    pfd[n].events = POLLIN;
    pfd[n++].revents = 0;
    if (pfd[0].fd < 0) {
        ms = due > now ? (int)((due - now + 999) / 1000) : 0;
        *timeout_ms = ms < *timeout_ms ? ms : *timeout_ms;
    }
    for (i = 0; i < QC_AGENT_MAXCONN; i++) {
        const qc_agent_conn_t *c = &qc_agent_conns[i];

        if (c->fd < 0) {
            continue;
        }
        pfd[n].fd = c->fd;
        pfd[n].events = POLLIN;
        pfd[n++].revents = 0;
        due = c->last + QC_AGENT_READ_MS * 1000;
        if (c->accepted + QC_AGENT_DEADLINE_MS * 1000 < due) {
            due = c->accepted + QC_AGENT_DEADLINE_MS * 1000;
        }
        /* Rounded up: a wake-up before it is due would find nothing. */
        ms = due > now ? (int)((due - now + 999) / 1000) : 0;
        if (ms < *timeout_ms) {
            *timeout_ms = ms;
        }
    }
    return n;
}

void qc_agent_serve(const struct pollfd *pfd, int n, server_rec *s)
{
    apr_uint64_t now = qc_mono_usec();
    qc_agent_conn_t *c;
    int i, j = 1, fd;

    if (n <= 0) {
        return;
    }
    /* The connections that sent or ran out of time, in the order that
     * qc_agent_pollfds listed them. */
    for (i = 0; i < QC_AGENT_MAXCONN && j < n; i++) {
        c = &qc_agent_conns[i];
        if (c->fd < 0 || c->fd != pfd[j].fd) {
            continue;
        }
        if (pfd[j++].revents
            || now - c->last >= QC_AGENT_READ_MS * 1000
            || now - c->accepted >= QC_AGENT_DEADLINE_MS * 1000) {
            qc_agent_step(c, now, s);
        }
    }
    for (i = 0; i < QC_AGENT_BURST && (pfd[0].revents & POLLIN)
                && qc_agent_slot(now, 0, NULL); i++) {
        fd = accept4(pfd[0].fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            return;
        }
        c = qc_agent_slot(now, 1, NULL);
        c->fd = fd;
        c->accepted = c->last = now;
        c->got = 0;
        /* HAProxy's agent-send is usually there already. */
        qc_agent_step(c, now, s);
    }
}
