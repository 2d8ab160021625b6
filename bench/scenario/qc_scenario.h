/* Licensed under the Apache License, Version 2.0. */

/*
 * Random scenarios for the controller: one generator, read by the
 * simulator in tests/sim (the plants) and, through qosctl-scenario's
 * JSON, by bench/scenarios on the real testbed.  A scenario is a pure
 * function of its seed, so a failing seed reproduces exactly.
 *
 * Loads are in units of the resource: a population's `load` is the
 * share of the resource its requests would take at full quality (3.0:
 * three times what the resource can do), so that one scenario means
 * the same on the simulated link and the real one.
 */

#ifndef QC_SCENARIO_H
#define QC_SCENARIO_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    QC_SC_LINK,         /* 100 Mbit/s link, a 64 KB photo, 8 KB degraded */
    QC_SC_CGI,          /* CPU: a CGI page, its static snapshot */
    QC_SC_PHP,          /* CPU: a PHP-FPM page, its snapshot */
    QC_SC_CPU_STATIC,   /* CPU: static images of one size per tree */
    QC_SC_NKINDS
} qc_sc_kind_t;

typedef enum {
    QC_SC_OPEN,         /* a rate that ignores replies */
    QC_SC_CLOSED,       /* N clients, no think: next request on reply */
    QC_SC_THINK,        /* N clients, think time after each reply */
    QC_SC_KEEPALIVE,    /* as THINK, on kept connections */
    QC_SC_H2,           /* HTTP/2: N connections of 10 streams each */
    QC_SC_RETRY,        /* open jobs, each 503 retried at once 3 times */
    QC_SC_BROWSER,      /* N browsers: a page and its objects, think */
    QC_SC_NMODELS
} qc_sc_model_t;

typedef enum {
    QC_SC_STEP,         /* light, then the load */
    QC_SC_RAMP,         /* light, then rising to the load */
    QC_SC_FLASH,        /* light, a flash crowd at the load, light */
    QC_SC_COLD,         /* the load from the start, the prior off */
    QC_SC_BACKGROUND,   /* the load, and a job beside it for a while */
    QC_SC_NSHAPES
} qc_sc_shape_t;

#define QC_SC_MAX_HOSTS 3
#define QC_SC_MAX_POPS 6

typedef struct {
    unsigned host;              /* index into hosts */
    int premium;                /* clients in QosCtlPremiumAddress */
    qc_sc_model_t model;
    double load;                /* offered, in shares of the resource */
    unsigned clients;           /* closed models: how many */
    unsigned addresses;         /* distinct client addresses */
    double think;               /* s, mean (exponential) */
    unsigned objects;           /* BROWSER: objects a page beside it */
    double timeout;             /* s a client waits for a reply */
    double bytes;               /* a full reply's bytes, 0: the kind's
                                 * (the degraded one is an eighth) */
} qc_sc_pop_t;

typedef struct {
    int guaranteed;
    double rmax_share;          /* Rmax's full-quality load, shares */
    double rmax, wmax;          /* req/s, bytes/s as declared; 0: from
                                 * rmax_share at the kind's reply */
    int premium_list;           /* names a premium address list */
} qc_sc_host_t;

typedef struct {
    uint64_t seed;
    const char *name;           /* a named scenario's, NULL for a seed's */
    qc_sc_kind_t kind;
    qc_sc_shape_t shape;
    double period;              /* QosCtlPeriod, s */
    double bound;               /* QosCtlUtilizationBound */
    double prior;               /* QosCtlModel over the true costs */
    double background;          /* the job's share of the resource */
    double duration;            /* s */
    double t_load;              /* s: when the load comes */
    double t_end;               /* s: when it leaves (FLASH, BACKGROUND) */
    double light;               /* load before t_load, shares */
    int bounded_queue;          /* httpd's workers and accept queue */
    unsigned nhosts, npops;
    qc_sc_host_t hosts[QC_SC_MAX_HOSTS];
    qc_sc_pop_t pops[QC_SC_MAX_POPS];
} qc_scenario_t;

/* The scenario of a seed. */
void qc_scenario_make(qc_scenario_t *sc, uint64_t seed);

/*
 * A named scenario: the settings that broke on the testbed and that no
 * random draw is sure to meet; -1 for an unknown name.
 *   scraper   a best-effort host hammered by 200 keep-alive connections
 *             with no think time beside two guaranteed hosts offered
 *             what their contracts allow (a link, bound 0.9)
 *   one-size  one guaranteed host, every reply one size, 10 premium
 *             browsers and a 200-connection basic scraper
 *   browsers  150 browsers of a page and 10 images, think 0.5 s, that
 *             the lowest tree serves completely (period 0.5 s)
 */
int qc_scenario_named(qc_scenario_t *sc, const char *name);

/* The load's multiplier at time t (0..1 of each population's load;
 * light before it comes). */
double qc_scenario_shape(const qc_scenario_t *sc, double t);

/* JSON of the scenario, NUL-terminated; returns the length that was
 * needed (as snprintf). */
size_t qc_scenario_json(const qc_scenario_t *sc, char *buf, size_t len);

const char *qc_scenario_kind_name(qc_sc_kind_t k);
const char *qc_scenario_model_name(qc_sc_model_t m);
const char *qc_scenario_shape_name(qc_sc_shape_t s);

/* A small deterministic generator (splitmix64), for the simulator too. */
uint64_t qc_sc_next(uint64_t *state);
double qc_sc_unit(uint64_t *state);     /* uniform [0, 1) */

#endif /* QC_SCENARIO_H */
