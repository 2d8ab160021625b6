/* Licensed under the Apache License, Version 2.0. */

/*
 * The request path's atomics on the shared segment, inlined.  APR's
 * apr_atomic_* are calls into libapr: on every request at light load
 * ten of them (heartbeat, level, surge guard, counters) cost more than
 * the work they do.  With GCC or Clang these are the same operations,
 * sequentially consistent as APR's are, compiled in place; elsewhere,
 * APR's.
 */

#ifndef QC_ATOMIC_H
#define QC_ATOMIC_H

#include "apr_atomic.h"

#if defined(__GNUC__)

static APR_INLINE apr_uint32_t qc_load32(volatile apr_uint32_t *p)
{
    return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static APR_INLINE apr_uint64_t qc_load64(volatile apr_uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

/* Adds v; returns the value before. */
static APR_INLINE apr_uint64_t qc_add64(volatile apr_uint64_t *p,
                                        apr_uint64_t v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}

#else

#define qc_load32(p) apr_atomic_read32(p)
#define qc_load64(p) apr_atomic_read64(p)
#define qc_add64(p, v) apr_atomic_add64((p), (v))

#endif

#endif /* QC_ATOMIC_H */
