/* SPDX-License-Identifier: MIT */
/* The size cap and its shares. The cap holds the database with its write-ahead log: the pages in
 * use are kept under the cap less what the WAL may hold between checkpoints (store_cap_target()).
 * Over it, the user holding the most bytes (user_usage, kept by the triggers of
 * schema/sql/0007-shares.sql) loses the rows of their oldest processes, then those processes
 * that exited: one user's storm of processes cannot take another user's history. uid 0 and the
 * reserved uids hold their first reserve_bytes out of that race. */
#include "store-share.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "store-pending.h"
#include "store-sweep.h"

/* Processes of a victim looked at per statement, and victims tried per step when the first
 * ones have nothing left that may go (only live processes without rows). */
#define SHARE_PROCESSES 256
#define SHARE_VICTIMS 16
/* A process not seen for this long may lose its row once its rows went, exited or not: under a
 * storm, exits can be applied seconds late, and meanwhile the rows of processes already gone
 * held the cap. Should one still run, its next tick makes its row again (store.c). */
#define SHARE_IDLE_USEC (10 * UINT64_C(1000000))
/* Rows deleted per step at most: a step's pages are WAL until a checkpoint copies them, and the
 * WAL is part of the cap. */
#define SHARE_BATCH(ret) MIN((ret)->batch_rows, (size_t) 1000)

uint64_t store_used_bytes(Store *s) {
        int64_t pages, free_pages, page_size;

        if (sql_query_int(s->db, "PRAGMA page_count", 0, &pages) < 0 ||
            sql_query_int(s->db, "PRAGMA freelist_count", 0, &free_pages) < 0 ||
            sql_query_int(s->db, "PRAGMA page_size", 0, &page_size) < 0 || pages < free_pages)
                return 0;
        return (uint64_t) (pages - free_pages) * (uint64_t) page_size;
}


uint64_t store_cap_target(Store *s, uint64_t max_bytes) {
        /* The WAL asks for a checkpoint at checkpoint_pages and is cut back to that many pages
         * when it starts over; but a transaction's frames stay until a checkpoint copied them
         * all, and a tick of a storm of processes, or the cap's own step, writes hundreds of
         * pages, and checkpoints fall behind while the disk is slow to sync: a quarter of the
         * cap (up to 32 MiB) at least, which a storm under an 8 MiB cap on a busy machine was
         * seen to take (2.5 MiB). A fixed room: one that followed the WAL's size would have a
         * large WAL lower the target, and the step that follows write more WAL. */
        uint64_t wal = MAX(2 * (uint64_t) MAX(s->checkpoint_pages, 1U) * 4096,
                           MIN(max_bytes / 4, (uint64_t) 32 * 1024 * 1024));

        return max_bytes > 2 * wal ? max_bytes - wal : max_bytes / 2;
}

bool store_over_cap(Store *s, const StoreRetention *ret) {
        uint64_t used = store_used_bytes(s);

        /* Called after each flush: what it grew since the last look (a step's deletions are
         * looked at by the step itself). */
        s->cap_growth = used > s->cap_used_seen ? used - s->cap_used_seen : 0;
        s->cap_used_seen = used;
        return ret->max_bytes > 0 && used > store_cap_target(s, ret->max_bytes);
}

/* The users in the order they lose data: most bytes first, the reserved ones less their
 * reserve. At most n, in ret_uids; *ret_n how many. */
static int pick_victims(Store *s, const StoreRetention *ret, int64_t *ret_uids, size_t n, size_t *ret_n) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        char *in = NULL;
        size_t size = 0, k = 0;
        FILE *f;
        int rc, r;

        f = open_memstream(&in, &size);
        if (!f)
                return -ENOMEM;
        fputs("0", f);
        for (size_t i = 0; i < ret->n_reserved_uids; i++)
                fprintf(f, ", %" PRIu32, ret->reserved_uids[i]);
        if (!memstream_done(f, &in))
                return -ENOMEM;
        r = sql_prepare(s->db, &st,
                        "SELECT uid FROM user_usage WHERE bytes > 0 ORDER BY bytes - CASE WHEN uid IN (%s) THEN %" PRId64
                        " ELSE 0 END DESC, uid LIMIT %zu",
                        in, clamp_i64(ret->reserve_bytes), n);
        free(in);
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW && k < n)
                ret_uids[k++] = sqlite3_column_int64(st, 0);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW)
                return sqlite_to_errno(rc) ?: -EIO;
        *ret_n = k;
        return 0;
}

typedef struct ShareStatements {
        sqlite3_stmt *oldest;                       /* a user's oldest processes */
        sqlite3_stmt *rows[_STORE_KIND_MAX][_TIER_MAX]; /* a process's rows */
        sqlite3_stmt *process;                      /* a process gone or idle, without rows */
} ShareStatements;

static void share_statements_done(ShareStatements *q) {
        sqlite3_finalize(q->oldest);
        for (int k = 0; k < _STORE_KIND_MAX; k++)
                for (int t = 0; t < _TIER_MAX; t++)
                        sqlite3_finalize(q->rows[k][t]);
        sqlite3_finalize(q->process);
}

static int share_statements_prepare(Store *s, ShareStatements *q) {
        int r;

        r = sql_prepare(s->db, &q->oldest,
                        "SELECT id FROM process WHERE uid = ?1 ORDER BY first_seen_usec, id LIMIT %d",
                        SHARE_PROCESSES);
        for (int k = 0; r >= 0 && k < _STORE_KIND_MAX; k++)
                for (int t = 0; r >= 0 && t < _TIER_MAX; t++)
                        r = sql_prepare(s->db, &q->rows[k][t], "DELETE FROM %s WHERE process_id = ?1",
                                        store_kinds[k].tables[t]);
        if (r >= 0)
                r = sql_prepare(s->db, &q->process, "DELETE FROM process WHERE id = ?1 AND (exited OR last_seen_usec < ?2)");
        return r;
}

/* Deletes every row of the process, and the process itself when it exited or was last seen
 * before idle_before (one whose exit was never seen, or that is idle; should it run again, its
 * next tick makes its row again). *freed: rows and processes deleted; *sites: whether rows of
 * the site kind went. */
static int evict_process(Store *s, ShareStatements *q, int64_t id, uint64_t idle_before, size_t *freed, bool *sites) {
        int r;

        for (int k = 0; k < _STORE_KIND_MAX; k++)
                for (int t = 0; t < _TIER_MAX; t++) {
                        sqlite3_bind_int64(q->rows[k][t], 1, id);
                        r = sql_step_done(q->rows[k][t]);
                        if (r < 0)
                                return r;
                        *freed += (size_t) sqlite3_changes(s->db);
                        if (k == STORE_KIND_SITE && sqlite3_changes(s->db) > 0)
                                *sites = true;
                }
        sqlite3_bind_int64(q->process, 1, id);
        sqlite3_bind_int64(q->process, 2, clamp_i64(idle_before));
        r = sql_step_done(q->process);
        if (r >= 0)
                *freed += (size_t) sqlite3_changes(s->db);
        return r;
}

/* The victim's oldest processes lose their rows until the pages in use are at target or *freed
 * (as evict_process(), over the step) reaches batch. */
static int evict_user(Store *s, ShareStatements *q, int64_t uid, uint64_t idle_before, uint64_t target, size_t batch,
                      size_t *freed, bool *sites) {
        sqlite3_stmt *st = q->oldest;
        size_t n = 0;
        int64_t ids[SHARE_PROCESSES];
        int rc, r = 0;

        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, uid);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < SHARE_PROCESSES) {
                ids[n++] = sqlite3_column_int64(st, 0);
        }
        sqlite3_reset(st);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW)
                return sqlite_to_errno(rc) ?: -EIO;

        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = evict_process(s, q, ids[i], idle_before, freed, sites);
                /* Deleted pages are free at once, also inside the transaction. */
                if (*freed >= batch || (i % 16 == 15 && store_used_bytes(s) <= target))
                        break;
        }
        return r;
}

/* Gives back to the file system free pages that leave the file over target: the file counts
 * towards the cap. Only those (the next ticks reuse free pages anyway), and at most a
 * checkpoint's worth a step: moving pages to the front rewrites them and their parents through
 * the WAL. *more set when more remain. */
static int give_back(Store *s, uint64_t target, bool *more) {
        int64_t pages, free_pages, page_size, excess;
        int r;

        if ((r = sql_query_int(s->db, "PRAGMA page_count", 0, &pages)) < 0 ||
            (r = sql_query_int(s->db, "PRAGMA freelist_count", 0, &free_pages)) < 0 ||
            (r = sql_query_int(s->db, "PRAGMA page_size", 0, &page_size)) < 0)
                return r;
        if (page_size <= 0)
                return -EIO;
        excess = MIN(free_pages, pages - (int64_t) (target / (uint64_t) page_size));
        if (excess <= 0)
                return 0;
        if (excess > (int64_t) MAX(s->checkpoint_pages, 1U)) {
                excess = (int64_t) MAX(s->checkpoint_pages, 1U);
                *more = true;
        }
        return sql_exec_fmt(s->db, "PRAGMA incremental_vacuum(%" PRId64 ")", excess);
}

/* Deletes the oldest data of the users holding the most down to low, in one transaction; *more
 * set when still over it. */
static int evict(Store *s, const StoreRetention *ret, uint64_t idle_before, uint64_t low, bool *more) {
        ShareStatements q = {};
        int64_t victims[SHARE_VICTIMS];
        size_t n = 0, freed = 0;
        bool sites = false;
        int r;

        r = sql_exec(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        r = share_statements_prepare(s, &q);
        if (r >= 0)
                r = pick_victims(s, ret, victims, SHARE_VICTIMS, &n);
        /* The next victim when this one had not enough left that may go: a user whose bytes
         * are live processes' rows (their command lines) keeps those, and the next gives. */
        for (size_t i = 0; r >= 0 && i < n && freed < SHARE_BATCH(ret); i++) {
                r = evict_user(s, &q, victims[i], idle_before, low, SHARE_BATCH(ret), &freed, &sites);
                if (r >= 0 && store_used_bytes(s) <= low)
                        break;
        }
        share_statements_done(&q);
        if (r >= 0)
                r = sql_exec(s->db, "COMMIT");
        if (r < 0) {
                store_rollback(s);
                return r;
        }
        if (sites)
                store_sweep_start(s);
        if (freed > 0 && store_used_bytes(s) > low)
                *more = true;
        return 0;
}

int store_cap_step(Store *s, const StoreRetention *ret, uint64_t now_usec, bool *more) {
        uint64_t target;
        int r;

        if (ret->max_bytes == 0)
                return 0;
        target = store_cap_target(s, ret->max_bytes);
        /* Down to a margin below the target, so that the tick that follows fits before the next
         * step: as much as the last tick wrote (a storm of short processes writes megabytes a
         * second), at least a 32nd, at most half. */
        if (store_used_bytes(s) > target) {
                uint64_t margin = MAX(target / 32, MIN(s->cap_growth, target / 2));

                /* The victims' pending ticks go with their rows, not into rows after them. */
                r = store_pending_settle(s);
                if (r < 0)
                        return r;
                r = evict(s, ret, now_usec > SHARE_IDLE_USEC ? now_usec - SHARE_IDLE_USEC : 0, target - margin, more);
                if (r < 0)
                        return r;
        }
        r = give_back(s, target, more);
        s->cap_used_seen = store_used_bytes(s);
        return r;
}
