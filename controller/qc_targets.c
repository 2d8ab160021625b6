/* Licensed under the Apache License, Version 2.0. */

#include "qc_targets.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

static double at_least_zero(double x)
{
    return x > 0.0 ? x : 0.0;   /* NaN becomes 0 too */
}

double qc_target_guarantee(const qc_model_t *mod, double rmax, double wmax)
{
    return at_least_zero(mod->a * rmax + mod->b * wmax);
}

double qc_model_util(const qc_model_t *mod, double r_served, double w,
                     double r_rej)
{
    return mod->a * r_served + mod->b * w + mod->c * r_rej;
}

double qc_target_premium(const qc_model_t *mod, double u_star,
                         double r_basic, double u_full)
{
    double u = at_least_zero(u_star - mod->c * r_basic);

    return u_full <= u_star && u_full > u ? u_full : u;
}

double qc_target_basic(double u_star, double u_premium)
{
    return at_least_zero(u_star - u_premium);
}

double qc_target_background(const qc_model_t *mod, double u_bound)
{
    return mod->d < 0.5 * u_bound ? mod->d : 0.5 * u_bound;
}

double qc_target_best_effort(const qc_model_t *mod, double u_bound,
                             double u_guaranteed)
{
    return at_least_zero(u_bound - u_guaranteed
                         - qc_target_background(mod, u_bound));
}

double qc_share_level(double m_own, double m_b_norm, unsigned M)
{
    double m_b = m_b_norm * (double)M;
    double m = m_own > m_b ? m_own : m_b;

    if (!(m >= 0.0)) {
        return 0.0;
    }
    return m > (double)M ? (double)M : m;
}

/* Append to msg, keeping track of the offset; truncation is silent. */
static void append(char *msg, size_t msglen, size_t *off,
                   const char *fmt, ...)
{
    va_list ap;
    int k;

    if (*off + 1 >= msglen) {
        return;
    }
    va_start(ap, fmt);
    k = vsnprintf(msg + *off, msglen - *off, fmt, ap);
    va_end(ap);
    if (k < 0) {
        return;
    }
    *off += (size_t)k < msglen - *off ? (size_t)k : msglen - *off - 1;
}

int qc_capacity_check(const qc_model_t *mod, double u_bound,
                      const char *const *names, const double *rmax,
                      const double *wmax, size_t n, double *shares,
                      double *sum, char *msg, size_t msglen)
{
    double total = 0.0, u;
    size_t i, off = 0;
    int over;

    if (msg != NULL && msglen > 0) {
        msg[0] = '\0';
    }
    if (!isfinite(mod->a) || !isfinite(mod->b) || mod->a < 0.0
        || mod->b < 0.0 || !isfinite(u_bound) || u_bound < 0.0
        || (n > 0 && (rmax == NULL || wmax == NULL))) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (!isfinite(rmax[i]) || !isfinite(wmax[i]) || rmax[i] < 0.0
            || wmax[i] < 0.0) {
            return -1;
        }
        u = mod->a * rmax[i] + mod->b * wmax[i];
        if (shares != NULL) {
            shares[i] = u;
        }
        total += u;
    }
    if (sum != NULL) {
        *sum = total;
    }
    over = total > u_bound;
    if (msg == NULL || msglen == 0) {
        return over;
    }
    append(msg, msglen, &off, "capacity plan %s the utilization bound: "
           "guaranteed shares sum to %.4f %s %.4f",
           over ? "exceeds" : "fits", total, over ? ">" : "<=", u_bound);
    for (i = 0; i < n; i++) {
        u = mod->a * rmax[i] + mod->b * wmax[i];
        if (names != NULL && names[i] != NULL) {
            append(msg, msglen, &off, "%s %s %.4f", i == 0 ? ":" : ",",
                   names[i], u);
        }
        else {
            append(msg, msglen, &off, "%s #%lu %.4f", i == 0 ? ":" : ",",
                   (unsigned long)i, u);
        }
    }
    return over;
}
