/* Licensed under the Apache License, Version 2.0. */

/*
 * The fit as one line of text, for the state file: written by the
 * controller, read back at its next start.  The reader takes only what
 * the writer can write (plain decimal numbers, every field in its
 * order, each value within the range the recursion keeps it in), since
 * a line that is not is a damaged or a hand-made file, and a wrong
 * model would steer the server until the data corrected it.
 */

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "qc_parse.h"
#include "qc_rls_private.h"

#define NP QC_RLS_NP
#define NT QC_RLS_TREES
#define IB QC_RLS_B
#define IC QC_RLS_C
#define ID QC_RLS_D

/* Sanity bounds of the running averages: the squared residual of a
 * utilization, the mean relative change of a converged fit. */
#define QC_RLS_ERR2_MAX 1e4
#define QC_RLS_CHANGE_MAX 1e4
/* Updates counted: beyond a million years of one-second periods. */
#define QC_RLS_N_MAX 1e15
/* Rounding of %.10g against a bound the value sat on. */
#define QC_RLS_ROUND 1e-9

/* Names of the parameters in the state line. */
static void param_name(int i, char *buf, size_t len)
{
    if (i < NT) {
        snprintf(buf, len, "a%d", i);
    }
    else {
        snprintf(buf, len, "%s", i == IB ? "b" : i == IC ? "c" : "d");
    }
}

/*
 * "qcrls2 a0=.. a1=.. .. b=.. c=.. d=.. lambda=.. n=.. e2=.. dc=.. p=.."
 * the costs in natural units so that an administrator can read them
 * (the internal, unclamped values, so that a restart resumes exactly);
 * P is the upper triangle in the scaled units, row by row.
 */
int qc_rls_format(const qc_rls_t *rls, char *buf, size_t len)
{
    size_t off = 0;
    char name[8];
    int i, j, k;

    k = snprintf(buf, len, "qcrls2");
    for (i = 0; i < NP && k >= 0 && (size_t)k < len - off; i++) {
        off += (size_t)k;
        param_name(i, name, sizeof(name));
        k = snprintf(buf + off, len - off, " %s=%.10g", name,
                     rls->theta[i] / qc_rls_scale_of(i));
    }
    if (k < 0 || (size_t)k >= len - off) {
        return -1;
    }
    off += (size_t)k;
    k = snprintf(buf + off, len - off, " lambda=%.10g n=%lu e2=%.10g"
                 " dc=%.10g p=", rls->lambda, rls->n, rls->err2,
                 rls->change);
    if (k < 0 || (size_t)k >= len - off) {
        return -1;
    }
    off += (size_t)k;
    for (i = 0; i < NP; i++) {
        for (j = i; j < NP; j++) {
            k = snprintf(buf + off, len - off, "%s%.10g",
                         (i == 0 && j == 0) ? "" : ",", rls->p[i][j]);
            if (k < 0 || (size_t)k >= len - off) {
                return -1;
            }
            off += (size_t)k;
        }
    }
    return (int)off;
}

/* P must be symmetric positive definite: Cholesky must succeed. */
static int positive_definite(double p[NP][NP])
{
    double l[NP][NP];
    int i, j, k;

    for (i = 0; i < NP; i++) {
        for (j = 0; j <= i; j++) {
            double sum = p[i][j];

            for (k = 0; k < j; k++) {
                sum -= l[i][k] * l[j][k];
            }
            if (i == j) {
                if (!(sum > 0.0)) {
                    return 0;
                }
                l[i][i] = sqrt(sum);
            }
            else {
                l[i][j] = sum / l[j][j];
            }
        }
    }
    return 1;
}

/* The reason, formatted into why (which may be NULL); returns -1. */
static int qc_rls_why(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    if (why && len) {
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* " key=<number>" (blanks before it optional) in [lo, hi]. */
static int qc_rls_field(const char **sp, const char *key, double lo,
                        double hi, double *v, char *why, size_t len)
{
    const char *s = *sp, *err, *rest;
    size_t kl = strlen(key);
    int n;

    while (*s == ' ') {
        s++;
    }
    if (strncmp(s, key, kl) != 0 || s[kl] != '=') {
        return qc_rls_why(why, len, "expected %s= at \"%.12s\"", key, s);
    }
    s += kl + 1;
    if ((err = qc_parse_number(s, v, &rest)) != NULL) {
        n = (int)strcspn(s, " ,");
        return qc_rls_why(why, len, "%s=%.*s: %s", key, n > 24 ? 24 : n, s,
                          err);
    }
    if (!(*v >= lo && *v <= hi)) {
        return qc_rls_why(why, len, "%s=%.*s: out of range %g to %g", key,
                          (int)(rest - s) > 24 ? 24 : (int)(rest - s), s,
                          lo, hi);
    }
    *sp = rest;
    return 0;
}

/* " p=<upper triangle>": the one field that is not key=number but a
 * list, written row by row (qc_rls_format) since P is symmetric; both
 * halves are filled from it. */
static int qc_rls_read_p(const char **sp, double p[NP][NP], char *why,
                         size_t len)
{
    const char *s = *sp, *rest, *err;
    double v;
    int i, j;

    while (*s == ' ') {
        s++;
    }
    if (strncmp(s, "p=", 2) != 0) {
        return qc_rls_why(why, len, "expected p= at \"%.12s\"", s);
    }
    s += 2;
    for (i = 0; i < NP; i++) {
        for (j = i; j < NP; j++) {
            if (!(i == 0 && j == 0) && *s++ != ',') {
                return qc_rls_why(why, len, "p: expected %d entries, "
                                  "comma-separated", NP * (NP + 1) / 2);
            }
            if ((err = qc_parse_number(s, &v, &rest)) != NULL) {
                return qc_rls_why(why, len, "p[%d][%d]=%.*s: %s", i, j,
                                  (int)strcspn(s, " ,") > 24 ? 24
                                  : (int)strcspn(s, " ,"), s, err);
            }
            s = rest;
            p[i][j] = v;
            p[j][i] = v;
        }
    }
    *sp = s;
    return 0;
}

int qc_rls_read(qc_rls_t *rls, const char *line, char *why, size_t len)
{
    qc_rls_t st;
    char name[8];
    const char *s = line;
    double v;
    int i;

    if (line == NULL || strncmp(s, "qcrls2 ", 7) != 0) {
        return qc_rls_why(why, len, "not a state line (it starts with "
                          "\"qcrls2 \")");
    }
    s += 6;
    memset(&st, 0, sizeof(st));
    for (i = 0; i < NP; i++) {
        double lo = qc_rls_lo(i), hi = qc_rls_hi(i);

        param_name(i, name, sizeof(name));
        if (qc_rls_field(&s, name, lo - fabs(lo) * QC_RLS_ROUND,
                         hi * (1.0 + QC_RLS_ROUND), &v, why, len) != 0) {
            return -1;
        }
        st.theta[i] = v * qc_rls_scale_of(i);
    }
    if (qc_rls_field(&s, "lambda", 0.9, 1.0, &st.lambda, why, len) != 0
        || qc_rls_field(&s, "n", 0.0, QC_RLS_N_MAX, &v, why, len) != 0) {
        return -1;
    }
    if (v != floor(v)) {
        return qc_rls_why(why, len, "n=%g: not a whole number", v);
    }
    st.n = (unsigned long)v;
    if (qc_rls_field(&s, "e2", 0.0, QC_RLS_ERR2_MAX, &st.err2, why, len)
        || qc_rls_field(&s, "dc", 0.0, QC_RLS_CHANGE_MAX, &st.change, why,
                        len)) {
        return -1;
    }
    if (qc_rls_read_p(&s, st.p, why, len) != 0) {
        return -1;
    }
    while (*s == ' ' || *s == '\r') {
        s++;
    }
    if (*s != '\0') {
        return qc_rls_why(why, len, "unexpected \"%.12s\" after p", s);
    }
    if (!positive_definite(st.p)) {
        return qc_rls_why(why, len, "p is not a covariance (not positive "
                          "definite)");
    }
    if (!(qc_rls_trace(&st) <= QC_RLS_TRACE_MAX * (1.0 + QC_RLS_ROUND))) {
        return qc_rls_why(why, len, "p: trace %g above %g",
                          qc_rls_trace(&st), QC_RLS_TRACE_MAX);
    }
    *rls = st;
    return 0;
}

int qc_rls_parse(qc_rls_t *rls, const char *line)
{
    return qc_rls_read(rls, line, NULL, 0);
}
