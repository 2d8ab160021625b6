/* Licensed under the Apache License, Version 2.0. */

#include <stdint.h>
#include <string.h>

#include "qc_uri.h"
#include "qc_test.h"

#define MAXLEN 255

/* Both entry points: the measured one must agree with the bounded one. */
#define ASSERT_CONFINED(u) \
    ck_assert_msg(qc_uri_confined(u, MAXLEN) == 1 \
                  && qc_uri_confined_len(u, strlen(u)) == 1, \
                  "\"%s\" refused", u)
#define ASSERT_ESCAPES(u) \
    ck_assert_msg(qc_uri_confined(u, MAXLEN) == 0 \
                  && qc_uri_confined_len(u, strlen(u)) == 0, \
                  "\"%s\" accepted", u)

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
    /* No limit: maxlen + 1 once wrapped to 0 and the URI was read past
     * its NUL (fuzz corpus uri/regress-maxlen-size-max). */
    ck_assert_int_eq(qc_uri_confined("/a/b", SIZE_MAX), 1);
    ck_assert_int_eq(qc_uri_confined("/a/../b", SIZE_MAX), 0);
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

/* A tree in a table: the probe looks prefixes up, and counts. */
typedef struct {
    const char *uri;
    const char *const *dirs;
    const char *const *files;
    int probes;
    size_t last;
} fake_tree_t;

static const char *const fake_dirs[] = { "/cgi", "/cgi/sub", "/d", NULL };
static const char *const fake_files[] = {
    "/report.cgi", "/cgi/sub/deep.cgi", "/x.txt", "/d/fifo", NULL
};

/* Is uri[0..len) one of names, "//" read as "/" as a file system does? */
static int fake_has(const char *const *names, const char *uri, size_t len)
{
    char path[64];
    size_t i, n = 0;

    ck_assert_uint_lt(len, sizeof(path));
    for (i = 0; i < len; i++) {
        if (uri[i] != '/' || n == 0 || path[n - 1] != '/') {
            path[n++] = uri[i];
        }
    }
    path[n] = '\0';
    for (; *names; names++) {
        if (!strcmp(*names, path)) {
            return 1;
        }
    }
    return 0;
}

static qc_uri_kind_t fake_probe(void *ctx, size_t len)
{
    fake_tree_t *t = ctx;

    ck_assert_msg(len > t->last, "\"%s\": prefix %zu after %zu", t->uri,
                  len, t->last);
    ck_assert_msg(len < strlen(t->uri), "\"%s\": probed whole", t->uri);
    t->probes++;
    t->last = len;
    if (len == 7 && !strncmp(t->uri, "/d/fifo", len)) {
        return QC_URI_NONE;     /* there, but neither file nor directory */
    }
    if (fake_has(t->files, t->uri, len)) {
        return QC_URI_FILE;
    }
    return fake_has(t->dirs, t->uri, len) ? QC_URI_DIR : QC_URI_NONE;
}

/* The file part's length of uri, and how many probes it took. */
static size_t file_prefix(const char *uri, int *probes)
{
    fake_tree_t t = { uri, fake_dirs, fake_files, 0, 0 };
    size_t n = qc_uri_file_prefix(uri, strlen(uri), fake_probe, &t);

    *probes = t.probes;
    return n;
}

#define ASSERT_FILE_PREFIX(u, want, want_probes)                         \
    do {                                                                 \
        int probes_;                                                     \
        size_t n_ = file_prefix(u, &probes_);                            \
        ck_assert_msg(n_ == (want), "\"%s\": file part %zu, not %zu",    \
                      u, n_, (size_t)(want));                            \
        ck_assert_msg(probes_ == (want_probes), "\"%s\": %d probes",     \
                      u, probes_);                                       \
    } while (0)

START_TEST(file_prefix_splits_path_info)
{
    ASSERT_FILE_PREFIX("/report.cgi/", 11, 1);
    ASSERT_FILE_PREFIX("/report.cgi/x", 11, 1);
    ASSERT_FILE_PREFIX("/report.cgi/x/y", 11, 1);
    ASSERT_FILE_PREFIX("/report.cgi/x/y/", 11, 1);
    ASSERT_FILE_PREFIX("/cgi/sub/deep.cgi/a", 17, 3);
    ASSERT_FILE_PREFIX("/cgi/sub/deep.cgi//a", 17, 3);
    ASSERT_FILE_PREFIX("/x.txt/report.cgi/y", 6, 1);
}
END_TEST

START_TEST(file_prefix_skips_empty_segments)
{
    /* "//" names what "/" does: no probe for the empty segment. */
    ASSERT_FILE_PREFIX("//report.cgi/x", 12, 1);
    ASSERT_FILE_PREFIX("/cgi//sub///deep.cgi/a", 20, 3);
}
END_TEST

START_TEST(file_prefix_finds_nothing)
{
    /* The whole URI is the caller's: never probed, never the answer. */
    ASSERT_FILE_PREFIX("/report.cgi", 0, 0);
    ASSERT_FILE_PREFIX("/", 0, 0);
    ASSERT_FILE_PREFIX("//", 0, 0);
    ASSERT_FILE_PREFIX("/cgi/", 0, 1);
    ASSERT_FILE_PREFIX("/cgi/sub/", 0, 2);
    /* A missing segment ends the walk: nothing past it is looked at. */
    ASSERT_FILE_PREFIX("/nowhere/report.cgi/x", 0, 1);
    ASSERT_FILE_PREFIX("/cgi/nowhere/deep.cgi/x", 0, 2);
    /* Neither a directory nor a file ends it too. */
    ASSERT_FILE_PREFIX("/d/fifo/x", 0, 2);
    ck_assert_uint_eq(qc_uri_file_prefix("", 0, fake_probe, NULL), 0);
}
END_TEST

START_TEST(file_prefix_uses_len)
{
    /* The length bounds the URI; a '/' past it is not looked at. */
    fake_tree_t t = { "/report.cgi/x", fake_dirs, fake_files, 0, 0 };

    ck_assert_uint_eq(qc_uri_file_prefix(t.uri, 11, fake_probe, &t), 0);
    ck_assert_int_eq(t.probes, 0);
    ck_assert_uint_eq(qc_uri_file_prefix(t.uri, 12, fake_probe, &t), 11);
    ck_assert_int_eq(t.probes, 1);
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

    tc = tcase_create("file_prefix");
    tcase_add_test(tc, file_prefix_splits_path_info);
    tcase_add_test(tc, file_prefix_skips_empty_segments);
    tcase_add_test(tc, file_prefix_finds_nothing);
    tcase_add_test(tc, file_prefix_uses_len);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return qc_test_run(uri_suite());
}
