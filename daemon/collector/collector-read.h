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
        uint32_t *owners_read;            /* the owner each slot was last read under */
        uint64_t fault_tick;              /* the tick being drained (fault_tick in the BPF object) */
        struct ts_proc_key *batch_keys;   /* hash entries are read a batch at a time */
        void *batch_values;               /* a batch of the largest map value */
        /* Per slot, a bit: BPF marked it changed before this tick's drain; before the last's. */
        uint64_t *dirty;
        /* The fallback hash's entries to read in this tick (drain_hash()). */
        struct ts_proc_key *hash_keys;
        size_t n_hash_keys, hash_keys_capacity;
        /* The drain under way: the next slot and hash entry to read; both hashes whole (a log
         * overflowed). */
        uint32_t drain_slot_next;
        size_t drain_hash_next;
        bool drain_hash_whole;
        /* The task iterator's sweep: open while one is under way; the records of a piece. */
        int sweep_fd;
        uint64_t sweep_generation;        /* of the current or last sweep (CollectorProc.swept) */
        uint64_t sweep_started_usec, sweep_last_usec;
        struct ts_task_record *records;
        size_t records_capacity;
        /* The records of reader_read_active(): TS_TASK_READS of them. */
        struct ts_task_record *active_records;
        /* Records read from the kernel in this tick's drain: slots, hash entries, task records
         * (GetStatus tickRecordsRead). */
        uint64_t tick_records;
        /* Slots taken from idle owners for processes that count in the fallback hash
         * (take_idle_slot(), collector-read.c): how long an owner is idle first (0: any owner), how many
         * processes may be tracked for it (the hash must have room for the owners it takes), how
         * many this tick and since the start. */
        uint64_t slot_idle_usec;
        size_t slot_take_max_tracked;
        unsigned slots_taken_tick;
        uint64_t slots_taken;
        LifecycleEvent *events;           /* read from the ring buffer since the last tick */
        size_t n_events, events_capacity;
        /* reader_apply_events() under way: the next event to apply, and how many of those before it
         * wait for the next tick. */
        size_t apply_next, apply_kept;
} CollectorReader;

/* slot_idle_usec: how long a slot's owner has not counted before the slot goes to a process that
 * counts in the fallback hash; 0: any owner, at once. */
int reader_init(CollectorReader *r, CollectorBpf *bpf, ProcTable *procs, uint64_t slot_idle_usec);
void reader_done(CollectorReader *r);

/* ring_buffer_sample_fn for collector_bpf_watch_events(), userdata the reader: keeps the event
 * for reader_apply_events(). */
int reader_take_event(void *userdata, void *data, size_t size);

/* The counting slots, the fallback hash, the trap hash: what each process counted since the
 * last tick; of the slots and the fallback hash only those counted into (slot_dirty, hash_log).
 * The begin takes what is to be read (the owners, the marks, the logs) and advances BPF's tick;
 * each step reads until deadline_usec (CLOCK_MONOTONIC; UINT64_MAX: none), a piece more at most,
 * and returns 1 once all is read, 0 while more is left. A slot or entry read a turn later reads
 * what was counted by then, as one read a moment later would: each process's counts are
 * monotonic, and exits wait for the tick's end (reader_apply_events()). */
int reader_drain_maps_begin(CollectorReader *r);
int reader_drain_maps_step(CollectorReader *r, uint64_t now, uint64_t deadline_usec);
/* A piece of the task iterator's sweep: the kernel's minor/major faults, name and user of
 * tracked processes, every one of them once in SWEEP_INTERVAL_USEC (30 s), a share each tick; a
 * sweep starts at most every 30 s. The processes active in a tick are read apart, at once
 * (proc_table_read_minmaj()): the sweep is for those that are not, a rename or a change of user
 * without a fault, faults the exception events do not see (get_user_pages(): MAP_POPULATE,
 * mlock), and the garbage collection. *ret_done: a sweep ended in this piece; every process it
 * saw has CollectorProc.swept equal to sweep_generation. */
int reader_sweep_tasks(CollectorReader *r, uint64_t now, bool *ret_done);
/* Minor/major faults, name and user of the next TS_TASK_READS of this tick's active processes from
 * the kernel (task-reads.bpf.o, where r->bpf->reads_link), as proc_table_read_minmaj() reads them
 * from /proc. *ret_done: every process touched by now has been read. */
int reader_read_active(CollectorReader *r, bool *ret_done);
/* Marks the processes whose exit event is in hand (CollectorProc.exiting), also those first seen
 * later in the tick (proc_table_expect_exit()): the event has their final minor/major faults,
 * name and user, and their maps are gone, so the tick does not read /proc for them. */
int reader_mark_exiting(CollectorReader *r);
/* Applies the events taken since the last tick, in the order they happened: a new name, command
 * line and unit (every exec), an exit (the process is retired and forgotten by BPF; only those of
 * the first n_before_drain events, read before the maps were drained: a later one stays for the
 * next tick; so does a later exec of a process the drain did not find yet). After the maps were
 * drained, so that every process they name that was counted is known by then. In steps until
 * deadline_usec (CLOCK_MONOTONIC; UINT64_MAX: none): 10000 exits at once took 7 ms. Events read
 * between two steps join the ones in hand, all read after the drain. 1 when every event was
 * applied, 0 when the deadline came first; or the first failure, once all were let go. */
int reader_apply_events(CollectorReader *r, size_t n_before_drain, uint64_t deadline_usec);

/* Frees a slot whose counters are drained, in BPF and in the process table. */
void reader_free_slot(CollectorReader *r, uint32_t slot);
