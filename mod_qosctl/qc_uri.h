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

/*
 * Does prefix (a normalized URL-path prefix, see qc_parse_url_prefix)
 * cover uri at a segment boundary?  "/status" covers "/status",
 * "/status/" and "/status/x", not "/statusx".  The empty prefix covers
 * everything.
 */
int qc_uri_under(const char *prefix, size_t prefix_len, const char *uri);

#endif /* QC_URI_H */
