/* SPDX-License-Identifier: MIT */
/* The store's writer side: opening and closing, migrations, writing ticks and the known-process
 * cache. The pending ticks are in store-pending.c, a tick's sites in store-sites.c, queries in
 * store-query.c, maintenance in store-maintain.c (store-internal.h). */
#include "store-internal.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "array-util.h"

/* A process row as this store last wrote it, so that a tick writes the row only when something
 * in it changes: comm, uid, cmdline, unit, exited, or last seen moving into another raw bucket.
 * Rewriting every live process's row every tick was most of the cost of a flush. Entries go at
 * exit, after KNOWN_IDLE_USEC without a sample, and all of them when a transaction fails (the
 * ids it created are rolled back) or when rows are marked exited behind the collector's back. */
typedef struct KnownProcess {
        uint32_t pid;
        uint64_t start_time;
        int64_t id;                 /* process.id */
        char comm[COMM_MAX];        /* comm and uid as in the row */
        uint32_t uid;
        char *cmdline, *unit;       /* the last non-NULL ones written; NULL: none written */
        uint64_t last_seen_written; /* last_seen_usec as in the row */
        uint64_t last_seen;         /* the newest the caller passed: written when it leaves */
        uint64_t flushed_usec;      /* the last flush it was in */
} KnownProcess;

#define KNOWN_IDLE_USEC (60 * UINT64_C(1000000))

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

/* fmt once per Faults member, comma-separated; it gets the member's name as %1$s. */
static char *join_fault_columns(const char *fmt) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < n_fault_fields; i++) {
                if (i > 0)
                        fputs(", ", f);
                fprintf(f, fmt, fault_fields[i].name);
        }
        return memstream_done(f, &buf);
}

static int prepare_statements(Store *s) {
        int r;

        s->columns = join_fault_columns("f_%s");
        s->sums = join_fault_columns("SUM(f_%s)");
        s->sums_as = join_fault_columns("SUM(f_%1$s) AS f_%1$s");
        if (!s->columns || !s->sums || !s->sums_as)
                return -ENOMEM;

        r = sql_prepare(s->db, &s->upsert_process,
                        "INSERT INTO process (boot_id, " PROCESS_COLUMNS ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                        "ON CONFLICT (boot_id, pid, start_time) DO UPDATE SET "
                        "comm = excluded.comm, uid = excluded.uid, cmdline = coalesce(excluded.cmdline, cmdline), "
                        "unit = coalesce(excluded.unit, unit), "
                        "last_seen_usec = max(last_seen_usec, excluded.last_seen_usec), "
                        "exited = max(exited, excluded.exited) RETURNING id");
        if (r < 0)
                return r;
        r = sql_prepare(s->db, &s->update_process,
                        "UPDATE process SET comm = ?2, uid = ?3, cmdline = coalesce(?4, cmdline), "
                        "unit = coalesce(?5, unit), last_seen_usec = max(last_seen_usec, ?6), "
                        "exited = max(exited, ?7) WHERE id = ?1");
        if (r < 0)
                return r;
        /* The same with uid, cmdline and unit as they are: ?3 to ?5 are bound (the statement
         * has parameters up to ?7) and not used. */
        r = sql_prepare(s->db, &s->update_process_seen,
                        "UPDATE process SET comm = ?2, last_seen_usec = max(last_seen_usec, ?6), "
                        "exited = max(exited, ?7) WHERE id = ?1");
        if (r < 0)
                return r;
        r = sql_prepare(s->db, &s->add_pending, "INSERT INTO sample_pending (time_usec, data) VALUES (?, ?)");
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
        r = sql_prepare(s->db, &s->find_object,
                        "SELECT id FROM object WHERE name = ?1 AND dev = ?2 AND ino = ?3 AND ctime_nsec = ?4 "
                        "AND generation = ?5");
        if (r < 0)
                return r;
        r = sql_prepare(s->db, &s->add_object,
                        "INSERT INTO object (name, dev, ino, ctime_nsec, generation) VALUES (?1, ?2, ?3, ?4, ?5) "
                        "RETURNING id");
        if (r < 0)
                return r;
        /* A symbol is written when the site is first stored, or later while it has none; once
         * written it stays (store_sites() in store.h). The pair goes together: symbol_offset
         * means nothing without its symbol. */
        r = sql_prepare(s->db, &s->upsert_site,
                        "INSERT INTO site (object_id, file_offset, symbol, symbol_offset) VALUES (?1, ?2, ?3, ?4) "
                        "ON CONFLICT (object_id, file_offset) DO UPDATE SET "
                        "symbol = coalesce(site.symbol, excluded.symbol), "
                        "symbol_offset = CASE WHEN site.symbol IS NULL THEN excluded.symbol_offset "
                        "ELSE site.symbol_offset END "
                        "RETURNING id, symbol IS NOT NULL");
        if (r < 0)
                return r;
        r = sql_prepare(s->db, &s->find_process,
                        "SELECT id, " PROCESS_COLUMNS " FROM process WHERE pid = ? AND start_time = ? "
                        "ORDER BY first_seen_usec DESC LIMIT 1");
        if (r < 0)
                return r;
        return sql_prepare(s->db, &s->find_newest_process,
                           "SELECT id, " PROCESS_COLUMNS " FROM process WHERE pid = ? "
                           "ORDER BY first_seen_usec DESC, id DESC LIMIT 1");
}

/* Defined with the rest of the known-process cache, by store_flush(). */
static void known_write_all(Store *s);
static void known_clear(Store *s);

/* Opens the connection; never through a symbolic link (-ELOOP): one planted in the state
 * directory would have us turn its target into a database. */
static int store_new(const char *path, const char *boot_id, int flags, Store **ret) {
        Store *s;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->max_cmdline = STORE_MAX_CMDLINE_DEFAULT;
        s->path = strdup(path);
        s->boot_id = strdup(boot_id);
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

int store_settle(Store *s) {
        return store_pending_settle(s);
}

int store_snapshot_begin(Store *s) {
        if (s->snapshots == 0) {
                int r = sql_exec(s->db, "BEGIN");

                if (r < 0)
                        return r;
        }
        s->snapshots++;
        return 0;
}

void store_snapshot_end(Store *s) {
        assert(s->snapshots > 0);
        /* A read: nothing to commit. An interrupted statement (the progress handler) may have
         * ended the transaction already. */
        if (--s->snapshots == 0)
                store_rollback(s);
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
        known_write_all(s);
        known_clear(s);
        sqlite3_finalize(s->upsert_process);
        sqlite3_finalize(s->update_process);
        sqlite3_finalize(s->update_process_seen);
        sqlite3_finalize(s->add_pending);
        for (int k = 0; k < _STORE_KIND_MAX; k++)
                sqlite3_finalize(s->add_raw[k]);
        free(s->packed);
        sqlite3_finalize(s->find_process);
        sqlite3_finalize(s->find_newest_process);
        sqlite3_finalize(s->find_object);
        sqlite3_finalize(s->add_object);
        sqlite3_finalize(s->upsert_site);
        store_site_ids_free(s);
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

const char *store_path(Store *s) {
        return s->path;
}

/* Replaces SQLite's automatic checkpoint (the same threshold, run in the commit that reaches
 * it): see store_set_checkpoint_handler(). */
static int on_wal_commit(void *userdata, sqlite3 *db _unused_, const char *name _unused_, int pages) {
        Store *s = userdata;

        if (pages < 0 || (unsigned) pages < s->checkpoint_pages)
                return SQLITE_OK;
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

/* The command line as stored: *ret a copy cut to s->max_cmdline bytes and marked, or NULL when
 * it fits as it is. */
static int cmdline_cut(const Store *s, const char *cmdline, char **ret) {
        size_t n;

        if (!cmdline || s->max_cmdline == 0 || strnlen(cmdline, s->max_cmdline + 1) <= s->max_cmdline) {
                *ret = NULL;
                return 0;
        }
        /* Never half a character: JSON needs valid UTF-8. cmdline[n] is the first byte cut. */
        n = s->max_cmdline;
        while (n > 0 && ((unsigned char) cmdline[n] & 0xC0) == 0x80)
                n--;
        return asprintf(ret, "%.*s%s", (int) n, cmdline, STORE_CMDLINE_CUT) < 0 ? -ENOMEM : 0;
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *v) {
        if (v)
                sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
        else
                sqlite3_bind_null(st, i);
}

static int upsert_process(Store *s, const ProcessInfo *p, int64_t *ret_id) {
        sqlite3_stmt *st = s->upsert_process;
        int rc;

        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, s->boot_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, p->pid);
        sqlite3_bind_int64(st, 3, (int64_t) p->start_time);
        sqlite3_bind_text(st, 4, p->comm, -1, SQLITE_STATIC);
        bind_text_or_null(st, 5, p->cmdline);
        sqlite3_bind_int64(st, 6, p->uid);
        bind_text_or_null(st, 7, p->unit);
        sqlite3_bind_int64(st, 8, (int64_t) p->first_seen_usec);
        sqlite3_bind_int64(st, 9, (int64_t) p->last_seen_usec);
        sqlite3_bind_int(st, 10, p->exited);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                sqlite3_reset(st);
                return sqlite_to_errno(rc) ?: -EIO;
        }
        *ret_id = sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        return 0;
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
        uint64_t values[] = { t->minor_ns, t->major_ns, t->kernel_ns, t->max_ns };

        _Static_assert(ELEMENTSOF(values) + FAULT_TIME_BUCKETS <= STORE_KIND_MAX_VALUES, "the kind holds them");
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, process_id);
        sqlite3_bind_int64(st, 2, (int64_t) bucket_usec);
        for (size_t i = 0; i < ELEMENTSOF(values); i++)
                sqlite3_bind_int64(st, 3 + (int) i, (int64_t) MIN(values[i], (uint64_t) INT64_MAX));
        for (size_t i = 0; i < FAULT_TIME_BUCKETS; i++)
                sqlite3_bind_int64(st, 3 + (int) (ELEMENTSOF(values) + i),
                                   (int64_t) MIN(t->histogram[i], (uint64_t) INT64_MAX));
        return sql_step_done(st);
}

static int known_compare(const void *a, const void *b) {
        const KnownProcess *x = a, *y = b;

        return process_identity_compare(x->pid, x->start_time, y->pid, y->start_time);
}

static void known_free(void *p) {
        KnownProcess *k = p;

        free(k->cmdline);
        free(k->unit);
        free(k);
}

static void known_forget(Store *s, KnownProcess *k) {
        tdelete(k, &s->known, known_compare);
        known_free(k);
}

static void known_clear(Store *s) {
        tdestroy(s->known, known_free);
        s->known = NULL;
}

static KnownProcess *known_find(Store *s, const ProcessInfo *p) {
        KnownProcess key = { .pid = p->pid, .start_time = p->start_time };
        KnownProcess **k = tfind(&key, &s->known, known_compare);

        return k ? *k : NULL;
}

static bool text_changes(const char *cached, const char *v) {
        /* NULL keeps what the row has (coalesce in the statements). */
        return v && (!cached || strcmp(cached, v) != 0);
}

static int text_update(char **cached, const char *v) {
        char *copy;

        if (!text_changes(*cached, v))
                return 0;
        copy = strdup(v);
        if (!copy)
                return -ENOMEM;
        free(*cached);
        *cached = copy;
        return 0;
}

/* Whether the row needs writing: what the UPDATE would change, except a last seen that stays in
 * the raw bucket last written (precision: see store_flush() in store.h). */
static bool known_differs(const KnownProcess *k, const ProcessInfo *p) {
        return p->exited || strcmp(k->comm, p->comm) != 0 || k->uid != p->uid || text_changes(k->cmdline, p->cmdline) ||
               text_changes(k->unit, p->unit) ||
               (p->last_seen_usec > k->last_seen_written &&
                p->last_seen_usec / STORE_RAW_BUCKET_USEC != k->last_seen_written / STORE_RAW_BUCKET_USEC);
}

/* Records that the row now holds p's identity. */
static int known_update(KnownProcess *k, const ProcessInfo *p) {
        int r;

        snprintf(k->comm, sizeof(k->comm), "%s", p->comm);
        k->uid = p->uid;
        k->last_seen_written = MAX(k->last_seen_written, p->last_seen_usec);
        k->last_seen = MAX(k->last_seen, p->last_seen_usec);
        r = text_update(&k->cmdline, p->cmdline);
        if (r >= 0)
                r = text_update(&k->unit, p->unit);
        return r;
}

static int known_add(Store *s, const ProcessInfo *p, int64_t id, KnownProcess **ret) {
        KnownProcess *k;
        int r;

        k = calloc(1, sizeof(*k));
        if (!k)
                return -ENOMEM;
        *k = (KnownProcess) { .pid = p->pid, .start_time = p->start_time, .id = id };
        r = known_update(k, p);
        if (r < 0 || !tsearch(k, &s->known, known_compare)) {
                known_free(k);
                return -ENOMEM;
        }
        *ret = k;
        return 0;
}

/* Writes identity, last seen and exited into the row with this id; -ENOENT when it is gone.
 * identity: uid, cmdline or unit may differ from the row's; without, they are not written, which
 * spares the uid index and the size shares' trigger (schema/sql/0007-shares.sql) the update. */
static int update_process(Store *s, int64_t id, const ProcessInfo *p, bool identity) {
        sqlite3_stmt *st = identity ? s->update_process : s->update_process_seen;
        int r;

        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, p->comm, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, p->uid);
        bind_text_or_null(st, 4, p->cmdline);
        bind_text_or_null(st, 5, p->unit);
        sqlite3_bind_int64(st, 6, (int64_t) p->last_seen_usec);
        sqlite3_bind_int(st, 7, p->exited);
        r = sql_step_done(st);
        if (r >= 0 && sqlite3_changes(s->db) == 0)
                return -ENOENT;
        return r;
}

/* Writes the last seen that is newer than the row's (only its raw bucket was written). */
static int known_write_last_seen(Store *s, KnownProcess *k) {
        ProcessInfo p = { .uid = k->uid, .last_seen_usec = k->last_seen };
        int r;

        if (k->last_seen <= k->last_seen_written)
                return 0;
        snprintf(p.comm, sizeof(p.comm), "%s", k->comm);
        r = update_process(s, k->id, &p, false);
        if (r == -ENOENT)
                return 0; /* nothing left to update */
        if (r >= 0)
                k->last_seen_written = k->last_seen;
        return r;
}

/* The process's row id, the row created or updated as needed; *ret_known: its cache entry. */
static int process_row(Store *s, const ProcessInfo *p, int64_t *ret_id, KnownProcess **ret_known) {
        KnownProcess *k = known_find(s, p);
        _cleanup_free_ char *cut = NULL;
        ProcessInfo stored;
        int64_t id = 0;
        int r;

        /* The command line as it is stored, also for comparing with the cache. */
        r = cmdline_cut(s, p->cmdline, &cut);
        if (r < 0)
                return r;
        if (cut) {
                stored = *p;
                stored.cmdline = cut;
                p = &stored;
        }

        if (k) {
                if (!known_differs(k, p)) {
                        k->last_seen = MAX(k->last_seen, p->last_seen_usec);
                        *ret_id = k->id;
                        *ret_known = k;
                        return 0;
                }
                r = update_process(s, k->id, p,
                                   k->uid != p->uid || text_changes(k->cmdline, p->cmdline) ||
                                           text_changes(k->unit, p->unit));
                if (r >= 0) {
                        r = known_update(k, p);
                        if (r < 0)
                                return r;
                        *ret_id = k->id;
                        *ret_known = k;
                        return 0;
                }
                if (r != -ENOENT)
                        return r;
                known_forget(s, k); /* the row is gone: create it again */
        }
        r = upsert_process(s, p, &id);
        if (r < 0)
                return r;
        r = known_add(s, p, id, &k);
        if (r < 0)
                return r;
        *ret_id = id;
        *ret_known = k;
        return 0;
}

typedef struct KnownSweep {
        uint64_t before_usec;
        KnownProcess **idle;
        size_t n, capacity;
        bool failed;
} KnownSweep;

static void known_sweep_visit(const void *node, VISIT which, void *userdata) {
        KnownProcess *k = *(KnownProcess *const *) node;
        KnownSweep *w = userdata;

        if ((which != postorder && which != leaf) || k->flushed_usec >= w->before_usec)
                return;
        if (array_append((void **) &w->idle, &w->n, &w->capacity, sizeof(k), &k) < 0)
                w->failed = true;
}

/* Forgets the processes that had no sample for KNOWN_IDLE_USEC, writing their last seen first.
 * Part of the caller's transaction. */
static int known_sweep(Store *s, uint64_t now_usec) {
        KnownSweep w = { .before_usec = now_usec > KNOWN_IDLE_USEC ? now_usec - KNOWN_IDLE_USEC : 0 };
        int r = 0;

        twalk_r(s->known, known_sweep_visit, &w);
        if (w.failed)
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < w.n; i++) {
                r = known_write_last_seen(s, w.idle[i]);
                if (r >= 0)
                        known_forget(s, w.idle[i]);
        }
        free(w.idle);
        return r;
}

typedef struct KnownWrite {
        Store *s;
        int r;
} KnownWrite;

static void known_write_visit(const void *node, VISIT which, void *userdata) {
        KnownWrite *w = userdata;

        if ((which == postorder || which == leaf) && w->r >= 0)
                w->r = known_write_last_seen(w->s, *(KnownProcess *const *) node);
}

/* At close, the exact last seen of the processes still known: their rows have only the raw
 * bucket of it. Best effort: a store that cannot write has lost more than that already. */
static void known_write_all(Store *s) {
        KnownWrite w = { .s = s };

        if (!s->known || !s->update_process || sql_exec(s->db, "BEGIN IMMEDIATE") < 0)
                return;
        twalk_r(s->known, known_write_visit, &w);
        if (w.r < 0 || sql_exec(s->db, "COMMIT") < 0)
                store_rollback(s);
}

void store_known_reset(Store *s) {
        known_write_all(s);
        known_clear(s);
}

int store_flush(Store *s, uint64_t now_usec, const ProcessSample *samples, size_t n) {
        uint64_t bucket = tier_floor(TIER_RAW, now_usec);
        bool folded = false;
        int r;

        if (n == 0)
                return 0;
        r = sql_exec(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        if (bucket != s->swept_bucket) {
                r = known_sweep(s, now_usec);
                if (r < 0)
                        goto rollback;
                s->swept_bucket = bucket;
        }
        if (s->pending && s->pending_bucket != bucket) {
                r = store_pending_fold(s);
                if (r < 0)
                        goto rollback;
                folded = true;
        }
        s->packed_size = 0;
        for (size_t i = 0; i < n; i++) {
                /* Seen at least in the bucket it has counts in: Top finds the processes of a
                 * stretch of time by last seen (store.h). The collector passes the tick's time. */
                ProcessInfo seen = *samples[i].process;
                const ProcessInfo *p = &seen;
                KnownProcess *k;
                int64_t id = 0;

                seen.last_seen_usec = MAX(seen.last_seen_usec, bucket);
                r = process_row(s, p, &id, &k);
                if (r < 0)
                        goto rollback;
                k->flushed_usec = now_usec;

                uint64_t traps = samples[i].traps ? traps_total(samples[i].traps) : 0;
                uint64_t time_ns = fault_time_total_ns(&samples[i].fault_time);

                if (!faults_is_zero(&samples[i].delta) || traps > 0 || time_ns > 0) {
                        r = store_pending_pack(s, id, &samples[i].delta, traps, time_ns);
                        if (r < 0)
                                goto rollback;
                }
                if (!fault_time_is_zero(&samples[i].fault_time)) {
                        r = add_fault_time(s, id, bucket, &samples[i].fault_time);
                        if (r < 0)
                                goto rollback;
                }
                if (traps > 0) {
                        r = add_traps(s, id, bucket, samples[i].traps);
                        if (r < 0)
                                goto rollback;
                }
                /* Also without a delta or traps: the store does not rely on a site coming with
                 * them. */
                if (samples[i].n_sites > 0) {
                        r = store_sites_add(s, id, bucket, samples[i].sites, samples[i].n_sites);
                        if (r < 0)
                                goto rollback;
                }
                /* Its row is final: exited, last seen exact. */
                if (p->exited)
                        known_forget(s, k);
        }
        if (s->packed_size > 0) {
                r = store_pending_add(s, now_usec);
                if (r < 0)
                        goto rollback;
        }
        r = sql_exec(s->db, "COMMIT");
        if (r < 0)
                goto rollback;
        if (folded)
                s->pending = false;
        if (s->packed_size > 0) {
                s->pending = true;
                s->pending_bucket = bucket;
        }
        return 0;
rollback:
        store_rollback(s);
        /* What the caches say may have been rolled back with it, and the pending rows are
         * not known any more. */
        known_clear(s);
        store_site_ids_clear(s);
        s->pending = true;
        s->pending_bucket = 0;
        return r;
}

