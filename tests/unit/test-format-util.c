/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format-util.h"

static void test_format_count(void **state) {
        char buf[16];

        assert_string_equal(format_count(0, buf), "0");
        assert_string_equal(format_count(999, buf), "999");
        assert_string_equal(format_count(1000, buf), "1.00k");
        assert_string_equal(format_count(1234, buf), "1.23k");
        assert_string_equal(format_count(12345, buf), "12.3k");
        assert_string_equal(format_count(999499, buf), "999k");
        assert_string_equal(format_count(999949, buf), "1.00M");
        assert_string_equal(format_count(999999, buf), "1.00M");
        assert_string_equal(format_count(UINT64_MAX, buf), "18.4E");
}

static void test_format_rate(void **state) {
        char buf[16];

        assert_string_equal(format_rate(0, buf), "0");
        assert_string_equal(format_rate(-1, buf), "0");
        assert_string_equal(format_rate(0.25, buf), "0.2");
        assert_string_equal(format_rate(5, buf), "5.0");
        assert_string_equal(format_rate(12.4, buf), "12");
        assert_string_equal(format_rate(999, buf), "999");
        assert_string_equal(format_rate(1234.5, buf), "1.23k");
        assert_string_equal(format_rate(2.5e9, buf), "2.50G");
}

static void test_format_times(void **state) {
        char buf[32];

        setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3", 1);
        tzset();
        /* 2026-11-22 10:00:00 UTC */
        assert_string_equal(format_time_usec(UINT64_C(1795341600000000), buf), "2026-11-22 11:00:00");
        assert_string_equal(format_time_usec_short(UINT64_C(1795341600000000), buf), "11-22 11:00:00");
        assert_string_equal(format_time_iso8601(UINT64_C(1795341600000000), buf), "2026-11-22T11:00:00+01:00");
        setenv("TZ", "UTC0", 1);
        tzset();
        assert_string_equal(format_time_iso8601(UINT64_C(1795341600000000), buf), "2026-11-22T10:00:00+00:00");
        assert_string_equal(format_duration_usec(120000, buf), "120ms");
        assert_string_equal(format_duration_usec(45000000, buf), "45s");
        assert_string_equal(format_duration_usec(UINT64_C(7380000000), buf), "2h03m");
        assert_string_equal(format_duration_usec(UINT64_C(90000000000), buf), "1d01h");
}

static void test_sparkline(void **state) {
        static const uint64_t v[] = { 0, 1, 2, 4, 8, 0, 8 };
        char *s;

        s = sparkline(v, 7, 80, false);
        assert_string_equal(s, " .:=@ @");
        free(s);
        s = sparkline(v, 7, 80, true);
        assert_string_equal(s, " \u2581\u2582\u2584\u2588 \u2588");
        free(s);
        /* Wider than the width: neighbours are summed, every value counted once. */
        s = sparkline(v, 7, 3, false);
        assert_int_equal(strlen(s), 3);
        assert_string_equal(s, ".-@"); /* 0+1=1, 2+4=6, 8+0+8=16 */
        free(s);
        s = sparkline(v, 0, 10, false);
        assert_string_equal(s, "");
        free(s);
        assert_null(sparkline(v, 7, 0, true));
        /* Huge values do not overflow. */
        {
                uint64_t big[] = { UINT64_MAX, UINT64_MAX, 1 };
                s = sparkline(big, 3, 3, false);
                assert_string_equal(s, "@@.");
                free(s);
                s = sparkline(big, 3, 2, false); /* MAX + 1 saturates */
                assert_string_equal(s, "@@");
                free(s);
        }
}

static void test_csv_field(void **state) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        assert_non_null(f);
        csv_field(f, "plain");
        fputc('|', f);
        csv_field(f, "a,b");
        fputc('|', f);
        csv_field(f, "say \"hi\"");
        fputc('|', f);
        csv_field(f, "two\nlines");
        fputc('|', f);
        csv_field(f, NULL);
        fclose(f);
        assert_string_equal(text, "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"|");
        free(text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format_count),  cmocka_unit_test(test_format_rate),
                cmocka_unit_test(test_format_times),  cmocka_unit_test(test_sparkline),
                cmocka_unit_test(test_csv_field),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
