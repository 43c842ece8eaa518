/* SPDX-License-Identifier: MIT */
#include "time-util.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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

/* "Z", "+HH:MM", "+HHMM", "+HH" (or with '-'): seconds east of UTC. */
static int parse_utc_offset(const char *s, long *ret) {
        unsigned hh, mm = 0;
        int n = 0;

        if (strcmp(s, "Z") == 0 || strcmp(s, "z") == 0) {
                *ret = 0;
                return 0;
        }
        if (*s != '+' && *s != '-')
                return -EINVAL;
        for (const char *p = s + 1; *p; p++)
                if (!isdigit((unsigned char) *p) && *p != ':')
                        return -EINVAL;
        if (strlen(s) == 6 && s[3] == ':') {
                if (sscanf(s + 1, "%2u:%2u%n", &hh, &mm, &n) != 2)
                        return -EINVAL;
        } else if (strlen(s) == 5) {
                if (sscanf(s + 1, "%2u%2u%n", &hh, &mm, &n) != 2)
                        return -EINVAL;
        } else if (strlen(s) == 3) {
                if (sscanf(s + 1, "%2u%n", &hh, &n) != 1)
                        return -EINVAL;
        } else
                return -EINVAL;
        if (hh > 23 || mm > 59)
                return -EINVAL;
        *ret = (*s == '-' ? -1 : 1) * (long) (hh * 3600 + mm * 60);
        return 0;
}

/* An absolute date and/or time of day; see parse_timestamp_usec(). */
static int parse_absolute(const char *s, uint64_t now, uint64_t *ret) {
        static const struct {
                const char *format;
                bool has_date;
        } formats[] = {
                { "%Y-%m-%dT%H:%M:%S", true }, { "%Y-%m-%d %H:%M:%S", true }, { "%Y-%m-%dT%H:%M", true },
                { "%Y-%m-%d %H:%M", true },    { "%Y-%m-%d", true },          { "%H:%M:%S", false },
                { "%H:%M", false },
        };

        for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
                struct tm tm = {}, want;
                long offset = 0;
                bool utc = false;
                const char *end;
                time_t t;

                if (!formats[i].has_date) {
                        /* A time of day means today, in local time (or in UTC with a "Z"). */
                        time_t n = (time_t) (now / USEC_PER_SEC);

                        if (!localtime_r(&n, &tm))
                                return -EINVAL;
                        tm.tm_sec = tm.tm_min = tm.tm_hour = 0;
                }
                end = strptime(s, formats[i].format, &tm);
                if (!end)
                        continue;
                if (*end) {
                        if (parse_utc_offset(end, &offset) < 0)
                                continue;
                        utc = true;
                }
                if (!formats[i].has_date && utc) {
                        /* Today's date in UTC, not in local time. */
                        struct tm today;
                        time_t n = (time_t) (now / USEC_PER_SEC);

                        if (!gmtime_r(&n, &today))
                                return -EINVAL;
                        tm.tm_year = today.tm_year;
                        tm.tm_mon = today.tm_mon;
                        tm.tm_mday = today.tm_mday;
                }
                tm.tm_isdst = -1;
                want = tm;
                t = utc ? timegm(&tm) : mktime(&tm);
                if (t == (time_t) -1 && (tm.tm_year != 69 || tm.tm_mon != 11 || tm.tm_mday != 31))
                        return -ERANGE;
                /* mktime() normalizes: February 30 became March 2. Such dates are errors. */
                if (tm.tm_year != want.tm_year || tm.tm_mon != want.tm_mon || tm.tm_mday != want.tm_mday)
                        return -EINVAL;
                if (utc)
                        t -= offset;
                if (t < 0)
                        return -ERANGE;
                *ret = (uint64_t) t * USEC_PER_SEC;
                return 0;
        }
        return -EINVAL;
}

int parse_timestamp_usec(const char *s, uint64_t now, uint64_t *ret) {
        uint64_t d;
        size_t l;
        int r;

        if (!s || !*s)
                return -EINVAL;
        if (strcmp(s, "now") == 0) {
                *ret = now;
                return 0;
        }
        if (s[0] == '@') {
                char *end;
                unsigned long long v;

                if (!isdigit((unsigned char) s[1]))
                        return -EINVAL;
                errno = 0;
                v = strtoull(s + 1, &end, 10);
                if (*end)
                        return -EINVAL;
                if (errno == ERANGE || v > UINT64_MAX / USEC_PER_SEC)
                        return -ERANGE;
                *ret = v * USEC_PER_SEC;
                return 0;
        }

        /* A duration before now: "2h", "2h ago". */
        l = strlen(s);
        if (l > 4 && strcmp(s + l - 4, " ago") == 0) {
                char buf[64];

                if (l - 4 >= sizeof(buf))
                        return -EINVAL;
                memcpy(buf, s, l - 4);
                buf[l - 4] = '\0';
                r = parse_duration_usec(buf, &d);
        } else
                r = parse_duration_usec(s, &d);
        if (r == -ERANGE)
                return r;
        if (r == 0) {
                if (d > now)
                        return -ERANGE;
                *ret = now - d;
                return 0;
        }
        return parse_absolute(s, now, ret);
}
