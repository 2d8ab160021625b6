/* Licensed under the Apache License, Version 2.0. */

/*
 * Utilization sensors of the bottleneck resource (QosCtlResource), free
 * of httpd.  One small interface, so that more resources can be added
 * without touching the controller: init fills in a qc_sensor_t, sample
 * returns the utilization over the time since the previous sample.
 * (Arrivals waiting to be accepted are not a utilization: qc_backlog.h.)  File locations are parameters so
 * tests can feed recorded /proc and /sys contents.
 */

#ifndef QC_SENSORS_H
#define QC_SENSORS_H

#define QC_SENSOR_MAX_CPUS 1024

typedef struct qc_sensor qc_sensor_t;

struct qc_sensor {
    char name[48];              /* "cpu", "link eth0" */
    /* Utilization in [0, 1] since the last call, or < 0 when unknown
     * (the first call, or the source could not be read). */
    double (*sample)(qc_sensor_t *s, double now);
    char path[256];
    double bits_per_s;          /* link */
    double prev_time;
    unsigned long long prev_a, prev_b;
    int primed;
    unsigned char cpus[QC_SENSOR_MAX_CPUS];     /* cpu: 1 = counted */
};

/*
 * Busy fraction of the CPUs marked in cpus (httpd's affinity mask), from
 * a /proc/stat-format file.  cpus == NULL counts every CPU.
 */
int qc_sensor_cpu_init(qc_sensor_t *s, const char *proc_stat,
                       const unsigned char *cpus);

/* The CPUs this process may run on (sched_getaffinity), for the above. */
int qc_sensor_affinity(unsigned char *cpus);

/*
 * Transmitted bytes/s of an interface over its rate, from
 * <sys_net>/<ifname>/statistics/tx_bytes (sys_net: /sys/class/net).
 */
int qc_sensor_link_init(qc_sensor_t *s, const char *sys_net,
                        const char *ifname, double bits_per_s);

/* The largest of n readings (paper eq. 9); < 0 when none is known. */
double qc_sensors_max(qc_sensor_t *s, unsigned n, double now);

#endif /* QC_SENSORS_H */
