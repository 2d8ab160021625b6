/* Licensed under the Apache License, Version 2.0. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/pkt_sched.h>

#include "qc_linkrate.h"

/* A dump of every qdisc of the namespace: a few messages each. */
#define QC_LINKRATE_MAX_RECVS 64

/* The rate in a tbf's options (TCA_OPTIONS, alen bytes at a), or -1. */
static double qc_linkrate_tbf(const struct rtattr *a, int alen)
{
    double rate = -1.0;

    for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
        if (a->rta_type == TCA_TBF_RATE64
            && RTA_PAYLOAD(a) >= sizeof(unsigned long long)) {
            unsigned long long r;

            memcpy(&r, RTA_DATA(a), sizeof(r));
            return 8.0 * (double)r;     /* exact past 4 GB/s */
        }
        if (a->rta_type == TCA_TBF_PARMS
            && RTA_PAYLOAD(a) >= sizeof(struct tc_tbf_qopt)) {
            struct tc_tbf_qopt q;

            memcpy(&q, RTA_DATA(a), sizeof(q));
            rate = 8.0 * (double)q.rate.rate;
        }
    }
    return rate > 0.0 ? rate : -1.0;
}

/* The rate of one qdisc message's root tbf (attributes alen bytes at
 * a), or -1. */
static double qc_linkrate_qdisc(const struct rtattr *a, int alen)
{
    const struct rtattr *opts = NULL;
    int tbf = 0;

    for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
        if (a->rta_type == TCA_KIND) {
            tbf = RTA_PAYLOAD(a) >= 4
                  && memcmp(RTA_DATA(a), "tbf", 4) == 0;
        }
        else if (a->rta_type == TCA_OPTIONS) {
            opts = a;
        }
    }
    if (!tbf || !opts) {
        return -1.0;
    }
    return qc_linkrate_tbf(RTA_DATA(opts), (int)RTA_PAYLOAD(opts));
}

int qc_linkrate_parse(const void *buf, int len, unsigned seq, int ifindex,
                      double *bits)
{
    const struct nlmsghdr *h = buf;

    /* NLMSG_OK wants the int NLMSG_NEXT leaves (qc_backlog_parse). */
    for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
        const struct tcmsg *t;
        double rate;

        if (h->nlmsg_seq != seq) {
            continue;
        }
        if (h->nlmsg_type == NLMSG_DONE) {
            return 1;
        }
        if (h->nlmsg_type == NLMSG_ERROR) {
            return -1;
        }
        if (h->nlmsg_type != RTM_NEWQDISC
            || h->nlmsg_len < NLMSG_SPACE(sizeof(*t))) {
            continue;
        }
        t = NLMSG_DATA(h);
        if (t->tcm_ifindex != ifindex || t->tcm_parent != TC_H_ROOT) {
            continue;
        }
        rate = qc_linkrate_qdisc(
            (const struct rtattr *)((const char *)t
                                    + NLMSG_ALIGN(sizeof(*t))),
            (int)(h->nlmsg_len - NLMSG_SPACE(sizeof(*t))));
        if (rate > 0.0) {
            *bits = rate;
        }
    }
    return 0;
}

double qc_linkrate_shaper(int ifindex)
{
    static unsigned seq;
    struct {
        struct nlmsghdr nlh;
        struct tcmsg tc;
    } msg;
    struct timeval tv = { 0, 200000 };
    long buf[2048];             /* 16 KB, aligned for nlmsghdr */
    double bits = -1.0;
    int fd, n, rc = -1;

    fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) {
        return -1.0;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    memset(&msg, 0, sizeof(msg));
    msg.nlh.nlmsg_len = sizeof(msg);
    msg.nlh.nlmsg_type = RTM_GETQDISC;
    msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    msg.nlh.nlmsg_seq = ++seq;
    msg.tc.tcm_family = AF_UNSPEC;
    msg.tc.tcm_ifindex = ifindex;
    if (send(fd, &msg, sizeof(msg), 0) == (ssize_t)sizeof(msg)) {
        for (n = 0; n < QC_LINKRATE_MAX_RECVS; n++) {
            ssize_t len = recv(fd, buf, sizeof(buf), 0);

            if (len <= 0) {
                rc = -1;
                break;
            }
            rc = qc_linkrate_parse(buf, (int)len, seq, ifindex, &bits);
            if (rc != 0) {
                break;
            }
        }
    }
    close(fd);
    return rc > 0 ? bits : -1.0;
}

double qc_linkrate_speed(const char *path)
{
    char buf[32];
    char *end;
    long mbit;
    FILE *f = fopen(path, "r");

    if (!f) {
        return -1.0;
    }
    /* A link that is down answers EINVAL on read. */
    if (!fgets(buf, sizeof(buf), f)) {
        fclose(f);
        return -1.0;
    }
    fclose(f);
    mbit = strtol(buf, &end, 10);
    return end != buf && mbit > 0 ? 1e6 * (double)mbit : -1.0;
}
