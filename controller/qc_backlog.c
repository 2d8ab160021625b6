/* Licensed under the Apache License, Version 2.0. */

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "qc_backlog.h"

#ifdef __linux__
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

/* include/net/tcp_states.h */
#define QC_TCP_LISTEN 10
/* Connections that may still hold data to send: established, and
 * closed by httpd (FIN_WAIT1, CLOSING) or by the client (CLOSE_WAIT,
 * LAST_ACK) with replies not yet acknowledged. */
#define QC_TCP_SENDING ((1u << 1) | (1u << 4) | (1u << 8) | (1u << 9) \
                        | (1u << 11))

static int qc_backlog_port(const qc_backlog_t *b, unsigned short port)
{
    unsigned i;

    for (i = 0; i < b->nports; i++) {
        if (b->ports[i] == port) {
            return 1;
        }
    }
    return 0;
}

/* Bounds on one dump: a host has a few dozen listeners, not thousands;
 * its connections, up to about 90,000 (180 in each 16 KB read). */
#define QC_BACKLOG_MAX_RECVS 64
#define QC_BACKLOG_MAX_CONN_RECVS 512

int qc_backlog_parse(const qc_backlog_t *b, const void *buf, int len,
                     long *sum, long *limit)
{
    const struct nlmsghdr *h = buf;

    /* NLMSG_OK wants the int that NLMSG_NEXT leaves: negative past an
     * unaligned last message, where a size_t would read on. */
    for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
        const struct inet_diag_msg *d;

        if (h->nlmsg_seq != b->seq) {
            continue;           /* the rest of a dump that timed out */
        }
        if (h->nlmsg_type == NLMSG_DONE) {
            return 1;
        }
        if (h->nlmsg_type == NLMSG_ERROR) {
            return -1;
        }
        d = NLMSG_DATA(h);
        if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(*d))
            && qc_backlog_port(b, ntohs(d->id.idiag_sport))) {
            *sum += (long)d->idiag_rqueue;
            /* a listener's wqueue is its sk_max_ack_backlog; a
             * connection's, its bytes not yet acknowledged */
            *limit += (long)d->idiag_wqueue;
        }
    }
    return 0;
}

/*
 * One family's matching sockets in the states of mask `states`, at most
 * `recvs` reads of them: the sum of their receive queues (a listener's
 * accept queue), and in *limit the sum of their send queues (a
 * listener's limit).
 */
static long qc_backlog_dump(qc_backlog_t *b, int family, unsigned states,
                            int recvs, long *limit)
{
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 req;
    } msg;
    long buf[2048];             /* 16 KB, aligned for nlmsghdr */
    long sum = 0;
    int n;

    *limit = 0;
    memset(&msg, 0, sizeof(msg));
    msg.nlh.nlmsg_len = sizeof(msg);
    msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    msg.nlh.nlmsg_seq = ++b->seq;
    msg.req.sdiag_family = (unsigned char)family;
    msg.req.sdiag_protocol = IPPROTO_TCP;
    msg.req.idiag_states = states;
    if (send(b->fd, &msg, sizeof(msg), 0) != (ssize_t)sizeof(msg)) {
        return -1;
    }
    for (n = 0; n < recvs; n++) {
        ssize_t len = recv(b->fd, buf, sizeof(buf), 0);
        int rc;

        if (len <= 0) {
            return -1;
        }
        rc = qc_backlog_parse(b, buf, (int)len, &sum, limit);
        if (rc != 0) {
            return rc > 0 ? sum : -1;
        }
    }
    return -1;
}

int qc_backlog_init(qc_backlog_t *b, const unsigned short *ports,
                    unsigned nports)
{
    struct timeval tv = { 0, 200000 };
    unsigned short copy[QC_BACKLOG_MAX_PORTS];
    unsigned i;

    nports = nports < QC_BACKLOG_MAX_PORTS ? nports : QC_BACKLOG_MAX_PORTS;
    if (nports) {
        memcpy(copy, ports, nports * sizeof(*ports));   /* may be b->ports */
    }
    memset(b, 0, sizeof(*b));
    for (i = 0; i < nports; i++) {
        if (!qc_backlog_port(b, copy[i])) {
            b->ports[b->nports++] = copy[i];    /* v4 and v6: one port */
        }
    }
    b->fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (b->fd < 0) {
        return -1;
    }
    /* A reply that never comes must not stall the control period. */
    setsockopt(b->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return 0;
}

/* Both families' dumps (qc_backlog_dump): the receive queues' sum, the
 * send queues' in *limit; -1 when neither could be read. */
static long qc_backlog_both(qc_backlog_t *b, unsigned states, int recvs,
                            long *limit)
{
    long v4, v6, k4, k6;

    *limit = -1;
    if (b->fd < 0 || b->nports == 0) {
        return -1;
    }
    v4 = qc_backlog_dump(b, AF_INET, states, recvs, &k4);
    v6 = qc_backlog_dump(b, AF_INET6, states, recvs, &k6);
    /* A kernel without IPv6 answers the second with an error. */
    if (v4 < 0) {
        *limit = v6 < 0 ? -1 : k6;
        return v6;
    }
    if (v6 < 0) {
        *limit = k4;
        return v4;
    }
    *limit = k4 + k6;
    return v4 + v6;
}

long qc_backlog_read_limit(qc_backlog_t *b, long *limit)
{
    long k, v = qc_backlog_both(b, 1u << QC_TCP_LISTEN,
                                QC_BACKLOG_MAX_RECVS, &k);

    if (limit) {
        *limit = v >= 0 ? k : -1;
    }
    return v;
}

long qc_backlog_read_sendq(qc_backlog_t *b)
{
    long k;

    return qc_backlog_both(b, QC_TCP_SENDING, QC_BACKLOG_MAX_CONN_RECVS, &k)
           >= 0 ? k : -1;
}

#else /* !__linux__ */

int qc_backlog_init(qc_backlog_t *b, const unsigned short *ports,
                    unsigned nports)
{
    memset(b, 0, sizeof(*b));
    b->fd = -1;
    return -1;
}

long qc_backlog_read_limit(qc_backlog_t *b, long *limit)
{
    if (limit) {
        *limit = -1;
    }
    return -1;
}

long qc_backlog_read_sendq(qc_backlog_t *b)
{
    return -1;
}

#endif

long qc_backlog_read(qc_backlog_t *b)
{
    return qc_backlog_read_limit(b, NULL);
}

void qc_backlog_close(qc_backlog_t *b)
{
    if (b->fd >= 0) {
        close(b->fd);
        b->fd = -1;
    }
}
