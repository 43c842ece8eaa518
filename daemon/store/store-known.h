/* SPDX-License-Identifier: MIT */
#pragma once

/* The writer's cache of process rows (store-known.c). Internal to the store. */

#include "store-util.h"

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
        Container *container;       /* the last one written; NULL: none */
        bool ns_written;            /* the row has its namespaces */
        uint64_t last_seen_written; /* last_seen_usec as in the row */
        uint64_t last_seen;         /* the newest the caller passed: written when it leaves */
        uint64_t flushed_usec;      /* the last flush it was in */
} KnownProcess;

/* The process's row id, the row created or updated as needed (its command line cut to
 * store_set_max_cmdline()); *ret_known: its cache entry. Part of the caller's transaction. 1 when
 * it wrote the row with its text (a new row, or a new uid, command line or unit) or as exited, 0
 * when not (the row was as cached, or only its comm or last seen changed). */
int store_known_row(Store *s, const ProcessInfo *p, int64_t *ret_id, KnownProcess **ret_known);
/* Forgets one entry: its row is final (exited), or gone. */
void store_known_forget(Store *s, KnownProcess *k);
/* Forgets the processes that had no sample for a minute, writing their last seen first. Part of
 * the caller's transaction. */
int store_known_sweep(Store *s, uint64_t now_usec);
/* Forgets every entry, writing nothing: after a transaction that may have written them failed. */
void store_known_clear(Store *s);
/* Writes the exact last seen of the processes in the cache and empties it: before their rows may
 * change or go behind its back, and at close. */
void store_known_reset(Store *s);
