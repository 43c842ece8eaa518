/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

static void log_write(int level, int error, unsigned suppressed, const char *fmt, va_list ap) {
        int saved = errno;

        if (level <= max_level) {
                if (prefix_priority)
                        fprintf(stderr, "<%d>", level);
                /* %m in fmt refers to the error passed in, not to whatever errno happens to be. */
                errno = abs(error);
                vfprintf(stderr, fmt, ap);
                if (suppressed > 0)
                        fprintf(stderr, " (%u similar messages suppressed)", suppressed);
                fputc('\n', stderr);
        }
        errno = saved;
}

int log_internal(int level, int error, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        log_write(level, error, 0, fmt, ap);
        va_end(ap);
        return -abs(error);
}

int log_internalv(int level, int error, const char *fmt, va_list ap) {
        log_write(level, error, 0, fmt, ap);
        return -abs(error);
}

/* True when a message may be logged now. */
static bool ratelimit_below(RateLimit *rl) {
        struct timespec ts;
        uint64_t now;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        now = (uint64_t) ts.tv_sec * 1000000U + (uint64_t) ts.tv_nsec / 1000U;
        if (rl->begin_usec == 0 || now - rl->begin_usec >= rl->interval_usec) {
                rl->begin_usec = now;
                rl->n = 0;
        }
        if (rl->n < rl->burst) {
                rl->n++;
                return true;
        }
        rl->suppressed++;
        return false;
}

int log_ratelimited(RateLimit *rl, int level, int error, const char *fmt, ...) {
        unsigned suppressed;
        va_list ap;

        /* Below the log level nothing is written, so nothing is suppressed either. */
        if (level > max_level || !ratelimit_below(rl))
                return -abs(error);
        suppressed = rl->suppressed;
        rl->suppressed = 0;
        va_start(ap, fmt);
        log_write(level, error, suppressed, fmt, ap);
        va_end(ap);
        return -abs(error);
}
