/* Licensed under the Apache License, Version 2.0. */

/*
 * What an interface can send now, as far as the kernel says: the rate
 * of the shaper at its root and the speed its driver negotiated
 * (/sys/class/net/IF/speed, Mbit/s).  The link sensor (qc_sensors.h)
 * divides by the least of these and the rate the administrator
 * declared, so a shaper turned down, or a port that came back at
 * 100 Mbit/s, shows as the utilization it is without a new
 * configuration.  Free of httpd.
 *
 * The shapers read are the two an admin sets on a server's port: a
 * root tbf (`tc qdisc add dev eth0 root tbf rate 25mbit ...`), whose
 * rate is the link's, and a root htb, whose top-level classes can send
 * at most the sum of their ceilings.  An htb whose default class does
 * not exist lets unclassified packets past unshaped, so it bounds
 * nothing.
 */

#ifndef QC_LINKRATE_H
#define QC_LINKRATE_H

#include <stddef.h>

/* What the dumps of one interface's qdiscs and classes said so far. */
typedef struct {
    int ifindex;
    double tbf;                 /* root tbf's rate, bits/s; -1: none */
    unsigned htb;               /* root htb's handle; 0: none */
    unsigned htb_default;       /* its default class's id; 0: none */
    double htb_ceil;            /* its top-level classes' ceilings */
    int htb_default_seen;       /* that class exists */
} qc_linkrate_shape_t;

void qc_linkrate_shape_init(qc_linkrate_shape_t *s, int ifindex);

/*
 * One recv()'s worth of an RTM_GETQDISC or RTM_GETTCLASS dump (len
 * bytes at buf, aligned for struct nlmsghdr, of sequence seq), taken
 * into *s.  1: the dump is done, 0: more to read, -1: the kernel
 * answered an error.  Never reads past len, whatever the messages' and
 * attributes' lengths say.
 */
int qc_linkrate_parse(qc_linkrate_shape_t *s, const void *buf, int len,
                      unsigned seq);

/* What the shaper lets the interface send, bits/s, or -1: none known. */
double qc_linkrate_shape_bits(const qc_linkrate_shape_t *s);

/*
 * The shaper's rate of ifindex in bits/s, or -1 when it has none or the
 * kernel cannot be asked.  One netlink request (two under an htb), each
 * answered within 0.2 s.
 */
double qc_linkrate_shaper(int ifindex);

/*
 * The speed in bits/s in a /sys/class/net/IF/speed file, or -1 when it
 * is unknown (virtual interfaces say -1, or give no value).
 */
double qc_linkrate_speed(const char *path);

#endif /* QC_LINKRATE_H */
