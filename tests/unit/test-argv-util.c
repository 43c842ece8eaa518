/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "argv-util.h"
#include "macro.h"

/* What every program's numeric options rely on: digits only, the range, sizes only when asked,
 * and no wrap-around past 2^64. */
static void test_parse_integer(void **state _unused_) {
        static const struct {
                const char *text;
                uint64_t min, max;
                ParseIntegerFlags flags;
                int r;
                uint64_t v;
        } cases[] = {
                { "0", 0, 10, 0, 0, 0 },
                { "10", 0, 10, 0, 0, 10 },
                { "11", 0, 10, 0, -ERANGE, 0 },
                { "0", 1, 10, 0, -ERANGE, 0 },
                { "007", 1, 10, 0, 0, 7 },
                { "", 0, 10, 0, -EINVAL, 0 },
                { "-1", 0, UINT64_MAX, 0, -EINVAL, 0 },
                { "+1", 0, 10, 0, -EINVAL, 0 },
                { " 1", 0, 10, 0, -EINVAL, 0 },
                { "1 ", 0, 10, 0, -EINVAL, 0 },
                { "1x", 0, 10, 0, -EINVAL, 0 },
                { "18446744073709551615", 0, UINT64_MAX, 0, 0, UINT64_MAX },
                { "18446744073709551616", 0, UINT64_MAX, 0, -ERANGE, 0 },
                { "99999999999999999999", 0, UINT64_MAX, 0, -ERANGE, 0 },
                { "4M", 0, UINT64_MAX, 0, -EINVAL, 0 },
                { "4M", 0, UINT64_MAX, PARSE_INTEGER_SIZE, 0, 4 << 20 },
                { "4K", 0, UINT64_MAX, PARSE_INTEGER_SIZE, 0, 4096 },
                { "2G", 0, UINT64_MAX, PARSE_INTEGER_SIZE, 0, UINT64_C(2) << 30 },
                { "1T", 0, UINT64_MAX, PARSE_INTEGER_SIZE, 0, UINT64_C(1) << 40 },
                { "4m", 0, UINT64_MAX, PARSE_INTEGER_SIZE, -EINVAL, 0 },
                { "4MB", 0, UINT64_MAX, PARSE_INTEGER_SIZE, -EINVAL, 0 },
                { "M", 0, UINT64_MAX, PARSE_INTEGER_SIZE, -EINVAL, 0 },
                { "12Q", 0, UINT64_MAX, PARSE_INTEGER_SIZE, -EINVAL, 0 },
                { "0T", 0, UINT64_MAX, PARSE_INTEGER_SIZE, 0, 0 },
                { "16777216T", 0, UINT64_MAX, PARSE_INTEGER_SIZE, -ERANGE, 0 },
                { "16777215T", 0, UINT64_MAX, PARSE_INTEGER_SIZE, 0, UINT64_C(16777215) << 40 },
                { "2K", 0, 1024, PARSE_INTEGER_SIZE, -ERANGE, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                uint64_t v = 12345;
                int r = parse_integer(cases[i].text, cases[i].min, cases[i].max, cases[i].flags, &v);

                if (r != cases[i].r || (r == 0 && v != cases[i].v) || (r < 0 && v != 12345))
                        fail_msg("'%s': got %d/%llu, want %d/%llu", cases[i].text, r, (unsigned long long) v,
                                 cases[i].r, (unsigned long long) cases[i].v);
        }
        assert_int_equal(parse_integer(NULL, 0, 10, 0, &(uint64_t) { 0 }), -EINVAL);
}

/* The exit codes the programs document: 2 for a usage error, 1 for another failure, 0 after
 * --help; and usage_error() is a usage error. */
static void test_exit_codes(void **state _unused_) {
        FILE *saved = stderr;

        assert_int_equal(parse_argv_exit_code(0), EXIT_SUCCESS);
        assert_int_equal(parse_argv_exit_code(-EINVAL), EXIT_USAGE);
        assert_int_equal(parse_argv_exit_code(-ENOMEM), EXIT_FAILURE);
        /* Quiet: the messages are the integration tests' to read. */
        stderr = fopen("/dev/null", "w");
        assert_non_null(stderr);
        assert_int_equal(usage_error(NULL, "invalid --%s '%s'", "tick", "x"), -EINVAL);
        assert_int_equal(usage_error("Usage: x", "bad"), -EINVAL);
        assert_int_equal(usage_hint(NULL), -EINVAL);
        fclose(stderr);
        stderr = saved;
        assert_int_equal(parse_argv_exit_code(usage_hint("Usage: x")), EXIT_USAGE);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_integer),
                cmocka_unit_test(test_exit_codes),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
