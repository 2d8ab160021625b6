/* Licensed under the Apache License, Version 2.0. */

#include <stdio.h>
#include <string.h>

#include "qc_parse.h"
#include "qc_state.h"

/* How much of s a reason quotes: up to the end of its line, 24 bytes
 * at most. */
static int qc_state_quote(const char *s)
{
    size_t n = strcspn(s, "\r\n");

    return n > 24 ? 24 : (int)n;
}

/* A reason goes to the error log: no control bytes, no bytes of a
 * binary file. */
static const char *qc_state_clean(char *why)
{
    char *c;

    for (c = why; *c; c++) {
        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) {
            *c = '?';
        }
    }
    return why;
}

/* The capacity's range in its unit; 0 for a unit no sensor has. */
static int qc_state_range(const char *unit, double *lo, double *hi)
{
    if (!strcmp(unit, "cpus")) {
        *lo = QC_STATE_CPUS_MIN;
        *hi = QC_STATE_CPUS_MAX;
        return 1;
    }
    if (!strcmp(unit, "bit/s")) {
        *lo = QC_STATE_BITS_MIN;
        *hi = QC_STATE_BITS_MAX;
        return 1;
    }
    return 0;
}

/* "capacity <number> <unit>", the unit lower-case letters and '/'. */
static const char *qc_state_capacity(const char *s, qc_state_t *st,
                                     char *why, size_t len)
{
    const char *rest, *err;
    double lo, hi;
    size_t u;

    if (strncmp(s, "capacity ", 9) != 0) {
        snprintf(why, len, "line 2: expected \"capacity <number> <unit>\", "
                 "not \"%.*s\"", qc_state_quote(s), s);
        return why;
    }
    s += 9;
    if ((err = qc_parse_number(s, &st->capacity, &rest)) != NULL
        || !(st->capacity > 0.0)) {
        snprintf(why, len, "line 2: capacity \"%.*s\": %s",
                 qc_state_quote(s), s, err ? err : "must be above 0");
        return why;
    }
    if (*rest++ != ' ') {
        snprintf(why, len, "line 2: expected a unit after the capacity");
        return why;
    }
    u = strspn(rest, "abcdefghijklmnopqrstuvwxyz/");
    if (u == 0 || u > QC_STATE_UNIT_MAX
        || strspn(rest + u, "\r\n") != strlen(rest + u)) {
        snprintf(why, len, "line 2: unit \"%.*s\": expected one word such "
                 "as cpus or bit/s, then the end of the file",
                 qc_state_quote(rest), rest);
        return why;
    }
    memcpy(st->unit, rest, u);
    st->unit[u] = '\0';
    if (!qc_state_range(st->unit, &lo, &hi)) {
        snprintf(why, len, "line 2: unit \"%s\": expected cpus or bit/s",
                 st->unit);
        return why;
    }
    if (st->capacity < lo || st->capacity > hi) {
        snprintf(why, len, "line 2: capacity %.6g %s: out of range %g to "
                 "%g", st->capacity, st->unit, lo, hi);
        return why;
    }
    return NULL;
}

const char *qc_state_parse(const char *text, size_t n, qc_state_t *st,
                           char *why, size_t len)
{
    char buf[QC_STATE_MAX];
    qc_state_t got;
    char *second;

    if (n == 0) {
        snprintf(why, len, "empty");
        return why;
    }
    if (n >= sizeof(buf)) {
        snprintf(why, len, "longer than %u bytes", (unsigned)sizeof(buf) - 1);
        return why;
    }
    if (memchr(text, '\0', n)) {
        snprintf(why, len, "a NUL byte: not a text file");
        return why;
    }
    memcpy(buf, text, n);
    buf[n] = '\0';
    memset(&got, 0, sizeof(got));
    second = strchr(buf, '\n');
    if (second) {
        *second++ = '\0';
    }
    if (qc_rls_read(&got.rls, buf, why, len) != 0) {
        /* The reader's reason, as the line it is about. */
        char line1[160];

        snprintf(line1, sizeof(line1), "line 1: %s", why);
        snprintf(why, len, "%s", line1);
        return qc_state_clean(why);
    }
    if (second && *second && qc_state_capacity(second, &got, why, len)) {
        return qc_state_clean(why);
    }
    *st = got;
    return NULL;
}

const char *qc_state_owner(const struct stat *st, uid_t ctl_uid,
                           char *why, size_t len)
{
    if (!S_ISREG(st->st_mode)) {
        snprintf(why, len, "not a regular file");
        return why;
    }
    if (st->st_uid != 0 && st->st_uid != ctl_uid) {
        snprintf(why, len, "owned by uid %ld, neither root nor the "
                 "controller's user (uid %ld)", (long)st->st_uid,
                 (long)ctl_uid);
        return why;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, len, "mode %04o: writable by %s", (unsigned)
                 (st->st_mode & 07777), st->st_mode & S_IWOTH
                 ? "every user" : "its group");
        return why;
    }
    return NULL;
}
