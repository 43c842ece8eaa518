/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "time-util.h"

static void test_parse_duration(void **state) {
        static const struct {
                const char *text;
                int r;
                uint64_t usec;
        } cases[] = {
                { "1s", 0, 1000000 },         { "250ms", 0, 250000 },      { "90", 0, 90000000 },
                { "15m", 0, 900000000 },      { "15min", 0, 900000000 },   { "2h", 0, 7200000000 },
                { "3d", 0, 259200000000 },    { "1h30m", 0, 5400000000 },  { "10us", 0, 10 },
                { "", -EINVAL, 0 },           { "s", -EINVAL, 0 },         { "1x", -EINVAL, 0 },
                { "-1s", -EINVAL, 0 },        { "1s5", -EINVAL, 0 },       { "1.5s", -EINVAL, 0 },
                { "1 s", -EINVAL, 0 },        { "1mss", -EINVAL, 0 },      { "99999999999999999999s", -ERANGE, 0 },
                { "999999999999999d", -ERANGE, 0 },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                uint64_t v = 0;
                int r = parse_duration_usec(cases[i].text, &v);

                if (r != cases[i].r || (r == 0 && v != cases[i].usec))
                        fail_msg("'%s': got %d/%llu, want %d/%llu", cases[i].text, r, (unsigned long long) v, cases[i].r,
                                 (unsigned long long) cases[i].usec);
        }
}

/* 2026-11-22 10:00:00 UTC */
#define NOW (UINT64_C(1795341600) * 1000000)

typedef struct TimestampCase {
        const char *text;
        int r;
        uint64_t usec;
} TimestampCase;

static void check_timestamps(const char *tz, const TimestampCase *cases, size_t n) {
        setenv("TZ", tz, 1);
        tzset();
        for (size_t i = 0; i < n; i++) {
                uint64_t v = 0;
                int r = parse_timestamp_usec(cases[i].text, NOW, &v);

                if (r != cases[i].r || (r == 0 && v != cases[i].usec))
                        fail_msg("TZ=%s '%s': got %d/%llu, want %d/%llu", tz, cases[i].text, r, (unsigned long long) v,
                                 cases[i].r, (unsigned long long) cases[i].usec);
        }
}

static void test_parse_timestamp_utc(void **state) {
        static const TimestampCase cases[] = {
                /* relative */
                { "now", 0, NOW },
                { "90s", 0, NOW - 90000000 },
                { "15m", 0, NOW - 900000000 },
                { "2h", 0, NOW - 7200000000 },
                { "3d", 0, NOW - 259200000000 },
                { "2h ago", 0, NOW - 7200000000 },
                { "90", 0, NOW - 90000000 },
                { "100000d", -ERANGE, 0 },
                /* absolute, local time (here UTC) */
                { "2026-11-22T10:00", 0, NOW },
                { "2026-11-22T09:59:30", 0, NOW - 30000000 },
                { "2026-11-22 10:00:00", 0, NOW },
                { "2026-11-22 08:30", 0, NOW - 5400000000 },
                { "2026-11-22", 0, NOW - 36000000000 },
                { "2026-11-21T10:00:00", 0, NOW - 86400000000 },
                { "09:00", 0, NOW - 3600000000 },
                { "09:00:01", 0, NOW - 3599000000 },
                /* explicit zones */
                { "2026-11-22T10:00Z", 0, NOW },
                { "2026-11-22T11:00+01:00", 0, NOW },
                { "2026-11-22T05:00:00-0500", 0, NOW },
                { "2026-11-22T12:00+02", 0, NOW },
                { "@1795341600", 0, NOW },
                { "@0", 0, 0 },
                /* errors */
                { "", -EINVAL, 0 },
                { "yesterdayish", -EINVAL, 0 },
                { "2026-02-30", -EINVAL, 0 },
                { "2026-13-01", -EINVAL, 0 },
                { "2026-11-22T25:00", -EINVAL, 0 },
                { "2026-11-22T10:00+25:00", -EINVAL, 0 },
                { "2026-11-22T10:00 junk", -EINVAL, 0 },
                { "2026-11-22T10:00+01:00x", -EINVAL, 0 },
                { "1960-01-01", -ERANGE, 0 },
                { "@", -EINVAL, 0 },
                { "@-5", -EINVAL, 0 },
                { "@12x", -EINVAL, 0 },
                { "@99999999999999999999", -ERANGE, 0 },
                { "-2h", -EINVAL, 0 },
                { " ago", -EINVAL, 0 },
        };

        check_timestamps("UTC0", cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_parse_timestamp_local(void **state) {
        static const TimestampCase cases[] = {
                /* Central European time, UTC+1 in November, UTC+2 in summer. */
                { "2026-11-22T11:00", 0, NOW },
                { "2026-11-22 11:00:00", 0, NOW },
                { "2026-11-22T10:00Z", 0, NOW },
                { "11:00", 0, NOW },
                { "2026-07-01T12:00", 0, UINT64_C(1782900000) * 1000000 },
                { "2h", 0, NOW - 7200000000 },
        };

        check_timestamps("CET-1CEST,M3.5.0,M10.5.0/3", cases, sizeof(cases) / sizeof(cases[0]));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_duration),
                cmocka_unit_test(test_parse_timestamp_utc),
                cmocka_unit_test(test_parse_timestamp_local),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
