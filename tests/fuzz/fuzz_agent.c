/* Licensed under the Apache License, Version 2.0. */

/*
 * libFuzzer target: what HAProxy's agent check reads and answers
 * (controller/qc_agent.c), the pure half of the agent port.
 *
 * Input: 4 doubles (u, bound, a class's m, dt), a byte of levels, a
 * byte for the size of the host buffer and of the reply buffer, a
 * 4-byte maxconn, a shared-memory key up to a NUL, then the rest: the
 * bytes a client sent, any bytes (NULs, CRs, no end of line), handed
 * over in a buffer of exactly their size as recv() leaves them.
 *
 * Checked: qc_agent_parse reads no byte past n (ASan), and answers
 * QC_AGENT_ALL for a first line that is blanks only, QC_AGENT_HOST with
 * host that line without its blanks (only name characters, at most
 * QC_AGENT_REQUEST_MAX bytes, NUL-terminated within host_len), else
 * QC_AGENT_BAD, with host untouched but for HOST; the same bytes give
 * the same answer.  qc_agent_key_matches is a plain re-reading: the
 * same string, or host followed by ':' and the rest of the key after
 * the key's last colon.  The weight is 0 exactly when a busy class
 * rejects, else 10 to 100; smoothing stays between the last weight and
 * the target; the reply is "<w>% [maxconn:<n>]\n" or "" when it does
 * not fit, its length what qc_agent_format returned.
 */

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_common.h"
#include "qc_agent.h"

static int fuzz_host_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_'
           || c == ':' || c == '[' || c == ']';
}

/* The first line's bytes without blanks at either end. */
static void fuzz_first_line(const char *in, size_t n, size_t *start,
                            size_t *end)
{
    size_t s = 0, e = 0;

    while (e < n && in[e] != '\r' && in[e] != '\n') {
        e++;
    }
    while (s < e && (in[s] == ' ' || in[s] == '\t')) {
        s++;
    }
    while (e > s && (in[e - 1] == ' ' || in[e - 1] == '\t')) {
        e--;
    }
    *start = s;
    *end = e;
}

static void fuzz_parse(const char *in, size_t n, size_t host_len)
{
    /* One byte at least, so that a write to host[0] of a 0-byte host
     * is seen by the check below rather than by malloc(0)'s luck. */
    char *host = fuzz_alloc(host_len ? host_len : 1);
    char *again = fuzz_alloc(host_len ? host_len : 1);
    size_t s, e, i;
    int names = 1;
    qc_agent_ask_e ask;

    memset(host, 0x7f, host_len ? host_len : 1);
    memset(again, 0x7f, host_len ? host_len : 1);
    ask = qc_agent_parse(in, n, host, host_len);
    FUZZ_CHECK(qc_agent_parse(in, n, again, host_len) == ask, NULL);
    fuzz_first_line(in, n, &s, &e);
    for (i = s; i < e; i++) {
        names &= fuzz_host_char((unsigned char)in[i]);
    }
    if (s == e) {
        FUZZ_CHECK(ask == QC_AGENT_ALL, NULL);
    }
    else if (names && e - s <= QC_AGENT_REQUEST_MAX && e - s < host_len) {
        FUZZ_CHECK(ask == QC_AGENT_HOST, NULL);
        FUZZ_CHECK(host[e - s] == '\0', NULL);
        FUZZ_CHECK(!memcmp(host, in + s, e - s), NULL);
        FUZZ_CHECK(!strcmp(host, again), NULL);
    }
    else {
        FUZZ_CHECK(ask == QC_AGENT_BAD, NULL);
    }
    if (ask != QC_AGENT_HOST) {
        for (i = 0; i < (host_len ? host_len : 1); i++) {
            FUZZ_CHECK(host[i] == 0x7f, "host written without a host");
        }
    }
}

static void fuzz_key(const char *key, const char *host)
{
    const char *colon = strrchr(key, ':');
    size_t hlen = strlen(host);
    int want = !strcmp(key, host)
               || (colon && (size_t)(colon - key) == hlen
                   && !strncmp(key, host, hlen));

    FUZZ_CHECK(qc_agent_key_matches(key, host) == want, key);
}

static void fuzz_reply(double u, double bound, double m, double dt,
                       unsigned levels, unsigned maxconn, size_t len)
{
    qc_agent_view_t v;
    char *buf = fuzz_alloc(len ? len : 1);
    char want[64];
    double s, prev;
    size_t n;
    int w, fresh;

    for (fresh = 0; fresh <= 1; fresh++) {
        qc_agent_view_init(&v, u, bound, fresh, maxconn);
        w = qc_agent_weight(&v);
        FUZZ_CHECK(w >= 55 && w <= 100, "an empty view");
        qc_agent_add_class(&v, m, levels, 1);
        qc_agent_add_class(&v, 0.0, levels, 0);     /* idle: no say */
        w = qc_agent_weight(&v);
        if (v.rejecting) {
            FUZZ_CHECK(w == 0, NULL);
            FUZZ_CHECK(m < 1.0 && levels > 0, NULL);
        }
        else {
            FUZZ_CHECK(w >= QC_AGENT_WEIGHT_FLOOR && w <= 100, NULL);
        }
        if (!fresh && !v.rejecting && v.quality >= 1.0) {
            FUZZ_CHECK(w == 100, "a silent controller's server weighs 100");
        }
        /* A last weight in [0, 100) from u, when u is finite. */
        prev = isfinite(u) ? fmod(fabs(u), 100.0) : u;
        s = qc_agent_smooth(prev, w, dt, QC_AGENT_TAU_PERIODS);
        if (isfinite(u) && dt >= 0.0) {
            FUZZ_CHECK(s >= fmin(prev, w) - 1e-9
                       && s <= fmax(prev, w) + 1e-9, NULL);
        }
        else if (!(prev >= 0.0) || !(dt >= 0.0)) {
            FUZZ_CHECK(s == w, "no last weight: the target");
        }
        n = qc_agent_format(&v, w, buf, len);
        if (maxconn) {
            snprintf(want, sizeof(want), "%d%% maxconn:%u\n", w, maxconn);
        }
        else {
            snprintf(want, sizeof(want), "%d%%\n", w);
        }
        if (strlen(want) < len) {
            FUZZ_CHECK(n == strlen(want) && !strcmp(buf, want), buf);
        }
        else {
            FUZZ_CHECK(n == 0 && (len == 0 || buf[0] == '\0'), NULL);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_t in = { data, size };
    double u = fuzz_double(&in), bound = fuzz_double(&in);
    double m = fuzz_double(&in), dt = fuzz_double(&in);
    unsigned levels = fuzz_u8(&in) % 9;
    uint8_t sizes = fuzz_u8(&in);
    unsigned maxconn = fuzz_u32(&in);
    char *key = fuzz_field(&in);
    /* Host buffers around the limit, and the size the I/O passes. */
    size_t host_len = (sizes & 15) == 15 ? QC_AGENT_REQUEST_MAX + 1
                      : (sizes & 15) * 20;
    char *line = fuzz_alloc(in.size);
    char host[QC_AGENT_REQUEST_MAX + 1];

    if (in.size) {
        memcpy(line, in.data, in.size);
    }
    fuzz_parse(line, in.size, host_len);
    fuzz_key(key, key);
    fuzz_key(key, "");
    if (qc_agent_parse(line, in.size, host, sizeof(host)) == QC_AGENT_HOST) {
        fuzz_key(key, host);
    }
    fuzz_reply(u, bound, m, dt, levels, maxconn, (sizes >> 4) * 2);
    apr_pool_clear(fuzz_pool);
    return 0;
}
