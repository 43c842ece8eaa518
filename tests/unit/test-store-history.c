/* SPDX-License-Identifier: MIT */
/* History and UnitHistory (store-history.c): across the tiers, with the pending ticks. */

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
DEFINE_TEST_TMPDIR("test-store-history");
#include "unit-store-db.h"

/* A resolution coarser than the tiers it is read from, with the minute tier rolled up to an odd
 * minute: the interval of 120 s that holds that minute mark comes from minute rows and from raw
 * rows, and is one sample with the sum of both, as every other is the sum of its raw buckets. */
static void test_history_interval_across_tiers(void **state) {
        const uint64_t S = 1000000, M = 60 * S, t0 = 1700000000000000ULL - 1700000000000000ULL % (3600 * S);
        const StoreRetention r = STORE_RETENTION_DEFAULT;
        ProcessInfo a = { .pid = 430, .start_time = 1, .comm = "a", .first_seen_usec = 1 };
        uint64_t expect[15] = {};
        StoreHistoryRow *hist;
        ProcessInfo found;
        char path[256];
        int64_t id;
        size_t n;
        Store *s;

        snprintf(path, sizeof(path), "%s/across.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        for (uint64_t i = 0; i < 30 * 6; i++) {
                ProcessSample sample = { &a, (Faults) { .user = i + 1 }, NULL };

                assert_int_equal(store_flush(s, t0 + i * 10 * S, &sample, 1), 0);
                expect[i / 12] += i + 1;
        }
        maintain_until_done(s, t0 + 21 * M + 5 * S, &r);
        {
                sqlite3 *db;
                sqlite3_stmt *st;

                /* The minutes before the mark are rolled up: that interval is read from both. */
                assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
                assert_int_equal(sqlite3_prepare_v2(db, "SELECT COUNT(*), MAX(time_usec) FROM sample_minute", -1, &st, NULL),
                                 SQLITE_OK);
                assert_int_equal(sqlite3_step(st), SQLITE_ROW);
                assert_int_equal(sqlite3_column_int64(st, 0), 21);
                assert_int_equal(sqlite3_column_int64(st, 1), (int64_t) (t0 + 20 * M));
                sqlite3_finalize(st);
                sqlite3_close(db);
        }

        assert_int_equal(store_find_process(s, 430, 0, &id, &found), 0);
        process_info_done(&found);
        assert_int_equal(IN_SNAPSHOT(s, store_history(s, id, 0, UINT64_MAX, 2 * M, &hist, &n)), 0);
        assert_int_equal(n, 15);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(hist[i].time_usec, t0 + i * 2 * M);
                assert_int_equal(hist[i].faults.user, expect[i]);
        }
        store_history_rows_free(hist, n);
        store_free(s);
        (void) state;
}

/* A reader reads what the writer committed, also the ticks the writer has not folded into the
 * raw tier: a History that shows the process exited has its last ticks and their traps (those
 * used to be missing until the writer's next fold). Within one snapshot the process row and the
 * counts agree although the writer commits meanwhile. */
static void test_reader_sees_pending_ticks(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL;
        ProcessInfo a = { .pid = 820, .start_time = 8, .comm = "a", .first_seen_usec = t0, .last_seen_usec = t0 };
        Traps ud = { .vector[6] = 3 };
        char path[256];
        StoreHistoryRow *hist;
        ProcessInfo found;
        StoreRow *rows;
        Store *w, *r;
        uint64_t traps;
        int64_t id;
        size_t n;

        snprintf(path, sizeof(path), "%s/pending.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &w), 0);
        assert_int_equal(store_open_reader(path, "boot-1", &r), 0);
        for (uint64_t i = 0; i < 2; i++) {
                ProcessSample sample = { &a, (Faults) { .user = 10 }, NULL };
                assert_int_equal(store_flush(w, t0 + i * S, &sample, 1), 0);
        }
        /* A tick in the same bucket (folded with the first two by the next) and, after the
         * process exited, its last in the next minute: pending. */
        {
                ProcessSample sample = { &a, (Faults) { .user = 5, .kernel = 2 }, &ud };
                assert_int_equal(store_flush(w, t0 + 2 * S, &sample, 1), 0);
        }
        a.exited = true;
        {
                ProcessSample sample = { &a, (Faults) { .user = 8000 }, &ud };
                assert_int_equal(store_flush(w, t0 + 60 * S, &sample, 1), 0);
        }

        assert_int_equal(history_user(r, 820, 10 * S, &traps), 8025);
        assert_int_equal(traps, 6);
        assert_int_equal(store_find_process(r, 820, 0, &id, &found), 0);
        assert_true(found.exited);
        process_info_done(&found);
        assert_int_equal(IN_SNAPSHOT(r, store_history(r, id, 0, UINT64_MAX, 10 * S, &hist, &n)), 0);
        assert_int_equal(n, 2);
        assert_int_equal(hist[0].time_usec, t0);
        assert_int_equal(hist[0].faults.user, 25);
        assert_int_equal(hist[0].faults.kernel, 2);
        assert_int_equal(hist[0].traps->vector[6], 3);
        assert_int_equal(hist[1].time_usec, t0 + 60 * S);
        assert_int_equal(hist[1].faults.user, 8000);
        assert_int_equal(hist[1].traps->vector[6], 3);
        store_history_rows_free(hist, n);
        /* The range applies to pending buckets as to raw ones; a coarser interval sums them. */
        assert_int_equal(IN_SNAPSHOT(r, store_history(r, id, t0 + 10 * S, UINT64_MAX, 10 * S, &hist, &n)), 0);
        assert_int_equal(n, 1);
        assert_int_equal(hist[0].faults.user, 8000);
        store_history_rows_free(hist, n);
        assert_int_equal(IN_SNAPSHOT(r, store_history(r, id, 0, t0 + 10 * S, 10 * S, &hist, &n)), 0);
        assert_int_equal(n, 1);
        assert_int_equal(hist[0].faults.user, 25);
        store_history_rows_free(hist, n);
        assert_int_equal(history_user(r, 820, 60 * S, NULL), 8025);

        /* A snapshot: the writer's later ticks are not seen until it ends, nor its fold of the
         * pending ones (b's tick falls into a later minute) counted twice or lost. */
        assert_int_equal(store_snapshot_begin(r), 0);
        assert_int_equal(history_user_read(r, 820, 10 * S, NULL), 8025);
        {
                ProcessInfo b = { .pid = 821, .start_time = 9, .comm = "b", .first_seen_usec = t0 + 120 * S };
                ProcessSample sample = { &b, (Faults) { .user = 1 }, NULL };

                assert_int_equal(store_flush(w, t0 + 120 * S, &sample, 1), 0);
        }
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM sample_raw"), 2);
        assert_int_equal(store_find_process(r, 821, 0, &id, &found), -ENOENT);
        assert_int_equal(history_user_read(r, 820, 10 * S, NULL), 8025);
        store_snapshot_end(r);
        assert_int_equal(history_user(r, 821, 10 * S, NULL), 1);
        /* Folded, the same answer from the raw tier alone. */
        assert_int_equal(history_user(r, 820, 10 * S, NULL), 8025);

        /* Top reads the raw tier and the pending tick. */
        assert_int_equal(IN_SNAPSHOT(r, store_top(r, t0, "user", 10, -1, NULL, &rows, &n, NULL)), 0);
        assert_int_equal(n, 2);
        assert_int_equal(rows[0].faults.user, 8025);
        store_rows_free(rows, n);
        store_free(r);
        store_free(w);
}

/* The sum of a unit history's rows. */
static void unit_history_sum(const StoreGroupHistory *h, Faults *faults, Traps *traps) {
        *faults = (Faults) {};
        *traps = (Traps) {};
        for (size_t i = 0; i < h->n_rows; i++) {
                faults_add(faults, &h->rows[i].faults);
                if (h->rows[i].traps)
                        traps_add(traps, h->rows[i].traps);
        }
}

/* ContainerHistory: processes of a docker container (one root's, one a user's), of a machine and
 * of none; the container by id, by a prefix of its id, by name; a machine's name is no prefix;
 * the caller's uid; the container kept and replaced as processes are seen again. */
static void test_container_history(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL;
        Container docker = { .runtime = "docker", .id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                             .user = UINT32_MAX },
                  machine = { .runtime = "machined", .id = "0123web", .name = "0123web", .user = UINT32_MAX };
        ProcessInfo a = { .pid = 700, .start_time = 1, .comm = "a", .uid = 0, .container = &docker, .first_seen_usec = t0 };
        ProcessInfo b = { .pid = 701, .start_time = 1, .comm = "b", .uid = 1000, .container = &docker,
                          .first_seen_usec = t0 };
        ProcessInfo c = { .pid = 702, .start_time = 1, .comm = "c", .uid = 0, .container = &machine,
                          .first_seen_usec = t0 };
        ProcessInfo d = { .pid = 703, .start_time = 1, .comm = "d", .uid = 0, .first_seen_usec = t0 };
        StoreGroupHistory h;
        char path[256];
        Faults faults;
        Traps traps;
        Store *w, *r;

        snprintf(path, sizeof(path), "%s/container-history.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &w), 0);
        for (uint64_t i = 0; i < 12; i++) {
                ProcessSample samples[] = {
                        { &a, (Faults) { .user = 1 } },
                        { &b, (Faults) { .user = 10 } },
                        { &c, (Faults) { .user = 100 } },
                        { &d, (Faults) { .user = 1000 } },
                };

                a.last_seen_usec = b.last_seen_usec = c.last_seen_usec = d.last_seen_usec = t0 + i * 10 * S;
                /* Seen later without its container (not read again): the row keeps it. */
                b.container = i < 6 ? &docker : NULL;
                assert_int_equal(store_flush(w, t0 + i * 10 * S, samples, ELEMENTSOF(samples)), 0);
        }
        assert_int_equal(store_open_reader(path, "boot-1", &r), 0);

        static const char *const docker_names[] = { "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                                                    "0123", "0123456789ab" };
        for (size_t k = 0; k < ELEMENTSOF(docker_names); k++) {
                assert_int_equal(group_history(r, &(StoreGroup) { .container = docker_names[k] }, -1, 0, UINT64_MAX,
                                               60 * S, &h),
                                 0);
                unit_history_sum(&h, &faults, &traps);
                assert_int_equal(faults.user, 12 * 11);
                assert_int_equal(h.processes, 2);
                assert_int_equal(h.n_containers, 1);
                assert_string_equal(h.containers[0].runtime, "docker");
                assert_string_equal(h.containers[0].id, docker.id);
                assert_int_equal(h.containers[0].user, UINT32_MAX);
                assert_int_equal(h.n_units, 0);
                store_group_history_done(&h);
        }
        /* The user sees their own process only. */
        assert_int_equal(group_history(r, &(StoreGroup) { .container = "0123" }, 1000, 0, UINT64_MAX, 60 * S, &h), 0);
        unit_history_sum(&h, &faults, &traps);
        assert_int_equal(faults.user, 12 * 10);
        store_group_history_done(&h);
        assert_int_equal(group_history(r, &(StoreGroup) { .container = "0123web" }, 1000, 0, UINT64_MAX, 60 * S, &h),
                         -ENOENT);
        /* The machine by its name; "0123" is the start of its name, not of a hex id. */
        assert_int_equal(group_history(r, &(StoreGroup) { .container = "0123web" }, -1, 0, UINT64_MAX, 60 * S, &h), 0);
        unit_history_sum(&h, &faults, &traps);
        assert_int_equal(faults.user, 12 * 100);
        assert_string_equal(h.containers[0].name, "0123web");
        store_group_history_done(&h);
        /* Too short a prefix, an upper-case one, a name of no container. */
        static const char *const none[] = { "012", "0123456789ABCDEF", "web", "*" };
        for (size_t k = 0; k < ELEMENTSOF(none); k++)
                assert_int_equal(group_history(r, &(StoreGroup) { .container = none[k] }, -1, 0, UINT64_MAX, 60 * S,
                                               &h),
                                 -ENOENT);
        store_free(r);
        store_free(w);
}

/* UnitHistory: two processes of web.service (one exits) and one of db.service, four minutes
 * rolled up into the minute and hour tiers (the raw rows expired), a minute in the raw tier
 * later, its last tick still pending when a reader asks. Every interval's sums exact, at every
 * resolution, traps included; globs; the caller's uid; NoSuchUnit's -ENOENT. */
static void test_unit_history(void **state) {
        const uint64_t S = 1000000, M = 60 * S, H = 3600 * S, t0 = 1700000000000000ULL - 1700000000000000ULL % H;
        const StoreRetention keep = { .raw_usec = H, .minute_usec = 3 * H, .hour_usec = 240 * H, .batch_rows = 500 };
        ProcessInfo a = { .pid = 600, .start_time = 1, .comm = "web", .uid = 1000, .unit = (char *) "web.service",
                          .first_seen_usec = t0 };
        ProcessInfo b = { .pid = 601, .start_time = 1, .comm = "web-worker", .uid = 0, .unit = (char *) "web.service",
                          .first_seen_usec = t0 };
        ProcessInfo c = { .pid = 602, .start_time = 1, .comm = "db", .uid = 1000, .unit = (char *) "db.service",
                          .first_seen_usec = t0 };
        ProcessInfo d = { .pid = 603, .start_time = 1, .comm = "none", .uid = 1000, .first_seen_usec = t0 };
        const Traps ud = { .vector[6] = 1 }, bp = { .vector[3] = 2 };
        StoreGroupHistory h;
        char path[256];
        Faults faults;
        Traps traps;
        Store *w, *r;

        snprintf(path, sizeof(path), "%s/unit-history.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &w), 0);
        /* Four minutes of ticks every 10 s: a 1 user fault and a #UD each, b 10 faults and two
         * #BP every third tick, c 100 faults (exits at the end), d (no unit) 1000. */
        for (uint64_t i = 0; i < 24; i++) {
                ProcessSample samples[] = {
                        { &a, (Faults) { .user = 1 }, &ud },
                        { &b, (Faults) { .user = 10 }, i % 3 == 0 ? &bp : NULL },
                        { &c, (Faults) { .user = 100 }, NULL },
                        { &d, (Faults) { .user = 1000 }, NULL },
                };

                a.last_seen_usec = b.last_seen_usec = c.last_seen_usec = d.last_seen_usec = t0 + i * 10 * S;
                c.exited = i == 23;
                assert_int_equal(store_flush(w, t0 + i * 10 * S, samples, ELEMENTSOF(samples)), 0);
        }
        /* Two hours later they are in the minute and hour tiers only. */
        maintain_until_done(w, t0 + 2 * H, &keep);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM sample_raw"), 0);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM sample_minute WHERE process_id IN "
                                        "(SELECT id FROM process WHERE pid IN (600, 601))"),
                         2 * 4);
        /* Then a minute in the raw tier, a bucket per tick: all six pending until a tick of a
         * later minute folds them. */
        for (uint64_t k = 0; k < 6; k++) {
                ProcessSample samples[] = {
                        { &a, (Faults) { .user = 1 }, &ud },
                        { &b, (Faults) { .user = 10 }, k % 3 == 0 ? &bp : NULL },
                };

                a.last_seen_usec = b.last_seen_usec = t0 + 2 * H + k * 10 * S;
                b.exited = k == 5;
                assert_int_equal(store_flush(w, t0 + 2 * H + k * 10 * S, samples, ELEMENTSOF(samples)), 0);
        }
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM sample_pending"), 6);

        assert_int_equal(store_open_reader(path, "boot-1", &r), 0);
        /* Per minute: 6 + 60 user faults, 6 #UD and 2 × 2 #BP (ticks 0 and 3 of each 6). */
        assert_int_equal(unit_history(r, "web.service", -1, 0, UINT64_MAX, M, &h), 0);
        assert_int_equal(h.n_units, 1);
        assert_string_equal(h.units[0], "web.service");
        assert_int_equal(h.processes, 2);
        assert_int_equal(h.running, 1);
        assert_int_equal(h.n_rows, 5);
        for (size_t i = 0; i < h.n_rows; i++) {
                assert_int_equal(h.rows[i].time_usec, i < 4 ? t0 + i * M : t0 + 2 * H);
                assert_int_equal(h.rows[i].faults.user, 66);
                assert_int_equal(h.rows[i].traps->vector[6], 6);
                assert_int_equal(h.rows[i].traps->vector[3], 4);
                assert_int_equal(traps_total(h.rows[i].traps), 10);
        }
        store_group_history_done(&h);

        /* By the hour: the first hour from the hour tier, the last from raw and pending. */
        assert_int_equal(unit_history(r, "web.service", -1, 0, UINT64_MAX, H, &h), 0);
        assert_int_equal(h.n_rows, 2);
        assert_int_equal(h.rows[0].time_usec, t0);
        assert_int_equal(h.rows[0].faults.user, 4 * 66);
        assert_int_equal(h.rows[0].traps->vector[3], 16);
        assert_int_equal(h.rows[1].time_usec, t0 + 2 * H);
        assert_int_equal(h.rows[1].faults.user, 66);
        assert_int_equal(h.rows[1].traps->vector[6], 6);
        store_group_history_done(&h);

        /* The pending minute by 10 s; the default step as UnitHistory's
         * method takes it (from the earliest first seen, t0, to now, 2 h: 10 s) and the range's
         * processes: c exited before it, b within. */
        assert_int_equal(store_snapshot_begin(r), 0);
        assert_int_equal(store_group_history_find(r, &(StoreGroup) { .unit_glob = "*.service" }, -1, t0 + 2 * H,
                                                  UINT64_MAX, &h),
                         0);
        assert_int_equal(h.first_seen_usec, t0);
        assert_int_equal(tier_default_resolution_sec(h.first_seen_usec, t0 + 2 * H + M, t0 + 2 * H, UINT64_MAX), 10);
        assert_int_equal(store_group_history_read(r, &h, t0 + 2 * H, UINT64_MAX, 10 * S), 0);
        store_snapshot_end(r);
        assert_int_equal(h.n_units, 2);
        assert_string_equal(h.units[0], "db.service");
        assert_string_equal(h.units[1], "web.service");
        assert_int_equal(h.processes, 2);
        assert_int_equal(h.running, 1);
        assert_int_equal(h.n_rows, 6);
        for (size_t k = 0; k < h.n_rows; k++) {
                assert_int_equal(h.rows[k].time_usec, t0 + 2 * H + k * 10 * S);
                assert_int_equal(h.rows[k].faults.user, 11);
                assert_int_equal(h.rows[k].traps->vector[3], k % 3 == 0 ? 2 : 0);
        }
        store_group_history_done(&h);

        /* All time, all units: c's 2400 too, never d's (no unit). */
        assert_int_equal(unit_history(r, "*", -1, 0, UINT64_MAX, M, &h), 0);
        assert_int_equal(h.processes, 3);
        unit_history_sum(&h, &faults, &traps);
        assert_int_equal(faults.user, 5 * 66 + 2400);
        assert_int_equal(traps.vector[6], 30);
        assert_int_equal(traps.vector[3], 20);
        assert_int_equal(traps_total(&traps), 50);
        store_group_history_done(&h);

        /* uid 1000 sees a alone of web.service: 30 faults, 30 #UD, no #BP. */
        assert_int_equal(unit_history(r, "web.service", 1000, 0, UINT64_MAX, M, &h), 0);
        assert_int_equal(h.processes, 1);
        assert_int_equal(h.running, 1);
        unit_history_sum(&h, &faults, &traps);
        assert_int_equal(faults.user, 30);
        assert_int_equal(traps.vector[6], 30);
        assert_int_equal(traps.vector[3], 0);
        store_group_history_done(&h);
        /* ... and of "w*" and "[a-z]b.service" what is theirs; a range before everything has no
         * samples and no processes, but the unit is known. */
        assert_int_equal(unit_history(r, "?b.service", 1000, 0, UINT64_MAX, M, &h), 0);
        assert_int_equal(h.n_units, 1);
        assert_string_equal(h.units[0], "db.service");
        unit_history_sum(&h, &faults, &traps);
        assert_int_equal(faults.user, 2400);
        store_group_history_done(&h);
        assert_int_equal(unit_history(r, "w*", 1000, 0, t0, M, &h), 0);
        assert_int_equal(h.n_units, 1);
        assert_int_equal(h.processes, 0);
        assert_int_equal(h.n_rows, 0);
        store_group_history_done(&h);

        /* Unknown units, units only of others, case: -ENOENT. A step that is not whole buckets. */
        assert_int_equal(unit_history(r, "nginx.service", -1, 0, UINT64_MAX, M, &h), -ENOENT);
        assert_int_equal(unit_history(r, "web.service", 5, 0, UINT64_MAX, M, &h), -ENOENT);
        assert_int_equal(unit_history(r, "WEB.service", -1, 0, UINT64_MAX, M, &h), -ENOENT);
        assert_int_equal(unit_history(r, "web.service", -1, 0, UINT64_MAX, 15 * S, &h), -EINVAL);

        /* The writer's own query reads the pending ticks where they are, and folds nothing: the same
         * sums. */
        assert_int_equal(unit_history(w, "web.service", -1, 0, UINT64_MAX, H, &h), 0);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM sample_pending"), 6);
        unit_history_sum(&h, &faults, &traps);
        assert_int_equal(faults.user, 5 * 66);
        assert_int_equal(traps_total(&traps), 50);
        store_group_history_done(&h);
        store_free(r);
        store_free(w);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_history_interval_across_tiers),
                cmocka_unit_test(test_reader_sees_pending_ticks),
                cmocka_unit_test(test_unit_history),
                cmocka_unit_test(test_container_history),
        };
        return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
