/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int max_level = LOG_LEVEL_INFO;
static bool prefix_priority = false;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

void log_set_prefix_priority(bool b) {
        prefix_priority = b;
}

int log_internal(int level, int error, const char *fmt, ...) {
        int saved = errno;

        if (level <= max_level) {
                va_list ap;

                if (prefix_priority)
                        fprintf(stderr, "<%d>", level);
                /* %m in fmt refers to the error passed in, not to whatever errno happens to be. */
                errno = abs(error);
                va_start(ap, fmt);
                vfprintf(stderr, fmt, ap);
                va_end(ap);
                fputc('\n', stderr);
        }

        errno = saved;
        return -abs(error);
}
