/* SPDX-License-Identifier: MIT */
/* common/fault-time.c: the histogram's edges, the bucket of a duration, quantiles as buckets, exact
 * and saturating sums, and the strict JSON form. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "fault-time.h"

/* The edges as the IDL states them: bucket 0 under 1 us, i (1..22) [2^(i-1), 2^i) us, 23 from
 * 2^22 us up. Every edge and its neighbours fall where they belong. */
static void test_buckets(void **state) {
        (void) state;
        assert_int_equal(fault_time_bucket_low_ns(0), 0);
        assert_int_equal(fault_time_bucket_high_ns(0), 1000);
        assert_int_equal(fault_time_bucket_low_ns(1), 1000);
        assert_int_equal(fault_time_bucket_high_ns(1), 2000);
        assert_int_equal(fault_time_bucket_low_ns(22), UINT64_C(2097152000));
        assert_int_equal(fault_time_bucket_high_ns(22), UINT64_C(4194304000));
        assert_int_equal(fault_time_bucket_low_ns(23), UINT64_C(4194304000));
        assert_true(fault_time_bucket_high_ns(23) == UINT64_MAX);
        for (unsigned b = 0; b < FAULT_TIME_BUCKETS; b++) {
                uint64_t low = fault_time_bucket_low_ns(b), high = fault_time_bucket_high_ns(b);

                assert_true(low < high);
                assert_int_equal(fault_time_bucket_of(low), b);
                assert_int_equal(fault_time_bucket_of(high - 1), b);
                if (b + 1 < FAULT_TIME_BUCKETS) {
                        assert_true(fault_time_bucket_low_ns(b + 1) == high);
                        assert_int_equal(fault_time_bucket_of(high), b + 1);
                }
        }
        assert_int_equal(fault_time_bucket_of(999), 0);
        assert_int_equal(fault_time_bucket_of(1999), 1);
        assert_int_equal(fault_time_bucket_of(UINT64_MAX), FAULT_TIME_BUCKETS - 1);
}

static void test_quantiles(void **state) {
        FaultTime f = {};

        (void) state;
        assert_int_equal(fault_time_quantile_bucket(&f, 0.5), -ENOENT);
        /* 98 faults under 1 us, one of 3 us, one of 5 s. */
        f.histogram[0] = 98;
        f.histogram[2] = 1;
        f.histogram[23] = 1;
        assert_int_equal(fault_time_count(&f), 100);
        assert_int_equal(fault_time_quantile_bucket(&f, 0.5), 0);
        assert_int_equal(fault_time_quantile_bucket(&f, 0.98), 0);
        /* ceil(0.99 * 100) = 99: the 99th fault is the 3 us one. */
        assert_int_equal(fault_time_quantile_bucket(&f, 0.99), 2);
        assert_int_equal(fault_time_quantile_bucket(&f, 0.995), 23);
        assert_int_equal(fault_time_quantile_bucket(&f, 1), 23);
        /* Out of range: clamped. */
        assert_int_equal(fault_time_quantile_bucket(&f, 0), 0);
        assert_int_equal(fault_time_quantile_bucket(&f, 7), 23);
}

static void test_add(void **state) {
        FaultTime a = { .minor_ns = 10, .major_ns = 20, .kernel_ns = 30, .max_ns = 9, .histogram = { [1] = 2 } };
        FaultTime b = { .minor_ns = 1, .major_ns = UINT64_MAX - 5, .max_ns = 4, .histogram = { [1] = 3, [23] = 1 } };

        (void) state;
        fault_time_add(&a, &b);
        assert_int_equal(a.minor_ns, 11);
        assert_true(a.major_ns == UINT64_MAX); /* saturated, not wrapped */
        assert_int_equal(a.kernel_ns, 30);
        assert_int_equal(a.max_ns, 9);         /* the longer of the two */
        assert_int_equal(a.histogram[1], 5);
        assert_int_equal(a.histogram[23], 1);
        assert_int_equal(fault_time_count(&a), 6);
        assert_true(fault_time_total_ns(&a) == UINT64_MAX);
        assert_false(fault_time_is_zero(&a));
        assert_true(fault_time_is_zero(&(FaultTime) {}));
}

static void test_json(void **state) {
        FaultTime f = { .minor_ns = 1500, .major_ns = 2000000000, .kernel_ns = 250, .max_ns = 2000000000,
                        .histogram = { [0] = 1, [1] = 1, [21] = 1 } }, back;
        json_t *j = fault_time_to_json(&f);
        const char *bad[] = {
                "{\"minorNs\":0,\"majorNs\":0,\"kernelNs\":0,\"maxNs\":0}",
                "{\"minorNs\":0,\"majorNs\":0,\"kernelNs\":0,\"maxNs\":-1,\"histogram\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}",
                "{\"minorNs\":0,\"majorNs\":0,\"kernelNs\":0,\"maxNs\":0,\"histogram\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}",
                "{\"minorNs\":0,\"majorNs\":0,\"kernelNs\":0,\"maxNs\":0,\"histogram\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,\"1\"]}",
                "{\"minorNs\":0,\"majorNs\":0,\"kernelNs\":0,\"maxNs\":0,\"minNs\":0,\"histogram\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}",
                "[]",
        };

        (void) state;
        assert_non_null(j);
        assert_int_equal(fault_time_from_json(j, &back), 0);
        assert_memory_equal(&f, &back, sizeof(f));
        json_decref(j);
        assert_int_equal(fault_time_from_json(NULL, &back), -EBADMSG);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                json_t *b = json_loads(bad[i], 0, NULL);

                assert_non_null(b);
                assert_int_equal(fault_time_from_json(b, &back), -EBADMSG);
                json_decref(b);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_buckets),
                cmocka_unit_test(test_quantiles),
                cmocka_unit_test(test_add),
                cmocka_unit_test(test_json),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
