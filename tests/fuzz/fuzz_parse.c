/* Licensed under the Apache License, Version 2.0. */

/*
 * libFuzzer target: the directive value parsers (mod_qosctl/qc_parse.c).
 *
 * Input: a directive value, up to the first NUL byte; then, optionally,
 * the free arguments: lo and hi of qc_parse_double (2 x 8 bytes, IEEE
 * doubles), lo and hi of qc_parse_long (2 x 8 bytes), the out size of
 * qc_parse_url_prefix (2 bytes, mod 512) and max of qc_parse_cpulist
 * (2 bytes, mod 4097).  Every parser also runs with the arguments its
 * directive passes in qc_config.c.
 *
 * Checked: what qc_parse.h promises.  A reason is NULL or a non-empty
 * string; on failure the output is untouched; on success the value is
 * in range and prints back to itself, no blank is at either end, and
 * the value is plain decimal (no hex, nan, inf).  A URL prefix comes
 * out normalized (no "//", "." or "..", no trailing '/', fits out),
 * normalizes to itself and is the same prefix by qc_url_prefix_contains
 * (fuzz_uri compares that function with qc_uri_under); an interface
 * name obeys Linux's rules; a cpulist sets exactly the CPUs an
 * independent reading lists.
 */

#include <float.h>
#include <limits.h>
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "fuzz_common.h"
#include "qc_parse.h"

/* What qc_config.c passes (QC_MAX_TREES is 8; QC_SENSOR_MAX_CPUS 1024). */
#define FUZZ_PREFIX_BUF 256
#define FUZZ_MAX_CPUS 1024

/* Free arguments are held to what a caller could sensibly pass. */
#define FUZZ_OUTLEN_MOD 512
#define FUZZ_CPUS_MOD 4097

/* A value no parser produces from these inputs: "untouched" is visible. */
#define FUZZ_SENTINEL (-7.25e-300)

static const struct {
    double lo, hi;
} fuzz_double_ranges[] = {
    { 0.0, 1.0 },               /* QosCtlUtilizationBound */
    { 1.0, 1000.0 },            /* QosCtlGainMargin */
    { 0.0, 1000.0 },            /* QosCtlModel */
    { 0.0, 1e9 },               /* QosCtlGuarantee's Rmax */
    { 0.0, 8.0 },               /* QosCtlFixedLevel */
    { -DBL_MAX, DBL_MAX },
};

static int fuzz_is_blank(int c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

static int fuzz_is_ctrl(int c)
{
    return (c >= 0 && c < 0x20) || c == 0x7f;
}

/* Only the characters of a plain decimal number. */
static int fuzz_plain_decimal(const char *s, size_t n)
{
    return strspn(s, "0123456789+-.eE") == n;
}

/* The number part of a value with a unit: a plain decimal. */
static size_t fuzz_number_len(const char *s)
{
    size_t n = strspn(s, "0123456789+-.eE");

    /* In "2eB" the number is "2": an e without digits is no exponent */
    while (n > 0 && (s[n - 1] == 'e' || s[n - 1] == 'E')) {
        n--;
    }
    return n;
}

static void fuzz_ends(const char *s)
{
    size_t n = strlen(s);

    FUZZ_CHECK(n > 0, s);
    FUZZ_CHECK(!fuzz_is_blank((unsigned char)s[0]), s);
    FUZZ_CHECK(!fuzz_is_blank((unsigned char)s[n - 1]), s);
}

static void fuzz_double_one(const char *s, double lo, double hi)
{
    double v = FUZZ_SENTINEL, again = FUZZ_SENTINEL;
    const char *reason = qc_parse_double(s, lo, hi, &v);
    char text[64];

    fuzz_check_reason(reason, s);
    if (reason != NULL) {
        FUZZ_CHECK(v == FUZZ_SENTINEL, s);
        return;
    }
    fuzz_ends(s);
    FUZZ_CHECK(isfinite(v), s);
    FUZZ_CHECK(!(v < lo) && !(v > hi), s);
    FUZZ_CHECK(fuzz_plain_decimal(s, strlen(s)), s);
    snprintf(text, sizeof(text), "%.17g", v);
    FUZZ_CHECK(qc_parse_double(text, -DBL_MAX, DBL_MAX, &again) == NULL,
               text);
    FUZZ_CHECK(again == v, text);
}

/* A number within a longer text: where qc_parse_double takes the whole
 * string, qc_parse_number takes the same number and stops after it. */
static void fuzz_number_prefix(const char *s)
{
    double v = FUZZ_SENTINEL, whole = FUZZ_SENTINEL;
    const char *rest = NULL, *reason = qc_parse_number(s, &v, &rest);

    fuzz_check_reason(reason, s);
    if (reason != NULL) {
        FUZZ_CHECK(v == FUZZ_SENTINEL && rest == NULL, s);
        return;
    }
    FUZZ_CHECK(isfinite(v), s);
    FUZZ_CHECK(rest > s && rest <= s + strlen(s), s);
    FUZZ_CHECK(strspn(s, "0123456789+-.eE") >= (size_t)(rest - s), s);
    /* It stops at no digit: the number is read to its end. */
    FUZZ_CHECK(!isdigit((unsigned char)rest[0]), s);
    if (*rest == '\0') {
        FUZZ_CHECK(qc_parse_double(s, -DBL_MAX, DBL_MAX, &whole) == NULL,
                   s);
        FUZZ_CHECK(whole == v, s);
    }
}

/* /proc, /sys and /dev by whole segments, as qc_url_prefix_contains. */
static void fuzz_kernel_path(const char *s)
{
    int want = qc_url_prefix_contains("/proc", s)
               || qc_url_prefix_contains("/sys", s)
               || qc_url_prefix_contains("/dev", s);

    FUZZ_CHECK(qc_path_is_kernel(s) == want, s);
    if (want) {
        FUZZ_CHECK(!strncmp(s, "/proc", 5) || !strncmp(s, "/sys", 4)
                   || !strncmp(s, "/dev", 4), s);
    }
}

static void fuzz_long_one(const char *s, long lo, long hi)
{
    long v = LONG_MIN + 7, again = 0;
    const char *reason = qc_parse_long(s, lo, hi, &v);
    char text[32];

    fuzz_check_reason(reason, s);
    if (reason != NULL) {
        FUZZ_CHECK(v == LONG_MIN + 7, s);
        return;
    }
    fuzz_ends(s);
    FUZZ_CHECK(v >= lo && v <= hi, s);
    FUZZ_CHECK(strspn(s + (*s == '+' || *s == '-'), "0123456789")
               == strlen(s) - (*s == '+' || *s == '-'), s);
    snprintf(text, sizeof(text), "%ld", v);
    FUZZ_CHECK(qc_parse_long(text, LONG_MIN, LONG_MAX, &again) == NULL,
               text);
    FUZZ_CHECK(again == v, text);
}

static void fuzz_seconds(const char *s)
{
    double v = FUZZ_SENTINEL;
    const char *reason = qc_parse_seconds(s, &v);

    fuzz_check_reason(reason, s);
    if (reason != NULL) {
        FUZZ_CHECK(v == FUZZ_SENTINEL, s);
        return;
    }
    fuzz_ends(s);
    FUZZ_CHECK(v > 0.0 && v <= 3600.0, s);
}

static int fuzz_bit_suffix(const char *u)
{
    return !strcmp(u, "b") || !strcmp(u, "bit") || !strcmp(u, "bps")
           || !strcmp(u, "b/s") || !strcmp(u, "bit/s");
}

static void fuzz_rates(const char *s)
{
    double link = FUZZ_SENTINEL, bw = FUZZ_SENTINEL, plain;
    const char *rl = qc_parse_link_rate(s, &link);
    const char *rb = qc_parse_bandwidth(s, &bw);
    const char *unit;

    fuzz_check_reason(rl, s);
    fuzz_check_reason(rb, s);
    if (rl != NULL) {
        FUZZ_CHECK(link == FUZZ_SENTINEL, s);
    }
    else {
        fuzz_ends(s);
        FUZZ_CHECK(link > 0.0 && link <= 1e15, s);
    }
    if (rb != NULL) {
        FUZZ_CHECK(bw == FUZZ_SENTINEL, s);
    }
    else {
        fuzz_ends(s);
        FUZZ_CHECK(bw > 0.0 && bw <= 1e15, s);
        /* A bare number is ambiguous: bits or bytes? */
        FUZZ_CHECK(qc_parse_double(s, -DBL_MAX, DBL_MAX, &plain) != NULL,
                   s);
    }
    /* Bits given to both: the same rate, in bits and in bytes. */
    unit = s + fuzz_number_len(s);
    if (*unit == 'k' || *unit == 'K' || *unit == 'M' || *unit == 'G') {
        unit++;
    }
    if (rl == NULL && fuzz_bit_suffix(unit) && link / 8.0 >= DBL_MIN) {
        FUZZ_CHECK(rb == NULL, s);
        FUZZ_CHECK(bw == link / 8.0, s);
    }
}

/* Does the normalized prefix p break a rule of qc_parse_url_prefix? */
static void fuzz_prefix_shape(const char *p, const char *s)
{
    size_t n = strlen(p), i;

    FUZZ_CHECK(n <= 255, s);
    if (n == 0) {
        return;
    }
    FUZZ_CHECK(p[0] == '/', s);
    FUZZ_CHECK(p[n - 1] != '/', s);
    FUZZ_CHECK(strstr(p, "//") == NULL, s);
    FUZZ_CHECK(strstr(p, "/./") == NULL, s);
    FUZZ_CHECK(strstr(p, "/../") == NULL, s);
    FUZZ_CHECK(!(n >= 2 && !strcmp(p + n - 2, "/.")), s);
    FUZZ_CHECK(!(n >= 3 && !strcmp(p + n - 3, "/..")), s);
    FUZZ_CHECK(strpbrk(p, "?#\\") == NULL, s);
    for (i = 0; i < n; i++) {
        FUZZ_CHECK(!fuzz_is_ctrl((unsigned char)p[i]), s);
    }
}

static void fuzz_url_prefix(const char *s, unsigned outlen)
{
    char big[FUZZ_PREFIX_BUF], again[FUZZ_PREFIX_BUF];
    const char *checked = qc_parse_url_prefix(s, NULL, 0);
    const char *reason = qc_parse_url_prefix(s, big, sizeof(big));
    char *out = fuzz_alloc(outlen), *copy = fuzz_alloc(outlen);
    const char *small;
    size_t n;

    fuzz_check_reason(checked, s);
    fuzz_check_reason(reason, s);
    FUZZ_CHECK((checked == NULL) == (reason == NULL), s);
    if (outlen) {
        memset(out, 0x5a, outlen);
        memcpy(copy, out, outlen);
    }
    small = qc_parse_url_prefix(s, outlen ? out : NULL, outlen);
    fuzz_check_reason(small, s);
    if (reason != NULL) {
        FUZZ_CHECK(small != NULL, s);
        FUZZ_CHECK(outlen == 0 || memcmp(out, copy, outlen) == 0, s);
        return;
    }
    /* "/x/" is "/x", "/" is "" (the DocumentRoot); "/x /" is "/x " */
    n = strlen(big);
    FUZZ_CHECK(!fuzz_is_blank((unsigned char)s[strlen(s) - 1]), s);
    FUZZ_CHECK(!strncmp(big, s, n), s);
    FUZZ_CHECK(!strcmp(s + n, "") || !strcmp(s + n, "/"), s);
    fuzz_prefix_shape(big, s);
    if (outlen) {
        FUZZ_CHECK((small == NULL) == (n < outlen), s);
        if (small == NULL) {
            FUZZ_CHECK(!strcmp(out, big), s);
        }
        else {
            FUZZ_CHECK(memcmp(out, copy, outlen) == 0, s);
        }
    }
    /* Written and normalized, the same prefix (qc_config.c compares) */
    FUZZ_CHECK(qc_url_prefix_contains(s, big) == 1, s);
    FUZZ_CHECK(qc_url_prefix_contains(big, s) == 1, s);
    /* Normalized is valid and normalizes to itself. */
    if (n > 0) {
        FUZZ_CHECK(qc_parse_url_prefix(big, again, sizeof(again)) == NULL,
                   big);
        FUZZ_CHECK(!strcmp(again, big), big);
    }
}

static void fuzz_ifname(const char *s)
{
    const char *reason = qc_parse_ifname(s);
    size_t n = strlen(s), i;
    int ok = n >= 1 && n <= 15 && strcmp(s, ".") && strcmp(s, "..");

    fuzz_check_reason(reason, s);
    for (i = 0; ok && i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        ok = c != '/' && c != ':' && !fuzz_is_blank(c) && !fuzz_is_ctrl(c);
    }
    FUZZ_CHECK((reason == NULL) == ok, s);
}

/* A CPU number at *p, saturated far above any max tried; -1 if none. */
static long long fuzz_cpu_number(const char **p)
{
    long long v = 0;

    if (**p < '0' || **p > '9') {
        return -1;
    }
    for (; **p >= '0' && **p <= '9'; (*p)++) {
        if (v < 1000000000000LL) {
            v = v * 10 + (**p - '0');
        }
    }
    return v;
}

/* An independent reading of a cpulist into cpus; 1 if it is valid. */
static int fuzz_cpulist_ref(const char *s, unsigned char *cpus,
                            unsigned max)
{
    const char *p = s;

    for (;;) {
        long long lo = fuzz_cpu_number(&p), hi = lo, i;

        if (lo < 0) {
            return 0;
        }
        if (*p == '-') {
            p++;
            hi = fuzz_cpu_number(&p);
            if (hi < lo) {      /* also a missing number */
                return 0;
            }
        }
        if (hi >= (long long)max) {
            return 0;
        }
        for (i = lo; i <= hi; i++) {
            cpus[i] = 1;
        }
        if (*p == '\0') {
            return 1;
        }
        if (*p++ != ',') {
            return 0;
        }
    }
}

static void fuzz_cpulist(const char *s, unsigned max, unsigned seed)
{
    unsigned char *cpus = fuzz_alloc(max), *before = fuzz_alloc(max);
    unsigned char *want = fuzz_alloc(max);
    const char *reason;
    unsigned i;
    int valid;

    /* Some CPUs already set, as by an earlier list: they stay set. */
    for (i = 0; i < max; i++) {
        before[i] = ((i * 2654435761u) ^ seed) % 5 == 0;
    }
    if (max) {
        memcpy(cpus, before, max);
        memcpy(want, before, max);
    }
    reason = qc_parse_cpulist(s, max ? cpus : NULL, max);
    fuzz_check_reason(reason, s);
    valid = fuzz_cpulist_ref(s, want, max);
    FUZZ_CHECK((reason == NULL) == valid, s);
    if (max) {
        FUZZ_CHECK(memcmp(cpus, reason ? before : want, max) == 0, s);
    }
}

/*
 * The status page's query: the format is that of the last "format="
 * field, which must name one exactly, else the query is refused and fmt
 * is untouched; fields that are not "format=" never matter.
 */
static void fuzz_status_query(const char *s)
{
    qc_status_format_e fmt = (qc_status_format_e)99, want = QC_STATUS_HTML;
    const char *reason = qc_parse_status_query(s, &fmt);
    const char *p = s;
    int bad = 0;

    fuzz_check_reason(reason, s);
    while (*p) {
        const char *end = strchr(p, '&');
        size_t n = end ? (size_t)(end - p) : strlen(p);

        if (n >= 7 && !strncmp(p, "format=", 7)) {
            if (n == 11 && !strncmp(p + 7, "html", 4)) {
                want = QC_STATUS_HTML;
            }
            else if (n == 11 && !strncmp(p + 7, "json", 4)) {
                want = QC_STATUS_JSON;
            }
            else if (n == 17 && !strncmp(p + 7, "prometheus", 10)) {
                want = QC_STATUS_PROMETHEUS;
            }
            else {
                bad = 1;
            }
        }
        if (!end) {
            break;
        }
        p = end + 1;
    }
    FUZZ_CHECK((reason != NULL) == bad, s);
    FUZZ_CHECK(bad ? (int)fmt == 99 : fmt == want, s);
}

/* ?refresh=1: on where the last "refresh=" field is exactly that. */
static void fuzz_status_flag(const char *s)
{
    const char *p = s, *last = NULL;

    while (*p) {
        const char *end = strchr(p, '&');

        if (!strncmp(p, "refresh=", 8)) {
            last = p + 8;
        }
        if (!end) {
            break;
        }
        p = end + 1;
    }
    FUZZ_CHECK(qc_parse_status_flag(s, "refresh")
               == (last && last[0] == '1' && (!last[1] || last[1] == '&')),
               s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_t in = { data, size };
    const char *s = fuzz_field(&in);
    int more = fuzz_more(&in);
    double lo = fuzz_double(&in), hi = fuzz_double(&in);
    long llo = (long)fuzz_u64(&in), lhi = (long)fuzz_u64(&in);
    unsigned outlen = fuzz_u16(&in) % FUZZ_OUTLEN_MOD;
    unsigned max = fuzz_u16(&in) % FUZZ_CPUS_MOD;
    size_t i;

    for (i = 0; i < sizeof(fuzz_double_ranges)
                    / sizeof(fuzz_double_ranges[0]); i++) {
        fuzz_double_one(s, fuzz_double_ranges[i].lo,
                        fuzz_double_ranges[i].hi);
    }
    fuzz_long_one(s, 0, 86400);                 /* QosCtlRetryAfter */
    fuzz_long_one(s, LONG_MIN, LONG_MAX);
    fuzz_seconds(s);                            /* QosCtlPeriod */
    fuzz_rates(s);              /* QosCtlResource link, QosCtlGuarantee */
    fuzz_url_prefix(s, FUZZ_PREFIX_BUF);        /* trees, excludes */
    FUZZ_CHECK(qc_url_prefix_contains(s, s) == 1, s);
    fuzz_ifname(s);
    fuzz_cpulist(s, FUZZ_MAX_CPUS, 0);          /* QosCtlResource cpu */
    fuzz_status_query(s);                       /* ?format= */
    fuzz_status_flag(s);                        /* ?refresh=1 */
    fuzz_number_prefix(s);                      /* the state file */
    fuzz_kernel_path(s);            /* QosCtlLog, QosCtlStateFile */
    if (more) {
        fuzz_double_one(s, lo, hi);
        fuzz_long_one(s, llo, lhi);
        fuzz_url_prefix(s, outlen);
        fuzz_cpulist(s, max, (unsigned)size);
    }
    apr_pool_clear(fuzz_pool);
    return 0;
}
