/* Licensed under the Apache License, Version 2.0. */

/*
 * QosCtlResource: the bottleneck's sensors, each checked against this
 * machine as the line is read (a CPU it has, a cgroup v2 group, an
 * interface it sees).
 */

#include "httpd.h"
#include "http_config.h"
#include "apr_strings.h"
#include "apr_file_info.h"
#include "apr_file_io.h"

#include <stdio.h>
#include <unistd.h>

#include "qc_module.h"
#include "qc_parse.h"
#include "qc_sensors.h"
#include "qc_controller.h"

/*
 * The CPUs this machine has: /sys/devices/system/cpu/present, or
 * CPUs 0 to _SC_NPROCESSORS_CONF - 1 when that cannot be read.
 */
static void qc_cpus_present(apr_pool_t *p, unsigned char *present,
                            const char **list)
{
    char buf[512];
    FILE *f = fopen("/sys/devices/system/cpu/present", "r");
    long n, i;

    memset(present, 0, QC_SENSOR_MAX_CPUS);
    if (f) {
        int ok = fgets(buf, sizeof(buf), f) != NULL;

        fclose(f);
        buf[strcspn(buf, "\n")] = '\0';
        if (ok && qc_parse_cpulist(buf, present, QC_SENSOR_MAX_CPUS)
                  == NULL) {
            *list = apr_pstrdup(p, buf);
            return;
        }
    }
    n = sysconf(_SC_NPROCESSORS_CONF);
    n = n < 1 ? 1 : n > QC_SENSOR_MAX_CPUS ? QC_SENSOR_MAX_CPUS : n;
    for (i = 0; i < n; i++) {
        present[i] = 1;
    }
    *list = n == 1 ? "0" : apr_psprintf(p, "0-%ld", n - 1);
}

/* QosCtlResource cpu <cpulist>: listed CPUs that this machine has. */
static const char *qc_resource_cpus(cmd_parms *cmd, const char *list,
                                    qc_resource_t *res)
{
    unsigned char *cpus = apr_pcalloc(cmd->pool, QC_SENSOR_MAX_CPUS);
    unsigned char present[QC_SENSOR_MAX_CPUS];
    const char *have, *err;
    unsigned i;

    qc_cpus_present(cmd->temp_pool, present, &have);
    if ((err = qc_parse_cpulist(list, cpus, QC_SENSOR_MAX_CPUS)) != NULL) {
        return qc_bad(cmd, list, apr_psprintf(cmd->pool, "%s (this machine "
                                              "has CPUs %s)", err, have));
    }
    for (i = 0; i < QC_SENSOR_MAX_CPUS; i++) {
        if (cpus[i] && !present[i]) {
            return qc_bad(cmd, list, apr_psprintf(cmd->pool, "CPU %u is not "
                                                  "present (this machine "
                                                  "has CPUs %s)", i, have));
        }
    }
    res->cpus = cpus;
    return NULL;
}

/* QosCtlResource cgroup <dir>: a cgroup v2 group whose cpu.stat reads. */
static const char *qc_resource_cgroup(cmd_parms *cmd, const char *dir,
                                      qc_resource_t *res)
{
    char *path = apr_pstrdup(cmd->pool, dir);
    size_t len = strlen(path);
    apr_finfo_t fi;
    apr_file_t *f;
    char line[128];
    int found = 0;

    while (len > 1 && path[len - 1] == '/') {
        path[--len] = '\0';
    }
    if (path[0] != '/') {
        return qc_bad(cmd, dir, "not an absolute path (e.g. /sys/fs/cgroup/"
                      "system.slice/php8.2-fpm.service)");
    }
    /* The sensor appends file names to it, in a fixed-size buffer. */
    if (len > 200) {
        return qc_bad(cmd, dir, "longer than 200 bytes");
    }
    if (apr_stat(&fi, path, APR_FINFO_TYPE, cmd->temp_pool) != APR_SUCCESS
        || fi.filetype != APR_DIR) {
        return qc_bad(cmd, dir, "not a directory");
    }
    if (apr_file_open(&f, apr_pstrcat(cmd->temp_pool, path, "/cpu.stat",
                                      NULL),
                      APR_FOPEN_READ, 0, cmd->temp_pool) == APR_SUCCESS) {
        while (!found && apr_file_gets(line, sizeof(line), f)
                         == APR_SUCCESS) {
            found = !strncmp(line, "usage_usec ", 11);
        }
        apr_file_close(f);
    }
    if (!found) {
        return qc_bad(cmd, dir, "no readable cpu.stat with usage_usec: not "
                      "a cgroup v2 group (cgroup v1 is not supported)");
    }
    res->path = path;
    return NULL;
}

/* QosCtlResource link <interface> <bits/s>: an interface this host has. */
static const char *qc_resource_link(cmd_parms *cmd, const char *ifname,
                                    const char *rate, qc_resource_t *res)
{
    const char *err, *sys;
    apr_finfo_t fi;

    if (!ifname || !rate) {
        return apr_psprintf(cmd->pool, "%s: usage: %s link "
                            "<interface> <rate, e.g. 100M or 1G>",
                            cmd->cmd->name, cmd->cmd->name);
    }
    if ((err = qc_parse_ifname(ifname)) != NULL) {
        return qc_bad(cmd, ifname, err);
    }
    if ((err = qc_parse_link_rate(rate, &res->bits_per_s)) != NULL) {
        return qc_bad(cmd, rate, err);
    }
    /* In a network namespace, /sys shows its interfaces only when
     * mounted there, as `ip netns exec` does. */
    sys = apr_pstrcat(cmd->temp_pool, "/sys/class/net/", ifname, NULL);
    if (apr_stat(&fi, sys, APR_FINFO_TYPE, cmd->temp_pool) != APR_SUCCESS) {
        return qc_bad(cmd, ifname, apr_psprintf(cmd->pool, "no such network "
                                                "interface (%s does not "
                                                "exist)", sys));
    }
    res->ifname = ifname;
    return NULL;
}

/*
 * QosCtlResource cpu [<cpulist>] | cgroup <dir> | link <interface> <bits/s>
 * Each line adds a sensor; the controller takes the busiest (eq. 9).
 */
const char *qc_cmd_resource(cmd_parms *cmd, void *dummy, const char *kind,
                            const char *arg, const char *rate)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    qc_server_conf *g = qc_sconf(cmd->server);
    qc_resource_t res;
    int i;

    if (err) {
        return err;
    }
    memset(&res, 0, sizeof(res));
    res.arg = arg;
    if (!strcasecmp(kind, "cpu")) {
        res.kind = QC_RESOURCE_CPU;
        if (rate) {
            return apr_psprintf(cmd->pool, "%s: 'cpu' takes at most a list "
                                "of CPUs, such as 0-3 or 0,2 (got '%s %s')",
                                cmd->cmd->name, arg, rate);
        }
        if (arg && (err = qc_resource_cpus(cmd, arg, &res)) != NULL) {
            return err;
        }
    }
    else if (!strcasecmp(kind, "cgroup")) {
        res.kind = QC_RESOURCE_CGROUP;
        if (!arg || rate) {
            return apr_psprintf(cmd->pool, "%s: usage: %s cgroup <cgroup v2 "
                                "directory, e.g. /sys/fs/cgroup/system.slice/"
                                "php8.2-fpm.service>", cmd->cmd->name,
                                cmd->cmd->name);
        }
        if ((err = qc_resource_cgroup(cmd, arg, &res)) != NULL) {
            return err;
        }
    }
    else if (!strcasecmp(kind, "link")) {
        res.kind = QC_RESOURCE_LINK;
        if ((err = qc_resource_link(cmd, arg, rate, &res)) != NULL) {
            return err;
        }
    }
    else {
        return qc_bad(cmd, kind, "expected 'cpu', 'cgroup' or 'link'");
    }
    for (i = 0; i < g->resources->nelts; i++) {
        const qc_resource_t *o = &APR_ARRAY_IDX(g->resources, i,
                                                qc_resource_t);

        if (o->kind == res.kind
            && (res.kind == QC_RESOURCE_CPU
                ? (!o->cpus && !res.cpus)
                  || (o->cpus && res.cpus
                      && !memcmp(o->cpus, res.cpus, QC_SENSOR_MAX_CPUS))
                : res.kind == QC_RESOURCE_LINK ? !strcmp(o->ifname, arg)
                : !strcmp(o->path, res.path))) {
            return apr_psprintf(cmd->pool, "%s: %s%s%s is given twice",
                                cmd->cmd->name, kind, arg ? " " : "",
                                arg ? arg : "");
        }
    }
    if (g->resources->nelts == QC_CTL_MAX_SENSORS) {
        return apr_psprintf(cmd->pool, "%s: at most %d resources",
                            cmd->cmd->name, QC_CTL_MAX_SENSORS);
    }
    APR_ARRAY_PUSH(g->resources, qc_resource_t) = res;
    return NULL;
}
