/* Licensed under the Apache License, Version 2.0. */

/*
 * mod_qosctl: what the module's files share.  The request path is in
 * qc_request.c, directives in qc_config.c, the shared segment in
 * qc_shm.c, the status page in qc_status.c, hooks in mod_qosctl.c.
 * (Not mod_qosctl.h: the files below the hooks would then seem to
 * depend on the hooks' file, which calls them.)
 */

#ifndef QC_MODULE_H
#define QC_MODULE_H

#include <stdio.h>

#include "httpd.h"
#include "http_config.h"
#include "apr_shm.h"
#include "apr_strings.h"

#include "qc_cidr.h"
#include "qc_level.h"
#include "qc_logno.h"
#include "qc_shm.h"

#define QC_UNSET (-1)

/* Defaults of the main-server directives (paper §4.1, §4.4). */
#define QC_DEFAULT_BOUND        0.58
#define QC_DEFAULT_PERIOD       1.0
#define QC_DEFAULT_GAIN_MARGIN  4.0
#define QC_DEFAULT_RETRY_AFTER  1
#define QC_DEFAULT_DROP_TOLERANCE 0.01  /* Tsai et al.'s 1% */
/* Initial model until the controller learns one: seconds per request,
 * seconds per byte, seconds per rejected request. */
#define QC_DEFAULT_A            100e-6
#define QC_DEFAULT_B            (5e-6 / 1024.0)
#define QC_DEFAULT_C            50e-6

/* Longest URI the actuator maps; longer ones are refused with 414. */
#define QC_MAX_URI 4096

typedef enum {
    QC_RESOURCE_CPU,
    QC_RESOURCE_LINK,
    QC_RESOURCE_CGROUP
} qc_resource_kind_e;

typedef struct {
    qc_resource_kind_e kind;
    const char *ifname;         /* link only */
    double bits_per_s;          /* link only */
    const unsigned char *cpus;  /* cpu: QC_SENSOR_MAX_CPUS flags, NULL all */
    const char *path;           /* cgroup: its directory */
    const char *arg;            /* as given: cpulist, interface or path */
} qc_resource_t;

typedef struct qc_server_conf qc_server_conf;

struct qc_server_conf {
    /* Main server only (the controller's settings). */
    int enabled;                /* QosCtl, QC_UNSET until given */
    int log_only;               /* QosCtl LogOnly: enabled, a dry run */
    double bound;
    double period;
    double gain_margin;
    double drop_tolerance;      /* of the capacity estimate */
    double power_idle, power_max;       /* QosCtlPowerModel; max 0: none */
    double model_a, model_b, model_c;
    int model_set;
    apr_array_header_t *resources;      /* of qc_resource_t */
    const char *log_path;
    const char *state_path;
    int retry_after;
    const char *ctl_user;               /* QosCtlUser; NULL: httpd's */
    uid_t ctl_uid;
    gid_t ctl_gid;
    const char *agent_host;             /* QosCtlAgentListen; NULL: any */
    apr_port_t agent_port;              /* 0: no agent */

    /* Per virtual host. */
    const char *trees[QC_MAX_TREES];    /* normalized URL prefixes */
    unsigned ntrees;                    /* 0: none given (inherit) */
    int guaranteed;
    double rmax;                        /* req/s */
    double wmax;                        /* bytes/s */
    apr_array_header_t *premium;        /* of qc_cidr_t */
    apr_array_header_t *excludes;       /* of const char * */
    double fixed_level;
    int fixed_set;
    int reason_header;                  /* QosCtlReasonHeader; QC_UNSET */

    /* Runtime, filled in post_config. */
    unsigned levels;            /* M: trees, or 1 when none (DocumentRoot) */
    apr_uint32_t fixed_fx;
    apr_uint32_t top_fx;
    size_t tree_len[QC_MAX_TREES];
    size_t tree_maxlen;
    /* The server's DocumentRoot, and each tree's directory below it:
     * a request under that root names its file with one copy. */
    const char *docroot;
    size_t docroot_len;
    const char *tree_path[QC_MAX_TREES];
    const char *level_names[QC_MAX_TREES + 1];  /* "k/M", QOSCTL_LEVEL */
    qc_slot_t *slot;
    const char *key;
    server_rec *server;
};

/* Per-request decision, in r->request_config. */
typedef struct {
    unsigned level;             /* decided tree; 0 = rejected */
    unsigned served_level;      /* tree the file came from, 0 = none */
    int cls;                    /* QC_CLASS_* */
    int excluded;
    int rejected;               /* answered 503 by the actuator */
    int counted;                /* arrival already counted */
    int surged;                 /* sent to the lowest tree by the guard */
    int kept;                   /* its connection's tree (qc_level_keeps) */
    double n;                   /* its client's hash, below the top */
    int would;                  /* LogOnly: level is what it would be */
} qc_request_t;

/* The module-wide runtime state, valid after post_config. */
typedef struct {
    qc_server_conf *main;       /* main server's config (global knobs) */
    qc_shm_t *shm;
    apr_interval_time_t stale_after;    /* 3 periods */
    apr_array_header_t *servers;        /* of qc_server_conf *, in order */
} qc_runtime_t;

extern module AP_MODULE_DECLARE_DATA qosctl_module;
extern qc_runtime_t qc_rt;         /* qc_shm.c, which fills it in */
extern const command_rec qc_cmds[];

/* M of a host: its trees, or 1 (DocumentRoot) when it declares none. */
static APR_INLINE unsigned qc_levels_of(const qc_server_conf *c)
{
    return c->ntrees ? c->ntrees : 1;
}

/* A double formatted with printf's fmt (one conversion), in pool p. */
static APR_INLINE const char *qc_pdouble(apr_pool_t *p, const char *fmt,
                                         double v)
{
    char buf[64];

    snprintf(buf, sizeof(buf), fmt, v);
    return apr_pstrdup(p, buf);
}

#define qc_sconf(s) \
    ((qc_server_conf *)ap_get_module_config((s)->module_config, \
                                            &qosctl_module))

/* qc_config.c */
void *qc_create_server_conf(apr_pool_t *p, server_rec *s);
void *qc_merge_server_conf(apr_pool_t *p, void *basev, void *addv);
const char *qc_server_key(apr_pool_t *p, server_rec *s);
const char *qc_key_fit(apr_pool_t *p, const char *key);
/* "<directive>: invalid value '<value>': <why>" */
const char *qc_bad(cmd_parms *cmd, const char *value, const char *why);

/* qc_resource.c */
const char *qc_cmd_resource(cmd_parms *cmd, void *dummy, const char *kind,
                            const char *arg, const char *rate);

/* qc_user.c */
const char *qc_cmd_user(cmd_parms *cmd, void *dummy, const char *arg);
int qc_drop_privileges(apr_pool_t *p, server_rec *s);
int qc_check_user(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
                  server_rec *s);

/* qc_check.c */
int qc_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                    apr_pool_t *ptemp, server_rec *s);

/* qc_shm.c */
apr_status_t qc_shm_setup(apr_pool_t *pconf, server_rec *s);

/* qc_request.c */
int qc_decide(request_rec *r);
int qc_map(request_rec *r);
int qc_map_other(request_rec *r);
int qc_log(request_rec *r);

/* qc_supervise.c: start the controller process and keep it running */
int qc_supervise(apr_pool_t *pconf, server_rec *s);

/* qc_agent_io.c: HAProxy's agent check, served by the supervisor */
struct pollfd;
int qc_agent_open(server_rec *s);
/* The agent's sockets to poll (listening lfd first; none when lfd < 0),
 * the count returned; lowers *timeout_ms to its next deadline. */
int qc_agent_pollfds(int lfd, struct pollfd *pfd, int *timeout_ms);
/* Serve what poll() found on those n descriptors. */
void qc_agent_serve(const struct pollfd *pfd, int n, server_rec *s);
/* Agent connections open at once (HAProxy opens one per server and
 * check), and the most descriptors qc_agent_pollfds fills. */
#define QC_AGENT_MAXCONN 64
#define QC_AGENT_POLLFDS (QC_AGENT_MAXCONN + 1)

/* qc_status.c */
int qc_status_handler(request_rec *r);
int qc_status_hook(request_rec *r, int flags);

#endif /* QC_MODULE_H */
