/* SPDX-License-Identifier: MIT */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "macro.h"
#include "tier-util.h"

struct Store {
        sqlite3 *db;
        char *path;
        char *boot_id;
        /* Column lists built from fault_fields, so the SQL names every Faults member in order. */
        char *columns;      /* "f_user, f_kernel, ..." */
        char *sums;         /* "SUM(f_user), SUM(f_kernel), ..." */
        char *sums_as;      /* "SUM(f_user) AS f_user, ..." */
        sqlite3_stmt *upsert_process;
        sqlite3_stmt *update_process; /* by id, for a process in `known` */
        sqlite3_stmt *add_pending, *fold_sample;
        sqlite3_stmt *find_process;
        sqlite3_stmt *find_newest_process;
        sqlite3_stmt *add_trap, *add_signal;
        void *known;                  /* tsearch() tree of KnownProcess by (pid, start_time) */
        uint64_t swept_bucket;        /* raw bucket in which `known` was last swept */
        uint8_t *packed;              /* a tick's deltas for sample_pending */
        size_t packed_size, packed_capacity;
        bool pending;                 /* sample_pending may have rows */
        uint64_t pending_bucket;      /* the raw bucket they all are in; 0: not known */
};

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

/* Tables of each tier (index: TIER_RAW, TIER_MINUTE, TIER_HOUR). */
static const char *const sample_tables[_TIER_MAX] = { "sample_raw", "sample_minute", "sample_hour" };
static const char *const trap_tables[_TIER_MAX] = { "trap_raw", "trap_minute", "trap_hour" };
static const char *const signal_tables[_TIER_MAX] = { "signal_raw", "signal_minute", "signal_hour" };
static const uint64_t tier_width_usec[_TIER_MAX] = { STORE_RAW_BUCKET_USEC, 60 * UINT64_C(1000000),
                                                      3600 * UINT64_C(1000000) };

static inline void sqlite3_finalizep(sqlite3_stmt **s) {
        sqlite3_finalize(*s);
}
#define _cleanup_finalize_ _cleanup_(sqlite3_finalizep)

/* The one place SQLite result codes become errno values. */
static int sqlite_to_errno(int rc) {
        switch (rc & 0xff) {
        case SQLITE_OK:
        case SQLITE_ROW:
        case SQLITE_DONE:
                return 0;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_READONLY:
                return -EROFS;
        case SQLITE_PERM:
        case SQLITE_AUTH:
                return -EACCES;
        case SQLITE_CANTOPEN:
                return -ENOENT;
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
                return -EUCLEAN;
        case SQLITE_CONSTRAINT:
                return -EEXIST;
        case SQLITE_TOOBIG:
                return -E2BIG;
        case SQLITE_INTERRUPT:
                return -ECANCELED;
        default:
                return -EIO;
        }
}

static int exec_sql(sqlite3 *db, const char *sql) {
        return sqlite_to_errno(sqlite3_exec(db, sql, NULL, NULL, NULL));
}

/* After a failure. SQLite may have rolled back already (e.g. on SQLITE_FULL): then a ROLLBACK
 * would fail and replace the error message that says why with "no transaction is active". */
static void rollback(Store *s) {
        if (!sqlite3_get_autocommit(s->db))
                (void) exec_sql(s->db, "ROLLBACK");
}

/* Runs an INSERT with its parameters bound already. */
static int step_done(sqlite3_stmt *st) {
        int rc = sqlite3_step(st);

        sqlite3_reset(st);
        return rc == SQLITE_DONE ? 0 : (sqlite_to_errno(rc) ?: -EIO);
}

static int get_user_version(sqlite3 *db, int *ret) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_to_errno(rc);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sqlite_to_errno(rc) ?: -EIO;
        *ret = sqlite3_column_int(st, 0);
        return 0;
}

int store_migrate(sqlite3 *db, const EmbeddedFile *migrations, size_t n) {
        int version = 0, r, applied = 0;

        r = get_user_version(db, &version);
        if (r < 0)
                return r;
        if (version < 0 || (size_t) version > n)
                return -EPROTO;

        for (size_t i = (size_t) version; i < n; i++) {
                char pragma[64];

                /* Schema change and version bump commit together or not at all. */
                r = exec_sql(db, "BEGIN IMMEDIATE");
                if (r < 0)
                        return r;
                snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %zu", i + 1);
                r = exec_sql(db, migrations[i].text);
                if (r >= 0)
                        r = exec_sql(db, pragma);
                if (r >= 0)
                        r = exec_sql(db, "COMMIT");
                if (r < 0) {
                        if (!sqlite3_get_autocommit(db)) /* SQLite may have rolled back itself */
                                (void) exec_sql(db, "ROLLBACK");
                        return r;
                }
                applied++;
        }
        return applied;
}

/* fmt once per Faults member, comma-separated; it gets the member's name (%1$s) and, for SQL
 * parameters, first + its index (%2$zu). */
static char *join_numbered_columns(const char *fmt, size_t first) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < n_fault_fields; i++) {
                if (i > 0)
                        fputs(", ", f);
                fprintf(f, fmt, fault_fields[i].name, first + i);
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

static char *join_fault_columns(const char *fmt) {
        return join_numbered_columns(fmt, 0);
}

static int prepare(Store *s, sqlite3_stmt **ret, const char *fmt, ...) _printf_(3, 4);
static int prepare(Store *s, sqlite3_stmt **ret, const char *fmt, ...) {
        _cleanup_free_ char *sql = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&sql, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return sqlite_to_errno(sqlite3_prepare_v2(s->db, sql, -1, ret, NULL));
}

#define PROCESS_COLUMNS "pid, start_time, comm, cmdline, uid, unit, first_seen_usec, last_seen_usec, exited"

static int prepare_statements(Store *s) {
        _cleanup_free_ char *increments = NULL, *numbered = NULL;
        int r;

        increments = join_fault_columns("f_%1$s = f_%1$s + excluded.f_%1$s");
        numbered = join_numbered_columns("?%2$zu", 3);
        s->columns = join_fault_columns("f_%s");
        s->sums = join_fault_columns("SUM(f_%s)");
        s->sums_as = join_fault_columns("SUM(f_%1$s) AS f_%1$s");
        if (!increments || !numbered || !s->columns || !s->sums || !s->sums_as)
                return -ENOMEM;

        r = prepare(s, &s->upsert_process,
                    "INSERT INTO process (boot_id, " PROCESS_COLUMNS ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (boot_id, pid, start_time) DO UPDATE SET "
                    "comm = excluded.comm, uid = excluded.uid, cmdline = coalesce(excluded.cmdline, cmdline), "
                    "unit = coalesce(excluded.unit, unit), "
                    "last_seen_usec = max(last_seen_usec, excluded.last_seen_usec), "
                    "exited = max(exited, excluded.exited) RETURNING id");
        if (r < 0)
                return r;
        r = prepare(s, &s->update_process,
                    "UPDATE process SET comm = ?2, uid = ?3, cmdline = coalesce(?4, cmdline), unit = coalesce(?5, unit), "
                    "last_seen_usec = max(last_seen_usec, ?6), exited = max(exited, ?7) WHERE id = ?1");
        if (r < 0)
                return r;
        r = prepare(s, &s->add_pending, "INSERT INTO sample_pending (time_usec, data) VALUES (?, ?)");
        if (r < 0)
                return r;
        r = prepare(s, &s->fold_sample,
                    "INSERT INTO sample_raw (process_id, time_usec, %s, traps) VALUES (?1, ?2, %s, ?%zu) "
                    "ON CONFLICT (process_id, time_usec) DO UPDATE SET %s, traps = traps + excluded.traps",
                    s->columns, numbered, n_fault_fields + 3, increments);
        if (r < 0)
                return r;
        r = prepare(s, &s->find_process, "SELECT id, " PROCESS_COLUMNS " FROM process WHERE pid = ? AND start_time = ? "
                                         "ORDER BY first_seen_usec DESC LIMIT 1");
        if (r < 0)
                return r;
        r = prepare(s, &s->find_newest_process, "SELECT id, " PROCESS_COLUMNS " FROM process WHERE pid = ? "
                                                "ORDER BY first_seen_usec DESC, id DESC LIMIT 1");
        if (r < 0)
                return r;
        r = prepare(s, &s->add_trap,
                    "INSERT INTO trap_raw (process_id, time_usec, vector, count) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (process_id, time_usec, vector) DO UPDATE SET count = count + excluded.count");
        if (r < 0)
                return r;
        return prepare(s, &s->add_signal,
                       "INSERT INTO signal_raw (process_id, time_usec, signo, si_code, count) VALUES (?, ?, ?, ?, ?) "
                       "ON CONFLICT (process_id, time_usec, signo, si_code) DO UPDATE SET count = count + excluded.count");
}

/* Defined with the rest of the known-process cache and the pending ticks, by store_flush(). */
static void known_write_all(Store *s);
static void known_clear(Store *s);
static int pending_settle(Store *s);

/* Opens the connection; never through a symbolic link (-ELOOP): one planted in the state
 * directory would have us turn its target into a database. */
static int store_new(const char *path, const char *boot_id, int flags, Store **ret) {
        Store *s;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
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
        r = get_user_version(s->db, &version);
        if (r >= 0 && (size_t) version != embedded_migrations_count)
                r = -EPROTO;
        if (r >= 0)
                r = exec_sql(s->db, "PRAGMA query_only = 1");
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
        return pending_settle(s);
}

int store_open(const char *path, const char *boot_id, Store **ret) {
        Store *s;
        int r;

        r = store_new(path, boot_id, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &s);
        if (r < 0)
                return r;
        /* A new database gives freed pages back (the size cap). Only possible before any table
         * exists and before WAL mode writes the header; a no-op on an existing database. */
        r = exec_sql(s->db, "PRAGMA auto_vacuum = INCREMENTAL");
        if (r < 0)
                goto fail;
        /* WAL: readers never block the writer; synchronous=NORMAL keeps every committed flush
         * across a crash of the daemon (not necessarily of the machine), at a fraction of FULL's
         * fsyncs. */
        r = exec_sql(s->db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;");
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
                r = step_done(st);
                sqlite3_finalize(st);
                if (r < 0)
                        goto fail;
        }
        r = prepare_statements(s);
        if (r < 0)
                goto fail;
        /* Ticks the last daemon committed but had not folded (it was killed, say). */
        s->pending = true;
        r = pending_settle(s);
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
        if (s->fold_sample)
                (void) pending_settle(s);
        known_write_all(s);
        known_clear(s);
        sqlite3_finalize(s->upsert_process);
        sqlite3_finalize(s->update_process);
        sqlite3_finalize(s->add_pending);
        sqlite3_finalize(s->fold_sample);
        free(s->packed);
        sqlite3_finalize(s->find_process);
        sqlite3_finalize(s->find_newest_process);
        sqlite3_finalize(s->add_trap);
        sqlite3_finalize(s->add_signal);
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

static int add_traps(Store *s, int64_t process_id, uint64_t bucket_usec, const Traps *t) {
        int r;

        for (unsigned v = 0; v < ELEMENTSOF(t->vector); v++) {
                if (!t->vector[v])
                        continue;
                sqlite3_reset(s->add_trap);
                sqlite3_bind_int64(s->add_trap, 1, process_id);
                sqlite3_bind_int64(s->add_trap, 2, (int64_t) bucket_usec);
                sqlite3_bind_int(s->add_trap, 3, (int) v);
                sqlite3_bind_int64(s->add_trap, 4, (int64_t) t->vector[v]);
                if ((r = step_done(s->add_trap)) < 0)
                        return r;
        }
        for (unsigned sig = 0; sig < FAULT_SIGNALS; sig++)
                for (unsigned slot = 0; slot < SI_CODE_SLOTS; slot++) {
                        if (!t->signal[sig][slot])
                                continue;
                        sqlite3_reset(s->add_signal);
                        sqlite3_bind_int64(s->add_signal, 1, process_id);
                        sqlite3_bind_int64(s->add_signal, 2, (int64_t) bucket_usec);
                        sqlite3_bind_int(s->add_signal, 3, fault_signal_number(sig));
                        sqlite3_bind_int(s->add_signal, 4, si_code_of_slot(slot));
                        sqlite3_bind_int64(s->add_signal, 5, (int64_t) t->signal[sig][slot]);
                        if ((r = step_done(s->add_signal)) < 0)
                                return r;
                }
        return 0;
}

static int known_compare(const void *a, const void *b) {
        const KnownProcess *x = a, *y = b;

        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return x->start_time < y->start_time ? -1 : x->start_time > y->start_time;
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

/* Writes identity, last seen and exited into the row with this id; -ENOENT when it is gone. */
static int update_process(Store *s, int64_t id, const ProcessInfo *p) {
        sqlite3_stmt *st = s->update_process;
        int r;

        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, p->comm, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, p->uid);
        bind_text_or_null(st, 4, p->cmdline);
        bind_text_or_null(st, 5, p->unit);
        sqlite3_bind_int64(st, 6, (int64_t) p->last_seen_usec);
        sqlite3_bind_int(st, 7, p->exited);
        r = step_done(st);
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
        r = update_process(s, k->id, &p);
        if (r == -ENOENT)
                return 0; /* nothing left to update */
        if (r >= 0)
                k->last_seen_written = k->last_seen;
        return r;
}

/* The process's row id, the row created or updated as needed; *ret_known: its cache entry. */
static int process_row(Store *s, const ProcessInfo *p, int64_t *ret_id, KnownProcess **ret_known) {
        KnownProcess *k = known_find(s, p);
        int64_t id = 0;
        int r;

        if (k) {
                if (!known_differs(k, p)) {
                        k->last_seen = MAX(k->last_seen, p->last_seen_usec);
                        *ret_id = k->id;
                        *ret_known = k;
                        return 0;
                }
                r = update_process(s, k->id, p);
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
        if (w->n == w->capacity) {
                size_t c = w->capacity ? w->capacity * 2 : 64;
                KnownProcess **a = reallocarray(w->idle, c, sizeof(*a));
                if (!a) {
                        w->failed = true;
                        return;
                }
                w->idle = a;
                w->capacity = c;
        }
        w->idle[w->n++] = k;
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

        if (!s->known || !s->update_process || exec_sql(s->db, "BEGIN IMMEDIATE") < 0)
                return;
        twalk_r(s->known, known_write_visit, &w);
        if (w.r < 0 || exec_sql(s->db, "COMMIT") < 0)
                rollback(s);
}

/* ---- pending ticks ----
 * A tick's deltas go into one sample_pending row, not one sample_raw row per process: packed,
 * for each process with a non-zero delta its row id, a mask of its non-zero members (bit i:
 * fault_fields[i], bit n_fault_fields: traps), then those members, every number an unsigned
 * LEB128. Folding adds all pending rows to their raw buckets and deletes them, in one
 * transaction: when a tick falls into a later bucket, and before anything reads the samples. */

static void *grow(void *array, size_t n, size_t *capacity, size_t elem);

static int pack_u64(Store *s, uint64_t v) {
        if (s->packed_capacity - s->packed_size < 10) {
                size_t c = MAX(s->packed_capacity * 2, (size_t) 4096);
                uint8_t *p = realloc(s->packed, c);

                if (!p)
                        return -ENOMEM;
                s->packed = p;
                s->packed_capacity = c;
        }
        do {
                uint8_t b = v & 0x7f;

                v >>= 7;
                s->packed[s->packed_size++] = b | (v ? 0x80 : 0);
        } while (v);
        return 0;
}

static int pack_sample(Store *s, int64_t process_id, const Faults *delta, uint64_t traps) {
        uint64_t mask = traps ? UINT64_C(1) << n_fault_fields : 0;
        int r;

        for (size_t i = 0; i < n_fault_fields; i++)
                if (faults_get(delta, &fault_fields[i]))
                        mask |= UINT64_C(1) << i;
        r = pack_u64(s, (uint64_t) process_id);
        if (r >= 0)
                r = pack_u64(s, mask);
        for (size_t i = 0; r >= 0 && i < n_fault_fields; i++)
                if (mask & (UINT64_C(1) << i))
                        r = pack_u64(s, faults_get(delta, &fault_fields[i]));
        if (r >= 0 && traps)
                r = pack_u64(s, traps);
        return r;
}

static int unpack_u64(const uint8_t **p, const uint8_t *end, uint64_t *ret) {
        uint64_t v = 0;

        for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
                uint8_t b = *(*p)++;

                v |= (uint64_t) (b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *ret = v;
                        return 0;
                }
        }
        return -EUCLEAN;
}

typedef struct PendingSample {
        uint64_t bucket_usec;
        int64_t process_id;
        Faults delta;
        uint64_t traps;
} PendingSample;

/* Appends the samples packed in one pending row to *array. */
static int unpack_samples(const uint8_t *p, size_t size, uint64_t bucket_usec, PendingSample **array, size_t *n,
                          size_t *capacity) {
        const uint8_t *end = p + size;

        while (p < end) {
                PendingSample x = { .bucket_usec = bucket_usec };
                uint64_t id, mask;
                PendingSample *a;
                int r;

                if ((r = unpack_u64(&p, end, &id)) < 0 || (r = unpack_u64(&p, end, &mask)) < 0)
                        return r;
                if (id > INT64_MAX || mask >> (n_fault_fields + 1))
                        return -EUCLEAN;
                x.process_id = (int64_t) id;
                for (size_t i = 0; i < n_fault_fields; i++)
                        if ((mask & (UINT64_C(1) << i)) &&
                            (r = unpack_u64(&p, end, faults_field(&x.delta, &fault_fields[i]))) < 0)
                                return r;
                if ((mask & (UINT64_C(1) << n_fault_fields)) && (r = unpack_u64(&p, end, &x.traps)) < 0)
                        return r;
                a = grow(*array, *n, capacity, sizeof(*a));
                if (!a)
                        return -ENOMEM;
                *array = a;
                a[(*n)++] = x;
        }
        return 0;
}

static int pending_compare(const void *a, const void *b) {
        const PendingSample *x = a, *y = b;

        if (x->bucket_usec != y->bucket_usec)
                return x->bucket_usec < y->bucket_usec ? -1 : 1;
        return x->process_id < y->process_id ? -1 : x->process_id > y->process_id;
}

static int fold_sample(Store *s, const PendingSample *x) {
        sqlite3_stmt *st = s->fold_sample;

        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, x->process_id);
        sqlite3_bind_int64(st, 2, (int64_t) x->bucket_usec);
        for (size_t i = 0; i < n_fault_fields; i++)
                sqlite3_bind_int64(st, 3 + (int) i, (int64_t) faults_get(&x->delta, &fault_fields[i]));
        sqlite3_bind_int64(st, 3 + (int) n_fault_fields, (int64_t) x->traps);
        return step_done(st);
}

/* Adds every pending tick to its raw bucket, one upsert per process and bucket, and deletes
 * them; in the caller's transaction. */
static int fold_pending(Store *s) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        _cleanup_free_ PendingSample *a = NULL;
        size_t n = 0, capacity = 0;
        int rc, r;

        rc = sqlite3_prepare_v2(s->db, "SELECT time_usec, data FROM sample_pending", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_to_errno(rc);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                uint64_t t = (uint64_t) sqlite3_column_int64(st, 0);
                const uint8_t *data = sqlite3_column_blob(st, 1);
                size_t before = n;

                r = unpack_samples(data, (size_t) sqlite3_column_bytes(st, 1), t - t % STORE_RAW_BUCKET_USEC, &a, &n,
                                   &capacity);
                if (r == -EUCLEAN)
                        n = before; /* a row that does not decode is dropped, alone */
                else if (r < 0)
                        return r;
        }
        if (rc != SQLITE_DONE)
                return sqlite_to_errno(rc) ?: -EIO;

        /* In key order: a process's ticks of one bucket become one upsert, and the upserts
         * walk the raw tier's b-tree in order. */
        if (n > 0)
                qsort(a, n, sizeof(*a), pending_compare);
        for (size_t i = 0, j; i < n; i = j) {
                PendingSample sum = a[i];

                for (j = i + 1; j < n && pending_compare(&a[j], &sum) == 0; j++) {
                        faults_add(&sum.delta, &a[j].delta);
                        sum.traps += a[j].traps;
                }
                r = fold_sample(s, &sum);
                /* A process row that is gone (nothing of ours deletes one with ticks pending)
                 * takes its counts with it, rather than failing every fold after. */
                if (r < 0 && sqlite3_extended_errcode(s->db) != SQLITE_CONSTRAINT_FOREIGNKEY)
                        return r;
        }
        return exec_sql(s->db, "DELETE FROM sample_pending");
}

/* Before anything reads the samples: the pending ticks are folded in, in a transaction. */
static int pending_settle(Store *s) {
        int r;

        if (!s->pending)
                return 0;
        r = exec_sql(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        r = fold_pending(s);
        if (r >= 0)
                r = exec_sql(s->db, "COMMIT");
        if (r < 0) {
                rollback(s);
                return r;
        }
        s->pending = false;
        return 0;
}

static int add_pending(Store *s, uint64_t now_usec) {
        sqlite3_stmt *st = s->add_pending;

        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, (int64_t) now_usec);
        sqlite3_bind_blob(st, 2, s->packed, (int) s->packed_size, SQLITE_STATIC);
        return step_done(st);
}

int store_flush(Store *s, uint64_t now_usec, const ProcessSample *samples, size_t n) {
        uint64_t bucket = now_usec - now_usec % STORE_RAW_BUCKET_USEC;
        bool folded = false;
        int r;

        if (n == 0)
                return 0;
        r = exec_sql(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        if (bucket != s->swept_bucket) {
                r = known_sweep(s, now_usec);
                if (r < 0)
                        goto rollback;
                s->swept_bucket = bucket;
        }
        if (s->pending && s->pending_bucket != bucket) {
                r = fold_pending(s);
                if (r < 0)
                        goto rollback;
                folded = true;
        }
        s->packed_size = 0;
        for (size_t i = 0; i < n; i++) {
                const ProcessInfo *p = samples[i].process;
                KnownProcess *k;
                int64_t id = 0;

                r = process_row(s, p, &id, &k);
                if (r < 0)
                        goto rollback;
                k->flushed_usec = now_usec;

                uint64_t traps = samples[i].traps ? traps_total(samples[i].traps) : 0;

                if (!faults_is_zero(&samples[i].delta) || traps > 0) {
                        r = pack_sample(s, id, &samples[i].delta, traps);
                        if (r < 0)
                                goto rollback;
                }
                if (traps > 0) {
                        r = add_traps(s, id, bucket, samples[i].traps);
                        if (r < 0)
                                goto rollback;
                }
                /* Its row is final: exited, last seen exact. */
                if (p->exited)
                        known_forget(s, k);
        }
        if (s->packed_size > 0) {
                r = add_pending(s, now_usec);
                if (r < 0)
                        goto rollback;
        }
        r = exec_sql(s->db, "COMMIT");
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
        rollback(s);
        /* What the cache says may have been rolled back with it, and the pending rows are
         * not known any more. */
        known_clear(s);
        s->pending = true;
        s->pending_bucket = 0;
        return r;
}

static char *column_strdup(sqlite3_stmt *st, int i) {
        const unsigned char *t = sqlite3_column_text(st, i);
        return t ? strdup((const char *) t) : NULL;
}

/* Reads PROCESS_COLUMNS starting at column `first`. */
static int read_process(sqlite3_stmt *st, int first, ProcessInfo *ret) {
        ProcessInfo p = {};
        const unsigned char *comm;

        p.pid = (uint32_t) sqlite3_column_int64(st, first);
        p.start_time = (uint64_t) sqlite3_column_int64(st, first + 1);
        comm = sqlite3_column_text(st, first + 2);
        snprintf(p.comm, sizeof(p.comm), "%s", comm ? (const char *) comm : "");
        p.uid = (uint32_t) sqlite3_column_int64(st, first + 4);
        p.first_seen_usec = (uint64_t) sqlite3_column_int64(st, first + 6);
        p.last_seen_usec = (uint64_t) sqlite3_column_int64(st, first + 7);
        p.exited = sqlite3_column_int(st, first + 8) != 0;
        if ((sqlite3_column_type(st, first + 3) != SQLITE_NULL && !(p.cmdline = column_strdup(st, first + 3))) ||
            (sqlite3_column_type(st, first + 5) != SQLITE_NULL && !(p.unit = column_strdup(st, first + 5)))) {
                process_info_done(&p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

static void read_faults(sqlite3_stmt *st, int first, Faults *ret) {
        for (size_t i = 0; i < n_fault_fields; i++)
                *faults_field(ret, &fault_fields[i]) = (uint64_t) sqlite3_column_int64(st, first + (int) i);
}

/* Grows *array by one element of size elem, doubling the capacity. */
static void *grow(void *array, size_t n, size_t *capacity, size_t elem) {
        if (n < *capacity)
                return array;
        size_t c = *capacity ? *capacity * 2 : 16;
        void *p = reallocarray(array, c, elem);
        if (p)
                *capacity = c;
        return p;
}

void store_rows_free(StoreRow *rows, size_t n) {
        for (size_t i = 0; i < n; i++)
                process_info_done(&rows[i].process);
        free(rows);
}

/* The tiers' marks, for tier_plan(). */
static int load_tiers(Store *s, TierState ret[_TIER_MAX]) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int rc, found = 0;

        rc = sqlite3_prepare_v2(s->db, "SELECT name, rolled_until_usec, kept_from_usec FROM tier", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_to_errno(rc);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *name = (const char *) sqlite3_column_text(st, 0);

                for (int t = 0; t < _TIER_MAX; t++)
                        if (name && strcmp(name, tier_name(t)) == 0) {
                                ret[t] = (TierState) {
                                        .width_usec = tier_width_usec[t],
                                        .rolled_until = t == TIER_RAW ? UINT64_MAX
                                                                      : (uint64_t) sqlite3_column_int64(st, 1),
                                        .kept_from = (uint64_t) sqlite3_column_int64(st, 2),
                                };
                                found++;
                        }
        }
        if (rc != SQLITE_DONE)
                return sqlite_to_errno(rc) ?: -EIO;
        return found == _TIER_MAX ? 0 : -EUCLEAN;
}

static int64_t clamp_i64(uint64_t v) {
        return v > INT64_MAX ? INT64_MAX : (int64_t) v;
}

/* "SELECT columns FROM <tier table> WHERE where AND <segment> UNION ALL ..." over the segments:
 * each instant of the planned range read from exactly one tier. */
static char *segments_union(const TierSegment *seg, size_t n, const char *const tables[_TIER_MAX],
                            const char *columns, const char *where) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%sSELECT %s FROM %s WHERE %s AND time_usec >= %" PRId64 " AND time_usec < %" PRId64,
                        i ? " UNION ALL " : "", columns, tables[seg[i].tier], where, clamp_i64(seg[i].from),
                        clamp_i64(seg[i].to));
        if (n == 0)
                /* Nothing to read: a query that returns no rows, with the right columns. */
                fprintf(f, "SELECT %s FROM %s WHERE 0", columns, tables[TIER_RAW]);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* Prepares "fmt" with %s replaced by the union of the segments over tables. */
static int prepare_over(Store *s, sqlite3_stmt **ret, const char *fmt, const TierSegment *seg, size_t n,
                        const char *const tables[_TIER_MAX], const char *columns, const char *where) {
        _cleanup_free_ char *u = segments_union(seg, n, tables, columns, where);

        if (!u)
                return -ENOMEM;
        return prepare(s, ret, fmt, u);
}

#define TRAP_COLUMNS "process_id, time_usec, vector, count"
#define SIGNAL_COLUMNS "process_id, time_usec, signo, si_code, count"

/* Adds trap rows (process_id or interval, vector, count) and signal rows (key, signo, si_code,
 * count) to the Traps that find() returns for the first column. */
static int read_traps(sqlite3_stmt *traps_st, sqlite3_stmt *signals_st, Traps *(*find)(int64_t key, void *userdata),
                      void *userdata) {
        int rc;

        while ((rc = sqlite3_step(traps_st)) == SQLITE_ROW) {
                Traps *t = find(sqlite3_column_int64(traps_st, 0), userdata);
                int v = sqlite3_column_int(traps_st, 1);

                if (t && v >= 0 && (size_t) v < ELEMENTSOF(t->vector))
                        t->vector[v] += (uint64_t) sqlite3_column_int64(traps_st, 2);
        }
        sqlite3_reset(traps_st);
        if (rc != SQLITE_DONE)
                return sqlite_to_errno(rc) ?: -EIO;

        while ((rc = sqlite3_step(signals_st)) == SQLITE_ROW) {
                Traps *t = find(sqlite3_column_int64(signals_st, 0), userdata);
                int sig = fault_signal_index(sqlite3_column_int(signals_st, 1));

                if (t && sig >= 0)
                        t->signal[sig][si_code_slot(sqlite3_column_int(signals_st, 2))] +=
                                (uint64_t) sqlite3_column_int64(signals_st, 3);
        }
        sqlite3_reset(signals_st);
        return rc == SQLITE_DONE ? 0 : (sqlite_to_errno(rc) ?: -EIO);
}

typedef struct RowsById {
        StoreRow *rows;
        size_t n;
} RowsById;

static Traps *row_traps_by_id(int64_t id, void *userdata) {
        RowsById *r = userdata;

        for (size_t i = 0; i < r->n; i++)
                if (r->rows[i].id == id)
                        return &r->rows[i].traps;
        return NULL;
}

static int top_fill_traps(Store *s, const TierSegment *seg, size_t n_seg, StoreRow *rows, size_t n) {
        _cleanup_finalize_ sqlite3_stmt *traps = NULL, *signals = NULL;
        _cleanup_free_ char *ids = NULL;
        RowsById by_id = { rows, n };
        const char *where = "process_id IN (SELECT value FROM json_each(?1))";
        size_t size = 0;
        FILE *f;
        int r;

        f = open_memstream(&ids, &size);
        if (!f)
                return -ENOMEM;
        fputc('[', f);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s%" PRId64, i ? "," : "", rows[i].id);
        fputc(']', f);
        if (fclose(f) != 0)
                return -ENOMEM;

        r = prepare_over(s, &traps, "SELECT process_id, vector, SUM(count) FROM (%s) GROUP BY process_id, vector",
                         seg, n_seg, trap_tables, TRAP_COLUMNS, where);
        if (r >= 0)
                r = prepare_over(s, &signals,
                                 "SELECT process_id, signo, si_code, SUM(count) FROM (%s) GROUP BY process_id, signo, si_code",
                                 seg, n_seg, signal_tables, SIGNAL_COLUMNS, where);
        if (r < 0)
                return r;
        sqlite3_bind_text(traps, 1, ids, -1, SQLITE_STATIC);
        sqlite3_bind_text(signals, 1, ids, -1, SQLITE_STATIC);
        return read_traps(traps, signals, row_traps_by_id, &by_id);
}

int store_top(Store *s, uint64_t since_usec, const char *sort, size_t limit, int64_t uid, StoreRow **ret,
              size_t *ret_n) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *fmt = NULL, *columns = NULL;
        uint64_t since_bucket = since_usec - since_usec % STORE_RAW_BUCKET_USEC;
        TierSegment seg[TIER_MAX_SEGMENTS];
        TierState tiers[_TIER_MAX];
        StoreRow *rows = NULL;
        size_t n = 0, capacity = 0, n_seg;
        char column[32];
        int rc, r;

        /* The sort column comes from fault_fields or is "traps", never the caller's text. */
        if (strcmp(sort, "traps") == 0)
                snprintf(column, sizeof(column), "traps");
        else if (fault_field_by_name(sort))
                snprintf(column, sizeof(column), "f_%s", fault_field_by_name(sort)->name);
        else
                return -EINVAL;

        /* The pending ticks too. Should folding fail (a full disk, say), the answer lacks at
         * most the newest bucket's counts, which are not being kept either then. */
        (void) pending_settle(s);

        /* Whole hours and minutes of the window from the coarse tiers, the edges from finer
         * ones: a day is a few dozen rows per process, not thousands. */
        r = load_tiers(s, tiers);
        if (r < 0)
                return r;
        n_seg = tier_plan(tiers, (1U << _TIER_MAX) - 1, since_bucket, UINT64_MAX, seg);

        if (asprintf(&columns, "process_id, time_usec, %s, traps", s->columns) < 0 ||
            asprintf(&fmt,
                     "SELECT process.id, " PROCESS_COLUMNS ", %s FROM "
                     "(SELECT process_id, %s, SUM(traps) AS traps FROM (%%s) GROUP BY process_id "
                     " ORDER BY SUM(%s) DESC, process_id DESC LIMIT ?2) AS t "
                     "JOIN process ON process.id = t.process_id ORDER BY t.%s DESC, process.id DESC",
                     s->columns, s->sums_as, column, column) < 0)
                return -ENOMEM;
        r = prepare_over(s, &st, fmt, seg, n_seg, sample_tables, columns,
                         "(?3 < 0 OR process_id IN (SELECT id FROM process WHERE uid = ?3))");
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 2, (int64_t) limit);
        sqlite3_bind_int64(st, 3, uid);

        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                StoreRow *p = grow(rows, n, &capacity, sizeof(*rows));
                if (!p) {
                        r = -ENOMEM;
                        goto fail;
                }
                rows = p;
                memset(&rows[n], 0, sizeof(rows[n]));
                rows[n].id = sqlite3_column_int64(st, 0);
                r = read_process(st, 1, &rows[n].process);
                if (r < 0)
                        goto fail;
                read_faults(st, 10, &rows[n].faults);
                n++;
        }
        if (rc != SQLITE_DONE) {
                r = sqlite_to_errno(rc) ?: -EIO;
                goto fail;
        }
        if (n > 0 && (r = top_fill_traps(s, seg, n_seg, rows, n)) < 0)
                goto fail;
        *ret = rows;
        *ret_n = n;
        return 0;
fail:
        store_rows_free(rows, n);
        return r;
}

static Traps *single_traps(int64_t key _unused_, void *userdata) {
        return userdata;
}

int store_traps(Store *s, uint64_t since_usec, int64_t uid, Traps *ret, uint64_t *ret_processes) {
        _cleanup_finalize_ sqlite3_stmt *traps = NULL, *signals = NULL, *count = NULL;
        uint64_t since_bucket = since_usec - since_usec % STORE_RAW_BUCKET_USEC;
        const char *where = "(?1 < 0 OR process_id IN (SELECT id FROM process WHERE uid = ?1))";
        TierSegment seg[TIER_MAX_SEGMENTS];
        TierState tiers[_TIER_MAX];
        Traps t = {};
        size_t n_seg;
        int rc, r;

        r = load_tiers(s, tiers);
        if (r < 0)
                return r;
        n_seg = tier_plan(tiers, (1U << _TIER_MAX) - 1, since_bucket, UINT64_MAX, seg);

        r = prepare_over(s, &traps, "SELECT 0, vector, SUM(count) FROM (%s) GROUP BY vector", seg, n_seg, trap_tables,
                         TRAP_COLUMNS, where);
        if (r >= 0)
                r = prepare_over(s, &signals, "SELECT 0, signo, si_code, SUM(count) FROM (%s) GROUP BY signo, si_code",
                                 seg, n_seg, signal_tables, SIGNAL_COLUMNS, where);
        if (r >= 0)
                r = prepare_over(s, &count, "SELECT COUNT(DISTINCT process_id) FROM (%s)", seg, n_seg, trap_tables,
                                 TRAP_COLUMNS, where);
        if (r < 0)
                return r;
        sqlite3_bind_int64(traps, 1, uid);
        sqlite3_bind_int64(signals, 1, uid);
        sqlite3_bind_int64(count, 1, uid);

        r = read_traps(traps, signals, single_traps, &t);
        if (r < 0)
                return r;
        rc = sqlite3_step(count);
        if (rc != SQLITE_ROW)
                return sqlite_to_errno(rc) ?: -EIO;
        *ret_processes = (uint64_t) sqlite3_column_int64(count, 0);
        *ret = t;
        return 0;
}

int store_mark_gone(Store *s, bool (*alive)(uint32_t pid, uint64_t start_time, void *userdata), void *userdata,
                    size_t *ret_n) {
        _cleanup_finalize_ sqlite3_stmt *list = NULL, *mark = NULL;
        size_t n = 0;
        int rc, r;

        /* Rows marked exited here may be deleted by maintenance: no entry may point at them. */
        known_write_all(s);
        known_clear(s);
        r = prepare(s, &list, "SELECT id, pid, start_time FROM process WHERE boot_id = ?1 AND NOT exited");
        if (r >= 0)
                r = prepare(s, &mark, "UPDATE process SET exited = 1 WHERE id = ?1");
        if (r < 0)
                return r;
        sqlite3_bind_text(list, 1, s->boot_id, -1, SQLITE_STATIC);

        r = exec_sql(s->db, "BEGIN");
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(list)) == SQLITE_ROW) {
                if (alive((uint32_t) sqlite3_column_int64(list, 1), (uint64_t) sqlite3_column_int64(list, 2), userdata))
                        continue;
                sqlite3_bind_int64(mark, 1, sqlite3_column_int64(list, 0));
                r = step_done(mark);
                sqlite3_reset(mark);
                if (r < 0)
                        goto rollback;
                n++;
        }
        if (rc != SQLITE_DONE) {
                r = sqlite_to_errno(rc) ?: -EIO;
                goto rollback;
        }
        r = exec_sql(s->db, "COMMIT");
        if (r < 0)
                goto rollback;
        *ret_n = n;
        return 0;
rollback:
        rollback(s);
        return r;
}

void process_infos_free(ProcessInfo *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                process_info_done(&p[i]);
        free(p);
}

int store_list_processes(Store *s, const StoreProcessFilter *filter, ProcessInfo **ret, size_t *ret_n) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        ProcessInfo *list = NULL;
        size_t n = 0, capacity = 0;
        int rc, r;

        r = prepare(s, &st, "SELECT " PROCESS_COLUMNS " FROM process WHERE (?1 = 0 OR pid = ?1) AND (?2 OR NOT exited) "
                            "AND (?3 < 0 OR uid = ?3) AND (?5 IS NULL OR comm GLOB ?5) AND (?6 IS NULL OR unit = ?6) "
                            "ORDER BY first_seen_usec DESC, id DESC LIMIT ?4");
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, filter->pid);
        sqlite3_bind_int(st, 2, filter->include_exited);
        sqlite3_bind_int64(st, 3, filter->uid);
        sqlite3_bind_int64(st, 4, (int64_t) filter->limit);
        sqlite3_bind_text(st, 5, filter->comm_glob, -1, SQLITE_STATIC); /* NULL binds NULL */
        sqlite3_bind_text(st, 6, filter->unit, -1, SQLITE_STATIC);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                ProcessInfo *p = grow(list, n, &capacity, sizeof(*list));
                if (!p) {
                        process_infos_free(list, n);
                        return -ENOMEM;
                }
                list = p;
                r = read_process(st, 0, &list[n]);
                if (r < 0) {
                        process_infos_free(list, n);
                        return r;
                }
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

int store_find_process(Store *s, uint32_t pid, uint64_t start_time, int64_t *ret_id, ProcessInfo *ret) {
        sqlite3_stmt *st = start_time ? s->find_process : s->find_newest_process;
        int rc, r;

        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, pid);
        if (start_time)
                sqlite3_bind_int64(st, 2, (int64_t) start_time);
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

typedef struct RowsByTime {
        StoreHistoryRow *rows;
        size_t n;
} RowsByTime;

/* Intervals are sorted: binary search. Every interval with traps has a sample_raw row. */
static Traps *history_traps_by_time(int64_t t, void *userdata) {
        RowsByTime *r = userdata;
        size_t lo = 0, hi = r->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if ((int64_t) r->rows[mid].time_usec < t)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < r->n && (int64_t) r->rows[lo].time_usec == t ? &r->rows[lo].traps : NULL;
}

int store_history(Store *s, int64_t process_id, uint64_t since_usec, uint64_t until_usec, uint64_t resolution_usec,
                  StoreHistoryRow **ret, size_t *ret_n) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL, *traps = NULL, *signals = NULL;
        _cleanup_free_ char *fmt = NULL, *columns = NULL, *trap_fmt = NULL, *signal_fmt = NULL;
        TierSegment seg[TIER_MAX_SEGMENTS];
        TierState tiers[_TIER_MAX];
        StoreHistoryRow *rows = NULL;
        size_t n = 0, capacity = 0, n_seg;
        uint64_t r_usec = resolution_usec;
        int rc, r;

        if (r_usec == 0 || r_usec % STORE_RAW_BUCKET_USEC != 0 || r_usec > INT64_MAX)
                return -EINVAL;

        (void) pending_settle(s); /* as in store_top() */

        /* The coarsest tiers that still give this resolution: their intervals nest in it. */
        r = load_tiers(s, tiers);
        if (r < 0)
                return r;
        n_seg = tier_plan(tiers, tier_allowed_for_resolution(tiers, r_usec), since_usec, until_usec, seg);

        if (asprintf(&columns, "process_id, time_usec, %s", s->columns) < 0 ||
            asprintf(&fmt, "SELECT (time_usec / %" PRIu64 ") * %" PRIu64 " AS t, %s FROM (%%s) GROUP BY t ORDER BY t",
                     r_usec, r_usec, s->sums) < 0 ||
            asprintf(&trap_fmt, "SELECT (time_usec / %" PRIu64 ") * %" PRIu64 " AS t, vector, SUM(count) FROM (%%s) "
                                "GROUP BY t, vector", r_usec, r_usec) < 0 ||
            asprintf(&signal_fmt, "SELECT (time_usec / %" PRIu64 ") * %" PRIu64 " AS t, signo, si_code, SUM(count) "
                                  "FROM (%%s) GROUP BY t, signo, si_code", r_usec, r_usec) < 0)
                return -ENOMEM;
        if ((r = prepare_over(s, &st, fmt, seg, n_seg, sample_tables, columns, "process_id = ?1")) < 0 ||
            (r = prepare_over(s, &traps, trap_fmt, seg, n_seg, trap_tables, TRAP_COLUMNS, "process_id = ?1")) < 0 ||
            (r = prepare_over(s, &signals, signal_fmt, seg, n_seg, signal_tables, SIGNAL_COLUMNS, "process_id = ?1")) < 0)
                return r;
        sqlite3_bind_int64(st, 1, process_id);
        sqlite3_bind_int64(traps, 1, process_id);
        sqlite3_bind_int64(signals, 1, process_id);

        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                StoreHistoryRow *p = grow(rows, n, &capacity, sizeof(*rows));
                if (!p) {
                        free(rows);
                        return -ENOMEM;
                }
                rows = p;
                memset(&rows[n], 0, sizeof(rows[n]));
                rows[n].time_usec = (uint64_t) sqlite3_column_int64(st, 0);
                read_faults(st, 1, &rows[n].faults);
                n++;
        }
        if (rc != SQLITE_DONE) {
                free(rows);
                return sqlite_to_errno(rc) ?: -EIO;
        }
        r = read_traps(traps, signals, history_traps_by_time, &(RowsByTime) { rows, n });
        if (r < 0) {
                free(rows);
                return r;
        }
        *ret = rows;
        *ret_n = n;
        return 0;
}

/* ---- maintenance ---- */

static int64_t query_int(Store *s, const char *sql, int64_t arg, int64_t *ret) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_to_errno(rc);
        sqlite3_bind_int64(st, 1, arg);
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
                *ret = INT64_MIN; /* no row */
                return 0;
        }
        if (rc != SQLITE_ROW)
                return sqlite_to_errno(rc) ?: -EIO;
        *ret = sqlite3_column_type(st, 0) == SQLITE_NULL ? INT64_MIN : sqlite3_column_int64(st, 0);
        return 0;
}

uint64_t store_used_bytes(Store *s) {
        int64_t pages, free_pages, page_size;

        if (query_int(s, "PRAGMA page_count", 0, &pages) < 0 || query_int(s, "PRAGMA freelist_count", 0, &free_pages) < 0 ||
            query_int(s, "PRAGMA page_size", 0, &page_size) < 0 || pages < free_pages)
                return 0;
        return (uint64_t) (pages - free_pages) * (uint64_t) page_size;
}

static int exec_fmt(Store *s, const char *fmt, ...) _printf_(2, 3);
static int exec_fmt(Store *s, const char *fmt, ...) {
        _cleanup_free_ char *sql = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&sql, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return exec_sql(s->db, sql);
}

/* Sums the finer tier's rows in [from, to) into tier, and moves its mark, in one transaction:
 * a crash leaves either both or neither. */
static int roll_up(Store *s, int tier, uint64_t from, uint64_t to) {
        uint64_t w = tier_width_usec[tier];
        _cleanup_free_ char *adds = join_fault_columns("f_%1$s = f_%1$s + excluded.f_%1$s");
        int r;

        if (!adds)
                return -ENOMEM;
        r = exec_sql(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        r = exec_fmt(s,
                     "INSERT INTO %s (process_id, time_usec, %s, traps) "
                     "SELECT process_id, (time_usec / %" PRIu64 ") * %" PRIu64 " AS t, %s, SUM(traps) FROM %s "
                     "WHERE time_usec >= %" PRId64 " AND time_usec < %" PRId64 " GROUP BY process_id, t "
                     "ON CONFLICT (process_id, time_usec) DO UPDATE SET %s, traps = traps + excluded.traps",
                     sample_tables[tier], s->columns, w, w, s->sums, sample_tables[tier - 1], clamp_i64(from),
                     clamp_i64(to), adds);
        if (r >= 0)
                r = exec_fmt(s,
                             "INSERT INTO %s (process_id, time_usec, vector, count) "
                             "SELECT process_id, (time_usec / %" PRIu64 ") * %" PRIu64 " AS t, vector, SUM(count) FROM %s "
                             "WHERE time_usec >= %" PRId64 " AND time_usec < %" PRId64 " GROUP BY process_id, t, vector "
                             "ON CONFLICT (process_id, time_usec, vector) DO UPDATE SET count = count + excluded.count",
                             trap_tables[tier], w, w, trap_tables[tier - 1], clamp_i64(from), clamp_i64(to));
        if (r >= 0)
                r = exec_fmt(s,
                             "INSERT INTO %s (process_id, time_usec, signo, si_code, count) "
                             "SELECT process_id, (time_usec / %" PRIu64 ") * %" PRIu64 " AS t, signo, si_code, SUM(count) "
                             "FROM %s WHERE time_usec >= %" PRId64 " AND time_usec < %" PRId64
                             " GROUP BY process_id, t, signo, si_code "
                             "ON CONFLICT (process_id, time_usec, signo, si_code) DO UPDATE SET count = count + excluded.count",
                             signal_tables[tier], w, w, signal_tables[tier - 1], clamp_i64(from), clamp_i64(to));
        if (r >= 0)
                r = exec_fmt(s, "UPDATE tier SET rolled_until_usec = %" PRId64 " WHERE name = '%s'", clamp_i64(to),
                             tier_name(tier));
        if (r >= 0)
                r = exec_sql(s->db, "COMMIT");
        if (r < 0)
                rollback(s);
        return r;
}

/* Rolls the next complete stretch (at most max_span) of the finer tier into tier. */
static int roll_step(Store *s, const TierState *tiers, int tier, uint64_t complete_until, uint64_t max_span,
                     bool *more) {
        uint64_t w = tier_width_usec[tier], from = tiers[tier].rolled_until, to;
        int64_t oldest;
        int r;

        complete_until -= complete_until % w;
        if (from == 0) {
                /* First roll-up: start at the finer tier's oldest row. */
                r = query_int(s, tier == TIER_MINUTE ? "SELECT MIN(time_usec) FROM sample_raw"
                                                     : "SELECT MIN(time_usec) FROM sample_minute",
                              0, &oldest);
                if (r < 0)
                        return r;
                from = oldest == INT64_MIN ? complete_until : (uint64_t) oldest - (uint64_t) oldest % w;
        }
        if (from >= complete_until)
                return from == tiers[tier].rolled_until ? 0 : roll_up(s, tier, from, from);
        to = complete_until - from > max_span ? from + max_span : complete_until;
        if (to < complete_until)
                *more = true;
        return roll_up(s, tier, from, to);
}

/* Deletes at most batch rows of table older than cutoff; first moves the tier's kept_from, so
 * no query reads a half-deleted stretch from this tier. Returns the rows deleted. */
static int delete_older(Store *s, int tier, const char *const tables[_TIER_MAX], const char *key, uint64_t cutoff,
                        size_t batch) {
        int r;

        r = exec_sql(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        r = exec_fmt(s, "UPDATE tier SET kept_from_usec = max(kept_from_usec, %" PRId64 ") WHERE name = '%s'",
                     clamp_i64(cutoff), tier_name(tier));
        if (r >= 0)
                r = exec_fmt(s, "DELETE FROM %1$s WHERE (%2$s) IN (SELECT %2$s FROM %1$s WHERE time_usec < %3$" PRId64
                                " LIMIT %4$zu)",
                             tables[tier], key, clamp_i64(cutoff), batch);
        if (r >= 0) {
                int c;

                r = sqlite3_changes(s->db);
                c = exec_sql(s->db, "COMMIT");
                if (c < 0)
                        r = c;
        }
        if (r < 0)
                rollback(s);
        return r;
}

static int expire_tier(Store *s, int tier, uint64_t cutoff, size_t batch, bool *more) {
        static const struct {
                const char *const *tables;
                const char *key;
        } kinds[] = {
                { sample_tables, "process_id, time_usec" },
                { trap_tables, "process_id, time_usec, vector" },
                { signal_tables, "process_id, time_usec, signo, si_code" },
        };

        for (size_t k = 0; k < ELEMENTSOF(kinds); k++) {
                int r = delete_older(s, tier, kinds[k].tables, kinds[k].key, cutoff, batch);
                if (r < 0)
                        return r;
                if ((size_t) r >= batch)
                        *more = true;
        }
        return 0;
}

int store_maintain(Store *s, uint64_t now_usec, const StoreRetention *ret, bool *ret_more) {
        const uint64_t hour = tier_width_usec[TIER_HOUR];
        TierState tiers[_TIER_MAX];
        bool more = false;
        int r;

        /* Nothing is rolled up, and no process without samples deleted, with ticks pending. */
        r = pending_settle(s);
        if (r < 0)
                return r;

        /* Roll-ups: raw buckets before the current minute never change again; at most an hour
         * of raw or a day of minutes per step. */
        r = load_tiers(s, tiers);
        if (r < 0)
                return r;
        r = roll_step(s, tiers, TIER_MINUTE, now_usec, hour, &more);
        if (r < 0)
                return r;
        r = load_tiers(s, tiers);
        if (r < 0)
                return r;
        r = roll_step(s, tiers, TIER_HOUR, tiers[TIER_MINUTE].rolled_until, 24 * hour, &more);
        if (r < 0)
                return r;
        r = load_tiers(s, tiers);
        if (r < 0)
                return r;

        /* Retention by age, never past what the next coarser tier has rolled up. */
        for (int t = TIER_RAW; t < _TIER_MAX; t++) {
                uint64_t keep = t == TIER_RAW ? ret->raw_usec : t == TIER_MINUTE ? ret->minute_usec : ret->hour_usec;
                uint64_t cutoff = now_usec > keep ? now_usec - keep : 0;

                if (t + 1 < _TIER_MAX && cutoff > tiers[t + 1].rolled_until)
                        cutoff = tiers[t + 1].rolled_until;
                cutoff -= cutoff % tier_width_usec[t];
                /* Also when kept_from is there already: an earlier step may have stopped at a
                 * batch. Nothing left to delete is one index seek. */
                if (cutoff > 0 && cutoff >= tiers[t].kept_from) {
                        r = expire_tier(s, t, cutoff, ret->batch_rows, &more);
                        if (r < 0)
                                return r;
                }
        }

        /* The size cap: the oldest rows of the finest tier go first, but only what the next
         * tier has rolled up (else that stretch would be in no tier at all); when the finest
         * tier has nothing such, the next one. */
        if (ret->max_bytes > 0 && store_used_bytes(s) > ret->max_bytes) {
                for (int t = TIER_RAW; t < _TIER_MAX; t++) {
                        _cleanup_free_ char *first_sql = NULL, *nth_sql = NULL, *last_sql = NULL;
                        int64_t first, nth;
                        uint64_t cutoff;

                        if (asprintf(&first_sql, "SELECT MIN(time_usec) FROM %s", sample_tables[t]) < 0 ||
                            asprintf(&nth_sql, "SELECT time_usec FROM %s ORDER BY time_usec LIMIT 1 OFFSET ?1",
                                     sample_tables[t]) < 0 ||
                            asprintf(&last_sql, "SELECT MAX(time_usec) + 1 FROM %s", sample_tables[t]) < 0)
                                return -ENOMEM;
                        if ((r = query_int(s, first_sql, 0, &first)) < 0)
                                return r;
                        if (first == INT64_MIN)
                                continue; /* empty */
                        /* Up to a batch of rows: the time of the row after it, or past the last. */
                        if ((r = query_int(s, nth_sql, (int64_t) ret->batch_rows, &nth)) < 0)
                                return r;
                        if (nth == INT64_MIN && (r = query_int(s, last_sql, 0, &nth)) < 0)
                                return r;
                        cutoff = (uint64_t) nth;
                        if (t + 1 < _TIER_MAX && cutoff > tiers[t + 1].rolled_until)
                                cutoff = tiers[t + 1].rolled_until;
                        cutoff -= cutoff % tier_width_usec[t];
                        if (cutoff <= (uint64_t) first)
                                continue; /* nothing here is rolled up yet */
                        r = expire_tier(s, t, cutoff, ret->batch_rows, &more);
                        if (r < 0)
                                return r;
                        more = true;
                        break;
                }
                /* Give the freed pages back to the file system. */
                (void) exec_sql(s->db, "PRAGMA incremental_vacuum(1000)");
        }

        /* Exited processes whose rows have all aged out. */
        r = exec_fmt(s, "DELETE FROM process WHERE id IN (SELECT id FROM process p WHERE exited "
                        "AND NOT EXISTS (SELECT 1 FROM sample_raw WHERE process_id = p.id) "
                        "AND NOT EXISTS (SELECT 1 FROM sample_minute WHERE process_id = p.id) "
                        "AND NOT EXISTS (SELECT 1 FROM sample_hour WHERE process_id = p.id) LIMIT %zu)",
                     ret->batch_rows);
        if (r < 0)
                return r;
        if ((size_t) sqlite3_changes(s->db) >= ret->batch_rows)
                more = true;

        *ret_more = more;
        return 0;
}
