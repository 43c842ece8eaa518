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

/* Parses a duration: a sequence of <number><unit> with units us, ms, s, m (or min), h, d,
 * e.g. "1s", "250ms", "1h30m". A bare number means seconds. Returns 0, -EINVAL on bad syntax,
 * -ERANGE on overflow. */
int parse_duration_usec(const char *s, uint64_t *ret);
