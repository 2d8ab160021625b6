/* Licensed under the Apache License, Version 2.0. */

#include <string.h>

#include "qc_uri.h"

int qc_uri_confined(const char *uri, size_t maxlen)
{
    const char *p, *end;
    size_t len;

    if (uri == NULL || uri[0] != '/') {
        return 0;
    }
    len = strnlen(uri, maxlen + 1);     /* the URI may be huge */
    if (len > maxlen || memchr(uri, '\\', len)) {
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
