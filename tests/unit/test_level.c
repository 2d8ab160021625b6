/* Licensed under the Apache License, Version 2.0. */

#include <math.h>

#include "qc_level.h"
#include "qc_test.h"

#define CLIENTS 2000
#define BINS 10

/*
 * chi-square with 9 degrees of freedom exceeds 27.9 with probability
 * 0.001; the data are fixed, so a generous bound only guards against a
 * broken hash, never flaps.
 */
#define CHI2_BOUND 35.0

/* The i-th of CLIENTS consecutive addresses in 10.0.0.0/8. */
static void v4_client(unsigned i, unsigned char addr[4])
{
    addr[0] = 10;
    addr[1] = (unsigned char)(i >> 16);
    addr[2] = (unsigned char)(i >> 8);
    addr[3] = (unsigned char)i;
}

/* The i-th consecutive address in 2001:db8::/64. */
static void v6_client(unsigned i, unsigned char addr[16])
{
    static const unsigned char net[8] = {
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0
    };

    memset(addr, 0, 16);
    memcpy(addr, net, sizeof(net));
    addr[14] = (unsigned char)(i >> 8);
    addr[15] = (unsigned char)i;
}

static double client_hash(int v6, unsigned i)
{
    unsigned char addr[16];

    if (v6) {
        v6_client(i, addr);
        return qc_hash_unit(addr, 16);
    }
    v4_client(i, addr);
    return qc_hash_unit(addr, 4);
}

/* ---- the hash --------------------------------------------------------- */

START_TEST(hash_stable)
{
    const unsigned char a[4] = { 10, 0, 0, 1 };
    unsigned char b[4];
    double n = qc_hash_unit(a, 4);
    int i;

    /* Same bytes from another buffer, called again and again. */
    memcpy(b, a, 4);
    for (i = 0; i < 100; i++) {
        ck_assert(qc_hash_unit(b, 4) == n);
    }
    b[3] = 2;
    ck_assert(qc_hash_unit(b, 4) != n);
    /* Length counts: a prefix of the bytes is a different client. */
    ck_assert(qc_hash_unit(a, 3) != n);
}
END_TEST

START_TEST(hash_pinned)
{
    /*
     * Values from an independent implementation (FNV-1a 64, then
     * murmur3 fmix64, top 53 bits).  Every process and every restart
     * must agree, or clients would hop between trees; a seeded or
     * changed hash shows up here first.
     */
    const unsigned char v4[4] = { 10, 0, 0, 1 };
    const unsigned char v4b[4] = { 192, 0, 2, 1 };
    const unsigned char v6[16] = {
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1
    };

    ck_assert(qc_hash_unit(v4, 4) == 0x1.28e73409417ecp-3);
    ck_assert(qc_hash_unit(v4b, 4) == 0x1.00726304d4451p-1);
    ck_assert(qc_hash_unit(v6, 16) == 0x1.1bd8565a161cap-1);
    ck_assert(qc_hash_unit(v4, 0) == 0x1.dfa03ec175325p-1);
    ck_assert(qc_hash_unit(NULL, 0) == 0x1.dfa03ec175325p-1);
}
END_TEST

START_TEST(hash_range)
{
    unsigned char bytes[8];
    unsigned i, j;

    for (i = 0; i < CLIENTS; i++) {
        double n4 = client_hash(0, i), n6 = client_hash(1, i), n;

        ck_assert_msg(n4 >= 0.0 && n4 < 1.0, "v4 #%u: %g", i, n4);
        ck_assert_msg(n6 >= 0.0 && n6 < 1.0, "v6 #%u: %g", i, n6);
        for (j = 0; j < sizeof(bytes); j++) {
            bytes[j] = (unsigned char)(i * 131 + j * 7919);
        }
        n = qc_hash_unit(bytes, 1 + i % sizeof(bytes));
        ck_assert_msg(n >= 0.0 && n < 1.0, "bytes #%u: %g", i, n);
    }
}
END_TEST

static void check_uniform(int v6)
{
    unsigned bins[BINS] = { 0 }, below_half = 0, i;
    double expect = (double)CLIENTS / BINS, chi2 = 0.0, frac;

    for (i = 0; i < CLIENTS; i++) {
        double n = client_hash(v6, i);

        bins[(unsigned)(n * BINS)]++;
        below_half += n < 0.5;
    }
    for (i = 0; i < BINS; i++) {
        chi2 += (bins[i] - expect) * (bins[i] - expect) / expect;
    }
    frac = (double)below_half / CLIENTS;
    ck_assert_msg(chi2 < CHI2_BOUND, "%s: chi-square %.2f",
                  v6 ? "v6" : "v4", chi2);
    ck_assert_msg(frac >= 0.45 && frac <= 0.55, "%s: %.3f below 0.5",
                  v6 ? "v6" : "v4", frac);
}

START_TEST(hash_uniform_v4)
{
    /* Consecutive addresses: one busy network, the hardest case. */
    check_uniform(0);
}
END_TEST

START_TEST(hash_uniform_v6)
{
    check_uniform(1);
}
END_TEST

START_TEST(hash_spreads_neighbours)
{
    unsigned i, same_half = 0;

    /* Neighbouring addresses should be unrelated, not move together. */
    for (i = 0; i + 1 < CLIENTS; i++) {
        same_half += (client_hash(0, i) < 0.5)
                     == (client_hash(0, i + 1) < 0.5);
    }
    ck_assert_msg(same_half > 0.45 * CLIENTS && same_half < 0.55 * CLIENTS,
                  "%u of %u neighbour pairs in the same half", same_half,
                  CLIENTS - 1);
}
END_TEST

/* ---- picking a level -------------------------------------------------- */

static const double some_n[] = {
    0.0, 1e-9, 0.1, 0.25, 0.4999, 0.5, 0.5001, 0.75, 0.9, 0.999999999
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

START_TEST(pick_integer_m)
{
    unsigned M, m;
    size_t i;

    /* An integral m serves every client at the same level. */
    for (M = 1; M <= QC_MAX_TREES; M++) {
        for (m = 0; m <= M; m++) {
            for (i = 0; i < COUNT(some_n); i++) {
                ck_assert_uint_eq(qc_level_pick(m, M, some_n[i]), m);
                ck_assert_uint_eq(qc_level_pick_fx(m * QC_LEVEL_ONE, M,
                                                   some_n[i]), m);
            }
        }
    }
}
END_TEST

START_TEST(pick_extremes_and_clamping)
{
    size_t i;

    for (i = 0; i < COUNT(some_n); i++) {
        double n = some_n[i];

        ck_assert_uint_eq(qc_level_pick(0.0, 3, n), 0);
        ck_assert_uint_eq(qc_level_pick(3.0, 3, n), 3);
        ck_assert_uint_eq(qc_level_pick(-0.5, 3, n), 0);
        ck_assert_uint_eq(qc_level_pick(-1e300, 3, n), 0);
        ck_assert_uint_eq(qc_level_pick(-INFINITY, 3, n), 0);
        ck_assert_uint_eq(qc_level_pick(3.5, 3, n), 3);
        ck_assert_uint_eq(qc_level_pick(1e300, 3, n), 3);
        ck_assert_uint_eq(qc_level_pick(INFINITY, 3, n), 3);
        ck_assert_uint_eq(qc_level_pick_fx(0, 3, n), 0);
        ck_assert_uint_eq(qc_level_pick_fx(3 * QC_LEVEL_ONE + 1, 3, n), 3);
        ck_assert_uint_eq(qc_level_pick_fx(~0u, 3, n), 3);

        /* No trees: nothing to serve from. */
        ck_assert_uint_eq(qc_level_pick(0.5, 0, n), 0);
        ck_assert_uint_eq(qc_level_pick_fx(QC_LEVEL_ONE, 0, n), 0);

        /* M beyond the limit is held to it. */
        ck_assert_uint_eq(qc_level_pick(100.0, 100, n), QC_MAX_TREES);
        ck_assert_uint_eq(qc_level_pick_fx(100 * QC_LEVEL_ONE, 100, n),
                          QC_MAX_TREES);

        /* A broken controller (NaN) fails open: full service. */
        ck_assert_uint_eq(qc_level_pick(NAN, 3, n), 3);
    }
}
END_TEST

START_TEST(pick_fraction_threshold)
{
    /* m = 1.5: N < 0.5 goes up to tree 2, the rest stay at tree 1. */
    ck_assert_uint_eq(qc_level_pick(1.5, 2, 0.0), 2);
    ck_assert_uint_eq(qc_level_pick(1.5, 2, 0.4999), 2);
    ck_assert_uint_eq(qc_level_pick(1.5, 2, 0.5), 1);
    ck_assert_uint_eq(qc_level_pick(1.5, 2, 0.999), 1);
    /* Below one: some clients are rejected. */
    ck_assert_uint_eq(qc_level_pick(0.25, 2, 0.2), 1);
    ck_assert_uint_eq(qc_level_pick(0.25, 2, 0.3), 0);
    /* Just below M. */
    ck_assert_uint_eq(qc_level_pick(2.75, 3, 0.7), 3);
    ck_assert_uint_eq(qc_level_pick(2.75, 3, 0.8), 2);
}
END_TEST

START_TEST(pick_split_over_clients)
{
    static const struct {
        double m;
        unsigned M;
    } cases[] = {
        { 1.5, 2 }, { 0.2, 2 }, { 0.8, 1 }, { 2.5, 4 }, { 7.1, 8 },
    };
    size_t c;

    for (c = 0; c < COUNT(cases); c++) {
        double m = cases[c].m, frac_want = m - floor(m), frac;
        unsigned lo = (unsigned)floor(m), upper = 0, i;

        for (i = 0; i < CLIENTS; i++) {
            unsigned level = qc_level_pick(m, cases[c].M, client_hash(0, i));

            ck_assert_msg(level == lo || level == lo + 1,
                          "m=%g: client %u at level %u", m, i, level);
            upper += level == lo + 1;
        }
        /* About 4.5 standard deviations either side. */
        frac = (double)upper / CLIENTS;
        ck_assert_msg(fabs(frac - frac_want) < 0.05,
                      "m=%g: %.3f at level %u, want %.2f", m, frac, lo + 1,
                      frac_want);
    }
}
END_TEST

START_TEST(pick_monotonic)
{
    unsigned i, step;

    /* Raising m never lowers a client's level. */
    for (i = 0; i < 200; i++) {
        double n = client_hash(0, i);
        unsigned prev = 0;

        for (step = 0; step <= 3 * 64; step++) {
            unsigned level = qc_level_pick(step / 64.0, 3, n);

            ck_assert_msg(level >= prev, "client %u: m=%g gives %u < %u", i,
                          step / 64.0, level, prev);
            prev = level;
        }
        ck_assert_uint_eq(prev, 3);
    }
}
END_TEST

/* ---- fixed point ------------------------------------------------------ */

START_TEST(fx_conversion)
{
    ck_assert_uint_eq(qc_level_to_fx(0.0, 2), 0);
    ck_assert_uint_eq(qc_level_to_fx(1.0, 2), QC_LEVEL_ONE);
    ck_assert_uint_eq(qc_level_to_fx(1.5, 2), 3 * QC_LEVEL_ONE / 2);
    ck_assert_uint_eq(qc_level_to_fx(2.0, 2), 2 * QC_LEVEL_ONE);
    ck_assert(qc_level_from_fx(3 * QC_LEVEL_ONE / 2) == 1.5);
    ck_assert(qc_level_from_fx(0) == 0.0);
    ck_assert(qc_level_from_fx(QC_LEVEL_ONE) == 1.0);

    /* Clamped to [0, M]; NaN fails open like qc_level_pick(). */
    ck_assert_uint_eq(qc_level_to_fx(-0.1, 2), 0);
    ck_assert_uint_eq(qc_level_to_fx(-INFINITY, 2), 0);
    ck_assert_uint_eq(qc_level_to_fx(2.5, 2), 2 * QC_LEVEL_ONE);
    ck_assert_uint_eq(qc_level_to_fx(INFINITY, 2), 2 * QC_LEVEL_ONE);
    ck_assert_uint_eq(qc_level_to_fx(NAN, 2), 2 * QC_LEVEL_ONE);
    ck_assert_uint_eq(qc_level_to_fx(1e300, 100),
                      QC_MAX_TREES * QC_LEVEL_ONE);

    /* Rounded to nearest, not truncated. */
    ck_assert_uint_eq(qc_level_to_fx(0.9999999, 2), QC_LEVEL_ONE);
    ck_assert_uint_eq(qc_level_to_fx(1.0 / 3.0, 2), 21845);
    ck_assert_uint_eq(qc_level_to_fx(2.0 / 3.0, 2), 43691);
}
END_TEST

START_TEST(fx_round_trip)
{
    unsigned fx, i;

    /* Every representable value survives the trip exactly. */
    for (fx = 0; fx <= QC_MAX_TREES * QC_LEVEL_ONE; fx += 7) {
        ck_assert_uint_eq(qc_level_to_fx(qc_level_from_fx(fx),
                                         QC_MAX_TREES), fx);
    }
    /* Anything else comes back within half a step. */
    for (i = 0; i <= 10000; i++) {
        double m = i * (QC_MAX_TREES / 10000.0);
        double back = qc_level_from_fx(qc_level_to_fx(m, QC_MAX_TREES));

        ck_assert_msg(fabs(back - m) <= 0.5 / QC_LEVEL_ONE, "m=%.9f -> %.9f",
                      m, back);
    }
}
END_TEST

START_TEST(fx_pick_agrees)
{
    unsigned fx, i;

    /* The shared-memory form picks what the double form would. */
    for (fx = 0; fx <= 3 * QC_LEVEL_ONE; fx += 97) {
        for (i = 0; i < 50; i++) {
            double n = client_hash(0, i);

            ck_assert_uint_eq(qc_level_pick_fx(fx, 3, n),
                              qc_level_pick(qc_level_from_fx(fx), 3, n));
        }
        for (i = 0; i < COUNT(some_n); i++) {
            ck_assert_uint_eq(qc_level_pick_fx(fx, 3, some_n[i]),
                              qc_level_pick(qc_level_from_fx(fx), 3,
                                            some_n[i]));
        }
    }
    /* 1.5 in fixed point splits at N = 0.5 exactly. */
    ck_assert_uint_eq(qc_level_pick_fx(qc_level_to_fx(1.5, 2), 2, 0.4999),
                      2);
    ck_assert_uint_eq(qc_level_pick_fx(qc_level_to_fx(1.5, 2), 2, 0.5), 1);
}
END_TEST

static Suite *level_suite(void)
{
    Suite *s = suite_create("qc_level");
    TCase *tc;

    tc = tcase_create("hash");
    tcase_add_test(tc, hash_stable);
    tcase_add_test(tc, hash_pinned);
    tcase_add_test(tc, hash_range);
    tcase_add_test(tc, hash_uniform_v4);
    tcase_add_test(tc, hash_uniform_v6);
    tcase_add_test(tc, hash_spreads_neighbours);
    suite_add_tcase(s, tc);

    tc = tcase_create("pick");
    tcase_add_test(tc, pick_integer_m);
    tcase_add_test(tc, pick_extremes_and_clamping);
    tcase_add_test(tc, pick_fraction_threshold);
    tcase_add_test(tc, pick_split_over_clients);
    tcase_add_test(tc, pick_monotonic);
    suite_add_tcase(s, tc);

    tc = tcase_create("fixed_point");
    tcase_add_test(tc, fx_conversion);
    tcase_add_test(tc, fx_round_trip);
    tcase_add_test(tc, fx_pick_agrees);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    return qc_test_run(level_suite());
}
