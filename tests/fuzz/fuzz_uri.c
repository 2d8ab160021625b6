/* Licensed under the Apache License, Version 2.0. */

/*
 * libFuzzer target: URI-to-tree mapping (mod_qosctl/qc_uri.c, with the
 * tree prefixes from qc_parse_url_prefix).
 *
 * qc_map() in qc_request.c needs a request_rec, so this target does what
 * it does with the pure parts: a URI that starts with '/', is at most
 * QC_MAX_URI bytes and passes qc_uri_confined_len(uri, strlen(uri)) is put
 * behind the DocumentRoot and a tree prefix.  qc_is_excluded() is
 * qc_uri_under() over the QosCtlExclude prefixes.
 *
 * Input: the URI (as r->uri holds it: already decoded, so any byte but
 * NUL), NUL, optionally a tree or exclude prefix as the directive gives
 * it, NUL, then 8 bytes of maxlen and 2 bytes choosing a prefix length
 * for qc_uri_under.
 *
 * Checked: qc_uri_confined (and qc_uri_confined_len, for a measured
 * URI) agrees with an independent segment walk
 * (starts with '/', no "." or ".." segment, no backslash, not longer
 * than maxlen), reads no further than maxlen + 1 bytes of an
 * unterminated URI, and a mapped path has no dot segment or backslash,
 * starts with DocumentRoot + tree at a segment boundary and is under
 * the tree by qc_uri_under; qc_uri_under agrees with its definition.
 * For a tree or exclude prefix as normalized, qc_url_prefix_contains
 * (qc_parse.c: does one prefix cover another) agrees with qc_uri_under.
 */

#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "qc_parse.h"
#include "qc_uri.h"

/* QC_MAX_URI of qc_module.h, which needs httpd.h. */
#define FUZZ_MAX_URI 4096

#define FUZZ_DOCROOT "/var/www/html"

/* Trees as conf/examples and the README name them ("" is "/"). */
static const char *const fuzz_trees[] = {
    "", "/degraded", "/full", "/qosctl-status", "/a/b.c"
};

/* Is the segment [p, p + n) "." or ".."? */
static int fuzz_dot_segment(const char *p, size_t n)
{
    return (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.'
                                       && p[1] == '.');
}

/* Does the path (n bytes) have a "." or ".." segment? */
static int fuzz_has_dot_segment(const char *path, size_t n)
{
    const char *p = path, *end = path + n;

    while (p < end) {
        const char *seg = p, *slash = memchr(p, '/', (size_t)(end - p));
        const char *stop = slash ? slash : end;

        if (fuzz_dot_segment(seg, (size_t)(stop - seg))) {
            return 1;
        }
        p = slash ? slash + 1 : end;
    }
    return 0;
}

/* qc_uri_confined by its definition in qc_uri.h. */
static int fuzz_confined_ref(const char *uri, size_t len, size_t maxlen)
{
    return len > 0 && uri[0] == '/' && len <= maxlen
           && memchr(uri, '\\', len) == NULL
           && !fuzz_has_dot_segment(uri + 1, len - 1);
}

/* qc_uri_under by its definition in qc_uri.h (plus the '/' rule). */
static int fuzz_under_ref(const char *prefix, size_t plen, const char *uri)
{
    size_t ulen;

    if (plen == 0) {
        return 1;
    }
    if (uri == NULL) {
        return 0;
    }
    ulen = strlen(uri);
    return ulen >= plen && memcmp(uri, prefix, plen) == 0
           && (uri[plen] == '\0' || uri[plen] == '/'
               || prefix[plen - 1] == '/');
}

static void fuzz_confined(const char *uri, size_t len, size_t maxlen)
{
    int got = qc_uri_confined(uri, maxlen);

    FUZZ_CHECK(got == 0 || got == 1, uri);
    FUZZ_CHECK(got == fuzz_confined_ref(uri, len, maxlen), uri);
    FUZZ_CHECK(qc_uri_confined_len(uri, len)
               == fuzz_confined_ref(uri, len, len), uri);
}

/*
 * The URI without its NUL, as a client could send more bytes than the
 * limit: a URI longer than maxlen is refused without reading past
 * maxlen + 1 bytes.
 */
static void fuzz_unterminated(const char *uri, size_t len, size_t maxlen)
{
    char *raw;

    if (len == 0) {
        return;
    }
    raw = fuzz_alloc(len);
    memcpy(raw, uri, len);
    FUZZ_CHECK(qc_uri_confined(raw, len - 1) == 0, uri);
    FUZZ_CHECK(qc_uri_confined(raw, maxlen % len) == 0, uri);
}

/* What qc_map() does for tree (normalized) and uri, and what must hold. */
static void fuzz_map(const char *tree, const char *uri, size_t ulen)
{
    size_t rlen = strlen(FUZZ_DOCROOT), tlen = strlen(tree);
    char *fn, *tree_uri;

    if (uri[0] != '/' || ulen > FUZZ_MAX_URI
        || !qc_uri_confined_len(uri, ulen)) {
        return;
    }
    fn = fuzz_alloc(rlen + tlen + ulen + 1);
    memcpy(fn, FUZZ_DOCROOT, rlen);
    memcpy(fn + rlen, tree, tlen);
    memcpy(fn + rlen + tlen, uri, ulen + 1);
    tree_uri = fn + rlen;

    FUZZ_CHECK(!strncmp(fn, FUZZ_DOCROOT, rlen), uri);
    FUZZ_CHECK(!strncmp(tree_uri, tree, tlen), uri);
    FUZZ_CHECK(tree_uri[tlen] == '/', uri);
    FUZZ_CHECK(!fuzz_has_dot_segment(fn + 1, rlen + tlen + ulen - 1), fn);
    FUZZ_CHECK(strstr(fn, "/../") == NULL && strstr(fn, "/./") == NULL, fn);
    FUZZ_CHECK(strchr(fn, '\\') == NULL, fn);
    FUZZ_CHECK(qc_uri_under(tree, tlen, tree_uri) == 1, fn);
    FUZZ_CHECK(qc_uri_confined(tree_uri, tlen + ulen) == 1, fn);
}

static void fuzz_under(const char *prefix, size_t plen, const char *uri)
{
    int got = qc_uri_under(prefix, plen, uri);

    FUZZ_CHECK(got == 0 || got == 1, uri);
    FUZZ_CHECK(got == fuzz_under_ref(prefix, plen, uri), uri);
}

/* Length without trailing '/'s. */
static size_t fuzz_trimmed(const char *s)
{
    size_t n = strlen(s);

    while (n > 0 && s[n - 1] == '/') {
        n--;
    }
    return n;
}

/* qc_url_prefix_contains by its definition in qc_parse.h. */
static int fuzz_contains_ref(const char *outer, const char *inner)
{
    size_t lo = fuzz_trimmed(outer), li = fuzz_trimmed(inner);

    if (li == lo) {
        return strncmp(outer, inner, lo) == 0;
    }
    return li > lo && strncmp(outer, inner, lo) == 0 && inner[lo] == '/';
}

/* outer and inner any strings; tree normalized, when not NULL. */
static void fuzz_contains(const char *outer, const char *inner,
                          const char *tree)
{
    int got = qc_url_prefix_contains(outer, inner);

    FUZZ_CHECK(got == fuzz_contains_ref(outer, inner), inner);
    FUZZ_CHECK(qc_url_prefix_contains(outer, outer) == 1, outer);
    if (tree != NULL && inner[0] == '/') {
        FUZZ_CHECK(qc_url_prefix_contains(tree, inner)
                   == qc_uri_under(tree, strlen(tree), inner), inner);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_t in = { data, size };
    const char *uri = fuzz_field(&in);
    const char *raw_prefix = fuzz_field(&in);
    size_t maxlen = (size_t)fuzz_u64(&in);
    unsigned cut = fuzz_u16(&in);
    size_t len = strlen(uri), rplen = strlen(raw_prefix), i;
    char tree[256];

    fuzz_confined(uri, len, maxlen);
    fuzz_confined(uri, len, len);
    fuzz_confined(uri, len, FUZZ_MAX_URI);
    fuzz_confined(uri, len, 0);
    if (len > 0) {
        fuzz_confined(uri, len, len - 1);
    }
    FUZZ_CHECK(qc_uri_confined(NULL, maxlen) == 0, uri);
    fuzz_unterminated(uri, len, maxlen);

    for (i = 0; i < sizeof(fuzz_trees) / sizeof(fuzz_trees[0]); i++) {
        fuzz_map(fuzz_trees[i], uri, len);
        fuzz_under(fuzz_trees[i], strlen(fuzz_trees[i]), uri);
        fuzz_contains(fuzz_trees[i], uri, fuzz_trees[i]);
    }
    if (qc_parse_url_prefix(raw_prefix, tree, sizeof(tree)) == NULL) {
        fuzz_map(tree, uri, len);
        fuzz_under(tree, strlen(tree), uri);
        fuzz_contains(tree, uri, tree);
        fuzz_contains(raw_prefix, tree, NULL);
        FUZZ_CHECK(qc_url_prefix_contains(tree, raw_prefix) == 1, tree);
    }
    fuzz_contains(raw_prefix, uri, NULL);
    fuzz_contains(uri, raw_prefix, NULL);
    /* Any prefix and length, as long as the length is within it. */
    fuzz_under(raw_prefix, rplen, uri);
    fuzz_under(raw_prefix, cut % (rplen + 1), uri);
    fuzz_under(raw_prefix, rplen, NULL);
    fuzz_under(uri, len, raw_prefix);
    apr_pool_clear(fuzz_pool);
    return 0;
}
