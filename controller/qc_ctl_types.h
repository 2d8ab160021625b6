/* Licensed under the Apache License, Version 2.0. */

/*
 * The controller's state (qc_ctl_t) and its configuration, by stage:
 * the types every stage file reads and writes, with no function of
 * any stage.  The module and the tests see them through qc_controller.h.
 */

#ifndef QC_CTL_TYPES_H
#define QC_CTL_TYPES_H

#include "apr_pools.h"
#include "qc_shm.h"
#include "qc_rls.h"
#include "qc_pi.h"
#include "qc_targets.h"
#include "qc_sensors.h"
#include "qc_backlog.h"
#include "qc_calib.h"
#include "qc_overflow.h"
#include "qc_spread.h"
#include "qc_capacity.h"
#include "qc_power.h"
#include "qc_be_mode.h"

#define QC_CTL_MAX_SENSORS 8

/* The state file: the fit (qc_rls_format), and on a second line
 * "capacity <cap> <unit>" of the one sensor it was fitted on. */
#define QC_CTL_STATE_MAX (QC_RLS_LINE_MAX + 64)

/* Periods between writes of a converged model to the state file. */
#define QC_CTL_STATE_EVERY 10

typedef struct {
    const char *name;           /* "host:port" */
    qc_slot_t *slot;
    unsigned levels;            /* M */
    int guaranteed;
    double rmax;                /* req/s */
    double wmax;                /* bytes/s */
    int fixed;                  /* pinned by QosCtlFixedLevel: no loop */
    double fixed_level;         /* and at what m */
} qc_ctl_vs_t;

typedef struct {
    double bound;
    double period;              /* T, seconds */
    double gain_margin;         /* G */
    double a0, b0, c0;          /* initial model: s/req, s/B, s/req */
    qc_shm_t *shm;
    qc_ctl_vs_t *vs;
    unsigned nvs;
    qc_sensor_t sensors[QC_CTL_MAX_SENSORS];
    unsigned nsensors;
    qc_backlog_t backlog;       /* httpd's listeners; zeroed: unknown */
    double drop_tolerance;      /* QosCtlDropTolerance; 0: the default */
    qc_power_t power;           /* opened before privileges are dropped */
    int log_fd;                 /* QosCtlLog, -1 for none */
    int state_fd;               /* QosCtlStateFile, -1 for none */
    int log_only;               /* QosCtl LogOnly: decide on a virtual
                                 * plant (qc_ctl_dry.c) */
} qc_ctl_config_t;

typedef struct {
    apr_uint64_t larr[QC_MAX_TREES + 1];    /* arrivals by tree, 0 rejected */
    apr_uint64_t responses, bytes;
    apr_uint64_t lresp[QC_MAX_TREES + 1];
    apr_uint64_t lbytes[QC_MAX_TREES + 1];
    apr_uint64_t buckets[QC_BUCKETS];
    apr_uint64_t would[QC_MAX_TREES];       /* LogOnly's would_arrived */
} qc_ctl_counts_t;

typedef struct {
    qc_pi_t pi;
    qc_ctl_counts_t prev;
    double xbar[QC_MAX_TREES];  /* mean reply bytes of tree k + 1, 0 unknown */
    double xn[QC_MAX_TREES], xb[QC_MAX_TREES];  /* its decayed sums */
    double r;                   /* arrivals/s, rejected included */
    double r_tree[QC_MAX_TREES + 1];    /* arrivals/s by tree, 0 rejected */
    double r_rej;
    /* LogOnly: arrivals/s the actuator would have sent below the top,
     * by tree, 0 rejected (each counted at the top in r_tree) */
    double r_would[QC_MAX_TREES];
    double r_served;            /* replies completed/s */
    double r_served_tree[QC_MAX_TREES + 1];     /* by tree served from */
    double w;                   /* bytes/s of replies completed */
    double u_model;             /* model utilization of what was decided */
    double u;                   /* the same, calibrated (qc_calib.h) */
    double u_target;
    double m_applied;           /* level the actuator applies */
    qc_spread_t spread;
} qc_ctl_class_t;

/*
 * What the period's reading is, classified once, in sensing
 * (qc_ctl_classify), for every later stage to read.
 */
typedef struct {
    int known;          /* the sensors could be read */
    int saturated;      /* qc_u_capped: a lower bound of the load, no
                         * measure of it */
    int fresh;          /* the last period's reading was not saturated */
    int lagging;        /* the valve fired in this period or the last:
                         * the sensor still shows work queued before */
    int turned_away;    /* the kernel dropped connection attempts at a
                         * full accept queue (qc_ctl_censor) */
    int jumped;         /* bytes sent, replies or refusals moved by half
                         * or more since the last period */
    double served;      /* replies/s over every class, and bytes/s and */
    double w, r_rej;    /* refusals/s: what the fit's sample sums */
    int whose;          /* whose load it shows, for the calibration
                         * (QC_CALIB_*: qc_ctl_classify_load) */
} qc_reading_t;

/* Saturation, and the backlog it leaves (qc_ctl_policy.c). */
typedef struct {
    double backlog;             /* decided, not yet sent (periods of U) */
    unsigned backlog_grew;      /* saturated periods in a row it grew */
    double waiting_prev;        /* qc_waiting_work's, last period */
    double excess;              /* last period's, if it was unsaturated */
    double k_unsaturated;       /* calibration before the saturation */
    double u_unsaturated;       /* its reading (0 before any) */
    double r_unsaturated;       /* and the arrivals/s then */
    double m_unsaturated;       /* and best effort's level then */
    double saturated_for;       /* seconds the resource has been */
    int draining;               /* backlog left to drain, this period */
    int drained;                /* ... and none left since this period */
} qc_ctl_sat_t;

/* The background's test and what it found (qc_ctl_besteffort.c). */
typedef struct {
    /* Periods in a row over the bound, seconds before another test may
     * begin, whether the period under way is one, the level before it,
     * the reading of the last one, the level to go back to after one
     * that found the background real (0: none), and how many there
     * were. */
    unsigned over;
    double wait;
    int test;
    double m, seen, restore;
    unsigned long tests;
    /* Saturated periods in a row with nothing of the server's under way,
     * whether such a background saturates the resource now
     * (qc_note_background_alone), unsaturated periods in a row since,
     * and the fit before the first. */
    unsigned alone;
    int full;
    unsigned below;
    qc_rls_t fit0;
} qc_ctl_bg_t;

/* The ticks within a period (qc_ctl_tick): the valve and the surge
 * guard (qc_surge.h). */
typedef struct {
    /* Saturated ticks in a run, and its ticks below the mark in a row
     * (QC_CTL_VALVE_DIPS end it); the arrivals above the lowest trees
     * at the last tick and when the run began, and its length; the
     * rate of those the levels are expected to decide; the valve's
     * firings. */
    unsigned saturated, dips;
    double upper, upper0, seconds;
    double upper_rate;
    unsigned long valves;
    /* The request path's counts of the requests it decided on, at the
     * last period, and of those it sent to the lowest tree, at the last
     * tick; the arrivals/s of the last period, the rate it publishes
     * (0: none), and the seconds since it did. */
    apr_uint64_t surge_seen, surge_down;
    double surge_r, surge_rate, surge_t;
    int valved;                 /* the valve fired in this period */
    int valved_last;            /* ... in the last one */
} qc_ctl_ticks_t;

/* The capacity estimate (qc_capacity.h) from the ticks' readings. */
typedef struct {
    qc_cap_t est;
    /* The queue's integral and its span, its length when the period
     * began and at the last tick, its limit K (-1 unknown); connection
     * attempts and drops (< 0: unknown this period) and the highest
     * tick rate of attempts; requests per connection. */
    double q_area, q_time, q_first, q_last;
    long limit;
    double attempts, drops, peak;
    double rpc;
    /* The estimates published (req/s, < 0 none yet) and the headroom. */
    double capacity, capacity_full, headroom;
    /* SYN counts since start and R of the last period whose counters
     * were read (qc_syn_ratio; Ohta and Andou's metric). */
    double syn_total, synack_total, syn_ratio;
    /* Connections that entered the accept queues, and seconds, since
     * they were last empty; the rate at which they came until the
     * kernel began to drop attempts, held while it drops (< 0 none). */
    double fill_entries, fill_time, offered;
} qc_ctl_capest_t;

/* LogOnly's virtual plant (qc_ctl_dry.c): the readings it stands in
 * for while the decisions are made, and its own state. */
typedef struct {
    double u, sent_backlog, prev_sent_backlog;  /* as measured */
    long queued;
    double u_prev;              /* its last reading, < 0 none */
    double backlog;             /* seconds of work it has yet to do */
    double ratio;               /* its reading over the measured one */
    double k_loaded;    /* the cost of a completion in the last period
                         * loaded and not saturated, 0 none */
} qc_ctl_dry_t;

/*
 * The controller's state, by stage: what sensing keeps of the last
 * period, the fit, the loops, best effort's mode and the mechanisms it
 * runs, the ticks, the capacity estimate, output.
 */
typedef struct {
    qc_ctl_config_t *cfg;
    /* Sensing (qc_ctl_sense.c): the reading and what it is read
     * against. */
    double u_measured;          /* < 0 when no sensor could be read */
    qc_reading_t reading;       /* and what it is */
    double prev_u;      /* last period's u_measured (set as a step ends) */
    long queued;                /* accept queues at the last period */
    /* The link's measured backlog (the input's sendq_bytes), seconds of
     * its time, < 0 unknown; and what it showed (qc_overflow.h). */
    double sent_backlog, link_bps;      /* and the link's bytes/s */
    double prev_sent_backlog;   /* at the last period, < 0 unknown */
    double floor_cur, floor_prev;       /* lowest readings (qc_ctl_policy.c) */
    double floor_age;           /* seconds into floor_cur's window */
    unsigned low_queued;        /* periods: resource low, queues full */
    /* The fit (qc_ctl_model.c) and its calibration. */
    qc_rls_t rls;
    qc_model_t model;
    qc_calib_t calib;
    double prev_u_model;        /* last period's decided model load */
    qc_rls_sample_t fit_held;   /* the regressors the fit last moved to */
    int fit_held_set;
    /* The loops: one per (guaranteed host, class), and best effort's. */
    qc_ctl_class_t *cls;        /* nvs * QC_NCLASSES */
    /* Each host's requests over its contract's window, and the window's
     * length in periods (qc_note_contract). */
    double *contract_n;         /* nvs */
    double *contract_last;      /* nvs: the last period's requests */
    unsigned contract_periods;
    qc_pi_t be;                 /* best effort; m normalized to [0, 1] */
    qc_be_mode_t be_mode;       /* its mode this period, and why */
    qc_be_why_t be_why;
    double be_target;
    /* Best effort's arrivals/s at the last period and their change then
     * (qc_be_trend), 0 before any. */
    double be_r_prev, be_dr_prev;
    qc_ctl_sat_t sat;
    qc_ctl_bg_t bg;
    qc_overflow_t ovf;
    /* The work waiting, seconds of the resource (< 0 unknown), and
     * refusing's gate on it (qc_be_mode.h). */
    double wait, wait_last;
    double over_work;           /* qc_note_over's, s of the resource */
    double be_last;             /* best effort's level through the period
                                 * just read (normalized) */
    qc_ctl_ticks_t tick;
    qc_ctl_capest_t cp;
    qc_ctl_dry_t dry;
    apr_uint32_t warnings;      /* QC_WARN_* */
    char *logbuf;               /* one period of QosCtlLog */
    apr_size_t logcap;
    unsigned long periods;
} qc_ctl_t;

#endif /* QC_CTL_TYPES_H */
