/* SPDX-License-Identifier: MIT */
#include "state-dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"

int mkdir_parents(const char *path, mode_t mode) {
        char buf[PATH_MAX];

        if (snprintf(buf, sizeof(buf), "%s", path) >= (int) sizeof(buf))
                return -ENAMETOOLONG;
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = '\0';
                        if (mkdir(buf, mode) < 0 && errno != EEXIST)
                                return -errno;
                        *p = '/';
                }
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* Another user able to write here could read the database or plant links in it. */
int state_dir_prepare(const char *path) {
        struct stat st;
        int r;

        r = mkdir_parents(path, 0700);
        if (r < 0)
                return log_error_errno(r, "Failed to create state directory %s: %m", path);
        if (stat(path, &st) < 0)
                return log_error_errno(errno, "Failed to check state directory %s: %m", path);
        if (!S_ISDIR(st.st_mode))
                return log_error_errno(ENOTDIR, "State directory %s is not a directory; refusing to use it", path);
        if (st.st_uid != geteuid())
                return log_error_errno(EPERM,
                                       "State directory %s belongs to uid %u, not to us (uid %u); refusing to use it",
                                       path, (unsigned) st.st_uid, (unsigned) geteuid());
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return log_error_errno(
                        EPERM, "State directory %s is writable by group or others (mode %04o); refusing to use it",
                        path, (unsigned) (st.st_mode & 07777));
        return 0;
}

/* One of the database's files; a missing one is fine (the database itself is created). */
static int check_database_file(const char *path, bool create) {
        _cleanup_close_ int fd = -1;
        struct stat st;

        fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
        if (fd < 0 && errno == ENOENT)
                return 0;
        if (fd < 0 && errno == ELOOP)
                return log_error_errno(ELOOP, "Database file %s is a symbolic link; refusing to follow it", path);
        if (fd < 0)
                return log_error_errno(errno, "Failed to open database file %s: %m", path);
        if (fstat(fd, &st) < 0)
                return log_error_errno(errno, "Failed to check database file %s: %m", path);
        if (!S_ISREG(st.st_mode))
                return log_error_errno(EINVAL, "Database file %s is not a regular file; refusing to use it", path);
        if (st.st_uid != geteuid())
                return log_error_errno(EPERM, "Database file %s belongs to uid %u, not to us; refusing to use it", path,
                                       (unsigned) st.st_uid);
        /* Written by an older trapstatd, or copied in with another mode. */
        if ((st.st_mode & 077) && fchmod(fd, 0600) < 0)
                return log_error_errno(errno, "Failed to make database file %s private: %m", path);
        return 0;
}

int state_dir_check_database(const char *db_path) {
        static const char *const suffixes[] = { "", "-wal", "-shm" };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                _cleanup_free_ char *path = NULL;

                if (asprintf(&path, "%s%s", db_path, suffixes[i]) < 0)
                        return log_error_errno(ENOMEM, "Out of memory");
                r = check_database_file(path, i == 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

pid_t state_dir_lock_holder(int fd) {
        char buf[16], *end;
        unsigned long v;
        ssize_t n;

        n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        if (buf[0] < '0' || buf[0] > '9')
                return 0;
        errno = 0;
        v = strtoul(buf, &end, 10);
        if (errno != 0 || v == 0 || v > INT_MAX || strcmp(end, "\n") != 0)
                return 0;
        return (pid_t) v;
}

/* A second daemon on one state directory would count every fault again into the same
 * database. The flock() belongs to the open file, so the kernel drops it however we exit and a
 * lock file left by a crash never blocks a start. */
int state_dir_lock(const char *path, int *ret_fd) {
        _cleanup_free_ char *lock_path = NULL;
        _cleanup_close_ int fd = -1;
        char pid[24];
        pid_t holder;
        int n;

        if (asprintf(&lock_path, "%s/trapstatd.lock", path) < 0)
                return log_error_errno(ENOMEM, "Out of memory");
        /* A link planted here would have us (root, possibly) truncate and rewrite its target. */
        fd = open(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno == ELOOP)
                return log_error_errno(errno, "Lock file %s is a symbolic link; refusing to follow it", lock_path);
        if (fd < 0)
                return log_error_errno(errno, "Failed to open lock file %s: %m", lock_path);

        /* A lock file of an older trapstatd may be 0644: the pid in it is nobody else's business
         * either. */
        (void) fchmod(fd, 0600);

        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                if (errno != EWOULDBLOCK)
                        return log_error_errno(errno, "Failed to lock %s: %m", lock_path);
                holder = state_dir_lock_holder(fd);
                if (holder > 0)
                        log_error("Another trapstatd (pid %d) is running on state directory %s; exiting", (int) holder,
                                  path);
                else
                        log_error("Another trapstatd is running on state directory %s; exiting", path);
                return -EBUSY;
        }

        /* Only so that a second instance can name us. Written over the old pid before cutting the
         * rest, so that on a full disk the page the file already has is reused. */
        n = snprintf(pid, sizeof(pid), "%d\n", (int) getpid());
        if (pwrite(fd, pid, (size_t) n, 0) != n || ftruncate(fd, n) < 0)
                log_warning_errno(errno, "Failed to write our pid to %s: %m", lock_path);

        *ret_fd = TAKE_FD(fd);
        return 0;
}

int state_dir_open(const char *path, int *ret_lock_fd, char **ret_db_path) {
        _cleanup_close_ int lock_fd = -1;
        _cleanup_free_ char *db_path = NULL;
        int r;

        r = state_dir_prepare(path);
        if (r < 0)
                return r;
        /* Before the database and the socket: a second daemon must touch neither. */
        r = state_dir_lock(path, &lock_fd);
        if (r < 0)
                return r;
        if (asprintf(&db_path, "%s/trapstat.db", path) < 0)
                return log_error_errno(ENOMEM, "Out of memory");
        r = state_dir_check_database(db_path);
        if (r < 0)
                return r;

        *ret_lock_fd = TAKE_FD(lock_fd);
        *ret_db_path = TAKE_PTR(db_path);
        return 0;
}
