/* Licensed under the Apache License, Version 2.0. */

/*
 * The state file's reader (controller/qc_state.c, qc_rls_text.c): what
 * the controller writes reads back; anything else is refused whole,
 * with a reason naming the field, and leaves the output untouched.
 */

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "qc_state.h"
#include "qc_test.h"

/* A converged-looking fit's line, as the controller writes it. */
static int good_line(char *buf, size_t len)
{
    qc_rls_t rls;
    int n;

    qc_rls_init(&rls, 2.5e-4, 3e-8, 7e-5, QC_RLS_LAMBDA);
    rls.n = 100;
    rls.err2 = 1e-4;
    rls.change = 1e-3;
    n = qc_rls_format(&rls, buf, len);
    ck_assert_int_gt(n, 0);
    return n;
}

/* The good line with its first "key=value" for key replaced by
 * key=value (value "" drops the field). */
static void with_field(char *out, size_t len, const char *key,
                       const char *value)
{
    char line[QC_RLS_LINE_MAX], pat[16];
    const char *at, *end;

    good_line(line, sizeof(line));
    snprintf(pat, sizeof(pat), " %s=", key);
    at = strstr(line, pat);
    ck_assert_ptr_nonnull(at);
    end = at + strlen(pat) + strcspn(at + strlen(pat), " ");
    if (*value) {
        snprintf(out, len, "%.*s %s=%s%s", (int)(at - line), line, key, value,
                 end);
    }
    else {
        snprintf(out, len, "%.*s%s", (int)(at - line), line, end);
    }
}

/* text must be refused with a reason containing want, leaving st. */
static void refused(const char *text, size_t n, const char *want)
{
    qc_state_t st, before;
    char why[256];
    const char *r;

    memset(&st, 0x5a, sizeof(st));
    memcpy(&before, &st, sizeof(st));
    r = qc_state_parse(text, n, &st, why, sizeof(why));
    ck_assert_msg(r != NULL, "accepted: %.80s", text);
    ck_assert_msg(strstr(r, want) != NULL, "reason \"%s\" lacks \"%s\"", r,
                  want);
    ck_assert_msg(!memcmp(&st, &before, sizeof(st)), "output changed");
}

static void refused_str(const char *text, const char *want)
{
    refused(text, strlen(text), want);
}

START_TEST(state_round_trip)
{
    char line[QC_RLS_LINE_MAX], text[QC_STATE_MAX], why[256];
    qc_state_t st;
    int n = good_line(line, sizeof(line));

    ck_assert_ptr_null(qc_state_parse(line, (size_t)n, &st, why,
                                      sizeof(why)));
    ck_assert(fabs(qc_rls_a(&st.rls) - 2.5e-4) < 1e-12);
    ck_assert(st.capacity == 0.0 && st.unit[0] == '\0');
    snprintf(text, sizeof(text), "%s\ncapacity 4 cpus\n", line);
    ck_assert_ptr_null(qc_state_parse(text, strlen(text), &st, why,
                                      sizeof(why)));
    ck_assert(st.capacity == 4.0);
    ck_assert_str_eq(st.unit, "cpus");
    snprintf(text, sizeof(text), "%s\r\ncapacity 1e+08 bit/s\r\n", line);
    ck_assert_ptr_null(qc_state_parse(text, strlen(text), &st, why,
                                      sizeof(why)));
    ck_assert_str_eq(st.unit, "bit/s");
    snprintf(text, sizeof(text), "%s\n", line);
    ck_assert_ptr_null(qc_state_parse(text, strlen(text), &st, why,
                                      sizeof(why)));
}
END_TEST

/* Numbers the writer never writes: signs of a damaged or made file. */
START_TEST(state_refuses_bad_numbers)
{
    char text[QC_STATE_MAX];

    with_field(text, sizeof(text), "a0", "-0.001");
    refused_str(text, "a0=-0.001: out of range");
    with_field(text, sizeof(text), "b", "-1e-9");
    refused_str(text, "b=-1e-9");
    with_field(text, sizeof(text), "c", "-5e-05");
    refused_str(text, "c=-5e-05");
    with_field(text, sizeof(text), "a1", "0x1p-12");
    refused_str(text, "a1=0x1p-12");
    with_field(text, sizeof(text), "a0", "inf");
    refused_str(text, "a0=inf: not a number");
    with_field(text, sizeof(text), "a0", "nan");
    refused_str(text, "a0=nan");
    with_field(text, sizeof(text), "a0", "-nan");
    refused_str(text, "a0=-nan");
    with_field(text, sizeof(text), "a0", "1e400");
    refused_str(text, "a0=1e400: number too large");
    with_field(text, sizeof(text), "a0", "2");
    refused_str(text, "a0=2: out of range");
    with_field(text, sizeof(text), "d", "-1.5");
    refused_str(text, "d=-1.5");
    with_field(text, sizeof(text), "a0", " 1e-4");
    refused_str(text, "a0");
    with_field(text, sizeof(text), "a0", "1e-4x");
    refused_str(text, "expected a1= at \"x");
    with_field(text, sizeof(text), "lambda", "0.5");
    refused_str(text, "lambda=0.5");
    with_field(text, sizeof(text), "n", "2.5");
    refused_str(text, "n=2.5: not a whole number");
    with_field(text, sizeof(text), "n", "-1");
    refused_str(text, "n=-1");
    with_field(text, sizeof(text), "n", "1e300");
    refused_str(text, "n=1e300");
    with_field(text, sizeof(text), "e2", "-1");
    refused_str(text, "e2=-1");
    with_field(text, sizeof(text), "e2", "1e300");
    refused_str(text, "e2=1e300");
    with_field(text, sizeof(text), "dc", "0x10");
    refused_str(text, "dc=0x10");
}
END_TEST

START_TEST(state_refuses_bad_structure)
{
    char line[QC_RLS_LINE_MAX], text[QC_STATE_MAX + 8];
    int n = good_line(line, sizeof(line));
    char *p;

    refused_str("", "empty");
    refused_str("garbage", "not a state line");
    refused_str("qcrls1 a=1e-4", "not a state line");
    with_field(text, sizeof(text), "a3", "");
    refused_str(text, "expected a3=");
    with_field(text, sizeof(text), "lambda", "");
    refused_str(text, "expected lambda=");
    /* Trailing junk on either line, a third line, a NUL. */
    snprintf(text, sizeof(text), "%s junk", line);
    refused_str(text, "after p");
    snprintf(text, sizeof(text), "%s,1", line);
    refused_str(text, "after p");
    snprintf(text, sizeof(text), "%s\ncapacity 4 cpus junk\n", line);
    refused_str(text, "line 2: unit");
    snprintf(text, sizeof(text), "%s\ncapacity 4 cpus\nmore\n", line);
    refused_str(text, "line 2: unit");
    snprintf(text, sizeof(text), "%s\ncapacity -4 cpus\n", line);
    refused_str(text, "line 2: capacity \"-4 cpus\": must be above 0");
    snprintf(text, sizeof(text), "%s\ncapacity inf cpus\n", line);
    refused_str(text, "line 2: capacity \"inf cpus\": not a number");
    snprintf(text, sizeof(text), "%s\ncapacity 0x4 cpus\n", line);
    refused_str(text, "line 2: capacity");
    snprintf(text, sizeof(text), "%s\ncapacity 4\n", line);
    refused_str(text, "line 2: expected a unit");
    snprintf(text, sizeof(text), "%s\ncpus 4\n", line);
    refused_str(text, "line 2: expected \"capacity");
    memcpy(text, line, (size_t)n);
    text[10] = '\0';
    refused(text, (size_t)n, "NUL");
    memset(text, 'x', sizeof(text));
    refused(text, QC_STATE_MAX, "longer than");
    /* A covariance cut short, with a hex entry, not positive definite. */
    snprintf(text, sizeof(text), "%s", line);
    *strrchr(text, ',') = '\0';
    refused_str(text, "p: expected");
    snprintf(text, sizeof(text), "%s", line);
    p = strstr(text, "p=") + 2;
    memcpy(p, "0x1", 3);
    refused_str(text, "p[0][0]=0x1");
    snprintf(text, sizeof(text), "%s", line);
    p = strstr(text, "p=") + 2;
    *p = '-';
    refused_str(text, "not positive definite");
}
END_TEST

/* A reason quotes the file, which may hold any bytes: none reach the
 * error log as control bytes. */
START_TEST(state_reason_is_one_clean_line)
{
    char line[QC_RLS_LINE_MAX], text[QC_STATE_MAX], why[256];
    qc_state_t st;
    const char *r, *c;

    good_line(line, sizeof(line));
    snprintf(text, sizeof(text), "%s\ncapacity \x1b[31m\r\n", line);
    r = qc_state_parse(text, strlen(text), &st, why, sizeof(why));
    ck_assert_ptr_nonnull(r);
    for (c = r; *c; c++) {
        ck_assert_msg((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f,
                      "byte %d in \"%s\"", *c, r);
    }
}
END_TEST

/* A capacity is a number of CPUs or a link's rate: one no machine has
 * would rescale every cost the fit resumed (1e308 cpus took a from
 * 0.00025 to its ceiling of 1). */
START_TEST(state_refuses_capacity_out_of_range)
{
    char line[QC_RLS_LINE_MAX], text[QC_STATE_MAX];
    qc_state_t st;
    char why[256];

    good_line(line, sizeof(line));
    snprintf(text, sizeof(text), "%s\ncapacity 1e308 cpus\n", line);
    refused_str(text, "capacity 1e+308 cpus: out of range 0.001 to 8192");
    snprintf(text, sizeof(text), "%s\ncapacity 8193 cpus\n", line);
    refused_str(text, "out of range");
    snprintf(text, sizeof(text), "%s\ncapacity 1e-9 cpus\n", line);
    refused_str(text, "capacity 1e-09 cpus: out of range");
    snprintf(text, sizeof(text), "%s\ncapacity 2e15 bit/s\n", line);
    refused_str(text, "capacity 2e+15 bit/s: out of range 1 to 1e+15");
    snprintf(text, sizeof(text), "%s\ncapacity 0.5 bit/s\n", line);
    refused_str(text, "out of range");
    snprintf(text, sizeof(text), "%s\ncapacity 4 widgets\n", line);
    refused_str(text, "unit \"widgets\": expected cpus or bit/s");
    snprintf(text, sizeof(text), "%s\ncapacity nan cpus\n", line);
    refused_str(text, "line 2: capacity");
    snprintf(text, sizeof(text), "%s\ncapacity -nan cpus\n", line);
    refused_str(text, "line 2: capacity");
    /* The bounds themselves are a machine's. */
    snprintf(text, sizeof(text), "%s\ncapacity 8192 cpus\n", line);
    ck_assert_ptr_null(qc_state_parse(text, strlen(text), &st, why,
                                      sizeof(why)));
    snprintf(text, sizeof(text), "%s\ncapacity 0.001 cpus\n", line);
    ck_assert_ptr_null(qc_state_parse(text, strlen(text), &st, why,
                                      sizeof(why)));
    snprintf(text, sizeof(text), "%s\ncapacity 1e+15 bit/s\n", line);
    ck_assert_ptr_null(qc_state_parse(text, strlen(text), &st, why,
                                      sizeof(why)));
}
END_TEST

/* Files a hostile or careless hand leaves: cut short, grown huge,
 * binary. */
START_TEST(state_refuses_hostile_files)
{
    char line[QC_RLS_LINE_MAX], text[QC_STATE_MAX + 1024];
    int n = good_line(line, sizeof(line)), i;

    /* Cut short at every length: never accepted as a fit that is not
     * the whole line, never read past what was given. */
    for (i = 1; i < n - 1; i++) {
        qc_state_t st, before;
        char why[256];

        memset(&st, 0x3c, sizeof(st));
        memcpy(&before, &st, sizeof(st));
        if (qc_state_parse(line, (size_t)i, &st, why, sizeof(why))
            == NULL) {
            /* only a cut inside p's last number can still read */
            ck_assert_msg(strchr(line + i, ',') == NULL, "cut at %d", i);
        }
        else {
            ck_assert_msg(!memcmp(&st, &before, sizeof(st)), "cut at %d", i);
        }
    }
    /* Huge: a good line with a megabyte of spaces after it. */
    memcpy(text, line, (size_t)n);
    memset(text + n, ' ', sizeof(text) - (size_t)n);
    refused(text, sizeof(text), "longer than");
    /* Binary: high bytes and control bytes, no NUL. */
    for (i = 0; i < 512; i++) {
        text[i] = (char)(0x80 + i % 0x7f);
    }
    refused(text, 512, "line 1");
    refused_str("\x7f" "ELF\x02\x01\x01", "line 1");
    /* A good fit then a negative capacity or a capacity in NaN. */
    snprintf(text, sizeof(text), "%s\ncapacity -0 cpus\n", line);
    refused_str(text, "must be above 0");
}
END_TEST

/* Who may write the file chooses the model: only root or the
 * controller's own user. */
START_TEST(state_owner)
{
    struct stat st;
    char why[160];
    const char *r;

    memset(&st, 0, sizeof(st));
    st.st_mode = S_IFREG | 0644;
    st.st_uid = 0;
    ck_assert_ptr_null(qc_state_owner(&st, 33, why, sizeof(why)));
    st.st_uid = 998;
    ck_assert_ptr_null(qc_state_owner(&st, 998, why, sizeof(why)));
    st.st_mode = S_IFREG | 0600;
    ck_assert_ptr_null(qc_state_owner(&st, 998, why, sizeof(why)));

    st.st_mode = S_IFREG | 0644;
    st.st_uid = 33;                 /* www-data, the controller not */
    r = qc_state_owner(&st, 998, why, sizeof(why));
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r, "owned by uid 33, neither root nor the "
                     "controller's user (uid 998)");
    st.st_uid = 0;
    st.st_mode = S_IFREG | 0664;
    r = qc_state_owner(&st, 998, why, sizeof(why));
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r, "mode 0664: writable by its group");
    st.st_mode = S_IFREG | 0646;
    r = qc_state_owner(&st, 998, why, sizeof(why));
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r, "mode 0646: writable by every user");
    st.st_mode = S_IFIFO | 0600;
    ck_assert_ptr_nonnull(qc_state_owner(&st, 998, why, sizeof(why)));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qc_state");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, state_round_trip);
    tcase_add_test(tc, state_refuses_bad_numbers);
    tcase_add_test(tc, state_refuses_bad_structure);
    tcase_add_test(tc, state_reason_is_one_clean_line);
    tcase_add_test(tc, state_refuses_capacity_out_of_range);
    tcase_add_test(tc, state_refuses_hostile_files);
    tcase_add_test(tc, state_owner);
    suite_add_tcase(s, tc);
    return qc_test_run(s);
}
