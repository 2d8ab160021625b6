/* Licensed under the Apache License, Version 2.0. */

/*
 * A closed-loop world for the controller: the resource of a scenario
 * (bench/scenario/qc_scenario.h) and its clients, run under one policy.
 *
 * The resource is shared request by request, as a link shares its
 * bandwidth among connections and a CPU among workers (processor
 * sharing); a CPU site serves at most SIM_WORKERS at once and queues
 * SIM_BACKLOG more, dropping the rest.  Requests are fluid cohorts: the
 * requests of one population that came within SIM_COHORT seconds, by
 * tree.  Clients are what the scenario names: open (a rate), closed
 * (they wait for the reply, a 503's at once, then think), retrying (a
 * 503 retried at once), browsers (pages of objects on one connection).
 * A client gives up after its timeout; a link then stops sending, a CPU
 * finishes the work for nobody.
 *
 * The controller sees what it sees on a real server: the shared
 * segment's counters, the utilization over each tick and period, the
 * accept queue and, on a link, the bytes queued to send.
 */

#ifndef SIM_WORLD_H
#define SIM_WORLD_H

#include <stdio.h>

#include "qc_scenario.h"

typedef enum {
    SIM_PLAIN,          /* plain Apache: the top tree, nothing refused */
    SIM_PINNED,         /* the lowest tree for everyone */
    SIM_QOSCTL,         /* mod_qosctl's controller */
    SIM_FIXED           /* a fixed level per class (sim_set_fixed) */
} sim_policy_t;

/* SIM_FIXED's levels m (below 1: that share of the lowest tree, the
 * rest refused): for a guaranteed host's clients, best effort's basic
 * clients and best effort's premium clients. */
void sim_set_fixed(double guaranteed, double basic, double premium);

/* What one population got over the measured window. */
typedef struct {
    double offered;     /* first attempts (requests, or jobs) */
    double served;      /* 2xx within the timeout */
    double full;        /* of those, from the top tree */
    double refused;     /* first attempts answered 503, so that over
                         * offered it is a share (a retry's next 503s
                         * are the same request's) */
    double errors;      /* timed out, waiting for a reply or for
                         * the kernel to let the connection in */
    double pages, whole, mixed;     /* browsers */
    double jobs_ok;     /* retrying clients: jobs that got a 2xx */
    double good;        /* goodput in requests: whole pages' requests,
                         * jobs, or 2xx */
    double seconds;
} sim_pop_result_t;

typedef struct {
    sim_pop_result_t pop[QC_SC_MAX_POPS];
    double good, requests, refused, errors;
    double u_mean;      /* the resource's mean utilization */
    double m_min;       /* the lowest level any class saw */
} sim_result_t;

/* Run the scenario under the policy; only the populations whose bit is
 * set in `pops` (all: ~0u).  Returns 0, or -1 when the controller could
 * not be set up. */
int sim_run(const qc_scenario_t *sc, sim_policy_t policy, unsigned pops,
            sim_result_t *res);

/* Where sim_run writes one line a period of the controller's decisions
 * (NULL: nowhere): time, the reading, the work waiting, best effort's
 * level, mode and reason, refusing's gate, and each class's level. */
extern FILE *sim_trace;

/* The true cost of a request of tree k (0: a 503) of the scenario's
 * kind, seconds of the resource, and its reply bytes. */
double sim_cost(const qc_scenario_t *sc, unsigned k);
double sim_bytes(const qc_scenario_t *sc, unsigned k);

/* A guaranteed host's contract in shares of the resource at the true
 * costs: a Rmax + b Wmax. */
double sim_contract_share(const qc_scenario_t *sc, unsigned h);

#endif /* SIM_WORLD_H */
