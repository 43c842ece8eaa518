/* SPDX-License-Identifier: MIT */
#pragma once

/* The collector's readers: what BPF counted (the counting slots, the fallback and trap hashes),
 * the kernel's own accounting from the task iterator, and the lifecycle events of the ring
 * buffer, each turned into deltas and identities of the process table. A slot changes hands
 * here: claimed by the process found owning it, freed once its exited owner is drained.
 * Internal to the daemon (daemon/collector*.c), not a public API. Returns negative errno,
 * never logs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector-bpf.h"
#include "collector-procs.h"
#include "collector-util.h"
#include "symbol-worker.h"
#include "trapstat.h"

typedef struct CollectorReader {
        CollectorBpf *bpf;                /* borrowed */
        ProcTable *procs;                 /* borrowed */
        uint32_t *owners;                 /* this tick's copy of the slot owners */
        uint64_t fault_tick;              /* the tick being drained (fault_tick in the BPF object) */
        struct ts_proc_key *batch_keys;   /* hash entries are read a batch at a time */
        void *batch_values;               /* a batch of the largest map value */
        struct ts_task_record *records;   /* read from the task iterator every tick */
        size_t records_capacity;
        LifecycleEvent *events;           /* read from the ring buffer since the last tick */
        size_t n_events, events_capacity;
        /* The site reader (collector-sites.h). */
        struct ts_site_key *site_keys;    /* a batch of the site hash */
        struct ts_site *site_values;
        struct ts_site_key *site_drained; /* the batch's entries of the epoch that is over */
        struct SitePending *site_pending; /* this tick's sites waiting for their process's maps */
        size_t n_site_pending, site_pending_capacity;
        struct ts_site_quota_key *share_keys; /* share counts of the epoch that is over */
        size_t n_share_keys, share_keys_capacity;
        unsigned maps_lines_per_tick;     /* to name sites' files and failed VMA lookups (--site-maps-lines) */
        bool site_flipped; /* the epoch flipped; site_old_epoch is still to be drained */
        uint32_t site_old_epoch;
        void *file_paths;                 /* tsearch() tree: (dev, inode) -> path, with its version */
        size_t n_file_paths;
        void *symbols;                    /* tsearch() tree: (file version, offset) -> symbol */
        size_t n_symbols;
        SymbolWorker *symbol_worker;
        struct SymbolAsk *asks;           /* symbols to ask for at the end of this drain */
        size_t n_asks, asks_capacity;
        SiteCount *fills;                 /* symbols learned at this drain, for rows already stored */
        size_t n_fills, fills_capacity;
        /* Why the symbol worker could not open a process's mapping (map_files) when the kernel
         * refused it (-EPERM, -EACCES), the first time; 0 while it has not. */
        int mapping_refused;
} CollectorReader;

int reader_init(CollectorReader *r, CollectorBpf *bpf, ProcTable *procs, const SymbolWorkerConfig *symbols);
void reader_done(CollectorReader *r);

/* ring_buffer_sample_fn for collector_bpf_watch_events(), userdata the reader: keeps the event
 * for reader_apply_events(). */
int reader_take_event(void *userdata, void *data, size_t size);

/* The counting slots, the fallback hash, the trap hash: what each process counted since the
 * last tick. */
int reader_drain_maps(CollectorReader *r, uint64_t now);
/* The task iterator: the kernel's minor/major faults, name and user of every tracked process. */
int reader_read_tasks(CollectorReader *r);
/* Applies the events taken since the last tick, in the order they happened: a new name, command
 * line and unit (every exec), an exit (the process is retired and forgotten by BPF; only those of
 * the first n_before_drain events, read before the maps were drained: a later one stays for the
 * next tick). After the maps were drained, so that every process they name that was counted is
 * known by then. */
int reader_apply_events(CollectorReader *r, size_t n_before_drain);

/* Frees a slot whose counters are drained, in BPF and in the process table. */
void reader_free_slot(CollectorReader *r, uint32_t slot);
