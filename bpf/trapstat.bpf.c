// SPDX-License-Identifier: (MIT OR GPL-2.0)
/* Counts page faults per process in the kernel. User space drains the counters every tick;
 * nothing is sent per fault. */

#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "trapstat.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
        __uint(max_entries, TS_DEFAULT_MAX_PROCESSES);
        __type(key, __u32); /* tgid */
        __type(value, struct ts_proc);
} processes SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, TS_DROP_MAX);
        __type(key, __u32);
        __type(value, __u64);
} drops SEC(".maps");

static __always_inline void count_drop(__u32 what) {
        __u64 *n = bpf_map_lookup_elem(&drops, &what);

        if (n)
                (*n)++;
}

/* Returns this CPU's counters for the current process, creating the entry on first use. */
static __always_inline struct ts_proc *current_proc(void) {
        __u32 tgid = bpf_get_current_pid_tgid() >> 32;
        struct ts_proc *p, init = {};
        struct task_struct *task;

        p = bpf_map_lookup_elem(&processes, &tgid);
        if (p)
                return p;

        task = bpf_get_current_task_btf();
        init.start_time = BPF_CORE_READ(task, group_leader, start_boottime);
        init.uid = (__u32) bpf_get_current_uid_gid();
        /* The leader's comm, not the faulting thread's: that is the process's name. */
        BPF_CORE_READ_STR_INTO(&init.comm, task, group_leader, comm);

        /* Another CPU may have created the entry meanwhile (-EEXIST); either way look it up.
         * A per-CPU hash insert from BPF zeroes the other CPUs' copies, so user space takes
         * identity from any CPU whose start_time is set. */
        if (bpf_map_update_elem(&processes, &tgid, &init, BPF_NOEXIST) < 0) {
                p = bpf_map_lookup_elem(&processes, &tgid);
                if (!p)
                        count_drop(TS_DROP_MAP_FULL);
                return p;
        }
        return bpf_map_lookup_elem(&processes, &tgid);
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(page_fault_user, unsigned long address, struct pt_regs *regs, unsigned long error_code) {
        struct ts_proc *p = current_proc();

        if (!p)
                return 0;
        p->user_faults++;
        if (error_code & TS_PF_INSTR)
                p->fault_exec++;
        else if (error_code & TS_PF_WRITE)
                p->fault_write++;
        else
                p->fault_read++;
        if (error_code & TS_PF_PROT)
                p->fault_protection++;
        return 0;
}

/* Faults taken in kernel mode on behalf of the current process (copy_from_user and friends). */
SEC("tp_btf/page_fault_kernel")
int BPF_PROG(page_fault_kernel, unsigned long address, struct pt_regs *regs, unsigned long error_code) {
        struct ts_proc *p;

        /* Kernel threads have no user memory to fault on for anyone; don't track them. */
        if (!bpf_get_current_task_btf()->mm)
                return 0;
        p = current_proc();
        if (p)
                p->kernel_faults++;
        return 0;
}

/* The last thread of a process is exiting: tell user space so it drains the process one last
 * time and removes its entry. signal->live reached zero before this tracepoint on every kernel
 * that has it (newer kernels also pass group_dead, older ones don't). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_process_exit, struct task_struct *task) {
        struct task_struct *leader;
        struct ts_event *e;
        __u32 tgid;

        if (BPF_CORE_READ(task, signal, live.counter) != 0)
                return 0;
        tgid = BPF_CORE_READ(task, tgid);
        /* Only processes that faulted are tracked; nothing to tell about the others. */
        if (!bpf_map_lookup_elem(&processes, &tgid))
                return 0;

        e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
        if (!e) {
                count_drop(TS_DROP_RINGBUF_FULL);
                return 0;
        }
        e->type = TS_EVENT_EXIT;
        e->tgid = tgid;
        leader = BPF_CORE_READ(task, group_leader);
        e->start_time = BPF_CORE_READ(leader, start_boottime);
        e->min_flt = BPF_CORE_READ(task, min_flt) + BPF_CORE_READ(task, signal, min_flt);
        e->maj_flt = BPF_CORE_READ(task, maj_flt) + BPF_CORE_READ(task, signal, maj_flt);
        /* A leader that exited before its last thread is a zombie whose counts are not yet
         * folded into signal. */
        if (leader != task) {
                e->min_flt += BPF_CORE_READ(leader, min_flt);
                e->maj_flt += BPF_CORE_READ(leader, maj_flt);
        }
        bpf_ringbuf_submit(e, 0);
        return 0;
}

/* A process ran execve(): its command name and line changed (by now the exec'ing thread is the
 * group leader and comm is the new one). The event carries the arguments, because a process
 * that exits within a tick is gone from /proc before user space could read them. The process
 * is tracked from here on. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(sched_process_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm) {
        unsigned long arg_start, arg_end, len;
        struct ts_event *e;
        struct mm_struct *mm;

        if (!current_proc())
                return 0;
        e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
        if (!e) {
                count_drop(TS_DROP_RINGBUF_FULL);
                return 0;
        }
        e->type = TS_EVENT_EXEC;
        e->tgid = BPF_CORE_READ(task, tgid);
        e->start_time = BPF_CORE_READ(task, group_leader, start_boottime);
        e->min_flt = e->maj_flt = 0;
        e->_pad0 = 0;
        BPF_CORE_READ_STR_INTO(&e->comm, task, comm);

        mm = BPF_CORE_READ(task, mm);
        arg_start = BPF_CORE_READ(mm, arg_start);
        arg_end = BPF_CORE_READ(mm, arg_end);
        len = arg_end > arg_start ? arg_end - arg_start : 0;
        if (len > TS_ARGS_LEN)
                len = TS_ARGS_LEN;
        if (bpf_probe_read_user(e->args, len, (void *) arg_start) < 0)
                len = 0;
        e->args_len = len;
        bpf_ringbuf_submit(e, 0);
        return 0;
}
