/* SPDX-License-Identifier: MIT */
/* ListProcesses (store-processes.c): its filters, limit and pages. */

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
        IN_SNAPSHOT(s, store_list_processes(s, &(StoreProcessFilter) { .limit = (l), __VA_ARGS__ }, &list, &n, &total, NULL))
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

/* Pages of every size, each after the last's end, are the listing in one call, whole and in its
 * order: nothing twice, nothing left out. Many processes share a first sighting (a tick's), so
 * the row decides between them; processes seen after the first page are not in later ones. */
static void test_list_pages(void **state) {
        enum { N = 300, SHARED = 7 }; /* first sightings in groups of 7 */
        const uint64_t t0 = 1700000000000000ULL;
        ProcessInfo procs[N + 1], *all, *page;
        ProcessSample samples[N];
        size_t n_all, n_page;
        uint64_t total_all, total;
        char path[256], comm[N + 1][16];
        Store *s;

        snprintf(path, sizeof(path), "%s/pages.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        for (size_t i = 0; i < N; i++) {
                snprintf(comm[i], sizeof(comm[i]), "%s", i % 5 == 0 ? "other" : "worker");
                procs[i] = (ProcessInfo) { .pid = (uint32_t) (1000 + i), .start_time = 1, .uid = i % 3 ? 1000 : 0,
                                           .first_seen_usec = t0 + (i / SHARED) * 200000, .exited = i % 4 == 0 };
                memcpy(procs[i].comm, comm[i], sizeof(comm[i]));
                samples[i] = (ProcessSample) { &procs[i], make_faults(1), NULL };
        }
        assert_int_equal(store_flush(s, t0, samples, N), 0);

        for (int filtered = 0; filtered < 2; filtered++) {
                StoreProcessFilter f = { .include_exited = !filtered, .uid = filtered ? 1000 : -1,
                                         .comm_glob = filtered ? "work*" : NULL, .limit = N };

                assert_int_equal(IN_SNAPSHOT(s, store_list_processes(s, &f, &all, &n_all, &total_all, NULL)), 0);
                assert_int_equal(total_all, n_all);
                assert_true(n_all > (filtered ? 100u : 299u));
                for (size_t size = 1; size <= n_all + 1; size = size < 10 ? size + 1 : size * 3) {
                        StoreListCursor next = {};
                        size_t seen = 0;
                        bool more = true;

                        while (more) {
                                f.limit = size;
                                f.after = seen ? &next : NULL;
                                assert_int_equal(IN_SNAPSHOT(s, store_list_processes(s, &f, &page, &n_page, &total, &next)), 0);
                                /* total: this page and all that come after it. */
                                assert_int_equal(total, n_all - seen);
                                assert_int_equal(n_page, MIN(size, n_all - seen));
                                for (size_t i = 0; i < n_page; i++) {
                                        assert_int_equal(page[i].pid, all[seen + i].pid);
                                        assert_int_equal(page[i].first_seen_usec, all[seen + i].first_seen_usec);
                                }
                                seen += n_page;
                                more = total > n_page;
                                process_infos_free(page, n_page);
                                if (seen == 1 && size == 1 && !filtered) {
                                        /* A process seen after the first page, newest of all: not
                                         * in the pages after it. */
                                        snprintf(comm[N], sizeof(comm[N]), "worker");
                                        procs[N] = (ProcessInfo) { .pid = 99, .start_time = 1, .uid = 1000,
                                                                   .first_seen_usec = t0 + 3600 * 1000000ULL };
                                        memcpy(procs[N].comm, comm[N], sizeof(comm[N]));
                                        samples[0] = (ProcessSample) { &procs[N], make_faults(1), NULL };
                                        assert_int_equal(store_flush(s, t0 + 3600 * 1000000ULL, samples, 1), 0);
                                }
                        }
                        assert_int_equal(seen, n_all);
                        /* From here on it is the newest of the listing, on its first page. */
                        process_infos_free(all, n_all);
                        f.limit = N + 1;
                        f.after = NULL;
                        assert_int_equal(IN_SNAPSHOT(s, store_list_processes(s, &f, &all, &n_all, &total_all, NULL)), 0);
                }
                process_infos_free(all, n_all);
        }
        store_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_list_filters),
                cmocka_unit_test(test_list_pages),
        };
        return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
