/* Licensed under the Apache License, Version 2.0. */

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "qc_safe_open.h"

/* Why a directory's entries might be replaced by someone else, or NULL
 * when they cannot. */
static const char *qc_dir_unsafe(const struct stat *st, uid_t me)
{
    if (!S_ISDIR(st->st_mode)) {
        return "is not a directory";
    }
    if (st->st_uid != 0 && st->st_uid != me) {
        return "is a directory owned by another user";
    }
    /* Sticky: others may add names, but not replace root's. */
    if (st->st_mode & S_ISVTX) {
        return NULL;
    }
    if (st->st_mode & S_IWOTH) {
        return "is a directory every user may write";
    }
    if ((st->st_mode & S_IWGRP) && st->st_gid != 0) {
        return "is a directory its group may write";
    }
    return NULL;
}

static int qc_refuse(int dfd, int err, const char *reason,
                     const char **why)
{
    if (dfd >= 0) {
        close(dfd);
    }
    *why = reason;
    errno = err;
    return -1;
}

int qc_safe_open(const char *path, int flags, mode_t mode,
                 const char **why, size_t *bad_len)
{
    const char *p = path, *end;
    char name[256];
    struct stat st;
    uid_t me = geteuid();
    int dfd, fd;

    *bad_len = 1;
    if (path[0] != '/') {
        return qc_refuse(-1, EINVAL, "is not an absolute path", why);
    }
    dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (;;) {
        if (dfd < 0) {
            return qc_refuse(-1, errno, "cannot be opened", why);
        }
        if (fstat(dfd, &st) != 0) {
            return qc_refuse(dfd, errno, "cannot be examined", why);
        }
        if ((*why = qc_dir_unsafe(&st, me)) != NULL) {
            return qc_refuse(dfd, EPERM, *why, why);
        }
        while (*p == '/') {
            p++;
        }
        end = strchr(p, '/');
        if (!end) {
            break;
        }
        *bad_len = (size_t)(end - path);
        if ((size_t)(end - p) >= sizeof(name)) {
            return qc_refuse(dfd, ENAMETOOLONG, "is too long a name", why);
        }
        memcpy(name, p, (size_t)(end - p));
        name[end - p] = '\0';
        if (!strcmp(name, "..")) {
            /* The walk checks each directory going down only. */
            return qc_refuse(dfd, EINVAL, "is \"..\"", why);
        }
        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW
                    | O_CLOEXEC);
        /* A link gives ELOOP or ENOTDIR, as the kernel sees it. */
        if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
            int link = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0
                       && S_ISLNK(st.st_mode);

            return qc_refuse(dfd, link ? ELOOP : ENOTDIR, link
                             ? "is a symbolic link" : "is not a directory",
                             why);
        }
        close(dfd);
        dfd = fd;
        p = end;
    }
    *bad_len = strlen(path);
    if (!*p) {
        return qc_refuse(dfd, EISDIR, "names a directory", why);
    }
    fd = openat(dfd, p, flags | O_CREAT | O_NOFOLLOW | O_CLOEXEC
                | O_NONBLOCK, mode);
    if (fd < 0) {
        return qc_refuse(dfd, errno, errno == ELOOP ? "is a symbolic link"
                         : "cannot be opened", why);
    }
    close(dfd);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
        close(fd);
        return qc_refuse(-1, EPERM, "is not a regular file of its own (a "
                         "device, a FIFO or a hard link)", why);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}
