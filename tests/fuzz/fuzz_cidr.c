/* Licensed under the Apache License, Version 2.0. */

/*
 * libFuzzer target: CIDR parsing and matching (mod_qosctl/qc_cidr.c).
 *
 * Input: a QosCtlPremiumAddress value ("192.0.2.0/24", "2001:db8::/32",
 * "::1"), NUL, then optionally a client: 1 byte choosing the family (4,
 * 6 or anything else) and its address bytes (4 or 16).
 *
 * Checked: a parsed range has family 4 or 6, a prefix length within it,
 * no host bits set and no bytes past the family's length; it prints back
 * (inet_ntop + "/bits") to itself; its syntax is what qc_cidr.h says (an
 * inet_pton address, 1 to 3 digits of prefix length).  Its own network
 * address matches, in IPv4-mapped form too; flipping one address bit
 * breaks the match exactly when the bit is inside the prefix; any client
 * matches as a bit-by-bit comparison says, in both IPv4 forms; and
 * qc_cidr_match_any agrees with qc_cidr_match.
 */

#include <arpa/inet.h>
#include <string.h>

#include "fuzz_common.h"
#include "qc_cidr.h"

static const unsigned char fuzz_v4mapped[12] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

static int fuzz_bit(const unsigned char *a, unsigned i)
{
    return (a[i / 8] >> (7 - i % 8)) & 1;
}

/* The address in an exactly sized buffer, so an overread shows. */
static unsigned char *fuzz_addr(const unsigned char *a, int family)
{
    size_t n = family == 6 ? 16 : 4;
    unsigned char *b = fuzz_alloc(n);

    memcpy(b, a, n);
    return b;
}

/* qc_cidr_match by its definition in qc_cidr.h, one bit at a time. */
static int fuzz_match_ref(const qc_cidr_t *c, int family,
                          const unsigned char *addr)
{
    unsigned char full[16];
    const unsigned char *cmp;
    unsigned i;

    if (family != 4 && family != 6) {
        return 0;
    }
    if (c->family == family) {
        cmp = addr;
    }
    else if (c->family == 4) {
        if (memcmp(addr, fuzz_v4mapped, sizeof(fuzz_v4mapped)) != 0) {
            return 0;
        }
        cmp = addr + 12;
    }
    else {
        memcpy(full, fuzz_v4mapped, sizeof(fuzz_v4mapped));
        memcpy(full + 12, addr, 4);
        cmp = full;
    }
    for (i = 0; i < c->bits; i++) {
        if (fuzz_bit(c->addr, i) != fuzz_bit(cmp, i)) {
            return 0;
        }
    }
    return 1;
}

static void fuzz_match(const qc_cidr_t *c, int family,
                       const unsigned char *a, const char *s)
{
    const unsigned char *addr = fuzz_addr(a, family);
    int got = qc_cidr_match(c, family, addr);

    FUZZ_CHECK(got == fuzz_match_ref(c, family, addr), s);
    FUZZ_CHECK(qc_cidr_match_any(c, 1, family, addr) == got, s);
    FUZZ_CHECK(qc_cidr_match_any(c, 0, family, addr) == 0, s);
    /* An IPv4 client, as itself and as an IPv4-mapped IPv6 address. */
    if (family == 4) {
        unsigned char mapped[16];

        memcpy(mapped, fuzz_v4mapped, sizeof(fuzz_v4mapped));
        memcpy(mapped + 12, a, 4);
        FUZZ_CHECK(qc_cidr_match(c, 6, fuzz_addr(mapped, 6)) == got, s);
    }
}

/* What qc_cidr.h accepts, by its own reading of the text. */
static int fuzz_syntax_ok(const char *s)
{
    const char *slash = strchr(s, '/');
    size_t alen = slash ? (size_t)(slash - s) : strlen(s);
    unsigned char buf[16];
    char text[64];
    int six;

    if (alen == 0 || alen >= 46) {
        return 0;
    }
    memcpy(text, s, alen);
    text[alen] = '\0';
    six = strchr(text, ':') != NULL;
    if (inet_pton(six ? AF_INET6 : AF_INET, text, buf) != 1) {
        return 0;
    }
    if (slash) {
        const char *p = slash + 1;
        size_t n = strlen(p);
        unsigned bits = 0, i;

        if (n < 1 || n > 3 || strspn(p, "0123456789") != n) {
            return 0;
        }
        for (i = 0; i < n; i++) {
            bits = bits * 10 + (unsigned)(p[i] - '0');
        }
        if (bits > (six ? 128u : 32u)) {
            return 0;
        }
    }
    return 1;
}

static void fuzz_parsed(const qc_cidr_t *c, const char *s)
{
    unsigned max_bits = c->family == 6 ? 128 : 32, i;
    char text[INET6_ADDRSTRLEN + 8];
    unsigned char flipped[16];
    qc_cidr_t again;
    size_t n;

    FUZZ_CHECK(c->family == 4 || c->family == 6, s);
    FUZZ_CHECK(c->bits <= max_bits, s);
    for (i = c->bits; i < 128; i++) {
        FUZZ_CHECK(fuzz_bit(c->addr, i) == 0, s);
    }

    /* Printed and parsed again: the same range. */
    FUZZ_CHECK(inet_ntop(c->family == 6 ? AF_INET6 : AF_INET, c->addr,
                         text, INET6_ADDRSTRLEN) != NULL, s);
    n = strlen(text);
    snprintf(text + n, sizeof(text) - n, "/%u", c->bits);
    memset(&again, 0xa5, sizeof(again));
    FUZZ_CHECK(qc_cidr_parse(fuzz_pool, text, &again) == NULL, text);
    FUZZ_CHECK(qc_cidr_same(&again, c), text);

    /* Its own network address matches; a flipped bit inside does not. */
    fuzz_match(c, c->family, c->addr, s);
    FUZZ_CHECK(qc_cidr_match(c, c->family, fuzz_addr(c->addr, c->family))
               == 1, s);
    if (c->family == 6 && c->bits >= 96
        && !memcmp(c->addr, fuzz_v4mapped, sizeof(fuzz_v4mapped))) {
        FUZZ_CHECK(qc_cidr_match(c, 4, fuzz_addr(c->addr + 12, 4)) == 1, s);
    }
    for (i = 0; i < max_bits; i++) {
        memcpy(flipped, c->addr, sizeof(flipped));
        flipped[i / 8] ^= (unsigned char)(0x80 >> (i % 8));
        FUZZ_CHECK(qc_cidr_match(c, c->family,
                                 fuzz_addr(flipped, c->family))
                   == (i >= c->bits), s);
    }
    FUZZ_CHECK(qc_cidr_match(NULL, c->family, c->addr) == 0, s);
    FUZZ_CHECK(qc_cidr_match(c, c->family, NULL) == 0, s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_t in = { data, size };
    const char *s = fuzz_field(&in);
    int more = fuzz_more(&in);
    unsigned fam = fuzz_u8(&in);
    unsigned char client[16];
    qc_cidr_t c;
    const char *reason;

    fuzz_bytes(&in, client, sizeof(client));
    reason = qc_cidr_parse(fuzz_pool, s, &c);
    fuzz_check_reason(reason, s);
    FUZZ_CHECK((reason == NULL) == fuzz_syntax_ok(s), s);
    if (reason == NULL) {
        fuzz_parsed(&c, s);
        if (more) {
            /* 4 and 6 mostly; 0 (AF_UNSPEC-like) and others never match */
            int family = fam % 4 == 0 ? 4 : fam % 4 == 1 ? 6 : (int)fam;

            if (family == 4 || family == 6) {
                fuzz_match(&c, family, client, s);
            }
            else {
                FUZZ_CHECK(qc_cidr_match(&c, family, client) == 0, s);
            }
        }
    }
    apr_pool_clear(fuzz_pool);
    return 0;
}
