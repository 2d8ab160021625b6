/* Licensed under the Apache License, Version 2.0. */

/*
 * The status page's lowest layer (qc_status_view.c): what its outputs
 * read.  The outputs are declared in qc_status_render.h.
 */

#ifndef QC_STATUS_VIEW_H
#define QC_STATUS_VIEW_H

#include "httpd.h"
#include "qc_module.h"

extern const char *const qc_class_names[QC_NCLASSES];

/* What one class shows, read once from shared memory. */
typedef struct {
    double arrived, rejected, responses, bytes;
    double m, threshold, m_own, r, r_rej, w, u, u_target;
    double spread_buckets;
} qc_class_view_t;

/* How the HTML table writes a metric. */
typedef enum {
    QC_SHOW_NONE,               /* machine formats only */
    QC_SHOW_COUNT,
    QC_SHOW_RATE,               /* per second */
    QC_SHOW_BYTES,
    QC_SHOW_FIXED2              /* a level or a share, two decimals */
} qc_show_e;

typedef struct {
    const char *key;            /* JSON key */
    /* Prometheus name after "qosctl_" (a counter's ends in _total),
     * NULL: not exported, as a rate that rate() over a counter gives */
    const char *prom;
    const char *help;
    int counter;                /* Prometheus counter */
    size_t off;
    const char *label;          /* HTML column heading */
    qc_show_e show;
} qc_metric_t;

extern const qc_metric_t qc_metrics[];
extern const unsigned qc_nmetrics;

/* What the controller wants an admin to know (QC_WARN_* bits). */
typedef struct {
    apr_uint32_t bit;
    const char *kind;           /* JSON word, Prometheus label */
    const char *text;           /* HTML sentence */
} qc_warning_t;

extern const qc_warning_t qc_warnings[];
extern const unsigned qc_nwarnings;

typedef struct {
    apr_time_t now;
    apr_time_t age;             /* since the last heartbeat, -1: none */
    apr_uint64_t periods;
    unsigned pid;
    unsigned valves;            /* qc_shm.h: valve_firings */
    apr_uint64_t surged;        /* qc_shm.h: surge_degraded */
    double surge_rate;          /* req/s, 0: no guard */
    int fail_open;
    double a, b, c, d, u_measured, m_be, u_be_target, cpu_ms;
    double accept_queue;        /* -1: unknown */
    double calibration;
    /* req/s as degraded and at full quality (NaN: none yet) */
    double capacity, capacity_full;
    double drop_ratio, headroom;
    double syn, synack, syn_ratio;      /* SYNs, SYN-ACKs and their R */
    int capacity_lower_bound;   /* nothing was hard yet */
    double watts;               /* NaN: unknown */
    const char *power_source;   /* "rapl", "model", NULL: none */
    double a_tree[QC_MAX_TREES];        /* [0]: the top tree */
    unsigned ntrees;            /* of a_tree shown: the most any host has */
    apr_uint32_t warnings;
    const char *be_mode;        /* best effort's mode (qc_be_mode.h) */
    const char *be_why;         /* ...and what chose it */
    const char *refusing;       /* refusing's gate (qc_be_mode.h) */
    const qc_server_conf *only; /* the one host shown, NULL: all */
    /* qosctl-status asked for from where a tenant may have set it: the
     * page says why it shows one host */
    int narrowed;
} qc_global_view_t;

/* The history's samples of the last ten minutes, newest first: their
 * ring positions and times (qc_shm.h). */
typedef struct {
    unsigned n;
    unsigned at[QC_HIST_LEN];
    apr_time_t t[QC_HIST_LEN];
} qc_history_t;

/*
 * The hosts a view shows, in configuration order, and their classes:
 *     qc_walk_t w = QC_WALK(g);
 *     while (qc_next_host(&w)) ... w.c ...
 * or, every shown host's every class in turn,
 *     while (qc_next_class(&w)) ... w.c, w.cls ...
 */
typedef struct {
    const qc_global_view_t *g;
    int i;                      /* of w.c in qc_rt.servers */
    int cls;
    const qc_server_conf *c;    /* NULL: before the first, past the last */
} qc_walk_t;

#define QC_WALK(g) ((qc_walk_t){ (g), -1, 0, NULL })
int qc_next_host(qc_walk_t *w);
int qc_next_class(qc_walk_t *w);

void qc_view(const qc_server_conf *c, int cls, qc_class_view_t *v);
double qc_metric(const qc_class_view_t *v, const qc_metric_t *m);
const char *qc_tree_name(const qc_server_conf *c, unsigned k);
/* The server-wide figures, for every host (only: NULL). */
void qc_global_view(qc_global_view_t *g);

/* The length of the valid UTF-8 sequence at s, 0: none (an invalid
 * or truncated one, or the end of the string). */
apr_size_t qc_utf8_len(const unsigned char *s);

/* Label values escape backslash, double quote and newline, and hold
 * U+FFFD for each byte that is not valid UTF-8. */
const char *qc_prom_label(apr_pool_t *p, const char *s);

#endif /* QC_STATUS_VIEW_H */
