/* SPDX-License-Identifier: MIT */
#include "time-util.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

uint64_t now_usec(clockid_t clock) {
        struct timespec ts;

        if (clock_gettime(clock, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

static const struct {
        const char *suffix;
        uint64_t usec;
} units[] = {
        /* Longest suffix first so "ms" is not read as "m" + garbage. */
        { "min", 60 * USEC_PER_SEC },
        { "us", 1 },
        { "ms", USEC_PER_MSEC },
        { "s", USEC_PER_SEC },
        { "m", 60 * USEC_PER_SEC },
        { "h", 3600 * USEC_PER_SEC },
        { "d", 86400 * USEC_PER_SEC },
};

int parse_duration_usec(const char *s, uint64_t *ret) {
        uint64_t total = 0;
        const char *p = s;

        if (!s || !*s)
                return -EINVAL;

        while (*p) {
                uint64_t n = 0, mult = 0;
                const char *digits = p;

                while (isdigit((unsigned char) *p)) {
                        if (n > (UINT64_MAX - 9) / 10)
                                return -ERANGE;
                        n = n * 10 + (uint64_t) (*p - '0');
                        p++;
                }
                if (p == digits)
                        return -EINVAL;

                if (*p == '\0') {
                        /* A bare number is seconds, but only as the whole string ("90"). */
                        if (digits != s)
                                return -EINVAL;
                        mult = USEC_PER_SEC;
                } else
                        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                                size_t l = strlen(units[i].suffix);

                                if (strncmp(p, units[i].suffix, l) == 0 && !isalpha((unsigned char) p[l])) {
                                        mult = units[i].usec;
                                        p += l;
                                        break;
                                }
                        }
                if (mult == 0)
                        return -EINVAL;
                if (n > UINT64_MAX / mult || total > UINT64_MAX - n * mult)
                        return -ERANGE;
                total += n * mult;
        }

        *ret = total;
        return 0;
}
