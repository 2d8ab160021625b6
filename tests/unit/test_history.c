/* Licensed under the Apache License, Version 2.0. */

/*
 * The status page's history (qc_shm.h): the controller's period leaves
 * at most a sample a second, with the measured utilization and each
 * class's level as it published them, in a ring of ten minutes.
 */

#include <check.h>
#include <math.h>
#include <string.h>

#include "apr_general.h"
#include "apr_atomic.h"

#include "qc_test.h"
#include "qc_test_ctl.h"

static apr_pool_t *pool;

typedef struct {
    qc_ctl_vs_t vs[2];
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    qc_shm_t *q;
} fixture_t;

/* A host the loop drives and one pinned at 0.5, on a segment in
 * ordinary memory. */
static void setup(fixture_t *f, double period)
{
    static const qc_ctl_vs_t vs[2] = {
        { "loop:80", NULL, 2, 0, 0.0, 0.0, 0, 0.0 },
        { "pinned:80", NULL, 2, 0, 0.0, 0.0, 1, 0.5 },
    };
    unsigned i;
    int k;

    memset(f, 0, sizeof(*f));
    memcpy(f->vs, vs, sizeof(vs));
    f->q = apr_pcalloc(pool, QC_SHM_SIZE(2));
    f->q->capacity = 2;
    for (i = 0; i < 2; i++) {
        f->q->slots[i].in_use = 1;
        f->q->slots[i].ntrees = 2;
        for (k = 0; k < QC_NCLASSES; k++) {
            f->q->slots[i].cls[k].level_fx = qc_level_to_fx(2.0, 2);
            f->q->slots[i].cls[k].loop_fx = qc_level_to_fx(2.0, 2);
        }
        f->vs[i].slot = &f->q->slots[i];
    }
    f->cfg.bound = 0.58;
    f->cfg.period = period;
    f->cfg.gain_margin = 4.0;
    f->cfg.a0 = 1e-4;
    f->cfg.b0 = 1e-8;
    f->cfg.c0 = 1e-5;
    f->cfg.shm = f->q;
    f->cfg.vs = f->vs;
    f->cfg.nvs = 2;
    f->cfg.log_fd = -1;
    f->cfg.state_fd = -1;
    qc_ctl_init(&f->ctl, &f->cfg, pool);
}

/* Periods of a quarter second: a sample every fourth. */
START_TEST(test_short_periods_are_downsampled)
{
    fixture_t f;
    apr_int64_t t0 = (apr_int64_t)1700000000 * 1000000;
    int p;

    setup(&f, 0.25);
    for (p = 1; p <= 80; p++) {
        qc_test_step(&f.ctl, 0.25, 0.3, -1, t0 + p * 250000);
    }
    ck_assert_uint_eq(f.q->periods, 80);
    ck_assert_uint_eq(f.q->hist_count, 20);
    for (p = 0; p < 20; p++) {
        ck_assert_uint_eq(f.q->hist_time[p],
                          (apr_uint64_t)(t0 + 250000 + p * 1000000));
    }
}
END_TEST

/* Periods of a second or more: a sample each, what was published. */
START_TEST(test_samples_are_what_was_published)
{
    fixture_t f;
    apr_int64_t t0 = (apr_int64_t)1700000000 * 1000000;
    unsigned at;
    int p, k;

    setup(&f, 2.0);
    for (p = 1; p <= 30; p++) {
        qc_test_step(&f.ctl, 2.0, 0.2 + 0.01 * p, -1, t0 + p * 2000000);
        at = (unsigned)((f.q->hist_count - 1) % QC_HIST_LEN);
        ck_assert_uint_eq(f.q->hist_count, (unsigned)p);
        ck_assert_uint_eq(f.q->hist_time[at],
                          (apr_uint64_t)(t0 + p * 2000000));
        ck_assert(fabs(qc_bitsf(f.q->hist_u[at])
                       - qc_bitsd(f.q->u_measured_bits)) < 1e-6);
        for (k = 0; k < QC_NCLASSES; k++) {
            double m = qc_level_from_fx(f.q->slots[0].cls[k].loop_fx);

            ck_assert(fabs(qc_hist_m_decode(f.q->slots[0].hist_m[k][at])
                           - m) < 1e-3);
            ck_assert(fabs(qc_hist_m_decode(f.q->slots[1].hist_m[k][at])
                           - 0.5) < 1e-3);
        }
    }
}
END_TEST

/* Past QC_HIST_LEN samples the ring wraps; a slot never written has
 * no sample, not level 0. */
START_TEST(test_ring_wraps)
{
    fixture_t f;
    apr_int64_t t0 = (apr_int64_t)1700000000 * 1000000;
    int p;

    setup(&f, 1.0);
    ck_assert(isnan(qc_hist_m_decode(f.q->slots[0].hist_m[0][0])));
    for (p = 1; p <= QC_HIST_LEN + 100; p++) {
        qc_test_step(&f.ctl, 1.0, 0.3, -1, t0 + p * 1000000);
    }
    ck_assert_uint_eq(f.q->hist_count, QC_HIST_LEN + 100);
    ck_assert_uint_eq(f.q->hist_time[99],
                      (apr_uint64_t)(t0 + (QC_HIST_LEN + 100) * 1000000LL));
    ck_assert_uint_eq(f.q->hist_time[100],
                      (apr_uint64_t)(t0 + 101 * 1000000LL));
    ck_assert(qc_hist_m_decode(qc_hist_m_encode(8.0)) == 8.0);
    ck_assert(qc_hist_m_decode(qc_hist_m_encode(1e9)) == QC_MAX_TREES);
    ck_assert(qc_hist_m_decode(qc_hist_m_encode(0.0 / 0.0)) == 0.0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qc_history");
    TCase *tc = tcase_create("core");
    int rc;

    apr_initialize();
    apr_pool_create(&pool, NULL);
    tcase_add_test(tc, test_short_periods_are_downsampled);
    tcase_add_test(tc, test_samples_are_what_was_published);
    tcase_add_test(tc, test_ring_wraps);
    suite_add_tcase(s, tc);
    rc = qc_test_run(s);
    apr_pool_destroy(pool);
    apr_terminate();
    return rc;
}
