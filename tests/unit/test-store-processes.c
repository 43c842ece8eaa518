/* SPDX-License-Identifier: MIT */
/* ListProcesses (store-processes.c): its filters and limit. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "unit-store.h"
#include "unit-tmpdir.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"
#include "store.h"
DEFINE_TEST_TMPDIR("test-store-processes");
#include "unit-store-db.h"

static void test_list_filters(void **state) {
        ProcessInfo procs[] = {
                { .pid = 10, .start_time = 1, .comm = "postgres", .uid = 0, .unit = (char *) "postgresql.service", .first_seen_usec = 1 },
                { .pid = 11, .start_time = 1, .comm = "postgres", .uid = 1000, .unit = (char *) "postgresql.service", .first_seen_usec = 2 },
                { .pid = 12, .start_time = 1, .comm = "nginx", .uid = 0, .unit = (char *) "nginx.service", .first_seen_usec = 3 },
                { .pid = 13, .start_time = 1, .comm = "Postman", .uid = 0, .first_seen_usec = 4, .exited = true },
        };
        const uint64_t t0 = 1700000000000000ULL;
        ProcessSample samples[ELEMENTSOF(procs)];
        ProcessInfo *list;
        uint64_t total;
        char path[256];
        Store *s;
        size_t n;

        snprintf(path, sizeof(path), "%s/list.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        for (size_t i = 0; i < ELEMENTSOF(procs); i++)
                samples[i] = (ProcessSample) { &procs[i], make_faults(1), NULL };
        assert_int_equal(store_flush(s, t0, samples, ELEMENTSOF(samples)), 0);

#define LIST_AT_MOST(l, ...) \
        IN_SNAPSHOT(s, store_list_processes(s, &(StoreProcessFilter) { .limit = (l), __VA_ARGS__ }, &list, &n, &total))
#define LIST(...) LIST_AT_MOST(100, __VA_ARGS__)
        /* GLOB is case-sensitive: "Postman" is not a "post*". Exited ones only when asked. */
        assert_int_equal(LIST(.comm_glob = "post*", .uid = -1), 0);
        assert_int_equal(n, 2);
        assert_int_equal(list[0].pid, 11); /* newest first */
        assert_int_equal(list[1].pid, 10);
        process_infos_free(list, n);
        assert_int_equal(LIST(.comm_glob = "[Pp]ost*", .include_exited = true, .uid = -1), 0);
        assert_int_equal(n, 3);
        process_infos_free(list, n);
        assert_int_equal(LIST(.unit = "nginx.service", .uid = -1), 0);
        assert_int_equal(n, 1);
        assert_string_equal(list[0].comm, "nginx");
        process_infos_free(list, n);
        assert_int_equal(LIST(.unit = "postgresql.service", .uid = 1000), 0);
        assert_int_equal(n, 1);
        assert_int_equal(list[0].pid, 11);
        process_infos_free(list, n);
        assert_int_equal(LIST(.unit = "nginx", .uid = -1), 0); /* exact unit names, no prefix match */
        assert_int_equal(n, 0);
        assert_int_equal(total, 0);
        process_infos_free(list, n);
        /* A limit cuts the list, and total says how many matched: the newest first, the rest
         * counted, whatever the filter. */
        assert_int_equal(LIST_AT_MOST(3, .include_exited = true, .uid = -1), 0);
        assert_int_equal(n, 3);
        assert_int_equal(total, 4);
        assert_int_equal(list[0].pid, 13);
        process_infos_free(list, n);
        assert_int_equal(LIST_AT_MOST(1, .comm_glob = "post*", .uid = -1), 0);
        assert_int_equal(n, 1);
        assert_int_equal(total, 2);
        assert_int_equal(list[0].pid, 11);
        process_infos_free(list, n);
        assert_int_equal(LIST_AT_MOST(1, .uid = 1000), 0);
        assert_int_equal(n, 1);
        assert_int_equal(total, 1);
        process_infos_free(list, n);
#undef LIST
#undef LIST_AT_MOST
        store_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_list_filters),
        };
        return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
