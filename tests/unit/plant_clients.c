/* Licensed under the Apache License, Version 2.0. */

#include <math.h>

#include "plant_clients.h"

/* A closed loop's clients send as fast as the resource answers (at most
 * as they think); retries add each refusal again. */
double plant_clients_rate(plant_clients_t *c, double r, double p,
                          double reply, double most)
{
    double tries = 1.0, pk = 1.0;
    unsigned k;

    if (c->clients > 0.0) {
        r = fmin(c->clients / (c->think + reply), most);
        c->good = r * (1.0 - p);
        return r;
    }
    for (k = 0; k < c->retries; k++) {
        pk *= p;
        tries += pk;
    }
    c->good = r * (1.0 - pk * p);
    return r * tries;
}
