/* Licensed under the Apache License, Version 2.0. */

/*
 * The controller's invariants on a simulated server whose sensor
 * saturates, whatever the model says (control must hold on every
 * workload):
 *  (i)   measured U at or above the bound: quality goes down within a
 *        few periods, from any prior;
 *  (ii)  measured U well below the bound while degraded: quality comes
 *        back up within a few periods;
 *  (iii) a prior 10x off either way is corrected, and the loop settles;
 *  (iv)  no 503 while measured U is below the bound, and none where the
 *        cheapest tree carries the load;
 *  (v)   load the server does not cause is not shed.
 * The plant: a CPU-bound site, a CGI page costing 3 ms in the top tree
 * and its static snapshot 0.1 ms; over capacity the server completes
 * only what the CPU can do and the sensor reads 1.
 */

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apr_general.h"
#include "apr_atomic.h"

#include "qc_test.h"
#include "qc_test_ctl.h"
#include "qc_controller.h"
#include "qc_decide.h"
#include "qc_level.h"
#include "sim_plant.h"
#include "cpu_plant.h"

static apr_pool_t *pool;

/*
 * Idle, then a step to 2x (or 3x) what the full tree can carry, from a
 * prior `prior` times the true cost of a full page.  Returns the number
 * of periods until U stays below bound + 0.1, and checks (iv) all along.
 */
static int cold_step(double prior, double times, double bound,
                     double *tail_u, double *tail_m, double *rejected)
{
    rig_t g;
    cpu_plant_t pl = { .r = 5.0, .rng = 7, .cl = CPU_OPEN };
    qc_class_shm_t *cs;
    int period, settled = -1;
    double u = 0.0, rej0 = 0.0;

    rig_init(&g, pool, prior * COST_FULL, bound);
    cs = &g.q->slots[0].cls[QC_CLASS_BASIC];
    for (period = -5; period < 60; period++) {
        double m_before = rig_level(&g);

        if (period == 0) {
            pl.r = times / COST_FULL;
            rej0 = (double)cs->level_arrived[0];
        }
        u = cpu_period(&pl, cs);
        qc_test_step(&g.ctl, 1.0, u, 0, (apr_int64_t)(period + 10) * 1000000);
        /* (iv): no move into rejection while the CPU is below the
         * bound. */
        if (u < bound && rig_level(&g) < 1.0 - 1e-6) {
            ck_assert_msg(rig_level(&g) >= m_before - 1e-6,
                          "period %d: m %.3f -> %.3f into rejection at "
                          "U %.3f", period, m_before, rig_level(&g), u);
        }
        if (period >= 0) {
            if (u > bound + 0.1) {
                settled = -1;
            }
            else if (settled < 0) {
                settled = period;
            }
        }
        if (period >= 40) {
            *tail_u += u / 20.0;
            *tail_m += rig_level(&g) / 20.0;
        }
    }
    *rejected = ((double)cs->level_arrived[0] - rej0) / (60.0 * pl.r);
    return settled;
}

/*
 * A ramp from half to four times what the full tree carries, over 40
 * periods, from light load: each period's new arrivals meet the level
 * set for the last period's, and the PI alone lags (in this plant the
 * ramp's second half averaged U 0.67 against a 0.6 bound, and every
 * period of it read over the bound).  Following the model's level for
 * the trend holds the bound.
 */
START_TEST(test_ramp_is_followed)
{
    rig_t g;
    cpu_plant_t pl = { .r = 0.3 / COST_FULL, .rng = 7, .cl = CPU_OPEN };
    qc_class_shm_t *cs;
    double mean = 0.0;
    int period, over = 0;

    rig_init(&g, pool, COST_FULL, 0.6);
    cs = &g.q->slots[0].cls[QC_CLASS_BASIC];
    for (period = -20; period < 40; period++) {
        double u;

        if (period >= 0) {
            pl.r = (0.5 + 3.5 * period / 40.0) / COST_FULL;
        }
        u = cpu_period(&pl, cs);
        qc_test_step(&g.ctl, 1.0, u, 0, (apr_int64_t)(period + 30) * 1000000);
        if (period >= 20) {
            mean += u / 20.0;
            over += u > 0.6;
        }
    }
    printf("ramp 0.5x -> 4x: mean U %.3f over its second half, %d of 20 "
           "periods over the bound, m %.3f at its end\n", mean, over,
           rig_level(&g));
    ck_assert_msg(fabs(mean - 0.6) < 0.03, "mean U %.3f", mean);
    ck_assert_msg(over <= 15, "%d of 20 periods over the bound", over);
}
END_TEST

/* (i), (iii), (iv): from priors 10x low, right and 10x high. */
START_TEST(test_cold_start_any_prior)
{
    static const double priors[] = { 0.1, 1.0, 10.0 };
    unsigned i;

    for (i = 0; i < 3; i++) {
        double tail_u = 0.0, tail_m = 0.0, rejected = 0.0;
        int settled = cold_step(priors[i], 2.0, 0.6, &tail_u, &tail_m,
                                &rejected);

        printf("cpu site, prior x%.1f, 2x load: U below bound+0.1 after "
               "%d periods; last 20: U %.3f, m %.3f; rejected %.2f%%\n",
               priors[i], settled, tail_u, tail_m, 100.0 * rejected);
        ck_assert_int_ge(settled, 0);
        ck_assert_int_le(settled, 10);
        ck_assert(fabs(tail_u - 0.6) < 0.1);
        /* The snapshots carry 2x easily: degraded, never rejected once
         * settled. */
        ck_assert(tail_m > 1.0 && tail_m < 2.0);
        ck_assert(rejected < 0.05);
    }
}
END_TEST

/*
 * A PHP site whose snapshots cost less than a refusal (a 503 is a
 * connection; a cached page little more), read by a sensor that lags a
 * period by half (php-fpm finishing queued pages), from a prior 10x
 * high.  Asked for the level that holds the bound, a model that falls
 * again below the lowest tree once answered "refuse everyone"; the
 * jump stopped at the lowest tree, every other period, and the site
 * sat at 0.36 CPU against a 0.6 bound (bench/robustness, php, 1,000
 * clients, cold10).
 */
START_TEST(test_refusal_dearer_than_a_snapshot)
{
    rig_t g;
    cpu_plant_t pl = { .r = 5.0, .rng = 13, .snap = 5e-5, .lag = 0.5,
                       .cl = CPU_OPEN };
    qc_class_shm_t *cs;
    int period, falls = 0;
    double tail_u = 0.0, m_prev = 2.0;

    rig_init_c(&g, pool, 10.0 * COST_FULL, 2e-3, 0.6);
    cs = &g.q->slots[0].cls[QC_CLASS_BASIC];
    for (period = 0; period < 40; period++) {
        double u;

        pl.r = 2.8 / COST_FULL;
        u = cpu_period(&pl, cs);
        qc_test_step(&g.ctl, 1.0, u, 0, (apr_int64_t)(period + 1) * 1000000);
        ck_assert(rig_level(&g) >= 1.0 - 1e-6);
        if (period >= 10) {
            /* no fall back to the lowest tree while under the bound */
            if (u < 0.5 && rig_level(&g) < m_prev - 0.05) {
                falls++;
            }
        }
        if (period >= 20) {
            tail_u += u / 20.0;
        }
        m_prev = rig_level(&g);
    }
    printf("php site, refusal dearer than a snapshot, prior x10: last 20 "
           "U %.3f, m %.3f, falls %d\n", tail_u, rig_level(&g), falls);
    ck_assert_int_eq(falls, 0);
    ck_assert(fabs(tail_u - 0.6) < 0.1);
    ck_assert(rig_level(&g) > 1.0 && rig_level(&g) < 2.0);
}
END_TEST

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;

    return (a > b) - (a < b);
}

/*
 * A loop holding the bound on a noisy sensor (a link at 0.9 with 40
 * clients reads 0.8 to 0.98 from one second to the next) reads over the
 * saturation mark twice in a row now and then.  That is no model off
 * by a factor: the PI steps down.  The valve sent everyone to the
 * lowest tree instead, the restart overshot, and the link cycled
 * (bench/robustness, link, 40 clients, cold10: held p95 512 ms).
 */
START_TEST(test_held_bound_is_no_valve)
{
    rig_t g;
    cpu_plant_t pl = { .rng = 29, .noise = 0.15, .cl = CPU_OPEN };
    qc_class_shm_t *cs;
    int period, valved = 0;
    double tail_u = 0.0, tail[60];

    rig_init(&g, pool, COST_FULL, 0.9);
    cs = &g.q->slots[0].cls[QC_CLASS_BASIC];
    pl.r = 2.5 / COST_FULL;
    for (period = 0; period < 80; period++) {
        double u = cpu_period(&pl, cs);

        qc_test_step(&g.ctl, 1.0, u, 0, (apr_int64_t)(period + 1) * 1000000);
        if (period >= 15 && rig_level(&g) <= 1.0 + 1e-9) {
            valved++;
        }
        if (period >= 20) {
            tail_u += u / 60.0;
            tail[period - 20] = u;
        }
    }
    qsort(tail, 60, sizeof(tail[0]), cmp_double);
    printf("held at 0.9, noise %.0f%%: %d periods at the lowest tree, "
           "U mean %.3f, median %.3f\n", 100.0 * pl.noise, valved, tail_u,
           0.5 * (tail[29] + tail[30]));
    ck_assert_int_eq(valved, 0);
    ck_assert(fabs(tail_u - 0.9) < 0.1);
    /* Nor is the loop pinned under each chance saturation: its median
     * holds near the bound. */
    ck_assert(0.5 * (tail[29] + tail[30]) > 0.86);
}
END_TEST

/* (ii): a prior 10x too high at light load must not keep the site
 * degraded: the measurement says there is room. */
START_TEST(test_light_load_high_prior_recovers)
{
    rig_t g;
    /* U 0.15 at full quality */
    cpu_plant_t pl = { .r = 50.0, .rng = 11, .cl = CPU_OPEN };
    int period, top_since = -1;

    rig_init(&g, pool, 10.0 * COST_FULL, 0.6);
    for (period = 0; period < 30; period++) {
        double u = cpu_period(&pl, &g.q->slots[0].cls[QC_CLASS_BASIC]);

        qc_test_step(&g.ctl, 1.0, u, 0, (apr_int64_t)(period + 1) * 1000000);
        ck_assert(rig_level(&g) >= 1.0);        /* never a 503 */
        if (rig_level(&g) >= 2.0 - 1e-6) {
            if (top_since < 0) {
                top_since = period;
            }
        }
        else {
            top_since = -1;
        }
    }
    printf("light load, prior x10: full quality from period %d\n",
           top_since);
    ck_assert_int_ge(top_since, 0);
    ck_assert_int_le(top_since, 10);
}
END_TEST

/* (v): another process keeps the CPU busy (a backup job that started
 * before the site's traffic); the site's own load is small.  Shedding
 * it would not help: the controller does not, and says why the bound
 * is exceeded. */
START_TEST(test_background_load_not_shed)
{
    rig_t g;
    cpu_plant_t pl = { .background = 0.7, .rng = 13, .cl = CPU_OPEN };
    int period, top = 0;

    rig_init(&g, pool, COST_FULL, 0.6);
    for (period = 0; period < 60; period++) {
        double u;

        pl.r = period < 10 ? 0.0 : 60.0;
        u = cpu_period(&pl, &g.q->slots[0].cls[QC_CLASS_BASIC]);
        qc_test_step(&g.ctl, 1.0, u, 0, (apr_int64_t)(period + 1) * 1000000);
        if (period >= 10) {
            top += rig_level(&g) >= 2.0 - 1e-6;
            ck_assert(rig_level(&g) >= 1.0);        /* never a 503 */
        }
    }
    printf("background load: full quality in %d of 50 periods, "
           "warnings %u, d %.3f\n", top, (unsigned)g.q->warnings,
           qc_bitsd(g.q->d_bits));
    ck_assert(g.q->warnings & QC_WARN_BACKGROUND);
    ck_assert_int_ge(top, 45);
    /* Tested once at most: its reading confirmed the fit. */
    ck_assert_uint_le(g.ctl.bg.tests, 1);
}
END_TEST

/* (v) with a job that alone saturates the CPU (at 0.97 and at all of
 * it) before the site's traffic comes: no level lowers the reading, so
 * every request is served at full quality.  When the job ends under an
 * overload of the site's own, the loop takes the reading over again. */
START_TEST(test_saturating_background_not_shed)
{
    static const double job[2] = { 0.97, 1.0 };
    int j;

    for (j = 0; j < 2; j++) {
        rig_t g;
        cpu_plant_t pl = { .background = job[j], .rng = 29, .cl = CPU_OPEN };
        double u_late[20];
        int period, top = 0, worst = 0, last_over = 59;

        rig_init(&g, pool, COST_FULL, 0.6);
        for (period = 0; period < 100; period++) {
            double u;

            pl.r = period < 10 ? 0.0 : period < 60 ? 60.0 : 300.0;
            pl.background = period < 60 ? job[j] : 0.0;
            u = cpu_period(&pl, &g.q->slots[0].cls[QC_CLASS_BASIC]);
            qc_test_step(&g.ctl, 1.0, u, 0,
                        (apr_int64_t)(period + 1) * 1000000);
            if (period >= 10 && period < 60) {
                top += rig_level(&g) >= 2.0 - 1e-6;
                ck_assert(g.q->warnings & QC_WARN_BACKGROUND);
            }
            if (period >= 10) {
                ck_assert_msg(rig_level(&g) >= 1.0 - 1e-6,
                              "period %d: m %.3f", period, rig_level(&g));
            }
            if (period >= 60 && u > 0.7) {
                last_over = period;
            }
            if (period >= 80) {
                u_late[period - 80] = u;
                worst = u > 0.7 ? worst + 1 : worst;
            }
        }
        qsort(u_late, 20, sizeof(u_late[0]), cmp_double);
        printf("saturating background %.2f: full quality in %d of 50 "
               "periods, %lu tests; after it, over 0.7 until period %d "
               "of 40, then U median %.3f, %d of 20 over 0.7\n", job[j],
               top, g.ctl.bg.tests, last_over - 59,
               0.5 * (u_late[9] + u_late[10]), worst);
        ck_assert_int_ge(top, 45);
        ck_assert(fabs(0.5 * (u_late[9] + u_late[10]) - 0.6) <= 0.1);
        ck_assert_int_le(last_over - 59, 10);
        ck_assert(!(g.q->warnings & QC_WARN_BACKGROUND));
    }
}
END_TEST

/* Where the connection itself costs most (a slow machine, tiny
 * pages), a 503 costs as much as the snapshot: past what the snapshots
 * carry, refusing would turn clients away and relieve nothing.  Once the
 * fit has seen what a 503 costs, the level goes back to the lowest tree
 * and stays there, however long requests wait. */
START_TEST(test_no_rejection_that_relieves_nothing)
{
    rig_t g;
    cpu_plant_t pl = { .r = 5.0, .rng = 19, .conn = 1.5e-3, .cl = CPU_OPEN };
    double rejected = 0.0, n = 0.0;
    int period;

    rig_init(&g, pool, COST_FULL, 0.6);
    for (period = -5; period < 60; period++) {
        qc_class_shm_t *cs = &g.q->slots[0].cls[QC_CLASS_BASIC];
        double rej0 = (double)cs->level_arrived[0], u;

        if (period == 0) {
            pl.r = 550.0;       /* the snapshots alone need 0.88 */
        }
        u = cpu_period(&pl, cs);
        qc_test_step(&g.ctl, 1.0, u, (long)pl.waiting,
                     (apr_int64_t)(period + 10) * 1000000);
        if (period >= 30) {
            rejected += (double)cs->level_arrived[0] - rej0;
            n += pl.r;
            ck_assert(rig_level(&g) >= 1.0 - 1e-4);
        }
    }
    printf("503 relieving nothing: c %.2g s, rejected %.2f%% of the last "
           "30 periods\n", qc_bitsd(g.q->c_bits), 100.0 * rejected / n);
    ck_assert(rejected / n < 0.01);
}
END_TEST

/* A job that takes the CPU while the site has light traffic, with no
 * idle period for the fit to learn it from: the calibration reads it as
 * the requests' cost, but a light load is never refused for it (after
 * an overload that had the snapshots' cost measured). */
START_TEST(test_light_load_under_a_hog_is_served)
{
    rig_t g;
    cpu_plant_t pl = { .r = 400.0, .rng = 23, .conn = 2e-3, .cl = CPU_OPEN };
    int period;

    rig_init(&g, pool, COST_FULL, 0.6);
    for (period = 0; period < 70; period++) {
        double u;

        pl.r = period < 20 ? 250.0 : 20.0;
        pl.background = period < 30 ? 0.0 : 0.95;
        u = cpu_period(&pl, &g.q->slots[0].cls[QC_CLASS_BASIC]);
        qc_test_step(&g.ctl, 1.0, u, 0, (apr_int64_t)(period + 1) * 1000000);
        if (period >= 25) {
            ck_assert_msg(rig_level(&g) >= 1.0 - 1e-6, "period %d: m %.3f",
                          period, rig_level(&g));
        }
    }
}
END_TEST

/* A lone best-effort host gets the whole bound, whatever idle hosts
 * stand beside it. */
START_TEST(test_idle_host_takes_nothing)
{
    qc_ctl_vs_t vs[2] = {
        { "_:80", NULL, 1, 0, 0.0, 0.0, 0, 0.0 },
        { "site:80", NULL, 2, 0, 0.0, 0.0, 0, 0.0 },
    };
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    qc_shm_t *q = apr_pcalloc(pool, QC_SHM_SIZE(2));
    cpu_plant_t pl = { .r = 2.0 / COST_FULL, .rng = 17, .cl = CPU_OPEN };
    double tail = 0.0;
    int period, k;
    unsigned i;

    memset(&cfg, 0, sizeof(cfg));
    q->capacity = 2;
    for (i = 0; i < 2; i++) {
        q->slots[i].in_use = 1;
        q->slots[i].ntrees = vs[i].levels;
        for (k = 0; k < QC_NCLASSES; k++) {
            q->slots[i].cls[k].level_fx = qc_level_to_fx(vs[i].levels,
                                                         vs[i].levels);
            q->slots[i].cls[k].loop_fx = q->slots[i].cls[k].level_fx;
        }
        vs[i].slot = &q->slots[i];
    }
    cfg.bound = 0.9;
    cfg.period = 1.0;
    cfg.gain_margin = 4.0;
    cfg.a0 = COST_FULL;
    cfg.c0 = COST_REJ;
    cfg.shm = q;
    cfg.vs = vs;
    cfg.nvs = 2;
    cfg.log_fd = -1;
    cfg.state_fd = -1;
    qc_ctl_init(&ctl, &cfg, pool);
    for (period = 0; period < 60; period++) {
        double u = cpu_period(&pl, &q->slots[1].cls[QC_CLASS_BASIC]);

        qc_test_step(&ctl, 1.0, u, 0, (apr_int64_t)(period + 1) * 1000000);
        if (period >= 40) {
            tail += u / 20.0;
        }
    }
    printf("lone best-effort host: target %.3f, U %.3f\n",
           qc_bitsd(q->u_best_effort_target_bits), tail);
    ck_assert(fabs(qc_bitsd(q->u_best_effort_target_bits) - 0.9) < 0.05);
    ck_assert(fabs(tail - 0.9) < 0.06);
}
END_TEST

/* One key carrying the load is spread request by request; many keys
 * are not. */
START_TEST(test_spread_mask)
{
    qc_spread_t sp;
    apr_uint64_t c[QC_BUCKETS] = { 0 };
    unsigned b, period;

    memset(&sp, 0, sizeof(sp));
    qc_spread_update(&sp, c, 1.0);
    for (period = 1; period <= 5; period++) {
        for (b = 0; b < QC_BUCKETS; b++) {
            c[b] += 20;         /* a thousand clients, evenly */
        }
        c[37] += 3000;          /* and one NAT */
        qc_spread_update(&sp, c, 1.0);
    }
    ck_assert(sp.mask == ((apr_uint64_t)1 << 37));
    for (period = 1; period <= 30; period++) {
        for (b = 0; b < QC_BUCKETS; b++) {
            c[b] += 20;
        }
        qc_spread_update(&sp, c, 1.0);
    }
    ck_assert(sp.mask == 0);
    /* A period at the top level counts no one: split everyone until the
     * counts below it say who carries the load. */
    qc_spread_update(&sp, c, 0.0);
    ck_assert(sp.mask == 0);
    qc_spread_update(&sp, c, 500.0);
    ck_assert(sp.mask == QC_SPREAD_ALL);
    for (b = 0; b < QC_BUCKETS; b++) {
        c[b] += 20;
    }
    qc_spread_update(&sp, c, 1.0);
    ck_assert(sp.mask == 0);
    /* 300 clients at 100 req/s: chance makes no bucket heavy. */
    {
        unsigned long long rng = 99;
        unsigned trial, marked = 0;

        for (trial = 0; trial < 200; trial++) {
            memset(&sp, 0, sizeof(sp));
            memset(c, 0, sizeof(c));
            qc_spread_update(&sp, c, 1.0);
            for (period = 0; period < 10; period++) {
                for (b = 0; b < 100; b++) {
                    rng = rng * 6364136223846793005ULL + 1;
                    c[(rng >> 33) % 300 % QC_BUCKETS]++;
                }
                qc_spread_update(&sp, c, 1.0);
            }
            marked += sp.mask != 0;
        }
        ck_assert_uint_eq(marked, 0);
    }
}
END_TEST

/*
 * The actuator is linear in m for any population: one address, and 40
 * or 1,000 Zipf-weighted ones.  Requests go through the request path's
 * rule (qc_level_pick_request) at the level the controller publishes
 * for a share f (qc_spread_level), under the counts and marks the
 * controller keeps; the share served from the upper tree is f to within
 * 0.03 at every f.  The threshold as it was (F = f) misses by 0.056
 * with these 40 keys: at the CGI site's 3x, 0.2 of a CPU.
 */
typedef struct {
    unsigned keys;
    double n[1000];
    double cum[1000];
    unsigned long long rng;
    apr_uint32_t seq;
    apr_uint64_t counts[QC_BUCKETS];
    qc_spread_t sp;
    int balanced;               /* the balance keeps the count */
    int64_t balance;
    int watch;                  /* measure the straying in this period */
    double dev[5001];           /* requests up beyond f * k, k requests */
    double dev_sq, dev_n;       /* the squares of up or short in WINDOW
                                 * requests, and how many */
} population_t;

/* Requests in the windows the straying is measured in: about the link
 * testbed's arrivals in a third of a second. */
#define WINDOW 200

static void population_init(population_t *p, unsigned keys)
{
    double sum = 0.0;
    unsigned k;

    memset(p, 0, sizeof(*p));
    p->keys = keys;
    p->rng = 12345 + keys;
    for (k = 0; k < keys; k++) {
        unsigned char addr[4] = { 10, 0, (unsigned char)(k >> 8),
                                  (unsigned char)k };

        p->n[k] = qc_hash_keyed(0x5eedc0ffee123457ULL, addr, 4);
        sum += 1.0 / (k + 1);
        p->cum[k] = sum;
    }
    for (k = 0; k < keys; k++) {
        p->cum[k] /= sum;
    }
    qc_spread_update(&p->sp, p->counts, 0.0);
}

/* One period of r requests at the loop's share f; returns the share
 * served from the upper tree. */
static double population_period(population_t *p, double f, int warp,
                                unsigned r)
{
    double level = warp ? qc_spread_level(&p->sp, 1.0 + f) : 1.0 + f;
    unsigned m_fx = qc_level_to_fx(level, 2), i, upper = 0;
    unsigned share_fx = qc_level_to_fx(1.0 + f, 2);

    p->balance = 0;             /* as the controller publishes a level */
    p->dev[0] = 0.0;

    for (i = 0; i < r; i++) {
        double u = sim_rand_unit(&p->rng);
        unsigned k = 0, b;

        while (k + 1 < p->keys && p->cum[k] < u) {
            k++;
        }
        b = qc_hash_bucket(p->n[k]);
        p->counts[b]++;
        upper += (p->balanced
                  ? qc_level_pick_balanced(m_fx, share_fx, 2, p->n[k],
                                           (int)((p->sp.mask >> b) & 1),
                                           p->seq++, qc_test_balance_add,
                                           &p->balance)
                  : qc_level_pick_request(m_fx, 2, p->n[k],
                                          (int)((p->sp.mask >> b) & 1),
                                          p->seq++)) == 2;
        p->dev[i + 1] = upper - f * (i + 1);
        if (p->watch && i + 1 >= WINDOW && i < 5000) {
            double d = p->dev[i + 1] - p->dev[i + 1 - WINDOW];

            p->dev_sq += d * d;
            p->dev_n++;
        }
    }
    qc_spread_update(&p->sp, p->counts, (double)r);
    return (double)upper / r;
}

static double population_worst(unsigned keys, int warp, int balanced,
                               double *stray)
{
    static population_t p;
    double worst = 0.0;
    unsigned step, period;

    population_init(&p, keys);
    p.balanced = balanced;
    for (step = 1; step <= 19; step++) {
        double f = 0.05 * step, share = 0.0;

        for (period = 0; period < 12; period++) {
            double s;

            p.watch = period >= 8 && f > 0.09 && f < 0.31;
            s = population_period(&p, f, warp, 5000);

            if (period >= 8) {
                share += s / 4.0;
            }
        }
        if (fabs(share - f) > worst) {
            worst = fabs(share - f);
        }
    }
    if (stray) {
        *stray = sqrt(p.dev_sq / p.dev_n);
    }
    return worst;
}

START_TEST(test_actuator_linear_for_any_population)
{
    static const unsigned keys[] = { 1, 40, 1000 };
    unsigned i;

    for (i = 0; i < 3; i++) {
        double raw = population_worst(keys[i], 0, 1, NULL);
        double warped = population_worst(keys[i], 1, 1, NULL);
        double alone = population_worst(keys[i], 1, 0, NULL);

        printf("%u keys: worst |share - f| %.3f (threshold at f: %.3f, "
               "without the balance: %.3f)\n", keys[i], warped, raw, alone);
        ck_assert_msg(warped <= 0.03, "%u keys: %.3f", keys[i], warped);
        ck_assert_msg(alone <= 0.03, "%u keys: %.3f", keys[i], alone);
    }
    ck_assert(population_worst(40, 0, 0, NULL) > 0.04);
}
END_TEST

/*
 * The count, not only the share: clients that arrive at random (the
 * bench's addresses, each connection from one drawn by its weight) send
 * a share f up on average, but over any stretch of requests the count
 * strays as coin flips do, and on a link each request too many is a
 * full-size reply that queues.  In windows of 200 requests at f = 0.1
 * to 0.3 (the link testbed's), the balance takes a third off the count's
 * straying with 1,000 Zipf-weighted keys (RMS 3.6 requests against 5.7)
 * and a sixth with 40, whose balance holds few of the keys.
 */
START_TEST(test_balance_keeps_the_count_for_random_clients)
{
    static const unsigned keys[] = { 40, 1000 };
    static const double most[] = { 0.9, 0.7 };
    unsigned i;

    for (i = 0; i < 2; i++) {
        double with_balance, without;

        population_worst(keys[i], 1, 1, &with_balance);
        population_worst(keys[i], 1, 0, &without);
        printf("%u keys: in %d requests the count strays by %.1f (RMS; "
               "%.1f without the balance)\n", keys[i], WINDOW, with_balance,
               without);
        ck_assert_msg(with_balance <= most[i] * without, "%u keys: %.1f",
                      keys[i], with_balance);
    }
}
END_TEST

/*
 * A refit is no change of load: a fit that suddenly prices the same
 * requests 10x lower (as after a saturation taught it the costs, seen
 * on the link testbed's cold start) must move the calibration, not be
 * read as a fall of load that says nothing of the scale (k then stayed
 * where it was, and the loops saw a tenth of the load).
 */
START_TEST(test_refit_is_no_fall_of_load)
{
    rig_t g;
    /* U 0.45 at full quality */
    cpu_plant_t pl = { .r = 150.0, .rng = 7, .cl = CPU_OPEN };
    int period, i;
    double k_before;

    rig_init(&g, pool, COST_FULL, 0.6);
    for (period = 0; period < 20; period++) {
        qc_test_step(&g.ctl, 1.0, cpu_period(&pl, &g.q->slots[0].cls[
                        QC_CLASS_BASIC]), 0,
                    (apr_int64_t)(period + 1) * 1000000);
    }
    k_before = g.ctl.calib.k;
    ck_assert(fabs(k_before - 1.0) < 0.2);
    /* The per-tree costs 10x lower, the fit as confident as it was. */
    for (i = 0; i < QC_RLS_TREES; i++) {
        g.ctl.rls.theta[i] *= 0.1;
    }
    qc_test_step(&g.ctl, 1.0, cpu_period(&pl, &g.q->slots[0].cls[
                    QC_CLASS_BASIC]), 0, (apr_int64_t)(period + 1) * 1000000);
    printf("refit 10x lower: calibration %.3f -> %.3f\n", k_before,
           g.ctl.calib.k);
    ck_assert(g.ctl.calib.k > 2.0 * k_before);
}
END_TEST

/*
 * A low reading on the word of a fit that underprices the top tree:
 * the loop held 3x at the bound with the snapshots when one period read
 * a seventh of the load (a sensor's outlier) just as a refit priced the
 * full page at a third of its cost.  The jump that the reading licensed
 * took everyone to the full tree, where the model said the bound was;
 * the CPU saturated for two periods and the saturation taught the fit a
 * background that held the site at 0.34 for ten more
 * (bench/robustness, CGI, 1,000 clients, cold10).  Up, a level
 * now at most doubles its excess over the lowest tree per period.
 */
START_TEST(test_low_reading_on_an_underpriced_fit)
{
    rig_t g;
    cpu_plant_t pl = { .r = 3.0 / COST_FULL, .rng = 7, .snap = 1.8e-4,
                       .cl = CPU_OPEN };
    qc_class_shm_t *cs;
    int period, saturated = 0;
    double m_held = 0.0, m_after = 0.0;

    rig_init(&g, pool, COST_FULL, 0.6);
    cs = &g.q->slots[0].cls[QC_CLASS_BASIC];
    for (period = -20; period < 10; period++) {
        double u = cpu_period(&pl, cs);

        if (period == -1) {
            g.ctl.rls.theta[0] *= 0.3;
        }
        if (period == 0) {
            m_held = rig_level(&g);
            u /= 7.0;
        }
        qc_test_step(&g.ctl, 1.0, u, 0, (apr_int64_t)(period + 30) * 1000000);
        if (period == 0) {
            m_after = rig_level(&g);
        }
        saturated += period >= 0 && u >= QC_U_SATURATED;
    }
    printf("low reading, top tree underpriced 3.3x: held m %.3f, then "
           "%.3f, %d periods saturated\n", m_held, m_after, saturated);
    ck_assert(m_after <= qc_pi_up_limit(m_held, 1.0, 1.0) + 0.01);
    ck_assert_int_le(saturated, 1);
}
END_TEST

/*
 * Pages that cost less under load than the fit learnt, the arrivals
 * steady: the fit cannot tell the fall from a background that rose.  It
 * fitted one of 0.74 against a 0.6 bound; the targets charge half the
 * bound of it and the calibration all of it, so the CPU sat saturated
 * for ten periods (the model saw a drain) and then at 0.8-0.9 for good.
 * Over the bound on such a fit, best effort tests the background at its
 * lowest tree (qc_be_test_start).
 */
START_TEST(test_cheaper_pages_are_no_background)
{
    static const double cheaper[] = { 0.8, 0.7, 0.6 };
    unsigned i, seed;

    for (i = 0; i < 3; i++) {
        for (seed = 1; seed <= 4; seed++) {
            rig_t g;
            cpu_plant_t pl = { .r = 3.0 / COST_FULL, .rng = seed * 7919,
                               .noise = 0.05, .cl = CPU_OPEN };
            qc_class_shm_t *cs;
            int period, over = 0;
            double tail = 0.0;

            rig_init(&g, pool, COST_FULL, 0.6);
            cs = &g.q->slots[0].cls[QC_CLASS_BASIC];
            for (period = -30; period < 60; period++) {
                double u;

                if (period == 0) {
                    pl.scale = cheaper[i];
                    pl.snap = COST_SNAP / cheaper[i];
                }
                u = cpu_period(&pl, cs);
                qc_test_step(&g.ctl, 1.0, u, 0,
                            (apr_int64_t)(period + 40) * 1000000);
                over += period >= 0 && u > 0.7;
                tail += period >= 40 ? u / 20.0 : 0.0;
            }
            printf("pages %.0f%% cheaper under load, seed %u: %d of 60 "
                   "periods over 0.7, the last 20 at %.3f, d %.3f, "
                   "%lu tests\n", 100.0 * (1.0 - cheaper[i]), seed, over,
                   tail, g.ctl.model.d, g.ctl.bg.tests);
            ck_assert_int_le(over, 8);
            ck_assert(fabs(tail - 0.6) < 0.1);
            /* A d past half the bound, which the targets charge, lets
             * the reading stay over the bound by the rest; past
             * QC_CTL_READING_NOISE of that, the background is tested. */
            ck_assert(g.ctl.model.d < 0.5 * 0.6 + QC_CTL_READING_NOISE
                      || g.ctl.bg.tests > 0);
        }
    }
}
END_TEST


/* The calibration follows the sensor, and searches while saturated. */
START_TEST(test_calibration)
{
    qc_calib_t c;
    int i;

    qc_calib_init(&c);
    for (i = 0; i < 20; i++) {
        qc_calib_update(&c, 0.3, 3.0, 0.0, QC_CALIB_OWN, 0, 0.95);
    }
    ck_assert(fabs(c.k - 0.1) < 0.01);
    /* saturated, the model says 0.02: at once at least 1 / 0.02 */
    qc_calib_init(&c);
    qc_calib_update(&c, 1.0, 0.02, 0.0, 0, 0, 0.95);
    ck_assert(c.k >= 49.0);
    /* draining: the reading is earlier work; k stays */
    qc_calib_init(&c);
    qc_calib_update(&c, 1.0, 0.5, 0.0, QC_CALIB_OLD, 0, 0.95);
    ck_assert(c.k == 1.0);
    /* a rise the sensor lags: the reading is a lower bound */
    qc_calib_init(&c);
    qc_calib_update(&c, 0.8, 0.2, 0.0, QC_CALIB_RISING, 0, 0.95);
    ck_assert(fabs(c.k - 4.0) < 1e-9);
    qc_calib_update(&c, 0.1, 0.2, 0.0, QC_CALIB_RISING, 0, 0.95);
    ck_assert(fabs(c.k - 4.0) < 1e-9);
    /* Past 1 a reading is no cap (a link declared below what it
     * carries): exact, with no search, and lower too */
    qc_calib_init(&c);
    for (i = 0; i < 20; i++) {
        qc_calib_update(&c, 46.0, 150.0, 0.0, QC_CALIB_OWN, 0, 0.95);
    }
    ck_assert(fabs(c.k - 46.0 / 150.0) < 0.01);
    ck_assert_int_eq(c.saturated, 0);
    ck_assert(qc_u_capped(0.97) && !qc_u_capped(0.9)
              && !qc_u_capped(1.6) && qc_u_capped(1.2));
    /* search: k grows while saturation persists unexplained */
    qc_calib_init(&c);
    qc_calib_update(&c, 1.0, 0.5, 0.0, 0, 0, 0.95);
    qc_calib_update(&c, 1.0, 0.5, 0.0, 0, 0, 0.95);
    ck_assert(c.k > 2.0 * 1.4);
    /* A k from one noisy period (four requests as a backup job began:
     * 56x) and a level set by it that decides too little to measure k
     * again: the reading still bounds it (a real Apache held a light
     * load degraded for good, test_backup_job_on_the_cpu_is_not_shed) */
    qc_calib_init(&c);
    qc_calib_update(&c, 0.68, 0.012, 0.0, QC_CALIB_RISING, 0, 0.95);
    ck_assert(c.k > 50.0);
    qc_calib_update(&c, 0.80, 0.005, 0.797, QC_CALIB_OWN, 0, 0.95);
    ck_assert(c.k <= (0.003 + QC_CALIB_MIN_LOAD) / 0.005 + 1e-9);
    /* ... and never below what the reading says the requests load */
    qc_calib_init(&c);
    c.k = 10.0;
    qc_calib_update(&c, 0.05, 0.005, 0.0, QC_CALIB_OWN, 0, 0.95);
    ck_assert(fabs(c.k - 10.0) < 1e-9);
    /* unknown reading: no change */
    i = (int)(c.k * 1000);
    qc_calib_update(&c, -1.0, 0.5, 0.0, 0, 0, 0.95);
    ck_assert_int_eq((int)(c.k * 1000), i);
}
END_TEST

/*
 * The resource shrinks to a quarter under a load the full tree carried
 * (a shaper turned down: bench/cluster's capacity change), and the
 * controller is told (the input's rescale, as qc_ctl_run does when a link's
 * rate moves).  Unscaled, the fit took the jump of every reading at
 * unchanged arrivals for background load.  Returns the periods after
 * the cut until U stays within the bound + 0.1; *d the fitted
 * background and *m the level at the end.
 */
static int shrink(int told, double *d, double *m)
{
    rig_t g;
    cpu_plant_t pl = { .rng = 21, .cl = CPU_OPEN };
    qc_class_shm_t *cs;
    int period, settled = -1;

    rig_init(&g, pool, COST_FULL, 0.6);
    cs = &g.q->slots[0].cls[QC_CLASS_BASIC];
    pl.r = 0.8 * 0.6 / COST_FULL;
    for (period = -40; period < 40; period++) {
        qc_ctl_input_t in;
        double u;

        if (period == 0) {
            pl.scale = 4.0;
        }
        in = qc_ctl_input(1.0, cpu_period(&pl, cs), 0,
                          (apr_int64_t)(period + 41) * 1000000);
        if (period == 0 && told) {
            in.rescale = 4.0;
        }
        u = in.u;
        qc_ctl_step(&g.ctl, in);
        ck_assert(rig_level(&g) >= 1.0 - 1e-6);     /* snapshots carry it */
        if (period >= 0) {
            if (u > 0.7) {
                settled = -1;
            }
            else if (settled < 0) {
                settled = period;
            }
        }
    }
    *d = g.ctl.model.d;
    *m = rig_level(&g);
    return settled;
}

START_TEST(test_resource_shrinks_under_load)
{
    double d, m, d_blind, m_blind;
    int told = shrink(1, &d, &m), blind = shrink(0, &d_blind, &m_blind);

    printf("resource cut to a quarter at 0.8 of the bound: told, U within "
           "bound+0.1 after %d periods, d %.3f, m %.3f; not told: %d, d "
           "%.3f, m %.3f\n", told, d, m, blind, d_blind, m_blind);
    ck_assert_int_ge(told, 0);
    ck_assert_int_le(told, 5);
    ck_assert(d < 0.1);
    /* a quarter of the CPU: about 29% full pages hold the bound */
    ck_assert(m > 1.1 && m < 1.6);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qc_robust");
    TCase *tc = tcase_create("core");
    int rc;

    apr_initialize();
    apr_pool_create(&pool, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    tcase_add_test(tc, test_cold_start_any_prior);
    tcase_add_test(tc, test_ramp_is_followed);
    tcase_add_test(tc, test_light_load_high_prior_recovers);
    tcase_add_test(tc, test_refusal_dearer_than_a_snapshot);
    tcase_add_test(tc, test_held_bound_is_no_valve);
    tcase_add_test(tc, test_background_load_not_shed);
    tcase_add_test(tc, test_saturating_background_not_shed);
    tcase_add_test(tc, test_no_rejection_that_relieves_nothing);
    tcase_add_test(tc, test_light_load_under_a_hog_is_served);
    tcase_add_test(tc, test_idle_host_takes_nothing);
    tcase_add_test(tc, test_spread_mask);
    tcase_add_test(tc, test_actuator_linear_for_any_population);
    tcase_add_test(tc, test_balance_keeps_the_count_for_random_clients);
    tcase_add_test(tc, test_calibration);
    tcase_add_test(tc, test_refit_is_no_fall_of_load);
    tcase_add_test(tc, test_low_reading_on_an_underpriced_fit);
    tcase_add_test(tc, test_resource_shrinks_under_load);
    tcase_add_test(tc, test_cheaper_pages_are_no_background);
    suite_add_tcase(s, tc);
    rc = qc_test_run(s);
    apr_terminate();
    return rc;
}
