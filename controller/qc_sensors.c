/* Licensed under the Apache License, Version 2.0. */

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qc_sensors.h"

/* Sum busy and total jiffies of the selected CPUs. */
static int qc_cpu_read(const qc_sensor_t *s, unsigned long long *busy,
                       unsigned long long *total)
{
    char line[512];
    FILE *f = fopen(s->path, "r");
    int found = 0;

    if (!f) {
        return -1;
    }
    *busy = *total = 0;
    while (fgets(line, sizeof(line), f)) {
        unsigned long long v[8] = { 0 };
        unsigned cpu;

        if (strncmp(line, "cpu", 3) || line[3] < '0' || line[3] > '9') {
            continue;
        }
        if (sscanf(line + 3, "%u %llu %llu %llu %llu %llu %llu %llu %llu",
                   &cpu, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                   &v[7]) < 5) {
            continue;
        }
        if (cpu >= QC_SENSOR_MAX_CPUS || !s->cpus[cpu]) {
            continue;
        }
        /* user nice system idle iowait irq softirq steal: idle and
         * iowait are time the CPU could have spent on httpd. */
        *busy += v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        *total += v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
        found = 1;
    }
    fclose(f);
    return found ? 0 : -1;
}

static double qc_cpu_sample(qc_sensor_t *s, double now)
{
    unsigned long long busy, total;
    double u = -1.0;

    if (qc_cpu_read(s, &busy, &total) != 0) {
        s->primed = 0;
        return -1.0;
    }
    if (s->primed && total > s->prev_b) {
        u = (double)(busy - s->prev_a) / (double)(total - s->prev_b);
    }
    s->prev_a = busy;
    s->prev_b = total;
    s->prev_time = now;
    s->primed = 1;
    return u;
}

int qc_sensor_affinity(unsigned char *cpus)
{
    cpu_set_t set;
    int i;

    memset(cpus, 0, QC_SENSOR_MAX_CPUS);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        return -1;
    }
    for (i = 0; i < CPU_SETSIZE && i < QC_SENSOR_MAX_CPUS; i++) {
        cpus[i] = CPU_ISSET(i, &set) ? 1 : 0;
    }
    return 0;
}

int qc_sensor_cpu_init(qc_sensor_t *s, const char *proc_stat,
                       const unsigned char *cpus)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "cpu");
    if (snprintf(s->path, sizeof(s->path), "%s", proc_stat)
        >= (int)sizeof(s->path)) {
        return -1;
    }
    if (cpus) {
        memcpy(s->cpus, cpus, QC_SENSOR_MAX_CPUS);
    }
    else {
        memset(s->cpus, 1, QC_SENSOR_MAX_CPUS);
    }
    s->sample = qc_cpu_sample;
    return 0;
}

static double qc_link_sample(qc_sensor_t *s, double now)
{
    char buf[64];
    unsigned long long bytes;
    double u = -1.0;
    FILE *f = fopen(s->path, "r");

    if (!f || !fgets(buf, sizeof(buf), f)) {
        if (f) {
            fclose(f);
        }
        s->primed = 0;
        return -1.0;
    }
    fclose(f);
    bytes = strtoull(buf, NULL, 10);
    if (s->primed && now > s->prev_time && bytes >= s->prev_a) {
        u = (double)(bytes - s->prev_a) * 8.0
            / (now - s->prev_time) / s->bits_per_s;
    }
    s->prev_a = bytes;
    s->prev_time = now;
    s->primed = 1;
    return u;
}

int qc_sensor_link_init(qc_sensor_t *s, const char *sys_net,
                        const char *ifname, double bits_per_s)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "link %s", ifname);
    if (bits_per_s <= 0.0
        || snprintf(s->path, sizeof(s->path), "%s/%s/statistics/tx_bytes",
                    sys_net, ifname) >= (int)sizeof(s->path)) {
        return -1;
    }
    s->bits_per_s = bits_per_s;
    s->sample = qc_link_sample;
    return 0;
}

double qc_sensors_max(qc_sensor_t *s, unsigned n, double now)
{
    double best = -1.0;
    unsigned i;

    for (i = 0; i < n; i++) {
        double u = s[i].sample(&s[i], now);

        if (u > best) {
            best = u;
        }
    }
    return best;
}
