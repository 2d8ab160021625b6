/* Licensed under the Apache License, Version 2.0. */

#include <stddef.h>
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

#define QC_LINKRATE_OTHER 0
#define QC_LINKRATE_TBF 1
#define QC_LINKRATE_HTB 2

/* A 64-bit rate attribute in bytes/s, as bits/s (exact past 4 GB/s). */
static double qc_linkrate_rate64(const struct rtattr *a)
{
    unsigned long long r;

    memcpy(&r, RTA_DATA(a), sizeof(r));
    return 8.0 * (double)r;
}

/* The rate in a shaper's options (alen bytes at a), or -1: the 64-bit
 * attribute t64 where the kernel gives one (past 4 GB/s), else the
 * tc_ratespec at offset `spec` in the parameters attribute tparms of
 * `size` bytes (struct tc_tbf_qopt, struct tc_htb_opt). */
static double qc_linkrate_opt(const struct rtattr *a, int alen,
                              unsigned short t64, unsigned short tparms,
                              size_t size, size_t spec)
{
    double rate = -1.0;

    for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
        if (a->rta_type == t64
            && RTA_PAYLOAD(a) >= sizeof(unsigned long long)) {
            return qc_linkrate_rate64(a);
        }
        if (a->rta_type == tparms && RTA_PAYLOAD(a) >= size) {
            struct tc_ratespec r;

            memcpy(&r, (const char *)RTA_DATA(a) + spec, sizeof(r));
            rate = 8.0 * (double)r.rate;
        }
    }
    return rate > 0.0 ? rate : -1.0;
}

/* The rate in a tbf's options, or -1. */
static double qc_linkrate_tbf(const struct rtattr *a, int alen)
{
    return qc_linkrate_opt(a, alen, TCA_TBF_RATE64, TCA_TBF_PARMS,
                           sizeof(struct tc_tbf_qopt),
                           offsetof(struct tc_tbf_qopt, rate));
}

/* The ceiling in an htb class's options, or -1. */
static double qc_linkrate_htb_ceil(const struct rtattr *a, int alen)
{
    return qc_linkrate_opt(a, alen, TCA_HTB_CEIL64, TCA_HTB_PARMS,
                           sizeof(struct tc_htb_opt),
                           offsetof(struct tc_htb_opt, ceil));
}

/* The default class's minor number in an htb qdisc's options, or 0. */
static unsigned qc_linkrate_htb_default(const struct rtattr *a, int alen)
{
    for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
        if (a->rta_type == TCA_HTB_INIT
            && RTA_PAYLOAD(a) >= sizeof(struct tc_htb_glob)) {
            struct tc_htb_glob g;

            memcpy(&g, RTA_DATA(a), sizeof(g));
            return g.defcls;
        }
    }
    return 0;
}

/* The kind of a qdisc or class message (attributes alen bytes at a);
 * its options go to *opts (NULL: none). */
static int qc_linkrate_kind(const struct rtattr *a, int alen,
                            const struct rtattr **opts)
{
    int kind = QC_LINKRATE_OTHER;

    *opts = NULL;
    for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
        if (a->rta_type == TCA_KIND && RTA_PAYLOAD(a) >= 4) {
            if (memcmp(RTA_DATA(a), "tbf", 4) == 0) {
                kind = QC_LINKRATE_TBF;
            }
            else if (memcmp(RTA_DATA(a), "htb", 4) == 0) {
                kind = QC_LINKRATE_HTB;
            }
        }
        else if (a->rta_type == TCA_OPTIONS) {
            *opts = a;
        }
    }
    return kind;
}

void qc_linkrate_shape_init(qc_linkrate_shape_t *s, int ifindex)
{
    s->ifindex = ifindex;
    s->tbf = -1.0;
    s->htb = 0;
    s->htb_default = 0;
    s->htb_ceil = 0.0;
    s->htb_default_seen = 0;
}

/* A root qdisc of the interface. */
static void qc_linkrate_root(qc_linkrate_shape_t *s, const struct tcmsg *t,
                             int kind, const struct rtattr *o)
{
    const struct rtattr *a = o ? RTA_DATA(o) : NULL;
    int alen = o ? (int)RTA_PAYLOAD(o) : 0;
    unsigned def;

    if (kind == QC_LINKRATE_TBF && o) {
        double rate = qc_linkrate_tbf(a, alen);

        if (rate > 0.0) {
            s->tbf = rate;
        }
    }
    else if (kind == QC_LINKRATE_HTB) {
        s->htb = t->tcm_handle;
        def = o ? qc_linkrate_htb_default(a, alen) : 0;
        s->htb_default = def ? TC_H_MAKE(t->tcm_handle, def) : 0;
    }
}

/* A class of the root htb: the default's existence, a top-level
 * class's ceiling. */
static void qc_linkrate_class(qc_linkrate_shape_t *s, const struct tcmsg *t,
                              const struct rtattr *o)
{
    if (!s->htb || TC_H_MAJ(t->tcm_handle) != TC_H_MAJ(s->htb)) {
        return;
    }
    if (s->htb_default && t->tcm_handle == s->htb_default) {
        s->htb_default_seen = 1;
    }
    if (t->tcm_parent == TC_H_ROOT && o) {
        double ceil = qc_linkrate_htb_ceil(RTA_DATA(o),
                                           (int)RTA_PAYLOAD(o));

        if (ceil > 0.0) {
            s->htb_ceil += ceil;
        }
    }
}

int qc_linkrate_parse(qc_linkrate_shape_t *s, const void *buf, int len,
                      unsigned seq)
{
    const struct nlmsghdr *h = buf;

    /* NLMSG_OK wants the int NLMSG_NEXT leaves (qc_backlog_parse). */
    for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
        const struct tcmsg *t;
        const struct rtattr *opts;
        int kind;

        if (h->nlmsg_seq != seq) {
            continue;
        }
        if (h->nlmsg_type == NLMSG_DONE) {
            return 1;
        }
        if (h->nlmsg_type == NLMSG_ERROR) {
            return -1;
        }
        if ((h->nlmsg_type != RTM_NEWQDISC
             && h->nlmsg_type != RTM_NEWTCLASS)
            || h->nlmsg_len < NLMSG_SPACE(sizeof(*t))) {
            continue;
        }
        t = NLMSG_DATA(h);
        if (t->tcm_ifindex != s->ifindex) {
            continue;
        }
        kind = qc_linkrate_kind(
            (const struct rtattr *)((const char *)t
                                    + NLMSG_ALIGN(sizeof(*t))),
            (int)(h->nlmsg_len - NLMSG_SPACE(sizeof(*t))), &opts);
        if (h->nlmsg_type == RTM_NEWQDISC) {
            if (t->tcm_parent == TC_H_ROOT) {
                qc_linkrate_root(s, t, kind, opts);
            }
        }
        else if (kind == QC_LINKRATE_HTB) {
            qc_linkrate_class(s, t, opts);
        }
    }
    return 0;
}

double qc_linkrate_shape_bits(const qc_linkrate_shape_t *s)
{
    if (s->tbf > 0.0) {
        return s->tbf;
    }
    if (s->htb && s->htb_default_seen && s->htb_ceil > 0.0) {
        return s->htb_ceil;
    }
    return -1.0;
}

/* One dump of type (RTM_GETQDISC or RTM_GETTCLASS) into *s: 1 when it
 * was read to its end. */
static int qc_linkrate_dump(int fd, unsigned short type,
                            qc_linkrate_shape_t *s)
{
    static unsigned seq;
    struct {
        struct nlmsghdr nlh;
        struct tcmsg tc;
    } msg;
    long buf[2048];             /* 16 KB, aligned for nlmsghdr */
    int n, rc = -1;

    memset(&msg, 0, sizeof(msg));
    msg.nlh.nlmsg_len = sizeof(msg);
    msg.nlh.nlmsg_type = type;
    msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    msg.nlh.nlmsg_seq = ++seq;
    msg.tc.tcm_family = AF_UNSPEC;
    msg.tc.tcm_ifindex = s->ifindex;
    if (send(fd, &msg, sizeof(msg), 0) != (ssize_t)sizeof(msg)) {
        return -1;
    }
    for (n = 0; n < QC_LINKRATE_MAX_RECVS; n++) {
        ssize_t len = recv(fd, buf, sizeof(buf), 0);

        if (len <= 0) {
            return -1;
        }
        rc = qc_linkrate_parse(s, buf, (int)len, seq);
        if (rc != 0) {
            break;
        }
    }
    return rc;
}

double qc_linkrate_shaper(int ifindex)
{
    struct timeval tv = { 0, 200000 };
    qc_linkrate_shape_t s;
    int fd, rc;

    fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) {
        return -1.0;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    qc_linkrate_shape_init(&s, ifindex);
    rc = qc_linkrate_dump(fd, RTM_GETQDISC, &s);
    if (rc > 0 && s.htb && s.tbf <= 0.0) {
        rc = qc_linkrate_dump(fd, RTM_GETTCLASS, &s);
    }
    close(fd);
    return rc > 0 ? qc_linkrate_shape_bits(&s) : -1.0;
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
