/* Licensed under the Apache License, Version 2.0. */

/*
 * libFuzzer target: classification and the choice of tree, the pure
 * parts of qc_decide() (mod_qosctl/qc_cidr.c, common/qc_level.c).
 *
 * qc_classify() and qc_client_bytes() in qc_request.c take a
 * request_rec: QOSCTL_CLASS=premium in r->subprocess_env, else the
 * client address (IPv4-mapped IPv6 folded to IPv4) against the
 * QosCtlPremiumAddress ranges.  This target does the same with those
 * ranges and an address, then the tree choice: the client's keyed hash
 * N, its bucket, the per-request draw and the level for m.
 *
 * Input: QosCtlPremiumAddress arguments separated by blanks or newlines
 * (several lines' worth), NUL, then: 1 byte family (even: IPv4, odd:
 * IPv6), 16 address bytes, 8 bytes secret, 4 bytes m (QC_LEVEL_ONE
 * fixed point), 1 byte M (trees), 4 bytes sequence number, 8 bytes m as
 * a double, and the rest, if any, a QOSCTL_CLIENT value.
 *
 * Checked: the class of an IPv4 client is the same in either form, and
 * is the OR of qc_cidr_match over the ranges; N is in [0, 1), the same
 * twice, and the SipHash it comes from; the bucket is floor(64 N); the
 * draw is in [0, 1); the level is within [0, min(M, QC_MAX_TREES)], one
 * of the two trees around m, agrees between the fixed-point and double
 * forms, and does not depend on N for a whole m; fixed point converts
 * back to itself.
 */

#include <math.h>
#include <string.h>

#include "fuzz_common.h"
#include "qc_cidr.h"
#include "qc_level.h"

/* Ranges kept from one input; more would only repeat the work. */
#define FUZZ_MAX_RANGES 64

static const unsigned char fuzz_v4mapped[12] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

/* The premium ranges, as the directive (ITERATE) reads its words. */
static size_t fuzz_ranges(char *text, qc_cidr_t **out)
{
    qc_cidr_t tmp[FUZZ_MAX_RANGES];
    size_t n = 0;
    char *word, *save = NULL;

    for (word = strtok_r(text, " \t\r\n", &save);
         word != NULL && n < FUZZ_MAX_RANGES;
         word = strtok_r(NULL, " \t\r\n", &save)) {
        const char *reason = qc_cidr_parse(fuzz_pool, word, &tmp[n]);

        fuzz_check_reason(reason, word);
        if (reason == NULL) {
            n++;
        }
    }
    /* Exactly n ranges: reading past the array shows. */
    *out = fuzz_alloc(n * sizeof(qc_cidr_t));
    if (n) {
        memcpy(*out, tmp, n * sizeof(qc_cidr_t));
    }
    return n;
}

/* qc_client_bytes(): IPv4-mapped IPv6 is folded to IPv4. */
static const unsigned char *fuzz_client(const unsigned char *sa, int v6,
                                        int *family, size_t *len)
{
    if (v6 && !memcmp(sa, fuzz_v4mapped, sizeof(fuzz_v4mapped))) {
        *family = 4;
        *len = 4;
        return sa + 12;
    }
    *family = v6 ? 6 : 4;
    *len = v6 ? 16 : 4;
    return sa;
}

static void fuzz_premium(const qc_cidr_t *ranges, size_t n,
                         const unsigned char *raw, int v6)
{
    int family, any = 0, got;
    size_t len, i;
    const unsigned char *b = fuzz_client(raw, v6, &family, &len);
    unsigned char *addr = fuzz_alloc(len), *other;

    memcpy(addr, b, len);
    got = qc_cidr_match_any(ranges, n, family, addr);
    FUZZ_CHECK(got == 0 || got == 1, NULL);
    for (i = 0; i < n; i++) {
        any |= qc_cidr_match(&ranges[i], family, addr);
    }
    FUZZ_CHECK(got == any, NULL);
    if (family == 4) {
        /* Unfolded, as a dual-stack listener reports it: same class. */
        other = fuzz_alloc(16);
        memcpy(other, fuzz_v4mapped, sizeof(fuzz_v4mapped));
        memcpy(other + 12, addr, 4);
        FUZZ_CHECK(qc_cidr_match_any(ranges, n, 6, other) == got, NULL);
    }
}

static void fuzz_levels(uint32_t m_fx, unsigned M, double n, double m)
{
    unsigned top = M > QC_MAX_TREES ? QC_MAX_TREES : M;
    unsigned level = qc_level_pick_fx(m_fx, M, n);
    unsigned whole = m_fx / QC_LEVEL_ONE, fx, lvl;
    double mf = qc_level_from_fx(m_fx);

    FUZZ_CHECK(level <= top, NULL);
    FUZZ_CHECK(m_fx >= top * QC_LEVEL_ONE ? level == top
               : level == whole || level == whole + 1, NULL);
    /* "frac / 2^16 is exact, so this agrees with qc_level_pick()" */
    FUZZ_CHECK(mf == (double)m_fx / 65536.0, NULL);
    FUZZ_CHECK(qc_level_pick(mf, M, n) == level, NULL);
    if (m_fx % QC_LEVEL_ONE == 0) {
        FUZZ_CHECK(qc_level_pick_fx(m_fx, M, 0.0) == level, NULL);
    }
    FUZZ_CHECK(qc_level_to_fx(mf, M)
               == (m_fx < top * QC_LEVEL_ONE ? m_fx : top * QC_LEVEL_ONE),
               NULL);

    /* Any double m, as the controller could publish it. */
    fx = qc_level_to_fx(m, M);
    FUZZ_CHECK(fx <= top * QC_LEVEL_ONE, NULL);
    if (isnan(m)) {
        FUZZ_CHECK(fx == top * QC_LEVEL_ONE, NULL);
        FUZZ_CHECK(qc_level_pick(m, M, n) == top, NULL);
    }
    else if (m <= 0.0) {
        FUZZ_CHECK(qc_level_pick(m, M, n) == 0, NULL);
    }
    else if (m >= (double)top) {
        FUZZ_CHECK(qc_level_pick(m, M, n) == top, NULL);
    }
    else {
        FUZZ_CHECK(fabs(qc_level_from_fx(fx) - m) <= 0.5 / QC_LEVEL_ONE,
                   NULL);
        lvl = qc_level_pick(m, M, n);
        FUZZ_CHECK(lvl == (unsigned)floor(m)
                   || lvl == (unsigned)floor(m) + 1, NULL);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_t in = { data, size };
    char *text = fuzz_field(&in);
    int v6 = fuzz_u8(&in) & 1;
    unsigned char raw[16];
    uint64_t secret, h;
    uint32_t m_fx, seq;
    unsigned M, bucket;
    double m, n, draw;
    qc_cidr_t *ranges;
    size_t nranges, klen, len;
    unsigned char *key;
    int family;

    fuzz_bytes(&in, raw, sizeof(raw));
    secret = fuzz_u64(&in);
    m_fx = fuzz_u32(&in);
    M = fuzz_u8(&in);
    seq = fuzz_u32(&in);
    m = fuzz_double(&in);

    nranges = fuzz_ranges(text, &ranges);
    fuzz_premium(ranges, nranges, raw, v6);

    /* N: of QOSCTL_CLIENT when set, else of the client's address. */
    if (in.size) {
        klen = in.size;
        key = fuzz_alloc(klen);
        memcpy(key, in.data, klen);
    }
    else {
        const unsigned char *b = fuzz_client(raw, v6, &family, &len);

        klen = len;
        key = fuzz_alloc(klen);
        memcpy(key, b, klen);
    }
    n = qc_hash_keyed(secret, key, klen);
    h = qc_siphash24(secret, ~secret, key, klen);
    FUZZ_CHECK(n >= 0.0 && n < 1.0, NULL);
    FUZZ_CHECK(n == qc_hash_keyed(secret, key, klen), NULL);
    FUZZ_CHECK(n == (double)(h >> 11) / 9007199254740992.0, NULL);
    bucket = qc_hash_bucket(n);
    FUZZ_CHECK(bucket < QC_BUCKETS, NULL);
    FUZZ_CHECK(bucket == (unsigned)floor(n * QC_BUCKETS), NULL);
    FUZZ_CHECK(qc_hash_bucket(m) < QC_BUCKETS, NULL);
    draw = qc_draw_spread(n, seq);
    FUZZ_CHECK(draw >= 0.0 && draw < 1.0, NULL);

    fuzz_levels(m_fx, M, n, m);
    fuzz_levels(m_fx, M, draw, m);
    apr_pool_clear(fuzz_pool);
    return 0;
}
