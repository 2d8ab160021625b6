/* Licensed under the Apache License, Version 2.0. */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>

#include "qc_linkrate.h"
#include "qc_sensors.h"

/*
 * Sum busy and total jiffies of the selected CPUs, and note in seen which
 * of them /proc/stat lists: only the online ones.
 */
static int qc_cpu_read(const qc_sensor_t *s, unsigned char *seen,
                       unsigned long long *busy, unsigned long long *total)
{
    char line[512];
    FILE *f = fopen(s->path, "r");
    int found = 0;

    if (!f) {
        return -1;
    }
    *busy = *total = 0;
    memset(seen, 0, sizeof(s->seen));
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
         * iowait are time the CPU could have spent on the work. */
        *busy += v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        *total += v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
        seen[cpu / 8] |= (unsigned char)(1u << (cpu % 8));
        found = 1;
    }
    fclose(f);
    return found ? 0 : -1;
}

/* a / b from counters that must both have grown; -1 if either did not. */
static double qc_share(unsigned long long a, unsigned long long prev_a,
                       unsigned long long b, unsigned long long prev_b)
{
    if (a < prev_a || b <= prev_b) {
        return -1.0;
    }
    if (a - prev_a >= b - prev_b) {
        return 1.0;             /* iowait may go down: busy can lead */
    }
    return (double)(a - prev_a) / (double)(b - prev_b);
}

static unsigned qc_bits_set(const unsigned char *bits, size_t len)
{
    unsigned n = 0;
    size_t i;

    for (i = 0; i < len; i++) {
        n += (unsigned)__builtin_popcount(bits[i]);
    }
    return n;
}

static double qc_cpu_sample(qc_sensor_t *s, double now)
{
    unsigned char seen[sizeof(s->seen)];
    unsigned long long busy, total;
    double u = -1.0;

    if (qc_cpu_read(s, seen, &busy, &total) != 0) {
        s->primed = 0;
        return -1.0;
    }
    /* A CPU going offline or coming back moves the sums by its whole
     * history, not by the period's work: that period is unknown. */
    if (s->primed && !memcmp(seen, s->seen, sizeof(seen))) {
        u = qc_share(busy, s->prev_a, total, s->prev_b);
    }
    s->cap_now = (double)qc_bits_set(seen, sizeof(seen));
    memcpy(s->seen, seen, sizeof(seen));
    s->prev_a = busy;
    s->prev_b = total;
    s->prev_time = now;
    s->primed = 1;
    return u;
}

/* "0-3,6": the name the log and the status page show. */
static void qc_cpu_name(qc_sensor_t *s)
{
    size_t off = (size_t)snprintf(s->name, sizeof(s->name), "cpu");
    const char *sep = " ";
    unsigned i = 0, j;

    while (i < QC_SENSOR_MAX_CPUS && off < sizeof(s->name)) {
        if (!s->cpus[i]) {
            i++;
            continue;
        }
        for (j = i; j + 1 < QC_SENSOR_MAX_CPUS && s->cpus[j + 1]; j++) {
        }
        off += (size_t)(j == i
                        ? snprintf(s->name + off, sizeof(s->name) - off,
                                   "%s%u", sep, i)
                        : snprintf(s->name + off, sizeof(s->name) - off,
                                   "%s%u-%u", sep, i, j));
        sep = ",";
        i = j + 1;
    }
}

int qc_sensor_cpu_init(qc_sensor_t *s, const char *proc_stat,
                       const unsigned char *cpus)
{
    memset(s, 0, sizeof(*s));
    if (snprintf(s->path, sizeof(s->path), "%s", proc_stat)
        >= (int)sizeof(s->path)) {
        return -1;
    }
    if (cpus) {
        memcpy(s->cpus, cpus, QC_SENSOR_MAX_CPUS);
        qc_cpu_name(s);
    }
    else {
        memset(s->cpus, 1, QC_SENSOR_MAX_CPUS);
        snprintf(s->name, sizeof(s->name), "cpu");
    }
    s->sample = qc_cpu_sample;
    return 0;
}

/* The first line of a small file, without its newline. */
static int qc_read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    int ok;

    if (!f) {
        return -1;
    }
    ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok) {
        return -1;
    }
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

/* CPUs in a kernel-written cpulist file ("0-3,6"); -1 unreadable or
 * empty (a cpuset file of a group without the cpuset controller on). */
static int qc_cpulist_count(const char *path)
{
    char buf[4096];
    const char *p = buf;
    int n = 0;

    if (qc_read_line(path, buf, sizeof(buf)) != 0) {
        return -1;
    }
    while (*p >= '0' && *p <= '9') {
        char *end;
        unsigned long lo = strtoul(p, &end, 10), hi = lo;

        if (*end == '-') {
            hi = strtoul(end + 1, &end, 10);
        }
        if (hi < lo || hi - lo >= QC_SENSOR_MAX_CPUS * 64UL) {
            return -1;
        }
        n += (int)(hi - lo + 1);
        p = *end == ',' ? end + 1 : end;
    }
    return n > 0 ? n : -1;
}

/* CPUs' worth of time the group may use, see qc_sensor_cgroup_init. */
static double qc_cgroup_capacity(const qc_sensor_t *s)
{
    char dir[sizeof(s->path)], file[sizeof(s->path) + 32], buf[128];
    double cap = -1.0, quota = -1.0;
    int depth, ncpus = -1;

    memcpy(dir, s->path, sizeof(dir));
    for (depth = 0; depth < 64; depth++) {
        unsigned long long q, period;
        char *slash;

        /* Every group has cpu.stat, the root too; what is above has not. */
        snprintf(file, sizeof(file), "%s/cpu.stat", dir);
        if (depth > 0 && access(file, R_OK) != 0) {
            break;
        }
        /* "max 100000" is no quota; only "<quota> <period>" limits. */
        snprintf(file, sizeof(file), "%s/cpu.max", dir);
        if (qc_read_line(file, buf, sizeof(buf)) == 0
            && sscanf(buf, "%llu %llu", &q, &period) == 2 && period > 0
            && (quota < 0.0 || (double)q / (double)period < quota)) {
            quota = (double)q / (double)period;
        }
        if (ncpus < 0) {
            snprintf(file, sizeof(file), "%s/cpuset.cpus.effective", dir);
            ncpus = qc_cpulist_count(file);
        }
        slash = strrchr(dir, '/');
        if (!slash || slash == dir) {
            break;
        }
        *slash = '\0';
    }
    if (ncpus < 0) {
        ncpus = qc_cpulist_count(s->all_cpus);
    }
    if (ncpus > 0) {
        cap = (double)ncpus;
    }
    if (quota > 0.0 && (cap < 0.0 || quota < cap)) {
        cap = quota;
    }
    return cap;
}

static int qc_cgroup_usage(const qc_sensor_t *s, unsigned long long *usec)
{
    char file[sizeof(s->path) + 16], line[128];
    FILE *f;
    int found = 0;

    snprintf(file, sizeof(file), "%s/cpu.stat", s->path);
    if (!(f = fopen(file, "r"))) {
        return -1;
    }
    while (!found && fgets(line, sizeof(line), f)) {
        found = sscanf(line, "usage_usec %llu", usec) == 1;
    }
    fclose(f);
    return found ? 0 : -1;
}

static double qc_cgroup_sample(qc_sensor_t *s, double now)
{
    unsigned long long usec;
    double u = -1.0, cap;

    if (qc_cgroup_usage(s, &usec) != 0) {
        s->primed = 0;          /* the group is gone (service stopped) */
        return -1.0;
    }
    cap = qc_cgroup_capacity(s);
    s->cap_now = cap > 0.0 ? cap : 0.0;
    /* A group made again (a service restarted) counts from 0: unknown. */
    if (s->primed && usec >= s->prev_a && now > s->prev_time
        && cap > 0.0) {
        u = (double)(usec - s->prev_a) / 1e6 / (now - s->prev_time) / cap;
        if (u > 1.0) {
            u = 1.0;            /* burst allowance, or sampling jitter */
        }
    }
    s->prev_a = usec;
    s->prev_time = now;
    s->primed = 1;
    return u;
}

int qc_sensor_cgroup_init(qc_sensor_t *s, const char *dir,
                          const char *all_cpus)
{
    size_t len;
    const char *base;

    memset(s, 0, sizeof(*s));
    len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') {
        len--;
    }
    /* Room for the longest file name appended, in qc_cgroup_capacity. */
    if (len == 0 || len + sizeof("/cpuset.cpus.effective") > sizeof(s->path)
        || snprintf(s->all_cpus, sizeof(s->all_cpus), "%s", all_cpus)
           >= (int)sizeof(s->all_cpus)) {
        return -1;
    }
    memcpy(s->path, dir, len);
    s->path[len] = '\0';
    base = strrchr(s->path, '/');
    base = base && base[1] ? base + 1 : s->path;
    snprintf(s->name, sizeof(s->name), "cgroup %.40s", base);
    s->sample = qc_cgroup_sample;
    return 0;
}

/* The least of the declared rate, a shaper's and the port's speed. */
static double qc_link_rate(const qc_sensor_t *s)
{
    double rate = s->bits_per_s;
    double shaper = s->ifindex > 0 ? qc_linkrate_shaper(s->ifindex) : -1.0;
    double speed = qc_linkrate_speed(s->speed);

    if (shaper > 0.0 && shaper < rate) {
        rate = shaper;
    }
    if (speed > 0.0 && speed < rate) {
        rate = speed;
    }
    return rate;
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
    s->cap_now = qc_link_rate(s);
    if (s->primed && now > s->prev_time && bytes >= s->prev_a) {
        u = (double)(bytes - s->prev_a) * 8.0
            / (now - s->prev_time) / s->cap_now;
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
                    sys_net, ifname) >= (int)sizeof(s->path)
        || snprintf(s->speed, sizeof(s->speed), "%s/%s/speed", sys_net,
                    ifname) >= (int)sizeof(s->speed)) {
        return -1;
    }
    s->bits_per_s = bits_per_s;
    s->cap_now = bits_per_s;
    s->ifindex = (int)if_nametoindex(ifname);
    s->sample = qc_link_sample;
    return 0;
}

const char *qc_sensor_unit(const qc_sensor_t *s)
{
    return s->bits_per_s > 0.0 ? "bit/s" : "cpus";
}

double qc_sensors_rescale(qc_sensor_t *s, unsigned n)
{
    double f;

    if (n != 1 || !(s->cap_now > 0.0)) {
        return 1.0;
    }
    if (!(s->cap_seen > 0.0)) {
        /* The first capacity read is where the model starts (a prior,
         * or a state file saved at that capacity), not a change. */
        s->cap_seen = s->cap_now;
        return 1.0;
    }
    f = s->cap_seen / s->cap_now;
    if (fabs(f - 1.0) <= QC_SENSOR_CAP_STEP) {
        return 1.0;
    }
    s->cap_seen = s->cap_now;
    return f;
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
