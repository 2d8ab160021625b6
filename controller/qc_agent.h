/* Licensed under the Apache License, Version 2.0. */

/*
 * HAProxy's agent check (QosCtlAgentListen): what weight a balancer
 * should give this server, from how far it is from its bound.  HAProxy
 * connects, may send one line (agent-send), and reads one line of words.
 * The reply is only ever a weight percentage and a maxconn hint: the
 * words "ready", "drain" and "maint" change HAProxy's administrative
 * state, and "ready" or "drain" would end a maintenance an operator set,
 * so the agent says neither; a weight of 0 shows as DRAIN and undoes
 * itself with the next reply.  Pure: the supervisor does the I/O.
 */

#ifndef QC_AGENT_H
#define QC_AGENT_H

#include <stddef.h>

/* Longest agent-send line taken, without its end of line. */
#define QC_AGENT_REQUEST_MAX 255

/* Lowest weight of a server that still serves everyone. */
#define QC_AGENT_WEIGHT_FLOOR 10

/*
 * What the agent knows of the server, or of one virtual host of it.
 * While the controller is silent the module serves every class it
 * controls at full quality (fail open), so the agent adds only pinned
 * classes (QosCtlFixedLevel), and the utilization, the controller's
 * reading, is not used.
 */
typedef struct {
    int fresh;          /* the controller beat within three periods */
    double u;           /* measured utilization of the bottleneck */
    double bound;       /* QosCtlUtilizationBound */
    double quality;     /* lowest busy class's (m - 1) / (M - 1), [0, 1] */
    int rejecting;      /* a busy class has m < 1: some get 503 */
    int classes;        /* busy classes seen */
    unsigned maxconn;   /* concurrency hint; 0: none */
} qc_agent_view_t;

/* An empty view: fresh, idle, full quality. */
void qc_agent_view_init(qc_agent_view_t *v, double u, double bound,
                        int fresh, unsigned maxconn);

/* Fold in one client class at level m of M trees; busy: it had arrivals
 * (an idle class's level says nothing of the server). */
void qc_agent_add_class(qc_agent_view_t *v, double m, unsigned levels,
                        int busy);

/*
 * The weight in percent of the configured one:
 *     0 while a busy class rejects (HAProxy shows DRAIN);
 *   otherwise 100 - 45 x, x in [0, 2] the server's position: u / bound
 *   at full quality (capped at 1; 0 when the controller is silent),
 *   2 - quality when degrading.
 * So 100 idle, 55 at the bound at full quality, 10 all in the lowest
 * tree: a balancer moves load to servers further from their bound.  A
 * dead controller's server weighs 100, as it serves all at full quality:
 * it takes no server out of rotation.
 */
int qc_agent_weight(const qc_agent_view_t *v);

/*
 * The weight reported, w, moved from the last one reported, prev, dt
 * seconds ago, towards target by 1 - exp(-dt / tau): a first-order
 * filter whatever the rate of the checks.  HAProxy applies a weight at
 * once, and load follows it within a period; reported raw, the weight
 * of the server's present position undid itself at the next check, and
 * the weights of three backends swung between 10 and 100 every second
 * (bench/cluster).  prev < 0: none yet, the target.
 */
double qc_agent_smooth(double prev, double target, double dt, double tau);

/* Time constant of that filter, in control periods. */
#define QC_AGENT_TAU_PERIODS 3.0

/* The reply line, "55% maxconn:150\n", for weight w (qc_agent_weight,
 * perhaps smoothed), NUL-terminated in buf; returns its length (0 when
 * len is too small for any reply). */
size_t qc_agent_format(const qc_agent_view_t *v, int w, char *buf,
                       size_t len);

/* What an agent-send line asks for. */
typedef enum {
    QC_AGENT_ALL,       /* nothing, or an empty line: the whole server */
    QC_AGENT_HOST,      /* a virtual host, "name" or "name:port" */
    QC_AGENT_BAD        /* too long, or not a host name */
} qc_agent_ask_e;

/*
 * Parse the n bytes HAProxy sent (up to the first CR or LF; the rest is
 * ignored).  For QC_AGENT_HOST the name is copied, NUL-terminated, into
 * host (of host_len bytes, at least QC_AGENT_REQUEST_MAX + 1).
 */
qc_agent_ask_e qc_agent_parse(const char *in, size_t n, char *host,
                              size_t host_len);

/* Whether a shared-memory key "host:port" is what a request named:
 * the same key, or the same host on any port. */
int qc_agent_key_matches(const char *key, const char *host);

#endif /* QC_AGENT_H */
