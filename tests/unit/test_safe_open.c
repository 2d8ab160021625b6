/* Licensed under the Apache License, Version 2.0. */

/*
 * qc_safe_open on real directories under /tmp.  What needs another
 * user (chown) is checked when run as root, as CI runs.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/stat.h>

#include "qc_safe_open.h"
#include "qc_test.h"

#define OTHER 65534     /* nobody */

static char top[32];            /* /tmp/qc-safe-open-XXXXXX */

static void setup(void)
{
    strcpy(top, "/tmp/qc-safe-open-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(top));
}

static void teardown(void)
{
    char cmd[64];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *in_top(const char *rel)
{
    static char buf[4][PATH_MAX];
    static int k;

    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s", top, rel);
    return buf[k];
}

/* Opening rel must succeed. */
static void opens(const char *rel)
{
    const char *why = NULL;
    char at[PATH_MAX];
    int fd = qc_safe_open(in_top(rel), O_WRONLY | O_APPEND, 0644, &why,
                          at, sizeof(at));

    ck_assert_msg(fd >= 0, "%s refused: %s %s", rel, at, why);
    close(fd);
}

/* Opening rel must fail because of bad (relative to top), for want. */
static void refuses(const char *rel, const char *bad, const char *want)
{
    const char *why = NULL;
    char at[PATH_MAX];
    int fd = qc_safe_open(in_top(rel), O_WRONLY | O_APPEND, 0644, &why,
                          at, sizeof(at));

    ck_assert_msg(fd < 0, "%s opened", rel);
    ck_assert_msg(why && strstr(why, want), "%s: \"%s\", not \"%s\"", rel,
                  why, want);
    ck_assert_str_eq(at, in_top(bad));
}

START_TEST(plain_and_sticky_directories_open)
{
    ck_assert_int_eq(mkdir(in_top("a"), 0755), 0);
    opens("a/log");
    opens("a/log");             /* again, appending */
    ck_assert_int_eq(mkdir(in_top("t"), 0755), 0);
    ck_assert_int_eq(chmod(in_top("t"), 01777), 0);
    opens("t/log");
}
END_TEST

START_TEST(directories_others_may_write_are_refused)
{
    ck_assert_int_eq(mkdir(in_top("w"), 0755), 0);
    ck_assert_int_eq(chmod(in_top("w"), 0777), 0);
    refuses("w/log", "w", "every user may write");
    ck_assert_int_eq(access(in_top("w/log"), F_OK), -1);
    ck_assert_int_eq(mkdir(in_top("w/d"), 0755), 0);
    refuses("w/d/log", "w", "every user may write");
    if (geteuid() == 0) {
        ck_assert_int_eq(mkdir(in_top("g"), 0775), 0);
        ck_assert_int_eq(chown(in_top("g"), 0, OTHER), 0);
        ck_assert_int_eq(chmod(in_top("g"), 0775), 0);
        refuses("g/log", "g", "its group may write");
        ck_assert_int_eq(mkdir(in_top("u"), 0755), 0);
        ck_assert_int_eq(chown(in_top("u"), OTHER, OTHER), 0);
        refuses("u/log", "u", "owned by another user");
    }
}
END_TEST

START_TEST(links_are_followed_only_when_ours)
{
    ck_assert_int_eq(mkdir(in_top("target"), 0755), 0);
    ck_assert_int_eq(symlink("target", in_top("rel")), 0);
    ck_assert_int_eq(symlink(in_top("target"), in_top("abs")), 0);
    opens("rel/one");
    opens("abs/two");
    ck_assert_int_eq(access(in_top("target/one"), F_OK), 0);
    ck_assert_int_eq(access(in_top("target/two"), F_OK), 0);
    /* The file itself: never. */
    ck_assert_int_eq(symlink("target/one", in_top("flink")), 0);
    refuses("flink", "flink", "symbolic link");
    /* A link to a directory others may write: checked there. */
    ck_assert_int_eq(mkdir(in_top("open"), 0755), 0);
    ck_assert_int_eq(chmod(in_top("open"), 0777), 0);
    ck_assert_int_eq(symlink("open", in_top("toopen")), 0);
    refuses("toopen/log", "open", "every user may write");
    /* A loop ends. */
    ck_assert_int_eq(symlink("loop2", in_top("loop1")), 0);
    ck_assert_int_eq(symlink("loop1", in_top("loop2")), 0);
    refuses("loop1/log", "loop1", "too many");
    if (geteuid() == 0) {
        ck_assert_int_eq(mkdir(in_top("t"), 0755), 0);
        ck_assert_int_eq(chmod(in_top("t"), 01777), 0);
        ck_assert_int_eq(symlink("../target", in_top("t/theirs")), 0);
        ck_assert_int_eq(lchown(in_top("t/theirs"), OTHER, OTHER), 0);
        refuses("t/theirs/log", "t/theirs", "another user owns");
    }
}
END_TEST

START_TEST(odd_files_and_paths_are_refused)
{
    ck_assert_int_eq(mkfifo(in_top("fifo"), 0644), 0);
    refuses("fifo", "fifo", "cannot be opened");     /* ENXIO, no wait */
    ck_assert_int_eq(close(open(in_top("file"), O_CREAT | O_WRONLY, 0644)),
                     0);
    ck_assert_int_eq(link(in_top("file"), in_top("hard")), 0);
    refuses("hard", "hard", "hard link");
    ck_assert_int_eq(mkdir(in_top("d"), 0755), 0);
    refuses("d/../file", "d/..", "goes up");
    refuses("d/", "d/", "names a directory");
    refuses("file/x", "file", "not a directory");
}
END_TEST

START_TEST(relative_paths_are_refused)
{
    const char *why = NULL;
    char at[PATH_MAX];

    ck_assert_int_eq(qc_safe_open("log", O_WRONLY, 0644, &why, at,
                                  sizeof(at)), -1);
    ck_assert_str_eq(why, "is not an absolute path");
}
END_TEST

/* qc_safe_check, for "apachectl -t": the verdict qc_safe_open would
 * give, without creating or opening the file. */
static void check_refuses(const char *rel, const char *bad, const char *want)
{
    const char *why = NULL;
    char at[PATH_MAX];

    ck_assert_msg(qc_safe_check(in_top(rel), &why, at, sizeof(at)) == -1,
                  "%s passed", rel);
    ck_assert_msg(why && strstr(why, want), "%s: \"%s\", not \"%s\"", rel,
                  why, want);
    ck_assert_str_eq(at, in_top(bad));
}

START_TEST(check_says_what_open_would_without_creating)
{
    const char *why = NULL;
    char at[PATH_MAX];

    ck_assert_int_eq(mkdir(in_top("a"), 0755), 0);
    ck_assert_int_eq(qc_safe_check(in_top("a/new"), &why, at, sizeof(at)),
                     0);
    ck_assert_int_eq(access(in_top("a/new"), F_OK), -1);
    opens("a/log");
    ck_assert_int_eq(qc_safe_check(in_top("a/log"), &why, at, sizeof(at)),
                     0);

    ck_assert_int_eq(mkdir(in_top("w"), 0755), 0);
    ck_assert_int_eq(chmod(in_top("w"), 0777), 0);
    check_refuses("w/log", "w", "every user may write");
    ck_assert_int_eq(symlink("a/log", in_top("flink")), 0);
    check_refuses("flink", "flink", "symbolic link");
    ck_assert_int_eq(mkfifo(in_top("fifo"), 0644), 0);
    check_refuses("fifo", "fifo", "not a regular file");
    ck_assert_int_eq(link(in_top("a/log"), in_top("hard")), 0);
    check_refuses("hard", "hard", "another hard link");
    check_refuses("a/", "a/", "names a directory");
    if (geteuid() == 0) {
        ck_assert_int_eq(mkdir(in_top("u"), 0755), 0);
        ck_assert_int_eq(chown(in_top("u"), OTHER, OTHER), 0);
        check_refuses("u/log", "u", "owned by another user");
    }
    ck_assert_int_eq(qc_safe_check("log", &why, at, sizeof(at)), -1);
    ck_assert_str_eq(why, "is not an absolute path");
}
END_TEST

static Suite *safe_open_suite(void)
{
    Suite *s = suite_create("safe_open");
    TCase *tc = tcase_create("walk");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, plain_and_sticky_directories_open);
    tcase_add_test(tc, directories_others_may_write_are_refused);
    tcase_add_test(tc, links_are_followed_only_when_ours);
    tcase_add_test(tc, odd_files_and_paths_are_refused);
    tcase_add_test(tc, relative_paths_are_refused);
    tcase_add_test(tc, check_says_what_open_would_without_creating);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return qc_test_run(safe_open_suite());
}
