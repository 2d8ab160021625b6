/* Licensed under the Apache License, Version 2.0. */

/*
 * The accept-queue reader against real sockets of this process: a
 * listener nobody accepts from, clients whose handshakes the kernel
 * completes on loopback.
 */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

static void check_family(int af)
{
    qc_backlog_t b, other;
    unsigned short port = 0, none;
    int lfd = qc_test_listener(af, &port, 16), c[CLIENTS], i;

    if (lfd < 0 && af == AF_INET6) {
        return;                 /* no IPv6 on this machine */
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
}

START_TEST(counts_unaccepted_v4)
{
    check_family(AF_INET);
}
END_TEST

START_TEST(counts_unaccepted_v6)
{
    check_family(AF_INET6);
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
    suite_add_tcase(s, tc);
    return qc_test_run(s);
}
