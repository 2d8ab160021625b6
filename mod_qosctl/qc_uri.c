/* Licensed under the Apache License, Version 2.0. */

#include <string.h>

#include "qc_uri.h"

int qc_uri_confined(const char *uri, size_t maxlen)
{
    size_t i, seg_start;

    if (uri == NULL || uri[0] != '/') {
        return 0;
    }
    /* Nearly every URI has neither "/." nor a backslash; glibc finds
     * that faster than the walk below, which runs for the rest. */
    if (strnlen(uri, maxlen + 1) <= maxlen && !strchr(uri, '\\')
        && !strstr(uri, "/.")) {
        return 1;
    }
    /* Scan at most maxlen + 1 bytes: the URI may be huge. */
    seg_start = 1;
    for (i = 1; ; i++) {
        char c;

        if (i > maxlen) {
            return 0;
        }
        c = uri[i];
        if (c == '\\') {
            return 0;
        }
        if (c == '/' || c == '\0') {
            size_t n = i - seg_start;

            if ((n == 1 && uri[seg_start] == '.')
                || (n == 2 && uri[seg_start] == '.'
                    && uri[seg_start + 1] == '.')) {
                return 0;
            }
            if (c == '\0') {
                return 1;
            }
            seg_start = i + 1;
        }
    }
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
