/* SPDX-License-Identifier: MIT */
/* The read layer every query family uses (store-read.h): the snapshot a query's caller begins,
 * the read statements prepared once per connection, reading a process and counts, the union
 * over the tiers, the sums of one kind per group and key. */
#include "store-read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int store_read_prepare(Store *s) {
        int r;

        r = sql_prepare(s->db, &s->find_process,
                        "SELECT id, " PROCESS_COLUMNS " FROM process WHERE pid = ? AND start_time = ? "
                        "ORDER BY first_seen_usec DESC LIMIT 1");
        if (r < 0)
                return r;
        return sql_prepare(s->db, &s->find_newest_process,
                           "SELECT id, " PROCESS_COLUMNS " FROM process WHERE pid = ? "
                           "ORDER BY first_seen_usec DESC, id DESC LIMIT 1");
}

int store_snapshot_begin(Store *s) {
        /* One per query, begun by its caller: inside another, or inside a write, it would read
         * what that one does, not a snapshot of its own. */
        if (!sqlite3_get_autocommit(s->db))
                return -EBUSY;
        return sql_exec(s->db, "BEGIN");
}

void store_snapshot_end(Store *s) {
        /* A read: nothing to commit. An interrupted statement (the progress handler) may have
         * ended the transaction already. */
        store_rollback(s);
}

bool store_in_snapshot(Store *s) {
        return !sqlite3_get_autocommit(s->db);
}

char *column_strdup(sqlite3_stmt *st, int i) {
        const unsigned char *t = sqlite3_column_text(st, i);
        return t ? strdup((const char *) t) : NULL;
}

/* ns_pid, pid_ns, pidns_level, and at chain the namespaces below the initial one from process_pidns
 * ("NS:PID NS:PID"): p's pid namespaces, those of process_pidns in any order, then the innermost
 * last (process_info_ns()). The initial namespace's is not stored: a caller there sees every pid as
 * it is. */
static void read_ns(sqlite3_stmt *st, int first, int chain, ProcessInfo *p) {
        const char *text = (const char *) sqlite3_column_text(st, chain);
        PidNsPid inner;

        if (sqlite3_column_type(st, first) == SQLITE_NULL || sqlite3_column_type(st, first + 1) == SQLITE_NULL)
                return;
        inner = (PidNsPid) { .pid = (uint32_t) sqlite3_column_int64(st, first),
                             .ns = (uint32_t) sqlite3_column_int64(st, first + 1) };
        for (const char *t = text; t && *t && p->n_pidns < PIDNS_LEVELS - 1;) {
                unsigned ns, pid;
                int n = 0;

                if (sscanf(t, "%u:%u%n", &ns, &pid, &n) != 2 || n <= 0)
                        break;
                if (ns != inner.ns)
                        p->pidns[p->n_pidns++] = (PidNsPid) { .ns = ns, .pid = pid };
                t += n;
                while (*t == ' ')
                        t++;
        }
        p->pidns[p->n_pidns++] = inner;
        p->pidns_level = (uint32_t) sqlite3_column_int64(st, first + 2);
}

int read_container(sqlite3_stmt *st, int first, Container **ret) {
        const unsigned char *runtime = sqlite3_column_text(st, first), *v;
        Container *c;

        *ret = NULL;
        if (!runtime)
                return 0;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        snprintf(c->runtime, sizeof(c->runtime), "%s", (const char *) runtime);
        if ((v = sqlite3_column_text(st, first + 1)))
                snprintf(c->id, sizeof(c->id), "%s", (const char *) v);
        if ((v = sqlite3_column_text(st, first + 2)))
                snprintf(c->name, sizeof(c->name), "%s", (const char *) v);
        if ((v = sqlite3_column_text(st, first + 3)))
                snprintf(c->pod, sizeof(c->pod), "%s", (const char *) v);
        c->user = sqlite3_column_type(st, first + 4) == SQLITE_NULL ? UINT32_MAX
                                                                   : (uint32_t) sqlite3_column_int64(st, first + 4);
        *ret = c;
        return 0;
}

int read_process(sqlite3_stmt *st, int first, ProcessInfo *ret) {
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
        read_ns(st, first + 9, first + 17, &p);
        if ((sqlite3_column_type(st, first + 3) != SQLITE_NULL && !(p.cmdline = column_strdup(st, first + 3))) ||
            (sqlite3_column_type(st, first + 5) != SQLITE_NULL && !(p.unit = column_strdup(st, first + 5))) ||
            read_container(st, first + 12, &p.container) < 0) {
                process_info_done(&p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

void read_faults(sqlite3_stmt *st, int first, Faults *ret) {
        for (size_t i = 0; i < n_fault_fields; i++)
                *faults_field(ret, &fault_fields[i]) = (uint64_t) sqlite3_column_int64(st, first + (int) i);
}

int prepare_over(Store *s, sqlite3_stmt **ret, const char *fmt, int kind, const TierSegment *seg, size_t n,
                 const char *where) {
        _cleanup_free_ char *u = store_kind_union(&store_kinds[kind], seg, n, where);

        if (!u)
                return -ENOMEM;
        return sql_prepare(s->db, ret, fmt, u);
}

int read_kind(Store *s, const StoreKind *kind, const TierSegment *seg, size_t n_seg, const char *group,
              const char *where, const char *text, int64_t value, ReadKindRow fn, void *userdata) {
        size_t n_keys = store_kind_n_keys(kind), n_values = store_kind_n_values(kind);
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *u = NULL, *sql = NULL;
        int rc;

        u = store_kind_union(kind, seg, n_seg, where);
        sql = u ? store_kind_sum(kind, group, u) : NULL;
        if (!sql)
                return -ENOMEM;
        rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_to_errno(rc);
        if (text)
                sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
        else
                sqlite3_bind_int64(st, 1, value);

        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t keys[STORE_KIND_MAX_KEYS];
                uint64_t values[STORE_KIND_MAX_VALUES];

                for (size_t i = 0; i < n_keys; i++)
                        keys[i] = sqlite3_column_int64(st, 1 + (int) i);
                for (size_t i = 0; i < n_values; i++)
                        values[i] = (uint64_t) sqlite3_column_int64(st, 1 + (int) (n_keys + i));
                fn(kind, sqlite3_column_int64(st, 0), keys, values, userdata);
        }
        if (rc != SQLITE_DONE)
                return sqlite_to_errno(rc) ?: -EIO;
        return 0;
}

static void add_traps_row(const StoreKind *kind, int64_t group, const int64_t *keys, const uint64_t *values,
                          void *userdata) {
        const CountsQuery *q = userdata;
        Traps *t = q->find(kind, group, q->userdata);

        if (t)
                kind->traps_add(t, keys, values);
}

int read_traps(Store *s, const TierSegment *seg, size_t n_seg, const CountsQuery *q) {
        for (int k = 0; k < _STORE_KIND_MAX; k++) {
                int r;

                if (!store_kinds[k].traps_add)
                        continue;
                r = read_kind(s, &store_kinds[k], seg, n_seg, q->group, q->where, q->text, q->value, add_traps_row, (void *) q);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void add_fault_time_row(const StoreKind *kind, int64_t group, const int64_t *keys _unused_,
                               const uint64_t *values, void *userdata) {
        const CountsQuery *q = userdata;
        FaultTime *t = q->find(kind, group, q->userdata), row;

        if (!t)
                return;
        row = (FaultTime) { .minor_ns = values[0], .major_ns = values[1], .kernel_ns = values[2], .max_ns = values[3] };
        memcpy(row.histogram, values + 4, sizeof(row.histogram));
        row.major_file_ns = values[4 + FAULT_TIME_BUCKETS];
        row.major_anon_ns = values[5 + FAULT_TIME_BUCKETS];
        row.major_shmem_ns = values[6 + FAULT_TIME_BUCKETS];
        fault_time_add(t, &row);
}

int read_fault_time(Store *s, const TierSegment *seg, size_t n_seg, const CountsQuery *q) {
        return read_kind(s, &store_kinds[STORE_KIND_FAULT_TIME], seg, n_seg, q->group, q->where, q->text, q->value,
                         add_fault_time_row, (void *) q);
}

static void add_stall_row(const StoreKind *kind, int64_t group, const int64_t *keys _unused_, const uint64_t *values,
                          void *userdata) {
        const CountsQuery *q = userdata;
        Stall *t = q->find(kind, group, q->userdata), row;

        if (!t)
                return;
        /* The kind's columns: each cause's ns, then its count (store-kind.c). */
        for (size_t i = 0; i < _STALL_MAX; i++) {
                row.ns[i] = values[2 * i];
                row.count[i] = values[2 * i + 1];
        }
        stall_add(t, &row);
}

int read_stall(Store *s, const TierSegment *seg, size_t n_seg, const CountsQuery *q) {
        return read_kind(s, &store_kinds[STORE_KIND_STALL], seg, n_seg, q->group, q->where, q->text, q->value,
                         add_stall_row, (void *) q);
}
