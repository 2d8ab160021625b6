/* Licensed under the Apache License, Version 2.0. */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "qc_safe_open.h"

/* Links followed on the way, at most (Debian's /var/run is one). */
#define QC_SAFE_LINKS 8

/* Whether a user other than root (or me) owns st. */
static int qc_foreign(const struct stat *st, uid_t me)
{
    return st->st_uid != 0 && st->st_uid != me;
}

/* Why a directory's entries might be replaced by someone else, or NULL
 * when they cannot. */
static const char *qc_dir_unsafe(const struct stat *st, uid_t me)
{
    if (!S_ISDIR(st->st_mode)) {
        return "is not a directory";
    }
    if (qc_foreign(st, me)) {
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

/*
 * The directory named by the link name in dfd, which spelled path up to
 * its end end: at becomes the link's target followed by the rest of the
 * path.  Returns 0, or -1 when that does not fit.
 */
static int qc_follow(int dfd, const char *name, char *at, size_t at_len,
                     const char *end)
{
    char target[PATH_MAX], rest[PATH_MAX];
    ssize_t n = readlinkat(dfd, name, target, sizeof(target) - 1);
    size_t dir = (size_t)(end - at) - strlen(name);
    int len;

    if (n <= 0 || strlen(end) >= sizeof(rest)) {
        return -1;
    }
    target[n] = '\0';
    strcpy(rest, end);
    if (target[0] == '/') {
        len = snprintf(at, at_len, "%s%s", target, rest);
    }
    else {
        /* Relative to the link's own directory, at[0, dir). */
        at[dir] = '\0';
        len = snprintf(at + dir, at_len - dir, "%s%s", target, rest);
        len += (int)dir;
    }
    return len < 0 || (size_t)len >= at_len ? -1 : 0;
}

/*
 * Walk at (an absolute path, at_len bytes of room) down to the directory
 * of its last component, as qc_safe_open() says.  Returns that
 * directory's descriptor with *last the component's name, or -1 (the
 * reasons of qc_refuse, at cut to the path at fault).
 */
static int qc_safe_walk(char *at, size_t at_len, const char **last,
                        const char **why)
{
    const char *p, *end;
    char name[NAME_MAX + 1];
    struct stat st;
    uid_t me = geteuid();
    int dfd, fd, links = 0;

    if (at[0] != '/') {
        return qc_refuse(-1, EINVAL, "is not an absolute path", why);
    }
restart:
    p = at;
    dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (;;) {
        if (dfd < 0) {
            return qc_refuse(-1, errno, "cannot be opened", why);
        }
        if (fstat(dfd, &st) != 0) {
            return qc_refuse(dfd, errno, "cannot be examined", why);
        }
        if ((*why = qc_dir_unsafe(&st, me)) != NULL) {
            /* at[0, p) named it; "/" for the root */
            at[p - at > 0 ? p - at : 1] = '\0';
            return qc_refuse(dfd, EPERM, *why, why);
        }
        while (*p == '/') {
            p++;
        }
        end = strchr(p, '/');
        if (!end) {
            break;
        }
        if ((size_t)(end - p) >= sizeof(name)) {
            return qc_refuse(dfd, ENAMETOOLONG, "has too long a name", why);
        }
        memcpy(name, p, (size_t)(end - p));
        name[end - p] = '\0';
        if (!strcmp(name, "..")) {
            /* The walk checks each directory going down only. */
            at[end - at] = '\0';
            return qc_refuse(dfd, EINVAL, "goes up (\"..\")", why);
        }
        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW
                    | O_CLOEXEC);
        /* A link gives ELOOP or ENOTDIR, as the kernel sees it.  One
         * that only root could have made or changed (in a directory
         * checked above) is followed, and its target checked in turn. */
        if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
            int link = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0
                       && S_ISLNK(st.st_mode);

            if (link && !qc_foreign(&st, me) && ++links <= QC_SAFE_LINKS
                && qc_follow(dfd, name, at, at_len, end) == 0) {
                close(dfd);
                goto restart;
            }
            at[end - at] = '\0';
            return qc_refuse(dfd, link ? ELOOP : ENOTDIR, !link
                             ? "is not a directory" : qc_foreign(&st, me)
                             ? "is a symbolic link another user owns"
                             : "is a symbolic link too many", why);
        }
        close(dfd);
        dfd = fd;
        p = end;
    }
    if (!*p) {
        return qc_refuse(dfd, EISDIR, "names a directory", why);
    }
    *last = p;
    return dfd;
}

int qc_safe_open(const char *path, int flags, mode_t mode,
                 const char **why, char *at, size_t at_len)
{
    const char *p;
    struct stat st;
    int dfd, fd;

    if (snprintf(at, at_len, "%s", path) >= (int)at_len) {
        return qc_refuse(-1, ENAMETOOLONG, "is too long", why);
    }
    if ((dfd = qc_safe_walk(at, at_len, &p, why)) < 0) {
        return -1;
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

int qc_safe_check(const char *path, const char **why, char *at,
                  size_t at_len)
{
    const char *p;
    struct stat st;
    int dfd;

    if (snprintf(at, at_len, "%s", path) >= (int)at_len) {
        return qc_refuse(-1, ENAMETOOLONG, "is too long", why);
    }
    if ((dfd = qc_safe_walk(at, at_len, &p, why)) < 0) {
        return -1;
    }
    if (fstatat(dfd, p, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) {
            close(dfd);
            return 0;               /* opening creates it */
        }
        return qc_refuse(dfd, errno, "cannot be examined", why);
    }
    if (S_ISLNK(st.st_mode)) {
        return qc_refuse(dfd, ELOOP, "is a symbolic link", why);
    }
    if (!S_ISREG(st.st_mode)) {
        return qc_refuse(dfd, EPERM, "is not a regular file (a directory, "
                         "a device or a FIFO)", why);
    }
    if (st.st_nlink != 1) {
        return qc_refuse(dfd, EPERM, "is a file with another hard link",
                         why);
    }
    close(dfd);
    return 0;
}
