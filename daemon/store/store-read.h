/* SPDX-License-Identifier: MIT */
#pragma once

/* The read layer (store-read.c): what every query family (store-top.c, store-history.c,
 * store-sites.c, store-processes.c) reads with, so that no family calls another: the snapshot of
 * a call (store_snapshot_begin() in store.h), the statements prepared for reads (store.c prepares
 * them with its own when it opens), reading a process and counts, and one kind's rows over the
 * tiers. Internal to the store.
 *
 * The queries that plan their reads over the tiers read the tiers' marks and the rows in one
 * snapshot, so that a maintenance step in between cannot move a stretch into another tier than
 * the one planned for it (read twice, or not). Those that read the samples read the ticks still
 * in sample_pending too (Top, History, UnitHistory), so they never wait for a fold; on the
 * writer's own connection (the unit tests') they fold them first all the same. */

#include "store-util.h"

/* The read statements every connection has (s->find_process, s->find_newest_process). */
int store_read_prepare(Store *s);

/* A copy of column i's text; NULL for NULL, or out of memory. */
char *column_strdup(sqlite3_stmt *st, int i);
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
 * with; read_traps() and read_fault_time() are two uses of it. */
int read_kind(Store *s, const StoreKind *kind, const TierSegment *seg, size_t n_seg, const char *group,
              const char *where, const char *text, int64_t value, ReadKindRow fn, void *userdata);

/* What read_traps() reads of the kinds that are part of a Traps. */
typedef struct TrapsQuery {
        const char *group; /* SQL over process_id and time_usec: what the counts are summed by */
        const char *where; /* the rows; its ?1 is bound to text, or to value when text is NULL */
        const char *text;
        int64_t value;
        /* The Traps a group's counts are added to; NULL: they are skipped. */
        Traps *(*find)(int64_t group, void *userdata);
        void *userdata;
} TrapsQuery;

/* Sums the rows of every kind that is part of a Traps over the segments, per group and key, and
 * adds them to the Traps of their group. */
int read_traps(Store *s, const TierSegment *seg, size_t n_seg, const TrapsQuery *q);

/* The same for the fault time kind: what read_fault_time() reads, as TrapsQuery. */
typedef struct FaultTimeQuery {
        const char *group;
        const char *where;
        const char *text;
        int64_t value;
        FaultTime *(*find)(int64_t group, void *userdata);
        void *userdata;
} FaultTimeQuery;

/* Merges the fault time rows over the segments per group (sums, maximum, histogram) into the
 * FaultTime of their group. */
int read_fault_time(Store *s, const TierSegment *seg, size_t n_seg, const FaultTimeQuery *q);
