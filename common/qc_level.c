/* Licensed under the Apache License, Version 2.0. */

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "qc_level.h"

/* Threads of one process share a vote: their plain loads and stores,
 * with no order, which is all the vote needs. */
#if defined(__GNUC__)
#define QC_GET(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define QC_SET(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#else
#define QC_GET(p) (*(p))
#define QC_SET(p, v) (*(p) = (v))
#endif

#define QC_ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define QC_SIPROUND                                                     \
    do {                                                                \
        v0 += v1; v1 = QC_ROTL(v1, 13); v1 ^= v0; v0 = QC_ROTL(v0, 32); \
        v2 += v3; v3 = QC_ROTL(v3, 16); v3 ^= v2;                       \
        v0 += v3; v3 = QC_ROTL(v3, 21); v3 ^= v0;                       \
        v2 += v1; v1 = QC_ROTL(v1, 17); v1 ^= v2; v2 = QC_ROTL(v2, 32); \
    } while (0)

static uint64_t qc_le64(const unsigned char *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16
           | (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32
           | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48
           | (uint64_t)p[7] << 56;
}

/*
 * SipHash (Aumasson and Bernstein), the keyed hash made against hash
 * flooding: without the key, outputs cannot be predicted or steered.
 * Little-endian reading, so every host agrees.
 */
uint64_t qc_siphash24(uint64_t k0, uint64_t k1, const unsigned char *bytes,
                      size_t len)
{
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0;
    uint64_t v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0;
    uint64_t v3 = 0x7465646279746573ULL ^ k1;
    uint64_t m, b = (uint64_t)len << 56;
    size_t i, tail = len & 7;

    for (i = 0; i + 8 <= len; i += 8) {
        m = qc_le64(bytes + i);
        v3 ^= m;
        QC_SIPROUND;
        QC_SIPROUND;
        v0 ^= m;
    }
    switch (tail) {
    case 7: b |= (uint64_t)bytes[i + 6] << 48; /* fall through */
    case 6: b |= (uint64_t)bytes[i + 5] << 40; /* fall through */
    case 5: b |= (uint64_t)bytes[i + 4] << 32; /* fall through */
    case 4: b |= (uint64_t)bytes[i + 3] << 24; /* fall through */
    case 3: b |= (uint64_t)bytes[i + 2] << 16; /* fall through */
    case 2: b |= (uint64_t)bytes[i + 1] << 8;  /* fall through */
    case 1: b |= (uint64_t)bytes[i];           /* fall through */
    case 0: break;
    }
    v3 ^= b;
    QC_SIPROUND;
    QC_SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    QC_SIPROUND;
    QC_SIPROUND;
    QC_SIPROUND;
    QC_SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

double qc_hash_keyed(uint64_t secret, const unsigned char *bytes,
                     size_t len)
{
    /* The segment holds 64 bits of secret; the second key word only
     * has to differ from the first. */
    uint64_t h = qc_siphash24(secret, ~secret, bytes, len);

    /* 53 bits fill a double's mantissa exactly, so N < 1 always. */
    return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

unsigned qc_hash_bucket(double n)
{
    if (!(n > 0.0)) {           /* also NaN */
        return 0;
    }
    if (n >= 1.0) {
        return QC_BUCKETS - 1;
    }
    return (unsigned)(n * QC_BUCKETS);
}

double qc_draw_spread(double n, uint32_t seq)
{
    /* seq * phi mod 1 in 32-bit fixed point (Fibonacci hashing): exact,
     * and it wraps around 2^32 without a seam. */
    uint32_t step = seq * QC_PHI_FRAC32;
    double d = n + (double)step * (1.0 / 4294967296.0);

    return d >= 1.0 ? d - 1.0 : d;
}

static unsigned clamp_trees(unsigned M)
{
    return M > QC_MAX_TREES ? QC_MAX_TREES : M;
}

unsigned qc_level_pick(double m, unsigned M, double n)
{
    double whole, frac;

    M = clamp_trees(M);
    if (isnan(m)) {
        /* A broken controller should not take the site down: fail open */
        return M;
    }
    if (m <= 0.0) {
        return 0;
    }
    if (m >= (double)M) {
        return M;
    }
    whole = floor(m);
    frac = m - whole;
    return (unsigned)whole + (n < frac ? 1u : 0u);
}

unsigned qc_level_pick_fx(unsigned m_fx, unsigned M, double n)
{
    unsigned whole, frac;

    M = clamp_trees(M);
    if (m_fx >= M * QC_LEVEL_ONE) {
        return M;
    }
    whole = m_fx / QC_LEVEL_ONE;
    frac = m_fx % QC_LEVEL_ONE;
    /* frac / 2^16 is exact, so this agrees with qc_level_pick(). */
    return whole + (n < (double)frac / QC_LEVEL_ONE ? 1u : 0u);
}

unsigned qc_level_pick_request(unsigned m_fx, unsigned M, double n,
                               int spread, uint32_t seq)
{
    /* An integral m gives every request the same tree. */
    if ((m_fx % QC_LEVEL_ONE) == 0) {
        return qc_level_pick_fx(m_fx, M, 0.0);
    }
    if (m_fx < QC_LEVEL_ONE || spread) {
        return qc_level_pick_fx(m_fx, M, qc_draw_spread(n, seq));
    }
    return qc_level_pick_fx(m_fx, M, n);
}

int qc_level_vote(qc_vote_t *v, double n)
{
    uint64_t key;
    uint32_t count = QC_GET(&v->count);

    memcpy(&key, &n, sizeof(key));
    if (QC_GET(&v->key) == key) {
        if (count < QC_VOTE_MAX) {
            QC_SET(&v->count, count + 1);
        }
        return count >= QC_VOTE_LEAD;
    }
    if (count == 0) {
        QC_SET(&v->key, key);
        QC_SET(&v->count, 1);
    }
    else {
        QC_SET(&v->count, count - 1);
    }
    return 0;
}

/* Whether the balance runs at m_fx against share_fx (see qc_level.h). */
static int balanced(unsigned m_fx, unsigned share_fx, unsigned M)
{
    unsigned whole = m_fx / QC_LEVEL_ONE;

    return whole > 0 && whole < clamp_trees(M) && m_fx % QC_LEVEL_ONE != 0
           && share_fx / QC_LEVEL_ONE == whole;
}

void qc_level_pay(unsigned m_fx, unsigned share_fx, unsigned M,
                  unsigned level, qc_balance_add_fn add, void *ctx)
{
    int64_t f = (int64_t)(share_fx % QC_LEVEL_ONE);

    if (balanced(m_fx, share_fx, M)) {
        add(ctx, level > m_fx / QC_LEVEL_ONE ? f - (int64_t)QC_LEVEL_ONE
                                             : f);
    }
}

int qc_level_keeps(unsigned m0_fx, unsigned m_fx, unsigned M,
                   unsigned level, unsigned run, double age, double gap)
{
    unsigned whole = m_fx / QC_LEVEL_ONE;
    unsigned moved = m_fx > m0_fx ? m_fx - m0_fx : m0_fx - m_fx;

    if (whole == 0 || m_fx >= clamp_trees(M) * QC_LEVEL_ONE
        || level == 0 || level > clamp_trees(M)) {
        return 0;
    }
    if (gap >= 0.0 && gap < QC_KEEP_GAP && run < QC_KEEP_RUN
        && age >= 0.0 && age < QC_KEEP_AGE) {
        return 1;
    }
    if (moved > QC_KEEP_FX || level == clamp_trees(M)) {
        return 0;
    }
    if (m_fx % QC_LEVEL_ONE == 0) {
        return level == whole;
    }
    return level == whole || level == whole + 1;
}

unsigned qc_level_pick_balanced(unsigned m_fx, unsigned share_fx,
                                unsigned M, double n, int spread,
                                uint32_t seq, qc_balance_add_fn add,
                                void *ctx)
{
    unsigned whole = m_fx / QC_LEVEL_ONE, level;
    int64_t f = (int64_t)(share_fx % QC_LEVEL_ONE);

    if (!balanced(m_fx, share_fx, M)) {
        return qc_level_pick_request(m_fx, M, n, spread, seq);
    }
    if (spread) {
        /* One heavy key's requests are split anyway, so which of them go
         * up costs no client its tree: they carry the count. */
        if (add(ctx, f) + f < (int64_t)QC_LEVEL_ONE / 2) {
            return whole;
        }
        add(ctx, -(int64_t)QC_LEVEL_ONE);
        return whole + 1;
    }
    level = qc_level_pick_fx(m_fx, M, n);
    qc_level_pay(m_fx, share_fx, M, level, add, ctx);
    return level;
}

unsigned qc_level_to_fx(double m, unsigned M)
{
    M = clamp_trees(M);
    if (isnan(m) || m >= (double)M) {
        return M * QC_LEVEL_ONE;
    }
    if (m <= 0.0) {
        return 0;
    }
    return (unsigned)lround(m * QC_LEVEL_ONE);
}

double qc_level_from_fx(unsigned m_fx)
{
    return (double)m_fx / QC_LEVEL_ONE;
}
