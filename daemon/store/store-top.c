/* SPDX-License-Identifier: MIT */
/* Top and Traps: the processes of a window since a time, ranked by a sort column, with their
 * counts; and the traps of every process the caller may see since a time. Only reads. */
#include "store-read.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array-util.h"
#include "store-pending.h"

void store_rows_free(StoreRow *rows, size_t n) {
        for (size_t i = 0; i < n; i++)
                process_info_done(&rows[i].process);
        free(rows);
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

/* A CountsQuery's find: the ranked process's Traps, FaultTime or Stall. */
static void *top_counts_by_id(const StoreKind *kind, int64_t id, void *userdata) {
        StoreRow *row = top_row_by_id(userdata, id);

        if (!row)
                return NULL;
        if (kind == &store_kinds[STORE_KIND_FAULT_TIME])
                return &row->fault_time;
        return kind == &store_kinds[STORE_KIND_STALL] ? (void *) &row->stall : (void *) &row->traps;
}

#define FILTER_WHERE_MAX 512
/* The conditions on table process of the processes filter lets through: "" for an empty filter,
 * else " AND ..." with its members bound by filter_bind(). */
static const char *filter_where(const ProcessFilter *f, char buf[static FILTER_WHERE_MAX]) {
        if (!f || process_filter_is_empty(f))
                return "";
        /* A caller in a pid namespace names processes by their pids there. */
        snprintf(buf, FILTER_WHERE_MAX, "%s%s%s%s%s%s",
                 f->n_pids == 0 ? ""
                 : f->pidns ? " AND process.id IN (SELECT process_id FROM process_pidns WHERE ns = ?15 AND "
                                   "pid IN (SELECT value FROM json_each(?7)))"
                                 : " AND pid IN (SELECT value FROM json_each(?7))",
                 f->uid >= 0 ? " AND uid = ?4" : "", f->unit ? " AND unit GLOB ?5" : "",
                 f->comm ? " AND comm GLOB ?6" : "", f->container ? " AND " STORE_CONTAINER_WHERE("?13", "?14") : "",
                 f->pidns ? " AND " STORE_PIDNS_WHERE("?15") : "");
        return buf;
}

/* The members of filter_where(): the uid as ?4, the globs as ?5 and ?6, the pids as a JSON array
 * in ?7 (pids_json, at least FILTER_PIDS_JSON_MAX bytes, holds it while st runs), the container
 * as ?13 and whether it may be an id's prefix as ?14 (?8 to ?12 are the ranking's), the caller's
 * pid namespace as ?15. */
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
        sqlite3_bind_text(st, 13, f->container, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 14, f->container && container_query_is_prefix(f->container));
        sqlite3_bind_int64(st, 15, f->pidns);
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

static uint64_t pending_value(const PendingSample *p, const SortKey *key) {
        switch (key->what) {
        case SORT_FAULTS:
                return faults_get(&p->delta, key->field);
        case SORT_TRAPS:
                return p->traps;
        case SORT_STALL:
                return p->stall_ns;
        default:
                return p->time_ns;
        }
}

/* A process Top ranks: its count of the sort column in the window (or, in the walk, the bound on
 * it: its total). */
typedef struct Ranked {
        int64_t id;
        uint64_t v;
} Ranked;

/* Top's order: the larger count first, ties the newer process row first. */
static int ranked_compare(const void *a, const void *b) {
        const Ranked *x = a, *y = b;

        if (x->v != y->v)
                return x->v > y->v ? -1 : 1;
        return x->id > y->id ? -1 : x->id < y->id;
}

/* The statements of the ranking; each has the caller's uid as ?3, the filter (filter_bind()) and
 * the window's first raw bucket as ?12. */
typedef struct TopRanking {
        sqlite3_stmt *sum;   /* ids ?9 (JSON) -> (id, their sum in the window's tiers, or NULL) */
        sqlite3_stmt *walk;  /* (id, total) of a total above 0, by total, after (?10, ?11), LIMIT ?2 */
        sqlite3_stmt *zeros; /* (id, 0) of a total of 0, by id, below ?11, LIMIT ?2 */
        sqlite3_stmt *count; /* how many processes counted in the window */
        sqlite3_stmt *bounds; /* ids ?9 (JSON) -> (id, total or NULL, last counted or NULL) */
        Ranked *best;        /* the best summed so far, in Top's order, at most limit */
        size_t n_best, capacity, limit;
} TopRanking;

static void top_ranking_done(TopRanking *k) {
        sqlite3_finalize(k->sum);
        sqlite3_finalize(k->walk);
        sqlite3_finalize(k->zeros);
        sqlite3_finalize(k->count);
        sqlite3_finalize(k->bounds);
        free(k->best);
}

/* The parameter of the uid whose processes are few enough to be ranked alone (?3, the caller's;
 * ?4, the filter's), or NULL: at most s->top_own_max of them, counted only that far on the
 * process_by_uid index. The walk by total passes everyone's processes that count more before it
 * meets a user's own, which for a user with few among many is a walk of everyone's; their own are
 * at most top_own_max, read by uid and sorted. */
static int top_owner(Store *s, int64_t uid, const ProcessFilter *filter, const char **ret) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int64_t owner = uid >= 0 ? uid : filter ? filter->uid : -1;
        int r;

        *ret = NULL;
        if (owner < 0)
                return 0;
        r = sql_prepare(s->db, &st, "SELECT COUNT(*) FROM (SELECT 1 FROM process WHERE uid = ?1 LIMIT ?2)");
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, owner);
        sqlite3_bind_int64(st, 2, clamp_i64(s->top_own_max + 1));
        r = sqlite3_step(st);
        if (r != SQLITE_ROW)
                return sqlite_to_errno(r) ?: -EIO;
        if ((uint64_t) sqlite3_column_int64(st, 0) <= s->top_own_max)
                *ret = uid >= 0 ? "?3" : "?4";
        return 0;
}

static int top_ranking_prepare(Store *s, const TierSegment *seg, size_t n_seg, const char *column, int64_t uid,
                               const ProcessFilter *filter, uint64_t since_bucket, char *pids_json, TopRanking *k) {
        _cleanup_free_ char *value = NULL, *u = NULL, *visible = NULL, *from = NULL;
        const char *owner;
        sqlite3_stmt **all[] = { &k->sum, &k->walk, &k->zeros, &k->count, &k->bounds };
        char filter_buf[FILTER_WHERE_MAX];
        int r;

        r = top_owner(s, uid, filter, &owner);
        if (r < 0)
                return r;
        /* The totals to walk: everyone's by the sort column's index, or one user's processes by
         * uid (CROSS JOIN: in that order), whose few rows are sorted. */
        if (asprintf(&value, "SUM(%s) AS v", column) < 0 ||
            asprintf(&visible, "(?3 < 0 OR uid = ?3)%s", filter_where(filter, filter_buf)) < 0 ||
            (owner ? asprintf(&from, "process CROSS JOIN process_total AS t ON t.process_id = process.id "
                                     "WHERE process.uid = %s AND", owner)
                   : asprintf(&from, "process_total AS t JOIN process ON process.id = t.process_id WHERE")) < 0)
                return -ENOMEM;
        u = store_kind_union_per_process(&store_kinds[STORE_KIND_SAMPLE], seg, n_seg, value,
                                         "id IN (SELECT value FROM json_each(?9))");
        if (!u)
                return -ENOMEM;
        r = sql_prepare(s->db, &k->sum,
                        "SELECT process.id, t.v FROM process LEFT JOIN (SELECT process_id, SUM(v) AS v FROM (%s) "
                        "GROUP BY process_id) AS t ON t.process_id = process.id "
                        "WHERE process.id IN (SELECT value FROM json_each(?9)) AND %s",
                        u, visible);
        if (r >= 0)
                r = sql_prepare(s->db, &k->walk,
                                "SELECT t.process_id, t.%1$s FROM %3$s t.%1$s > 0 AND (t.%1$s, t.process_id) < "
                                "(?10, ?11) AND t.last_counted_usec >= ?12 AND %2$s ORDER BY t.%1$s DESC, "
                                "t.process_id DESC LIMIT ?2",
                                column, visible, from);
        if (r >= 0)
                r = sql_prepare(s->db, &k->zeros,
                                "SELECT t.process_id, 0 FROM %3$s t.%1$s = 0 AND t.process_id < ?11 AND "
                                "t.last_counted_usec >= ?12 AND %2$s ORDER BY t.process_id DESC LIMIT ?2",
                                column, visible, from);
        if (r >= 0)
                r = sql_prepare(s->db, &k->bounds,
                                "SELECT process.id, t.%1$s, t.last_counted_usec FROM process LEFT JOIN process_total "
                                "AS t ON t.process_id = process.id WHERE process.id IN (SELECT value FROM "
                                "json_each(?9)) AND %2$s",
                                column, visible);
        /* Everyone's processes, unfiltered (root's call): an index range alone, without a
         * lookup of each process's row. */
        if (r >= 0)
                r = uid < 0 && (!filter || process_filter_is_empty(filter))
                            ? sql_prepare(s->db, &k->count,
                                          "SELECT COUNT(*) FROM process_total WHERE last_counted_usec >= ?12")
                            : sql_prepare(s->db, &k->count,
                                          "SELECT COUNT(*) FROM %s t.last_counted_usec >= ?12 AND %s", from, visible);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(all); i++) {
                sqlite3_bind_int64(*all[i], 3, uid);
                sqlite3_bind_int64(*all[i], 12, clamp_i64(since_bucket));
                filter_bind(*all[i], filter, pids_json);
        }
        return 0;
}

/* Sums the window of the processes that ids (a JSON array) names and keeps the best of them
 * among k->best: those with rows in the window, and those with ticks pending (pending: their
 * sums, by process id). */
static int top_ranking_sum(TopRanking *k, const char *ids, const PendingSample *pending, size_t n_pending,
                           const SortKey *key) {
        sqlite3_stmt *st = k->sum;
        int rc, r;

        sqlite3_reset(st);
        sqlite3_bind_text(st, 9, ids, -1, SQLITE_STATIC);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                PendingSample find = { .process_id = sqlite3_column_int64(st, 0) };
                const PendingSample *p = n_pending > 0 ? bsearch(&find, pending, n_pending, sizeof(*pending),
                                                                 pending_sample_by_process)
                                                       : NULL;
                bool in_tiers = sqlite3_column_type(st, 1) != SQLITE_NULL;
                Ranked x = { .id = find.process_id, .v = (uint64_t) sqlite3_column_int64(st, 1) };

                if (!in_tiers && !p)
                        continue;
                if (p)
                        x.v += pending_value(p, key);
                r = array_grow((void **) &k->best, &k->capacity, k->n_best, 1, sizeof(*k->best));
                if (r < 0)
                        return r;
                k->best[k->n_best++] = x;
        }
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
                return sqlite_to_errno(rc) ?: -EIO;
        if (k->n_best > 0)
                qsort(k->best, k->n_best, sizeof(*k->best), ranked_compare);
        k->n_best = MIN(k->n_best, k->limit);
        return 0;
}

/* Whether no process after `last` in a walk can be among the best: they are full, and their last
 * ranks before `last`, whose total bounds every count after it. */
static bool top_ranking_full_before(const TopRanking *k, const Ranked *last) {
        return k->n_best >= k->limit && ranked_compare(&k->best[k->limit - 1], last) < 0;
}

/* One batch of the walk st (walk or zeros) after *cursor: sums the window of those it takes that
 * are not pending and moves the cursor to the last. Returns how many it took. */
static int top_ranking_step(TopRanking *k, sqlite3_stmt *st, size_t batch, Ranked *cursor,
                            const PendingSample *pending, size_t n_pending, const SortKey *key) {
        _cleanup_free_ int64_t *ids = NULL;
        _cleanup_free_ char *json = NULL;
        size_t n = 0, taken = 0;
        int rc, r;

        ids = calloc(batch, sizeof(*ids));
        if (!ids)
                return -ENOMEM;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 2, (int64_t) batch);
        sqlite3_bind_int64(st, 10, clamp_i64(cursor->v));
        sqlite3_bind_int64(st, 11, cursor->id);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                PendingSample find = { .process_id = sqlite3_column_int64(st, 0) };

                *cursor = (Ranked) { .id = find.process_id, .v = (uint64_t) sqlite3_column_int64(st, 1) };
                taken++;
                /* A process with ticks pending was summed before the walk, with them. */
                if (n_pending == 0 || !bsearch(&find, pending, n_pending, sizeof(*pending), pending_sample_by_process))
                        ids[n++] = find.process_id;
        }
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
                return sqlite_to_errno(rc) ?: -EIO;
        if (n > 0) {
                json = json_ids(ids, n, sizeof(*ids), 0);
                if (!json)
                        return -ENOMEM;
                r = top_ranking_sum(k, json, NULL, 0, key);
                if (r < 0)
                        return r;
        }
        return (int) taken;
}

/* The processes with ticks pending that the caller may see, each with the bound on its count in
 * the window: its total and its pending ticks; in Top's order, into *ret. Counts in
 * *ret_pending_only those that counted in no bucket of the window yet. */
static int top_ranking_pending(TopRanking *k, const PendingSample *pending, size_t n_pending, const SortKey *key,
                               uint64_t since_bucket, Ranked **ret, size_t *ret_n, uint64_t *ret_pending_only) {
        _cleanup_free_ char *ids = json_ids(pending, n_pending, sizeof(*pending), offsetof(PendingSample, process_id));
        _cleanup_free_ Ranked *a = calloc(MAX(n_pending, (size_t) 1), sizeof(*a));
        sqlite3_stmt *st = k->bounds;
        size_t n = 0;
        int rc;

        if (!ids || !a)
                return -ENOMEM;
        sqlite3_reset(st);
        sqlite3_bind_text(st, 9, ids, -1, SQLITE_STATIC);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < n_pending) {
                PendingSample find = { .process_id = sqlite3_column_int64(st, 0) };
                const PendingSample *p =
                        bsearch(&find, pending, n_pending, sizeof(*pending), pending_sample_by_process);

                if (!p)
                        continue;
                if (sqlite3_column_type(st, 2) == SQLITE_NULL ||
                    (uint64_t) sqlite3_column_int64(st, 2) < since_bucket)
                        (*ret_pending_only)++;
                a[n++] = (Ranked) { .id = find.process_id,
                                    .v = (uint64_t) sqlite3_column_int64(st, 1) + pending_value(p, key) };
        }
        sqlite3_reset(st);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW)
                return sqlite_to_errno(rc) ?: -EIO;
        if (n > 0)
                qsort(a, n, sizeof(*a), ranked_compare);
        *ret = TAKE_PTR(a);
        *ret_n = n;
        return 0;
}

/* Sums the window of up to batch of the pending processes from *i on that rank before the walk's
 * cursor (all of them once the walk is done), with their pending ticks. */
static int top_ranking_pending_step(TopRanking *k, const Ranked *bounds, size_t n_bounds, size_t *i, size_t batch,
                                    const Ranked *cursor, const PendingSample *pending, size_t n_pending,
                                    const SortKey *key) {
        _cleanup_free_ char *ids = NULL;
        size_t m = 0;

        while (*i + m < n_bounds && m < batch && (!cursor || ranked_compare(&bounds[*i + m], cursor) <= 0))
                m++;
        ids = json_ids(bounds + *i, m, sizeof(*bounds), offsetof(Ranked, id));
        if (!ids)
                return -ENOMEM;
        *i += m;
        return top_ranking_sum(k, ids, pending, n_pending, key);
}

/* Step 1 of Top: the processes of the window the caller may see and the filter lets through, by
 * the sum of the sort column in the tiers and in the ticks still pending (pending: their sums of
 * the window, by process id), largest first (ties: the newer process row first), at most limit;
 * their ids go into t->rows in that order, how many counted in the window into t->total.
 *
 * A process's sum over a window is at most its total (table process_total): counts only grow, and
 * retention and the size cap only remove rows; for a process with ticks pending (every process
 * active in the last 10 s), its total and its pending ticks. Two streams in the order of their
 * bounds, the pending processes (bounds read for all of them: one row lookup each) and a walk of
 * the others by total, largest first, give batches (limit + 16, doubling up to 4096) whose window is
 * summed; the ranking stops once the best are full and the next bound of both ranks below the last
 * of them: no process after it can enter. The processes whose total of the column is 0 come last,
 * by id, and only when the best are not full of counts above 0. What Top reads follows the
 * limit and the processes that count about as much as those shown, not every process of the window:
 * on 200 processes faulting beside 10000 that fault once, Top over 24 h reads the 36 processes of
 * its first batch (bench/live-bench.py). A filter that few processes pass walks the index further;
 * but a user's own processes, when they are few (top_owner()), are walked alone, by uid.
 *
 * How many counted in the window is counted from their last counted bucket (an index range): a
 * process the size cap took the window's rows of still counts there. */
static int top_rank(Store *s, const TierSegment *seg, size_t n_seg, const char *column, const SortKey *key,
                    size_t limit, int64_t uid, const ProcessFilter *filter, uint64_t since_bucket,
                    const PendingSample *pending, size_t n_pending, TopRows *t) {
        _cleanup_(top_ranking_done) TopRanking k = { .limit = limit };
        _cleanup_free_ Ranked *bounds = NULL;
        Ranked cursor = { .id = INT64_MAX, .v = INT64_MAX };
        char pids_json[FILTER_PIDS_JSON_MAX];
        size_t n_bounds = 0, i_bounds = 0, batch = limit + 16;
        sqlite3_stmt *walk;
        uint64_t pending_only = 0;
        int rc, r;

        r = top_ranking_prepare(s, seg, n_seg, column, uid, filter, since_bucket, pids_json, &k);
        if (r < 0)
                return r;
        walk = k.walk;
        if (n_pending > 0) {
                r = top_ranking_pending(&k, pending, n_pending, key, since_bucket, &bounds, &n_bounds, &pending_only);
                if (r < 0)
                        return r;
        }
        /* Two streams, each in Top's order of its bounds: the pending processes, and the walk (the
         * totals above 0, then those of 0). Each round takes a batch from the one whose next
         * bound ranks first, and the ranking ends once the last of the best ranks before both. */
        for (bool walk_done = limit == 0; limit > 0;) {
                bool from_pending = i_bounds < n_bounds && (walk_done || ranked_compare(&bounds[i_bounds], &cursor) <= 0);
                const Ranked *next = from_pending ? &bounds[i_bounds] : walk_done ? NULL : &cursor;

                if (!next || top_ranking_full_before(&k, next))
                        break;
                if (from_pending) {
                        r = top_ranking_pending_step(&k, bounds, n_bounds, &i_bounds, batch, walk_done ? NULL : &cursor,
                                                     pending, n_pending, key);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = top_ranking_step(&k, walk, batch, &cursor, pending, n_pending, key);
                if (r < 0)
                        return r;
                if ((size_t) r < batch) {
                        /* This part of the walk is done: the totals of 0 next, ranked by id. */
                        walk_done = walk == k.zeros;
                        walk = k.zeros;
                        cursor = (Ranked) { .id = INT64_MAX, .v = 0 };
                }
                batch = MIN(batch * 2, (size_t) 4096);
        }

        rc = sqlite3_step(k.count);
        if (rc != SQLITE_ROW)
                return sqlite_to_errno(rc) ?: -EIO;
        t->total = (uint64_t) sqlite3_column_int64(k.count, 0) + pending_only;

        t->rows = calloc(MAX(k.n_best, (size_t) 1), sizeof(*t->rows));
        t->by_id = calloc(MAX(k.n_best, (size_t) 1), sizeof(*t->by_id));
        t->filled = calloc(MAX(k.n_best, (size_t) 1), sizeof(*t->filled));
        if (!t->rows || !t->by_id || !t->filled)
                return -ENOMEM;
        for (size_t i = 0; i < k.n_best; i++) {
                t->rows[i] = (StoreRow) { .id = k.best[i].id };
                t->by_id[i] = &t->rows[i];
        }
        t->n = t->capacity = k.n_best;
        qsort(t->by_id, t->n, sizeof(*t->by_id), row_ptr_compare);
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
                        read_faults(st, 1 + PROCESS_COLUMNS_N, &row->faults);
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

/* Top in steps: the ranking (top_rank()) sums one column, not ten, and only of the processes its
 * walk takes; then the ranked processes' every column, traps and fault time. Each process's rows
 * of a tier segment are read as one range of the primary key (process_id, time_usec): reading a
 * window through the time index costs a primary-key lookup per row, and a covering index of it
 * and every column would double the tiers' size. EXPLAIN QUERY PLAN (SQLite 3.40) of the walk:
 *
 *   SEARCH t USING INDEX process_total_by_user (f_user>? AND f_user<?)
 *   SEARCH process USING INTEGER PRIMARY KEY (rowid=?)
 *
 * in the index's order, no sort; of the sums of a batch, for each tier segment:
 *
 *   SEARCH sample_<tier> USING PRIMARY KEY (process_id=? AND time_usec>? AND time_usec<?)
 *   LIST SUBQUERY: SEARCH process USING INTEGER PRIMARY KEY, SCAN json_each
 *
 * and of the count of the window's processes for an unfiltered call, SEARCH process_total USING
 * COVERING INDEX process_total_by_last_counted. The fill step is the same SEARCH ... USING
 * PRIMARY KEY for the ranked ids only. */
static int top_read(Store *s, uint64_t since_usec, const char *sort, size_t limit, int64_t uid,
                    const ProcessFilter *filter, StoreRow **ret, size_t *ret_n, uint64_t *ret_other) {
        _cleanup_(top_rows_done) TopRows t = {};
        _cleanup_free_ PendingSample *pending = NULL;
        _cleanup_free_ char *ids = NULL;
        uint64_t since_bucket = tier_floor(TIER_RAW, since_usec);
        TierSegment seg[TIER_MAX_SEGMENTS];
        TierState tiers[_TIER_MAX];
        size_t n_seg, n_pending = 0;
        char column[32];
        SortKey key;
        int r;

        /* The sort column comes from fault_fields or is "traps", "time_ns" or "stall_ns", never the
         * caller's text. */
        if (sort_key_from_name(sort, &key) < 0)
                return -EINVAL;
        if (key.what == SORT_FAULTS)
                snprintf(column, sizeof(column), "f_%s", key.field->column);
        else
                snprintf(column, sizeof(column), "%s",
                         key.what == SORT_TRAPS ? "traps" : key.what == SORT_STALL ? "stall_ns" : "time_ns");

        /* Whole hours and minutes of the window from the coarse tiers, the edges from finer
         * ones: a day is a few dozen rows per process, not thousands. */
        r = store_load_tiers(s, tiers);
        if (r < 0)
                return r;
        n_seg = tier_plan(tiers, (1U << _TIER_MAX) - 1, since_bucket, UINT64_MAX, seg);

        /* The ticks not yet folded into the raw tier are read as they are, ranked with the tiers:
         * Top never waits for the writer to fold them. */
        r = store_pending_sums(s, since_bucket, &pending, &n_pending);
        if (r < 0)
                return r;
        r = top_rank(s, seg, n_seg, column, &key, limit, uid, filter, since_bucket, pending, n_pending, &t);
        if (r < 0)
                return r;
        if (t.n > 0) {
                ids = json_ids(t.rows, t.n, sizeof(*t.rows), offsetof(StoreRow, id));
                if (!ids)
                        return -ENOMEM;
                r = top_fill(s, seg, n_seg, ids, &t);
                if (r >= 0 && n_pending > 0)
                        r = top_fill_processes(s, ids, &t);
                CountsQuery q = { .group = "process_id",
                                  .where = "process_id IN (SELECT value FROM json_each(?1))",
                                  .text = ids,
                                  .find = top_counts_by_id,
                                  .userdata = &t };
                if (r >= 0)
                        r = read_traps(s, seg, n_seg, &q);
                if (r >= 0)
                        r = read_fault_time(s, seg, n_seg, &q);
                if (r >= 0)
                        r = read_stall(s, seg, n_seg, &q);
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

static void *single_traps(const StoreKind *kind _unused_, int64_t key _unused_, void *userdata) {
        return userdata;
}

int store_traps(Store *s, uint64_t since_usec, int64_t uid, uint32_t pidns, Traps *ret, uint64_t *ret_processes) {
        _cleanup_finalize_ sqlite3_stmt *count = NULL;
        uint64_t since_bucket = tier_floor(TIER_RAW, since_usec);
        char where[256];
        TierSegment seg[TIER_MAX_SEGMENTS];
        TierState tiers[_TIER_MAX];
        Traps t = {};
        size_t n_seg;
        int rc, r;

        assert(store_in_snapshot(s));
        /* The namespace is a number of ours, not the caller's text: written into the SQL. */
        snprintf(where, sizeof(where),
                 "(?1 < 0 OR process_id IN (SELECT id FROM process WHERE uid = ?1)) AND (%1$" PRIu32 " = 0 OR "
                 "process_id IN (SELECT process_id FROM process_pidns WHERE ns = %1$" PRIu32 "))",
                 pidns);
        r = store_load_tiers(s, tiers);
        if (r < 0)
                return r;
        n_seg = tier_plan(tiers, (1U << _TIER_MAX) - 1, since_bucket, UINT64_MAX, seg);

        r = read_traps(s, seg, n_seg,
                       &(CountsQuery) { .group = "0", .where = where, .value = uid, .find = single_traps,
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

int store_top(Store *s, uint64_t since_usec, const char *sort, size_t limit, int64_t uid, const ProcessFilter *filter,
              StoreRow **ret, size_t *ret_n, uint64_t *ret_other) {
        assert(store_in_snapshot(s));
        return top_read(s, since_usec, sort, limit, uid, filter, ret, ret_n, ret_other);
}
