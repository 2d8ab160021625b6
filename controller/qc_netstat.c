/* Licensed under the Apache License, Version 2.0. */

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "qc_netstat.h"

/* The files are 4 KB (netstat) and 1.3 KB (snmp) on Linux 6. */
#define QC_NETSTAT_BUFSIZE 16384

typedef struct {
    const char *name;
    unsigned bit;
} qc_netstat_field_t;

static const qc_netstat_field_t qc_netstat_tcpext[] = {
    { "ListenOverflows", QC_NETSTAT_LISTEN_OVERFLOWS },
    { "ListenDrops", QC_NETSTAT_LISTEN_DROPS },
    { "TCPReqQFullDrop", QC_NETSTAT_REQQ_FULL_DROPS },
    { NULL, 0 }
};

static const qc_netstat_field_t qc_netstat_tcp[] = {
    { "PassiveOpens", QC_NETSTAT_PASSIVE_OPENS },
    { NULL, 0 }
};

static apr_uint64_t *qc_netstat_slot(qc_netstat_t *n, unsigned bit)
{
    switch (bit) {
    case QC_NETSTAT_PASSIVE_OPENS:
        return &n->passive_opens;
    case QC_NETSTAT_LISTEN_OVERFLOWS:
        return &n->listen_overflows;
    case QC_NETSTAT_LISTEN_DROPS:
        return &n->listen_drops;
    default:
        return &n->reqq_full_drops;
    }
}

static int qc_netstat_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* The next token of the line at p, its length in *len (0: line's end). */
static const char *qc_netstat_token(const char *p, size_t *len)
{
    size_t l = 0;

    while (qc_netstat_blank(*p)) {
        p++;
    }
    while (p[l] && p[l] != '\n' && !qc_netstat_blank(p[l])) {
        l++;
    }
    *len = l;
    return p;
}

/* The rest of the first line that starts with prefix, or NULL. */
static const char *qc_netstat_line(const char *p, const char *prefix)
{
    size_t len = strlen(prefix);

    while (p) {
        while (qc_netstat_blank(*p)) {
            p++;
        }
        if (!strncmp(p, prefix, len)) {
            return p + len;
        }
        p = strchr(p, '\n');
        if (p) {
            p++;
        }
    }
    return NULL;
}

/* A decimal token up to 2^64-1; -1 for anything else ("-1", "12x"). */
static int qc_netstat_number(const char *p, size_t len, apr_uint64_t *v)
{
    apr_uint64_t x = 0;
    size_t i;

    if (len == 0) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        unsigned d = (unsigned)(p[i] - '0');

        if (d > 9 || x > (APR_UINT64_MAX - d) / 10) {
            return -1;
        }
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

/*
 * The fields of one "prefix names" / "prefix values" line pair, matched
 * by name: kernels add, remove and reorder fields.
 */
static void qc_netstat_scan(qc_netstat_t *n, const char *text,
                            const char *prefix,
                            const qc_netstat_field_t *fields)
{
    size_t plen = strlen(prefix);
    const char *names, *values;

    if (!text || !(names = qc_netstat_line(text, prefix))
        || !(values = strchr(names, '\n'))) {
        return;
    }
    /* Only the very next line holds this pair's values. */
    values++;
    while (qc_netstat_blank(*values)) {
        values++;
    }
    if (strncmp(values, prefix, plen)) {
        return;
    }
    values += plen;
    for (;;) {
        const qc_netstat_field_t *f;
        size_t nlen, vlen;

        names = qc_netstat_token(names, &nlen);
        values = qc_netstat_token(values, &vlen);
        if (nlen == 0 || vlen == 0) {
            return;
        }
        for (f = fields; f->name; f++) {
            apr_uint64_t v;

            if (!(n->have & f->bit) && strlen(f->name) == nlen
                && !memcmp(f->name, names, nlen)
                && qc_netstat_number(values, vlen, &v) == 0) {
                *qc_netstat_slot(n, f->bit) = v;
                n->have |= f->bit;
            }
        }
        names += nlen;
        values += vlen;
    }
}

unsigned qc_netstat_parse(qc_netstat_t *n, const char *netstat_text,
                          const char *snmp_text)
{
    memset(n, 0, sizeof(*n));
    qc_netstat_scan(n, netstat_text, "TcpExt:", qc_netstat_tcpext);
    qc_netstat_scan(n, snmp_text, "Tcp:", qc_netstat_tcp);
    return n->have;
}

/*
 * The file's text into buf, NUL-terminated; -1 if it cannot be read.
 * A file the buffer cannot hold loses its last, partial line: a number
 * cut short must not be read as a smaller one.
 */
static int qc_netstat_slurp(const char *path, char *buf, size_t size)
{
    size_t len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        return -1;
    }
    while (len < size - 1) {
        ssize_t got = read(fd, buf + len, size - 1 - len);

        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            close(fd);
            return -1;
        }
        if (got == 0) {
            break;
        }
        len += (size_t)got;
    }
    close(fd);
    if (len == size - 1) {
        while (len > 0 && buf[len - 1] != '\n') {
            len--;
        }
    }
    buf[len] = '\0';
    return 0;
}

int qc_netstat_read(qc_netstat_t *n, const char *netstat_path,
                    const char *snmp_path)
{
    char ext[QC_NETSTAT_BUFSIZE], snmp[QC_NETSTAT_BUFSIZE];
    int have_ext, have_snmp;

    have_ext = qc_netstat_slurp(netstat_path ? netstat_path
                                : "/proc/net/netstat", ext, sizeof(ext)) == 0;
    have_snmp = qc_netstat_slurp(snmp_path ? snmp_path : "/proc/net/snmp",
                                 snmp, sizeof(snmp)) == 0;
    qc_netstat_parse(n, have_ext ? ext : NULL, have_snmp ? snmp : NULL);
    return have_ext || have_snmp ? 0 : -1;
}

/* cur - prev, or 0 when the counter went backwards. */
static double qc_netstat_grew(apr_uint64_t prev, apr_uint64_t cur)
{
    return cur >= prev ? (double)(cur - prev) : 0.0;
}

double qc_syn_ratio(double attempts, double drops)
{
    double answered = attempts - drops;

    if (!(attempts > 0.0) || !(drops > 0.0)) {
        return 0.0;
    }
    return drops / (answered > 1.0 ? answered : 1.0);
}

void qc_netstat_delta(const qc_netstat_t *prev, const qc_netstat_t *cur,
                      double *attempts, double *drops)
{
    unsigned both = prev->have & cur->have;

    *attempts = *drops = -1.0;
    if (!(both & QC_NETSTAT_LISTEN_DROPS)) {
        return;
    }
    *drops = qc_netstat_grew(prev->listen_drops, cur->listen_drops);
    /*
     * PassiveOpens counts a connection when its child socket is made,
     * after the accept-queue check; every ListenDrops is a SYN or ACK
     * that made none (but for rare failures after the child exists),
     * so the two are disjoint and their sum is every try to enter the
     * queue, a retransmitted one counted again, as Tsai et al. count.
     */
    if (both & QC_NETSTAT_PASSIVE_OPENS) {
        *attempts = qc_netstat_grew(prev->passive_opens, cur->passive_opens)
                    + *drops;
    }
}
