/* Licensed under the Apache License, Version 2.0. */

/*
 * Best effort's modes (qc_ctl_besteffort.c; doc/control.md, "Best
 * effort's modes"), as the controller publishes them and the status
 * page and QosCtlLog name them.
 */

#ifndef QC_BE_MODE_H
#define QC_BE_MODE_H

typedef enum {
    QC_BE_TRACK,        /* the loop holds the bound */
    QC_BE_DRAIN,        /* the same, its target lowered by a backlog */
    QC_BE_OVERFLOW,     /* measured share past the lowest tree */
    QC_BE_LOWEST,       /* the lowest tree until unsaturated */
    QC_BE_RESTART,      /* back to the model's level at once */
    QC_BE_BACKGROUND,   /* load not the server's: the top, or back */
    QC_BE_BG_TEST,      /* a period at the lowest tree to read it */
    QC_BE_NMODES
} qc_be_mode_t;

/* What chose the mode (qc_be_choose, qc_ctl_valve). */
typedef enum {
    QC_BE_WHY_START,        /* no period yet */
    QC_BE_WHY_MODEL,        /* track: the model and the PI */
    QC_BE_WHY_BACKLOG,      /* drain */
    QC_BE_WHY_QUEUE,        /* overflow */
    QC_BE_WHY_SATURATED,    /* lowest, at the period */
    QC_BE_WHY_VALVE,        /* lowest, within the period */
    QC_BE_WHY_UNSATURATED,  /* restart */
    QC_BE_WHY_ALONE,        /* background: it saturates alone */
    QC_BE_WHY_REAL,         /* background: the test found it real */
    QC_BE_WHY_TEST,         /* background-test */
    QC_BE_NWHYS
} qc_be_why_t;

/* "track", "drain", ...; "?" out of range. */
const char *qc_be_mode_name(unsigned mode);
/* A line saying why; "?" out of range. */
const char *qc_be_why_text(unsigned why);

#endif /* QC_BE_MODE_H */
