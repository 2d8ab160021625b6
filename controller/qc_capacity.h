/* Licensed under the Apache License, Version 2.0. */

/*
 * The server's capacity estimated from its accept queues: the most
 * requests per second it serves while dropping under a tolerated ratio
 * of connection attempts, after Tsai, Shin, Reumann and Singhal, "Online
 * web cluster capacity estimation and its application to energy
 * conservation" (IEEE TPDS 18(7), 2007), §5.3, eqs. 1-5 ("queue
 * monitoring").  A queue whose average length passes the threshold at
 * which the peak rate could overflow it within a period says the
 * estimate is too high; a queue well under it while the server serves
 * more than the estimate says it is too low; drops clamp it to what
 * was served.
 *
 * Until the first downward adaptation (the mode bit, `adapting`, is
 * off) the estimate only follows the peak arrival rate up: it is a
 * lower bound, nothing having been hard yet.
 *
 * Pure: no I/O, state owned by the caller.
 */

#ifndef QC_CAPACITY_H
#define QC_CAPACITY_H

/* The drop ratio the capacity is defined by (Tsai et al.'s 1%). */
#define QC_CAP_TOLERANCE_DEFAULT 0.01

/* A period's service rate moves the estimate a quarter of the way: a
 * noisy rate is averaged over ~4 periods, an error halves in ~2.4. */
#define QC_CAP_ALPHA_DEFAULT 0.75

typedef struct {
    double queue_limit;         /* K, connections the accept queues hold */
    double period;              /* T, seconds */
    double forecast;            /* Tc, seconds */
    double tolerance;           /* ε_th, drop ratio, (0, 1] */
    double alpha;               /* smoothing of eq. 5, [0, 1) */
} qc_cap_params_t;

typedef struct {
    double arrived, accepted, dropped;  /* n_arr, n_acc, n_d in the period */
    double queue_avg;                   /* ℓ, seen by arrivals */
    double peak_rate;                   /* λmax, req/s */
} qc_cap_sample_t;

typedef struct {
    double capacity;            /* c, req/s; 0 = nothing known yet */
    double prev_queue;          /* ℓ of the last period, < 0 none */
    int adapting;               /* the mode bit: 0 = c a lower bound */
    double drop_ratio;          /* ε of the last period */
    double threshold;           /* ℓ_th of the last period */
    double predicted;           /* ℓ̂ of the last period */
} qc_cap_t;

void qc_cap_init(qc_cap_t *c);

/*
 * Eq. 1: seconds the queue takes to fill from empty at the peak rate
 * while `capacity` is served; < 0 when it cannot fill (peak <= capacity)
 * or an input is garbage.
 */
double qc_cap_fill_time(double queue_limit, double peak_rate,
                        double capacity);

/*
 * Eq. 2: the least average queue length from which the peak rate could
 * overflow the queue within a period; K when it cannot fill at all.
 * Garbage rates count as 0; garbage K or T give 0.  In [0, K].
 */
double qc_cap_threshold(const qc_cap_params_t *p, double peak_rate,
                        double capacity);

/*
 * One period: eqs. 3-5 and the mode bit.  Returns the new capacity c'
 * (finite, >= 0).  Garbage parameters or a garbage sample (negative,
 * NaN or infinite counts, K or T not > 0) leave the state unchanged.
 * A peak rate under the period's mean arrival rate is taken as the
 * mean.
 */
double qc_cap_update(qc_cap_t *c, const qc_cap_params_t *p,
                     const qc_cap_sample_t *s);

/* Headroom ratio: (c - λ) / c clamped to [-1, 1]; 0 when c is 0 (or λ
 * is garbage). */
double qc_cap_headroom(const qc_cap_t *c, double arrival_rate);

#endif /* QC_CAPACITY_H */
