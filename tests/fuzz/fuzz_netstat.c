/* Licensed under the Apache License, Version 2.0. */

/*
 * libFuzzer target: the kernel's TCP counters read from the texts of
 * /proc/net/netstat and /proc/net/snmp (controller/qc_netstat.c).
 *
 * Input: the text of /proc/net/netstat, NUL, the text of /proc/net/snmp
 * (absent without the NUL: then parsed as NULL), then, optionally, NUL
 * and two generated readings: 1 byte of form for each (bits 0-3: the
 * QC_NETSTAT_* counters written, 4: CRLF line ends, 5: tabs and runs of
 * blanks, 6: decoy lines first, 7: names in reverse order), 1 byte of
 * filler fields (low nibble before the counters, high nibble after),
 * then 4 counter values of each (8 bytes each, little-endian:
 * PassiveOpens, ListenOverflows, ListenDrops, TCPReqQFullDrop).  Each
 * text is parsed from an exactly sized heap buffer.
 *
 * Checked: what qc_netstat.h promises.  Parsing never crashes or reads
 * past a text; the result is n->have, which holds only QC_NETSTAT_*
 * bits; a counter whose bit is clear is 0; a second parse (over other
 * garbage) gives the same counters; TcpExt counters come from the
 * netstat text and PassiveOpens from the snmp one alone, so either text
 * parsed with NULL for the other gives its own half, and NULL for both
 * nothing; a counter read is named in its text and its decimal digits
 * are there too.  qc_netstat_delta of two parses of the same texts gives
 * 0 attempts and drops when the counters they need are known, < 0 when
 * not.  A generated reading (a "TcpExt:" / "Tcp:" name line and its
 * value line among others, in any order, with fillers and decoys such
 * as "MPTcpExt:" and MaxConn's -1) reads back exactly the bits and
 * values written, and the delta of two readings is the one qc_netstat.h
 * defines, a counter gone backwards giving 0.
 */

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "fuzz_common.h"
#include "qc_netstat.h"

#define FUZZ_NCOUNTERS 4

/* Indexed by the bit's position: QC_NETSTAT_PASSIVE_OPENS is 1 << 0. */
static const char *const fuzz_names[FUZZ_NCOUNTERS] = {
    "PassiveOpens", "ListenOverflows", "ListenDrops", "TCPReqQFullDrop"
};

/* The TcpExt counters: the ones /proc/net/netstat holds. */
#define FUZZ_TCPEXT (QC_NETSTAT_ALL & ~QC_NETSTAT_PASSIVE_OPENS)

static apr_uint64_t fuzz_counter(const qc_netstat_t *n, unsigned i)
{
    switch (i) {
    case 0:
        return n->passive_opens;
    case 1:
        return n->listen_overflows;
    case 2:
        return n->listen_drops;
    default:
        return n->reqq_full_drops;
    }
}

/* Parse into a struct first filled with junk: nothing must survive. */
static unsigned fuzz_parse(qc_netstat_t *n, int junk, const char *ext,
                           const char *snmp)
{
    unsigned have;

    memset(n, junk, sizeof(*n));
    have = qc_netstat_parse(n, ext, snmp);
    FUZZ_CHECK(have == n->have, ext);
    FUZZ_CHECK((have & ~QC_NETSTAT_ALL) == 0, ext);
    return have;
}

static int fuzz_same(const qc_netstat_t *a, const qc_netstat_t *b,
                     unsigned bits)
{
    unsigned i;

    if ((a->have & bits) != (b->have & bits)) {
        return 0;
    }
    for (i = 0; i < FUZZ_NCOUNTERS; i++) {
        if ((bits & (1u << i)) && fuzz_counter(a, i) != fuzz_counter(b, i)) {
            return 0;
        }
    }
    return 1;
}

/* qc_netstat_delta of two readings of the same counters. */
static void fuzz_delta_same(const qc_netstat_t *a, const qc_netstat_t *b,
                            const char *detail)
{
    double attempts = 7.0, drops = 7.0;
    unsigned both = a->have & b->have;

    qc_netstat_delta(a, b, &attempts, &drops);
    if (both & QC_NETSTAT_LISTEN_DROPS) {
        FUZZ_CHECK(drops == 0.0, detail);
    }
    else {
        FUZZ_CHECK(drops < 0.0, detail);
    }
    if ((both & QC_NETSTAT_LISTEN_DROPS)
        && (both & QC_NETSTAT_PASSIVE_OPENS)) {
        FUZZ_CHECK(attempts == 0.0, detail);
    }
    else {
        FUZZ_CHECK(attempts < 0.0, detail);
    }
}

static void fuzz_texts(const char *ext, const char *snmp)
{
    qc_netstat_t a, b, half;
    char digits[24];
    unsigned have, i;

    have = fuzz_parse(&a, 0xa5, ext, snmp);
    for (i = 0; i < FUZZ_NCOUNTERS; i++) {
        const char *text = (1u << i) & FUZZ_TCPEXT ? ext : snmp;

        if (!(have & (1u << i))) {
            FUZZ_CHECK(fuzz_counter(&a, i) == 0, ext);
            continue;
        }
        /* Read by name from its own text: the name and digits are in. */
        FUZZ_CHECK(text != NULL, ext);
        FUZZ_CHECK(strstr(text, fuzz_names[i]) != NULL, text);
        snprintf(digits, sizeof(digits), "%" PRIu64,
                 (uint64_t)fuzz_counter(&a, i));
        FUZZ_CHECK(strstr(text, digits) != NULL, text);
    }

    /* The same texts again, over other junk: the same reading. */
    FUZZ_CHECK(fuzz_parse(&b, 0x5a, ext, snmp) == have, ext);
    FUZZ_CHECK(fuzz_same(&a, &b, QC_NETSTAT_ALL), ext);
    fuzz_delta_same(&a, &b, ext);
    fuzz_delta_same(&b, &a, ext);

    /* Each text gives its own counters, whatever the other one holds. */
    fuzz_parse(&half, 0x33, ext, NULL);
    FUZZ_CHECK((half.have & ~FUZZ_TCPEXT) == 0, ext);
    FUZZ_CHECK(fuzz_same(&a, &half, FUZZ_TCPEXT), ext);
    fuzz_parse(&half, 0x3c, NULL, snmp);
    FUZZ_CHECK((half.have & FUZZ_TCPEXT) == 0, snmp);
    FUZZ_CHECK(fuzz_same(&a, &half, QC_NETSTAT_PASSIVE_OPENS), snmp);
    FUZZ_CHECK(fuzz_parse(&half, 0xff, NULL, NULL) == 0, NULL);
    FUZZ_CHECK(half.passive_opens == 0 && half.listen_overflows == 0
               && half.listen_drops == 0 && half.reqq_full_drops == 0,
               NULL);
}

/* A text being generated; long enough for 15 + 4 + 15 fields twice. */
typedef struct {
    char text[4096];
    size_t len;
} fuzz_text_t;

static void fuzz_cat(fuzz_text_t *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(t->text + t->len, sizeof(t->text) - t->len, fmt, ap);
    va_end(ap);
    FUZZ_CHECK(n >= 0 && (size_t)n < sizeof(t->text) - t->len, NULL);
    t->len += (size_t)n;
}

/* A name/value line pair: fillers, the counters wanted, fillers. */
static void fuzz_pair(fuzz_text_t *t, const char *prefix, unsigned form,
                      unsigned fillers, unsigned counters,
                      const apr_uint64_t *values, int values_line)
{
    const char *eol = form & 0x10 ? "\r\n" : "\n";
    const char *sep = form & 0x20 ? " \t " : " ";
    unsigned i, k;

    fuzz_cat(t, "%s", prefix);
    for (i = 0; i < (fillers & 0x0f); i++) {
        if (values_line) {
            fuzz_cat(t, "%s%u", sep, i * 7919u);
        }
        else {
            fuzz_cat(t, "%sFiller%u", sep, i);
        }
    }
    for (k = 0; k < FUZZ_NCOUNTERS; k++) {
        i = form & 0x80 ? FUZZ_NCOUNTERS - 1 - k : k;
        if (!(counters & (1u << i))) {
            continue;
        }
        if (values_line) {
            fuzz_cat(t, "%s%" PRIu64, sep, (uint64_t)values[i]);
        }
        else {
            fuzz_cat(t, "%s%s", sep, fuzz_names[i]);
        }
    }
    /* MaxConn is -1 in a real Tcp: line: no number, yet no end. */
    if (values_line) {
        fuzz_cat(t, "%s-1", sep);
    }
    else {
        fuzz_cat(t, "%sMaxConn", sep);
    }
    for (i = 0; i < (fillers >> 4); i++) {
        if (values_line) {
            fuzz_cat(t, "%s%u", sep, i * 104729u);
        }
        else {
            fuzz_cat(t, "%sTrailer%u", sep, i);
        }
    }
    fuzz_cat(t, "%s", eol);
}

/* The two texts of one reading, from exactly sized heap buffers. */
static void fuzz_generate(unsigned form, unsigned fillers,
                          const apr_uint64_t *values, char **ext,
                          char **snmp)
{
    const char *eol = form & 0x10 ? "\r\n" : "\n";
    unsigned mask = form & QC_NETSTAT_ALL;
    fuzz_text_t t;

    t.len = 0;
    if (form & 0x40) {
        /* Other sections first, one naming the counters in vain. */
        fuzz_cat(&t, "MPTcpExt: ListenDrops ListenOverflows%s", eol);
        fuzz_cat(&t, "MPTcpExt: 11 12%s", eol);
    }
    fuzz_pair(&t, "TcpExt:", form, fillers, mask & FUZZ_TCPEXT, values, 0);
    fuzz_pair(&t, "TcpExt:", form, fillers, mask & FUZZ_TCPEXT, values, 1);
    fuzz_cat(&t, "IpExt: InNoRoutes InOctets%sIpExt: 0 3342116259%s", eol,
             eol);
    *ext = fuzz_strndup(t.text, t.len);

    t.len = 0;
    fuzz_cat(&t, "Ip: Forwarding DefaultTTL%sIp: 2 64%s", eol, eol);
    if (form & 0x40) {
        fuzz_cat(&t, "TcpX: PassiveOpens%sTcpX: 13%s", eol, eol);
    }
    fuzz_pair(&t, "Tcp:", form, fillers, mask & QC_NETSTAT_PASSIVE_OPENS,
              values, 0);
    fuzz_pair(&t, "Tcp:", form, fillers, mask & QC_NETSTAT_PASSIVE_OPENS,
              values, 1);
    fuzz_cat(&t, "Udp: InDatagrams NoPorts%sUdp: 277 0%s", eol, eol);
    *snmp = fuzz_strndup(t.text, t.len);
}

/* A generated reading reads back as written, and as fuzz_texts wants. */
static void fuzz_reading(qc_netstat_t *n, unsigned form, unsigned fillers,
                         const apr_uint64_t *values)
{
    char *ext, *snmp;
    unsigned i;

    fuzz_generate(form, fillers, values, &ext, &snmp);
    fuzz_texts(ext, snmp);
    FUZZ_CHECK(fuzz_parse(n, 0xc3, ext, snmp) == (form & QC_NETSTAT_ALL),
               ext);
    for (i = 0; i < FUZZ_NCOUNTERS; i++) {
        if (form & (1u << i)) {
            FUZZ_CHECK(fuzz_counter(n, i) == values[i],
                       (1u << i) & FUZZ_TCPEXT ? ext : snmp);
        }
    }
}

/* What qc_netstat.h defines a counter's growth to be. */
static double fuzz_grew(apr_uint64_t prev, apr_uint64_t cur)
{
    return cur >= prev ? (double)(cur - prev) : 0.0;
}

static void fuzz_generated(fuzz_input_t *in)
{
    unsigned form = fuzz_u8(in), form2 = fuzz_u8(in);
    unsigned fillers = fuzz_u8(in), i;
    apr_uint64_t prev[FUZZ_NCOUNTERS], cur[FUZZ_NCOUNTERS];
    qc_netstat_t a, b;
    double attempts, drops, want_drops;

    for (i = 0; i < FUZZ_NCOUNTERS; i++) {
        prev[i] = fuzz_u64(in);
    }
    for (i = 0; i < FUZZ_NCOUNTERS; i++) {
        cur[i] = fuzz_u64(in);
    }
    fuzz_reading(&a, form, fillers, prev);
    fuzz_reading(&b, form2, fillers, cur);

    qc_netstat_delta(&a, &b, &attempts, &drops);
    if (!(a.have & b.have & QC_NETSTAT_LISTEN_DROPS)) {
        FUZZ_CHECK(drops < 0.0 && attempts < 0.0, NULL);
        return;
    }
    want_drops = fuzz_grew(prev[2], cur[2]);
    FUZZ_CHECK(drops == want_drops, NULL);
    if (a.have & b.have & QC_NETSTAT_PASSIVE_OPENS) {
        FUZZ_CHECK(attempts == fuzz_grew(prev[0], cur[0]) + want_drops,
                   NULL);
    }
    else {
        FUZZ_CHECK(attempts < 0.0, NULL);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_t in = { data, size };
    int has_snmp = size != 0 && memchr(data, 0, size) != NULL;
    char *ext = fuzz_field(&in);
    char *snmp = fuzz_field(&in);

    fuzz_texts(ext, has_snmp ? snmp : NULL);
    if (fuzz_more(&in)) {
        fuzz_generated(&in);
    }
    apr_pool_clear(fuzz_pool);
    return 0;
}
