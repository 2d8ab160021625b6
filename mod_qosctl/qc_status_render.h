/* Licensed under the Apache License, Version 2.0. */

/*
 * The status page's outputs, which qc_status.c's handler chooses among:
 * the machine formats (qc_status_text.c), the HTML page
 * (qc_status_html.c) with its dry-run block (qc_status_dry.c, also in
 * the machine formats) and its charts (qc_status_svg.c).  All of them
 * read only what qc_status_view.h offers.
 */

#ifndef QC_STATUS_RENDER_H
#define QC_STATUS_RENDER_H

#include "qc_status_view.h"

/* qc_status_text.c */
void qc_render_json(request_rec *r, const qc_global_view_t *g);
void qc_render_prom(request_rec *r, const qc_global_view_t *g);

/* qc_status_html.c */
void qc_render_html(request_rec *r, const qc_global_view_t *g,
                    int refresh);

/* qc_status_dry.c: what QosCtl LogOnly would have done */
void qc_dry_json(request_rec *r, const qc_server_conf *c, int cls);
void qc_dry_prom(request_rec *r, const qc_global_view_t *g);
void qc_dry_html(request_rec *r, const qc_global_view_t *g);

/* qc_status_svg.c */
void qc_history_read(qc_history_t *h, apr_time_t now);
void qc_svg_utilization(request_rec *r, const qc_history_t *h,
                        apr_time_t now, double bound);
void qc_svg_levels(request_rec *r, const qc_history_t *h, apr_time_t now,
                   const qc_server_conf *c);
const char *qc_class_color(int cls);

#endif /* QC_STATUS_RENDER_H */
