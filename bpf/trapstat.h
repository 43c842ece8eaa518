/* SPDX-License-Identifier: MIT */
#pragma once

/* Shared between bpf/trapstat.bpf.c and user space: fixed-width types only, explicit padding. */

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define TS_COMM_LEN 16
/* Bytes of the argument vector an exec event carries (NUL-separated, as in /proc/PID/cmdline). */
#define TS_ARGS_LEN 256
/* Processes tracked at once; also the collector's batch capacity. Configurable at load time
 * through bpf_map__set_max_entries(). */
#define TS_DEFAULT_MAX_PROCESSES 16384

/* x86 page fault error code bits (arch/x86/include/asm/trap_pf.h). */
#define TS_PF_PROT (1U << 0)
#define TS_PF_WRITE (1U << 1)
#define TS_PF_USER (1U << 2)
#define TS_PF_INSTR (1U << 4)

/* Value of the per-CPU `processes` hash, keyed by tgid. Counters are monotonic since the
 * entry was created; user space sums the CPUs and subtracts what it drained before. */
struct ts_proc {
        __u64 start_time; /* group leader's start_boottime, ns since boot (/proc/PID/stat field 22) */
        __u32 uid;
        __u32 _pad0;
        char comm[TS_COMM_LEN];
        __u64 user_faults;
        __u64 kernel_faults;
        __u64 fault_read;
        __u64 fault_write;
        __u64 fault_exec;
        __u64 fault_protection;
};
_Static_assert(sizeof(struct ts_proc) == 80, "struct ts_proc layout is shared with BPF");

enum ts_event_type {
        TS_EVENT_EXIT = 1,
        TS_EVENT_EXEC = 2,
};

/* Ring buffer record: rare lifecycle events only, never one per fault. */
struct ts_event {
        __u32 type; /* enum ts_event_type */
        __u32 tgid;
        __u64 start_time;
        /* The kernel's fault accounting of the whole process at exit (what /proc/PID/stat
         * showed last): the exiting thread's, the leader's, and that of threads already reaped. */
        __u64 min_flt; /* TS_EVENT_EXIT */
        __u64 maj_flt; /* TS_EVENT_EXIT */
        char comm[TS_COMM_LEN]; /* TS_EVENT_EXEC: the new command name */
        __u32 args_len;         /* TS_EVENT_EXEC: bytes used in args */
        __u32 _pad0;
        char args[TS_ARGS_LEN]; /* TS_EVENT_EXEC: start of the new argument vector */
};
_Static_assert(sizeof(struct ts_event) == 312, "struct ts_event layout is shared with BPF");

/* Indices of the `drops` per-CPU array: what could not be counted, never lost silently. */
enum ts_drop {
        TS_DROP_MAP_FULL = 0,     /* a new process did not fit in `processes` */
        TS_DROP_RINGBUF_FULL = 1, /* a lifecycle event did not fit in the ring buffer */
        TS_DROP_MAX,
};
