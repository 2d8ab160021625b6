/* Licensed under the Apache License, Version 2.0. */

/*
 * The power estimate (controller/qc_power.c): the linear model, RAPL's
 * wrapping counters, and the choice of zones, on sysfs-shaped trees
 * written in a temporary directory.
 */

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qc_test.h"
#include "qc_power.h"

static char root[64];

static void put(const char *rel, const char *text)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    f = fopen(path, "w");       /* same inode: an open fd sees it */
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void zone(const char *dir, const char *name, const char *uj)
{
    char path[256], rel[128];

    snprintf(path, sizeof(path), "%s/%s", root, dir);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    snprintf(rel, sizeof(rel), "%s/name", dir);
    put(rel, name);
    if (uj) {
        snprintf(rel, sizeof(rel), "%s/energy_uj", dir);
        put(rel, uj);
        snprintf(rel, sizeof(rel), "%s/max_energy_range_uj", dir);
        put(rel, "262143328850\n");
    }
}

static int unlink_one(const char *path, const struct stat *st, int flag,
                      struct FTW *ftw)
{
    return remove(path);
}

static void fresh_root(void)
{
    snprintf(root, sizeof(root), "/tmp/qc-power-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
}

static void drop_root(void)
{
    nftw(root, unlink_one, 16, FTW_DEPTH | FTW_PHYS);
}

START_TEST(linear_model)
{
    ck_assert(qc_power_linear(100.0, 200.0, 0.5) == 150.0);
    ck_assert(qc_power_linear(100.0, 200.0, 0.0) == 100.0);
    ck_assert(qc_power_linear(100.0, 200.0, -3.0) == 100.0);
    ck_assert(qc_power_linear(100.0, 200.0, 7.0) == 200.0);
    ck_assert(isnan(qc_power_linear(100.0, 200.0, NAN)));
}
END_TEST

START_TEST(energy_wraps)
{
    ck_assert(qc_power_energy_delta(100, 350, 0.0) == 250.0);
    /* RAPL wraps at max_energy_range_uj. */
    ck_assert(qc_power_energy_delta(900, 100, 1000.0) == 200.0);
    /* Backwards with no range, or from past the range: unknown. */
    ck_assert(qc_power_energy_delta(900, 100, 0.0) < 0.0);
    ck_assert(qc_power_energy_delta(2000, 100, 1000.0) < 0.0);
}
END_TEST

/*
 * Two packages are summed; a sub-zone (core), a psys zone beside the
 * packages and a zone whose counter is a symbolic link are not counted.
 */
START_TEST(rapl_packages)
{
    qc_power_t p;
    char target[128], link[128];

    fresh_root();
    zone("intel-rapl:0", "package-0\n", "1000000\n");
    zone("intel-rapl:0:0", "core\n", "5\n");
    zone("intel-rapl:1", "package-1\n", "40\n");
    zone("intel-rapl:2", "psys\n", "7\n");
    zone("intel-rapl:3", "package-2\n", NULL);
    zone("intel-rapl:x", "package-9\n", "1\n");
    put("elsewhere", "123\n");
    snprintf(target, sizeof(target), "%s/elsewhere", root);
    snprintf(link, sizeof(link), "%s/intel-rapl:3/energy_uj", root);
    ck_assert_int_eq(symlink(target, link), 0);

    ck_assert_int_eq(qc_power_init(&p, root, "/proc/stat", 100.0, 200.0),
                     QC_POWER_RAPL);
    ck_assert_uint_eq(p.nzones, 2);
    ck_assert_str_eq(qc_power_source_name(p.source), "rapl");
    ck_assert(qc_power_sample(&p, 10.0) < 0.0);        /* priming */
    put("intel-rapl:0/energy_uj", "6000000\n");
    put("intel-rapl:1/energy_uj", "3000040\n");
    /* 8 J over 2 s */
    ck_assert(fabs(qc_power_sample(&p, 12.0) - 4.0) < 1e-9);
    /* package-0 wraps: 262143328850 - 6000000 + 1000000 uj more */
    put("intel-rapl:0/energy_uj", "1000000\n");
    put("intel-rapl:1/energy_uj", "3000040\n");
    ck_assert(fabs(qc_power_sample(&p, 13.0) - 262138.32885) < 1e-6);
    /* An unreadable counter: unknown, then primed afresh. */
    put("intel-rapl:1/energy_uj", "garbage\n");
    ck_assert(qc_power_sample(&p, 14.0) < 0.0);
    qc_power_close(&p);
    ck_assert_uint_eq(p.nzones, 0);
    drop_root();
}
END_TEST

START_TEST(rapl_psys_alone)
{
    qc_power_t p;

    fresh_root();
    zone("intel-rapl:0", "psys\n", "0\n");
    zone("intel-rapl:1", "psys\n", "0\n");
    ck_assert_int_eq(qc_power_init(&p, root, NULL, 0.0, 0.0),
                     QC_POWER_RAPL);
    ck_assert_uint_eq(p.nzones, 1);
    qc_power_close(&p);
    drop_root();
}
END_TEST

/* No RAPL: the admin's model on the CPU's utilization, or nothing. */
START_TEST(model_and_none)
{
    qc_power_t p;
    char stat[128];

    fresh_root();
    snprintf(stat, sizeof(stat), "%s/stat", root);
    put("stat", "cpu  0 0 0 0 0 0 0 0\n"
        "cpu0 100 0 0 100 0 0 0 0\ncpu1 100 0 0 100 0 0 0 0\n");
    ck_assert_int_eq(qc_power_init(&p, root, stat, 90.0, 250.0),
                     QC_POWER_MODEL);
    ck_assert_str_eq(qc_power_source_name(p.source), "model");
    ck_assert(qc_power_sample(&p, 1.0) < 0.0);
    /* 150 busy of 200 more jiffies: u 0.75 */
    put("stat", "cpu  0 0 0 0 0 0 0 0\n"
        "cpu0 175 0 0 125 0 0 0 0\ncpu1 175 0 0 125 0 0 0 0\n");
    ck_assert(fabs(qc_power_sample(&p, 2.0) - 210.0) < 1e-9);
    qc_power_close(&p);

    ck_assert_int_eq(qc_power_init(&p, "/nonexistent", stat, 90.0, 0.0),
                     QC_POWER_NONE);
    ck_assert(qc_power_source_name(p.source) == NULL);
    ck_assert(qc_power_sample(&p, 3.0) < 0.0);
    drop_root();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("power");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, linear_model);
    tcase_add_test(tc, energy_wraps);
    tcase_add_test(tc, rapl_packages);
    tcase_add_test(tc, rapl_psys_alone);
    tcase_add_test(tc, model_and_none);
    suite_add_tcase(s, tc);
    return qc_test_run(s);
}
