/* Licensed under the Apache License, Version 2.0. */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "apr_atomic.h"

#include "link_plant.h"
#include "qc_level.h"

qc_shm_t *lq_guard_shm;
double lq_guard_t;

qc_shm_t *plant_shm(apr_pool_t *pool, unsigned nslots)
{
    qc_shm_t *q = apr_pcalloc(pool, QC_SHM_SIZE(nslots));
    unsigned i;
    int k;

    q->capacity = nslots;
    for (i = 0; i < nslots; i++) {
        q->slots[i].in_use = 1;
        q->slots[i].ntrees = 2;
        for (k = 0; k < QC_NCLASSES; k++) {
            q->slots[i].cls[k].level_fx = qc_level_to_fx(2.0, 2);
            q->slots[i].cls[k].loop_fx = qc_level_to_fx(2.0, 2);
        }
    }
    return q;
}

void plant_one_host(apr_pool_t *pool, qc_ctl_t *ctl, qc_ctl_config_t *cfg,
                    qc_ctl_vs_t *vs, qc_shm_t *q, double bound)
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

double plant_cost(const plant_t *pl, unsigned k)
{
    if (k == 0) {
        return pl->c > 0.0 ? pl->c : TRUE_C;
    }
    return (pl->a > 0.0 ? pl->a : TRUE_A)
           + (pl->b > 0.0 ? pl->b : TRUE_B) * pl->x[k];
}

/* Each tree's share of the requests at the level in the segment, and
 * the mean cost of a request at those shares. */
static double plant_shares(const plant_t *pl, qc_class_shm_t *cs,
                           unsigned levels, double *frac)
{
    double m = qc_level_from_fx(apr_atomic_read32(&cs->level_fx));
    unsigned i = (unsigned)floor(m), k;
    double cost = 0.0;

    memset(frac, 0, (QC_MAX_TREES + 1) * sizeof(*frac));
    if (i >= levels) {
        frac[levels] = 1.0;
    }
    else {
        frac[i] = 1.0 - (m - i);
        frac[i + 1] = m - i;
    }
    for (k = 0; k <= levels; k++) {
        cost += frac[k] * plant_cost(pl, k);
    }
    return cost;
}

double plant_period(qc_class_shm_t *cs, const plant_t *pl, unsigned levels,
                    double dt)
{
    double frac[QC_MAX_TREES + 1], u = 0.0;
    unsigned k;

    plant_shares(pl, cs, levels, frac);
    for (k = 0; k <= levels; k++) {
        double n = pl->r * frac[k] * dt;

        apr_atomic_add64(&cs->level_arrived[k], (apr_uint64_t)n);
        if (k > 0) {
            apr_atomic_add64(&cs->level_responses[k], (apr_uint64_t)n);
            apr_atomic_add64(&cs->level_bytes[k],
                             (apr_uint64_t)(n * pl->x[k]));
        }
        u += plant_cost(pl, k) * n / dt;
    }
    return u;
}

static void lq_guard(lq_batch_t *b, unsigned levels, double dt)
{
    qc_shm_t *q = lq_guard_shm;
    double n = 0.0, rate = qc_bitsd(q->surge_rate_bits), over, moved = 0.0;
    unsigned k;

    for (k = 0; k <= levels; k++) {
        n += b->n[k];
    }
    lq_guard_t += dt;
    over = (double)q->surge_arrived + n - qc_bitsd(q->surge_base_bits)
           - rate * lq_guard_t;
    q->surge_arrived += (apr_uint64_t)n;
    if (!(rate > 0.0) || !(over > 0.0) || !(n > 0.0)) {
        return;
    }
    for (k = 2; k <= levels; k++) {
        double d = b->n[k] * fmin(over / n, 1.0);

        b->n[k] -= d;
        b->n[1] += d;
        moved += d;
    }
    q->surge_degraded += (apr_uint64_t)ceil(moved);
}

double lq_left(const lq_t *lq)
{
    double left = 0.0;
    int j;

    for (j = 0; j < lq->len; j++) {
        const lq_batch_t *h = &lq->q[(lq->head + j) % LQ_MAX];

        left += h->work - h->done;
    }
    return left;
}

/* TCP shares the link among the connections: every queued batch drains
 * by the same fraction of what it has left.  Returns the replies sent. */
static double lq_drain(lq_t *lq, qc_class_shm_t *cs, const plant_t *pl,
                       unsigned levels, double f)
{
    double sent = 0.0;
    unsigned k;
    int j;

    for (j = 0; j < lq->len; j++) {
        lq_batch_t *h = &lq->q[(lq->head + j) % LQ_MAX];

        h->done += f * (h->work - h->done);
        for (k = 1; k <= levels; k++) {
            double before = h->sent[k];
            apr_uint64_t n;

            h->sent[k] = h->n[k] * (h->work > 0.0 ? h->done / h->work : 1.0);
            sent += h->sent[k] - before;
            n = (apr_uint64_t)(lq->logged[k] + h->sent[k] - before)
                - (apr_uint64_t)lq->logged[k];
            lq->logged[k] += h->sent[k] - before;
            apr_atomic_add64(&cs->level_responses[k], n);
            apr_atomic_add64(&cs->level_bytes[k],
                             (apr_uint64_t)(n * pl->x[k]));
        }
    }
    while (lq->len > 0 && lq->q[lq->head].done
           >= lq->q[lq->head].work - 1e-9) {
        lq->head = (lq->head + 1) % LQ_MAX;
        lq->len--;
    }
    return sent;
}

double lq_period(lq_t *lq, qc_class_shm_t *cs, plant_t *pl, unsigned levels,
                 double dt)
{
    double frac[QC_MAX_TREES + 1], cost, r, left;
    lq_batch_t *b;
    unsigned k;

    if (lq->len >= LQ_MAX - 1) {
        abort();                /* a run longer than the plant holds */
    }
    b = &lq->q[(lq->head + lq->len++) % LQ_MAX];
    memset(b, 0, sizeof(*b));
    cost = plant_shares(pl, cs, levels, frac);
    /* a closed loop's reply waits for the queue ahead of it */
    r = plant_clients_rate(&pl->cl, pl->r, frac[0], cost + lq_left(lq),
                           1.0 / cost);
    for (k = 0; k <= levels; k++) {
        b->n[k] = r * dt * frac[k];
    }
    if (lq_guard_shm) {
        lq_guard(b, levels, dt);
    }
    for (k = 0; k <= levels; k++) {
        apr_atomic_add64(&cs->level_arrived[k], (apr_uint64_t)b->n[k]);
        b->work += b->n[k] * plant_cost(pl, k);
    }
    left = lq_left(lq);
    pl->cl.good = lq_drain(lq, cs, pl, levels,
                           left > dt ? dt / left : 1.0) / dt;
    return fmin(left, dt) / dt;
}
