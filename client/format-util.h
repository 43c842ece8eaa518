/* SPDX-License-Identifier: MIT */
#pragma once

/* Pure formatting helpers of the trapstat client: human units, times, sparklines, CSV.
 * Unit-tested in tests/unit/test-format-util.c. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* 1234 -> "1.23k", 5 -> "5"; buf must hold 16 bytes. */
const char *format_count(uint64_t n, char buf[static 16]);
/* A rate per second: 0 -> "0", 0.25 -> "0.2", 12.4 -> "12", 1234.5 -> "1.23k"; buf 16 bytes. */
const char *format_rate(double per_sec, char buf[static 16]);
/* Microseconds since the epoch -> "2026-11-22 04:05:06" in local time; buf 32 bytes. */
const char *format_time_usec(uint64_t usec, char buf[static 32]);
/* The same without the year, for table rows under a header that has it: "11-22 04:05:06". */
const char *format_time_usec_short(uint64_t usec, char buf[static 32]);
/* The same as ISO 8601 with the UTC offset: "2026-11-22T04:05:06+01:00"; buf 32 bytes. */
const char *format_time_iso8601(uint64_t usec, char buf[static 32]);
/* A duration in µs -> "2h03m", "45s", "120ms"; buf 32 bytes. */
const char *format_duration_usec(uint64_t usec, char buf[static 32]);

/* One line of at most width characters showing values[0..n) left to right, each character
 * one value (or, when n > width, the sum of consecutive values): a blank for zero, else one
 * of 8 heights relative to the largest. UTF-8 block characters (U+2581..U+2588) when utf8,
 * else ASCII ".:-=+*#@". Returns a malloc'd string, NULL on allocation failure or width 0. */
char *sparkline(const uint64_t *values, size_t n, size_t width, bool utf8);

/* Writes s as one CSV field (RFC 4180): quoted when it holds a comma, quote or line break. */
void csv_field(FILE *f, const char *s);

/* Whether the LC_CTYPE locale (as set by setlocale()) uses UTF-8. */
bool locale_is_utf8(void);
