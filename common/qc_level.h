/* Licensed under the Apache License, Version 2.0. */

/*
 * The actuator's arithmetic (paper §4.2), free of httpd: the controller
 * output m in [0, M] is split into I = floor(m) and F = m - I; a client
 * whose address hashes to N < F is served from tree I + 1, every other
 * client from tree I.  Level 0 means rejection.
 */

#ifndef QC_LEVEL_H
#define QC_LEVEL_H

#include <stddef.h>

/* The most content trees a virtual host may declare. */
#define QC_MAX_TREES 8

/*
 * Fixed-point scale of m in shared memory: m is published as an unsigned
 * 32-bit integer so that one atomic read gives a consistent value.
 */
#define QC_LEVEL_ONE 65536u

/*
 * Uniform value N in [0, 1) from a client address (any byte string).
 * Stable: the same bytes always give the same N, in every process and
 * across restarts, so a client keeps its tree while m stays put.
 */
double qc_hash_unit(const unsigned char *bytes, size_t len);

/*
 * Tree level (0..M) for a client with hash n under controller output m.
 * m is clamped to [0, M]; M is at most QC_MAX_TREES (larger is clamped).
 * A NaN m gives M: a broken controller fails open, as if absent.
 */
unsigned qc_level_pick(double m, unsigned M, double n);

/* The same with m in QC_LEVEL_ONE fixed point (the shared-memory form). */
unsigned qc_level_pick_fx(unsigned m_fx, unsigned M, double n);

/* m <-> fixed point, rounded to nearest, clamped to [0, M], NaN -> M. */
unsigned qc_level_to_fx(double m, unsigned M);
double qc_level_from_fx(unsigned m_fx);

#endif /* QC_LEVEL_H */
