/* Licensed under the Apache License, Version 2.0. */

#include <math.h>

#include "qc_ceiling.h"
#include "qc_pi.h"

void qc_ceiling_init(qc_ceiling_t *c)
{
    c->m = -1.0;
    c->u = 0.0;
    c->r = 0.0;
    c->age = 0;
}

void qc_ceiling_observe(qc_ceiling_t *c, double m, double u, double r)
{
    int capped = qc_pi_capped(u);

    if (!(u >= 0.0) || !isfinite(m)) {
        return;
    }
    if (capped && (c->m < 0.0 || m <= c->m)) {
        c->m = m;
        c->u = u;
        c->r = r;
        c->age = 0;
        return;
    }
    if (c->m < 0.0) {
        return;
    }
    if ((!capped && m >= c->m) || ++c->age > QC_CEILING_PERIODS
        || !(r <= c->r * QC_CEILING_RATE && r * QC_CEILING_RATE >= c->r)) {
        qc_ceiling_init(c);
    }
}

double qc_ceiling_cap(const qc_ceiling_t *c, double m_now, double u_now,
                      double target)
{
    double m;

    if (c->m < 0.0 || !(m_now < c->m) || !(u_now >= 0.0)
        || !(u_now < target) || !(c->u > u_now)) {
        return HUGE_VAL;
    }
    m = m_now + (c->m - m_now) * (target - u_now) / (c->u - u_now);
    return m < c->m ? m : c->m;
}
