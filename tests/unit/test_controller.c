/* Licensed under the Apache License, Version 2.0. */

/*
 * The controller's period (qc_ctl_step) against a segment in ordinary
 * memory and a fluid plant that behaves as the paper's model says.
 */

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apr_general.h"
#include "apr_atomic.h"

#include "qc_test.h"
#include "qc_test_ctl.h"
#include "qc_ctl_private.h"
#include "qc_controller.h"
#include "qc_surge.h"
#include "link_plant.h"

static apr_pool_t *pool;

/*
 * Best effort offered twice what the machine can serve at full quality
 * settles at the bound by degrading; a guaranteed host within its
 * contract keeps full quality all along (isolation, §5.1); a pinned host
 * is left alone.
 */
START_TEST(test_step_isolation_and_pinning)
{
    qc_ctl_vs_t vs[3] = {
        { "be:80", NULL, 2, 0, 0.0, 0.0, 0, 0.0 },
        { "v1:80", NULL, 2, 1, 50.0, 2e6, 0, 0.0 },
        { "pinned:80", NULL, 2, 0, 0.0, 0.0, 1, 0.5 },
    };
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    plant_t be = PLANT(2000.0, 8192.0, 65536.0);
    plant_t v1 = PLANT(40.0, 4096.0, 16384.0);
    qc_shm_t *q = plant_shm(pool, 3);
    double u = 0.0, tail = 0.0;
    char state[] = "/tmp/qc-state-XXXXXX", line[QC_CTL_STATE_MAX];
    qc_rls_t saved;
    qc_rls_sample_t x;
    ssize_t n;
    int period;
    unsigned i;

    memset(&cfg, 0, sizeof(cfg));
    cfg.bound = 0.58;
    cfg.period = 1.0;
    cfg.gain_margin = 4.0;
    cfg.a0 = 2.0 * TRUE_A;
    cfg.b0 = 0.5 * TRUE_B;
    cfg.c0 = TRUE_C;
    cfg.shm = q;
    cfg.vs = vs;
    cfg.nvs = 3;
    cfg.log_fd = -1;
    cfg.state_fd = mkstemp(state);
    ck_assert_int_ge(cfg.state_fd, 0);
    /* fitted on 2 CPUs (as qc_sensors_rescale notes them) */
    cfg.nsensors = 1;
    ck_assert_int_eq(qc_sensor_cpu_init(&cfg.sensors[0], "/proc/stat",
                                        NULL), 0);
    cfg.sensors[0].cap_seen = 2.0;
    for (i = 0; i < 3; i++) {
        vs[i].slot = &q->slots[i];
    }
    q->slots[2].cls[QC_CLASS_BASIC].level_fx = qc_level_to_fx(0.5, 2);
    q->slots[2].cls[QC_CLASS_BASIC].loop_fx = qc_level_to_fx(0.5, 2);
    qc_ctl_init(&ctl, &cfg, pool);

    for (period = 1; period <= 80; period++) {
        u = plant_period(&q->slots[0].cls[QC_CLASS_BASIC], &be, 2, 1.0)
            + plant_period(&q->slots[1].cls[QC_CLASS_BASIC], &v1, 2, 1.0);
        /* vary the load a little so the model can be learned */
        be.r = 2000.0 + 300.0 * sin(period * 0.7);
        qc_test_step(&ctl, 1.0, u, -1, (apr_int64_t)period * 1000000);
        if (period > 40) {
            tail += u / 40.0;
        }
        /* The in-contract guaranteed host is never degraded. */
        if (period > 3) {
            ck_assert_uint_eq(q->slots[1].cls[QC_CLASS_BASIC].level_fx,
                              qc_level_to_fx(2.0, 2));
        }
    }
    printf("controller step: mean utilization %.4f over the last 40 "
           "periods, best-effort m %.3f\n", tail, qc_level_from_fx(
               q->slots[0].cls[QC_CLASS_BASIC].level_fx));
    ck_assert(fabs(tail - 0.58) < 0.03);
    ck_assert(qc_level_from_fx(q->slots[0].cls[QC_CLASS_BASIC].level_fx)
              > 1.0);
    ck_assert(qc_level_from_fx(q->slots[0].cls[QC_CLASS_BASIC].level_fx)
              < 2.0);
    ck_assert_uint_eq(q->slots[2].cls[QC_CLASS_BASIC].level_fx,
                      qc_level_to_fx(0.5, 2));
    ck_assert_uint_eq(q->periods, 80);
    ck_assert_uint_eq(q->heartbeat, 80 * 1000000ULL);
    ck_assert(qc_bitsd(q->a_bits) > 0.0);

    /* The converged model went to the state file, in a form a new
     * controller starts from. */
    n = pread(cfg.state_fd, line, sizeof(line) - 1, 0);
    ck_assert_int_gt(n, 0);
    line[n] = '\0';
    ck_assert_ptr_nonnull(strstr(line, "\ncapacity 2 cpus\n"));
    *strchr(line, '\n') = '\0';
    ck_assert_int_eq(qc_rls_parse(&saved, line), 0);
    /* What a request to each tree costs (a_j and b alone cannot be
     * told apart with one reply size per tree). */
    memset(&x, 0, sizeof(x));
    x.r[0] = 1000.0;
    x.w = 1000.0 * 65536.0;
    ck_assert(fabs(qc_rls_predict(&saved, &x) - qc_rls_d(&saved)
                   - 1000.0 * (TRUE_A + TRUE_B * 65536.0)) < 0.06);
    memset(&x, 0, sizeof(x));
    x.r[1] = 1000.0;
    x.w = 1000.0 * 8192.0;
    ck_assert(fabs(qc_rls_predict(&saved, &x) - qc_rls_d(&saved)
                   - 1000.0 * (TRUE_A + TRUE_B * 8192.0)) < 0.03);
    close(cfg.state_fd);
    unlink(state);
}
END_TEST

/* A controller for one host on a one-slot segment, true model, T = 1 s,
 * G = 4. */
static void one_host(qc_ctl_t *ctl, qc_ctl_config_t *cfg, qc_ctl_vs_t *vs,
                     qc_shm_t *q, double bound)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->bound = bound;
    cfg->period = 1.0;
    cfg->gain_margin = 4.0;
    cfg->a0 = TRUE_A;
    cfg->b0 = TRUE_B;
    cfg->c0 = TRUE_C;
    cfg->shm = q;
    cfg->vs = vs;
    cfg->nvs = 1;
    cfg->log_fd = -1;
    cfg->state_fd = -1;
    vs->slot = &q->slots[0];
    qc_ctl_init(ctl, cfg, pool);
}

/* Start a one-host controller on one CPU sensor reading stat (2 CPUs
 * online), resuming a fit learnt at `capacity`: from a state file
 * ("\ncapacity ..." after the fit) or, with state NULL, from the
 * segment a crashed controller left (cap in `unit`).  Returns the
 * first rescale the sensor then reports. */
static double start_fitted_at(const char *capacity, double cap,
                              apr_uint32_t unit, const char *stat)
{
    char state[] = "/tmp/qc-state-XXXXXX", text[QC_CTL_STATE_MAX];
    qc_ctl_vs_t vs = { "site:80", NULL, 2, 0, 0.0, 0.0, 0, 0.0 };
    qc_shm_t *q = plant_shm(pool, 1);
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    qc_rls_t rls;
    int n, fd = -1;

    if (capacity) {
        fd = mkstemp(state);
        ck_assert_int_ge(fd, 0);
        qc_rls_init(&rls, TRUE_A, TRUE_B, TRUE_C, QC_RLS_LAMBDA);
        n = qc_rls_format(&rls, text, QC_RLS_LINE_MAX);
        ck_assert_int_gt(n, 0);
        snprintf(text + n, sizeof(text) - (size_t)n, "%s", capacity);
        ck_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    }
    else {
        q->periods = 1;
        q->a_bits = qc_dbits(TRUE_A);
        q->b_bits = qc_dbits(TRUE_B);
        q->c_bits = qc_dbits(TRUE_C);
        q->resource_cap_bits = qc_dbits(cap);
        q->resource_unit = unit;
    }
    memset(&cfg, 0, sizeof(cfg));
    cfg.nsensors = 1;
    ck_assert_int_eq(qc_sensor_cpu_init(&cfg.sensors[0], stat, NULL), 0);
    cfg.bound = 0.6;
    cfg.period = 1.0;
    cfg.gain_margin = 4.0;
    cfg.a0 = 10.0 * TRUE_A;
    cfg.shm = q;
    cfg.vs = &vs;
    cfg.nvs = 1;
    cfg.log_fd = -1;
    cfg.state_fd = fd;
    vs.slot = &q->slots[0];
    qc_ctl_init(&ctl, &cfg, pool);
    ck_assert(fabs(ctl.model.a - TRUE_A) < 1e-9 * TRUE_A);  /* resumed */
    if (fd >= 0) {
        close(fd);
        unlink(state);
    }
    cfg.sensors[0].sample(&cfg.sensors[0], 1.0);
    return qc_sensors_rescale(cfg.sensors, 1);
}

static double start_from_state(const char *capacity, const char *stat)
{
    return start_fitted_at(capacity, 0.0, QC_SHM_UNIT_NONE, stat);
}

/*
 * A level pinned by QosCtlFixedLevel is corrected as a loop's is: with
 * the lower half of the hash carrying 4/5 of the load (no bucket heavy),
 * half of it lies below 0.3125, so m = 1.5 is served at the threshold
 * 1.3125, and loop_fx keeps 1.5 beside it for the module to check.  A
 * controller restarted on the segment resumes m, not the threshold.
 */
START_TEST(test_pinned_level_is_corrected_and_resumed)
{
    qc_ctl_vs_t vs = { "pinned:80", NULL, 2, 0, 0.0, 0.0, 1, 1.5 };
    qc_ctl_vs_t loop = { "pinned:80", NULL, 2, 0, 0.0, 0.0, 0, 0.0 };
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    qc_shm_t *q = plant_shm(pool, 1);
    qc_class_shm_t *cs = &q->slots[0].cls[QC_CLASS_BASIC];
    unsigned b;
    int i;

    one_host(&ctl, &cfg, &vs, q, 0.9);
    for (i = 1; i <= 10; i++) {
        for (b = 0; b < QC_BUCKETS; b++) {
            cs->bucket_arrived[b] += b < QC_BUCKETS / 2 ? 40 : 10;
        }
        cs->level_arrived[1] += 800;
        cs->level_arrived[2] += 800;
        qc_test_step(&ctl, 1.0, 0.3, -1, (apr_int64_t)i * 1000000);
    }
    ck_assert_uint_eq(cs->loop_fx, qc_level_to_fx(1.5, 2));
    ck_assert_msg(fabs(qc_level_from_fx(cs->level_fx) - 1.3125) < 1e-3,
                  "threshold %g", qc_level_from_fx(cs->level_fx));
    /* The premium class, with no clients counted, is served at 1.5. */
    ck_assert_uint_eq(q->slots[0].cls[QC_CLASS_PREMIUM].level_fx,
                      qc_level_to_fx(1.5, 2));

    one_host(&ctl, &cfg, &loop, q, 0.9);
    ck_assert(fabs(ctl.cls[QC_CLASS_BASIC].m_applied - 1.5) < 1e-4);
}
END_TEST

/* A state file with anything wrong is not used at all: a good fit
 * beside a bad capacity line starts from the prior, not half-way. */
START_TEST(test_bad_state_file_is_not_used)
{
    static const char *const tails[] = {
        "\ncapacity -1 cpus\n", "\ncapacity 0x4 cpus\n",
        "\ncapacity 4 cpus junk\n", "\nsomething else\n", " junk\n"
    };
    char state[] = "/tmp/qc-state-XXXXXX", text[QC_CTL_STATE_MAX];
    qc_ctl_vs_t vs = { "site:80", NULL, 2, 0, 0.0, 0.0, 0, 0.0 };
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    qc_rls_t rls;
    unsigned i;
    int n, fd;

    for (i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
        fd = mkstemp(state);
        ck_assert_int_ge(fd, 0);
        qc_rls_init(&rls, TRUE_A, TRUE_B, TRUE_C, QC_RLS_LAMBDA);
        n = qc_rls_format(&rls, text, QC_RLS_LINE_MAX);
        ck_assert_int_gt(n, 0);
        snprintf(text + n, sizeof(text) - (size_t)n, "%s", tails[i]);
        ck_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
        memset(&cfg, 0, sizeof(cfg));
        cfg.bound = 0.6;
        cfg.period = 1.0;
        cfg.gain_margin = 4.0;
        cfg.a0 = 10.0 * TRUE_A;
        cfg.shm = plant_shm(pool, 1);
        cfg.vs = &vs;
        cfg.nvs = 1;
        cfg.log_fd = -1;
        cfg.state_fd = fd;
        vs.slot = &cfg.shm->slots[0];
        qc_ctl_init(&ctl, &cfg, pool);
        ck_assert_msg(fabs(ctl.model.a - 10.0 * TRUE_A) < 1e-9 * TRUE_A,
                      "state with \"%s\" used: a = %g", tails[i],
                      ctl.model.a);
        close(fd);
        unlink(state);
        strcpy(state, "/tmp/qc-state-XXXXXX");
    }
}
END_TEST

/* A state file saved on 4 CPUs, read on 2: the fit is rescaled at the
 * first period.  Saved on a link, or by an older controller: the fit
 * is taken as it is.  The same from the segment of a controller that
 * crashed. */
START_TEST(test_state_file_at_another_capacity)
{
    char stat[] = "/tmp/qc-stat-XXXXXX";
    int fd = mkstemp(stat);
    static const char two[] = "cpu  0 0 0 0 0 0 0 0\n"
        "cpu0 1 0 0 1 0 0 0 0\ncpu1 1 0 0 1 0 0 0 0\n";

    ck_assert_int_ge(fd, 0);
    ck_assert(write(fd, two, sizeof(two) - 1) == (ssize_t)sizeof(two) - 1);
    close(fd);
    ck_assert(fabs(start_from_state("\ncapacity 4 cpus\n", stat) - 2.0)
              < 1e-9);
    ck_assert(start_from_state("\ncapacity 2 cpus\n", stat) == 1.0);
    ck_assert(start_from_state("\ncapacity 1e8 bit/s\n", stat) == 1.0);
    ck_assert(start_from_state("", stat) == 1.0);
    /* A controller restarted after a crash, from the segment. */
    ck_assert(fabs(start_fitted_at(NULL, 4.0, QC_SHM_UNIT_CPUS, stat)
                   - 2.0) < 1e-9);
    ck_assert(start_fitted_at(NULL, 4.0, QC_SHM_UNIT_BITS, stat) == 1.0);
    ck_assert(start_fitted_at(NULL, 0.0, QC_SHM_UNIT_NONE, stat) == 1.0);
    unlink(stat);
}
END_TEST

/*
 * Idle, then a step to 3x what the link carries at full quality: the
 * controller acts on the load it decided (not on replies the queue
 * releases late), jumps to the model's level (again in the next period
 * if need be: the accept queue reads 0, so the counts are whole), and
 * holds while the queue drains; the link then sits at the set point
 * with no oscillation.
 * Goals of issue #4: within +-5% in <= 10 periods, overshoot <= 20%.
 * The step period leaves two periods of link time queued, which drains
 * at what the lowest tree leaves spare (0.2 a period) since the fit has
 * not measured that tree's cost yet and refuses no one on a guess (a
 * saturated reading is the backlog's, not a cost): 10 periods, then the
 * first unsaturated one restarts at the set point.  Hence 12, not 10.
 */
START_TEST(test_step_on_a_queued_link)
{
    qc_ctl_vs_t vs = { "be:80", NULL, 2, 0, 0.0, 0.0, 0, 0.0 };
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    /* full quality: 3.0 s of work per second */
    plant_t be = PLANT(0.0, 8192.0, 65536.0);
    static lq_t lq;
    qc_shm_t *q = plant_shm(pool, 1);
    double u[40], over = 0.0;
    int k, settle = -1, reached = -1;

    one_host(&ctl, &cfg, &vs, q, 0.58);
    be.r = 20.0;                        /* light load: sizes get known */
    for (k = -5; k < 40; k++) {
        double uk;

        if (k == 0) {
            be.r = 3.0 / (TRUE_A + TRUE_B * 65536.0);
        }
        uk = lq_period(&lq, &q->slots[0].cls[QC_CLASS_BASIC], &be, 2, 1.0);
        qc_test_step(&ctl, 1.0, uk, 0, (apr_int64_t)(k + 10) * 1000000);
        if (k >= 0) {
            u[k] = uk;
        }
    }
    for (k = 0; k < 40; k++) {
        int in = fabs(u[k] - 0.58) <= 0.05 * 0.58;

        if (in && settle < 0) {
            settle = k;
        }
        else if (!in) {
            settle = -1;
        }
        if (reached < 0 && (in || u[k] < 0.58)) {
            reached = k;
        }
        if (reached >= 0 && fabs(u[k] - 0.58) / 0.58 > over) {
            over = fabs(u[k] - 0.58) / 0.58;
        }
    }
    printf("step on a queued link: U");
    for (k = 0; k < 40; k++) {
        printf(" %.3f", u[k]);
    }
    printf("; settled after %d periods, overshoot %.1f%%\n", settle,
           100 * over);
    ck_assert_int_ge(settle, 0);
    /* two periods of them probe whether refusing relieves */
    ck_assert_int_le(settle, 12 + QC_RELIEF_PERIODS);
    ck_assert(over <= 0.2);
}
END_TEST


/* A reading off by up to amp either way, as a late sample makes it:
 * what one period reads too much the next reads too little. */
static double jittered(double u, unsigned *seed, double amp, double *prev)
{
    double e = amp * (2.0 * rand_r(seed) / (double)RAND_MAX - 1.0);

    u *= 1.0 + e - *prev;
    *prev = e;
    return u;
}

/*
 * One host on the queued link, light load from period `from` (< 0) on,
 * then at period 0 a step to 3x what it carries at full quality, until
 * period `to`.  The lowest tree carries the step at the bound, as on the
 * integration testbed.  prior scales the model the controller starts
 * from; wrong_d (> 0) is a background the fit is told at the step; amp
 * jitters the readings (seeded by seed).  Returns the mean reading of
 * the last 20 periods, and in *m_min the lowest level from the step on.
 */
static double lq_step_run(int from, int to, double prior, double wrong_d,
                          double amp, unsigned seed, double *m_min)
{
    qc_ctl_vs_t vs = { "be:80", NULL, 2, 0, 0.0, 0.0, 0, 0.0 };
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    plant_t be = PLANT(20.0, 2048.0, 65536.0);
    static lq_t lq;
    qc_shm_t *q = plant_shm(pool, 1);
    double tail = 0.0, prev = 0.0;
    int k;

    memset(&lq, 0, sizeof(lq));
    one_host(&ctl, &cfg, &vs, q, 0.58);
    cfg.a0 *= prior;
    cfg.b0 *= prior;
    cfg.c0 *= prior;
    qc_ctl_init(&ctl, &cfg, pool);
    *m_min = 2.0;
    for (k = from; k < to; k++) {
        double uk;

        if (k == 0) {
            be.r = 3.0 / (TRUE_A + TRUE_B * 65536.0);
            if (wrong_d > 0.0) {
                ctl.rls.theta[QC_RLS_D] = wrong_d;
            }
        }
        uk = lq_period(&lq, &q->slots[0].cls[QC_CLASS_BASIC], &be, 2, 1.0);
        uk = jittered(uk, &seed, amp, &prev);
        qc_test_step(&ctl, 1.0, uk, 0, (apr_int64_t)(k - from) * 1000000);
        if (k >= to - 20) {
            tail += uk / 20.0;
        }
        if (k >= 0 && ctl.cls[QC_CLASS_BASIC].m_applied < *m_min) {
            *m_min = ctl.cls[QC_CLASS_BASIC].m_applied;
        }
    }
    return tail;
}

/*
 * The queued-link step with a sensor that jitters (in CI a link reading
 * peaked at 1.08 of the capacity) and priors 10x off either way: every
 * run degrades and holds the bound.
 */
START_TEST(test_step_with_a_jittery_sensor_and_wrong_priors)
{
    static const double amps[] = { 0.0, 0.05, 0.1 };
    static const double priors[] = { 0.1, 1.0, 10.0 };
    unsigned ai, pi, seed, bad = 0;

    for (ai = 0; ai < 3; ai++) {
        for (pi = 0; pi < 3; pi++) {
            for (seed = 1; seed <= 10; seed++) {
                double m_min;
                double tail = lq_step_run(-5, 60, priors[pi], 0.0,
                                          amps[ai], seed, &m_min);

                if (fabs(tail - 0.58) > 0.1 || m_min > 1.5) {
                    bad++;
                    printf("jitter %.2f, prior x%.1f, seed %u: U %.3f over "
                           "the last 20 periods, m down to %.3f\n",
                           amps[ai], priors[pi], seed, tail, m_min);
                }
            }
        }
    }
    ck_assert_uint_eq(bad, 0);
}
END_TEST

/*
 * A fit that was taught a background of nearly the whole link (in CI:
 * periods with no arrivals read 0.99 while earlier replies drained)
 * cannot blind the loop: background is there at every instant, so it is
 * never much more than the resource read a few seconds ago at light
 * load.  Nor does the loop refuse anyone: the lowest tree carries the
 * load (without the projection of the fit onto that bound, only the
 * calibration's d bounded, the fit's costs stayed wrong and m went to
 * 0 for two periods).
 */
START_TEST(test_a_wrong_background_cannot_blind_the_loop)
{
    double m_min;
    double tail = lq_step_run(-8, 40, 1.0, 0.95, 0.0, 1, &m_min);

    printf("wrong background: m down to %.3f, U over the last 20 periods "
           "%.3f\n", m_min, tail);
    ck_assert(m_min < 1.5);
    ck_assert(m_min >= 0.9);            /* the lowest tree carries it */
    ck_assert(fabs(tail - 0.58) < 0.1);
}
END_TEST

/*
 * One host on the queued link read in ticks of a tenth of a period, as
 * qc_ctl_run reads it: a fresh controller whose prior is `prior` times
 * the true costs, and from the fourth tick on 3x what the full tree
 * carries (light load from period `from` when it is < 0).  ticks 0
 * leaves the valve out: the period's step alone; 2 adds the request
 * path's surge guard to the valve.  Returns the longest
 * the link's queue got, in seconds of work; *tail is the mean reading
 * of the last 10 of 30 periods.
 */
static double lq_tick_run(int ticks, int from, double prior, double *tail,
                          qc_ctl_t *ctl)
{
    static qc_ctl_vs_t vs;
    static qc_ctl_config_t cfg;
    plant_t be = PLANT(from < 0 ? 20.0 : 0.0, 2048.0, 65536.0);
    static lq_t lq;
    qc_shm_t *q = plant_shm(pool, 1);
    double worst = 0.0;
    int p, t;

    memset(&lq, 0, sizeof(lq));
    memset(&vs, 0, sizeof(vs));
    vs.name = "be:80";
    vs.levels = 2;
    one_host(ctl, &cfg, &vs, q, 0.58);
    cfg.a0 *= prior;
    cfg.b0 *= prior;
    cfg.c0 *= prior;
    qc_ctl_init(ctl, &cfg, pool);
    lq_guard_shm = ticks == 2 ? q : NULL;
    lq_guard_t = 0.0;
    *tail = 0.0;
    for (p = from; p < 30; p++) {
        double u = 0.0;

        for (t = 0; t < 10; t++) {
            double ut;

            if (p == 0 && t == 3) {
                be.r = 3.0 / (TRUE_A + TRUE_B * 65536.0);
            }
            ut = lq_period(&lq, &q->slots[0].cls[QC_CLASS_BASIC], &be, 2,
                           0.1);
            u += ut / 10.0;
            if (ticks) {
                qc_ctl_tick(ctl, 0.1, ut);
            }
            worst = fmax(worst, lq_left(&lq));
        }
        qc_test_step(ctl, 1.0, u, 0, (apr_int64_t)(p - from + 1) * 1000000);
        lq_guard_t = 0.0;
        if (p >= 20) {
            *tail += u / 10.0;
        }
    }
    lq_guard_shm = NULL;
    return worst;
}

/*
 * One host on the queued link read in ticks, trees of 64 KB and 8 KB
 * replies (the paper's baseline) and a 0.9 bound: a fresh controller
 * whose prior is `prior` times the true costs, light load from period
 * `from` when it is < 0, then from the fourth tick of period 0 `load`
 * times what the full tree carries, with readings jittered by `amp`;
 * measured: the controller is told the link's queue each period.
 * Returns the mean reading of the last 10 of 40 periods; *refused the
 * requests refused, *first the first period with refusals (left alone
 * when none).
 */
static double lq_refusal_run(double load, double prior, double amp,
                             unsigned seed, int from, int measured,
                             apr_uint64_t *refused, int *first)
{
    static qc_ctl_vs_t vs;
    static qc_ctl_config_t cfg;
    static qc_ctl_t ctl;
    static lq_t lq;
    plant_t be = PLANT(from < 0 ? 20.0 : 0.0, 8192.0, 65536.0);
    qc_shm_t *q = plant_shm(pool, 1);
    double tail = 0.0, prev = 0.0;
    qc_ctl_input_t in;
    int p, t;

    memset(&lq, 0, sizeof(lq));
    memset(&vs, 0, sizeof(vs));
    vs.name = "be:80";
    vs.levels = 2;
    one_host(&ctl, &cfg, &vs, q, 0.9);
    cfg.a0 *= prior;
    cfg.b0 *= prior;
    cfg.c0 *= prior;
    qc_ctl_init(&ctl, &cfg, pool);
    for (p = from; p < 40; p++) {
        double u = 0.0;

        for (t = 0; t < 10; t++) {
            double ut;

            if (p == 0 && t == 3) {
                be.r = load / (TRUE_A + TRUE_B * 65536.0);
            }
            ut = lq_period(&lq, &q->slots[0].cls[QC_CLASS_BASIC], &be, 2,
                           0.1);
            ut = fmin(jittered(ut, &seed, amp, &prev), 1.0);
            u += ut / 10.0;
            qc_ctl_tick(&ctl, 0.1, ut);
        }
        in = qc_ctl_input(1.0, u, 0, (apr_int64_t)(p - from + 1) * 1000000);
        if (measured) {
            in.sendq_bytes = lq_left(&lq) / TRUE_B;
            in.link_bps = 1.0 / TRUE_B;
        }
        qc_ctl_step(&ctl, in);
        if (p >= 30) {
            tail += u / 10.0;
        }
        if (*first < 0
            && q->slots[0].cls[QC_CLASS_BASIC].level_arrived[0] > 0) {
            *first = p;
        }
    }
    *refused = q->slots[0].cls[QC_CLASS_BASIC].level_arrived[0];
    return tail;
}

/*
 * A 503 only where the lowest tree cannot carry the load.  At 3x and
 * 3.3x what the full tree carries the lowest tree carries the link at
 * 0.80 and 0.88, under the bound: whatever the prior, the jitter and the
 * start, nobody is refused and the link settles at the bound.  Before,
 * the queue of an overshoot kept the link saturated for seconds while
 * the calibration searched up, and that calibration, or the drain's
 * lowered target, licensed refusals (11,450 requests from light load
 * with a 10x-low prior; 39 of 360 such runs refused).  At 4x and 5x
 * (the lowest tree 1.07x and 1.33x the link) refusing is needed, and
 * still happens: from the 13th to the 22nd period with the backlog
 * modelled, and the link then held anywhere from 0.69 to 1.0; by the
 * 8th where the link's queue is measured (the sum of the connections'
 * send queues: the input's sendq_bytes), and then at the bound whatever
 * the prior (the level from the measured bytes: doc/control.md,
 * "Overflow on a link").
 */
START_TEST(test_refusal_only_beyond_the_lowest_tree)
{
    static const double loads[] = { 3.0, 3.3 };
    static const double priors[] = { 0.1, 1.0, 10.0 };
    static const double amps[] = { 0.0, 0.05, 0.1 };
    static const int froms[] = { 0, -5 };
    unsigned li, pi, ai, fi, seed, mi, bad = 0;
    apr_uint64_t refused;
    int first;

    for (mi = 0; mi < 2 * 2 * 3 * 3 * 2; mi++) {
        li = mi % 2;
        pi = mi / 2 % 3;
        ai = mi / 6 % 3;
        fi = mi / 18 % 2;
        for (seed = 1; seed <= 3; seed++) {
            double tail;

            first = -1;
            tail = lq_refusal_run(loads[li], priors[pi], amps[ai], seed,
                                  froms[fi], mi / 36, &refused, &first);
            if (refused > 0 || fabs(tail - 0.9) > 0.1) {
                bad++;
                printf("%.1fx, prior x%.1f, jitter %.2f, from %d, seed %u, "
                       "backlog %s: %lu refused, U %.3f\n", loads[li],
                       priors[pi], amps[ai], froms[fi], seed,
                       mi / 36 ? "measured" : "modelled",
                       (unsigned long)refused, tail);
            }
        }
    }
    ck_assert_uint_eq(bad, 0);
    /* 4x and 5x: the lowest tree carries 1.07x and 1.33x the link. */
    for (mi = 0; mi < 2 * 3 * 3 * 2; mi++) {
        double load = mi % 2 ? 4.0 : 5.0;

        pi = mi / 2 % 3;
        ai = mi / 6 % 3;
        double tail;

        first = -1;
        tail = lq_refusal_run(load, priors[pi], amps[ai], 1, -5, mi / 18,
                              &refused, &first);
        printf("%.0fx, prior x%.1f, jitter %.2f, backlog %s: %lu refused, "
               "the first in period %d; U %.3f over the last 10\n", load,
               priors[pi], amps[ai], mi / 18 ? "measured" : "modelled",
               (unsigned long)refused, first, tail);
        ck_assert_uint_gt(refused, 0);
        if (mi / 18) {
            ck_assert_int_le(first, 8);
            ck_assert(fabs(tail - 0.9) <= 0.1);
        }
    }
}
END_TEST

/*
 * A cold start straight into 3x with a prior 10x low or high, and a step
 * from light load: read only once a period, the link queues seconds of
 * work (clients time out) before the loop acts; the valve within the
 * period keeps the queue under a second, and the loop then holds the
 * bound all the same.
 */
START_TEST(test_valve_cuts_a_jump_within_the_period)
{
    static const double priors[] = { 0.1, 10.0, 1.0 };
    static const int froms[] = { 0, 0, -5 };
    static qc_ctl_t ctl;
    int i;

    for (i = 0; i < 3; i++) {
        double tail0, tail1;
        double q0 = lq_tick_run(0, froms[i], priors[i], &tail0, &ctl);
        double q1 = lq_tick_run(1, froms[i], priors[i], &tail1, &ctl);

        printf("jump at prior x%g%s: queue %.2f s read by periods, "
               "%.2f s with the valve (%lu firings); tail U %.3f, "
               "%.3f\n", priors[i], froms[i] < 0 ? " from light load" : "",
               q0, q1, ctl.tick.valves, tail0, tail1);
        ck_assert(q1 < 1.0);
        ck_assert(fabs(tail1 - 0.58) < 0.1);
        if (priors[i] < 1.0) {
            ck_assert(q0 > 2.0 * q1);
            ck_assert_uint_ge(ctl.tick.valves, 1);
        }
    }
}
END_TEST

/* The guard's arithmetic (qc_surge.h), as both sides use it. */
START_TEST(test_surge_rate)
{
    /* light load: 28 req/s read 0.15 saturate at 28 / 0.15 */
    ck_assert(fabs(qc_surge_rate(28.0, 0.15, 1.0) - 28.0 / 0.15) < 1e-9);
    /* near the bound, or past a capped reading: 1.5x the arrivals */
    ck_assert(fabs(qc_surge_rate(1000.0, 0.9, 1.0) - 1500.0) < 1e-9);
    ck_assert(fabs(qc_surge_rate(1000.0, 1.1, 1.0) - 1500.0) < 1e-9);
    /* a nearly idle resource: at most 20x */
    ck_assert(fabs(qc_surge_rate(50.0, 0.01, 1.0) - 1000.0) < 1e-9);
    ck_assert(fabs(qc_surge_rate(50.0, 0.0, 1.0) - 1000.0) < 1e-9);
    /* no guard: too few requests, no reading */
    ck_assert(qc_surge_rate(9.0, 0.5, 1.0) == 0.0);
    ck_assert(qc_surge_rate(20.0, 0.5, 0.25) == 0.0);
    ck_assert(qc_surge_rate(100.0, -1.0, 1.0) == 0.0);
    ck_assert(qc_surge_rate(100.0, 0.0 / 0.0, 1.0) == 0.0);
    /* slack: 0.1 s of the rate, at least 16 requests */
    ck_assert(fabs(qc_surge_slack(1000.0) - 100.0) < 1e-9);
    ck_assert(fabs(qc_surge_slack(50.0) - 16.0) < 1e-9);
    /* past: beyond base + rate t, never before the period began */
    ck_assert(!qc_surge_past(116.0, 116.0, 100.0, 0.0));
    ck_assert(qc_surge_past(117.0, 116.0, 100.0, 0.0));
    ck_assert(qc_surge_past(117.0, 116.0, 100.0, -5.0));
    ck_assert(!qc_surge_past(165.0, 116.0, 100.0, 0.5));
    ck_assert(qc_surge_past(167.0, 116.0, 100.0, 0.5));
    ck_assert(!qc_surge_past(1e9, 116.0, 0.0, 0.5));
}
END_TEST

/*
 * The guard on the simulated link (3x from light load, prior right):
 * the valve alone lets three saturated ticks of full-quality replies
 * queue; the guard sends the step's requests down as they come, and the
 * loop then holds the bound as before.  Light load never trips it.
 */
START_TEST(test_surge_guard_cuts_a_step)
{
    static qc_ctl_t ctl;
    double tail1, tail2, q1, q2;

    q1 = lq_tick_run(1, -5, 1.0, &tail1, &ctl);
    q2 = lq_tick_run(2, -5, 1.0, &tail2, &ctl);
    printf("step from light load: queue %.2f s with the valve, %.2f s "
           "with the guard (%" APR_UINT64_T_FMT " requests sent down); "
           "tail U %.3f, %.3f\n", q1, q2,
           ctl.cfg->shm->surge_degraded, tail1, tail2);
    ck_assert(q2 < 0.5 * q1);
    ck_assert(ctl.cfg->shm->surge_degraded > 0);
    ck_assert(fabs(tail2 - 0.58) < 0.1);
    ck_assert(fabs(tail2 - tail1) < 0.05);
}
END_TEST

/* A request sent down by the guard fires the valve at the next tick,
 * unsaturated, once a period; not for a background the fit knows. */
START_TEST(test_surge_fires_the_valve)
{
    static qc_ctl_t ctl;
    qc_shm_t *q;
    double tail;
    unsigned long valves;

    lq_tick_run(1, -5, 1.0, &tail, &ctl);
    q = ctl.cfg->shm;
    valves = ctl.tick.valves;
    ck_assert(ctl.cls[QC_CLASS_BASIC].m_applied > 1.0);
    ck_assert_int_eq(qc_ctl_tick(&ctl, 0.1, 0.5), 0);
    q->surge_degraded++;
    ctl.warnings |= QC_WARN_BACKGROUND;
    ck_assert_int_eq(qc_ctl_tick(&ctl, 0.1, 0.5), 0);
    ctl.warnings &= ~QC_WARN_BACKGROUND;
    q->surge_degraded++;
    ck_assert_int_eq(qc_ctl_tick(&ctl, 0.1, 0.5), 1);
    ck_assert(ctl.cls[QC_CLASS_BASIC].m_applied == 1.0);
    ck_assert_uint_eq(ctl.tick.valves, valves + 1);
    q->surge_degraded++;
    ck_assert_int_eq(qc_ctl_tick(&ctl, 0.1, 0.5), 0);
}
END_TEST

/* n ticks reading u, each deciding `per` requests at the top tree;
 * how many of them fired the valve. */
static int lq_ticks(qc_ctl_t *ctl, int n, double u, apr_uint64_t per)
{
    qc_class_shm_t *cs = &ctl->cfg->vs[0].slot->cls[QC_CLASS_BASIC];
    int fired = 0;

    while (n-- > 0) {
        apr_atomic_add64(&cs->level_arrived[2], per);
        fired += qc_ctl_tick(ctl, 0.1, u);
    }
    return fired;
}

/*
 * What the valve leaves alone: a busy half-second of load the loop
 * already holds (no jump in what was decided), a saturated run shorter
 * than the valve's, and a background the fit knows saturates the
 * resource by itself.
 */
START_TEST(test_valve_leaves_held_load_alone)
{
    static qc_ctl_t ctl;
    double tail, m;
    unsigned long valves;

    lq_tick_run(1, -5, 1.0, &tail, &ctl);
    valves = ctl.tick.valves;
    m = ctl.cls[QC_CLASS_BASIC].m_applied;
    ck_assert(m > 1.0);
    /* 1,000 req/s at the top: less than the period's own rate */
    /* as many as the period before decided at the top, or fewer */
    ck_assert_int_eq(lq_ticks(&ctl, 5, 1.0, (apr_uint64_t)
                              (0.1 * ctl.tick.upper_rate)), 0);
    ck_assert_uint_eq(ctl.tick.valves, valves);
    ck_assert(ctl.cls[QC_CLASS_BASIC].m_applied == m);

    /* The same held load, but the last period decided nothing above
     * the lowest tree: a jump.  It fires the valve in the third
     * saturated tick, not before, and not while the fit knows a
     * background to saturate the resource. */
    ctl.tick.upper_rate = 0.0;
    ck_assert_int_eq(lq_ticks(&ctl, 1, 0.5, 100), 0);
    ck_assert_int_eq(lq_ticks(&ctl, 2, 1.0, 100), 0);
    ck_assert_int_eq(lq_ticks(&ctl, 1, 0.5, 100), 0);
    ctl.warnings |= QC_WARN_BACKGROUND;
    ck_assert_int_eq(lq_ticks(&ctl, 5, 1.0, 100), 0);
    ctl.warnings &= ~QC_WARN_BACKGROUND;
    ck_assert_int_eq(lq_ticks(&ctl, 1, 0.5, 100), 0);
    ck_assert_int_eq(lq_ticks(&ctl, 2, 1.0, 100), 0);
    ck_assert_int_eq(lq_ticks(&ctl, 1, 1.0, 100), 1);
    ck_assert(ctl.cls[QC_CLASS_BASIC].m_applied == 1.0);
    ck_assert_uint_eq(ctl.tick.valves, valves + 1);
}
END_TEST

/* One second of a two-tree host's premium and basic classes (slot 0). */
static double shop_period(qc_shm_t *q, const plant_t *prem,
                          const plant_t *basic)
{
    return plant_period(&q->slots[0].cls[QC_CLASS_PREMIUM], prem, 2, 1.0)
           + plant_period(&q->slots[0].cls[QC_CLASS_BASIC], basic, 2, 1.0);
}

/*
 * A guaranteed host over its contract and nothing else: no best-effort
 * traffic for the best-effort loop to act on, yet its basic class rides
 * on that loop's level (excess sharing) until the link is at the bound;
 * then basic is degraded and premium is not (§5.2, Fig. 14).
 */
START_TEST(test_differentiation_without_best_effort)
{
    qc_ctl_vs_t vs = { "shop:80", NULL, 2, 1, 1000.0, 30e6, 0, 0.0 };
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    plant_t prem = PLANT(100.0, 4096.0, 32768.0);
    plant_t basic = PLANT(0.0, 4096.0, 32768.0);
    qc_shm_t *q = plant_shm(pool, 1);
    double u = 0.0, tail = 0.0, m_p, m_b;
    int period;

    one_host(&ctl, &cfg, &vs, q, 0.9);
    for (period = 1; period <= 60; period++) {
        /* basic rises to 1.6 times what the link holds at the bound */
        basic.r = period < 10 ? 400.0 * period : 4000.0 + 100 * sin(period);
        u = shop_period(q, &prem, &basic);
        qc_test_step(&ctl, 1.0, u, -1, (apr_int64_t)period * 1000000);
        if (period > 40) {
            tail += u / 20.0;
        }
    }
    m_p = qc_level_from_fx(q->slots[0].cls[QC_CLASS_PREMIUM].level_fx);
    m_b = qc_level_from_fx(q->slots[0].cls[QC_CLASS_BASIC].level_fx);
    printf("differentiation without best effort: U %.3f, premium m %.3f, "
           "basic m %.3f\n", tail, m_p, m_b);
    ck_assert(m_p == 2.0);
    ck_assert(m_b < 1.9);
    ck_assert(tail < 0.9 * 1.1);
}
END_TEST

/*
 * The same host, then a background that saturates the resource while
 * the host is idle (invariant (v)): when its traffic comes back with the
 * resource still saturated, no class of it is degraded, guaranteed
 * loops included.  Once the background is gone, basic is degraded
 * again to hold the bound.
 */
START_TEST(test_saturating_background_holds_every_class)
{
    qc_ctl_vs_t vs = { "shop:80", NULL, 2, 1, 1000.0, 30e6, 0, 0.0 };
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    plant_t prem = PLANT(100.0, 4096.0, 32768.0);
    plant_t basic = PLANT(4000.0, 4096.0, 32768.0);
    qc_shm_t *q = plant_shm(pool, 1);
    double u, m_degraded = 0.0, tail = 0.0;
    int period, top = 0;

    one_host(&ctl, &cfg, &vs, q, 0.9);
    for (period = 1; period <= 100; period++) {
        int idle = period > 40 && period <= 45;
        int job = period > 40 && period <= 70;

        prem.r = idle ? 0.0 : 100.0;
        basic.r = idle ? 0.0 : 4000.0 + 100 * sin(period);
        u = shop_period(q, &prem, &basic);
        qc_test_step(&ctl, 1.0, job ? 1.0 : u, -1,
                    (apr_int64_t)period * 1000000);
        if (period > 80) {
            tail += u / 20.0;
        }
        if (period == 40) {
            m_degraded = qc_level_from_fx(
                q->slots[0].cls[QC_CLASS_BASIC].level_fx);
            ck_assert(m_degraded < 1.9);
        }
        if (period > 45 && period <= 70) {
            ck_assert(q->warnings & QC_WARN_BACKGROUND);
            top += qc_level_from_fx(
                       q->slots[0].cls[QC_CLASS_PREMIUM].level_fx) == 2.0
                   && qc_level_from_fx(
                       q->slots[0].cls[QC_CLASS_BASIC].level_fx) == 2.0;
        }
    }
    printf("saturating background, guaranteed host: basic m %.3f before, "
           "both classes at the top in %d of 25 periods under it, %lu "
           "tests, basic m %.3f after, U %.3f over the last 20, d %.3f, "
           "warnings %u\n", m_degraded, top, ctl.bg.tests,
           qc_level_from_fx(q->slots[0].cls[QC_CLASS_BASIC].level_fx),
           tail, qc_bitsd(q->d_bits), (unsigned)q->warnings);
    /* every period but the background's tests, one period each */
    ck_assert_int_ge(top, 25 - (int)ctl.bg.tests);
    ck_assert(qc_level_from_fx(q->slots[0].cls[QC_CLASS_BASIC].level_fx)
              < 1.9);
    ck_assert(fabs(tail - 0.9) < 0.05);
    /* what the job taught the fit is gone with it */
    ck_assert(!(q->warnings & QC_WARN_BACKGROUND));
}
END_TEST

/*
 * Arrivals that wait in httpd's accept queues are counted late, in a
 * burst (seen on the testbed: 380 a second counted of 570 offered, then
 * 750): the controller adds the queues' growth to what it counted, so
 * the rate it acts on is the offered one throughout.  Without a reading
 * before and after a period it takes the count as it is.
 */
START_TEST(test_accept_queue_counts_waiting_arrivals)
{
    static const struct {
        apr_uint64_t counted;
        long queued;            /* after the period; -1: unknown */
        double want;            /* the rate the controller publishes */
    } p[] = {
        { 100, 0, 100.0 },      /* no reading before: as counted */
        { 380, 190, 570.0 },
        { 380, 380, 570.0 },
        { 750, 200, 570.0 },
        { 770, 0, 570.0 },
        { 570, 0, 570.0 },
        { 570, -1, 570.0 },
        { 300, 50, 300.0 },     /* the reading before was unknown */
        { 10, 500, 40.0 },      /* at most 4 times the count */
    };
    qc_ctl_vs_t vs = { "be:80", NULL, 2, 0, 0.0, 0.0, 0, 0.0 };
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    qc_shm_t *q = plant_shm(pool, 1);
    qc_class_shm_t *cs = &q->slots[0].cls[QC_CLASS_BASIC];
    unsigned i;

    one_host(&ctl, &cfg, &vs, q, 0.58);
    for (i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
        apr_atomic_add64(&cs->level_arrived[2], p[i].counted);
        qc_test_step(&ctl, 1.0, 0.3, p[i].queued,
                    (apr_int64_t)(i + 1) * 1000000);
        ck_assert_msg(fabs(qc_bitsd(cs->r_bits) - p[i].want) < 1e-6,
                      "period %u: rate %g, want %g", i,
                      qc_bitsd(cs->r_bits), p[i].want);
        ck_assert_uint_eq(q->accept_queue, p[i].queued < 0
                          ? ~(apr_uint64_t)0 : (apr_uint64_t)p[i].queued);
    }
}
END_TEST

/*
 * A host pinned at full quality, 40 periods: `light` at half of what the
 * plant carries, then `over` times it, every reply counted as completed
 * at once, the accept queue empty.  link: the link sensor knows its rate
 * (else no link sensor); k > 0: a cold start's calibration, held.
 * Then `drain` periods in which nothing arrives or completes while the
 * link stays saturated, sending the replies earlier periods buffered.
 * Returns the capacity estimate; *carried what the plant carries.
 */
static double pinned_capacity(int light, double over, int link, double k,
                              int drain, double shrink, double *carried)
{
    qc_ctl_vs_t vs = { "pinned:80", NULL, 2, 0, 0.0, 0.0, 1, 2.0 };
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    /* full quality: 1e-4 + 8e-9 * 65536 = 6.2e-4 s of link per reply */
    plant_t pl = PLANT(0.0, 8192.0, 65536.0);
    qc_shm_t *q = plant_shm(pool, 1);
    qc_class_shm_t *cs = &q->slots[0].cls[QC_CLASS_BASIC];
    int i;

    *carried = 1.0 / (TRUE_A + TRUE_B * pl.x[2]);
    one_host(&ctl, &cfg, &vs, q, 0.9);
    if (link) {
        cfg.sensors[0].bits_per_s = 8.0 * *carried * pl.x[2];
        cfg.nsensors = 1;
    }
    for (i = 0; i < 40 + drain; i++) {
        double u;

        pl.r = i >= 40 ? 0.0 : (i < light ? 0.5 : over) * *carried;
        u = i >= 40 ? 1.0 : plant_period(cs, &pl, 2, 1.0);
        if (k > 0.0) {
            ctl.calib.k = ctl.sat.k_unsaturated = k;
        }
        qc_ctl_capacity_tick(&ctl, 1.0, 0, 128, pl.r, 0.0);
        qc_test_step(&ctl, 1.0, u < 0.99 ? u : 0.99, 0,
                    (apr_int64_t)(i + 1) * 1000000);
    }
    ck_assert_msg(fabs(qc_bitsd(q->capacity_bits) - ctl.cp.capacity) < 1e-6,
                  "published %g", qc_bitsd(q->capacity_bits));
    if (shrink > 0.0) {
        double before = ctl.cp.capacity, conns = ctl.cp.est.capacity;

        /* the estimator's own state, not only what it published: the
         * next period derives the published figure from it again */
        qc_ctl_rescale(&ctl, shrink);
        ck_assert(fabs(ctl.cp.est.capacity - conns / shrink) < 1e-9 * conns);
        ck_assert(fabs(ctl.cp.capacity - before / shrink) < 1e-9 * before);
    }
    return ctl.cp.capacity;
}

/*
 * Capacity on a link that buffers (bench/capacity in miniature): offered
 * 1.3x what the link carries, replies count as completed when they enter
 * socket buffers, so completions keep pace with arrivals while the
 * accept queue stays empty.  The estimate must come down to what the
 * link carries (it stayed at the arrivals: 22% over on the testbed).
 */
START_TEST(test_capacity_on_a_buffering_link)
{
    double carried, c = pinned_capacity(10, 1.3, 1, 0.0, 0, 0.0, &carried);

    ck_assert_msg(fabs(c - carried) < 0.05 * carried,
                  "capacity %.1f req/s, the link carries %.1f", c, carried);
}
END_TEST

/*
 * The same overload, then the link drains what it buffered: for ten
 * periods nothing arrives and nothing completes while the link stays
 * saturated.  Those periods say nothing of its rate; read as "served 0"
 * they took the estimate from 47 to 9 req/s on a 25 Mbit/s link
 * (bench/sizing), which an admin reading the status page after a burst,
 * or qosctl-plan --from-status, would have planned with.
 */
START_TEST(test_capacity_holds_while_a_link_drains)
{
    double carried, c = pinned_capacity(10, 1.3, 1, 0.0, 10, 0.0, &carried);

    ck_assert_msg(fabs(c - carried) < 0.05 * carried,
                  "capacity %.1f req/s after the drain, the link carries "
                  "%.1f", c, carried);
}
END_TEST

/*
 * Capacity on a saturated CPU, cold (bench/capacity on the CGI site): the
 * accept queue stays empty for the first periods (the wait is in cgid and
 * the run queue), and the calibration is a cold start's (k 55).  What was
 * completed is the service rate; pricing it by that model made the
 * estimate fall to 2-7 req/s against 215-260 served.
 */
START_TEST(test_capacity_on_a_cold_cpu)
{
    double carried, c = pinned_capacity(0, 1.0, 0, 55.0, 0, 0.0, &carried);

    ck_assert_msg(fabs(c - carried) < 0.1 * carried,
                  "capacity %.1f req/s, completed %.1f", c, carried);
}
END_TEST

/* The same CPU cut to a quarter once the estimate is known: the
 * estimate is a quarter too, in what the estimator keeps (before
 * 96b1931 the rescale divided only the figure it published, which the
 * next period derived again from the unscaled state). */
START_TEST(test_capacity_follows_a_resource_that_shrinks)
{
    double carried, c = pinned_capacity(0, 1.0, 0, 55.0, 0, 4.0, &carried);

    ck_assert_msg(fabs(c - carried / 4.0) < 0.1 * carried / 4.0,
                  "capacity %.1f req/s, a quarter of %.1f", c, carried);
}
END_TEST

/*
 * Excess sharing on a saturated link (bench/excess-sharing in
 * miniature): a guaranteed host steps far past its contract while it
 * rides on best effort's level.  Its own loop cuts it to its target;
 * best effort must plan with that target, not with the host's load of
 * the moment, or it jumps to rejecting its own clients (seen on the
 * testbed: 47 best-effort clients answered 503 at a link of 0.81).  The
 * host within its contract keeps full quality throughout.
 */
START_TEST(test_excess_sharing_step_rejects_nobody)
{
    qc_ctl_vs_t vs[3] = {
        { "be:80", NULL, 2, 0, 0.0, 0.0, 0, 0.0 },
        { "v1:80", NULL, 2, 1, 1000.0, 1000.0 * 32768, 0, 0.0 },
        { "v2:80", NULL, 2, 1, 1200.0, 1200.0 * 32768, 0, 0.0 },
    };
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    plant_t be = PLANT(300.0, 8192.0, 32768.0);
    plant_t v1 = PLANT(800.0, 8192.0, 32768.0);
    plant_t v2 = PLANT(1000.0, 8192.0, 32768.0);
    qc_shm_t *q = plant_shm(pool, 3);
    double u = 0.0, lowest = 2.0, tail = 0.0;
    int period;
    unsigned i;

    one_host(&ctl, &cfg, vs, q, 0.9);
    cfg.nvs = 3;
    for (i = 0; i < 3; i++) {
        vs[i].slot = &q->slots[i];
    }
    qc_ctl_init(&ctl, &cfg, pool);
    for (period = 1; period <= 60; period++) {
        double m_be;

        v1.r = period <= 20 ? 800.0 : 2500.0;
        u = plant_period(&q->slots[0].cls[QC_CLASS_BASIC], &be, 2, 1.0)
            + plant_period(&q->slots[1].cls[QC_CLASS_BASIC], &v1, 2, 1.0)
            + plant_period(&q->slots[2].cls[QC_CLASS_BASIC], &v2, 2, 1.0);
        qc_test_step(&ctl, 1.0, u, 0, (apr_int64_t)period * 1000000);
        m_be = qc_level_from_fx(q->slots[0].cls[QC_CLASS_BASIC].level_fx);
        lowest = m_be < lowest ? m_be : lowest;
        ck_assert(qc_level_from_fx(q->slots[2].cls[QC_CLASS_BASIC].level_fx)
                  == 2.0);
        if (period > 40) {
            tail += u / 20.0;
        }
    }
    printf("excess sharing step: lowest best-effort m %.3f, U %.3f\n",
           lowest, tail);
    ck_assert(lowest >= 1.0);
    ck_assert(fabs(tail - 0.9) < 0.05);
    /* what the job taught the fit is gone with it */
    ck_assert(!(q->warnings & QC_WARN_BACKGROUND));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qc_controller");
    TCase *tc = tcase_create("core");
    int rc;

    apr_initialize();
    apr_pool_create(&pool, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    tcase_add_test(tc, test_step_isolation_and_pinning);
    tcase_add_test(tc, test_state_file_at_another_capacity);
    tcase_add_test(tc, test_bad_state_file_is_not_used);
    tcase_add_test(tc, test_pinned_level_is_corrected_and_resumed);
    tcase_add_test(tc, test_step_on_a_queued_link);
    tcase_add_test(tc, test_step_with_a_jittery_sensor_and_wrong_priors);
    tcase_add_test(tc, test_a_wrong_background_cannot_blind_the_loop);
    tcase_add_test(tc, test_refusal_only_beyond_the_lowest_tree);
    tcase_add_test(tc, test_valve_cuts_a_jump_within_the_period);
    tcase_add_test(tc, test_valve_leaves_held_load_alone);
    tcase_add_test(tc, test_surge_rate);
    tcase_add_test(tc, test_surge_guard_cuts_a_step);
    tcase_add_test(tc, test_surge_fires_the_valve);
    tcase_add_test(tc, test_differentiation_without_best_effort);
    tcase_add_test(tc, test_saturating_background_holds_every_class);
    tcase_add_test(tc, test_accept_queue_counts_waiting_arrivals);
    tcase_add_test(tc, test_capacity_on_a_buffering_link);
    tcase_add_test(tc, test_capacity_holds_while_a_link_drains);
    tcase_add_test(tc, test_capacity_on_a_cold_cpu);
    tcase_add_test(tc, test_capacity_follows_a_resource_that_shrinks);
    tcase_add_test(tc, test_excess_sharing_step_rejects_nobody);
    suite_add_tcase(s, tc);
    rc = qc_test_run(s);
    apr_terminate();
    return rc;
}
