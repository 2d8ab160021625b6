/* Licensed under the Apache License, Version 2.0. */

/*
 * Address ranges for QosCtlPremiumAddress, free of httpd.  Matching is
 * APR's apr_ipsubnet_test, what httpd's Require ip uses, on the address
 * a request already carries (r->useragent_addr), so the request path
 * neither formats nor parses strings.
 */

#ifndef QC_CIDR_H
#define QC_CIDR_H

#include <stddef.h>

#include "apr_network_io.h"
#include "apr_pools.h"

/* APR subnets one range needs at most (qc_cidr.c says why). */
#define QC_CIDR_SUBNETS 4

typedef struct {
    unsigned char family;     /* 4 or 6 */
    unsigned char bits;       /* prefix length: 0..32 or 0..128 */
    unsigned char addr[16];   /* network address, host bits zeroed */
    unsigned char nsub;       /* subnets in sub */
    apr_ipsubnet_t *sub[QC_CIDR_SUBNETS];   /* what APR tests */
} qc_cidr_t;

/*
 * "192.0.2.0/24", "10.1.2.3" (a /32), "2001:db8::/32", "::1" (a /128),
 * "::ffff:192.0.2.0/120".  Host bits set below the prefix are cleared,
 * as httpd's Require ip does.  Stricter than APR's syntax: an address
 * inet_pton takes whole (no "10.1" for 10.1.0.0/16, no octal), and a
 * prefix length of 1 to 3 digits, not a netmask.  The subnets come from
 * p.  Returns NULL or a static reason, *out then untouched.
 */
const char *qc_cidr_parse(apr_pool_t *p, const char *s, qc_cidr_t *out);

/* Whether c and d are the same range (their subnets aside). */
int qc_cidr_same(const qc_cidr_t *c, const qc_cidr_t *d);

/*
 * Does the client sa fall in c?  An IPv4-mapped IPv6 address
 * (::ffff:a.b.c.d) matches IPv4 ranges, since a dual-stack listener
 * reports IPv4 clients that way; likewise an IPv4 address matches an
 * IPv6 range that covers its mapped form.
 */
int qc_cidr_match_sa(const qc_cidr_t *c, const apr_sockaddr_t *sa);

/* The same for an address of 4 bytes (family 4) or 16 (family 6);
 * family is 4 or 6 (not AF_INET/AF_INET6): anything else never
 * matches. */
int qc_cidr_match(const qc_cidr_t *c, int family, const unsigned char *addr);

/* Does any of the n ranges match? */
int qc_cidr_match_any(const qc_cidr_t *c, size_t n, int family,
                      const unsigned char *addr);
int qc_cidr_match_any_sa(const qc_cidr_t *c, size_t n,
                         const apr_sockaddr_t *sa);

#endif /* QC_CIDR_H */
