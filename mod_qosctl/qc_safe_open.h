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
 * must be a directory itself (not a symbolic link to one) that no one
 * but root (or, when not root, this process's user) may change, that
 * is owned by it and writable by no other user or group, unless
 * sticky (like /tmp).  The file itself must not be a symbolic link, and
 * once open must be a regular file with no other hard link; opening
 * does not block on a FIFO.  Returns the descriptor, or -1 with errno
 * set and *why a static reason; *bad_len then is the length of the
 * leading part of path that is at fault (the whole path: the file).
 */
int qc_safe_open(const char *path, int flags, mode_t mode,
                 const char **why, size_t *bad_len);

#endif /* QC_SAFE_OPEN_H */
