/* SPDX-License-Identifier: MIT */
#pragma once

/* The history store: SQLite in WAL mode, schema from the embedded migrations in schema/sql/.
 * Library-style: functions return negative errno and do not log; store_errmsg() gives
 * SQLite's message for the last failure so the caller can log it once, with context.
 *
 * This header is the whole contract. The implementation is split by job over daemon/store*.c
 * (listed in store-util.h, which is not for use outside them); the kinds of counts kept
 * (samples, traps, signals, sites), with their tables and columns, are described once, in
 * store-kind.h. */

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "embedded.h"
#include "filter.h"
#include "sites.h"
#include "tier-util.h"
#include "traps.h"

/* Width of a raw-tier bucket (tier-util.h has every tier's). */
#define STORE_RAW_BUCKET_USEC TIER_RAW_WIDTH_USEC

typedef struct Store Store;

/* How long each tier keeps its rows, and the size cap (README: history and retention). */
typedef struct StoreRetention {
        uint64_t raw_usec, minute_usec, hour_usec;
        uint64_t max_bytes;  /* database and WAL (store_cap_target()); 0: no cap */
        size_t batch_rows;   /* rows rolled up or deleted per transaction */
        /* Under the cap, uid 0's and these users' first reserve_bytes do not count when the
         * user holding the most is picked to lose data first (store-share.c). */
        uint64_t reserve_bytes;
        const uint32_t *reserved_uids;
        size_t n_reserved_uids;
        /* How long one step of the size cap goes on at most: it runs on the writer's thread, in
         * front of the ticks (store-share.c). 0: until it is done. */
        uint64_t cap_slice_usec;
} StoreRetention;

#define STORE_RETENTION_DEFAULT                                                                    \
        ((StoreRetention) { .raw_usec = 24 * 3600 * UINT64_C(1000000),                             \
                            .minute_usec = 14 * 24 * 3600 * UINT64_C(1000000),                     \
                            .hour_usec = 365 * 24 * 3600 * UINT64_C(1000000),                      \
                            .max_bytes = 256 * 1024 * 1024,                                        \
                            .batch_rows = 5000,                                                    \
                            .reserve_bytes = 32 * 1024 * 1024,                                 \
                            .cap_slice_usec = 50 * UINT64_C(1000) })

/* Applies migrations[user_version .. n-1] in order, each in its own transaction, and sets
 * PRAGMA user_version to its number. They run with foreign keys off (a migration may rebuild a
 * table others refer to), the setting put back afterwards; a migration that leaves a row
 * referring to one that is not there (PRAGMA foreign_key_check) is rolled back: -EBADMSG.
 * Returns the number applied, or -EPROTO when the database is newer than the list
 * (user_version > n), or another -errno. store_open() runs it; outside the store only
 * test-store.c and test-store-kinds.c call it, on a bare connection with lists of made-up
 * migrations: it is the store's own code under test, so it cannot move into the tests. */
int store_migrate(sqlite3 *db, const EmbeddedFile *migrations, size_t n);

/* Longest comm glob a query accepts (ListProcesses). */
#define STORE_MAX_GLOB 256

/* Process-wide SQLite settings, once, before any connection is opened: allocation statistics
 * off (nothing reads them, and they take a mutex shared by every connection on each allocation:
 * 7 % of the query threads' time in a History of a day). */
void store_init_process(void);
/* Opens (creating if needed) the database at path and migrates it to the embedded schema.
 * boot_id identifies this boot in process identities. Never follows a symbolic link at path:
 * -ELOOP. */
int store_open(const char *path, const char *boot_id, Store **ret);
/* A second, read-only connection to the database a store_open() has migrated, for queries on
 * another thread: store_top(), store_find_process(), store_history(), store_group_history_find()
 * and _read(), store_list_processes(), store_traps(), store_sites(). It sees what the writer had
 * committed when its snapshot began (WAL), the ticks still pending in sample_pending included.
 * -EPROTO when the schema is not the one this build knows. */
int store_open_reader(const char *path, const char *boot_id, Store **ret);
/* The queries between these two read one snapshot of the database (a read transaction): a
 * process's row and its counts agree however many statements and calls a reply takes. The
 * caller of the queries owns it: the query pool begins one per call (query-pool.c), a unit test
 * one per query; the queries begin none of their own, and those of more than one statement
 * (store_top(), store_traps(), store_history(), store_group_history_find() and _read(),
 * store_sites(), store_list_processes()) assert that one is open. store_find_process() is one
 * statement: it reads in the caller's snapshot if there is one. They do not nest, and are not
 * for around writes: -EBUSY inside a snapshot or a write. store_snapshot_end() also after a
 * failed query. On the writer's connection too: the queries never write, the ticks still
 * pending are read where they are. */
int store_snapshot_begin(Store *s);
void store_snapshot_end(Store *s);
/* fn runs every `every` virtual machine steps of each SQL statement of a query; when it returns
 * non-zero the query stops and fails with -ECANCELED. fn NULL removes it. */
void store_set_progress_handler(Store *s, unsigned every, int (*fn)(void *userdata), void *userdata);
Store *store_free(Store *s);
const char *store_errmsg(Store *s);
/* WAL checkpoints off the writer's thread. A checkpoint copies the pages the write-ahead log
 * holds into the database file and syncs it: tens of ms with a sync of a file of hundreds of
 * MiB, and SQLite runs it in the commit that brings the WAL to 1000 pages, i.e. in whatever
 * tick or maintenance step happens to, on the event loop, in front of every call waiting there.
 * With a handler, every commit that leaves the WAL at `pages` or more calls fn(userdata, force)
 * instead, which should have store_checkpoint() run on another thread; force is set from
 * STORE_CHECKPOINT_BACKSTOP times pages on (passive checkpoints are not keeping up). From
 * STORE_CHECKPOINT_LIMIT times pages on (the other thread did not get to run: a machine whose
 * CPUs are busy), the commit checkpoints passively itself, never waiting for a reader: the
 * writer pays, and the log stays bounded whatever the other thread gets. The WAL file is cut
 * back to `pages` pages whenever the log starts over (PRAGMA journal_size_limit). fn NULL:
 * SQLite's own checkpoints at pages. */
#define STORE_CHECKPOINT_PAGES 1000U /* SQLite's default */
#define STORE_CHECKPOINT_BACKSTOP 4U
#define STORE_CHECKPOINT_LIMIT 8U
#define STORE_CHECKPOINT_FORCE_MSEC 200
void store_set_checkpoint_handler(Store *s, unsigned pages, void (*fn)(void *userdata, bool force), void *userdata);
/* The `pages` for a size cap of max_bytes (0: none): 1/32 of the cap, at most
 * STORE_CHECKPOINT_PAGES, at least 16, so that the WAL stays a small part of the cap. */
unsigned store_checkpoint_pages(uint64_t max_bytes);
/* A checkpoint of the database at path (any thread, a connection of its own). Passive: waits
 * neither for the writer nor for readers; frames a reader still needs are left for the next.
 * force: a TRUNCATE checkpoint, which waits up to STORE_CHECKPOINT_FORCE_MSEC for readers and
 * the writer, copies every frame and empties the WAL file. *ret_frames (may be NULL): the
 * frames it could not copy. */
int store_checkpoint(const char *path, bool force, int *ret_frames);
/* Database file plus write-ahead log, in bytes. */
uint64_t store_size_bytes(Store *s);

/* Writes one tick in one transaction: each non-zero delta (faults, traps) is added to the raw
 * bucket holding now_usec, and each process row is created, or updated when its comm, uid,
 * cmdline, unit or exited changed. Last seen is written when it moves into another raw bucket:
 * while a process runs, the row's last_seen_usec is its first tick in the newest bucket, less
 * than 10 s behind the newest tick (still >= the start of every bucket the process has rows in,
 * which Top relies on: a sample whose last_seen_usec is older is written as seen at the start
 * of its tick's bucket);
 * it is exact at exit, at store_free(), and at the first flush in a later bucket once the
 * process has had no sample for a minute. The samples' ProcessInfo need to live only for the
 * call: the store keeps copies of what it wrote.
 * The deltas of a tick are committed as one packed row of sample_pending and folded into the
 * raw buckets when a tick falls into a later minute, by store_maintain() where a step needs it,
 * and at store_open() and store_free(). The queries read the pending ticks where they are
 * (store_top(), store_history(), store_group_history_read()): they see every committed tick,
 * and never fold. */
int store_flush(Store *s, uint64_t now_usec, const ProcessSample *samples, size_t n);
/* The same for the first of the samples, in one transaction that ends once it wrote max_rows
 * process rows with their text (a new process, or a new uid, command line or unit: a storm of
 * new processes, each with its command line, is what makes a tick's transaction large); the
 * samples of processes whose rows it had written are not counted. *ret_n (may be NULL): how many
 * samples it wrote, at least one when n > 0. */
int store_flush_part(Store *s, uint64_t now_usec, const ProcessSample *samples, size_t n, size_t max_rows,
                     size_t *ret_n);
/* store_flush() also adds each sample's sites (ProcessSample.sites) to the raw bucket, at once
 * (they are few), creating the object and site rows they name: an object row per version of a
 * file (name, dev, ino and SiteCount.version), so a file that took an old one's path and inode
 * number has rows of its own; a site's symbol is written when the site is first stored (or later,
 * while it has none). Also the sites of a sample without a
 * delta or traps; sites with count 0 are skipped. The whole tick fails with -EINVAL for a site
 * without object, or with a kind or memory out of range, or period 0. */

/* Writes the symbols learned since their sites were stored (the symbol fills a tick brings): each
 * site's row gets its symbol when it has none, in one transaction. Only object, dev, ino,
 * version, offset, symbol and symbol_offset of each are read; those without a symbol are skipped. */
int store_sites_fill(Store *s, const SiteCount *sites, size_t n);

/* One step of maintenance, each part in its own short transaction so that queries wait at most
 * one batch: rolls complete intervals up into the minute and hour tiers, deletes what the
 * retention and the size cap say, and exited processes without any rows left. *ret_more is set
 * when a part stopped at batch_rows and more is pending: call again soon. */
int store_maintain(Store *s, uint64_t now_usec, const StoreRetention *r, bool *ret_more);

/* Between the parts of a store_maintain() step (each its own transaction), fn is asked whether
 * something more urgent waits (a query waiting for a tick); if it says so, the step ends there with
 * *ret_more set. NULL: every part runs. */
void store_set_maintain_yield(Store *s, bool (*fn)(void *userdata), void *userdata);

/* Bytes of the pages in use (the size cap's measure). This and store_cap_target() are what the
 * size cap (store-share.c) measures with; outside the store only test-store-share.c and
 * bench/store-bench.c call them, to check the cap by the store's own measure. */
uint64_t store_used_bytes(Store *s);
/* What store_used_bytes() is held to under a cap of max_bytes: the cap less room for the WAL,
 * a quarter of the cap up to 32 MiB, or twice its checkpoint threshold
 * (store_set_checkpoint_handler()) if more. */
uint64_t store_cap_target(Store *s, uint64_t max_bytes);
/* Whether the pages in use are over the cap's target: maintenance is due now. */
bool store_over_cap(Store *s, const StoreRetention *r);
/* Whether ticks of an earlier raw bucket are still pending: each tick's write folds a slice of
 * them, and so does each maintenance step, which is then due soon. */
bool store_folding(Store *s);

/* Command lines are stored up to max bytes (at a character's boundary), followed by
 * STORE_CMDLINE_CUT when longer: the cut shows in every reply. 0: no limit. */
#define STORE_MAX_CMDLINE_DEFAULT 1024
#define STORE_CMDLINE_CUT "\xe2\x80\xa6" /* U+2026, an ellipsis */
void store_set_max_cmdline(Store *s, size_t max);

/* Top of a user who has at most max processes ranks theirs alone, read by uid, not by a walk of
 * everyone's totals (store-top.c). 0: always the walk, as bench/store-bench compares. */
#define STORE_TOP_OWN_MAX 4096
void store_set_top_own_max(Store *s, size_t max);

typedef struct StoreRow {
        int64_t id;
        ProcessInfo process;
        Faults faults;
        FaultTime fault_time;
        Stall stall;
        Traps traps;
} StoreRow;

/* Processes with non-zero counts in buckets starting at or after the bucket holding
 * since_usec, sorted descending by sort (a Faults member name, or "traps" for all traps);
 * at most limit rows, *ret_other (unless NULL) those left out by limit. With uid >= 0 only that
 * user's processes (whom the caller may see); with a filter (NULL: none) only the processes it
 * lets through, its globs as SQLite's GLOB. -EINVAL for an unknown sort. */
int store_top(Store *s, uint64_t since_usec, const char *sort, size_t limit, int64_t uid, const ProcessFilter *filter,
              StoreRow **ret, size_t *ret_n, uint64_t *ret_other);
void store_rows_free(StoreRow *rows, size_t n);

/* The process with this pid and start_time, or with start_time 0 the one seen first most
 * recently. -ENOENT when there is none. */
int store_find_process(Store *s, uint32_t pid, uint64_t start_time, int64_t *ret_id, ProcessInfo *ret);
/* The same by its pid in pid namespace ns (an inode number): a process in that namespace or one
 * below it. */
int store_find_process_in_ns(Store *s, uint32_t ns, uint32_t pid, uint64_t start_time, int64_t *ret_id,
                             ProcessInfo *ret);

/* Where a page of store_list_processes() ends: its last process's first sighting and row. The
 * next page holds what comes after it in the listing's order. */
typedef struct StoreListCursor {
        uint64_t first_seen_usec;
        int64_t id;
} StoreListCursor;

typedef struct StoreProcessFilter {
        uint32_t pid;          /* 0: any */
        bool include_exited;
        int64_t uid;           /* < 0: any */
        const char *comm_glob; /* shell glob (SQLite GLOB: case-sensitive); NULL: any */
        const char *unit;      /* exact unit name; NULL: any */
        const char *container; /* a container's name, id or id's prefix (container_matches()); NULL: any */
        uint32_t pidns;        /* not 0: only processes in this pid namespace, pid being their pid there */
        size_t limit;
        const StoreListCursor *after; /* only the processes after this page's end; NULL: from the newest */
} StoreProcessFilter;

/* Processes matching filter, newest first (by first seen, then by row), at most filter->limit of
 * them; *ret_total (unless NULL): how many match, limit aside (after filter->after, when set);
 * *ret_next (unless NULL): where this page ends, for the next call's filter->after. */
int store_list_processes(Store *s, const StoreProcessFilter *filter, ProcessInfo **ret, size_t *ret_n,
                         uint64_t *ret_total, StoreListCursor *ret_next);

/* Traps of all processes (only uid's when uid >= 0) in buckets starting at or after the bucket
 * holding since_usec, summed (with pidns not 0: only of processes in that pid namespace);
 * *ret_processes: how many processes trapped. */
int store_traps(Store *s, uint64_t since_usec, int64_t uid, uint32_t pidns, Traps *ret, uint64_t *ret_processes);
void process_infos_free(ProcessInfo *p, size_t n);

/* The sites of one process (common/sites.h) in [since_usec, until_usec), each instant read from
 * one tier: counts summed per (kind, vector, period, instruction, memory), largest first by
 * estimated count (count × period), ties by kind (traps first), object and offset; only kind's
 * sites when kind >= 0 (a SiteKind); at most limit, *ret_other (unless NULL) those left out by
 * limit. Symbols are those recorded when the site was first stored. */
int store_sites(Store *s, int64_t process_id, uint64_t since_usec, uint64_t until_usec, int kind, size_t limit,
                SiteCount **ret, size_t *ret_n, uint64_t *ret_other);

/* Marks exited every process of this boot not marked so for which alive() says no: those that
 * ended while no daemon was running to see it. One transaction; *ret_n: how many. */
int store_mark_gone(Store *s, bool (*alive)(uint32_t pid, uint64_t start_time, void *userdata), void *userdata,
                    size_t *ret_n);

/* One interval of History. Its traps are apart, and only where there are any: a day at 60 s is
 * 1440 rows, nearly all without traps, and a Traps in each (904 bytes) made the array of one
 * History call about 1.4 MB of freshly faulted memory, most of the call's time. */
typedef struct StoreHistoryRow {
        uint64_t time_usec;
        Faults faults;
        FaultTime fault_time;
        Stall stall;
        Traps *traps; /* NULL: none in the interval */
} StoreHistoryRow;

/* Samples of one process in [since_usec, until_usec), merged into intervals of
 * resolution_usec (a multiple of STORE_RAW_BUCKET_USEC, else -EINVAL), oldest first, the ticks
 * still pending included. *ret to store_history_rows_free(). */
int store_history(Store *s, int64_t process_id, uint64_t since_usec, uint64_t until_usec, uint64_t resolution_usec,
                  StoreHistoryRow **ret, size_t *ret_n);
void store_history_rows_free(StoreHistoryRow *rows, size_t n);

/* Which processes a UnitHistory or a ContainerHistory sums: those of the units matching unit_glob
 * (SQLite's GLOB), or those of the container a user names (container_matches()). One is set. */
typedef struct StoreGroup {
        const char *unit_glob;
        const char *container;
        uint32_t pidns; /* not 0: only its processes in this pid namespace */
} StoreGroup;

/* What the processes of a group did over time (UnitHistory, ContainerHistory). */
typedef struct StoreGroupHistory {
        char **units;             /* a unit group: the units of those processes, sorted, each once */
        size_t n_units;
        Container *containers;    /* a container group: the containers, by runtime and id, each once */
        size_t n_containers;
        uint64_t processes;       /* those processes whose life overlaps the range */
        uint64_t running;         /* of them, those not exited */
        uint64_t first_seen_usec; /* the earliest first seen of all of them (for a default step) */
        StoreHistoryRow *rows;    /* samples summed over the processes, as store_history()'s */
        size_t n_rows;
        /* The processes, for store_group_history_read(): their ids ascending, and as JSON. */
        int64_t *ids;
        size_t n_ids;
        char *ids_json;
} StoreGroupHistory;

/* A group's history in two steps, in one snapshot, so that its caller can choose the step from
 * the processes found: store_group_history_find() finds every process of the group that the
 * caller may see (uid >= 0: only that user's processes), with their units or containers and how
 * many of them overlap [since_usec, until_usec) and run; -ENOENT when there is none.
 * store_group_history_read() then reads their samples in that range summed per interval of
 * resolution_usec into h->rows, as store_history() does, the pending ticks too; -EINVAL for a
 * resolution that is not a multiple of STORE_RAW_BUCKET_USEC. *ret to store_group_history_done(). */
int store_group_history_find(Store *s, const StoreGroup *group, int64_t uid, uint64_t since_usec,
                             uint64_t until_usec, StoreGroupHistory *ret);
int store_group_history_read(Store *s, StoreGroupHistory *h, uint64_t since_usec, uint64_t until_usec,
                             uint64_t resolution_usec);
void store_group_history_done(StoreGroupHistory *h);
