/* SPDX-License-Identifier: MIT */
#include "store-kind.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "counters.h"
#include "macro.h"

static bool trap_next(const Traps *t, size_t *cursor, int64_t *keys, uint64_t *values) {
        for (size_t v = *cursor; v < ELEMENTSOF(t->vector); v++)
                if (t->vector[v]) {
                        keys[0] = (int64_t) v;
                        values[0] = t->vector[v];
                        *cursor = v + 1;
                        return true;
                }
        *cursor = ELEMENTSOF(t->vector);
        return false;
}

static void trap_add(Traps *t, const int64_t *keys, const uint64_t *values) {
        if (keys[0] >= 0 && (uint64_t) keys[0] < ELEMENTSOF(t->vector))
                t->vector[keys[0]] += values[0];
}

static bool signal_next(const Traps *t, size_t *cursor, int64_t *keys, uint64_t *values) {
        for (size_t i = *cursor; i < FAULT_SIGNALS * SI_CODE_SLOTS; i++) {
                unsigned sig = (unsigned) (i / SI_CODE_SLOTS), slot = (unsigned) (i % SI_CODE_SLOTS);

                if (t->signal[sig][slot]) {
                        keys[0] = fault_signal_number(sig);
                        keys[1] = si_code_of_slot(slot);
                        values[0] = t->signal[sig][slot];
                        *cursor = i + 1;
                        return true;
                }
        }
        *cursor = FAULT_SIGNALS * SI_CODE_SLOTS;
        return false;
}

static void signal_add(Traps *t, const int64_t *keys, const uint64_t *values) {
        int sig = fault_signal_index((int) keys[0]);

        if (sig >= 0)
                t->signal[sig][si_code_slot((int) keys[1])] += values[0];
}

/* The tables are created by schema/sql/ (0001, 0002, 0003, 0006); test-store-kinds checks that
 * each has the columns named here, with the key as its primary key. */
const StoreKind store_kinds[_STORE_KIND_MAX] = {
        [STORE_KIND_SAMPLE] = {
                .name = "sample",
                .tables = { "sample_raw", "sample_minute", "sample_hour" },
                .fault_values = true,
                /* All traps, all fault time and all time waited on memory of the interval, so that
                 * Top sorts by them. */
                .values = { "traps", "time_ns", "stall_ns" },
        },
        [STORE_KIND_TRAP] = {
                .name = "trap",
                .tables = { "trap_raw", "trap_minute", "trap_hour" },
                .keys = { "vector" },
                .values = { "count" },
                .traps_next = trap_next,
                .traps_add = trap_add,
        },
        [STORE_KIND_SIGNAL] = {
                .name = "signal",
                .tables = { "signal_raw", "signal_minute", "signal_hour" },
                .keys = { "signo", "si_code" },
                .values = { "count" },
                .traps_next = signal_next,
                .traps_add = signal_add,
        },
        /* Not part of a Traps: written by store_flush() from ProcessSample.sites, read by
         * store_sites(). site_id and memory_object_id (0: none) are ids of the dictionaries. */
        [STORE_KIND_SITE] = {
                .name = "site",
                .tables = { "site_raw", "site_minute", "site_hour" },
                .keys = { "kind", "vector", "period", "site_id", "memory", "memory_object_id" },
                .values = { "count", "time_ns" },
        },
        /* Written by store_flush() from ProcessSample.fault_time; the sample kind's time_ns is
         * their sum, for Top to sort by. */
        [STORE_KIND_FAULT_TIME] = {
                .name = "fault_time",
                .tables = { "fault_time_raw", "fault_time_minute", "fault_time_hour" },
                .values = { "minor_ns", "major_ns", "kernel_ns", "max_ns", "h0", "h1", "h2", "h3", "h4", "h5", "h6",
                            "h7", "h8", "h9", "h10", "h11", "h12", "h13", "h14", "h15", "h16", "h17", "h18", "h19",
                            "h20", "h21", "h22", "h23", "major_file_ns", "major_anon_ns", "major_shmem_ns" },
                .max_values = 1U << 3,
        },
        /* Written by store_flush() from ProcessSample.stall (schema/sql/0015-stall.sql), in
         * StallCause order, each cause's ns then its count; the sample kind's stall_ns is the
         * memory causes' ns (stall_memory_ns()), for Top to sort by. */
        [STORE_KIND_STALL] = {
                .name = "stall",
                .tables = { "stall_raw", "stall_minute", "stall_hour" },
                .values = { "swapin_ns", "swapin_count", "thrashing_ns", "thrashing_count", "reclaim_ns",
                            "reclaim_count", "compact_ns", "compact_count", "blkio_ns", "blkio_count" },
        },
};
_Static_assert(_STALL_MAX == 5, "the stall kind has two columns per cause");
_Static_assert(FAULT_TIME_BUCKETS == 24, "the fault_time kind has a column per bucket");

size_t store_kind_n_keys(const StoreKind *k) {
        size_t n = 0;

        while (n < STORE_KIND_MAX_KEYS && k->keys[n])
                n++;
        return n;
}

static size_t n_own_values(const StoreKind *k) {
        size_t n = 0;

        while (n < STORE_KIND_MAX_VALUES && k->values[n])
                n++;
        return n;
}

size_t store_kind_n_values(const StoreKind *k) {
        return (k->fault_values ? n_fault_fields : 0) + n_own_values(k);
}

const char *store_kind_value(const StoreKind *k, size_t i, char buf[static STORE_COLUMN_MAX]) {
        if (!k->fault_values)
                return k->values[i];
        if (i >= n_fault_fields)
                return k->values[i - n_fault_fields];
        snprintf(buf, STORE_COLUMN_MAX, "f_%s", fault_fields[i].column);
        return buf;
}

/* buf is only set once the stream is closed. */
char *memstream_done(FILE *f, char **buf) {
        if (fclose(f) != 0) {
                free(*buf);
                return NULL;
        }
        return *buf;
}

char *store_kind_join_keys(const StoreKind *k, const char *fmt, const char *sep) {
        size_t n = store_kind_n_keys(k), size = 0;
        char *buf = NULL;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        fputs(sep, f);
                fprintf(f, fmt, k->keys[i]);
        }
        return memstream_done(f, &buf);
}

char *store_kind_join_values(const StoreKind *k, const char *fmt, const char *sep) {
        return store_kind_join_merges(k, fmt, fmt, sep);
}

static bool value_is_max(const StoreKind *k, size_t i) {
        size_t own = k->fault_values ? i - n_fault_fields : i;

        return (!k->fault_values || i >= n_fault_fields) && own < 32 && (k->max_values >> own & 1);
}

char *store_kind_join_merges(const StoreKind *k, const char *sum_fmt, const char *max_fmt, const char *sep) {
        size_t n = store_kind_n_values(k), size = 0;
        char *buf = NULL;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                char column[STORE_COLUMN_MAX];

                if (i > 0)
                        fputs(sep, f);
                fprintf(f, value_is_max(k, i) ? max_fmt : sum_fmt, store_kind_value(k, i, column));
        }
        return memstream_done(f, &buf);
}

/* ", <key>, <key>": the keys where they follow other columns. */
static char *keys_after(const StoreKind *k) {
        return store_kind_join_keys(k, ", %1$s", "");
}

char *store_kind_columns(const StoreKind *k) {
        _cleanup_free_ char *keys = keys_after(k), *values = store_kind_join_values(k, "%1$s", ", ");
        char *sql;

        if (!keys || !values || asprintf(&sql, "process_id, time_usec%s, %s", keys, values) < 0)
                return NULL;
        return sql;
}

static int64_t clamp_i64(uint64_t v) {
        return v > INT64_MAX ? INT64_MAX : (int64_t) v;
}

char *store_kind_union(const StoreKind *k, const TierSegment *seg, size_t n, const char *where) {
        _cleanup_free_ char *columns = store_kind_columns(k);
        char *buf = NULL;
        size_t size = 0;
        FILE *f;

        if (!columns)
                return NULL;
        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%sSELECT %s FROM %s WHERE %s AND time_usec >= %" PRId64 " AND time_usec < %" PRId64,
                        i ? " UNION ALL " : "", columns, k->tables[seg[i].tier], where, clamp_i64(seg[i].from),
                        clamp_i64(seg[i].to));
        if (n == 0)
                fprintf(f, "SELECT %s FROM %s WHERE 0", columns, k->tables[TIER_RAW]);
        return memstream_done(f, &buf);
}

char *store_kind_union_per_process(const StoreKind *k, const TierSegment *seg, size_t n, const char *values,
                                   const char *processes) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        for (size_t i = 0; i < n; i++)
                fprintf(f,
                        "%sSELECT process_id, %s FROM %s WHERE process_id IN (SELECT id FROM process WHERE "
                        "last_seen_usec >= %" PRId64 " AND (%s)) AND time_usec >= %" PRId64 " AND time_usec < %" PRId64
                        " GROUP BY process_id",
                        i ? " UNION ALL " : "", values, k->tables[seg[i].tier], clamp_i64(seg[i].from), processes,
                        clamp_i64(seg[i].from), clamp_i64(seg[i].to));
        if (n == 0)
                fprintf(f, "SELECT process_id, %s FROM %s WHERE 0 GROUP BY process_id", values, k->tables[TIER_RAW]);
        return memstream_done(f, &buf);
}

char *store_kind_sum(const StoreKind *k, const char *group, const char *from) {
        _cleanup_free_ char *keys = keys_after(k), *sums = store_kind_join_merges(k, "SUM(%1$s)", "MAX(%1$s)", ", ");
        char *sql;

        if (!keys || !sums ||
            asprintf(&sql, "SELECT %s AS g%s, %s FROM (%s) GROUP BY g%s", group, keys, sums, from, keys) < 0)
                return NULL;
        return sql;
}

/* "v = v + excluded.v, ...": what a row whose key exists already adds to it (a maximum: the
 * larger). */
static char *increments(const StoreKind *k) {
        return store_kind_join_merges(k, "%1$s = %1$s + excluded.%1$s", "%1$s = MAX(%1$s, excluded.%1$s)", ", ");
}

char *store_kind_upsert(const StoreKind *k, int tier) {
        _cleanup_free_ char *keys = keys_after(k), *values = store_kind_join_values(k, "%1$s", ", "),
                            *adds = increments(k);
        size_t n = store_kind_n_keys(k) + store_kind_n_values(k), size = 0;
        char *params = NULL, *sql;
        FILE *f;

        if (!keys || !values || !adds)
                return NULL;
        f = open_memstream(&params, &size);
        if (!f)
                return NULL;
        for (size_t i = 0; i < n; i++)
                fprintf(f, ", ?%zu", i + 3);
        params = memstream_done(f, &params);
        if (!params)
                return NULL;
        if (asprintf(&sql,
                     "INSERT INTO %s (process_id, time_usec%s, %s) VALUES (?1, ?2%s) "
                     "ON CONFLICT (process_id, time_usec%s) DO UPDATE SET %s",
                     k->tables[tier], keys, values, params, keys, adds) < 0)
                sql = NULL;
        free(params);
        return sql;
}

/* Which rows of a tier in a stretch: the raw tier by its index by time (it is small and its
 * roll-up and retention run every few seconds), the minute and hour tiers a process at a time by
 * their primary key (schema/sql/0010-minute-hour-by-process.sql), of the processes that may have
 * such rows: processes is a condition on table process. */
static int stretch_where(int tier, const char *processes, int64_t from, int64_t to, char **ret) {
        if (tier == TIER_RAW)
                return asprintf(ret, "time_usec >= %" PRId64 " AND time_usec < %" PRId64, from, to) < 0 ? -ENOMEM : 0;
        return asprintf(ret,
                        "process_id IN (SELECT id FROM process WHERE %s) AND time_usec >= %" PRId64
                        " AND time_usec < %" PRId64,
                        processes, from, to) < 0
                       ? -ENOMEM
                       : 0;
}

char *store_kind_roll_up(const StoreKind *k, int tier, uint64_t from, uint64_t to) {
        _cleanup_free_ char *keys = keys_after(k), *values = store_kind_join_values(k, "%1$s", ", "),
                            *sums = store_kind_join_merges(k, "SUM(%1$s)", "MAX(%1$s)", ", "), *adds = increments(k),
                            *processes = NULL, *where = NULL;
        uint64_t w = tier_width_usec[tier];
        char *sql;

        /* Every row of a process starts at or before its last_seen_usec (store.h). */
        if (!keys || !values || !sums || !adds ||
            asprintf(&processes, "last_seen_usec >= %" PRId64, clamp_i64(from)) < 0 ||
            stretch_where(tier - 1, processes, clamp_i64(from), clamp_i64(to), &where) < 0 ||
            asprintf(&sql,
                     "INSERT INTO %s (process_id, time_usec%s, %s) "
                     "SELECT process_id, (time_usec / %" PRIu64 ") * %" PRIu64 " AS t%s, %s FROM %s "
                     "WHERE %s GROUP BY process_id, t%s "
                     "ON CONFLICT (process_id, time_usec%s) DO UPDATE SET %s",
                     k->tables[tier], keys, values, w, w, keys, sums, k->tables[tier - 1], where, keys, keys, adds) < 0)
                return NULL;
        return sql;
}

char *store_kind_expire(const StoreKind *k, int tier, uint64_t cutoff, size_t batch) {
        _cleanup_free_ char *keys = keys_after(k), *processes = NULL, *where = NULL;
        char *sql;

        /* A process's rows start in the interval that holds its first_seen_usec, or in the hour
         * that does where the size cap coarsened them (store-share.c). */
        if (!keys ||
            asprintf(&processes, "first_seen_usec < %" PRId64,
                     clamp_i64(cutoff > UINT64_MAX - tier_width_usec[TIER_HOUR] ? UINT64_MAX
                                                                                : cutoff + tier_width_usec[TIER_HOUR])) < 0 ||
            stretch_where(tier, processes, 0, clamp_i64(cutoff), &where) < 0 ||
            asprintf(&sql,
                     "DELETE FROM %1$s WHERE (process_id, time_usec%2$s) IN "
                     "(SELECT process_id, time_usec%2$s FROM %1$s WHERE %3$s LIMIT %4$zu)",
                     k->tables[tier], keys, where, batch) < 0)
                return NULL;
        return sql;
}

char *store_kind_coarse_table(const StoreKind *k) {
        _cleanup_free_ char *columns = store_kind_columns(k);
        char *sql;

        if (!columns || asprintf(&sql, "CREATE TEMP TABLE IF NOT EXISTS coarse_%s AS SELECT %s FROM %s WHERE 0", k->name,
                                 columns, k->tables[TIER_RAW]) < 0)
                return NULL;
        return sql;
}

char *store_kind_coarsen(const StoreKind *k, int tier, uint64_t width, const char *where) {
        _cleanup_free_ char *columns = store_kind_columns(k), *keys = keys_after(k),
                            *sums = store_kind_join_merges(k, "SUM(%1$s)", "MAX(%1$s)", ", ");
        char *sql;

        if (!columns || !keys || !sums ||
            asprintf(&sql,
                     "INSERT INTO temp.coarse_%s (%s) SELECT process_id, (time_usec / %" PRIu64 ") * %" PRIu64
                     " AS t%s, %s FROM %s WHERE %s GROUP BY process_id, t%s",
                     k->name, columns, width, width, keys, sums, k->tables[tier], where, keys) < 0)
                return NULL;
        return sql;
}

char *store_kind_coarse_put_back(const StoreKind *k, int tier) {
        _cleanup_free_ char *columns = store_kind_columns(k);
        char *sql;

        if (!columns || asprintf(&sql, "INSERT INTO %s (%s) SELECT %s FROM temp.coarse_%s", k->tables[tier], columns,
                                 columns, k->name) < 0)
                return NULL;
        return sql;
}
