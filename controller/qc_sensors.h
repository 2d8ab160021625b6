/* Licensed under the Apache License, Version 2.0. */

/*
 * Utilization sensors of the bottleneck resource (QosCtlResource), free
 * of httpd.  One small interface, so that more resources can be added
 * without touching the controller: init fills in a qc_sensor_t, sample
 * returns the utilization over the time since the previous sample.
 * (Arrivals waiting to be accepted are not a utilization: qc_backlog.h.)
 * File locations are parameters so tests can feed recorded /proc and
 * /sys contents.
 */

#ifndef QC_SENSORS_H
#define QC_SENSORS_H

#define QC_SENSOR_MAX_CPUS 1024

typedef struct qc_sensor qc_sensor_t;

struct qc_sensor {
    char name[48];              /* "cpu", "cpu 0-3", "link eth0", ... */
    /* Utilization since the last call, in [0, 1] for the CPU and cgroup
     * sensors, or < 0 when unknown: the first call, the source could not
     * be read, or it went backwards (then the next call starts afresh). */
    double (*sample)(qc_sensor_t *s, double now);
    char path[256];             /* /proc/stat, tx_bytes, cgroup directory */
    char all_cpus[256];         /* cgroup: cpulist file of every CPU */
    double bits_per_s;          /* link: as declared */
    /* What a reading is divided by, in the sensor's unit: a link's bits/s
     * (qc_linkrate.h), a cgroup's or the CPU set's CPUs; 0 unknown. */
    double cap_now;
    double cap_seen;            /* cap_now at qc_sensors_rescale */
    int ifindex;                /* link: 0 unknown */
    char speed[256];            /* link: its speed file */
    double prev_time;
    unsigned long long prev_a, prev_b;
    int primed;
    unsigned char cpus[QC_SENSOR_MAX_CPUS];     /* cpu: 1 = counted */
    unsigned char seen[QC_SENSOR_MAX_CPUS / 8]; /* cpu: online at prev */
};

/*
 * Busy fraction of the CPUs marked in cpus (QC_SENSOR_MAX_CPUS flags),
 * from a /proc/stat-format file.  cpus == NULL counts every CPU.  When
 * the set of those CPUs that are online changes between two samples,
 * the second is unknown: the sums jump by a whole CPU's history.  The
 * number online is cap_now.
 */
int qc_sensor_cpu_init(qc_sensor_t *s, const char *proc_stat,
                       const unsigned char *cpus);

/*
 * CPU use of a cgroup v2 group over what it may use: the growth of
 * usage_usec in <dir>/cpu.stat over the elapsed time, divided by its
 * capacity in CPUs.  The capacity is the smallest quota ("quota period"
 * in cpu.max) of the group and its ancestors up to the first directory
 * without cpu.max, and at most the number of CPUs of its cpuset
 * (cpuset.cpus.effective of the group or the nearest ancestor having
 * one; else the cpulist file all_cpus, e.g.
 * /sys/devices/system/cpu/online).  Limits are read every sample
 * (cap_now), so `systemctl set-property` takes effect at once.
 */
int qc_sensor_cgroup_init(qc_sensor_t *s, const char *dir,
                          const char *all_cpus);

/*
 * Transmitted bytes/s of an interface over its rate, from
 * <sys_net>/<ifname>/statistics/tx_bytes (sys_net: /sys/class/net).
 * The rate is the least of bits_per_s, the rate of a root tbf shaping
 * the interface and the speed in <sys_net>/<ifname>/speed, read at
 * every sample (cap_now): a shaper turned down is a smaller link.
 */
int qc_sensor_link_init(qc_sensor_t *s, const char *sys_net,
                        const char *ifname, double bits_per_s);

/*
 * How much the resource shrank since the last call: old over new
 * cap_now of the one sensor when it moved by more than
 * QC_SENSOR_CAP_STEP either way (a shaper turned down to a quarter, or
 * a cgroup's quota cut from 2 CPUs to 0.5: 4; back up: 0.25), else 1.
 * The first call only notes it: a shaper below the declared rate at
 * start is no change.  With several sensors, 1: which of them the
 * readings were fitted to is not known.
 */
double qc_sensors_rescale(qc_sensor_t *s, unsigned n);

/* The unit of cap_now: "bit/s" for a link, "cpus" for the CPU and
 * cgroup sensors (the same unit: a model fitted on one holds on the
 * other). */
const char *qc_sensor_unit(const qc_sensor_t *s);

/* Relative change of a capacity that is a new resource, not jitter. */
#define QC_SENSOR_CAP_STEP 0.01

/* The largest of n readings (paper eq. 9); < 0 when none is known. */
double qc_sensors_max(qc_sensor_t *s, unsigned n, double now);

#endif /* QC_SENSORS_H */
