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
#include "link_plant.h"
#include "qc_decide.h"
#include "qc_level.h"

#define PERIODS 80

static apr_pool_t *pool;

/* The site under test: the CPU-bound one, or a link (link_plant.h)
 * where link.x[2] > 0, its queue in site_lq. */
typedef struct {
    cpu_plant_t cpu;
    plant_t link;
} site_t;

static lq_t site_lq;

static int site_is_link(const site_t *s)
{
    return s->link.x[2] > 0.0;
}

/* One period; returns the reading, *good the requests served/s.  On
 * a link the controller (ctl, if any) reads it ten ticks a period, as
 * qc_ctl_run does. */
static double site_period(site_t *s, qc_class_shm_t *cs, double *good,
                          qc_ctl_t *ctl)
{
    double u = 0.0;
    int t;

    if (site_is_link(s)) {
        *good = 0.0;
        for (t = 0; t < 10; t++) {
            double ut = lq_period(&site_lq, cs, &s->link, 2, 0.1);

            u += ut / 10.0;
            *good += s->link.cl.good / 10.0;
            if (ctl) {
                qc_ctl_tick(ctl, 0.1, ut);
            }
        }
        return u;
    }
    u = cpu_period(&s->cpu, cs);
    *good = s->cpu.cl.good;
    return u;
}

/* A period of the controller on what the site shows: on a link its
 * queue, on the CPU its waiting connections. */
static void site_step(const site_t *s, rig_t *g, double u, apr_int64_t now)
{
    qc_ctl_input_t in = qc_ctl_input(1.0, u, site_is_link(s) ? 0
                                     : (long)s->cpu.waiting, now);

    if (site_is_link(s)) {
        in.sendq_bytes = lq_left(&site_lq) / TRUE_B;
        in.link_bps = 1.0 / TRUE_B;
    }
    qc_ctl_step(&g->ctl, in);
}

typedef struct {
    double good;        /* requests (jobs) served/s over the run */
    double refused;     /* share of the requests answered 503 */
    double m_tail;      /* mean level over the last quarter */
    int at_zero;        /* periods at a level that refuses nearly all */
    unsigned modes;     /* 1 << qc_be_mode_t of each period */
    unsigned gate;      /* 1 << qc_refuse_gate_t of each period */
    qc_be_mode_t last;  /* the last period's mode */
    unsigned whys;      /* 1 << qc_be_why_t of each period */
} run_t;

/* A fixed level all through: what plain Apache (2) or the lowest tree
 * pinned (1) serves these clients. */
static double fixed_good(site_t s, double m)
{
    qc_class_shm_t *cs = apr_pcalloc(pool, sizeof(*cs));
    double good = 0.0, g;
    int period;

    memset(&site_lq, 0, sizeof(site_lq));
    cs->level_fx = qc_level_to_fx(m, 2);
    for (period = 0; period < PERIODS; period++) {
        site_period(&s, cs, &g, NULL);
        good += g;
    }
    return good / PERIODS;
}

/* The controller (bound 0.6 on the CPU, 0.9 on a link) from a prior
 * `prior` times the true cost, light load for 5 periods, then the
 * clients; on the CPU background from period `bg_from` to `bg_to`
 * (none if equal). */
static run_t controlled(site_t s, double prior, double bg, int bg_from,
                        int bg_to)
{
    rig_t g;
    qc_class_shm_t *cs;
    site_t light = s;
    run_t out = { 0.0, 0.0, 0.0, 0, 0, 0, QC_BE_TRACK, 0 };
    double arrived = 0.0, rej0, good;
    int period;

    memset(&site_lq, 0, sizeof(site_lq));
    if (site_is_link(&s)) {
        rig_init(&g, pool, prior * plant_cost(&s.link, 2), 0.9);
    }
    else {
        rig_init(&g, pool, prior * COST_FULL
                           * (s.cpu.scale > 0.0 ? s.cpu.scale : 1.0), 0.6);
    }
    cs = &g.q->slots[0].cls[QC_CLASS_BASIC];
    memset(&light.cpu.cl, 0, sizeof(light.cpu.cl));
    memset(&light.link.cl, 0, sizeof(light.link.cl));
    light.cpu.r = light.link.r = 20.0;
    for (period = -5; period < 0; period++) {
        double u = site_period(&light, cs, &good, &g.ctl);

        qc_test_step(&g.ctl, 1.0, u, 0, (apr_int64_t)(period + 10) * 1000000);
    }
    rej0 = (double)cs->level_arrived[0];
    for (period = 0; period < PERIODS; period++) {
        apr_uint64_t before = cs->level_arrived[0] + cs->level_arrived[1]
                              + cs->level_arrived[2];
        double u;

        s.cpu.background = period >= bg_from && period < bg_to ? bg : 0.0;
        u = site_period(&s, cs, &good, &g.ctl);
        arrived += (double)(cs->level_arrived[0] + cs->level_arrived[1]
                            + cs->level_arrived[2] - before);
        out.good += good / PERIODS;
        site_step(&s, &g, u, (apr_int64_t)(period + 10) * 1000000);
        out.modes |= 1u << g.ctl.be_mode;
        out.whys |= 1u << g.ctl.be_why;
        out.gate |= 1u << qc_ctl_refuse_gate(&g.ctl);
        out.last = g.ctl.be_mode;
        out.at_zero += rig_level(&g) < 0.05;
        if (period >= PERIODS * 3 / 4) {
            out.m_tail += rig_level(&g) / (PERIODS / 4);
        }
    }
    out.refused = ((double)cs->level_arrived[0] - rej0) / arrived;
    return out;
}

static site_t on_cpu(cpu_plant_t pl)
{
    site_t s;

    memset(&s, 0, sizeof(s));
    s.cpu = pl;
    return s;
}

/* Goodput against the better fixed policy, and the refused share. */
static void check_site(const char *what, site_t pl, double prior,
                       double floor, double refused_most)
{
    double plain = fixed_good(pl, 2.0), pinned = fixed_good(pl, 1.0);
    run_t c = controlled(pl, prior, 0.0, 0, 0);
    double best = fmax(plain, pinned);

    printf("%s, prior %gx: plain %.0f/s, lowest tree pinned %.0f/s, "
           "controlled %.0f/s (%.0f%% of the better), %.2f%% refused, "
           "m %.2f at the end, %d periods at 0\n", what, prior, plain,
           pinned, c.good, 100.0 * c.good / best, 100.0 * c.refused,
           c.m_tail, c.at_zero);
    ck_assert_msg(c.good >= floor * best, "%s: %.0f/s < %.0f%% of %.0f/s",
                  what, c.good, 100.0 * floor, best);
    /* no collapse where the lowest tree carries the load */
    ck_assert_msg(refused_most >= 1.0 || c.at_zero == 0,
                  "%s: %d periods at level 0", what, c.at_zero);
    ck_assert_msg(c.refused <= refused_most, "%s: %.2f%% refused", what,
                  100.0 * c.refused);
}

static void check_against_fixed(const char *what, cpu_plant_t pl,
                                double prior, double floor,
                                double refused_most)
{
    check_site(what, on_cpu(pl), prior, floor, refused_most);
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
            pl.cl.clients = clients[i];
            pl.cl.think = 0.002;
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
    pl.cl.clients = 300.0;         /* 600 req/s: twice the full tree's */
    pl.cl.think = 0.5;
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
    pl.cl.retries = 3;
    pl.r = 3.0 * full;
    check_against_fixed("retry storm at 3x the full tree", pl, 1.0, 0.9,
                        0.01);
    pl.r = 1.2 * lowest;
    check_against_fixed("retry storm at 1.2x the lowest tree", pl, 1.0, 0.8,
                        1.0);
    pl.r = 1.2 * lowest;
    pl.cl.retries = 0;
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
    c = controlled(on_cpu(pl), 1.0, 1.0, 20, 50);
    printf("a job filling the CPU from period 20 to 50 under 30 req/s: "
           "%.2f%% refused, m %.2f at the end\n", 100.0 * c.refused,
           c.m_tail);
    ck_assert(c.refused <= 0.01);
    c = controlled(on_cpu(pl), 1.0, 0.97, 20, 50);
    printf("... a job at 0.97: %.2f%% refused\n", 100.0 * c.refused);
    ck_assert(c.refused <= 0.01);
}
END_TEST

/*
 * The link testbed's costs on the queued link (bench/testbed: 100
 * Mbit/s, a 64 KB photo 5.32 ms of it, its degraded copy 0.65 ms, a 503
 * 35 us): the setting where keep-alive clients once drove the level to
 * 0, each 503 refilled at once and the link full of them.
 */
static site_t on_link(void)
{
    site_t s;

    memset(&s, 0, sizeof(s));
    s.link.x[1] = 8000.0;
    s.link.x[2] = 66400.0;
    s.link.a = 1e-5;            /* a handshake costs the link little */
    s.link.b = 8e-8;
    s.link.c = 3.5e-5;
    return s;
}

START_TEST(test_clients_on_a_link)
{
    static const double clients[] = { 10, 40, 200 };
    static const double priors[] = { 1.0, 10.0, 0.1 };
    site_t s = on_link();
    double full = 1.0 / plant_cost(&s.link, 2);
    unsigned i, j;

    for (i = 0; i < sizeof(clients) / sizeof(clients[0]); i++) {
        for (j = 0; j < sizeof(priors) / sizeof(priors[0]); j++) {
            char what[64];

            s = on_link();
            s.link.cl.clients = clients[i];
            s.link.cl.think = 0.002;
            snprintf(what, sizeof(what), "link: %.0f keep-alive clients",
                     clients[i]);
            check_site(what, s, priors[j], 0.85, 0.01);
        }
    }
    s = on_link();
    s.link.cl.clients = 150.0;
    s.link.cl.think = 0.5;
    check_site("link: 150 browsers thinking 0.5 s", s, 1.0, 0.85, 0.001);
    s = on_link();
    s.link.cl.retries = 3;
    s.link.r = 3.0 * full;
    check_site("link: retry storm at 3x the full tree", s, 1.0, 0.9, 0.01);
    check_site("link: retry storm at 3x the full tree", s, 10.0, 0.9, 0.01);
    s.link.r = 10.0 * full;     /* 1.2x what the lowest tree carries */
    check_site("link: retry storm at 10x the full tree", s, 1.0, 0.8, 1.0);
    check_site("link: retry storm at 10x the full tree", s, 10.0, 0.8, 1.0);
}
END_TEST

#define MODE(m) (1u << (m))
#define WHY(w) (1u << (w))

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
    c = controlled(on_cpu(pl), 1.0, 0.0, 0, 0);
    ck_assert_uint_eq(c.modes, MODE(QC_BE_TRACK));
    ck_assert(!(c.gate & (1u << QC_REFUSE_LONG)));
    /* a step to 3x the full tree from a prior 10x low: the queue it
     * left drains, then back to the model's level at once, and the
     * loop holds */
    pl.r = 3.0 / (COST_FULL + 2e-4);
    c = controlled(on_cpu(pl), 0.1, 0.0, 0, 0);
    ck_assert(c.whys & WHY(QC_BE_WHY_BACKLOG));
    ck_assert(c.whys & WHY(QC_BE_WHY_UNSATURATED));
    ck_assert_int_eq(c.last, QC_BE_TRACK);
    ck_assert(c.refused < 0.01);
    /* keep-alive clients: the model's jump to the lowest tree, which
     * they keep saturated at times (lowest); their queue is bounded by
     * their number and stays shorter than a period, so nothing is
     * refused */
    memset(&pl, 0, sizeof(pl));
    pl.rng = 59;
    pl.conn = 2e-4;
    pl.cl.clients = 200.0;
    pl.cl.think = 0.002;
    c = controlled(on_cpu(pl), 1.0, 0.0, 0, 0);
    ck_assert_uint_eq(c.modes & ~(MODE(QC_BE_TRACK) | MODE(QC_BE_LOWEST)),
                      0);
    ck_assert(!(c.gate & (1u << QC_REFUSE_LONG)));
    ck_assert(c.refused == 0.0);
    ck_assert(c.m_tail > 0.9);
    /* a job that fills the CPU of an idle site: the background mode,
     * no refusing (its test, with traffic: test_robust's
     * test_saturating_background_not_shed) */
    memset(&pl, 0, sizeof(pl));
    pl.rng = 61;
    pl.conn = 2e-4;
    c = controlled(on_cpu(pl), 1.0, 1.0, 0, PERIODS);
    ck_assert(c.modes & MODE(QC_BE_BACKGROUND));
    ck_assert_int_eq(c.last, QC_BE_BACKGROUND);
    ck_assert(!(c.gate & (1u << QC_REFUSE_LONG)));
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {
        test_closed_loop_keep_alive,
        test_closed_loop_with_think_time,
        test_retry_storm,
        test_job_fills_the_cpu_under_traffic,
        test_modes_of_each_load,
        test_clients_on_a_link
    };

    return qc_test_main("qc_clients", tests,
                        sizeof(tests) / sizeof(tests[0]), &pool);
}
