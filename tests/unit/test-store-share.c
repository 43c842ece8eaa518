/* SPDX-License-Identifier: MIT */
/* The size cap and its shares (daemon/store-share.c): the database with its WAL within the cap
 * through one user's storm of processes, root's history kept, command lines cut and marked,
 * root's reserve. Apart from test-store.c: each writes and syncs megabytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "unit-store.h"
#include "unit-tmpdir.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "macro.h"

DEFINE_TEST_TMPDIR("test-store-share");

#include "unit-store-db.h"

static uint64_t file_bytes(const char *path, const char *suffix) {
        char p[300];
        struct stat st;

        snprintf(p, sizeof(p), "%s%s", path, suffix);
        return stat(p, &st) == 0 ? (uint64_t) st.st_size : 0;
}

static void note_checkpoint(void *userdata, bool force _unused_) {
        *(bool *) userdata = true;
}

/* A flood of 4000 short-lived processes of uid 2000 with 4 KiB command lines, 100 a tick. */
static void flood(Store *s, const StoreRetention *r, const char *path, bool *due, uint64_t from, uint32_t first_pid,
                  const char *cmdline, uint64_t *peak) {
        const uint64_t S = 1000000;
        bool more;

        for (uint32_t tick = 0; tick < 40; tick++) {
                uint64_t now = from + tick * S;
                ProcessInfo p[100];
                ProcessSample samples[100];
                Traps t[100];

                for (uint32_t i = 0; i < 100; i++) {
                        p[i] = (ProcessInfo) { .pid = first_pid + tick * 100 + i, .start_time = 1, .comm = "storm",
                                               .cmdline = (char *) cmdline, .uid = 2000, .first_seen_usec = now,
                                               .last_seen_usec = now, .exited = true };
                        t[i] = (Traps) {};
                        t[i].vector[3] = 1;
                        samples[i] = (ProcessSample) { &p[i], (Faults) { .user = 4 }, &t[i] };
                }
                assert_int_equal(store_flush(s, now, samples, 100), 0);
                /* What the daemon does: the cap's step when a flush leaves the store over it. */
                do {
                        more = false;
                        if (store_over_cap(s, r))
                                assert_int_equal(store_maintain(s, now, r, &more), 0);
                        if (*due) {
                                *due = false;
                                assert_int_equal(store_checkpoint(path, false, NULL), 0);
                        }
                } while (more);
                *peak = MAX(*peak, file_bytes(path, "") + file_bytes(path, "-wal"));
        }
}

/* The size cap holds the database with its WAL, within 25 %, through three floods of one user's
 * short-lived processes with 4 KiB command lines (stored cut to --max-cmdline's default). The
 * flood's user, over their share, loses their oldest processes first, every time; root's process
 * from before (within the reserve) and another user's service (within their share) keep every
 * count, however many floods come. */
static void test_size_cap_shares(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL, cap = 4 * 1024 * 1024;
        StoreRetention r = STORE_RETENTION_DEFAULT;
        ProcessInfo root = { .pid = 500, .start_time = 1, .comm = "root", .uid = 0, .first_seen_usec = t0 };
        ProcessInfo service = { .pid = 501, .start_time = 1, .comm = "service", .uid = 1000, .first_seen_usec = t0 };
        char path[256], long_cmdline[4097];
        bool due = false;
        uint64_t peak = 0, service_user = 0;
        Store *s;

        memset(long_cmdline, 'x', 4096);
        long_cmdline[4096] = '\0';
        r.max_bytes = cap;
        snprintf(path, sizeof(path), "%s/cap.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        store_set_checkpoint_handler(s, store_checkpoint_pages(cap), note_checkpoint, &due);
        for (uint64_t i = 0; i < 30; i++) {
                Traps t = {};
                t.vector[6] = 1;
                ProcessSample samples[] = { { &root, (Faults) { .user = 7 }, &t },
                                            { &service, (Faults) { .user = i + 1 }, NULL } };
                root.last_seen_usec = service.last_seen_usec = t0 + i * 10 * S;
                service_user += i + 1;
                assert_int_equal(store_flush(s, root.last_seen_usec, samples, 2), 0);
        }
        root.exited = true;
        {
                ProcessSample sample = { &root, (Faults) {}, NULL };
                assert_int_equal(store_flush(s, t0 + 300 * S, &sample, 1), 0);
        }

        for (uint32_t f = 0; f < 3; f++) {
                ProcessInfo *list = NULL;
                size_t n = 0;

                /* 4000 processes a flood, 100 a tick, each with one sample and one trap: 0.7 MiB of
                 * WAL a tick with the cap's step, which the target leaves room for. */
                flood(s, &r, path, &due, t0 + 310 * S + f * 100 * S, 10000 + f * 4000, long_cmdline, &peak);
                assert_true(store_used_bytes(s) <= store_cap_target(s, cap));

                /* root's process and the service: every count, at every resolution. */
                for (uint64_t res = 10 * S; res <= 3600 * S; res *= 6) {
                        Traps sum = {};
                        uint64_t traps, processes = 0;
                        assert_int_equal(history_user(s, 500, res, &traps), 30 * 7);
                        assert_int_equal(traps, 30);
                        assert_int_equal(history_user(s, 501, res, NULL), service_user);
                        assert_int_equal(IN_SNAPSHOT(s, store_traps(s, t0, 0, 0, &sum, &processes)), 0);
                        assert_int_equal(traps_total(&sum), 30);
                        assert_int_equal(processes, 1);
                }
                /* The floods: what is left is the newest processes, each whole; command lines cut
                 * and marked. */
                assert_int_equal(IN_SNAPSHOT(s, store_list_processes(s,
                                                                     &(StoreProcessFilter) { .uid = 2000,
                                                                                             .include_exited = true,
                                                                                             .limit = 100000 },
                                                                     &list, &n, NULL, NULL)),
                                 0);
                assert_true(n > 100 && n < 4000);
                for (size_t i = 0; i < n; i++)
                        assert_int_equal(list[i].pid, 10000 + f * 4000 + 3999 - i);
                assert_int_equal(strlen(list[0].cmdline), STORE_MAX_CMDLINE_DEFAULT + strlen(STORE_CMDLINE_CUT));
                assert_string_equal(list[0].cmdline + STORE_MAX_CMDLINE_DEFAULT, STORE_CMDLINE_CUT);
                assert_int_equal(history_user(s, list[n - 1].pid, 10 * S, NULL), 4);
                process_infos_free(list, n);
        }
        print_message("size cap %" PRIu64 " KiB: database + WAL at most %" PRIu64 " KiB through 3 floods\n", cap >> 10,
                      peak >> 10);
        assert_true(peak <= cap + cap / 4);
        store_free(s);
        (void) state;
}

/* Fourteen days of a root service and ten processes of a user's service, a tick every 10 min, under a
 * cap the user's history does not fit: the user over their share loses detail, oldest first,
 * and no count. Their minute rows become hour rows from the oldest on, their hour tier keeps
 * every hour of their processes' lives with the sums the simulation made, every History since 0
 * equals the simulation; root's history (within the reserve) keeps every row. */
static void test_size_cap_coarsens_oldest_first(void **state) {
        const uint64_t S = 1000000, M = 60 * S, H = 3600 * S, days = 14;
        const uint64_t t0 = 1700000000000000ULL - 1700000000000000ULL % H, end = t0 + days * 24 * H;
        StoreRetention r = STORE_RETENTION_DEFAULT;
        ProcessInfo p[11];
        uint64_t total[11] = {}, root_rows;
        char path[256];
        bool due = false;
        Store *s;

        for (int i = 0; i < 11; i++)
        {
                p[i] = (ProcessInfo) { .pid = 600 + i, .start_time = 1, .uid = i ? 1000 : 0, .first_seen_usec = t0 };
                snprintf(p[i].comm, sizeof(p[i].comm), "%s", i ? "service" : "root");
        }
        snprintf(path, sizeof(path), "%s/coarsen.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        store_set_checkpoint_handler(s, store_checkpoint_pages(0), note_checkpoint, &due);
        for (uint64_t t = t0; t < end; t += 10 * M) {
                ProcessSample samples[11];

                for (int i = 0; i < 11; i++) {
                        uint64_t user = (t / (10 * M) + (uint64_t) i) % 13 + 1;

                        p[i].last_seen_usec = t;
                        samples[i] = (ProcessSample) { &p[i], (Faults) { .user = user, .minor = user } };
                        total[i] += user;
                }
                assert_int_equal(store_flush(s, t, samples, 11), 0);
                if ((t + 10 * M) % H == 0)
                        maintain_until_done(s, t + 10 * M, &r);
                if (due) {
                        due = false;
                        assert_int_equal(store_checkpoint(path, true, NULL), 0);
                }
        }
        maintain_until_done(s, end, &r);
        root_rows = (uint64_t) db_count(path, "SELECT COUNT(*) FROM sample_minute WHERE process_id = "
                                              "(SELECT id FROM process WHERE pid = 600)");
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM sample_hour"), 11 * days * 24);

        /* A cap the user's history does not fit in. */
        r.max_bytes = store_used_bytes(s) / 2 + 1024 * 1024;
        maintain_until_done(s, end, &r);
        assert_true(store_used_bytes(s) <= store_cap_target(s, r.max_bytes));
        for (int i = 0; i < 11; i++)
                assert_int_equal(history_user(s, 600 + i, H, NULL), total[i]);
        /* Every hour of every process's life in the hour tier, and root's minutes all there. */
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM sample_hour"), 11 * days * 24);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM sample_minute WHERE process_id = "
                                        "(SELECT id FROM process WHERE pid = 600)"),
                         (int64_t) root_rows);
        /* The user's oldest minutes went first: their first day is one row an hour, their last
         * hours still a row every 10 min. */
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM sample_minute WHERE time_usec % 3600000000 != 0 AND "
                                        "process_id IN (SELECT id FROM process WHERE uid = 1000) AND time_usec < "
                                        "(SELECT MIN(time_usec) + 86400000000 FROM sample_minute)"),
                         0);
        assert_true(db_count(path, "SELECT COUNT(*) FROM sample_minute WHERE time_usec % 3600000000 != 0 AND "
                                   "process_id IN (SELECT id FROM process WHERE uid = 1000) AND time_usec >= "
                                   "(SELECT MAX(time_usec) - 3600000000 FROM sample_minute)") > 0);
        store_free(s);
        (void) state;
}

/* root's reserve: root holding more than the user loses nothing while it is within --db-reserve,
 * and the user over their share loses their rows; without a reserve, root, holding the most, loses
 * its oldest rows first (a step stops once 10 rows went), and the user keeps theirs. */
static void test_size_cap_reserve(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL;
        StoreRetention r = STORE_RETENTION_DEFAULT;
        ProcessInfo root = { .pid = 520, .start_time = 1, .comm = "root", .uid = 0, .first_seen_usec = t0 };
        ProcessInfo user = { .pid = 521, .start_time = 1, .comm = "user", .uid = 1000, .first_seen_usec = t0 };
        char path[256];
        bool more;
        Store *s;

        for (int reserve = 1; reserve >= 0; reserve--) {
                snprintf(path, sizeof(path), "%s/reserve-%d.db", tmpdir, reserve);
                assert_int_equal(store_open(path, "boot-1", &s), 0);
                /* root: 40 buckets of samples; the user: 10, both running. */
                for (uint64_t i = 0; i < 40; i++) {
                        ProcessSample samples[] = { { &root, (Faults) { .user = 1 }, NULL },
                                                    { &user, (Faults) { .user = i < 10 }, NULL } };
                        root.last_seen_usec = user.last_seen_usec = t0 + i * 10 * S;
                        assert_int_equal(store_flush(s, t0 + i * 10 * S, samples, 2), 0);
                }
                /* Rolled up first (a roll-up step is cut by time: under ASan it gets less far). */
                r = STORE_RETENTION_DEFAULT;
                maintain_until_done(s, t0 + 400 * S, &r);
                /* Over the cap whatever goes; one step stops once 10 rows went (raw and minute
                 * rows: the oldest two minutes, 10 raw rows). */
                r.max_bytes = 1;
                r.batch_rows = 10;
                r.cap_slice_usec = 0; /* one step does all that, however slow the machine */
                r.reserve_bytes = reserve ? 1024 * 1024 : 0;
                assert_int_equal(store_maintain(s, t0 + 400 * S, &r, &more), 0);
                assert_int_equal(history_user(s, 520, 10 * S, NULL), reserve ? 40 : 30);
                assert_int_equal(history_user(s, 521, 10 * S, NULL), reserve ? 0 : 10);
                store_free(s);
        }
        (void) state;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_size_cap_shares),
                cmocka_unit_test(test_size_cap_reserve),
                cmocka_unit_test(test_size_cap_coarsens_oldest_first),
        };
        return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
