/* Licensed under the Apache License, Version 2.0. */

/*
 * Opening a file as root where others may write, free of httpd so that
 * unit tests can link it alone.  Root opens QosCtlLog and
 * QosCtlStateFile before dropping to User; a user who could swap any
 * directory on the way for a symbolic link would have root create or
 * write a file of their choosing.
 */

#ifndef QC_SAFE_OPEN_H
#define QC_SAFE_OPEN_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Open the absolute path with flags (O_CREAT implied, mode for a new
 * file), walking it one component at a time from "/": every directory
 * must be one that no user but root (or, when not root, this process's
 * user) may change: owned by it, writable by no other user or group,
 * unless sticky (like /tmp).  A symbolic link on the way is followed
 * only when such a user owns it, and its target is walked in turn; the
 * file itself must not be a link, and once open must be a regular file
 * with no other hard link; opening does not block on a FIFO.  Returns
 * the descriptor, or -1 with errno set, *why a static reason, and in at
 * (at_len bytes) the path, as resolved so far, that is at fault.
 */
int qc_safe_open(const char *path, int flags, mode_t mode,
                 const char **why, char *at, size_t at_len);

/*
 * What qc_safe_open() would say of path, without opening or creating
 * anything: 0 when it would open (a file not there yet would be
 * created), else -1 with errno, *why and at as it sets them.  For
 * "apachectl -t", which must refuse what a start would.
 */
int qc_safe_check(const char *path, const char **why, char *at,
                  size_t at_len);

#endif /* QC_SAFE_OPEN_H */
