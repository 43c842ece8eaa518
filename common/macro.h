/* SPDX-License-Identifier: MIT */
#pragma once

/* Cleanup helpers in the style of systemd's _cleanup_: a variable declared with one of these
 * is released when it goes out of scope, so error paths need no manual bookkeeping. */

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _fallthrough_ __attribute__((fallthrough))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

/* Hand ownership out of a _cleanup_ variable: returns the value and clears the variable. */
#define TAKE_PTR(p)                                                                                \
        ({                                                                                         \
                __typeof__(p) _p = (p);                                                            \
                (p) = NULL;                                                                        \
                _p;                                                                                \
        })
#define TAKE_FD(fd)                                                                                \
        ({                                                                                         \
                int _fd = (fd);                                                                    \
                (fd) = -1;                                                                         \
                _fd;                                                                               \
        })

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                    \
        static inline void func##p(type *p) {                                                      \
                if (*p)                                                                            \
                        func(*p);                                                                  \
        }
