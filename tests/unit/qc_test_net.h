/* Licensed under the Apache License, Version 2.0. */

#ifndef QC_TEST_NET_H
#define QC_TEST_NET_H

/* An IPv4 (af AF_INET) or IPv6 (v6 only) loopback listener with that
 * backlog, on *port (0: any; the port bound is written back); -1 on
 * failure. */
int qc_test_listener(int af, unsigned short *port, int backlog);

#endif /* QC_TEST_NET_H */
