/* Licensed under the Apache License, Version 2.0. */

/*
 * What the libFuzzer targets share: one APR pool, cleared after every
 * input, and allocations from it that AddressSanitizer still checks
 * byte for byte.  An APR pool hands out pieces of large blocks, so an
 * overrun inside a pool block goes unseen; fuzz_alloc() therefore takes
 * each buffer from malloc, at its exact size, and registers its free()
 * with the pool.  Clearing the pool frees everything an input made.
 *
 * Inputs are split into fields at NUL bytes: a field is a C string, and
 * a parser never sees past the NUL its caller would have put there.
 */

#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "apr_pools.h"

/* The pool of the current input, cleared after it. */
extern apr_pool_t *fuzz_pool;

/* Input not yet split into fields. */
typedef struct {
    const uint8_t *data;
    size_t size;
} fuzz_input_t;

/* size bytes (0 allowed) from malloc, freed when fuzz_pool is cleared. */
void *fuzz_alloc(size_t size);

/* A copy of n bytes at p, NUL-terminated, in a buffer of n + 1 bytes. */
char *fuzz_strndup(const void *p, size_t n);

/*
 * The next field: the bytes up to the next NUL (or the end), copied as
 * a C string of exactly that size; in->data moves past the NUL.  ""
 * when the input is used up.
 */
char *fuzz_field(fuzz_input_t *in);

/* Whether anything is left (for an optional last field). */
int fuzz_more(const fuzz_input_t *in);

/* The next n bytes into out, zeros past the end of the input. */
void fuzz_bytes(fuzz_input_t *in, void *out, size_t n);

/* Fixed-size numbers from the next bytes (little-endian, zero-padded). */
uint64_t fuzz_u64(fuzz_input_t *in);
uint32_t fuzz_u32(fuzz_input_t *in);
uint16_t fuzz_u16(fuzz_input_t *in);
uint8_t fuzz_u8(fuzz_input_t *in);
double fuzz_double(fuzz_input_t *in);

/* Report a broken invariant and abort, so that libFuzzer keeps the input. */
void fuzz_fail(const char *file, int line, const char *what,
               const char *detail);

/* cond must hold for this input; detail (a C string or NULL) is printed. */
#define FUZZ_CHECK(cond, detail)                                        \
    do {                                                                \
        if (!(cond)) {                                                  \
            fuzz_fail(__FILE__, __LINE__, #cond, (detail));             \
        }                                                               \
    } while (0)

/*
 * A parser's reason: NULL on success, otherwise a non-empty string.
 * Reading all of it lets ASan see a reason that is not a string.
 */
void fuzz_check_reason(const char *reason, const char *input);

#endif /* FUZZ_COMMON_H */
