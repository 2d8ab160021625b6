/* Licensed under the Apache License, Version 2.0. */

/*
 * Best effort's modes (qc_ctl_besteffort.c; doc/control.md, "Best
 * effort's modes"), as the controller publishes them and the status
 * page and QosCtlLog name them.
 */

#ifndef QC_BE_MODE_H
#define QC_BE_MODE_H

typedef enum {
    QC_BE_TRACK,        /* the loop holds the bound, less any backlog */
    QC_BE_LOWEST,       /* the lowest tree until unsaturated */
    QC_BE_BACKGROUND,   /* load not the server's: the top, or back */
    QC_BE_NMODES
} qc_be_mode_t;

/* What chose the mode (qc_be_choose, qc_ctl_valve). */
typedef enum {
    QC_BE_WHY_START,        /* no period yet */
    QC_BE_WHY_MODEL,        /* track: the model and the PI */
    QC_BE_WHY_BACKLOG,      /* track: its target lowered by a backlog */
    QC_BE_WHY_UNSATURATED,  /* track: restarted at the model's level */
    QC_BE_WHY_SATURATED,    /* lowest, at the period */
    QC_BE_WHY_VALVE,        /* lowest, within the period */
    QC_BE_WHY_TEST,         /* lowest, to read a fitted background */
    QC_BE_WHY_HELD,         /* lowest: still saturated */
    QC_BE_WHY_ALONE,        /* background: it saturates alone */
    QC_BE_WHY_REAL,         /* background: the test found it real */
    QC_BE_NWHYS
} qc_be_why_t;

/*
 * Refusing's gate: how long requests wait (the work queued ahead of
 * them, in seconds of the resource) against a period.  A queue that
 * outlasts a period is beyond the tree loop's reach, which acts once a
 * period and only on what arrives after it acts: only admitting less
 * shortens it.  A closed loop's queue is bounded by its clients and
 * stays short; an open overload's grows until refusing bounds it.
 */
typedef enum {
    QC_REFUSE_SHORT,    /* requests wait less than a period: no 503s */
    QC_REFUSE_LONG,     /* they wait longer: the loops may refuse */
    QC_REFUSE_UNKNOWN,  /* no wait measured: no 503s either */
    QC_REFUSE_NGATES
} qc_refuse_gate_t;

/* "short", "long", "unknown"; "?" out of range. */
const char *qc_refuse_gate_name(unsigned gate);

/* "track", "lowest", "background"; "?" out of range. */
const char *qc_be_mode_name(unsigned mode);
/* A line saying why; "?" out of range. */
const char *qc_be_why_text(unsigned why);

#endif /* QC_BE_MODE_H */
