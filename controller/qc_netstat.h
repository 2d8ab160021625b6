/* Licensed under the Apache License, Version 2.0. */

/*
 * The kernel's TCP counters of connection attempts at listeners, read
 * once a period from /proc/net/netstat ("TcpExt:") and /proc/net/snmp
 * ("Tcp:") of the current network namespace.  Queue monitoring (Tsai et al.,
 * sections 5.3 and 6.1) needs per period the attempts to enter the
 * accept queue and the attempts the kernel dropped; the request counters
 * cannot see either, since a dropped SYN or ACK never reaches httpd.
 * The counters are the namespace's: every listener of it, not only
 * httpd's.  Free of httpd.
 */

#ifndef QC_NETSTAT_H
#define QC_NETSTAT_H

#include <apr.h>

/* Bits of qc_netstat_t.have: the counters that were read. */
#define QC_NETSTAT_PASSIVE_OPENS    0x01u   /* Tcp: PassiveOpens */
#define QC_NETSTAT_LISTEN_OVERFLOWS 0x02u   /* TcpExt: ListenOverflows */
#define QC_NETSTAT_LISTEN_DROPS     0x04u   /* TcpExt: ListenDrops */
#define QC_NETSTAT_REQQ_FULL_DROPS  0x08u   /* TcpExt: TCPReqQFullDrop */
#define QC_NETSTAT_ALL              0x0fu

/*
 * What Linux counts (net/ipv4/tcp_input.c, tcp_ipv4.c, tcp_minisocks.c):
 * - PassiveOpens: child sockets created, i.e. handshakes completed into
 *   an accept queue (with Fast Open data: at the SYN).  Not, as RFC 1213
 *   has it, every LISTEN -> SYN-RECEIVED: a SYN that got its SYN-ACK but
 *   whose ACK found the accept queue full is none.
 * - ListenDrops: every SYN or handshake-completing ACK a listener
 *   discarded, for whatever reason.  It includes ListenOverflows and
 *   TCPReqQFullDrop.
 * - ListenOverflows: those discarded because the accept queue was full
 *   (at the SYN or at the ACK).
 * - TCPReqQFullDrop: SYNs discarded because the SYN queue was full and
 *   syncookies were off (absent on old kernels: then 0, bit clear).
 * A counter whose bit is clear is 0 and unknown.
 */
typedef struct {
    apr_uint64_t passive_opens, listen_overflows, listen_drops;
    apr_uint64_t reqq_full_drops;
    unsigned have;              /* QC_NETSTAT_* bits of the counters read */
} qc_netstat_t;

/*
 * Pure: take the counters from the texts of /proc/net/netstat and
 * /proc/net/snmp (NUL-terminated; either may be NULL), by name.  Any
 * text is safe: what cannot be read is left unknown.  Returns n->have.
 */
unsigned qc_netstat_parse(qc_netstat_t *n, const char *netstat_text,
                          const char *snmp_text);

/*
 * Read the two files (NULL: /proc/net/netstat and /proc/net/snmp) and
 * parse them.  Returns 0, or -1 if neither file could be read.
 */
int qc_netstat_read(qc_netstat_t *n, const char *netstat_path,
                    const char *snmp_path);

/*
 * Per-period figures from two readings:
 *   drops    = delta ListenDrops (it already holds the other two drop
 *              counters: adding them would count a drop twice);
 *   attempts = delta PassiveOpens + drops (no dropped SYN or ACK became
 *              an open; each retransmission is an attempt of its own).
 * A counter that went backwards (a namespace change, a restart) gives 0
 * for the period; a figure is < 0 when a counter it needs is unknown in
 * either reading.
 */
void qc_netstat_delta(const qc_netstat_t *prev, const qc_netstat_t *cur,
                      double *attempts, double *drops);

/*
 * The passive metric of Ohta and Andou, "WWW server load balancing
 * technique employing passive measurement of server performance" (§3),
 * for a period: R = (N_SYN - N_SYNACK) / N_SYNACK, from
 * qc_netstat_delta's figures: N_SYN = attempts and N_SYNACK =
 * attempts - drops (a SYN the kernel kept was answered; an
 * ACK dropped at a full accept queue counts as a SYN unanswered, as a
 * balancer would see it retried).  0 without attempts; with attempts
 * and none answered, drops / 1.
 */
double qc_syn_ratio(double attempts, double drops);

#endif /* QC_NETSTAT_H */
