/* SPDX-License-Identifier: MIT */
#pragma once

/* The collector's process table: every tracked process incarnation by (pid, start time); who
 * it is (what BPF recorded, else /proc, else its parent); what it counted this tick, turned
 * into the tick's samples; which counting slot user space believes it owns; and its end,
 * retired at its exit or when the garbage collection finds it gone, freed after the tick that
 * reported it. It knows no BPF map: the readers (collector-read.c) hand it what they read.
 * Internal to the daemon (daemon/collector*.c), not a public API. Returns negative errno,
 * never logs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector-util.h"
#include "cgroup-util.h"
#include "counters.h"
#include "proc-index.h"
#include "proc-util.h"
#include "sites.h"
#include "trapstat.h"
#include "traps.h"

/* A file a process maps, named as its /proc/PID/maps named it while the process lived: the
 * kernel's d_path of the mapping, which follows a rename of the file or of a directory above it
 * (BPF's name of the file does not see the latter), and where it is mapped, through which the
 * symbol worker opens it (/proc/PID/map_files/START-END). */
typedef struct ProcFileName {
        uint32_t dev;          /* the kernel's encoding, as BPF has it */
        uint64_t ino;
        uint64_t start, end;   /* one mapping of it */
        char *path;            /* NULL: the process did not map it when its maps were read */
} ProcFileName;

/* Files named per process: at most this many, and these many bytes of names in all processes;
 * past either, a file is named as BPF named it. */
#define PROC_FILE_NAMES_MAX 64
#define PROC_FILE_NAMES_BYTES_MAX (4U * 1024 * 1024)

/* What user space knows about one tracked process incarnation. */
typedef struct CollectorProc {
        ProcessInfo info;
        int slot;                      /* the slot it counts in, or -1 */
        ProcCounters slot_seen;        /* slot counters already turned into deltas */
        ProcCounters *hash_seen;       /* the same for its fallback hash entry; NULL until it had one */
        /* Per CPU, the longest fault of the next tick the last read of its slot and of its hash
         * entry saw (counters_sum()); NULL until its first read. */
        uint64_t *slot_next_max, *hash_next_max;
        Traps *traps_seen;             /* the same for its trap hash entry; NULL until it trapped */
        MinMajSeen minmaj_seen;        /* the kernel's min_flt/maj_flt already reported */
        StallSeen stall_seen;          /* the kernel's delay accounting already reported */
        Stall stall_delta;             /* this tick's */
        uint64_t last_counted_usec;    /* for the garbage collection of vanished processes */
        uint64_t slot_read_tick;       /* the BPF fault_tick of the last read of its slot */
        uint64_t swept;                /* the task iterator's sweep that saw it last (reader_sweep_tasks()) */
        int stat_fd;                   /* its /proc/PID/stat, kept open when that is the min/maj source */
        Faults delta;                  /* this tick's */
        FaultTime *time_delta;         /* this tick's fault time; NULL until it had any */
        Traps *traps_delta;            /* this tick's traps, with has_traps_delta; NULL until it trapped */
        bool has_traps_delta;
        SiteCount *sites;              /* this tick's, strings owned */
        size_t n_sites, sites_capacity;
        /* The files of its sites, named from its /proc/PID/maps (proc_table_file_name()). */
        ProcFileName *file_names;
        size_t n_file_names, file_names_capacity, file_names_bytes;
        uint32_t file_names_uid;       /* whose share file_names_bytes are charged to */
        int maps_error;                /* why its /proc/PID/maps is not read (gone, not
                                        * permitted, -E2BIG: its names past the bounds): not
                                        * tried again until an exec; 0 while it is */
        bool touched;                  /* goes into this tick's samples */
        bool info_pending;             /* its command line and unit are still to be read from /proc */
        bool exiting;                  /* its exit event is read, not applied yet (reader_mark_exiting()) */
} CollectorProc;

typedef struct ProcTable {
        int proc_fd;                      /* the proc root (borrowed) */
        bool stall_counted;               /* the task records' delay accounting is counted (source delay_accounting) */
        long ticks_per_sec;               /* USER_HZ, the unit of /proc/PID/stat start time */
        uint64_t attached_boottime;       /* ns since boot when counting started */
        size_t n_stat_fds, max_stat_fds;  /* /proc/PID/stat fds kept open, and how many may be */
        uint64_t last_gc_usec;
        CgroupUnits *cgroups;             /* units by cgroup id, for processes /proc cannot tell of;
                                           * NULL without a unified hierarchy */

        ProcIndex index;                  /* every CollectorProc by (pid, start_time) */
        size_t n_procs;
        CollectorProc **slot_procs;       /* who user space believes owns each slot */
        uint32_t n_slots;

        CollectorProc **touched;          /* this tick's */
        size_t n_touched, touched_capacity;
        size_t minmaj_next;               /* the first of touched whose /proc/PID/stat is still to read */
        /* Processes first seen beyond a tick's reads of /proc, whose command line and unit are read
         * in later ticks, oldest first (from info_queue_head); and how many first seen this tick
         * may still be read at once. */
        CollectorProc **info_queue;
        size_t info_queue_head, n_info_queue, info_queue_capacity;
        size_t info_reads_new;
        size_t info_reads_later;          /* how many of info_queue may still be read this tick */
        /* The processes whose exit event is in hand this tick, not tracked when it was read
         * (proc_table_expect_exit()), sorted once looked up: one first seen in the tick is exiting from the
         * start, and /proc is not read for it. */
        ProcKeys exits;
        CollectorProc **dead;             /* exited last tick: freed at the start of the next tick */
        size_t n_dead, dead_capacity;
        NameShares file_names;            /* every process's file_names, by user (collector-util.h) */
        ProcessSample *samples;
        size_t samples_capacity;
} ProcTable;

/* Call once counting has started: processes that started before count their minor/major faults
 * from their first reading on. */
int proc_table_init(ProcTable *t, int proc_fd, uint32_t n_slots);
void proc_table_done(ProcTable *t);

/* Last tick's samples are stored by now: what they pointed to is spent. */
void proc_table_begin_tick(ProcTable *t);
/* The tick's samples: every process touched since proc_table_begin_tick(). They stay valid
 * until the next proc_table_begin_tick(). */
int proc_table_samples(ProcTable *t, uint64_t now, const ProcessSample **ret, size_t *ret_n);

CollectorProc *proc_table_find(ProcTable *t, uint32_t pid, uint64_t start_time);
/* An exit in hand this tick: the process is marked exiting (CollectorProc.exiting) if tracked,
 * else remembered until the next tick, so that it is marked when first seen in this one. */
int proc_table_expect_exit(ProcTable *t, uint32_t pid, uint64_t start_time);
/* The process, tracked from now on if it was not. id is what BPF recorded when it was first
 * counted, NULL when the entry read carries none. */
int proc_table_get(ProcTable *t, uint32_t pid, uint64_t start_time, const struct ts_ident *id, uint64_t now,
                   CollectorProc **ret);
/* The file (dev, ino) as p maps it, NULL when it was not looked up (or did not fit). */
const ProcFileName *proc_table_file_name(const CollectorProc *p, uint32_t dev, uint64_t ino);
/* Remembers name for p (its path copied; NULL: not mapped); -E2BIG past the bounds
 * (PROC_FILE_NAMES_MAX, and its user's share of PROC_FILE_NAMES_BYTES_MAX: name_shares_charge()),
 * -EEXIST when p has a name for the file. */
int proc_table_add_file_name(ProcTable *t, CollectorProc *p, const ProcFileName *name);
/* The process is gone: reported exited this tick with what it had, freed after it. */
int proc_table_retire(ProcTable *t, CollectorProc *p);
/* The processes of uid (< 0: any) in pid namespace pidns (0: any). */
size_t proc_table_count_visible(ProcTable *t, int64_t uid, uint32_t pidns);

/* The command line and unit of processes first seen in earlier ticks beyond their reads of /proc,
 * oldest first, a bounded number a tick (INFO_READS_LATER_PER_TICK), at most max in this call;
 * each read is touched, so its sample carries them. Returns whether the tick's reads are done. */
bool proc_table_read_info(ProcTable *t, size_t max);
/* Minor/major faults and name of this tick's active processes from /proc/PID/stat, through an fd
 * kept open while the process is active (proc_open_stat()): of at most max of them, from where
 * the last call of the tick stopped. Adds how many it read to *records; returns whether every
 * process touched by now has been read. */
bool proc_table_read_minmaj(ProcTable *t, size_t max, uint64_t *records);
/* The next at most max of this tick's active processes whose minor/major faults are to be read
 * (not those whose exit is in hand), from where the last call of the tick stopped, into ret;
 * returns how many. *ret_done: every process touched by now has been taken. */
size_t proc_table_next_active(ProcTable *t, CollectorProc **ret, size_t max, bool *ret_done);
/* Those whose exit went unseen (ring buffer full) and whose /proc entry is gone, of those not
 * counted for 30 s. With sweep 0: checked every 30 s, none in between. Else when the task
 * iterator's sweep numbered sweep, begun at sweep_started, has ended: those it did not see though
 * tracked before it began (and then also the stat fds of processes not counted for 30 s are
 * closed).
 * *ret is to be freed, also on failure, when it holds those found before it. */
int proc_table_vanished(ProcTable *t, uint64_t now, uint64_t sweep, uint64_t sweep_started, CollectorProc ***ret,
                        size_t *ret_n);

/* The process now owns slot, counted from zero; its owner until now (if any) owns none. */
void proc_table_set_slot(ProcTable *t, uint32_t slot, CollectorProc *p);
/* Nobody owns slot. */
void proc_table_clear_slot(ProcTable *t, uint32_t slot);

/* Adds what counters grew by since *seen to the tick's delta. */
int proc_table_count_faults(ProcTable *t, CollectorProc *p, const ProcCounters *counters, ProcCounters *seen,
                            uint64_t now);
/* Adds a site's count of this tick (taken: its strings belong to the table from now). */
int proc_table_count_site(ProcTable *t, CollectorProc *p, SiteCount *delta, uint64_t now);
/* The same for a trap hash entry. */
int proc_table_count_traps(ProcTable *t, CollectorProc *p, const struct ts_traps *traps, uint64_t now);
/* The process's latest name and user, as the kernel has them now (a rename after fork, a
 * setuid), and the kernel's minor/major faults and delay accounting (a task record of BPF's).
 * Touches it when any of them changed. */
int proc_table_update(ProcTable *t, CollectorProc *p, const struct ts_task_record *rec);
/* The same from /proc/PID/stat, which has no delay accounting. */
int proc_table_update_stat(ProcTable *t, CollectorProc *p, uint32_t uid, const char *comm, uint64_t minflt,
                           uint64_t majflt);
/* It exec'd: the new name, user and command line (from /proc, else the event's, which is then
 * taken from it). */
int proc_table_exec(ProcTable *t, CollectorProc *p, LifecycleEvent *e);
/* It exited: the final minor/major faults, name and user; retired. */
int proc_table_exit(ProcTable *t, CollectorProc *p, const LifecycleEvent *e);
