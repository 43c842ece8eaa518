/* SPDX-License-Identifier: MIT */
/* The migration runner and the store's write and query paths, on real SQLite files. */

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

DEFINE_TEST_TMPDIR("test-store");

static sqlite3 *open_db(const char *name) {
        char path[256];
        sqlite3 *db;

        snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
        unlink(path);
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        return db;
}

static int user_version(sqlite3 *db) {
        sqlite3_stmt *st;
        int v;

        assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        v = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        return v;
}

static bool has_table(sqlite3 *db, const char *name) {
        sqlite3_stmt *st;
        bool found;

        assert_int_equal(sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", -1, &st, NULL),
                         SQLITE_OK);
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        return found;
}

static void test_migrate_embedded(void **state) {
        sqlite3 *db = open_db("embedded.db");

        assert_int_equal(store_migrate(db, embedded_migrations, embedded_migrations_count), (int) embedded_migrations_count);
        assert_int_equal(user_version(db), (int) embedded_migrations_count);
        assert_true(has_table(db, "process"));
        assert_true(has_table(db, "sample_raw"));
        /* Already current: nothing to do. */
        assert_int_equal(store_migrate(db, embedded_migrations, embedded_migrations_count), 0);
        sqlite3_close(db);
}

static const EmbeddedFile synthetic[] = {
        { "0001-a.sql", "CREATE TABLE a (x INTEGER);", 0 },
        { "0002-b.sql", "CREATE TABLE b (x INTEGER); INSERT INTO a VALUES (1);", 0 },
        { "0003-broken.sql", "CREATE TABLE c (x INTEGER); THIS IS NOT SQL;", 0 },
};

static void test_migrate_stepwise_and_atomic(void **state) {
        sqlite3 *db = open_db("stepwise.db");

        /* From 0 to 1, then from 1 to 2: only the missing ones run. */
        assert_int_equal(store_migrate(db, synthetic, 1), 1);
        assert_int_equal(user_version(db), 1);
        assert_int_equal(store_migrate(db, synthetic, 2), 1);
        assert_int_equal(user_version(db), 2);
        assert_true(has_table(db, "b"));

        /* A failing migration leaves neither its tables nor a version bump behind. */
        assert_true(store_migrate(db, synthetic, 3) < 0);
        assert_int_equal(user_version(db), 2);
        assert_false(has_table(db, "c"));
        sqlite3_close(db);
}

static void test_migrate_refuses_newer(void **state) {
        sqlite3 *db = open_db("newer.db");

        assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(store_migrate(db, embedded_migrations, embedded_migrations_count), -EPROTO);
        assert_int_equal(user_version(db), 99);
        sqlite3_close(db);
}

static int pragma_value(sqlite3 *db, const char *pragma) {
        sqlite3_stmt *st;
        int v;

        assert_int_equal(sqlite3_prepare_v2(db, pragma, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        v = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        return v;
}

static const EmbeddedFile with_references[] = {
        { "0001-parent.sql",
          "CREATE TABLE p (id INTEGER PRIMARY KEY); CREATE TABLE c (p INTEGER NOT NULL REFERENCES p (id));"
          "INSERT INTO p VALUES (1), (2); INSERT INTO c VALUES (1), (2);",
          0 },
        /* A table others refer to rebuilt, as 0008 does to object: with foreign keys on, its DROP
         * fails (the rows of c still refer to the old table's). */
        { "0002-rebuild.sql",
          "CREATE TABLE p_new (id INTEGER PRIMARY KEY, x INTEGER NOT NULL DEFAULT 0);"
          "INSERT INTO p_new (id) SELECT id FROM p; DROP TABLE p; ALTER TABLE p_new RENAME TO p;",
          0 },
        /* A migration that loses a row others refer to. */
        { "0003-dangling.sql", "DELETE FROM p WHERE id = 2;", 0 },
};

/* Migrations run with foreign keys off, whatever the caller had (store_open() has them on), and
 * the caller's setting is back afterwards; one that leaves a broken reference is rolled back. */
static void test_migrate_foreign_keys(void **state) {
        sqlite3 *db = open_db("references.db");

        assert_int_equal(sqlite3_exec(db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(store_migrate(db, with_references, 2), 2);
        assert_int_equal(user_version(db), 2);
        assert_int_equal(pragma_value(db, "PRAGMA foreign_keys"), 1);
        assert_int_equal(pragma_value(db, "SELECT COUNT(*) FROM c JOIN p ON p.id = c.p"), 2);

        assert_int_equal(store_migrate(db, with_references, 3), -EBADMSG);
        assert_int_equal(user_version(db), 2);
        assert_int_equal(pragma_value(db, "SELECT COUNT(*) FROM p"), 2);
        assert_int_equal(pragma_value(db, "PRAGMA foreign_keys"), 1);

        /* Off as the caller had it: still off. */
        assert_int_equal(sqlite3_exec(db, "PRAGMA foreign_keys = OFF", NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(store_migrate(db, with_references, 3), -EBADMSG);
        assert_int_equal(pragma_value(db, "PRAGMA foreign_keys"), 0);
        sqlite3_close(db);
        (void) state;
}

static Faults make_faults(uint64_t base) {
        Faults f = {};
        for (size_t i = 0; i < n_fault_fields; i++)
                *faults_field(&f, &fault_fields[i]) = base + i;
        return f;
}

static void test_flush_top_history(void **state) {
        char path[256];
        Store *s;
        ProcessInfo a = { .pid = 100, .start_time = 5000, .comm = "alpha", .uid = 1000, .first_seen_usec = 1 };
        ProcessInfo a2 = { .pid = 100, .start_time = 9000, .comm = "alpha-again", .uid = 1000, .first_seen_usec = 2 };
        ProcessInfo b = { .pid = 200, .start_time = 6000, .comm = "beta", .uid = 0, .first_seen_usec = 1,
                          .cmdline = (char *) "beta --flag", .unit = (char *) "beta.service" };
        const uint64_t t0 = 1700000000000000ULL; /* a bucket boundary */
        StoreHistoryRow *hist;
        StoreRow *rows;
        ProcessInfo found;
        uint64_t other;
        int64_t id;
        size_t n;

        snprintf(path, sizeof(path), "%s/store.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);

        /* Three ticks in one 10 s bucket, one in the next: deltas add up per bucket. */
        for (int tick = 0; tick < 3; tick++) {
                ProcessSample samples[] = { { &a, make_faults(10) }, { &b, make_faults(1) } };
                assert_int_equal(store_flush(s, t0 + (uint64_t) tick * 1000000, samples, 2), 0);
        }
        {
                ProcessSample samples[] = { { &a, make_faults(100) }, { &b, (Faults) {} } };
                assert_int_equal(store_flush(s, t0 + 12000000, samples, 2), 0);
        }

        /* Top since t0: a has 3*10 + 100 user faults, b 3*1; a first. */
        assert_int_equal(store_top(s, t0, "user", 10, -1, NULL, &rows, &n, NULL), 0);
        assert_int_equal(n, 2);
        assert_int_equal(rows[0].process.pid, 100);
        assert_int_equal(rows[0].faults.user, 130);
        assert_int_equal(rows[0].faults.protection, 3 * 17 + 107);
        assert_int_equal(rows[1].process.pid, 200);
        assert_int_equal(rows[1].faults.user, 3);
        assert_string_equal(rows[1].process.cmdline, "beta --flag");
        assert_string_equal(rows[1].process.unit, "beta.service");
        store_rows_free(rows, n);

        /* Only the second bucket; and only uid 0's processes. */
        assert_int_equal(store_top(s, t0 + 10000000, "user", 10, -1, NULL, &rows, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_int_equal(rows[0].faults.user, 100);
        store_rows_free(rows, n);
        assert_int_equal(store_top(s, t0, "user", 10, 0, NULL, &rows, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_int_equal(rows[0].process.pid, 200);
        store_rows_free(rows, n);

        /* History at 10 s and at 60 s resolution: the sums are preserved exactly. */
        assert_int_equal(store_find_process(s, 100, 0, &id, &found), 0);
        assert_int_equal(found.start_time, 5000);
        process_info_done(&found);
        assert_int_equal(store_history(s, id, 0, UINT64_MAX, STORE_RAW_BUCKET_USEC, &hist, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(hist[0].time_usec, t0);
        assert_int_equal(hist[0].faults.user, 30);
        assert_int_equal(hist[1].time_usec, t0 + 10000000);
        assert_int_equal(hist[1].faults.user, 100);
        store_history_rows_free(hist, n);
        assert_int_equal(store_history(s, id, 0, UINT64_MAX, 6 * STORE_RAW_BUCKET_USEC, &hist, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(hist[0].faults.user, 130);
        assert_int_equal(hist[0].faults.major, 3 * 13 + 103);
        store_history_rows_free(hist, n);
        assert_int_equal(store_history(s, id, 0, UINT64_MAX, 15000000, &hist, &n), -EINVAL);

        /* The same pid again with another start time: a separate process, and the newest wins. */
        {
                ProcessSample samples[] = { { &a2, make_faults(7) } };
                assert_int_equal(store_flush(s, t0 + 20000000, samples, 1), 0);
        }
        assert_int_equal(store_find_process(s, 100, 0, &id, &found), 0);
        assert_int_equal(found.start_time, 9000);
        assert_string_equal(found.comm, "alpha-again");
        process_info_done(&found);
        assert_int_equal(store_history(s, id, 0, UINT64_MAX, STORE_RAW_BUCKET_USEC, &hist, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(hist[0].faults.user, 7);
        store_history_rows_free(hist, n);
        assert_int_equal(store_find_process(s, 100, 5000, &id, &found), 0);
        assert_string_equal(found.comm, "alpha");
        process_info_done(&found);
        assert_int_equal(store_find_process(s, 300, 0, &id, &found), -ENOENT);

        store_free(s);

        /* Reopening an existing, current database migrates nothing and keeps the data. */
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        /* Both incarnations of pid 100 and pid 200, the first sorted by its 130 user faults. */
        assert_int_equal(store_top(s, t0, "user", 10, -1, NULL, &rows, &n, NULL), 0);
        assert_int_equal(n, 3);
        assert_int_equal(rows[0].process.start_time, 5000);
        assert_int_equal(rows[0].faults.user, 130);
        assert_int_equal(rows[1].process.start_time, 9000);
        assert_int_equal(rows[1].faults.user, 7);
        assert_int_equal(rows[2].process.pid, 200);
        store_rows_free(rows, n);
        /* limit applies, and what it left out is counted. */
        assert_int_equal(store_top(s, t0, "user", 1, -1, NULL, &rows, &n, &other), 0);
        assert_int_equal(n, 1);
        assert_int_equal(other, 2);
        store_rows_free(rows, n);
        assert_int_equal(store_top(s, t0, "user", 3, -1, NULL, &rows, &n, &other), 0);
        assert_int_equal(n, 3);
        assert_int_equal(other, 0);
        store_rows_free(rows, n);
        store_free(s);
}

static void test_traps(void **state) {
        char path[256];
        Store *s;
        ProcessInfo a = { .pid = 300, .start_time = 1, .comm = "trapper", .first_seen_usec = 1 };
        ProcessInfo b = { .pid = 301, .start_time = 1, .comm = "faulter", .first_seen_usec = 1 };
        const uint64_t t0 = 1700000000000000ULL;
        Traps t = {};
        StoreHistoryRow *hist;
        StoreRow *rows;
        ProcessInfo found;
        int64_t id;
        size_t n;

        snprintf(path, sizeof(path), "%s/traps.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);

        /* 5 #UD (SIGILL/ILL_ILLOPN) and 2 #GP (SIGSEGV/SI_KERNEL), no faults at all; twice, in
         * two buckets. b only faults. */
        t.vector[6] = 5;
        t.vector[13] = 2;
        t.signal[fault_signal_index(SIGILL)][si_code_slot(2)] = 5;
        t.signal[fault_signal_index(SIGSEGV)][si_code_slot(0x80)] = 2;
        for (int i = 0; i < 2; i++) {
                ProcessSample samples[] = { { &a, (Faults) {}, &t }, { &b, make_faults(1), NULL } };
                assert_int_equal(store_flush(s, t0 + (uint64_t) i * 10000000, samples, 2), 0);
        }

        /* Sorted by traps, the trapper comes first although it never faulted. */
        assert_int_equal(store_top(s, t0, "traps", 10, -1, NULL, &rows, &n, NULL), 0);
        assert_int_equal(n, 2);
        assert_string_equal(rows[0].process.comm, "trapper");
        assert_int_equal(rows[0].traps.vector[6], 10);
        assert_int_equal(rows[0].traps.vector[13], 4);
        assert_int_equal(rows[0].traps.signal[fault_signal_index(SIGILL)][si_code_slot(2)], 10);
        assert_int_equal(rows[0].traps.signal[fault_signal_index(SIGSEGV)][0], 4);
        assert_int_equal(traps_total(&rows[0].traps), 14);
        assert_true(faults_is_zero(&rows[0].faults));
        assert_int_equal(traps_total(&rows[1].traps), 0);
        store_rows_free(rows, n);
        assert_int_equal(store_top(s, t0, "nonsense", 10, -1, NULL, &rows, &n, NULL), -EINVAL);

        /* History per bucket and merged into one interval. */
        assert_int_equal(store_find_process(s, 300, 0, &id, &found), 0);
        process_info_done(&found);
        assert_int_equal(store_history(s, id, 0, UINT64_MAX, STORE_RAW_BUCKET_USEC, &hist, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(hist[0].traps->vector[6], 5);
        assert_int_equal(hist[1].traps->vector[13], 2);
        assert_int_equal(hist[1].traps->signal[fault_signal_index(SIGSEGV)][0], 2);
        store_history_rows_free(hist, n);
        assert_int_equal(store_history(s, id, 0, UINT64_MAX, 6 * STORE_RAW_BUCKET_USEC, &hist, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(hist[0].traps->vector[6], 10);
        assert_int_equal(traps_total(hist[0].traps), 14);
        store_history_rows_free(hist, n);

        /* System-wide: the trapper's traps only (b never trapped); from the second bucket on,
         * half; for uid 1000's processes (none here), nothing. */
        {
                Traps sum;
                uint64_t processes;

                assert_int_equal(store_traps(s, t0, -1, &sum, &processes), 0);
                assert_int_equal(processes, 1);
                assert_int_equal(sum.vector[6], 10);
                assert_int_equal(sum.vector[13], 4);
                assert_int_equal(sum.signal[fault_signal_index(SIGILL)][si_code_slot(2)], 10);
                assert_int_equal(traps_total(&sum), 14);
                assert_int_equal(store_traps(s, t0 + 10000000, -1, &sum, &processes), 0);
                assert_int_equal(traps_total(&sum), 7);
                assert_int_equal(store_traps(s, t0, 1000, &sum, &processes), 0);
                assert_int_equal(processes, 0);
                assert_true(traps_is_zero(&sum));
        }
        store_free(s);
}

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
        store_list_processes(s, &(StoreProcessFilter) { .limit = (l), __VA_ARGS__ }, &list, &n, &total)
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
                        { &b, (Faults) { .user = 2 }, NULL },
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
        assert_int_equal(store_top(s, t0, "user", 10, -1, NULL, &rows, &n, NULL), 0);
        assert_int_equal(n, 3);
        assert_int_equal(rows[0].process.pid, 400); /* about 4 a bucket against b's 2 */
        assert_int_equal(rows[0].faults.user, all_a);
        assert_int_equal(rows[0].traps.vector[6], traps_a);
        assert_int_equal(rows[1].process.pid, 401);
        assert_int_equal(rows[1].faults.user, all_b);
        store_rows_free(rows, n);
        /* And over the last 30 min: raw only. */
        assert_int_equal(store_top(s, t0 + 5 * H + 30 * 60 * S, "user", 10, -1, NULL, &rows, &n, NULL), 0);
        assert_int_equal(n, 2);
        assert_int_equal(rows[1].process.pid, 401);
        assert_int_equal(rows[1].faults.user, 2 * 180); /* 180 buckets of 2 */
        store_rows_free(rows, n);

        /* The size cap: everything is over one byte; the oldest process of the user holding the
         * most (all three are uid 0's) loses its rows in every tier, one process per batch. */
        {
                StoreRetention tiny = r;
                bool more;
                int64_t before = count_rows(s, "sample_raw");

                tiny.max_bytes = 1;
                assert_int_equal(store_maintain(s, t0 + 6 * H + 5 * S, &tiny, &more), 0);
                assert_true(more);
                assert_true(count_rows(s, "sample_raw") < before);
                assert_int_equal(count_rows(s, "sample_hour"), 6 + 1); /* a's 6 went; c has one */
        }

        /* Eleven days later everything has aged out: c, which exited, is gone; b stays; a, not
         * seen for longer than the cap's 10 s when it lost its rows to the cap, went with them. */
        maintain_until_done(s, t0 + 11 * 24 * H, &r);
        assert_int_equal(count_rows(s, "sample_raw"), 0);
        assert_int_equal(count_rows(s, "sample_minute"), 0);
        assert_int_equal(count_rows(s, "sample_hour"), 0);
        {
                ProcessInfo found;
                int64_t id;

                assert_int_equal(store_find_process(s, 402, 0, &id, &found), -ENOENT);
                assert_int_equal(store_find_process(s, 400, 0, &id, &found), -ENOENT);
                assert_int_equal(store_find_process(s, 401, 0, &id, &found), 0);
                process_info_done(&found);
        }
        store_free(s);
}

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
        assert_int_equal(store_history(s, id, 0, UINT64_MAX, 2 * M, &hist, &n), 0);
        assert_int_equal(n, 15);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(hist[i].time_usec, t0 + i * 2 * M);
                assert_int_equal(hist[i].faults.user, expect[i]);
        }
        store_history_rows_free(hist, n);
        store_free(s);
        (void) state;
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

                assert_int_equal(store_history(s, id, 0, UINT64_MAX, res, &hist, &n), 0);
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
        assert_int_equal(store_top(s, t0, "user", 10, -1, NULL, &rows, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_int_equal(rows[0].faults.user, total);
        assert_int_equal(rows[0].traps.vector[6], traps);
        store_rows_free(rows, n);
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
 * each still one transaction. Exact all the same. */
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
                assert_true(steps < 1000);
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

static const char *fixture_dir;

/* An older database, migrated by opening it: every count is still there, exactly. */
static void check_fixture(const char *name, bool has_traps) {
        char src[512], dst[256], cmd[1024];
        StoreHistoryRow *hist;
        ProcessInfo p;
        Faults total = {};
        Traps traps = {};
        sqlite3 *db;
        int64_t id;
        size_t n;
        Store *s;

        snprintf(src, sizeof(src), "%s/%s", fixture_dir, name);
        snprintf(dst, sizeof(dst), "%s/%s", tmpdir, name);
        snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", src, dst);
        assert_int_equal(system(cmd), 0);

        assert_int_equal(store_open(dst, "boot-b", &s), 0);

        assert_int_equal(store_find_process(s, 100, 0, &id, &p), 0);
        assert_string_equal(p.comm, "alpha");
        assert_int_equal(p.start_time, 5000);
        assert_int_equal(p.uid, 1000);
        assert_true(p.exited);
        process_info_done(&p);
        assert_int_equal(store_history(s, id, 0, UINT64_MAX, STORE_RAW_BUCKET_USEC, &hist, &n), 0);
        assert_int_equal(n, 2);
        for (size_t i = 0; i < n; i++) {
                faults_add(&total, &hist[i].faults);
                if (hist[i].traps)
                        traps_add(&traps, hist[i].traps);
        }
        store_history_rows_free(hist, n);
        assert_true(memcmp(&total, &(Faults) { .user = 15, .kernel = 1, .minor = 17, .major = 1, .read = 4, .write = 11,
                                                .protection = 2 }, sizeof(total)) == 0);
        assert_int_equal(traps_total(&traps), has_traps ? 3 : 0);
        if (has_traps) {
                assert_int_equal(traps.vector[6], 2);
                assert_int_equal(traps.vector[13], 1);
                assert_int_equal(traps.signal[fault_signal_index(SIGILL)][si_code_slot(2)], 2);
                assert_int_equal(traps.signal[fault_signal_index(SIGSEGV)][si_code_slot(0x80)], 1);
        }

        /* Another boot's process that was running then is not running now. */
        assert_int_equal(store_find_process(s, 101, 0, &id, &p), 0);
        assert_string_equal(p.cmdline, "beta --x");
        assert_string_equal(p.unit, "beta.service");
        assert_true(p.exited);
        process_info_done(&p);
        store_free(s);

        assert_int_equal(sqlite3_open(dst, &db), SQLITE_OK);
        assert_int_equal(user_version(db), (int) embedded_migrations_count);
        assert_true(has_table(db, "tier"));
        sqlite3_close(db);
}

static void test_migrate_fixture_v1(void **state) {
        check_fixture("v1.db", false);
}

static void test_migrate_fixture_v2(void **state) {
        check_fixture("v2.db", true);
}

/* Over the size cap with nothing rolled up yet: the cap must not delete what is in no other
 * tier (it did: History lost half of the counts). */
static uint64_t file_bytes(const char *path, const char *suffix) {
        char p[300];
        struct stat st;

        snprintf(p, sizeof(p), "%s%s", path, suffix);
        return stat(p, &st) == 0 ? (uint64_t) st.st_size : 0;
}

static ProcessInfo found_process(Store *s, uint32_t pid) {
        ProcessInfo found;
        int64_t id;

        assert_int_equal(store_find_process(s, pid, 0, &id, &found), 0);
        return found;
}

static uint64_t found_last_seen(Store *s, uint32_t pid) {
        ProcessInfo found = found_process(s, pid);
        uint64_t v = found.last_seen_usec;

        process_info_done(&found);
        return v;
}

static void flush_one(Store *s, ProcessInfo *p, uint64_t now, uint64_t user) {
        ProcessSample sample = { p, (Faults) { .user = user }, NULL };

        p->last_seen_usec = now;
        assert_int_equal(store_flush(s, now, &sample, 1), 0);
}

/* The process row is written when something in it changes, last seen only when it moves into
 * another raw bucket; exact at exit, when the process goes idle and at close. Counts are exact
 * whichever way a tick's row is written. */
static void test_process_row_writes(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL; /* a bucket boundary */
        ProcessInfo a = { .pid = 600, .start_time = 7, .comm = "a", .uid = 1000, .first_seen_usec = t0 };
        ProcessInfo b = { .pid = 601, .start_time = 7, .comm = "b", .uid = 1000, .first_seen_usec = t0 };
        char path[256];
        ProcessInfo found;
        sqlite3 *db;
        Store *s;

        snprintf(path, sizeof(path), "%s/rows.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);

        /* Ticks 1..9 s after the bucket's first: last seen stays at the bucket's first tick. */
        for (uint64_t i = 0; i < 10; i++)
                flush_one(s, &a, t0 + 500000 + i * S, i + 1);
        assert_int_equal(found_last_seen(s, 600), t0 + 500000);
        assert_int_equal(history_user(s, 600, 10 * S, NULL), 55);
        /* The next bucket moves it. */
        flush_one(s, &a, t0 + 10 * S, 1);
        assert_int_equal(found_last_seen(s, 600), t0 + 10 * S);

        /* A rename, a new user, a command line and a unit are written at once, mid-bucket. */
        snprintf(a.comm, sizeof(a.comm), "a-renamed");
        a.uid = 1001;
        a.cmdline = (char *) "a --x";
        a.unit = (char *) "a.service";
        flush_one(s, &a, t0 + 11 * S, 1);
        found = found_process(s, 600);
        assert_string_equal(found.comm, "a-renamed");
        assert_int_equal(found.uid, 1001);
        assert_string_equal(found.cmdline, "a --x");
        assert_string_equal(found.unit, "a.service");
        assert_int_equal(found.last_seen_usec, t0 + 11 * S);
        process_info_done(&found);
        /* Unknown (NULL) ones keep what the row has. */
        a.cmdline = a.unit = NULL;
        flush_one(s, &a, t0 + 12 * S, 1);
        found = found_process(s, 600);
        assert_string_equal(found.cmdline, "a --x");
        assert_string_equal(found.unit, "a.service");
        process_info_done(&found);

        /* Rows removed behind the store's back are written again, counts exact. */
        assert_int_equal(history_user(s, 600, 10 * S, NULL), 55 + 3);
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "DELETE FROM sample_raw", NULL, NULL, NULL), SQLITE_OK);
        flush_one(s, &a, t0 + 13 * S, 5);
        assert_int_equal(history_user(s, 600, 10 * S, NULL), 5);
        assert_int_equal(sqlite3_exec(db, "PRAGMA foreign_keys = ON; DELETE FROM process WHERE pid = 600", NULL, NULL, NULL), SQLITE_OK);
        snprintf(a.comm, sizeof(a.comm), "a-again");
        flush_one(s, &a, t0 + 14 * S, 3);
        assert_int_equal(history_user(s, 600, 10 * S, NULL), 3);
        sqlite3_close(db);

        /* b is seen once, then idle for more than a minute: its exact last seen is written when
         * it leaves the cache (at the first flush of a later bucket). */
        flush_one(s, &b, t0 + 15 * S, 1);
        flush_one(s, &b, t0 + 16 * S, 1);
        assert_int_equal(found_last_seen(s, 601), t0 + 15 * S);
        flush_one(s, &a, t0 + 80 * S, 1);
        assert_int_equal(found_last_seen(s, 601), t0 + 16 * S);

        /* At exit: exited and the exact last seen, at once. */
        a.exited = true;
        flush_one(s, &a, t0 + 81 * S, 1);
        found = found_process(s, 600);
        assert_true(found.exited);
        assert_int_equal(found.last_seen_usec, t0 + 81 * S);
        process_info_done(&found);
        assert_int_equal(history_user(s, 600, 10 * S, NULL), 3 + 1 + 1);

        /* At close: the exact last seen of the ones still running. */
        flush_one(s, &b, t0 + 90 * S, 1);
        flush_one(s, &b, t0 + 93 * S, 1);
        assert_int_equal(found_last_seen(s, 601), t0 + 90 * S);
        store_free(s);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        assert_int_equal(found_last_seen(s, 601), t0 + 93 * S);
        assert_int_equal(history_user(s, 601, 10 * S, NULL), 4);
        store_free(s);
}

/* A daemon killed between ticks loses none it committed: a child flushes 25 ticks over three
 * buckets and is killed without closing the store. */
static void test_killed_keeps_committed_ticks(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL;
        ProcessInfo a = { .pid = 700, .start_time = 7, .comm = "a", .first_seen_usec = t0 };
        char path[256];
        int status;
        Store *s;
        pid_t pid;

        snprintf(path, sizeof(path), "%s/killed.db", tmpdir);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (store_open(path, "boot-1", &s) < 0)
                        _exit(1);
                for (uint64_t i = 0; i < 25; i++) {
                        ProcessSample sample = { &a, (Faults) { .user = i + 1, .major = 1 }, NULL };

                        a.last_seen_usec = t0 + i * S;
                        if (store_flush(s, t0 + i * S, &sample, 1) < 0)
                                _exit(1);
                }
                raise(SIGKILL);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

        assert_int_equal(store_open(path, "boot-1", &s), 0);
        assert_int_equal(history_user(s, 700, 10 * S, NULL), 25 * 26 / 2);
        assert_int_equal(history_user(s, 700, 60 * S, NULL), 25 * 26 / 2);
        /* Last seen is kept to its raw bucket: the newest tick's bucket. */
        assert_int_equal(found_last_seen(s, 700), t0 + 20 * S);
        store_free(s);
}

static int count_calls(void *userdata) {
        (*(unsigned *) userdata)++;
        return 0;
}

static int stop_at_once(void *userdata _unused_) {
        return 1;
}

/* A reader sees what the writer committed, the pending ticks once the writer settled them;
 * it cannot write; its progress handler can stop a query. Neither follows a symbolic link. */
static void count_requests(void *userdata, bool force) {
        unsigned *n = userdata;

        n[force]++;
}

/* With a checkpoint handler the writer's commits ask for checkpoints instead of running them,
 * forced ones past the backstop; store_checkpoint() does the work from its own connection and
 * really copies the log (a connection that has read nothing copied nothing, SQLite 3.40), and the
 * WAL file is cut back once the log starts over, to nothing at once by a forced checkpoint. */
static void test_checkpoint_handler(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL;
        ProcessInfo a = { .pid = 810, .start_time = 8, .comm = "a", .first_seen_usec = t0, .last_seen_usec = t0 };
        char path[256], missing[256];
        unsigned requests[2] = {};
        int left = -1;
        Store *w;

        snprintf(path, sizeof(path), "%s/checkpoint.db", tmpdir);
        snprintf(missing, sizeof(missing), "%s/missing.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &w), 0);
        /* A handler that never checkpoints: nothing bounds the WAL. */
        store_set_checkpoint_handler(w, 4, count_requests, requests);
        for (uint64_t i = 0; i < 300; i++) {
                a.pid = 810 + (uint32_t) i; /* a new process row every tick: pages to write */
                ProcessSample sample = { &a, (Faults) { .user = 10 }, NULL };
                assert_int_equal(store_flush(w, t0 + i * 10 * S, &sample, 1), 0);
        }
        /* Past 4 x 4 pages, forced. */
        assert_true(requests[1] > 0);
        print_message("WAL after 300 commits without checkpoints: %" PRIu64 " KiB\n", file_bytes(path, "-wal") >> 10);
        assert_true(file_bytes(path, "-wal") > 256 * 1024);

        assert_int_equal(store_checkpoint(path, false, &left), 0);
        assert_int_equal(left, 0);
        /* The next commit starts the log over and cuts the file to 4 pages (and what it wrote). */
        {
                ProcessSample sample = { &a, (Faults) { .user = 10 }, NULL };
                assert_int_equal(store_flush(w, t0 + 301 * 10 * S, &sample, 1), 0);
        }
        print_message("WAL after a checkpoint and a commit: %" PRIu64 " KiB\n", file_bytes(path, "-wal") >> 10);
        assert_true(file_bytes(path, "-wal") <= 64 * 1024);

        for (uint64_t i = 0; i < 100; i++) {
                a.pid = 2000 + (uint32_t) i;
                ProcessSample sample = { &a, (Faults) { .user = 10 }, NULL };
                assert_int_equal(store_flush(w, t0 + (400 + i) * 10 * S, &sample, 1), 0);
        }
        assert_true(file_bytes(path, "-wal") > 64 * 1024);
        assert_int_equal(store_checkpoint(path, true, &left), 0);
        assert_int_equal(left, 0);
        assert_int_equal(file_bytes(path, "-wal"), 0);

        assert_true(store_checkpoint(missing, false, NULL) < 0);
        assert_int_equal(access(missing, F_OK), -1);

        /* Back to SQLite's own checkpoints: no more requests. */
        store_set_checkpoint_handler(w, STORE_CHECKPOINT_PAGES, NULL, NULL);
        requests[0] = requests[1] = 0;
        {
                ProcessSample sample = { &a, (Faults) { .user = 10 }, NULL };
                assert_int_equal(store_flush(w, t0 + 600 * 10 * S, &sample, 1), 0);
        }
        assert_int_equal(requests[0] + requests[1], 0);
        store_free(w);
        (void) state;
}

static void test_reader(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL;
        ProcessInfo a = { .pid = 800, .start_time = 8, .comm = "a", .first_seen_usec = t0, .last_seen_usec = t0 };
        char path[256], link_path[256];
        Store *w, *r, *ignored = NULL;
        StoreRow *rows;
        unsigned calls = 0;
        size_t n;

        snprintf(path, sizeof(path), "%s/reader.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &w), 0);
        for (uint64_t i = 0; i < 3; i++) {
                ProcessSample sample = { &a, (Faults) { .user = 10 }, NULL };
                assert_int_equal(store_flush(w, t0 + i * S, &sample, 1), 0);
        }
        assert_int_equal(store_open_reader(path, "boot-1", &r), 0);
        /* The ticks are pending in the writer, not in the raw tier yet: Top reads them there. */
        assert_int_equal(store_top(r, t0, "user", 10, -1, NULL, &rows, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_int_equal(rows[0].faults.user, 30);
        store_rows_free(rows, n);
        assert_int_equal(store_settle(w), 0);
        assert_int_equal(history_user(r, 800, 10 * S, NULL), 30);

        /* Read-only: the reader's own settle has nothing to do, and a write fails. */
        assert_int_equal(store_settle(r), 0);
        {
                ProcessSample sample = { &a, (Faults) { .user = 1 }, NULL };
                assert_int_equal(store_flush(r, t0 + 20 * S, &sample, 1), -EROFS);
        }

        store_set_progress_handler(r, 10, count_calls, &calls);
        assert_int_equal(store_top(r, 0, "user", 10, -1, NULL, &rows, &n, NULL), 0);
        store_rows_free(rows, n);
        assert_true(calls > 0);
        store_set_progress_handler(r, 1, stop_at_once, NULL);
        assert_int_equal(store_top(r, 0, "user", 10, -1, NULL, &rows, &n, NULL), -ECANCELED);
        store_set_progress_handler(r, 0, NULL, NULL);
        store_free(r);
        store_free(w);

        snprintf(link_path, sizeof(link_path), "%s/link.db", tmpdir);
        assert_int_equal(symlink(path, link_path), 0);
        assert_int_equal(store_open(link_path, "boot-1", &ignored), -ELOOP);
        assert_int_equal(store_open_reader(link_path, "boot-1", &ignored), -ELOOP);
        assert_null(ignored);
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
        assert_int_equal(store_settle(w), 0);
        /* Pending: a tick in the same bucket and, after the process exited, its last in the next. */
        {
                ProcessSample sample = { &a, (Faults) { .user = 5, .kernel = 2 }, &ud };
                assert_int_equal(store_flush(w, t0 + 2 * S, &sample, 1), 0);
        }
        a.exited = true;
        {
                ProcessSample sample = { &a, (Faults) { .user = 8000 }, &ud };
                assert_int_equal(store_flush(w, t0 + 11 * S, &sample, 1), 0);
        }

        assert_int_equal(history_user(r, 820, 10 * S, &traps), 8025);
        assert_int_equal(traps, 6);
        assert_int_equal(store_find_process(r, 820, 0, &id, &found), 0);
        assert_true(found.exited);
        process_info_done(&found);
        assert_int_equal(store_history(r, id, 0, UINT64_MAX, 10 * S, &hist, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(hist[0].time_usec, t0);
        assert_int_equal(hist[0].faults.user, 25);
        assert_int_equal(hist[0].faults.kernel, 2);
        assert_int_equal(hist[0].traps->vector[6], 3);
        assert_int_equal(hist[1].time_usec, t0 + 10 * S);
        assert_int_equal(hist[1].faults.user, 8000);
        assert_int_equal(hist[1].traps->vector[6], 3);
        store_history_rows_free(hist, n);
        /* The range applies to pending buckets as to raw ones; a coarser interval sums them. */
        assert_int_equal(store_history(r, id, t0 + 10 * S, UINT64_MAX, 10 * S, &hist, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(hist[0].faults.user, 8000);
        store_history_rows_free(hist, n);
        assert_int_equal(store_history(r, id, 0, t0 + 10 * S, 10 * S, &hist, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(hist[0].faults.user, 25);
        store_history_rows_free(hist, n);
        assert_int_equal(history_user(r, 820, 60 * S, NULL), 8025);

        /* A snapshot: the writer's later ticks are not seen until it ends. */
        assert_int_equal(store_snapshot_begin(r), 0);
        assert_int_equal(history_user(r, 820, 10 * S, NULL), 8025);
        {
                ProcessInfo b = { .pid = 821, .start_time = 9, .comm = "b", .first_seen_usec = t0 + 12 * S };
                ProcessSample sample = { &b, (Faults) { .user = 1 }, NULL };

                assert_int_equal(store_flush(w, t0 + 12 * S, &sample, 1), 0);
                assert_int_equal(store_settle(w), 0);
        }
        assert_int_equal(store_find_process(r, 821, 0, &id, &found), -ENOENT);
        assert_int_equal(history_user(r, 820, 10 * S, NULL), 8025);
        store_snapshot_end(r);
        assert_int_equal(history_user(r, 821, 10 * S, NULL), 1);
        /* Settled, the same answer from the raw tier alone. */
        assert_int_equal(history_user(r, 820, 10 * S, NULL), 8025);

        /* Top reads what was folded before the call: the writer settles before it asks. */
        assert_int_equal(store_top(r, t0, "user", 10, -1, NULL, &rows, &n, NULL), 0);
        assert_int_equal(n, 2);
        assert_int_equal(rows[0].faults.user, 8025);
        store_rows_free(rows, n);
        store_free(r);
        store_free(w);
}

/* Top on a reader with ticks the writer has not folded: the pending counts are added, can
 * overtake the tiers' ranks, a process with only pending ticks is found (and counted in
 * otherProcesses), the user and the filter apply to it, traps sort with their pending part, and
 * the answer is the one after the fold. */
static void top_pending_pids(Store *r, const char *sort, size_t limit, int64_t uid, const ProcessFilter *f,
                             const uint32_t *want, const uint64_t *values, size_t n_want, uint64_t other) {
        StoreRow *rows;
        uint64_t left;
        size_t n;

        assert_int_equal(store_top(r, 0, sort, limit, uid, f, &rows, &n, &left), 0);
        assert_int_equal(n, n_want);
        assert_int_equal(left, other);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(rows[i].process.pid, want[i]);
                assert_int_equal(strcmp(sort, "traps") == 0 ? traps_total(&rows[i].traps) : rows[i].faults.user,
                                 values[i]);
        }
        store_rows_free(rows, n);
}

static void test_top_reads_pending(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL;
        ProcessInfo a = { .pid = 830, .start_time = 1, .comm = "a", .uid = 1000, .first_seen_usec = t0 },
                    b = { .pid = 831, .start_time = 1, .comm = "b", .uid = 1000, .first_seen_usec = t0 },
                    c = { .pid = 832, .start_time = 1, .comm = "c", .uid = 2000, .first_seen_usec = t0 };
        ProcessFilter only_c = PROCESS_FILTER_NONE;
        Traps ud = { .vector[6] = 7 };
        char path[256];
        Store *w, *r;

        snprintf(path, sizeof(path), "%s/top-pending.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &w), 0);
        assert_int_equal(store_open_reader(path, "boot-1", &r), 0);
        /* Folded: a 100, b 50. */
        {
                ProcessSample samples[] = { { &a, (Faults) { .user = 100 }, NULL }, { &b, (Faults) { .user = 50 }, NULL } };
                assert_int_equal(store_flush(w, t0, samples, 2), 0);
        }
        assert_int_equal(store_settle(w), 0);
        /* Pending: b 80 more (130, past a), c only pending (90, and 7 traps). */
        {
                ProcessSample samples[] = { { &b, (Faults) { .user = 80 }, NULL }, { &c, (Faults) { .user = 90 }, &ud } };
                assert_int_equal(store_flush(w, t0 + S, samples, 2), 0);
        }
        for (int folded = 0; folded < 2; folded++) {
                top_pending_pids(r, "user", 10, -1, NULL, (uint32_t[]) { 831, 830, 832 }, (uint64_t[]) { 130, 100, 90 },
                                 3, 0);
                top_pending_pids(r, "user", 1, -1, NULL, (uint32_t[]) { 831 }, (uint64_t[]) { 130 }, 1, 2);
                top_pending_pids(r, "user", 10, 2000, NULL, (uint32_t[]) { 832 }, (uint64_t[]) { 90 }, 1, 0);
                top_pending_pids(r, "user", 1, 1000, NULL, (uint32_t[]) { 831 }, (uint64_t[]) { 130 }, 1, 1);
                only_c.comm = (char *) "c";
                top_pending_pids(r, "user", 10, -1, &only_c, (uint32_t[]) { 832 }, (uint64_t[]) { 90 }, 1, 0);
                only_c.comm = NULL;
                /* Ties (a and b have no traps): the newer process row first. */
                top_pending_pids(r, "traps", 10, -1, NULL, (uint32_t[]) { 832, 831, 830 }, (uint64_t[]) { 7, 0, 0 }, 3,
                                 0);
                /* The same answers once the writer folded the pending ticks into the raw tier. */
                assert_int_equal(store_settle(w), 0);
        }
        store_free(r);
        store_free(w);
}

/* ---- Filters: Top's, and UnitHistory's units ---- */

static int64_t db_count(const char *path, const char *sql);

static void top_filter_pids(Store *s, int64_t uid, const ProcessFilter *f, const uint32_t *want, size_t n_want) {
        StoreRow *rows;
        size_t n;

        assert_int_equal(store_top(s, 0, "user", 10, uid, f, &rows, &n, NULL), 0);
        assert_int_equal(n, n_want);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(rows[i].process.pid, want[i]);
                /* Each its own counts: user faults its pid, a #UD per 10 of them. */
                assert_int_equal(rows[i].faults.user, rows[i].process.pid);
                assert_int_equal(rows[i].traps.vector[6], rows[i].process.pid / 10);
        }
        store_rows_free(rows, n);
}

#define TOP_PIDS(uid, f, ...)                                                                      \
        top_filter_pids(s, uid, f, (const uint32_t[]) { 0, __VA_ARGS__ } + 1,                      \
                        ELEMENTSOF(((const uint32_t[]) { 0, __VA_ARGS__ })) - 1)

/* Top with each filter, and all of them together, under the caller's own uid or not; the
 * traps of the rows it gives. Globs are GLOB's: case-sensitive; no unit matches no glob. */
static void test_top_filters(void **state) {
        ProcessInfo procs[] = {
                { .pid = 10, .start_time = 1, .comm = "postgres", .uid = 0, .unit = (char *) "postgresql.service", .first_seen_usec = 1 },
                { .pid = 21, .start_time = 1, .comm = "postgres", .uid = 1000, .unit = (char *) "postgresql.service", .first_seen_usec = 1 },
                { .pid = 32, .start_time = 1, .comm = "nginx", .uid = 0, .unit = (char *) "nginx.service", .first_seen_usec = 1 },
                { .pid = 43, .start_time = 1, .comm = "python3", .uid = 1000, .first_seen_usec = 1 },
        };
        const uint64_t t0 = 1700000000000000ULL;
        ProcessSample samples[ELEMENTSOF(procs)];
        Traps traps[ELEMENTSOF(procs)] = {};
        ProcessFilter f = PROCESS_FILTER_NONE;
        char path[256], long_glob[STORE_MAX_GLOB + 1];
        Store *s;

        snprintf(path, sizeof(path), "%s/top-filters.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        for (size_t i = 0; i < ELEMENTSOF(procs); i++) {
                traps[i].vector[6] = procs[i].pid / 10;
                traps[i].signal[fault_signal_index(SIGILL)][si_code_slot(2)] = procs[i].pid / 10;
                samples[i] = (ProcessSample) { &procs[i], (Faults) { .user = procs[i].pid }, &traps[i] };
        }
        assert_int_equal(store_flush(s, t0, samples, ELEMENTSOF(samples)), 0);

        TOP_PIDS(-1, NULL, 43, 32, 21, 10);
        TOP_PIDS(-1, &f, 43, 32, 21, 10); /* an empty filter */

        assert_int_equal(process_filter_parse_pids(&f, "10,32,99"), 0);
        TOP_PIDS(-1, &f, 32, 10);
        TOP_PIDS(1000, &f); /* both root's */
        TOP_PIDS(0, &f, 32, 10);
        f.n_pids = 0;

        f.uid = 1000;
        TOP_PIDS(-1, &f, 43, 21);
        TOP_PIDS(1000, &f, 43, 21);
        /* A caller who sees only their own asks for another user's: nothing. */
        TOP_PIDS(0, &f);
        f.uid = -1;

        f.unit = strdup("postgresql.service");
        TOP_PIDS(-1, &f, 21, 10);
        TOP_PIDS(1000, &f, 21);
        free(f.unit);
        f.unit = strdup("*");
        TOP_PIDS(-1, &f, 32, 21, 10);
        free(f.unit);
        f.unit = strdup("[n]*.service");
        TOP_PIDS(-1, &f, 32);
        free(f.unit);
        f.unit = NULL;

        f.comm = strdup("post*");
        TOP_PIDS(-1, &f, 21, 10);
        free(f.comm);
        f.comm = strdup("Post*");
        TOP_PIDS(-1, &f);
        free(f.comm);
        f.comm = strdup("[^p]*");
        TOP_PIDS(-1, &f, 32);
        free(f.comm);
        /* In GLOB, unlike fnmatch, ! does not negate: glob_match() (Watch) says the same. */
        f.comm = strdup("[!p]*");
        TOP_PIDS(-1, &f, 43, 21, 10);
        assert_true(glob_match(f.comm, "python3"));
        assert_false(glob_match(f.comm, "nginx"));
        free(f.comm);
        f.comm = strdup("py*");
        TOP_PIDS(-1, &f, 43);
        free(f.comm);

        /* Everything at once: the processes in all of them. */
        f.comm = strdup("p*");
        f.unit = strdup("postgresql.*");
        f.uid = 1000;
        assert_int_equal(process_filter_parse_pids(&f, "10,21,43"), 0);
        TOP_PIDS(-1, &f, 21);
        TOP_PIDS(1000, &f, 21);
        TOP_PIDS(0, &f);
        process_filter_done(&f);

        /* The longest glob a caller may give is not too long for SQLite (its limit is set). */
        memset(long_glob, 'x', STORE_MAX_GLOB - 1);
        long_glob[STORE_MAX_GLOB - 1] = '*';
        long_glob[STORE_MAX_GLOB] = '\0';
        f.unit = strdup(long_glob);
        TOP_PIDS(-1, &f);
        process_filter_done(&f);
        store_free(s);
}

/* The sum of a unit history's rows. */
static void unit_history_sum(const StoreUnitHistory *h, Faults *faults, Traps *traps) {
        *faults = (Faults) {};
        *traps = (Traps) {};
        for (size_t i = 0; i < h->n_rows; i++) {
                faults_add(faults, &h->rows[i].faults);
                if (h->rows[i].traps)
                        traps_add(traps, h->rows[i].traps);
        }
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
        StoreUnitHistory h;
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
        /* Then a minute in the raw tier, a bucket per tick: each tick folds the one before, the
         * last (b's exit) stays pending. */
        for (uint64_t k = 0; k < 6; k++) {
                ProcessSample samples[] = {
                        { &a, (Faults) { .user = 1 }, &ud },
                        { &b, (Faults) { .user = 10 }, k % 3 == 0 ? &bp : NULL },
                };

                a.last_seen_usec = b.last_seen_usec = t0 + 2 * H + k * 10 * S;
                b.exited = k == 5;
                assert_int_equal(store_flush(w, t0 + 2 * H + k * 10 * S, samples, ELEMENTSOF(samples)), 0);
        }
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM sample_pending"), 1);

        assert_int_equal(store_open_reader(path, "boot-1", &r), 0);
        /* Per minute: 6 + 60 user faults, 6 #UD and 2 × 2 #BP (ticks 0 and 3 of each 6). */
        assert_int_equal(store_unit_history(r, "web.service", -1, 0, UINT64_MAX, M, 0, &h), 0);
        assert_int_equal(h.n_units, 1);
        assert_string_equal(h.units[0], "web.service");
        assert_int_equal(h.processes, 2);
        assert_int_equal(h.running, 1);
        assert_int_equal(h.resolution_usec, M);
        assert_int_equal(h.n_rows, 5);
        for (size_t i = 0; i < h.n_rows; i++) {
                assert_int_equal(h.rows[i].time_usec, i < 4 ? t0 + i * M : t0 + 2 * H);
                assert_int_equal(h.rows[i].faults.user, 66);
                assert_int_equal(h.rows[i].traps->vector[6], 6);
                assert_int_equal(h.rows[i].traps->vector[3], 4);
                assert_int_equal(traps_total(h.rows[i].traps), 10);
        }
        store_unit_history_done(&h);

        /* By the hour: the first hour from the hour tier, the last from raw and pending. */
        assert_int_equal(store_unit_history(r, "web.service", -1, 0, UINT64_MAX, H, 0, &h), 0);
        assert_int_equal(h.n_rows, 2);
        assert_int_equal(h.rows[0].time_usec, t0);
        assert_int_equal(h.rows[0].faults.user, 4 * 66);
        assert_int_equal(h.rows[0].traps->vector[3], 16);
        assert_int_equal(h.rows[1].time_usec, t0 + 2 * H);
        assert_int_equal(h.rows[1].faults.user, 66);
        assert_int_equal(h.rows[1].traps->vector[6], 6);
        store_unit_history_done(&h);

        /* The raw minute by 10 s, the pending tick last; the default step (from t0 to now, 2 h:
         * 10 s) and the range's processes: c exited before it, b within. */
        assert_int_equal(store_unit_history(r, "*.service", -1, t0 + 2 * H, UINT64_MAX, 0, t0 + 2 * H + M, &h), 0);
        assert_int_equal(h.resolution_usec, 10 * S);
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
        store_unit_history_done(&h);

        /* All time, all units: c's 2400 too, never d's (no unit). */
        assert_int_equal(store_unit_history(r, "*", -1, 0, UINT64_MAX, M, 0, &h), 0);
        assert_int_equal(h.processes, 3);
        unit_history_sum(&h, &faults, &traps);
        assert_int_equal(faults.user, 5 * 66 + 2400);
        assert_int_equal(traps.vector[6], 30);
        assert_int_equal(traps.vector[3], 20);
        assert_int_equal(traps_total(&traps), 50);
        store_unit_history_done(&h);

        /* uid 1000 sees a alone of web.service: 30 faults, 30 #UD, no #BP. */
        assert_int_equal(store_unit_history(r, "web.service", 1000, 0, UINT64_MAX, M, 0, &h), 0);
        assert_int_equal(h.processes, 1);
        assert_int_equal(h.running, 1);
        unit_history_sum(&h, &faults, &traps);
        assert_int_equal(faults.user, 30);
        assert_int_equal(traps.vector[6], 30);
        assert_int_equal(traps.vector[3], 0);
        store_unit_history_done(&h);
        /* ... and of "w*" and "[a-z]b.service" what is theirs; a range before everything has no
         * samples and no processes, but the unit is known. */
        assert_int_equal(store_unit_history(r, "?b.service", 1000, 0, UINT64_MAX, M, 0, &h), 0);
        assert_int_equal(h.n_units, 1);
        assert_string_equal(h.units[0], "db.service");
        unit_history_sum(&h, &faults, &traps);
        assert_int_equal(faults.user, 2400);
        store_unit_history_done(&h);
        assert_int_equal(store_unit_history(r, "w*", 1000, 0, t0, M, 0, &h), 0);
        assert_int_equal(h.n_units, 1);
        assert_int_equal(h.processes, 0);
        assert_int_equal(h.n_rows, 0);
        store_unit_history_done(&h);

        /* Unknown units, units only of others, case: -ENOENT. A step that is not whole buckets. */
        assert_int_equal(store_unit_history(r, "nginx.service", -1, 0, UINT64_MAX, M, 0, &h), -ENOENT);
        assert_int_equal(store_unit_history(r, "web.service", 5, 0, UINT64_MAX, M, 0, &h), -ENOENT);
        assert_int_equal(store_unit_history(r, "WEB.service", -1, 0, UINT64_MAX, M, 0, &h), -ENOENT);
        assert_int_equal(store_unit_history(r, "web.service", -1, 0, UINT64_MAX, 15 * S, 0, &h), -EINVAL);

        /* The writer's own query folds the pending tick first: the same sums. */
        assert_int_equal(store_unit_history(w, "web.service", -1, 0, UINT64_MAX, H, 0, &h), 0);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM sample_pending"), 0);
        unit_history_sum(&h, &faults, &traps);
        assert_int_equal(faults.user, 5 * 66);
        assert_int_equal(traps_total(&traps), 50);
        store_unit_history_done(&h);
        store_free(r);
        store_free(w);
}

/* ---- Sites ---- */

/* A trap with its symbol; a sampled fault in a library touching a mapped file; a sampled fault
 * in anonymous code, which has no symbol. */
static const SiteCount trap_site = { .kind = SITE_TRAP, .vector = 6, .period = 1, .object = (char *) "/usr/bin/a",
                                     .dev = 0x800001, .ino = 1234, .offset = 0x1130, .symbol = (char *) "crash_here",
                                     .symbol_offset = 0x10, .memory = MEMORY_NONE };
static const SiteCount fault_site = { .kind = SITE_FAULT, .vector = SITE_FAULT_VECTOR, .period = 64,
                                      .object = (char *) "/usr/lib/libc.so.6", .dev = 0x800001, .ino = 99,
                                      .offset = 0x9a0c0, .symbol = (char *) "memcpy", .symbol_offset = 0x40,
                                      .memory = MEMORY_FILE, .memory_object = (char *) "/var/lib/data.bin",
                                      .memory_dev = 0x800002, .memory_ino = 77 };
static const SiteCount anon_site = { .kind = SITE_FAULT, .vector = SITE_FAULT_VECTOR, .period = 64,
                                     .object = (char *) "[anon]", .offset = 0x7f0000001000, .memory = MEMORY_ANON };

static SiteCount with_count(SiteCount c, uint64_t count) {
        c.count = count;
        return c;
}

static int64_t process_id(Store *s, uint32_t pid) {
        ProcessInfo found;
        int64_t id;

        assert_int_equal(store_find_process(s, pid, 0, &id, &found), 0);
        process_info_done(&found);
        return id;
}

/* The entry of sites for this instruction, kind and kind of memory; NULL: none. */
static const SiteCount *find_site(const SiteCount *sites, size_t n, const SiteCount *like) {
        for (size_t i = 0; i < n; i++)
                if (sites[i].kind == like->kind && strcmp(sites[i].object, like->object) == 0 &&
                    sites[i].offset == like->offset && sites[i].memory == like->memory)
                        return &sites[i];
        return NULL;
}

/* The count store_sites() gives the site like `like` of process pid in [since, until); 0 when
 * it has none. */
static uint64_t site_total(Store *s, uint32_t pid, uint64_t since, uint64_t until, const SiteCount *like) {
        const SiteCount *found;
        SiteCount *sites;
        uint64_t v;
        size_t n;

        assert_int_equal(store_sites(s, process_id(s, pid), since, until, -1, 100, &sites, &n, NULL), 0);
        found = find_site(sites, n, like);
        v = found ? found->count : 0;
        site_counts_free(sites, n);
        return v;
}

static void assert_site(const SiteCount *got, const SiteCount *want, uint64_t count) {
        assert_int_equal(got->kind, want->kind);
        assert_int_equal(got->vector, want->vector);
        assert_int_equal(got->period, want->period);
        assert_string_equal(got->object, want->object);
        assert_int_equal(got->dev, want->dev);
        assert_int_equal(got->ino, want->ino);
        assert_int_equal(got->offset, want->offset);
        if (want->symbol) {
                assert_non_null(got->symbol);
                assert_string_equal(got->symbol, want->symbol);
                assert_int_equal(got->symbol_offset, want->symbol_offset);
        } else
                assert_null(got->symbol);
        assert_int_equal(got->memory, want->memory);
        if (want->memory_object) {
                assert_non_null(got->memory_object);
                assert_string_equal(got->memory_object, want->memory_object);
        } else
                assert_null(got->memory_object);
        assert_int_equal(got->memory_dev, want->memory_dev);
        assert_int_equal(got->memory_ino, want->memory_ino);
        assert_int_equal(got->version.ctime_nsec, want->version.ctime_nsec);
        assert_int_equal(got->version.generation, want->version.generation);
        assert_int_equal(got->count, count);
}

static int64_t db_count(const char *path, const char *sql) {
        sqlite3 *db;
        sqlite3_stmt *st;
        int64_t n;

        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
                fail_msg("%s: %s", sql, sqlite3_errmsg(db));
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return n;
}

/* Sites of two processes over three buckets: summed per site across ticks, the largest estimate
 * first (count × period), traps first among equals; the kind filter, the limit and the time
 * range; the dictionaries shared; a symbol learned later filled in, never replaced; a reader
 * sees the same. */
static void test_sites(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL; /* a bucket boundary */
        ProcessInfo a = { .pid = 900, .start_time = 1, .comm = "a", .first_seen_usec = t0 };
        ProcessInfo b = { .pid = 901, .start_time = 1, .comm = "b", .first_seen_usec = t0 };
        /* b's trap has no symbol at first. */
        SiteCount b_trap = { .kind = SITE_TRAP, .vector = 13, .period = 1, .object = (char *) "/usr/bin/b", .dev = 5,
                             .ino = 6, .offset = 0x2000, .memory = MEMORY_UNMAPPED };
        SiteCount b_fault = fault_site;
        SiteCount *sites;
        char path[256];
        Store *s, *r;
        uint64_t other;
        size_t n;

        b_fault.memory = MEMORY_ANON; /* the same instruction as a's, other memory */
        b_fault.memory_object = NULL;
        b_fault.memory_dev = b_fault.memory_ino = 0;

        snprintf(path, sizeof(path), "%s/sites.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);

        /* Six ticks, two in each of three buckets. b's samples have no delta and no traps:
         * their sites are written all the same. b's trap (32 + 32) and its fault (1 × 64) have
         * the same estimate. */
        for (uint64_t i = 0; i < 6; i++) {
                SiteCount a_sites[] = { with_count(trap_site, 3), with_count(fault_site, 2), with_count(anon_site, 1) };
                SiteCount b_sites[] = { with_count(b_trap, 32), with_count(b_fault, i == 0) };
                Traps t = { .vector = { [6] = 3 } };
                ProcessSample samples[] = {
                        { &a, (Faults) { .user = 5 }, &t, a_sites, ELEMENTSOF(a_sites) },
                        { &b, (Faults) {}, NULL, b_sites, i < 2 ? ELEMENTSOF(b_sites) : 0 },
                };

                assert_int_equal(store_flush(s, t0 + i * 5 * S, samples, ELEMENTSOF(samples)), 0);
        }

        /* a: the fault 12 × 64, the anonymous one 6 × 64, the trap 18. */
        assert_int_equal(store_sites(s, process_id(s, 900), 0, UINT64_MAX, -1, 10, &sites, &n, NULL), 0);
        assert_int_equal(n, 3);
        assert_site(&sites[0], &fault_site, 12);
        assert_site(&sites[1], &anon_site, 6);
        assert_site(&sites[2], &trap_site, 18);
        site_counts_free(sites, n);

        /* By kind; at most one; the middle bucket only. */
        assert_int_equal(store_sites(s, process_id(s, 900), 0, UINT64_MAX, SITE_TRAP, 10, &sites, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_site(&sites[0], &trap_site, 18);
        site_counts_free(sites, n);
        assert_int_equal(store_sites(s, process_id(s, 900), 0, UINT64_MAX, SITE_FAULT, 10, &sites, &n, NULL), 0);
        assert_int_equal(n, 2);
        assert_site(&sites[0], &fault_site, 12);
        assert_site(&sites[1], &anon_site, 6);
        site_counts_free(sites, n);
        assert_int_equal(store_sites(s, process_id(s, 900), 0, UINT64_MAX, -1, 1, &sites, &n, &other), 0);
        assert_int_equal(n, 1);
        assert_int_equal(other, 2);
        assert_site(&sites[0], &fault_site, 12);
        site_counts_free(sites, n);
        assert_int_equal(store_sites(s, process_id(s, 900), 0, UINT64_MAX, SITE_FAULT, 2, &sites, &n, &other), 0);
        assert_int_equal(n, 2);
        assert_int_equal(other, 0);
        site_counts_free(sites, n);
        assert_int_equal(store_sites(s, process_id(s, 900), t0 + 10 * S, t0 + 20 * S, -1, 10, &sites, &n, NULL), 0);
        assert_int_equal(n, 3);
        assert_site(&sites[0], &fault_site, 4);
        assert_site(&sites[1], &anon_site, 2);
        assert_site(&sites[2], &trap_site, 6);
        site_counts_free(sites, n);
        assert_int_equal(store_sites(s, process_id(s, 900), t0 + 30 * S, UINT64_MAX, -1, 10, &sites, &n, NULL), 0);
        assert_int_equal(n, 0);
        site_counts_free(sites, n);
        assert_int_equal(store_sites(s, process_id(s, 900), 0, UINT64_MAX, _SITE_KIND_MAX, 10, &sites, &n, NULL), -EINVAL);
        assert_int_equal(store_sites(s, 123456, 0, UINT64_MAX, -1, 10, &sites, &n, NULL), 0);
        assert_int_equal(n, 0);
        site_counts_free(sites, n);

        /* b: equal estimates of 64, the trap first; its fault apart from a's (other memory). */
        assert_int_equal(store_sites(s, process_id(s, 901), 0, UINT64_MAX, -1, 10, &sites, &n, NULL), 0);
        assert_int_equal(n, 2);
        assert_site(&sites[0], &b_trap, 64);
        assert_site(&sites[1], &b_fault, 1);
        site_counts_free(sites, n);

        /* One row per file and per instruction, whoever used it. */
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object"), 5);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site"), 4);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE name = '[anon]' AND dev = 0 AND ino = 0"),
                         1);

        /* A reader sees the same. */
        assert_int_equal(store_open_reader(path, "boot-1", &r), 0);
        assert_int_equal(store_sites(r, process_id(r, 900), 0, UINT64_MAX, -1, 10, &sites, &n, NULL), 0);
        assert_int_equal(n, 3);
        assert_site(&sites[0], &fault_site, 12);
        assert_site(&sites[1], &anon_site, 6);
        assert_site(&sites[2], &trap_site, 18);
        site_counts_free(sites, n);

        /* b's trap with a symbol now: filled in; another one later does not replace it. */
        b_trap.symbol = (char *) "late";
        b_trap.symbol_offset = 8;
        {
                SiteCount one = with_count(b_trap, 1);
                ProcessSample sample = { &b, (Faults) {}, NULL, &one, 1 };
                assert_int_equal(store_flush(s, t0 + 40 * S, &sample, 1), 0);
        }
        b_trap.symbol = (char *) "other";
        b_trap.symbol_offset = 99;
        {
                SiteCount one = with_count(b_trap, 1);
                ProcessSample sample = { &b, (Faults) {}, NULL, &one, 1 };
                assert_int_equal(store_flush(s, t0 + 41 * S, &sample, 1), 0);
        }
        b_trap.symbol = (char *) "late";
        b_trap.symbol_offset = 8;
        assert_int_equal(store_sites(r, process_id(r, 901), 0, UINT64_MAX, SITE_TRAP, 10, &sites, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_site(&sites[0], &b_trap, 66);
        site_counts_free(sites, n);
        /* The query threads' cost bound stops it, and the reader answers the next one. */
        {
                int64_t id = process_id(r, 901);

                store_set_progress_handler(r, 1, stop_at_once, NULL);
                assert_int_equal(store_sites(r, id, 0, UINT64_MAX, -1, 10, &sites, &n, NULL), -ECANCELED);
                store_set_progress_handler(r, 0, NULL, NULL);
                assert_int_equal(store_sites(r, id, 0, UINT64_MAX, -1, 10, &sites, &n, NULL), 0);
        }
        assert_int_equal(n, 2);
        site_counts_free(sites, n);
        store_free(r);

        /* A tick that fails rolls back the entries it created; the next one creates them again
         * (whatever ids were remembered of the first). Sites of count 0 are not stored. */
        {
                SiteCount x = { .kind = SITE_TRAP, .vector = 3, .period = 1, .object = (char *) "/usr/bin/x",
                                .offset = 0x10, .symbol = (char *) "x_fn", .memory = MEMORY_STACK, .count = 1 };
                SiteCount bad[] = { x, with_count(anon_site, 1) }, zero = with_count(anon_site, 0);
                ProcessSample sample = { &a, (Faults) {}, NULL, bad, 2 };

                bad[1].object = NULL;
                assert_int_equal(store_flush(s, t0 + 50 * S, &sample, 1), -EINVAL);
                bad[1] = with_count(anon_site, 1);
                bad[1].period = 0;
                assert_int_equal(store_flush(s, t0 + 50 * S, &sample, 1), -EINVAL);
                bad[1] = with_count(anon_site, 1);
                bad[1].memory = _MEMORY_KIND_MAX;
                assert_int_equal(store_flush(s, t0 + 50 * S, &sample, 1), -EINVAL);
                bad[1] = with_count(anon_site, 1);
                bad[1].kind = _SITE_KIND_MAX;
                assert_int_equal(store_flush(s, t0 + 50 * S, &sample, 1), -EINVAL);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE name = '/usr/bin/x'"), 0);

                /* A new site first, so that it would take the id the failed ticks gave x. */
                sample.sites = &zero;
                sample.n_sites = 1;
                assert_int_equal(store_flush(s, t0 + 51 * S, &sample, 1), 0);
                sample.sites = &b_trap;
                b_trap.count = 1;
                b_trap.offset = 0x2001;
                assert_int_equal(store_flush(s, t0 + 52 * S, &sample, 1), 0);
                sample.sites = &x;
                assert_int_equal(store_flush(s, t0 + 53 * S, &sample, 1), 0);
                assert_int_equal(store_sites(s, process_id(s, 900), t0 + 50 * S, UINT64_MAX, SITE_TRAP, 10, &sites, &n, NULL),
                                 0);
                assert_int_equal(n, 2);
                assert_site(&sites[0], &b_trap, 1);
                assert_site(&sites[1], &x, 1);
                site_counts_free(sites, n);
                /* The zero count wrote no row. */
                assert_int_equal(site_total(s, 900, t0 + 50 * S, UINT64_MAX, &anon_site), 0);
        }
        store_free(s);
}

/* What test_sites_tiers() expects of a range: the counts of a's three sites and b's one. */
typedef struct SiteRange {
        uint64_t since, until, trap, fault, anon, b;
} SiteRange;

static void check_ranges(Store *s, const SiteRange *ranges, size_t n, const SiteCount *b_site) {
        for (size_t i = 0; i < n; i++) {
                const SiteRange *x = &ranges[i];

                assert_int_equal(site_total(s, 910, x->since, x->until, &trap_site), x->trap);
                assert_int_equal(site_total(s, 910, x->since, x->until, &fault_site), x->fault);
                assert_int_equal(site_total(s, 910, x->since, x->until, &anon_site), x->anon);
                assert_int_equal(site_total(s, 911, x->since, x->until, b_site), x->b);
        }
}

/* Two hours of sites, rolled up into minutes and hours: every sum over the whole range and over
 * ranges the finer tiers still hold is what it was in the raw tier (each instant is read from
 * one tier only), on the writer and on a reader. A process with sites only is kept while they
 * are. Once the hour tier lets go of rows, the dictionary entries nothing references any more
 * are deleted, and only those. */
static void test_sites_tiers(void **state) {
        const uint64_t S = 1000000, M = 60 * S, H = 3600 * S, t0 = 1700000000000000ULL - 1700000000000000ULL % H;
        StoreRetention keep = STORE_RETENTION_DEFAULT;
        ProcessInfo a = { .pid = 910, .start_time = 1, .comm = "a", .first_seen_usec = t0 };
        ProcessInfo b = { .pid = 911, .start_time = 1, .comm = "b", .first_seen_usec = t0 };
        ProcessInfo c = { .pid = 912, .start_time = 1, .comm = "c", .first_seen_usec = t0, .exited = true };
        const SiteCount b_site = { .kind = SITE_FAULT, .vector = SITE_FAULT_VECTOR, .period = 64,
                                   .object = (char *) "/usr/bin/b", .dev = 7, .ino = 8, .offset = 0x3000,
                                   .symbol = (char *) "b_fn", .memory = MEMORY_FILE,
                                   .memory_object = (char *) "/var/lib/b.dat", .memory_dev = 7, .memory_ino = 9 };
        const SiteCount c_site = { .kind = SITE_TRAP, .vector = 4, .period = 1, .object = (char *) "/usr/bin/c",
                                   .offset = 0x40, .memory = MEMORY_NONE };
        const SiteRange ranges[] = {
                { 0, UINT64_MAX, 240, 240, 120, 120 },
                { t0 + 30 * M, t0 + 90 * M, 120, 120, 60, 60 },
                { t0 + 90 * M, t0 + 120 * M, 60, 0, 0, 60 },
                { t0 + 61 * M + 30 * S, t0 + 62 * M, 1, 0, 0, 1 },
        };
        char path[256];
        Store *s, *r;

        snprintf(path, sizeof(path), "%s/sites-tiers.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        /* A tick every 30 s for two hours: a traps throughout, faults in the first hour; b faults
         * in the second; c, which has exited, has one trap site and nothing else. */
        for (uint64_t i = 0; i < 240; i++) {
                SiteCount a_sites[] = { with_count(trap_site, 1), with_count(fault_site, 2), with_count(anon_site, 1) };
                SiteCount b_sites[] = { with_count(b_site, 1) }, c_sites[] = { with_count(c_site, 5) };
                ProcessSample samples[] = {
                        { &a, (Faults) { .user = 1 }, NULL, a_sites, i < 120 ? 3 : 1 },
                        { &b, (Faults) { .user = 1 }, NULL, b_sites, i >= 120 },
                        { &c, (Faults) {}, NULL, c_sites, 1 },
                };

                assert_int_equal(store_flush(s, t0 + i * 30 * S, samples, i == 0 ? 3 : 2), 0);
        }

        check_ranges(s, ranges, ELEMENTSOF(ranges), &b_site);
        assert_int_equal(site_total(s, 912, 0, UINT64_MAX, &c_site), 5);

        /* Rolled up, nothing expired: each stretch is in all three tiers, and read from one. */
        maintain_until_done(s, t0 + 3 * H, &keep);
        /* a: its trap in both hours, its two faults in the first; b; c. */
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site_hour"), 2 + 2 + 1 + 1);
        assert_int_equal(db_count(path, "SELECT SUM(count) FROM site_minute"), 240 + 240 + 120 + 120 + 5);
        assert_int_equal(db_count(path, "SELECT SUM(count) FROM site_raw"), 240 + 240 + 120 + 120 + 5);
        check_ranges(s, ranges, ELEMENTSOF(ranges), &b_site);
        assert_int_equal(store_open_reader(path, "boot-1", &r), 0);
        check_ranges(r, ranges, ELEMENTSOF(ranges), &b_site);
        /* c has exited but still has sites: kept, with them. */
        assert_int_equal(site_total(r, 912, 0, UINT64_MAX, &c_site), 5);

        /* Raw and minutes kept an hour, hours two: only the hour tier has anything, its second
         * hour. The first hour's sites and files are deleted with their last rows; c with its. */
        {
                StoreRetention short_ = { .raw_usec = H, .minute_usec = H, .hour_usec = 2 * H, .batch_rows = 2 };
                ProcessInfo found;
                int64_t id;

                maintain_until_done(s, t0 + 3 * H, &short_);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site_raw"), 0);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site_minute"), 0);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site_hour"), 2);
                assert_int_equal(site_total(s, 910, 0, UINT64_MAX, &trap_site), 120);
                assert_int_equal(site_total(s, 910, 0, UINT64_MAX, &fault_site), 0);
                assert_int_equal(site_total(r, 911, 0, UINT64_MAX, &b_site), 120);
                assert_int_equal(store_find_process(s, 912, 0, &id, &found), -ENOENT);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site"), 2);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object"), 3);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE name IN "
                                                "('/usr/bin/a', '/usr/bin/b', '/var/lib/b.dat')"),
                                 3);

                /* The fault site again, its entries new (none of the ids remembered of the old
                 * ones is used), in the current minute: in the raw tier only. */
                {
                        SiteCount one = with_count(fault_site, 1);
                        ProcessSample sample = { &a, (Faults) {}, NULL, &one, 1 };
                        SiteCount *sites;
                        size_t n;

                        assert_int_equal(store_flush(s, t0 + 4 * H + 5 * S, &sample, 1), 0);
                        assert_int_equal(
                                store_sites(s, process_id(s, 910), t0 + 4 * H, UINT64_MAX, -1, 10, &sites, &n, NULL), 0);
                        assert_int_equal(n, 1);
                        assert_site(&sites[0], &fault_site, 1);
                        site_counts_free(sites, n);
                }
                /* The hour tier lets go of the second hour: of the dictionaries, only what the raw
                 * row references stays. */
                maintain_until_done(s, t0 + 4 * H + 10 * S, &short_);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site_hour"), 0);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site_raw"), 1);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site"), 1);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object"), 2);
                assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE name IN "
                                                "('/usr/lib/libc.so.6', '/var/lib/data.bin')"),
                                 2);
                assert_int_equal(site_total(r, 910, 0, UINT64_MAX, &fault_site), 1);
        }
        store_free(r);
        store_free(s);
}

/* One path, device and inode number, two versions of the file (a binary deleted and another
 * made at its path that got its inode number): two object rows and two site rows, each version's
 * symbol its own, in one tick and across ticks; a symbol learned later fills its own version's
 * row only. */
static void test_site_versions(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL; /* a bucket boundary */
        ProcessInfo a = { .pid = 920, .start_time = 1, .comm = "a", .first_seen_usec = t0 };
        ProcessInfo b = { .pid = 921, .start_time = 1, .comm = "b", .first_seen_usec = t0 };
        SiteCount old = fault_site, new = fault_site, old_late, new_late;
        SiteCount *sites;
        char path[256];
        Store *s, *r;
        size_t n;

        old.version = (ObjectVersion) { .ctime_nsec = t0 * 1000, .generation = 11 };
        new.version = (ObjectVersion) { .ctime_nsec = t0 * 1000 + 5, .generation = 12 };
        new.symbol = (char *) "other_fn";
        new.symbol_offset = 4;

        snprintf(path, sizeof(path), "%s/site-versions.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        /* The old one first, alone (its ids remembered), then both in one tick. */
        {
                SiteCount one = with_count(old, 3);
                ProcessSample sample = { &a, (Faults) {}, NULL, &one, 1 };
                assert_int_equal(store_flush(s, t0, &sample, 1), 0);
        }
        {
                SiteCount a_sites[] = { with_count(old, 1) }, b_sites[] = { with_count(new, 2) };
                ProcessSample samples[] = { { &a, (Faults) {}, NULL, a_sites, 1 }, { &b, (Faults) {}, NULL, b_sites, 1 } };
                assert_int_equal(store_flush(s, t0 + S, samples, 2), 0);
        }
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE name = '/usr/lib/libc.so.6'"), 2);
        /* The file the faults touched is kept without a version (SiteCount.memory_dev): one row. */
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE name = '/var/lib/data.bin'"), 1);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object"), 3);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM site"), 2);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE name = '/usr/lib/libc.so.6' AND "
                                        "ctime_nsec = 1700000000000000005 AND generation = 12"),
                         1);

        /* Each process its own version's site and symbol, on the writer and on a reader. */
        assert_int_equal(store_open_reader(path, "boot-1", &r), 0);
        for (int i = 0; i < 2; i++) {
                Store *q = i == 0 ? s : r;

                assert_int_equal(store_sites(q, process_id(q, 920), 0, UINT64_MAX, -1, 10, &sites, &n, NULL), 0);
                assert_int_equal(n, 1);
                assert_site(&sites[0], &old, 4);
                site_counts_free(sites, n);
                assert_int_equal(store_sites(q, process_id(q, 921), 0, UINT64_MAX, -1, 10, &sites, &n, NULL), 0);
                assert_int_equal(n, 1);
                assert_site(&sites[0], &new, 2);
                site_counts_free(sites, n);
        }

        /* Another offset, stored without a symbol in both versions; the new one's learned: only
         * its row gets it. */
        old_late = with_count(old, 1);
        new_late = with_count(new, 1);
        old_late.offset = new_late.offset = old.offset + 0x100;
        old_late.symbol = new_late.symbol = NULL;
        {
                ProcessSample samples[] = { { &a, (Faults) {}, NULL, &old_late, 1 },
                                            { &b, (Faults) {}, NULL, &new_late, 1 } };
                assert_int_equal(store_flush(s, t0 + 2 * S, samples, 2), 0);
        }
        new_late.symbol = (char *) "late_fn";
        new_late.symbol_offset = 0x10;
        assert_int_equal(store_sites_fill(s, &new_late, 1), 0);
        assert_int_equal(store_sites(r, process_id(r, 921), 0, UINT64_MAX, -1, 10, &sites, &n, NULL), 0);
        assert_int_equal(n, 2);
        assert_site(&sites[0], &new, 2);
        assert_site(&sites[1], &new_late, 1);
        site_counts_free(sites, n);
        assert_int_equal(store_sites(r, process_id(r, 920), 0, UINT64_MAX, -1, 10, &sites, &n, NULL), 0);
        assert_int_equal(n, 2);
        assert_site(&sites[0], &old, 4);
        assert_site(&sites[1], &old_late, 1);
        site_counts_free(sites, n);
        store_free(r);
        store_free(s);
        (void) state;
}

/* The rows of a query as one string, "|" between columns and ";" after each row; NULL as "~". */
static char *db_rows(const char *path, const char *sql) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        sqlite3_stmt *st;
        sqlite3 *db;

        assert_non_null(f);
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
                fail_msg("%s: %s", sql, sqlite3_errmsg(db));
        while (sqlite3_step(st) == SQLITE_ROW) {
                for (int i = 0; i < sqlite3_column_count(st); i++) {
                        const unsigned char *v = sqlite3_column_text(st, i);

                        fprintf(f, "%s%s", i ? "|" : "", v ? (const char *) v : "~");
                }
                fputc(';', f);
        }
        sqlite3_finalize(st);
        sqlite3_close(db);
        assert_int_equal(fclose(f), 0);
        return buf;
}

/* A schema version 7 database with sites (ids not dense, rows in every tier, a site without a
 * symbol, a fault's file), as the daemon before 0008 wrote it. */
static const char v7_sites[] =
        "INSERT INTO process (id, boot_id, pid, start_time, comm, uid, first_seen_usec, last_seen_usec, exited) VALUES "
        "(4, 'boot-a', 700, 1, 'old', 1000, 1699999000000000, 1700000000000000, 1);"
        "INSERT INTO object (id, name, dev, ino) VALUES (3, '/usr/bin/old', 5, 6), (8, '[anon]', 0, 0), "
        "(11, '/var/lib/old.dat', 5, 9);"
        "INSERT INTO site (id, object_id, file_offset, symbol, symbol_offset) VALUES (2, 3, 4096, 'old_fn', 16), "
        "(7, 8, 140000000, NULL, NULL), (9, 3, 8192, NULL, NULL);"
        "INSERT INTO site_raw VALUES (4, 1700000000000000, 0, 6, 1, 2, 0, 0, 5), "
        "(4, 1700000000000000, 1, 14, 64, 7, 2, 0, 3), (4, 1700000000000000, 1, 14, 64, 9, 1, 11, 2);"
        "INSERT INTO site_minute VALUES (4, 1699999000000000, 0, 6, 1, 2, 0, 0, 40), "
        "(4, 1699999000000000, 1, 14, 64, 9, 1, 11, 7);"
        "INSERT INTO site_hour VALUES (4, 1699996400000000, 0, 6, 1, 2, 0, 0, 900);";

/* What the migration must keep, each as one string. */
#define SITE_V7_COLUMNS "process_id, time_usec, kind, vector, period, site_id, memory, memory_object_id, count"
static const char *const v7_kept[] = {
        "SELECT id, name, dev, ino FROM object ORDER BY id",
        "SELECT * FROM site ORDER BY id",
        /* The columns version 7 had (0009 adds time_ns). */
        "SELECT " SITE_V7_COLUMNS " FROM site_raw ORDER BY process_id, time_usec, kind, site_id",
        "SELECT " SITE_V7_COLUMNS " FROM site_minute ORDER BY process_id, time_usec, kind, site_id",
        "SELECT " SITE_V7_COLUMNS " FROM site_hour ORDER BY process_id, time_usec, kind, site_id",
        "SELECT * FROM user_usage ORDER BY uid",
};

/* A version 7 database migrated by opening it: every object, site and count keeps its id and
 * values, the objects version 0, no reference broken; the sites answer as before; new sites of the same file, named with their version, get rows of their own. */
static void test_migrate_v7_sites(void **state) {
        char path[256], *before[ELEMENTSOF(v7_kept)];
        SiteCount now = { .kind = SITE_TRAP, .vector = 6, .period = 1, .object = (char *) "/usr/bin/old", .dev = 5,
                          .ino = 6, .version = { .ctime_nsec = 1700000000123456789, .generation = 42 }, .offset = 4096,
                          .symbol = (char *) "new_fn", .memory = MEMORY_NONE, .count = 1 };
        ProcessInfo p = { .pid = 701, .start_time = 1, .comm = "new", .uid = 1000, .first_seen_usec = 1700000100000000 };
        SiteCount *sites;
        sqlite3 *db;
        Store *s;
        size_t n;

        snprintf(path, sizeof(path), "%s/v7-sites.db", tmpdir);
        unlink(path);
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(store_migrate(db, embedded_migrations, 7), 7);
        assert_int_equal(sqlite3_exec(db, v7_sites, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        for (size_t i = 0; i < ELEMENTSOF(v7_kept); i++)
                before[i] = db_rows(path, v7_kept[i]);

        assert_int_equal(store_open(path, "boot-b", &s), 0);
        for (size_t i = 0; i < ELEMENTSOF(v7_kept); i++) {
                char *after = db_rows(path, v7_kept[i]);

                assert_string_equal(after, before[i]);
                free(after);
                free(before[i]);
        }
        assert_int_equal(db_count(path, "PRAGMA user_version"), (int64_t) embedded_migrations_count);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE ctime_nsec != 0 OR generation != 0"), 0);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM pragma_foreign_key_check"), 0);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'object_new'"), 0);
        assert_int_equal(store_sites(s, process_id(s, 700), 0, UINT64_MAX, SITE_TRAP, 10, &sites, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_string_equal(sites[0].symbol, "old_fn");
        assert_int_equal(sites[0].count, 5); /* nothing rolled up (tier): each instant read from raw */
        site_counts_free(sites, n);

        /* The same file's instruction, now with its version: rows of its own, after the old ids. */
        {
                ProcessSample sample = { &p, (Faults) {}, NULL, &now, 1 };
                assert_int_equal(store_flush(s, 1700000100000000, &sample, 1), 0);
        }
        assert_int_equal(db_count(path, "SELECT id FROM object WHERE generation = 42"), 12);
        assert_int_equal(db_count(path, "SELECT COUNT(*) FROM object WHERE name = '/usr/bin/old' AND dev = 5 AND ino = 6"),
                         2);
        assert_int_equal(db_count(path, "SELECT symbol = 'old_fn' FROM site WHERE id = 2"), 1);
        assert_int_equal(store_sites(s, process_id(s, 701), 0, UINT64_MAX, -1, 10, &sites, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_site(&sites[0], &now, 1);
        site_counts_free(sites, n);
        store_free(s);
        (void) state;
}

int main(int argc, char *argv[]) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_migrate_embedded),
                cmocka_unit_test(test_migrate_stepwise_and_atomic),
                cmocka_unit_test(test_migrate_refuses_newer),
                cmocka_unit_test(test_migrate_foreign_keys),
                cmocka_unit_test(test_migrate_fixture_v1),
                cmocka_unit_test(test_migrate_fixture_v2),
                cmocka_unit_test(test_flush_top_history),
                cmocka_unit_test(test_traps),
                cmocka_unit_test(test_list_filters),
                cmocka_unit_test(test_rollup_and_retention),
                cmocka_unit_test(test_history_interval_across_tiers),
                cmocka_unit_test(test_rollup_marks_inside_intervals),
                cmocka_unit_test(test_rollup_span_grows_over_gaps),
                cmocka_unit_test(test_maintain_folds_only_what_it_needs),
                cmocka_unit_test(test_gone_processes_hourly),
                cmocka_unit_test(test_process_row_writes),
                cmocka_unit_test(test_killed_keeps_committed_ticks),
                cmocka_unit_test(test_reader),
                cmocka_unit_test(test_checkpoint_handler),
                cmocka_unit_test(test_reader_sees_pending_ticks),
                cmocka_unit_test(test_top_reads_pending),
                cmocka_unit_test(test_top_filters),
                cmocka_unit_test(test_unit_history),
                cmocka_unit_test(test_sites),
                cmocka_unit_test(test_sites_tiers),
                cmocka_unit_test(test_site_versions),
                cmocka_unit_test(test_migrate_v7_sites),
        };
        if (argc != 2) {
                fprintf(stderr, "usage: test-store FIXTURE-DIR\n");
                return 2;
        }
        fixture_dir = argv[1];
        return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
