/* Licensed under the Apache License, Version 2.0. */

/*
 * The request path: classification, the content-tree actuator (paper
 * §4.2) and the counters (§6.3).  It runs on every request, so it takes
 * no lock, allocates only from the request pool, and makes no system
 * call the request would not make anyway: the time comes from
 * r->request_time, and the stat() of a degraded tree lands in r->finfo,
 * where the directory walk reuses it instead of its own.  A URI with
 * path info costs one more stat() per segment down to its file.
 *
 * Two translate_name hooks split the work.  qc_decide runs first (after
 * mod_rewrite, so that [E=QOSCTL_CLASS:premium] counts): it classifies
 * the client, counts the arrival, picks the level and rejects at level
 * 0.  qc_map (qc_map.c) runs last, before the core maps the URI to
 * DocumentRoot: it maps the URI into the chosen tree.  A request that another
 * module's translate_name answered first (RewriteRule, ProxyPass,
 * Alias) is decided by qc_map_other, first in map_to_storage, which
 * also moves a file it mapped below DocumentRoot into the tree.  An
 * application learns its level (QOSCTL_LEVEL when degraded, X-QosCtl-Level
 * behind a proxy), so that it can degrade itself.  r->uri stays what the
 * client asked for, so subrequests (mod_dir's index lookup, SSI
 * includes) and internal redirects resolve in the same tree as their
 * initial request.
 */

#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "apr_strings.h"

#include "qc_request.h"
#include "qc_atomic.h"
#include "qc_heartbeat.h"
#include "qc_surge.h"
#include "qc_uri.h"

APLOG_USE_MODULE(qosctl);

/* The request the client sent, behind subrequests and redirects. */
static request_rec *qc_initial(request_rec *r)
{
    for (;;) {
        if (r->main) {
            r = r->main;
        }
        else if (r->prev) {
            r = r->prev;
        }
        else {
            return r;
        }
    }
}

/* The client's address bytes, IPv4-mapped IPv6 folded to IPv4. */
static const unsigned char *qc_client_bytes(const request_rec *r,
                                            int *family, apr_size_t *len)
{
    const apr_sockaddr_t *sa = r->useragent_addr;
    const unsigned char *b = sa->ipaddr_ptr;

#if APR_HAVE_IPV6
    if (sa->family == AF_INET6) {
        static const unsigned char mapped[12] =
            { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        if (!memcmp(b, mapped, sizeof(mapped))) {
            *family = 4;
            *len = 4;
            return b + 12;
        }
        *family = 6;
        *len = 16;
        return b;
    }
#endif
    *family = 4;
    *len = 4;
    return b;
}

static int qc_classify(const request_rec *r, const qc_server_conf *c)
{
    const char *env = apr_table_get(r->subprocess_env, "QOSCTL_CLASS");

    if (env && !strcasecmp(env, "premium")) {
        return QC_CLASS_PREMIUM;
    }
    if (c->premium->nelts && r->useragent_addr
        && qc_cidr_match_any_sa((const qc_cidr_t *)c->premium->elts,
                                c->premium->nelts, r->useragent_addr)) {
        return QC_CLASS_PREMIUM;
    }
    return QC_CLASS_BASIC;
}

static int qc_is_excluded(const request_rec *r, const qc_server_conf *c)
{
    int i;

    for (i = 0; i < c->excludes->nelts; i++) {
        const char *p = APR_ARRAY_IDX(c->excludes, i, const char *);

        if (qc_uri_under(p, strlen(p), r->uri)) {
            return 1;
        }
    }
    return 0;
}

/*
 * m for this class: pinned, or the controller's, or the top level when
 * the controller has not shown a heartbeat for three periods (fail open).
 */
static apr_uint32_t qc_level_fx(const request_rec *r, qc_server_conf *c,
                                int cls, int *fail_open)
{
    qc_shm_t *q = qc_rt.shm;
    qc_class_shm_t *cs = &c->slot->cls[cls];
    apr_interval_time_t silence;

    if (c->fixed_set) {
        /* The paper's open loop: each client keeps its tree for as long
         * as the level is pinned, which no threshold that the counts
         * move would let it; the count is the balance's (qc_pick). */
        return c->fixed_fx;
    }
    if (qc_controller_stale(r->request_time, &silence)) {
        *fail_open = 1;
        if (apr_atomic_cas32(&q->fail_open_logged, 1, 0) == 0) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, r->server,
                         QC_LOGNO(10016)
                         "QosCtl: no controller heartbeat for %" APR_TIME_T_FMT
                         " ms: failing open (full quality, no rejection) "
                         "until it is back", silence / 1000);
        }
        return c->top_fx;
    }
    return qc_load32(&cs->level_fx);
}

/*
 * N of who the client is: its address (an IPv6 one's /64), or
 * QOSCTL_CLIENT when the admin sets it (SetEnvIf Cookie "sid=([^;]+)"
 * QOSCTL_CLIENT=$1): users behind one NAT share an address but not a
 * session.  Keyed with the segment's
 * secret, so nobody can choose a key that always lands high.
 */
static double qc_client_hash(const request_rec *r)
{
    apr_uint64_t secret = qc_rt.shm->secret;
    const char *id = apr_table_get(r->subprocess_env, "QOSCTL_CLIENT");
    int family;
    apr_size_t len;
    const unsigned char *b;

    if (id) {
        return qc_hash_keyed(secret, (const unsigned char *)id, strlen(id));
    }
    if (!r->useragent_addr) {
        return qc_hash_keyed(secret, NULL, 0);
    }
    b = qc_client_bytes(r, &family, &len);
    /* An IPv6 host picks its address from a /64 at will: keyed by the
     * /64, a client cannot shop for a better tree by address. */
    return qc_hash_keyed(secret, b, family == 6 ? 8 : len);
}

/*
 * Each process's vote on the key that carries a marked bucket, by host
 * (its slot, folded), class and bucket: zero at start, as a vote must
 * be, and nothing the request pays for but a load and a store.
 */
#define QC_VOTE_HOSTS 32
static qc_vote_t qc_votes[QC_VOTE_HOSTS][QC_NCLASSES][QC_BUCKETS];

static qc_vote_t *qc_vote_of(const qc_server_conf *c,
                             const qc_class_shm_t *cs, unsigned bucket)
{
    apr_size_t host = (apr_size_t)(c->slot - qc_rt.shm->slots)
                      % QC_VOTE_HOSTS;

    return &qc_votes[host][cs - c->slot->cls][bucket];
}

static int64_t qc_balance_add(void *ctx, int64_t delta)
{
    return (int64_t)qc_add64((volatile apr_uint64_t *)ctx,
                             (apr_uint64_t)delta);
}

/*
 * Which of the two trees around m this request gets (qc_level.h's
 * rule).  By the client's hash, so that it keeps its tree while m stays
 * put; per request only below m = 1, so that a rejected client's retry
 * has the same odds as anyone's, and for the heavy key of a bucket the
 * controller marks (one address behind a NAT or proxy), whose load
 * would otherwise all land on one side of F.  Those requests take their
 * tree from the class's balance, which keeps the count served from each
 * tree what m asks for.
 */
static QC_RARE unsigned qc_pick(const qc_server_conf *c,
                                qc_class_shm_t *cs, apr_uint32_t m_fx,
                                double n, unsigned bucket,
                                apr_uint32_t seq, int kept)
{
    apr_uint64_t mask;
    int heavy, spread;

    /* An integral m gives every request the same tree, but for the rest
     * of a page its connection keeps. */
    if ((m_fx % QC_LEVEL_ONE) == 0) {
        return kept >= 0 ? (unsigned)kept
                         : qc_level_pick_fx(m_fx, c->levels, 0.0);
    }
    /* A heavy key shares its bucket with a 64th of everyone else, who
     * must keep their trees: only the key the bucket's requests vote
     * for is split.  Every request votes, so that the vote is made when
     * the controller marks the bucket. */
    heavy = qc_level_vote(qc_vote_of(c, cs, bucket), n);
    if (kept >= 0) {
        qc_level_pay(m_fx, qc_load32(&cs->loop_fx), c->levels,
                     (unsigned)kept, qc_balance_add, (void *)&cs->balance);
        return (unsigned)kept;
    }
    mask = qc_load64(&cs->spread_mask);
    if (mask == ~(apr_uint64_t)0) {
        /* "Everyone, until counted" is for a loop leaving the top
         * level; a pinned level counts every client from its first
         * request. */
        spread = !c->fixed_set;
    }
    else {
        spread = heavy && ((mask >> bucket) & 1);
    }
    return qc_level_pick_balanced(m_fx, qc_load32(&cs->loop_fx), c->levels,
                                  n, spread, seq, qc_balance_add,
                                  (void *)&cs->balance);
}

/*
 * The tree a client's keep-alive connection was given, and at which
 * level, kept while qc_level_keeps says so.  In the connection's pool,
 * made by the first request decided below the top: on a connection that
 * served one already (at the top, or it would have a record), the top,
 * so that a page a step meets keeps it to its end.  None for HTTP/2's
 * streams, which share a connection across threads.
 */
typedef struct {
    const qc_slot_t *slot;
    double n;
    apr_time_t since, last;     /* the page's first request, the last */
    apr_uint32_t m0_fx;
    unsigned run;               /* the page's requests so far */
    unsigned cls;
    unsigned level;
} qc_kept_t;

/* The connection's record, made if need be, set to a tree given now. */
static qc_kept_t *qc_kept_set(const request_rec *r, const qc_server_conf *c,
                              const qc_request_t *rq, double n,
                              apr_uint32_t m_fx, unsigned level)
{
    conn_rec *conn = r->connection;
    qc_kept_t *k = ap_get_module_config(conn->conn_config, &qosctl_module);

    if (!k) {
        k = apr_palloc(conn->pool, sizeof(*k));
        ap_set_module_config(conn->conn_config, &qosctl_module, k);
    }
    k->slot = c->slot;
    k->n = n;
    k->since = k->last = r->request_time;
    k->run = 0;
    k->m0_fx = m_fx;
    k->cls = (unsigned)rq->cls;
    k->level = level;
    return k;
}

static int qc_kept_level(const request_rec *r, const qc_server_conf *c,
                         const qc_request_t *rq, double n,
                         apr_uint32_t m_fx)
{
    conn_rec *conn = r->connection;
    qc_kept_t *k = ap_get_module_config(conn->conn_config, &qosctl_module);
    double gap;

    if (!k) {
        if (conn->master || conn->keepalives == 0 || m_fx < QC_LEVEL_ONE) {
            return -1;
        }
        k = qc_kept_set(r, c, rq, n, m_fx, c->levels);
    }
    gap = (double)(r->request_time - k->last) / APR_USEC_PER_SEC;
    k->last = r->request_time;
    if (k->slot == c->slot && k->cls == (unsigned)rq->cls && k->n == n
        && qc_level_keeps(k->m0_fx, m_fx, c->levels, k->level, k->run,
                          (double)(r->request_time - k->since)
                          / APR_USEC_PER_SEC, gap)) {
        if (gap >= QC_KEEP_GAP) {               /* a new page */
            k->run = 0;
            k->since = r->request_time;
        }
        k->run++;
        return (int)k->level;
    }
    return -1;
}

static void qc_keep_level(request_rec *r, const qc_server_conf *c,
                          const qc_request_t *rq, double n,
                          apr_uint32_t m_fx)
{
    if (!r->connection->master && !rq->kept) {
        qc_kept_set(r, c, rq, n, m_fx, rq->level);
    }
}

static qc_request_t *qc_note_new(request_rec *r)
{
    qc_request_t *rq = apr_pcalloc(r->pool, sizeof(*rq));

    ap_set_module_config(r->request_config, &qosctl_module, rq);
    return rq;
}

/*
 * A degraded level, "k/M", for CGI and FastCGI to degrade by (a brownout
 * dimmer); unset means the top, so that light load costs nothing.
 */
static void qc_tell_level(request_rec *r, const qc_server_conf *c,
                          unsigned level)
{
    if (level < c->levels) {
        apr_table_setn(r->subprocess_env, "QOSCTL_LEVEL",
                       c->level_names[level]);
    }
}

/*
 * Why this request got what it got, for LogFormat's %{qosctl}n and, with
 * QosCtlReasonHeader On, the client: nothing at full quality (no cost
 * at light load), else "excluded", "fail-open", or the tree and the
 * class's level, which says how far its loop (or QosCtlFixedLevel) has
 * gone: "degraded 1/2 m=1.43 basic", "rejected m=0.62 premium"; under
 * QosCtl LogOnly what would have been: "would-degrade 1/2 m=1.43 basic",
 * "would-reject m=0.62 premium".
 */
static void qc_tell_reason(request_rec *r, const qc_server_conf *c,
                           const qc_request_t *rq, apr_uint32_t m_fx,
                           const char *fixed_reason)
{
    const char *why;

    if (fixed_reason) {
        why = fixed_reason;
    }
    else if (rq->level >= c->levels) {
        return;
    }
    else {
        why = apr_psprintf(r->pool, "%s%s m=%.2f %s%s",
                           rq->would ? (rq->level ? "would-degrade "
                                                  : "would-reject")
                           : rq->level ? "degraded " : "rejected",
                           rq->level ? c->level_names[rq->level] : "",
                           qc_level_from_fx(m_fx),
                           rq->cls == QC_CLASS_PREMIUM ? "premium"
                                                       : "basic",
                           c->fixed_set ? " fixed"
                           : rq->surged ? " surge"
                           : rq->kept ? " kept" : "");
    }
    apr_table_setn(r->notes, "qosctl", why);
    if (c->reason_header == 1) {
        apr_table_setn(r->err_headers_out, "X-QosCtl-Reason", why);
    }
}

/*
 * The surge guard (qc_surge.h): every request a loop's level decides on
 * is counted, and one that comes past the rate the controller last
 * published is served from its host's lowest tree.  Premium comes first,
 * as in the loops: its requests count against the rate by themselves,
 * so a step of basic clients never sends them down, while they still
 * take their part of it from basic.  It never lowers a request below
 * that tree, nor touches a guaranteed host, whose own loop holds its
 * share, nor a connection's kept tree.  The heartbeat is read before
 * the bases, which the controller writes before it: a new base is never
 * read against an old period's start, which would count every request
 * as past it.
 */
static void qc_surge_guard(const request_rec *r, const qc_server_conf *c,
                           qc_request_t *rq)
{
    qc_shm_t *q = qc_rt.shm;
    double seq = (double)qc_add64(&q->surge_arrived, 1);
    volatile apr_uint64_t *base = &q->surge_base_bits;
    apr_time_t since;

    if (rq->cls == QC_CLASS_PREMIUM) {
        seq = (double)qc_add64(&q->surge_premium, 1);
        base = &q->surge_premium_base_bits;
    }
    if (rq->level <= 1 || c->guaranteed || rq->kept) {
        return;
    }
    since = r->request_time
            - (apr_time_t)qc_load64(&q->heartbeat);
    if (qc_surge_past(seq, qc_bitsd(qc_load64(base)),
                      qc_bitsd(qc_load64(&q->surge_rate_bits)),
                      (double)since / APR_USEC_PER_SEC)) {
        rq->level = 1;
        rq->surged = 1;
        qc_add64(&q->surge_degraded, 1);
    }
}

/* One atomic add per request: arrivals by tree, rejections at tree 0. */
static void qc_count_arrival(const qc_server_conf *c, qc_request_t *rq,
                             unsigned level)
{
    qc_add64(&c->slot->cls[rq->cls].level_arrived[level], 1);
    rq->counted = 1;
}

/*
 * QosCtl LogOnly, below the top: the request is counted as decided, at
 * the tree (or the 503) it would have got, and logged so, but served
 * from the top tree as with QosCtl Off.  Its arrival counts at the top
 * tree, which serves it, so that the controller's fit learns each
 * tree's cost from the work done: counted at the tree it would have
 * got, full-tree work would pass for that tree's.
 */
static QC_RARE int qc_dry_run(request_rec *r, const qc_server_conf *c,
                              qc_request_t *rq, apr_uint32_t m_fx)
{
    qc_add64(&c->slot->cls[rq->cls].would_arrived[rq->level], 1);
    rq->would = 1;
    qc_tell_reason(r, c, rq, m_fx, NULL);
    rq->level = c->levels;
    qc_count_arrival(c, rq, rq->level);
    return DECLINED;
}

/*
 * Below the top: the client's hash, and its connection's kept tree or a
 * pick.  The count before this request numbers the bucket's requests
 * across every thread and process: the draws of one heavy key follow one
 * sequence, so its full-quality replies come evenly spaced, not in the
 * clumps that queue a link.
 */
static QC_RARE void qc_below_top(const request_rec *r,
                                 const qc_server_conf *c,
                                 qc_class_shm_t *cs, qc_request_t *rq,
                                 apr_uint32_t m_fx)
{
    unsigned bucket;
    int kept;

    rq->n = qc_client_hash(r);
    bucket = qc_hash_bucket(rq->n);
    kept = qc_kept_level(r, c, rq, rq->n, m_fx);
    rq->kept = kept >= 0;
    rq->level = qc_pick(c, cs, m_fx, rq->n, bucket,
                        (apr_uint32_t)qc_add64(&cs->bucket_arrived[bucket],
                                               1), kept);
}

/*
 * The rest of a decision that is not the top tree at light load: the
 * connection's tree kept, the dry run, the reason, and the 503.
 */
static QC_RARE int qc_decided(request_rec *r, const qc_server_conf *c,
                              qc_request_t *rq, apr_uint32_t m_fx,
                              int fail_open)
{
    if (m_fx < c->top_fx) {
        qc_keep_level(r, c, rq, rq->n, m_fx);
    }
    if (rq->level < c->levels && qc_rt.main->log_only) {
        return qc_dry_run(r, c, rq, m_fx);
    }
    qc_count_arrival(c, rq, rq->level);
    qc_tell_reason(r, c, rq, m_fx, fail_open ? "fail-open" : NULL);
    if (rq->level == 0) {
        rq->rejected = 1;
        if (qc_rt.main->retry_after > 0) {
            apr_table_setn(r->err_headers_out, "Retry-After",
                           apr_itoa(r->pool, qc_rt.main->retry_after));
        }
        return HTTP_SERVICE_UNAVAILABLE;
    }
    qc_tell_level(r, c, rq->level);
    return DECLINED;
}

int qc_decide(request_rec *r)
{
    qc_server_conf *c;
    qc_request_t *rq;
    request_rec *first;
    apr_uint32_t m_fx;
    int fail_open = 0;

    if (!qc_rt.shm) {
        return DECLINED;
    }
    c = qc_sconf(r->server);
    first = qc_initial(r);
    if (first != r) {
        /* Subrequests and redirects share the initial decision; an
         * ErrorDocument for our own 503 is served from the top tree. */
        const qc_request_t *orig = qc_note(first);

        rq = qc_note_new(r);
        if (orig) {
            *rq = *orig;
            rq->served_level = 0;
            if (rq->rejected) {
                rq->level = c->levels;
                rq->rejected = 0;
            }
        }
        else {
            rq->level = c->levels;
            rq->excluded = 1;
        }
        qc_tell_level(r, c, rq->level);
        return DECLINED;
    }

    rq = qc_note_new(r);
    rq->cls = qc_classify(r, c);
    if (qc_is_excluded(r, c)) {
        rq->excluded = 1;
        rq->level = c->levels;
        qc_count_arrival(c, rq, rq->level);
        qc_tell_level(r, c, rq->level);
        qc_tell_reason(r, c, rq, 0, "excluded");
        return DECLINED;
    }
    m_fx = qc_level_fx(r, c, rq->cls, &fail_open);
    if (m_fx < c->top_fx) {
        qc_below_top(r, c, &c->slot->cls[rq->cls], rq, m_fx);
    }
    else {
        /* Full quality, the light-load case: no split, so neither the
         * hash nor who the clients are is needed.  The controller learns
         * the spread of the load from the first period below the top. */
        rq->level = c->levels;
    }
    if (!c->fixed_set && !fail_open) {
        qc_surge_guard(r, c, rq);
    }
    if (rq->level < c->levels || m_fx < c->top_fx || fail_open) {
        return qc_decided(r, c, rq, m_fx, fail_open);
    }
    qc_count_arrival(c, rq, rq->level);
    return DECLINED;
}

int qc_log(request_rec *r)
{
    qc_server_conf *c;
    qc_class_shm_t *cs;
    qc_request_t *rq;
    const qc_request_t *last_rq;
    request_rec *last = r;
    apr_uint64_t bytes;
    unsigned k;

    if (!qc_rt.shm || r->main) {
        return DECLINED;
    }
    c = qc_sconf(r->server);
    if (!(rq = qc_note(r))) {
        /* Never reached qc_decide: a bad request, or another module's
         * translate_name answered first. */
        rq = qc_note_new(r);
        rq->cls = qc_classify(r, c);
    }
    if (!rq->counted) {
        qc_count_arrival(c, rq, c->levels);
    }
    if (rq->rejected) {
        return DECLINED;        /* counted when it was decided */
    }
    while (last->next) {
        last = last->next;
    }
    bytes = (apr_uint64_t)last->bytes_sent;
    cs = &c->slot->cls[rq->cls];
    last_rq = qc_note(last);
    k = last_rq ? last_rq->served_level : 0;
    qc_add64(&cs->level_responses[k], 1);
    qc_add64(&cs->level_bytes[k], bytes);
    return DECLINED;
}
