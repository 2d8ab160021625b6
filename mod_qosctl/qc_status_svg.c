/* Licensed under the Apache License, Version 2.0. */

/*
 * The status page's charts: the last ten minutes of the history the
 * controller keeps in the shared segment (qc_shm.h), drawn as inline
 * SVG, so that the page needs no other file and no JavaScript.
 */

#include <stdio.h>
#include <string.h>

#include "httpd.h"
#include "http_protocol.h"
#include "apr_atomic.h"

#include "qc_status_render.h"

#define QC_SPAN_US (600 * APR_USEC_PER_SEC)     /* ten minutes */

/* The utilization chart's plot area, in its viewBox's units. */
#define QC_U_W      1200
#define QC_U_H      200
#define QC_U_LEFT   44
#define QC_U_RIGHT  1150
#define QC_U_TOP    12
#define QC_U_BOTTOM 176

/* A class's small chart of m, in its table row. */
#define QC_M_W      150
#define QC_M_H      30

static const char *const qc_class_colors[QC_NCLASSES] = {
    "#b35806", "#2166ac"
};

void qc_history_read(qc_history_t *h, apr_time_t now)
{
    qc_shm_t *q = qc_rt.shm;
    apr_uint64_t n = apr_atomic_read64(&q->hist_count), j;

    /* The sample at n % QC_HIST_LEN may be the one being written. */
    h->n = 0;
    for (j = 1; j < QC_HIST_LEN && j <= n; j++) {
        unsigned at = (unsigned)((n - j) % QC_HIST_LEN);
        apr_time_t t = (apr_time_t)apr_atomic_read64(&q->hist_time[at]);

        if (t <= 0 || now - t > QC_SPAN_US
            || (h->n && t >= h->t[h->n - 1])) {
            break;              /* older than the span, or overwritten */
        }
        h->at[h->n] = at;
        h->t[h->n] = t;
        h->n++;
    }
}

/* A series of the history: its value at a ring position, NaN none. */
typedef double (*qc_series_fn)(const void *ctx, unsigned at);

static double qc_series_u(const void *ctx, unsigned at)
{
    const qc_shm_t *q = ctx;

    return qc_bitsf(apr_atomic_read32(
                        (volatile apr_uint32_t *)&q->hist_u[at]));
}

static double qc_series_m(const void *ctx, unsigned at)
{
    const volatile apr_uint16_t *m = ctx;

    return qc_hist_m_decode(m[at]);
}

/* Where a chart draws: x spans the last ten minutes, y [0, ymax]. */
typedef struct {
    double left, right, top, bottom, ymax;
} qc_plot_t;

static double qc_plot_x(const qc_plot_t *p, apr_time_t now, apr_time_t t)
{
    return p->right - (p->right - p->left) * (double)(now - t) / QC_SPAN_US;
}

static double qc_plot_y(const qc_plot_t *p, double v)
{
    if (v > p->ymax) {
        v = p->ymax;
    }
    return p->bottom - (p->bottom - p->top) * (v < 0.0 ? 0.0 : v) / p->ymax;
}

/* A path's d attribute as it is written, in the request's pool. */
typedef struct {
    char *d;
    size_t len, cap;
    int pen;                    /* a subpath is under way */
    int held;                   /* a point of a flat run not written */
    double hx, hy;              /* that point */
} qc_pathbuf_t;

static void qc_path_put(qc_pathbuf_t *b, double x, double y)
{
    int n = snprintf(b->d + b->len, b->cap - b->len, "%s%c%.1f,%.1f",
                     b->len ? " " : "", b->pen ? 'L' : 'M', x, y);

    if (n > 0 && (size_t)n < b->cap - b->len) {
        b->len += (size_t)n;
    }
    b->pen = 1;
}

/* The last point of a flat run, and the end of the subpath. */
static void qc_path_flush(qc_pathbuf_t *b, int lift)
{
    if (b->held) {
        qc_path_put(b, b->hx, b->hy);
        b->held = 0;
    }
    if (lift) {
        b->pen = 0;
    }
}

/*
 * A path's d attribute for a series, oldest sample first.  A sample
 * with no value, or a gap of more than a few samples' time (no
 * controller then), starts a new subpath rather than drawing across.
 * A flat run is written as its two ends: a level mostly stays put, and
 * a page of many hosts stays small.
 */
static const char *qc_series_path(apr_pool_t *pool, const qc_history_t *h,
                                  apr_time_t now, const qc_plot_t *p,
                                  qc_series_fn get, const void *ctx)
{
    apr_time_t gap = (apr_time_t)(3e6 * qc_rt.main->period);
    qc_pathbuf_t b;
    double last_y = 0.0;
    unsigned j;

    memset(&b, 0, sizeof(b));
    b.cap = (size_t)h->n * 24 + 1;
    b.d = apr_palloc(pool, b.cap);
    b.d[0] = '\0';
    if (gap < 5 * QC_HIST_STEP_US) {
        gap = 5 * QC_HIST_STEP_US;
    }
    for (j = h->n; j-- > 0;) {
        double v = get(ctx, h->at[j]), x, y;

        if (v != v) {
            qc_path_flush(&b, 1);
            continue;
        }
        if (j + 1 < h->n && h->t[j] - h->t[j + 1] > gap) {
            qc_path_flush(&b, 1);
        }
        x = qc_plot_x(p, now, h->t[j]);
        y = qc_plot_y(p, v);
        if (b.pen && y == last_y && j > 0) {
            b.held = 1;
            b.hx = x;
            b.hy = y;
            continue;
        }
        qc_path_flush(&b, 0);
        qc_path_put(&b, x, y);
        last_y = y;
    }
    qc_path_flush(&b, 1);
    return b.d;
}

static void qc_svg_hline(request_rec *r, const qc_plot_t *p, double v,
                         const char *attrs)
{
    double y = qc_plot_y(p, v);

    ap_rprintf(r, "<line x1=\"%d\" y1=\"%s\" x2=\"%d\" y2=\"%s\" %s/>",
               (int)p->left, qc_pdouble(r->pool, "%.1f", y), (int)p->right,
               qc_pdouble(r->pool, "%.1f", y), attrs);
}

/* The frame: grid lines with their values, the time axis. */
static void qc_svg_axes(request_rec *r, const qc_plot_t *p)
{
    int k;

    for (k = 0; k <= 4; k++) {
        double v = p->ymax * k / 4;

        qc_svg_hline(r, p, v, "stroke=\"#ddd\"");
        ap_rprintf(r, "<text x=\"%d\" y=\"%s\" text-anchor=\"end\">%s"
                   "</text>", (int)p->left - 4,
                   qc_pdouble(r->pool, "%.1f", qc_plot_y(p, v) + 4),
                   qc_pdouble(r->pool, "%.2f", v));
    }
    for (k = 0; k <= 10; k += 2) {
        double x = p->right - (p->right - p->left) * k / 10;

        ap_rprintf(r, "<text x=\"%s\" y=\"%d\" text-anchor=\"middle\">%s"
                   "</text>", qc_pdouble(r->pool, "%.1f", x),
                   (int)p->bottom + 16,
                   k ? apr_psprintf(r->pool, "&minus;%d min", k) : "now");
    }
}

void qc_svg_utilization(request_rec *r, const qc_history_t *h,
                        apr_time_t now, double bound)
{
    qc_plot_t p = { QC_U_LEFT, QC_U_RIGHT, QC_U_TOP, QC_U_BOTTOM, 1.0 };
    unsigned j;

    for (j = 0; j < h->n; j++) {
        double u = qc_series_u(qc_rt.shm, h->at[j]);

        if (u > p.ymax) {
            p.ymax = u;
        }
    }
    if (p.ymax > 1.0) {
        p.ymax = (double)(unsigned)(p.ymax * 4 + 0.999) / 4;
    }
    ap_rprintf(r, "<svg class=\"qc-chart\" viewBox=\"0 0 %d %d\" "
               "xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" "
               "aria-label=\"measured utilization and bound, last ten "
               "minutes\" font-size=\"12\" fill=\"#444\">", QC_U_W, QC_U_H);
    qc_svg_axes(r, &p);
    qc_svg_hline(r, &p, bound, "class=\"qc-bound\" stroke=\"#d62728\" "
                 "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"");
    ap_rprintf(r, "<path class=\"qc-u\" fill=\"none\" stroke=\"#1f77b4\" "
               "stroke-width=\"2\" d=\"%s\"/>",
               qc_series_path(r->pool, h, now, &p, qc_series_u, qc_rt.shm));
    ap_rprintf(r, "<text x=\"%d\" y=\"%d\" fill=\"#1f77b4\">&#9473; "
               "measured utilization</text><text x=\"%d\" y=\"%d\" "
               "fill=\"#d62728\">&#9476; bound %s</text>",
               QC_U_LEFT + 8, QC_U_TOP + 14, QC_U_LEFT + 190, QC_U_TOP + 14,
               qc_pdouble(r->pool, "%.2f", bound));
    if (h->n == 0) {
        ap_rprintf(r, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no "
                   "samples yet: the controller has not run</text>",
                   (QC_U_LEFT + QC_U_RIGHT) / 2, (QC_U_TOP + QC_U_BOTTOM) / 2);
    }
    ap_rputs("</svg>\n", r);
}

void qc_svg_levels(request_rec *r, const qc_history_t *h, apr_time_t now,
                   const qc_server_conf *c)
{
    qc_plot_t p = { 1, QC_M_W - 1, 2, QC_M_H - 2, (double)c->levels };
    int cls;

    ap_rprintf(r, "<svg class=\"qc-levels\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\" "
               "role=\"img\" aria-label=\"level of each class, last ten "
               "minutes\"><rect width=\"%d\" height=\"%d\" fill=\"#f6f6f6\""
               "/>", QC_M_W, QC_M_H, QC_M_W, QC_M_H, QC_M_W, QC_M_H);
    for (cls = 0; cls < QC_NCLASSES; cls++) {
        ap_rprintf(r, "<path class=\"qc-m qc-%s\" fill=\"none\" "
                   "stroke=\"%s\" stroke-width=\"1.5\" d=\"%s\"/>",
                   qc_class_names[cls], qc_class_colors[cls],
                   qc_series_path(r->pool, h, now, &p, qc_series_m,
                                  (const void *)c->slot->hist_m[cls]));
    }
    ap_rputs("</svg>", r);
}

const char *qc_class_color(int cls)
{
    return qc_class_colors[cls];
}
