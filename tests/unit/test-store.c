/* SPDX-License-Identifier: MIT */
/* The migration runner and the store's writer: opening, migrating, flushing ticks, the
 * known-process cache, checkpoints, and a reader connection, on real SQLite files. */

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
#include "unit-store-db.h"

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
        assert_int_equal(IN_SNAPSHOT(s, store_history(s, id, 0, UINT64_MAX, STORE_RAW_BUCKET_USEC, &hist, &n)), 0);
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

        /* Top ranks by the totals the migration to version 11 summed from the tiers. */
        {
                StoreRow *rows;
                uint64_t other;

                assert_int_equal(IN_SNAPSHOT(s, store_top(s, 1, "user", 10, -1, NULL, &rows, &n, &other)), 0);
                assert_int_equal(n, 2);
                assert_int_equal(other, 0);
                assert_int_equal(rows[0].process.pid, 100);
                assert_int_equal(rows[0].faults.user, 15);
                assert_int_equal(rows[1].process.pid, 101);
                assert_int_equal(rows[1].faults.user, 2);
                store_rows_free(rows, n);
                assert_int_equal(IN_SNAPSHOT(s, store_top(s, 1, "major", 1, -1, NULL, &rows, &n, &other)), 0);
                assert_int_equal(n, 1);
                assert_int_equal(other, 1);
                assert_int_equal(rows[0].process.pid, 100);
                assert_int_equal(rows[0].faults.major, 1);
                store_rows_free(rows, n);
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

        /* Rows removed behind the store's back (the raw rows and the ticks still pending, which
         * the queries read too) are written again, counts exact. */
        assert_int_equal(history_user(s, 600, 10 * S, NULL), 55 + 3);
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "DELETE FROM sample_raw; DELETE FROM sample_pending", NULL, NULL, NULL),
                         SQLITE_OK);
        flush_one(s, &a, t0 + 13 * S, 5);
        assert_int_equal(history_user(s, 600, 10 * S, NULL), 5);
        assert_int_equal(sqlite3_exec(db, "PRAGMA foreign_keys = ON; DELETE FROM sample_pending; "
                                          "DELETE FROM process WHERE pid = 600", NULL, NULL, NULL),
                         SQLITE_OK);
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

/* Writes a tick with store_flush_part() and max_rows, as the writer does; the sizes of its
 * transactions in order into parts[] (at most 8). */
static size_t flush_parts(Store *s, uint64_t now, const ProcessSample *samples, size_t n, size_t max_rows,
                          size_t parts[static 8]) {
        size_t done = 0, n_parts = 0;

        while (done < n) {
                size_t k = 0;

                assert_int_equal(store_flush_part(s, now, samples + done, n - done, max_rows, &k), 0);
                assert_true(k >= 1 && k <= n - done && n_parts < 8);
                parts[n_parts++] = k;
                done += k;
        }
        return n_parts;
}

/* A tick's transaction ends after max_rows process rows with their text (new processes, a new
 * command line), not after max_rows samples: the samples of rows already written do not count.
 * Counts are exact however the tick was cut. */
static void test_flush_part(void **state) {
        enum { N = 600, CHANGED = 300 };
        const uint64_t S = 1000000, t0 = 1700000000000000ULL;
        ProcessInfo *p = calloc(N, sizeof(*p));
        ProcessSample *samples = calloc(N, sizeof(*samples));
        char path[256], cmdline[N][32];
        size_t parts[8];
        Store *s;

        assert_non_null(p);
        assert_non_null(samples);
        snprintf(path, sizeof(path), "%s/part.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        for (size_t i = 0; i < N; i++) {
                snprintf(cmdline[i], sizeof(cmdline[i]), "worker --n %zu", i);
                p[i] = (ProcessInfo) { .pid = (uint32_t) (2000 + i), .start_time = 7, .comm = "worker", .uid = 1000,
                                       .cmdline = cmdline[i], .first_seen_usec = t0, .last_seen_usec = t0 };
                samples[i] = (ProcessSample) { .process = &p[i], .delta = { .user = 1 } };
        }

        /* New processes: 256 rows a transaction. */
        assert_int_equal(flush_parts(s, t0, samples, N, 256, parts), 3);
        assert_int_equal(parts[0], 256);
        assert_int_equal(parts[1], 256);
        assert_int_equal(parts[2], N - 512);
        /* The same processes a tick later: one transaction. */
        assert_int_equal(flush_parts(s, t0 + S, samples, N, 256, parts), 1);
        assert_int_equal(parts[0], N);
        /* Half of them with a new command line: 256 of those, then the rest with the others. */
        for (size_t i = 0; i < CHANGED; i++)
                snprintf(cmdline[i], sizeof(cmdline[i]), "worker --n %zu --again", i);
        assert_int_equal(flush_parts(s, t0 + 2 * S, samples, N, 256, parts), 2);
        assert_int_equal(parts[0], 256);
        assert_int_equal(parts[1], N - 256);
        /* max_rows 0 still writes one sample a call. */
        for (size_t i = 0; i < 3; i++)
                snprintf(cmdline[i], sizeof(cmdline[i]), "worker --n %zu --third", i);
        assert_int_equal(flush_parts(s, t0 + 3 * S, samples, 3, 0, parts), 3);
        /* All of them exit in one tick: an exit writes its row, so 256 a transaction again. */
        for (size_t i = 0; i < N; i++)
                p[i].exited = true;
        assert_int_equal(flush_parts(s, t0 + 4 * S, samples, N, 256, parts), 3);
        assert_int_equal(parts[0], 256);
        assert_int_equal(parts[1], 256);
        assert_int_equal(parts[2], N - 512);

        for (size_t i = 0; i < N; i += 97) {
                ProcessInfo found = found_process(s, p[i].pid);

                assert_string_equal(found.cmdline, cmdline[i]);
                assert_true(found.exited);
                process_info_done(&found);
                assert_int_equal(history_user(s, p[i].pid, 10 * S, NULL), i < 3 ? 5 : 4);
        }
        store_free(s);
        free(samples);
        free(p);
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

/* A reader sees what the writer committed, the pending ticks once the writer settled them;
 * it cannot write; its progress handler can stop a query. Neither follows a symbolic link. */
static void count_requests(void *userdata, bool force) {
        unsigned *n = userdata;

        n[force]++;
}

/* With a checkpoint handler the writer's commits ask for checkpoints instead of running them,
 * forced ones past the backstop, and past the limit they copy the log themselves, so that a
 * handler that never gets to run leaves the WAL bounded all the same; store_checkpoint() does the
 * work from its own connection and really copies the log (a connection that has read nothing
 * copied nothing, SQLite 3.40), and the WAL file is cut back once the log starts over, to nothing
 * at once by a forced checkpoint. */
static void test_checkpoint_handler(void **state) {
        const uint64_t S = 1000000, t0 = 1700000000000000ULL;
        ProcessInfo a = { .pid = 810, .start_time = 8, .comm = "a", .first_seen_usec = t0, .last_seen_usec = t0 };
        char path[256], missing[256];
        unsigned requests[2] = {};
        uint64_t wal_max = 0;
        int left = -1;
        Store *w;

        snprintf(path, sizeof(path), "%s/checkpoint.db", tmpdir);
        snprintf(missing, sizeof(missing), "%s/missing.db", tmpdir);
        assert_int_equal(store_open(path, "boot-1", &w), 0);
        /* A handler that never checkpoints: the commits past 8 x 4 pages do, and the log starts
         * over after each of them. Without that, 300 commits of about 40 pages each (a new
         * process's row, its total and their indexes) grow it to tens of MiB; with it the file
         * is at most one commit past the limit (its largest here: 132 pages). */
        store_set_checkpoint_handler(w, 4, count_requests, requests);
        for (uint64_t i = 0; i < 300; i++) {
                a.pid = 810 + (uint32_t) i; /* a new process row every tick: pages to write */
                ProcessSample sample = { &a, (Faults) { .user = 10 }, NULL };
                assert_int_equal(store_flush(w, t0 + i * 10 * S, &sample, 1), 0);
                wal_max = MAX(wal_max, file_bytes(path, "-wal"));
        }
        /* Past 4 x 4 pages, forced. */
        assert_true(requests[1] > 0);
        print_message("WAL after 300 commits without the handler's checkpoints: at most %" PRIu64 " KiB\n",
                      wal_max >> 10);
        assert_true(wal_max > 4 * 4096);
        assert_true(wal_max <= 1024 * 1024);

        assert_int_equal(store_checkpoint(path, false, &left), 0);
        assert_int_equal(left, 0);
        /* The next commit starts the log over and cuts the file to 4 pages (and what it wrote). */
        {
                ProcessSample sample = { &a, (Faults) { .user = 10 }, NULL };
                assert_int_equal(store_flush(w, t0 + 301 * 10 * S, &sample, 1), 0);
        }
        print_message("WAL after a checkpoint and a commit: %" PRIu64 " KiB\n", file_bytes(path, "-wal") >> 10);
        assert_true(file_bytes(path, "-wal") <= 64 * 1024);

        for (uint64_t i = 0; i < 3; i++) {
                a.pid = 2000 + (uint32_t) i;
                ProcessSample sample = { &a, (Faults) { .user = 10 }, NULL };
                assert_int_equal(store_flush(w, t0 + (400 + i) * 10 * S, &sample, 1), 0);
        }
        assert_true(file_bytes(path, "-wal") > 0);
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
        assert_int_equal(IN_SNAPSHOT(r, store_top(r, t0, "user", 10, -1, NULL, &rows, &n, NULL)), 0);
        assert_int_equal(n, 1);
        assert_int_equal(rows[0].faults.user, 30);
        store_rows_free(rows, n);
        assert_int_equal(history_user(r, 800, 10 * S, NULL), 30);
        /* Folded into the raw tier (the writer folds what is pending when it closes): the same. */
        store_free(w);
        assert_int_equal(store_open(path, "boot-1", &w), 0);
        assert_int_equal(history_user(r, 800, 10 * S, NULL), 30);

        /* Read-only: a write fails. */
        {
                ProcessSample sample = { &a, (Faults) { .user = 1 }, NULL };
                assert_int_equal(store_flush(r, t0 + 20 * S, &sample, 1), -EROFS);
        }

        store_set_progress_handler(r, 10, count_calls, &calls);
        assert_int_equal(IN_SNAPSHOT(r, store_top(r, 0, "user", 10, -1, NULL, &rows, &n, NULL)), 0);
        store_rows_free(rows, n);
        assert_true(calls > 0);
        store_set_progress_handler(r, 1, stop_at_once, NULL);
        assert_int_equal(IN_SNAPSHOT(r, store_top(r, 0, "user", 10, -1, NULL, &rows, &n, NULL)), -ECANCELED);
        store_set_progress_handler(r, 0, NULL, NULL);
        store_free(r);
        store_free(w);

        snprintf(link_path, sizeof(link_path), "%s/link.db", tmpdir);
        assert_int_equal(symlink(path, link_path), 0);
        assert_int_equal(store_open(link_path, "boot-1", &ignored), -ELOOP);
        assert_int_equal(store_open_reader(link_path, "boot-1", &ignored), -ELOOP);
        assert_null(ignored);
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
        assert_int_equal(IN_SNAPSHOT(s, store_sites(s, process_id(s, 700), 0, UINT64_MAX, SITE_TRAP, 10, &sites, &n,
                                                    NULL)), 0);
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
        assert_int_equal(IN_SNAPSHOT(s, store_sites(s, process_id(s, 701), 0, UINT64_MAX, -1, 10, &sites, &n, NULL)),
                         0);
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
                cmocka_unit_test(test_process_row_writes),
                cmocka_unit_test(test_flush_part),
                cmocka_unit_test(test_killed_keeps_committed_ticks),
                cmocka_unit_test(test_reader),
                cmocka_unit_test(test_checkpoint_handler),
                cmocka_unit_test(test_migrate_v7_sites),
        };
        if (argc != 2) {
                fprintf(stderr, "usage: test-store FIXTURE-DIR\n");
                return 2;
        }
        fixture_dir = argv[1];
        return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
