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

static uint64_t file_bytes(const char *path, const char *suffix) {
        char p[300];
        struct stat st;

        snprintf(p, sizeof(p), "%s%s", path, suffix);
        return stat(p, &st) == 0 ? (uint64_t) st.st_size : 0;
}

static void note_checkpoint(void *userdata, bool force _unused_) {
        *(bool *) userdata = true;
}

/* The size cap holds the database with its WAL, within 25 %, through a storm of one user's
 * short-lived processes with 4 KiB command lines (stored cut to --max-cmdline's default); the
 * storm's user loses their oldest processes first, and root's process from before the storm keeps
 * every count. */
static void test_size_cap_shares(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL, cap = 4 * 1024 * 1024;
        StoreRetention r = STORE_RETENTION_DEFAULT;
        ProcessInfo root = { .pid = 500, .start_time = 1, .comm = "root", .uid = 0, .first_seen_usec = t0 };
        char path[256], long_cmdline[4097];
        ProcessInfo *list = NULL;
        bool due = false, more;
        uint64_t peak = 0;
        size_t n = 0;
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
                ProcessSample sample = { &root, (Faults) { .user = 7 }, &t };
                root.last_seen_usec = t0 + i * 10 * S;
                assert_int_equal(store_flush(s, root.last_seen_usec, &sample, 1), 0);
        }
        root.exited = true;
        {
                ProcessSample sample = { &root, (Faults) {}, NULL };
                assert_int_equal(store_flush(s, t0 + 300 * S, &sample, 1), 0);
        }

        /* 4000 processes of uid 1000, 100 per tick, each with one sample and one trap: 0.7 MiB of
         * WAL a tick with the cap's step, which the target leaves room for. */
        for (uint32_t tick = 0; tick < 40; tick++) {
                uint64_t now = t0 + 310 * S + tick * S;
                ProcessInfo p[100];
                ProcessSample samples[100];
                Traps t[100];

                for (uint32_t i = 0; i < 100; i++) {
                        p[i] = (ProcessInfo) { .pid = 10000 + tick * 100 + i, .start_time = 1, .comm = "storm",
                                               .cmdline = long_cmdline, .uid = 1000, .first_seen_usec = now,
                                               .last_seen_usec = now, .exited = true };
                        t[i] = (Traps) {};
                        t[i].vector[3] = 1;
                        samples[i] = (ProcessSample) { &p[i], (Faults) { .user = 4 }, &t[i] };
                }
                assert_int_equal(store_flush(s, now, samples, 100), 0);
                /* What the daemon does: the cap's step when a flush leaves the store over it. */
                do {
                        more = false;
                        if (store_over_cap(s, &r))
                                assert_int_equal(store_maintain(s, now, &r, &more), 0);
                        if (due) {
                                due = false;
                                assert_int_equal(store_checkpoint(path, false, NULL), 0);
                        }
                } while (more);
                peak = MAX(peak, file_bytes(path, "") + file_bytes(path, "-wal"));
        }
        print_message("size cap %" PRIu64 " KiB: database + WAL at most %" PRIu64 " KiB\n", cap >> 10, peak >> 10);
        assert_true(peak <= cap + cap / 4);
        assert_true(store_used_bytes(s) <= store_cap_target(s, cap));

        /* root's process: every count. */
        {
                Traps sum = {};
                uint64_t processes = 0;
                assert_int_equal(history_user(s, 500, 10 * S, NULL), 30 * 7);
                assert_int_equal(store_traps(s, t0, 0, &sum, &processes), 0);
                assert_int_equal(traps_total(&sum), 30);
                assert_int_equal(processes, 1);
        }
        /* The storm's newest processes are there, its oldest gone; command lines cut and marked. */
        assert_int_equal(store_list_processes(s, &(StoreProcessFilter) { .uid = 1000, .include_exited = true,
                                                                         .limit = 100000 },
                                              &list, &n, NULL),
                         0);
        assert_true(n > 100 && n < 4000);
        assert_int_equal(list[0].pid, 10000 + 3999);
        assert_int_equal(strlen(list[0].cmdline), STORE_MAX_CMDLINE_DEFAULT + strlen(STORE_CMDLINE_CUT));
        assert_string_equal(list[0].cmdline + STORE_MAX_CMDLINE_DEFAULT, STORE_CMDLINE_CUT);
        process_infos_free(list, n);
        {
                ProcessInfo gone;
                int64_t id;
                assert_int_equal(store_find_process(s, 10000, 1, &id, &gone), -ENOENT);
        }
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
                /* Over the cap whatever goes; one step stops once 10 rows went. */
                r.max_bytes = 1;
                r.batch_rows = 10;
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
        };
        return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
