/* SPDX-License-Identifier: MIT */
/* The store's writer side: opening and closing, migrations, configuration, flushing a tick.
 * What a flush writes through: the known-process cache (store-known.c), the pending ticks
 * (store-pending.c), a tick's sites (store-sites-write.c). The parts: store-util.h. */
#include "store-util.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store-known.h"
#include "store-pending.h"
#include "store-read.h"
#include "store-sites-write.h"
#include "time-util.h"

/* The value of a PRAGMA that reads one integer ("PRAGMA user_version"). */
static int pragma_int(sqlite3 *db, const char *pragma, int *ret) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(db, pragma, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_to_errno(rc);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sqlite_to_errno(rc) ?: -EIO;
        *ret = sqlite3_column_int(st, 0);
        return 0;
}

/* -EBADMSG when a row refers to one that is not there. */
static int foreign_keys_check(sqlite3 *db) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(db, "PRAGMA foreign_key_check", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_to_errno(rc);
        rc = sqlite3_step(st);
        return rc == SQLITE_ROW ? -EBADMSG : rc == SQLITE_DONE ? 0 : (sqlite_to_errno(rc) ?: -EIO);
}

/* One migration, which makes the database schema version `version`: the schema change, the
 * check of its references and the version bump commit together or not at all. */
static int migrate_one(sqlite3 *db, const EmbeddedFile *migration, size_t version) {
        char pragma[64];
        int r;

        r = sql_exec(db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %zu", version);
        r = sql_exec(db, migration->text);
        if (r >= 0)
                r = foreign_keys_check(db);
        if (r >= 0)
                r = sql_exec(db, pragma);
        if (r >= 0)
                r = sql_exec(db, "COMMIT");
        if (r < 0 && !sqlite3_get_autocommit(db)) /* SQLite may have rolled back itself */
                (void) sql_exec(db, "ROLLBACK");
        return r;
}

void store_init_process(void) {
        (void) sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int store_migrate(sqlite3 *db, const EmbeddedFile *migrations, size_t n) {
        int version = 0, foreign_keys = 0, r, k;

        r = pragma_int(db, "PRAGMA user_version", &version);
        if (r < 0)
                return r;
        if (version < 0 || (size_t) version > n)
                return -EPROTO;
        if ((size_t) version == n)
                return 0;

        /* Migrations run with foreign keys off. A migration that changes a constraint rebuilds
         * the table (SQLite cannot change one in place; 0008 does it to object): it drops the old
         * table, and with foreign keys on the DROP deletes its rows first, which fails while rows
         * of another table refer to them. The PRAGMA does nothing inside a transaction, so it is
         * switched here, around them; migrate_one() checks every reference before each commit
         * instead, and the setting is put back as the caller had it. */
        r = pragma_int(db, "PRAGMA foreign_keys", &foreign_keys);
        if (r >= 0 && foreign_keys)
                r = sql_exec(db, "PRAGMA foreign_keys = OFF");
        for (size_t i = (size_t) version; r >= 0 && i < n; i++)
                r = migrate_one(db, &migrations[i], i + 1);
        if (foreign_keys && (k = sql_exec(db, "PRAGMA foreign_keys = ON")) < 0 && r >= 0)
                r = k;
        return r < 0 ? r : (int) (n - (size_t) version);
}

/* fmt once per Faults member, comma-separated; it gets the member's column suffix as %1$s and the member's
 * parameter in the statements that bind a sample (fold_into(): ?3 on) as %2$d. */
static char *join_fault_columns(const char *fmt) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < n_fault_fields; i++) {
                if (i > 0)
                        fputs(", ", f);
                fprintf(f, fmt, fault_fields[i].column, 3 + (int) i);
        }
        return memstream_done(f, &buf);
}

/* The known-process cache's statements (store-known.c). */
static int prepare_process_statements(Store *s) {
        int r;

        /* A process's namespaces and container are set once known and kept (as its command line
         * and unit are) when a later sighting knows none. */
        r = sql_prepare(s->db, &s->upsert_process,
                        "INSERT INTO process (boot_id, " PROCESS_ROW_COLUMNS ") "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                        "ON CONFLICT (boot_id, pid, start_time) DO UPDATE SET "
                        "comm = excluded.comm, uid = excluded.uid, cmdline = coalesce(excluded.cmdline, cmdline), "
                        "unit = coalesce(excluded.unit, unit), "
                        "last_seen_usec = max(last_seen_usec, excluded.last_seen_usec), "
                        "exited = max(exited, excluded.exited), ns_pid = coalesce(excluded.ns_pid, ns_pid), "
                        "pid_ns = coalesce(excluded.pid_ns, pid_ns), "
                        "pidns_level = coalesce(excluded.pidns_level, pidns_level), "
                        "container_runtime = coalesce(excluded.container_runtime, container_runtime), "
                        "container_id = iif(excluded.container_runtime IS NULL, container_id, "
                        "excluded.container_id), "
                        "container_name = iif(excluded.container_runtime IS NULL, container_name, "
                        "excluded.container_name), "
                        "container_pod = iif(excluded.container_runtime IS NULL, container_pod, "
                        "excluded.container_pod), "
                        "container_user = iif(excluded.container_runtime IS NULL, container_user, "
                        "excluded.container_user) "
                        "RETURNING id");
        if (r < 0)
                return r;
        r = sql_prepare(s->db, &s->update_process,
                        "UPDATE process SET comm = ?2, uid = ?3, cmdline = coalesce(?4, cmdline), "
                        "unit = coalesce(?5, unit), last_seen_usec = max(last_seen_usec, ?6), "
                        "exited = max(exited, ?7), ns_pid = coalesce(?8, ns_pid), pid_ns = coalesce(?9, pid_ns), "
                        "pidns_level = coalesce(?10, pidns_level), "
                        "container_runtime = coalesce(?11, container_runtime), "
                        "container_id = iif(?11 IS NULL, container_id, ?12), "
                        "container_name = iif(?11 IS NULL, container_name, ?13), "
                        "container_pod = iif(?11 IS NULL, container_pod, ?14), "
                        "container_user = iif(?11 IS NULL, container_user, ?15) WHERE id = ?1");
        if (r < 0)
                return r;
        /* The same with uid, cmdline and unit as they are: ?3 to ?5 are bound (the statement
         * has parameters up to ?7) and not used. */
        r = sql_prepare(s->db, &s->update_process_seen,
                        "UPDATE process SET comm = ?2, last_seen_usec = max(last_seen_usec, ?6), "
                        "exited = max(exited, ?7) WHERE id = ?1");
        if (r < 0)
                return r;
        return sql_prepare(s->db, &s->add_pidns,
                           "INSERT OR IGNORE INTO process_pidns (ns, pid, process_id) VALUES (?, ?, ?)");
}

static int prepare_statements(Store *s) {
        _cleanup_free_ char *values = NULL, *sets = NULL;
        int r;

        s->columns = join_fault_columns("f_%s");
        s->sums = join_fault_columns("SUM(f_%s)");
        s->sums_as = join_fault_columns("SUM(f_%1$s) AS f_%1$s");
        if (!s->columns || !s->sums || !s->sums_as)
                return -ENOMEM;

        r = prepare_process_statements(s);
        if (r < 0)
                return r;
        r = sql_prepare(s->db, &s->add_pending, "INSERT INTO sample_pending (time_usec, data) VALUES (?, ?)");
        if (r < 0)
                return r;
        /* The totals' statements take what fold_into() binds: (id, bucket, the faults from ?3,
         * traps, time, stall), as the sample kind's raw upsert does. */
        values = join_fault_columns("?");
        sets = join_fault_columns("f_%1$s = f_%1$s + ?%2$d");
        if (!values || !sets)
                return -ENOMEM;
        /* A total is an UPDATE, and an INSERT only where the process has none yet: the same
         * change as an upsert (INSERT ... ON CONFLICT DO UPDATE) cost more with the table's ten
         * partial indexes (store-bench's last day of 1000 processes: 64.4 s with the upsert, 59.8 s
         * so; bench/README). */
        r = sql_prepare(s->db, &s->add_total,
                        "UPDATE process_total SET last_counted_usec = max(last_counted_usec, ?2), %s, "
                        "traps = traps + ?%d, time_ns = time_ns + ?%d, stall_ns = stall_ns + ?%d WHERE process_id = ?1",
                        sets, 3 + (int) n_fault_fields, 4 + (int) n_fault_fields, 5 + (int) n_fault_fields);
        if (r < 0)
                return r;
        r = sql_prepare(s->db, &s->insert_total,
                        "INSERT INTO process_total (process_id, last_counted_usec, %s, traps, time_ns, stall_ns) "
                        "VALUES (?1, ?2, %s, ?, ?, ?)",
                        s->columns, values);
        if (r < 0)
                return r;
        for (int k = 0; k < _STORE_KIND_MAX; k++) {
                _cleanup_free_ char *sql = store_kind_upsert(&store_kinds[k], TIER_RAW);

                if (!sql)
                        return -ENOMEM;
                r = sql_prepare(s->db, &s->add_raw[k], "%s", sql);
                if (r < 0)
                        return r;
        }
        r = store_sites_prepare(s);
        if (r < 0)
                return r;
        return store_read_prepare(s);
}

/* Opens the connection; never through a symbolic link (-ELOOP): one planted in the state
 * directory would have us turn its target into a database. */
static int store_new(const char *path, const char *boot_id, int flags, Store **ret) {
        Store *s;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->max_cmdline = STORE_MAX_CMDLINE_DEFAULT;
        s->top_own_max = STORE_TOP_OWN_MAX;
        s->path = strdup(path);
        s->boot_id = strdup(boot_id);
        for (size_t i = 0; i < STORE_SHARE_CURSORS; i++)
                s->share_cursors[i].uid = -1;
        if (!s->path || !s->boot_id) {
                store_free(s);
                return -ENOMEM;
        }
        r = sqlite_to_errno(sqlite3_open_v2(path, &s->db, flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL));
        if (r < 0) {
                /* SQLite says "cannot open" for a link it refused to follow; tell it apart. */
                struct stat st;
                if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
                        r = -ELOOP;
                store_free(s);
                return r;
        }
        sqlite3_extended_result_codes(s->db, 1);
        /* Globs are ListProcesses filters on a 16-byte comm: a longer one is an abuse, and SQLite's
         * own limit (50000) lets one glob run for seconds. */
        sqlite3_limit(s->db, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, STORE_MAX_GLOB);
        *ret = s;
        return 0;
}

int store_open_reader(const char *path, const char *boot_id, Store **ret) {
        Store *s;
        int version = 0, r;

        r = store_new(path, boot_id, SQLITE_OPEN_READONLY, &s);
        if (r < 0)
                return r;
        sqlite3_busy_timeout(s->db, 5000);
        /* The writer migrates; a reader only checks it has the schema it knows. */
        r = pragma_int(s->db, "PRAGMA user_version", &version);
        if (r >= 0 && (size_t) version != embedded_migrations_count)
                r = -EPROTO;
        if (r >= 0)
                r = sql_exec(s->db, "PRAGMA query_only = 1");
        if (r >= 0)
                r = prepare_statements(s);
        if (r < 0) {
                store_free(s);
                return r;
        }
        *ret = s;
        return 0;
}


void store_set_progress_handler(Store *s, unsigned every, int (*fn)(void *userdata), void *userdata) {
        sqlite3_progress_handler(s->db, (int) MIN(every, (unsigned) INT32_MAX), fn, userdata);
}

int store_open(const char *path, const char *boot_id, Store **ret) {
        Store *s;
        int r;

        r = store_new(path, boot_id, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &s);
        if (r < 0)
                return r;
        /* A new database gives freed pages back (the size cap). Only possible before any table
         * exists and before WAL mode writes the header; a no-op on an existing database. */
        r = sql_exec(s->db, "PRAGMA auto_vacuum = INCREMENTAL");
        if (r < 0)
                goto fail;
        /* WAL: readers never block the writer; synchronous=NORMAL keeps every committed flush
         * across a crash of the daemon (not necessarily of the machine), at a fraction of FULL's
         * fsyncs. */
        r = sql_exec(s->db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;");
        /* The size cap's coarsening holds a batch of sums in temporary tables: memory, not a file
         * (the service's /tmp is private, and a file would be written and synced for nothing). */
        if (r >= 0)
                r = sql_exec(s->db, "PRAGMA temp_store = MEMORY");
        if (r < 0)
                goto fail;
        sqlite3_busy_timeout(s->db, 5000);

        r = store_migrate(s->db, embedded_migrations, embedded_migrations_count);
        if (r < 0)
                goto fail;
        /* Processes of earlier boots are gone, whatever the last daemon saw of them. */
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(s->db, "UPDATE process SET exited = 1 WHERE boot_id != ?1 AND NOT exited", -1, &st, NULL) ==
            SQLITE_OK) {
                sqlite3_bind_text(st, 1, boot_id, -1, SQLITE_STATIC);
                r = sql_step_done(st);
                sqlite3_finalize(st);
                if (r < 0)
                        goto fail;
        }
        r = prepare_statements(s);
        if (r < 0)
                goto fail;
        /* Ticks the last daemon committed but had not folded (it was killed, say). */
        s->pending = true;
        r = store_pending_settle(s);
        if (r < 0)
                goto fail;

        *ret = s;
        return 0;
fail:
        store_free(s);
        return r;
}

Store *store_free(Store *s) {
        if (!s)
                return NULL;
        if (s->add_raw[STORE_KIND_SAMPLE])
                (void) store_pending_settle(s);
        store_pending_forget_fold(s);
        store_known_reset(s);
        sqlite3_finalize(s->upsert_process);
        sqlite3_finalize(s->update_process);
        sqlite3_finalize(s->update_process_seen);
        sqlite3_finalize(s->add_pidns);
        sqlite3_finalize(s->add_pending);
        sqlite3_finalize(s->add_total);
        sqlite3_finalize(s->insert_total);
        for (int k = 0; k < _STORE_KIND_MAX; k++)
                sqlite3_finalize(s->add_raw[k]);
        free(s->packed);
        sqlite3_finalize(s->find_process);
        sqlite3_finalize(s->find_newest_process);
        store_sites_done(s);
        sqlite3_close_v2(s->db);
        free(s->columns);
        free(s->sums);
        free(s->sums_as);
        free(s->path);
        free(s->boot_id);
        free(s);
        return NULL;
}

const char *store_errmsg(Store *s) {
        return s && s->db ? sqlite3_errmsg(s->db) : "no database";
}

/* Replaces SQLite's automatic checkpoint (the same threshold, run in the commit that reaches
 * it): see store_set_checkpoint_handler(). */
static int on_wal_commit(void *userdata, sqlite3 *db, const char *name, int pages) {
        Store *s = userdata;

        if (pages < 0 || (unsigned) pages < s->checkpoint_pages)
                return SQLITE_OK;
        /* Past the limit the other thread has not run at all (measured: a WAL of 4.65 MiB under
         * an 8 MiB cap while a compiler kept both CPUs busy): the writer copies the log itself,
         * as SQLite's own automatic checkpoint would in this hook. Passive: it waits for no
         * reader, and a checkpoint the other thread is running makes it return at once. */
        if ((unsigned) pages >= STORE_CHECKPOINT_LIMIT * s->checkpoint_pages)
                (void) sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        /* Past the backstop the other thread is not keeping up (a reader held the log, or its
         * checkpoints are slow): it forces one, the loop still never checkpoints itself. */
        s->checkpoint_fn(s->checkpoint_userdata, (unsigned) pages >= STORE_CHECKPOINT_BACKSTOP * s->checkpoint_pages);
        return SQLITE_OK;
}

unsigned store_checkpoint_pages(uint64_t max_bytes) {
        /* max_bytes / 4096 / 32: a WAL of 1/32 of the cap asks for a checkpoint. */
        uint64_t pages = max_bytes / (UINT64_C(4096) * 32);

        if (max_bytes == 0 || pages > STORE_CHECKPOINT_PAGES)
                return STORE_CHECKPOINT_PAGES;
        return (unsigned) MAX(pages, 16U);
}

void store_set_checkpoint_handler(Store *s, unsigned pages, void (*fn)(void *userdata, bool force), void *userdata) {
        int64_t page_size = 4096;

        s->checkpoint_pages = MAX(pages, 1U);
        s->checkpoint_fn = fn;
        s->checkpoint_userdata = userdata;
        if (fn)
                sqlite3_wal_hook(s->db, on_wal_commit, s);
        else
                sqlite3_wal_autocheckpoint(s->db, (int) MIN(pages, (unsigned) INT32_MAX));
        /* A checkpoint copies the log into the database but leaves the file as long as it was;
         * SQLite cuts it back to this when the writer starts the log over, after a checkpoint
         * that copied every frame. Without it the file keeps its longest size for good. */
        (void) sql_query_int(s->db, "PRAGMA page_size", 0, &page_size);
        (void) sql_exec_fmt(s->db, "PRAGMA journal_size_limit = %" PRId64, (int64_t) s->checkpoint_pages * page_size);
}

int store_checkpoint(const char *path, bool force, int *ret_frames) {
        sqlite3 *db = NULL;
        int64_t ignored;
        int frames = -1, copied = -1, r;

        /* A connection of its own, opened for this checkpoint alone: the file at path may have
         * been moved aside and recreated since the last one. Never creates it. It is not the
         * last connection (the writer's is open), so closing it does not checkpoint again. */
        r = sqlite_to_errno(
                sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL));
        /* A connection that has read nothing has not seen that the database is in WAL mode, and
         * sqlite3_wal_checkpoint_v2() on it copies nothing and says SQLITE_OK with -1 frames
         * (SQLite 3.40 and later): read the header first. */
        if (r >= 0)
                r = sql_query_int(db, "PRAGMA schema_version", 0, &ignored);
        if (r >= 0 && force) {
                /* Waits for readers and the writer, which waits for it in turn: briefly. */
                sqlite3_busy_timeout(db, STORE_CHECKPOINT_FORCE_MSEC);
                r = sqlite_to_errno(sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, &frames, &copied));
        } else if (r >= 0)
                r = sqlite_to_errno(sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &frames, &copied));
        sqlite3_close_v2(db);
        if (r < 0)
                return r;
        if (ret_frames)
                *ret_frames = frames > copied ? frames - copied : 0;
        return 0;
}

void store_set_maintain_yield(Store *s, bool (*fn)(void *userdata), void *userdata) {
        s->maintain_yield = fn;
        s->maintain_yield_userdata = userdata;
}

uint64_t store_size_bytes(Store *s) {
        static const char *const suffixes[] = { "", "-wal" };
        uint64_t total = 0;

        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                char p[4096];
                struct stat st;

                snprintf(p, sizeof(p), "%s%s", s->path, suffixes[i]);
                if (stat(p, &st) == 0)
                        total += (uint64_t) st.st_size;
        }
        return total;
}

void store_set_max_cmdline(Store *s, size_t max) {
        s->max_cmdline = max;
}

void store_set_top_own_max(Store *s, size_t max) {
        s->top_own_max = max;
}


/* Adds a tick's traps to the raw rows of the kinds that are part of a Traps, at once: they are
 * few, unlike the samples. */
static int add_traps(Store *s, int64_t process_id, uint64_t bucket_usec, const Traps *t) {
        for (int k = 0; k < _STORE_KIND_MAX; k++) {
                const StoreKind *kind = &store_kinds[k];
                size_t n_keys = store_kind_n_keys(kind), n_values = store_kind_n_values(kind);
                int64_t keys[STORE_KIND_MAX_KEYS];
                uint64_t values[STORE_KIND_MAX_VALUES];
                sqlite3_stmt *st = s->add_raw[k];

                if (!kind->traps_next)
                        continue;
                for (size_t cursor = 0; kind->traps_next(t, &cursor, keys, values);) {
                        int r;

                        sqlite3_reset(st);
                        sqlite3_bind_int64(st, 1, process_id);
                        sqlite3_bind_int64(st, 2, (int64_t) bucket_usec);
                        for (size_t i = 0; i < n_keys; i++)
                                sqlite3_bind_int64(st, 3 + (int) i, keys[i]);
                        for (size_t i = 0; i < n_values; i++)
                                sqlite3_bind_int64(st, 3 + (int) (n_keys + i), (int64_t) values[i]);
                        r = sql_step_done(st);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Adds a tick's fault time to its raw bucket; in the caller's transaction. */
static int add_fault_time(Store *s, int64_t process_id, uint64_t bucket_usec, const FaultTime *t) {
        sqlite3_stmt *st = s->add_raw[STORE_KIND_FAULT_TIME];
        uint64_t values[] = { t->minor_ns, t->major_ns, t->kernel_ns, t->max_ns }, causes[] = {
                t->major_file_ns, t->major_anon_ns, t->major_shmem_ns
        };

        _Static_assert(ELEMENTSOF(values) + FAULT_TIME_BUCKETS + ELEMENTSOF(causes) <= STORE_KIND_MAX_VALUES,
                       "the kind holds them");
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, process_id);
        sqlite3_bind_int64(st, 2, (int64_t) bucket_usec);
        for (size_t i = 0; i < ELEMENTSOF(values); i++)
                sqlite3_bind_int64(st, 3 + (int) i, (int64_t) MIN(values[i], (uint64_t) INT64_MAX));
        for (size_t i = 0; i < FAULT_TIME_BUCKETS; i++)
                sqlite3_bind_int64(st, 3 + (int) (ELEMENTSOF(values) + i),
                                   (int64_t) MIN(t->histogram[i], (uint64_t) INT64_MAX));
        for (size_t i = 0; i < ELEMENTSOF(causes); i++)
                sqlite3_bind_int64(st, 3 + (int) (ELEMENTSOF(values) + FAULT_TIME_BUCKETS + i),
                                   (int64_t) MIN(causes[i], (uint64_t) INT64_MAX));
        return sql_step_done(st);
}

/* Adds a tick's delay accounting to its raw bucket; in the caller's transaction. */
static int add_stall(Store *s, int64_t process_id, uint64_t bucket_usec, const Stall *stall) {
        sqlite3_stmt *st = s->add_raw[STORE_KIND_STALL];

        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, process_id);
        sqlite3_bind_int64(st, 2, (int64_t) bucket_usec);
        for (size_t i = 0; i < _STALL_MAX; i++) {
                sqlite3_bind_int64(st, 3 + 2 * (int) i, (int64_t) MIN(stall->ns[i], (uint64_t) INT64_MAX));
                sqlite3_bind_int64(st, 4 + 2 * (int) i, (int64_t) MIN(stall->count[i], (uint64_t) INT64_MAX));
        }
        return sql_step_done(st);
}

/* Writes one process's part of a tick: its row, its deltas packed for the pending row, and the
 * kinds written at once (fault time, delay accounting, traps, sites). In the caller's transaction.
 * 1 when it wrote
 * the process's row with its text (store_known_row()), else 0. */
static int flush_sample(Store *s, const ProcessSample *sample, uint64_t bucket, uint64_t now_usec) {
        /* Seen at least in the bucket it has counts in: Top finds the processes of a stretch of
         * time by last seen (store.h). The collector passes the tick's time. */
        ProcessInfo seen = *sample->process;
        uint64_t traps = sample->traps ? traps_total(sample->traps) : 0;
        uint64_t time_ns = fault_time_total_ns(&sample->fault_time), stall_ns = stall_memory_ns(&sample->stall);
        bool stalled = !stall_is_zero(&sample->stall);
        KnownProcess *k;
        int64_t id = 0;
        int r, row;

        seen.last_seen_usec = MAX(seen.last_seen_usec, bucket);
        r = row = store_known_row(s, &seen, &id, &k);
        if (r < 0)
                return r;
        k->flushed_usec = now_usec;

        /* A stall of block I/O alone (stall_ns 0) has its interval's sample row too, as fault
         * time and traps do: History and Top find an interval's other kinds through it. */
        if (!faults_is_zero(&sample->delta) || traps > 0 || time_ns > 0 || stalled) {
                r = store_pending_pack(s, id, &sample->delta, traps, time_ns, stall_ns);
                if (r < 0)
                        return r;
        }
        if (stalled) {
                r = add_stall(s, id, bucket, &sample->stall);
                if (r < 0)
                        return r;
        }
        if (!fault_time_is_zero(&sample->fault_time)) {
                r = add_fault_time(s, id, bucket, &sample->fault_time);
                if (r < 0)
                        return r;
        }
        if (traps > 0) {
                r = add_traps(s, id, bucket, sample->traps);
                if (r < 0)
                        return r;
        }
        /* Also without a delta or traps: the store does not rely on a site coming with them. */
        if (sample->n_sites > 0) {
                r = store_sites_add(s, id, bucket, sample->sites, sample->n_sites);
                if (r < 0)
                        return r;
        }
        /* Its row is final: exited, last seen exact. */
        if (seen.exited)
                store_known_forget(s, k);
        return row;
}

/* How long a tick's write goes on folding the ticks of an earlier minute, beside its own. */
#define FLUSH_FOLD_USEC (8 * USEC_PER_MSEC)

int store_flush(Store *s, uint64_t now_usec, const ProcessSample *samples, size_t n) {
        return store_flush_part(s, now_usec, samples, n, SIZE_MAX, NULL);
}

int store_flush_part(Store *s, uint64_t now_usec, const ProcessSample *samples, size_t n, size_t max_rows,
                     size_t *ret_n) {
        uint64_t bucket = tier_floor(TIER_RAW, now_usec);
        bool folded = false, packed;
        size_t i = 0, rows = 0;
        int r;

        if (n == 0) {
                if (ret_n)
                        *ret_n = 0;
                return 0;
        }
        r = sql_exec(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        if (bucket != s->swept_bucket) {
                r = store_known_sweep(s, now_usec);
                if (r < 0)
                        goto rollback;
                s->swept_bucket = bucket;
        }
        /* A tick in a new minute: the last one's ticks are folded into their raw rows, a slice
         * with each tick and in maintenance steps (store_pending_fold_slice()). */
        if (s->pending && store_fold_floor(s->pending_bucket) != store_fold_floor(bucket))
                s->fold_due = true;
        /* Once a tick: the writer may write one in several transactions (daemon/writer.c). */
        if (s->fold_due && s->fold_tick_usec != now_usec) {
                s->fold_tick_usec = now_usec;
                r = store_pending_fold_slice(s, bucket, FLUSH_FOLD_USEC, &folded);
                if (r < 0)
                        goto rollback;
        }
        s->packed_size = 0;
        while (i < n && (i == 0 || rows < max_rows)) {
                r = flush_sample(s, &samples[i++], bucket, now_usec);
                if (r < 0)
                        goto rollback;
                rows += (size_t) r;
        }
        packed = s->packed_size > 0;
        if (packed) {
                r = store_pending_add(s, now_usec);
                if (r < 0)
                        goto rollback;
        }
        r = sql_exec(s->db, "COMMIT");
        if (r < 0)
                goto rollback;
        if (folded)
                s->fold_due = false;
        if (packed) {
                s->pending = true;
                s->pending_bucket = bucket;
        }
        if (ret_n)
                *ret_n = i;
        return 0;
rollback:
        store_rollback(s);
        /* What the caches say may have been rolled back with it, and the pending rows are
         * not known any more. */
        store_known_clear(s);
        store_site_ids_clear(s);
        s->pending = true;
        s->pending_bucket = 0;
        s->fold_due = true;
        store_pending_forget_fold(s);
        return r;
}


