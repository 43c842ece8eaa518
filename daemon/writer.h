/* SPDX-License-Identifier: MIT */
#pragma once

/* The one thread that writes the database. The event loop never calls SQLite: each tick it
 * hands the writer a copy of the tick's samples (writer_submit()) and goes on; the writer opens
 * the store (and reopens it after a failure), writes the ticks in order, and runs the
 * maintenance steps (roll-up, retention, the size cap)
 * between ticks, one short transaction at a time, so that a tick waits for at most one step.
 *
 * Bounded: at most `max_queue` ticks wait. When the writer is behind by that many, each new
 * tick is merged into the last one waiting (tick-batch.h): its counts are kept, its time is the
 * newer tick's, and the merge is counted (writer_stats() .merged_ticks, the drop kind
 * tick_merged). A tick the database refuses because it is locked (-EBUSY) waits and is tried
 * again; any other failure (a full disk) loses the tick, counted as unsaved samples, as
 * before. */

#include <stdbool.h>
#include <stdint.h>

#include "checkpoint.h"
#include "counters.h"
#include "sites.h"
#include "store.h"

#define WRITER_DEFAULT_QUEUE 8U

typedef struct WriterConfig {
        const char *db_path, *boot_id;
        StoreRetention retention;
        size_t max_cmdline;          /* store_set_max_cmdline() */
        unsigned max_queue;          /* ticks waiting; 0: WRITER_DEFAULT_QUEUE */
        Checkpointer *checkpointer;  /* borrowed; the store's commits ask it for checkpoints */
        int proc_fd;                 /* borrowed: processes that ended while no daemon ran */
} WriterConfig;

typedef struct Writer Writer;

/* Opens the database on the caller's thread (a corrupt one is moved aside, store-recover.h),
 * then starts the thread. -EPROTO (a newer database) and -ELOOP (a symbolic link) are returned
 * after logging them; any other failure to open leaves the writer without a database, retrying
 * every maintenance interval, while ticks count as unsaved. */
int writer_new(const WriterConfig *config, Writer **ret);
/* Writes everything still waiting, closes the database, stops the thread. */
Writer *writer_free(Writer *w);

/* A tick for the writer: copied (the samples need live only for the call). Returns the tick's
 * sequence number (> 0), or -ENOMEM (the tick's samples are counted unsaved). */
int64_t writer_submit(Writer *w, uint64_t now_usec, const ProcessSample *samples, size_t n, const SiteCount *fills,
                      size_t n_fills);
/* The sequence number of the newest tick submitted (0: none yet). */
uint64_t writer_seq(Writer *w);
/* Waits until every tick up to seq is committed (or given up as unsaved), so that a query
 * reading the database from now on sees them: the queries read the ticks still pending in
 * sample_pending themselves, none waits for a fold. Any thread but the event loop. -ETIME at deadline_usec (CLOCK_MONOTONIC), -ECANCELED when
 * *cancelled turns true (looked at every 50 ms) or the writer stops. */
int writer_sync(Writer *w, uint64_t seq, uint64_t deadline_usec, const bool *cancelled);

typedef struct WriterStats {
        bool available;           /* a database is open */
        bool failing;             /* the last tick failed to be written */
        uint64_t database_bytes;  /* database and WAL, as of the last write */
        uint64_t unsaved_samples; /* process-ticks counted but not stored */
        uint64_t merged_ticks;    /* ticks merged into the one before (the writer was behind) */
        unsigned queued;          /* ticks waiting now */
        /* Where the writer's time went since it started, microseconds of wall time: writing
         * ticks (with their symbols), and maintenance steps (roll-up, retention, the size cap,
         * reopening a database that failed), each with the forced checkpoint after it, if any. The longest single tick's write or step: the most
         * a tick waited behind another piece of the writer's work. */
        uint64_t write_usec, maintain_usec, longest_step_usec;
} WriterStats;

/* Any thread. */
WriterStats writer_stats(Writer *w);

/* For tests: while the file at path exists, the writer writes nothing (it looks every 20 ms);
 * NULL: never. TRAPSTATD_TEST_HOLD_WRITER in the environment names it, in builds with the meson
 * option test_hooks (manager.c). */
void writer_set_hold_file(Writer *w, const char *path);
