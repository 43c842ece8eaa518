/* SPDX-License-Identifier: MIT */
#include "file-util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "array-util.h"
#include "macro.h"

/* The first read's size for a large limit: most files read here are far smaller. */
#define READ_CHUNK ((size_t) 4096)

int read_full_fd(int fd, size_t max, int flags, char **buf, size_t *capacity, size_t *ret_size) {
        size_t n = 0;
        int r;

        /* Room for one byte beyond max and the NUL. */
        if (max > SIZE_MAX - 2)
                return -EINVAL;
        for (;;) {
                size_t room;
                ssize_t k;

                r = array_grow((void **) buf, capacity, n, MIN(max - n, READ_CHUNK) + 2, 1);
                if (r < 0)
                        return r;
                if (n == max && (flags & READ_FULL_TRUNCATE))
                        break;
                /* Cut: never beyond max. Otherwise one byte beyond it tells a longer file. */
                room = MIN(*capacity - n - 1, max + !(flags & READ_FULL_TRUNCATE) - n);
                k = read(fd, *buf + n, room);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > max)
                        return -EFBIG;
        }
        (*buf)[n] = '\0';
        if (ret_size)
                *ret_size = n;
        return 0;
}

int read_full_file_at(int dir_fd, const char *path, size_t max, int flags, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t capacity = 0;
        int r;

        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        r = read_full_fd(fd, max, flags, &buf, &capacity, ret_size);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(buf);
        return 0;
}
