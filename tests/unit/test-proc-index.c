/* SPDX-License-Identifier: MIT */
/* The process index (daemon/collector/proc-index.c) against a plain array of what it should hold:
 * random puts, removals and lookups over few pids, so that entries collide, probe past the end of
 * the table and are moved back when one before them is removed. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "proc-index.h"

#define PIDS 3000
#define STARTS 3

/* What the index should hold: model[pid][start] is the value, or NULL. */
static void *model[PIDS][STARTS];
static char values[PIDS][STARTS];

static uint64_t start_of(unsigned s) {
        return UINT64_C(1000000000) * (s + 1) + s;
}

static void check_all(const ProcIndex *x) {
        size_t n = 0, seen = 0;
        void *v;

        for (unsigned p = 0; p < PIDS; p++)
                for (unsigned s = 0; s < STARTS; s++) {
                        assert_ptr_equal(proc_index_get(x, p, start_of(s)), model[p][s]);
                        n += model[p][s] != NULL;
                }
        assert_int_equal(x->n, n);
        PROC_INDEX_FOREACH(x, v)
                seen++;
        assert_int_equal(seen, n);
}

static void test_model(void **state) {
        ProcIndex x = {};
        unsigned seed = 1;

        (void) state;
        assert_null(proc_index_get(&x, 1, 1));
        assert_null(proc_index_remove(&x, 1, 1));
        for (unsigned round = 0; round < 200000; round++) {
                unsigned p = (unsigned) rand_r(&seed) % PIDS, s = (unsigned) rand_r(&seed) % STARTS;
                /* More puts than removals in the first half, the other way round in the second:
                 * the table grows to thousands and empties again. */
                bool put = (unsigned) rand_r(&seed) % 10 < (round < 100000 ? 7u : 3u);

                if (put) {
                        int r = proc_index_put(&x, p, start_of(s), &values[p][s]);

                        assert_int_equal(r, model[p][s] ? -EEXIST : 0);
                        model[p][s] = &values[p][s];
                } else {
                        assert_ptr_equal(proc_index_remove(&x, p, start_of(s)), model[p][s]);
                        model[p][s] = NULL;
                }
                /* The other start times of the pid stay apart. */
                assert_ptr_equal(proc_index_get(&x, p, start_of((s + 1) % STARTS)), model[p][(s + 1) % STARTS]);
                if (round % 20000 == 0)
                        check_all(&x);
        }
        check_all(&x);
        /* A load at most 5/8 of a power of two. */
        assert_true(x.capacity == 0 || (x.capacity & (x.capacity - 1)) == 0);
        assert_true(x.n * 8 <= x.capacity * 5);
        proc_index_done(&x);
        assert_int_equal(x.n, 0);
        assert_null(x.entries);
}

/* Sequential pids of one start time each (how a storm's processes come): all found, all gone. */
static void test_sequence(void **state) {
        static char v;
        ProcIndex x = {};

        (void) state;
        for (uint32_t p = 1; p <= 100000; p++)
                assert_int_equal(proc_index_put(&x, p, UINT64_C(5000) * p, &v), 0);
        assert_int_equal(x.n, 100000);
        for (uint32_t p = 1; p <= 100000; p++) {
                assert_ptr_equal(proc_index_get(&x, p, UINT64_C(5000) * p), &v);
                assert_null(proc_index_get(&x, p, UINT64_C(5000) * p + 1));
        }
        for (uint32_t p = 100000; p >= 1; p--)
                assert_ptr_equal(proc_index_remove(&x, p, UINT64_C(5000) * p), &v);
        assert_int_equal(x.n, 0);
        proc_index_done(&x);
}

/* A tick's set of identities: found once added, also after adds that follow a lookup (sorted
 * again), and none once cleared. */
static void test_keys(void **state) {
        ProcKeys s = {};

        (void) state;
        assert_false(proc_keys_contain(&s, 1, 1));
        for (uint32_t p = 1000; p > 0; p--)
                assert_int_equal(proc_keys_add(&s, p, p * UINT64_C(7)), 0);
        assert_true(proc_keys_contain(&s, 1, 7));
        assert_true(proc_keys_contain(&s, 1000, 7000));
        assert_false(proc_keys_contain(&s, 1000, 7001));
        assert_false(proc_keys_contain(&s, 1001, 7007));
        /* Added after a lookup sorted them. */
        assert_int_equal(proc_keys_add(&s, 5, 1), 0);
        assert_true(proc_keys_contain(&s, 5, 1));
        assert_true(proc_keys_contain(&s, 5, 35));
        proc_keys_clear(&s);
        assert_false(proc_keys_contain(&s, 5, 35));
        assert_int_equal(proc_keys_add(&s, 9, 9), 0);
        assert_true(proc_keys_contain(&s, 9, 9));
        assert_false(proc_keys_contain(&s, 5, 35));
        proc_keys_done(&s);
        assert_null(s.keys);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_model),
                cmocka_unit_test(test_sequence),
                cmocka_unit_test(test_keys),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
