/* Licensed under the Apache License, Version 2.0. */

/*
 * A load the lowest tree cannot carry, on a link whose queue is
 * measured (doc/control.md, "Overflow on a link").  The queue is what
 * httpd's connections have written and their clients not yet
 * acknowledged (qc_backlog_read_sendq) and the connections not yet
 * accepted, each at a lowest-tree reply.  Saturated at the lowest tree,
 * a queue left by an overshoot drains; one that does not is load the
 * lowest tree cannot carry, which no fitted price then needs to say.
 * And the bytes the link sends per reply beyond the reply's own.
 *
 * Pure: no I/O, state owned by the caller.
 */

#ifndef QC_OVERFLOW_H
#define QC_OVERFLOW_H

/* Saturated at the lowest tree for this long while the queue fell by
 * less than this share of the link: overflow (a tree that carries the
 * load at a 0.9 bound drains it at 10%). */
#define QC_OVERFLOW_SECONDS 3.0
#define QC_OVERFLOW_DRAIN 0.05
/* Weight of a period in the overhead per reply (a moving average), and
 * the most it may be, in bytes: a quiet period with someone else's
 * traffic must not make every reply look ten times its size. */
#define QC_OVERFLOW_OVERHEAD_WEIGHT 0.2
#define QC_OVERFLOW_OVERHEAD_MAX 65536.0

typedef struct {
    double seconds;     /* saturated at the lowest tree, queue known */
    double queue0;      /* the queue when they began, link seconds */
    int on;             /* overflow */
    double overhead;    /* link bytes per reply beyond the reply's own */
} qc_overflow_t;

void qc_overflow_init(qc_overflow_t *o);

/*
 * A period of `period` seconds: whether the queue was known, best
 * effort was at the lowest tree all through it (at_lowest) and the
 * link read saturated, and the queue at its end (link seconds).
 * Overflow begins once the link has been saturated there for
 * QC_OVERFLOW_SECONDS without the queue draining (a period in which it
 * has drained at the allowed rate so far starts the count again: a
 * step's queue drains even under a load beyond the lowest tree, for
 * httpd then takes in less than is offered), and holds until best
 * effort is above the lowest tree again or the queue is unknown: the
 * refusals it licenses are what drain the queue.
 */
void qc_overflow_observe(qc_overflow_t *o, int known, int at_lowest,
                         int saturated, double queue, double period);

/*
 * What the period's replies (and 503s: `replies` of them a second,
 * `logged` bytes a second as httpd logs them) put on a link of
 * `bps` bytes/s: `load` of it, the reading plus the queue's growth
 * over the period (less than what was logged, as noise can make it,
 * counts as no overhead).  Learns the bytes the link sends per reply
 * beyond the reply's own (headers, handshakes, what else shares it).
 */
void qc_overflow_learn(qc_overflow_t *o, double load, double bps,
                       double logged, double replies);

#endif /* QC_OVERFLOW_H */
