/* SPDX-License-Identifier: MIT */
#pragma once

/* What the store tests on database files share (test-store*.c). After cmocka.h, unit-store.h
 * and DEFINE_TEST_TMPDIR(). */

static inline Faults make_faults(uint64_t base) {
        Faults f = {};
        for (size_t i = 0; i < n_fault_fields; i++)
                *faults_field(&f, &fault_fields[i]) = base + i;
        return f;
}

static inline int stop_at_once(void *userdata _unused_) {
        return 1;
}

static inline int64_t process_id(Store *s, uint32_t pid) {
        ProcessInfo found;
        int64_t id;

        assert_int_equal(store_find_process(s, pid, 0, &id, &found), 0);
        process_info_done(&found);
        return id;
}

static inline void assert_site(const SiteCount *got, const SiteCount *want, uint64_t count) {
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

static inline int64_t db_count(const char *path, const char *sql) {
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
