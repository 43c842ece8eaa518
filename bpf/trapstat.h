/* SPDX-License-Identifier: MIT */
#pragma once

/* Shared between bpf/trapstat.bpf.c and user space: fixed-width types only, explicit padding. */

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define TS_COMM_LEN 16
/* Bytes of the argument vector an exec event carries (NUL-separated, as in /proc/PID/cmdline). */
#define TS_ARGS_LEN 256
#define TS_UNIT_LEN 256 /* a unit name and its NUL, as systemd bounds them */

/* Counting slots: a process counts into slot (tgid & (slots - 1)) when it owns that slot, which
 * costs one array lookup per fault (struct ts_counters owner). Processes whose slot is
 * taken count in the fallback hash.
 * A power of two; configurable at load time. */
#define TS_DEFAULT_SLOTS 8192
#define TS_MAX_SLOT_BITS 22 /* at most 1 << 22 slots */
/* Processes the fallback hash and the trap hash hold at once; configurable at load time. */
#define TS_DEFAULT_MAX_PROCESSES 16384

/* A counting slot's owner: a tgid or one of the TS_OWNER_* values. The slot maps are mmap'd by
 * user space, which reads owners and identities without a system call. */
struct ts_owner {
        __u32 tgid;
        __u32 _pad0;
};
_Static_assert(sizeof(struct ts_owner) == 8, "struct ts_owner layout is shared with BPF");

/* slot_owner values besides a tgid: */
#define TS_OWNER_FREE 0U
#define TS_OWNER_CLAIMING 0xFFFFFFFFU  /* being claimed: identity not written yet */
#define TS_OWNER_EXITED (1U << 31)     /* ORed to the tgid when the process exited */

/* Fault time: buckets of the histogram of faults by duration. Bucket 0 holds faults under 1 us,
 * bucket i (1..TS_FAULT_BUCKETS - 2) those from 2^(i-1) us to under 2^i us, the last those from
 * 2^(TS_FAULT_BUCKETS - 2) us up. */
#define TS_FAULT_BUCKETS 24

/* What a major fault's address mapped: its VMA's file (none: anonymous memory, read back from
 * swap; a file on tmpfs: shared memory, from swap too; any other file: read from the file). */
enum ts_major_cause {
        TS_MAJOR_FILE,
        TS_MAJOR_ANON,
        TS_MAJOR_SHMEM,
        TS_MAJOR_CAUSES, /* also: not told */
};

/* Page fault counters of one process on one CPU, monotonic since the process was first
 * counted; user space sums the CPUs and subtracts what it drained before. The read / write /
 * exec / protection breakdown of user faults comes from the architecture header (bpf/arch/):
 * zero where it cannot be told (no x86 error code, or the perf event counts the faults). */
struct ts_counters {
        /* In a counting slot: this CPU's copy of the slot's owner (slot_owner), so that the fault
         * path reads one map, not two. Written by BPF when a process first counts on the CPU and
         * cleared on every CPU when it exits; user space zeroes it with the counters when it
         * frees the slot. 0 in the fallback hash and in a free slot. Not a counter. */
        __u32 owner;
        /* In the fallback hash: the hash_epoch in which this CPU's copy was last put into the
         * hash_log (0: never). Not a counter. */
        __u32 logged;
        __u64 user_faults;
        __u64 kernel_faults;
        __u64 fault_read;
        __u64 fault_write;
        __u64 fault_exec;
        __u64 fault_protection;
        /* Major faults by what the faulting address mapped (enum ts_major_cause), counted at their
         * completion (PAGE_FAULTS_MAJ). Monotonic. */
        __u64 major_cause[TS_MAJOR_CAUSES];
};
_Static_assert(sizeof(struct ts_counters) == 56 + 8 * TS_MAJOR_CAUSES, "struct ts_counters layout is shared with BPF");

/* The fault time of one process on one CPU, beside its counters (struct ts_counters): nanoseconds
 * from a fault's entry (the exception event or PAGE_FAULTS) to its completion (PAGE_FAULTS_MIN /
 * PAGE_FAULTS_MAJ), of user-mode faults by the kernel's minor / major accounting and of
 * kernel-mode faults; and every timed fault by duration. Monotonic like the counts. Zero unless
 * fault time is on: the slots keep it in an array of its own (slot_times), sized only then. */
struct ts_fault_times {
        __u64 minor_ns;
        __u64 major_ns;
        __u64 kernel_ns;
        __u64 buckets[TS_FAULT_BUCKETS];
        /* The longest fault that completed in each tick, not monotonic: max_ns[i] belongs to tick
         * max_tick[i], i = tick & 1 (fault_tick in the BPF object, which user space advances
         * before it reads the tick just ended). */
        __u64 max_ns[2];
        __u64 max_tick[2];
        /* The time of the major faults by cause (struct ts_counters major_cause) that were timed. */
        __u64 major_cause_ns[TS_MAJOR_CAUSES];
};
_Static_assert(sizeof(struct ts_fault_times) == 8 * (3 + TS_FAULT_BUCKETS + 4 + TS_MAJOR_CAUSES),
               "struct ts_fault_times layout is shared with BPF");

/* A process's pid in one pid namespace: the namespace (the inode number /proc/PID/ns/pid shows)
 * and the pid there (a column of /proc/PID/status's NSpid). */
#define TS_PIDNS_LEVELS 4
struct ts_pidns {
        __u32 ns;
        __u32 pid;
};
_Static_assert(sizeof(struct ts_pidns) == 8, "struct ts_pidns layout is shared with BPF");

/* Who a process is, written when it is first counted (slot, fallback hash or trap hash), so that
 * a process is known however short its life. The parent's identity is for a child that never
 * exec'd: its command line is its parent's, and it may be gone before user space reads /proc. */
struct ts_ident {
        __u64 start_time;        /* group leader's start_boottime, ns since boot (/proc/PID/stat field 22) */
        __u64 parent_start_time; /* the same of the parent process */
        __u32 uid;               /* real uid */
        __u32 ppid;              /* parent's tgid */
        char comm[TS_COMM_LEN];  /* the group leader's: the process's name */
        __u64 cgroup_id;         /* its cgroup in the unified (v2) hierarchy: the inode number there */
        /* Its pid namespaces, outermost first: level 0 (the initial namespace) up to the innermost.
         * A process deeper than TS_PIDNS_LEVELS - 1 keeps the outermost levels and, in the last
         * entry, its innermost one (pidns_level): the levels in between are not known. */
        __u32 pidns_level;       /* the innermost namespace's level: 0 for the initial one */
        __u32 n_pidns;           /* entries of pidns used; 0 when they could not be read */
        struct ts_pidns pidns[TS_PIDNS_LEVELS];
};
_Static_assert(sizeof(struct ts_ident) == 56 + 8 * TS_PIDNS_LEVELS, "struct ts_ident layout is shared with BPF");

/* Key of the fallback hash and of the trap hash: a process incarnation, never a bare pid. */
struct ts_proc_key {
        __u32 tgid;
        __u32 _pad0;
        __u64 start_time;
};
_Static_assert(sizeof(struct ts_proc_key) == 16, "struct ts_proc_key layout is shared with BPF");

/* The fallback hash's and the trap hash's entries counted into, logged per CPU and epoch
 * (hash_epoch, advanced by user space every tick): user space looks up those entries alone, not
 * every entry. An entry is logged once per CPU and epoch, at its first count there (a trap entry,
 * shared by the CPUs, may be logged twice: user space reads it once). A trap entry's key has
 * _pad0 TS_LOG_TRAPS. A log that filled up is marked overflowed: user space then reads both hashes
 * whole. Entry cpu * 2 + (epoch & 1) of the hash_log array. */
#define TS_LOG_TRAPS 1U
#define TS_HASH_LOG_KEYS 1024
struct ts_hash_log {
        __u32 n;
        __u32 overflowed;
        struct ts_proc_key keys[TS_HASH_LOG_KEYS];
};
_Static_assert(sizeof(struct ts_hash_log) == 8 + 16 * TS_HASH_LOG_KEYS, "struct ts_hash_log layout is shared with BPF");

/* Value of the per-CPU fallback hash. */
struct ts_proc {
        struct ts_ident id;
        struct ts_counters c;
        struct ts_fault_times t;
};
_Static_assert(sizeof(struct ts_proc) == sizeof(struct ts_ident) + sizeof(struct ts_counters) +
                                                 sizeof(struct ts_fault_times),
               "struct ts_proc layout is shared with BPF");

/* The fault signals kernel code sends for CPU exceptions, in this order. */
#define TS_SIGNALS(X) X(SIGILL, 4) X(SIGTRAP, 5) X(SIGBUS, 7) X(SIGFPE, 8) X(SIGSEGV, 11)
enum ts_signal_index {
#define TS_SIGNAL_INDEX(name, number) TS_SIG_##name,
        TS_SIGNALS(TS_SIGNAL_INDEX)
#undef TS_SIGNAL_INDEX
        TS_N_SIGNALS,
};
/* Trap vector slots: the x86 exception vectors 0..31 (common/trap-vectors.h names them). An
 * architecture header that cannot tell the vector counts every trap as vector_unknown. */
#define TS_N_VECTORS 32
/* si_code slots per signal: 1..14 are the codes themselves, 0 holds SI_KERNEL (0x80) and
 * TS_SI_CODE_OTHER any other positive code. */
#define TS_N_SI_CODES 16
#define TS_SI_CODE_OTHER 15
#define TS_SI_KERNEL 0x80

/* Value of the trap hash: kernel-generated fault signals of one process, by the CPU exception
 * vector that raised them (on x86 task->thread.trap_nr, bpf/arch/x86.h) and by signal and
 * si_code. Atomic adds. */
struct ts_traps {
        struct ts_ident id;
        __u64 vector[TS_N_VECTORS];
        __u64 vector_unknown; /* the vector is not known: not x86, or the kernel has no thread.trap_nr */
        __u64 logged;         /* the hash_epoch in which it was last put into a hash_log (0: never) */
        __u64 signal[TS_N_SIGNALS][TS_N_SI_CODES];
};
_Static_assert(sizeof(struct ts_traps) == sizeof(struct ts_ident) + 8 * (32 + 2 + 5 * 16),
               "struct ts_traps layout is shared with BPF");

enum ts_event_type {
        TS_EVENT_EXIT = 1,
        TS_EVENT_EXEC = 2,
};

/* Ring buffer records: rare lifecycle events only, never one per fault. Each starts with the
 * type and the process. */
struct ts_event_header {
        __u32 type; /* enum ts_event_type */
        __u32 tgid;
        __u64 start_time;
};
_Static_assert(sizeof(struct ts_event_header) == 16, "struct ts_event_header layout is shared with BPF");

/* The kernel's delay accounting of a whole process (task_struct.delays, kept while
 * kernel.task_delayacct is 1 or the kernel was booted with delayacct): nanoseconds waited and the
 * number of waits, by cause. Summed over the process's live threads and those that exited (the
 * kernel keeps theirs in signal->stats). Monotonic. */
enum ts_stall {
        TS_STALL_SWAPIN,    /* swapin_delay: reading a page back from swap */
        TS_STALL_THRASHING, /* thrashing_delay: waiting for a page of the working set evicted earlier */
        TS_STALL_RECLAIM,   /* freepages_delay: direct reclaim */
        TS_STALL_COMPACT,   /* compact_delay: direct compaction */
        TS_STALL_BLKIO,     /* blkio_delay: block I/O */
        TS_STALLS,
};
struct ts_delays {
        __u64 ns[TS_STALLS];
        __u64 count[TS_STALLS];
};
_Static_assert(sizeof(struct ts_delays) == 16 * TS_STALLS, "struct ts_delays layout is shared with BPF");

/* The last thread of a process exited: its final fault accounting and identity. */
struct ts_exit_event {
        struct ts_event_header h;
        /* The kernel's minor/major faults of the whole process, as getrusage() and wait4() count
         * them: every thread still in the thread group plus those already reaped. */
        __u64 min_flt;
        __u64 maj_flt;
        __u32 uid;              /* real uid at exit */
        __u32 _pad0;
        char comm[TS_COMM_LEN]; /* the final command name (prctl(PR_SET_NAME) after fork shows) */
        struct ts_delays delays; /* the final delay accounting of the whole process */
};
_Static_assert(sizeof(struct ts_exit_event) == 56 + sizeof(struct ts_delays),
               "struct ts_exit_event layout is shared with BPF");

/* A process ran execve(): its new name, user and the start of its argument vector. */
struct ts_exec_event {
        struct ts_event_header h;
        __u32 uid;              /* real uid after the exec (su, setpriv, ...) */
        __u32 args_len;         /* bytes used in args */
        char comm[TS_COMM_LEN];
        char args[TS_ARGS_LEN]; /* NUL-separated, as in /proc/PID/cmdline */
        __u64 cgroup_id;        /* its cgroup (v2) at the exec: a service manager moved it there */
        char unit[TS_UNIT_LEN]; /* that cgroup's innermost unit (NUL-terminated), "" when none */
};
_Static_assert(sizeof(struct ts_exec_event) == 560, "struct ts_exec_event layout is shared with BPF");

/* Ring buffer size (bytes, a power of two and a multiple of the page size), configurable at
 * load time. 4 MiB hold about 70000 exit events: a storm of exits while the daemon is busy. */
#define TS_DEFAULT_EVENT_BUFFER (4U << 20)

/* One record per tracked process from the task iterator, read every tick: the kernel's fault
 * accounting (what /proc/PID/stat shows as minflt and majflt) and the current name and user,
 * without formatting /proc/PID/stat. */
struct ts_task_record {
        __u32 tgid;
        __u32 uid;
        __u64 start_time;
        __u64 min_flt;
        __u64 maj_flt;
        char comm[TS_COMM_LEN];
        struct ts_delays delays; /* the delay accounting of the whole process */
};
_Static_assert(sizeof(struct ts_task_record) == 48 + sizeof(struct ts_delays),
               "struct ts_task_record layout is shared with BPF");

/* The innermost pid namespace of one process, from task-reads.bpf.o's read_pidns iterator
 * attached to that process's pidfd: a varlink peer's, whose view trapstatd scopes to it. With the
 * process's identity, which user space checks against the peer it asked about. */
struct ts_pidns_record {
        __u32 tgid;       /* in the initial pid namespace */
        __u32 level;      /* the namespace's: 0 for the initial one */
        __u64 start_time; /* group leader's start_boottime, ns since boot */
        __u32 ns;         /* the namespace's inode number */
        __u32 pid;        /* the process's pid there */
};
_Static_assert(sizeof(struct ts_pidns_record) == 24, "struct ts_pidns_record layout is shared with BPF");

/* Processes one read of task-reads.bpf.o's iterator takes at most (the task_reads array). Their
 * records are written in one step of the iterator, into the kernel's buffer of a BPF iterator
 * (bpf_iter: 8 pages): one step that fills it fails the read (E2BIG). With the delay accounting a
 * record is 128 bytes, so 128 of them, 16 KiB. */
#define TS_TASK_READS 128
#define TS_ITER_BUFFER (8 * 4096)
_Static_assert(TS_TASK_READS * sizeof(struct ts_task_record) < TS_ITER_BUFFER,
               "one read's records fit the iterator's buffer, with room");

/* Threads of one process summed at most, when its fault accounting is read. */
#define TS_MAX_THREADS 65536

/* CPUs the object without bpf_loop (trapstat-noloop.bpf.o) can clear a slot's copies on at exit,
 * in a loop written out; on a machine with more the daemon loads trapstat-base.bpf.o there. */
#define TS_NO_LOOP_MAX_CPUS 1024

/* ---- Sites: where processes trap and (sampled) fault ---- */

/* Kinds of memory an address is in, as common/sites.h numbers them (MemoryKind). */
#define TS_MEM_NONE 0
#define TS_MEM_FILE 1
#define TS_MEM_ANON 2
#define TS_MEM_HEAP 3
#define TS_MEM_STACK 4
#define TS_MEM_VDSO 5
#define TS_MEM_UNMAPPED 6
#define TS_MEM_UNKNOWN 7

#define TS_SITE_TRAP 0
#define TS_SITE_FAULT 1 /* sampled user page faults */
#define TS_SITE_MAJOR 2 /* every major fault taken in user mode, at its completion */

/* A place in a process's memory, as BPF resolves it from the VMA while the process is alive:
 * for a file mapping the file (device and inode) and the offset in it; else the kind and, for
 * code, the address. */
struct ts_location {
        __u64 ino;    /* the file's inode number; 0 when no file */
        __u64 offset; /* file offset (vm_pgoff * page + address - vm_start); the address for
                       * code in no file; 0 for the memory a fault touched (only its kind and
                       * file are kept) */
        __u32 dev;    /* the file system's device, the kernel's encoding: major << 20 | minor */
        __u32 kind;   /* TS_MEM_* */
};
_Static_assert(sizeof(struct ts_location) == 24, "struct ts_location layout is shared with BPF");

/* Key of the site hash: one process, one instruction, one kind of memory touched. */
struct ts_site_key {
        __u32 tgid;
        __u8 kind;    /* TS_SITE_* */
        __u8 vector;  /* traps: the exception vector, TS_N_VECTORS when not known; faults and
                       * major faults: 14 */
        __u8 epoch;   /* the site epoch it was counted in (see struct ts_site_epochs) */
        __u8 _pad0;
        __u64 start_time;
        struct ts_location ip;     /* the instruction */
        struct ts_location memory; /* what the faulting address was in (offset 0) */
};
_Static_assert(sizeof(struct ts_site_key) == 64, "struct ts_site_key layout is shared with BPF");

/* Value of the site hash: what the site counted within one epoch (atomic adds). User space
 * takes every entry out once its epoch is over, so each entry is a delta. */
struct ts_site {
        __u64 count;   /* traps, fault samples, or major faults */
        __u64 time_ns; /* fault samples and major faults: the time they took (struct ts_counters'
                        * fault time) */
};
_Static_assert(sizeof(struct ts_site) == 16, "struct ts_site layout is shared with BPF");

/* Sites one epoch (a tick) may create; configurable at load time (trapstatd --max-sites). The
 * hash holds two epochs' worth. */
#define TS_DEFAULT_MAX_SITES 16384
/* Of them, those one process may create within an epoch (a tick), so that no process (a JIT, or a
 * user trapping at every address on purpose) takes the hash from the others; configurable
 * (trapstatd --max-sites-per-process). */
#define TS_DEFAULT_MAX_SITES_PER_PROCESS 1024
/* Those the processes of one user may create within an epoch, as a fraction of --max-sites when
 * not configured (trapstatd --max-sites-per-user): 16 processes of one user each within their
 * own share take no more than a quarter. Root and group trapstat have no such limit. */
#define TS_DEFAULT_SITES_PER_USER_DIVISOR 4
/* Entries only root and group trapstat may take, a fraction of --max-sites when not configured
 * (trapstatd --site-reserve): however many users share the rest, their sites keep a place. */
#define TS_DEFAULT_SITE_RESERVE_DIVISOR 8

/* The site hash is drained by epochs. BPF counts every site into the current epoch (the key's
 * epoch); each tick user space flips the epoch, waits until no program counts into the old one
 * any more (active[old] == 0: a program announces itself there before it reads the epoch a second
 * time, and leaves after its last write), then reads and deletes every entry of the old epoch and
 * resets its shares. No count can be added to an entry after it was read, and no live process
 * keeps an entry past the tick it counted in. Lives in the BPF object's .bss, mmap'd by user
 * space: the flip is a store, the wait a load. */
struct ts_site_epochs {
        __u32 epoch;            /* the current one: 0 or 1; written by user space only */
        __u32 active[2];        /* programs counting into each epoch right now */
        __u32 entries[2];       /* entries of the site hash created in each epoch (at most max_sites) */
        __u32 privileged_gid;   /* group trapstat's gid (its members keep the reserve) ... */
        __u32 privileged_group; /* ... when this is 1; written by user space every tick */
        __u32 _pad0;
};
_Static_assert(sizeof(struct ts_site_epochs) == 32, "struct ts_site_epochs layout is shared with BPF");

/* Key of the per-process and per-user share counts (site_quota, site_user_quota): within one
 * epoch, entries created by the process (tgid, start_time) or by the processes of uid (tgid the
 * uid, start_time 0). */
struct ts_site_quota_key {
        __u32 id;
        __u32 epoch;
        __u64 start_time;
};
_Static_assert(sizeof(struct ts_site_quota_key) == 16, "struct ts_site_quota_key layout is shared with BPF");

/* Value of both share maps: entries created. BPF alone writes it, with atomic adds (one that
 * takes a share back adds -1); user space deletes an epoch's entries once the epoch is drained. */
struct ts_site_quota {
        __u32 n;
        __u32 _pad0;
};
_Static_assert(sizeof(struct ts_site_quota) == 8, "struct ts_site_quota layout is shared with BPF");
/* One in this many user page faults of a process on one CPU records its site; a power of two,
 * 0 for none; configurable at load time (trapstatd --fault-sample). */
#define TS_DEFAULT_FAULT_SAMPLE 512

/* The path of a mapped file, written by BPF the first time one of its sites is recorded, from
 * the dentry up to the root of the mount tree: components innermost first, each cut to
 * TS_NAME_LEN - 1 bytes. User space joins them. Written again when a site finds the inode
 * changed since (its change time or generation) or the file's own name changed (the dentry's
 * name hash): an inode number reused by another file comes with a new change time and
 * generation, and a rename gives the dentry a new name and hash even where the change time
 * stays (a rename within one tick of the kernel's coarse clock, `cp app app.new; ./app.new;
 * mv app.new app`), so the name follows what the file is now and a new file never inherits an
 * old one's name. A renamed directory above the file is not seen. */
#define TS_PATH_DEPTH 16
#define TS_NAME_LEN 64
struct ts_file_key {
        __u64 ino;
        __u32 dev;
        __u32 _pad0;
};
_Static_assert(sizeof(struct ts_file_key) == 16, "struct ts_file_key layout is shared with BPF");

struct ts_file_name {
        __u32 depth;     /* components used */
        __u32 truncated; /* the path had more than TS_PATH_DEPTH components: the outermost are missing */
        /* The inode when the name was taken: its change time (as statx() gives it) and its
         * generation. User space symbolizes the file only if the one it opens has this change
         * time still. */
        __u64 ctime_sec;
        __u32 ctime_nsec;
        __u32 generation;
        /* The dentry's d_name.hash_len (the name's hash, salted with the parent directory, and
         * its length): what a rename changes; 0 where user space wrote the name. Compared, never
         * shown. */
        __u64 name_hash;
        char names[TS_PATH_DEPTH][TS_NAME_LEN];
};
_Static_assert(sizeof(struct ts_file_name) == 32 + TS_PATH_DEPTH * TS_NAME_LEN,
               "struct ts_file_name layout is shared with BPF");

/* Files whose paths the name map holds at once. */
#define TS_MAX_FILE_NAMES 4096

/* Indices of the `drops` per-CPU array: what could not be counted, never lost silently. The
 * daemon describes each kind (daemon/collector/collector-bpf.c) and GetStatus reports them. */
enum ts_drop {
        TS_DROP_MAP_FULL = 0,   /* a fault of a process that found neither a slot nor room in the fallback hash */
        TS_DROP_TRAPS_FULL = 1, /* a trap of a process that did not fit in the trap hash */
        TS_DROP_EXIT_EVENT = 2, /* an exit event did not fit in the ring buffer */
        TS_DROP_EXEC_EVENT = 3, /* an exec event did not fit in the ring buffer */
        TS_DROP_SITES_FULL = 4, /* a trap, a fault sample or a major fault whose site did not fit in the site hash */
        TS_DROP_FILE_NAME = 5,  /* a file whose path did not fit in the name map */
        TS_DROP_SITE_QUOTA = 6, /* a trap, a fault sample or a major fault whose process had its share of the site hash */
        TS_DROP_SITE_USER_QUOTA = 7, /* the same, its user (not root, not group trapstat) had its share */
        TS_DROP_SITE_RESERVE = 8,    /* the same, only the reserve of root and group trapstat was left */
        TS_DROP_VMA_LOOKUP = 9, /* a VMA lookup failed (-EBUSY: another program held it): the site keeps the address */
        TS_DROP_CAUSE_LOOKUP = 10, /* a major fault's VMA lookup failed: counted, its cause not told */
        TS_DROP_MAX,
};

/* The drops of one user's processes (real uid), by kind: value of the user_drops hash, which holds
 * TS_MAX_DROP_USERS users; a user beyond them counts only in `drops`. With them a caller tells
 * their own losses from everyone else's on a busy machine. */
#define TS_MAX_DROP_USERS 1024
struct ts_user_drops {
        __u64 count[TS_DROP_MAX];
};

