/* SPDX-License-Identifier: MIT */
#pragma once

/* The collector's BPF object and its event sources, set up in the order of libbpf-tools: open
 * the skeleton and size its maps, choose the sources (what the kernel has, what
 * --disable-source leaves, a fallback only where it is needed), load, map the slot arrays in
 * place, attach, watch the ring buffer. Also the few writes user space makes to the maps (a
 * slot freed, a process forgotten) and the drop counters. Reading the counts is
 * collector-read.c's job. Internal to the daemon (daemon/collector*.c), not a public API.
 *
 * Failures are returned as negative errno, never logged: the caller decides what they mean. A
 * source that cannot be used is no failure: it is logged here, once, and kept with its reason
 * for GetStatus. libbpf's own messages go through common/log.c. */

#include <bpf/libbpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "collector-util.h"
#include "collector.h"
#include "kernel-caps.h"
#include "trapstat.h"

typedef struct CollectorBpfConfig {
        uint32_t n_slots;       /* counting slots, a power of two */
        uint32_t max_processes; /* capacity of the fallback and trap hashes */
        uint32_t event_buffer;  /* bytes of the ring buffer, as collector_event_buffer_valid() allows */
        uint32_t max_sites;     /* capacity of the site hash */
        uint32_t max_sites_per_process; /* of it, one process's share per epoch (tick) */
        uint32_t max_sites_per_user;    /* one unprivileged user's share per epoch */
        uint32_t site_reserve;          /* entries only root and group trapstat take, < max_sites */
        uint32_t fault_sample;  /* one in this many faults records its site, a power of two; 0: none */
        BpfObject object;       /* the object to run; _BPF_OBJECT_MAX: the richest the kernel can */
} CollectorBpfConfig;

typedef struct CollectorBpf {
        /* One of the three objects (kernel-caps.h), always through trapstat_bpf's skeleton. */
        struct trapstat_bpf *skel;
        KernelCaps caps; /* the kernel's, probed when opened */
        BpfObject object;
        int n_cpus;                             /* possible CPUs: the number of per-CPU values */
        uint32_t n_slots;
        uint32_t fault_sample;                  /* 0: fault sites off */
        struct bpf_program *progs[_SOURCE_MAX]; /* to load and attach; NULL when not used */
        struct bpf_link *links[_SOURCE_MAX];    /* attached programs; detached when destroyed */
        struct bpf_link **perf_links;           /* SOURCE_PERF_*: 2 * n_cpus, one per CPU each */
        /* The completions of faults, minor and major: both for SOURCE_FAULT_TIME, the major one for
         * SOURCE_MAJOR_CAUSE too. NULL when not used. */
        struct bpf_program *done_progs[2];
        struct bpf_link **done_links;           /* 2 * n_cpus, one per CPU each */
        struct bpf_link *iter_link;             /* SOURCE_TASK_ITERATOR; NULL: /proc/PID/stat instead */
        /* FEATURE_TASK_READS: task-reads.bpf.o and its iterator; NULL: the active processes'
         * /proc/PID/stat instead. */
        struct task_reads_bpf *reads;
        struct bpf_link *reads_link;
        struct ring_buffer *ringbuf;
        struct ts_owner *owner_map;             /* slot_owner, slot_ident and slot_counters, mmap'd */
        struct ts_ident *ident_map;
        struct ts_counters *counters_map;
        struct ts_fault_times *times_map;       /* slot_times, mmap'd with fault time on; else NULL */
        uint64_t *dirty_map;                    /* slot_dirty, mmap'd: collector_bpf_dirty_words() words */
        struct ts_hash_log *hash_log;           /* hash_log, mmap'd: n_cpus * 2 logs */
        size_t owner_map_size, ident_map_size, counters_map_size, times_map_size, dirty_map_size, hash_log_size;
        CollectorSource sources[_SOURCE_MAX];
        char reasons[_SOURCE_MAX][KERNEL_CAPS_REASON_MAX];
        /* SOURCE_DELAY_ACCOUNTING chosen and in the kernel: whether the kernel keeps it is then
         * the collector's to say, each tick. */
        bool delayacct_usable;
        CollectorSource features[_FEATURE_MAX];
        char feature_reasons[_FEATURE_MAX][KERNEL_CAPS_REASON_MAX];
} CollectorBpf;

/* Probes the kernel, opens the richest BPF object it can run and sizes its maps; routes
 * libbpf's messages to common/log.c. -ENOEXEC when the kernel can run none of them
 * (kernel_caps_object()). */
int collector_bpf_open(const CollectorBpfConfig *config, CollectorBpf **ret);
/* Leaves out of the load what the kernel lacks, what sources[] does not choose, and the perf
 * fallbacks where the tracepoints they replace are used. Each source left out gets its reason. */
void collector_bpf_choose_sources(CollectorBpf *b, const SourceChoice sources[static _SOURCE_MAX]);
/* The object, the sources chosen (before they are loaded) and the features, as a table. */
void collector_bpf_dump(const CollectorBpf *b, FILE *f);
/* Loads the chosen programs and maps the slot arrays. */
int collector_bpf_load(CollectorBpf *b);
/* Attaches every loaded program; one that cannot attach becomes an inactive source. -ENOTSUP
 * when no page fault source is active. */
int collector_bpf_attach(CollectorBpf *b);
/* Source i's state: error 0: active; otherwise inactive because of why, followed by
 * strerror(error) unless error is -ECANCELED (a choice or a state, not a failure). */
void collector_bpf_set_source(CollectorBpf *b, int i, int error, const char *why);
/* Reads at most max records of a task iterator's fd into buf, into *ret_got. Returns 1 at the
 * iterator's end, 0 when max were read, or negative errno. */
int collector_bpf_read_records(int fd, struct ts_task_record *buf, size_t max, size_t *ret_got);
/* The pid namespace of the process pidfd refers to (read_pidns of task-reads.bpf.o):
 * -EOPNOTSUPP where that object is not loaded, -ESRCH when the process is gone. */
int collector_bpf_read_pidns(CollectorBpf *b, int pidfd, struct ts_pidns_record *ret);
/* The kernel's fault accounting, name and user of n <= TS_TASK_READS processes, through
 * task-reads.bpf.o (only where b->reads_link): a record in ret for each still alive under its
 * key, in the keys' order. Returns how many, or negative errno. */
int collector_bpf_read_tasks(CollectorBpf *b, const struct ts_proc_key *keys, size_t n,
                             struct ts_task_record ret[static TS_TASK_READS]);
/* Calls fn for each lifecycle record that ring_buffer__consume() on b->ringbuf takes out. */
int collector_bpf_watch_events(CollectorBpf *b, ring_buffer_sample_fn fn, void *userdata);
CollectorBpf *collector_bpf_free(CollectorBpf *b);

/* Words of slot_dirty: a bit for each CPU's copy of each slot. */
static inline uint32_t collector_bpf_dirty_words(const CollectorBpf *b) {
        return (uint32_t) (((uint64_t) b->n_slots * (uint64_t) b->n_cpus + 63) / 64);
}

/* CPU cpu's counters of a slot, in place: BPF adds to them while the slot is owned, so they are
 * read with counters_load(). */
static inline struct ts_counters *collector_bpf_slot_counters(const CollectorBpf *b, int cpu, uint32_t slot) {
        return &b->counters_map[(size_t) cpu * b->n_slots + slot];
}

/* The same slot's fault time; NULL without fault time. */
static inline struct ts_fault_times *collector_bpf_slot_times(const CollectorBpf *b, int cpu, uint32_t slot) {
        return b->times_map ? &b->times_map[(size_t) cpu * b->n_slots + slot] : NULL;
}

/* Frees a slot whose counters are drained, so that the next owner starts from zero. */
void collector_bpf_release_slot(CollectorBpf *b, uint32_t slot);
/* Takes a live process's slot from it, as its exit would (sched_process_exit()), for another
 * process with the same slot: it counts in the fallback hash from its next fault on, in an entry
 * made for it here (so that its exit is still told, and the task iterator still sees it). Its
 * slot is marked exited: the next drain reads it a last time and frees it, and the next process
 * of the slot to fault claims it. Returns 1 when the slot was taken, 0 when the process no longer
 * owned it (it exited meanwhile) or the fallback hash is full, negative errno on failure. */
int collector_bpf_take_slot(CollectorBpf *b, uint32_t slot, uint32_t tgid, uint64_t start_time);
/* Removes a process's entries from the fallback hash and the trap hash, from those of the two it
 * has one in: it counts no more. Each delete is a bpf() call, which a storm's thousands of exits a
 * second need not make for processes that counted only in their slots. */
void collector_bpf_forget(CollectorBpf *b, uint32_t tgid, uint64_t start_time, bool fallback, bool traps);

/* One in this many user page faults records its site; 0: none. */
static inline uint32_t collector_bpf_fault_sample(const CollectorBpf *b) {
        return b->fault_sample;
}

/* Fills ret with every kind of drop, also those at zero; returns how many. */
size_t collector_bpf_drops(CollectorBpf *b, CollectorDrop ret[static COLLECTOR_DROP_KINDS]);
/* The kind of BPF's drops numbered kind (enum ts_drop), kind < COLLECTOR_BPF_DROP_KINDS. */
CollectorDropKind collector_bpf_drop_kind(unsigned kind);
/* BPF's drops by user: every user whose processes lost something (at most TS_MAX_DROP_USERS), or
 * only uid when uid >= 0, in the order of uids. *ret is freed by the caller. */
int collector_bpf_user_drops(CollectorBpf *b, int64_t uid, CollectorUserDrops **ret, size_t *ret_n);
