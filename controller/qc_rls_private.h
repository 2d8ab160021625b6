/* Licensed under the Apache License, Version 2.0. */

/*
 * What the recursion (qc_rls.c) and its text form (qc_rls_text.c)
 * share: the scaling of the parameters and their physical ranges.
 */

#ifndef QC_RLS_PRIVATE_H
#define QC_RLS_PRIVATE_H

#include "qc_rls.h"

/* Belt and braces: directional forgetting keeps trace(P) below its
 * initial value in practice; this holds it regardless. */
#define QC_RLS_TRACE_MAX 1e7

/* theta_scaled = theta_natural * scale: R in kreq/s, W in MB/s. */
static inline double qc_rls_scale_of(int i)
{
    return i < QC_RLS_TREES ? 1e3 : i == QC_RLS_B ? 1e6
           : i == QC_RLS_C ? 1e3 : 1.0;
}

/* Physical ranges of the estimates (natural units): the recursion
 * projects its estimate into them after every step. */
static inline double qc_rls_lo(int i)
{
    return i == QC_RLS_D ? -QC_RLS_D_MAX : 0.0;
}

static inline double qc_rls_hi(int i)
{
    return i < QC_RLS_TREES ? QC_RLS_A_MAX : i == QC_RLS_B ? QC_RLS_B_MAX
           : i == QC_RLS_C ? QC_RLS_C_MAX : QC_RLS_D_MAX;
}

#endif /* QC_RLS_PRIVATE_H */
