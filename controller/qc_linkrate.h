/* Licensed under the Apache License, Version 2.0. */

/*
 * What an interface can send now, as far as the kernel says: the rate
 * of a token bucket shaping it (a root tbf qdisc, as `tc qdisc add dev
 * eth0 root tbf rate 25mbit ...` sets) and the speed its driver
 * negotiated (/sys/class/net/IF/speed, Mbit/s).  The link sensor
 * (qc_sensors.h) divides by the least of these and the rate the
 * administrator declared, so a shaper turned down, or a port that came
 * back at 100 Mbit/s, shows as the utilization it is without a new
 * configuration.  Free of httpd.
 */

#ifndef QC_LINKRATE_H
#define QC_LINKRATE_H

#include <stddef.h>

/*
 * One recv()'s worth of an RTM_GETQDISC dump (len bytes at buf, aligned
 * for struct nlmsghdr, of sequence seq): the rate in bits/s of the root
 * tbf qdisc of interface ifindex goes to *bits (left alone when there
 * is none).  1: the dump is done, 0: more to read, -1: the kernel
 * answered an error.  Never reads past len, whatever the messages' and
 * attributes' lengths say.
 */
int qc_linkrate_parse(const void *buf, int len, unsigned seq, int ifindex,
                      double *bits);

/*
 * The root tbf rate of ifindex in bits/s, or -1 when it has none or the
 * kernel cannot be asked.  One netlink request, answered within 0.2 s.
 */
double qc_linkrate_shaper(int ifindex);

/*
 * The speed in bits/s in a /sys/class/net/IF/speed file, or -1 when it
 * is unknown (virtual interfaces say -1, or give no value).
 */
double qc_linkrate_speed(const char *path);

#endif /* QC_LINKRATE_H */
