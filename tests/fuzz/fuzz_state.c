/* Licensed under the Apache License, Version 2.0. */

/*
 * libFuzzer target: the state file's reader (controller/qc_state.c and
 * the fit's text form, controller/qc_rls_text.c), on any bytes.
 *
 * Input: one byte for the size of the reason buffer, then the file's
 * bytes, handed over in a buffer of exactly their size as pread()
 * leaves them (no NUL after them).
 *
 * Checked: no byte read past the file (ASan); a refusal returns the
 * reason buffer holding a non-empty, printable, NUL-terminated reason
 * and leaves the output bit-identical; the same bytes give the same
 * verdict.  What is accepted is what the controller can have written:
 * every cost within its physical range, lambda in [0.9, 1], a capacity
 * within what a machine can have in cpus or bit/s, or none with no
 * unit; and written back with
 * qc_rls_format it reads again to the same line (the text form is a
 * fixed point after one round).
 */

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_common.h"
#include "qc_state.h"

static void fuzz_reason(const char *r, const char *why, size_t len)
{
    size_t i;

    FUZZ_CHECK(r == why, NULL);
    FUZZ_CHECK(memchr(why, '\0', len) != NULL, "reason not terminated");
    FUZZ_CHECK(len == 1 || why[0] != '\0', "empty reason");
    for (i = 0; why[i]; i++) {
        FUZZ_CHECK((unsigned char)why[i] >= 0x20
                   && (unsigned char)why[i] < 0x7f, why);
    }
}

static void fuzz_accepted(const qc_state_t *st)
{
    char line[QC_RLS_LINE_MAX], again[QC_RLS_LINE_MAX], why[160];
    qc_state_t back;
    unsigned j;
    int n;

    for (j = 0; j < QC_RLS_TREES; j++) {
        double a = qc_rls_a_tree(&st->rls, j);

        FUZZ_CHECK(a >= 0.0 && a <= QC_RLS_A_MAX, NULL);
    }
    FUZZ_CHECK(qc_rls_b(&st->rls) >= 0.0, NULL);
    FUZZ_CHECK(qc_rls_c(&st->rls) >= 0.0, NULL);
    FUZZ_CHECK(fabs(qc_rls_d(&st->rls)) <= QC_RLS_D_MAX, NULL);
    FUZZ_CHECK(st->rls.lambda >= 0.9 && st->rls.lambda <= 1.0, NULL);
    FUZZ_CHECK(isfinite(qc_rls_trace(&st->rls)), NULL);
    if (!strcmp(st->unit, "cpus")) {
        FUZZ_CHECK(st->capacity >= QC_STATE_CPUS_MIN
                   && st->capacity <= QC_STATE_CPUS_MAX, NULL);
    }
    else if (st->unit[0]) {
        FUZZ_CHECK(!strcmp(st->unit, "bit/s"), st->unit);
        FUZZ_CHECK(st->capacity >= QC_STATE_BITS_MIN
                   && st->capacity <= QC_STATE_BITS_MAX, NULL);
    }
    else {
        FUZZ_CHECK(st->capacity == 0.0, NULL);
    }
    n = qc_rls_format(&st->rls, line, sizeof(line));
    FUZZ_CHECK(n > 0, NULL);
    FUZZ_CHECK(qc_state_parse(line, (size_t)n, &back, why, sizeof(why))
               == NULL, why);
    FUZZ_CHECK(qc_rls_format(&back.rls, again, sizeof(again)) == n, line);
    FUZZ_CHECK(!memcmp(line, again, (size_t)n), line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_t in = { data, size };
    size_t len = 1 + fuzz_u8(&in);
    char *text = fuzz_alloc(in.size ? in.size : 1);
    char *why = fuzz_alloc(len), *why2 = fuzz_alloc(len);
    qc_state_t st, st2, before;
    const char *r, *r2;

    if (in.size) {
        memcpy(text, in.data, in.size);
    }
    memset(&st, 0x5a, sizeof(st));
    memcpy(&before, &st, sizeof(st));
    memcpy(&st2, &st, sizeof(st));
    r = qc_state_parse(text, in.size, &st, why, len);
    r2 = qc_state_parse(text, in.size, &st2, why2, len);
    FUZZ_CHECK((r == NULL) == (r2 == NULL), NULL);
    if (r) {
        fuzz_reason(r, why, len);
        FUZZ_CHECK(!strcmp(why, why2), why);
        FUZZ_CHECK(!memcmp(&st, &before, sizeof(st)), "output changed");
    }
    else {
        FUZZ_CHECK(!memcmp(&st, &st2, sizeof(st)), NULL);
        fuzz_accepted(&st);
    }
    apr_pool_clear(fuzz_pool);
    return 0;
}
