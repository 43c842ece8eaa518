/* SPDX-License-Identifier: MIT */
#pragma once

/* Logging to stderr. Under systemd, journald adds time and unit; the "<N>" prefix (sd-daemon.h
 * style) carries the priority when stderr is the journal. */

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

enum { LOG_LEVEL_ERR = 3, LOG_LEVEL_WARNING = 4, LOG_LEVEL_NOTICE = 5, LOG_LEVEL_INFO = 6, LOG_LEVEL_DEBUG = 7 };

void log_set_max_level(int level);
int log_get_max_level(void);
/* Prefix lines with "<N>" so journald records the priority. */
void log_set_prefix_priority(bool b);

/* Returns -abs(error) so callers can write "return log_error_errno(r, ...)". error may be 0. */
int log_internal(int level, int error, const char *fmt, ...) _printf_(3, 4);
/* The same with a va_list, for messages that come from another library's log callback. */
int log_internalv(int level, int error, const char *fmt, va_list ap) _printf_(3, 0);

#define log_debug(...) log_internal(LOG_LEVEL_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_internal(LOG_LEVEL_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_internal(LOG_LEVEL_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_LEVEL_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_internal(LOG_LEVEL_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...) log_internal(LOG_LEVEL_DEBUG, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_internal(LOG_LEVEL_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_internal(LOG_LEVEL_ERR, (e), __VA_ARGS__)

/* At most `burst` messages per `interval_usec` pass; the rest are counted, and the next message
 * that passes says how many were suppressed. For what clients can trigger at will: a noisy or
 * hostile client must not flood the log. */
typedef struct RateLimit {
        uint64_t interval_usec;
        unsigned burst;
        uint64_t begin_usec;
        unsigned n;
        unsigned suppressed;
} RateLimit;

#define RATELIMIT_CLIENT ((RateLimit) { .interval_usec = 10 * UINT64_C(1000000), .burst = 10 })

/* Logs like log_internal() when rl lets it through; returns -abs(error) either way. */
int log_ratelimited(RateLimit *rl, int level, int error, const char *fmt, ...) _printf_(4, 5);
