/* SPDX-License-Identifier: MIT */
#pragma once

/* The counts' reader: what BPF counted (the counting slots, the fallback and trap hashes), the
 * kernel's own accounting from the task iterator, and the lifecycle events of the ring buffer,
 * each turned into deltas and identities of the process table. (Where processes counted, the
 * site hash, is the site reader's: collector-sites.h.) A slot changes hands
 * here: claimed by the process found owning it, freed once its exited owner is drained.
 * Internal to the daemon (daemon/collector*.c), not a public API. Returns negative errno,
 * never logs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector-bpf.h"
#include "collector-procs.h"
#include "collector-util.h"
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
} CollectorReader;

int reader_init(CollectorReader *r, CollectorBpf *bpf, ProcTable *procs);
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
