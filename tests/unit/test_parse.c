/* Licensed under the Apache License, Version 2.0. */

#include <math.h>
#include <stdio.h>

#include "qc_parse.h"
#include "qc_test.h"

struct ok_case {
    const char *in;
    double want;
};

struct bad_case {
    const char *in;
    const char *why;            /* a fragment of the expected reason */
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Values like 13e6 / 8 are exact, but 0.001 may differ in the last bit. */
static int close_to(double got, double want)
{
    return fabs(got - want) <= 1e-12 * fabs(want);
}

typedef const char *(*unit_parser)(const char *s, double *out);

static void check_ok(unit_parser parse, const struct ok_case *c, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        const char *reason;
        double got = -1.0;

        reason = parse(c[i].in, &got);
        ck_assert_msg(reason == NULL, "\"%s\" refused: %s", c[i].in, reason);
        ck_assert_msg(close_to(got, c[i].want), "\"%s\" gave %.17g, not %.17g",
                      c[i].in, got, c[i].want);
    }
}

static void check_bad(unit_parser parse, const struct bad_case *c, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        const char *reason;
        double got = 42.0;

        reason = parse(c[i].in, &got);
        ck_assert_msg(reason != NULL, "\"%s\" accepted as %g", c[i].in, got);
        ck_assert_msg(strstr(reason, c[i].why) != NULL,
                      "\"%s\": reason \"%s\" lacks \"%s\"",
                      c[i].in, reason, c[i].why);
        ck_assert_msg(got == 42.0, "\"%s\": output written on failure",
                      c[i].in);
    }
}

/* ---- numbers ---------------------------------------------------------- */

START_TEST(double_accepts)
{
    double v;

    QC_ACCEPT(qc_parse_double("0.58", 0.0, 1.0, &v));
    ck_assert(v == 0.58);
    QC_ACCEPT(qc_parse_double("1e-3", 0.0, 1.0, &v));
    ck_assert(v == 1e-3);
    QC_ACCEPT(qc_parse_double("4", 0.0, 10.0, &v));
    ck_assert(v == 4.0);
    QC_ACCEPT(qc_parse_double("0", 0.0, 1.0, &v));
    ck_assert(v == 0.0);
    QC_ACCEPT(qc_parse_double("1", 0.0, 1.0, &v));
    ck_assert(v == 1.0);
    QC_ACCEPT(qc_parse_double("-2.5", -10.0, 10.0, &v));
    ck_assert(v == -2.5);
    QC_ACCEPT(qc_parse_double("+1.5", 0.0, 10.0, &v));
    ck_assert(v == 1.5);
    QC_ACCEPT(qc_parse_double(".5", 0.0, 1.0, &v));
    ck_assert(v == 0.5);
    QC_ACCEPT(qc_parse_double("5.", 0.0, 10.0, &v));
    ck_assert(v == 5.0);
    QC_ACCEPT(qc_parse_double("2.5E+1", 0.0, 100.0, &v));
    ck_assert(v == 25.0);
}
END_TEST

START_TEST(double_rejects)
{
    static const struct bad_case bad[] = {
        { "", "empty" },
        { " 0.5", "blank" },
        { "0.5 ", "blank" },
        { "\t0.5", "blank" },
        { "0.5\n", "blank" },
        { "0.5x", "after the number" },
        { "0.5.1", "after the number" },
        { "1,5", "after the number" },
        { "1e", "after the number" },
        { "abc", "not a number" },
        { ".", "not a number" },
        { "-", "not a number" },
        { "e5", "not a number" },
        { "nan", "not a number" },
        { "NaN", "not a number" },
        { "-nan", "not a number" },
        { "inf", "not a number" },
        { "-inf", "not a number" },
        { "Infinity", "not a number" },
        { "0x10", "not a number" },
        { "0x1p3", "not a number" },
        { "1e999", "too large" },
        { "-1e999", "too large" },
        { "1.5", "maximum" },
        { "-0.1", "minimum" },
        { "-1", "minimum" },
    };
    size_t i;

    for (i = 0; i < COUNT(bad); i++) {
        double v = 42.0;
        const char *reason = qc_parse_double(bad[i].in, 0.0, 1.0, &v);

        ck_assert_msg(reason != NULL, "\"%s\" accepted", bad[i].in);
        ck_assert_msg(strstr(reason, bad[i].why) != NULL,
                      "\"%s\": reason \"%s\" lacks \"%s\"",
                      bad[i].in, reason, bad[i].why);
        ck_assert(v == 42.0);
    }
    QC_REJECT(qc_parse_double(NULL, 0.0, 1.0, &(double){0}), "empty");
}
END_TEST

START_TEST(long_accepts)
{
    long v;

    QC_ACCEPT(qc_parse_long("1", 1, 30, &v));
    ck_assert_int_eq(v, 1);
    QC_ACCEPT(qc_parse_long("30", 1, 30, &v));
    ck_assert_int_eq(v, 30);
    QC_ACCEPT(qc_parse_long("-5", -10, 10, &v));
    ck_assert_int_eq(v, -5);
    QC_ACCEPT(qc_parse_long("+7", 0, 10, &v));
    ck_assert_int_eq(v, 7);
    QC_ACCEPT(qc_parse_long("007", 0, 10, &v));
    ck_assert_int_eq(v, 7);
}
END_TEST

START_TEST(long_rejects)
{
    long v = 42;

    QC_REJECT(qc_parse_long("", 0, 10, &v), "empty");
    QC_REJECT(qc_parse_long(NULL, 0, 10, &v), "empty");
    QC_REJECT(qc_parse_long(" 1", 0, 10, &v), "blank");
    QC_REJECT(qc_parse_long("1 ", 0, 10, &v), "blank");
    QC_REJECT(qc_parse_long("1.0", 0, 10, &v), "whole number");
    QC_REJECT(qc_parse_long("1e3", 0, 10000, &v), "whole number");
    QC_REJECT(qc_parse_long("12abc", 0, 100, &v), "after the number");
    QC_REJECT(qc_parse_long("0x10", 0, 100, &v), "after the number");
    QC_REJECT(qc_parse_long("abc", 0, 10, &v), "not a number");
    QC_REJECT(qc_parse_long("-", 0, 10, &v), "not a number");
    QC_REJECT(qc_parse_long("+-1", -10, 10, &v), "not a number");
    QC_REJECT(qc_parse_long("99999999999999999999999", 0, 10, &v),
              "too large");
    QC_REJECT(qc_parse_long("-99999999999999999999999", -10, 10, &v),
              "too large");
    QC_REJECT(qc_parse_long("0", 1, 30, &v), "minimum");
    QC_REJECT(qc_parse_long("-1", 1, 30, &v), "minimum");
    QC_REJECT(qc_parse_long("31", 1, 30, &v), "maximum");
    ck_assert_int_eq(v, 42);
}
END_TEST

/* ---- durations -------------------------------------------------------- */

START_TEST(seconds_accepts)
{
    static const struct ok_case ok[] = {
        { "1", 1.0 },
        { "0.25", 0.25 },
        { "250ms", 0.25 },
        { "2s", 2.0 },
        { "1ms", 0.001 },
        { "0.5s", 0.5 },
        { "3600", 3600.0 },
        { "3600s", 3600.0 },
        { "3600000ms", 3600.0 },
    };

    check_ok(qc_parse_seconds, ok, COUNT(ok));
}
END_TEST

START_TEST(seconds_rejects)
{
    static const struct bad_case bad[] = {
        { "", "empty" },
        { " 1", "blank" },
        { "1 ", "blank" },
        { "0", "greater than 0" },
        { "0ms", "greater than 0" },
        { "-1", "greater than 0" },
        { "-250ms", "greater than 0" },
        { "1e-400", "greater than 0" },
        { "3601", "at most 3600" },
        { "3600001ms", "at most 3600" },
        { "2m", "unknown unit" },
        { "2h", "unknown unit" },
        { "2sec", "unknown unit" },
        { "250MS", "unknown unit" },
        { "2 s", "unknown unit" },
        { "ms", "not a number" },
        { "nan", "not a number" },
        { "infs", "not a number" },
        { "1e999", "too large" },
    };

    check_bad(qc_parse_seconds, bad, COUNT(bad));
}
END_TEST

/* ---- link rates (bits per second) ------------------------------------- */

START_TEST(link_rate_accepts)
{
    static const struct ok_case ok[] = {
        { "100M", 100e6 },
        { "1G", 1e9 },
        { "10k", 10e3 },
        { "10K", 10e3 },
        { "100Mbit", 100e6 },
        { "100Mbps", 100e6 },
        { "100Mb/s", 100e6 },
        { "100Mb", 100e6 },
        { "1Gbit/s", 1e9 },
        { "64kbit", 64e3 },
        { "2.5G", 2.5e9 },
        { "1000000", 1e6 },
        { "9600bps", 9600.0 },
        { "1e3M", 1e9 },
    };

    check_ok(qc_parse_link_rate, ok, COUNT(ok));
}
END_TEST

START_TEST(link_rate_rejects)
{
    static const struct bad_case bad[] = {
        { "", "empty" },
        { " 1G", "blank" },
        { "1G ", "blank" },
        { "0", "greater than 0" },
        { "0M", "greater than 0" },
        { "-1M", "greater than 0" },
        { "100MB", "unknown unit" },
        { "100Mbt", "unknown unit" },
        { "100T", "unknown unit" },
        { "100m", "unknown unit" },
        { "100Mbits/s", "unknown unit" },
        { "100 M", "unknown unit" },
        { "M", "not a number" },
        { "nan", "not a number" },
        { "infM", "not a number" },
        { "1e999", "too large" },
        { "1e300G", "too large" },
    };

    check_bad(qc_parse_link_rate, bad, COUNT(bad));
}
END_TEST

/* ---- bandwidths (bytes per second) ------------------------------------ */

START_TEST(bandwidth_bits)
{
    static const struct ok_case ok[] = {
        { "13Mbit", 13e6 / 8 },
        { "13Mbps", 13e6 / 8 },
        { "13Mb/s", 13e6 / 8 },
        { "13Mbit/s", 13e6 / 8 },
        { "13Mb", 13e6 / 8 },
        { "500kbit", 500e3 / 8 },
        { "500Kbit", 500e3 / 8 },
        { "1Gbit", 1e9 / 8 },
        { "800bit", 100.0 },
        { "8b", 1.0 },
    };

    check_ok(qc_parse_bandwidth, ok, COUNT(ok));
}
END_TEST

START_TEST(bandwidth_bytes)
{
    static const struct ok_case ok[] = {
        { "2MB", 2e6 },
        { "2MB/s", 2e6 },
        { "2MBps", 2e6 },
        { "512KB", 512e3 },
        { "512kB", 512e3 },
        { "512KiB", 512.0 * 1024 },
        { "512KiB/s", 512.0 * 1024 },
        { "3MiB", 3.0 * 1024 * 1024 },
        { "1GB", 1e9 },
        { "1GiB", 1024.0 * 1024 * 1024 },
        { "1.5GiB", 1.5 * 1024 * 1024 * 1024 },
        { "100B", 100.0 },
        { "100Bps", 100.0 },
    };

    check_ok(qc_parse_bandwidth, ok, COUNT(ok));
}
END_TEST

START_TEST(bandwidth_rejects)
{
    static const struct bad_case bad[] = {
        { "", "empty" },
        { " 2MB", "blank" },
        { "2MB ", "blank" },
        { "13", "unit required" },
        { "13M", "unit required" },
        { "13k", "unit required" },
        { "13Mbt", "unknown unit" },
        { "13kiB", "unknown unit" },
        { "13Ki", "unknown unit" },
        { "13iB", "unknown unit" },
        { "13Kibit", "unknown unit" },
        { "13TB", "unknown unit" },
        { "13mb", "unknown unit" },
        { "13 MB", "unknown unit" },
        { "0MB", "greater than 0" },
        { "-2MB", "greater than 0" },
        { "MB", "not a number" },
        { "nanMB", "not a number" },
        { "infMB", "not a number" },
        { "1e999MB", "too large" },
        { "1e300GB", "too large" },
    };

    check_bad(qc_parse_bandwidth, bad, COUNT(bad));
}
END_TEST

START_TEST(bandwidth_unit_hint)
{
    double v;
    const char *reason = qc_parse_bandwidth("13Mbt", &v);

    /* The reason lists the spellings, so the admin can fix the value. */
    ck_assert_ptr_nonnull(reason);
    ck_assert_ptr_nonnull(strstr(reason, "Mbit"));
    ck_assert_ptr_nonnull(strstr(reason, "MiB"));
}
END_TEST

/* ---- URL prefixes ----------------------------------------------------- */

START_TEST(url_prefix_normalizes)
{
    static const struct {
        const char *in, *want;
    } ok[] = {
        { "/full", "/full" },
        { "/full/", "/full" },
        { "/", "" },
        { "/a/b/c", "/a/b/c" },
        { "/a/b/c/", "/a/b/c" },
        { "/a.b/c..d", "/a.b/c..d" },
        { "/.hidden/...", "/.hidden/..." },
        { "/with space", "/with space" },
        { "/%2e%2e", "/%2e%2e" },
    };
    size_t i;

    for (i = 0; i < COUNT(ok); i++) {
        char out[256];
        const char *reason;

        memset(out, 'x', sizeof(out));
        reason = qc_parse_url_prefix(ok[i].in, out, sizeof(out));
        ck_assert_msg(reason == NULL, "\"%s\" refused: %s", ok[i].in, reason);
        ck_assert_str_eq(out, ok[i].want);
    }
}
END_TEST

START_TEST(url_prefix_rejects)
{
    static const struct bad_case bad[] = {
        { "", "empty" },
        { "full", "start with '/'" },
        { "./full", "start with '/'" },
        { " /full", "start with '/'" },
        { "/full ", "blank" },
        { "/a/../b", "'..'" },
        { "/..", "'..'" },
        { "/../", "'..'" },
        { "/a/..", "'..'" },
        { "/.", "'.'" },
        { "/./", "'.'" },
        { "/a/.", "'.'" },
        { "/a/./b", "'.'" },
        { "//", "'//'" },
        { "//a", "'//'" },
        { "/a//b", "'//'" },
        { "/a//", "'//'" },
        { "/a?b", "'?'" },
        { "/a?", "'?'" },
        { "/a#b", "'#'" },
        { "/a\x01", "control" },
        { "/a\tb", "control" },
        { "/a\x7f", "control" },
        { "/a\\b", "backslash" },
    };
    size_t i;

    for (i = 0; i < COUNT(bad); i++) {
        char out[8] = "keep";
        const char *reason = qc_parse_url_prefix(bad[i].in, out, sizeof(out));

        ck_assert_msg(reason != NULL, "\"%s\" accepted", bad[i].in);
        ck_assert_msg(strstr(reason, bad[i].why) != NULL,
                      "\"%s\": reason \"%s\" lacks \"%s\"",
                      bad[i].in, reason, bad[i].why);
        ck_assert_str_eq(out, "keep");
    }
    QC_REJECT(qc_parse_url_prefix(NULL, NULL, 0), "empty");
}
END_TEST

START_TEST(url_prefix_length)
{
    char in[300], out[300];

    /* 255 bytes is the limit, counted before normalization. */
    memset(in, 'a', sizeof(in));
    in[0] = '/';
    in[255] = '\0';
    QC_ACCEPT(qc_parse_url_prefix(in, out, sizeof(out)));
    ck_assert_uint_eq(strlen(out), 255);
    in[254] = '/';
    QC_ACCEPT(qc_parse_url_prefix(in, out, sizeof(out)));
    ck_assert_uint_eq(strlen(out), 254);
    in[255] = 'a';
    in[256] = '\0';
    QC_REJECT(qc_parse_url_prefix(in, out, sizeof(out)), "255");
    memset(in, 'a', sizeof(in));
    in[0] = '/';
    in[299] = '\0';
    QC_REJECT(qc_parse_url_prefix(in, out, sizeof(out)), "255");
}
END_TEST

START_TEST(status_query)
{
    static const struct {
        const char *args;
        qc_status_format_e want;
    } ok[] = {
        { NULL, QC_STATUS_HTML },
        { "", QC_STATUS_HTML },
        { "format=json", QC_STATUS_JSON },
        { "format=prometheus", QC_STATUS_PROMETHEUS },
        { "format=html", QC_STATUS_HTML },
        { "t=123&format=json", QC_STATUS_JSON },
        { "format=json&format=prometheus", QC_STATUS_PROMETHEUS },
        { "xformat=json", QC_STATUS_HTML },     /* a field of its own */
        { "&&format=json&", QC_STATUS_JSON },
    };
    static const char *const bad[] = {
        "format=", "format=jsonx", "format=JSON", "format=json2&t=1",
        "a=1&format=xml",
    };
    qc_status_format_e fmt;
    size_t i;

    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        fmt = (qc_status_format_e)99;
        QC_ACCEPT(qc_parse_status_query(ok[i].args, &fmt));
        ck_assert_int_eq(fmt, ok[i].want);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        fmt = (qc_status_format_e)99;
        QC_REJECT(qc_parse_status_query(bad[i], &fmt), "format");
        ck_assert_int_eq(fmt, 99);
    }
}
END_TEST

/* ?refresh=1 asks the HTML page to reload itself; other values, other
 * fields and a name that only starts the same do not. */
START_TEST(status_flag)
{
    ck_assert_int_eq(qc_parse_status_flag("refresh=1", "refresh"), 1);
    ck_assert_int_eq(qc_parse_status_flag("format=html&refresh=1",
                                          "refresh"), 1);
    ck_assert_int_eq(qc_parse_status_flag("refresh=1&t=5", "refresh"), 1);
    ck_assert_int_eq(qc_parse_status_flag("refresh=1&refresh=0",
                                          "refresh"), 0);
    ck_assert_int_eq(qc_parse_status_flag("refresh=10", "refresh"), 0);
    ck_assert_int_eq(qc_parse_status_flag("refreshx=1", "refresh"), 0);
    ck_assert_int_eq(qc_parse_status_flag("xrefresh=1", "refresh"), 0);
    ck_assert_int_eq(qc_parse_status_flag("refresh", "refresh"), 0);
    ck_assert_int_eq(qc_parse_status_flag("", "refresh"), 0);
    ck_assert_int_eq(qc_parse_status_flag(NULL, "refresh"), 0);
}
END_TEST

START_TEST(url_prefix_output_buffer)
{
    char out[6];

    /* "/full" needs 6 bytes with its NUL. */
    QC_ACCEPT(qc_parse_url_prefix("/full", out, 6));
    ck_assert_str_eq(out, "/full");
    QC_REJECT(qc_parse_url_prefix("/full", out, 5), NULL);
    QC_ACCEPT(qc_parse_url_prefix("/full/", out, 6));
    ck_assert_str_eq(out, "/full");
    QC_ACCEPT(qc_parse_url_prefix("/", out, 1));
    ck_assert_str_eq(out, "");
    QC_REJECT(qc_parse_url_prefix("/", out, 0), NULL);
    /* A NULL buffer only validates. */
    QC_ACCEPT(qc_parse_url_prefix("/full", NULL, 0));
    QC_REJECT(qc_parse_url_prefix("/a/..", NULL, 0), "..");
    /* A blank before the trailing '/' is a trailing blank once the '/' is
     * dropped (fuzz corpus parse/regress-prefix-blank-before-slash). */
    QC_REJECT(qc_parse_url_prefix("/x /", out, sizeof(out)), "blank");
}
END_TEST

START_TEST(url_prefix_contains_whole_segments)
{
    static const struct {
        const char *outer, *inner;
        int want;
    } cases[] = {
        { "/a", "/a/b", 1 },
        { "/a", "/a/b/c", 1 },
        { "/a/b", "/a", 0 },
        { "/a", "/ab", 0 },
        { "/ab", "/a", 0 },
        { "/a", "/b", 0 },
        { "/a/b", "/a/c", 0 },
        { "/degraded/1", "/degraded/2", 0 },
        { "/degraded/1", "/degraded/10", 0 },
        /* identical, however the trailing '/' is written */
        { "/a", "/a", 1 },
        { "/a/", "/a", 1 },
        { "/a", "/a/", 1 },
        { "/a/", "/a/b/", 1 },
        /* the root contains everything; "" is "/" normalized */
        { "/", "/full", 1 },
        { "", "/full", 1 },
        { "/", "", 1 },
        { "", "/", 1 },
        { "/full", "/", 0 },
        { "/full", "", 0 },
    };
    size_t i;

    for (i = 0; i < COUNT(cases); i++) {
        ck_assert_msg(qc_url_prefix_contains(cases[i].outer, cases[i].inner)
                      == cases[i].want, "\"%s\" %s \"%s\"",
                      cases[i].outer, cases[i].want ? "should contain"
                      : "should not contain", cases[i].inner);
    }
}
END_TEST

/* ---- interface names -------------------------------------------------- */

/* By whole segments, as a resolved path is: /devices is no /dev. */
START_TEST(kernel_paths)
{
    ck_assert(qc_path_is_kernel("/proc"));
    ck_assert(qc_path_is_kernel("/proc/1234/mem"));
    ck_assert(qc_path_is_kernel("/sys/kernel"));
    ck_assert(qc_path_is_kernel("/dev/null"));
    ck_assert(qc_path_is_kernel("/dev/shm/x"));
    ck_assert(qc_path_is_kernel("/dev/"));
    ck_assert(!qc_path_is_kernel("/devices/x"));
    ck_assert(!qc_path_is_kernel("/procedures"));
    ck_assert(!qc_path_is_kernel("/var/lib/apache2/qosctl.state"));
    ck_assert(!qc_path_is_kernel("/"));
    ck_assert(!qc_path_is_kernel("/srv/proc"));
}
END_TEST

START_TEST(ifname_accepts)
{
    QC_ACCEPT(qc_parse_ifname("eth0"));
    QC_ACCEPT(qc_parse_ifname("lo"));
    QC_ACCEPT(qc_parse_ifname("enp3s0"));
    QC_ACCEPT(qc_parse_ifname("br-lan.100"));
    QC_ACCEPT(qc_parse_ifname("veth_1@x"));
    QC_ACCEPT(qc_parse_ifname("abcdefghijklmno"));
}
END_TEST

START_TEST(ifname_rejects)
{
    QC_REJECT(qc_parse_ifname(""), "empty");
    QC_REJECT(qc_parse_ifname(NULL), "empty");
    QC_REJECT(qc_parse_ifname("abcdefghijklmnop"), "15");
    QC_REJECT(qc_parse_ifname("."), "'.'");
    QC_REJECT(qc_parse_ifname(".."), "'..'");
    QC_REJECT(qc_parse_ifname("a/b"), "'/'");
    QC_REJECT(qc_parse_ifname("eth0:1"), "':'");
    QC_REJECT(qc_parse_ifname("eth 0"), "blank");
    QC_REJECT(qc_parse_ifname(" eth0"), "blank");
    QC_REJECT(qc_parse_ifname("eth0\n"), "blank");
    QC_REJECT(qc_parse_ifname("eth\x01"), "control");
}
END_TEST

START_TEST(cpulist_accepts)
{
    unsigned char cpus[16];
    unsigned i;

    memset(cpus, 0, sizeof(cpus));
    QC_ACCEPT(qc_parse_cpulist("0", cpus, 16));
    ck_assert_int_eq(cpus[0], 1);
    ck_assert_int_eq(cpus[1], 0);

    memset(cpus, 0, sizeof(cpus));
    QC_ACCEPT(qc_parse_cpulist("0,2,4-7", cpus, 16));
    for (i = 0; i < 16; i++) {
        ck_assert_int_eq(cpus[i], i == 0 || i == 2 || (i >= 4 && i <= 7));
    }

    memset(cpus, 0, sizeof(cpus));
    QC_ACCEPT(qc_parse_cpulist("15,3-3,0-1", cpus, 16));
    for (i = 0; i < 16; i++) {
        ck_assert_int_eq(cpus[i], i == 15 || i == 3 || i <= 1);
    }
}
END_TEST

START_TEST(cpulist_rejects)
{
    unsigned char cpus[16];
    unsigned i;

    memset(cpus, 0, sizeof(cpus));
    QC_REJECT(qc_parse_cpulist("3-1", cpus, 16), "low to high");
    QC_REJECT(qc_parse_cpulist("0-16", cpus, 16), "out of range");
    QC_REJECT(qc_parse_cpulist("0-99999999999999999999", cpus, 16),
              "out of range");
    QC_REJECT(qc_parse_cpulist("x", cpus, 16), "such as 0-3");
    QC_REJECT(qc_parse_cpulist("", cpus, 16), "empty");
    QC_REJECT(qc_parse_cpulist(NULL, cpus, 16), "empty");
    QC_REJECT(qc_parse_cpulist("0,", cpus, 16), "such as");
    QC_REJECT(qc_parse_cpulist(",0", cpus, 16), "such as");
    QC_REJECT(qc_parse_cpulist("0,,1", cpus, 16), "such as");
    QC_REJECT(qc_parse_cpulist("1-", cpus, 16), "such as");
    QC_REJECT(qc_parse_cpulist("-1", cpus, 16), "such as");
    QC_REJECT(qc_parse_cpulist("0 ,1", cpus, 16), "such as");
    QC_REJECT(qc_parse_cpulist(" 0", cpus, 16), "such as");
    QC_REJECT(qc_parse_cpulist("0-3:2", cpus, 16), "such as");
    QC_REJECT(qc_parse_cpulist("+1", cpus, 16), "such as");
    /* A failure after good items leaves the output untouched. */
    QC_REJECT(qc_parse_cpulist("0-7,9-8", cpus, 16), "low to high");
    QC_REJECT(qc_parse_cpulist("0-7,99", cpus, 16), "out of range");
    for (i = 0; i < 16; i++) {
        ck_assert_int_eq(cpus[i], 0);
    }
}
END_TEST

static Suite *parse_suite(void)
{
    Suite *s = suite_create("qc_parse");
    TCase *tc;

    tc = tcase_create("numbers");
    tcase_add_test(tc, double_accepts);
    tcase_add_test(tc, double_rejects);
    tcase_add_test(tc, long_accepts);
    tcase_add_test(tc, long_rejects);
    suite_add_tcase(s, tc);

    tc = tcase_create("seconds");
    tcase_add_test(tc, seconds_accepts);
    tcase_add_test(tc, seconds_rejects);
    suite_add_tcase(s, tc);

    tc = tcase_create("link_rate");
    tcase_add_test(tc, link_rate_accepts);
    tcase_add_test(tc, link_rate_rejects);
    suite_add_tcase(s, tc);

    tc = tcase_create("bandwidth");
    tcase_add_test(tc, bandwidth_bits);
    tcase_add_test(tc, bandwidth_bytes);
    tcase_add_test(tc, bandwidth_rejects);
    tcase_add_test(tc, bandwidth_unit_hint);
    suite_add_tcase(s, tc);

    tc = tcase_create("url_prefix");
    tcase_add_test(tc, url_prefix_normalizes);
    tcase_add_test(tc, url_prefix_rejects);
    tcase_add_test(tc, url_prefix_length);
    tcase_add_test(tc, url_prefix_output_buffer);
    tcase_add_test(tc, url_prefix_contains_whole_segments);
    suite_add_tcase(s, tc);

    tc = tcase_create("ifname");
    tcase_add_test(tc, kernel_paths);
    tcase_add_test(tc, ifname_accepts);
    tcase_add_test(tc, ifname_rejects);
    suite_add_tcase(s, tc);

    tc = tcase_create("cpulist");
    tcase_add_test(tc, cpulist_accepts);
    tcase_add_test(tc, cpulist_rejects);
    tcase_add_test(tc, status_query);
    tcase_add_test(tc, status_flag);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return qc_test_run(parse_suite());
}
