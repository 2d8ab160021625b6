/* Licensed under the Apache License, Version 2.0. */

/*
 * A simulated CPU-bound site for the controller's tests: a CGI page
 * costing 3 ms in the top tree and its static snapshot 0.1 ms, a 503
 * 20 us; over capacity the server completes only what the CPU can do
 * and the sensor reads 1.  Its clients are open (a rate that ignores
 * replies, optionally retrying each 503), or closed: N clients, each
 * sending its next request when the last reply comes.  And a rig: one
 * best-effort host with two trees, its controller on a segment in
 * ordinary memory.
 */

#ifndef CPU_PLANT_H
#define CPU_PLANT_H

#include "apr_pools.h"

#include "qc_controller.h"
#include "plant_clients.h"

#define COST_FULL 3e-3
#define COST_SNAP 1e-4
#define COST_REJ 2e-5
#define BYTES 6000.0

typedef struct {
    double r;                   /* offered req/s */
    double background;          /* CPU share others take */
    unsigned long long rng;
    double conn;                /* s a connection costs, 503s included */
    double snap;                /* a snapshot's cost, if not COST_SNAP */
    double lag;                 /* share of a reading from the last period
                                 * (php-fpm's queue finishing its work) */
    double prev;
    double noise;               /* relative, if not 0.02 */
    double scale;               /* every cost times this, if not 0 */
    plant_clients_t cl;         /* r is the open clients' rate */
    /* Out: the connections waiting in the server (its accept queue, as
     * qc_ctl_input's queued): a closed loop's clients not thinking, an
     * open load's requests the CPU fell behind on. */
    double waiting, behind;
    /* QosCtl LogOnly: every request served from the top tree, each the
     * level would have sent lower counted in would_arrived. */
    int log_only;
} cpu_plant_t;

/* The clients of a positional cpu_plant_t: open, no retries. */
#define CPU_OPEN { 0.0, 0.0, 0, 0.0 }

/* The link testbed's costs in the same plant (bench/testbed: 100
 * Mbit/s, a 64 KB photo 5.32 ms of it, its degraded copy 0.70 ms, a 503
 * 35 us). */
void link_plant(cpu_plant_t *pl, unsigned long long rng);

typedef struct {
    qc_ctl_vs_t vs;
    qc_ctl_config_t cfg;
    qc_ctl_t ctl;
    qc_shm_t *q;
} rig_t;

/* One period at the level in the segment; returns the sensor reading
 * and sets pl->cl.good. */
double cpu_period(cpu_plant_t *pl, qc_class_shm_t *cs);

/* prior a0 per request, c0 per refusal (rig_init: the true 503's). */
void rig_init_c(rig_t *g, apr_pool_t *pool, double a0, double c0,
                double bound);
void rig_init(rig_t *g, apr_pool_t *pool, double a0, double bound);
/* best effort's level as published */
double rig_level(const rig_t *g);

#endif /* CPU_PLANT_H */
