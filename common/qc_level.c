/* Licensed under the Apache License, Version 2.0. */

#include <math.h>
#include <stdint.h>

#include "qc_level.h"

#define FNV64_OFFSET 0xcbf29ce484222325ULL
#define FNV64_PRIME 0x100000001b3ULL

/*
 * FNV-1a alone mixes the last bytes poorly into the high bits, and
 * addresses of one network differ only in their last bytes; murmur3's
 * finalizer spreads every input bit over the whole word.
 */
static uint64_t fmix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

double qc_hash_unit(const unsigned char *bytes, size_t len)
{
    uint64_t h = FNV64_OFFSET;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= bytes[i];
        h *= FNV64_PRIME;
    }
    h = fmix64(h);
    /* 53 bits fill a double's mantissa exactly, so N < 1 always. */
    return (double)(h >> 11) * (1.0 / 9007199254740992.0);
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
