/* Licensed under the Apache License, Version 2.0. */

#include <math.h>
#include <string.h>

#include "qc_relief.h"

void qc_relief_init(qc_relief_t *rl)
{
    memset(rl, 0, sizeof(*rl));
    rl->state = QC_RELIEF_FREE;
    rl->r0 = -1.0;
    rl->next = QC_RELIEF_FIRST;
    rl->why = "";
}

double qc_relief_allowed(const qc_relief_t *rl)
{
    switch (rl->state) {
    case QC_RELIEF_OPEN:
        return 1.0;
    case QC_RELIEF_FREE:
    case QC_RELIEF_PROBE:
        return QC_RELIEF_PROBE_SHARE;
    default:
        return 0.0;
    }
}

const char *qc_relief_name(qc_relief_state_t state)
{
    static const char *const names[] = {
        "free", "probe", "test", "open", "barred"
    };

    return (unsigned)state < sizeof(names) / sizeof(names[0])
           ? names[state] : "?";
}

static void qc_relief_to(qc_relief_t *rl, qc_relief_state_t state,
                         const qc_relief_in_t *in)
{
    rl->state = state;
    rl->relief = rl->refill = 0;
    rl->seconds = 0.0;
    rl->q0 = in->queue;
    rl->u0 = in->u;
}

static void qc_relief_bar(qc_relief_t *rl, const char *why,
                          const qc_relief_in_t *in)
{
    qc_relief_to(rl, QC_RELIEF_BARRED, in);
    rl->hold = rl->next;
    rl->next = fmin(2.0 * rl->next, QC_RELIEF_MOST);
    rl->why = why;
    rl->bars++;
}

/* The reading below halfway from the bound to full, or down by
 * QC_RELIEF_FALL since the state began. */
static int qc_read_relieved(const qc_relief_t *rl,
                            const qc_relief_in_t *in)
{
    return in->u >= 0.0 && (in->u < in->bound + 0.5 * (1.0 - in->bound)
                            || in->u <= rl->u0 - QC_RELIEF_FALL);
}

/* That, or the waiting work down by a quarter since the state began. */
static int qc_relieved(const qc_relief_t *rl, const qc_relief_in_t *in)
{
    return qc_read_relieved(rl, in)
           || (in->queue >= 0.0 && rl->q0 > 0.0
               && in->queue < 0.75 * rl->q0);
}

/* Half of `rej` refusals/s stands out of the arrivals' own moves from
 * period to period (a full accept queue passes them on in bursts). */
static int qc_relief_above_noise(const qc_relief_t *rl, double rej)
{
    return 0.5 * rej >= QC_RELIEF_NOISE * rl->noise;
}

/* The arrivals up by half of what is refused since the last period
 * that refused nothing, or the waiting work growing: a test tells
 * which (the first stops when refusing does, the second does not). */
static int qc_refilled(const qc_relief_t *rl, const qc_relief_in_t *in)
{
    return (rl->r0 >= 0.0 && in->r - rl->r0 >= 0.5 * in->r_rej
            && qc_relief_above_noise(rl, in->r_rej))
           || (in->queue >= 0.0
               && in->queue > fmax(1.25 * rl->q0, QC_RELIEF_QUEUE));
}

static void qc_relief_test(qc_relief_t *rl, const qc_relief_in_t *in)
{
    rl->r_sum = 0.0;
    qc_relief_to(rl, QC_RELIEF_TEST, in);
}

/* `n` periods in a row are a run that counts: QC_RELIEF_PERIODS of
 * them, and QC_RELIEF_WINDOW seconds. */
static int qc_relief_run(unsigned n, double period)
{
    return n >= QC_RELIEF_PERIODS && n * period >= QC_RELIEF_WINDOW - 1e-9;
}

/* The arrivals and refusals of the periods refusing, averaged over
 * about QC_RELIEF_WINDOW seconds from the first. */
static void qc_relief_mean(qc_relief_t *rl, const qc_relief_in_t *in)
{
    double w = 1.0 - exp(-in->period / QC_RELIEF_WINDOW);

    if (rl->state == QC_RELIEF_FREE) {
        rl->r_mean = in->r;
        rl->rej_mean = in->r_rej;
        return;
    }
    rl->r_mean += w * (in->r - rl->r_mean);
    rl->rej_mean += w * (in->r_rej - rl->rej_mean);
}

static void qc_relief_probe(qc_relief_t *rl, const qc_relief_in_t *in)
{
    rl->relief = qc_relieved(rl, in) ? rl->relief + 1 : 0;
    rl->refill = qc_refilled(rl, in) ? rl->refill + 1 : 0;
    rl->seconds += in->period;
    if (rl->refill >= QC_RELIEF_PERIODS) {
        qc_relief_test(rl, in);
    }
    else if (rl->relief >= QC_RELIEF_PERIODS) {
        qc_relief_to(rl, QC_RELIEF_OPEN, in);
    }
    else if (rl->seconds >= QC_RELIEF_STILL_SECONDS - 1e-9
             && !rl->relief) {
        if (rl->refill || in->queue >= QC_RELIEF_BACKLOGGED) {
            /* Refill seen once, or queues already full that show
             * neither: what stopping does tells. */
            qc_relief_test(rl, in);
        }
        else {
            qc_relief_bar(rl, "no-relief", in);
        }
    }
}

/* Since the last period, the arrivals up by half of the rise of
 * refusals or more, less the connections the accept queues let in
 * (which an open load past the lowest tree sends on once refused
 * quickly, and then no more), with the reading still full. */
static int qc_comes_back(const qc_relief_t *rl, const qc_relief_in_t *in)
{
    double more = in->r_rej - rl->rej1;
    double let_in = in->waiting >= 0.0 && rl->waiting1 > in->waiting
                    ? (rl->waiting1 - in->waiting) / in->period : 0.0;

    return !qc_read_relieved(rl, in) && more > 0.0
           && more >= QC_RELIEF_SHARE * in->r
           && in->r - rl->r1 - let_in >= 0.5 * more;
}

static void qc_relief_open(qc_relief_t *rl, const qc_relief_in_t *in)
{
    rl->refill = qc_comes_back(rl, in) ? rl->refill + 1 : 0;
    if (qc_relief_run(rl->refill, in->period)) {
        qc_relief_test(rl, in);
        return;
    }
    if (in->r_rej < 0.5 * in->r || qc_relieved(rl, in)) {
        rl->seconds = 0.0;
        rl->q0 = in->queue;
        rl->u0 = in->u;
        return;
    }
    /* A queue of q seconds takes about that long to show it drains. */
    rl->seconds += in->period;
    if (rl->seconds >= fmax(QC_RELIEF_STILL_SECONDS, 2.0 * rl->q0)
                       - 1e-9) {
        qc_relief_bar(rl, "no-relief", in);
    }
}

double qc_relief_observe(qc_relief_t *rl, const qc_relief_in_t *in)
{
    int refusing = in->r_rej >= QC_RELIEF_SHARE * in->r
                   && in->r_rej * in->period >= QC_RELIEF_LEAST;

    if (in->u >= 0.0 && in->u < in->bound) {
        rl->calm += in->period;
        if (rl->calm >= QC_RELIEF_CALM) {
            rl->next = QC_RELIEF_FIRST;
        }
    }
    else if (in->u >= 0.0) {
        rl->calm = 0.0;
    }
    switch (rl->state) {
    case QC_RELIEF_TEST:
        /* The period just read refused nothing. */
        rl->r_sum += in->r * in->period;
        rl->seconds += in->period;
        if (rl->seconds < QC_RELIEF_WINDOW - 1e-9) {
            break;
        }
        if (rl->r_sum / rl->seconds <= rl->r_mean - 0.5 * rl->rej_mean
            && qc_relief_above_noise(rl, rl->rej_mean)) {
            qc_relief_bar(rl, "refill", in);
        }
        else {
            qc_relief_to(rl, QC_RELIEF_OPEN, in);
        }
        break;
    case QC_RELIEF_BARRED:
        rl->hold -= in->period;
        if (rl->hold <= 1e-9) {
            qc_relief_to(rl, QC_RELIEF_FREE, in);
        }
        break;
    default:
        rl->idle = refusing ? 0 : rl->idle + 1;
        if (!refusing) {
            /* A few refusals a period come in bursts: a probe or an
             * open state ends after QC_RELIEF_PERIODS refusing none,
             * and QC_RELIEF_WINDOW seconds. */
            if (rl->state == QC_RELIEF_FREE
                || qc_relief_run(rl->idle, in->period)) {
                qc_relief_to(rl, QC_RELIEF_FREE, in);
            }
            else if (rl->state == QC_RELIEF_PROBE) {
                rl->seconds += in->period;
            }
        }
        else {
            qc_relief_mean(rl, in);
            if (rl->state == QC_RELIEF_OPEN) {
                qc_relief_open(rl, in);
            }
            else {
                if (rl->state == QC_RELIEF_FREE) {
                    qc_relief_to(rl, QC_RELIEF_PROBE, in);
                }
                qc_relief_probe(rl, in);
            }
        }
    }
    if (!refusing) {
        if (rl->r0 >= 0.0) {
            double shift = QC_RELIEF_SHIFT * rl->noise
                           + QC_RELIEF_SHIFT_SHARE * fmax(in->r, rl->r0);

            rl->noise += QC_RELIEF_NOISE_WEIGHT
                         * (fmin(fabs(in->r - rl->r0), shift) - rl->noise);
        }
        rl->r0 = in->r;
    }
    rl->r1 = in->r;
    rl->rej1 = in->r_rej;
    rl->waiting1 = in->waiting;
    return qc_relief_allowed(rl);
}
