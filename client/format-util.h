/* SPDX-License-Identifier: MIT */
#pragma once

/* Pure formatting helpers of the trapstat client: human units, times, sparklines, CSV, the
 * columns of Faults, maps of counts.
 * Unit-tested in tests/unit/test-format-util.c. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "counters.h"

/* 1234 -> "1.23k", 5 -> "5"; buf must hold 16 bytes. */
const char *format_count(uint64_t n, char buf[static 16]);
/* A Faults member as format_count() has it; "-" for a member the daemon did not count (its part
 * in Faults.unknown). */
const char *format_fault(const Faults *f, const FaultField *field, char buf[static 16]);
/* The Faults members as the count tables (history, top -b) show them, left to right: MAJOR, then
 * its causes (each a part of it), then the access kinds. Every member once; a title fits the 6
 * characters of a count. */
typedef struct FaultColumn {
        const char *name;  /* the FaultField's */
        const char *title; /* "USER", "FILE", ... */
} FaultColumn;
extern const FaultColumn fault_columns[];
extern const size_t n_fault_columns;
/* The FaultField of fault_columns[i]. */
const FaultField *fault_column_field(size_t i);
/* The titles of fault_columns, each right-aligned in 7 columns: "   USER KERNEL  MINOR ..."; the
 * cells of f under them, format_fault() of each. Only the members of parts, and those of no part:
 * FAULTS_KNOWN_ALL for every member, FAULTS_KNOWN_ACCESS for all but the major causes. buf holds
 * FAULT_COLUMNS_SIZE bytes. */
#define FAULT_COLUMNS_SIZE 128
const char *format_faults_header(FaultsKnown parts, char buf[static FAULT_COLUMNS_SIZE]);
const char *format_faults_cells(const Faults *f, FaultsKnown parts, char buf[static FAULT_COLUMNS_SIZE]);
/* A rate per second: 0 -> "0", 0.25 -> "0.2", 12.4 -> "12", 1234.5 -> "1.23k"; buf 16 bytes. */
const char *format_rate(double per_sec, char buf[static 16]);
/* A share of time, as top shows %CPU: 0.123 (seconds per second) -> "12.3"; 0 -> "0", a share
 * too small for one decimal -> "<0.1"; buf 16 bytes. */
const char *format_share(double fraction, char buf[static 16]);
/* Nanoseconds -> "850ns", "1.5µs" ("us" unless utf8), "12µs", "3.2ms", "1.25s"; buf 16 bytes. */
const char *format_ns(uint64_t ns, bool utf8, char buf[static 16]);
/* A fault time histogram bucket's range (common/fault-time.h): "<1µs", "2-4µs", "1-2ms", "≥4.2s"
 * ("us", ">=" unless utf8); buf 24 bytes. */
const char *format_fault_bucket(unsigned bucket, bool utf8, char buf[static 24]);
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

/* Text that comes from a monitored process (comm, command line, unit) is untrusted: printed as
 * it is, "\033[2J" clears the screen, an OSC sequence sets the window title, a newline forges a
 * table row. escape_untrusted() makes it safe for a terminal, in the manner of ps and of
 * systemd's cescape():
 *
 *   control characters (0x00..0x1f, 0x7f)  \a \b \t \n \v \f \r \e (GNU C's names), else \xNN
 *   a backslash                             \\ (so that the escapes read back unambiguously)
 *   C1 controls U+0080..U+009F              \u0080 .. \u009f (terminals may take U+009B for CSI)
 *   bytes that are not well-formed UTF-8    \xNN each (overlong forms, surrogates, > U+10FFFF,
 *                                           stray continuation bytes, truncated sequences)
 *   other well-formed UTF-8                 as it is when utf8 (the terminal's locale is UTF-8),
 *                                           else \xNN per byte: output that is pure ASCII
 *
 * Hex digits are lowercase. The result holds no byte below 0x20 and no 0x7f; with utf8 no C1
 * control character, without it no byte above 0x7f. It reads back to the exact bytes. Returns 0
 * and a malloc'd string, or -ENOMEM. */
int escape_untrusted(const char *s, bool utf8, char **ret);

/* Columns that text (as escape_untrusted() returns it) takes on a terminal: wcwidth() of each
 * character where the locale knows it (2 for wide CJK, 0 for combining marks), else 1. */
size_t text_width(const char *s);
/* Bytes of the longest prefix of such text at most width columns wide that ends neither inside a
 * UTF-8 character nor inside an escape sequence; its width in *ret_width (may be NULL). */
size_t text_prefix(const char *s, size_t width, size_t *ret_width);
/* A table cell of untrusted text: escape_untrusted(), cut to at most max columns (SIZE_MAX: no
 * limit) as text_prefix() cuts, then padded with spaces to min columns; unlike printf's
 * "%-15.15s" it counts columns, not bytes, so that columns stay aligned. 0 or -ENOMEM. */
int format_cell(const char *s, bool utf8, size_t min, size_t max, char **ret);

/* A table cell of an untrusted path (a file's): escape_untrusted(), and when wider than width
 * columns its end kept, where the file's name is: "..." and the longest tail that fits, starting
 * at a character or an escape sequence, never inside one; padded with spaces to width. 0 or
 * -ENOMEM. */
int format_path_cell(const char *s, bool utf8, size_t width, char **ret);

/* Writes s as one CSV field (RFC 4180): quoted when it holds a comma, quote or line break.
 * Exact for a file or a pipe (terminal false): CSV is for programs, which get the text as it is.
 * For a terminal (terminal true) a person reads it, and s is first escaped as the tables escape
 * it, by escape_untrusted(s, utf8): a name that clears the screen shows as "\e[2J" there too.
 * "?" when that runs out of memory, never the raw text. */
void csv_field(FILE *f, const char *s, bool terminal, bool utf8);

/* How trapstat names a container in a table (top --by container, the CONTAINER columns): its
 * name where the daemon knows one (machined, LXC), else "RUNTIME:" and the first
 * CONTAINER_KEY_ID_LEN characters of its id, as docker ps shortens ids ("docker:0123456789ab");
 * "-" for no container (runtime NULL). Untrusted text, not escaped here. 0 and a malloc'd
 * string, or -ENOMEM. */
#define CONTAINER_KEY_ID_LEN 12
int format_container_key(const char *runtime, const char *id, const char *name, char **ret);

/* Whether the LC_CTYPE locale (as set by setlocale()) uses UTF-8. */
bool locale_is_utf8(void);
/* User name of uid, or the number; buf 32 bytes. */
const char *format_user(uint64_t uid, char buf[static 32]);

/* Sum of a JSON map of non-negative counts (other values count 0). */
uint64_t map_total(json_t *map);
/* The keys of a map, borrowed, in a malloc'd array (NULL when empty or on allocation failure). */
const char **map_keys(json_t *map, size_t *ret_n);
/* Keys of a map of counts, largest count first, ties by name; a malloc'd array of n borrowed
 * keys (NULL when empty or on allocation failure). */
const char **map_keys_by_count(json_t *map, size_t *ret_n);
/* The busiest entries of a JSON map of counts, most first, as "UD:1.00k GP:12" (at most max of
 * them; "-" for none); counts divided by per (1 for plain counts, seconds for rates). Writes at
 * most size bytes to buf. */
void format_busiest(json_t *map, size_t max, double per, char *buf, size_t size);
