/* SPDX-License-Identifier: MIT */
#pragma once

/* Reading a whole file. Files in /proc and pipes say size 0 (or nothing) in stat and still have
 * content, so these read until EOF instead of trusting the size, and stop at a limit the caller
 * names: what they read may come from anyone. */

#include <stddef.h>

/* Cut a file longer than the limit at the limit instead of failing. */
#define READ_FULL_TRUNCATE (1 << 0)

/* Reads fd from its position until EOF into *buf of *capacity bytes, grown as needed with
 * array_grow() and left to the caller (to free, or to reuse for the next read: *buf may be NULL
 * and *capacity 0). A NUL follows the data (which may hold NULs); *ret_size (when not NULL) is
 * the size without it. More than max bytes: -EFBIG, or with READ_FULL_TRUNCATE the first max. Or
 * -ENOMEM, or read()'s -errno; on failure *buf still holds *capacity bytes and must be freed. */
int read_full_fd(int fd, size_t max, int flags, char **buf, size_t *capacity, size_t *ret_size);

/* Opens path (relative to dir_fd, as openat() does) and reads all of it into a new NUL-terminated
 * buffer in *ret, as read_full_fd() does. */
int read_full_file_at(int dir_fd, const char *path, size_t max, int flags, char **ret, size_t *ret_size);
