/* SPDX-License-Identifier: MIT */
/* The size cap and its shares. The cap holds the database with its write-ahead log: the pages in
 * use are kept under the cap less what the WAL may hold between checkpoints (store_cap_target()).
 *
 * Over it, only a user over their share gives (user_usage, kept by the triggers of
 * schema/sql/0007-shares.sql): the cap's target divided among the users who have history, root's
 * and the reserved uids' at least reserve_bytes. The one most over it gives first, and gives their
 * oldest *rows*, across all of their processes, finest detail first:
 *   1. raw rows older than the newest hour become one row per process and minute,
 *   2. minute rows older than the newest hour one row per process and hour,
 *   3. then the oldest rows go, an interval of all tiers at a time, and with them the processes
 *      left without rows that exited (or were not seen for 10 s),
 *   4. and when no sample row is left, whatever else the oldest processes hold.
 * Steps 1 and 2 coarsen in place, in the same tier: every count stays, in the tier that a query
 * reads it from (tier-util.h), and only its place within the coarser interval is lost. So a
 * service that ran for weeks keeps its history at hourly detail while a storm of short processes
 * loses its oldest processes, and a user within their share loses nothing to another's storm. */
#include "store-share.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "store-pending.h"
#include "store-sweep.h"
#include "time-util.h"

/* Users looked at per step, most over their share first. */
#define SHARE_VICTIMS 16
/* Processes of a victim looked at per statement in the last stage. */
#define SHARE_PROCESSES 256
/* Processes evicted by one set of statements; the step looks at its time and its gain after each
 * such batch. */
#define SHARE_EVICT_BATCH 16
/* A process not seen for this long may lose its row once its rows went, exited or not: under a
 * storm, exits can be applied seconds late, and meanwhile the rows of processes already gone
 * held the cap. Should one still run, its next tick makes its row again (store.c). */
#define SHARE_IDLE_USEC (10 * UINT64_C(1000000))
/* The newest hour keeps its detail: it is what `trapstat history` shows at 10 s by default. */
#define SHARE_FINE_USEC (3600 * UINT64_C(1000000))
/* Rows deleted per step at most: a step's pages are WAL until a checkpoint copies them, and the
 * WAL is part of the cap. */
#define SHARE_BATCH(ret) MIN((ret)->batch_rows, (size_t) 1000)
/* The processes of the victim, as a condition on a kind's table. */
#define OF_UID "process_id IN (SELECT id FROM process WHERE uid = ?1)"

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
         * seen to take (2.5 MiB). A fixed room: one that followed the WAL's size would have
         * a large WAL lower the target, and the step that follows write more WAL. */
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

static bool is_reserved(const StoreRetention *ret, int64_t uid) {
        if (uid == 0)
                return true;
        for (size_t i = 0; i < ret->n_reserved_uids; i++)
                if (uid == (int64_t) ret->reserved_uids[i])
                        return true;
        return false;
}

typedef struct ShareUser {
        int64_t uid;
        double over; /* bytes beyond the user's share */
} ShareUser;

static int cmp_over(const void *a, const void *b) {
        const ShareUser *x = a, *y = b;

        if (x->over != y->over)
                return x->over > y->over ? -1 : 1;
        return x->uid < y->uid ? -1 : x->uid > y->uid;
}

/* Reads user_usage: each user's bytes beyond their share (share_users()), most first. */
static int read_users(Store *s, const StoreRetention *ret, uint64_t target, ShareUser **ret_users, size_t *ret_n) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        _cleanup_free_ ShareUser *users = NULL;
        size_t n = 0, capacity = 0;
        double total = 0, share;
        uint64_t used = MAX(store_used_bytes(s), 1);
        int rc, r;

        r = sql_prepare(s->db, &st, "SELECT uid, bytes FROM user_usage WHERE bytes > 0");
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                if (n == capacity) {
                        ShareUser *u = reallocarray(users, capacity = MAX(capacity * 2, 16U), sizeof(*u));
                        if (!u)
                                return -ENOMEM;
                        users = u;
                }
                users[n] = (ShareUser) { sqlite3_column_int64(st, 0), (double) sqlite3_column_int64(st, 1) };
                total += users[n++].over;
        }
        if (rc != SQLITE_DONE)
                return sqlite_to_errno(rc) ?: -EIO;
        /* user_usage estimates; the target is of pages. The share: the target's part of the
         * estimates, divided evenly. */
        share = n > 0 ? total * ((double) target / (double) used) / (double) n : 0;
        for (size_t i = 0; i < n; i++)
                users[i].over -= is_reserved(ret, users[i].uid) ? MAX(share, (double) ret->reserve_bytes) : share;
        qsort(users, n, sizeof(*users), cmp_over);
        *ret_users = TAKE_PTR(users);
        *ret_n = n;
        return 0;
}

/* The users who give, in order: those over their share, most over first. When none is (the
 * estimates are off, or the reserved users alone fill the cap), the one with the most bytes
 * beyond their reserve: the cap holds whoever fills it, but a reserved user within their reserve
 * never gives to another user's storm. At most n, in ret_uids; *ret_n how many. */
static int pick_victims(Store *s, const StoreRetention *ret, uint64_t target, int64_t *ret_uids, size_t n,
                        size_t *ret_n) {
        _cleanup_free_ ShareUser *users = NULL;
        size_t n_users = 0, k = 0;
        int r;

        r = read_users(s, ret, target, &users, &n_users);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_users && k < n && users[i].over > 0; i++)
                ret_uids[k++] = users[i].uid;
        if (k == 0 && n_users > 0)
                ret_uids[k++] = users[0].uid;
        *ret_n = k;
        return 0;
}

typedef struct ShareStatements {
        sqlite3_stmt *oldest_row[_TIER_MAX];              /* a user's oldest sample row of a tier in a stretch */
        sqlite3_stmt *first_before;                       /* a user's processes first seen before a time, by id */
        sqlite3_stmt *oldest;                             /* a user's oldest processes */
        sqlite3_stmt *rows[_STORE_KIND_MAX][_TIER_MAX];   /* the listed processes' rows before a time */
        sqlite3_stmt *process;                            /* those of them gone or idle, without rows */
        sqlite3_stmt *list, *unlist;                      /* the list (temp.share_ids): add one, clear */
} ShareStatements;

static void share_statements_done(ShareStatements *q) {
        for (int t = 0; t < _TIER_MAX; t++)
                sqlite3_finalize(q->oldest_row[t]);
        for (int k = 0; k < _STORE_KIND_MAX; k++)
                for (int t = 0; t < _TIER_MAX; t++)
                        sqlite3_finalize(q->rows[k][t]);
        sqlite3_finalize(q->first_before);
        sqlite3_finalize(q->oldest);
        sqlite3_finalize(q->process);
        sqlite3_finalize(q->list);
        sqlite3_finalize(q->unlist);
}

static int share_statements_prepare(Store *s, ShareStatements *q) {
        int r = 0;

        /* Each of the user's processes' first row in the stretch, by the primary key: as many
         * seeks as the user has processes, however many rows the others have. */
        for (int t = 0; r >= 0 && t < _TIER_MAX; t++)
                r = sql_prepare(s->db, &q->oldest_row[t],
                                "SELECT MIN((SELECT time_usec FROM %s WHERE process_id = p.id AND time_usec >= ?2 AND "
                                "time_usec < ?3 ORDER BY process_id, time_usec LIMIT 1)) FROM process p WHERE p.uid = ?1",
                                store_kinds[STORE_KIND_SAMPLE].tables[t]);
        /* A batch of processes at a time, listed in temp.share_ids: a statement for each table
         * and each process was most of a step's time (2.1 times as long, measured on a storm's
         * 500 processes). */
        for (int k = 0; r >= 0 && k < _STORE_KIND_MAX; k++)
                for (int t = 0; r >= 0 && t < _TIER_MAX; t++)
                        r = sql_prepare(s->db, &q->rows[k][t],
                                        "DELETE FROM %s WHERE process_id IN temp.share_ids AND time_usec < ?1",
                                        store_kinds[k].tables[t]);
        if (r >= 0)
                r = sql_prepare(s->db, &q->list, "INSERT OR IGNORE INTO temp.share_ids (id) VALUES (?1)");
        if (r >= 0)
                r = sql_prepare(s->db, &q->unlist, "DELETE FROM temp.share_ids");
        if (r >= 0)
                r = sql_prepare(s->db, &q->first_before,
                                "SELECT id FROM process WHERE uid = ?1 AND first_seen_usec < ?2 AND id > ?3 ORDER BY id LIMIT %d",
                                SHARE_PROCESSES);
        if (r >= 0)
                r = sql_prepare(s->db, &q->oldest,
                                "SELECT id FROM process WHERE uid = ?1 ORDER BY first_seen_usec, id LIMIT %d",
                                SHARE_PROCESSES);
        /* A process's rows are in buckets that start before its last_seen_usec (store.h): one last
         * seen before the cut has none left. */
        if (r >= 0)
                r = sql_prepare(s->db, &q->process,
                                "DELETE FROM process WHERE id IN temp.share_ids AND last_seen_usec < ?1 AND "
                                "(exited OR last_seen_usec < ?2)");
        return r;
}

/* Runs a statement that returns a list of ids, ?1 to ?3 bound; at most SHARE_PROCESSES. */
static int query_ids(sqlite3_stmt *st, int64_t a, int64_t b, int64_t c, int64_t ids[static SHARE_PROCESSES],
                     size_t *ret_n) {
        size_t n = 0;
        int rc;

        sqlite3_bind_int64(st, 1, a);
        if (sqlite3_bind_parameter_count(st) >= 2)
                sqlite3_bind_int64(st, 2, b);
        if (sqlite3_bind_parameter_count(st) >= 3)
                sqlite3_bind_int64(st, 3, c);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < SHARE_PROCESSES)
                ids[n++] = sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW)
                return sqlite_to_errno(rc) ?: -EIO;
        *ret_n = n;
        return 0;
}

/* What one step may do, and what it did. */
typedef struct ShareStep {
        ShareStatements q;
        TierState tiers[_TIER_MAX];
        uint64_t now, idle_before;
        uint64_t low;  /* the pages in use the step brings the store down to */
        size_t batch;  /* rows freed at most */
        size_t freed;  /* rows deleted (coarsening: rows less than before) */
        uint64_t deadline; /* CLOCK_MONOTONIC: the step gives way then, done or not */
        bool timed_out;
        bool sites;    /* rows of the site kind deleted: the dictionaries may have lost a reference */
} ShareStep;

static bool step_done(Store *s, ShareStep *p) {
        if (now_usec(CLOCK_MONOTONIC) >= p->deadline)
                return p->timed_out = true;
        return p->freed >= p->batch || store_used_bytes(s) <= p->low;
}

/* The first time at or after from and before to at which the user has a sample row in tier;
 * 0 when none. */
static int oldest_row(ShareStep *p, int tier, int64_t uid, uint64_t from, uint64_t to, uint64_t *ret) {
        sqlite3_stmt *st = p->q.oldest_row[tier];
        int rc;

        sqlite3_bind_int64(st, 1, uid);
        sqlite3_bind_int64(st, 2, clamp_i64(from));
        sqlite3_bind_int64(st, 3, clamp_i64(to));
        rc = sqlite3_step(st);
        *ret = rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL ? (uint64_t) sqlite3_column_int64(st, 0) : 0;
        sqlite3_reset(st);
        return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : (sqlite_to_errno(rc) ?: -EIO);
}

/* Runs SQL made by store-kind.c (NULL: out of memory); *changes: the rows it changed. */
static int exec_made(Store *s, char *sql, size_t *changes) {
        _cleanup_free_ char *p = sql;
        int r = p ? sql_exec(s->db, p) : -ENOMEM;

        if (r >= 0 && changes)
                *changes = (size_t) sqlite3_changes(s->db);
        return r;
}

/* One kind's rows of tier matching where, summed per coarser interval of width, in place. */
static int coarsen_kind(Store *s, const StoreKind *k, int tier, uint64_t width, const char *where, size_t *gained) {
        _cleanup_free_ char *count = NULL, *del = NULL;
        size_t groups = 0, deleted = 0;
        int64_t rows;
        int r;

        if (asprintf(&count, "SELECT COUNT(*) FROM %s WHERE %s", k->tables[tier], where) < 0 ||
            asprintf(&del, "DELETE FROM %s WHERE %s", k->tables[tier], where) < 0)
                return -ENOMEM;
        r = sql_query_int(s->db, count, 0, &rows);
        if (r < 0 || rows <= 1)
                return r;
        r = exec_made(s, store_kind_coarsen(k, tier, width, where), &groups);
        if (r >= 0 && (int64_t) groups < rows) {
                r = exec_made(s, TAKE_PTR(del), &deleted);
                if (r >= 0)
                        r = exec_made(s, store_kind_coarse_put_back(k, tier), NULL);
                if (r >= 0)
                        *gained += deleted - groups;
        }
        if (r >= 0)
                r = sql_exec_fmt(s->db, "DELETE FROM temp.coarse_%s", k->name);
        return r;
}

/* The user's rows of tier in [from, to), every kind, one row per process, key and interval of the
 * next coarser tier. */
static int coarsen_stretch(Store *s, ShareStep *p, int tier, int64_t uid, uint64_t from, uint64_t to) {
        _cleanup_free_ char *where = NULL;
        int r = 0;

        if (asprintf(&where,
                     "time_usec >= %" PRId64 " AND time_usec < %" PRId64
                     " AND process_id IN (SELECT id FROM process WHERE uid = %" PRId64 ")",
                     clamp_i64(from), clamp_i64(to), uid) < 0)
                return -ENOMEM;
        for (int k = 0; r >= 0 && k < _STORE_KIND_MAX; k++)
                r = coarsen_kind(s, &store_kinds[k], tier, tier_width_usec[tier + 1], where, &p->freed);
        return r;
}

static ShareCursor *cursor_of(Store *s, int64_t uid) {
        ShareCursor *c;

        for (size_t i = 0; i < STORE_SHARE_CURSORS; i++)
                if (s->share_cursors[i].uid == uid)
                        return &s->share_cursors[i];
        c = &s->share_cursors[s->share_cursor_next++ % STORE_SHARE_CURSORS];
        *c = (ShareCursor) { .uid = uid };
        return c;
}

/* Stages 1 and 2: the user's rows of tier (raw or minute) older than the newest hour and rolled
 * up already, coarsened to the next tier's width, oldest first, one coarser interval at a time.
 * Only whole intervals the tier keeps: a query reads the tier from its kept_from on. Returns 1
 * when the step is done, 0 when nothing of the tier is left to coarsen. */
static int coarsen_tier(Store *s, ShareStep *p, int tier, int64_t uid) {
        uint64_t width = tier_width_usec[tier + 1], *cursor = &cursor_of(s, uid)->coarse_until[tier];
        uint64_t from = tier_floor(tier + 1, p->tiers[tier].kept_from + width - 1);
        uint64_t limit = tier_floor(tier + 1, MIN(p->now > SHARE_FINE_USEC ? p->now - SHARE_FINE_USEC : 0,
                                                  p->tiers[tier + 1].rolled_until));
        int r;

        *cursor = MAX(*cursor, from);
        while (*cursor < limit) {
                uint64_t t;

                r = oldest_row(p, tier, uid, *cursor, limit, &t);
                if (r < 0)
                        return r;
                if (t == 0) {
                        *cursor = limit;
                        break;
                }
                from = tier_floor(tier + 1, t);
                r = coarsen_stretch(s, p, tier, uid, from, from + width);
                if (r < 0)
                        return r;
                *cursor = from + width;
                if (step_done(s, p))
                        return 1;
        }
        return 0;
}

/* The rows of every tier and kind before cut of the n processes of ids, and each process that
 * this left without rows and that exited or is idle. */
static int evict_rows(Store *s, ShareStep *p, const int64_t *ids, size_t n, uint64_t cut) {
        int r = sql_step_done(p->q.unlist);

        for (size_t i = 0; r >= 0 && i < n; i++) {
                sqlite3_bind_int64(p->q.list, 1, ids[i]);
                r = sql_step_done(p->q.list);
        }
        for (int k = 0; r >= 0 && k < _STORE_KIND_MAX; k++)
                for (int t = 0; r >= 0 && t < _TIER_MAX; t++) {
                        sqlite3_stmt *st = p->q.rows[k][t];

                        sqlite3_bind_int64(st, 1, clamp_i64(cut));
                        r = sql_step_done(st);
                        if (r < 0)
                                break;
                        p->freed += (size_t) sqlite3_changes(s->db);
                        if (k == STORE_KIND_SITE && sqlite3_changes(s->db) > 0)
                                p->sites = true;
                }
        if (r < 0)
                return r;
        sqlite3_bind_int64(p->q.process, 1, clamp_i64(cut));
        sqlite3_bind_int64(p->q.process, 2, clamp_i64(p->idle_before));
        r = sql_step_done(p->q.process);
        if (r >= 0)
                p->freed += (size_t) sqlite3_changes(s->db);
        return r;
}

/* The processes of ids, SHARE_EVICT_BATCH at a time, until the step is done (1). */
static int evict_batches(Store *s, ShareStep *p, const int64_t *ids, size_t n, uint64_t cut) {
        for (size_t i = 0; i < n; i += SHARE_EVICT_BATCH) {
                int r = evict_rows(s, p, ids + i, MIN(n - i, (size_t) SHARE_EVICT_BATCH), cut);

                if (r < 0)
                        return r;
                if (step_done(s, p))
                        return 1;
        }
        return 0;
}

/* The user's rows before cut, process by process (a process's history stays whole from its own
 * cut on, so a step may stop between two). Returns 1 when the step is done. */
static int delete_before(Store *s, ShareStep *p, int64_t uid, uint64_t cut) {
        int64_t ids[SHARE_PROCESSES], after = 0;
        size_t n;
        int r;

        for (;;) {
                /* A process's rows are in buckets from the one holding its first_seen_usec on, and
                 * cut is on a bucket's start. */
                r = query_ids(p->q.first_before, uid, clamp_i64(cut), after, ids, &n);
                if (r < 0 || n == 0)
                        return r;
                r = evict_batches(s, p, ids, n, cut);
                if (r != 0)
                        return r;
                after = ids[n - 1];
        }
}

/* Stage 3: the user's oldest interval goes, in every tier: the interval of the coarsest tier that
 * may hold its oldest sample (one that has rolled it up), so that what is left of a process is
 * whole in every tier a query may read it from. Returns 1 when the step is done, 0 when no sample
 * is left (or none went: the last stage takes the rest). */
static int delete_oldest(Store *s, ShareStep *p, int64_t uid) {
        for (;;) {
                uint64_t oldest = UINT64_MAX;
                size_t freed = p->freed;
                int coarsest = TIER_RAW, r;

                for (int t = 0; t < _TIER_MAX; t++) {
                        uint64_t found;

                        r = oldest_row(p, t, uid, 0, UINT64_MAX, &found);
                        if (r < 0)
                                return r;
                        if (found > 0)
                                oldest = MIN(oldest, found);
                }
                if (oldest == UINT64_MAX)
                        return 0;
                for (int t = TIER_MINUTE; t < _TIER_MAX; t++)
                        if (p->tiers[t].rolled_until > oldest)
                                coarsest = t;
                r = delete_before(s, p, uid, tier_floor(coarsest, oldest) + tier_width_usec[coarsest]);
                if (r != 0)
                        return r;
                if (p->freed == freed)
                        return 0;
        }
}

/* Stage 4: with no sample left, the oldest processes lose what else they hold (rows of other
 * kinds), and go when they exited or are idle. */
static int evict_processes(Store *s, ShareStep *p, int64_t uid) {
        int64_t ids[SHARE_PROCESSES];
        size_t n;
        int r;

        r = query_ids(p->q.oldest, uid, 0, 0, ids, &n);
        return r < 0 ? r : evict_batches(s, p, ids, n, UINT64_MAX);
}

/* One user gives, stage by stage, until the step is done or nothing of theirs may go. */
static int evict_user(Store *s, ShareStep *p, int64_t uid) {
        int r;

        r = coarsen_tier(s, p, TIER_RAW, uid);
        if (r == 0)
                r = coarsen_tier(s, p, TIER_MINUTE, uid);
        if (r == 0)
                r = delete_oldest(s, p, uid);
        if (r == 0)
                r = evict_processes(s, p, uid);
        return r;
}

/* Brings the pages in use down to low, in one transaction, from the users over their share;
 * *more set when still over it. */
static int evict(Store *s, const StoreRetention *ret, uint64_t now, uint64_t target, uint64_t low, bool *more) {
        ShareStep p = { .now = now, .idle_before = now > SHARE_IDLE_USEC ? now - SHARE_IDLE_USEC : 0, .low = low,
                        .batch = SHARE_BATCH(ret), /* A step that coarsens stretches with little to gain looks at many of them. */
                        .deadline = ret->cap_slice_usec ? now_usec(CLOCK_MONOTONIC) + ret->cap_slice_usec : UINT64_MAX };
        int64_t victims[SHARE_VICTIMS];
        size_t n = 0;
        int r;

        r = store_load_tiers(s, p.tiers);
        if (r < 0)
                return r;
        r = sql_exec(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        r = sql_exec(s->db, "CREATE TEMP TABLE IF NOT EXISTS share_ids (id INTEGER PRIMARY KEY)");
        if (r >= 0)
                r = share_statements_prepare(s, &p.q);
        for (int k = 0; r >= 0 && k < _STORE_KIND_MAX; k++)
                r = exec_made(s, store_kind_coarse_table(&store_kinds[k]), NULL);
        if (r >= 0)
                r = pick_victims(s, ret, target, victims, SHARE_VICTIMS, &n);
        /* The next victim, over their share too, when this one has nothing left that may go. */
        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = evict_user(s, &p, victims[i]);
                if (r > 0)
                        break;
        }
        share_statements_done(&p.q);
        if (r >= 0)
                r = sql_exec(s->db, "COMMIT");
        if (r < 0) {
                store_rollback(s);
                return r;
        }
        if (p.sites)
                store_sweep_start(s);
        if ((p.freed > 0 || p.timed_out) && store_used_bytes(s) > low)
                *more = true;
        return 0;
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
                r = evict(s, ret, now_usec, target, target - margin, more);
                if (r < 0)
                        return r;
        }
        r = give_back(s, target, more);
        s->cap_used_seen = store_used_bytes(s);
        return r;
}
