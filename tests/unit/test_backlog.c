/* Licensed under the Apache License, Version 2.0. */

/*
 * The accept-queue reader against real sockets of this process: a
 * listener nobody accepts from, clients whose handshakes the kernel
 * completes on loopback; and the send-queue reader, a server writing to
 * a client that does not read.
 */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>

#include "qc_backlog.h"
#include "qc_test.h"
#include "qc_test_net.h"

#define CLIENTS 5

static int client(int af, unsigned short port)
{
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    int fd = socket(af, SOCK_STREAM, 0);
    int rc;

    memset(&a4, 0, sizeof(a4));
    memset(&a6, 0, sizeof(a6));
    a4.sin_family = AF_INET;
    a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a4.sin_port = htons(port);
    a6.sin6_family = AF_INET6;
    a6.sin6_addr = in6addr_loopback;
    a6.sin6_port = htons(port);
    rc = af == AF_INET ? connect(fd, (struct sockaddr *)&a4, sizeof(a4))
         : connect(fd, (struct sockaddr *)&a6, sizeof(a6));
    ck_assert_int_eq(rc, 0);
    return fd;
}

/* Returns 0 when the family cannot listen here (IPv6 turned off). */
static int check_family(int af)
{
    qc_backlog_t b, other;
    unsigned short port = 0, none;
    int lfd = qc_test_listener(af, &port, 16), c[CLIENTS], i;

    if (lfd < 0 && af == AF_INET6) {
        return 0;
    }
    ck_assert_int_ge(lfd, 0);
    none = (unsigned short)(port == 65535 ? 1024 : port + 1);
    ck_assert_int_eq(qc_backlog_init(&b, &port, 1), 0);
    ck_assert_int_eq(qc_backlog_init(&other, &none, 1), 0);
    ck_assert_int_eq(qc_backlog_read(&b), 0);
    for (i = 0; i < CLIENTS; i++) {
        c[i] = client(af, port);
    }
    /* The handshakes complete in connect(); nobody accepted them. */
    ck_assert_int_eq(qc_backlog_read(&b), CLIENTS);
    ck_assert_int_eq(qc_backlog_read(&other), 0);
    /* a port given twice (httpd's v4 and v6 listeners) counts once */
    {
        qc_backlog_t twice;
        unsigned short both[2];

        both[0] = both[1] = port;
        ck_assert_int_eq(qc_backlog_init(&twice, both, 2), 0);
        ck_assert_uint_eq(twice.nports, 1);
        ck_assert_int_eq(qc_backlog_read(&twice), CLIENTS);
        qc_backlog_close(&twice);
    }
    close(accept(lfd, NULL, NULL));
    close(accept(lfd, NULL, NULL));
    ck_assert_int_eq(qc_backlog_read(&b), CLIENTS - 2);
    for (i = 0; i < CLIENTS; i++) {
        close(c[i]);
    }
    close(lfd);
    qc_backlog_close(&b);
    qc_backlog_close(&other);
    ck_assert_int_eq(qc_backlog_read(&b), -1);
    return 1;
}

/* One listener's message of a dump at p: port, queue, limit, length. */
static void diag_msg(unsigned char *p, unsigned seq, unsigned short port,
                     unsigned rqueue, unsigned wqueue, unsigned len)
{
    struct nlmsghdr *h = (struct nlmsghdr *)p;
    struct inet_diag_msg *d = NLMSG_DATA(h);

    h->nlmsg_len = len;
    h->nlmsg_type = 20;         /* SOCK_DIAG_BY_FAMILY */
    h->nlmsg_seq = seq;
    d->id.idiag_sport = htons(port);
    d->idiag_rqueue = rqueue;
    d->idiag_wqueue = wqueue;
}

/*
 * A last message whose length is not aligned
 * leaves NLMSG_NEXT's remainder negative; cast to size_t it read on, into
 * whatever follows the reply in the buffer (here a message that would
 * add 1000 to the queue).
 */
START_TEST(parse_stops_at_the_end_of_the_reply)
{
    static long buf[256];
    unsigned char *p = (unsigned char *)buf;
    unsigned len = NLMSG_LENGTH(sizeof(struct inet_diag_msg)) + 1, step;
    qc_backlog_t b;
    unsigned short port = 8080;
    long sum = 0, limit = 0;

    memset(buf, 0, sizeof(buf));
    memset(&b, 0, sizeof(b));
    b.fd = -1;
    b.seq = 7;
    b.nports = 1;
    b.ports[0] = port;
    diag_msg(p, 7, port, 5, 511, len);
    diag_msg(p + NLMSG_ALIGN(len), 7, port, 1000, 1000,
             NLMSG_LENGTH(sizeof(struct inet_diag_msg)));
    ck_assert_int_eq(qc_backlog_parse(&b, buf, (int)len, &sum, &limit), 0);
    ck_assert_int_eq(sum, 5);
    ck_assert_int_eq(limit, 511);

    /* A whole reply: two messages, then the end of the dump. */
    sum = limit = 0;
    step = NLMSG_ALIGN(NLMSG_LENGTH(sizeof(struct inet_diag_msg)));
    diag_msg(p, 7, port, 5, 511, step);
    diag_msg(p + step, 8, port, 9, 9, step);
    diag_msg(p + 2 * step, 7, 0, 0, 0, NLMSG_LENGTH(4));
    ((struct nlmsghdr *)(p + 2 * step))->nlmsg_type = NLMSG_DONE;
    ck_assert_int_eq(qc_backlog_parse(&b, buf, (int)sizeof(buf), &sum,
                                      &limit), 1);
    ck_assert_int_eq(sum, 5);   /* the other sequence's is left out */
    ck_assert_int_eq(limit, 511);
}
END_TEST

START_TEST(counts_unaccepted_v4)
{
    ck_assert(check_family(AF_INET));
}
END_TEST

START_TEST(counts_unaccepted_v6)
{
    if (!check_family(AF_INET6)) {
        QC_TEST_SKIP("no IPv6 on this machine");
    }
}
END_TEST

START_TEST(no_ports_unknown)
{
    qc_backlog_t b;

    qc_backlog_init(&b, NULL, 0);
    ck_assert_int_eq(qc_backlog_read(&b), -1);
    qc_backlog_close(&b);
}
END_TEST

/*
 * The send queues of the listener's connections: what the server wrote
 * and a client that does not read has not acknowledged.  A connection
 * of another port, and the listener itself, count nothing.
 */
START_TEST(sums_the_connections_send_queues)
{
    static char data[1 << 20];
    qc_backlog_t b, other;
    unsigned short port = 0, none;
    int lfd = qc_test_listener(AF_INET, &port, 16), c, srv, small = 4096;
    ssize_t wrote;
    long q;

    ck_assert_int_ge(lfd, 0);
    none = (unsigned short)(port == 65535 ? 1024 : port + 1);
    ck_assert_int_eq(qc_backlog_init(&b, &port, 1), 0);
    ck_assert_int_eq(qc_backlog_init(&other, &none, 1), 0);
    c = client(AF_INET, port);
    setsockopt(c, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    srv = accept(lfd, NULL, NULL);
    ck_assert_int_ge(srv, 0);
    ck_assert_int_eq(qc_backlog_read_sendq(&b), 0);
    wrote = send(srv, data, sizeof(data), MSG_DONTWAIT);
    ck_assert_int_gt(wrote, 0);
    usleep(100000);             /* loopback: the client's window fills */
    q = qc_backlog_read_sendq(&b);
    /* all of it but what the client's buffer took */
    ck_assert_int_gt(q, wrote / 2);
    ck_assert_int_le(q, wrote);
    ck_assert_int_eq(qc_backlog_read_sendq(&other), 0);
    /* the accept queue is not the send queue */
    ck_assert_int_eq(qc_backlog_read(&b), 0);
    close(srv);
    close(c);
    close(lfd);
    qc_backlog_close(&b);
    qc_backlog_close(&other);
    ck_assert_int_eq(qc_backlog_read_sendq(&b), -1);
}
END_TEST

/* Many reads on one socket: each dump ends where it should. */
START_TEST(repeated_reads)
{
    qc_backlog_t b;
    unsigned short port = 0;
    int lfd = qc_test_listener(AF_INET, &port, 16), c, i;

    ck_assert_int_ge(lfd, 0);
    ck_assert_int_eq(qc_backlog_init(&b, &port, 1), 0);
    c = client(AF_INET, port);
    for (i = 0; i < 200; i++) {
        ck_assert_int_eq(qc_backlog_read(&b), 1);
    }
    close(c);
    close(lfd);
    qc_backlog_close(&b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("backlog");
    TCase *tc = tcase_create("sock_diag");

    tcase_add_test(tc, counts_unaccepted_v4);
    tcase_add_test(tc, counts_unaccepted_v6);
    tcase_add_test(tc, no_ports_unknown);
    tcase_add_test(tc, repeated_reads);
    tcase_add_test(tc, sums_the_connections_send_queues);
    tcase_add_test(tc, parse_stops_at_the_end_of_the_reply);
    suite_add_tcase(s, tc);
    return qc_test_run(s);
}
