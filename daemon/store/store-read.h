/* SPDX-License-Identifier: MIT */
#pragma once

/* The read layer (store-read.c): what every query family (store-top.c, store-history.c,
 * store-sites.c, store-processes.c) reads with, so that no family calls another: the statements
 * prepared for reads (store.c prepares them with its own when it opens), reading a process and
 * counts, and one kind's rows over the tiers. Internal to the store.
 *
 * A query reads in the one snapshot its caller began (store_snapshot_begin() in store.h: the
 * query pool's, one per call; in the unit tests one per query); it begins none itself and
 * writes nothing. Its statements read the tiers' marks and the rows in that snapshot, so that a
 * maintenance step in between cannot move a stretch into another tier than the one planned for
 * it (read twice, or not). Those that read the samples read the ticks still in sample_pending
 * too (Top, History, UnitHistory): on any connection, the writer's own included, what is pending
 * is read as it is and never folded, so a query never waits for, or does, a write. The counts
 * are exact either way: a fold moves a tick from sample_pending into its raw bucket in one
 * transaction, so a query's snapshot has each tick in exactly one of the two. */

#include "store-util.h"

/* The read statements every connection has (s->find_process, s->find_newest_process). */
int store_read_prepare(Store *s);
/* Whether a snapshot (or a write) is open on the connection: what a query of more than one
 * statement asserts it runs in. */
bool store_in_snapshot(Store *s);

/* A copy of column i's text; NULL for NULL, or out of memory. */
char *column_strdup(sqlite3_stmt *st, int i);
/* A container's columns (runtime, id, name, pod, user) starting at column `first`: *ret malloc'd,
 * NULL when the row has none. */
int read_container(sqlite3_stmt *st, int first, Container **ret);
/* Reads PROCESS_COLUMNS starting at column `first`. */
int read_process(sqlite3_stmt *st, int first, ProcessInfo *ret);
/* Reads a Faults from n_fault_fields columns starting at `first`. */
void read_faults(sqlite3_stmt *st, int first, Faults *ret);
/* Prepares fmt with its %s replaced by the union of the kind's tables over the segments. */
int prepare_over(Store *s, sqlite3_stmt **ret, const char *fmt, int kind, const TierSegment *seg, size_t n,
                 const char *where);

/* One sum of read_kind(): the group, the kind's keys and its values, in store_kinds[] order. */
typedef void (*ReadKindRow)(const StoreKind *kind, int64_t group, const int64_t *keys, const uint64_t *values,
                            void *userdata);

/* Sums the rows of the kind over the segments per group (SQL over process_id and time_usec) and
 * key, counts summed and maxima merged (store_kind_sum()), and hands each sum to fn. The rows:
 * where, its ?1 bound to text, or to value when text is NULL. What every family reads a kind
 * with; read_traps(), read_fault_time() and read_stall() are uses of it. */
int read_kind(Store *s, const StoreKind *kind, const TierSegment *seg, size_t n_seg, const char *group,
              const char *where, const char *text, int64_t value, ReadKindRow fn, void *userdata);

/* What read_traps(), read_fault_time() and read_stall() read: the rows, what their counts are
 * summed by, and where each group's sums go. */
typedef struct CountsQuery {
        const char *group; /* SQL over process_id and time_usec: what the counts are summed by */
        const char *where; /* the rows; its ?1 is bound to text, or to value when text is NULL */
        const char *text;
        int64_t value;
        /* What a group's counts of kind are added to: a Traps for the kinds that are part of one
         * (kind->traps_add), a FaultTime for STORE_KIND_FAULT_TIME, a Stall for STORE_KIND_STALL;
         * NULL: they are skipped. */
        void *(*find)(const StoreKind *kind, int64_t group, void *userdata);
        void *userdata;
} CountsQuery;

/* Sums the rows of every kind that is part of a Traps over the segments, per group and key, and
 * adds them to the Traps of their group. */
int read_traps(Store *s, const TierSegment *seg, size_t n_seg, const CountsQuery *q);

/* Merges the fault time rows over the segments per group (sums, maximum, histogram) into the
 * FaultTime of their group. */
int read_fault_time(Store *s, const TierSegment *seg, size_t n_seg, const CountsQuery *q);

/* Sums the delay accounting rows over the segments per group into the Stall of their group. */
int read_stall(Store *s, const TierSegment *seg, size_t n_seg, const CountsQuery *q);
