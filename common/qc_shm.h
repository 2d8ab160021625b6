/* Licensed under the Apache License, Version 2.0. */

/*
 * Layout of the shared-memory segment that the request path (every httpd
 * process and thread) and the controller process share (paper §6.3).
 * Free of httpd so that the controller and its tests can use it.
 *
 * Writers: the request path only adds to counters, with atomics, and
 * never takes a lock.  The controller is the only writer of everything
 * marked "controller"; those fields are aligned 32/64-bit words, read
 * and written whole, so readers never see a torn value.
 */

#ifndef QC_SHM_H
#define QC_SHM_H

#include <apr.h>
#include <apr_atomic.h>
#include "qc_level.h"

#define QC_SHM_MAGIC    0x31435351u     /* "QSC1" */
#define QC_SHM_VERSION  19u

#define QC_SHM_UNIT_NONE 0u
#define QC_SHM_UNIT_BITS 1u      /* bit/s */
#define QC_SHM_UNIT_CPUS 2u

#define QC_CLASS_PREMIUM 0
#define QC_CLASS_BASIC   1
#define QC_NCLASSES      2

/* "host:port" of a virtual host, the key that survives restarts. */
#define QC_KEY_LEN 120

/* The status page's history: at most a sample a second (one a period
 * when periods are longer), QC_HIST_LEN of them, so that it can draw
 * the last ten minutes (qc_ctl_history_append). */
#define QC_HIST_LEN     600
#define QC_HIST_STEP_US 1000000
/* A class's level m in the history: m * QC_HIST_M_ONE + 1, 0 for no
 * sample (a slot's memset), which holds m up to QC_MAX_TREES. */
#define QC_HIST_M_ONE   4096u

/* One client class of one virtual server, on its own cache lines. */
typedef struct {
    /* request path */
    /* Requests decided on (not subrequests), by the tree they were sent
     * to when decided; [0]: answered 503.  Counted at the decision, not
     * when the reply is done, so the controller sees a new level's
     * effect in the very next period, however long the link's queue. */
    volatile apr_uint64_t level_arrived[QC_MAX_TREES + 1];
    /* Completed, not rejected, and their body bytes, by the tree that
     * served them; [0]: served from no tree (excluded, proxied, no trees
     * configured).  Their sums are the class's (qc_cls_responses). */
    volatile apr_uint64_t level_responses[QC_MAX_TREES + 1];
    volatile apr_uint64_t level_bytes[QC_MAX_TREES + 1];
    /* QosCtl LogOnly: requests the actuator would have sent below the
     * top tree, by that tree; [0]: would have answered 503.  Each was
     * served from the top tree and counted there in level_arrived, so
     * the controller's fit learns each tree's cost from what it served
     * (qc_dry_run in mod_qosctl/qc_request.c). */
    volatile apr_uint64_t would_arrived[QC_MAX_TREES];
    /* Requests decided on below the top level, by bucket of their
     * client's hash N (QC_BUCKETS in qc_level.h): how the load of a class
     * spreads over its clients, so the controller can see when a few
     * keys carry most of it.  At full quality nothing is split and
     * nothing is counted here. */
    volatile apr_uint64_t bucket_arrived[QC_BUCKETS];
    /* What the heavy keys' requests owe tree I + 1, in QC_LEVEL_ONE per
     * request, as two's complement (qc_level_pick_balanced: every
     * request pays in, heavy keys' take their tree from it); the
     * controller sets it to 0 whenever it publishes a level, so a
     * balance that sees no traffic for a while does not then go one
     * way for long. */
    volatile apr_uint64_t balance;

    /* controller: buckets whose requests are split between the two
     * trees around m request by request, not client by client (bit b:
     * bucket b carries more than a few clients' share of the load). */
    volatile apr_uint64_t spread_mask;

    /* controller: the level the actuator applies, QC_LEVEL_ONE fixed
     * point, already combined with best effort (excess sharing): the
     * threshold at which the clients counted in bucket_arrived take the
     * share loop_fx asks for (doc/control.md, The actuator) */
    volatile apr_uint32_t level_fx;
    /* controller: the level m that threshold serves, the one the status
     * page shows and a restarted controller resumes; for a class pinned
     * by QosCtlFixedLevel its level, so the module can tell whether
     * level_fx was made for it */
    volatile apr_uint32_t loop_fx;

    /* controller, for display (doubles as their bit patterns) */
    volatile apr_uint64_t r_bits;       /* arrival rate, req/s */
    volatile apr_uint64_t r_rej_bits;   /* rejection rate, req/s */
    volatile apr_uint64_t w_bits;       /* byte rate, B/s */
    volatile apr_uint64_t u_bits;       /* model utilization */
    volatile apr_uint64_t u_target_bits;
    volatile apr_uint64_t m_own_bits;   /* this loop's own output */
} __attribute__((aligned(64))) qc_class_shm_t;

typedef struct {
    char key[QC_KEY_LEN];
    volatile apr_uint32_t in_use;
    apr_uint32_t ntrees;                /* M of the current config */
    qc_class_shm_t cls[QC_NCLASSES];
    /* controller: each class's level m at the samples of hist_time
     * (QC_HIST_M_ONE); 16-bit words, written whole */
    volatile apr_uint16_t hist_m[QC_NCLASSES][QC_HIST_LEN];
} __attribute__((aligned(64))) qc_slot_t;

typedef struct {
    apr_uint32_t magic;
    apr_uint32_t version;
    apr_uint32_t capacity;              /* slots allocated */
    apr_uint32_t generation;            /* configuration loads */
    volatile apr_uint64_t config_time;  /* apr_time_t of the last load */
    /* Random at creation: keys the client hash, so that no client can
     * compute an address, port or cookie that always gets the top tree
     * or is never rejected. */
    apr_uint64_t secret;

    /* controller */
    volatile apr_uint64_t heartbeat;    /* apr_time_t of its last period */
    volatile apr_uint64_t periods;      /* periods run since it started */
    volatile apr_uint32_t controller_pid;
    volatile apr_uint32_t fail_open_logged;
    volatile apr_uint64_t a_bits, b_bits, c_bits, d_bits;
    /* Cost per request of each tree, [0] the top tree, [j] j below it
     * (s/request, the model's a_j; a_bits is a_0). */
    volatile apr_uint64_t a_tree_bits[QC_MAX_TREES];
    /* Measured over modelled utilization of the requests (qc_calib.h). */
    volatile apr_uint64_t calibration_bits;
    /* QC_WARN_* bits: what the controller wants an admin to know. */
    volatile apr_uint32_t warnings;
    /* Times a jump of load saturated the resource within a period and
     * best effort went to the lowest tree at once (qc_ctl_valve). */
    volatile apr_uint32_t valve_firings;
    /* Best effort's mode and refusing's gate (qc_be_mode.h), this
     * period. */
    volatile apr_uint32_t be_mode;
    volatile apr_uint32_t refuse_gate;
    volatile apr_uint32_t be_why;       /* qc_be_mode.h's qc_be_why_t */
    volatile apr_uint64_t u_measured_bits;
    volatile apr_uint64_t m_best_effort_bits;   /* normalized, [0, 1] */
    volatile apr_uint64_t u_best_effort_target_bits;
    volatile apr_uint64_t period_cpu_ns;        /* controller CPU/period */
    /* connections waiting for httpd to accept them; ~0: unknown */
    volatile apr_uint64_t accept_queue;
    /* The server's capacity in requests/s, as degraded and at full
     * quality (< 0: none yet), the last period's drop ratio of
     * connection attempts and the headroom (capacity - arrivals) /
     * capacity (qc_capacity.h). */
    volatile apr_uint64_t capacity_bits;
    volatile apr_uint64_t capacity_full_bits;
    volatile apr_uint64_t drop_ratio_bits;
    volatile apr_uint64_t headroom_bits;
    /* 0 while the capacity is a lower bound: nothing was hard yet */
    volatile apr_uint32_t capacity_adapting;
    /* The power estimate's source (QC_POWER_* of qc_power.h: 0 none, 1
     * RAPL, 2 QosCtlPowerModel) and watts (NaN unknown). */
    volatile apr_uint32_t power_source;
    volatile apr_uint64_t power_bits;
    /* Ohta and Andou's passive metric on this side: connection attempts and
     * those the kernel answered, since the controller started, and R =
     * (N_SYN - N_SYNACK) / N_SYNACK of the last period (qc_netstat.h). */
    volatile apr_uint64_t syn_total;
    volatile apr_uint64_t synack_total;
    volatile apr_uint64_t syn_ratio_bits;
    /* What the fit's costs are shares of, so that a controller resuming
     * them can tell a resource of another size: the one sensor's
     * capacity (bit/s or CPUs; 0 unknown) and QC_SHM_UNIT_* of it. */
    volatile apr_uint64_t resource_cap_bits;
    volatile apr_uint32_t resource_unit;
    /* controller: the surge guard (qc_surge.h): the count surge_arrived
     * reached when it published, plus the slack, and the rate (< = 0:
     * none) past which a request gets its host's lowest tree; and the
     * base of premium's own count, surge_premium */
    volatile apr_uint64_t surge_base_bits;
    volatile apr_uint64_t surge_rate_bits;
    volatile apr_uint64_t surge_premium_base_bits;
    /* supervisor: CLOCK_MONOTONIC microseconds of its last look at the
     * controller; httpd's parent restarts a supervisor that stopped */
    volatile apr_uint64_t supervisor_beat;
    /* httpd's parent: when it last replaced a silent supervisor (and
     * its controller), apr_time_t, 0 never; how many times; the
     * QC_RESTART_* reason; and how long the silence was, in ms */
    volatile apr_uint64_t parent_restart_time;
    volatile apr_uint32_t parent_restarts;
    volatile apr_uint32_t parent_restart_reason;
    volatile apr_uint64_t parent_restart_silence_ms;
    /* request path, on a line of its own: requests decided on for hosts
     * a loop drives, those the guard sent to the lowest tree, and the
     * premium ones among the first */
    volatile apr_uint64_t surge_arrived __attribute__((aligned(64)));
    volatile apr_uint64_t surge_degraded;
    volatile apr_uint64_t surge_premium;

    /* controller: the status page's history, a ring.  Sample n (from
     * 0) is at n % QC_HIST_LEN; hist_count, the samples appended, is
     * set after the sample's words, so a reader that takes the
     * QC_HIST_LEN - 1 samples below it sees whole ones.  Its time
     * (apr_time_t, 0: none) and measured utilization (float bits, NaN
     * where no sensor was read). */
    volatile apr_uint64_t hist_count __attribute__((aligned(64)));
    volatile apr_uint64_t hist_time[QC_HIST_LEN];
    volatile apr_uint32_t hist_u[QC_HIST_LEN];

    qc_slot_t slots[1];                 /* capacity of them */
} qc_shm_t;

/* warnings */
/* Load the server does not cause reaches the bound by itself: it is not
 * shed, and the bound is exceeded. */
#define QC_WARN_BACKGROUND      1u
/* The named resource stays low while httpd's accept queues fill: the
 * bottleneck is elsewhere (QosCtlResource names the wrong one). */
#define QC_WARN_WRONG_RESOURCE  2u

/* parent_restart_reason */
#define QC_RESTART_SUPERVISOR_SILENT    1u
#define QC_RESTART_CONTROLLER_SILENT    2u

#define QC_SHM_SIZE(capacity) \
    (sizeof(qc_shm_t) + ((capacity) - 1) * sizeof(qc_slot_t))

/* Doubles travel as 64-bit patterns so one atomic access moves them. */
static APR_INLINE apr_uint64_t qc_dbits(double v)
{
    union { double d; apr_uint64_t u; } x;
    x.d = v;
    return x.u;
}

static APR_INLINE double qc_bitsd(apr_uint64_t v)
{
    union { double d; apr_uint64_t u; } x;
    x.u = v;
    return x.d;
}

/* A float as 32 bits, for the history's utilization. */
static APR_INLINE apr_uint32_t qc_fbits(float v)
{
    union { float f; apr_uint32_t u; } x;
    x.f = v;
    return x.u;
}

static APR_INLINE float qc_bitsf(apr_uint32_t v)
{
    union { float f; apr_uint32_t u; } x;
    x.u = v;
    return x.f;
}

/* A level m to the history's form and back (NaN: no sample). */
static APR_INLINE apr_uint16_t qc_hist_m_encode(double m)
{
    if (!(m >= 0.0)) {
        m = 0.0;
    }
    if (m > QC_MAX_TREES) {
        m = QC_MAX_TREES;
    }
    return (apr_uint16_t)(m * QC_HIST_M_ONE + 0.5) + 1;
}

static APR_INLINE double qc_hist_m_decode(apr_uint16_t v)
{
    return v ? (double)(v - 1) / QC_HIST_M_ONE : 0.0 / 0.0;
}

/* Sum of level counts c[0..QC_MAX_TREES]: level_arrived, _responses or
 * _bytes. */
static APR_INLINE apr_uint64_t qc_cls_sum(volatile apr_uint64_t *c)
{
    apr_uint64_t n = 0;
    int k;

    for (k = 0; k <= QC_MAX_TREES; k++) {
        n += apr_atomic_read64(&c[k]);
    }
    return n;
}

/* Requests a class has seen (sum over trees) and those rejected. */
static APR_INLINE apr_uint64_t qc_cls_arrived(qc_class_shm_t *cs)
{
    return qc_cls_sum(cs->level_arrived);
}

static APR_INLINE apr_uint64_t qc_cls_rejected(qc_class_shm_t *cs)
{
    return apr_atomic_read64(&cs->level_arrived[0]);
}

#endif /* QC_SHM_H */
