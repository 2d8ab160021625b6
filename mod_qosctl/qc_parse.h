/* Licensed under the Apache License, Version 2.0. */

/*
 * Parsing of directive values, free of httpd so that unit tests can link
 * it alone.  Every parser reads the whole string (no trailing garbage, no
 * leading or trailing blanks), never allocates, and returns NULL on
 * success or a static, human-readable reason on failure; the directive
 * handler wraps that reason with the directive name and the bad value.
 * Numbers are plain decimal: "nan", "inf" and hex are refused.  On
 * failure the output is left untouched.
 */

#ifndef QC_PARSE_H
#define QC_PARSE_H

/*
 * A finite decimal number in [lo, hi] ("0.58", "1e-3", "4").  The reason
 * for a value out of range does not name lo and hi (it is static); the
 * caller knows them and should.
 */
const char *qc_parse_double(const char *s, double lo, double hi,
                            double *out);

/*
 * The finite decimal number at the start of s, for a value within a
 * longer text: *rest points past it, where the caller reads on.
 */
const char *qc_parse_number(const char *s, double *out, const char **rest);

/* A whole number in [lo, hi] ("1", "30"). */
const char *qc_parse_long(const char *s, long lo, long hi, long *out);

/*
 * A duration in seconds, > 0 and <= 3600: "1", "0.25", "250ms", "2s".
 */
const char *qc_parse_seconds(const char *s, double *out);

/*
 * A link rate in bits per second, > 0: "100M", "1G", "10k", "100Mbit",
 * "100Mbps", "2.5G", "1000000".  Prefixes are decimal (k or K = 1000,
 * M = 10^6, G = 10^9); "b", "bit", "bps", "b/s" or "bit/s" may follow
 * the prefix.  Bytes are refused here.  At most 10^15.
 */
const char *qc_parse_link_rate(const char *s, double *bits_per_s);

/*
 * A bandwidth in bytes per second, > 0, unit required: bits ("13Mbit",
 * "13Mbps", "13Mb/s", "500kbit") or bytes ("2MB", "2MB/s", "512KB",
 * "512KiB", "1GB").  Decimal prefixes (k/K, M, G) are powers of 1000,
 * binary ones (KiB, MiB, GiB) powers of 1024.  A bare number (or a
 * bare prefix, "13M") is rejected because bits and bytes differ by a
 * factor of eight.  At most 10^15.
 */
const char *qc_parse_bandwidth(const char *s, double *bytes_per_s);

/*
 * A URL-path prefix naming a content tree or an excluded area: starts
 * with '/', no "." or ".." segments, no empty segment ("//"), no
 * control characters, no '?', '#' or backslash, no trailing blank, at
 * most 255 bytes.  A trailing '/' is dropped and "/" alone becomes ""
 * (the DocumentRoot itself); the normalized prefix is written to out
 * (size outlen, NUL included).  With out NULL the value is only checked.
 */
const char *qc_parse_url_prefix(const char *s, char *out, unsigned outlen);

/*
 * Whether URL-path prefix outer contains inner or is the same, by whole
 * segments as qc_uri_under judges a URI: "/a" contains "/a" and "/a/b"
 * but not "/ab"; "/" contains every prefix.  Trailing '/'s are ignored,
 * so values as written and as qc_parse_url_prefix normalized them ("" for
 * "/") compare alike.
 */
int qc_url_prefix_contains(const char *outer, const char *inner);

/*
 * A network interface name as Linux accepts it (1..15 bytes, no '/',
 * ':' or blanks, not "." or ".."), and no control characters.
 */
const char *qc_parse_ifname(const char *s);

/*
 * A Linux cpulist, as in /sys/devices/system/cpu/present: "0", "0-3",
 * "0,2,4-7".  CPU numbers are below max; a range goes up ("3-1" is
 * refused); no blanks, no empty item.  Sets cpus[i] to 1 for every
 * listed CPU (cpus has max entries; the others are left as they are).
 */
const char *qc_parse_cpulist(const char *s, unsigned char *cpus,
                             unsigned max);

/*
 * Whether an absolute path, with its symbolic links resolved, is in the
 * kernel's trees /proc, /sys or /dev, where no file of ours belongs.
 */
int qc_path_is_kernel(const char *real);

/* The status page's formats, by ?format= */
typedef enum {
    QC_STATUS_HTML,
    QC_STATUS_JSON,
    QC_STATUS_PROMETHEUS
} qc_status_format_e;

/*
 * The status page's query string (NULL or "" is HTML): '&'-separated
 * fields; the one named exactly "format" picks the format, "html",
 * "json" or "prometheus", the last one given winning; other fields are
 * ignored (a cache-busting "t=123").  Returns NULL and sets *fmt, or a
 * reason for an unknown format, leaving *fmt alone.
 */
const char *qc_parse_status_query(const char *args, qc_status_format_e *fmt);

/* Whether the status page's query string has the field name=1 (the
 * last one given winning): ?refresh=1. */
int qc_parse_status_flag(const char *args, const char *name);

#endif /* QC_PARSE_H */
