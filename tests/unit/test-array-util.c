/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array-util.h"
#include "file-util.h"
#include "macro.h"
#include "unit-tmpdir.h"

DEFINE_TEST_TMPDIR("test-array-util");

/* From nothing: an allocation with room for what was asked, at least. */
static void test_grow_from_empty(void **state) {
        _cleanup_free_ uint32_t *a = NULL;
        size_t capacity = 0;

        assert_int_equal(array_grow((void **) &a, &capacity, 0, 1, sizeof(*a)), 0);
        assert_non_null(a);
        assert_true(capacity >= 1);
        assert_int_equal(array_grow((void **) &a, &capacity, 0, 1000, sizeof(*a)), 0);
        assert_true(capacity >= 1000);
        a[999] = 7;
        /* Enough room already: nothing moves. */
        uint32_t *before = a;
        size_t c = capacity;
        assert_int_equal(array_grow((void **) &a, &capacity, 500, 500, sizeof(*a)), 0);
        assert_ptr_equal(a, before);
        assert_int_equal(capacity, c);
        assert_int_equal(a[999], 7);
}

/* Many appends keep every element, and the capacity grows geometrically: few reallocations. */
static void test_append_many(void **state) {
        _cleanup_free_ uint64_t *a = NULL;
        size_t n = 0, capacity = 0, grown = 0;

        for (uint64_t i = 0; i < 100000; i++) {
                size_t c = capacity;

                assert_int_equal(array_append((void **) &a, &n, &capacity, sizeof(i), &i), 0);
                grown += capacity != c;
        }
        assert_int_equal(n, 100000);
        assert_true(capacity >= n);
        assert_true(grown <= 20);
        for (uint64_t i = 0; i < 100000; i++)
                assert_int_equal(a[i], i);
}

/* A count or size that cannot be allocated: -ENOMEM, and the array as it was. */
static void test_grow_overflow(void **state) {
        _cleanup_free_ uint64_t *a = NULL;
        size_t n = 0, capacity = 0;
        uint64_t *before;
        size_t c;

        for (uint64_t i = 0; i < 10; i++)
                assert_int_equal(array_append((void **) &a, &n, &capacity, sizeof(i), &i), 0);
        before = a;
        c = capacity;
        assert_int_equal(array_grow((void **) &a, &capacity, n, SIZE_MAX, sizeof(*a)), -ENOMEM);
        assert_int_equal(array_grow((void **) &a, &capacity, n, SIZE_MAX / sizeof(*a), sizeof(*a)), -ENOMEM);
        assert_int_equal(array_grow((void **) &a, &capacity, SIZE_MAX, 1, sizeof(*a)), -ENOMEM);
        assert_int_equal(array_grow((void **) &a, &capacity, n, 1, SIZE_MAX), -ENOMEM);
        assert_int_equal(array_grow((void **) &a, &capacity, n, 2, SIZE_MAX / 2), -ENOMEM);
        assert_ptr_equal(a, before);
        assert_int_equal(capacity, c);
        assert_int_equal(n, 10);
        for (uint64_t i = 0; i < 10; i++)
                assert_int_equal(a[i], i);
}

static void write_file(const char *path, const char *data, size_t size) {
        FILE *f = fopen(path, "we");

        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, size, f), size);
        assert_int_equal(fclose(f), 0);
}

static void test_read_small(void **state) {
        static const char data[] = "line one\nwith a \0 NUL inside\n";
        char path[300];
        _cleanup_free_ char *text = NULL;
        size_t size = 0;

        snprintf(path, sizeof(path), "%s/small", tmpdir);
        write_file(path, data, sizeof(data) - 1);
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 4096, 0, &text, &size), 0);
        assert_int_equal(size, sizeof(data) - 1);
        assert_memory_equal(text, data, size);
        assert_int_equal(text[size], '\0');
}

static void test_read_empty(void **state) {
        char path[300];
        _cleanup_free_ char *text = NULL;
        size_t size = 1;

        snprintf(path, sizeof(path), "%s/empty", tmpdir);
        write_file(path, "", 0);
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 4096, 0, &text, &size), 0);
        assert_non_null(text);
        assert_int_equal(size, 0);
        assert_string_equal(text, "");
}

/* Over the limit: -EFBIG; exactly at it: read whole; with READ_FULL_TRUNCATE: the first max bytes. */
static void test_read_limit(void **state) {
        char path[300], data[10000];
        _cleanup_free_ char *text = NULL;
        size_t size = 0;

        for (size_t i = 0; i < sizeof(data); i++)
                data[i] = (char) ('a' + i % 26);
        snprintf(path, sizeof(path), "%s/big", tmpdir);
        write_file(path, data, sizeof(data));
        assert_int_equal(read_full_file_at(AT_FDCWD, path, sizeof(data) - 1, 0, &text, &size), -EFBIG);
        assert_null(text);
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 100, 0, &text, &size), -EFBIG);
        assert_null(text);
        assert_int_equal(read_full_file_at(AT_FDCWD, path, sizeof(data), 0, &text, &size), 0);
        assert_int_equal(size, sizeof(data));
        assert_memory_equal(text, data, size);
        free(TAKE_PTR(text));
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 5000, READ_FULL_TRUNCATE, &text, &size), 0);
        assert_int_equal(size, 5000);
        assert_memory_equal(text, data, size);
        assert_int_equal(text[size], '\0');
        free(TAKE_PTR(text));
        assert_int_equal(read_full_file_at(AT_FDCWD, "/nonexistent/file", 100, 0, &text, &size), -ENOENT);
}

/* A pipe has no size at all: its writer's bytes in pieces, until the writer closes it. */
static void test_read_pipe(void **state) {
        int fds[2];
        pid_t pid;
        _cleanup_free_ char *buf = NULL;
        size_t capacity = 0, size = 0;
        int status;

        assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                char chunk[1000];

                close(fds[0]);
                memset(chunk, 'x', sizeof(chunk));
                for (int i = 0; i < 100; i++)
                        if (write(fds[1], chunk, sizeof(chunk)) != (ssize_t) sizeof(chunk))
                                _exit(1);
                _exit(0);
        }
        close(fds[1]);
        assert_int_equal(read_full_fd(fds[0], 1 << 20, 0, &buf, &capacity, &size), 0);
        close(fds[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(size, 100000);
        assert_true(capacity > size);
        for (size_t i = 0; i < size; i++)
                if (buf[i] != 'x')
                        fail_msg("byte %zu is %d", i, buf[i]);
        assert_int_equal(buf[size], '\0');
}

/* /proc files say size 0 and have content; the buffer is reused for a second read. */
static void test_read_proc(void **state) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL, *text = NULL, *cut = NULL;
        size_t capacity = 0, size = 0, first;

        assert_int_equal(read_full_file_at(AT_FDCWD, "/proc/self/status", 1 << 20, 0, &text, &size), 0);
        assert_true(size > 0);
        assert_non_null(strstr(text, "Pid:"));
        fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(read_full_fd(fd, 1 << 24, 0, &buf, &capacity, &size), 0);
        assert_true(size > 0);
        assert_non_null(strstr(buf, "[stack]"));
        first = capacity;
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        assert_int_equal(read_full_fd(fd, 1 << 24, 0, &buf, &capacity, &size), 0);
        assert_true(size > 0);
        assert_int_equal(capacity, first);
        assert_int_equal(read_full_file_at(AT_FDCWD, "/proc/self/status", 10, 0, &cut, &size), -EFBIG);
        assert_null(cut);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_grow_from_empty), cmocka_unit_test(test_append_many),
                cmocka_unit_test(test_grow_overflow),   cmocka_unit_test(test_read_small),
                cmocka_unit_test(test_read_empty),      cmocka_unit_test(test_read_limit),
                cmocka_unit_test(test_read_pipe),       cmocka_unit_test(test_read_proc),
        };

        return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
