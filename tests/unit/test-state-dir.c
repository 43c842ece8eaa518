/* SPDX-License-Identifier: MIT */
/* The state directory's policy (daemon/state-dir.c) in a temporary directory: created when
 * missing, refused when others may write to it or it is no directory, the database's files
 * never followed through a link and made private, and one daemon per directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"
#include "state-dir.h"
#include "unit-tmpdir.h"

DEFINE_TEST_TMPDIR("test-state-dir");

static char *path_in_tmpdir(const char *name) {
        char *path;

        assert_true(asprintf(&path, "%s/%s", tmpdir, name) > 0);
        return path;
}

static mode_t mode_of(const char *path) {
        struct stat st;

        assert_int_equal(lstat(path, &st), 0);
        return st.st_mode & 07777;
}

static void write_file(const char *path, const char *text, mode_t mode) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        assert_int_equal(fchmod(fd, mode), 0);
}

static void test_mkdir_parents(void **state) {
        _cleanup_free_ char *deep = path_in_tmpdir("a/b/c"), *top = path_in_tmpdir("a");
        char long_path[5000];

        (void) state;
        assert_int_equal(mkdir_parents(deep, 0700), 0);
        assert_int_equal(mode_of(deep), 0700);
        /* Again: what exists is fine. */
        assert_int_equal(mkdir_parents(deep, 0700), 0);
        assert_int_equal(mkdir_parents(top, 0700), 0);

        memset(long_path, 'x', sizeof(long_path) - 1);
        long_path[0] = '/';
        long_path[sizeof(long_path) - 1] = '\0';
        assert_int_equal(mkdir_parents(long_path, 0700), -ENAMETOOLONG);
}

static void test_prepare_creates_private_directory(void **state) {
        _cleanup_free_ char *dir = path_in_tmpdir("new/state");

        (void) state;
        assert_int_equal(state_dir_prepare(dir), 0);
        assert_int_equal(mode_of(dir), 0700);
}

static void test_prepare_refuses_writable_by_others(void **state) {
        _cleanup_free_ char *group = path_in_tmpdir("group-writable"), *other = path_in_tmpdir("world-writable"),
                            *readable = path_in_tmpdir("readable");

        (void) state;
        assert_int_equal(mkdir(group, 0700), 0);
        assert_int_equal(chmod(group, 0770), 0);
        assert_int_equal(state_dir_prepare(group), -EPERM);

        assert_int_equal(mkdir(other, 0700), 0);
        assert_int_equal(chmod(other, 01777), 0);
        assert_int_equal(state_dir_prepare(other), -EPERM);

        /* Readable is not writable: the database files themselves are private. */
        assert_int_equal(mkdir(readable, 0700), 0);
        assert_int_equal(chmod(readable, 0755), 0);
        assert_int_equal(state_dir_prepare(readable), 0);
}

static void test_prepare_refuses_file_and_foreign_owner(void **state) {
        _cleanup_free_ char *file = path_in_tmpdir("a-file"), *foreign = path_in_tmpdir("foreign");

        (void) state;
        write_file(file, "", 0600);
        /* mkdir() finds it (EEXIST), the check refuses it. */
        assert_int_equal(state_dir_prepare(file), -ENOTDIR);

        /* Giving a directory away takes root; other users test the rest. */
        if (geteuid() != 0)
                return;
        assert_int_equal(mkdir(foreign, 0700), 0);
        assert_int_equal(chown(foreign, 65534, 65534), 0);
        assert_int_equal(state_dir_prepare(foreign), -EPERM);
}

static void test_database_files(void **state) {
        _cleanup_free_ char *dir = path_in_tmpdir("db"), *db = path_in_tmpdir("db/trapstat.db"),
                            *wal = path_in_tmpdir("db/trapstat.db-wal"), *shm = path_in_tmpdir("db/trapstat.db-shm"),
                            *target = path_in_tmpdir("db/target");

        (void) state;
        assert_int_equal(state_dir_prepare(dir), 0);
        /* A missing database is created, private; missing companions are fine. */
        assert_int_equal(state_dir_check_database(db), 0);
        assert_int_equal(mode_of(db), 0600);
        assert_int_equal(access(wal, F_OK), -1);

        /* One an older trapstatd left readable is made private. */
        write_file(wal, "", 0644);
        assert_int_equal(state_dir_check_database(db), 0);
        assert_int_equal(mode_of(wal), 0600);

        /* A link is never followed, and its target stays as it was. */
        write_file(target, "secret", 0644);
        assert_int_equal(symlink(target, shm), 0);
        assert_int_equal(state_dir_check_database(db), -ELOOP);
        assert_int_equal(mode_of(target), 0644);
        assert_int_equal(unlink(shm), 0);

        /* Nor anything but a regular file. */
        assert_int_equal(mkdir(shm, 0700), 0);
        assert_int_equal(state_dir_check_database(db), -EINVAL);
        assert_int_equal(rmdir(shm), 0);
        assert_int_equal(state_dir_check_database(db), 0);
}

static void test_lock_holder(void **state) {
        static const struct {
                const char *text;
                pid_t pid;
        } cases[] = {
                { "1234\n", 1234 }, { "", 0 },
                { "1234", 0 },      { "0\n", 0 },
                { "-5\n", 0 },      { " 12\n", 0 },
                { "12 \n", 0 },     { "99999999999\n", 0 },
                { "x\n", 0 },       { "2147483647\n", 2147483647 },
        };
        _cleanup_free_ char *path = path_in_tmpdir("holder");

        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_close_ int fd = -1;

                write_file(path, cases[i].text, 0600);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                assert_true(fd >= 0);
                assert_int_equal(state_dir_lock_holder(fd), cases[i].pid);
        }
}

static void test_lock(void **state) {
        _cleanup_free_ char *dir = path_in_tmpdir("locked"), *lock = path_in_tmpdir("locked/trapstatd.lock");
        _cleanup_close_ int fd = -1, again = -1;

        (void) state;
        assert_int_equal(state_dir_prepare(dir), 0);
        /* A lock file an older trapstatd left 0644 with a stale pid after a crash: taken,
         * rewritten with our pid alone, private. */
        write_file(lock, "1\nstale\n", 0644);
        assert_int_equal(state_dir_lock(dir, &fd), 0);
        assert_true(fd >= 0);
        assert_int_equal(mode_of(lock), 0600);
        assert_int_equal(state_dir_lock_holder(fd), getpid());

        /* The lock belongs to the open file: a second open of it, as a second daemon's, fails
         * and leaves the output alone. */
        assert_int_equal(state_dir_lock(dir, &again), -EBUSY);
        assert_int_equal(again, -1);

        /* Once it is closed, the next one takes it. */
        close(TAKE_FD(fd));
        assert_int_equal(state_dir_lock(dir, &again), 0);
        assert_int_equal(state_dir_lock_holder(again), getpid());
}

/* Calls state_dir_lock(dir) with stderr going to a file; returns its result and what it logged. */
static int lock_logged(const char *dir, int *ret_fd, char *log, size_t size) {
        _cleanup_free_ char *path = path_in_tmpdir("stderr");
        _cleanup_close_ int file = -1, saved = -1;
        ssize_t n;
        int r;

        fflush(stderr);
        file = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        saved = dup(STDERR_FILENO);
        assert_true(file >= 0 && saved >= 0);
        assert_int_equal(dup2(file, STDERR_FILENO), STDERR_FILENO);
        r = state_dir_lock(dir, ret_fd);
        fflush(stderr);
        assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
        n = pread(file, log, size - 1, 0);
        assert_true(n >= 0);
        log[n] = '\0';
        return r;
}

/* Another process holds the lock until told to go: a start on the same directory is refused
 * (the message names its pid), and succeeds once it has gone. */
static void test_lock_held_by_another_process(void **state) {
        _cleanup_free_ char *dir = path_in_tmpdir("other");
        _cleanup_close_ int fd = -1;
        int ready[2], go[2], status;
        char log[512], expected[512];
        pid_t child;
        char c;

        (void) state;
        assert_int_equal(state_dir_prepare(dir), 0);
        assert_int_equal(pipe(ready), 0);
        assert_int_equal(pipe(go), 0);
        child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                int held = -1;

                if (state_dir_lock(dir, &held) < 0)
                        _exit(1);
                if (write(ready[1], "x", 1) != 1 || read(go[0], &c, 1) != 1)
                        _exit(2);
                _exit(0);
        }
        close(ready[1]);
        close(go[0]);
        assert_int_equal(read(ready[0], &c, 1), 1);

        assert_int_equal(lock_logged(dir, &fd, log, sizeof(log)), -EBUSY);
        assert_int_equal(fd, -1);
        assert_true(snprintf(expected, sizeof(expected),
                             "Another trapstatd (pid %d) is running on state directory %s; exiting\n", (int) child,
                             dir) < (int) sizeof(expected));
        assert_string_equal(log, expected);

        assert_int_equal(write(go[1], "x", 1), 1);
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        close(ready[0]);
        close(go[1]);

        /* Its exit dropped the lock, its pid still in the file. */
        assert_int_equal(state_dir_lock(dir, &fd), 0);
        assert_int_equal(state_dir_lock_holder(fd), getpid());
}

static void test_lock_refuses_link(void **state) {
        _cleanup_free_ char *dir = path_in_tmpdir("linked"), *lock = path_in_tmpdir("linked/trapstatd.lock"),
                            *target = path_in_tmpdir("linked-target");
        _cleanup_close_ int fd = -1;

        (void) state;
        assert_int_equal(state_dir_prepare(dir), 0);
        write_file(target, "keep", 0644);
        assert_int_equal(symlink(target, lock), 0);
        assert_int_equal(state_dir_lock(dir, &fd), -ELOOP);
        assert_int_equal(fd, -1);
        /* Not truncated, not rewritten, mode kept. */
        assert_int_equal(mode_of(target), 0644);
        {
                _cleanup_close_ int t = open(target, O_RDONLY | O_CLOEXEC);
                char buf[8] = { 0 };

                assert_true(t >= 0);
                assert_int_equal(read(t, buf, sizeof(buf) - 1), 4);
                assert_string_equal(buf, "keep");
        }
}

static void test_open(void **state) {
        _cleanup_free_ char *dir = path_in_tmpdir("opened/state"), *db_path = NULL, *expected = NULL;
        _cleanup_close_ int fd = -1, again = -1;
        char *db_again = NULL;

        (void) state;
        assert_int_equal(state_dir_open(dir, &fd, &db_path), 0);
        assert_true(fd >= 0);
        assert_true(asprintf(&expected, "%s/trapstat.db", dir) > 0);
        assert_string_equal(db_path, expected);
        assert_int_equal(mode_of(db_path), 0600);

        /* A second daemon stops at the lock. */
        assert_int_equal(state_dir_open(dir, &again, &db_again), -EBUSY);
        assert_int_equal(again, -1);
        assert_null(db_again);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mkdir_parents),
                cmocka_unit_test(test_prepare_creates_private_directory),
                cmocka_unit_test(test_prepare_refuses_writable_by_others),
                cmocka_unit_test(test_prepare_refuses_file_and_foreign_owner),
                cmocka_unit_test(test_database_files),
                cmocka_unit_test(test_lock_holder),
                cmocka_unit_test(test_lock),
                cmocka_unit_test(test_lock_held_by_another_process),
                cmocka_unit_test(test_lock_refuses_link),
                cmocka_unit_test(test_open),
        };

        /* As the daemon runs: what it creates is 0700 and 0600 whatever the caller's umask. */
        umask(022);
        return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
