/* SPDX-License-Identifier: MIT */
/* The pending ticks. A tick's deltas go into one sample_pending row, not one sample_raw row per
 * process: packed, for each process with a non-zero delta its row id, a mask of its non-zero
 * members (bit i: fault_fields[i], bit n_fault_fields: traps, the next: fault time in ns, the next:
 * time waited on memory in ns), then those members, every number an unsigned LEB128. A process
 * whose only count is a stall of block I/O has a mask of 0: its row says the interval has one. Folding adds the pending rows of the minutes before the current one to their
 * raw buckets and each process's total, and deletes them: when a tick falls into a later minute,
 * and before a step of maintenance that needs them in rows, in slices of a few milliseconds whose
 * progress table pending_fold keeps (schema/sql/0012-pending-fold.sql). The queries read them as
 * they are (store_pending_read()).
 *
 * Why a minute and not the raw tier's 10 s: a fold writes each process's total (table
 * process_total, whose index entries of every sort column move with it) and the last page of its
 * raw rows (sample_raw is clustered by process). At 1000 processes faulting every second that is
 * once a minute instead of six times, for the same rows. */
#include "store-pending.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array-util.h"
#include "hash-util.h"
#include "time-util.h"

/* A slice looks at the clock every this many processes folded. */
#define FOLD_CHECK_EVERY 16

static int pack_u64(Store *s, uint64_t v) {
        /* A LEB128 of 64 bits takes at most 10 bytes. */
        int r = array_grow((void **) &s->packed, &s->packed_capacity, s->packed_size, 10, 1);

        if (r < 0)
                return r;
        do {
                uint8_t b = v & 0x7f;

                v >>= 7;
                s->packed[s->packed_size++] = b | (v ? 0x80 : 0);
        } while (v);
        return 0;
}

int store_pending_pack(Store *s, int64_t process_id, const Faults *delta, uint64_t traps, uint64_t time_ns,
                       uint64_t stall_ns) {
        uint64_t mask = (traps ? UINT64_C(1) << n_fault_fields : 0) | (time_ns ? UINT64_C(1) << (n_fault_fields + 1) : 0) |
                        (stall_ns ? UINT64_C(1) << (n_fault_fields + 2) : 0);
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
        if (r >= 0 && time_ns)
                r = pack_u64(s, time_ns);
        if (r >= 0 && stall_ns)
                r = pack_u64(s, stall_ns);
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

static int id_compare(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;

        return x < y ? -1 : x > y;
}

/* How far a fold under way got (table pending_fold): the samples of processes up to through_id
 * in the rows of ticks before before_usec are folded already. through_id 0: none. */
typedef struct FoldProgress {
        int64_t before_usec;
        int64_t through_id;
} FoldProgress;

/* Where unpacked samples go: appended to a[], or, for sums, added into their process's element
 * of a[], found by a table of open addressing (slots: the index + 1 of an element, 0 empty). */
typedef struct PendingSink {
        PendingSample *a;
        size_t n, capacity;
        bool sums;
        uint32_t *slots;
        size_t n_slots; /* a power of two, at least twice n */
} PendingSink;

static void sink_done(PendingSink *k) {
        free(k->a);
        free(k->slots);
}

/* Row ids come in sequence: mixed so that neighbours spread. */
static size_t sink_slot(const PendingSink *k, int64_t id) {
        size_t i = (size_t) hash_mix64((uint64_t) id) & (k->n_slots - 1);

        while (k->slots[i] && k->a[k->slots[i] - 1].process_id != id)
                i = (i + 1) & (k->n_slots - 1);
        return i;
}

static int sink_grow_slots(PendingSink *k) {
        size_t n_slots = k->n_slots ? k->n_slots * 2 : 1024;
        uint32_t *slots;

        if (n_slots > UINT32_MAX)
                return -ENOMEM;
        slots = calloc(n_slots, sizeof(*slots));
        if (!slots)
                return -ENOMEM;
        free(k->slots);
        k->slots = slots;
        k->n_slots = n_slots;
        for (size_t j = 0; j < k->n; j++)
                k->slots[sink_slot(k, k->a[j].process_id)] = (uint32_t) (j + 1);
        return 0;
}

static int sink_put(PendingSink *k, const PendingSample *x) {
        size_t i = 0;
        int r;

        if (k->sums) {
                if (2 * (k->n + 1) > k->n_slots && (r = sink_grow_slots(k)) < 0)
                        return r;
                i = sink_slot(k, x->process_id);
                if (k->slots[i]) {
                        PendingSample *e = &k->a[k->slots[i] - 1];

                        pending_sample_add(e, x);
                        e->bucket_usec = MAX(e->bucket_usec, x->bucket_usec);
                        return 0;
                }
        }
        r = array_grow((void **) &k->a, &k->capacity, k->n, 1, sizeof(*k->a));
        if (r < 0)
                return r;
        k->a[k->n++] = *x;
        if (k->sums)
                k->slots[i] = (uint32_t) k->n;
        return 0;
}

/* Puts the samples packed in one pending row into sink: all of them, or with only_ids those of
 * the processes it lists; none that the fold under way has folded (folded: the processes up to
 * that id). sink NULL: only whether the row decodes. */
static int unpack_samples(const uint8_t *p, size_t size, uint64_t bucket_usec, int64_t folded, const int64_t *only_ids,
                          size_t n_only, PendingSink *sink) {
        const uint8_t *end = p + size;

        while (p < end) {
                PendingSample x = { .bucket_usec = bucket_usec };
                uint64_t id, mask;
                int r;

                if ((r = unpack_u64(&p, end, &id)) < 0 || (r = unpack_u64(&p, end, &mask)) < 0)
                        return r;
                if (id > INT64_MAX || mask >> (n_fault_fields + 3))
                        return -EUCLEAN;
                x.process_id = (int64_t) id;
                for (size_t i = 0; i < n_fault_fields; i++)
                        if ((mask & (UINT64_C(1) << i)) &&
                            (r = unpack_u64(&p, end, faults_field(&x.delta, &fault_fields[i]))) < 0)
                                return r;
                if ((mask & (UINT64_C(1) << n_fault_fields)) && (r = unpack_u64(&p, end, &x.traps)) < 0)
                        return r;
                if ((mask & (UINT64_C(1) << (n_fault_fields + 1))) && (r = unpack_u64(&p, end, &x.time_ns)) < 0)
                        return r;
                if ((mask & (UINT64_C(1) << (n_fault_fields + 2))) && (r = unpack_u64(&p, end, &x.stall_ns)) < 0)
                        return r;
                if (!sink || x.process_id <= folded)
                        continue;
                /* A unit's processes may be thousands: a binary search, not a scan, per sample. */
                if (only_ids && !bsearch(&x.process_id, only_ids, n_only, sizeof(*only_ids), id_compare))
                        continue;
                r = sink_put(sink, &x);
                if (r < 0)
                        return r;
        }
        return 0;
}

void pending_sample_add(PendingSample *a, const PendingSample *b) {
        faults_add(&a->delta, &b->delta);
        a->traps += b->traps;
        a->time_ns += b->time_ns;
        a->stall_ns += b->stall_ns;
}

static int pending_compare(const void *a, const void *b) {
        const PendingSample *x = a, *y = b;

        if (x->bucket_usec != y->bucket_usec)
                return x->bucket_usec < y->bucket_usec ? -1 : 1;
        return x->process_id < y->process_id ? -1 : x->process_id > y->process_id;
}

/* The fold's order: a process's buckets together, then its total. */
static int fold_compare(const void *a, const void *b) {
        const PendingSample *x = a, *y = b;
        int c = pending_sample_by_process(a, b);

        return c != 0 ? c : x->bucket_usec < y->bucket_usec ? -1 : x->bucket_usec > y->bucket_usec;
}

/* Adds a process's pending sum of a bucket to its raw row or to its total (table process_total,
 * which Top ranks by); st is any of their statements, all take (id, bucket, faults, traps, time,
 * stall). */
static int fold_into(sqlite3_stmt *st, const PendingSample *x) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, x->process_id);
        sqlite3_bind_int64(st, 2, (int64_t) x->bucket_usec);
        for (size_t i = 0; i < n_fault_fields; i++)
                sqlite3_bind_int64(st, 3 + (int) i, (int64_t) faults_get(&x->delta, &fault_fields[i]));
        sqlite3_bind_int64(st, 3 + (int) n_fault_fields, (int64_t) x->traps);
        sqlite3_bind_int64(st, 4 + (int) n_fault_fields, (int64_t) MIN(x->time_ns, (uint64_t) INT64_MAX));
        sqlite3_bind_int64(st, 5 + (int) n_fault_fields, (int64_t) MIN(x->stall_ns, (uint64_t) INT64_MAX));
        return sql_step_done(st);
}

/* Folds one process's samples (a[0..n), its buckets in order) into its raw rows and then their
 * sum into its total. */
static int fold_process(Store *s, const PendingSample *a, size_t n) {
        PendingSample sum = a[0];
        int r = 0;

        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = fold_into(s->add_raw[STORE_KIND_SAMPLE], &a[i]);
                if (i > 0)
                        pending_sample_add(&sum, &a[i]);
        }
        /* The total's last counted bucket: the newest of them. */
        sum.bucket_usec = a[n - 1].bucket_usec;
        if (r >= 0)
                r = fold_into(s->add_total, &sum);
        /* No total yet: the process's first fold. */
        if (r >= 0 && sqlite3_changes(s->db) == 0)
                r = fold_into(s->insert_total, &sum);
        return r;
}

/* Sorts a[0..n) into key order and sums each process's samples of one bucket into one; the
 * count left. */
static size_t pending_merge(PendingSample *a, size_t n) {
        size_t m = 0;

        if (n > 0)
                qsort(a, n, sizeof(*a), pending_compare);
        for (size_t i = 0; i < n; i++) {
                if (m > 0 && pending_compare(&a[i], &a[m - 1]) == 0)
                        pending_sample_add(&a[m - 1], &a[i]);
                else
                        a[m++] = a[i];
        }
        return m;
}

/* Unpacked samples merged once they are this many more than at the last merge (and than that
 * merge left): a minute of ticks of 1000 processes is 60000 samples, 6000 once merged. */
#define PENDING_MERGE_MIN 4096

/* Puts the pending samples of ticks in [since_usec, before_usec) that no fold has taken yet into
 * sink; an append sink sorted and summed per (bucket, process) as they come. */
static int pending_scan(Store *s, int64_t since_usec, int64_t before_usec, const int64_t *only_ids, size_t n_only,
                        PendingSink *sink) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        size_t merged = 0;
        int rc, r;

        /* One statement, so the rows and the fold's progress are of one snapshot. */
        rc = sqlite3_prepare_v2(s->db,
                                "SELECT p.time_usec, p.data, f.before_usec, f.through_id FROM sample_pending AS p "
                                "LEFT JOIN pending_fold AS f WHERE p.time_usec >= ? AND p.time_usec < ?",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_to_errno(rc);
        sqlite3_bind_int64(st, 1, since_usec);
        sqlite3_bind_int64(st, 2, before_usec);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t t = sqlite3_column_int64(st, 0);
                const uint8_t *data = sqlite3_column_blob(st, 1);
                FoldProgress fold = { sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3) };
                size_t size = (size_t) sqlite3_column_bytes(st, 1), before = sink->n;

                /* A row that does not decode is dropped, alone: sums look before they add. */
                if (sink->sums && unpack_samples(data, size, 0, 0, NULL, 0, NULL) == -EUCLEAN)
                        continue;
                r = unpack_samples(data, size, tier_floor(TIER_RAW, (uint64_t) t),
                                   t < fold.before_usec ? fold.through_id : 0, only_ids, n_only, sink);
                if (r == -EUCLEAN && !sink->sums)
                        sink->n = before;
                else if (r < 0)
                        return r;
                /* Merged as they come, so that what is held follows the processes and buckets,
                 * not the ticks. */
                if (!sink->sums && sink->n - merged > MAX(merged, (size_t) PENDING_MERGE_MIN))
                        sink->n = merged = pending_merge(sink->a, sink->n);
        }
        if (rc != SQLITE_DONE)
                return sqlite_to_errno(rc) ?: -EIO;
        return 0;
}

/* The pending samples of ticks before before_usec (INT64_MAX: all) that no fold has taken yet,
 * see store_pending_read(). */
static int pending_read(Store *s, int64_t before_usec, const int64_t *only_ids, size_t n_only, PendingSample **ret,
                        size_t *ret_n) {
        _cleanup_(sink_done) PendingSink sink = {};
        int r;

        r = pending_scan(s, 0, before_usec, only_ids, n_only, &sink);
        if (r < 0)
                return r;
        *ret_n = pending_merge(sink.a, sink.n);
        *ret = TAKE_PTR(sink.a);
        return 0;
}

int pending_sample_by_process(const void *a, const void *b) {
        const PendingSample *x = a, *y = b;

        return x->process_id < y->process_id ? -1 : x->process_id > y->process_id;
}

int store_pending_sums(Store *s, uint64_t since_bucket, PendingSample **ret, size_t *ret_n) {
        _cleanup_(sink_done) PendingSink sink = { .sums = true };
        int r;

        r = pending_scan(s, clamp_i64(since_bucket), INT64_MAX, NULL, 0, &sink);
        if (r < 0)
                return r;
        if (sink.n > 0)
                qsort(sink.a, sink.n, sizeof(*sink.a), pending_sample_by_process);
        *ret_n = sink.n;
        *ret = TAKE_PTR(sink.a);
        return 0;
}

int store_pending_read(Store *s, const int64_t *only_ids, size_t n_only, PendingSample **ret, size_t *ret_n) {
        return pending_read(s, INT64_MAX, only_ids, n_only, ret, ret_n);
}

static int fold_checked(Store *s, const PendingSample *a, size_t n) {
        int r = fold_process(s, a, n);

        /* A process row that is gone (nothing of ours deletes one with ticks pending) takes its
         * counts with it, rather than failing every fold after. */
        return r < 0 && sqlite3_extended_errcode(s->db) == SQLITE_CONSTRAINT_FOREIGNKEY ? 0 : r;
}

static int insert_pending(Store *s, uint64_t time_usec) {
        sqlite3_stmt *st = s->add_pending;

        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, (int64_t) time_usec);
        sqlite3_bind_blob(st, 2, s->packed, (int) s->packed_size, SQLITE_STATIC);
        return sql_step_done(st);
}

void store_pending_forget_fold(Store *s) {
        free(s->fold_left);
        s->fold_left = NULL;
        s->n_fold_left = 0;
        s->fold_left_before = 0;
}

/* Ends a fold: the rows it took go, and so does its progress. */
static int fold_done(Store *s, int64_t before) {
        _cleanup_finalize_ sqlite3_stmt *del = NULL;
        int r;

        r = sql_prepare(s->db, &del, "DELETE FROM sample_pending WHERE time_usec < ?");
        if (r < 0)
                return r;
        sqlite3_bind_int64(del, 1, before);
        r = sql_step_done(del);
        return r < 0 ? r : sql_exec(s->db, "DELETE FROM pending_fold");
}

/* Records that the processes up to through_id are folded, for the readers and a restart. */
static int fold_progress(Store *s, int64_t before, int64_t through_id) {
        _cleanup_finalize_ sqlite3_stmt *st = NULL;
        int r;

        r = sql_prepare(s->db, &st,
                        "INSERT OR REPLACE INTO pending_fold (id, before_usec, through_id) VALUES (1, ?, ?)");
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, before);
        sqlite3_bind_int64(st, 2, through_id);
        r = sql_step_done(st);
        if (r >= 0)
                s->fold_marked_before = MAX(s->fold_marked_before, (uint64_t) before);
        return r;
}

int store_pending_fold_slice(Store *s, uint64_t before_usec, uint64_t budget_usec, bool *ret_done) {
        uint64_t start = now_usec(CLOCK_MONOTONIC);
        uint64_t deadline_usec = budget_usec > UINT64_MAX - start ? UINT64_MAX : start + budget_usec;
        int64_t before = clamp_i64(store_fold_floor(before_usec));
        PendingSample *a;
        size_t n, i = 0, processes = 0;
        int r;

        /* The samples left by the last slice, unless it was of another minute: the rows they came
         * from are read and unpacked once, not at every slice (3-4 ms at 10000 processes). */
        if (s->fold_left_before != before) {
                store_pending_forget_fold(s);
                r = pending_read(s, before, NULL, 0, &s->fold_left, &s->n_fold_left);
                if (r < 0)
                        return r;
                if (s->n_fold_left > 0)
                        qsort(s->fold_left, s->n_fold_left, sizeof(*s->fold_left), fold_compare);
                s->fold_left_before = before;
        }
        a = s->fold_left;
        n = s->n_fold_left;
        /* Process by process, at least a few, so that a slow machine still gets through them. */
        while (i < n) {
                size_t j = i + 1;

                while (j < n && a[j].process_id == a[i].process_id)
                        j++;
                r = fold_checked(s, a + i, j - i);
                if (r < 0)
                        goto fail;
                i = j;
                if (++processes % FOLD_CHECK_EVERY == 0 && now_usec(CLOCK_MONOTONIC) >= deadline_usec)
                        break;
        }
        r = i == n ? fold_done(s, before) : fold_progress(s, before, a[i - 1].process_id);
        if (r < 0)
                goto fail;
        *ret_done = i == n;
        if (i == n) {
                store_pending_forget_fold(s);
                return 0;
        }
        memmove(a, a + i, (n - i) * sizeof(*a));
        s->n_fold_left = n - i;
        return 0;
fail:
        /* The caller rolls back: the rows are as they were, not as the list says. */
        store_pending_forget_fold(s);
        return r;
}

/* Adds every pending tick to its raw bucket, one upsert per process and bucket, and deletes
 * them; in the caller's transaction: a slice of all of them, without a deadline. */
int store_pending_fold(Store *s) {
        bool done;

        store_pending_forget_fold(s);
        return store_pending_fold_slice(s, UINT64_MAX, UINT64_MAX, &done);
}

bool store_folding(Store *s) {
        return s->fold_due;
}

int store_pending_fold_step(Store *s, uint64_t before_usec, uint64_t budget_usec, bool *ret_done) {
        bool done = true;
        int r;

        /* Also without a tick since: the last ones written may be of a bucket that is over. */
        if (s->pending && (s->pending_bucket == 0 || s->pending_bucket < store_fold_floor(before_usec)))
                s->fold_due = true;
        if (!s->fold_due) {
                *ret_done = true;
                return 0;
        }
        r = sql_exec(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        r = store_pending_fold_slice(s, before_usec, budget_usec, &done);
        if (r >= 0)
                r = sql_exec(s->db, "COMMIT");
        if (r < 0) {
                store_rollback(s);
                store_pending_forget_fold(s);
                return r;
        }
        s->fold_due = !done;
        *ret_done = done;
        return 0;
}

int store_pending_settle(Store *s) {
        int r;

        if (!s->pending)
                return 0;
        r = sql_exec(s->db, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        r = store_pending_fold(s);
        if (r >= 0)
                r = sql_exec(s->db, "COMMIT");
        if (r < 0) {
                store_rollback(s);
                return r;
        }
        s->pending = false;
        s->fold_due = false;
        return 0;
}

int store_pending_add(Store *s, uint64_t now_usec) {
        int r;

        /* A tick older than the ticks a fold has taken part of (the clock went back) counts in
         * the first bucket after them: in its own, the fold's progress would hide part of it. */
        now_usec = MAX(now_usec, s->fold_marked_before);
        /* A tick of a minute a slice's list covers: read the rows again. */
        if (now_usec < (uint64_t) s->fold_left_before)
                store_pending_forget_fold(s);
        r = insert_pending(s, now_usec);
        s->packed_size = 0;
        return r;
}
