/* Licensed under the Apache License, Version 2.0. */

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "qc_agent.h"

void qc_agent_view_init(qc_agent_view_t *v, double u, double bound,
                        int fresh, unsigned maxconn)
{
    memset(v, 0, sizeof(*v));
    v->fresh = fresh;
    v->u = u;
    v->bound = bound;
    v->quality = 1.0;
    v->maxconn = maxconn;
}

void qc_agent_add_class(qc_agent_view_t *v, double m, unsigned levels,
                        int busy)
{
    double q;

    if (!busy || !(m == m) || levels == 0) {
        return;
    }
    v->classes++;
    if (m < 1.0) {
        v->rejecting = 1;
        v->quality = 0.0;
        return;
    }
    q = levels > 1 ? (m - 1.0) / (levels - 1.0) : 1.0;
    if (q < v->quality) {
        v->quality = q < 0.0 ? 0.0 : q;
    }
}

int qc_agent_weight(const qc_agent_view_t *v)
{
    double x;

    if (v->rejecting) {
        return 0;
    }
    if (v->quality < 1.0) {
        x = 2.0 - v->quality;
    }
    else if (v->fresh && v->bound > 0.0 && v->u > 0.0 && v->u == v->u) {
        x = fmin(v->u / v->bound, 1.0);
    }
    else {
        x = 0.0;
    }
    return (int)lround(100.0 - 45.0 * x);
}

double qc_agent_smooth(double prev, double target, double dt, double tau)
{
    if (!(prev >= 0.0) || !(tau > 0.0) || !(dt >= 0.0)) {
        return target;
    }
    return prev + (target - prev) * (1.0 - exp(-dt / tau));
}

size_t qc_agent_format(const qc_agent_view_t *v, int w, char *buf,
                       size_t len)
{
    int n;

    if (v->maxconn) {
        n = snprintf(buf, len, "%d%% maxconn:%u\n", w, v->maxconn);
    }
    else {
        n = snprintf(buf, len, "%d%%\n", w);
    }
    if (n < 0 || (size_t)n >= len) {
        if (len) {
            buf[0] = '\0';
        }
        return 0;
    }
    return (size_t)n;
}

static int qc_agent_host_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_'
           || c == ':' || c == '[' || c == ']';
}

qc_agent_ask_e qc_agent_parse(const char *in, size_t n, char *host,
                              size_t host_len)
{
    size_t end = 0, start, i;

    while (end < n && in[end] != '\r' && in[end] != '\n') {
        end++;
    }
    start = 0;
    while (start < end && (in[start] == ' ' || in[start] == '\t')) {
        start++;
    }
    while (end > start && (in[end - 1] == ' ' || in[end - 1] == '\t')) {
        end--;
    }
    if (start == end) {
        return QC_AGENT_ALL;
    }
    if (end - start > QC_AGENT_REQUEST_MAX || end - start >= host_len) {
        return QC_AGENT_BAD;
    }
    for (i = start; i < end; i++) {
        if (!qc_agent_host_char((unsigned char)in[i])) {
            return QC_AGENT_BAD;
        }
    }
    memcpy(host, in + start, end - start);
    host[end - start] = '\0';
    return QC_AGENT_HOST;
}

int qc_agent_key_matches(const char *key, const char *host)
{
    size_t hlen = strlen(host);
    const char *colon;

    if (!strcmp(key, host)) {
        return 1;
    }
    /* "name" names the host on any port; the port is after the last
     * colon of the key (an IPv6 literal has others). */
    colon = strrchr(key, ':');
    return colon && (size_t)(colon - key) == hlen
           && !strncmp(key, host, hlen);
}
