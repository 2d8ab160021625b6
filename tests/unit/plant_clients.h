/* Licensed under the Apache License, Version 2.0. */

/*
 * The clients of a simulated site, for every plant (cpu_plant.h,
 * link_plant.h): open (a rate that ignores replies), open with each 503
 * retried at once up to k times, or closed: N clients, each sending its
 * next request `think` seconds after the last reply (a 503's at once).
 */

#ifndef PLANT_CLIENTS_H
#define PLANT_CLIENTS_H

typedef struct {
    double clients, think;      /* closed loop if clients > 0 */
    unsigned retries;           /* open: each refusal retried this often */
    double good;                /* out: requests served per s */
} plant_clients_t;

/*
 * Requests/s arriving when the open rate is r, a share p is refused, a
 * reply takes `reply` seconds and the resource completes at most `most`
 * requests/s; sets c->good to those served (before the resource's own
 * limit, which the plant applies).
 */
double plant_clients_rate(plant_clients_t *c, double r, double p,
                          double reply, double most);

#endif /* PLANT_CLIENTS_H */
