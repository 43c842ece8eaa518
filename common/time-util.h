/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdint.h>
#include <time.h>

#define USEC_PER_SEC UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_SEC UINT64_C(1000000000)

/* Microseconds on the given clock. */
uint64_t now_usec(clockid_t clock);

/* The same point as a timespec, e.g. for pthread_cond_timedwait(). */
static inline struct timespec usec_to_timespec(uint64_t usec) {
        return (struct timespec) { .tv_sec = (time_t) (usec / USEC_PER_SEC),
                                   .tv_nsec = (long) (usec % USEC_PER_SEC) * 1000 };
}

/* Parses a duration: a sequence of <number><unit> with units us, ms, s, m (or min), h, d,
 * e.g. "1s", "250ms", "1h30m". A bare number means seconds. Returns 0, -EINVAL on bad syntax,
 * -ERANGE on overflow. */
int parse_duration_usec(const char *s, uint64_t *ret);

/* Parses a point in time, for --since and --until:
 *   relative to now: a duration as above, optionally followed by " ago" ("2h", "90s ago");
 *   "now"; "@SECONDS" since the Unix epoch;
 *   absolute, in local time unless followed by "Z" or an offset ("+01:00", "-0500"):
 *   "2026-11-22", "2026-11-22T10:00", "2026-11-22 10:00:00", "10:00" (today).
 * now is microseconds since the epoch. Returns 0; -EINVAL on bad syntax or an invalid date
 * (e.g. February 30); -ERANGE for a time before the epoch or out of range. */
int parse_timestamp_usec(const char *s, uint64_t now, uint64_t *ret);
