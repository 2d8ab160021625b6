/* Licensed under the Apache License, Version 2.0. */

/* Loopback sockets for the unit tests that read the kernel's view of
 * them (qc_test_net.h). */

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "qc_test_net.h"

int qc_test_listener(int af, unsigned short *port, int backlog)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd = socket(af, SOCK_STREAM, 0), on = 1;

    memset(&ss, 0, sizeof(ss));
    if (af == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;

        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a->sin_port = htons(*port);
        len = sizeof(*a);
    }
    else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        a->sin6_port = htons(*port);
        len = sizeof(*a);
        if (fd >= 0) {
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
        }
    }
    if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) != 0
        || listen(fd, backlog) != 0
        || getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    *port = ntohs(af == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                  : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return fd;
}
