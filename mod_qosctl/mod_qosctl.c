/* Licensed under the Apache License, Version 2.0. */

/*
 * mod_qosctl: performance guarantees for web hosting under overload, after
 * Abdelzaher, Shin and Bhatti, "Performance guarantees for Web server
 * end-systems: a control-theoretical approach" (IEEE TPDS 13(1), 2002).
 *
 * A controller process keeps the bottleneck's utilization at a set point
 * by choosing, per virtual server and client class, a level m in [0, M];
 * the request path serves each client from one of M content trees of
 * decreasing quality, or rejects it at level 0.  This file wires the
 * hooks together; the work is in the files named in qc_module.h.
 */

#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "mod_status.h"
#include "mpm_common.h"
#include "apr_atomic.h"

#include "qc_module.h"
#include "qc_watch.h"

static int qc_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                          apr_pool_t *ptemp, server_rec *s)
{
    qc_server_conf *g = qc_sconf(s);

    /* Off means nothing at all happens per request. */
    qc_rt.shm = NULL;
    if (g->enabled != 1) {
        return OK;
    }
    qc_rt.main = g;
    qc_rt.stale_after = (apr_interval_time_t)(3.0 * g->period
                                              * APR_USEC_PER_SEC);
    if (qc_shm_setup(pconf, s) != APR_SUCCESS) {
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    if (apr_atomic_read64(&qc_rt.shm->periods) == 0) {
        /* Until a controller has learned better, show the given model. */
        apr_atomic_set64(&qc_rt.shm->a_bits, qc_dbits(g->model_a));
        apr_atomic_set64(&qc_rt.shm->b_bits, qc_dbits(g->model_b));
        apr_atomic_set64(&qc_rt.shm->c_bits, qc_dbits(g->model_c));
    }
    return qc_supervise(pconf, s);
}

/*
 * "SetHandler qosctl-health": a 200 for a balancer's health check with
 * no file behind it.  QosCtlExclude on its path keeps it from being
 * degraded or rejected, so that an overloaded server still passes.
 */
static int qc_health_handler(request_rec *r)
{
    if (strcmp(r->handler, "qosctl-health")) {
        return DECLINED;
    }
    r->allowed |= (AP_METHOD_BIT << M_GET);
    if (r->method_number != M_GET) {
        return HTTP_METHOD_NOT_ALLOWED;
    }
    ap_set_content_type(r, "text/plain");
    apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    if (!r->header_only) {
        ap_rputs("ok\n", r);
    }
    return OK;
}

/* Our handlers behind one test: every request of the server comes by
 * here, and nearly all of them are for another module. */
static int qc_handler(request_rec *r)
{
    int rv;

    if (!r->handler || r->handler[0] != 'q'
        || strncmp(r->handler, "qosctl-", 7) != 0) {
        return DECLINED;
    }
    rv = qc_health_handler(r);
    return rv == DECLINED ? qc_status_handler(r) : rv;
}

static void qc_register_hooks(apr_pool_t *p)
{
    /* Decide after mod_rewrite has set QOSCTL_CLASS, map after every
     * module that maps URIs its own way (Alias, ProxyPass, ...). */
    static const char *const after_rewrite[] = { "mod_rewrite.c", NULL };

    /* First: the checks may need the controller's user settled. */
    ap_hook_check_config(qc_check_user, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_check_config(qc_check_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_config(qc_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_monitor(qc_monitor, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_translate_name(qc_decide, after_rewrite, NULL, APR_HOOK_FIRST);
    ap_hook_translate_name(qc_map, NULL, NULL, APR_HOOK_LAST);
    /* Before mod_proxy's, which claims proxy: file names. */
    ap_hook_map_to_storage(qc_map_other, NULL, NULL, APR_HOOK_REALLY_FIRST);
    ap_hook_log_transaction(qc_log, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_handler(qc_handler, NULL, NULL, APR_HOOK_MIDDLE);
    APR_OPTIONAL_HOOK(ap, status_hook, qc_status_hook, NULL, NULL,
                      APR_HOOK_MIDDLE);
}

AP_DECLARE_MODULE(qosctl) = {
    STANDARD20_MODULE_STUFF,
    NULL,                       /* per-directory config creator */
    NULL,                       /* dir config merger */
    qc_create_server_conf,      /* server config creator */
    qc_merge_server_conf,       /* server config merger */
    qc_cmds,                    /* command table */
    qc_register_hooks,          /* set up other request processing hooks */
    /* Every host needs its own config (its own slot), even without a
     * directive of ours in its <VirtualHost>. */
    AP_MODULE_FLAG_ALWAYS_MERGE
};
