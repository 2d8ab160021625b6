/* Licensed under the Apache License, Version 2.0. */

/* What the request path's two files (qc_request.c, qc_map.c) share. */

#ifndef QC_REQUEST_H
#define QC_REQUEST_H

#include "qc_module.h"

#define qc_note(r) ((qc_request_t *) \
    ap_get_module_config((r)->request_config, &qosctl_module))

/* A path the common case (light load, the top tree) does not take,
 * kept out of line so that the common path does not pay for its frame
 * (qc_pick inlined cost every request at the top 50-110 instructions:
 * bench/overhead). */
#if defined(__GNUC__)
#define QC_RARE __attribute__((noinline))
#else
#define QC_RARE
#endif

#endif /* QC_REQUEST_H */
