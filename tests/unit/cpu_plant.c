/* Licensed under the Apache License, Version 2.0. */

#include <math.h>
#include <string.h>

#include "apr_atomic.h"

#include "cpu_plant.h"
#include "qc_level.h"

/* Each tree's share of the requests at level m, and the mean cost of
 * a request at those shares. */
static double cpu_shares(const cpu_plant_t *pl, double m, double *s)
{
    unsigned i = (unsigned)floor(m);

    s[0] = s[1] = s[2] = 0.0;
    if (i >= 2) {
        s[2] = 1.0;
    }
    else {
        s[i] = 1.0 - (m - i);
        s[i + 1] = m - i;
    }
    return (s[0] * COST_REJ + s[1] * (pl->snap > 0.0 ? pl->snap : COST_SNAP)
            + s[2] * COST_FULL + pl->conn)
           * (pl->scale > 0.0 ? pl->scale : 1.0);
}

/* One period at the level in the segment; returns the sensor reading. */
double cpu_period(cpu_plant_t *pl, qc_class_shm_t *cs)
{
    double m = qc_level_from_fx(apr_atomic_read32(&cs->level_fx));
    double s[3], n[3], cost = cpu_shares(pl, m, s), r, work, done;
    double would[3];
    unsigned k;

    if (pl->log_only) {
        memcpy(would, s, sizeof(would));
        cost = cpu_shares(pl, 2.0, s);
    }
    r = plant_clients_rate(&pl->cl, pl->r, s[0], cost,
                           fmax(1.0 - pl->background, 0.02) / cost);
    for (k = 0; pl->log_only && k < 2; k++) {
        apr_atomic_add64(&cs->would_arrived[k], (apr_uint64_t)(r * would[k]));
    }
    for (k = 0; k <= 2; k++) {
        n[k] = r * s[k];
    }
    work = pl->background + r * cost;
    done = work > 1.0 ? 1.0 / work : 1.0;       /* share completed */
    pl->cl.good *= done;
    /* what the CPU falls behind on waits; spare time drains it */
    pl->behind = fmax(pl->behind + r * (1.0 - done)
                      - (work < 1.0 ? (1.0 - work) / cost : 0.0), 0.0);
    pl->waiting = pl->cl.clients > 0.0
                  ? fmax(pl->cl.clients - r * done * pl->cl.think, 0.0)
                  : pl->behind;
    for (k = 0; k <= 2; k++) {
        apr_atomic_add64(&cs->level_arrived[k], (apr_uint64_t)n[k]);
    }
    for (k = 1; k <= 2; k++) {
        apr_uint64_t c = (apr_uint64_t)(n[k] * done);

        apr_atomic_add64(&cs->level_responses[k], c);
        apr_atomic_add64(&cs->level_bytes[k], (apr_uint64_t)(c * BYTES));
    }
    work *= 1.0 + (pl->noise > 0.0 ? pl->noise : 0.02)
                  * (2.0 * (double)(pl->rng % 1000) / 1000.0 - 1.0);
    pl->rng = pl->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    if (pl->lag > 0.0 && work < 1.0 && pl->prev < 1.0) {
        double now = work;

        work = (1.0 - pl->lag) * work + pl->lag * pl->prev;
        pl->prev = now;
    }
    else {
        pl->prev = work;
    }
    return work > 1.0 ? 1.0 : work;
}

void link_plant(cpu_plant_t *pl, unsigned long long rng)
{
    memset(pl, 0, sizeof(*pl));
    pl->rng = rng;
    pl->scale = 5.32e-3 / COST_FULL;
    pl->snap = 0.70e-3 / pl->scale;
    pl->conn = 1e-5;            /* a handshake costs the link nothing */
}

/* One best-effort host with two trees, prior a0 per request, c0 per
 * refusal. */
void rig_init_c(rig_t *g, apr_pool_t *pool, double a0, double c0,
                double bound)
{
    qc_ctl_vs_t vs = { "site:80", NULL, 2, 0, 0.0, 0.0, 0, 0.0 };
    int k;

    memset(g, 0, sizeof(*g));
    g->vs = vs;
    g->q = apr_pcalloc(pool, QC_SHM_SIZE(1));
    g->q->capacity = 1;
    g->q->slots[0].in_use = 1;
    g->q->slots[0].ntrees = 2;
    for (k = 0; k < QC_NCLASSES; k++) {
        g->q->slots[0].cls[k].level_fx = qc_level_to_fx(2.0, 2);
        g->q->slots[0].cls[k].loop_fx = qc_level_to_fx(2.0, 2);
    }
    g->vs.slot = &g->q->slots[0];
    g->cfg.bound = bound;
    g->cfg.period = 1.0;
    g->cfg.gain_margin = 4.0;
    g->cfg.a0 = a0;
    g->cfg.b0 = 0.0;
    g->cfg.c0 = c0;
    g->cfg.shm = g->q;
    g->cfg.vs = &g->vs;
    g->cfg.nvs = 1;
    g->cfg.log_fd = -1;
    g->cfg.state_fd = -1;
    qc_ctl_init(&g->ctl, &g->cfg, pool);
}

void rig_init(rig_t *g, apr_pool_t *pool, double a0, double bound)
{
    rig_init_c(g, pool, a0, COST_REJ, bound);
}

double rig_level(const rig_t *g)
{
    return qc_level_from_fx(g->q->slots[0].cls[QC_CLASS_BASIC].level_fx);
}

