/* Licensed under the Apache License, Version 2.0. */

/*
 * URI checks for the content-tree actuator, free of httpd.  httpd has
 * already decoded and normalized r->uri before translate_name; these
 * checks are the actuator's own guarantee that a URI, once a tree prefix
 * is put in front of it, names something inside that tree.
 */

#ifndef QC_URI_H
#define QC_URI_H

#include <stddef.h>

/*
 * Is uri safe to append to a tree prefix?  It must start with '/', and
 * have no "." or ".." segment and no backslash (a separator on some
 * filesystems); empty segments ("//") are harmless and allowed.  A URI
 * longer than maxlen is refused.  Returns 1 when safe, 0 otherwise.
 */
int qc_uri_confined(const char *uri, size_t maxlen);

/* The same for a uri the caller has measured: strlen(uri) == len. */
int qc_uri_confined_len(const char *uri, size_t len);

/*
 * Does prefix (a normalized URL-path prefix, see qc_parse_url_prefix)
 * cover uri at a segment boundary?  "/status" covers "/status",
 * "/status/" and "/status/x", not "/statusx".  The empty prefix covers
 * everything.
 */
int qc_uri_under(const char *prefix, size_t prefix_len, const char *uri);

/* What a prefix of a URI names in a tree, as a probe reports it. */
typedef enum {
    QC_URI_NONE = 0,            /* nothing, or nothing to serve */
    QC_URI_DIR,
    QC_URI_FILE
} qc_uri_kind_t;

typedef qc_uri_kind_t (*qc_uri_probe_t)(void *ctx, size_t prefix_len);

/*
 * The file part of a URI that goes on past a file (path info), split as
 * the core's directory walk splits it: the first segment that is a file
 * ends the file part, the rest is path info.  probe is asked about the
 * prefixes of uri[0..len) that end a non-empty segment, shortest first,
 * never about the whole URI (the caller has looked at that already).
 * Returns the file part's length, or 0 when a prefix is neither a
 * directory nor a file, or when no prefix is a file.
 */
size_t qc_uri_file_prefix(const char *uri, size_t len,
                          qc_uri_probe_t probe, void *ctx);

#endif /* QC_URI_H */
