/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

/* GLOB's rules: * ? [...] [^...], case-sensitive, a backslash is an ordinary character. */
static void test_glob(void **state) {
        assert_true(glob_match("nginx.service", "nginx.service"));
        assert_false(glob_match("nginx.service", "nginx.servicex"));
        assert_true(glob_match("user@*.service", "user@1000.service"));
        assert_false(glob_match("user@*.service", "user-1000.slice"));
        assert_true(glob_match("post?res", "postgres"));
        assert_false(glob_match("Postgres", "postgres"));
        assert_true(glob_match("[a-c]x", "bx"));
        assert_true(glob_match("[^a-c]x", "dx"));
        assert_false(glob_match("[^a-c]x", "ax"));
        assert_true(glob_match("a\\x2db.service", "a\\x2db.service"));
        assert_false(glob_match("a\\*", "a*"));
        assert_true(glob_match("*", ""));
}

static void test_match(void **state) {
        ProcessFilter f = PROCESS_FILTER_NONE;

        assert_true(process_filter_is_empty(&f));
        assert_true(process_filter_match(&f, 1, 0, NULL, "x"));

        assert_int_equal(process_filter_parse_pids(&f, "10,20"), 0);
        assert_false(process_filter_is_empty(&f));
        assert_true(process_filter_match(&f, 20, 0, NULL, "x"));
        assert_false(process_filter_match(&f, 30, 0, NULL, "x"));

        f.uid = 1000;
        assert_false(process_filter_match(&f, 10, 0, NULL, "x"));
        assert_true(process_filter_match(&f, 10, 1000, NULL, "x"));

        f.unit = strdup("web*.service");
        f.comm = strdup("py*");
        assert_true(process_filter_match(&f, 10, 1000, "web1.service", "python3"));
        /* A process without a unit never matches a unit filter, not even "*". */
        assert_false(process_filter_match(&f, 10, 1000, NULL, "python3"));
        assert_false(process_filter_match(&f, 10, 1000, "web1.service", "perl"));
        process_filter_done(&f);
        assert_true(process_filter_is_empty(&f));
}

static void test_parse_pids(void **state) {
        static const char *const bad[] = { "", ",", "1,", ",1", "1,,2", "0", "-1", "1x", "2147483648", " 1", "1 ", "+1" };
        ProcessFilter f = PROCESS_FILTER_NONE;
        char many[MAX_FILTER_PIDS * 4 + 8] = "";

        assert_int_equal(process_filter_parse_pids(&f, "2147483647"), 0);
        assert_int_equal(f.n_pids, 1);
        assert_int_equal(f.pids[0], 2147483647);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(process_filter_parse_pids(&f, bad[i]), -EINVAL);
                /* Unchanged by a refusal. */
                assert_int_equal(f.n_pids, 1);
                assert_int_equal(f.pids[0], 2147483647);
        }
        for (int i = 1; i <= MAX_FILTER_PIDS; i++)
                sprintf(many + strlen(many), "%s%d", i > 1 ? "," : "", i);
        assert_int_equal(process_filter_parse_pids(&f, many), 0);
        assert_int_equal(f.n_pids, MAX_FILTER_PIDS);
        assert_int_equal(f.pids[MAX_FILTER_PIDS - 1], MAX_FILTER_PIDS);
        strcat(many, ",99");
        assert_int_equal(process_filter_parse_pids(&f, many), -EINVAL);
        assert_int_equal(f.n_pids, MAX_FILTER_PIDS);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_glob),
                cmocka_unit_test(test_match),
                cmocka_unit_test(test_parse_pids),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
