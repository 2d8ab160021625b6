/* Licensed under the Apache License, Version 2.0. */

#include <check.h>
#include <stdio.h>

#include "modes_rec.h"

void rec_period(rec_t *rc, const rig_t *g, double u)
{
    const qc_class_shm_t *cs = &g->q->slots[0].cls[QC_CLASS_BASIC];
    apr_uint64_t all = cs->level_arrived[0] + cs->level_arrived[1]
                       + cs->level_arrived[2];
    int p = rc->n++;

    ck_assert_int_lt(p, MAXP);
    rc->mode[p] = (qc_be_mode_t)g->q->be_mode;
    ck_assert_int_eq(rc->mode[p], g->ctl.be_mode);
    rc->why[p] = g->ctl.be_why;
    rc->u[p] = u;
    rc->m[p] = rig_level(g);
    rc->saturated[p] = g->ctl.reading.saturated;
    rc->draining[p] = g->ctl.sat.draining;
    rc->wait[p] = g->ctl.wait;
    rc->valved[p] = g->ctl.tick.valved_last;    /* qc_ctl_step moved it */
    rc->refused[p] = all > rc->arrived
                     ? (double)(cs->level_arrived[0] - rc->rejected)
                       / (double)(all - rc->arrived) : 0.0;
    rc->arrived = all;
    rc->rejected = cs->level_arrived[0];
}

void rec_print(const char *what, const rec_t *rc)
{
    int p;

    printf("%s:", what);
    for (p = 0; p < rc->n; p++) {
        printf(" %s/%u(%.2f,%.2f)", qc_be_mode_name(rc->mode[p]),
               (unsigned)rc->why[p], rc->u[p], rc->m[p]);
    }
    printf("\n");
}

static int rec_is(const rec_t *rc, int p, qc_be_mode_t mode, unsigned why)
{
    return rc->mode[p] == mode && (why == REC_ANY || rc->why[p] == why);
}

int rec_find(const rec_t *rc, int from, qc_be_mode_t prev_mode,
             unsigned prev_why, qc_be_mode_t to_mode, unsigned to_why)
{
    int p;

    for (p = from > 1 ? from : 1; p < rc->n; p++) {
        if (rec_is(rc, p - 1, prev_mode, prev_why)
            && rec_is(rc, p, to_mode, to_why)) {
            return p;
        }
    }
    return -1;
}

void rec_saturated(const rec_t *rc, int from, int to, int want)
{
    int p;

    for (p = from; p <= to; p++) {
        ck_assert_int_eq(rc->saturated[p], want);
    }
}

void rec_stays(const rec_t *rc, int from, qc_be_mode_t mode)
{
    int p;

    for (p = from; p < rc->n; p++) {
        ck_assert_int_eq(rc->mode[p], mode);
    }
}

int rec_expect(const rec_t *rc, int after, qc_be_mode_t prev_mode,
               unsigned prev_why, qc_be_mode_t to_mode, unsigned to_why)
{
    int p = rec_find(rc, 1, prev_mode, prev_why, to_mode, to_why);
    char what[96];

    /* the run, before any assertion on it can fail */
    snprintf(what, sizeof(what), "%s/%u to %s/%u, period %d",
             qc_be_mode_name(prev_mode), prev_why, qc_be_mode_name(to_mode),
             to_why, p);
    rec_print(what, rc);
    ck_assert_msg(p > after, "no %s/%u to %s/%u after period %d",
                  qc_be_mode_name(prev_mode), prev_why,
                  qc_be_mode_name(to_mode), to_why, after);
    return p;
}
