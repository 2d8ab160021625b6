/* Licensed under the Apache License, Version 2.0. */

/*
 * A simulated server for the control-math tests: a static map from the
 * actuator input m to utilization (piecewise linear through the level
 * utilizations, as the actuator serves a fraction F of clients at level
 * I + 1 and 1 - F at level I), a half-period dead time (the utilization
 * measured over a period averages the levels in force in its two
 * halves: the previous output, then the new one), multiplicative noise
 * and saturation at 1.0.  Plus a small deterministic RNG.
 */

#ifndef SIM_PLANT_H
#define SIM_PLANT_H

#define SIM_MAX_M 8

typedef struct {
    double u_lv[SIM_MAX_M + 1];     /* U at each level 0..M */
    unsigned M;
    double m_prev;                  /* level of the previous period */
    double noise;                   /* relative standard deviation */
    unsigned long long rng;
} sim_plant_t;

/* Deterministic xorshift64* generator. */
double sim_rand_unit(unsigned long long *state);    /* uniform [0, 1) */
/* Zero mean, unit variance, bounded to +-3.46 (sum of 4 uniforms). */
double sim_rand_noise(unsigned long long *state);

void sim_plant_init(sim_plant_t *pl, unsigned M, double m0, double noise,
                    unsigned long long seed);
/* u[0..M]: the utilization with every client at level k. */
void sim_plant_set_levels(sim_plant_t *pl, const double *u);
/* Noise-free static map U(m), unsaturated. */
double sim_plant_static(const sim_plant_t *pl, double m);
/* Run one period with the new output m; returns the measured U. */
double sim_plant_period(sim_plant_t *pl, double m);

#endif /* SIM_PLANT_H */
