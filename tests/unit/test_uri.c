/* Licensed under the Apache License, Version 2.0. */

#include "qc_uri.h"
#include "qc_test.h"

#define MAXLEN 255

#define ASSERT_CONFINED(u) \
    ck_assert_msg(qc_uri_confined(u, MAXLEN) == 1, "\"%s\" refused", u)
#define ASSERT_ESCAPES(u) \
    ck_assert_msg(qc_uri_confined(u, MAXLEN) == 0, "\"%s\" accepted", u)

START_TEST(confined_accepts)
{
    ASSERT_CONFINED("/");
    ASSERT_CONFINED("/a");
    ASSERT_CONFINED("/a/b");
    ASSERT_CONFINED("/a/b/");
    ASSERT_CONFINED("//a");
    ASSERT_CONFINED("/a//b");
    ASSERT_CONFINED("/index.html");
    ASSERT_CONFINED("/.hidden");
    ASSERT_CONFINED("/a/.b");
    ASSERT_CONFINED("/a..b");
    ASSERT_CONFINED("/..a");
    ASSERT_CONFINED("/a../b");
    ASSERT_CONFINED("/...");
    ASSERT_CONFINED("/a/.../b");
    ASSERT_CONFINED("/cgi-bin/x.cgi");
    /* r->uri is decoded, so "%2e" here is three ordinary bytes. */
    ASSERT_CONFINED("/%2e%2e/x");
}
END_TEST

START_TEST(confined_rejects_dot_segments)
{
    ASSERT_ESCAPES("/a/../b");
    ASSERT_ESCAPES("/..");
    ASSERT_ESCAPES("/../");
    ASSERT_ESCAPES("/../etc/passwd");
    ASSERT_ESCAPES("/a/..");
    ASSERT_ESCAPES("/a/../");
    ASSERT_ESCAPES("//..");
    ASSERT_ESCAPES("/.");
    ASSERT_ESCAPES("/./a");
    ASSERT_ESCAPES("/a/.");
    ASSERT_ESCAPES("/a/./");
    ASSERT_ESCAPES("/a/./b");
}
END_TEST

START_TEST(confined_rejects_other)
{
    ASSERT_ESCAPES("a/b");
    ASSERT_ESCAPES("");
    ASSERT_ESCAPES(".");
    ASSERT_ESCAPES("../a");
    ASSERT_ESCAPES("*");
    ASSERT_ESCAPES("http://host/a");
    ASSERT_ESCAPES("/a\\b");
    ASSERT_ESCAPES("/..\\a");
    ASSERT_ESCAPES("/a\\");
    ASSERT_ESCAPES("\\a");
    ck_assert_int_eq(qc_uri_confined(NULL, MAXLEN), 0);
}
END_TEST

START_TEST(confined_length)
{
    char uri[MAXLEN + 50];
    char unterminated[5] = { '/', 'a', 'b', 'c', 'd' };

    memset(uri, 'a', sizeof(uri));
    uri[0] = '/';
    uri[MAXLEN] = '\0';
    ck_assert_int_eq(qc_uri_confined(uri, MAXLEN), 1);
    uri[MAXLEN] = 'a';
    uri[MAXLEN + 1] = '\0';
    ck_assert_int_eq(qc_uri_confined(uri, MAXLEN), 0);
    uri[MAXLEN + 1] = 'a';
    uri[sizeof(uri) - 1] = '\0';
    ck_assert_int_eq(qc_uri_confined(uri, MAXLEN), 0);
    ck_assert_int_eq(qc_uri_confined(uri, sizeof(uri) - 1), 1);

    ck_assert_int_eq(qc_uri_confined("/", 1), 1);
    ck_assert_int_eq(qc_uri_confined("/", 0), 0);
    ck_assert_int_eq(qc_uri_confined("/ab", 2), 0);

    /* A URI over the limit is refused without reading it to its end. */
    ck_assert_int_eq(qc_uri_confined(unterminated, 4), 0);
}
END_TEST

START_TEST(under_segment_boundary)
{
    const char *p = "/status";
    size_t n = strlen(p);

    ck_assert_int_eq(qc_uri_under(p, n, "/status"), 1);
    ck_assert_int_eq(qc_uri_under(p, n, "/status/"), 1);
    ck_assert_int_eq(qc_uri_under(p, n, "/status/x"), 1);
    ck_assert_int_eq(qc_uri_under(p, n, "/status/x/y.html"), 1);
    ck_assert_int_eq(qc_uri_under(p, n, "/statusx"), 0);
    ck_assert_int_eq(qc_uri_under(p, n, "/status.html"), 0);
    ck_assert_int_eq(qc_uri_under(p, n, "/stat"), 0);
    ck_assert_int_eq(qc_uri_under(p, n, "/"), 0);
    ck_assert_int_eq(qc_uri_under(p, n, ""), 0);
    ck_assert_int_eq(qc_uri_under(p, n, "/other/status"), 0);
    ck_assert_int_eq(qc_uri_under(p, n, "/Status"), 0);
    ck_assert_int_eq(qc_uri_under(p, n, NULL), 0);
}
END_TEST

START_TEST(under_nested_prefix)
{
    const char *p = "/full/img";
    size_t n = strlen(p);

    ck_assert_int_eq(qc_uri_under(p, n, "/full/img/a.jpg"), 1);
    ck_assert_int_eq(qc_uri_under(p, n, "/full/img"), 1);
    ck_assert_int_eq(qc_uri_under(p, n, "/full/images/a.jpg"), 0);
    ck_assert_int_eq(qc_uri_under(p, n, "/full"), 0);
    ck_assert_int_eq(qc_uri_under(p, n, "/full/"), 0);
}
END_TEST

START_TEST(under_uses_prefix_len)
{
    /* The length bounds the prefix; the string need not end there. */
    ck_assert_int_eq(qc_uri_under("/a/b", 2, "/a/x"), 1);
    ck_assert_int_eq(qc_uri_under("/a/b", 2, "/a"), 1);
    ck_assert_int_eq(qc_uri_under("/a/b", 2, "/ab"), 0);
    ck_assert_int_eq(qc_uri_under("/a/b", 4, "/a/x"), 0);
}
END_TEST

START_TEST(under_empty_prefix)
{
    ck_assert_int_eq(qc_uri_under("", 0, "/"), 1);
    ck_assert_int_eq(qc_uri_under("", 0, "/anything/at/all"), 1);
    ck_assert_int_eq(qc_uri_under("", 0, ""), 1);
    ck_assert_int_eq(qc_uri_under("/x", 0, "/y"), 1);
}
END_TEST

START_TEST(under_unnormalized_prefix)
{
    /* A trailing '/' is a boundary of its own. */
    ck_assert_int_eq(qc_uri_under("/a/", 3, "/a/x"), 1);
    ck_assert_int_eq(qc_uri_under("/a/", 3, "/a/"), 1);
    ck_assert_int_eq(qc_uri_under("/a/", 3, "/a"), 0);
}
END_TEST

static Suite *uri_suite(void)
{
    Suite *s = suite_create("qc_uri");
    TCase *tc;

    tc = tcase_create("confined");
    tcase_add_test(tc, confined_accepts);
    tcase_add_test(tc, confined_rejects_dot_segments);
    tcase_add_test(tc, confined_rejects_other);
    tcase_add_test(tc, confined_length);
    suite_add_tcase(s, tc);

    tc = tcase_create("under");
    tcase_add_test(tc, under_segment_boundary);
    tcase_add_test(tc, under_nested_prefix);
    tcase_add_test(tc, under_uses_prefix_len);
    tcase_add_test(tc, under_empty_prefix);
    tcase_add_test(tc, under_unnormalized_prefix);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return qc_test_run(uri_suite());
}
