/* SPDX-License-Identifier: MIT */
/* Maintenance (store-maintain.c): roll-up, retention, the tiers' marks, processes gone. */

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
#include "store-pending.h"
DEFINE_TEST_TMPDIR("test-store-maintain");
#include "unit-store-db.h"

static int64_t sql_int_at(const char *path, const char *sql) {
        sqlite3 *db;
        sqlite3_stmt *st;
        int64_t n;

        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return n;
}

static int64_t count_rows_at(const char *path, const char *table) {
        char sql[128];

        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM %s", table);
        return sql_int_at(path, sql);
}

static int64_t count_rows(Store *s, const char *table) {
        char path[256], sql[128];

        (void) s;
        snprintf(path, sizeof(path), "%s/maintain.db", tmpdir);
        snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM %s", table);
        return sql_int_at(path, sql);
}

static void test_rollup_and_retention(void **state) {
        const uint64_t S = 1000000, H = 3600 * S, t0 = 1700000000000000ULL - 1700000000000000ULL % H;
        const StoreRetention r = { .raw_usec = H, .minute_usec = 3 * H, .hour_usec = 240 * H, .batch_rows = 500 };
        ProcessInfo a = { .pid = 400, .start_time = 1, .comm = "a", .first_seen_usec = 1 };
        ProcessInfo b = { .pid = 401, .start_time = 1, .comm = "b", .first_seen_usec = 1 };
        ProcessInfo c = { .pid = 402, .start_time = 1, .comm = "c", .first_seen_usec = 1, .exited = true };
        uint64_t all_a = 0, all_b = 0, from3h_a = 0, from5h_a = 0, traps_a = 0, traps;
        char path[256];
        StoreRow *rows;
        Store *s;
        size_t n;

        snprintf(path, sizeof(path), "%s/maintain.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        /* 2: incremental, so the size cap can give pages back to the file system. */
        assert_int_equal(count_rows(s, "pragma_auto_vacuum WHERE auto_vacuum = 2"), 1);

        /* Six hours of 10 s buckets; a traps every 10th bucket; c once, at the start. */
        for (uint64_t i = 0; i < 6 * 360; i++) {
                uint64_t t = t0 + i * 10 * S;
                Traps tr = { .vector = { [6] = 1 } };
                ProcessSample samples[3] = {
                        { &a, (Faults) { .user = i % 7 + 1 }, i % 10 == 0 ? &tr : NULL },
                        { &b, (Faults) { .user = 2, .major = 1, .major_shmem = 1 }, NULL },
                        { &c, (Faults) { .user = 5 }, NULL },
                };

                assert_int_equal(store_flush(s, t, samples, i == 0 ? 3 : 2), 0);
                all_a += i % 7 + 1;
                all_b += 2;
                traps_a += i % 10 == 0;
                if (t >= t0 + 3 * H)
                        from3h_a += i % 7 + 1;
                if (t >= t0 + 5 * H)
                        from5h_a += i % 7 + 1;
        }
        assert_int_equal(history_user(s, 400, 10 * S, &traps), all_a);
        assert_int_equal(traps, traps_a);

        maintain_until_done(s, t0 + 6 * H + 5 * S, &r);

        /* Rolled up to the last whole minute and hour; raw kept 1 h, minutes 3 h. */
        assert_int_equal(count_rows(s, "sample_hour"), 2 * 6 + 1); /* c has one sample */
        assert_int_equal(count_rows(s, "sample_minute"), 2 * 3 * 60);
        assert_int_equal(count_rows(s, "sample_raw"), 2 * 360);
        assert_int_equal(count_rows(s, "trap_raw"), 36);

        /* Sums preserved exactly: hours cover everything, minutes the last 3 h, raw the last 1 h. */
        assert_int_equal(history_user(s, 400, H, &traps), all_a);
        assert_int_equal(traps, traps_a);
        assert_int_equal(history_user(s, 401, 2 * H, NULL), all_b);
        assert_int_equal(history_user(s, 400, 60 * S, NULL), from3h_a);
        assert_int_equal(history_user(s, 400, 10 * S, NULL), from5h_a);

        /* Top over the whole time reads hours: the same totals. */
        assert_int_equal(IN_SNAPSHOT(s, store_top(s, t0, "user", 10, -1, NULL, &rows, &n, NULL)), 0);
        assert_int_equal(n, 3);
        assert_int_equal(rows[0].process.pid, 400); /* about 4 a bucket against b's 2 */
        assert_int_equal(rows[0].faults.user, all_a);
        assert_int_equal(rows[0].traps.vector[6], traps_a);
        assert_int_equal(rows[1].process.pid, 401);
        assert_int_equal(rows[1].faults.user, all_b);
        store_rows_free(rows, n);
        /* By a major fault cause, from the hours too: b's one shmem swap-in a bucket, all of them. */
        assert_int_equal(IN_SNAPSHOT(s, store_top(s, t0, "majorShmem", 10, -1, NULL, &rows, &n, NULL)), 0);
        assert_true(n >= 1);
        assert_int_equal(rows[0].process.pid, 401);
        assert_int_equal(rows[0].faults.major_shmem, 6 * 360);
        assert_int_equal(rows[0].faults.major, 6 * 360);
        assert_int_equal(rows[0].faults.major_file + rows[0].faults.major_anon, 0);
        store_rows_free(rows, n);
        /* And over the last 30 min: raw only. */
        assert_int_equal(IN_SNAPSHOT(s, store_top(s, t0 + 5 * H + 30 * 60 * S, "user", 10, -1, NULL, &rows, &n, NULL)),
                         0);
        assert_int_equal(n, 2);
        assert_int_equal(rows[1].process.pid, 401);
        assert_int_equal(rows[1].faults.user, 2 * 180); /* 180 buckets of 2 */
        store_rows_free(rows, n);

        /* The size cap: everything is over one byte, and all three are uid 0's. Finest detail
         * first: the minutes older than the newest hour become one row per process and hour, and
         * every count stays (a step stops once 200 rows went); then the oldest hours go, of
         * every process at once. */
        {
                StoreRetention tiny = r;
                bool more;
                int64_t minutes = count_rows(s, "sample_minute"), hours = count_rows(s, "sample_hour");

                tiny.max_bytes = 1;
                tiny.batch_rows = 200;
                assert_int_equal(store_maintain(s, t0 + 6 * H + 5 * S, &tiny, &more), 0);
                assert_true(more);
                assert_true(count_rows(s, "sample_minute") < minutes);
                assert_int_equal(count_rows(s, "sample_hour"), hours);
                assert_int_equal(history_user(s, 400, H, NULL), all_a);
                assert_int_equal(history_user(s, 401, 2 * H, NULL), all_b);
                assert_int_equal(history_user(s, 400, 60 * S, NULL), from3h_a);
                tiny.batch_rows = 10;
                assert_int_equal(store_maintain(s, t0 + 6 * H + 5 * S, &tiny, &more), 0);
                assert_true(more);
                assert_true(count_rows(s, "sample_hour") < hours);
                assert_true(history_user(s, 400, H, NULL) < all_a);
                assert_true(history_user(s, 401, H, NULL) < all_b);
                /* c, exited, had only the oldest hour: it went with it. */
                {
                        ProcessInfo found;
                        int64_t id;
                        assert_int_equal(store_find_process(s, 402, 0, &id, &found), -ENOENT);
                }
        }

        /* Eleven days later everything has aged out: c, which exited, is gone; a and b, which did
         * not exit, stay. */
        maintain_until_done(s, t0 + 11 * 24 * H, &r);
        assert_int_equal(count_rows(s, "sample_raw"), 0);
        assert_int_equal(count_rows(s, "sample_minute"), 0);
        assert_int_equal(count_rows(s, "sample_hour"), 0);
        {
                ProcessInfo found;
                int64_t id;

                assert_int_equal(store_find_process(s, 402, 0, &id, &found), -ENOENT);
                assert_int_equal(store_find_process(s, 400, 0, &id, &found), 0);
                process_info_done(&found);
                assert_int_equal(store_find_process(s, 401, 0, &id, &found), 0);
                process_info_done(&found);
        }
        store_free(s);
}

static bool always_yield(void *userdata) {
        (void) userdata;
        return true;
}

static int64_t tier_mark(const char *path, const char *tier) {
        char sql[128];

        snprintf(sql, sizeof(sql), "SELECT rolled_until_usec FROM tier WHERE name = '%s'", tier);
        return sql_int_at(path, sql);
}

/* The workload of test_rollup_marks_inside_intervals: bucket i of process a. */
static uint64_t mark_user(uint64_t i) {
        return i % 7 + 1;
}

/* Every resolution's history of a, sample by sample, and Top over everything: exact, wherever
 * the marks of the minute and hour tiers stand. */
static void assert_marks_exact(Store *s, int64_t id, uint64_t t0, size_t n_buckets) {
        const uint64_t S = 1000000, resolutions[] = { 10 * S, 60 * S, 120 * S, 3600 * S };
        uint64_t total = 0, traps = 0;
        StoreHistoryRow *hist;
        StoreRow *rows;
        size_t n;

        for (size_t i = 0; i < n_buckets; i++) {
                total += mark_user(i);
                traps += i % 10 == 0;
        }
        for (size_t k = 0; k < ELEMENTSOF(resolutions); k++) {
                uint64_t res = resolutions[k], sum = 0, sum_traps = 0;

                assert_int_equal(IN_SNAPSHOT(s, store_history(s, id, 0, UINT64_MAX, res, &hist, &n)), 0);
                for (size_t j = 0; j < n; j++) {
                        uint64_t expect = 0, expect_traps = 0;

                        for (size_t i = 0; i < n_buckets; i++)
                                if ((t0 + i * 10 * S) / res * res == hist[j].time_usec) {
                                        expect += mark_user(i);
                                        expect_traps += i % 10 == 0;
                                }
                        assert_int_equal(hist[j].faults.user, expect);
                        assert_int_equal(hist[j].traps ? hist[j].traps->vector[6] : 0, expect_traps);
                        sum += hist[j].faults.user;
                        sum_traps += hist[j].traps ? hist[j].traps->vector[6] : 0;
                }
                store_history_rows_free(hist, n);
                assert_int_equal(sum, total);
                assert_int_equal(sum_traps, traps);
        }
        assert_int_equal(IN_SNAPSHOT(s, store_top(s, t0, "user", 10, -1, NULL, &rows, &n, NULL)), 0);
        assert_int_equal(n, 1);
        assert_int_equal(rows[0].faults.user, total);
        assert_int_equal(rows[0].traps.vector[6], traps);
        store_rows_free(rows, n);
}

/* The Stall of every interval of a process's History, summed, and how many intervals had a
 * stall of block I/O but no fault. */
static Stall history_stall(Store *s, uint32_t pid, uint64_t resolution, size_t *ret_blkio_only) {
        StoreHistoryRow *hist;
        ProcessInfo found;
        Stall sum = {};
        int64_t id;
        size_t n, blkio_only = 0;

        assert_int_equal(store_snapshot_begin(s), 0);
        assert_int_equal(store_find_process(s, pid, 0, &id, &found), 0);
        process_info_done(&found);
        assert_int_equal(store_history(s, id, 0, UINT64_MAX, resolution, &hist, &n), 0);
        store_snapshot_end(s);
        for (size_t i = 0; i < n; i++) {
                stall_add(&sum, &hist[i].stall);
                blkio_only += faults_is_zero(&hist[i].faults) && hist[i].stall.ns[STALL_BLKIO] > 0;
        }
        store_history_rows_free(hist, n);
        *ret_blkio_only = blkio_only;
        return sum;
}

/* The kernel's delay accounting is kept as counts are: exact in History at every resolution,
 * before and after the pending ticks are folded and the tiers rolled up; Top sorts by the time
 * waited on memory (not block I/O) and carries each row's Stall; an interval whose only count is
 * a stall of block I/O is kept too. */
static void test_stall_kept_in_every_tier(void **state) {
        const uint64_t S = 1000000, H = 3600 * S, t0 = 1700000000000000ULL - 1700000000000000ULL % H;
        const StoreRetention r = { .raw_usec = H, .minute_usec = 3 * H, .hour_usec = 240 * H, .batch_rows = 500 };
        ProcessInfo x = { .pid = 500, .start_time = 1, .comm = "swapper", .first_seen_usec = 1 };
        ProcessInfo y = { .pid = 501, .start_time = 1, .comm = "reader", .first_seen_usec = 1 };
        const size_t buckets = 2 * 360;
        char path[256];
        StoreRow *rows;
        size_t n, blkio_only;
        Store *s;
        Stall got;

        snprintf(path, sizeof(path), "%s/stall.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        for (uint64_t i = 0; i < buckets; i++) {
                ProcessSample samples[2] = {
                        { .process = &x, .delta = { .user = 3, .major = 2, .major_anon = 2 },
                          .stall = { .ns = { [STALL_SWAPIN] = 2000, [STALL_RECLAIM] = i == 7 ? 900 : 0 },
                                     .count = { [STALL_SWAPIN] = 2, [STALL_RECLAIM] = i == 7 } } },
                        /* Waits for its disk and faults only every tenth bucket. */
                        { .process = &y, .delta = { .user = i % 10 == 0 },
                          .stall = { .ns = { [STALL_BLKIO] = 50000 }, .count = { [STALL_BLKIO] = 1 } } },
                };

                assert_int_equal(store_flush(s, t0 + i * 10 * S, samples, 2), 0);
        }
        for (int pass = 0; pass < 2; pass++) {
                /* Before maintenance the ticks are pending and raw; after it, minutes and hours (the
                 * raw tier keeps the last hour, after these two). */
                for (uint64_t res = pass == 0 ? 10 * S : 60 * S; res <= H; res *= 6) {
                        got = history_stall(s, 500, res, &blkio_only);
                        assert_int_equal(got.ns[STALL_SWAPIN], 2000 * buckets);
                        assert_int_equal(got.count[STALL_SWAPIN], 2 * buckets);
                        assert_int_equal(got.ns[STALL_RECLAIM], 900);
                        assert_int_equal(got.count[STALL_RECLAIM], 1);
                        assert_int_equal(got.ns[STALL_BLKIO] + got.ns[STALL_THRASHING] + got.ns[STALL_COMPACT], 0);
                        got = history_stall(s, 501, res, &blkio_only);
                        assert_int_equal(got.ns[STALL_BLKIO], 50000 * buckets);
                        assert_int_equal(got.count[STALL_BLKIO], buckets);
                        assert_int_equal(stall_memory_ns(&got), 0);
                        /* Nine in ten of its 10 s intervals have no fault, only the stall. */
                        if (res == 10 * S && pass == 0)
                                assert_int_equal(blkio_only, buckets - buckets / 10);
                }
                assert_int_equal(IN_SNAPSHOT(s, store_top(s, t0, "stall", 10, -1, NULL, &rows, &n, NULL)), 0);
                /* y waited longer, on its disk: not memory, so after x. */
                assert_int_equal(n, 2);
                assert_int_equal(rows[0].process.pid, 500);
                assert_int_equal(rows[1].process.pid, 501);
                assert_int_equal(stall_memory_ns(&rows[1].stall), 0);
                assert_int_equal(rows[0].stall.ns[STALL_SWAPIN], 2000 * buckets);
                assert_int_equal(rows[0].stall.ns[STALL_RECLAIM], 900);
                assert_int_equal(rows[0].faults.major_anon, 2 * buckets);
                store_rows_free(rows, n);
                assert_int_equal(IN_SNAPSHOT(s, store_top(s, t0, "user", 10, -1, NULL, &rows, &n, NULL)), 0);
                assert_int_equal(n, 2);
                assert_int_equal(rows[1].process.pid, 501);
                assert_int_equal(rows[1].stall.ns[STALL_BLKIO], 50000 * buckets);
                store_rows_free(rows, n);
                maintain_until_done(s, t0 + 3 * H, &r);
        }
        assert_int_equal(count_rows_at(path, "stall_hour"), 2 * 2);
        store_free(s);
        (void) state;
}

/* A roll-up transaction may stop inside a coarser interval (the writer had something more
 * urgent): the minute mark then stands on a 10 s bucket, the hour mark on a minute. Every answer
 * stays exact at every such mark, and nothing is rolled up twice. With a yield that always says
 * yes, each maintenance step is one transaction; with a batch of one row, one interval. */
static void test_rollup_marks_inside_intervals(void **state) {
        const uint64_t S = 1000000, M = 60 * S, H = 60 * M, t0 = 1700000000000000ULL - 1700000000000000ULL % H;
        /* One row a transaction: the span never grows past one finer interval. */
        StoreRetention r = STORE_RETENTION_DEFAULT;
        const size_t n_buckets = 2 * 360 + 90; /* 2 h 15 min */
        ProcessInfo a = { .pid = 440, .start_time = 1, .comm = "a", .first_seen_usec = 1 };
        ProcessInfo found;
        char path[256];
        bool more = true;
        int64_t id;
        Store *s;

        r.batch_rows = 1;
        snprintf(path, sizeof(path), "%s/marks.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        for (size_t i = 0; i < n_buckets; i++) {
                Traps tr = { .vector = { [6] = 1 } };
                ProcessSample sample = { &a, (Faults) { .user = mark_user(i) }, i % 10 == 0 ? &tr : NULL };

                assert_int_equal(store_flush(s, t0 + i * 10 * S, &sample, 1), 0);
        }
        assert_int_equal(store_find_process(s, 440, 0, &id, &found), 0);
        process_info_done(&found);
        store_set_maintain_yield(s, always_yield, NULL);

        /* The minute tier, one raw bucket a step, checked at marks inside a minute. */
        for (size_t step = 1; step <= n_buckets; step++) {
                assert_int_equal(store_maintain(s, t0 + n_buckets * 10 * S, &r, &more), 0);
                assert_true(more);
                assert_int_equal(tier_mark(path, "minute"), (int64_t) (t0 + step * 10 * S));
                if (step == 1 || step == 7 || step == 365 || step == n_buckets - 1)
                        assert_marks_exact(s, id, t0, n_buckets);
        }
        /* Up to the current minute (2 h 15 min), then the hour tier, one minute a step, up to
         * the current hour. */
        for (size_t step = 1; step <= 120; step++) {
                assert_int_equal(store_maintain(s, t0 + n_buckets * 10 * S, &r, &more), 0);
                assert_int_equal(tier_mark(path, "minute"), (int64_t) (t0 + 135 * M));
                assert_int_equal(tier_mark(path, "hour"), (int64_t) (t0 + step * M));
                if (step == 1 || step == 59 || step == 61 || step == 119)
                        assert_marks_exact(s, id, t0, n_buckets);
        }
        store_set_maintain_yield(s, NULL, NULL);
        maintain_until_done(s, t0 + n_buckets * 10 * S, &r);
        assert_int_equal(tier_mark(path, "hour"), (int64_t) (t0 + 2 * H));
        assert_marks_exact(s, id, t0, n_buckets);
        store_free(s);
        (void) state;
}

/* Over a stretch without rows (the daemon was stopped for a day) the roll-up's span grows from
 * one finer interval per transaction to 64: a day of raw buckets (8640) takes far fewer steps,
 * each still one transaction (about 140 here). The span grows only after a transaction quicker
 * than 2 ms: under ASan beside other tests syncing their WALs, many are not, so the bound is half
 * of what no growth at all would take. Exact all the same. */
static void test_rollup_span_grows_over_gaps(void **state) {
        const uint64_t S = 1000000, M = 60 * S, H = 60 * M, t0 = 1700000000000000ULL - 1700000000000000ULL % H;
        const StoreRetention r = STORE_RETENTION_DEFAULT;
        ProcessInfo a = { .pid = 441, .start_time = 1, .comm = "a", .first_seen_usec = 1 };
        char path[256];
        bool more = true;
        size_t steps = 0;
        Store *s;

        snprintf(path, sizeof(path), "%s/gap.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        for (uint64_t day = 0; day <= 1; day++) {
                ProcessSample sample = { &a, (Faults) { .user = 5 + day }, NULL };

                assert_int_equal(store_flush(s, t0 + day * 24 * H, &sample, 1), 0);
        }
        store_set_maintain_yield(s, always_yield, NULL);
        while (tier_mark(path, "minute") < (int64_t) (t0 + 24 * H)) {
                assert_int_equal(store_maintain(s, t0 + 24 * H + M, &r, &more), 0);
                steps++;
                assert_true(steps < 8640 / 2);
        }
        print_message("a day of raw buckets rolled into minutes in %zu one-transaction steps\n", steps);
        store_set_maintain_yield(s, NULL, NULL);
        maintain_until_done(s, t0 + 24 * H + M, &r);
        assert_int_equal(history_user(s, 441, 60 * S, NULL), 5 + 6);
        assert_int_equal(history_user(s, 441, 3600 * S, NULL), 5 + 6);
        store_free(s);
        (void) state;
}

/* Maintenance folds pending ticks only where it needs them: not those of the current raw bucket
 * (the roll-up stops at the current minute; the tick that opens the next bucket folds them), but
 * those of an earlier minute (the writer was behind) before rolling up, and those of an exited
 * process before looking for processes without rows, which must not take its last ticks. */
static void test_maintain_folds_only_what_it_needs(void **state) {
        const uint64_t S = 1000000, M = 60 * S, t0 = 1700000000000000ULL - 1700000000000000ULL % (3600 * S);
        const StoreRetention r = STORE_RETENTION_DEFAULT;
        ProcessInfo a = { .pid = 450, .start_time = 1, .comm = "a", .first_seen_usec = 1 };
        ProcessInfo b = { .pid = 451, .start_time = 1, .comm = "b", .first_seen_usec = 1, .exited = true };
        char path[256];
        bool more;
        Store *s;

        snprintf(path, sizeof(path), "%s/fold.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        for (uint64_t i = 0; i < 5; i++) {
                ProcessSample sample = { &a, (Faults) { .user = 3 }, NULL };

                assert_int_equal(store_flush(s, t0 + 5 * M + i * S, &sample, 1), 0);
        }
        /* The first step looks for gone processes (none exited): that folds. Later ones, an
         * hour apart from it, do not; the current bucket's ticks stay pending. */
        assert_int_equal(store_maintain(s, t0 + 5 * M + 5 * S, &r, &more), 0);
        assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM sample_pending"), 0);
        for (uint64_t i = 0; i < 4; i++) {
                ProcessSample sample = { &a, (Faults) { .user = 2 }, NULL };

                assert_int_equal(store_flush(s, t0 + 5 * M + 6 * S + i * S, &sample, 1), 0);
        }
        assert_int_equal(store_maintain(s, t0 + 5 * M + 9 * S, &r, &more), 0);
        assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM sample_pending"), 4);
        assert_int_equal(sql_int_at(path, "SELECT SUM(f_user) FROM sample_raw"), 5 * 3);

        /* Two minutes later, nothing written meanwhile: those ticks are in a minute to roll up. */
        assert_int_equal(store_maintain(s, t0 + 7 * M + 9 * S, &r, &more), 0);
        assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM sample_pending"), 0);
        assert_int_equal(sql_int_at(path, "SELECT COALESCE(SUM(f_user), 0) FROM sample_minute"), 5 * 3 + 4 * 2);

        /* An exited process whose only ticks are pending, at the hourly search for gone ones. */
        {
                ProcessSample sample = { &b, (Faults) { .user = 7 }, NULL };

                assert_int_equal(store_flush(s, t0 + 67 * M + 9 * S, &sample, 1), 0);
        }
        assert_int_equal(store_maintain(s, t0 + 67 * M + 9 * S, &r, &more), 0);
        assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM sample_pending"), 0);
        assert_int_equal(sql_int_at(path, "SELECT SUM(f_user) FROM sample_raw JOIN process ON process.id = process_id "
                                        "WHERE pid = 451"),
                         7);
        store_free(s);
        (void) state;
}

/* Exited processes without rows go at the first maintenance step, then only when the hour
 * tier deleted rows or an hour went by: the search costs a dozen seeks per exited process. */
static void test_gone_processes_hourly(void **state) {
        const uint64_t S = 1000000, H = 3600 * S, t0 = 1700000000000000ULL - 1700000000000000ULL % H;
        const StoreRetention r = STORE_RETENTION_DEFAULT;
        ProcessInfo a = { .pid = 440, .start_time = 1, .comm = "a", .first_seen_usec = t0, .exited = true };
        ProcessInfo b = { .pid = 441, .start_time = 1, .comm = "b", .first_seen_usec = t0, .exited = true };
        ProcessInfo found;
        char path[256];
        int64_t id;
        Store *s;

        snprintf(path, sizeof(path), "%s/gone.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        {
                ProcessSample sample = { &a, (Faults) {}, NULL }; /* a row, no counts */
                assert_int_equal(store_flush(s, t0, &sample, 1), 0);
        }
        maintain_until_done(s, t0 + 5 * S, &r);
        assert_int_equal(store_find_process(s, 440, 0, &id, &found), -ENOENT);

        {
                ProcessSample sample = { &b, (Faults) {}, NULL };
                assert_int_equal(store_flush(s, t0 + 10 * S, &sample, 1), 0);
        }
        maintain_until_done(s, t0 + 20 * S, &r);
        assert_int_equal(store_find_process(s, 441, 0, &id, &found), 0);
        process_info_done(&found);
        maintain_until_done(s, t0 + 5 * S + H, &r);
        assert_int_equal(store_find_process(s, 441, 0, &id, &found), -ENOENT);
        store_free(s);
        (void) state;
}

/* A minute's ticks, folded in slices (store_pending_fold_slice()). */
enum { SLICED = 100, SLICE = 16 };

static void sliced_procs(ProcessInfo procs[SLICED], ProcessSample samples[SLICED], uint64_t t0, uint64_t user) {
        for (size_t i = 0; i < SLICED; i++) {
                procs[i] = (ProcessInfo) { .pid = 2000 + (uint32_t) i, .start_time = 1, .comm = "p",
                                           .first_seen_usec = t0, .last_seen_usec = t0 };
                samples[i] = (ProcessSample) { &procs[i], (Faults) { .user = user + i }, NULL };
        }
}

/* Two ticks of one minute; then a slice a step, each SLICE processes more into their raw rows and
 * totals, the pending rows left as they are and the fold's progress (table pending_fold) beside
 * them. A reader sees every count once between any two slices, and a tick of the new minute
 * written meanwhile is not folded with them. */
static void test_fold_in_slices(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL - 1700000000000000ULL % (3600 * S);
        ProcessInfo procs[SLICED];
        ProcessSample samples[SLICED];
        char path[256];
        Store *w, *r;
        bool done = false;

        snprintf(path, sizeof(path), "%s/slices.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &w), 0);
        sliced_procs(procs, samples, t0, 1); /* user i + 1 */
        assert_int_equal(store_flush(w, t0 + 1 * S, samples, SLICED), 0);
        sliced_procs(procs, samples, t0, 5); /* then i + 5: 2i + 6 in all */
        assert_int_equal(store_flush(w, t0 + 2 * S, samples, SLICED), 0);
        assert_int_equal(store_open_reader(path, "boot-1", &r), 0);

        for (size_t step = 1; step <= 3; step++) {
                /* No time at all: the least a slice folds. */
                assert_int_equal(store_pending_fold_step(w, t0 + 60 * S, 0, &done), 0);
                assert_false(done);
                assert_true(store_folding(w));
                assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM sample_raw"), (int64_t) (step * SLICE));
                assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM process_total"), (int64_t) (step * SLICE));
                assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM sample_pending"), 2);
                assert_int_equal(sql_int_at(path, "SELECT through_id FROM pending_fold"),
                                 sql_int_at(path, "SELECT MAX(process_id) FROM sample_raw"));
                for (size_t i = 0; i < SLICED; i++)
                        assert_int_equal(history_user(r, 2000 + (uint32_t) i, 10 * S, NULL), 2 * i + 6);
        }
        /* A tick of the next minute: the rest is folded (by the tick's own slice, and by steps
         * for what a slow machine left of it in 8 ms), the new tick not. */
        sliced_procs(procs, samples, t0, 1000);
        assert_int_equal(store_flush(w, t0 + 61 * S, samples, SLICED), 0);
        for (size_t step = 0; store_folding(w); step++) {
                assert_true(step < SLICED / SLICE);
                assert_int_equal(store_pending_fold_step(w, t0 + 61 * S, UINT64_MAX, &done), 0);
        }
        assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM sample_raw"), SLICED);
        assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM sample_pending"), 1);
        assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM pending_fold"), 0);
        assert_int_equal(sql_int_at(path, "SELECT MIN(time_usec) FROM sample_pending"), (int64_t) (t0 + 61 * S));
        assert_int_equal(sql_int_at(path, "SELECT SUM(f_user) FROM sample_raw"), SLICED * (SLICED - 1) + 6 * SLICED);
        for (size_t i = 0; i < SLICED; i++)
                assert_int_equal(history_user(r, 2000 + (uint32_t) i, 10 * S, NULL), 3 * i + 1006);
        store_free(r);
        store_free(w);
        (void) state;
}

/* A minute of ticks of 100 processes, 6000 samples pending: read back merged as they are read
 * (more than PENDING_MERGE_MIN of them), every process's count exact before the fold and after. */
static void test_pending_merged_as_read(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL - 1700000000000000ULL % (3600 * S);
        ProcessInfo procs[SLICED];
        ProcessSample samples[SLICED];
        char path[256];
        bool done;
        Store *w;

        snprintf(path, sizeof(path), "%s/merged.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &w), 0);
        for (uint64_t tick = 0; tick < 60; tick++) {
                sliced_procs(procs, samples, t0, 1); /* user i + 1 a tick */
                assert_int_equal(store_flush(w, t0 + tick * S, samples, SLICED), 0);
        }
        assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM sample_pending"), 60);
        for (size_t i = 0; i < SLICED; i++)
                assert_int_equal(history_user(w, 2000 + (uint32_t) i, 10 * S, NULL), 60 * (i + 1));
        assert_int_equal(store_pending_fold_step(w, t0 + 60 * S, UINT64_MAX, &done), 0);
        assert_true(done);
        assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM sample_raw"), 6 * SLICED);
        assert_int_equal(sql_int_at(path, "SELECT SUM(f_user) FROM process_total"), 60 * SLICED * (SLICED + 1) / 2);
        for (size_t i = 0; i < SLICED; i++)
                assert_int_equal(history_user(w, 2000 + (uint32_t) i, 10 * S, NULL), 60 * (i + 1));
        store_free(w);
        (void) state;
}

/* Top's pending sums (store_pending_sums()): 3000 processes (the table grows twice), three
 * ticks in two buckets, summed per process in process order, from a bucket on; a slice's
 * progress hides what it folded. */
static void test_pending_sums(void **state) {
        enum { N = 3000 };
        const uint64_t S = 1000000, t0 = 1700000000000000ULL - 1700000000000000ULL % (3600 * S);
        ProcessInfo *procs = calloc(N, sizeof(*procs));
        ProcessSample *samples = calloc(N, sizeof(*samples));
        PendingSample *sums;
        char path[256];
        size_t n;
        bool done;
        Store *w;

        assert_non_null(procs);
        assert_non_null(samples);
        snprintf(path, sizeof(path), "%s/sums.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &w), 0);
        for (uint64_t tick = 0; tick < 3; tick++) {
                for (size_t i = 0; i < N; i++) {
                        procs[i] = (ProcessInfo) { .pid = 5000 + (uint32_t) i, .start_time = 1, .comm = "p",
                                                   .first_seen_usec = t0, .last_seen_usec = t0 };
                        samples[i] = (ProcessSample) { &procs[i], (Faults) { .user = i + 1, .major = tick }, NULL };
                }
                /* Ticks 0 and 1 in the first bucket, tick 2 in the next. */
                assert_int_equal(store_flush(w, t0 + (tick < 2 ? tick : 10) * S, samples, N), 0);
        }
        assert_int_equal(store_pending_sums(w, 0, &sums, &n), 0);
        assert_int_equal(n, N);
        for (size_t i = 0; i < n; i++) {
                int64_t id;
                ProcessInfo found;

                assert_true(i == 0 || sums[i - 1].process_id < sums[i].process_id);
                assert_int_equal(store_find_process(w, 5000 + (uint32_t) (sums[i].delta.user / 3 - 1), 0, &id, &found),
                                 0);
                process_info_done(&found);
                assert_int_equal(id, sums[i].process_id);
                assert_int_equal(sums[i].delta.user % 3, 0);
                assert_int_equal(sums[i].delta.major, 0 + 1 + 2);
                assert_int_equal(sums[i].bucket_usec, t0 + 10 * S);
        }
        free(sums);
        assert_int_equal(store_pending_sums(w, t0 + 10 * S, &sums, &n), 0);
        assert_int_equal(n, N);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(sums[i].delta.major, 2);
        free(sums);
        /* A slice of the fold at the next minute: what it took is no longer pending. */
        assert_int_equal(store_pending_fold_step(w, t0 + 60 * S, 0, &done), 0);
        assert_false(done);
        assert_int_equal(store_pending_sums(w, 0, &sums, &n), 0);
        assert_int_equal((int64_t) n, N - sql_int_at(path, "SELECT COUNT(*) FROM process_total"));
        assert_true(n < N);
        free(sums);
        store_free(w);
        free(samples);
        free(procs);
        (void) state;
}

/* A daemon killed between two slices: the next one folds the rest, nothing twice. */
static void test_fold_killed_between_slices(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL - 1700000000000000ULL % (3600 * S);
        const int64_t sum = SLICED * (SLICED - 1) / 2 + SLICED;
        ProcessInfo procs[SLICED];
        ProcessSample samples[SLICED];
        char path[256];
        int status;
        pid_t pid;
        Store *w;

        snprintf(path, sizeof(path), "%s/killed.db", tmpdir);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                bool done;

                sliced_procs(procs, samples, t0, 1);
                if (store_open(path, "boot-1", &w) < 0 || store_flush(w, t0 + S, samples, SLICED) < 0 ||
                    store_pending_fold_step(w, t0 + 60 * S, 0, &done) < 0 ||
                    store_pending_fold_step(w, t0 + 60 * S, 0, &done) < 0 || done)
                        _exit(1);
                _exit(0); /* no store_free(): it would fold the rest */
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM sample_raw"), 2 * SLICE);
        assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM pending_fold"), 1);
        assert_int_equal(store_open(path, "boot-1", &w), 0);
        assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM sample_pending"), 0);
        assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM pending_fold"), 0);
        assert_int_equal(sql_int_at(path, "SELECT SUM(f_user) FROM sample_raw"), sum);
        assert_int_equal(sql_int_at(path, "SELECT SUM(f_user) FROM process_total"), sum);
        store_free(w);
        (void) state;
}

/* A tick of a minute being folded, written between two slices (a clock set back): its counts
 * are kept, in the first bucket after that minute (where the fold's progress cannot hide part of
 * them), not deleted with the rows the slices read before it came. */
static void test_fold_late_tick(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL - 1700000000000000ULL % (3600 * S);
        const int64_t sum = SLICED * (SLICED - 1) / 2 + SLICED;
        ProcessInfo procs[SLICED], found;
        ProcessSample samples[SLICED];
        char path[256];
        bool done = false;
        int64_t id;
        Store *w;

        snprintf(path, sizeof(path), "%s/late.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &w), 0);
        sliced_procs(procs, samples, t0, 1);
        assert_int_equal(store_flush(w, t0 + S, samples, SLICED), 0);
        assert_int_equal(store_pending_fold_step(w, t0 + 60 * S, 0, &done), 0);
        assert_false(done);
        assert_int_equal(store_find_process(w, 2000, 0, &id, &found), 0);
        process_info_done(&found);
        assert_int_equal(store_pending_pack(w, id, &(Faults) { .user = 500 }, 0, 0, 0), 0);
        assert_int_equal(store_pending_add(w, t0 + 5 * S), 0);
        for (int i = 0; !done; i++) {
                assert_true(i < SLICED);
                assert_int_equal(store_pending_fold_step(w, t0 + 60 * S, 0, &done), 0);
        }
        assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM sample_pending"), 1);
        assert_int_equal(sql_int_at(path, "SELECT time_usec FROM sample_pending"), (int64_t) (t0 + 60 * S));
        assert_int_equal(sql_int_at(path, "SELECT SUM(f_user) FROM sample_raw"), sum);
        assert_int_equal(history_user(w, 2000, 10 * S, NULL), 1 + 500);
        assert_int_equal(store_pending_fold_step(w, t0 + 120 * S, UINT64_MAX, &done), 0);
        assert_true(done);
        assert_int_equal(sql_int_at(path, "SELECT COUNT(*) FROM sample_pending"), 0);
        assert_int_equal(sql_int_at(path, "SELECT SUM(f_user) FROM sample_raw"), sum + 500);
        assert_int_equal(sql_int_at(path, "SELECT SUM(f_user) FROM process_total"), sum + 500);
        store_free(w);
        (void) state;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rollup_and_retention),
                cmocka_unit_test(test_stall_kept_in_every_tier),
                cmocka_unit_test(test_rollup_marks_inside_intervals),
                cmocka_unit_test(test_rollup_span_grows_over_gaps),
                cmocka_unit_test(test_maintain_folds_only_what_it_needs),
                cmocka_unit_test(test_gone_processes_hourly),
                cmocka_unit_test(test_fold_in_slices),
                cmocka_unit_test(test_pending_merged_as_read),
                cmocka_unit_test(test_pending_sums),
                cmocka_unit_test(test_fold_killed_between_slices),
                cmocka_unit_test(test_fold_late_tick),
        };
        return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
