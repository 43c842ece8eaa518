/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_duration),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
