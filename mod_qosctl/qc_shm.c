/* Licensed under the Apache License, Version 2.0. */

/*
 * The shared segment of counters and levels (paper §6.3).
 *
 * It is anonymous (nothing in /dev/shm, no SysV IPC object, no file) and
 * hangs off the process pool rather than pconf, so it outlives graceful
 * restarts: children of the old generation that are still finishing
 * requests keep counting into the same memory, and counts are intact.
 * It goes away with the parent.  Each virtual host keeps its slot across
 * restarts by its "host:port" key; the segment is only replaced when a
 * new configuration has more hosts than it has slots.  The random secret
 * that keys the client hash is made with the segment and carried over
 * when it is replaced, so clients keep their trees across restarts.
 */

#include "httpd.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "apr_shm.h"
#include "apr_strings.h"
#include "apr_atomic.h"
#include "apr_general.h"

#include "qc_module.h"

qc_runtime_t qc_rt;

APLOG_USE_MODULE(qosctl);

#define QC_SHM_USERDATA "qosctl-shm"
#define QC_MIN_SLOTS    32

static qc_shm_t *qc_shm_create(apr_pool_t *pproc, server_rec *s,
                               unsigned capacity, apr_shm_t **out)
{
    apr_shm_t *shm;
    qc_shm_t *q;
    apr_status_t rv = apr_shm_create(&shm, QC_SHM_SIZE(capacity), NULL,
                                     pproc);

    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s,
                     QC_LOGNO(10020)
                     "QosCtl: cannot create the anonymous shared memory "
                     "segment (%" APR_SIZE_T_FMT " bytes)",
                     QC_SHM_SIZE(capacity));
        return NULL;
    }
    q = apr_shm_baseaddr_get(shm);
    memset(q, 0, QC_SHM_SIZE(capacity));
    q->magic = QC_SHM_MAGIC;
    q->version = QC_SHM_VERSION;
    q->capacity = capacity;
    /* Without a secret a client could compute an address or cookie
     * that always gets the top tree: refuse to run rather than that. */
    rv = apr_generate_random_bytes((unsigned char *)&q->secret,
                                   sizeof(q->secret));
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s,
                     QC_LOGNO(10021)
                     "QosCtl: cannot read random bytes for the client "
                     "hash's secret");
        apr_shm_destroy(shm);
        return NULL;
    }
    *out = shm;
    return q;
}

static qc_slot_t *qc_slot_find(qc_shm_t *q, const char *key)
{
    unsigned i;

    for (i = 0; i < q->capacity; i++) {
        if (q->slots[i].in_use && !strcmp(q->slots[i].key, key)) {
            return &q->slots[i];
        }
    }
    return NULL;
}

/*
 * A slot nobody claimed in this configuration.  Never-used slots come
 * first, so that an old child still counting into a dropped host's slot
 * does not pollute a new host's counters.
 */
static qc_slot_t *qc_slot_free(qc_shm_t *q, const char *claimed)
{
    unsigned i;

    for (i = 0; i < q->capacity; i++) {
        if (!q->slots[i].in_use && !q->slots[i].key[0]) {
            return &q->slots[i];
        }
    }
    for (i = 0; i < q->capacity; i++) {
        if (!claimed[i]) {
            return &q->slots[i];
        }
    }
    return NULL;
}

static void qc_slot_init(qc_slot_t *slot, const char *key, unsigned levels)
{
    unsigned k;

    memset(slot, 0, sizeof(*slot));
    apr_cpystrn(slot->key, key, sizeof(slot->key));
    for (k = 0; k < QC_NCLASSES; k++) {
        slot->cls[k].level_fx = qc_level_to_fx(levels, levels);
        slot->cls[k].loop_fx = slot->cls[k].level_fx;
    }
    slot->ntrees = levels;
    slot->in_use = 1;
}

static void qc_fx_within(volatile apr_uint32_t *fx, unsigned levels)
{
    apr_atomic_set32(fx, qc_level_to_fx(
                         qc_level_from_fx(apr_atomic_read32(fx)), levels));
}

/* The level stays put over a restart, within the new range. */
static void qc_slot_rebind(qc_slot_t *slot, unsigned levels)
{
    unsigned k;

    for (k = 0; k < QC_NCLASSES; k++) {
        qc_fx_within(&slot->cls[k].level_fx, levels);
        qc_fx_within(&slot->cls[k].loop_fx, levels);
    }
    slot->ntrees = levels;
}

static void qc_runtime_fill(qc_server_conf *c, server_rec *s,
                            apr_pool_t *p)
{
    unsigned i;

    c->levels = qc_levels_of(c);
    c->top_fx = qc_level_to_fx(c->levels, c->levels);
    c->fixed_fx = c->fixed_set ? qc_level_to_fx(c->fixed_level, c->levels)
                               : c->top_fx;
    c->docroot = ((core_server_config *)
                  ap_get_core_module_config(s->module_config))
                 ->ap_document_root;
    c->docroot_len = c->docroot ? strlen(c->docroot) : 0;
    c->tree_maxlen = 0;
    for (i = 0; i < c->ntrees; i++) {
        c->tree_len[i] = strlen(c->trees[i]);
        if (c->tree_len[i] > c->tree_maxlen) {
            c->tree_maxlen = c->tree_len[i];
        }
        c->tree_path[i] = c->docroot ? apr_pstrcat(p, c->docroot,
                                                   c->trees[i], NULL)
                                     : NULL;
    }
    for (i = 0; i <= c->levels; i++) {
        c->level_names[i] = apr_psprintf(p, "%u/%u", i, c->levels);
    }
    c->server = s;
}

/*
 * The segment for n hosts: the one a previous configuration left on the
 * process pool when it fits, else a new one.  A grown segment carries
 * every host's counts and the status page's history over (old children
 * still finishing requests keep writing into the old one).  A segment
 * of another layout (a module upgrade over a graceful restart) is never
 * read: its counts are lost.
 */
static qc_shm_t *qc_shm_segment(apr_pool_t *pproc, server_rec *s,
                                unsigned n)
{
    apr_shm_t *shm = NULL, *fresh;
    qc_shm_t *q = NULL, *old = NULL;
    unsigned capacity = n * 2 > QC_MIN_SLOTS ? n * 2 : QC_MIN_SLOTS;
    void *data = NULL;

    apr_pool_userdata_get(&data, QC_SHM_USERDATA, pproc);
    if (data) {
        shm = data;
        q = apr_shm_baseaddr_get(shm);
        if (q->magic != QC_SHM_MAGIC || q->version != QC_SHM_VERSION
            || apr_shm_size_get(shm) < QC_SHM_SIZE(q->capacity)) {
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
                         QC_LOGNO(10022)
                         "QosCtl: the shared segment has another layout "
                         "(an upgrade); counts start again");
            q = NULL;
        }
        else if (q->capacity < n) {
            old = q;
            q = NULL;
        }
    }
    if (q) {
        return q;
    }
    if (!(q = qc_shm_create(pproc, s, capacity, &fresh))) {
        return NULL;
    }
    if (old) {
        memcpy(q->slots, old->slots, old->capacity * sizeof(qc_slot_t));
        /* Clients keep their trees across the move, and the status
         * page its chart. */
        q->secret = old->secret;
        memcpy((void *)q->hist_time, (const void *)old->hist_time,
               sizeof(q->hist_time));
        memcpy((void *)q->hist_u, (const void *)old->hist_u,
               sizeof(q->hist_u));
        q->hist_count = old->hist_count;
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
                     QC_LOGNO(10023)
                     "QosCtl: %u virtual hosts outgrew the shared "
                     "segment; counts of requests still finishing in "
                     "old children are not carried over", n);
    }
    if (shm) {
        apr_shm_destroy(shm);
    }
    apr_pool_userdata_set(fresh, QC_SHM_USERDATA, apr_pool_cleanup_null,
                          pproc);
    return q;
}

/* Every host of this configuration to its slot, kept by "host:port"
 * across restarts; slots nobody claims are freed. */
static void qc_shm_bind(apr_pool_t *pconf, qc_shm_t *q, server_rec *s,
                        unsigned n)
{
    char *claimed = apr_pcalloc(pconf, q->capacity);
    server_rec *v;
    unsigned i;

    qc_rt.servers = apr_array_make(pconf, n, sizeof(qc_server_conf *));
    for (v = s; v; v = v->next) {
        qc_server_conf *c = qc_sconf(v);
        const char *key = qc_server_key(pconf, v);
        qc_slot_t *slot = qc_slot_find(q, key);

        qc_runtime_fill(c, v, pconf);
        if (slot && claimed[slot - q->slots]) {
            /* Two hosts with one name and port: keep them apart. */
            key = qc_key_fit(pconf, apr_psprintf(pconf, "%s#%u", key,
                                                 (unsigned)
                                                 qc_rt.servers->nelts));
            slot = qc_slot_find(q, key);
        }
        if (slot) {
            qc_slot_rebind(slot, c->levels);
        }
        else {
            slot = qc_slot_free(q, claimed);
            qc_slot_init(slot, key, c->levels);
        }
        claimed[slot - q->slots] = 1;
        c->slot = slot;
        c->key = apr_pstrdup(pconf, slot->key);
        APR_ARRAY_PUSH(qc_rt.servers, qc_server_conf *) = c;
    }
    for (i = 0; i < q->capacity; i++) {
        if (!claimed[i]) {
            q->slots[i].in_use = 0;
        }
    }
}

apr_status_t qc_shm_setup(apr_pool_t *pconf, server_rec *s)
{
    qc_shm_t *q;
    server_rec *v;
    unsigned n = 0;

    for (v = s; v; v = v->next) {
        n++;
    }
    if (!(q = qc_shm_segment(s->process->pool, s, n))) {
        return APR_ENOMEM;
    }
    qc_shm_bind(pconf, q, s, n);
    q->generation++;
    apr_atomic_set64(&q->config_time, (apr_uint64_t)apr_time_now());
    qc_rt.shm = q;
    return APR_SUCCESS;
}
