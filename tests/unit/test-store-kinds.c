/* SPDX-License-Identifier: MIT */
/* The store's kinds of counts (daemon/store-kind.h): each descriptor matches the migrated schema,
 * and roll-up, expiry and the size cap keep every kind's sums exact. Also a kind the schema does
 * not have, to show the SQL is made from the descriptor alone. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "unit-store.h"
#include "unit-tmpdir.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "store-kind.h"
#include "store-read.h"
#include "store.h"

#define S UINT64_C(1000000)
#define H (3600 * S)

DEFINE_TEST_TMPDIR("test-store-kinds");

static void db_path(const char *name, char *buf, size_t size) {
        snprintf(buf, size, "%s/%s", tmpdir, name);
}

static sqlite3 *open_db(const char *name) {
        char path[256];
        sqlite3 *db;

        db_path(name, path, sizeof(path));
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        return db;
}

static void exec(sqlite3 *db, const char *sql) {
        char *err = NULL;

        if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
                fail_msg("%s: %s", sql, err);
}

static int64_t query_int(sqlite3 *db, const char *fmt, ...) {
        char *sql;
        sqlite3_stmt *st;
        va_list ap;
        int64_t v;

        va_start(ap, fmt);
        assert_true(vasprintf(&sql, fmt, ap) >= 0);
        va_end(ap);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
                fail_msg("%s: %s", sql, sqlite3_errmsg(db));
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        free(sql);
        return v;
}

static bool named(const StoreKind *k, const char *column) {
        char buf[STORE_COLUMN_MAX];

        if (strcmp(column, "process_id") == 0 || strcmp(column, "time_usec") == 0)
                return true;
        for (size_t i = 0; i < store_kind_n_keys(k); i++)
                if (strcmp(k->keys[i], column) == 0)
                        return true;
        for (size_t i = 0; i < store_kind_n_values(k); i++)
                if (strcmp(store_kind_value(k, i, buf), column) == 0)
                        return true;
        return false;
}

/* Every descriptor's table of every tier exists with exactly the columns it names, and the key
 * (process_id, time_usec, keys...) is its primary key, which the upserts' ON CONFLICT need. Every
 * table of counts in the schema belongs to a kind: one a migration adds without a descriptor
 * would be neither rolled up nor expired. */
static void test_kinds_match_the_schema(void **state) {
        sqlite3 *db = open_db("schema.db");
        sqlite3_stmt *st;
        size_t tables = 0;

        assert_int_equal(store_migrate(db, embedded_migrations, embedded_migrations_count),
                         (int) embedded_migrations_count);
        for (int k = 0; k < _STORE_KIND_MAX; k++) {
                const StoreKind *kind = &store_kinds[k];
                size_t n_keys = store_kind_n_keys(kind), n_values = store_kind_n_values(kind);

                assert_non_null(kind->name);
                assert_true(n_values > 0);
                /* Both or neither: what is written from a Traps is read back into one. */
                assert_true(!kind->traps_next == !kind->traps_add);
                for (int t = 0; t < _TIER_MAX; t++) {
                        char sql[256], buf[STORE_COLUMN_MAX];
                        size_t columns = 0;

                        assert_non_null(kind->tables[t]);
                        assert_int_equal(query_int(db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' "
                                                        "AND name = '%s'", kind->tables[t]), 1);
                        snprintf(sql, sizeof(sql), "SELECT name, pk FROM pragma_table_info('%s')", kind->tables[t]);
                        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
                        while (sqlite3_step(st) == SQLITE_ROW) {
                                const char *name = (const char *) sqlite3_column_text(st, 0);
                                int pk = sqlite3_column_int(st, 1);

                                if (!named(kind, name))
                                        fail_msg("%s.%s is not in the descriptor", kind->tables[t], name);
                                if (strcmp(name, "process_id") == 0)
                                        assert_int_equal(pk, 1);
                                else if (strcmp(name, "time_usec") == 0)
                                        assert_int_equal(pk, 2);
                                else
                                        for (size_t i = 0; i < n_keys; i++)
                                                if (strcmp(name, kind->keys[i]) == 0)
                                                        assert_int_equal(pk, 3 + (int) i);
                                columns++;
                        }
                        sqlite3_finalize(st);
                        /* Each named column was found once: none is missing. */
                        assert_int_equal(columns, 2 + n_keys + n_values);
                        for (size_t i = 0; i < n_values; i++)
                                assert_int_equal(query_int(db, "SELECT pk FROM pragma_table_info('%s') "
                                                               "WHERE name = '%s'",
                                                           kind->tables[t], store_kind_value(kind, i, buf)),
                                                 0);
                        tables++;
                }
        }

        /* The processes' totals, which Top ranks by: a column for each of the sample kind's values
         * (each a sort key), all the same. */
        {
                const StoreKind *sample = &store_kinds[STORE_KIND_SAMPLE];
                char buf[STORE_COLUMN_MAX];

                for (size_t i = 0; i < store_kind_n_values(sample); i++)
                        assert_int_equal(query_int(db, "SELECT COUNT(*) FROM pragma_table_info('process_total') "
                                                       "WHERE name = '%s'",
                                                   store_kind_value(sample, i, buf)),
                                         1);
                assert_int_equal(query_int(db, "SELECT COUNT(*) FROM pragma_table_info('process_total')"),
                                 (int64_t) (2 + store_kind_n_values(sample)));
        }

        /* The tables that are not counts: processes, their totals and pid namespaces, the tiers'
         * marks, the pending ticks and their fold's progress, the site kind's dictionaries. */
        assert_int_equal(query_int(db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' "
                                       "AND name NOT IN ('process', 'process_total', 'process_pidns', 'tier', "
                                       "'sample_pending', 'pending_fold', 'object', 'site', 'user_usage')"),
                         (int64_t) tables);
        sqlite3_close(db);
}

/* The store reads the sample kind's values into a Faults by fault_fields: the columns are those
 * members, in that order, and then the traps, the fault time and the time waited on memory. */
static void test_sample_values_are_the_faults(void **state) {
        const StoreKind *k = &store_kinds[STORE_KIND_SAMPLE];
        char buf[STORE_COLUMN_MAX], name[STORE_COLUMN_MAX];

        assert_int_equal(store_kind_n_keys(k), 0);
        assert_int_equal(store_kind_n_values(k), n_fault_fields + 3);
        for (size_t i = 0; i < n_fault_fields; i++) {
                snprintf(name, sizeof(name), "f_%s", fault_fields[i].column);
                assert_string_equal(store_kind_value(k, i, buf), name);
        }
        assert_string_equal(store_kind_value(k, n_fault_fields, buf), "traps");
        assert_string_equal(store_kind_value(k, n_fault_fields + 1, buf), "time_ns");
        assert_string_equal(store_kind_value(k, n_fault_fields + 2, buf), "stall_ns");
        for (int i = 0; i < _STORE_KIND_MAX; i++)
                assert_true(i == STORE_KIND_SAMPLE || !store_kinds[i].fault_values);
}

/* The rows the kinds make of a Traps, added back into an empty one, are that Traps; each row is
 * non-zero. Keys that have no place in a Traps are ignored. */
static void test_traps_rows_round_trip(void **state) {
        Traps t = {}, back = {};
        size_t rows = 0;

        for (unsigned v = 0; v < ELEMENTSOF(t.vector); v += 3)
                t.vector[v] = v + 1;
        t.vector[TRAP_VECTOR_UNKNOWN] = 7;
        for (unsigned sig = 0; sig < FAULT_SIGNALS; sig++)
                for (unsigned slot = sig; slot < SI_CODE_SLOTS; slot += 4)
                        t.signal[sig][slot] = 100 * sig + slot + 1;

        for (int k = 0; k < _STORE_KIND_MAX; k++) {
                const StoreKind *kind = &store_kinds[k];
                int64_t keys[STORE_KIND_MAX_KEYS];
                uint64_t values[STORE_KIND_MAX_VALUES];

                if (!kind->traps_next)
                        continue;
                for (size_t cursor = 0; kind->traps_next(&t, &cursor, keys, values);) {
                        assert_true(values[0] > 0);
                        kind->traps_add(&back, keys, values);
                        rows++;
                }
                /* Done is done. */
                {
                        size_t cursor = SIZE_MAX / 2;
                        assert_false(kind->traps_next(&t, &cursor, keys, values));
                }
        }
        assert_true(memcmp(&t, &back, sizeof(t)) == 0);
        assert_true(rows > 10);

        /* A vector or a signal a Traps has no slot for. */
        store_kinds[STORE_KIND_TRAP].traps_add(&back, (int64_t[]) { TRAP_VECTOR_UNKNOWN + 1 }, (uint64_t[]) { 5 });
        store_kinds[STORE_KIND_TRAP].traps_add(&back, (int64_t[]) { -1 }, (uint64_t[]) { 5 });
        store_kinds[STORE_KIND_SIGNAL].traps_add(&back, (int64_t[]) { SIGKILL, 1 }, (uint64_t[]) { 5 });
        assert_true(memcmp(&t, &back, sizeof(t)) == 0);
        /* An si_code without a slot of its own is counted as "other". */
        store_kinds[STORE_KIND_SIGNAL].traps_add(&back, (int64_t[]) { SIGSEGV, 999 }, (uint64_t[]) { 5 });
        assert_int_equal(back.signal[fault_signal_index(SIGSEGV)][SI_CODE_SLOT_OTHER],
                         t.signal[fault_signal_index(SIGSEGV)][SI_CODE_SLOT_OTHER] + 5);
}

static int64_t rows_of(sqlite3 *db, const StoreKind *k, int tier) {
        return query_int(db, "SELECT COUNT(*) FROM %s", k->tables[tier]);
}

/* The site kind: the keys store-sites.c binds, in that order, and one value; not part of a Traps,
 * so nothing that makes or reads a Traps touches it. */
static void test_site_kind(void **state) {
        static const char *const keys[] = { "kind", "vector", "period", "site_id", "memory", "memory_object_id" };
        const StoreKind *k = &store_kinds[STORE_KIND_SITE];
        char buf[STORE_COLUMN_MAX];

        assert_string_equal(k->name, "site");
        assert_string_equal(k->tables[TIER_RAW], "site_raw");
        assert_string_equal(k->tables[TIER_MINUTE], "site_minute");
        assert_string_equal(k->tables[TIER_HOUR], "site_hour");
        assert_true(STORE_KIND_MAX_KEYS >= ELEMENTSOF(keys));
        assert_int_equal(store_kind_n_keys(k), ELEMENTSOF(keys));
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                assert_string_equal(k->keys[i], keys[i]);
        assert_int_equal(store_kind_n_values(k), 2);
        assert_string_equal(store_kind_value(k, 0, buf), "count");
        assert_string_equal(store_kind_value(k, 1, buf), "time_ns");
        assert_false(k->fault_values);
        assert_null(k->traps_next);
        assert_null(k->traps_add);
}

/* In every kind with keys, rows that differ in one key column only are summed apart: the roll-up
 * groups by the whole key, whichever column it is that differs. Two minutes of raw rows: the
 * base key and, for each key column, the base with that column alone changed. */
static void test_roll_up_sums_per_key(void **state) {
        const uint64_t t0 = 1700000000000000ULL - 1700000000000000ULL % H;
        sqlite3 *db = open_db("keys.db");
        int64_t process;

        assert_int_equal(store_migrate(db, embedded_migrations, embedded_migrations_count),
                         (int) embedded_migrations_count);
        exec(db, "INSERT INTO process (boot_id, pid, start_time, comm, uid, first_seen_usec, last_seen_usec) "
                 "VALUES ('boot-1', 1, 1, 'a', 0, 0, 0)");
        process = sqlite3_last_insert_rowid(db);
        for (int k = 0; k < _STORE_KIND_MAX; k++) {
                const StoreKind *kind = &store_kinds[k];
                size_t n_keys = store_kind_n_keys(kind), n_values = store_kind_n_values(kind);
                char *sql, buf[STORE_COLUMN_MAX];
                sqlite3_stmt *st;

                if (n_keys == 0)
                        continue;
                sql = store_kind_upsert(kind, TIER_RAW);
                assert_non_null(sql);
                assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
                free(sql);
                /* Variant 0: the base key 10, 11, ...; variant j + 1: key column j one more. */
                for (size_t v = 0; v <= n_keys; v++)
                        for (uint64_t b = 0; b < 12; b++) {
                                sqlite3_bind_int64(st, 1, process);
                                sqlite3_bind_int64(st, 2, (int64_t) (t0 + b * 10 * S));
                                for (size_t i = 0; i < n_keys; i++)
                                        sqlite3_bind_int64(st, 3 + (int) i, (int64_t) (10 + i + (v == i + 1)));
                                for (size_t i = 0; i < n_values; i++)
                                        sqlite3_bind_int64(st, 3 + (int) (n_keys + i), (int64_t) (v * 100 + b + 1));
                                assert_int_equal(sqlite3_step(st), SQLITE_DONE);
                                sqlite3_reset(st);
                        }
                sqlite3_finalize(st);

                sql = store_kind_roll_up(kind, TIER_MINUTE, t0, t0 + 120 * S);
                assert_non_null(sql);
                exec(db, sql);
                free(sql);
                assert_int_equal(rows_of(db, kind, TIER_MINUTE), 2 * (int64_t) (n_keys + 1));
                for (size_t v = 0; v <= n_keys; v++)
                        for (uint64_t m = 0; m < 2; m++) {
                                char *where = NULL;
                                size_t size = 0;
                                FILE *f = open_memstream(&where, &size);

                                assert_non_null(f);
                                fprintf(f, "process_id = %" PRId64 " AND time_usec = %" PRIu64, process,
                                        t0 + m * 60 * S);
                                for (size_t i = 0; i < n_keys; i++)
                                        fprintf(f, " AND %s = %zu", kind->keys[i], 10 + i + (v == i + 1));
                                assert_int_equal(fclose(f), 0);
                                /* Buckets 6m .. 6m + 5 of v * 100 + b + 1. */
                                assert_int_equal(query_int(db, "SELECT %s FROM %s WHERE %s",
                                                           store_kind_value(kind, 0, buf), kind->tables[TIER_MINUTE],
                                                           where),
                                                 (int64_t) (6 * v * 100 + 36 * m + 21));
                                free(where);
                        }
        }
        sqlite3_close(db);
}

/* Raw rows of every kind for two processes over [t0, t0 + hours): one row per bucket and key,
 * three keys per bucket for kinds with keys; values that differ by row and column. Written with
 * the store's own raw upsert, each row twice, so that the upsert adds. Returns the first process
 * id. */
static int64_t fill_raw(sqlite3 *db, const StoreKind *kinds, size_t n_kinds, uint64_t t0, unsigned hours) {
        int64_t first;

        char *insert;

        /* Seen as the store would have: from t0 to the start of the last bucket. */
        assert_true(asprintf(&insert,
                             "INSERT INTO process (boot_id, pid, start_time, comm, uid, first_seen_usec, last_seen_usec) "
                             "VALUES ('boot-1', 1, 1, 'a', 0, %1$" PRIu64 ", %2$" PRIu64 "), "
                             "('boot-1', 2, 1, 'b', 0, %1$" PRIu64 ", %2$" PRIu64 ")",
                             t0, t0 + hours * H - 10 * S) >= 0);
        exec(db, "BEGIN");
        exec(db, insert);
        free(insert);
        first = sqlite3_last_insert_rowid(db) - 1;
        for (size_t k = 0; k < n_kinds; k++) {
                const StoreKind *kind = &kinds[k];
                size_t n_keys = store_kind_n_keys(kind), n_values = store_kind_n_values(kind);
                char *sql = store_kind_upsert(kind, TIER_RAW);
                sqlite3_stmt *st;

                assert_non_null(sql);
                if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
                        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
                for (uint64_t b = 0; b < hours * 360; b++)
                        for (int64_t p = first; p < first + 2; p++)
                                for (unsigned m = 0; m < (n_keys ? 3 : 1); m++)
                                        for (int twice = 0; twice < 2; twice++) {
                                                sqlite3_bind_int64(st, 1, p);
                                                sqlite3_bind_int64(st, 2, (int64_t) (t0 + b * 10 * S));
                                                for (size_t i = 0; i < n_keys; i++)
                                                        sqlite3_bind_int64(st, 3 + (int) i, (int64_t) (m + i));
                                                for (size_t i = 0; i < n_values; i++) {
                                                        uint64_t v = (b * 7 + i * 3 + m + k) % 11 + 1;

                                                        sqlite3_bind_int64(st, 3 + (int) (n_keys + i), (int64_t) v);
                                                }
                                                assert_int_equal(sqlite3_step(st), SQLITE_DONE);
                                                sqlite3_reset(st);
                                        }
                sqlite3_finalize(st);
                free(sql);
        }
        exec(db, "COMMIT");
        return first;
}

/* Rows of the kind's table of tier that are not the raw rows before `until` summed per process,
 * interval of that tier and key, and the other way round; and how many rows the tier has. */
static int64_t roll_up_mismatches(sqlite3 *db, const StoreKind *k, int tier, uint64_t until, int64_t *ret_rows) {
        uint64_t w = tier_width_usec[tier];
        char *keys = store_kind_join_keys(k, ", %1$s", ""), *values = store_kind_join_values(k, "%1$s", ", "),
             *sums = store_kind_join_merges(k, "SUM(%1$s)", "MAX(%1$s)", ", "), *summed, *rows;
        int64_t n;

        assert_true(keys && values && sums);
        assert_true(asprintf(&summed,
                             "SELECT process_id, (time_usec / %" PRIu64 ") * %" PRIu64 " AS t%s, %s FROM %s "
                             "WHERE time_usec < %" PRIu64 " GROUP BY process_id, t%s",
                             w, w, keys, sums, k->tables[TIER_RAW], until, keys) >= 0);
        assert_true(asprintf(&rows, "SELECT process_id, time_usec%s, %s FROM %s", keys, values, k->tables[tier]) >= 0);
        n = query_int(db,
                      "SELECT (SELECT COUNT(*) FROM (%1$s EXCEPT %2$s)) + (SELECT COUNT(*) FROM (%2$s EXCEPT %1$s))",
                      summed, rows);
        *ret_rows = query_int(db, "SELECT COUNT(*) FROM %s", k->tables[tier]);
        free(keys);
        free(values);
        free(sums);
        free(summed);
        free(rows);
        return n;
}

/* Two hours of every kind: maintenance sums each into minutes and hours exactly (every row of
 * the coarser tier is the sum of its raw rows, per key), then deletes each kind by age, tier by
 * tier. */
static void test_roll_up_and_expiry_of_each_kind(void **state) {
        const uint64_t t0 = 1700000000000000ULL - 1700000000000000ULL % H;
        StoreRetention r = STORE_RETENTION_DEFAULT;
        char path[256];
        sqlite3 *db;
        Store *s;

        db_path("kinds.db", path, sizeof(path));
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        db = open_db("kinds.db");
        fill_raw(db, store_kinds, _STORE_KIND_MAX, t0, 2);

        /* Three hours on: everything is in complete minutes and hours; the default retention
         * keeps all of it. */
        r.batch_rows = 200; /* several batches */
        maintain_until_done(s, t0 + 3 * H, &r);
        for (int k = 0; k < _STORE_KIND_MAX; k++) {
                const StoreKind *kind = &store_kinds[k];
                unsigned keys = store_kind_n_keys(kind) ? 3 : 1;
                int64_t rows;

                assert_int_equal(rows_of(db, kind, TIER_RAW), 2 * 720 * keys);
                assert_int_equal(roll_up_mismatches(db, kind, TIER_MINUTE, INT64_MAX, &rows), 0);
                assert_int_equal(rows, 2 * 120 * keys);
                assert_int_equal(roll_up_mismatches(db, kind, TIER_HOUR, INT64_MAX, &rows), 0);
                assert_int_equal(rows, 2 * 2 * keys);
        }

        /* Raw kept 1 h, minutes 2 h: at t0 + 4 h both are past the two hours written, and the
         * next coarser tier has them. Hours stay, their sums unchanged. */
        r.raw_usec = H;
        r.minute_usec = 2 * H;
        maintain_until_done(s, t0 + 4 * H, &r);
        for (int k = 0; k < _STORE_KIND_MAX; k++) {
                const StoreKind *kind = &store_kinds[k];

                assert_int_equal(rows_of(db, kind, TIER_RAW), 0);
                assert_int_equal(rows_of(db, kind, TIER_MINUTE), 0);
                assert_int_equal(rows_of(db, kind, TIER_HOUR), 2 * 2 * (store_kind_n_keys(kind) ? 3 : 1));
        }
        assert_int_equal(query_int(db, "SELECT kept_from_usec FROM tier WHERE name = 'raw'"),
                         (int64_t) (t0 + 3 * H));
        assert_int_equal(query_int(db, "SELECT kept_from_usec FROM tier WHERE name = 'minute'"),
                         (int64_t) (t0 + 2 * H));

        /* Hours kept 10 days: 11 days on, nothing of any kind is left. */
        r.hour_usec = 240 * H;
        maintain_until_done(s, t0 + 11 * 24 * H, &r);
        for (int k = 0; k < _STORE_KIND_MAX; k++)
                for (int t = 0; t < _TIER_MAX; t++)
                        assert_int_equal(rows_of(db, &store_kinds[k], t), 0);

        sqlite3_close(db);
        store_free(s);
}

/* Over the size cap, a step takes the oldest interval of the user holding the most, in every kind
 * and tier and of each of their processes: the hour its oldest row is in, once the hour tier has
 * it, so that what is left of a process is whole in every tier. The processes, last seen after
 * it, stay. */
static void test_size_cap_cuts_every_kind(void **state) {
        const uint64_t t0 = 1700000000000000ULL - 1700000000000000ULL % H;
        StoreRetention r = STORE_RETENTION_DEFAULT;
        int64_t after[_STORE_KIND_MAX][_TIER_MAX][2], usage, first;
        char path[256];
        sqlite3 *db;
        bool more;
        Store *s;

        db_path("cap.db", path, sizeof(path));
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        db = open_db("cap.db");
        first = fill_raw(db, store_kinds, _STORE_KIND_MAX, t0, 2);
        /* "Now" in the middle: the second hour is not rolled up. */
        maintain_until_done(s, t0 + H, &r);
        for (int k = 0; k < _STORE_KIND_MAX; k++)
                for (int t = 0; t < _TIER_MAX; t++)
                        for (int p = 0; p < 2; p++) {
                                after[k][t][p] = query_int(db,
                                                           "SELECT COUNT(*) FROM %s WHERE process_id = %" PRId64
                                                           " AND time_usec >= %" PRIu64,
                                                           store_kinds[k].tables[t], first + p, t0 + H);
                                assert_true(query_int(db, "SELECT COUNT(*) FROM %s WHERE process_id = %" PRId64,
                                                      store_kinds[k].tables[t], first + p) > after[k][t][p]);
                        }
        usage = query_int(db, "SELECT bytes FROM user_usage WHERE uid = 0");

        r.max_bytes = 1;
        r.batch_rows = 100;
        r.cap_slice_usec = 0; /* one step does all that, however slow the machine */
        assert_int_equal(store_maintain(s, t0 + H, &r, &more), 0);
        assert_true(more);
        for (int k = 0; k < _STORE_KIND_MAX; k++)
                for (int t = 0; t < _TIER_MAX; t++)
                        for (int p = 0; p < 2; p++) {
                                assert_int_equal(query_int(db, "SELECT COUNT(*) FROM %s WHERE process_id = %" PRId64
                                                               " AND time_usec < %" PRIu64,
                                                           store_kinds[k].tables[t], first + p, t0 + H),
                                                 0);
                                assert_int_equal(query_int(db, "SELECT COUNT(*) FROM %s WHERE process_id = %" PRId64,
                                                           store_kinds[k].tables[t], first + p),
                                                 after[k][t][p]);
                        }
        assert_int_equal(query_int(db, "SELECT COUNT(*) FROM process"), 2);
        assert_true(query_int(db, "SELECT bytes FROM user_usage WHERE uid = 0") < usage);
        sqlite3_close(db);
        store_free(s);
        (void) state;
}

/* Every table of every kind grows with a user's processes: each is charged to the user's share
 * of the size cap (user_usage), on insert and on delete, a row of the kind adding what deleting
 * it takes back. */
static void test_every_kind_counts_in_the_shares(void **state) {
        char path[256];
        sqlite3 *db;
        Store *s;

        db_path("usage.db", path, sizeof(path));
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        db = open_db("usage.db");
        exec(db, "INSERT INTO process (id, boot_id, pid, start_time, comm, uid, first_seen_usec, last_seen_usec, exited) "
                 "VALUES (4242, 'boot-1', 4242, 1, 'x', 1000, 1, 1, 0)");
        for (int k = 0; k < _STORE_KIND_MAX; k++)
                for (int t = 0; t < _TIER_MAX; t++) {
                        const char *table = store_kinds[k].tables[t];
                        int64_t before = query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1000"), after;

                        assert_int_equal(query_int(db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND "
                                                       "tbl_name = '%s' AND name IN ('usage_%s_insert', 'usage_%s_delete')",
                                                   table, table, table),
                                         2);
                        _cleanup_free_ char *keys = store_kind_join_keys(&store_kinds[k], ", %1$s", ""),
                                            *ones = store_kind_join_keys(&store_kinds[k], ", 1", ""),
                                            *values = store_kind_join_values(&store_kinds[k], "%1$s", ", "),
                                            *value_ones = store_kind_join_values(&store_kinds[k], "1", ", "),
                                            *insert = NULL, *delete = NULL;

                        /* A row of 1s. */
                        assert_true(keys && ones && values && value_ones);
                        assert_true(asprintf(&insert, "INSERT INTO %s (process_id, time_usec%s, %s) VALUES (4242, 1%s, %s)",
                                             table, keys, values, ones, value_ones) >= 0);
                        assert_true(asprintf(&delete, "DELETE FROM %s WHERE process_id = 4242", table) >= 0);
                        exec(db, insert);
                        after = query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1000");
                        assert_true(after > before);
                        exec(db, delete);
                        assert_int_equal(query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1000"), before);
                }
        sqlite3_close(db);
        store_free(s);
        (void) state;
}

/* A process's total (process_total, Top's ranking) grows with a user's processes too: charged to
 * its user's share when the writer first folds a count of the process, moved with the process's
 * uid, taken back when the process is deleted (its total with it, by the foreign key). */
static void test_totals_count_in_the_shares(void **state) {
        ProcessInfo p = { .pid = 4343, .start_time = 1, .comm = "t", .uid = 1001, .first_seen_usec = 1 };
        const uint64_t t0 = 1700000000000000ULL;
        int64_t empty, counted;
        char path[256];
        sqlite3 *db;
        Store *s;

        db_path("usage-totals.db", path, sizeof(path));
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        db = open_db("usage-totals.db");
        assert_int_equal(store_flush(s, t0, (ProcessSample[]) { { &p } }, 1), 0);
        empty = query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1001");
        /* A count, folded by the tick of the next minute. */
        assert_int_equal(store_flush(s, t0 + 1000000, (ProcessSample[]) { { &p, (Faults) { .user = 3 } } }, 1), 0);
        assert_int_equal(store_flush(s, t0 + 60000000, (ProcessSample[]) { { &p } }, 1), 0);
        assert_int_equal(query_int(db, "SELECT f_user FROM process_total"), 3);
        counted = query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1001");
        /* The raw row (64) and the total (200). */
        assert_int_equal(counted - empty, 64 + 200);

        exec(db, "UPDATE process SET uid = 1002 WHERE pid = 4343");
        assert_int_equal(query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1001"), 64);
        assert_int_equal(query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1002"), counted - 64);
        exec(db, "UPDATE process SET uid = 1001 WHERE pid = 4343");
        assert_int_equal(query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1001"), counted);
        assert_int_equal(query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1002"), 0);
        exec(db, "PRAGMA foreign_keys = ON");
        exec(db, "DELETE FROM sample_raw");
        exec(db, "DELETE FROM process");
        assert_int_equal(query_int(db, "SELECT COUNT(*) FROM process_total"), 0);
        assert_int_equal(query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1001"), 0);
        sqlite3_close(db);
        store_free(s);
        (void) state;
}

/* What a container's process adds grows with a user's processes too: its pid namespace rows (32
 * bytes for each level below the initial one, at most 3) and its container's text, charged when
 * the row is written or learns them, taken back with the process. */
static void test_containers_count_in_the_shares(void **state) {
        Container c = { .runtime = "docker", .id = "0123456789abcdef", .name = "", .user = UINT32_MAX };
        ProcessInfo host = { .pid = 4444, .start_time = 1, .comm = "h", .uid = 1003, .first_seen_usec = 1,
                             .n_pidns = 1, .pidns = { { 4026531836U, 4444 } } };
        ProcessInfo boxed = { .pid = 4445, .start_time = 1, .comm = "b", .uid = 1004, .first_seen_usec = 1 };
        const uint64_t t0 = 1700000000000000ULL;
        char path[256];
        sqlite3 *db;
        Store *s;

        db_path("usage-containers.db", path, sizeof(path));
        assert_int_equal(store_open(path, "boot-1", &s), 0);
        db = open_db("usage-containers.db");
        assert_int_equal(store_flush(s, t0, (ProcessSample[]) { { &host }, { &boxed } }, 2), 0);
        assert_int_equal(query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1003"), 200);
        assert_int_equal(query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1004"), 200);
        /* Seen again with its namespaces (levels 0, 1, 2) and its container: two rows, 16 bytes. */
        boxed.n_pidns = 3;
        boxed.pidns_level = 2;
        boxed.pidns[0] = (PidNsPid) { 4026531836U, 4445 };
        boxed.pidns[1] = (PidNsPid) { 4026532175U, 17 };
        boxed.pidns[2] = (PidNsPid) { 4026532300U, 1 };
        boxed.container = &c;
        assert_int_equal(store_flush(s, t0 + 1000000, (ProcessSample[]) { { &boxed } }, 1), 0);
        assert_int_equal(query_int(db, "SELECT COUNT(*) FROM process_pidns"), 2);
        assert_int_equal(query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1004"), 200 + 2 * 32 + 16);
        assert_int_equal(query_int(db, "SELECT ns_pid FROM process WHERE pid = 4445"), 1);
        /* The host process has no rows of its own: its namespace is the initial one. */
        assert_int_equal(query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1003"), 200);
        exec(db, "PRAGMA foreign_keys = ON");
        exec(db, "DELETE FROM process");
        assert_int_equal(query_int(db, "SELECT COUNT(*) FROM process_pidns"), 0);
        assert_int_equal(query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1004"), 0);
        assert_int_equal(query_int(db, "SELECT bytes FROM user_usage WHERE uid = 1003"), 0);
        sqlite3_close(db);
        store_free(s);
        (void) state;
}

/* A kind the store does not have, with two keys and two values, on tables made as a migration
 * would: the raw upsert, roll-up, expiry, the union and the sums come from the descriptor. */
static const StoreKind example = {
        .name = "example",
        .tables = { "example_raw", "example_minute", "example_hour" },
        .keys = { "address", "kind" },
        .values = { "faults", "pages" },
};

/* What read_kind() handed over of the example kind. */
typedef struct ExampleSums {
        size_t rows;
        int64_t faults, pages;
} ExampleSums;

static void add_example_row(const StoreKind *kind, int64_t group, const int64_t *keys, const uint64_t *values,
                            void *userdata) {
        ExampleSums *sums = userdata;

        assert_ptr_equal(kind, &example);
        assert_true(group > 0);
        assert_int_equal(keys[1], keys[0] + 1); /* as fill_raw() wrote them */
        sums->rows++;
        sums->faults += (int64_t) values[0];
        sums->pages += (int64_t) values[1];
}

/* The recipe of docs/ARCHITECTURE.md ("A kind of stored data") followed for a kind that exists
 * only here: its tables as its migration would make them, its descriptor, rows written with the
 * raw upsert store.c prepares for every kind, rolled up and expired as maintenance does, and read
 * as the query families read a kind, through read_kind() of the read layer. */
static void test_a_new_kind_is_a_descriptor(void **state) {
        const uint64_t t0 = 1700000000000000ULL - 1700000000000000ULL % H;
        sqlite3 *db = open_db("example.db");
        char *sql, *u;
        int64_t rows;

        assert_int_equal(store_migrate(db, embedded_migrations, embedded_migrations_count),
                         (int) embedded_migrations_count);
        for (int t = 0; t < _TIER_MAX; t++) {
                assert_true(asprintf(&sql,
                                     "CREATE TABLE %s (process_id INTEGER NOT NULL REFERENCES process (id), "
                                     "time_usec INTEGER NOT NULL, address INTEGER NOT NULL, kind INTEGER NOT NULL, "
                                     "faults INTEGER NOT NULL DEFAULT 0, pages INTEGER NOT NULL DEFAULT 0, "
                                     "PRIMARY KEY (process_id, time_usec, address, kind)) WITHOUT ROWID",
                                     example.tables[t]) >= 0);
                exec(db, sql);
                free(sql);
        }
        fill_raw(db, &example, 1, t0, 1);

        for (int t = TIER_MINUTE; t < _TIER_MAX; t++) {
                sql = store_kind_roll_up(&example, t, t0, t0 + H);
                assert_non_null(sql);
                exec(db, sql);
                free(sql);
                assert_int_equal(roll_up_mismatches(db, &example, t, INT64_MAX, &rows), 0);
                assert_int_equal(rows, 2 * (t == TIER_MINUTE ? 60 : 1) * 3);
        }

        /* The last 30 min from raw, summed per process and key, equal those of the minutes. */
        {
                TierSegment raw = { TIER_RAW, t0 + H / 2, t0 + H }, minute = { TIER_MINUTE, t0 + H / 2, t0 + H };
                char *a, *b, *ua, *ub;

                ua = store_kind_union(&example, &raw, 1, "process_id > 0");
                ub = store_kind_union(&example, &minute, 1, "process_id > 0");
                assert_true(ua && ub);
                a = store_kind_sum(&example, "process_id", ua);
                b = store_kind_sum(&example, "process_id", ub);
                assert_true(a && b);
                assert_int_equal(query_int(db, "SELECT COUNT(*) FROM (%s)", a), 2 * 3);
                assert_int_equal(query_int(db, "SELECT COUNT(*) FROM (%s EXCEPT %s)", a, b), 0);
                assert_int_equal(query_int(db, "SELECT COUNT(*) FROM (%s EXCEPT %s)", b, a), 0);
                assert_int_equal(query_int(db, "SELECT SUM(\"SUM(pages)\") FROM (%s)", a),
                                 query_int(db, "SELECT SUM(pages) FROM example_raw WHERE time_usec >= %" PRIu64,
                                           t0 + H / 2));
                free(a);
                free(b);
                free(ua);
                free(ub);
        }
        /* Read as the families read a kind: the first half hour from raw, the second from the
         * minutes, summed per process and key, from the descriptor alone. */
        {
                TierSegment seg[] = { { TIER_RAW, t0, t0 + H / 2 }, { TIER_MINUTE, t0 + H / 2, t0 + H } };
                ExampleSums sums = {};
                char path[256];
                Store *s;

                db_path("example.db", path, sizeof(path));
                assert_int_equal(store_open_reader(path, "boot-1", &s), 0);
                assert_int_equal(read_kind(s, &example, seg, ELEMENTSOF(seg), "process_id", "process_id > ?1", NULL, 0,
                                           add_example_row, &sums),
                                 0);
                store_free(s);
                assert_int_equal(sums.rows, 2 * 3);
                assert_int_equal(sums.faults, query_int(db, "SELECT SUM(faults) FROM example_raw"));
                assert_int_equal(sums.pages, query_int(db, "SELECT SUM(pages) FROM example_raw"));
        }
        /* No segment: no rows, the same columns. */
        u = store_kind_union(&example, NULL, 0, "1");
        assert_non_null(u);
        assert_int_equal(query_int(db, "SELECT COUNT(*) FROM (%s)", u), 0);
        free(u);

        /* Expiry in batches: 100 rows at most each time, oldest first. */
        sql = store_kind_expire(&example, TIER_RAW, t0 + H / 2, 100);
        assert_non_null(sql);
        exec(db, sql);
        assert_int_equal(sqlite3_changes(db), 100);
        while (sqlite3_changes(db) > 0)
                exec(db, sql);
        free(sql);
        assert_int_equal(query_int(db, "SELECT MIN(time_usec) FROM example_raw"), (int64_t) (t0 + H / 2));
        assert_int_equal(rows_of(db, &example, TIER_RAW), 2 * 180 * 3);
        sqlite3_close(db);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kinds_match_the_schema),
                cmocka_unit_test(test_sample_values_are_the_faults),
                cmocka_unit_test(test_traps_rows_round_trip),
                cmocka_unit_test(test_site_kind),
                cmocka_unit_test(test_roll_up_sums_per_key),
                cmocka_unit_test(test_roll_up_and_expiry_of_each_kind),
                cmocka_unit_test(test_size_cap_cuts_every_kind),
                cmocka_unit_test(test_every_kind_counts_in_the_shares),
                cmocka_unit_test(test_totals_count_in_the_shares),
                cmocka_unit_test(test_containers_count_in_the_shares),
                cmocka_unit_test(test_a_new_kind_is_a_descriptor),
        };
        return cmocka_run_group_tests(tests, tmpdir_setup, tmpdir_teardown);
}
