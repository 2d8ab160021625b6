/* Licensed under the Apache License, Version 2.0. */

#include <string.h>

#include "apr_general.h"

#include "fuzz_common.h"

apr_pool_t *fuzz_pool;

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    if (apr_initialize() != APR_SUCCESS
        || apr_pool_create(&fuzz_pool, NULL) != APR_SUCCESS) {
        fprintf(stderr, "fuzz: cannot initialize APR\n");
        abort();
    }
    return 0;
}

static apr_status_t fuzz_free(void *p)
{
    free(p);
    return APR_SUCCESS;
}

void *fuzz_alloc(size_t size)
{
    void *p = malloc(size);

    if (p == NULL && size != 0) {
        fprintf(stderr, "fuzz: out of memory\n");
        abort();
    }
    apr_pool_cleanup_register(fuzz_pool, p, fuzz_free,
                              apr_pool_cleanup_null);
    return p;
}

char *fuzz_strndup(const void *p, size_t n)
{
    char *s = fuzz_alloc(n + 1);

    if (n) {
        memcpy(s, p, n);
    }
    s[n] = '\0';
    return s;
}

char *fuzz_field(fuzz_input_t *in)
{
    const uint8_t *nul = in->size ? memchr(in->data, 0, in->size) : NULL;
    size_t n = nul ? (size_t)(nul - in->data) : in->size;
    char *s = fuzz_strndup(in->data, n);

    if (nul) {
        n++;
    }
    in->data += n;
    in->size -= n;
    return s;
}

int fuzz_more(const fuzz_input_t *in)
{
    return in->size != 0;
}

void fuzz_bytes(fuzz_input_t *in, void *out, size_t n)
{
    size_t k = n < in->size ? n : in->size;

    memset(out, 0, n);
    if (k) {
        memcpy(out, in->data, k);
    }
    in->data += k;
    in->size -= k;
}

uint64_t fuzz_u64(fuzz_input_t *in)
{
    unsigned char b[8];
    uint64_t v = 0;
    int i;

    fuzz_bytes(in, b, sizeof(b));
    for (i = 7; i >= 0; i--) {
        v = v << 8 | b[i];
    }
    return v;
}

uint32_t fuzz_u32(fuzz_input_t *in)
{
    unsigned char b[4];

    fuzz_bytes(in, b, sizeof(b));
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16
           | (uint32_t)b[3] << 24;
}

uint16_t fuzz_u16(fuzz_input_t *in)
{
    unsigned char b[2];

    fuzz_bytes(in, b, sizeof(b));
    return (uint16_t)(b[0] | b[1] << 8);
}

uint8_t fuzz_u8(fuzz_input_t *in)
{
    unsigned char b;

    fuzz_bytes(in, &b, 1);
    return b;
}

double fuzz_double(fuzz_input_t *in)
{
    uint64_t bits = fuzz_u64(in);
    double d;

    memcpy(&d, &bits, sizeof(d));
    return d;
}

void fuzz_fail(const char *file, int line, const char *what,
               const char *detail)
{
    fprintf(stderr, "fuzz: %s:%d: invariant broken: %s%s%s%s\n", file, line,
            what, detail ? " (input \"" : "", detail ? detail : "",
            detail ? "\")" : "");
    abort();
}

void fuzz_check_reason(const char *reason, const char *input)
{
    if (reason != NULL) {
        FUZZ_CHECK(strlen(reason) > 0, input);
    }
}
