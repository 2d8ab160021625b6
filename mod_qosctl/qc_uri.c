/* Licensed under the Apache License, Version 2.0. */

#include <string.h>

#include "qc_uri.h"

int qc_uri_confined(const char *uri, size_t maxlen)
{
    size_t len;

    if (uri == NULL) {
        return 0;
    }
    len = strnlen(uri, maxlen);         /* the URI may be huge */
    return uri[len] == '\0' && qc_uri_confined_len(uri, len);
}

int qc_uri_confined_len(const char *uri, size_t len)
{
    const char *p, *end;

    if (len == 0 || uri[0] != '/' || memchr(uri, '\\', len)) {
        return 0;
    }
    /* A "." or ".." segment starts with "/.", so only dots need a look,
     * and most URIs have one (the extension): memchr finds them faster
     * than a walk over every byte, or glibc's strstr for "/.". */
    end = uri + len;
    for (p = uri + 1; (p = memchr(p, '.', (size_t)(end - p))) != NULL;
         p++) {
        if (p[-1] == '/'
            && (p + 1 == end || p[1] == '/'
                || (p[1] == '.' && (p + 2 == end || p[2] == '/')))) {
            return 0;
        }
    }
    return 1;
}

int qc_uri_under(const char *prefix, size_t prefix_len, const char *uri)
{
    if (prefix_len == 0) {
        return 1;
    }
    if (uri == NULL || strncmp(uri, prefix, prefix_len) != 0) {
        return 0;
    }
    /* An unnormalized prefix ending in '/' is its own boundary. */
    return uri[prefix_len] == '\0' || uri[prefix_len] == '/'
           || prefix[prefix_len - 1] == '/';
}

size_t qc_uri_file_prefix(const char *uri, size_t len,
                          qc_uri_probe_t probe, void *ctx)
{
    const char *p, *end = uri + len;

    if (len == 0) {
        return 0;
    }
    /* The prefix before each '/' ends a segment; one before a second
     * '/' of "//" names what the one before the first did. */
    for (p = uri + 1; (p = memchr(p, '/', (size_t)(end - p))) != NULL;
         p++) {
        if (p[-1] == '/') {
            continue;
        }
        switch (probe(ctx, (size_t)(p - uri))) {
        case QC_URI_FILE:
            return (size_t)(p - uri);
        case QC_URI_DIR:
            break;
        default:
            return 0;
        }
    }
    return 0;
}
