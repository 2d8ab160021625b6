/* Licensed under the Apache License, Version 2.0. */

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qc_parse.h"
#include "qc_uri.h"

/* Beyond any real link; keeps later integer conversions safe. */
#define QC_RATE_MAX 1e15

#define QC_URL_PREFIX_MAX 255
#define QC_IFNAME_MAX 15

static const char *const reason_empty = "empty value";
static const char *const reason_blank = "leading or trailing blank";
static const char *const reason_nan = "not a number";
static const char *const reason_huge = "number too large";
static const char *const reason_positive = "must be greater than 0";

/* Plain ASCII tests: the C library's versions depend on the locale. */
static int is_blank(int c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static int is_ctrl(int c)
{
    return (c >= 0 && c < 0x20) || c == 0x7f;
}

static const char *check_ends(const char *s)
{
    size_t len;

    if (s == NULL || *s == '\0') {
        return reason_empty;
    }
    len = strlen(s);
    if (is_blank((unsigned char)s[0]) || is_blank((unsigned char)s[len - 1])) {
        return reason_blank;
    }
    return NULL;
}

/*
 * Length of the plain decimal number at the start of s:
 * [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?
 * 0 if there is none.  strtod alone would also take "nan", "inf", hex
 * and leading blanks, none of which belong in a configuration value.
 */
static size_t scan_decimal(const char *s)
{
    size_t i = 0, digits = 0;

    if (s[i] == '+' || s[i] == '-') {
        i++;
    }
    while (is_digit((unsigned char)s[i])) {
        i++;
        digits++;
    }
    if (s[i] == '.') {
        i++;
        while (is_digit((unsigned char)s[i])) {
            i++;
            digits++;
        }
    }
    if (digits == 0) {
        return 0;
    }
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;

        if (s[j] == '+' || s[j] == '-') {
            j++;
        }
        if (is_digit((unsigned char)s[j])) {
            while (is_digit((unsigned char)s[j])) {
                j++;
            }
            i = j;
        }
    }
    return i;
}

const char *qc_parse_number(const char *s, double *out, const char **rest)
{
    char *end;
    size_t n = scan_decimal(s);
    double v;

    if (n == 0) {
        return reason_nan;
    }
    errno = 0;
    v = strtod(s, &end);
    if (end != s + n) {
        /* e.g. "0x10": strtod read further than a decimal number goes */
        return reason_nan;
    }
    if (!isfinite(v) || (errno == ERANGE && fabs(v) > 1.0)) {
        return reason_huge;
    }
    *out = v;
    *rest = end;
    return NULL;
}

/* A finite number at the start of s, which has no blank at either end;
 * *rest points past it. */
static const char *read_number(const char *s, double *out, const char **rest)
{
    const char *reason = check_ends(s);

    return reason ? reason : qc_parse_number(s, out, rest);
}

const char *qc_parse_double(const char *s, double lo, double hi,
                            double *out)
{
    const char *reason, *rest;
    double v;

    if ((reason = read_number(s, &v, &rest)) != NULL) {
        return reason;
    }
    if (*rest != '\0') {
        return "unexpected characters after the number";
    }
    if (v < lo) {
        return "below the allowed minimum";
    }
    if (v > hi) {
        return "above the allowed maximum";
    }
    *out = v;
    return NULL;
}

const char *qc_parse_long(const char *s, long lo, long hi, long *out)
{
    const char *reason, *p;
    char *end;
    long v;

    if ((reason = check_ends(s)) != NULL) {
        return reason;
    }
    p = (*s == '+' || *s == '-') ? s + 1 : s;
    if (!is_digit((unsigned char)*p)) {
        return reason_nan;
    }
    errno = 0;
    v = strtol(s, &end, 10);
    if (*end == '.' || *end == 'e' || *end == 'E') {
        return "must be a whole number";
    }
    if (*end != '\0') {
        return "unexpected characters after the number";
    }
    if (errno == ERANGE) {
        return reason_huge;
    }
    if (v < lo) {
        return "below the allowed minimum";
    }
    if (v > hi) {
        return "above the allowed maximum";
    }
    *out = v;
    return NULL;
}

const char *qc_parse_seconds(const char *s, double *out)
{
    const char *reason, *unit;
    double v;

    if ((reason = read_number(s, &v, &unit)) != NULL) {
        return reason;
    }
    if (strcmp(unit, "ms") == 0) {
        v /= 1000.0;
    }
    else if (*unit != '\0' && strcmp(unit, "s") != 0) {
        return "unknown unit (use s or ms)";
    }
    if (!(v > 0.0) || v > 3600.0) {
        return "must be greater than 0 and at most 3600 seconds";
    }
    *out = v;
    return NULL;
}

/* Decimal SI prefix; K is accepted for k as people write both. */
static double decimal_prefix(const char **unit)
{
    switch (**unit) {
    case 'k':
    case 'K':
        (*unit)++;
        return 1e3;
    case 'M':
        (*unit)++;
        return 1e6;
    case 'G':
        (*unit)++;
        return 1e9;
    default:
        return 1.0;
    }
}

static int is_bit_suffix(const char *u)
{
    return strcmp(u, "b") == 0 || strcmp(u, "bit") == 0
           || strcmp(u, "bps") == 0 || strcmp(u, "b/s") == 0
           || strcmp(u, "bit/s") == 0;
}

static int is_byte_suffix(const char *u)
{
    return strcmp(u, "B") == 0 || strcmp(u, "Bps") == 0
           || strcmp(u, "B/s") == 0;
}

static const char *check_rate(double v)
{
    if (!(v > 0.0)) {
        return reason_positive;
    }
    if (v > QC_RATE_MAX) {
        return reason_huge;
    }
    return NULL;
}

const char *qc_parse_link_rate(const char *s, double *bits_per_s)
{
    const char *reason, *unit;
    double v, scale;

    if ((reason = read_number(s, &v, &unit)) != NULL) {
        return reason;
    }
    scale = decimal_prefix(&unit);
    if (*unit != '\0' && !is_bit_suffix(unit)) {
        return "unknown unit (use k, M or G, optionally followed by bit)";
    }
    v *= scale;
    if ((reason = check_rate(v)) != NULL) {
        return reason;
    }
    *bits_per_s = v;
    return NULL;
}

const char *qc_parse_bandwidth(const char *s, double *bytes_per_s)
{
    const char *reason, *unit, *after;
    double v, scale;

    if ((reason = read_number(s, &v, &unit)) != NULL) {
        return reason;
    }
    after = unit;
    scale = decimal_prefix(&after);
    if (*after == '\0') {
        return "unit required: bits or bytes (e.g. 13Mbit, 2MB)";
    }
    if (is_bit_suffix(after)) {
        scale /= 8.0;
    }
    else if (is_byte_suffix(after)) {
        /* scale stays */
    }
    else if (after != unit && after[0] == 'i' && is_byte_suffix(after + 1)) {
        switch (*unit) {
        case 'K':
            scale = 1024.0;
            break;
        case 'M':
            scale = 1024.0 * 1024.0;
            break;
        case 'G':
            scale = 1024.0 * 1024.0 * 1024.0;
            break;
        default:
            /* "kiB": binary prefixes are spelled Ki */
            return "unknown unit (use bit, kbit, Mbit, Gbit, B, KB, MB, "
                   "GB, KiB, MiB, GiB)";
        }
    }
    else {
        return "unknown unit (use bit, kbit, Mbit, Gbit, B, KB, MB, GB, "
               "KiB, MiB, GiB)";
    }
    v *= scale;
    if ((reason = check_rate(v)) != NULL) {
        return reason;
    }
    *bytes_per_s = v;
    return NULL;
}

const char *qc_parse_url_prefix(const char *s, char *out, unsigned outlen)
{
    const char *seg, *p;
    size_t len;

    if (s == NULL || *s == '\0') {
        return reason_empty;
    }
    if (*s != '/') {
        return "must start with '/'";
    }
    len = strlen(s);
    if (len > QC_URL_PREFIX_MAX) {
        return "longer than 255 bytes";
    }
    if (is_blank((unsigned char)s[len - 1])) {
        return reason_blank;
    }
    for (p = s; *p; p++) {
        if (is_ctrl((unsigned char)*p)) {
            return "contains a control character";
        }
        if (*p == '?' || *p == '#') {
            return "contains '?' or '#'";
        }
        if (*p == '\\') {
            return "contains a backslash";
        }
    }
    if (len == 1) {
        len = 0;
    }
    else if (s[len - 1] == '/') {
        len--;
        if (is_blank((unsigned char)s[len - 1])) {
            return reason_blank;
        }
    }
    /* Every segment lies between a '/' and the next '/' or the end. */
    for (seg = s; seg < s + len; seg = p) {
        size_t n;

        seg++;
        for (p = seg; p < s + len && *p != '/'; p++) {
        }
        n = (size_t)(p - seg);
        if (n == 0) {
            return "empty path segment ('//')";
        }
        if ((n == 1 && seg[0] == '.')
            || (n == 2 && seg[0] == '.' && seg[1] == '.')) {
            return "contains a '.' or '..' segment";
        }
    }
    if (out != NULL) {
        if (len >= outlen) {
            return "longer than the space reserved for it";
        }
        memcpy(out, s, len);
        out[len] = '\0';
    }
    return NULL;
}

int qc_url_prefix_contains(const char *outer, const char *inner)
{
    size_t lo = strlen(outer);

    while (lo > 0 && outer[lo - 1] == '/') {
        lo--;
    }
    /* The root contains every prefix, but not any string. */
    if (lo == 0) {
        return inner[0] == '/' || inner[0] == '\0';
    }
    return qc_uri_under(outer, lo, inner);
}

int qc_path_is_kernel(const char *real)
{
    static const char *const trees[] = { "/proc", "/sys", "/dev" };
    unsigned i;

    for (i = 0; i < sizeof(trees) / sizeof(trees[0]); i++) {
        if (qc_url_prefix_contains(trees[i], real)) {
            return 1;
        }
    }
    return 0;
}

const char *qc_parse_ifname(const char *s)
{
    const char *p;

    if (s == NULL || *s == '\0') {
        return reason_empty;
    }
    if (strlen(s) > QC_IFNAME_MAX) {
        return "longer than 15 bytes";
    }
    if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0) {
        return "'.' and '..' are not interface names";
    }
    for (p = s; *p; p++) {
        /* Linux refuses '/', ':' and blanks; control bytes only confuse */
        if (*p == '/' || *p == ':' || is_blank((unsigned char)*p)
            || is_ctrl((unsigned char)*p)) {
            return "contains '/', ':', a blank or a control character";
        }
    }
    return NULL;
}

/* One CPU number at *p, advancing *p; -1 if there is none. */
static long scan_cpu(const char **p)
{
    long v = 0;

    if (!is_digit((unsigned char)**p)) {
        return -1;
    }
    while (is_digit((unsigned char)**p)) {
        if (v < 1000000000L) {
            v = v * 10 + (**p - '0');       /* saturates: too large anyway */
        }
        (*p)++;
    }
    return v;
}

const char *qc_parse_cpulist(const char *s, unsigned char *cpus,
                             unsigned max)
{
    const char *p;
    int pass;

    if (s == NULL || *s == '\0') {
        return reason_empty;
    }
    /* Check everything before touching cpus: a failure leaves it alone. */
    for (pass = 0; pass < 2; pass++) {
        p = s;
        for (;;) {
            long lo = scan_cpu(&p), hi = lo, i;

            if (lo < 0) {
                return "expected CPU numbers such as 0-3 or 0,2,4-7";
            }
            if (*p == '-') {
                p++;
                if ((hi = scan_cpu(&p)) < 0) {
                    return "expected CPU numbers such as 0-3 or 0,2,4-7";
                }
                if (hi < lo) {
                    return "a range goes from low to high (as in 1-3)";
                }
            }
            if ((unsigned long)hi >= max) {
                return "CPU number out of range";
            }
            if (pass == 1) {
                for (i = lo; i <= hi; i++) {
                    cpus[i] = 1;
                }
            }
            if (*p == '\0') {
                break;
            }
            if (*p != ',') {
                return "expected CPU numbers such as 0-3 or 0,2,4-7";
            }
            p++;
        }
    }
    return NULL;
}

const char *qc_parse_status_query(const char *args, qc_status_format_e *fmt)
{
    static const struct {
        const char *name;
        qc_status_format_e fmt;
    } names[] = {
        { "html", QC_STATUS_HTML },
        { "json", QC_STATUS_JSON },
        { "prometheus", QC_STATUS_PROMETHEUS },
    };
    qc_status_format_e found = QC_STATUS_HTML;
    const char *p = args, *end, *value;
    size_t n, i;

    while (p && *p) {
        end = strchr(p, '&');
        n = end ? (size_t)(end - p) : strlen(p);
        if (n >= 7 && !strncmp(p, "format=", 7)) {
            value = p + 7;
            for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                if (strlen(names[i].name) == n - 7
                    && !strncmp(value, names[i].name, n - 7)) {
                    break;
                }
            }
            if (i == sizeof(names) / sizeof(names[0])) {
                return "unknown format (use html, json or prometheus)";
            }
            found = names[i].fmt;
        }
        p = end ? end + 1 : NULL;
    }
    *fmt = found;
    return NULL;
}

int qc_parse_status_flag(const char *args, const char *name)
{
    size_t len = strlen(name);
    const char *p = args, *end;
    int on = 0;

    while (p && *p) {
        end = strchr(p, '&');
        if (!strncmp(p, name, len) && p[len] == '=') {
            on = p[len + 1] == '1' && (p[len + 2] == '&' || !p[len + 2]);
        }
        p = end ? end + 1 : NULL;
    }
    return on;
}
