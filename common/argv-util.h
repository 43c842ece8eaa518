/* SPDX-License-Identifier: MIT */
#pragma once

/* Command lines, the same in every program (trapstatd, trapstat-exporter, trapstat and its verbs).
 *
 * parse_argv() and the helpers it calls return, as systemd's programs do:
 *     < 0  stop with an error, said on stderr already: -EINVAL is a usage error (usage_error()),
 *          exit EXIT_USAGE (2); any other errno (out of memory), exit EXIT_FAILURE (1);
 *       0  stop successfully: --help or --version printed; exit 0;
 *     > 0  go on.
 * parse_argv_exit_code() turns the first two into the exit code, so main() (or a verb) ends with
 * "if (r <= 0) return parse_argv_exit_code(r);". A usage error is one line
 * "PROGRAM: what was wrong" on stderr and a hint after it: the usage line, or "Try 'PROGRAM
 * --help'.". */

#include <stdint.h>

#include "macro.h"

enum { EXIT_USAGE = 2 };

/* The exit code of a parse_argv() result r <= 0 (above). */
int parse_argv_exit_code(int r);

/* "PROGRAM: <message>" (PROGRAM: program_invocation_short_name), then hint on a line of its own;
 * hint NULL: "Try 'PROGRAM --help'.". Returns -EINVAL. */
int usage_error(const char *hint, const char *fmt, ...) _printf_(2, 3);
/* After getopt_long() said what was wrong (an unknown option, a missing argument): the hint alone,
 * as usage_error() prints it. Returns -EINVAL. */
int usage_hint(const char *hint);

typedef enum ParseIntegerFlags {
        /* A size: one of the suffixes K, M, G, T after the digits multiplies by 1024 to the 1st
         * to 4th power ("4M" is 4194304). */
        PARSE_INTEGER_SIZE = 1 << 0,
} ParseIntegerFlags;

/* The one integer parser of the command lines: decimal digits only (no sign, no space), with
 * PARSE_INTEGER_SIZE a suffix, in [min, max]. 0 and *ret; -EINVAL for anything else, -ERANGE
 * for a number out of range. Durations are parse_duration_usec()'s (time-util.h). */
int parse_integer(const char *s, uint64_t min, uint64_t max, ParseIntegerFlags flags, uint64_t *ret);
