/* Licensed under the Apache License, Version 2.0. */

/*
 * The controller against the clients real users have, on the simulated
 * CPU-bound site (cpu_plant.h): closed-loop keep-alive clients that send
 * their next request when the last reply comes, open-loop clients that
 * retry each 503 at once, and a job that fills the CPU while traffic
 * flows.  Each is held against the two fixed policies in the same run:
 * plain Apache (the top tree) and the lowest tree pinned.  Goodput must
 * not fall below 85% of the better (80% where refusals cannot be
 * avoided), and what refusing does not relieve is not refused.
 */

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "apr_general.h"

#include "qc_test.h"
#include "qc_test_ctl.h"
#include "cpu_plant.h"
#include "qc_level.h"

#define PERIODS 80

static apr_pool_t *pool;

/* The bound the rig's controller holds: the CPU-bound site's 0.6, or a
 * link's 0.9 (link_plant). */
static double rig_bound = 0.6;

typedef struct {
    double good;        /* requests (jobs) served/s over the run */
    double refused;     /* share of the requests answered 503 */
    double m_tail;      /* mean level over the last quarter */
    unsigned modes;     /* 1 << qc_be_mode_t of each period */
    unsigned relief;    /* 1 << qc_relief_state_t of each period */
    qc_be_mode_t last;  /* the last period's mode */
} run_t;

/* A fixed level all through: what plain Apache (2) or the lowest tree
 * pinned (1) serves these clients. */
static double fixed_good(cpu_plant_t pl, double m)
{
    qc_class_shm_t *cs = apr_pcalloc(pool, sizeof(*cs));
    double good = 0.0;
    int period;

    cs->level_fx = qc_level_to_fx(m, 2);
    for (period = 0; period < PERIODS; period++) {
        cpu_period(&pl, cs);
        good += pl.good;
    }
    return good / PERIODS;
}

/* The controller from a prior `prior` times the true cost, light load
 * for 5 periods, then the clients; background from period `bg_from` to
 * `bg_to` (none if equal). */
static run_t controlled(cpu_plant_t pl, double prior, double bg,
                        int bg_from, int bg_to)
{
    rig_t g;
    qc_class_shm_t *cs;
    cpu_plant_t light = pl;
    run_t out = { 0.0, 0.0, 0.0, 0, 0, QC_BE_TRACK };
    double arrived = 0.0, rej0;
    int period;

    rig_init(&g, pool, prior * COST_FULL
                       * (pl.scale > 0.0 ? pl.scale : 1.0), rig_bound);
    cs = &g.q->slots[0].cls[QC_CLASS_BASIC];
    light.clients = 0.0;
    light.retries = 0;
    light.r = 20.0;
    for (period = -5; period < 0; period++) {
        double u = cpu_period(&light, cs);

        qc_test_step(&g.ctl, 1.0, u, 0, (apr_int64_t)(period + 10) * 1000000);
    }
    rej0 = (double)cs->level_arrived[0];
    for (period = 0; period < PERIODS; period++) {
        apr_uint64_t before = cs->level_arrived[0] + cs->level_arrived[1]
                              + cs->level_arrived[2];
        double u;

        pl.background = period >= bg_from && period < bg_to ? bg : 0.0;
        u = cpu_period(&pl, cs);
        arrived += (double)(cs->level_arrived[0] + cs->level_arrived[1]
                            + cs->level_arrived[2] - before);
        out.good += pl.good / PERIODS;
        qc_test_step(&g.ctl, 1.0, u, 0, (apr_int64_t)(period + 10) * 1000000);
        out.modes |= 1u << g.ctl.be_mode;
        out.relief |= 1u << g.ctl.relief.state;
        out.last = g.ctl.be_mode;
        if (period >= PERIODS * 3 / 4) {
            out.m_tail += rig_level(&g) / (PERIODS / 4);
        }
    }
    out.refused = ((double)cs->level_arrived[0] - rej0) / arrived;
    return out;
}

/* Goodput against the better fixed policy, and the refused share. */
static void check_against_fixed(const char *what, cpu_plant_t pl,
                                double prior, double floor,
                                double refused_most)
{
    double plain = fixed_good(pl, 2.0), pinned = fixed_good(pl, 1.0);
    run_t c = controlled(pl, prior, 0.0, 0, 0);
    double best = fmax(plain, pinned);

    printf("%s, prior %gx: plain %.0f/s, lowest tree pinned %.0f/s, "
           "controlled %.0f/s (%.0f%% of the better), %.2f%% refused, "
           "m %.2f at the end\n", what, prior, plain, pinned, c.good,
           100.0 * c.good / best, 100.0 * c.refused, c.m_tail);
    ck_assert_msg(c.good >= floor * best, "%s: %.0f/s < %.0f%% of %.0f/s",
                  what, c.good, 100.0 * floor, best);
    ck_assert_msg(c.refused <= refused_most, "%s: %.2f%% refused", what,
                  100.0 * c.refused);
}

/* Keep-alive API clients with no think time: the resource is full at
 * every level, and each refusal comes back at once.  Refusing buys
 * nothing; the lowest tree serves them all. */
START_TEST(test_closed_loop_keep_alive)
{
    static const double clients[] = { 10, 40, 200, 1000 };
    static const double priors[] = { 1.0, 10.0, 0.1 };
    cpu_plant_t pl;
    unsigned i, j;

    for (i = 0; i < sizeof(clients) / sizeof(clients[0]); i++) {
        for (j = 0; j < sizeof(priors) / sizeof(priors[0]); j++) {
            char what[64];

            memset(&pl, 0, sizeof(pl));
            pl.rng = 31 + i;
            pl.conn = 2e-4;
            pl.clients = clients[i];
            pl.think = 0.002;
            snprintf(what, sizeof(what), "%.0f keep-alive clients",
                     clients[i]);
            check_against_fixed(what, pl, priors[j], 0.85, 0.01);
        }
    }
}
END_TEST

/* Browser-like sessions: clients that think 0.5 s between requests,
 * more of them than the full tree serves at the bound: degrading is
 * what helps, and nothing is refused. */
START_TEST(test_closed_loop_with_think_time)
{
    cpu_plant_t pl;

    memset(&pl, 0, sizeof(pl));
    pl.rng = 41;
    pl.conn = 2e-4;
    pl.clients = 300.0;         /* 600 req/s: twice the full tree's */
    pl.think = 0.5;
    check_against_fixed("300 browsers thinking 0.5 s", pl, 1.0, 0.85, 0.001);
    check_against_fixed("300 browsers thinking 0.5 s", pl, 10.0, 0.85,
                        0.001);
}
END_TEST

/* Open-loop clients that retry each 503 at once, up to 3 times: at 3x
 * the full tree's capacity the lowest tree carries them; at 1.2x the
 * lowest tree's, refusals cannot all be avoided, and each is retried. */
START_TEST(test_retry_storm)
{
    cpu_plant_t pl;
    double full = 1.0 / (COST_FULL + 2e-4), lowest = 1.0 / (COST_SNAP + 2e-4);

    memset(&pl, 0, sizeof(pl));
    pl.rng = 43;
    pl.conn = 2e-4;
    pl.retries = 3;
    pl.r = 3.0 * full;
    check_against_fixed("retry storm at 3x the full tree", pl, 1.0, 0.9,
                        0.01);
    pl.r = 1.2 * lowest;
    check_against_fixed("retry storm at 1.2x the lowest tree", pl, 1.0, 0.8,
                        1.0);
    pl.r = 1.2 * lowest;
    pl.retries = 0;
    check_against_fixed("open loop at 1.2x the lowest tree, no retries",
                        pl, 1.0, 0.8, 1.0);
}
END_TEST

/* A job that fills the CPU while 30 requests/s of the dynamic page
 * flow: refusing them relieves nothing the job does. */
START_TEST(test_job_fills_the_cpu_under_traffic)
{
    cpu_plant_t pl;
    run_t c;

    memset(&pl, 0, sizeof(pl));
    pl.rng = 47;
    pl.r = 30.0;
    pl.conn = 2e-4;
    c = controlled(pl, 1.0, 1.0, 20, 50);
    printf("a job filling the CPU from period 20 to 50 under 30 req/s: "
           "%.2f%% refused, m %.2f at the end\n", 100.0 * c.refused,
           c.m_tail);
    ck_assert(c.refused <= 0.01);
    c = controlled(pl, 1.0, 0.97, 20, 50);
    printf("... a job at 0.97: %.2f%% refused\n", 100.0 * c.refused);
    ck_assert(c.refused <= 0.01);
}
END_TEST

/* The link testbed's costs (link_plant): the setting where keep-alive
 * clients once drove the level to 0, each 503 refilled at once and the
 * link full of them. */
START_TEST(test_clients_on_a_link)
{
    static const double clients[] = { 40, 200 };
    static const double priors[] = { 1.0, 10.0, 0.1 };
    double full = 1.0 / 5.32e-3;
    cpu_plant_t pl;
    unsigned i, j;

    rig_bound = 0.9;
    for (i = 0; i < sizeof(clients) / sizeof(clients[0]); i++) {
        for (j = 0; j < sizeof(priors) / sizeof(priors[0]); j++) {
            char what[64];

            link_plant(&pl, 71 + i);
            pl.clients = clients[i];
            pl.think = 0.002;
            snprintf(what, sizeof(what), "link: %.0f keep-alive clients",
                     clients[i]);
            check_against_fixed(what, pl, priors[j], 0.85, 0.01);
        }
    }
    link_plant(&pl, 79);
    pl.clients = 150.0;
    pl.think = 0.5;
    check_against_fixed("link: 150 browsers thinking 0.5 s", pl, 1.0, 0.85,
                        0.001);
    link_plant(&pl, 83);
    pl.retries = 3;
    pl.r = 3.0 * full;
    check_against_fixed("link: retry storm at 3x the full tree", pl, 1.0,
                        0.9, 0.01);
    pl.r = 10.0 * full;         /* 1.3x what the lowest tree carries */
    check_against_fixed("link: retry storm at 10x the full tree", pl, 1.0,
                        0.8, 1.0);
    rig_bound = 0.6;
}
END_TEST

#define MODE(m) (1u << (m))

/* Each client model meets the modes doc/control.md gives for it. */
START_TEST(test_modes_of_each_load)
{
    cpu_plant_t pl;
    run_t c;

    /* light load: the loop holds, nothing else */
    memset(&pl, 0, sizeof(pl));
    pl.rng = 53;
    pl.r = 20.0;
    pl.conn = 2e-4;
    c = controlled(pl, 1.0, 0.0, 0, 0);
    ck_assert_uint_eq(c.modes, MODE(QC_BE_TRACK));
    ck_assert_uint_eq(c.relief, 1u << QC_RELIEF_FREE);
    /* a step to 3x the full tree from a prior 10x low: the queue it
     * left drains, then back to the model's level at once, and the
     * loop holds */
    pl.r = 3.0 / (COST_FULL + 2e-4);
    c = controlled(pl, 0.1, 0.0, 0, 0);
    ck_assert(c.modes & MODE(QC_BE_DRAIN));
    ck_assert(c.modes & MODE(QC_BE_RESTART));
    ck_assert_int_eq(c.last, QC_BE_TRACK);
    ck_assert_uint_eq(c.relief, 1u << QC_RELIEF_FREE);
    /* keep-alive clients: the model's jump to the lowest tree, and
     * refusing probed and barred */
    memset(&pl, 0, sizeof(pl));
    pl.rng = 59;
    pl.conn = 2e-4;
    pl.clients = 200.0;
    pl.think = 0.002;
    c = controlled(pl, 1.0, 0.0, 0, 0);
    ck_assert_uint_eq(c.modes & ~(MODE(QC_BE_TRACK) | MODE(QC_BE_DRAIN)),
                      0);
    ck_assert(c.relief & (1u << QC_RELIEF_PROBE));
    ck_assert(c.relief & (1u << QC_RELIEF_BARRED));
    ck_assert(c.m_tail > 0.9);
    /* a job that fills the CPU of an idle site: the background mode,
     * no refusing (its test, with traffic: test_robust's
     * test_saturating_background_not_shed) */
    memset(&pl, 0, sizeof(pl));
    pl.rng = 61;
    pl.conn = 2e-4;
    c = controlled(pl, 1.0, 1.0, 0, PERIODS);
    ck_assert(c.modes & MODE(QC_BE_BACKGROUND));
    ck_assert_int_eq(c.last, QC_BE_BACKGROUND);
    ck_assert_uint_eq(c.relief, 1u << QC_RELIEF_FREE);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qc_clients");
    TCase *tc = tcase_create("core");
    int rc;

    apr_initialize();
    apr_pool_create(&pool, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_closed_loop_keep_alive);
    tcase_add_test(tc, test_closed_loop_with_think_time);
    tcase_add_test(tc, test_retry_storm);
    tcase_add_test(tc, test_job_fills_the_cpu_under_traffic);
    tcase_add_test(tc, test_modes_of_each_load);
    tcase_add_test(tc, test_clients_on_a_link);
    suite_add_tcase(s, tc);
    rc = qc_test_run(s);
    apr_terminate();
    return rc;
}
