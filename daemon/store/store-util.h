/* SPDX-License-Identifier: MIT */
#pragma once

/* What every part of the store shares: struct Store and the SQLite helpers (store-util.c). NOT a
 * public header: only daemon/store*.c include it, through their own headers (and the unit tests
 * of the store's internals); everything else uses store.h, the store's contract.
 *
 * The parts, by job. Each includes only the headers of the parts below it in its column, so
 * there is no cycle: writing, reading and maintaining never call each other.
 *   writing       store.c          opening, migrations, configuration, flushing a tick
 *                 store-known.c    the known-process cache: a process row written only on change
 *                 store-pending.c  a tick's deltas as one row, folded into the raw tier; read back
 *                                  by the queries that need the newest ticks
 *                 store-sites-write.c  a tick's sites: the object and site dictionaries, a cache
 *                                  of their ids
 *   reading       store-read.c     the read layer: snapshots, the read statements, reading a
 *                                  process and counts, the union over the tiers, one kind's sums
 *                 store-top.c      Top and Traps                  (each family only reads,
 *                 store-history.c  History and UnitHistory         in its caller's snapshot,
 *                 store-sites.c    Sites                           and uses store-read.h and
 *                                                                  store_pending_read() only)
 *                 store-processes.c  ListProcesses, finding a process
 *   maintaining   store-maintain.c roll-up, retention, deleting processes left without rows,
 *                                  marking gone the processes that ended unseen
 *                 store-share.c    the size cap, with the WAL, by shares
 *                 store-sweep.c    the site kind's dictionaries swept of unreferenced entries
 *   below all     store-kind.c     the kinds of counts and the SQL made from them (store-kind.h)
 *                 store-util.c     the helpers below; tier-util.c: tiers, widths, buckets
 * Like store.h: negative errno, no logging; the caller logs once, with store_errmsg(). */

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "store-kind.h"
#include "store.h"
#include "tier-util.h"

typedef struct SiteWriter SiteWriter;

/* How far the size cap has coarsened one user's rows of the raw and the minute tier
 * (store-share.c): before coarse_until[tier] they are one row per process and coarser interval
 * already. A few users' are kept; a user who is not is looked at again from the start. */
#define STORE_SHARE_CURSORS 16
typedef struct ShareCursor {
        int64_t uid; /* -1: free */
        uint64_t coarse_until[TIER_HOUR];
} ShareCursor;

/* Grouped by the part that owns the members; a part reads another's only through its functions,
 * but for the connection and the configuration. */
struct Store {
        /* The connection and its configuration (store.c). */
        sqlite3 *db;
        char *path;
        char *boot_id;
        size_t max_cmdline; /* store_set_max_cmdline() */
        size_t top_own_max; /* store_set_top_own_max() */
        /* store_set_checkpoint_handler(): who checkpoints the WAL, from how many pages on. */
        unsigned checkpoint_pages;
        void (*checkpoint_fn)(void *userdata, bool force);
        void *checkpoint_userdata;
        /* store_set_maintain_yield() */
        bool (*maintain_yield)(void *userdata);
        void *maintain_yield_userdata;
        /* Column lists built from fault_fields, so the SQL that reads a Faults names every
         * member in order. */
        char *columns; /* "f_user, f_kernel, ..." */
        char *sums;    /* "SUM(f_user), SUM(f_kernel), ..." */
        char *sums_as; /* "SUM(f_user) AS f_user, ..." */

        /* Writing a tick (store.c): store_kind_upsert() into each kind's raw table; the sample
         * kind's folds the pending ticks, the others take a tick's rows at once. */
        sqlite3_stmt *add_raw[_STORE_KIND_MAX];
        /* The known-process cache (store-known.c). */
        sqlite3_stmt *upsert_process;
        sqlite3_stmt *update_process;      /* by id, for a process in `known` */
        sqlite3_stmt *update_process_seen; /* the same, uid, cmdline and unit unchanged */
        sqlite3_stmt *add_pidns;           /* a row of process_pidns */
        void *known;                       /* tsearch() tree of KnownProcess by (pid, start_time) */
        uint64_t swept_bucket;             /* raw bucket in which `known` was last swept */
        /* The pending ticks (store-pending.c). */
        sqlite3_stmt *add_pending;
        sqlite3_stmt *add_total;    /* a folded sample into its row of table process_total (Top's ranking) */
        sqlite3_stmt *insert_total; /* ... the row, where the process had none */
        uint8_t *packed; /* a tick's deltas for sample_pending */
        size_t packed_size, packed_capacity;
        bool pending;            /* sample_pending may have rows */
        uint64_t pending_bucket; /* the raw bucket of the last tick written; 0: not known */
        bool fold_due;           /* ticks of an earlier minute than that may be pending */
        uint64_t fold_tick_usec; /* the tick whose write folded a slice last */
        /* What the last slice left of the ticks before fold_left_before (0: nothing known), as
         * the rows hold it once that slice's transaction commits (store_pending_fold_slice()). */
        struct PendingSample *fold_left;
        size_t n_fold_left;
        int64_t fold_left_before;
        uint64_t fold_marked_before; /* the newest minute a slice wrote progress for (pending_fold) */
        /* Writing sites and the dictionaries they name (store-sites-write.c's, opaque). */
        SiteWriter *site_writer;

        /* Reading (store-read.c). */
        sqlite3_stmt *find_process;
        sqlite3_stmt *find_newest_process;

        /* Maintenance (store-maintain.c): finer intervals per roll-up transaction; the search
         * for exited processes left without rows: when it last ran (0: not yet), and whether it
         * is due before the hour is up. */
        unsigned roll_span[_TIER_MAX];
        uint64_t gone_checked_usec;
        bool gone_due;
        unsigned expire_behind; /* bit per tier: its last retention step stopped at a batch */
        /* The size cap (store-share.c): the bytes in use when store_over_cap() or the cap's step
         * last looked, and how much the flushes grew them since: the step keeps room for as much
         * as the last tick wrote. */
        uint64_t cap_used_seen, cap_growth;
        ShareCursor share_cursors[STORE_SHARE_CURSORS];
        unsigned share_cursor_next; /* the slot a new user takes */
        /* A sweep of the dictionaries for entries no row references (store-sweep.c): which one
         * it is in (0: none), the last id looked at, and whether rows went meanwhile. */
        int sweep;
        int64_t sweep_cursor;
        bool sweep_again;
};

/* The processes of the container a user names, as container_matches() has it, in SQL: q is its
 * name, id or id's prefix, prefix whether q may be a prefix (container_query_is_prefix()). No
 * index: the process table is searched, as for a unit's glob. */
#define STORE_CONTAINER_WHERE(q, prefix)                                                                 \
        "(container_name = " q " OR container_id = " q " OR (" prefix                                     \
        " AND container_runtime NOT IN ('machined', 'lxc') AND substr(container_id, 1, length(" q ")) = " q "))"

/* The processes a caller in pid namespace ns (an SQL parameter or value; 0: a caller who sees
 * every namespace) sees: a condition on table process. */
#define STORE_PIDNS_WHERE(ns) "(" ns " = 0 OR process.id IN (SELECT process_id FROM process_pidns WHERE ns = " ns "))"

/* The process table's columns that make a ProcessInfo, in the order read_process() reads them
 * (PROCESS_ROW_COLUMNS: those a row has, as the upsert writes them). */
#define PROCESS_ROW_COLUMNS                                                                               \
        "pid, start_time, comm, cmdline, uid, unit, first_seen_usec, last_seen_usec, exited, ns_pid, pid_ns, "  \
        "pidns_level, container_runtime, container_id, container_name, container_pod, container_user"
/* With the process's pid namespaces below the initial one ("NS:PID NS:PID"), from a query of table
 * process (not renamed). */
#define PROCESS_COLUMNS                                                                                   \
        PROCESS_ROW_COLUMNS ", (SELECT group_concat(ns || ':' || pid, ' ') FROM process_pidns "               \
                            "WHERE process_id = process.id)"
#define PROCESS_COLUMNS_N 18

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
