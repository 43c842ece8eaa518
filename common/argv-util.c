/* SPDX-License-Identifier: MIT */
#include "argv-util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int parse_argv_exit_code(int r) {
        if (r == -EINVAL)
                return EXIT_USAGE;
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

int usage_hint(const char *hint) {
        if (hint)
                fprintf(stderr, "%s\n", hint);
        else
                fprintf(stderr, "Try '%s --help'.\n", program_invocation_short_name);
        return -EINVAL;
}

int usage_error(const char *hint, const char *fmt, ...) {
        _cleanup_free_ char *message = NULL;
        va_list ap;

        /* The line in one write, so that it is not interleaved with another process's. */
        va_start(ap, fmt);
        if (vasprintf(&message, fmt, ap) < 0)
                message = NULL;
        va_end(ap);
        fprintf(stderr, "%s: %s\n", program_invocation_short_name, message ?: "(out of memory formatting the message)");
        return usage_hint(hint);
}

int parse_integer(const char *s, uint64_t min, uint64_t max, ParseIntegerFlags flags, uint64_t *ret) {
        static const char units[] = "KMGT";
        uint64_t v = 0, mult = 1;
        const char *p = s;

        /* By hand rather than strtoull(), which takes space, a sign, and wraps "-1" around. */
        if (!s || *p < '0' || *p > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                if (v > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        if (*p != '\0') {
                const char *u = (flags & PARSE_INTEGER_SIZE) ? strchr(units, *p) : NULL;

                if (!u || p[1] != '\0')
                        return -EINVAL;
                mult = UINT64_C(1) << (10 * (u - units + 1));
        }
        if (v > UINT64_MAX / mult)
                return -ERANGE;
        v *= mult;
        if (v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}
