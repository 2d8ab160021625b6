/* Licensed under the Apache License, Version 2.0. */

/*
 * The server's power draw, for capacity planning (Tsai et al.
 * §7.5): measured by RAPL (powercap in sysfs) where the machine has it,
 * else the admin's linear model (QosCtlPowerModel idle max) on the
 * whole machine's CPU utilization, else none.  The RAPL counters are
 * opened by qc_power_init, as root, so that the controller can read
 * them after it drops privileges (they are mode 0400 since Linux 5.10).
 */

#ifndef QC_POWER_H
#define QC_POWER_H

#include "qc_sensors.h"

#define QC_POWER_NONE  0
#define QC_POWER_RAPL  1
#define QC_POWER_MODEL 2

/* RAPL zones summed at most: packages of a large machine. */
#define QC_POWER_MAX_ZONES 16

typedef struct {
    int source;                 /* QC_POWER_* */
    double idle_watts, max_watts;       /* the model's */
    qc_sensor_t cpu;            /* the model's: every CPU */
    unsigned nzones;
    int fd[QC_POWER_MAX_ZONES];         /* energy_uj, open */
    double range_uj[QC_POWER_MAX_ZONES];        /* where it wraps */
    unsigned long long prev_uj[QC_POWER_MAX_ZONES];
    double prev_time;
    int primed;
} qc_power_t;

/* idle + (max - idle) u, u clamped to [0, 1]; NaN for a NaN u. */
double qc_power_linear(double idle_watts, double max_watts, double u);

/* Microjoules from prev to now of a counter that wraps at range (0: at
 * 2^64); < 0 when now < prev and no range is known. */
double qc_power_energy_delta(unsigned long long prev, unsigned long long now,
                             double range_uj);

/*
 * Finds RAPL under powercap (normally /sys/class/powercap): the package
 * zones at the top level (intel-rapl:N named package-*), else a psys
 * zone; opens their counters.  Without RAPL, the model if max_watts > 0
 * (proc_stat for the CPU).  Returns the source.  Never follows a
 * symbolic link out of a zone's directory.
 */
int qc_power_init(qc_power_t *p, const char *powercap, const char *proc_stat,
                  double idle_watts, double max_watts);

/* Watts since the last call (now in seconds); < 0 unknown (the first
 * call, a counter that cannot be read). */
double qc_power_sample(qc_power_t *p, double now);

/* "rapl", "model" or NULL. */
const char *qc_power_source_name(int source);

/* Closes the counters. */
void qc_power_close(qc_power_t *p);

#endif /* QC_POWER_H */
