/* Licensed under the Apache License, Version 2.0. */

/*
 * Does refusing relieve the resource?  A 503 is the last resort because
 * it lowers the load; that is measured here, not assumed, in five
 * states (doc/control.md, "Refusing"):
 *  FREE    nothing refused.  The loops may refuse QC_RELIEF_PROBE_SHARE of
 *          the arrivals at most.
 *  PROBE   refusing began, at most that share.  Relief is the reading
 *          below halfway from the bound to full or down by
 *          QC_RELIEF_FALL, or the waiting work down by a quarter, two
 *          periods in a row: OPEN.  The
 *          arrivals up by half or more of what was refused (clients
 *          that send their next request when a reply comes, or retry
 *          a 503, take each refusal's place), or the waiting work
 *          growing by a quarter (more than the lowest tree carries,
 *          or the same refill), two periods in a row: TEST.  Neither
 *          after QC_RELIEF_STILL_SECONDS: BARRED, or TEST where
 *          QC_RELIEF_BACKLOGGED seconds of work wait (queues already
 *          full grow no more: a load past the lowest tree).
 *  TEST    QC_RELIEF_WINDOW seconds refusing nothing.  Their mean
 *          arrivals fall by half of what was refused (the refusing
 *          periods' mean): they were the refused coming back,
 *          BARRED; else the load is open (clients that go away when
 *          refused): OPEN.
 *  OPEN    refusing relieves, or the load is open: the loops refuse
 *          what they need.  The reading not below halfway and the
 *          arrivals, less what left the accept queues, up by half or
 *          more of the rise of refusals (of 2% of the arrivals or
 *          more), two periods in a row and QC_RELIEF_WINDOW seconds
 *          (the refused coming back; an
 *          open load past the lowest tree stays put as refusing grows):
 *          TEST.  Half
 *          or more refused with no relief for QC_RELIEF_STILL_SECONDS,
 *          or twice the seconds of work then waiting if more (the load
 *          is not the requests'): BARRED.
 *  BARRED  no refusing for QC_RELIEF_FIRST seconds, twice as long each
 *          time in a row up to QC_RELIEF_MOST; QC_RELIEF_CALM seconds
 *          below the bound forget them.  Then FREE.
 * PROBE and OPEN go back to FREE after QC_RELIEF_PERIODS periods in a
 * row, and QC_RELIEF_WINDOW seconds, refusing nothing.
 *
 * Pure: no I/O, state owned by the caller.
 */

#ifndef QC_RELIEF_H
#define QC_RELIEF_H

#define QC_RELIEF_FIRST 15.0
#define QC_RELIEF_MOST 300.0
#define QC_RELIEF_CALM 60.0
#define QC_RELIEF_STILL_SECONDS 2.0
#define QC_RELIEF_PROBE_SHARE 0.05
/* Seconds of waiting work below which a growing queue is noise. */
#define QC_RELIEF_QUEUE 0.05
#define QC_RELIEF_BACKLOGGED 0.5
/* Refill and the test count only where half of what is refused is this
 * many times the arrivals' mean move between periods refusing nothing
 * (a moving average of this weight; a move past QC_RELIEF_SHIFT times
 * that mean plus QC_RELIEF_SHIFT_SHARE of the arrivals is a change of
 * load, not noise, and counts as that much). */
#define QC_RELIEF_NOISE 2.0
#define QC_RELIEF_NOISE_WEIGHT 0.2
#define QC_RELIEF_SHIFT 4.0
#define QC_RELIEF_SHIFT_SHARE 0.05
/* A fall of the reading past a saturated sensor's noise. */
#define QC_RELIEF_FALL 0.04
/* Periods in a row that show relief, or refill; the least share of
 * the arrivals refused, and the fewest refusals in a period, for a
 * period to count as refusing. */
#define QC_RELIEF_PERIODS 2
#define QC_RELIEF_SHARE 0.02
#define QC_RELIEF_LEAST 1.0
/* Seconds a test lasts, and over which the arrivals and refusals it
 * is held against are averaged: a link's queue, filling as refusing
 * stops, holds back the handshakes of new clients for about that. */
#define QC_RELIEF_WINDOW 1.0

typedef enum {
    QC_RELIEF_FREE,
    QC_RELIEF_PROBE,
    QC_RELIEF_TEST,
    QC_RELIEF_OPEN,
    QC_RELIEF_BARRED
} qc_relief_state_t;

typedef struct {
    qc_relief_state_t state;
    unsigned relief;    /* periods in a row with relief */
    unsigned refill;    /* periods in a row with refill */
    unsigned idle;      /* periods in a row refusing none */
    double seconds;     /* in PROBE; in OPEN, refusing half, no relief */
    double q0, u0;      /* the waiting work and reading then */
    double r0;          /* arrivals/s of the last period refusing none */
    double noise;       /* their mean move between such periods */
    double r_mean, rej_mean;    /* their mean refusing, /s (held in
                                 * TEST, which refuses none) */
    double r_sum;       /* arrivals in TEST so far */
    double r1, rej1, waiting1;  /* the last period's (OPEN's rises) */
    double hold;        /* seconds left of the bar */
    double next;        /* the next bar's length */
    double calm;        /* seconds below the bound in a row */
    unsigned long bars; /* bars since start */
    const char *why;    /* the last bar's reason, "" before any */
} qc_relief_t;

/* One period as the sensing stage saw it. */
typedef struct {
    double u;           /* the reading, < 0 unknown */
    double r;           /* arrivals/s, refused included */
    double r_rej;       /* refused/s */
    double queue;       /* seconds of work waiting, < 0 unknown */
    double bound;
    double period;      /* seconds */
    double waiting;     /* connections not yet accepted, < 0 unknown */
} qc_relief_in_t;

void qc_relief_init(qc_relief_t *rl);

/* One period; returns the most the loops may refuse in the next, as a
 * share of the arrivals (0: none). */
double qc_relief_observe(qc_relief_t *rl, const qc_relief_in_t *in);

/* The same, between periods. */
double qc_relief_allowed(const qc_relief_t *rl);

/* The state's name, for the status page and the log. */
const char *qc_relief_name(qc_relief_state_t state);

#endif /* QC_RELIEF_H */
