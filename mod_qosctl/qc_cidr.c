/* Licensed under the Apache License, Version 2.0. */

#include <arpa/inet.h>
#include <string.h>

#include "qc_cidr.h"

/* Longest textual IPv6 address, "ffff:...:255.255.255.255", plus NUL. */
#define QC_ADDR_TEXT_MAX 46

static const unsigned char v4mapped_prefix[12] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

/* Leading bits of a and b agree? */
static int prefix_equal(const unsigned char *a, const unsigned char *b,
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

const char *qc_cidr_parse(const char *s, qc_cidr_t *out)
{
    char text[QC_ADDR_TEXT_MAX];
    const char *slash, *p;
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
    /* inet_pton insists on four decimal parts, unlike inet_aton. */
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
        p = slash + 1;
        if (*p == '\0') {
            return "missing prefix length after '/'";
        }
        bits = 0;
        for (i = 0; p[i] != '\0'; i++) {
            if (p[i] < '0' || p[i] > '9' || i >= 3) {
                return "prefix length is not a number";
            }
            bits = bits * 10 + (unsigned)(p[i] - '0');
        }
        if (bits > max_bits) {
            return c.family == 4 ? "prefix length above 32"
                                 : "prefix length above 128";
        }
    }
    c.bits = (unsigned char)bits;

    /* Clear host bits, so that matching compares prefixes only. */
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
    *out = c;
    return NULL;
}

int qc_cidr_match(const qc_cidr_t *c, int family, const unsigned char *addr)
{
    unsigned char mapped[16];

    if (c == NULL || addr == NULL) {
        return 0;
    }
    if (family == c->family) {
        return prefix_equal(c->addr, addr, c->bits);
    }
    if (c->family == 4 && family == 6) {
        if (memcmp(addr, v4mapped_prefix, sizeof(v4mapped_prefix)) != 0) {
            return 0;
        }
        return prefix_equal(c->addr, addr + 12, c->bits);
    }
    if (c->family == 6 && family == 4) {
        /* A range written as ::ffff:a.b.c.d/n still covers v4 clients. */
        memcpy(mapped, v4mapped_prefix, sizeof(v4mapped_prefix));
        memcpy(mapped + 12, addr, 4);
        return prefix_equal(c->addr, mapped, c->bits);
    }
    return 0;
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
