/* Licensed under the Apache License, Version 2.0. */

/*
 * What a link can send: a root tbf's rate or a root htb's ceilings
 * from RTM_GETQDISC and RTM_GETTCLASS dumps (messages built here as the
 * kernel lays them out) and the port's speed file.  The link sensor's use of them: test_sensors.
 */

#include <math.h>
#include <stdio.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/pkt_sched.h>

#include "qc_linkrate.h"
#include "qc_test.h"

#define SEQ 42

typedef struct {
    long buf[1024];             /* aligned for nlmsghdr */
    int len;
} dump_t;

/* Append an attribute of n bytes to the message h. */
static struct rtattr *put_attr(struct nlmsghdr *h, unsigned short type,
                               const void *data, size_t n)
{
    struct rtattr *a = (struct rtattr *)((char *)h
                                         + NLMSG_ALIGN(h->nlmsg_len));

    a->rta_type = type;
    a->rta_len = (unsigned short)RTA_LENGTH(n);
    if (n) {
        memcpy(RTA_DATA(a), data, n);
    }
    h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(a->rta_len);
    return a;
}

/* A qdisc (RTM_NEWQDISC) or class (RTM_NEWTCLASS) message of kind:
 * for tbf a rate in bytes/s (and rate64), for an htb qdisc its default
 * class's minor number in rate, for an htb class its ceiling in bytes/s
 * (and ceil64). */
static void put_tc(dump_t *d, unsigned short type, unsigned seq,
                   int ifindex, unsigned parent, unsigned handle,
                   const char *kind, unsigned rate,
                   unsigned long long rate64)
{
    struct nlmsghdr *h = (struct nlmsghdr *)((char *)d->buf + d->len);
    struct tcmsg *t = NLMSG_DATA(h);
    struct rtattr *opts;

    memset(h, 0, NLMSG_SPACE(sizeof(*t)));
    h->nlmsg_len = NLMSG_LENGTH(sizeof(*t));
    h->nlmsg_type = type;
    h->nlmsg_flags = NLM_F_MULTI;
    h->nlmsg_seq = seq;
    t->tcm_ifindex = ifindex;
    t->tcm_parent = parent;
    t->tcm_handle = handle;
    put_attr(h, TCA_KIND, kind, strlen(kind) + 1);
    if (strcmp(kind, "tbf") == 0) {
        struct tc_tbf_qopt q;

        opts = put_attr(h, TCA_OPTIONS, NULL, 0);
        memset(&q, 0, sizeof(q));
        q.rate.rate = rate;
        put_attr(h, TCA_TBF_PARMS, &q, sizeof(q));
        if (rate64) {
            put_attr(h, TCA_TBF_RATE64, &rate64, sizeof(rate64));
        }
    }
    else if (strcmp(kind, "htb") == 0 && type == RTM_NEWQDISC) {
        struct tc_htb_glob g;

        opts = put_attr(h, TCA_OPTIONS, NULL, 0);
        memset(&g, 0, sizeof(g));
        g.version = 3;
        g.defcls = rate;
        put_attr(h, TCA_HTB_INIT, &g, sizeof(g));
    }
    else if (strcmp(kind, "htb") == 0) {
        struct tc_htb_opt o;

        opts = put_attr(h, TCA_OPTIONS, NULL, 0);
        memset(&o, 0, sizeof(o));
        o.rate.rate = rate / 2;
        o.ceil.rate = rate;
        put_attr(h, TCA_HTB_PARMS, &o, sizeof(o));
        if (rate64) {
            put_attr(h, TCA_HTB_CEIL64, &rate64, sizeof(rate64));
        }
    }
    else {
        opts = NULL;
    }
    if (opts) {
        opts->rta_len = (unsigned short)((char *)h + h->nlmsg_len
                                         - (char *)opts);
    }
    d->len += NLMSG_ALIGN(h->nlmsg_len);
}

static void put_qdisc(dump_t *d, unsigned seq, int ifindex,
                      unsigned parent, const char *kind,
                      unsigned rate, unsigned long long rate64)
{
    put_tc(d, RTM_NEWQDISC, seq, ifindex, parent,
           parent == TC_H_ROOT ? 0x10000 : 0x20000, kind, rate, rate64);
}

/* An htb class classid under parent, ceiling in bytes/s. */
static void put_class(dump_t *d, int ifindex, unsigned parent,
                      unsigned classid, unsigned ceil)
{
    put_tc(d, RTM_NEWTCLASS, SEQ, ifindex, parent, classid, "htb", ceil, 0);
}

/* What a dump of len bytes says of ifindex's shaper: *rc the parse's
 * answer. */
static double parse_bits(const dump_t *d, int len, int ifindex, int *rc)
{
    qc_linkrate_shape_t s;

    qc_linkrate_shape_init(&s, ifindex);
    *rc = qc_linkrate_parse(&s, d->buf, len, SEQ);
    return qc_linkrate_shape_bits(&s);
}

static void put_done(dump_t *d, unsigned seq, unsigned short type)
{
    struct nlmsghdr *h = (struct nlmsghdr *)((char *)d->buf + d->len);

    memset(h, 0, NLMSG_SPACE(sizeof(int)));
    h->nlmsg_len = NLMSG_LENGTH(sizeof(int));
    h->nlmsg_type = type;
    h->nlmsg_seq = seq;
    d->len += NLMSG_ALIGN(h->nlmsg_len);
}

/* The root tbf of the interface asked about, not another interface's
 * nor a tbf further down the tree; the dump ends at NLMSG_DONE. */
START_TEST(parse_takes_the_root_tbf_of_the_interface)
{
    static dump_t d;
    int rc;

    memset(&d, 0, sizeof(d));
    put_qdisc(&d, SEQ, 7, TC_H_ROOT, "tbf", 125000, 0);    /* 1 Mbit */
    put_qdisc(&d, SEQ, 3, TC_H_ROOT, "tbf", 3125000, 0);   /* 25 Mbit */
    put_qdisc(&d, SEQ, 3, 0x10000, "tbf", 1000, 0);
    put_qdisc(&d, SEQ, 4, TC_H_ROOT, "noqueue", 0, 0);
    ck_assert(fabs(parse_bits(&d, d.len, 3, &rc) - 25e6) < 1.0);
    ck_assert_int_eq(rc, 0);
    ck_assert(parse_bits(&d, d.len, 4, &rc) < 0.0);
    ck_assert_int_eq(rc, 0);
    put_done(&d, SEQ, NLMSG_DONE);
    ck_assert(parse_bits(&d, d.len, 5, &rc) < 0.0);
    ck_assert_int_eq(rc, 1);
}
END_TEST

/* Past 4 GB/s the kernel gives the rate in TCA_TBF_RATE64. */
START_TEST(parse_prefers_rate64)
{
    static dump_t d;
    int rc;

    memset(&d, 0, sizeof(d));
    put_qdisc(&d, SEQ, 2, TC_H_ROOT, "tbf", 0xffffffffu,
              10000000000ULL);
    ck_assert(fabs(parse_bits(&d, d.len, 2, &rc) - 80e9) < 1.0);
}
END_TEST

/* A root htb (`tc qdisc add dev IF root handle 1: htb default 20`)
 * bounds the link by its top-level classes' ceilings, counted once
 * each whatever the classes below them say, as the qdisc and class
 * dumps come in. */
START_TEST(parse_htb_sums_its_top_level_ceilings)
{
    static dump_t d;
    qc_linkrate_shape_t s;

    memset(&d, 0, sizeof(d));
    put_qdisc(&d, SEQ, 3, TC_H_ROOT, "htb", 0x20, 0);
    put_qdisc(&d, SEQ, 3, 0x10010, "fq_codel", 0, 0);
    qc_linkrate_shape_init(&s, 3);
    ck_assert_int_eq(qc_linkrate_parse(&s, d.buf, d.len, SEQ), 0);
    ck_assert(qc_linkrate_shape_bits(&s) < 0.0);    /* no class read */
    memset(&d, 0, sizeof(d));
    put_class(&d, 3, TC_H_ROOT, 0x10001, 2500000);     /* 1:1 20 Mbit */
    put_class(&d, 3, 0x10001, 0x10010, 2500000);       /* 1:10 */
    put_class(&d, 3, 0x10001, 0x10020, 1250000);       /* 1:20 */
    put_class(&d, 3, TC_H_ROOT, 0x10002, 625000);      /* 1:2 5 Mbit */
    put_class(&d, 7, TC_H_ROOT, 0x10001, 125000000);   /* elsewhere */
    put_done(&d, SEQ, NLMSG_DONE);
    ck_assert_int_eq(qc_linkrate_parse(&s, d.buf, d.len, SEQ), 1);
    ck_assert(fabs(qc_linkrate_shape_bits(&s) - 25e6) < 1.0);
}
END_TEST

/* An htb whose default class is missing (or none is named) passes
 * unclassified packets unshaped: it bounds nothing.  A class's ceil64
 * is taken past 4 GB/s. */
START_TEST(parse_htb_without_its_default_bounds_nothing)
{
    static dump_t d;
    int rc;

    memset(&d, 0, sizeof(d));
    put_qdisc(&d, SEQ, 3, TC_H_ROOT, "htb", 0x30, 0);
    put_class(&d, 3, TC_H_ROOT, 0x10001, 2500000);
    put_class(&d, 3, 0x10001, 0x10010, 2500000);
    ck_assert(parse_bits(&d, d.len, 3, &rc) < 0.0);
    memset(&d, 0, sizeof(d));
    put_qdisc(&d, SEQ, 3, TC_H_ROOT, "htb", 0, 0);
    put_class(&d, 3, TC_H_ROOT, 0x10001, 2500000);
    ck_assert(parse_bits(&d, d.len, 3, &rc) < 0.0);
    memset(&d, 0, sizeof(d));
    put_qdisc(&d, SEQ, 3, TC_H_ROOT, "htb", 1, 0);
    put_tc(&d, RTM_NEWTCLASS, SEQ, 3, TC_H_ROOT, 0x10001, "htb",
           0xffffffffu, 5000000000ULL);
    ck_assert(fabs(parse_bits(&d, d.len, 3, &rc) - 40e9) < 1.0);
}
END_TEST

/* Another request's leftovers are skipped; an error ends the dump. */
START_TEST(parse_sequence_and_error)
{
    static dump_t d;
    int rc;

    memset(&d, 0, sizeof(d));
    put_qdisc(&d, SEQ - 1, 3, TC_H_ROOT, "tbf", 3125000, 0);
    put_done(&d, SEQ - 1, NLMSG_DONE);
    put_done(&d, SEQ, NLMSG_ERROR);
    ck_assert(parse_bits(&d, d.len, 3, &rc) < 0.0);
    ck_assert_int_eq(rc, -1);
}
END_TEST

/* Lengths that lie never make it read past the buffer: a message cut
 * short, an attribute longer than its message, options longer than
 * their attribute. */
START_TEST(parse_never_reads_past_the_reply)
{
    static dump_t d;
    struct nlmsghdr *h = (struct nlmsghdr *)d.buf;
    struct rtattr *a;
    int full, rc;

    memset(&d, 0, sizeof(d));
    put_qdisc(&d, SEQ, 3, TC_H_ROOT, "tbf", 3125000, 0);
    full = d.len;
    ck_assert(parse_bits(&d, full - 8, 3, &rc) < 0.0);
    ck_assert_int_eq(rc, 0);
    /* the options attribute claims more than the message holds */
    a = (struct rtattr *)((char *)NLMSG_DATA(h)
                          + NLMSG_ALIGN(sizeof(struct tcmsg)));
    a = (struct rtattr *)((char *)a + RTA_ALIGN(a->rta_len));
    ck_assert_int_eq(a->rta_type, TCA_OPTIONS);
    a->rta_len = 0xfff0;
    ck_assert(parse_bits(&d, full, 3, &rc) < 0.0);
    ck_assert_int_eq(rc, 0);
    /* a message shorter than a tcmsg */
    memset(&d, 0, sizeof(d));
    put_qdisc(&d, SEQ, 3, TC_H_ROOT, "tbf", 3125000, 0);
    h->nlmsg_len = NLMSG_LENGTH(4);
    ck_assert(parse_bits(&d, d.len, 3, &rc) < 0.0);
    ck_assert_int_eq(rc, 0);
    /* an htb class whose options lie */
    memset(&d, 0, sizeof(d));
    put_qdisc(&d, SEQ, 3, TC_H_ROOT, "htb", 1, 0);
    put_class(&d, 3, TC_H_ROOT, 0x10001, 2500000);
    full = d.len;
    ck_assert(parse_bits(&d, full - 8, 3, &rc) < 0.0);
}
END_TEST

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* A port's speed file: Mbit/s; virtual ports say -1. */
START_TEST(speed_file)
{
    char dir[] = "/tmp/qc-speed-XXXXXX";
    char path[256];

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/speed", dir);
    write_file(path, "10000\n");
    ck_assert(fabs(qc_linkrate_speed(path) - 1e10) < 1.0);
    write_file(path, "-1\n");
    ck_assert(qc_linkrate_speed(path) < 0.0);
    write_file(path, "fast\n");
    ck_assert(qc_linkrate_speed(path) < 0.0);
    unlink(path);
    ck_assert(qc_linkrate_speed(path) < 0.0);
    rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qc_linkrate");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, parse_takes_the_root_tbf_of_the_interface);
    tcase_add_test(tc, parse_prefers_rate64);
    tcase_add_test(tc, parse_htb_sums_its_top_level_ceilings);
    tcase_add_test(tc, parse_htb_without_its_default_bounds_nothing);
    tcase_add_test(tc, parse_sequence_and_error);
    tcase_add_test(tc, parse_never_reads_past_the_reply);
    tcase_add_test(tc, speed_file);
    suite_add_tcase(s, tc);
    return qc_test_run(s);
}
