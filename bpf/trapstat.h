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

/* slot_owner values besides a tgid: */
#define TS_OWNER_FREE 0U
#define TS_OWNER_CLAIMING 0xFFFFFFFFU  /* being claimed: identity not written yet */
#define TS_OWNER_EXITED (1U << 31)     /* ORed to the tgid when the process exited */

/* x86 page fault error code bits (arch/x86/include/asm/trap_pf.h). */
#define TS_PF_PROT (1U << 0)
#define TS_PF_WRITE (1U << 1)
#define TS_PF_USER (1U << 2)
#define TS_PF_INSTR (1U << 4)

/* Page fault counters of one process on one CPU, monotonic since the process was first
 * counted; user space sums the CPUs and subtracts what it drained before. */
struct ts_counters {
        __u64 user_faults;
        __u64 kernel_faults;
        __u64 fault_read;
        __u64 fault_write;
        __u64 fault_exec;
        __u64 fault_protection;
};
_Static_assert(sizeof(struct ts_counters) == 48, "struct ts_counters layout is shared with BPF");

/* Who a slot or hash entry counts for, written once when it is created. */
struct ts_ident {
        __u64 start_time; /* group leader's start_boottime, ns since boot (/proc/PID/stat field 22) */
        __u32 uid;
        __u32 _pad0;
        char comm[TS_COMM_LEN];
};
_Static_assert(sizeof(struct ts_ident) == 32, "struct ts_ident layout is shared with BPF");

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
_Static_assert(sizeof(struct ts_proc) == 80, "struct ts_proc layout is shared with BPF");

/* The fault signals kernel code sends for CPU exceptions, in this order. */
#define TS_SIGNALS(X) X(SIGILL, 4) X(SIGTRAP, 5) X(SIGBUS, 7) X(SIGFPE, 8) X(SIGSEGV, 11)
enum ts_signal_index {
#define TS_SIGNAL_INDEX(name, number) TS_SIG_##name,
        TS_SIGNALS(TS_SIGNAL_INDEX)
#undef TS_SIGNAL_INDEX
        TS_N_SIGNALS,
};
#define TS_N_VECTORS 32
/* si_code slots per signal: 1..14 are the codes themselves, 0 holds SI_KERNEL (0x80) and
 * TS_SI_CODE_OTHER any other positive code. */
#define TS_N_SI_CODES 16
#define TS_SI_CODE_OTHER 15
#define TS_SI_KERNEL 0x80

/* Value of the trap hash: kernel-generated fault signals of one process, by the CPU exception
 * vector that raised them (task->thread.trap_nr) and by signal and si_code. Atomic adds. */
struct ts_traps {
        __u64 vector[TS_N_VECTORS];
        __u64 vector_unknown; /* the kernel has no thread.trap_nr (not x86) */
        __u64 _pad0;
        __u64 signal[TS_N_SIGNALS][TS_N_SI_CODES];
};
_Static_assert(sizeof(struct ts_traps) == 8 * (32 + 2 + 5 * 16), "struct ts_traps layout is shared with BPF");

enum ts_event_type {
        TS_EVENT_EXIT = 1,
        TS_EVENT_EXEC = 2,
};

/* Ring buffer record: rare lifecycle events only, never one per fault. */
struct ts_event {
        __u32 type; /* enum ts_event_type */
        __u32 tgid;
        __u64 start_time;
        /* TS_EVENT_EXIT: the kernel's fault accounting of the whole process at exit (what
         * /proc/PID/stat showed last): the exiting thread's, the leader's, and that of threads
         * already reaped. */
        __u64 min_flt;
        __u64 maj_flt;
        char comm[TS_COMM_LEN]; /* TS_EVENT_EXEC: the new command name */
        __u32 args_len;         /* TS_EVENT_EXEC: bytes used in args */
        __u32 uid;              /* TS_EVENT_EXEC: real uid after the exec (su, setpriv, ...) */
        char args[TS_ARGS_LEN]; /* TS_EVENT_EXEC: start of the new argument vector */
};
_Static_assert(sizeof(struct ts_event) == 312, "struct ts_event layout is shared with BPF");

/* Indices of the `drops` per-CPU array: what could not be counted, never lost silently. */
enum ts_drop {
        TS_DROP_MAP_FULL = 0,     /* a process found neither a slot nor room in the fallback hash */
        TS_DROP_RINGBUF_FULL = 1, /* a lifecycle event did not fit in the ring buffer */
        TS_DROP_TRAPS_FULL = 2,   /* a trapping process did not fit in the trap hash */
        TS_DROP_MAX,
};
