/* SPDX-License-Identifier: MIT */
#pragma once

/* A tick on its way to the writer thread (writer.h). The collector's samples live only until its
 * next drain, so the event loop hands the writer a copy of them, with everything they point to.
 * When the writer is behind, a newer tick is merged into the last one waiting instead of queued:
 * per process the deltas and traps add up, the sites are kept side by side, the process's
 * name, command line, unit and exit are the newer tick's; nothing counted is lost, only the
 * older tick's time (the batch carries the newest tick's). Pure: unit-tested. */

#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "sites.h"
#include "traps.h"

typedef struct TickEntry {
        ProcessInfo process;
        Faults delta;
        FaultTime fault_time;
        Stall stall;
        Traps *traps; /* NULL: none */
        SiteCount *sites;
        size_t n_sites;
} TickEntry;

typedef struct TickBatch {
        struct TickBatch *next; /* the writer's queue */
        uint64_t seq;           /* the newest tick in it (writer_sync()) */
        uint64_t now_usec;      /* the newest tick's time */
        uint64_t merged;        /* ticks merged into it after its first */
        TickEntry *entries;     /* each process once, in the order they came */
        size_t n_entries, entries_capacity;
        /* entries[] by (pid, start_time): where a merge finds a process, and the order the batch is
         * written in. A merge sorts its new processes and merges their indices in; it never
         * re-sorts the entries, which in a storm are tens of thousands while the writer is behind. */
        uint32_t *order;
        size_t order_capacity;
        SiteCount *fills; /* symbols found for sites stored before (store_sites_fill()) */
        size_t n_fills;
        ProcessSample *samples; /* tick_batch_samples() */
        /* The writer's: samples already committed, a prefix of samples[] (the batch is written in
         * several transactions, and one refused as locked resumes here); fills written. A batch
         * with part of it written is never merged into, which would reorder its entries. */
        size_t written;
        bool fills_written;
} TickBatch;

/* A batch holding a copy of one tick. -ENOMEM; -E2BIG beyond UINT32_MAX processes. */
int tick_batch_new(uint64_t seq, uint64_t now_usec, const ProcessSample *samples, size_t n, const SiteCount *fills,
                   size_t n_fills, TickBatch **ret);
/* Merges a newer tick into b (above). -ENOMEM or -E2BIG, after which b holds part of the tick. */
int tick_batch_merge(TickBatch *b, uint64_t seq, uint64_t now_usec, const ProcessSample *samples, size_t n,
                     const SiteCount *fills, size_t n_fills);
/* The batch as store_flush() takes it, by (pid, start_time); valid until the batch is merged into
 * or freed. */
int tick_batch_samples(TickBatch *b, const ProcessSample **ret, size_t *ret_n);
TickBatch *tick_batch_free(TickBatch *b);
