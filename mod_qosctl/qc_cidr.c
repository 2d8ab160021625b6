/* Licensed under the Apache License, Version 2.0. */

/*
 * The directive's text is read here, strictly; the matching is APR's
 * (apr_ipsubnet_create/apr_ipsubnet_test), as for httpd's Require ip.
 * APR needs help at two edges, so one range may become up to four APR
 * subnets:
 * - it refuses a prefix length of 0, so a /0 is its two /1 halves;
 * - it tests IPv4 clients, plain or in IPv4-mapped IPv6 form, against
 *   IPv4 subnets only, and refuses a mapped address as a subnet.  A
 *   range written in mapped form (::ffff:10.0.0.0/104) is therefore
 *   the IPv4 subnet it maps (10.0.0.0/8), and an IPv6 range wider than
 *   /96 that covers the mapped block (::/0) also covers every IPv4
 *   client.
 */

#include <arpa/inet.h>
#include <string.h>

#include "apr_strings.h"

#include "qc_cidr.h"

/* Longest textual IPv6 address, "ffff:...:255.255.255.255", plus NUL. */
#define QC_ADDR_TEXT_MAX 46

static const unsigned char v4mapped_prefix[12] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

/* Leading bits of a and b agree? */
static int qc_prefix_equal(const unsigned char *a, const unsigned char *b,
                           unsigned bits)
{
    unsigned whole = bits / 8, rest = bits % 8;

    if (memcmp(a, b, whole) != 0) {
        return 0;
    }
    if (rest != 0) {
        unsigned char mask = (unsigned char)(0xff << (8 - rest));

        return ((a[whole] ^ b[whole]) & mask) == 0;
    }
    return 1;
}

/* Add the APR subnet(s) of addr/bits in the family af to c. */
static const char *qc_cidr_add(apr_pool_t *p, qc_cidr_t *c, int af,
                               const unsigned char *addr, unsigned bits)
{
    char text[QC_ADDR_TEXT_MAX];
    const char *half[2];
    unsigned i, n = 1;

    if (!inet_ntop(af, addr, text, sizeof(text))) {
        return "not an IPv4 or IPv6 address";
    }
    half[0] = text;
    if (bits == 0) {
        half[0] = af == AF_INET ? "0.0.0.0" : "::";
        half[1] = af == AF_INET ? "128.0.0.0" : "8000::";
        n = 2;
        bits = 1;
    }
    for (i = 0; i < n; i++) {
        if (c->nsub >= QC_CIDR_SUBNETS
            || apr_ipsubnet_create(&c->sub[c->nsub], half[i],
                                   apr_itoa(p, (int)bits), p)
               != APR_SUCCESS) {
            return "not an address range APR takes";
        }
        c->nsub++;
    }
    return NULL;
}

/* The subnets APR tests for the range c (see above). */
static const char *qc_cidr_subnets(apr_pool_t *p, qc_cidr_t *c)
{
    static const unsigned char any[4] = { 0, 0, 0, 0 };
    const char *err;

    if (c->family == 4) {
        return qc_cidr_add(p, c, AF_INET, c->addr, c->bits);
    }
    if (c->bits >= 96 && !memcmp(c->addr, v4mapped_prefix, 12)) {
        return qc_cidr_add(p, c, AF_INET, c->addr + 12, c->bits - 96u);
    }
    if ((err = qc_cidr_add(p, c, AF_INET6, c->addr, c->bits)) != NULL) {
        return err;
    }
    if (c->bits < 96 && qc_prefix_equal(c->addr, v4mapped_prefix,
                                        c->bits)) {
        return qc_cidr_add(p, c, AF_INET, any, 0);
    }
    return NULL;
}

const char *qc_cidr_parse(apr_pool_t *p, const char *s, qc_cidr_t *out)
{
    char text[QC_ADDR_TEXT_MAX];
    const char *slash, *q, *err;
    size_t addr_len;
    unsigned max_bits, bits, i;
    int family;
    qc_cidr_t c;

    if (s == NULL || *s == '\0') {
        return "empty value";
    }
    slash = strchr(s, '/');
    addr_len = slash ? (size_t)(slash - s) : strlen(s);
    if (addr_len == 0) {
        return "missing address before '/'";
    }
    if (addr_len >= sizeof(text)) {
        return "not an IPv4 or IPv6 address";
    }
    memcpy(text, s, addr_len);
    text[addr_len] = '\0';

    memset(&c, 0, sizeof(c));
    /* inet_pton insists on four decimal parts, unlike inet_aton and
     * APR, which read "10.1" as 10.1.0.0/16. */
    if (strchr(text, ':') != NULL) {
        family = AF_INET6;
        c.family = 6;
        max_bits = 128;
    }
    else {
        family = AF_INET;
        c.family = 4;
        max_bits = 32;
    }
    if (inet_pton(family, text, c.addr) != 1) {
        return "not an IPv4 or IPv6 address";
    }

    bits = max_bits;
    if (slash != NULL) {
        q = slash + 1;
        if (*q == '\0') {
            return "missing prefix length after '/'";
        }
        bits = 0;
        for (i = 0; q[i] != '\0'; i++) {
            if (q[i] < '0' || q[i] > '9' || i >= 3) {
                return "prefix length is not a number";
            }
            bits = bits * 10 + (unsigned)(q[i] - '0');
        }
        if (bits > max_bits) {
            return c.family == 4 ? "prefix length above 32"
                                 : "prefix length above 128";
        }
    }
    c.bits = (unsigned char)bits;

    /* The network address, as Require ip keeps it. */
    for (i = 0; i < max_bits / 8; i++) {
        if (bits >= (i + 1) * 8) {
            continue;
        }
        if (bits <= i * 8) {
            c.addr[i] = 0;
        }
        else {
            c.addr[i] &= (unsigned char)(0xff << (8 - (bits - i * 8)));
        }
    }
    if ((err = qc_cidr_subnets(p, &c)) != NULL) {
        return err;
    }
    *out = c;
    return NULL;
}

int qc_cidr_same(const qc_cidr_t *c, const qc_cidr_t *d)
{
    return c->family == d->family && c->bits == d->bits
           && !memcmp(c->addr, d->addr, sizeof(c->addr));
}

int qc_cidr_match_sa(const qc_cidr_t *c, const apr_sockaddr_t *sa)
{
    unsigned i;

    if (c == NULL || sa == NULL
        || (sa->family != APR_INET && sa->family != APR_INET6)) {
        return 0;
    }
    for (i = 0; i < c->nsub; i++) {
        /* APR's prototype is not const; it only reads. */
        if (apr_ipsubnet_test(c->sub[i], (apr_sockaddr_t *)sa)) {
            return 1;
        }
    }
    return 0;
}

int qc_cidr_match(const qc_cidr_t *c, int family, const unsigned char *addr)
{
    apr_sockaddr_t sa;

    if (addr == NULL || (family != 4 && family != 6)) {
        return 0;
    }
    memset(&sa, 0, sizeof(sa));
    if (family == 4) {
        sa.family = APR_INET;
        sa.sa.sin.sin_family = AF_INET;
        memcpy(&sa.sa.sin.sin_addr, addr, 4);
        sa.ipaddr_ptr = &sa.sa.sin.sin_addr;
        sa.ipaddr_len = 4;
    }
    else {
        sa.family = APR_INET6;
        sa.sa.sin6.sin6_family = AF_INET6;
        memcpy(&sa.sa.sin6.sin6_addr, addr, 16);
        sa.ipaddr_ptr = &sa.sa.sin6.sin6_addr;
        sa.ipaddr_len = 16;
    }
    return qc_cidr_match_sa(c, &sa);
}

int qc_cidr_match_any(const qc_cidr_t *c, size_t n, int family,
                      const unsigned char *addr)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (qc_cidr_match(&c[i], family, addr)) {
            return 1;
        }
    }
    return 0;
}

int qc_cidr_match_any_sa(const qc_cidr_t *c, size_t n,
                         const apr_sockaddr_t *sa)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (qc_cidr_match_sa(&c[i], sa)) {
            return 1;
        }
    }
    return 0;
}
