/* SPDX-License-Identifier: MIT */
/* ListProcesses and finding one process (History's first step): the rows of table process.
 * Only reads. */
#include "store-read.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "array-util.h"

void process_infos_free(ProcessInfo *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                process_info_done(&p[i]);
        free(p);
}

/* The filter of store_list_processes() as SQL, its members bound by list_bind(). */
#define LIST_WHERE                                                                                      \
        "(?1 = 0 OR ?11 != 0 OR pid = ?1) AND (?2 OR NOT exited) AND (?3 < 0 OR uid = ?3) "                     \
        "AND (?5 IS NULL OR comm GLOB ?5) AND (?11 = 0 OR process.id IN (SELECT process_id FROM process_pidns "  \
        "WHERE ns = ?11 AND (?1 = 0 OR pid = ?1))) "                                                              \
        "AND (?6 IS NULL OR unit = ?6) AND (?9 IS NULL OR " STORE_CONTAINER_WHERE("?9", "?10") ")"
/* And after a page's end, a range of the index process_by_first_seen (a condition "?7 IS NULL
 * OR ..." would have SQLite scan it from the newest on every page). */
#define LIST_AFTER " AND (first_seen_usec, id) < (?7, ?8)"

static void list_bind(sqlite3_stmt *st, const StoreProcessFilter *filter) {
        sqlite3_bind_int64(st, 1, filter->pid);
        sqlite3_bind_int(st, 2, filter->include_exited);
        sqlite3_bind_int64(st, 3, filter->uid);
        sqlite3_bind_int64(st, 4, (int64_t) filter->limit);
        sqlite3_bind_text(st, 5, filter->comm_glob, -1, SQLITE_STATIC); /* NULL binds NULL */
        sqlite3_bind_text(st, 6, filter->unit, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 9, filter->container, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 10, filter->container && container_query_is_prefix(filter->container));
        sqlite3_bind_int64(st, 11, filter->pidns);
        if (filter->after) {
                sqlite3_bind_int64(st, 7, (int64_t) filter->after->first_seen_usec);
                sqlite3_bind_int64(st, 8, filter->after->id);
        }
}

/* How many processes the filter lets through, limit aside: a statement of its own, since
 * COUNT(*) OVER () beside the rows would have SQLite sort every matching row, command lines
 * and all, instead of keeping only the first limit. */
static int list_count(Store *s, const StoreProcessFilter *filter, uint64_t *ret) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int rc, r;

        r = sql_prepare(s->db, &st, /* ?4, the limit, unused */
                        filter->after ? "SELECT COUNT(*) FROM process WHERE " LIST_WHERE LIST_AFTER
                                      : "SELECT COUNT(*) FROM process WHERE " LIST_WHERE);
        if (r < 0)
                return r;
        list_bind(st, filter);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sqlite_to_errno(rc) ?: -EIO;
        *ret = (uint64_t) sqlite3_column_int64(st, 0);
        return 0;
}

/* The page, and where it ends (*ret_next). The order is the index process_by_first_seen's,
 * whose entries end in the row's id: a page after a cursor is a range of it. */
static int list_read(Store *s, const StoreProcessFilter *filter, ProcessInfo **ret, size_t *ret_n,
                     StoreListCursor *ret_next) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        ProcessInfo *list = NULL;
        size_t n = 0, capacity = 0;
        int rc, r;

#define LIST_SELECT "SELECT id, " PROCESS_COLUMNS " FROM process WHERE " LIST_WHERE
#define LIST_ORDER " ORDER BY first_seen_usec DESC, id DESC LIMIT ?4"
        r = sql_prepare(s->db, &st, filter->after ? LIST_SELECT LIST_AFTER LIST_ORDER : LIST_SELECT LIST_ORDER);
#undef LIST_SELECT
#undef LIST_ORDER
        if (r < 0)
                return r;
        list_bind(st, filter);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                if (array_grow((void **) &list, &capacity, n, 1, sizeof(*list)) < 0) {
                        process_infos_free(list, n);
                        return -ENOMEM;
                }
                r = read_process(st, 1, &list[n]);
                if (r < 0) {
                        process_infos_free(list, n);
                        return r;
                }
                *ret_next = (StoreListCursor) { .first_seen_usec = list[n].first_seen_usec,
                                                .id = sqlite3_column_int64(st, 0) };
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
                         uint64_t *ret_total, StoreListCursor *ret_next) {
        ProcessInfo *list = NULL;
        StoreListCursor next = {};
        uint64_t total = 0;
        size_t n = 0;
        int r;

        /* The count and the rows from the caller's one snapshot: total is never below n.
         * Counted only when the limit was reached: a scan of every matching row (17 ms for 14000
         * processes). */
        assert(store_in_snapshot(s));
        r = list_read(s, filter, &list, &n, &next);
        total = n;
        if (r >= 0 && ret_total && n >= filter->limit) {
                r = list_count(s, filter, &total);
                if (r < 0)
                        process_infos_free(list, n);
        }
        if (r < 0)
                return r;
        *ret = list;
        *ret_n = n;
        if (ret_total)
                *ret_total = total;
        if (ret_next)
                *ret_next = next;
        return 0;
}

/* The newest process of the statement's result (id, PROCESS_COLUMNS), the statement reset. */
static int find_first(sqlite3_stmt *st, int64_t *ret_id, ProcessInfo *ret) {
        int rc, r;

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

int store_find_process(Store *s, uint32_t pid, uint64_t start_time, int64_t *ret_id, ProcessInfo *ret) {
        sqlite3_stmt *st = start_time ? s->find_process : s->find_newest_process;

        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, pid);
        if (start_time)
                sqlite3_bind_int64(st, 2, (int64_t) start_time);
        return find_first(st, ret_id, ret);
}

int store_find_process_in_ns(Store *s, uint32_t ns, uint32_t pid, uint64_t start_time, int64_t *ret_id,
                             ProcessInfo *ret) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int r;

        /* Rare (a caller in a pid namespace asks): prepared for the call. */
        r = sql_prepare(s->db, &st,
                        "SELECT id, " PROCESS_COLUMNS " FROM process WHERE id IN (SELECT process_id FROM process_pidns "
                        "WHERE ns = ?1 AND pid = ?2) AND (?3 = 0 OR start_time = ?3) "
                        "ORDER BY first_seen_usec DESC, id DESC LIMIT 1");
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, ns);
        sqlite3_bind_int64(st, 2, pid);
        sqlite3_bind_int64(st, 3, (int64_t) start_time);
        return find_first(st, ret_id, ret);
}
