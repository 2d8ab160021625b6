/* Licensed under the Apache License, Version 2.0. */

/*
 * The agent's socket (QosCtlAgentListen).  The controller's supervisor
 * serves it, not the controller: a controller that died or hung must
 * still be answered for, with the weight of a server that fails open.
 * What to answer is qc_agent.c's; this file reads the shared segment
 * and does the I/O.  One connection at a time: HAProxy asks once per
 * agent-inter, and a reply takes microseconds.
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

#include "mod_qosctl.h"
#include "qc_agent.h"
#include "qc_heartbeat.h"

APLOG_USE_MODULE(qosctl);

/* How long HAProxy's agent-send may take to arrive after the connect. */
#define QC_AGENT_READ_MS 20
/* Connections answered per wake-up, so that a flood cannot hold the
 * supervisor from its other work. */
#define QC_AGENT_BURST 16
/* At most one log line about bad agent-send input per this many s. */
#define QC_AGENT_LOG_EVERY 60

static unsigned qc_agent_maxconn;
/* The last weight reported, and when, for the whole server ([0]) and
 * for each host asked for by name ([1 + i]); < 0: none yet. */
static double *qc_agent_last;
static apr_time_t *qc_agent_when;
static apr_time_t qc_agent_logged;
static unsigned qc_agent_unlogged;

static int qc_agent_bind(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC
                    | SOCK_NONBLOCK, ai->ai_protocol);
    int one = 1, zero = 0;

    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6) {
        /* "port" alone: IPv4 too, through mapped addresses */
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    }
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0
        || listen(fd, 64) != 0) {
        int e = errno;

        close(fd);
        errno = e;
        return -1;
    }
    return fd;
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
                               * (qc_rt.servers->nelts + 1));
    qc_agent_when = apr_pcalloc(s->process->pconf, sizeof(apr_time_t)
                                * (qc_rt.servers->nelts + 1));
    for (rv = 0; rv <= qc_rt.servers->nelts; rv++) {
        qc_agent_last[rv] = -1.0;
    }
    if (ap_mpm_query(AP_MPMQ_MAX_DAEMONS, &daemons) == APR_SUCCESS
        && ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) == APR_SUCCESS
        && daemons > 0) {
        qc_agent_maxconn = (unsigned)daemons * (threads > 0 ? threads : 1);
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    hints.ai_family = g->agent_host ? AF_UNSPEC : AF_INET6;
    apr_snprintf(port, sizeof(port), "%u", (unsigned)g->agent_port);
    rv = getaddrinfo(g->agent_host, port, &hints, &res);
    if (rv != 0 && !g->agent_host) {
        hints.ai_family = AF_INET;      /* a kernel without IPv6 */
        rv = getaddrinfo(NULL, port, &hints, &res);
    }
    if (rv != 0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "QosCtl: "
                     "QosCtlAgentListen %s:%s: %s; no agent", g->agent_host
                     ? g->agent_host : "*", port, gai_strerror(rv));
        return -1;
    }
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = qc_agent_bind(ai);
    }
    if (fd < 0) {
        ap_log_error(APLOG_MARK, APLOG_ERR, errno, s, "QosCtl: "
                     "QosCtlAgentListen %s:%s: cannot listen; no agent",
                     g->agent_host ? g->agent_host : "*", port);
    }
    else {
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, "QosCtl: HAProxy agent "
                     "on %s:%s, maxconn hint %u", g->agent_host
                     ? g->agent_host : "*", port, qc_agent_maxconn);
    }
    freeaddrinfo(res);
    return fd;
}

/* The view of every host, or of those host names (NULL: all); returns
 * the hosts found, and in *scope the first one's index + 1 (0: all). */
static int qc_agent_view(qc_agent_view_t *v, const char *host, int *scope)
{
    qc_shm_t *q = qc_rt.shm;
    int i, k, found = 0;
    int fresh = !qc_controller_stale(apr_time_now(), NULL);

    qc_agent_view_init(v, qc_bitsd(apr_atomic_read64(&q->u_measured_bits)),
                       qc_rt.main->bound, fresh, qc_agent_maxconn);
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
    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "QosCtl: agent: %s%s "
                 "(%lu bytes); answered for the whole server (%u more "
                 "since the last such line)", what, host ? host : "",
                 (unsigned long)n, qc_agent_unlogged);
    qc_agent_logged = now;
    qc_agent_unlogged = 0;
}

/* Up to the first end of line, QC_AGENT_REQUEST_MAX + 1 bytes at most,
 * waiting QC_AGENT_READ_MS for it; returns the bytes read. */
static size_t qc_agent_read(int fd, char *buf, size_t len)
{
    struct pollfd pfd;
    size_t got = 0;
    ssize_t n;

    pfd.fd = fd;
    pfd.events = POLLIN;
    while (got < len && !memchr(buf, '\n', got) && !memchr(buf, '\r', got)
           && poll(&pfd, 1, QC_AGENT_READ_MS) > 0) {
        n = recv(fd, buf + got, len - got, MSG_DONTWAIT);
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
    }
    return got;
}

static void qc_agent_answer(int fd, server_rec *s)
{
    char in[QC_AGENT_REQUEST_MAX + 2], host[QC_AGENT_REQUEST_MAX + 1];
    char out[64];
    size_t n = qc_agent_read(fd, in, sizeof(in)), len;
    qc_agent_ask_e ask = qc_agent_parse(in, n, host, sizeof(host));
    qc_agent_view_t v;
    apr_time_t now = apr_time_now();
    int scope = 0, w;

    if (ask == QC_AGENT_BAD) {
        qc_agent_complain(s, "agent-send is not a host name, or too long",
                          NULL, n);
    }
    if (ask != QC_AGENT_HOST || !qc_agent_view(&v, host, &scope)) {
        if (ask == QC_AGENT_HOST) {
            qc_agent_complain(s, "agent-send names no virtual host: ",
                              host, n);
        }
        qc_agent_view(&v, NULL, &scope);
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

void qc_agent_serve(int lfd, server_rec *s)
{
    int i, fd;

    for (i = 0; i < QC_AGENT_BURST; i++) {
        fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            return;
        }
        qc_agent_answer(fd, s);
        close(fd);
    }
}
