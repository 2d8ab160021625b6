/* Licensed under the Apache License, Version 2.0. */

/*
 * HAProxy's agent check (controller/qc_agent.c): the weight from the
 * server's position, the reply's words, and agent-send parsing.
 */

#include <math.h>
#include <stdio.h>

#include "qc_test.h"
#include "qc_agent.h"

static int weight_of(double u, double bound, int fresh, double m,
                     unsigned levels)
{
    qc_agent_view_t v;

    qc_agent_view_init(&v, u, bound, fresh, 0);
    qc_agent_add_class(&v, m, levels, 1);
    return qc_agent_weight(&v);
}

START_TEST(weight_follows_the_position)
{
    /* idle, half the bound, at it, above it: full quality */
    ck_assert_int_eq(weight_of(0.0, 0.9, 1, 2.0, 2), 100);
    ck_assert_int_eq(weight_of(0.45, 0.9, 1, 2.0, 2), 78);
    ck_assert_int_eq(weight_of(0.9, 0.9, 1, 2.0, 2), 55);
    ck_assert_int_eq(weight_of(1.0, 0.9, 1, 2.0, 2), 55);
    /* degrading: half way down, all in the lowest tree */
    ck_assert_int_eq(weight_of(0.9, 0.9, 1, 1.5, 2), 33);
    ck_assert_int_eq(weight_of(0.9, 0.9, 1, 1.0, 2), 10);
    ck_assert_int_eq(weight_of(0.9, 0.9, 1, 2.0, 3), 33);
    ck_assert_int_eq(weight_of(0.9, 0.9, 1, 2.0, 4), 25);
    /* rejecting: drain; a host without trees (M = 1) rejects below 1 */
    ck_assert_int_eq(weight_of(0.9, 0.9, 1, 0.99, 2), 0);
    ck_assert_int_eq(weight_of(0.9, 0.9, 1, 0.5, 1), 0);
    ck_assert_int_eq(weight_of(0.5, 0.9, 1, 1.0, 1), 75);
    /* a NaN utilization counts as idle, not as a reason to drain */
    ck_assert_int_eq(weight_of(0.0 / 0.0, 0.9, 1, 2.0, 2), 100);
}
END_TEST

START_TEST(silent_controller_fails_open)
{
    qc_agent_view_t v;

    /* Without a heartbeat the module serves the classes the controller
     * drives at full quality, so they are not added; nor is the stale
     * utilization read.  A server is not kept drained. */
    qc_agent_view_init(&v, 1.0, 0.9, 0, 0);
    ck_assert_int_eq(qc_agent_weight(&v), 100);
    /* A pinned level still applies, controller or not. */
    ck_assert_int_eq(weight_of(1.0, 0.9, 0, 0.5, 2), 0);
    ck_assert_int_eq(weight_of(1.0, 0.9, 0, 1.5, 2), 33);
    ck_assert_int_eq(weight_of(1.0, 0.9, 0, 2.0, 2), 100);
}
END_TEST

START_TEST(worst_busy_class_decides)
{
    qc_agent_view_t v;

    qc_agent_view_init(&v, 0.9, 0.9, 1, 0);
    qc_agent_add_class(&v, 2.0, 2, 1);      /* premium, full */
    qc_agent_add_class(&v, 1.25, 2, 1);     /* basic, degraded */
    qc_agent_add_class(&v, 0.0, 2, 0);      /* idle host: no say */
    ck_assert_int_eq(v.classes, 2);
    ck_assert_int_eq(v.rejecting, 0);
    ck_assert_int_eq(qc_agent_weight(&v), 21);
    qc_agent_add_class(&v, 0.0 / 0.0, 2, 1);
    ck_assert_int_eq(qc_agent_weight(&v), 21);
    qc_agent_add_class(&v, 0.5, 2, 1);
    ck_assert_int_eq(qc_agent_weight(&v), 0);
}
END_TEST

START_TEST(reply_is_weight_and_maxconn_only)
{
    qc_agent_view_t v;
    char buf[64];

    qc_agent_view_init(&v, 0.0, 0.9, 1, 150);
    ck_assert_uint_eq(qc_agent_format(&v, qc_agent_weight(&v), buf, sizeof(buf)), 17);
    ck_assert_str_eq(buf, "100% maxconn:150\n");
    qc_agent_add_class(&v, 0.2, 2, 1);
    qc_agent_format(&v, qc_agent_weight(&v), buf, sizeof(buf));
    ck_assert_str_eq(buf, "0% maxconn:150\n");
    /* never an administrative word: "ready" or "drain" would end an
     * operator's maintenance */
    ck_assert_ptr_null(strstr(buf, "drain"));
    ck_assert_ptr_null(strstr(buf, "ready"));
    qc_agent_view_init(&v, 0.0, 0.9, 1, 0);
    qc_agent_format(&v, qc_agent_weight(&v), buf, sizeof(buf));
    ck_assert_str_eq(buf, "100%\n");
    ck_assert_uint_eq(qc_agent_format(&v, qc_agent_weight(&v), buf, 3), 0);
    ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(agent_send_parsing)
{
    char host[QC_AGENT_REQUEST_MAX + 1], big[600];

    ck_assert_int_eq(qc_agent_parse("", 0, host, sizeof(host)),
                     QC_AGENT_ALL);
    ck_assert_int_eq(qc_agent_parse("\r\n", 2, host, sizeof(host)),
                     QC_AGENT_ALL);
    ck_assert_int_eq(qc_agent_parse(" www.example.com \nrest", 22, host,
                                    sizeof(host)), QC_AGENT_HOST);
    ck_assert_str_eq(host, "www.example.com");
    ck_assert_int_eq(qc_agent_parse("[::1]:80\r\n", 10, host, sizeof(host)),
                     QC_AGENT_HOST);
    ck_assert_str_eq(host, "[::1]:80");
    /* garbage: bytes no host name has, a NUL, a quote */
    ck_assert_int_eq(qc_agent_parse("a b\n", 4, host, sizeof(host)),
                     QC_AGENT_BAD);
    ck_assert_int_eq(qc_agent_parse("a\0b\n", 4, host, sizeof(host)),
                     QC_AGENT_BAD);
    ck_assert_int_eq(qc_agent_parse("\xff\xfe\n", 3, host, sizeof(host)),
                     QC_AGENT_BAD);
    ck_assert_int_eq(qc_agent_parse("x'; ready\n", 10, host, sizeof(host)),
                     QC_AGENT_BAD);
    /* too long, with or without an end of line */
    memset(big, 'a', sizeof(big));
    ck_assert_int_eq(qc_agent_parse(big, QC_AGENT_REQUEST_MAX, host,
                                    sizeof(host)), QC_AGENT_HOST);
    ck_assert_int_eq(qc_agent_parse(big, QC_AGENT_REQUEST_MAX + 1, host,
                                    sizeof(host)), QC_AGENT_BAD);
    ck_assert_int_eq(qc_agent_parse(big, sizeof(big), host, sizeof(host)),
                     QC_AGENT_BAD);
    /* a host buffer too small is refused, never overrun */
    ck_assert_int_eq(qc_agent_parse("abcdef\n", 7, host, 4), QC_AGENT_BAD);
}
END_TEST

START_TEST(keys_match_host_with_or_without_port)
{
    ck_assert(qc_agent_key_matches("www.example.com:80", "www.example.com"));
    ck_assert(qc_agent_key_matches("www.example.com:80",
                                   "www.example.com:80"));
    ck_assert(!qc_agent_key_matches("www.example.com:80",
                                    "www.example.com:81"));
    ck_assert(!qc_agent_key_matches("www.example.com:80", "www.example"));
    ck_assert(!qc_agent_key_matches("www.example.com:80",
                                    "www.example.co"));
    ck_assert(qc_agent_key_matches("[::1]:8080", "[::1]"));
    ck_assert(!qc_agent_key_matches("a:80", ""));
}
END_TEST

START_TEST(smoothing_is_first_order_in_time)
{
    /* none yet: the target */
    ck_assert(qc_agent_smooth(-1.0, 40.0, 1.0, 5.0) == 40.0);
    /* one time constant: 63% of the way */
    ck_assert(fabs(qc_agent_smooth(100.0, 0.0, 5.0, 5.0)
                   - 100.0 * exp(-1.0)) < 1e-9);
    /* two checks of 1 s are one of 2 s: the rate of checks (agent-inter,
     * several balancers) does not change the filter */
    ck_assert(fabs(qc_agent_smooth(qc_agent_smooth(10.0, 90.0, 1.0, 5.0),
                                   90.0, 1.0, 5.0)
                   - qc_agent_smooth(10.0, 90.0, 2.0, 5.0)) < 1e-9);
    /* no time: no move; a bad clock or tau: the target */
    ck_assert(qc_agent_smooth(10.0, 90.0, 0.0, 5.0) == 10.0);
    ck_assert(qc_agent_smooth(10.0, 90.0, -1.0, 5.0) == 90.0);
    ck_assert(qc_agent_smooth(10.0, 90.0, 1.0, 0.0) == 90.0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("agent");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, weight_follows_the_position);
    tcase_add_test(tc, silent_controller_fails_open);
    tcase_add_test(tc, worst_busy_class_decides);
    tcase_add_test(tc, reply_is_weight_and_maxconn_only);
    tcase_add_test(tc, agent_send_parsing);
    tcase_add_test(tc, keys_match_host_with_or_without_port);
    tcase_add_test(tc, smoothing_is_first_order_in_time);
    suite_add_tcase(s, tc);
    return qc_test_run(s);
}
