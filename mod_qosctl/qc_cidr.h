/* Licensed under the Apache License, Version 2.0. */

/*
 * Address ranges for QosCtlPremiumAddress, free of httpd.  Matching works
 * on the binary address a request already carries (apr_sockaddr_t's
 * ipaddr_ptr), so the request path neither formats nor parses strings.
 */

#ifndef QC_CIDR_H
#define QC_CIDR_H

#include <stddef.h>

typedef struct {
    unsigned char family;     /* 4 or 6 */
    unsigned char bits;       /* prefix length: 0..32 or 0..128 */
    unsigned char addr[16];   /* network address, host bits zeroed */
} qc_cidr_t;

/*
 * "192.0.2.0/24", "10.1.2.3" (a /32), "2001:db8::/32", "::1" (a /128).
 * Host bits set below the prefix are cleared, as httpd's Require ip
 * does.  Returns NULL or a static reason.
 */
const char *qc_cidr_parse(const char *s, qc_cidr_t *out);

/*
 * Does the address (4 bytes for family 4, 16 for family 6) fall in c?
 * An IPv4-mapped IPv6 address (::ffff:a.b.c.d) matches IPv4 ranges,
 * since a dual-stack listener reports IPv4 clients that way; likewise an
 * IPv4 address matches an IPv6 range that covers its mapped form.
 * family is 4 or 6 (not AF_INET/AF_INET6); anything else never matches.
 */
int qc_cidr_match(const qc_cidr_t *c, int family, const unsigned char *addr);

/* Does any of the n ranges match? */
int qc_cidr_match_any(const qc_cidr_t *c, size_t n, int family,
                      const unsigned char *addr);

#endif /* QC_CIDR_H */
