/* SPDX-License-Identifier: MIT */
/* store_open_recover() on real files: what is corrupt is moved aside and replaced, what is
 * healthy, newer or unreachable is left alone. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "unit-tmpdir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store-recover.h"

DEFINE_TEST_TMPDIR("test-store-recover");

#define PATH 512

/* 2023-11-14 22:13:20 UTC */
#define NOW_USEC (UINT64_C(1700000000) * 1000000)
#define STAMP "20231114T221320Z"

/* A fresh directory per test, so each can check that nothing else appeared in it. */
static void test_dir(const char *name, char *ret_db, size_t size) {
        snprintf(ret_db, size, "%s/%s", tmpdir, name);
        assert_int_equal(mkdir(ret_db, 0755), 0);
        snprintf(ret_db, size, "%s/%s/trapstat.db", tmpdir, name);
}

static bool exists(const char *path) {
        struct stat st;
        return lstat(path, &st) == 0;
}

static void write_file(const char *path, const void *data, size_t n) {
        FILE *f = fopen(path, "we");

        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, n, f), n);
        assert_int_equal(fclose(f), 0);
}

static size_t read_file(const char *path, char *buf, size_t size) {
        FILE *f = fopen(path, "re");
        size_t n;

        assert_non_null(f);
        n = fread(buf, 1, size, f);
        fclose(f);
        return n;
}

/* Files in the directory of db whose name contains ".corrupt-", but for a -shm: the wal-index
 * SQLite builds when it reads a log is moved along when there is one, and is no evidence. */
static int count_moved(const char *db) {
        char dir[PATH];
        struct dirent *de;
        DIR *d;
        int n = 0;

        snprintf(dir, sizeof(dir), "%s", db);
        *strrchr(dir, '/') = '\0';
        assert_non_null(d = opendir(dir));
        while ((de = readdir(d)))
                n += strstr(de->d_name, ".corrupt-") && !strstr(de->d_name, "-shm");
        closedir(d);
        return n;
}

/* PRAGMA quick_check says "ok" (true), finds damage or cannot read the file (false). */
static bool quick_check_ok(const char *path) {
        sqlite3 *db;
        sqlite3_stmt *st = NULL;
        bool ok = false;

        assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
                ok = strcmp((const char *) sqlite3_column_text(st, 0), "ok") == 0;
        sqlite3_finalize(st);
        sqlite3_close(db);
        return ok;
}

static int64_t query_int(const char *path, const char *sql) {
        sqlite3 *db;
        sqlite3_stmt *st;
        int64_t v;

        assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return v;
}

#define N_PROCESSES 500
#define N_TICKS 4

/* A database written by the store: N_PROCESSES processes with 7 user faults per tick each,
 * in N_TICKS raw buckets, closed so that everything is in the main file. */
static void make_db(const char *path) {
        static ProcessInfo procs[N_PROCESSES];
        static ProcessSample samples[N_PROCESSES];
        char wal[PATH + 4];
        Store *s;

        for (size_t i = 0; i < N_PROCESSES; i++) {
                procs[i] = (ProcessInfo) { .pid = 1000 + (uint32_t) i, .start_time = 5000 + i, .uid = 1000,
                                           .first_seen_usec = NOW_USEC - 3600 * UINT64_C(1000000) };
                snprintf(procs[i].comm, sizeof(procs[i].comm), "proc-%zu", i);
                samples[i] = (ProcessSample) { .process = &procs[i], .delta = { .user = 7, .write = 7 } };
        }
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        for (uint64_t t = 0; t < N_TICKS; t++)
                assert_int_equal(store_flush(s, NOW_USEC - 3600 * UINT64_C(1000000) + t * STORE_RAW_BUCKET_USEC, samples,
                                             N_PROCESSES),
                                 0);
        store_free(s);

        /* Closing the last connection checkpointed the log into the database and removed it. */
        snprintf(wal, sizeof(wal), "%s-wal", path);
        assert_false(exists(wal));
        assert_true(quick_check_ok(path));
}

static void assert_fresh_db(const char *path) {
        assert_true(quick_check_ok(path));
        assert_int_equal(query_int(path, "PRAGMA user_version"), (int64_t) embedded_migrations_count);
        assert_int_equal(query_int(path, "SELECT count(*) FROM process"), 0);
}

static void test_garbage_is_moved_aside(void **state) {
        static const char garbage[] = "this is not a database, just text that happens to be here\n";
        char db[PATH], buf[PATH + 32];
        char *moved = NULL;
        Store *s = NULL;

        test_dir("garbage", db, sizeof(db));
        write_file(db, garbage, sizeof(garbage) - 1);

        assert_int_equal(store_open_recover(db, "boot-1", NOW_USEC, &s, &moved), 0);
        assert_non_null(s);
        assert_non_null(moved);
        snprintf(buf, sizeof(buf), "%s.corrupt-" STAMP, db);
        assert_string_equal(moved, buf);
        store_free(s);

        /* The garbage kept its bytes under the new name; a new database took its place. */
        assert_int_equal(read_file(moved, buf, sizeof(buf)), sizeof(garbage) - 1);
        assert_memory_equal(buf, garbage, sizeof(garbage) - 1);
        assert_int_equal(count_moved(db), 1);
        assert_fresh_db(db);
        free(moved);
}

static void test_corrupt_page_is_moved_aside(void **state) {
        char db[PATH], expected[PATH + 32];
        char *moved = NULL;
        unsigned char header[100], junk[8192];
        uint32_t page_size, x = 12345;
        Store *s = NULL;
        FILE *f;

        test_dir("corrupt-page", db, sizeof(db));
        make_db(db);
        assert_true(query_int(db, "PRAGMA page_count") >= 8);

        /* Pseudo-random bytes from the middle of page 2 to the middle of page 4: page 3, a page
         * of some b-tree, loses its header. Page 1 (the file header, the schema) stays intact. */
        assert_int_equal(read_file(db, (char *) header, sizeof(header)), sizeof(header));
        page_size = (uint32_t) header[16] << 8 | header[17];
        assert_true(page_size * 2 <= sizeof(junk));
        for (size_t i = 0; i < sizeof(junk); i++)
                junk[i] = (unsigned char) ((x = x * 1103515245 + 12345) >> 16);
        assert_non_null(f = fopen(db, "r+e"));
        assert_int_equal(fseek(f, (long) page_size * 3 / 2, SEEK_SET), 0);
        assert_int_equal(fwrite(junk, 1, page_size * 2, f), page_size * 2);
        assert_int_equal(fclose(f), 0);

        /* Still a database, with its schema readable; but quick_check finds the damage. */
        assert_true(query_int(db, "SELECT count(*) FROM sqlite_master") > 0);
        assert_false(quick_check_ok(db));

        assert_int_equal(store_open_recover(db, "boot-1", NOW_USEC, &s, &moved), 0);
        snprintf(expected, sizeof(expected), "%s.corrupt-" STAMP, db);
        assert_string_equal(moved, expected);
        store_free(s);

        assert_false(quick_check_ok(moved));
        assert_int_equal(count_moved(db), 1);
        assert_fresh_db(db);
        free(moved);
}

static void test_healthy_db_is_kept(void **state) {
        char db[PATH];
        char *moved = (char *) "not written";
        Store *s = NULL;

        test_dir("healthy", db, sizeof(db));
        make_db(db);

        assert_int_equal(store_open_recover(db, "boot-1", NOW_USEC, &s, &moved), 0);
        assert_null(moved);
        store_free(s);

        assert_int_equal(count_moved(db), 0);
        assert_int_equal(query_int(db, "SELECT count(*) FROM process"), N_PROCESSES);
        assert_int_equal(query_int(db, "SELECT sum(f_user) FROM sample_raw"), N_PROCESSES * N_TICKS * 7);
        assert_true(quick_check_ok(db));
}

static void test_newer_db_is_not_touched(void **state) {
        char db[PATH];
        char *moved = NULL;
        Store *s = NULL;
        sqlite3 *sq;

        test_dir("newer", db, sizeof(db));
        assert_int_equal(sqlite3_open(db, &sq), SQLITE_OK);
        assert_int_equal(sqlite3_exec(sq, "CREATE TABLE future (x INTEGER); INSERT INTO future VALUES (42); "
                                          "PRAGMA user_version = 99",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
        sqlite3_close(sq);

        assert_int_equal(store_open_recover(db, "boot-1", NOW_USEC, &s, &moved), -EPROTO);
        assert_null(s);
        assert_null(moved);

        assert_int_equal(count_moved(db), 0);
        assert_int_equal(query_int(db, "PRAGMA user_version"), 99);
        assert_int_equal(query_int(db, "SELECT x FROM future"), 42);
}

static void test_missing_directory_is_passed_through(void **state) {
        char db[PATH];
        char *moved = NULL;
        Store *s = NULL;

        snprintf(db, sizeof(db), "%s/no-such-dir/trapstat.db", tmpdir);
        assert_int_equal(store_open_recover(db, "boot-1", NOW_USEC, &s, &moved), -ENOENT);
        assert_null(s);
        assert_null(moved);
}

/* The first free name gets "-1"; the log goes along under the same suffix; what already had
 * the name is not overwritten. */
static void test_taken_name_and_wal_move_together(void **state) {
        char db[PATH], path[PATH + 32], buf[64];
        char *moved = NULL;
        Store *s = NULL;

        test_dir("taken", db, sizeof(db));
        write_file(db, "garbage", 7);
        snprintf(path, sizeof(path), "%s-wal", db);
        write_file(path, "old log", 7);
        snprintf(path, sizeof(path), "%s.corrupt-" STAMP, db);
        write_file(path, "earlier", 7);

        assert_int_equal(store_open_recover(db, "boot-1", NOW_USEC, &s, &moved), 0);
        snprintf(path, sizeof(path), "%s.corrupt-" STAMP "-1", db);
        assert_string_equal(moved, path);
        store_free(s);

        assert_int_equal(read_file(moved, buf, sizeof(buf)), 7);
        assert_memory_equal(buf, "garbage", 7);
        snprintf(path, sizeof(path), "%s.corrupt-" STAMP "-1-wal", db);
        assert_int_equal(read_file(path, buf, sizeof(buf)), 7);
        assert_memory_equal(buf, "old log", 7);
        snprintf(path, sizeof(path), "%s.corrupt-" STAMP, db);
        assert_int_equal(read_file(path, buf, sizeof(buf)), 7);
        assert_memory_equal(buf, "earlier", 7);
        assert_int_equal(count_moved(db), 3);
        assert_fresh_db(db);
        free(moved);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_garbage_is_moved_aside),
                cmocka_unit_test(test_corrupt_page_is_moved_aside),
                cmocka_unit_test(test_healthy_db_is_kept),
                cmocka_unit_test(test_newer_db_is_not_touched),
                cmocka_unit_test(test_missing_directory_is_passed_through),
                cmocka_unit_test(test_taken_name_and_wal_move_together),
        };
        return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
