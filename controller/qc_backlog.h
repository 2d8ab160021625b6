/* Licensed under the Apache License, Version 2.0. */

/*
 * Connections that have finished their handshake and wait for httpd to
 * accept them: the accept queues of httpd's listening sockets (what
 * `ss -lt` shows as Recv-Q), read from the kernel's sock_diag netlink
 * interface once a period.  Free of httpd.
 *
 * They are arrivals the request counters have not counted yet: on a
 * saturated link the event MPM stops accepting while its connections
 * wait to write (doc/control.md); the controller adds the queue's
 * growth to the counted arrivals.
 */

#ifndef QC_BACKLOG_H
#define QC_BACKLOG_H

#define QC_BACKLOG_MAX_PORTS 16

typedef struct {
    int fd;                     /* NETLINK_SOCK_DIAG; -1: none */
    unsigned seq;               /* of the last request */
    unsigned nports;
    unsigned short ports[QC_BACKLOG_MAX_PORTS];     /* host order */
} qc_backlog_t;

/*
 * Watch the listeners on these TCP ports (of this network namespace;
 * a port given twice counts once).
 * Returns 0, or -1 when the kernel offers no sock_diag (the reader then
 * says "unknown").
 */
int qc_backlog_init(qc_backlog_t *b, const unsigned short *ports,
                    unsigned nports);

/* Connections waiting in those accept queues, or -1 when unknown. */
long qc_backlog_read(qc_backlog_t *b);

/*
 * The same, and in *limit (unless NULL) the sum of those queues' limits
 * (the backlog given to listen(), capped by net.core.somaxconn), or -1
 * when unknown.  Linux refuses a connection only when the queue already
 * holds more than its limit: a queue holds limit + 1.
 */
long qc_backlog_read_limit(qc_backlog_t *b, long *limit);

/*
 * Bytes that httpd's connections on those ports have written and the
 * clients not yet acknowledged: what waits in socket buffers and the
 * link's queue (`ss -t` Send-Q, summed), or -1 when unknown.  On a
 * saturated link it is the backlog the link has to send; its growth
 * over a period is load beyond what the link carried.
 */
long qc_backlog_read_sendq(qc_backlog_t *b);

void qc_backlog_close(qc_backlog_t *b);

#ifdef __linux__
/*
 * One recv()'s worth of a sock_diag dump (len bytes at buf, aligned for
 * struct nlmsghdr): adds the matching sockets' receive queues to *sum
 * and their send queues to *limit (a listener's are its accept queue
 * and its limit).  1: the dump is done, 0: more to read, -1: the
 * kernel answered an error.  Never reads past len, whatever the
 * messages' lengths say.
 */
int qc_backlog_parse(const qc_backlog_t *b, const void *buf, int len,
                     long *sum, long *limit);
#endif

#endif /* QC_BACKLOG_H */
