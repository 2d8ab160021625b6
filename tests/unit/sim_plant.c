/* Licensed under the Apache License, Version 2.0. */

#include "sim_plant.h"

#include <math.h>

double sim_rand_unit(unsigned long long *state)
{
    unsigned long long x = *state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return (double)((x * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

double sim_rand_noise(unsigned long long *state)
{
    double s = 0.0;
    int i;

    /* Irwin-Hall with 4 terms: variance 4/12. */
    for (i = 0; i < 4; i++) {
        s += sim_rand_unit(state);
    }
    return (s - 2.0) / sqrt(4.0 / 12.0);
}

void sim_plant_init(sim_plant_t *pl, unsigned M, double m0, double noise,
                    unsigned long long seed)
{
    unsigned k;

    pl->M = M > SIM_MAX_M ? SIM_MAX_M : M;
    for (k = 0; k <= SIM_MAX_M; k++) {
        pl->u_lv[k] = 0.0;
    }
    pl->m_prev = m0;
    pl->noise = noise;
    pl->rng = seed ? seed : 88172645463325252ULL;
}

void sim_plant_set_levels(sim_plant_t *pl, const double *u)
{
    unsigned k;

    for (k = 0; k <= pl->M; k++) {
        pl->u_lv[k] = u[k];
    }
}

double sim_plant_static(const sim_plant_t *pl, double m)
{
    unsigned i;
    double f;

    if (m <= 0.0) {
        return pl->u_lv[0];
    }
    if (m >= (double)pl->M) {
        return pl->u_lv[pl->M];
    }
    i = (unsigned)floor(m);
    f = m - i;
    return (1.0 - f) * pl->u_lv[i] + f * pl->u_lv[i + 1];
}

double sim_plant_period(sim_plant_t *pl, double m)
{
    double u1 = fmin(1.0, sim_plant_static(pl, pl->m_prev));
    double u2 = fmin(1.0, sim_plant_static(pl, m));
    double u = 0.5 * (u1 + u2);

    pl->m_prev = m;
    u *= 1.0 + pl->noise * sim_rand_noise(&pl->rng);
    if (u < 0.0) {
        u = 0.0;
    }
    return u > 1.0 ? 1.0 : u;
}
