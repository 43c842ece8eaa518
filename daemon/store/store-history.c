/* SPDX-License-Identifier: MIT */
/* History and UnitHistory: the samples of one process, or summed over the processes of units,
 * merged into intervals, from the tiers and from the ticks still pending, in the caller's
 * snapshot. Only reads what it is asked: who may see what and the step of a history when none
 * is asked for are decided by the methods (daemon/methods.c), not here. */
#include "store-read.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array-util.h"
#include "store-pending.h"

/* The processes a history sums over: as SQL over process_id, and as a list for the pending
 * ticks (which are not in SQL rows of their own). */
typedef struct HistoryProcesses {
        const char *where;    /* its ?1 bound to text, or to value when text is NULL */
        const char *text;
        int64_t value;
        const int64_t *ids;   /* the same processes, ascending */
        size_t n_ids;
} HistoryProcesses;

typedef struct RowsByTime {
        StoreHistoryRow *rows;
        size_t n;
        bool oom;
} RowsByTime;

void store_history_rows_free(StoreHistoryRow *rows, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(rows[i].traps);
        free(rows);
}

/* Intervals are sorted: binary search. NULL when there is no row at t. */
static StoreHistoryRow *history_row_at(RowsByTime *r, int64_t t) {
        size_t lo = 0, hi = r->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if ((int64_t) r->rows[mid].time_usec < t)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == r->n || (int64_t) r->rows[lo].time_usec != t)
                return NULL;
        return &r->rows[lo];
}

/* A CountsQuery's find: the interval's FaultTime, Stall, or its Traps. Every interval with traps,
 * fault time or a stall has a sample row (its traps, time_ns and stall_ns; store_flush()); its
 * Traps is made at its first trap. */
static void *history_counts_by_time(const StoreKind *kind, int64_t t, void *userdata) {
        RowsByTime *r = userdata;
        StoreHistoryRow *row = history_row_at(r, t);

        if (!row)
                return NULL;
        if (kind == &store_kinds[STORE_KIND_FAULT_TIME])
                return &row->fault_time;
        if (kind == &store_kinds[STORE_KIND_STALL])
                return &row->stall;
        if (!row->traps)
                row->traps = calloc(1, sizeof(*row->traps));
        r->oom = r->oom || !row->traps;
        return row->traps;
}

/* Adds the pending deltas of the processes in [since, until) to the row of their interval of
 * width r_usec, inserting it where there is none (rows stay sorted by time). */
static int history_add_pending(Store *s, const HistoryProcesses *procs, uint64_t since_usec, uint64_t until_usec,
                               uint64_t r_usec, StoreHistoryRow **rows, size_t *n, size_t *capacity) {
        _cleanup_free_ PendingSample *pending = NULL;
        size_t n_pending;
        int r;

        r = store_pending_read(s, procs->ids, procs->n_ids, &pending, &n_pending);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_pending; i++) {
                const PendingSample *x = &pending[i];
                uint64_t t = x->bucket_usec - x->bucket_usec % r_usec;
                size_t at = *n;

                if (x->bucket_usec < since_usec || x->bucket_usec >= until_usec)
                        continue;
                /* Pending buckets are the newest, and come in bucket order: look from the end. */
                while (at > 0 && (*rows)[at - 1].time_usec > t)
                        at--;
                if (at == 0 || (*rows)[at - 1].time_usec != t) {
                        StoreHistoryRow *p;

                        if (array_grow((void **) rows, capacity, *n, 1, sizeof(**rows)) < 0)
                                return -ENOMEM;
                        p = *rows;
                        memmove(&p[at + 1], &p[at], (*n - at) * sizeof(*p));
                        p[at] = (StoreHistoryRow) { .time_usec = t };
                        (*n)++;
                        at++;
                }
                faults_add(&(*rows)[at - 1].faults, &x->delta);
        }
        return 0;
}

/* The SQL of one process's samples at a resolution of r_usec, without a sorter: per segment its
 * rows as they are where the tier's width is the resolution (the primary key (process_id,
 * time_usec) makes them one per interval already), else summed per interval, in the order of
 * the segments. A day at 60 s is 1440 minute rows; sorting them to group them cost about as
 * much as reading them. Columns: the interval, then the fault fields; ?1: the process. */
static char *history_one_sql(Store *s, const TierSegment *seg, size_t n, uint64_t r_usec) {
        const StoreKind *k = &store_kinds[STORE_KIND_SAMPLE];
        char *buf = NULL;
        size_t size = 0;
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                fputs(i ? " UNION ALL " : "", f);
                if (tier_width_usec[seg[i].tier] == r_usec)
                        fprintf(f, "SELECT time_usec AS t, %s FROM %s WHERE process_id = ?1", s->columns,
                                k->tables[seg[i].tier]);
                else
                        fprintf(f, "SELECT (time_usec / %" PRIu64 ") * %" PRIu64 " AS t, %s FROM %s WHERE process_id = ?1",
                                r_usec, r_usec, s->sums, k->tables[seg[i].tier]);
                fprintf(f, " AND time_usec >= %" PRId64 " AND time_usec < %" PRId64 "%s", clamp_i64(seg[i].from),
                        clamp_i64(seg[i].to), tier_width_usec[seg[i].tier] == r_usec ? "" : " GROUP BY t");
        }
        if (n == 0)
                fprintf(f, "SELECT 0 AS t, %s FROM %s WHERE 0", s->columns, k->tables[TIER_RAW]);
        return memstream_done(f, &buf);
}

static int row_time_compare(const void *a, const void *b) {
        uint64_t x = ((const StoreHistoryRow *) a)->time_usec, y = ((const StoreHistoryRow *) b)->time_usec;

        return x < y ? -1 : x > y;
}

/* Rows of history_one_sql() as the grouped query gives them: sorted by time, one per interval.
 * The segments come in time order, but two adjacent ones can end and start in the same
 * interval of a resolution coarser than both tiers (120 s over minute and raw rows); and SQLite
 * does not promise the order of a UNION ALL: then sort first. */
static void history_rows_merge(StoreHistoryRow *rows, size_t *n) {
        size_t m = 0;

        for (size_t i = 1; i < *n; i++)
                if (rows[i].time_usec < rows[i - 1].time_usec) {
                        qsort(rows, *n, sizeof(*rows), row_time_compare);
                        break;
                }
        for (size_t i = 0; i < *n; i++) {
                if (m > 0 && rows[m - 1].time_usec == rows[i].time_usec)
                        faults_add(&rows[m - 1].faults, &rows[i].faults);
                else
                        rows[m++] = rows[i];
        }
        *n = m;
}

/* The sample kind's rows of the processes over the segments, summed per interval of r_usec
 * (group: the SQL of that interval), in time order: *ret_n rows in *ret, of *ret_capacity. */
static int history_read_samples(Store *s, const HistoryProcesses *procs, const TierSegment *seg, size_t n_seg,
                                uint64_t r_usec, const char *group, StoreHistoryRow **ret, size_t *ret_n,
                                size_t *ret_capacity) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *fmt = NULL;
        StoreHistoryRow *rows = NULL;
        size_t n = 0, capacity = 0;
        bool one = procs->n_ids == 1 && !procs->text;
        int rc, r;

        if (one) {
                _cleanup_free_ char *sql = history_one_sql(s, seg, n_seg, r_usec);

                r = sql ? sql_prepare(s->db, &st, "%s", sql) : -ENOMEM;
        } else {
                if (asprintf(&fmt, "SELECT %s AS t, %s FROM (%%s) GROUP BY t ORDER BY t", group, s->sums) < 0)
                        return -ENOMEM;
                r = prepare_over(s, &st, fmt, STORE_KIND_SAMPLE, seg, n_seg, procs->where);
        }
        if (r < 0)
                return r;
        if (procs->text)
                sqlite3_bind_text(st, 1, procs->text, -1, SQLITE_STATIC);
        else
                sqlite3_bind_int64(st, 1, procs->value);

        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                if (array_grow((void **) &rows, &capacity, n, 1, sizeof(*rows)) < 0) {
                        free(rows);
                        return -ENOMEM;
                }
                memset(&rows[n], 0, sizeof(rows[n]));
                rows[n].time_usec = (uint64_t) sqlite3_column_int64(st, 0);
                read_faults(st, 1, &rows[n].faults);
                n++;
        }
        if (rc != SQLITE_DONE) {
                free(rows);
                return sqlite_to_errno(rc) ?: -EIO;
        }
        if (one)
                history_rows_merge(rows, &n);
        *ret = rows;
        *ret_n = n;
        *ret_capacity = capacity;
        return 0;
}

static int history_read(Store *s, const HistoryProcesses *procs, uint64_t since_usec, uint64_t until_usec,
                        uint64_t resolution_usec, StoreHistoryRow **ret, size_t *ret_n) {
        _cleanup_free_ char *group = NULL;
        TierSegment seg[TIER_MAX_SEGMENTS];
        TierState tiers[_TIER_MAX];
        StoreHistoryRow *rows = NULL;
        size_t n = 0, capacity = 0, n_seg;
        uint64_t r_usec = resolution_usec;
        int r;

        if (r_usec == 0 || r_usec % STORE_RAW_BUCKET_USEC != 0 || r_usec > INT64_MAX)
                return -EINVAL;

        /* The coarsest tiers that still give this resolution: their intervals nest in it. */
        r = store_load_tiers(s, tiers);
        if (r < 0)
                return r;
        n_seg = tier_plan(tiers, tier_allowed_for_resolution(tiers, r_usec), since_usec, until_usec, seg);

        if (asprintf(&group, "(time_usec / %" PRIu64 ") * %" PRIu64, r_usec, r_usec) < 0)
                return -ENOMEM;
        r = history_read_samples(s, procs, seg, n_seg, r_usec, group, &rows, &n, &capacity);
        if (r < 0)
                return r;
        /* The ticks still pending, in this same read: a History that shows the process exited
         * has its last ticks too (the writer folds them into the raw tier only now and then). */
        r = history_add_pending(s, procs, since_usec, until_usec, r_usec, &rows, &n, &capacity);
        if (r < 0) {
                free(rows);
                return r;
        }
        RowsByTime by_time = { rows, n };
        CountsQuery q = { .group = group,
                          .where = procs->where,
                          .text = procs->text,
                          .value = procs->value,
                          .find = history_counts_by_time,
                          .userdata = &by_time };
        r = read_traps(s, seg, n_seg, &q);
        if (r >= 0)
                r = read_fault_time(s, seg, n_seg, &q);
        if (r >= 0)
                r = read_stall(s, seg, n_seg, &q);
        if (r >= 0 && by_time.oom)
                r = -ENOMEM;
        if (r < 0) {
                store_history_rows_free(rows, n);
                return r;
        }
        *ret = rows;
        *ret_n = n;
        return 0;
}

int store_history(Store *s, int64_t process_id, uint64_t since_usec, uint64_t until_usec, uint64_t resolution_usec,
                  StoreHistoryRow **ret, size_t *ret_n) {
        HistoryProcesses one = { .where = "process_id = ?1", .value = process_id, .ids = &process_id, .n_ids = 1 };

        assert(store_in_snapshot(s));
        return history_read(s, &one, since_usec, until_usec, resolution_usec, ret, ret_n);
}

void store_group_history_done(StoreGroupHistory *h) {
        for (size_t i = 0; i < h->n_units; i++)
                free(h->units[i]);
        free(h->units);
        free(h->containers);
        store_history_rows_free(h->rows, h->n_rows);
        free(h->ids);
        free(h->ids_json);
        *h = (StoreGroupHistory) {};
}

/* The group's processes, as SQL after "FROM process WHERE ": ?1 the glob or the container, ?2 the
 * caller's uid (< 0: everyone's), ?3 whether the container may be an id's prefix, ?4 the caller's
 * pid namespace (0: every one). No index on unit:
 * a glob is searched through the whole table, as ListProcesses does. A process without a unit
 * matches no glob (NULL GLOB anything is NULL), one without a container no container. */
static const char *group_where(const StoreGroup *g) {
        return g->unit_glob
                       ? "unit GLOB ?1 AND (?2 < 0 OR uid = ?2) AND " STORE_PIDNS_WHERE("?4")
                       : STORE_CONTAINER_WHERE("?1", "?3") " AND (?2 < 0 OR uid = ?2) AND " STORE_PIDNS_WHERE("?4");
}

static int group_prepare(Store *s, const char *fmt, const StoreGroup *g, int64_t uid, sqlite3_stmt **ret) {
        int r = sql_prepare(s->db, ret, fmt, group_where(g));

        if (r < 0)
                return r;
        sqlite3_bind_text(*ret, 1, g->unit_glob ?: g->container, -1, SQLITE_STATIC);
        sqlite3_bind_int64(*ret, 2, uid);
        sqlite3_bind_int(*ret, 3, g->container && container_query_is_prefix(g->container));
        sqlite3_bind_int64(*ret, 4, g->pidns);
        return 0;
}

/* The group's processes that the caller may see: their ids ascending (also as a JSON array, for
 * SQL), how many overlap the range and run, the earliest first seen. */
static int group_processes_read(Store *s, const StoreGroup *g, int64_t uid, uint64_t since_usec, uint64_t until_usec,
                                StoreGroupHistory *h) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        size_t capacity = 0, json_size = 0;
        FILE *json;
        int rc, r;

        r = group_prepare(s, "SELECT id, first_seen_usec, last_seen_usec, exited FROM process WHERE %s ORDER BY id", g,
                          uid, &st);
        if (r < 0)
                return r;

        h->first_seen_usec = UINT64_MAX;
        json = open_memstream(&h->ids_json, &json_size);
        if (!json)
                return -ENOMEM;
        fputc('[', json);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0);
                uint64_t first = (uint64_t) sqlite3_column_int64(st, 1), last = (uint64_t) sqlite3_column_int64(st, 2);
                bool exited = sqlite3_column_int(st, 3) != 0;
                r = array_grow((void **) &h->ids, &capacity, h->n_ids, 1, sizeof(*h->ids));
                if (r < 0)
                        break;
                fprintf(json, "%s%" PRId64, h->n_ids ? "," : "", id);
                h->ids[h->n_ids++] = id;
                h->first_seen_usec = MIN(h->first_seen_usec, first);
                /* A running process's last seen lags up to a bucket behind: it lives until now. */
                if (first < until_usec && (!exited || last >= since_usec)) {
                        h->processes++;
                        h->running += !exited;
                }
        }
        fputc(']', json);
        if (fclose(json) != 0 && r >= 0)
                r = -ENOMEM;
        if (r >= 0 && rc != SQLITE_DONE)
                r = sqlite_to_errno(rc) ?: -EIO;
        if (r >= 0 && h->n_ids == 0)
                r = -ENOENT;
        return r;
}

static int unit_names_read(Store *s, const StoreGroup *g, int64_t uid, StoreGroupHistory *h) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        size_t capacity = 0;
        int rc, r;

        /* ORDER BY compares as memcmp() does (BINARY): sorted as strcmp() sorts. */
        r = group_prepare(s, "SELECT DISTINCT unit FROM process WHERE %s ORDER BY unit", g, uid, &st);
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const unsigned char *name = sqlite3_column_text(st, 0);
                if (array_grow((void **) &h->units, &capacity, h->n_units, 1, sizeof(*h->units)) < 0)
                        return -ENOMEM;
                h->units[h->n_units] = strdup(name ? (const char *) name : "");
                if (!h->units[h->n_units])
                        return -ENOMEM;
                h->n_units++;
        }
        return rc == SQLITE_DONE ? 0 : sqlite_to_errno(rc) ?: -EIO;
}

/* The containers the name matched: more than one where an id's prefix is that of several. */
static int container_names_read(Store *s, const StoreGroup *g, int64_t uid, StoreGroupHistory *h) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        size_t capacity = 0;
        int rc, r;

        r = group_prepare(s,
                          "SELECT DISTINCT container_runtime, container_id, container_name, container_pod, "
                          "container_user FROM process WHERE %s ORDER BY container_runtime, container_id",
                          g, uid, &st);
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                _cleanup_free_ Container *c = NULL;

                r = read_container(st, 0, &c);
                if (r < 0)
                        return r;
                if (!c)
                        continue;
                if (array_grow((void **) &h->containers, &capacity, h->n_containers, 1, sizeof(*h->containers)) < 0)
                        return -ENOMEM;
                h->containers[h->n_containers++] = *c;
        }
        return rc == SQLITE_DONE ? 0 : sqlite_to_errno(rc) ?: -EIO;
}

int store_group_history_find(Store *s, const StoreGroup *group, int64_t uid, uint64_t since_usec,
                             uint64_t until_usec, StoreGroupHistory *ret) {
        StoreGroupHistory h = {};
        int r;

        assert(store_in_snapshot(s));
        assert(!group->unit_glob != !group->container);
        r = group_processes_read(s, group, uid, since_usec, until_usec, &h);
        if (r >= 0)
                r = group->unit_glob ? unit_names_read(s, group, uid, &h) : container_names_read(s, group, uid, &h);
        if (r < 0) {
                store_group_history_done(&h);
                return r;
        }
        *ret = h;
        return 0;
}

int store_group_history_read(Store *s, StoreGroupHistory *h, uint64_t since_usec, uint64_t until_usec,
                            uint64_t resolution_usec) {
        HistoryProcesses units = { .where = "process_id IN (SELECT value FROM json_each(?1))",
                                   .text = h->ids_json,
                                   .ids = h->ids,
                                   .n_ids = h->n_ids };

        assert(store_in_snapshot(s));
        assert(!h->rows);
        return history_read(s, &units, since_usec, until_usec, resolution_usec, &h->rows, &h->n_rows);
}
