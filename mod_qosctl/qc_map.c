/* Licensed under the Apache License, Version 2.0. */

/*
 * The request path's second half: the URI mapped into the tree qc_decide
 * chose (qc_map, last in translate_name), and a request another module
 * mapped first (RewriteRule, ProxyPass, Alias) decided and, where it
 * mapped a file below DocumentRoot, moved into the tree (qc_map_other,
 * first in map_to_storage).  The stat() of a degraded tree lands in
 * r->finfo, where the directory walk reuses it; a URI with path info
 * costs one more stat() per segment down to its file.
 */

#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "apr_strings.h"

#include "qc_request.h"
#include "qc_uri.h"

APLOG_USE_MODULE(qosctl);

typedef struct {
    request_rec *r;
    char *fn;                   /* the tree's file name for all of r->uri */
    apr_size_t base;            /* where r->uri starts in fn */
} qc_probe_t;

static qc_uri_kind_t qc_probe(void *ctx, size_t prefix_len)
{
    qc_probe_t *pr = ctx;
    char *end = pr->fn + pr->base + prefix_len;
    char saved = *end;
    apr_status_t rv;

    *end = '\0';
    rv = apr_stat(&pr->r->finfo, pr->fn, APR_FINFO_MIN, pr->r->pool);
    *end = saved;
    if (rv != APR_SUCCESS) {
        return QC_URI_NONE;
    }
    return pr->r->finfo.filetype == APR_REG ? QC_URI_FILE
           : pr->r->finfo.filetype == APR_DIR ? QC_URI_DIR : QC_URI_NONE;
}

/*
 * fn, which stat() found to go on past a non-directory, split into a
 * file of this tree and path info (/report.cgi/x runs this tree's
 * report.cgi with PATH_INFO /x).  The core's directory walk takes the
 * file's r->finfo and splices r->path_info back on, as it does for the
 * path info it finds itself.  Returns 0 when the tree has no such file.
 */
static int qc_split_path_info(request_rec *r, char *fn, apr_size_t base,
                              const char *path, apr_size_t plen)
{
    qc_probe_t pr;
    apr_size_t flen;

    pr.r = r;
    pr.fn = fn;
    pr.base = base;
    flen = qc_uri_file_prefix(path, plen, qc_probe, &pr);
    if (flen == 0) {
        return 0;
    }
    fn[base + flen] = '\0';
    r->path_info = apr_pstrmemdup(r->pool, path + flen, plen - flen);
    return 1;
}

/*
 * r->filename for path (a URL-path below DocumentRoot, confined) in the
 * decided tree or, when a degraded tree lacks it, in the next higher
 * tree that has it (admins degrade only heavy files).  A path with path
 * info counts as the file it starts with.  The top tree is not stat()ed
 * here: the core's directory walk does that and answers 404 exactly as
 * it would without us.
 */
static void qc_map_path(request_rec *r, const qc_server_conf *c,
                        qc_request_t *rq, const char *path, apr_size_t plen)
{
    const char *root = ap_document_root(r);
    int own_root = root == c->docroot;   /* not one set per request */
    apr_size_t rlen = own_root ? c->docroot_len : strlen(root);
    apr_status_t rv;
    char *fn;
    unsigned k;

    /* One buffer for every tree tried; the lengths are known, so no
     * apr_pstrcat measuring them again on every request. */
    fn = apr_palloc(r->pool, rlen + c->tree_maxlen + plen + 1);
    if (!own_root) {
        memcpy(fn, root, rlen);
    }
    for (k = rq->level; ; k++) {
        apr_size_t tlen = c->tree_len[k - 1];

        if (own_root) {
            memcpy(fn, c->tree_path[k - 1], rlen + tlen);
        }
        else {
            memcpy(fn + rlen, c->trees[k - 1], tlen);
        }
        memcpy(fn + rlen + tlen, path, plen + 1);
        if (k == c->levels) {
            break;
        }
        rv = apr_stat(&r->finfo, fn, APR_FINFO_MIN, r->pool);
        /* Only ENOTDIR says that a prefix is a file: a missing file
         * costs no more than it did. */
        if (rv == APR_SUCCESS
            || (APR_STATUS_IS_ENOTDIR(rv)
                && qc_split_path_info(r, fn, rlen + tlen, path, plen))) {
            break;
        }
        r->finfo.filetype = APR_NOFILE;
    }
    rq->served_level = k;
    r->filename = fn;
    r->canonical_filename = fn;
}

/* The URI, in the decided tree. */
int qc_map(request_rec *r)
{
    qc_server_conf *c;
    qc_request_t *rq;
    apr_size_t ulen;

    if (!qc_rt.shm || !(rq = qc_note(r)) || rq->excluded || rq->level == 0) {
        return DECLINED;
    }
    c = qc_sconf(r->server);
    if (c->ntrees == 0 || r->uri[0] != '/') {
        return DECLINED;
    }
    ulen = strlen(r->uri);
    if (ulen > QC_MAX_URI) {
        return HTTP_REQUEST_URI_TOO_LARGE;
    }
    if (!qc_uri_confined_len(r->uri, ulen)) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                      QC_LOGNO(10015)
                      "QosCtl: refusing URI that would leave its content "
                      "tree: %s", r->uri);
        return HTTP_BAD_REQUEST;
    }
    qc_map_path(r, c, rq, r->uri, ulen);
    return OK;
}

/*
 * A file name another module mapped (a server-context RewriteRule's
 * front controller: docroot/index.php), as a path below DocumentRoot
 * and outside any tree; NULL when it is not below DocumentRoot.
 */
static const char *qc_docroot_path(request_rec *r, const qc_server_conf *c)
{
    const char *root = ap_document_root(r), *path;
    apr_size_t rlen = strlen(root);
    unsigned i;

    if (rlen && root[rlen - 1] == '/') {
        rlen--;                 /* DocumentRoot "/" */
    }
    if (!r->filename || strncmp(r->filename, root, rlen) != 0
        || (r->filename[rlen] != '/' && r->filename[rlen] != '\0')) {
        return NULL;
    }
    path = r->filename + rlen;
    /* Already in a tree (a rule that names /full/...): the tree the
     * level picks instead. */
    for (i = 0; i < c->ntrees; i++) {
        if (c->tree_len[i] && qc_uri_under(c->trees[i], c->tree_len[i],
                                           path)) {
            return path + c->tree_len[i];
        }
    }
    return path;
}

/*
 * map_to_storage, first: requests that another module's translate_name
 * answered before qc_decide (RewriteRule, ProxyPass, Alias) are decided
 * and counted here, and rejected at level 0.  A file below DocumentRoot
 * is moved into the decided tree; anything else (a proxy, an Alias
 * elsewhere) learns its level only from QOSCTL_LEVEL or X-QosCtl-Level.
 */
static QC_RARE int qc_map_unmapped(request_rec *r)
{
    qc_server_conf *c;
    qc_request_t *rq;
    const char *path;
    apr_size_t plen;
    int rv;

    if (!(rq = qc_note(r))) {
        if ((rv = qc_decide(r)) != DECLINED) {
            return rv;
        }
        rq = qc_note(r);
    }
    c = qc_sconf(r->server);
    /* A proxied backend is told every level, the top too, so that a
     * client's own header never reaches it. */
    if (rq->level && r->filename && !strncmp(r->filename, "proxy:", 6)) {
        apr_table_setn(r->headers_in, "X-QosCtl-Level",
                       c->level_names[rq->level]);
    }
    if (rq->excluded || rq->served_level || rq->level == 0
        || c->ntrees == 0) {
        return DECLINED;
    }
    path = qc_docroot_path(r, c);
    plen = path ? strlen(path) : 0;
    if (!qc_uri_confined_len(path, plen)) {
        rq->served_level = rq->level;     /* what the application is told */
        return DECLINED;
    }
    /* The other module's stat() was of the file outside the tree. */
    r->finfo.filetype = APR_NOFILE;
    qc_map_path(r, c, rq, path, plen);
    return DECLINED;
}

int qc_map_other(request_rec *r)
{
    const qc_request_t *rq;

    /* A request qc_map put in its tree: nearly all of them. */
    if (!qc_rt.shm || ((rq = qc_note(r)) && rq->served_level)) {
        return DECLINED;
    }
    return qc_map_unmapped(r);
}
