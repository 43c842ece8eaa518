/* SPDX-License-Identifier: MIT */
#pragma once

/* What the parts of the store share. NOT a public header: only daemon/store*.c include it (and
 * the unit tests of the store's internals); everything else uses store.h, the store's contract.
 *
 * The parts, by job:
 *   store.c          opening and closing, migrations, writing ticks, the known-process cache
 *   store-pending.c  the pending ticks: a tick's deltas as one row, folded into the raw tier
 *   store-query.c    the reads: Top, Traps, Sites, ListProcesses, finding a process; and marking
 *                    gone the processes that ended unseen; the helpers of every read (below)
 *   store-history.c  History and UnitHistory: samples over time, also the pending ticks
 *   store-maintain.c roll-up, retention, deleting processes and dictionary entries
 *                    left without rows
 *   store-share.c    the size cap, with the WAL, by shares: the user holding the most loses first
 *   store-sites.c    writing a tick's sites: the object and site dictionaries, a cache of their ids
 *   store-kind.c     the kinds of counts and the SQL made from them (store-kind.h)
 *   store-util.c     the helpers below
 * Like store.h: negative errno, no logging; the caller logs once, with store_errmsg(). */

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "store-kind.h"
#include "store.h"
#include "tier-util.h"

typedef struct SiteIds SiteIds;

struct Store {
        sqlite3 *db;
        char *path;
        char *boot_id;
        /* Column lists built from fault_fields, so the SQL that reads a Faults names every
         * member in order. */
        char *columns; /* "f_user, f_kernel, ..." */
        char *sums;    /* "SUM(f_user), SUM(f_kernel), ..." */
        char *sums_as; /* "SUM(f_user) AS f_user, ..." */
        sqlite3_stmt *upsert_process;
        sqlite3_stmt *update_process; /* by id, for a process in `known` */
        sqlite3_stmt *update_process_seen; /* the same, uid, cmdline and unit unchanged */
        sqlite3_stmt *add_pending;
        /* store_kind_upsert() into each kind's raw table; the sample kind's folds the pending
         * ticks, the others take a tick's Traps at once. */
        sqlite3_stmt *add_raw[_STORE_KIND_MAX];
        sqlite3_stmt *find_process;
        sqlite3_stmt *find_newest_process;
        /* The dictionaries of the site kind (store-sites.c). */
        sqlite3_stmt *find_object, *add_object, *upsert_site;
        SiteIds *site_ids; /* ids of entries written; NULL until the first site */
        /* A sweep of the dictionaries for entries no row references (store-maintain.c): which
         * one it is in (0: none), the last id looked at, and whether rows went meanwhile. */
        int sweep;
        int64_t sweep_cursor;
        bool sweep_again;
        void *known;             /* tsearch() tree of KnownProcess by (pid, start_time) */
        uint64_t swept_bucket;   /* raw bucket in which `known` was last swept */
        /* The search for exited processes left without rows (store-maintain.c): when it last
         * ran (0: not yet), and whether it is due before the hour is up. */
        uint64_t gone_checked_usec;
        bool gone_due;
        unsigned roll_span[_TIER_MAX]; /* finer intervals per roll-up transaction (store-maintain.c) */
        uint8_t *packed;         /* a tick's deltas for sample_pending */
        size_t packed_size, packed_capacity;
        unsigned snapshots;      /* store_snapshot_begin() calls not ended yet */
        /* store_set_checkpoint_handler(): who checkpoints the WAL, from how many pages on. */
        unsigned checkpoint_pages;
        void (*checkpoint_fn)(void *userdata, bool force);
        void *checkpoint_userdata;
        size_t max_cmdline;      /* store_set_max_cmdline() */
        /* The bytes in use when store_over_cap() or the cap's step last looked, and how much the
         * flushes grew them since: the step keeps room for as much as the last tick wrote. */
        uint64_t cap_used_seen, cap_growth;
        /* store_set_maintain_yield() */
        bool (*maintain_yield)(void *userdata);
        void *maintain_yield_userdata;
        bool pending;            /* sample_pending may have rows */
        uint64_t pending_bucket; /* the raw bucket they all are in; 0: not known */
};

/* The process table's columns that make a ProcessInfo, in the order store-query.c reads them. */
#define PROCESS_COLUMNS "pid, start_time, comm, cmdline, uid, unit, first_seen_usec, last_seen_usec, exited"

static inline void sqlite3_finalizep(sqlite3_stmt **s) {
        sqlite3_finalize(*s);
}
#define _cleanup_finalize_ _cleanup_(sqlite3_finalizep)

static inline int64_t clamp_i64(uint64_t v) {
        return v > INT64_MAX ? INT64_MAX : (int64_t) v;
}

/* ---- store-util.c ---- */

/* The one place SQLite result codes become errno values. */
int sqlite_to_errno(int rc);
int sql_exec(sqlite3 *db, const char *sql);
int sql_exec_fmt(sqlite3 *db, const char *fmt, ...) _printf_(2, 3);
int sql_prepare(sqlite3 *db, sqlite3_stmt **ret, const char *fmt, ...) _printf_(3, 4);
/* Runs a statement that returns no rows, its parameters bound already, and resets it. */
int sql_step_done(sqlite3_stmt *st);
/* The first column of the first row, with ?1 bound to arg; INT64_MIN for no row or NULL. */
int sql_query_int(sqlite3 *db, const char *sql, int64_t arg, int64_t *ret);
/* After a failure inside a transaction. */
void store_rollback(Store *s);
/* The tiers' marks (table tier), for tier_plan(). */
int store_load_tiers(Store *s, TierState ret[_TIER_MAX]);

/* ---- store-pending.c: a tick's deltas as one row of sample_pending ---- */

/* Appends a process's delta to the tick being packed (s->packed; store_flush() empties it). */
int store_pending_pack(Store *s, int64_t process_id, const Faults *delta, uint64_t traps, uint64_t time_ns);
/* Commits what was packed as one pending row; in the caller's transaction. */
int store_pending_add(Store *s, uint64_t now_usec);
/* A process's deltas of one raw bucket that are still pending. */
typedef struct PendingSample {
        uint64_t bucket_usec;
        int64_t process_id;
        Faults delta;
        uint64_t traps;
        uint64_t time_ns; /* all fault time */
} PendingSample;

/* Adds b's counts to a. */
void pending_sample_add(PendingSample *a, const PendingSample *b);

/* Every pending sample (only_ids not NULL: of the n_only processes it lists, sorted ascending,
 * only), summed per bucket and process, in (bucket, process) order: *ret_n of them in *ret, to
 * free(). A row that does not decode is skipped. */
int store_pending_read(Store *s, const int64_t *only_ids, size_t n_only, PendingSample **ret, size_t *ret_n);
/* Adds every pending row to its raw bucket, one upsert per process and bucket, and deletes them;
 * in the caller's transaction. A row that does not decode is dropped, alone. */
int store_pending_fold(Store *s);
/* Before anything reads the samples: store_pending_fold() in a transaction of its own, when
 * s->pending says there may be rows. */
int store_pending_settle(Store *s);
/* The same, only when the pending ticks may be in a raw bucket before before_usec (when their
 * bucket is not known, too): what a roll-up up to before_usec needs. */
int store_pending_settle_before(Store *s, uint64_t before_usec);

/* ---- store-query.c: what every read uses ---- */

/* Reads PROCESS_COLUMNS starting at column `first`. */
int read_process(sqlite3_stmt *st, int first, ProcessInfo *ret);
/* Reads a Faults from n_fault_fields columns starting at `first`. */
void read_faults(sqlite3_stmt *st, int first, Faults *ret);
/* Prepares fmt with its %s replaced by the union of the kind's tables over the segments. */
int prepare_over(Store *s, sqlite3_stmt **ret, const char *fmt, int kind, const TierSegment *seg, size_t n,
                 const char *where);

/* What read_traps() reads of the kinds that are part of a Traps. */
typedef struct TrapsQuery {
        const char *group; /* SQL over process_id and time_usec: what the counts are summed by */
        const char *where; /* the rows; its ?1 is bound to text, or to value when text is NULL */
        const char *text;
        int64_t value;
        /* The Traps a group's counts are added to; NULL: they are skipped. */
        Traps *(*find)(int64_t group, void *userdata);
        void *userdata;
} TrapsQuery;

/* Sums the rows of every kind that is part of a Traps over the segments, per group and key, and
 * adds them to the Traps of their group. */
int read_traps(Store *s, const TierSegment *seg, size_t n_seg, const TrapsQuery *q);

/* The same for the fault time kind: what read_fault_time() reads, as TrapsQuery. */
typedef struct FaultTimeQuery {
        const char *group;
        const char *where;
        const char *text;
        int64_t value;
        FaultTime *(*find)(int64_t group, void *userdata);
        void *userdata;
} FaultTimeQuery;

/* Merges the fault time rows over the segments per group (sums, maximum, histogram) into the
 * FaultTime of their group. */
int read_fault_time(Store *s, const TierSegment *seg, size_t n_seg, const FaultTimeQuery *q);

/* ---- store-sites.c: a tick's sites ---- */

/* Adds the sites to the raw bucket of the site kind, creating the dictionary entries they name;
 * in the caller's transaction. -EINVAL for a site without object, or with a kind, a memory kind
 * or a period out of range. */
int store_sites_add(Store *s, int64_t process_id, uint64_t bucket_usec, const SiteCount *sites, size_t n);
/* Forgets the ids of dictionary entries: when a transaction that may have created them rolled
 * back, and when maintenance deleted entries. */
void store_site_ids_clear(Store *s);
void store_site_ids_free(Store *s);

/* ---- store-maintain.c ---- */

/* Rows of the site kind went: dictionary entries may have lost their last reference. */
void store_sweep_start(Store *s);

/* ---- store-share.c ---- */

/* One step of the size cap: when the pages in use are over store_cap_target(), a transaction
 * deleting the oldest processes' rows of the user holding the most (then those processes, if
 * they exited or were not seen for 10 s), at most batch_rows rows; *more set when still
 * over. */
int store_cap_step(Store *s, const StoreRetention *ret, uint64_t now_usec, bool *more);

/* ---- store.c ---- */

/* Writes the exact last seen of the processes in the known-process cache and empties it: before
 * their rows may change or go behind its back. */
void store_known_reset(Store *s);
