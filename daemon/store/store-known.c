/* SPDX-License-Identifier: MIT */
/* The known-process cache of the writer (store-known.h): the process rows as this store last
 * wrote them, so that a tick writes a row only when something in it changed. */
#include "store-known.h"

#include <errno.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array-util.h"

#define KNOWN_IDLE_USEC (60 * UINT64_C(1000000))

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

/* The namespace and container columns, from parameter first on: ns_pid, pid_ns, pidns_level, then
 * the container's runtime, id, name, pod and user; NULL for what is not known. */
static void bind_ns_container(sqlite3_stmt *st, int first, const ProcessInfo *p) {
        const PidNsPid *ns = process_info_ns(p);
        const Container *c = p->container;

        for (int i = 0; i < 8; i++)
                sqlite3_bind_null(st, first + i);
        if (ns) {
                sqlite3_bind_int64(st, first, ns->pid);
                sqlite3_bind_int64(st, first + 1, ns->ns);
                sqlite3_bind_int64(st, first + 2, p->pidns_level);
        }
        if (c) {
                sqlite3_bind_text(st, first + 3, c->runtime, -1, SQLITE_STATIC);
                sqlite3_bind_text(st, first + 4, c->id, -1, SQLITE_STATIC);
                if (c->name[0])
                        sqlite3_bind_text(st, first + 5, c->name, -1, SQLITE_STATIC);
                if (c->pod[0])
                        sqlite3_bind_text(st, first + 6, c->pod, -1, SQLITE_STATIC);
                if (c->user != UINT32_MAX)
                        sqlite3_bind_int64(st, first + 7, c->user);
        }
}

/* The rows of process_pidns: each namespace below the initial one the process is in. */
static int add_pidns(Store *s, int64_t id, const ProcessInfo *p) {
        int r = 0;

        for (uint32_t i = 0; i < p->n_pidns && i < PIDNS_LEVELS && r >= 0; i++) {
                uint32_t level = i + 1 == p->n_pidns ? p->pidns_level : i;

                if (level == 0)
                        continue;
                sqlite3_reset(s->add_pidns);
                sqlite3_bind_int64(s->add_pidns, 1, p->pidns[i].ns);
                sqlite3_bind_int64(s->add_pidns, 2, p->pidns[i].pid);
                sqlite3_bind_int64(s->add_pidns, 3, id);
                r = sql_step_done(s->add_pidns);
        }
        return r;
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
        bind_ns_container(st, 11, p);
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW) {
                sqlite3_reset(st);
                return sqlite_to_errno(rc) ?: -EIO;
        }
        *ret_id = sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        return add_pidns(s, *ret_id, p);
}

static int known_compare(const void *a, const void *b) {
        const KnownProcess *x = a, *y = b;

        return process_identity_compare(x->pid, x->start_time, y->pid, y->start_time);
}

static void known_free(void *p) {
        KnownProcess *k = p;

        free(k->cmdline);
        free(k->unit);
        free(k->container);
        free(k);
}

void store_known_forget(Store *s, KnownProcess *k) {
        tdelete(k, &s->known, known_compare);
        known_free(k);
}

void store_known_clear(Store *s) {
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
/* Whether p knows namespaces the row lacks, or a container other than the row's. */
static bool ns_container_changes(const KnownProcess *k, const ProcessInfo *p) {
        return (!k->ns_written && p->n_pidns > 0) ||
               (p->container && (!k->container || memcmp(k->container, p->container, sizeof(Container)) != 0));
}

static bool known_differs(const KnownProcess *k, const ProcessInfo *p) {
        return p->exited || strcmp(k->comm, p->comm) != 0 || k->uid != p->uid || text_changes(k->cmdline, p->cmdline) ||
               text_changes(k->unit, p->unit) || ns_container_changes(k, p) ||
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
        k->ns_written = k->ns_written || p->n_pidns > 0;
        if (p->container) {
                if (!k->container && !(k->container = malloc(sizeof(Container))))
                        return -ENOMEM;
                *k->container = *p->container;
        }
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
        if (identity)
                bind_ns_container(st, 8, p);
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

int store_known_row(Store *s, const ProcessInfo *p, int64_t *ret_id, KnownProcess **ret_known) {
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
                bool identity = k->uid != p->uid || text_changes(k->cmdline, p->cmdline) ||
                                text_changes(k->unit, p->unit) || ns_container_changes(k, p);
                bool new_ns = !k->ns_written && p->n_pidns > 0;

                r = update_process(s, k->id, p, identity);
                if (r >= 0 && new_ns)
                        r = add_pidns(s, k->id, p);
                if (r >= 0) {
                        r = known_update(k, p);
                        if (r < 0)
                                return r;
                        *ret_id = k->id;
                        *ret_known = k;
                        /* An exit is final text too: a storm's exits are bounded like its starts. */
                        return identity || p->exited;
                }
                if (r != -ENOENT)
                        return r;
                store_known_forget(s, k); /* the row is gone: create it again */
        }
        r = upsert_process(s, p, &id);
        if (r < 0)
                return r;
        r = known_add(s, p, id, &k);
        if (r < 0)
                return r;
        *ret_id = id;
        *ret_known = k;
        return 1;
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
int store_known_sweep(Store *s, uint64_t now_usec) {
        KnownSweep w = { .before_usec = now_usec > KNOWN_IDLE_USEC ? now_usec - KNOWN_IDLE_USEC : 0 };
        int r = 0;

        twalk_r(s->known, known_sweep_visit, &w);
        if (w.failed)
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < w.n; i++) {
                r = known_write_last_seen(s, w.idle[i]);
                if (r >= 0)
                        store_known_forget(s, w.idle[i]);
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
        store_known_clear(s);
}
