/* Licensed under the Apache License, Version 2.0. */

#include <arpa/inet.h>

#include "apr_general.h"

#include "qc_cidr.h"
#include "qc_test.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The ranges' APR subnets live as long as the test program. */
static apr_pool_t *pool;

/* A client address as the request carries it: family 4 or 6, bytes. */
struct client {
    int family;
    unsigned char addr[16];
};

static struct client client(const char *text)
{
    struct client c;

    memset(&c, 0, sizeof(c));
    if (inet_pton(AF_INET, text, c.addr) == 1) {
        c.family = 4;
    }
    else {
        ck_assert_msg(inet_pton(AF_INET6, text, c.addr) == 1,
                      "test bug: bad address %s", text);
        c.family = 6;
    }
    return c;
}

static qc_cidr_t range(const char *text)
{
    qc_cidr_t r;
    const char *reason = qc_cidr_parse(pool, text, &r);

    ck_assert_msg(reason == NULL, "\"%s\" refused: %s", text, reason);
    return r;
}

static int matches(const char *range_text, const char *addr_text)
{
    qc_cidr_t r = range(range_text);
    struct client c = client(addr_text);

    return qc_cidr_match(&r, c.family, c.addr);
}

#define ASSERT_MATCH(r, a) \
    ck_assert_msg(matches(r, a), "%s should cover %s", r, a)
#define ASSERT_NO_MATCH(r, a) \
    ck_assert_msg(!matches(r, a), "%s should not cover %s", r, a)

static void assert_parsed(const char *text, int family, int bits,
                          const char *network)
{
    qc_cidr_t r = range(text);
    struct client want = client(network);

    ck_assert_msg(r.family == family, "%s: family %d", text, r.family);
    ck_assert_msg(r.bits == bits, "%s: bits %d", text, r.bits);
    ck_assert_msg(memcmp(r.addr, want.addr, family == 4 ? 4 : 16) == 0,
                  "%s: network is not %s", text, network);
}

START_TEST(parse_v4)
{
    assert_parsed("192.0.2.0/24", 4, 24, "192.0.2.0");
    assert_parsed("10.1.2.3", 4, 32, "10.1.2.3");
    assert_parsed("10.1.2.3/32", 4, 32, "10.1.2.3");
    assert_parsed("0.0.0.0/0", 4, 0, "0.0.0.0");
    assert_parsed("255.255.255.255", 4, 32, "255.255.255.255");
    assert_parsed("172.16.0.0/12", 4, 12, "172.16.0.0");
    assert_parsed("10.0.0.0/08", 4, 8, "10.0.0.0");
}
END_TEST

START_TEST(parse_v6)
{
    assert_parsed("2001:db8::/32", 6, 32, "2001:db8::");
    assert_parsed("::1", 6, 128, "::1");
    assert_parsed("2001:db8::1/128", 6, 128, "2001:db8::1");
    assert_parsed("::/0", 6, 0, "::");
    assert_parsed("fe80::/10", 6, 10, "fe80::");
    assert_parsed("::ffff:192.0.2.1", 6, 128, "::ffff:192.0.2.1");
    assert_parsed("2001:DB8::/32", 6, 32, "2001:db8::");
}
END_TEST

START_TEST(parse_clears_host_bits)
{
    assert_parsed("192.0.2.77/24", 4, 24, "192.0.2.0");
    assert_parsed("10.255.255.255/9", 4, 9, "10.128.0.0");
    assert_parsed("1.2.3.4/0", 4, 0, "0.0.0.0");
    assert_parsed("192.0.2.255/31", 4, 31, "192.0.2.254");
    assert_parsed("2001:db8:ffff::1/33", 6, 33, "2001:db8:8000::");
    assert_parsed("2001:db8::1/64", 6, 64, "2001:db8::");
    assert_parsed("ffff::ffff/0", 6, 0, "::");
    assert_parsed("2001:db8::ff/127", 6, 127, "2001:db8::fe");
}
END_TEST

START_TEST(parse_rejects)
{
    static const struct {
        const char *in, *why;
    } bad[] = {
        { "", "empty" },
        { "1.2.3.4/33", "above 32" },
        { "::/129", "above 128" },
        { "2001:db8::/200", "above 128" },
        { "1.2.3.4/", "missing prefix length" },
        { "::/", "missing prefix length" },
        { "/24", "missing address" },
        { "/", "missing address" },
        { "1.2.3", "not an IP" },
        { "1.2.3.256", "not an IP" },
        { "1.2.3.4.5", "not an IP" },
        { "01.2.3.4", "not an IP" },       /* no octal surprises */
        { "::g", "not an IP" },
        { "1::2::3", "not an IP" },
        { "[::1]", "not an IP" },
        { "fe80::1%eth0", "not an IP" },
        { " 1.2.3.4", "not an IP" },
        { "1.2.3.4 ", "not an IP" },
        { "localhost", "not an IP" },
        { "0123456789012345678901234567890123456789012345678901/8",
          "not an IP" },
        { "1.2.3.4/-1", "not a number" },
        { "1.2.3.4/+8", "not a number" },
        { "1.2.3.4/ 8", "not a number" },
        { "1.2.3.4/8 ", "not a number" },
        { "1.2.3.4/8/8", "not a number" },
        { "1.2.3.4/0008", "not a number" },
        { "1.2.3.4/255.0.0.0", "not a number" },
    };
    size_t i;

    for (i = 0; i < COUNT(bad); i++) {
        qc_cidr_t r;
        const char *reason;

        memset(&r, 0xab, sizeof(r));
        reason = qc_cidr_parse(pool, bad[i].in, &r);
        ck_assert_msg(reason != NULL, "\"%s\" accepted", bad[i].in);
        ck_assert_msg(strstr(reason, bad[i].why) != NULL,
                      "\"%s\": reason \"%s\" lacks \"%s\"",
                      bad[i].in, reason, bad[i].why);
        ck_assert_msg(r.family == 0xab, "\"%s\": output written",
                      bad[i].in);
    }
    QC_REJECT(qc_cidr_parse(pool, NULL, &(qc_cidr_t){0}), "empty");
}
END_TEST

START_TEST(match_v4_boundaries)
{
    ASSERT_MATCH("192.0.2.0/24", "192.0.2.0");
    ASSERT_MATCH("192.0.2.0/24", "192.0.2.255");
    ASSERT_NO_MATCH("192.0.2.0/24", "192.0.1.255");
    ASSERT_NO_MATCH("192.0.2.0/24", "192.0.3.0");

    /* A prefix that ends inside a byte. */
    ASSERT_MATCH("192.0.2.0/25", "192.0.2.127");
    ASSERT_NO_MATCH("192.0.2.0/25", "192.0.2.128");
    ASSERT_MATCH("192.0.2.128/25", "192.0.2.128");
    ASSERT_NO_MATCH("192.0.2.128/25", "192.0.2.127");
    ASSERT_MATCH("172.16.0.0/12", "172.31.255.255");
    ASSERT_NO_MATCH("172.16.0.0/12", "172.32.0.0");
    ASSERT_NO_MATCH("172.16.0.0/12", "172.15.255.255");

    /* Host bits in the directive do not narrow the range. */
    ASSERT_MATCH("192.0.2.77/24", "192.0.2.1");
}
END_TEST

START_TEST(match_v4_extremes)
{
    ASSERT_MATCH("0.0.0.0/0", "0.0.0.0");
    ASSERT_MATCH("0.0.0.0/0", "255.255.255.255");
    ASSERT_MATCH("0.0.0.0/0", "::ffff:198.51.100.7");
    ASSERT_NO_MATCH("0.0.0.0/0", "2001:db8::1");
    ASSERT_NO_MATCH("0.0.0.0/0", "::");

    ASSERT_MATCH("10.1.2.3/32", "10.1.2.3");
    ASSERT_MATCH("10.1.2.3", "10.1.2.3");
    ASSERT_NO_MATCH("10.1.2.3", "10.1.2.2");
    ASSERT_NO_MATCH("10.1.2.3", "10.1.2.4");
    ASSERT_NO_MATCH("10.1.2.3", "138.1.2.3");   /* differs in bit 0 */
}
END_TEST

START_TEST(match_v6)
{
    ASSERT_MATCH("2001:db8::/32", "2001:db8::1");
    ASSERT_MATCH("2001:db8::/32", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff");
    ASSERT_NO_MATCH("2001:db8::/32", "2001:db9::");
    ASSERT_NO_MATCH("2001:db8::/32", "2001:db7:ffff::1");
    ASSERT_MATCH("2001:db8::/33", "2001:db8:7fff:ffff:ffff:ffff:ffff:ffff");
    ASSERT_NO_MATCH("2001:db8::/33", "2001:db8:8000::");

    ASSERT_MATCH("::1", "::1");
    ASSERT_MATCH("::1/128", "::1");
    ASSERT_NO_MATCH("::1", "::");
    ASSERT_NO_MATCH("::1", "::2");
    ASSERT_NO_MATCH("::1", "8000::1");

    ASSERT_MATCH("::/0", "2001:db8::1");
    ASSERT_MATCH("::/0", "::");
    /* A v4 client on a dual-stack listener would arrive mapped anyway. */
    ASSERT_MATCH("::/0", "192.0.2.1");
    ASSERT_NO_MATCH("2001:db8::/32", "192.0.2.1");
}
END_TEST

START_TEST(match_v4_mapped)
{
    /* A dual-stack listener reports IPv4 clients as ::ffff:a.b.c.d. */
    ASSERT_MATCH("10.0.0.0/8", "::ffff:10.1.2.3");
    ASSERT_MATCH("10.0.0.0/8", "::ffff:10.255.255.255");
    ASSERT_NO_MATCH("10.0.0.0/8", "::ffff:11.0.0.0");
    ASSERT_MATCH("10.1.2.3", "::ffff:10.1.2.3");
    ASSERT_NO_MATCH("10.1.2.3", "::ffff:10.1.2.4");

    /* Only the mapped form: not v4-compatible, NAT64 or 6to4. */
    ASSERT_NO_MATCH("10.0.0.0/8", "::10.1.2.3");
    ASSERT_NO_MATCH("10.0.0.0/8", "64:ff9b::10.1.2.3");
    ASSERT_NO_MATCH("10.0.0.0/8", "::fffe:10.1.2.3");
    ASSERT_NO_MATCH("10.0.0.0/8", "0:0:0:0:1:ffff:10.1.2.3");

    /* A range written in mapped form covers plain v4 clients too. */
    ASSERT_MATCH("::ffff:10.0.0.0/104", "10.1.2.3");
    ASSERT_MATCH("::ffff:10.0.0.0/104", "::ffff:10.1.2.3");
    ASSERT_NO_MATCH("::ffff:10.0.0.0/104", "11.0.0.1");
    ASSERT_MATCH("::ffff:0:0/96", "203.0.113.9");
}
END_TEST

START_TEST(match_odd_arguments)
{
    qc_cidr_t r = range("0.0.0.0/0");
    struct client c = client("10.0.0.1");

    ck_assert_int_eq(qc_cidr_match(&r, 4, c.addr), 1);
    ck_assert_int_eq(qc_cidr_match(&r, 5, c.addr), 0);
    ck_assert_int_eq(qc_cidr_match(&r, 0, c.addr), 0);
    ck_assert_int_eq(qc_cidr_match(&r, 4, NULL), 0);
    ck_assert_int_eq(qc_cidr_match(NULL, 4, c.addr), 0);
}
END_TEST

START_TEST(match_any)
{
    qc_cidr_t list[3];
    struct client c;

    list[0] = range("10.0.0.0/8");
    list[1] = range("192.0.2.0/24");
    list[2] = range("2001:db8::/32");

    c = client("192.0.2.5");
    ck_assert_int_eq(qc_cidr_match_any(list, 3, c.family, c.addr), 1);
    /* n bounds the list: the range at index 1 is not consulted. */
    ck_assert_int_eq(qc_cidr_match_any(list, 1, c.family, c.addr), 0);
    ck_assert_int_eq(qc_cidr_match_any(list, 0, c.family, c.addr), 0);

    c = client("10.9.8.7");
    ck_assert_int_eq(qc_cidr_match_any(list, 3, c.family, c.addr), 1);
    ck_assert_int_eq(qc_cidr_match_any(list, 1, c.family, c.addr), 1);

    c = client("172.16.0.1");
    ck_assert_int_eq(qc_cidr_match_any(list, 3, c.family, c.addr), 0);

    c = client("2001:db8::1");
    ck_assert_int_eq(qc_cidr_match_any(list, 3, c.family, c.addr), 1);
    ck_assert_int_eq(qc_cidr_match_any(list, 2, c.family, c.addr), 0);

    c = client("::ffff:192.0.2.9");
    ck_assert_int_eq(qc_cidr_match_any(list, 3, c.family, c.addr), 1);

    c = client("2001:db9::1");
    ck_assert_int_eq(qc_cidr_match_any(list, 3, c.family, c.addr), 0);
}
END_TEST

static Suite *cidr_suite(void)
{
    Suite *s = suite_create("qc_cidr");
    TCase *tc;

    tc = tcase_create("parse");
    tcase_add_test(tc, parse_v4);
    tcase_add_test(tc, parse_v6);
    tcase_add_test(tc, parse_clears_host_bits);
    tcase_add_test(tc, parse_rejects);
    suite_add_tcase(s, tc);

    tc = tcase_create("match");
    tcase_add_test(tc, match_v4_boundaries);
    tcase_add_test(tc, match_v4_extremes);
    tcase_add_test(tc, match_v6);
    tcase_add_test(tc, match_v4_mapped);
    tcase_add_test(tc, match_odd_arguments);
    tcase_add_test(tc, match_any);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    apr_initialize();
    apr_pool_create(&pool, NULL);
    return qc_test_run(cidr_suite());
}
