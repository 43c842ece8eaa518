/* SPDX-License-Identifier: MIT */
#pragma once

/* The kinds of counts the store keeps, one descriptor each, and the SQL made from them.
 * Internal to the store (daemon/store*.c); pure: builds text, touches no database. Unit-tested
 * on its own and against the migrated schema.
 *
 * A kind is a table per tier (schema/sql/) whose rows are counts of one process in one
 * interval: the key (process_id, time_usec, then the kind's own key columns) and value columns,
 * each of them a count. Rolling a tier up into a coarser one sums the values of the rows that
 * share a key once time_usec is cut down to the coarser interval; retention and the size cap
 * delete rows by age; a query reads each instant from one tier (tier-util.h). All of that is
 * written once, here, from the descriptors: a new kind is a descriptor in store_kinds[] plus
 * the migration that creates its tables. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tier-util.h"
#include "traps.h"

/* Index into store_kinds[]. The sample kind is what Top sorts and what the size cap measures
 * its batches on: the trap and signal kinds' rows always have a sample row beside them (same
 * process and interval), and the site kind's in practice (a site comes with a trap or a fault),
 * though the store does not rely on that: a first roll-up starts at the oldest row of any kind,
 * and a process is deleted only when it has rows of no kind. The site kind's keys name entries
 * of the dictionaries `site` and `object` (schema/sql/0006-sites.sql). */
enum {
        STORE_KIND_SAMPLE,
        STORE_KIND_TRAP,
        STORE_KIND_SIGNAL,
        STORE_KIND_SITE,
        STORE_KIND_FAULT_TIME,
        STORE_KIND_STALL,
        _STORE_KIND_MAX
};

#define STORE_KIND_MAX_KEYS 6
#define STORE_KIND_MAX_VALUES 32
/* Longest column name, with its NUL. */
#define STORE_COLUMN_MAX 32

typedef struct StoreKind {
        const char *name;                                /* "sample", "trap", "signal", "site" */
        const char *tables[_TIER_MAX];                   /* by TIER_RAW, TIER_MINUTE, TIER_HOUR */
        const char *keys[STORE_KIND_MAX_KEYS + 1];       /* beyond (process_id, time_usec); NULL-ended */
        /* Its values start with one column f_<name> per Faults member, in fault_fields order;
         * then come values[]. */
        bool fault_values;
        const char *values[STORE_KIND_MAX_VALUES + 1];   /* NULL-ended */
        /* Bit i: values[i] is a maximum, not a count: rows of one key merge by MAX, not by SUM. */
        uint32_t max_values;
        /* For the kinds that are part of a Traps (NULL for the others): the next row of t with
         * a non-zero count at or after *cursor, its keys and values (false: no more), and its
         * inverse, that adds one row to t (keys it has no place for are ignored). */
        bool (*traps_next)(const Traps *t, size_t *cursor, int64_t *keys, uint64_t *values);
        void (*traps_add)(Traps *t, const int64_t *keys, const uint64_t *values);
} StoreKind;

extern const StoreKind store_kinds[_STORE_KIND_MAX];

size_t store_kind_n_keys(const StoreKind *k);
size_t store_kind_n_values(const StoreKind *k);
/* The name of value column i (< store_kind_n_values()), in buf or static storage. */
const char *store_kind_value(const StoreKind *k, size_t i, char buf[static STORE_COLUMN_MAX]);

/* ---- SQL text ---- */

/* Closes a stream of open_memstream(buf, ...), which the store builds its SQL with, and returns
 * *buf: NULL when the stream failed (*buf is freed then). */
char *memstream_done(FILE *f, char **buf);

/* Column lists, malloc'd; NULL when out of memory. fmt is printed once per column with its
 * name as %1$s; sep comes between two of them. "" for a kind without such columns. */
char *store_kind_join_keys(const StoreKind *k, const char *fmt, const char *sep);
char *store_kind_join_values(const StoreKind *k, const char *fmt, const char *sep);
/* The same with sum_fmt for a count and max_fmt for a maximum (StoreKind.max_values). */
char *store_kind_join_merges(const StoreKind *k, const char *sum_fmt, const char *max_fmt, const char *sep);

/* All columns: "process_id, time_usec, <keys>, <values>". */
char *store_kind_columns(const StoreKind *k);

/* "SELECT <all columns> FROM <tier table> WHERE (where) AND <segment> UNION ALL ..." over the
 * segments: each instant of the planned range read from exactly one tier. With no segment a
 * query of the same columns that returns no rows. */
char *store_kind_union(const StoreKind *k, const TierSegment *seg, size_t n, const char *where);

/* "SELECT process_id, <values> FROM <tier table> WHERE process_id IN (SELECT id FROM process
 * WHERE last_seen_usec >= <segment start> AND (processes)) AND <segment> GROUP BY process_id
 * UNION ALL ..." over the segments: values (aggregates of the kind's columns, with their AS
 * names) per process and segment, each process's rows of a segment read as one range of the
 * primary key. Exact because a process's row at time t has last_seen_usec >= t (store.h).
 * processes: a condition on the columns of table process. With no segment a query of the same
 * columns that returns no rows. */
char *store_kind_union_per_process(const StoreKind *k, const TierSegment *seg, size_t n, const char *values,
                                   const char *processes);

/* "SELECT <group> AS g, <keys>, SUM(<value>)... FROM (<from>) GROUP BY g, <keys>": the values
 * summed (a maximum: its MAX) per group (an SQL expression over the columns of from) and key. */
char *store_kind_sum(const StoreKind *k, const char *group, const char *from);

/* Adds a count to the tier's row of (?1 process_id, ?2 time_usec, keys from ?3 on, then the
 * values), creating it if needed. */
char *store_kind_upsert(const StoreKind *k, int tier);

/* Sums the rows of the next finer tier in [from, to) into tier (> TIER_RAW). */
char *store_kind_roll_up(const StoreKind *k, int tier, uint64_t from, uint64_t to);

/* Deletes at most batch of the tier's rows older than cutoff. */
char *store_kind_expire(const StoreKind *k, int tier, uint64_t cutoff, size_t batch);

/* Coarsening in place (the size cap, store-share.c): a tier's rows of some processes and stretch
 * replaced by their sums per coarser interval, in the same table. The temporary table that holds
 * the sums meanwhile, temp.coarse_<name>, with the kind's columns: */
char *store_kind_coarse_table(const StoreKind *k);
/* Sums the rows of tier that match where (a condition on the table's columns) per key and
 * interval of width (its start as time_usec) into temp.coarse_<name>. */
char *store_kind_coarsen(const StoreKind *k, int tier, uint64_t width, const char *where);
/* Puts the sums of temp.coarse_<name> into tier's table (their rows deleted before). */
char *store_kind_coarse_put_back(const StoreKind *k, int tier);
