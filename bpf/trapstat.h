/* SPDX-License-Identifier: MIT */
#pragma once

/* Shared between bpf/trapstat.bpf.c and user space: fixed-width types only, explicit padding. */

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define TS_COMM_LEN 16
/* Bytes of the argument vector an exec event carries (NUL-separated, as in /proc/PID/cmdline). */
#define TS_ARGS_LEN 256

/* Counting slots: a process counts into slot (tgid & (slots - 1)) when it owns that slot, which
 * costs two array lookups per fault. Processes whose slot is taken count in the fallback hash.
 * A power of two; configurable at load time. */
#define TS_DEFAULT_SLOTS 8192
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

/* Page fault counters of one process on one CPU, monotonic since the process was first
 * counted; user space sums the CPUs and subtracts what it drained before. The read / write /
 * exec / protection breakdown of user faults comes from the architecture header (bpf/arch/):
 * zero where it cannot be told (no x86 error code, or the perf event counts the faults). */
struct ts_counters {
        __u64 user_faults;
        __u64 kernel_faults;
        __u64 fault_read;
        __u64 fault_write;
        __u64 fault_exec;
        __u64 fault_protection;
};
_Static_assert(sizeof(struct ts_counters) == 48, "struct ts_counters layout is shared with BPF");

/* Who a process is, written when it is first counted (slot, fallback hash or trap hash), so that
 * a process is known however short its life. The parent's identity is for a child that never
 * exec'd: its command line is its parent's, and it may be gone before user space reads /proc. */
struct ts_ident {
        __u64 start_time;        /* group leader's start_boottime, ns since boot (/proc/PID/stat field 22) */
        __u64 parent_start_time; /* the same of the parent process */
        __u32 uid;               /* real uid */
        __u32 ppid;              /* parent's tgid */
        char comm[TS_COMM_LEN];  /* the group leader's: the process's name */
};
_Static_assert(sizeof(struct ts_ident) == 40, "struct ts_ident layout is shared with BPF");

/* Key of the fallback hash and of the trap hash: a process incarnation, never a bare pid. */
struct ts_proc_key {
        __u32 tgid;
        __u32 _pad0;
        __u64 start_time;
};
_Static_assert(sizeof(struct ts_proc_key) == 16, "struct ts_proc_key layout is shared with BPF");

/* Value of the per-CPU fallback hash. */
struct ts_proc {
        struct ts_ident id;
        struct ts_counters c;
};
_Static_assert(sizeof(struct ts_proc) == 88, "struct ts_proc layout is shared with BPF");

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
        __u64 _pad0;
        __u64 signal[TS_N_SIGNALS][TS_N_SI_CODES];
};
_Static_assert(sizeof(struct ts_traps) == 40 + 8 * (32 + 2 + 5 * 16), "struct ts_traps layout is shared with BPF");

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
};
_Static_assert(sizeof(struct ts_exit_event) == 56, "struct ts_exit_event layout is shared with BPF");

/* A process ran execve(): its new name, user and the start of its argument vector. */
struct ts_exec_event {
        struct ts_event_header h;
        __u32 uid;              /* real uid after the exec (su, setpriv, ...) */
        __u32 args_len;         /* bytes used in args */
        char comm[TS_COMM_LEN];
        char args[TS_ARGS_LEN]; /* NUL-separated, as in /proc/PID/cmdline */
};
_Static_assert(sizeof(struct ts_exec_event) == 296, "struct ts_exec_event layout is shared with BPF");

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
};
_Static_assert(sizeof(struct ts_task_record) == 48, "struct ts_task_record layout is shared with BPF");

/* Threads of one process summed at most, when its fault accounting is read. */
#define TS_MAX_THREADS 65536

/* Indices of the `drops` per-CPU array: what could not be counted, never lost silently. The
 * daemon describes each kind (daemon/collector-bpf.c) and GetStatus reports them. */
enum ts_drop {
        TS_DROP_MAP_FULL = 0,   /* a fault of a process that found neither a slot nor room in the fallback hash */
        TS_DROP_TRAPS_FULL = 1, /* a trap of a process that did not fit in the trap hash */
        TS_DROP_EXIT_EVENT = 2, /* an exit event did not fit in the ring buffer */
        TS_DROP_EXEC_EVENT = 3, /* an exec event did not fit in the ring buffer */
        TS_DROP_MAX,
};
