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

#define QC_TCP_LISTEN 10        /* include/net/tcp_states.h */

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

/* Bounds on one dump: a host has a few dozen listeners, not thousands. */
#define QC_BACKLOG_MAX_RECVS 64

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
            /* a listener's wqueue is its sk_max_ack_backlog */
            *limit += (long)d->idiag_wqueue;
        }
    }
    return 0;
}

/*
 * Sum of the accept queues of one family's matching listeners, and in
 * *limit the sum of their limits.
 */
static long qc_backlog_dump(qc_backlog_t *b, int family, long *limit)
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
    msg.req.idiag_states = 1u << QC_TCP_LISTEN;
    if (send(b->fd, &msg, sizeof(msg), 0) != (ssize_t)sizeof(msg)) {
        return -1;
    }
    for (n = 0; n < QC_BACKLOG_MAX_RECVS; n++) {
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

long qc_backlog_read_limit(qc_backlog_t *b, long *limit)
{
    long v4, v6, k4, k6, v, k;

    if (limit) {
        *limit = -1;
    }
    if (b->fd < 0 || b->nports == 0) {
        return -1;
    }
    v4 = qc_backlog_dump(b, AF_INET, &k4);
    v6 = qc_backlog_dump(b, AF_INET6, &k6);
    /* A kernel without IPv6 answers the second with an error. */
    if (v4 < 0) {
        v = v6;
        k = k6;
    }
    else if (v6 < 0) {
        v = v4;
        k = k4;
    }
    else {
        v = v4 + v6;
        k = k4 + k6;
    }
    if (limit && v >= 0) {
        *limit = k;
    }
    return v;
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
