/* Licensed under the Apache License, Version 2.0. */

/*
 * The utilization sensors against recorded /proc/stat, sysfs and cgroup
 * v2 contents written to temporary files.
 */

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "qc_test.h"
#include "qc_sensors.h"

#define NEAR(x, want) (fabs((x) - (want)) < 1e-9)

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* dir/name, written with text */
static void put(const char *dir, const char *name, const char *text)
{
    char path[1024];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    write_file(path, text);
}

static void drop(const char *dir, const char *name)
{
    char path[1024];

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    unlink(path);
}

static char *temp_stat(char *path)
{
    int fd = mkstemp(path);

    ck_assert_int_ge(fd, 0);
    close(fd);
    return path;
}

START_TEST(test_cpu_sensor_counts_only_allowed_cpus)
{
    char path[] = "/tmp/qc-stat-XXXXXX";
    unsigned char cpus[QC_SENSOR_MAX_CPUS] = { 0 };
    qc_sensor_t s;

    temp_stat(path);
    /* cpu0 busy 100 of 200 jiffies next period, cpu1 always idle */
    write_file(path, "cpu  0 0 0 0 0 0 0 0\n"
               "cpu0 100 0 100 800 0 0 0 0\ncpu1 0 0 0 1000 0 0 0 0\n");
    cpus[0] = 1;
    ck_assert_int_eq(qc_sensor_cpu_init(&s, path, cpus), 0);
    ck_assert(s.sample(&s, 0.0) < 0.0);         /* first: no interval */
    write_file(path, "cpu  0 0 0 0 0 0 0 0\n"
               "cpu0 150 0 150 900 0 0 0 0\ncpu1 0 0 0 2000 0 0 0 0\n");
    ck_assert(NEAR(s.sample(&s, 1.0), 0.5));
    /* Every CPU: the idle one halves it, and iowait counts as idle. */
    ck_assert_int_eq(qc_sensor_cpu_init(&s, path, NULL), 0);
    s.sample(&s, 0.0);
    write_file(path, "cpu  0 0 0 0 0 0 0 0\n"
               "cpu0 250 0 250 950 50 0 0 0\ncpu1 0 0 0 2300 0 0 0 0\n");
    ck_assert(NEAR(s.sample(&s, 1.0), 200.0 / 600.0));
    unlink(path);
    ck_assert(s.sample(&s, 2.0) < 0.0);         /* gone: unknown */
}
END_TEST

/* dir/ifname/statistics/ under a fresh temporary dir (a sys_net:
 * QC_NET_DIR); in tx the path of its tx_bytes, holding "0". */
#define QC_NET_DIR "/tmp/qc-net-XXXXXX"

static void fake_interface(char *dir, const char *ifname, char *tx,
                           size_t len)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(tx, len, "%s/%s", dir, ifname);
    mkdir(tx, 0755);
    snprintf(tx, len, "%s/%s/statistics", dir, ifname);
    mkdir(tx, 0755);
    snprintf(tx, len, "%s/%s/statistics/tx_bytes", dir, ifname);
    write_file(tx, "0\n");
}

static void drop_interface(const char *dir, const char *ifname)
{
    char path[256];

    snprintf(path, sizeof(path), "%s/%s/statistics/tx_bytes", dir, ifname);
    unlink(path);
    snprintf(path, sizeof(path), "%s/%s/speed", dir, ifname);
    unlink(path);
    snprintf(path, sizeof(path), "%s/%s/statistics", dir, ifname);
    rmdir(path);
    snprintf(path, sizeof(path), "%s/%s", dir, ifname);
    rmdir(path);
    rmdir(dir);
}

START_TEST(test_link_sensor_and_maximum)
{
    char dir[] = QC_NET_DIR;
    char path[256];
    qc_sensor_t s[2];

    fake_interface(dir, "eth9", path, sizeof(path));
    write_file(path, "1000000\n");
    ck_assert_int_eq(qc_sensor_link_init(&s[0], dir, "eth9", 100e6), 0);
    ck_assert_str_eq(s[0].name, "link eth9");
    ck_assert(s[0].sample(&s[0], 10.0) < 0.0);
    write_file(path, "7250000\n");              /* 6.25 MB in 1 s */
    ck_assert(NEAR(s[0].sample(&s[0], 11.0), 0.5));
    ck_assert_int_ne(qc_sensor_link_init(&s[1], dir, "eth9", 0.0), 0);

    /* eq. (9): the bottleneck is the busiest resource */
    ck_assert_int_eq(qc_sensor_link_init(&s[1], dir, "eth9", 50e6), 0);
    s[1].sample(&s[1], 11.0);
    write_file(path, "8500000\n");              /* 1.25 MB in 1 s */
    ck_assert(NEAR(qc_sensors_max(s, 2, 12.0), 0.2));
    /* The counter going back (the interface was made again): unknown,
     * then measured from there. */
    write_file(path, "1000\n");
    ck_assert(s[0].sample(&s[0], 13.0) < 0.0);
    write_file(path, "6251000\n");
    ck_assert(NEAR(s[0].sample(&s[0], 14.0), 0.5));
    unlink(path);
    ck_assert(qc_sensors_max(s, 2, 15.0) < 0.0);
    drop_interface(dir, "eth9");
}
END_TEST

/* The link sensor divides by the least of the declared rate and the
 * port's speed (and a root tbf's: qc_linkrate.h, tests/integration): a
 * 100 Mbit/s plan on a port that came back at 10 Mbit/s is saturated by
 * 10 Mbit/s; a faster port changes nothing. */
START_TEST(test_link_sensor_divides_by_the_least_rate)
{
    char dir[] = QC_NET_DIR;
    char path[256], speed[256];
    qc_sensor_t s;

    fake_interface(dir, "qcx9", path, sizeof(path));
    snprintf(speed, sizeof(speed), "%s/qcx9/speed", dir);
    write_file(speed, "10000\n");
    ck_assert_int_eq(qc_sensor_link_init(&s, dir, "qcx9", 100e6), 0);
    s.sample(&s, 1.0);
    write_file(path, "1250000\n");              /* 10 Mbit in 1 s */
    ck_assert(NEAR(s.sample(&s, 2.0), 0.1));
    ck_assert(fabs(s.cap_now - 100e6) < 1.0);
    write_file(speed, "10\n");
    write_file(path, "2500000\n");
    ck_assert(NEAR(s.sample(&s, 3.0), 1.0));
    ck_assert(fabs(s.cap_now - 10e6) < 1.0);
    drop_interface(dir, "qcx9");
}
END_TEST

/* A shaper turned down to a quarter is said once, as 4; back up, as a
 * quarter; jitter under 1% and several sensors say nothing, and nor
 * does a link found slower than declared at the start. */
START_TEST(test_link_rate_change_rescales_once)
{
    char dir[] = QC_NET_DIR;
    char path[256], speed[256];
    qc_sensor_t s[2];

    fake_interface(dir, "qcx8", path, sizeof(path));
    snprintf(speed, sizeof(speed), "%s/qcx8/speed", dir);
    write_file(speed, "10\n");
    write_file(path, "0\n");
    ck_assert_int_eq(qc_sensor_link_init(&s[0], dir, "qcx8", 100e6), 0);
    s[0].sample(&s[0], 1.0);
    ck_assert(qc_sensors_rescale(s, 1) == 1.0);     /* 10 Mbit/s at start */
    write_file(speed, "1000\n");
    s[0].sample(&s[0], 1.5);
    ck_assert(NEAR(qc_sensors_rescale(s, 1), 0.1));
    ck_assert(qc_sensors_rescale(s, 1) == 1.0);
    write_file(speed, "25\n");
    s[0].sample(&s[0], 2.0);
    ck_assert(NEAR(qc_sensors_rescale(s, 1), 4.0));
    ck_assert(qc_sensors_rescale(s, 1) == 1.0);
    write_file(speed, "1000\n");
    s[0].sample(&s[0], 3.0);
    ck_assert(NEAR(qc_sensors_rescale(s, 1), 0.25));
    s[0].cap_now = 99.5e6;                     /* jitter */
    ck_assert(qc_sensors_rescale(s, 1) == 1.0);
    s[1] = s[0];
    s[0].cap_now = 25e6;
    ck_assert(qc_sensors_rescale(s, 2) == 1.0);
    ck_assert_int_eq(qc_sensor_cpu_init(&s[1], "/proc/stat", NULL), 0);
    ck_assert(qc_sensors_rescale(&s[1], 1) == 1.0);     /* none read */
    drop_interface(dir, "qcx8");
}
END_TEST

/* QosCtlResource cpu 1,3: the listed CPUs only, and the name says so. */
START_TEST(test_cpulist_sensor)
{
    char path[] = "/tmp/qc-stat-XXXXXX";
    unsigned char cpus[QC_SENSOR_MAX_CPUS] = { 0 };
    qc_sensor_t s;

    temp_stat(path);
    write_file(path, "cpu  0 0 0 0 0 0 0 0\n"
               "cpu0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0\n"
               "cpu2 0 0 0 0 0 0 0 0\ncpu3 0 0 0 0 0 0 0 0\n");
    cpus[1] = cpus[3] = 1;
    ck_assert_int_eq(qc_sensor_cpu_init(&s, path, cpus), 0);
    ck_assert_str_eq(s.name, "cpu 1,3");
    ck_assert(s.sample(&s, 0.0) < 0.0);
    /* cpu0 and cpu2 (not listed) flat out; cpu1 busy 90 of 100 (user,
     * system, irq, softirq, steal all busy), cpu3 busy 10 of 100. */
    write_file(path, "cpu  0 0 0 0 0 0 0 0\n"
               "cpu0 100 0 0 0 0 0 0 0\ncpu1 30 10 20 5 5 10 10 10\n"
               "cpu2 100 0 0 0 0 0 0 0\ncpu3 0 0 10 90 0 0 0 0\n");
    ck_assert(NEAR(s.sample(&s, 1.0), 100.0 / 200.0));

    cpus[0] = cpus[2] = 1;
    cpus[1] = cpus[3] = 0;
    cpus[4] = cpus[5] = cpus[6] = cpus[9] = 1;
    ck_assert_int_eq(qc_sensor_cpu_init(&s, path, cpus), 0);
    ck_assert_str_eq(s.name, "cpu 0,2,4-6,9");
    s.sample(&s, 1.0);
    write_file(path, "cpu  0 0 0 0 0 0 0 0\n"
               "cpu0 200 0 0 0 0 0 0 0\ncpu1 30 10 20 5 5 10 10 10\n"
               "cpu2 100 0 0 100 0 0 0 0\ncpu3 0 0 10 90 0 0 0 0\n");
    ck_assert(NEAR(s.sample(&s, 2.0), 100.0 / 200.0));
    unlink(path);
}
END_TEST

/* A CPU going offline drops its line, and its whole history from the
 * sums; coming back adds it again.  Neither is the period's work. */
START_TEST(test_cpu_offline_between_samples_is_unknown)
{
    char path[] = "/tmp/qc-stat-XXXXXX";
    qc_sensor_t s;

    temp_stat(path);
    write_file(path, "cpu  0 0 0 0 0 0 0 0\n"
               "cpu0 100 0 0 100 0 0 0 0\ncpu1 5000 0 0 5000 0 0 0 0\n");
    ck_assert_int_eq(qc_sensor_cpu_init(&s, path, NULL), 0);
    ck_assert(s.sample(&s, 0.0) < 0.0);
    ck_assert(qc_sensors_rescale(&s, 1) == 1.0);    /* 2 CPUs at start */
    /* cpu1 offline: both sums go down.  The same work on half the CPUs
     * reads twice as high: the resource shrank by 2. */
    write_file(path, "cpu  0 0 0 0 0 0 0 0\n"
               "cpu0 150 0 0 150 0 0 0 0\n");
    ck_assert(s.sample(&s, 1.0) < 0.0);
    ck_assert(NEAR(qc_sensors_rescale(&s, 1), 2.0));
    ck_assert(qc_sensors_rescale(&s, 1) == 1.0);
    /* Measured again from the sample before. */
    write_file(path, "cpu  0 0 0 0 0 0 0 0\n"
               "cpu0 225 0 0 175 0 0 0 0\n");
    ck_assert(NEAR(s.sample(&s, 2.0), 0.75));
    /* cpu1 back: both sums jump up by its history, which would read
     * as 0.5 here; the set changed, so unknown. */
    write_file(path, "cpu  0 0 0 0 0 0 0 0\n"
               "cpu0 325 0 0 175 0 0 0 0\ncpu1 5000 0 0 5100 0 0 0 0\n");
    ck_assert(s.sample(&s, 3.0) < 0.0);
    ck_assert(NEAR(qc_sensors_rescale(&s, 1), 0.5));
    write_file(path, "cpu  0 0 0 0 0 0 0 0\n"
               "cpu0 425 0 0 175 0 0 0 0\ncpu1 5000 0 0 5200 0 0 0 0\n");
    ck_assert(NEAR(s.sample(&s, 4.0), 0.5));
    /* One CPU swapped for another: the same count, a different set,
     * and the same capacity. */
    write_file(path, "cpu  0 0 0 0 0 0 0 0\n"
               "cpu0 525 0 0 175 0 0 0 0\ncpu2 1 0 0 1 0 0 0 0\n");
    ck_assert(s.sample(&s, 5.0) < 0.0);
    ck_assert(qc_sensors_rescale(&s, 1) == 1.0);
    unlink(path);
}
END_TEST

/* A counter that goes backwards with the same CPUs online: unknown, never
 * the huge value an unsigned subtraction would give. */
START_TEST(test_cpu_counter_backwards_is_unknown)
{
    char path[] = "/tmp/qc-stat-XXXXXX";
    qc_sensor_t s;
    double u;

    temp_stat(path);
    write_file(path, "cpu  0 0 0 0 0 0 0 0\ncpu0 1000 0 0 1000 0 0 0 0\n");
    ck_assert_int_eq(qc_sensor_cpu_init(&s, path, NULL), 0);
    s.sample(&s, 0.0);
    /* busy down, total up */
    write_file(path, "cpu  0 0 0 0 0 0 0 0\ncpu0 900 0 0 1200 0 0 0 0\n");
    u = s.sample(&s, 1.0);
    ck_assert_msg(u < 0.0, "got %g", u);
    /* total down, busy up */
    write_file(path, "cpu  0 0 0 0 0 0 0 0\ncpu0 1000 0 0 500 0 0 0 0\n");
    u = s.sample(&s, 2.0);
    ck_assert_msg(u < 0.0, "got %g", u);
    /* no time passed */
    u = s.sample(&s, 3.0);
    ck_assert_msg(u < 0.0, "got %g", u);
    /* From the last reading on, all is well again. */
    write_file(path, "cpu  0 0 0 0 0 0 0 0\ncpu0 1100 0 0 600 0 0 0 0\n");
    ck_assert(NEAR(s.sample(&s, 4.0), 0.5));
    /* iowait may go down (proc(5)): busy then leads total; at most 1 */
    write_file(path, "cpu  0 0 0 0 0 0 0 0\ncpu0 1100 0 0 600 50 0 0 0\n");
    ck_assert(NEAR(s.sample(&s, 5.0), 0.0));
    write_file(path, "cpu  0 0 0 0 0 0 0 0\ncpu0 1120 0 0 600 40 0 0 0\n");
    ck_assert(NEAR(s.sample(&s, 6.0), 1.0));
    unlink(path);
}
END_TEST

static char cg_root[] = "/tmp/qc-cg-XXXXXX";

static void cg_setup(void)
{
    char path[512];

    memcpy(cg_root, "/tmp/qc-cg-XXXXXX", sizeof(cg_root));
    ck_assert_ptr_nonnull(mkdtemp(cg_root));
    /* A slice with one service in it, and a file of every CPU. */
    snprintf(path, sizeof(path), "%s/web.slice", cg_root);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/web.slice/fpm.service", cg_root);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    put(cg_root, "online", "0-3\n");
}

static void cg_teardown(void)
{
    static const char *const files[] = {
        "cpu.stat", "cpu.max", "cpuset.cpus.effective"
    };
    static const char *const dirs[] = { "/web.slice/fpm.service",
                                        "/web.slice" };
    char dir[512];
    unsigned i, j;

    for (i = 0; i < 2; i++) {
        snprintf(dir, sizeof(dir), "%s%s", cg_root, dirs[i]);
        for (j = 0; j < 3; j++) {
            drop(dir, files[j]);
        }
        rmdir(dir);
    }
    drop(cg_root, "online");
    rmdir(cg_root);
}

static void cg_put(const char *group, const char *name, const char *text)
{
    char dir[512];

    snprintf(dir, sizeof(dir), "%s/%s", cg_root, group);
    put(dir, name, text);
}

static const char *cg_path(char *buf, size_t len, const char *group)
{
    snprintf(buf, len, "%s/%s", cg_root, group);
    return buf;
}

#define SVC "web.slice/fpm.service"

/* cpu.stat's usage over a quota of 1.5 CPUs (cpu.max 150000 100000). */
START_TEST(test_cgroup_sensor_quota)
{
    char dir[512], online[512];
    qc_sensor_t s;

    cg_put(SVC, "cpu.stat", "usage_usec 5000000\nuser_usec 4000000\n"
           "system_usec 1000000\n");
    cg_put(SVC, "cpu.max", "150000 100000\n");
    cg_put(SVC, "cpuset.cpus.effective", "0-3\n");
    snprintf(online, sizeof(online), "%s/online", cg_root);
    ck_assert_int_eq(qc_sensor_cgroup_init(&s, cg_path(dir, sizeof(dir),
                                                       SVC "/"), online), 0);
    ck_assert_str_eq(s.name, "cgroup fpm.service");
    ck_assert(s.sample(&s, 100.0) < 0.0);
    ck_assert(qc_sensors_rescale(&s, 1) == 1.0);    /* the start */
    /* 0.75 CPU-seconds a second for 2 s over 1.5 CPUs: one half */
    cg_put(SVC, "cpu.stat", "usage_usec 6500000\nuser_usec 5000000\n"
           "system_usec 1500000\n");
    ck_assert(NEAR(s.sample(&s, 102.0), 0.5));
    ck_assert(qc_sensors_rescale(&s, 1) == 1.0);
    /* The quota changes at run time (systemctl set-property): 3 CPUs,
     * and the model is told the resource is half what it was. */
    cg_put(SVC, "cpu.max", "300000 100000\n");
    cg_put(SVC, "cpu.stat", "usage_usec 8000000\n");
    ck_assert(NEAR(s.sample(&s, 103.0), 0.5));
    ck_assert(NEAR(qc_sensors_rescale(&s, 1), 0.5));
    ck_assert(qc_sensors_rescale(&s, 1) == 1.0);
    /* A quota above the cpuset's 4 CPUs cannot be used: 4 it is */
    cg_put(SVC, "cpu.max", "800000 100000\n");
    cg_put(SVC, "cpu.stat", "usage_usec 10000000\n");
    ck_assert(NEAR(s.sample(&s, 104.0), 0.5));
    /* The slice's quota of 1 CPU bounds its service's too */
    cg_put("web.slice", "cpu.stat", "usage_usec 99\n");
    cg_put("web.slice", "cpu.max", "50000 50000\n");
    cg_put(SVC, "cpu.stat", "usage_usec 10500000\n");
    ck_assert(NEAR(s.sample(&s, 105.0), 0.5));
    ck_assert(NEAR(qc_sensors_rescale(&s, 1), 3.0));    /* from 3 to 1 */
    /* Beyond the quota (a burst allowance): at most 1 */
    cg_put(SVC, "cpu.stat", "usage_usec 12500000\n");
    ck_assert(NEAR(s.sample(&s, 106.0), 1.0));
}
END_TEST

/* "max": no quota, so the CPUs the group may run on. */
START_TEST(test_cgroup_sensor_max_uses_cpuset)
{
    char dir[512], online[512];
    qc_sensor_t s;

    cg_put(SVC, "cpu.stat", "usage_usec 0\n");
    cg_put(SVC, "cpu.max", "max 100000\n");
    cg_put(SVC, "cpuset.cpus.effective", "1,3\n");
    snprintf(online, sizeof(online), "%s/online", cg_root);
    ck_assert_int_eq(qc_sensor_cgroup_init(&s, cg_path(dir, sizeof(dir),
                                                       SVC), online), 0);
    s.sample(&s, 0.0);
    cg_put(SVC, "cpu.stat", "usage_usec 500000\n");
    ck_assert(NEAR(s.sample(&s, 1.0), 0.25));             /* of 2 CPUs */
    /* No cpuset here: the slice's */
    cg_put("web.slice", "cpu.stat", "usage_usec 1\n");
    cg_put("web.slice", "cpuset.cpus.effective", "0\n");
    cg_put(SVC, "cpuset.cpus.effective", "\n");
    cg_put(SVC, "cpu.stat", "usage_usec 1000000\n");
    ck_assert(NEAR(s.sample(&s, 2.0), 0.5));              /* of 1 CPU */
    /* None anywhere: every CPU (the online file: 0-3) */
    drop(cg_root, "web.slice/cpuset.cpus.effective");
    drop(cg_root, SVC "/cpuset.cpus.effective");
    cg_put(SVC, "cpu.stat", "usage_usec 3000000\n");
    ck_assert(NEAR(s.sample(&s, 3.0), 0.5));              /* of 4 CPUs */
    /* No cpu.max at all (the root group, or the cpu controller off) */
    drop(cg_root, SVC "/cpu.max");
    cg_put(SVC, "cpu.stat", "usage_usec 4000000\n");
    ck_assert(NEAR(s.sample(&s, 4.0), 0.25));
}
END_TEST

/* The service restarted: a new group, usage from 0.  Stopped: no group. */
START_TEST(test_cgroup_sensor_restart_and_gone)
{
    char dir[512], online[512];
    qc_sensor_t s;
    double u;

    cg_put(SVC, "cpu.stat", "usage_usec 900000000\n");
    snprintf(online, sizeof(online), "%s/online", cg_root);
    ck_assert_int_eq(qc_sensor_cgroup_init(&s, cg_path(dir, sizeof(dir),
                                                       SVC), online), 0);
    s.sample(&s, 0.0);
    cg_put(SVC, "cpu.stat", "usage_usec 1000\n");
    u = s.sample(&s, 1.0);
    ck_assert_msg(u < 0.0, "got %g", u);
    cg_put(SVC, "cpu.stat", "usage_usec 2001000\n");
    ck_assert(NEAR(s.sample(&s, 2.0), 0.5));
    /* no time passed: unknown, not a division by zero */
    ck_assert(s.sample(&s, 2.0) < 0.0);
    drop(cg_root, SVC "/cpu.stat");
    ck_assert(s.sample(&s, 3.0) < 0.0);
    /* A cpu.stat without usage_usec is not a reading */
    cg_put(SVC, "cpu.stat", "user_usec 5\n");
    ck_assert(s.sample(&s, 4.0) < 0.0);
    /* Neither a cpuset nor the file of every CPU: capacity unknown */
    ck_assert_int_eq(qc_sensor_cgroup_init(&s, dir, "/nonexistent/online"),
                     0);
    cg_put(SVC, "cpu.stat", "usage_usec 1\n");
    s.sample(&s, 5.0);
    cg_put(SVC, "cpu.stat", "usage_usec 2\n");
    ck_assert(s.sample(&s, 6.0) < 0.0);
    /* A path too long for the sensor is refused, not cut */
    memset(dir, 'a', sizeof(dir) - 1);
    dir[0] = '/';
    dir[sizeof(dir) - 1] = '\0';
    ck_assert_int_ne(qc_sensor_cgroup_init(&s, dir, online), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qc_sensors");
    TCase *tc = tcase_create("proc_stat");
    TCase *cg = tcase_create("cgroup");

    tcase_add_test(tc, test_cpu_sensor_counts_only_allowed_cpus);
    tcase_add_test(tc, test_link_sensor_and_maximum);
    tcase_add_test(tc, test_link_sensor_divides_by_the_least_rate);
    tcase_add_test(tc, test_link_rate_change_rescales_once);
    tcase_add_test(tc, test_cpulist_sensor);
    tcase_add_test(tc, test_cpu_offline_between_samples_is_unknown);
    tcase_add_test(tc, test_cpu_counter_backwards_is_unknown);
    suite_add_tcase(s, tc);
    tcase_add_checked_fixture(cg, cg_setup, cg_teardown);
    tcase_add_test(cg, test_cgroup_sensor_quota);
    tcase_add_test(cg, test_cgroup_sensor_max_uses_cpuset);
    tcase_add_test(cg, test_cgroup_sensor_restart_and_gone);
    suite_add_tcase(s, cg);
    return qc_test_run(s);
}
