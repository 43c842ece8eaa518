/* SPDX-License-Identifier: MIT */
/* The store's reads: Top, Traps, Sites, ListProcesses, finding a process; and marking gone the
 * processes that ended while no daemon saw them. Also what every read uses (store-internal.h):
 * reading a process and counts, the union over the tiers, the traps of a set of rows. */
#include "store-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array-util.h"

static char *column_strdup(sqlite3_stmt *st, int i) {
        const unsigned char *t = sqlite3_column_text(st, i);
        return t ? strdup((const char *) t) : NULL;
}

int read_process(sqlite3_stmt *st, int first, ProcessInfo *ret) {
        ProcessInfo p = {};
        const unsigned char *comm;

        p.pid = (uint32_t) sqlite3_column_int64(st, first);
        p.start_time = (uint64_t) sqlite3_column_int64(st, first + 1);
        comm = sqlite3_column_text(st, first + 2);
        snprintf(p.comm, sizeof(p.comm), "%s", comm ? (const char *) comm : "");
        p.uid = (uint32_t) sqlite3_column_int64(st, first + 4);
        p.first_seen_usec = (uint64_t) sqlite3_column_int64(st, first + 6);
        p.last_seen_usec = (uint64_t) sqlite3_column_int64(st, first + 7);
        p.exited = sqlite3_column_int(st, first + 8) != 0;
        if ((sqlite3_column_type(st, first + 3) != SQLITE_NULL && !(p.cmdline = column_strdup(st, first + 3))) ||
            (sqlite3_column_type(st, first + 5) != SQLITE_NULL && !(p.unit = column_strdup(st, first + 5)))) {
                process_info_done(&p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

void read_faults(sqlite3_stmt *st, int first, Faults *ret) {
        for (size_t i = 0; i < n_fault_fields; i++)
                *faults_field(ret, &fault_fields[i]) = (uint64_t) sqlite3_column_int64(st, first + (int) i);
}

void store_rows_free(StoreRow *rows, size_t n) {
        for (size_t i = 0; i < n; i++)
                process_info_done(&rows[i].process);
        free(rows);
}

int prepare_over(Store *s, sqlite3_stmt **ret, const char *fmt, int kind, const TierSegment *seg, size_t n,
                 const char *where) {
        _cleanup_free_ char *u = store_kind_union(&store_kinds[kind], seg, n, where);

        if (!u)
                return -ENOMEM;
        return sql_prepare(s->db, ret, fmt, u);
}

/* Sums the rows of one kind over the segments per group and key, and hands each sum to fn. */
static int read_kind(Store *s, int k, const TierSegment *seg, size_t n_seg, const char *group, const char *where,
                     const char *text, int64_t value,
                     void (*fn)(const StoreKind *kind, int64_t group, const int64_t *keys, const uint64_t *values,
                                void *userdata),
                     void *userdata) {
        const StoreKind *kind = &store_kinds[k];
        size_t n_keys = store_kind_n_keys(kind), n_values = store_kind_n_values(kind);
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *u = NULL, *sql = NULL;
        int rc;

        u = store_kind_union(kind, seg, n_seg, where);
        sql = u ? store_kind_sum(kind, group, u) : NULL;
        if (!sql)
                return -ENOMEM;
        rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_to_errno(rc);
        if (text)
                sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
        else
                sqlite3_bind_int64(st, 1, value);

        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t keys[STORE_KIND_MAX_KEYS];
                uint64_t values[STORE_KIND_MAX_VALUES];

                for (size_t i = 0; i < n_keys; i++)
                        keys[i] = sqlite3_column_int64(st, 1 + (int) i);
                for (size_t i = 0; i < n_values; i++)
                        values[i] = (uint64_t) sqlite3_column_int64(st, 1 + (int) (n_keys + i));
                fn(kind, sqlite3_column_int64(st, 0), keys, values, userdata);
        }
        if (rc != SQLITE_DONE)
                return sqlite_to_errno(rc) ?: -EIO;
        return 0;
}

static void add_traps_row(const StoreKind *kind, int64_t group, const int64_t *keys, const uint64_t *values,
                          void *userdata) {
        const TrapsQuery *q = userdata;
        Traps *t = q->find(group, q->userdata);

        if (t)
                kind->traps_add(t, keys, values);
}

int read_traps(Store *s, const TierSegment *seg, size_t n_seg, const TrapsQuery *q) {
        for (int k = 0; k < _STORE_KIND_MAX; k++) {
                int r;

                if (!store_kinds[k].traps_add)
                        continue;
                r = read_kind(s, k, seg, n_seg, q->group, q->where, q->text, q->value, add_traps_row, (void *) q);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void add_fault_time_row(const StoreKind *kind _unused_, int64_t group, const int64_t *keys _unused_,
                               const uint64_t *values, void *userdata) {
        const FaultTimeQuery *q = userdata;
        FaultTime *t = q->find(group, q->userdata), row;

        if (!t)
                return;
        row = (FaultTime) { .minor_ns = values[0], .major_ns = values[1], .kernel_ns = values[2], .max_ns = values[3] };
        memcpy(row.histogram, values + 4, sizeof(row.histogram));
        fault_time_add(t, &row);
}

int read_fault_time(Store *s, const TierSegment *seg, size_t n_seg, const FaultTimeQuery *q) {
        return read_kind(s, STORE_KIND_FAULT_TIME, seg, n_seg, q->group, q->where, q->text, q->value,
                         add_fault_time_row, (void *) q);
}

/* Top's rows in the order ranked, and an index of them by process id (ascending), so that the
 * statements that fill them in find a row in O(log n) whatever the limit. */
typedef struct TopRows {
        StoreRow *rows;
        size_t n, capacity;
        StoreRow **by_id;
        bool *filled;   /* by rank: the process row was read */
        uint64_t total; /* processes ranked, limit aside */
} TopRows;

static void top_rows_done(TopRows *t) {
        store_rows_free(t->rows, t->n);
        free(t->by_id);
        free(t->filled);
}

static int row_ptr_compare(const void *a, const void *b) {
        int64_t x = (*(StoreRow *const *) a)->id, y = (*(StoreRow *const *) b)->id;

        return x < y ? -1 : x > y;
}

static StoreRow *top_row_by_id(const TopRows *t, int64_t id) {
        size_t lo = 0, hi = t->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (t->by_id[mid]->id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < t->n && t->by_id[lo]->id == id ? t->by_id[lo] : NULL;
}

static Traps *top_traps_by_id(int64_t id, void *userdata) {
        StoreRow *row = top_row_by_id(userdata, id);

        return row ? &row->traps : NULL;
}

static FaultTime *top_time_by_id(int64_t id, void *userdata) {
        StoreRow *row = top_row_by_id(userdata, id);

        return row ? &row->fault_time : NULL;
}

/* The conditions on table process of the processes filter lets through: "" for an empty filter,
 * else " AND ..." with its members bound by filter_bind(). */
static const char *filter_where(const ProcessFilter *f, char buf[static 256]) {
        if (!f || process_filter_is_empty(f))
                return "";
        snprintf(buf, 256, "%s%s%s%s", f->n_pids > 0 ? " AND pid IN (SELECT value FROM json_each(?7))" : "",
                 f->uid >= 0 ? " AND uid = ?4" : "", f->unit ? " AND unit GLOB ?5" : "",
                 f->comm ? " AND comm GLOB ?6" : "");
        return buf;
}

/* The members of filter_where(): the uid as ?4, the globs as ?5 and ?6, the pids as a JSON array
 * in ?7 (pids_json, at least FILTER_PIDS_JSON_MAX bytes, holds it while st runs). */
#define FILTER_PIDS_JSON_MAX (MAX_FILTER_PIDS * 11 + 3)
static void filter_bind(sqlite3_stmt *st, const ProcessFilter *f, char *pids_json) {
        size_t k = 0;

        if (!f || process_filter_is_empty(f))
                return;
        k += (size_t) snprintf(pids_json, FILTER_PIDS_JSON_MAX, "[");
        for (size_t i = 0; i < f->n_pids; i++)
                k += (size_t) snprintf(pids_json + k, FILTER_PIDS_JSON_MAX - k, "%s%" PRIu32, i ? "," : "", f->pids[i]);
        snprintf(pids_json + k, FILTER_PIDS_JSON_MAX - k, "]");
        /* A number the statement does not use is out of its range: SQLITE_RANGE, no harm. */
        sqlite3_bind_int64(st, 4, f->uid);
        sqlite3_bind_text(st, 5, f->unit, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, f->comm, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 7, pids_json, -1, SQLITE_STATIC);
}

/* Step 1 of Top: the processes of the window the caller may see and the filter lets through, by
 * the sum of the sort column in the tiers and in the ticks still pending (pending: [[id, value],
 * ...], top_pending()), largest first (ties: the newer process row first), at most limit; their
 * ids go into t->rows in that order, how many there are in all into t->total. */
static int top_rank(Store *s, const TierSegment *seg, size_t n_seg, const char *column, size_t limit, int64_t uid,
                    const ProcessFilter *filter, const char *pending, TopRows *t) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *value = NULL, *processes = NULL, *u = NULL;
        char filter_buf[256], pids_json[FILTER_PIDS_JSON_MAX];
        int rc, r;

        if (asprintf(&value, "SUM(%s) AS v", column) < 0 ||
            asprintf(&processes, "(?3 < 0 OR uid = ?3)%s", filter_where(filter, filter_buf)) < 0)
                return -ENOMEM;
        u = store_kind_union_per_process(&store_kinds[STORE_KIND_SAMPLE], seg, n_seg, value, processes);
        if (!u)
                return -ENOMEM;
        r = sql_prepare(s->db, &st,
                        "SELECT process_id, COUNT(*) OVER () FROM (%s UNION ALL SELECT json_extract(value, '$[0]'), "
                        "json_extract(value, '$[1]') FROM json_each(?8) WHERE json_extract(value, '$[0]') IN "
                        "(SELECT id FROM process WHERE %s)) GROUP BY process_id "
                        "ORDER BY SUM(v) DESC, process_id DESC LIMIT ?2",
                        u, processes);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 2, (int64_t) limit);
        sqlite3_bind_text(st, 8, pending, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, uid);
        filter_bind(st, filter, pids_json);

        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                if (array_grow((void **) &t->rows, &t->capacity, t->n, 1, sizeof(*t->rows)) < 0)
                        return -ENOMEM;
                t->rows[t->n++] = (StoreRow) { .id = sqlite3_column_int64(st, 0) };
                t->total = (uint64_t) sqlite3_column_int64(st, 1);
        }
        if (rc != SQLITE_DONE)
                return sqlite_to_errno(rc) ?: -EIO;

        t->by_id = calloc(MAX(t->n, (size_t) 1), sizeof(*t->by_id));
        t->filled = calloc(MAX(t->n, (size_t) 1), sizeof(*t->filled));
        if (!t->by_id || !t->filled)
                return -ENOMEM;
        for (size_t i = 0; i < t->n; i++)
                t->by_id[i] = &t->rows[i];
        qsort(t->by_id, t->n, sizeof(*t->by_id), row_ptr_compare);
        return 0;
}

/* The int64 ids at offset in each of the n elements of stride bytes from base, as a JSON array. */
static char *json_ids(const void *base, size_t n, size_t stride, size_t offset) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        fputc('[', f);
        for (size_t i = 0; i < n; i++) {
                int64_t id;

                memcpy(&id, (const uint8_t *) base + i * stride + offset, sizeof(id));
                fprintf(f, "%s%" PRId64, i ? "," : "", id);
        }
        fputc(']', f);
        return memstream_done(f, &buf);
}

static int pending_by_process(const void *a, const void *b) {
        const PendingSample *x = a, *y = b;

        return x->process_id < y->process_id ? -1 : x->process_id > y->process_id;
}

/* The ticks still pending (store-pending.c) of buckets from since_bucket on, summed per process,
 * in process id order; in *ret_values, for the SQL, each one's id and value of the sort key as a
 * JSON array of pairs. */
static int top_pending(Store *s, uint64_t since_bucket, const SortKey *key, PendingSample **ret, size_t *ret_n,
                       char **ret_values) {
        _cleanup_free_ PendingSample *a = NULL;
        char *values = NULL;
        size_t n, m = 0, size = 0;
        FILE *f;
        int r;

        r = store_pending_read(s, NULL, 0, &a, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (a[i].bucket_usec >= since_bucket)
                        a[m++] = a[i];
        n = m;
        m = 0;
        if (n > 0)
                qsort(a, n, sizeof(*a), pending_by_process);
        for (size_t i = 0; i < n; i++) {
                if (m > 0 && a[m - 1].process_id == a[i].process_id) {
                        pending_sample_add(&a[m - 1], &a[i]);
                } else
                        a[m++] = a[i];
        }
        f = open_memstream(&values, &size);
        if (!f)
                return -ENOMEM;
        fputc('[', f);
        for (size_t i = 0; i < m; i++)
                fprintf(f, "%s[%" PRId64 ",%" PRIu64 "]", i ? "," : "", a[i].process_id,
                        key->what == SORT_FAULTS ? faults_get(&a[i].delta, key->field)
                        : key->what == SORT_TRAPS ? a[i].traps
                                                  : a[i].time_ns);
        fputc(']', f);
        if (!memstream_done(f, &values))
                return -ENOMEM;
        *ret = TAKE_PTR(a);
        *ret_n = m;
        *ret_values = values;
        return 0;
}

/* Reads the rows of st (id, PROCESS_COLUMNS, with faults the fault fields) into the ranked
 * processes they name that are not filled yet. */
static int top_fill_rows(sqlite3_stmt *st, bool faults, TopRows *t) {
        int rc, r;

        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                StoreRow *row = top_row_by_id(t, sqlite3_column_int64(st, 0));

                if (!row || t->filled[row - t->rows])
                        continue;
                r = read_process(st, 1, &row->process);
                if (r < 0)
                        return r;
                if (faults)
                        read_faults(st, 10, &row->faults);
                t->filled[row - t->rows] = true;
        }
        return rc == SQLITE_DONE ? 0 : sqlite_to_errno(rc) ?: -EIO;
}

/* Step 2 of Top: every fault field of the ranked processes summed over the window, with their
 * process rows; ids: the ranked ids as a JSON array. */
static int top_fill(Store *s, const TierSegment *seg, size_t n_seg, const char *ids, TopRows *t) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *fmt = NULL;
        int r;

        if (asprintf(&fmt,
                     "SELECT process.id, " PROCESS_COLUMNS ", %s FROM (SELECT process_id, %s FROM (%%s) "
                     "GROUP BY process_id) AS t JOIN process ON process.id = t.process_id",
                     s->columns, s->sums_as) < 0)
                return -ENOMEM;
        r = prepare_over(s, &st, fmt, STORE_KIND_SAMPLE, seg, n_seg, "process_id IN (SELECT value FROM json_each(?1))");
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, ids, -1, SQLITE_STATIC);
        return top_fill_rows(st, true, t);
}

/* Step 3 of Top: the process rows of the ranked processes that have no rows in the tiers for the
 * window (their counts are all still pending); ids: the ranked ids as a JSON array. */
static int top_fill_processes(Store *s, const char *ids, TopRows *t) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int r;

        r = sql_prepare(s->db, &st, "SELECT id, " PROCESS_COLUMNS " FROM process WHERE id IN (SELECT value FROM json_each(?1))");
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, ids, -1, SQLITE_STATIC);
        return top_fill_rows(st, false, t);
}

/* Step 4 of Top: the pending deltas added to the ranked processes (the per-vector traps are
 * written with their tick, never pending); the rows without a process row left out (in one
 * snapshot every ranked process has one; should one not, it is left out rather than shown
 * without a name). */
static size_t top_finish(TopRows *t, const PendingSample *pending, size_t n_pending) {
        size_t m = 0;

        for (size_t i = 0; i < n_pending; i++) {
                StoreRow *row = top_row_by_id(t, pending[i].process_id);

                if (row)
                        faults_add(&row->faults, &pending[i].delta);
        }
        for (size_t i = 0; i < t->n; i++) {
                if (t->filled[i])
                        t->rows[m++] = t->rows[i];
                else
                        process_info_done(&t->rows[i].process);
        }
        return m;
}

/* Top in two statements, so that the one that reads the whole window sums one column, not ten,
 * and reads each process's rows of a tier segment as one range of the primary key (process_id,
 * time_usec). Reading the window through the time index instead costs a primary-key lookup per
 * row; and a covering index of the time index and every column would double the tiers' size.
 * On a store-bench database (1000 processes, 14 days), over 24 h: 20 ms before, 9 ms for the
 * per-process ranges alone, 5 ms for both steps (bench/README.md, "Store"). EXPLAIN QUERY PLAN
 * of the ranking, for each tier segment (in the order of the window):
 *
 *   SEARCH sample_<tier> USING PRIMARY KEY (process_id=? AND time_usec>? AND time_usec<?)
 *   LIST SUBQUERY
 *   SEARCH process USING INDEX process_by_last_seen (last_seen_usec>?)
 *
 * then SCAN of the union, USE TEMP B-TREE FOR GROUP BY and FOR ORDER BY. The fill step is the
 * same SEARCH ... USING PRIMARY KEY for the ranked ids only. */
static int top_read(Store *s, uint64_t since_usec, const char *sort, size_t limit, int64_t uid,
                    const ProcessFilter *filter, StoreRow **ret, size_t *ret_n, uint64_t *ret_other) {
        _cleanup_(top_rows_done) TopRows t = {};
        _cleanup_free_ PendingSample *pending = NULL;
        _cleanup_free_ char *ids = NULL, *pending_values = NULL;
        uint64_t since_bucket = tier_floor(TIER_RAW, since_usec);
        TierSegment seg[TIER_MAX_SEGMENTS];
        TierState tiers[_TIER_MAX];
        size_t n_seg, n_pending = 0;
        char column[32];
        SortKey key;
        int r;

        /* The sort column comes from fault_fields or is "traps" or "time_ns", never the caller's
         * text. */
        if (sort_key_from_name(sort, &key) < 0)
                return -EINVAL;
        if (key.what == SORT_FAULTS)
                snprintf(column, sizeof(column), "f_%s", key.field->name);
        else
                snprintf(column, sizeof(column), key.what == SORT_TRAPS ? "traps" : "time_ns");

        /* Whole hours and minutes of the window from the coarse tiers, the edges from finer
         * ones: a day is a few dozen rows per process, not thousands. */
        r = store_load_tiers(s, tiers);
        if (r < 0)
                return r;
        n_seg = tier_plan(tiers, (1U << _TIER_MAX) - 1, since_bucket, UINT64_MAX, seg);

        /* The ticks not yet folded into the raw tier are read as they are, ranked with the tiers:
         * Top never waits for the writer to fold them. */
        r = top_pending(s, since_bucket, &key, &pending, &n_pending, &pending_values);
        if (r < 0)
                return r;
        r = top_rank(s, seg, n_seg, column, limit, uid, filter, pending_values, &t);
        if (r < 0)
                return r;
        if (t.n > 0) {
                ids = json_ids(t.rows, t.n, sizeof(*t.rows), offsetof(StoreRow, id));
                if (!ids)
                        return -ENOMEM;
                r = top_fill(s, seg, n_seg, ids, &t);
                if (r >= 0 && n_pending > 0)
                        r = top_fill_processes(s, ids, &t);
                if (r >= 0)
                        r = read_traps(s, seg, n_seg,
                                       &(TrapsQuery) { .group = "process_id",
                                                       .where = "process_id IN (SELECT value FROM json_each(?1))",
                                                       .text = ids,
                                                       .find = top_traps_by_id,
                                                       .userdata = &t });
                if (r >= 0)
                        r = read_fault_time(s, seg, n_seg,
                                            &(FaultTimeQuery) { .group = "process_id",
                                                                .where = "process_id IN (SELECT value FROM json_each(?1))",
                                                                .text = ids,
                                                                .find = top_time_by_id,
                                                                .userdata = &t });
                if (r < 0)
                        return r;
        }

        if (ret_other)
                *ret_other = t.total - t.n;
        *ret_n = top_finish(&t, pending, n_pending);
        *ret = TAKE_PTR(t.rows);
        t.n = 0;
        return 0;
}

static Traps *single_traps(int64_t key _unused_, void *userdata) {
        return userdata;
}

int store_traps(Store *s, uint64_t since_usec, int64_t uid, Traps *ret, uint64_t *ret_processes) {
        _cleanup_finalize_ sqlite3_stmt *count = NULL;
        uint64_t since_bucket = tier_floor(TIER_RAW, since_usec);
        const char *where = "(?1 < 0 OR process_id IN (SELECT id FROM process WHERE uid = ?1))";
        TierSegment seg[TIER_MAX_SEGMENTS];
        TierState tiers[_TIER_MAX];
        Traps t = {};
        size_t n_seg;
        int rc, r;

        r = store_load_tiers(s, tiers);
        if (r < 0)
                return r;
        n_seg = tier_plan(tiers, (1U << _TIER_MAX) - 1, since_bucket, UINT64_MAX, seg);

        r = read_traps(s, seg, n_seg,
                       &(TrapsQuery) { .group = "0", .where = where, .value = uid, .find = single_traps,
                                       .userdata = &t });
        if (r < 0)
                return r;
        /* Processes that trapped: those with rows of the trap kind. */
        r = prepare_over(s, &count, "SELECT COUNT(DISTINCT process_id) FROM (%s)", STORE_KIND_TRAP, seg, n_seg, where);
        if (r < 0)
                return r;
        sqlite3_bind_int64(count, 1, uid);
        rc = sqlite3_step(count);
        if (rc != SQLITE_ROW)
                return sqlite_to_errno(rc) ?: -EIO;
        *ret_processes = (uint64_t) sqlite3_column_int64(count, 0);
        *ret = t;
        return 0;
}

int store_mark_gone(Store *s, bool (*alive)(uint32_t pid, uint64_t start_time, void *userdata), void *userdata,
                    size_t *ret_n) {
        _cleanup_finalize_ sqlite3_stmt *list = NULL, *mark = NULL;
        size_t n = 0;
        int rc, r;

        /* Rows marked exited here may be deleted by maintenance: no entry may point at them. */
        store_known_reset(s);
        r = sql_prepare(s->db, &list, "SELECT id, pid, start_time FROM process WHERE boot_id = ?1 AND NOT exited");
        if (r >= 0)
                r = sql_prepare(s->db, &mark, "UPDATE process SET exited = 1 WHERE id = ?1");
        if (r < 0)
                return r;
        sqlite3_bind_text(list, 1, s->boot_id, -1, SQLITE_STATIC);

        r = sql_exec(s->db, "BEGIN");
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(list)) == SQLITE_ROW) {
                if (alive((uint32_t) sqlite3_column_int64(list, 1), (uint64_t) sqlite3_column_int64(list, 2), userdata))
                        continue;
                sqlite3_bind_int64(mark, 1, sqlite3_column_int64(list, 0));
                r = sql_step_done(mark);
                sqlite3_reset(mark);
                if (r < 0)
                        goto rollback;
                n++;
        }
        if (rc != SQLITE_DONE) {
                r = sqlite_to_errno(rc) ?: -EIO;
                goto rollback;
        }
        r = sql_exec(s->db, "COMMIT");
        if (r < 0)
                goto rollback;
        *ret_n = n;
        return 0;
rollback:
        store_rollback(s);
        return r;
}

void process_infos_free(ProcessInfo *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                process_info_done(&p[i]);
        free(p);
}

/* The filter of store_list_processes() as SQL, its members bound by list_bind(). */
#define LIST_WHERE                                                                                      \
        "(?1 = 0 OR pid = ?1) AND (?2 OR NOT exited) AND (?3 < 0 OR uid = ?3) AND (?5 IS NULL OR comm GLOB ?5) " \
        "AND (?6 IS NULL OR unit = ?6)"

static void list_bind(sqlite3_stmt *st, const StoreProcessFilter *filter) {
        sqlite3_bind_int64(st, 1, filter->pid);
        sqlite3_bind_int(st, 2, filter->include_exited);
        sqlite3_bind_int64(st, 3, filter->uid);
        sqlite3_bind_int64(st, 4, (int64_t) filter->limit);
        sqlite3_bind_text(st, 5, filter->comm_glob, -1, SQLITE_STATIC); /* NULL binds NULL */
        sqlite3_bind_text(st, 6, filter->unit, -1, SQLITE_STATIC);
}

/* How many processes the filter lets through, limit aside: a statement of its own, since
 * COUNT(*) OVER () beside the rows would have SQLite sort every matching row, command lines
 * and all, instead of keeping only the first limit. */
static int list_count(Store *s, const StoreProcessFilter *filter, uint64_t *ret) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int rc, r;

        r = sql_prepare(s->db, &st, "SELECT COUNT(*) FROM process WHERE " LIST_WHERE); /* ?4, the limit, unused */
        if (r < 0)
                return r;
        list_bind(st, filter);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sqlite_to_errno(rc) ?: -EIO;
        *ret = (uint64_t) sqlite3_column_int64(st, 0);
        return 0;
}

static int list_read(Store *s, const StoreProcessFilter *filter, ProcessInfo **ret, size_t *ret_n) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        ProcessInfo *list = NULL;
        size_t n = 0, capacity = 0;
        int rc, r;

        r = sql_prepare(s->db, &st,
                        "SELECT " PROCESS_COLUMNS " FROM process WHERE " LIST_WHERE
                        " ORDER BY first_seen_usec DESC, id DESC LIMIT ?4");
        if (r < 0)
                return r;
        list_bind(st, filter);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                if (array_grow((void **) &list, &capacity, n, 1, sizeof(*list)) < 0) {
                        process_infos_free(list, n);
                        return -ENOMEM;
                }
                r = read_process(st, 0, &list[n]);
                if (r < 0) {
                        process_infos_free(list, n);
                        return r;
                }
                n++;
        }
        if (rc != SQLITE_DONE) {
                process_infos_free(list, n);
                return sqlite_to_errno(rc) ?: -EIO;
        }
        *ret = list;
        *ret_n = n;
        return 0;
}

int store_list_processes(Store *s, const StoreProcessFilter *filter, ProcessInfo **ret, size_t *ret_n,
                         uint64_t *ret_total) {
        ProcessInfo *list = NULL;
        uint64_t total = 0;
        size_t n = 0;
        int r;

        /* The count and the rows from one snapshot: total is never below n. Counted only when the
         * limit was reached: a scan of every matching row (17 ms for 14000 processes). */
        r = store_snapshot_begin(s);
        if (r < 0)
                return r;
        r = list_read(s, filter, &list, &n);
        total = n;
        if (r >= 0 && ret_total && n >= filter->limit) {
                r = list_count(s, filter, &total);
                if (r < 0)
                        process_infos_free(list, n);
        }
        store_snapshot_end(s);
        if (r < 0)
                return r;
        *ret = list;
        *ret_n = n;
        if (ret_total)
                *ret_total = total;
        return 0;
}

int store_find_process(Store *s, uint32_t pid, uint64_t start_time, int64_t *ret_id, ProcessInfo *ret) {
        sqlite3_stmt *st = start_time ? s->find_process : s->find_newest_process;
        int rc, r;

        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, pid);
        if (start_time)
                sqlite3_bind_int64(st, 2, (int64_t) start_time);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
                sqlite3_reset(st);
                return -ENOENT;
        }
        if (rc != SQLITE_ROW) {
                sqlite3_reset(st);
                return sqlite_to_errno(rc) ?: -EIO;
        }
        *ret_id = sqlite3_column_int64(st, 0);
        r = read_process(st, 1, ret);
        sqlite3_reset(st);
        return r;
}

/* The rows of one process's sites summed per key of the site kind, with the names their ids
 * stand for, and how many there are, limit aside; %s: the union of the tiers' rows. The key order
 * of store_kinds[STORE_KIND_SITE]. Two versions of a file (one path) are two objects, so two sites:
 * the ids order them last. */
#define SITES_SQL                                                                                                      \
        "SELECT t.kind, t.vector, t.period, o.name, o.dev, o.ino, site.file_offset, site.symbol, "                     \
        "site.symbol_offset, t.memory, m.name, m.dev, m.ino, t.count, COUNT(*) OVER (), o.ctime_nsec, "                \
        "o.generation, t.time_ns FROM "                                                                                \
        "(SELECT kind, vector, period, site_id, memory, memory_object_id, SUM(count) AS count, "                       \
        "SUM(time_ns) AS time_ns FROM (%s) "                                                                           \
        "GROUP BY kind, vector, period, site_id, memory, memory_object_id) AS t "                                      \
        "JOIN site ON site.id = t.site_id JOIN object AS o ON o.id = site.object_id "                                  \
        "LEFT JOIN object AS m ON m.id = t.memory_object_id "                                                          \
        "ORDER BY t.count * t.period DESC, t.kind, o.name, site.file_offset, t.vector, t.period, t.memory, m.name, "   \
        "t.site_id, t.memory_object_id LIMIT ?3"

static char *column_strdup_or_null(sqlite3_stmt *st, int i, bool *failed) {
        char *v;

        if (sqlite3_column_type(st, i) == SQLITE_NULL)
                return NULL;
        v = column_strdup(st, i);
        if (!v)
                *failed = true;
        return v;
}

static int read_site(sqlite3_stmt *st, SiteCount *ret) {
        bool failed = false;
        SiteCount c = {
                .kind = (SiteKind) sqlite3_column_int(st, 0),
                .vector = (unsigned) sqlite3_column_int64(st, 1),
                .period = (uint32_t) sqlite3_column_int64(st, 2),
                .dev = (uint64_t) sqlite3_column_int64(st, 4),
                .ino = (uint64_t) sqlite3_column_int64(st, 5),
                .offset = (uint64_t) sqlite3_column_int64(st, 6),
                .symbol_offset = (uint64_t) sqlite3_column_int64(st, 8), /* NULL reads as 0 */
                .memory = (MemoryKind) sqlite3_column_int(st, 9),
                .memory_dev = (uint64_t) sqlite3_column_int64(st, 11),
                .memory_ino = (uint64_t) sqlite3_column_int64(st, 12),
                .count = (uint64_t) sqlite3_column_int64(st, 13),
                /* After the total (14), so that the columns before keep their numbers. */
                .version = { .ctime_nsec = (uint64_t) sqlite3_column_int64(st, 15),
                             .generation = (uint32_t) sqlite3_column_int64(st, 16) },
                .time_ns = (uint64_t) sqlite3_column_int64(st, 17),
        };

        c.object = column_strdup_or_null(st, 3, &failed);
        c.symbol = column_strdup_or_null(st, 7, &failed);
        c.memory_object = column_strdup_or_null(st, 10, &failed);
        if (failed || !c.object) {
                site_count_done(&c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

static int sites_read(Store *s, int64_t process_id, uint64_t since_usec, uint64_t until_usec, int kind, size_t limit,
                      SiteCount **ret, size_t *ret_n, uint64_t *ret_other) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        TierSegment seg[TIER_MAX_SEGMENTS];
        TierState tiers[_TIER_MAX];
        SiteCount *sites = NULL;
        size_t n = 0, capacity = 0, n_seg;
        uint64_t total = 0;
        int rc, r;

        if (kind >= _SITE_KIND_MAX)
                return -EINVAL;

        r = store_load_tiers(s, tiers);
        if (r < 0)
                goto finish;
        n_seg = tier_plan(tiers, (1U << _TIER_MAX) - 1, since_usec, until_usec, seg);
        r = prepare_over(s, &st, SITES_SQL, STORE_KIND_SITE, seg, n_seg, "process_id = ?1 AND (?2 < 0 OR kind = ?2)");
        if (r < 0)
                goto finish;
        sqlite3_bind_int64(st, 1, process_id);
        sqlite3_bind_int64(st, 2, kind);
        sqlite3_bind_int64(st, 3, clamp_i64(limit));

        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                r = array_grow((void **) &sites, &capacity, n, 1, sizeof(*sites));
                if (r < 0)
                        goto finish;
                r = read_site(st, &sites[n]);
                if (r < 0)
                        goto finish;
                total = (uint64_t) sqlite3_column_int64(st, 14);
                n++;
        }
        if (rc != SQLITE_DONE)
                r = sqlite_to_errno(rc) ?: -EIO;
finish:
        if (r < 0) {
                site_counts_free(sites, n);
                return r;
        }
        *ret = sites;
        *ret_n = n;
        if (ret_other)
                *ret_other = total - n;
        return 0;
}

/* The queries that plan their reads over the tiers read the tiers' marks and the rows in one
 * snapshot, so that a maintenance step in between cannot move a stretch into another tier than
 * the one planned for it (read twice, or not). Those that read the samples read the ticks still
 * in sample_pending too (Top, History, UnitHistory), so they never wait for a fold; on the
 * writer's own connection (the unit tests') they fold them first all the same. */

int store_top(Store *s, uint64_t since_usec, const char *sort, size_t limit, int64_t uid, const ProcessFilter *filter,
              StoreRow **ret, size_t *ret_n, uint64_t *ret_other) {
        int r;

        (void) store_pending_settle(s);
        r = store_snapshot_begin(s);
        if (r < 0)
                return r;
        r = top_read(s, since_usec, sort, limit, uid, filter, ret, ret_n, ret_other);
        store_snapshot_end(s);
        return r;
}

int store_sites(Store *s, int64_t process_id, uint64_t since_usec, uint64_t until_usec, int kind, size_t limit,
                SiteCount **ret, size_t *ret_n, uint64_t *ret_other) {
        int r;

        /* Sites are written with their tick, never pending: nothing to settle. */
        r = store_snapshot_begin(s);
        if (r < 0)
                return r;
        r = sites_read(s, process_id, since_usec, until_usec, kind, limit, ret, ret_n, ret_other);
        store_snapshot_end(s);
        return r;
}
