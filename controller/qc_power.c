/* Licensed under the Apache License, Version 2.0. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qc_power.h"

double qc_power_linear(double idle_watts, double max_watts, double u)
{
    if (isnan(u)) {
        return u;
    }
    u = u < 0.0 ? 0.0 : u > 1.0 ? 1.0 : u;
    return idle_watts + (max_watts - idle_watts) * u;
}

double qc_power_energy_delta(unsigned long long prev, unsigned long long now,
                             double range_uj)
{
    if (now >= prev) {
        return (double)(now - prev);
    }
    if (range_uj > 0.0 && (double)prev <= range_uj) {
        return range_uj - (double)prev + (double)now;
    }
    return -1.0;
}

/* A number from the start of an open sysfs file. */
static int qc_power_pread(int fd, unsigned long long *v)
{
    char buf[32], *end;
    ssize_t n;

    do {
        n = pread(fd, buf, sizeof(buf) - 1, 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
        return -1;
    }
    buf[n] = '\0';
    errno = 0;
    *v = strtoull(buf, &end, 10);
    return end == buf || errno ? -1 : 0;
}

static int qc_power_open(int dirfd, const char *name)
{
    return openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
}

/* The zone's name ("package-0", "psys", ...) into buf. */
static int qc_power_zone_name(int zfd, char *buf, size_t len)
{
    int fd = qc_power_open(zfd, "name");
    ssize_t n;

    if (fd < 0) {
        return -1;
    }
    n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0) {
        return -1;
    }
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

/* A top-level zone: intel-rapl:N, digits after the one colon. */
static int qc_power_top_zone(const char *d)
{
    const char *c = strchr(d, ':');

    return !strncmp(d, "intel-rapl:", 11) && c == d + 10 && c[1] != '\0'
           && strspn(c + 1, "0123456789") == strlen(c + 1);
}

/* Opens the zone's counter and adds it; 0 when it did. */
static int qc_power_add_zone(qc_power_t *p, int zfd)
{
    unsigned long long range;
    int fd, rfd;

    if (p->nzones >= QC_POWER_MAX_ZONES) {
        return -1;
    }
    if ((fd = qc_power_open(zfd, "energy_uj")) < 0) {
        return -1;
    }
    if (qc_power_pread(fd, &p->prev_uj[p->nzones]) < 0) {
        close(fd);              /* unreadable: not root, or no counter */
        return -1;
    }
    p->range_uj[p->nzones] = 0.0;
    if ((rfd = qc_power_open(zfd, "max_energy_range_uj")) >= 0) {
        if (qc_power_pread(rfd, &range) == 0) {
            p->range_uj[p->nzones] = (double)range;
        }
        close(rfd);
    }
    p->fd[p->nzones++] = fd;
    return 0;
}

/* Package zones, else one psys zone: psys covers the packages too. */
static void qc_power_find_rapl(qc_power_t *p, const char *powercap)
{
    DIR *d = opendir(powercap);
    struct dirent *e;
    int psys = -1;

    if (!d) {
        return;
    }
    while ((e = readdir(d)) != NULL) {
        char name[64];
        int zfd;

        if (!qc_power_top_zone(e->d_name)) {
            continue;
        }
        zfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY
                     | O_CLOEXEC);
        if (zfd < 0) {
            continue;
        }
        if (qc_power_zone_name(zfd, name, sizeof(name)) == 0) {
            if (!strncmp(name, "package", 7)) {
                qc_power_add_zone(p, zfd);
            }
            else if (!strcmp(name, "psys") && psys < 0) {
                psys = dup(zfd);
            }
        }
        close(zfd);
    }
    closedir(d);
    if (psys >= 0) {
        if (p->nzones == 0) {
            qc_power_add_zone(p, psys);
        }
        close(psys);
    }
}

int qc_power_init(qc_power_t *p, const char *powercap, const char *proc_stat,
                  double idle_watts, double max_watts)
{
    memset(p, 0, sizeof(*p));
    p->source = QC_POWER_NONE;
    if (powercap) {
        qc_power_find_rapl(p, powercap);
    }
    if (p->nzones > 0) {
        p->source = QC_POWER_RAPL;
    }
    else if (max_watts > 0.0 && proc_stat
             && qc_sensor_cpu_init(&p->cpu, proc_stat, NULL) == 0) {
        p->source = QC_POWER_MODEL;
        p->idle_watts = idle_watts;
        p->max_watts = max_watts;
    }
    return p->source;
}

static double qc_power_rapl(qc_power_t *p, double now)
{
    double uj = 0.0, dt = now - p->prev_time;
    int ok = p->primed && dt > 0.0;
    unsigned i;

    for (i = 0; i < p->nzones; i++) {
        unsigned long long v;
        double d;

        if (qc_power_pread(p->fd[i], &v) < 0) {
            p->primed = 0;
            return -1.0;
        }
        d = qc_power_energy_delta(p->prev_uj[i], v, p->range_uj[i]);
        if (d < 0.0) {
            ok = 0;
        }
        uj += d;
        p->prev_uj[i] = v;
    }
    p->prev_time = now;
    p->primed = 1;
    return ok ? uj / 1e6 / dt : -1.0;
}

double qc_power_sample(qc_power_t *p, double now)
{
    double u;

    switch (p->source) {
    case QC_POWER_RAPL:
        return qc_power_rapl(p, now);
    case QC_POWER_MODEL:
        u = p->cpu.sample(&p->cpu, now);
        return u < 0.0 ? -1.0 : qc_power_linear(p->idle_watts,
                                                p->max_watts, u);
    default:
        return -1.0;
    }
}

const char *qc_power_source_name(int source)
{
    return source == QC_POWER_RAPL ? "rapl"
           : source == QC_POWER_MODEL ? "model" : NULL;
}

void qc_power_close(qc_power_t *p)
{
    unsigned i;

    for (i = 0; i < p->nzones; i++) {
        close(p->fd[i]);
    }
    p->nzones = 0;
}
