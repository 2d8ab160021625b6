/* Licensed under the Apache License, Version 2.0. */

/*
 * The fluid plant the paper's model describes, for the controller's
 * tests: one class of one host, a share of its clients per tree set by
 * the level m, a request costing a + b x (x its tree's reply bytes) and
 * a refusal c.  plant_period has no queue: a period's reading is its
 * own work.  lq_period is a link with a queue (bench/step-response in
 * miniature): each period's work joins a queue the link drains at one
 * second of work per second, shared among the queued batches as TCP
 * shares it, and replies are logged only as they drain, so logged bytes
 * lag the decisions by as long as the queue is.  Its clients are
 * plant_clients.h's: a closed loop's wait for the queue too.
 */

#ifndef LINK_PLANT_H
#define LINK_PLANT_H

#include "apr_pools.h"

#include "qc_controller.h"
#include "plant_clients.h"

#define TRUE_A 1e-4             /* s per served request */
#define TRUE_B 8e-9             /* s per byte */
#define TRUE_C 4e-5             /* s per rejected request */

typedef struct {
    double r;                   /* offered req/s (open clients) */
    double x[QC_MAX_TREES + 1]; /* reply bytes of tree 1, 2 (x[0] unused) */
    double a, b, c;             /* costs, if not TRUE_A, TRUE_B, TRUE_C */
    plant_clients_t cl;         /* lq_period's: replies drained/s */
} plant_t;

/* Open clients at r req/s, replies of x1 and x2 bytes, the true costs */
#define PLANT(r, x1, x2) \
    { (r), { 0.0, (x1), (x2) }, 0.0, 0.0, 0.0, { 0.0, 0.0, 0, 0.0 } }

/* A segment of nslots hosts of two trees, each at its top. */
qc_shm_t *plant_shm(apr_pool_t *pool, unsigned nslots);

/* A controller for one host on slot 0 of q, the true model, T = 1 s,
 * G = 4. */
void plant_one_host(apr_pool_t *pool, qc_ctl_t *ctl, qc_ctl_config_t *cfg,
                    qc_ctl_vs_t *vs, qc_shm_t *q, double bound);

/* Seconds of the resource a request of tree k costs (0: a refusal). */
double plant_cost(const plant_t *pl, unsigned k);

/* A period of dt s with no queue; returns the utilization. */
double plant_period(qc_class_shm_t *cs, const plant_t *pl, unsigned levels,
                    double dt);

#define LQ_MAX 1024
typedef struct {
    double n[QC_MAX_TREES + 1], sent[QC_MAX_TREES + 1], work, done;
} lq_batch_t;

typedef struct {
    lq_batch_t q[LQ_MAX];
    int head, len;
    double logged[QC_MAX_TREES + 1];    /* replies logged so far */
} lq_t;

/* The request path's surge guard, when a test emulates it: the segment
 * (NULL: no guard), and the seconds since the controller's last period.
 * qc_surge_guard on a batch moves the part past the published rate
 * from the trees above the lowest to the lowest. */
extern qc_shm_t *lq_guard_shm;
extern double lq_guard_t;

/* A period of dt s on the queued link; returns the link's busy share. */
double lq_period(lq_t *lq, qc_class_shm_t *cs, plant_t *pl, unsigned levels,
                 double dt);
/* Seconds of work waiting on the link. */
double lq_left(const lq_t *lq);

#endif /* LINK_PLANT_H */
