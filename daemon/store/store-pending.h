/* SPDX-License-Identifier: MIT */
#pragma once

/* The pending ticks (store-pending.c): a tick's deltas as one row of sample_pending, folded
 * into the raw tier's buckets when a tick falls into a new minute. Internal to the store. */

#include "store-util.h"
#include "tier-util.h"

/* The ticks before this are folded, those after it pending: the start of t's minute. */
static inline uint64_t store_fold_floor(uint64_t t) {
        return tier_floor(TIER_MINUTE, t);
}

/* Appends a process's delta to the tick being packed (s->packed; store_flush() empties it). */
int store_pending_pack(Store *s, int64_t process_id, const Faults *delta, uint64_t traps, uint64_t time_ns,
                       uint64_t stall_ns);
/* Writes what was packed as one pending row and empties s->packed; in the caller's transaction. */
int store_pending_add(Store *s, uint64_t now_usec);
/* A process's deltas of one raw bucket that are still pending. */
typedef struct PendingSample {
        uint64_t bucket_usec;
        int64_t process_id;
        Faults delta;
        uint64_t traps;
        uint64_t time_ns;  /* all fault time */
        uint64_t stall_ns; /* all time waited on memory (stall_memory_ns()) */
} PendingSample;

/* Adds b's counts to a. */
void pending_sample_add(PendingSample *a, const PendingSample *b);
/* qsort() and bsearch() order of PendingSamples by process id. */
int pending_sample_by_process(const void *a, const void *b);

/* Every pending sample (only_ids not NULL: of the n_only processes it lists, sorted ascending,
 * only) that no fold has taken yet, summed per bucket and process, in (bucket, process) order:
 * *ret_n of them in *ret, to free(). A row that does not decode is skipped. */
int store_pending_read(Store *s, const int64_t *only_ids, size_t n_only, PendingSample **ret, size_t *ret_n);
/* The pending samples of buckets from since_bucket on that no fold has taken yet, summed per
 * process (bucket_usec: the newest of them), in process order: *ret_n of them in *ret, to free().
 * A row that does not decode is skipped. Top's: one element per process, not per
 * tick (a minute of ticks of 10000 processes that fault every 5 s is 120000 samples). */
int store_pending_sums(Store *s, uint64_t since_bucket, PendingSample **ret, size_t *ret_n);
/* Adds every pending row to its raw bucket, one upsert per process and bucket, and deletes them;
 * in the caller's transaction. A row that does not decode is dropped, alone. */
int store_pending_fold(Store *s);
/* store_pending_fold() in a transaction of its own, when s->pending says there may be rows: on
 * the writer's side only (store_open(), store_free(), a maintenance step that deletes samples).
 * The queries never fold: they read the pending rows (store_pending_read()). */
int store_pending_settle(Store *s);
/* Folds the pending ticks of the minutes before before_usec's, process by process (each one's
 * buckets, then its total), for budget_usec (UINT64_MAX: all; at least FOLD_CHECK_EVERY
 * processes); in the caller's transaction. Where it stops, table pending_fold says which
 * processes it took; once all are, their rows go. The queries see each count once either way: a
 * folded sample is in its raw row and total, one not yet folded still pending. *ret_done: none of
 * those ticks is left pending. A minute of 10000 processes takes the writer more than a second to
 * fold: in slices, a query waiting for a tick (writer_sync()) waits for one slice, not for that. */
int store_pending_fold_slice(Store *s, uint64_t before_usec, uint64_t budget_usec, bool *ret_done);
/* Forgets what the last slice left, as a transaction with a slice in it rolls back. */
void store_pending_forget_fold(Store *s);
/* One slice in a transaction of its own, when s->fold_due says ticks of an earlier minute may be
 * pending; clears it once none is. */
int store_pending_fold_step(Store *s, uint64_t before_usec, uint64_t budget_usec, bool *ret_done);
